/* devices/cpu/cpu_ops_embedding.c: the cpu backend's token + position embedding, forward
 * (parallel over rows) and backward (a scatter-add, parallel over blocks of channels). */
#include "cpu_real.h"

/* shapes and views; every token must index a row of wte (V = wte.n / C rows) */
static int emb_ok(device *d, const char *op, dten wte, dten wpe, dten act, dten tokens, int B,
                  int T, int C)
{
    if (!op_embedding_ok(d, op, wte, wpe, act, tokens, B, T, C))
        return 0;
    size_t bt = (size_t)B * (size_t)T;
    size_t V = wte.n / (size_t)C;
    const int32_t *tok = IP(tokens);
    for (size_t i = 0; i < bt; i++) {
        if (tok[i] < 0 || (size_t)tok[i] >= V) {
            device_fail(d, "%s: %s: token %d at position %zu is outside the %zu rows of wte",
                        CPU_BACKEND_NAME, op, (int)tok[i], i, V);
            return 0;
        }
    }
    return 1;
}

static void cpu_embedding_forward(device *d, dten out, dten tokens, dten wte, dten wpe, int B,
                                  int T, int C)
{
    if (d->failed || !emb_ok(d, "embedding_forward", wte, wpe, out, tokens, B, T, C))
        return;
    real *o = RP(out);
    const int32_t *tok = IP(tokens);
    const real *we = RP(wte), *pe = RP(wpe);
    long rows = (long)B * T;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        const real *w = we + (size_t)tok[r] * C, *p = pe + (size_t)(r % T) * C;
        real *y = o + (size_t)r * C;
        for (int c = 0; c < C; c++)
            y[c] = w[c] + p[c];
    }
}

/* each thread owns whole channel blocks and walks every (b,t) in order: no races, and the
 * order of additions into a row of dwte is the same whatever the thread count */
static void cpu_embedding_backward(device *d, dten dwte, dten dwpe, dten dout, dten tokens,
                                   int B, int T, int C)
{
    if (d->failed || !emb_ok(d, "embedding_backward", dwte, dwpe, dout, tokens, B, T, C))
        return;
    real *gw = RP(dwte), *gp = RP(dwpe);
    const real *g = RP(dout);
    const int32_t *tok = IP(tokens);
    long rows = (long)B * T;
    int nblocks = (C + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CPU_COL_BLOCK;
        int c1 = c0 + CPU_COL_BLOCK < C ? c0 + CPU_COL_BLOCK : C;
        for (long r = 0; r < rows; r++) {
            const real *src = g + (size_t)r * C;
            real *w = gw + (size_t)tok[r] * C, *p = gp + (size_t)(r % T) * C;
            for (int c = c0; c < c1; c++) {
                w[c] += src[c];
                p[c] += src[c];
            }
        }
    }
}

void cpu_fill_embedding(device_i *ops)
{
    ops->embedding_forward = cpu_embedding_forward;
    ops->embedding_backward = cpu_embedding_backward;
}
