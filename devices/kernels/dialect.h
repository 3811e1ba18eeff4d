/* devices/kernels/dialect.h: the macro dialect the kernels in devices/kernels/ are written in, so
 * one text compiles as OpenCL C 1.2 (opencl backend, PoCL) and as CUDA C++ (cuda/musa backends). */

/* Kernels use only these names for what differs between the two languages:
 *   KERNEL            a kernel entry point (OpenCL __kernel; CUDA extern "C" __global__)
 *   DEVICE_FN         a helper function kernels call (OpenCL: plain; CUDA: static __device__)
 *   GLOBAL            the address space of a buffer pointer (OpenCL __global; CUDA: none)
 *   LOCAL_MEM         a work-group array declared in a kernel (__local; __shared__)
 *   LOCAL_PTR         a pointer to such an array in a helper's parameters (__local; none)
 *   GLOBAL_ID, GLOBAL_SIZE, LOCAL_ID, GROUP_ID   one-dimensional launch indices
 *   BARRIER()         work-group barrier with local-memory fence
 *   ATOMIC_CMPXCHG(p, cmp, val)   32-bit int compare-and-swap on global memory
 *   AS_UINT(f), AS_FLOAT(u)       a float's bits as a uint and back (as_uint; __float_as_uint)
 *   ulong, uint       64-bit and 32-bit unsigned integers, as OpenCL names them
 * plus WG (items per work-group, a power of two), HAVE_FP64 and REDUCE_GROUPS, which OpenCL
 * gets as build options and CUDA from the defaults below. Math functions (exp, log, sqrt, erf,
 * fmax, min) are called by their overloaded names, which both languages resolve by type. */
#ifndef KERNEL_DIALECT_H
#define KERNEL_DIALECT_H

#if defined(__OPENCL_VERSION__)

#define KERNEL __kernel
#define DEVICE_FN
#define GLOBAL __global
#define LOCAL_MEM __local
#define LOCAL_PTR __local
#define GLOBAL_ID ((size_t)get_global_id(0))
#define GLOBAL_SIZE ((size_t)get_global_size(0))
#define LOCAL_ID ((int)get_local_id(0))
#define GROUP_ID ((size_t)get_group_id(0))
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define ATOMIC_CMPXCHG(p, cmp, val) atomic_cmpxchg(p, cmp, val)
#define AS_UINT(f) as_uint(f)
#define AS_FLOAT(u) as_float(u)

#elif defined(__CUDACC__) || defined(__MUSACC__)

#include <math.h>
#include <stddef.h>

#define KERNEL extern "C" __global__
#define DEVICE_FN static __device__
#define GLOBAL
#define LOCAL_MEM __shared__
#define LOCAL_PTR
#define GLOBAL_ID ((size_t)blockIdx.x * blockDim.x + threadIdx.x)
#define GLOBAL_SIZE ((size_t)gridDim.x * blockDim.x)
#define LOCAL_ID ((int)threadIdx.x)
#define GROUP_ID ((size_t)blockIdx.x)
#define BARRIER() __syncthreads()
#define ATOMIC_CMPXCHG(p, cmp, val) atomicCAS(p, cmp, val)
#define AS_UINT(f) __float_as_uint(f)
#define AS_FLOAT(u) __uint_as_float(u)
/* the same types glibc's <sys/types.h> gives these names (a repeated typedef is allowed) */
typedef unsigned long ulong;
typedef unsigned int uint;
#ifndef WG
#define WG 256
#endif
#ifndef HAVE_FP64
#define HAVE_FP64 1
#endif
#ifndef REDUCE_GROUPS
#define REDUCE_GROUPS 64
#endif

#else
#error "devices/kernels/dialect.h: compile as OpenCL C or with nvcc/mcc"
#endif

#endif
