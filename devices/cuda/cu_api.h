/* devices/cuda/cu_api.h: the vendor runtime and BLAS headers the cuda backend's host code uses:
 * CUDA's and cuBLAS's, or, in a MUSA build (-DHARNESS_MUSA=ON), MUSA's through musa_compat.h. */
#ifndef CU_API_H
#define CU_API_H

#ifdef HARNESS_MUSA
#include "musa_compat.h"
/* the backend's name (device specs "musa", "musa:N"), its vendor and BLAS as the device shows them */
#define HARNESS_CUDA_BACKEND "musa"
#define HARNESS_CUDA_VENDOR "Moore Threads"
#define HARNESS_CUDA_BLAS "muBLAS"
#else
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#define HARNESS_CUDA_BACKEND "cuda"
#define HARNESS_CUDA_VENDOR "NVIDIA"
#define HARNESS_CUDA_BLAS "cuBLAS"
#endif

#endif
