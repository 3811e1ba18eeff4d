/* devices/cpu/cpu_ops_gather.c: the cpu backend's expert gather of rows by index (forward) and
 * its scatter-add (backward); every id is checked before anything is written. */
#include "cpu_real.h"

/* every id in [0, R) */
static int gather_ids_ok(device *d, const char *op, dten idx, int M, int R)
{
    const int32_t *id = IP(idx);
    for (int m = 0; m < M; m++)
        if (id[m] < 0 || id[m] >= R) {
            device_fail(d, "%s: %s: id %d at position %d is outside the %d rows of inp",
                        CPU_BACKEND_NAME, op, (int)id[m], m, R);
            return 0;
        }
    return 1;
}

static void cpu_gather_rows_forward(device *d, dten out, dten inp, dten idx, int M, int R, int C)
{
    const char *op = "gather_rows_forward";
    if (!op_gather_rows_ok(d, op, inp, out, idx, M, R, C) || !gather_ids_ok(d, op, idx, M, R))
        return;
    real *o = RP(out);
    const real *x = RP(inp);
    const int32_t *id = IP(idx);
#pragma omp parallel for schedule(static)
    for (long m = 0; m < M; m++)
        for (int c = 0; c < C; c++)
            o[(size_t)m * C + c] = x[(size_t)id[m] * C + c];
}

/* channels in parallel, rows in m order: a repeated id's sum does not depend on threads */
static void cpu_gather_rows_backward(device *d, dten dinp, dten dout, dten idx, int M, int R,
                                     int C)
{
    const char *op = "gather_rows_backward";
    if (!op_gather_rows_ok(d, op, dinp, dout, idx, M, R, C) || !gather_ids_ok(d, op, idx, M, R))
        return;
    real *dx = RP(dinp);
    const real *dy = RP(dout);
    const int32_t *id = IP(idx);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < C; c++)
        for (int m = 0; m < M; m++)
            dx[(size_t)id[m] * C + c] += dy[(size_t)m * C + c];
}

void cpu_fill_gather(device_i *ops)
{
    ops->gather_rows_forward = cpu_gather_rows_forward;
    ops->gather_rows_backward = cpu_gather_rows_backward;
}
