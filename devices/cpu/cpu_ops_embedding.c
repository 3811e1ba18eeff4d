/* devices/cpu/cpu_ops_embedding.c: the cpu backend's token + position embedding (GPT-2) and
 * token + token-type + position embedding (BERT), forward (parallel over rows) and backward (a
 * scatter-add, parallel over blocks of channels). */
#include "cpu_real.h"

/* every id of ids[n] indexes one of the `rows` rows of the table named `table` */
static int ids_ok(device *d, const char *op, const char *what, dten ids, size_t n, size_t rows,
                  const char *table)
{
    const int32_t *id = IP(ids);
    for (size_t i = 0; i < n; i++) {
        if (id[i] < 0 || (size_t)id[i] >= rows) {
            device_fail(d, "%s: %s: %s %d at position %zu is outside the %zu rows of %s",
                        CPU_BACKEND_NAME, op, what, (int)id[i], i, rows, table);
            return 0;
        }
    }
    return 1;
}

/* shapes and views; every token must index a row of wte (V = wte.n / C rows) */
static int emb_ok(device *d, const char *op, dten wte, dten wpe, dten act, dten tokens, int B,
                  int T, int C)
{
    return op_embedding_ok(d, op, wte, wpe, act, tokens, B, T, C) &&
           ids_ok(d, op, "token", tokens, (size_t)B * (size_t)T, wte.n / (size_t)C, "wte");
}

/* as emb_ok, and every type indexes a row of wtt */
static int emb_tt_ok(device *d, const char *op, dten wte, dten wpe, dten wtt, dten act,
                     dten tokens, dten types, int B, int T, int C)
{
    return op_embedding_tt_ok(d, op, wte, wpe, wtt, act, tokens, types, B, T, C) &&
           ids_ok(d, op, "token", tokens, (size_t)B * (size_t)T, wte.n / (size_t)C, "wte") &&
           ids_ok(d, op, "token type", types, (size_t)B * (size_t)T, wtt.n / (size_t)C, "wtt");
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

/* (word + token type) + position, in BertEmbeddings' order of additions */
static void cpu_embedding_tt_forward(device *d, dten out, dten tokens, dten types, dten wte,
                                     dten wpe, dten wtt, int B, int T, int C)
{
    if (d->failed ||
        !emb_tt_ok(d, "embedding_tt_forward", wte, wpe, wtt, out, tokens, types, B, T, C))
        return;
    real *o = RP(out);
    const int32_t *tok = IP(tokens), *typ = IP(types);
    const real *we = RP(wte), *pe = RP(wpe), *te = RP(wtt);
    long rows = (long)B * T;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        const real *w = we + (size_t)tok[r] * C, *p = pe + (size_t)(r % T) * C;
        const real *tt = te + (size_t)typ[r] * C;
        real *y = o + (size_t)r * C;
        for (int c = 0; c < C; c++)
            y[c] = (w[c] + tt[c]) + p[c];
    }
}

/* The scatter-add of both backward ops (dwtt NULL for GPT-2's). Each thread owns whole channel
 * blocks and walks every (b,t) in order: no races, and the order of additions into a row of
 * dwte is the same whatever the thread count. */
static void emb_scatter(real *gw, real *gp, real *gt, const real *g, const int32_t *tok,
                        const int32_t *typ, long rows, int T, int C)
{
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
            if (gt) {
                real *t = gt + (size_t)typ[r] * C;
                for (int c = c0; c < c1; c++)
                    t[c] += src[c];
            }
        }
    }
}

static void cpu_embedding_backward(device *d, dten dwte, dten dwpe, dten dout, dten tokens,
                                   int B, int T, int C)
{
    if (d->failed || !emb_ok(d, "embedding_backward", dwte, dwpe, dout, tokens, B, T, C))
        return;
    emb_scatter(RP(dwte), RP(dwpe), NULL, RP(dout), IP(tokens), NULL, (long)B * T, T, C);
}

static void cpu_embedding_tt_backward(device *d, dten dwte, dten dwpe, dten dwtt, dten dout,
                                      dten tokens, dten types, int B, int T, int C)
{
    if (d->failed || !emb_tt_ok(d, "embedding_tt_backward", dwte, dwpe, dwtt, dout, tokens,
                                types, B, T, C))
        return;
    emb_scatter(RP(dwte), RP(dwpe), RP(dwtt), RP(dout), IP(tokens), IP(types), (long)B * T, T,
                C);
}

void cpu_fill_embedding(device_i *ops)
{
    ops->embedding_forward = cpu_embedding_forward;
    ops->embedding_backward = cpu_embedding_backward;
    ops->embedding_tt_forward = cpu_embedding_tt_forward;
    ops->embedding_tt_backward = cpu_embedding_tt_backward;
}
