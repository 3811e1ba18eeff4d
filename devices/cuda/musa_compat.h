/* devices/cuda/musa_compat.h: builds the cuda backend's sources with Moore Threads' MUSA toolchain
 * (-DHARNESS_MUSA=ON): maps every CUDA runtime, cuBLAS and NCCL name they use to MUSA's. */
#ifndef MUSA_COMPAT_H
#define MUSA_COMPAT_H

/* One #define per name, as ggml's MUSA build maps its CUDA backend (ggml-cuda/vendors/musa.h).
 * tests/test_musa_mapping.sh fails when a CUDA, cuBLAS or NCCL name appears in devices/cuda/ or
 * in the nccl communicator (harness/comm/comm_nccl.c) without a line here. */
#include <mublas.h>
#include <musa_runtime_api.h>

/* ---- runtime: errors, devices, versions ---- */
#define cudaError_t musaError_t
#define cudaSuccess musaSuccess
#define cudaGetErrorName musaGetErrorName
#define cudaGetErrorString musaGetErrorString
#define cudaGetLastError musaGetLastError
#define cudaGetDeviceCount musaGetDeviceCount
#define cudaSetDevice musaSetDevice
#define cudaDeviceProp musaDeviceProp
#define cudaGetDeviceProperties musaGetDeviceProperties
#define cudaDeviceGetPCIBusId musaDeviceGetPCIBusId
#define cudaDriverGetVersion musaDriverGetVersion
#define cudaRuntimeGetVersion musaRuntimeGetVersion
#define cudaDeviceSynchronize musaDeviceSynchronize
#define cudaMemGetInfo musaMemGetInfo

/* ---- memory ---- */
#define cudaMalloc musaMalloc
#define cudaFree musaFree
#define cudaMemsetAsync musaMemsetAsync
#define cudaMemcpyAsync musaMemcpyAsync
#define cudaMemcpyKind musaMemcpyKind
#define cudaMemcpyHostToDevice musaMemcpyHostToDevice
#define cudaMemcpyDeviceToHost musaMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice musaMemcpyDeviceToDevice

/* ---- streams, events, launches ---- */
#define cudaStream_t musaStream_t
#define cudaStreamCreateWithFlags musaStreamCreateWithFlags
#define cudaStreamNonBlocking musaStreamNonBlocking
#define cudaStreamSynchronize musaStreamSynchronize
#define cudaStreamDestroy musaStreamDestroy
#define cudaEvent_t musaEvent_t
#define cudaEventCreate musaEventCreate
#define cudaEventRecord musaEventRecord
#define cudaEventSynchronize musaEventSynchronize
#define cudaEventElapsedTime musaEventElapsedTime
#define cudaEventDestroy musaEventDestroy
#define cudaEventCreateWithFlags musaEventCreateWithFlags
#define cudaEventDisableTiming musaEventDisableTiming
#define cudaEventQuery musaEventQuery
#define cudaErrorNotReady musaErrorNotReady
#define cudaLaunchKernel musaLaunchKernel

/* ---- cuBLAS -> muBLAS ---- */
#define cublasHandle_t mublasHandle_t
#define cublasStatus_t mublasStatus_t
#define cublasOperation_t mublasOperation_t
#define cublasCreate mublasCreate
#define cublasDestroy mublasDestroy
#define cublasSetStream mublasSetStream
#define cublasSetWorkspace mublasSetWorkspace
#define cublasSetMathMode mublasSetMathMode
#define cublasGetStatusString mublasGetStatusString
#define cublasSgemm mublasSgemm
#define cublasSgemmStridedBatched mublasSgemmStridedBatched
#define CUBLAS_STATUS_SUCCESS MUBLAS_STATUS_SUCCESS
#define CUBLAS_OP_N MUBLAS_OP_N
#define CUBLAS_OP_T MUBLAS_OP_T
#define CUBLAS_DEFAULT_MATH MUBLAS_DEFAULT_MATH

/* ---- NCCL -> MCCL (the nccl communicator; mccl.h is included by cu_nccl.h) ---- */
#define ncclComm_t mcclComm_t
#define ncclUniqueId mcclUniqueId
#define ncclResult_t mcclResult_t
#define ncclConfig_t mcclConfig_t
#define NCCL_CONFIG_INITIALIZER MCCL_CONFIG_INITIALIZER
#define ncclSuccess mcclSuccess
#define ncclInProgress mcclInProgress
#define ncclFloat mcclFloat
#define ncclInt8 mcclInt8
#define ncclSum mcclSum
#define ncclGetUniqueId mcclGetUniqueId
#define ncclCommInitRankConfig mcclCommInitRankConfig
#define ncclCommGetAsyncError mcclCommGetAsyncError
#define ncclCommAbort mcclCommAbort
#define ncclCommFinalize mcclCommFinalize
#define ncclCommDestroy mcclCommDestroy
#define ncclGetErrorString mcclGetErrorString
#define ncclGetLastError mcclGetLastError
#define ncclAllReduce mcclAllReduce
#define ncclReduceScatter mcclReduceScatter
#define ncclAllGather mcclAllGather
#define ncclBroadcast mcclBroadcast

#endif
