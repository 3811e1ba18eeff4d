/* devices/cpu/cpu_real.h: the element type of the cpu backend and the names it exports. The
 * same sources build `cpu` (float, cblas_sgemm) and, with CPU_REAL_DOUBLE, `cpu64` (double). */
#ifndef CPU_REAL_H
#define CPU_REAL_H

#include "device.h"

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

/* every non-static function of the backend goes through CPU_SYM so both builds link together */
#define cpu_fill_ops CPU_SYM(fill_ops)
void cpu_fill_ops(device_i *ops); /* cpu_ops*.c: the op entries of the table */

#endif
