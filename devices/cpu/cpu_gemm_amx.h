/* devices/cpu/cpu_gemm_amx.h: the fp32 GEMM on Intel AMX tiles (six bf16 products of exact
 * three-part splits, fp32 accumulation) that the cpu backend uses where the machine has AMX. */
#ifndef CPU_GEMM_AMX_H
#define CPU_GEMM_AMX_H

#include "device.h"

/* 1 when this build, this machine and this process can run AMX tiles, and HARNESS_CPU_AMX is not
 * "0"; asks the kernel for the tile state once (arch_prctl) */
int cpu_amx_ready(void);

/* 1 when C = beta C + alpha A B of this shape goes to cpu_amx_gemm (alpha 1, every side at
 * least CPU_AMX_MIN_SIDE: below that the padding to whole tiles costs more than AMX gives) */
int cpu_amx_fits(int M, int N, int K, double alpha);

/* C = beta C + A B (row-major, A M x K, B K x N, either transposed as in BLAS) in fp32 with the
 * device's threads; its scratch through the device; on failure calls device_fail */
void cpu_amx_gemm(device *d, int transA, int transB, int M, int N, int K, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc);

#endif
