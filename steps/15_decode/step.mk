15_decode_ARCH := -gencode arch=compute_90a,code=sm_90a
