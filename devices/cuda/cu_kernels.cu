/* devices/cuda/cu_kernels.cu: the cuda backend's kernels: the very sources of devices/kernels/
 * (the opencl backend's) compiled as CUDA C through dialect.h, and their table for the host. */
#include "kernels/dialect.h"
#include "philox.h"
#include "topk_select.h"

/* common.cl first (acc_t, work-group sums, error codes), then every kernel file */
#include "kernels/common.cl"

#include "kernels/attention.cl"
#include "kernels/dropout.cl"
#include "kernels/elementwise.cl"
#include "kernels/embedding.cl"
#include "kernels/gather.cl"
#include "kernels/gemm.cl"
#include "kernels/gqa.cl"
#include "kernels/layernorm.cl"
#include "kernels/loss.cl"
#include "kernels/lowp.cl"
#include "kernels/optim.cl"
#include "kernels/reduce.cl"
#include "kernels/rmsnorm.cl"
#include "kernels/rope.cl"
#include "kernels/silu_mul.cl"
#include "kernels/topk.cl"

#include "kernels/kernel_list.h"

static_assert(sizeof(ulong) == 8, "the kernels' ulong must be 64 bits");
static_assert(WG == 256, "WG must equal CU_WG (cu_internal.h)");

/* the entry points in kernel_id order: cu_launch hands them to cudaLaunchKernel */
#define KERNEL_ADDRESS(id, name) (const void *)name,
extern "C" {
extern const void *const cuda_kernel_table[K_COUNT];
const void *const cuda_kernel_table[K_COUNT] = {KERNEL_LIST(KERNEL_ADDRESS)};
}
