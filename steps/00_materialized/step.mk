# step 00 is the only step that calls a library: cuBLAS for QK^T and PV
00_materialized_LIBS := -lcublas
