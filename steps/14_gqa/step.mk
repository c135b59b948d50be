14_gqa_ARCH := -gencode arch=compute_90a,code=sm_90a
