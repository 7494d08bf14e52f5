// PG_HOST_DEVICE marks small inline functions that both backends call: plain inline
// functions for the host compiler, __host__ __device__ ones when nvcc compiles a .cu file.
// Core headers use it instead of including anything from CUDA.
#pragma once

#if defined(__CUDACC__)
#define PG_HOST_DEVICE __host__ __device__
#else
#define PG_HOST_DEVICE
#endif
