/* devices/cpu/cpu_real.h: the element type of the cpu backend and the names it exports. The
 * same sources build `cpu` (float, cblas_sgemm) and, with CPU_REAL_DOUBLE, `cpu64` (double). */
#ifndef CPU_REAL_H
#define CPU_REAL_H

#include "device.h"
#include "op_checks.h"

#ifdef CPU_REAL_DOUBLE
typedef double real;
#define CPU_SYM(x) cpu64_##x
#define CPU_BACKEND_NAME "cpu64"
#define CPU_DTYPE "fp64"
#else
typedef float real;
#define CPU_SYM(x) cpu_##x
#define CPU_BACKEND_NAME "cpu"
#define CPU_DTYPE "fp32"
#endif

/* a cpu buffer: host memory, 64-byte aligned */
struct dbuf {
    dbuf_head head;
    void *data;
};

/* element pointers of a view */
#define RP(t) ((real *)(t).buf->data + (t).off)
#define IP(t) ((int32_t *)(t).buf->data + (t).off)

/* math and BLAS in the element type */
#ifdef CPU_REAL_DOUBLE
#define R_EXP exp
#define R_ERF erf
#define R_SQRT sqrt
#define cblas_real_gemm cblas_dgemm
#else
#define R_EXP expf
#define R_ERF erff
#define R_SQRT sqrtf
#define cblas_real_gemm cblas_sgemm
#endif

/* every non-static function of the backend goes through CPU_SYM so both builds link together */
#define cpu_fill_ops CPU_SYM(fill_ops)
void cpu_fill_ops(device_i *ops); /* cpu_ops*.c: the op entries of the table */

/* scratch that an op keeps between calls (the AMX GEMM's packed panels): at least n reals,
 * held through the device (its memory figures count it) behind d->ctx until the device closes
 * or asks for more; NULL once the device has failed (cpu_backend.c) */
#define cpu_scratch CPU_SYM(scratch)
real *cpu_scratch(device *d, size_t n);

/* device.round_lowp (cpu_ops_lowp.c) */
#define cpu_round_lowp CPU_SYM(round_lowp)
void cpu_round_lowp(device *d, dten x, int n, int mode);

/* the op entries of each cpu_ops_<area>.c */
#define cpu_fill_elementwise CPU_SYM(fill_elementwise)
#define cpu_fill_embedding CPU_SYM(fill_embedding)
#define cpu_fill_layernorm CPU_SYM(fill_layernorm)
#define cpu_fill_gemm CPU_SYM(fill_gemm)
#define cpu_fill_attention CPU_SYM(fill_attention)
#define cpu_fill_loss CPU_SYM(fill_loss)
#define cpu_fill_optim CPU_SYM(fill_optim)
#define cpu_fill_dropout CPU_SYM(fill_dropout)
#define cpu_fill_rmsnorm CPU_SYM(fill_rmsnorm)
#define cpu_fill_silu_mul CPU_SYM(fill_silu_mul)
#define cpu_fill_rope CPU_SYM(fill_rope)
#define cpu_fill_gqa CPU_SYM(fill_gqa)
#define cpu_fill_gather CPU_SYM(fill_gather)
#define cpu_fill_topk CPU_SYM(fill_topk)
void cpu_fill_elementwise(device_i *ops); /* gelu (both forms), add, accumulate, scale */
void cpu_fill_embedding(device_i *ops);
void cpu_fill_layernorm(device_i *ops);
void cpu_fill_gemm(device_i *ops); /* gemm, bias_add, bias_backward */
#define cpu_gemm_library CPU_SYM(gemm_library)
void cpu_gemm_library(char *out, size_t cap); /* "oneDNN 2.6.3 (sgemm, 8 tiles), OpenBLAS (SkylakeX)" */
void cpu_fill_attention(device_i *ops);
void cpu_fill_loss(device_i *ops); /* softmax cross-entropy */
void cpu_fill_optim(device_i *ops); /* adamw, sumsq, sum */
void cpu_fill_dropout(device_i *ops);
void cpu_fill_rmsnorm(device_i *ops);
void cpu_fill_silu_mul(device_i *ops);
void cpu_fill_rope(device_i *ops);
void cpu_fill_gqa(device_i *ops);
void cpu_fill_gather(device_i *ops);
void cpu_fill_topk(device_i *ops);

/* row[0..T) of scaled attention scores becomes the softmax over the seen keys s < send (km: the
 * key mask row, NULL for none; 0 = padding), 0 at the others; all 0 when no key is seen.
 * Sums lane by lane (CPU_LANE_SUM): the same bits at any vector width (cpu_softmax_row.c) */
#define cpu_softmax_row CPU_SYM(softmax_row)
void cpu_softmax_row(real *row, int T, int send, const int32_t *km);

/* Philox blocks cpu_philox_words makes per call, at most */
#define CPU_PHILOX_GROUP 64
/* words[4 l + j] = word j of the dropout Philox block b0 + l (philox_dropout_block of
 * devices/philox.h, the same bits), for l < nb <= CPU_PHILOX_GROUP; vectorized over blocks */
#define cpu_philox_words CPU_SYM(philox_words)
void cpu_philox_words(uint32_t *words, uint32_t b0, int nb, uint64_t seed, uint32_t step,
                      uint32_t layer, uint32_t site);

/* channels per block in column reductions (bias and layernorm weight gradients, embedding
 * scatter): a block's sums run over rows in order, so results do not depend on threads */
#define CPU_COL_BLOCK 32

#endif
