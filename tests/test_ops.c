/* tests/test_ops.c: every op of the cpu (fp32) and cpu64 (fp64) backends against naive double
 * references, backward ops against finite differences, transfers, memory accounting, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "philox.h"
#include "rope.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------------ */

#define PAD 3           /* every test view sits PAD elements into a buffer ... */
#define SENTINEL 1234.5 /* ... whose pads hold this, checked after every op */
#define MAXBUFS 32

/* Forward tolerances, as max |got - want| / (1 + |want|). Test inputs are rounded to float, so
 * the fp32 device and the double reference see the same values and only the op's own fp32
 * arithmetic (a few ulps of 6e-8, over short sums) shows; fp64 must agree to rounding. */
typedef struct {
    const char *spec;
    double tol;
} devtol;
static const devtol DEVS[2] = {{"cpu", 1e-5}, {"cpu64", 1e-12}};

/* central differences in double: truncation ~eps^2, cancellation ~1e-16 |L| / eps ~1e-9 */
#define FD_EPS 1e-6
#define FD_TOL 1e-6

typedef struct {
    device *d;
    dten bufs[MAXBUFS];
    int n;
} tdev;

static void tdev_open(tdev *t, const char *spec)
{
    char err[DEVICE_ERR];
    t->d = device_open(spec, err, sizeof err);
    if (!t->d)
        fail_msg("device_open(%s): %s", spec, err);
    t->n = 0;
}

static void tdev_close(tdev *t)
{
    for (int i = 0; i < t->n; i++)
        device_free(t->d, t->bufs[i]);
    device_close(t->d);
}

static dten tdev_alloc(tdev *t, size_t n, dkind kind)
{
    assert_true(t->n < MAXBUFS);
    dten all = device_alloc(t->d, n + 2 * PAD, kind);
    assert_non_null(all.buf);
    t->bufs[t->n++] = all;
    return all;
}

/* a DT_REAL view of n elements holding x, PAD elements into a buffer padded with SENTINEL */
static dten put(tdev *t, const double *x, size_t n)
{
    dten all = tdev_alloc(t, n, DT_REAL);
    double *h = malloc((n + 2 * PAD) * sizeof *h);
    for (size_t i = 0; i < n + 2 * PAD; i++)
        h[i] = i >= PAD && i < PAD + n ? x[i - PAD] : SENTINEL;
    t->d->ops->upload_f64(t->d, all, h);
    free(h);
    return dten_view(all, PAD, n);
}

static dten put_i32(tdev *t, const int32_t *x, size_t n)
{
    dten all = tdev_alloc(t, n, DT_I32);
    int32_t *h = malloc((n + 2 * PAD) * sizeof *h);
    for (size_t i = 0; i < n + 2 * PAD; i++)
        h[i] = i >= PAD && i < PAD + n ? x[i - PAD] : -7777;
    t->d->ops->upload_i32(t->d, all, h);
    free(h);
    return dten_view(all, PAD, n);
}

static void no_error(tdev *t)
{
    const char *e = device_error(t->d);
    if (e)
        fail_msg("%s: unexpected device error: %s", t->d->backend, e);
}

/* the view v (made by put) into out; fails on a device error or a changed pad */
static void get(tdev *t, dten v, double *out)
{
    no_error(t);
    size_t total = v.off + v.n + PAD;
    double *h = malloc(total * sizeof *h);
    t->d->ops->download_f64(t->d, h, (dten){v.buf, 0, total});
    for (size_t i = 0; i < total; i++)
        if ((i < v.off || i >= v.off + v.n) && h[i] != SENTINEL)
            fail_msg("%s: element %zu outside the view was written", t->d->backend, i);
    memcpy(out, h + v.off, v.n * sizeof *out);
    free(h);
}

/* seeded uniform values, rounded to float so both devices hold exactly these inputs */
static void rnd(double *x, size_t n, uint64_t seed, double lo, double hi)
{
    uint64_t s = seed;
    tu_fill(x, n, &s, lo, hi);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)x[i];
}

static void assert_close(const double *got, const double *want, size_t n, double tol,
                         const char *spec, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double err = fabs(got[i] - want[i]) / (1 + fabs(want[i]));
        if (!(err <= tol))
            fail_msg("%s %s[%zu]: got %.17g, want %.17g (error %.3g > %.3g)", spec, what, i,
                     got[i], want[i], err, tol);
    }
}

/* got = pre + gradient: checks got - pre against want (the "+=" semantics of backward ops) */
static void assert_added(const double *got, const double *pre, const double *want, size_t n,
                         double tol, const char *spec, const char *what)
{
    double *delta = malloc(n * sizeof *delta);
    for (size_t i = 0; i < n; i++)
        delta[i] = got[i] - pre[i];
    assert_close(delta, want, n, tol, spec, what);
    free(delta);
}

static double dotp(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* dL/dx[i] by central differences; x lives inside ctx, which L reads */
typedef double (*loss_fn)(void *ctx);
static void fd_grad(loss_fn L, void *ctx, double *x, size_t n, double *g)
{
    for (size_t i = 0; i < n; i++) {
        double save = x[i];
        x[i] = save + FD_EPS;
        double lp = L(ctx);
        x[i] = save - FD_EPS;
        double lm = L(ctx);
        x[i] = save;
        g[i] = (lp - lm) / (2 * FD_EPS);
    }
}

/* ---- embedding ---------------------------------------------------------------------------- */

enum { EB = 2, ET = 5, EC = 13, EV = 11, ETMAX = 7, EBTC = EB * ET * EC };
typedef struct {
    int32_t tok[EB * ET];
    double wte[EV * EC], wpe[ETMAX * EC], R[EBTC];
} emb_case;

static void emb_init(emb_case *e, uint64_t seed)
{
    uint64_t s = seed;
    for (int i = 0; i < EB * ET; i++)
        e->tok[i] = (int32_t)tu_uniform(&s, 0, EV);
    e->tok[7] = e->tok[2]; /* a repeated token: its gradient rows must add up */
    e->tok[9] = EV - 1;
    rnd(e->wte, EV * EC, seed + 1, -1, 1);
    rnd(e->wpe, ETMAX * EC, seed + 2, -1, 1);
    rnd(e->R, EBTC, seed + 3, -1, 1);
}

static void emb_ref(const emb_case *e, double *out)
{
    for (int b = 0; b < EB; b++)
        for (int t = 0; t < ET; t++)
            for (int c = 0; c < EC; c++)
                out[(b * ET + t) * EC + c] =
                    e->wte[e->tok[b * ET + t] * EC + c] + e->wpe[t * EC + c];
}

static double emb_loss(void *ctx)
{
    emb_case *e = ctx;
    double out[EBTC];
    emb_ref(e, out);
    return dotp(out, e->R, EBTC);
}

static void test_embedding_forward(void **state)
{
    emb_case e;
    emb_init(&e, 101);
    double want[EBTC], got[EBTC], junk[EBTC];
    emb_ref(&e, want);
    rnd(junk, EBTC, 102, -5, 5);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, EBTC);
        t.d->ops->embedding_forward(t.d, out, put_i32(&t, e.tok, EB * ET),
                                    put(&t, e.wte, EV * EC), put(&t, e.wpe, ETMAX * EC), EB, ET,
                                    EC);
        get(&t, out, got);
        assert_close(got, want, EBTC, DEVS[k].tol, DEVS[k].spec, "embedding out");
        tdev_close(&t);
    }
}

static void emb_bwd_run(const char *spec, const emb_case *e, const double *pw, const double *pp,
                        double *gw, double *gp)
{
    tdev t;
    tdev_open(&t, spec);
    dten dwte = put(&t, pw, EV * EC), dwpe = put(&t, pp, ETMAX * EC);
    t.d->ops->embedding_backward(t.d, dwte, dwpe, put(&t, e->R, EBTC),
                                 put_i32(&t, e->tok, EB * ET), EB, ET, EC);
    get(&t, dwte, gw);
    get(&t, dwpe, gp);
    tdev_close(&t);
}

static void test_embedding_backward(void **state)
{
    emb_case e;
    emb_init(&e, 111);
    double pw[EV * EC], pp[ETMAX * EC], fw[EV * EC], fp[ETMAX * EC];
    double w64[EV * EC], p64[ETMAX * EC], w32[EV * EC], p32[ETMAX * EC];
    rnd(pw, EV * EC, 112, -1, 1);
    rnd(pp, ETMAX * EC, 113, -1, 1);
    fd_grad(emb_loss, &e, e.wte, EV * EC, fw);
    fd_grad(emb_loss, &e, e.wpe, ETMAX * EC, fp);
    emb_bwd_run("cpu64", &e, pw, pp, w64, p64);
    assert_added(w64, pw, fw, EV * EC, FD_TOL, "cpu64", "dwte vs finite differences");
    assert_added(p64, pp, fp, ETMAX * EC, FD_TOL, "cpu64", "dwpe vs finite differences");
    /* fp32: each gradient element is a short sum of float products plus the pre-fill */
    emb_bwd_run("cpu", &e, pw, pp, w32, p32);
    assert_close(w32, w64, EV * EC, 1e-5, "cpu", "dwte vs cpu64");
    assert_close(p32, p64, ETMAX * EC, 1e-5, "cpu", "dwpe vs cpu64");
}

/* ---- layernorm ---------------------------------------------------------------------------- */

enum { LN = 7, LC = 13, LNC = LN * LC };
#define LN_EPS 1e-5
typedef struct {
    double x[LNC], w[LC], b[LC], R[LNC];
} ln_case;

static void ln_init(ln_case *c, uint64_t seed)
{
    rnd(c->x, LNC, seed, -2, 3); /* a non-zero mean */
    rnd(c->w, LC, seed + 1, 0.5, 1.5);
    rnd(c->b, LC, seed + 2, -1, 1);
    rnd(c->R, LNC, seed + 3, -1, 1);
}

static void ln_ref(const ln_case *c, double *out, double *mean, double *rstd)
{
    for (int n = 0; n < LN; n++) {
        const double *x = c->x + n * LC;
        double m = 0, v = 0;
        for (int i = 0; i < LC; i++)
            m += x[i] / LC;
        for (int i = 0; i < LC; i++)
            v += (x[i] - m) * (x[i] - m) / LC;
        double s = 1 / sqrt(v + LN_EPS);
        for (int i = 0; i < LC; i++)
            out[n * LC + i] = (x[i] - m) * s * c->w[i] + c->b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

static double ln_loss(void *ctx)
{
    ln_case *c = ctx;
    double out[LNC], mean[LN], rstd[LN];
    ln_ref(c, out, mean, rstd);
    return dotp(out, c->R, LNC);
}

static void test_layernorm_forward(void **state)
{
    ln_case c;
    ln_init(&c, 201);
    double want[LNC], wm[LN], wr[LN], got[LNC], gm[LN], gr[LN], junk[LNC];
    ln_ref(&c, want, wm, wr);
    rnd(junk, LNC, 202, -5, 5);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, LNC), mean = put(&t, junk, LN), rstd = put(&t, junk + LN, LN);
        t.d->ops->layernorm_forward(t.d, out, mean, rstd, put(&t, c.x, LNC), put(&t, c.w, LC),
                                    put(&t, c.b, LC), LN, LC, LN_EPS);
        get(&t, out, got);
        get(&t, mean, gm);
        get(&t, rstd, gr);
        assert_close(got, want, LNC, DEVS[k].tol, DEVS[k].spec, "layernorm out");
        assert_close(gm, wm, LN, DEVS[k].tol, DEVS[k].spec, "layernorm mean");
        assert_close(gr, wr, LN, DEVS[k].tol, DEVS[k].spec, "layernorm rstd");
        tdev_close(&t);
    }
}

/* forward then backward on one device (mean and rstd from that device's forward) */
static void ln_bwd_run(const char *spec, const ln_case *c, const double *pre, double *gx,
                       double *gw, double *gb)
{
    tdev t;
    tdev_open(&t, spec);
    dten out = put(&t, pre, LNC), mean = put(&t, pre, LN), rstd = put(&t, pre, LN);
    dten x = put(&t, c->x, LNC), w = put(&t, c->w, LC);
    t.d->ops->layernorm_forward(t.d, out, mean, rstd, x, w, put(&t, c->b, LC), LN, LC, LN_EPS);
    dten dx = put(&t, pre, LNC), dw = put(&t, pre + LNC, LC), db = put(&t, pre + LNC + LC, LC);
    t.d->ops->layernorm_backward(t.d, dx, dw, db, put(&t, c->R, LNC), x, w, mean, rstd, LN, LC);
    get(&t, dx, gx);
    get(&t, dw, gw);
    get(&t, db, gb);
    tdev_close(&t);
}

static void test_layernorm_backward(void **state)
{
    ln_case c;
    ln_init(&c, 211);
    double pre[LNC + 2 * LC], fx[LNC], fw[LC], fb[LC];
    double x64[LNC], w64[LC], b64[LC], x32[LNC], w32[LC], b32[LC];
    rnd(pre, LNC + 2 * LC, 212, -1, 1);
    fd_grad(ln_loss, &c, c.x, LNC, fx);
    fd_grad(ln_loss, &c, c.w, LC, fw);
    fd_grad(ln_loss, &c, c.b, LC, fb);
    ln_bwd_run("cpu64", &c, pre, x64, w64, b64);
    assert_added(x64, pre, fx, LNC, FD_TOL, "cpu64", "dinp vs finite differences");
    assert_added(w64, pre + LNC, fw, LC, FD_TOL, "cpu64", "dw vs finite differences");
    assert_added(b64, pre + LNC + LC, fb, LC, FD_TOL, "cpu64", "db vs finite differences");
    /* fp32: dinp subtracts two row means from dnorm (mild cancellation), dw/db sum N rows */
    ln_bwd_run("cpu", &c, pre, x32, w32, b32);
    assert_close(x32, x64, LNC, 2e-5, "cpu", "dinp vs cpu64");
    assert_close(w32, w64, LC, 2e-5, "cpu", "dw vs cpu64");
    assert_close(b32, b64, LC, 2e-5, "cpu", "db vs cpu64");
}

/* ---- gemm --------------------------------------------------------------------------------- */

enum { GM = 5, GN = 4, GBATCH = 3, GOFF = 2 };

/* a stored operand: op(X) is r x c; padded leading dimension and batch stride */
typedef struct {
    int rows, cols, ld;
    long stride;
    size_t n;
} gmat;

static gmat gmat_make(int trans, int r, int c, int padld, int padstride)
{
    gmat m;
    m.rows = trans ? c : r;
    m.cols = trans ? r : c;
    m.ld = m.cols + padld;
    m.stride = (long)m.rows * m.ld + padstride;
    m.n = (size_t)GBATCH * (size_t)m.stride + 4;
    return m;
}

static void gemm_ref(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
                     long sA, const double *B, int ldb, long sB, double beta, double *C, int ldc,
                     long sC, int batch)
{
    for (int i = 0; i < batch; i++)
        for (int r = 0; r < M; r++)
            for (int c = 0; c < N; c++) {
                double s = 0;
                for (int k = 0; k < K; k++) {
                    double a = ta ? A[i * sA + k * lda + r] : A[i * sA + r * lda + k];
                    double b = tb ? B[i * sB + c * ldb + k] : B[i * sB + k * ldb + c];
                    s += a * b;
                }
                double *y = &C[i * sC + r * ldc + c];
                *y = alpha * s + beta * *y;
            }
}

/* one gemm call on both devices against the reference, operands GOFF into their put views;
 * the whole C buffer is compared, so writes between rows or batch entries are caught */
static void gemm_case(int ta, int tb, int K, double alpha, double beta, uint64_t seed)
{
    gmat a = gmat_make(ta, GM, K, 2, 3), b = gmat_make(tb, K, GN, 1, 5);
    gmat c = gmat_make(0, GM, GN, 3, 2);
    size_t na = a.n + GOFF, nb = b.n + GOFF, nc = c.n + GOFF;
    double *A = malloc(na * sizeof *A), *B = malloc(nb * sizeof *B), *C = malloc(nc * sizeof *C);
    double *want = malloc(nc * sizeof *want), *got = malloc(nc * sizeof *got);
    rnd(A, na, seed, -1, 1);
    rnd(B, nb, seed + 1, -1, 1);
    rnd(C, nc, seed + 2, -1, 1);
    memcpy(want, C, nc * sizeof *C);
    gemm_ref(ta, tb, GM, GN, K, alpha, A + GOFF, a.ld, a.stride, B + GOFF, b.ld, b.stride, beta,
             want + GOFF, c.ld, c.stride, GBATCH);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten av = put(&t, A, na), bv = put(&t, B, nb), cv = put(&t, C, nc);
        t.d->ops->gemm(t.d, ta, tb, GM, GN, K, alpha, dten_view(av, GOFF, a.n), a.ld, a.stride,
                       dten_view(bv, GOFF, b.n), b.ld, b.stride, beta,
                       dten_view(cv, GOFF, c.n), c.ld, c.stride, GBATCH);
        get(&t, cv, got);
        char what[128];
        snprintf(what, sizeof what, "gemm(tA=%d tB=%d K=%d a=%g b=%g) C", ta, tb, K, alpha, beta);
        assert_close(got, want, nc, DEVS[k].tol, DEVS[k].spec, what);
        tdev_close(&t);
    }
    free(A);
    free(B);
    free(C);
    free(want);
    free(got);
}

static void test_gemm_transposes(void **state)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            gemm_case(ta, tb, 6, 0.7, -0.3, 300 + 10 * ta + tb);
}

/* beta = 1 accumulates, beta = 0 overwrites, a longer K, and the no-product paths */
static void test_gemm_special(void **state)
{
    gemm_case(1, 0, 6, 1.0, 1.0, 321);
    gemm_case(0, 1, 6, -1.3, 0.0, 322);
    gemm_case(0, 0, 37, 0.25, 0.5, 323);
    gemm_case(0, 0, 0, 0.7, -0.3, 324);
    gemm_case(1, 1, 6, 0.0, 2.0, 325);
}

/* ---- bias --------------------------------------------------------------------------------- */

enum { BN = 7, BC = 13 };

static void test_bias_add(void **state)
{
    double x[BN * BC], bias[BC], want[BN * BC], got[BN * BC];
    rnd(x, BN * BC, 401, -1, 1);
    rnd(bias, BC, 402, -1, 1);
    for (int n = 0; n < BN; n++)
        for (int c = 0; c < BC; c++)
            want[n * BC + c] = x[n * BC + c] + bias[c];
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, x, BN * BC);
        t.d->ops->bias_add(t.d, out, put(&t, bias, BC), BN, BC);
        get(&t, out, got);
        assert_close(got, want, BN * BC, DEVS[k].tol, DEVS[k].spec, "bias_add out");
        tdev_close(&t);
    }
}

typedef struct {
    double x[BN * BC], bias[BC], R[BN * BC];
} bias_case;

/* L = sum((x + bias) * R) */
static double bias_loss(void *ctx)
{
    bias_case *c = ctx;
    double L = 0;
    for (int n = 0; n < BN; n++)
        for (int i = 0; i < BC; i++)
            L += (c->x[n * BC + i] + c->bias[i]) * c->R[n * BC + i];
    return L;
}

static void bias_bwd_run(const char *spec, const double *R, const double *pre, double *got)
{
    tdev t;
    tdev_open(&t, spec);
    dten db = put(&t, pre, BC);
    t.d->ops->bias_backward(t.d, db, put(&t, R, BN * BC), BN, BC);
    get(&t, db, got);
    tdev_close(&t);
}

static void test_bias_backward(void **state)
{
    bias_case c;
    double pre[BC], fd[BC], g64[BC], g32[BC];
    rnd(c.x, BN * BC, 411, -1, 1);
    rnd(c.bias, BC, 412, -1, 1);
    rnd(c.R, BN * BC, 413, -1, 1);
    rnd(pre, BC, 414, -1, 1);
    fd_grad(bias_loss, &c, c.bias, BC, fd);
    bias_bwd_run("cpu64", c.R, pre, g64);
    assert_added(g64, pre, fd, BC, FD_TOL, "cpu64", "dbias vs finite differences");
    bias_bwd_run("cpu", c.R, pre, g32);
    assert_close(g32, g64, BC, 1e-5, "cpu", "dbias vs cpu64"); /* sums in double */
}

/* ---- attention ---------------------------------------------------------------------------- */

typedef struct {
    int B, T, C, NH, causal;
} att_shape;
static const att_shape ASHAPES[] = {{2, 5, 12, 3, 1}, {2, 5, 12, 3, 0}, {1, 17, 32, 4, 1}};
enum { AQ_MAX = 1632, AO_MAX = 544, AA_MAX = 1156 };
typedef struct {
    att_shape s;
    size_t nq, no, na; /* elements of qkv, out, att */
    double qkv[AQ_MAX], R[AO_MAX];
    int masked;           /* km is a key mask [B,T] (attention_masked_*) */
    int32_t km[AO_MAX];
    attn_dropout drop;    /* probability dropout of the reference (p = 0: none) */
} att_case;

static void att_init(att_case *a, att_shape s, uint64_t seed)
{
    a->s = s;
    a->nq = (size_t)s.B * s.T * 3 * s.C;
    a->no = (size_t)s.B * s.T * s.C;
    a->na = (size_t)s.B * s.NH * s.T * s.T;
    assert_true(a->nq <= AQ_MAX && a->no <= AO_MAX && a->na <= AA_MAX);
    rnd(a->qkv, a->nq, seed, -1.5, 1.5);
    rnd(a->R, a->no, seed + 1, -1, 1);
    a->masked = 0;
    a->drop = (attn_dropout){0};
}

/* the reference's dropped probability of element i (flat index in att) with value x: kept and
 * scaled by 1/(1-p) in double, or 0, as philox.h decides */
static double att_ref_drop(const att_case *a, size_t i, double x)
{
    const attn_dropout *d = &a->drop;
    if (d->p == 0)
        return x;
    int keep = philox_dropout_keep(d->seed, d->step, d->layer, DROPOUT_SITE_ATTN_PROBS, i,
                                   philox_dropout_threshold(d->p));
    return keep ? x / (1 - d->p) : 0;
}

/* key s of sequence b is seen by query t (causal edge, key mask) */
static int att_visible(const att_case *a, int b, int t, int s)
{
    return (!a->s.causal || s <= t) && (!a->masked || a->km[b * a->s.T + s] != 0);
}

/* one query row of one head: softmax probabilities into ar, ar . v into o[hs] */
static void att_ref_row(const att_case *a, int b, int h, int t, double *ar, double *o)
{
    int T = a->s.T, C = a->s.C, hs = C / a->s.NH;
    const double *q = a->qkv + (size_t)(b * T + t) * 3 * C + h * hs;
    double mx = -INFINITY, sum = 0;
    for (int s = 0; s < T; s++) {
        const double *k = a->qkv + (size_t)(b * T + s) * 3 * C + C + h * hs;
        ar[s] = att_visible(a, b, t, s) ? dotp(q, k, hs) / sqrt(hs) : 0;
        mx = att_visible(a, b, t, s) && ar[s] > mx ? ar[s] : mx;
    }
    for (int s = 0; s < T; s++)
        sum += (ar[s] = att_visible(a, b, t, s) ? exp(ar[s] - mx) : 0);
    for (int s = 0; s < T; s++) /* no visible key: the op's documented all-zero row */
        ar[s] = sum > 0 ? ar[s] / sum : 0;
    size_t row = ((size_t)(b * a->s.NH + h) * T + t) * T; /* flat index of ar[0] in att */
    for (int j = 0; j < hs; j++) {
        o[j] = 0;
        for (int s = 0; s < T; s++)
            o[j] += att_ref_drop(a, row + s, ar[s]) *
                    a->qkv[(size_t)(b * T + s) * 3 * C + 2 * C + h * hs + j];
    }
}

static void att_ref(const att_case *a, double *out, double *att)
{
    int T = a->s.T, C = a->s.C, NH = a->s.NH, hs = C / NH;
    for (int b = 0; b < a->s.B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++)
                att_ref_row(a, b, h, t, att + ((size_t)(b * NH + h) * T + t) * T,
                            out + (size_t)(b * T + t) * C + h * hs);
}

static double att_loss(void *ctx)
{
    att_case *a = ctx;
    double out[AO_MAX], att[AA_MAX];
    att_ref(a, out, att);
    return dotp(out, a->R, a->no);
}

static void test_attention_forward(void **state)
{
    static att_case a;
    static double want[AO_MAX], wa[AA_MAX], got[AO_MAX], ga[AA_MAX], junk[AA_MAX];
    rnd(junk, AA_MAX, 502, -5, 5);
    for (size_t i = 0; i < sizeof ASHAPES / sizeof ASHAPES[0]; i++) {
        att_shape s = ASHAPES[i];
        att_init(&a, s, 500 + 10 * i);
        att_ref(&a, want, wa);
        for (int k = 0; k < 2; k++) {
            tdev t;
            tdev_open(&t, DEVS[k].spec);
            dten out = put(&t, junk, a.no), att = put(&t, junk, a.na); /* junk above diagonal */
            t.d->ops->attention_forward(t.d, out, att, put(&t, a.qkv, a.nq), s.B, s.T, s.C, s.NH,
                                        s.causal);
            get(&t, out, got);
            get(&t, att, ga);
            char what[128];
            snprintf(what, sizeof what, "attention T=%d C=%d causal=%d", s.T, s.C, s.causal);
            assert_close(got, want, a.no, DEVS[k].tol, DEVS[k].spec, what);
            assert_close(ga, wa, a.na, DEVS[k].tol, DEVS[k].spec, what);
            tdev_close(&t);
        }
    }
}

/* forward then backward on one device, dout = R, dqkv pre-filled, scratch full of junk */
static void att_bwd_run(const char *spec, const att_case *a, const double *pre,
                        const double *junk, double *got)
{
    att_shape s = a->s;
    tdev t;
    tdev_open(&t, spec);
    dten out = put(&t, junk, a->no), att = put(&t, junk, a->na), qkv = put(&t, a->qkv, a->nq);
    t.d->ops->attention_forward(t.d, out, att, qkv, s.B, s.T, s.C, s.NH, s.causal);
    dten dqkv = put(&t, pre, a->nq);
    t.d->ops->attention_backward(t.d, dqkv, put(&t, junk, a->na), put(&t, a->R, a->no), qkv, att,
                                 s.B, s.T, s.C, s.NH, s.causal);
    get(&t, dqkv, got);
    tdev_close(&t);
}

static void test_attention_backward(void **state)
{
    static att_case a;
    static double pre[AQ_MAX], fd[AQ_MAX], g64[AQ_MAX], g32[AQ_MAX], junk[AQ_MAX];
    rnd(pre, AQ_MAX, 511, -1, 1);
    rnd(junk, AQ_MAX, 512, -5, 5);
    for (size_t i = 0; i < sizeof ASHAPES / sizeof ASHAPES[0]; i++) {
        att_init(&a, ASHAPES[i], 520 + 10 * i);
        fd_grad(att_loss, &a, a.qkv, a.nq, fd);
        att_bwd_run("cpu64", &a, pre, junk, g64);
        assert_added(g64, pre, fd, a.nq, FD_TOL, "cpu64", "dqkv vs finite differences");
        /* fp32: sums over T keys of float products on top of the pre-fill */
        att_bwd_run("cpu", &a, pre, junk, g32);
        assert_close(g32, g64, a.nq, 2e-5, "cpu", "dqkv vs cpu64");
    }
}

/* ---- attention with a key mask ------------------------------------------------------------ */

/* key masks: about a third padding, sequence 1 all padding, so every kind of row occurs */
static void att_mask_init(att_case *a, uint64_t seed)
{
    uint64_t st = seed;
    a->masked = 1;
    for (int b = 0; b < a->s.B; b++)
        for (int t = 0; t < a->s.T; t++)
            a->km[b * a->s.T + t] = b == 1 ? 0 : tu_uniform(&st, 0, 1) >= 0.35;
    a->km[0] = 0; /* query 0 of a causal sequence 0 sees no key at all */
}

static const att_shape MSHAPES[] = {{3, 5, 12, 3, 0}, {3, 5, 12, 3, 1}, {2, 9, 16, 2, 0}};

static void test_attention_masked_forward(void **state)
{
    static att_case a;
    static double want[AO_MAX], wa[AA_MAX], got[AO_MAX], ga[AA_MAX], junk[AA_MAX];
    rnd(junk, AA_MAX, 532, -5, 5);
    for (size_t i = 0; i < sizeof MSHAPES / sizeof MSHAPES[0]; i++) {
        att_shape s = MSHAPES[i];
        att_init(&a, s, 530 + 10 * i);
        att_mask_init(&a, 531 + 10 * i);
        att_ref(&a, want, wa);
        for (int k = 0; k < 2; k++) {
            tdev t;
            tdev_open(&t, DEVS[k].spec);
            dten out = put(&t, junk, a.no), att = put(&t, junk, a.na);
            t.d->ops->attention_masked_forward(t.d, out, att, put(&t, a.qkv, a.nq),
                                               put_i32(&t, a.km, a.no / s.C), s.B, s.T, s.C,
                                               s.NH, s.causal, NULL);
            get(&t, out, got);
            get(&t, att, ga);
            char what[128];
            snprintf(what, sizeof what, "masked attention T=%d causal=%d", s.T, s.causal);
            assert_close(got, want, a.no, DEVS[k].tol, DEVS[k].spec, what);
            assert_close(ga, wa, a.na, DEVS[k].tol, DEVS[k].spec, what);
            for (size_t j = 0; j < a.no; j++) /* all-padding rows: zeros, never NaN */
                if (!isfinite(got[j]))
                    fail_msg("%s: out[%zu] is %g", DEVS[k].spec, j, got[j]);
            tdev_close(&t);
        }
    }
}

/* without a mask the masked ops give attention_forward/backward's results bit for bit */
static void test_attention_masked_unmasked(void **state)
{
    static att_case a;
    static double o1[AO_MAX], o2[AO_MAX], g1[AQ_MAX], g2[AQ_MAX], junk[AQ_MAX];
    rnd(junk, AQ_MAX, 542, -5, 5);
    att_init(&a, ASHAPES[0], 540);
    for (int k = 0; k < 2; k++)
        for (int masked = 0; masked < 2; masked++) {
            att_shape s = a.s;
            tdev t;
            tdev_open(&t, DEVS[k].spec);
            dten out = put(&t, junk, a.no), att = put(&t, junk, a.na);
            dten qkv = put(&t, a.qkv, a.nq), dqkv = put(&t, junk, a.nq);
            dten sc = put(&t, junk, a.na), dout = put(&t, a.R, a.no);
            if (masked) {
                t.d->ops->attention_masked_forward(t.d, out, att, qkv, (dten){0}, s.B, s.T, s.C,
                                                   s.NH, s.causal, NULL);
                t.d->ops->attention_masked_backward(t.d, dqkv, sc, dout, qkv, att, (dten){0},
                                                    s.B, s.T, s.C, s.NH, s.causal, NULL);
            } else {
                t.d->ops->attention_forward(t.d, out, att, qkv, s.B, s.T, s.C, s.NH, s.causal);
                t.d->ops->attention_backward(t.d, dqkv, sc, dout, qkv, att, s.B, s.T, s.C, s.NH,
                                             s.causal);
            }
            get(&t, out, masked ? o2 : o1);
            get(&t, dqkv, masked ? g2 : g1);
            tdev_close(&t);
        }
    assert_memory_equal(o1, o2, a.no * sizeof o1[0]);
    assert_memory_equal(g1, g2, a.nq * sizeof g1[0]);
}

/* forward then backward of the masked op on one device with the case's key mask (if any) and
 * dropout drop (NULL: none); dqkv into got, and out into out when out is not NULL */
static void att_masked_bwd_run(const char *spec, const att_case *a, const attn_dropout *drop,
                               const double *pre, const double *junk, double *got, double *out)
{
    att_shape s = a->s;
    tdev t;
    tdev_open(&t, spec);
    dten o = put(&t, junk, a->no), att = put(&t, junk, a->na), qkv = put(&t, a->qkv, a->nq);
    dten km = a->masked ? put_i32(&t, a->km, a->no / s.C) : (dten){0};
    t.d->ops->attention_masked_forward(t.d, o, att, qkv, km, s.B, s.T, s.C, s.NH, s.causal,
                                       drop);
    dten dqkv = put(&t, pre, a->nq);
    t.d->ops->attention_masked_backward(t.d, dqkv, put(&t, junk, a->na), put(&t, a->R, a->no),
                                        qkv, att, km, s.B, s.T, s.C, s.NH, s.causal, drop);
    no_error(&t);
    get(&t, dqkv, got);
    if (out)
        get(&t, o, out);
    tdev_close(&t);
}

static void test_attention_masked_backward(void **state)
{
    static att_case a;
    static double pre[AQ_MAX], fd[AQ_MAX], g64[AQ_MAX], g32[AQ_MAX], junk[AQ_MAX];
    rnd(pre, AQ_MAX, 551, -1, 1);
    rnd(junk, AQ_MAX, 552, -5, 5);
    for (size_t i = 0; i < sizeof MSHAPES / sizeof MSHAPES[0]; i++) {
        att_init(&a, MSHAPES[i], 560 + 10 * i);
        att_mask_init(&a, 561 + 10 * i);
        fd_grad(att_loss, &a, a.qkv, a.nq, fd);
        att_masked_bwd_run("cpu64", &a, NULL, pre, junk, g64, NULL);
        assert_added(g64, pre, fd, a.nq, FD_TOL, "cpu64", "masked dqkv vs finite differences");
        att_masked_bwd_run("cpu", &a, NULL, pre, junk, g32, NULL);
        assert_close(g32, g64, a.nq, 2e-5, "cpu", "masked dqkv vs cpu64");
    }
}

/* ---- attention-probability dropout -------------------------------------------------------- */

#define AD_SEED 0x0fedcba987654321ULL

/* att stays the softmax, out uses the dropped probabilities: both against the double reference
 * drawing its mask from philox.h, key-masked and not, causal and full, p = 0.1, 0.5 and 1 */
static void test_attention_dropout_forward(void **state)
{
    static att_case a;
    static double want[AO_MAX], wa[AA_MAX], got[AO_MAX], ga[AA_MAX], junk[AA_MAX], plain[AO_MAX];
    const double ps[3] = {0.1, 0.5, 1};
    rnd(junk, AA_MAX, 582, -5, 5);
    for (size_t i = 0; i < sizeof MSHAPES / sizeof MSHAPES[0]; i++)
        for (int k = 0; k < 3; k++) {
            att_shape s = MSHAPES[i];
            att_init(&a, s, 580 + 10 * i);
            if (i != 1)
                att_mask_init(&a, 581 + 10 * i);
            att_ref(&a, plain, wa);
            a.drop = (attn_dropout){ps[k], AD_SEED, 17 + (uint32_t)k, 2 + (uint32_t)i};
            att_ref(&a, want, wa);
            if (k == 0) /* the dropout changes the output (else the test could not fail) */
                assert_true(memcmp(plain, want, a.no * sizeof want[0]) != 0);
            for (int dv = 0; dv < 2; dv++) {
                tdev t;
                tdev_open(&t, DEVS[dv].spec);
                dten out = put(&t, junk, a.no), att = put(&t, junk, a.na);
                dten km = a.masked ? put_i32(&t, a.km, a.no / s.C) : (dten){0};
                t.d->ops->attention_masked_forward(t.d, out, att, put(&t, a.qkv, a.nq), km, s.B,
                                                   s.T, s.C, s.NH, s.causal, &a.drop);
                no_error(&t);
                get(&t, out, got);
                get(&t, att, ga);
                char what[128];
                snprintf(what, sizeof what, "attention dropout p=%g T=%d causal=%d masked=%d",
                         ps[k], s.T, s.causal, a.masked);
                assert_close(got, want, a.no, DEVS[dv].tol, DEVS[dv].spec, what);
                assert_close(ga, wa, a.na, DEVS[dv].tol, DEVS[dv].spec, what);
                tdev_close(&t);
            }
        }
}

/* with dropout on the mask is fixed for fixed counters, so the op is differentiable: cpu64's
 * dqkv against central differences of the reference, cpu's against cpu64's */
static void test_attention_dropout_backward(void **state)
{
    static att_case a;
    static double pre[AQ_MAX], fd[AQ_MAX], g64[AQ_MAX], g32[AQ_MAX], junk[AQ_MAX];
    rnd(pre, AQ_MAX, 591, -1, 1);
    rnd(junk, AQ_MAX, 592, -5, 5);
    const double ps[2] = {0.1, 0.5};
    for (size_t i = 0; i < sizeof MSHAPES / sizeof MSHAPES[0]; i++)
        for (int k = 0; k < 2; k++) {
            att_init(&a, MSHAPES[i], 600 + 10 * i);
            if (i != 2)
                att_mask_init(&a, 601 + 10 * i);
            a.drop = (attn_dropout){ps[k], AD_SEED, 3 + (uint32_t)k, (uint32_t)i};
            fd_grad(att_loss, &a, a.qkv, a.nq, fd);
            att_masked_bwd_run("cpu64", &a, &a.drop, pre, junk, g64, NULL);
            assert_added(g64, pre, fd, a.nq, FD_TOL, "cpu64",
                         "dropout dqkv vs finite differences");
            att_masked_bwd_run("cpu", &a, &a.drop, pre, junk, g32, NULL);
            assert_close(g32, g64, a.nq, 2e-5, "cpu", "dropout dqkv vs cpu64");
        }
}

/* p = 0 through a dropout struct gives the results of no dropout (NULL) bit for bit; a p
 * outside [0, 1] is a device error naming the op */
static void test_attention_dropout_off(void **state)
{
    static att_case a;
    static double o1[AO_MAX], o2[AO_MAX], g1[AQ_MAX], g2[AQ_MAX], pre[AQ_MAX], junk[AQ_MAX];
    rnd(pre, AQ_MAX, 611, -1, 1);
    rnd(junk, AQ_MAX, 612, -5, 5);
    att_init(&a, MSHAPES[0], 610);
    att_mask_init(&a, 613);
    const attn_dropout zero = {0, AD_SEED, 1, 1};
    for (int k = 0; k < 2; k++) {
        att_masked_bwd_run(DEVS[k].spec, &a, NULL, pre, junk, g1, o1);
        att_masked_bwd_run(DEVS[k].spec, &a, &zero, pre, junk, g2, o2);
        assert_memory_equal(o1, o2, a.no * sizeof o1[0]);
        assert_memory_equal(g1, g2, a.nq * sizeof g1[0]);
        const double bad[2] = {-0.1, 1.5};
        for (int j = 0; j < 2; j++) {
            att_shape s = a.s;
            tdev t;
            tdev_open(&t, DEVS[k].spec);
            attn_dropout dr = {bad[j], AD_SEED, 1, 1};
            t.d->ops->attention_masked_forward(t.d, put(&t, junk, a.no), put(&t, junk, a.na),
                                               put(&t, a.qkv, a.nq), (dten){0}, s.B, s.T, s.C,
                                               s.NH, s.causal, &dr);
            const char *e = device_error(t.d);
            if (!e || !strstr(e, "attention_masked_forward: attention dropout probability"))
                fail_msg("%s: p=%g: error '%s'", DEVS[k].spec, bad[j], e ? e : "(none)");
            tdev_close(&t);
        }
    }
}

/* ---- embedding with token types ----------------------------------------------------------- */

enum { ENTT = 3 };
typedef struct {
    emb_case e;
    int32_t typ[EB * ET];
    double wtt[ENTT * EC];
} emb_tt_case;

static void emb_tt_init(emb_tt_case *c, uint64_t seed)
{
    emb_init(&c->e, seed);
    uint64_t s = seed + 7;
    for (int i = 0; i < EB * ET; i++)
        c->typ[i] = (int32_t)tu_uniform(&s, 0, ENTT);
    c->typ[0] = ENTT - 1;
    rnd(c->wtt, ENTT * EC, seed + 8, -1, 1);
}

static void emb_tt_ref(const emb_tt_case *c, double *out)
{
    emb_ref(&c->e, out);
    for (int r = 0; r < EB * ET; r++)
        for (int k = 0; k < EC; k++)
            out[r * EC + k] += c->wtt[c->typ[r] * EC + k];
}

static double emb_tt_loss(void *ctx)
{
    emb_tt_case *c = ctx;
    double out[EBTC];
    emb_tt_ref(c, out);
    return dotp(out, c->e.R, EBTC);
}

static void test_embedding_tt_forward(void **state)
{
    emb_tt_case c;
    emb_tt_init(&c, 121);
    double want[EBTC], got[EBTC], junk[EBTC];
    emb_tt_ref(&c, want);
    rnd(junk, EBTC, 122, -5, 5);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, EBTC);
        t.d->ops->embedding_tt_forward(t.d, out, put_i32(&t, c.e.tok, EB * ET),
                                       put_i32(&t, c.typ, EB * ET), put(&t, c.e.wte, EV * EC),
                                       put(&t, c.e.wpe, ETMAX * EC), put(&t, c.wtt, ENTT * EC),
                                       EB, ET, EC);
        get(&t, out, got);
        assert_close(got, want, EBTC, DEVS[k].tol, DEVS[k].spec, "embedding_tt out");
        tdev_close(&t);
    }
}

/* backward into pre-filled dwte, dwpe, dwtt (g[0..2]) */
static void emb_tt_bwd_run(const char *spec, const emb_tt_case *c, double *const pre[3],
                           double *const g[3])
{
    const size_t n[3] = {EV * EC, ETMAX * EC, ENTT * EC};
    tdev t;
    tdev_open(&t, spec);
    dten v[3];
    for (int i = 0; i < 3; i++)
        v[i] = put(&t, pre[i], n[i]);
    t.d->ops->embedding_tt_backward(t.d, v[0], v[1], v[2], put(&t, c->e.R, EBTC),
                                    put_i32(&t, c->e.tok, EB * ET), put_i32(&t, c->typ, EB * ET),
                                    EB, ET, EC);
    for (int i = 0; i < 3; i++)
        get(&t, v[i], g[i]);
    tdev_close(&t);
}

static void test_embedding_tt_backward(void **state)
{
    static emb_tt_case c;
    static double pw[EV * EC], pp[ETMAX * EC], pt[ENTT * EC], fw[EV * EC], fp[ETMAX * EC],
        ft[ENTT * EC], w64[EV * EC], p64[ETMAX * EC], t64[ENTT * EC], w32[EV * EC],
        p32[ETMAX * EC], t32[ENTT * EC];
    emb_tt_init(&c, 131);
    rnd(pw, EV * EC, 132, -1, 1);
    rnd(pp, ETMAX * EC, 133, -1, 1);
    rnd(pt, ENTT * EC, 134, -1, 1);
    fd_grad(emb_tt_loss, &c, c.e.wte, EV * EC, fw);
    fd_grad(emb_tt_loss, &c, c.e.wpe, ETMAX * EC, fp);
    fd_grad(emb_tt_loss, &c, c.wtt, ENTT * EC, ft);
    double *const pre[3] = {pw, pp, pt}, *const g64[3] = {w64, p64, t64},
                  *const g32[3] = {w32, p32, t32};
    emb_tt_bwd_run("cpu64", &c, pre, g64);
    assert_added(w64, pw, fw, EV * EC, FD_TOL, "cpu64", "dwte vs finite differences");
    assert_added(p64, pp, fp, ETMAX * EC, FD_TOL, "cpu64", "dwpe vs finite differences");
    assert_added(t64, pt, ft, ENTT * EC, FD_TOL, "cpu64", "dwtt vs finite differences");
    emb_tt_bwd_run("cpu", &c, pre, g32);
    assert_close(w32, w64, EV * EC, 1e-5, "cpu", "dwte vs cpu64");
    assert_close(p32, p64, ETMAX * EC, 1e-5, "cpu", "dwpe vs cpu64");
    assert_close(t32, t64, ENTT * EC, 1e-5, "cpu", "dwtt vs cpu64");
}

/* ---- elementwise -------------------------------------------------------------------------- */

enum { EN = 37 };

static double gelu_ref(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

typedef struct {
    double x[EN], R[EN];
} gelu_case;

static double gelu_loss(void *ctx)
{
    gelu_case *c = ctx;
    double L = 0;
    for (int i = 0; i < EN; i++)
        L += gelu_ref(c->x[i]) * c->R[i];
    return L;
}

static void test_gelu_forward(void **state)
{
    double x[EN], want[EN], got[EN], junk[EN];
    rnd(x, EN, 601, -5, 5);
    rnd(junk, EN, 602, -5, 5);
    for (int i = 0; i < EN; i++)
        want[i] = gelu_ref(x[i]);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, EN);
        t.d->ops->gelu_forward(t.d, out, put(&t, x, EN), EN);
        get(&t, out, got);
        assert_close(got, want, EN, DEVS[k].tol, DEVS[k].spec, "gelu out");
        tdev_close(&t);
    }
}

static void gelu_bwd_run(const char *spec, const gelu_case *c, const double *pre, double *got)
{
    tdev t;
    tdev_open(&t, spec);
    dten dx = put(&t, pre, EN);
    t.d->ops->gelu_backward(t.d, dx, put(&t, c->x, EN), put(&t, c->R, EN), EN);
    get(&t, dx, got);
    tdev_close(&t);
}

static void test_gelu_backward(void **state)
{
    gelu_case c;
    double pre[EN], fd[EN], g64[EN], g32[EN];
    rnd(c.x, EN, 611, -5, 5);
    rnd(c.R, EN, 612, -1, 1);
    rnd(pre, EN, 613, -1, 1);
    fd_grad(gelu_loss, &c, c.x, EN, fd);
    gelu_bwd_run("cpu64", &c, pre, g64);
    assert_added(g64, pre, fd, EN, FD_TOL, "cpu64", "gelu dinp vs finite differences");
    gelu_bwd_run("cpu", &c, pre, g32);
    assert_close(g32, g64, EN, 1e-5, "cpu", "gelu dinp vs cpu64");
}

static double gelu_erf_ref(double x)
{
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

static double gelu_erf_loss(void *ctx)
{
    gelu_case *c = ctx;
    double L = 0;
    for (int i = 0; i < EN; i++)
        L += gelu_erf_ref(c->x[i]) * c->R[i];
    return L;
}

static void test_gelu_erf_forward(void **state)
{
    double x[EN], want[EN], got[EN], junk[EN];
    rnd(x, EN, 621, -5, 5);
    rnd(junk, EN, 622, -5, 5);
    for (int i = 0; i < EN; i++)
        want[i] = gelu_erf_ref(x[i]);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, EN);
        t.d->ops->gelu_erf_forward(t.d, out, put(&t, x, EN), EN);
        get(&t, out, got);
        assert_close(got, want, EN, DEVS[k].tol, DEVS[k].spec, "gelu_erf out");
        tdev_close(&t);
    }
}

static void gelu_erf_bwd_run(const char *spec, const gelu_case *c, const double *pre,
                             double *got)
{
    tdev t;
    tdev_open(&t, spec);
    dten dx = put(&t, pre, EN);
    t.d->ops->gelu_erf_backward(t.d, dx, put(&t, c->x, EN), put(&t, c->R, EN), EN);
    get(&t, dx, got);
    tdev_close(&t);
}

static void test_gelu_erf_backward(void **state)
{
    gelu_case c;
    double pre[EN], fd[EN], g64[EN], g32[EN];
    rnd(c.x, EN, 631, -5, 5);
    rnd(c.R, EN, 632, -1, 1);
    rnd(pre, EN, 633, -1, 1);
    fd_grad(gelu_erf_loss, &c, c.x, EN, fd);
    gelu_erf_bwd_run("cpu64", &c, pre, g64);
    assert_added(g64, pre, fd, EN, FD_TOL, "cpu64", "gelu_erf dinp vs finite differences");
    gelu_erf_bwd_run("cpu", &c, pre, g32);
    assert_close(g32, g64, EN, 1e-5, "cpu", "gelu_erf dinp vs cpu64");
}

/* ---- rmsnorm ------------------------------------------------------------------------------ */

#define RMS_EPS 1e-6
typedef struct {
    double x[LNC], w[LC], R[LNC];
} rms_case;

static void rms_init(rms_case *c, uint64_t seed)
{
    rnd(c->x, LNC, seed, -2, 3);
    rnd(c->w, LC, seed + 1, 0.5, 1.5);
    rnd(c->R, LNC, seed + 2, -1, 1);
}

/* y = x / sqrt(mean(x^2) + eps) * w, naively in double */
static void rms_ref(const rms_case *c, double *out, double *rstd)
{
    for (int n = 0; n < LN; n++) {
        const double *x = c->x + n * LC;
        double ms = 0;
        for (int i = 0; i < LC; i++)
            ms += x[i] * x[i] / LC;
        double s = 1 / sqrt(ms + RMS_EPS);
        for (int i = 0; i < LC; i++)
            out[n * LC + i] = x[i] * s * c->w[i];
        rstd[n] = s;
    }
}

static double rms_loss(void *ctx)
{
    rms_case *c = ctx;
    double out[LNC], rstd[LN];
    rms_ref(c, out, rstd);
    return dotp(out, c->R, LNC);
}

static void test_rmsnorm_forward(void **state)
{
    rms_case c;
    rms_init(&c, 801);
    double want[LNC], wr[LN], got[LNC], gr[LN], junk[LNC];
    rms_ref(&c, want, wr);
    rnd(junk, LNC, 802, -5, 5);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, LNC), rstd = put(&t, junk + LN, LN);
        t.d->ops->rmsnorm_forward(t.d, out, rstd, put(&t, c.x, LNC), put(&t, c.w, LC), LN, LC,
                                  RMS_EPS);
        get(&t, out, got);
        get(&t, rstd, gr);
        assert_close(got, want, LNC, DEVS[k].tol, DEVS[k].spec, "rmsnorm out");
        assert_close(gr, wr, LN, DEVS[k].tol, DEVS[k].spec, "rmsnorm rstd");
        tdev_close(&t);
    }
}

/* forward then backward on one device (rstd from that device's forward) */
static void rms_bwd_run(const char *spec, const rms_case *c, const double *pre, double *gx,
                        double *gw)
{
    tdev t;
    tdev_open(&t, spec);
    dten out = put(&t, pre, LNC), rstd = put(&t, pre, LN);
    dten x = put(&t, c->x, LNC), w = put(&t, c->w, LC);
    t.d->ops->rmsnorm_forward(t.d, out, rstd, x, w, LN, LC, RMS_EPS);
    dten dx = put(&t, pre, LNC), dw = put(&t, pre + LNC, LC);
    t.d->ops->rmsnorm_backward(t.d, dx, dw, put(&t, c->R, LNC), x, w, rstd, LN, LC);
    get(&t, dx, gx);
    get(&t, dw, gw);
    tdev_close(&t);
}

static void test_rmsnorm_backward(void **state)
{
    rms_case c;
    rms_init(&c, 811);
    double pre[LNC + LC], fx[LNC], fw[LC], x64[LNC], w64[LC], x32[LNC], w32[LC];
    rnd(pre, LNC + LC, 812, -1, 1);
    fd_grad(rms_loss, &c, c.x, LNC, fx);
    fd_grad(rms_loss, &c, c.w, LC, fw);
    rms_bwd_run("cpu64", &c, pre, x64, w64);
    assert_added(x64, pre, fx, LNC, FD_TOL, "cpu64", "rmsnorm dinp vs finite differences");
    assert_added(w64, pre + LNC, fw, LC, FD_TOL, "cpu64", "rmsnorm dw vs finite differences");
    rms_bwd_run("cpu", &c, pre, x32, w32);
    assert_close(x32, x64, LNC, 1e-5, "cpu", "rmsnorm dinp vs cpu64");
    assert_close(w32, w64, LC, 1e-5, "cpu", "rmsnorm dw vs cpu64");
}

/* ---- silu_mul ----------------------------------------------------------------------------- */

typedef struct {
    double g[EN], u[EN], R[EN];
} silu_case;

static double silu_ref(double g) { return g / (1 + exp(-g)); }

static double silu_mul_loss(void *ctx)
{
    silu_case *c = ctx;
    double L = 0;
    for (int i = 0; i < EN; i++)
        L += silu_ref(c->g[i]) * c->u[i] * c->R[i];
    return L;
}

static void test_silu_mul_forward(void **state)
{
    double g[EN], u[EN], want[EN], got[EN], junk[EN];
    rnd(g, EN, 821, -8, 8);
    rnd(u, EN, 822, -2, 2);
    rnd(junk, EN, 823, -5, 5);
    for (int i = 0; i < EN; i++)
        want[i] = silu_ref(g[i]) * u[i];
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, EN);
        t.d->ops->silu_mul_forward(t.d, out, put(&t, g, EN), put(&t, u, EN), EN);
        get(&t, out, got);
        assert_close(got, want, EN, DEVS[k].tol, DEVS[k].spec, "silu_mul out");
        tdev_close(&t);
    }
}

static void silu_mul_bwd_run(const char *spec, const silu_case *c, const double *pre,
                             double *gg, double *gu)
{
    tdev t;
    tdev_open(&t, spec);
    dten dg = put(&t, pre, EN), du = put(&t, pre + EN, EN);
    t.d->ops->silu_mul_backward(t.d, dg, du, put(&t, c->R, EN), put(&t, c->g, EN),
                                put(&t, c->u, EN), EN);
    get(&t, dg, gg);
    get(&t, du, gu);
    tdev_close(&t);
}

static void test_silu_mul_backward(void **state)
{
    silu_case c;
    double pre[2 * EN], fg[EN], fu[EN], g64[EN], u64[EN], g32[EN], u32[EN];
    rnd(c.g, EN, 831, -8, 8);
    rnd(c.u, EN, 832, -2, 2);
    rnd(c.R, EN, 833, -1, 1);
    rnd(pre, 2 * EN, 834, -1, 1);
    fd_grad(silu_mul_loss, &c, c.g, EN, fg);
    fd_grad(silu_mul_loss, &c, c.u, EN, fu);
    silu_mul_bwd_run("cpu64", &c, pre, g64, u64);
    assert_added(g64, pre, fg, EN, FD_TOL, "cpu64", "silu_mul dgate vs finite differences");
    assert_added(u64, pre + EN, fu, EN, FD_TOL, "cpu64", "silu_mul dup vs finite differences");
    silu_mul_bwd_run("cpu", &c, pre, g32, u32);
    assert_close(g32, g64, EN, 1e-5, "cpu", "silu_mul dgate vs cpu64");
    assert_close(u32, u64, EN, 1e-5, "cpu", "silu_mul dup vs cpu64");
}

/* ---- rope --------------------------------------------------------------------------------- */

enum { RB = 2, RT = 5, RNH = 3, RHS = 8, RH = RHS / 2, ROPE_N = RB * RT * RNH * RHS, RTAB = RT * RH };
typedef struct {
    double x[ROPE_N], cs[RTAB], sn[RTAB], R[ROPE_N];
} rope_case;

static void rope_init(rope_case *c, uint64_t seed)
{
    rnd(c->x, ROPE_N, seed, -2, 2);
    rnd(c->R, ROPE_N, seed + 1, -1, 1);
    rope_cos_sin(c->cs, c->sn, 0, RT, RHS, 10000.0);
}

/* HF's apply_rotary_pos_emb written out: x * cos + rotate_half(x) * sin, with cos and sin
 * cat(freqs, freqs) and rotate_half(x) = cat(-x2, x1) */
static void rope_ref(const rope_case *c, double *out)
{
    for (int r = 0; r < RB * RT * RNH; r++) {
        int t = (r / RNH) % RT;
        const double *x = c->x + r * RHS;
        for (int j = 0; j < RHS; j++) {
            double cj = c->cs[t * RH + j % RH], sj = c->sn[t * RH + j % RH];
            double rot = j < RH ? -x[j + RH] : x[j - RH];
            out[r * RHS + j] = x[j] * cj + rot * sj;
        }
    }
}

static double rope_loss(void *ctx)
{
    rope_case *c = ctx;
    double out[ROPE_N];
    rope_ref(c, out);
    return dotp(out, c->R, ROPE_N);
}

/* the tables: HF's float32 steps stay within float rounding of the exact angles */
static void test_rope_tables(void **state)
{
    double cs[RTAB], sn[RTAB];
    rope_cos_sin(cs, sn, 3, RT, RHS, 500000.0);
    for (int t = 0; t < RT; t++)
        for (int i = 0; i < RH; i++) {
            double a = (3 + t) * pow(500000.0, -2.0 * i / RHS);
            assert_true(fabs(cs[t * RH + i] - cos(a)) < 1e-6);
            assert_true(fabs(sn[t * RH + i] - sin(a)) < 1e-6);
        }
    rope_cos_sin(cs, sn, 0, RT, RHS, 10000.0); /* position 0: no rotation */
    for (int i = 0; i < RH; i++)
        assert_true(cs[i] == 1 && sn[i] == 0);
}

static void test_rope_forward(void **state)
{
    rope_case c;
    rope_init(&c, 841);
    double want[ROPE_N], got[ROPE_N], junk[ROPE_N];
    rope_ref(&c, want);
    rnd(junk, ROPE_N, 842, -5, 5);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten cs = put(&t, c.cs, RTAB), sn = put(&t, c.sn, RTAB), out = put(&t, junk, ROPE_N);
        t.d->ops->rope_forward(t.d, out, put(&t, c.x, ROPE_N), cs, sn, RB, RT, RNH, RHS);
        get(&t, out, got);
        assert_close(got, want, ROPE_N, DEVS[k].tol, DEVS[k].spec, "rope out");
        dten x = put(&t, c.x, ROPE_N); /* in place */
        t.d->ops->rope_forward(t.d, x, x, cs, sn, RB, RT, RNH, RHS);
        get(&t, x, got);
        assert_close(got, want, ROPE_N, DEVS[k].tol, DEVS[k].spec, "rope out in place");
        tdev_close(&t);
    }
}

static void rope_bwd_run(const char *spec, const rope_case *c, const double *pre, double *got)
{
    tdev t;
    tdev_open(&t, spec);
    dten dx = put(&t, pre, ROPE_N);
    t.d->ops->rope_backward(t.d, dx, put(&t, c->R, ROPE_N), put(&t, c->cs, RTAB),
                            put(&t, c->sn, RTAB), RB, RT, RNH, RHS);
    get(&t, dx, got);
    tdev_close(&t);
}

static void test_rope_backward(void **state)
{
    rope_case c;
    rope_init(&c, 851);
    double pre[ROPE_N], fd[ROPE_N], g64[ROPE_N], g32[ROPE_N];
    rnd(pre, ROPE_N, 852, -1, 1);
    fd_grad(rope_loss, &c, c.x, ROPE_N, fd);
    rope_bwd_run("cpu64", &c, pre, g64);
    assert_added(g64, pre, fd, ROPE_N, FD_TOL, "cpu64", "rope dinp vs finite differences");
    rope_bwd_run("cpu", &c, pre, g32);
    assert_close(g32, g64, ROPE_N, 1e-5, "cpu", "rope dinp vs cpu64");
}

/* ---- grouped-query attention -------------------------------------------------------------- */

enum { GB = 2, GT = 4, GNH = 4, GKV = 2, GHS = 3 };
enum { GQN = GB * GT * GNH * GHS, GKN = GB * GT * GKV * GHS, GAN = GB * GNH * GT * GT };
typedef struct {
    double q[GQN], k[GKN], v[GKN], R[GQN];
    int32_t km[GB * GT];
    int causal, masked;
} gqa_case;

static void gqa_init(gqa_case *c, uint64_t seed, int causal, int masked)
{
    rnd(c->q, GQN, seed, -1.5, 1.5);
    rnd(c->k, GKN, seed + 1, -1.5, 1.5);
    rnd(c->v, GKN, seed + 2, -1, 1);
    rnd(c->R, GQN, seed + 3, -1, 1);
    /* sequence 0: keys 1 and 3 padding (with causal, query 0 sees only key 0); sequence 1:
     * key 0 padding, so with causal its query 0 sees no key at all */
    const int32_t km[GB * GT] = {1, 0, 1, 0, 0, 1, 1, 1};
    memcpy(c->km, km, sizeof km);
    c->causal = causal;
    c->masked = masked;
}

/* HF's eager attention written out: repeat_kv (query head h reads key/value head
 * h / (NH/NKV)), scores q.k / sqrt(hs), masked keys and keys past t (causal) out of the
 * softmax; a row with no key gets zeros */
static void gqa_ref(const gqa_case *c, double *out, double *att)
{
    for (int b = 0; b < GB; b++)
        for (int h = 0; h < GNH; h++)
            for (int t = 0; t < GT; t++) {
                int j = h / (GNH / GKV);
                double sc[GT], mx = -INFINITY, sum = 0;
                int seen[GT];
                for (int s = 0; s < GT; s++) {
                    seen[s] = (!c->causal || s <= t) && (!c->masked || c->km[b * GT + s]);
                    double dot = 0;
                    for (int i = 0; i < GHS; i++)
                        dot += c->q[((b * GT + t) * GNH + h) * GHS + i] *
                               c->k[((b * GT + s) * GKV + j) * GHS + i];
                    sc[s] = dot / sqrt((double)GHS);
                    if (seen[s] && sc[s] > mx)
                        mx = sc[s];
                }
                for (int s = 0; s < GT; s++)
                    sum += seen[s] ? exp(sc[s] - mx) : 0;
                double *a = att + ((b * GNH + h) * GT + t) * GT;
                for (int s = 0; s < GT; s++)
                    a[s] = seen[s] ? exp(sc[s] - mx) / sum : 0;
                for (int i = 0; i < GHS; i++) {
                    double o = 0;
                    for (int s = 0; s < GT; s++)
                        o += a[s] * c->v[((b * GT + s) * GKV + j) * GHS + i];
                    out[((b * GT + t) * GNH + h) * GHS + i] = o;
                }
            }
}

static double gqa_loss(void *ctx)
{
    gqa_case *c = ctx;
    double out[GQN], att[GAN];
    gqa_ref(c, out, att);
    return dotp(out, c->R, GQN);
}

static void gqa_forward_case(int causal, int masked)
{
    gqa_case c;
    gqa_init(&c, 861 + 2 * causal + masked, causal, masked);
    double want[GQN], wa[GAN], got[GQN], ga[GAN], junk[GAN];
    gqa_ref(&c, want, wa);
    rnd(junk, GAN, 862, -5, 5);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, GQN), att = put(&t, junk, GAN);
        dten km = masked ? put_i32(&t, c.km, GB * GT) : (dten){0};
        t.d->ops->attention_gqa_forward(t.d, out, att, put(&t, c.q, GQN), put(&t, c.k, GKN),
                                        put(&t, c.v, GKN), km, GB, GT, GNH, GKV, GHS, causal);
        get(&t, out, got);
        get(&t, att, ga);
        assert_close(got, want, GQN, DEVS[k].tol, DEVS[k].spec, "attention_gqa out");
        assert_close(ga, wa, GAN, DEVS[k].tol, DEVS[k].spec, "attention_gqa att");
        tdev_close(&t);
    }
}

static void test_attention_gqa_forward(void **state)
{
    gqa_forward_case(1, 0);
    gqa_forward_case(0, 1);
    gqa_forward_case(1, 1); /* a query that sees no key: zeros */
}

static void gqa_bwd_run(const char *spec, const gqa_case *c, const double *pre, double *g)
{
    tdev t;
    tdev_open(&t, spec);
    dten out = put(&t, pre, GQN), att = put(&t, pre, GAN), sc = put(&t, pre, GB * GNH * GT);
    dten q = put(&t, c->q, GQN), k = put(&t, c->k, GKN), v = put(&t, c->v, GKN);
    dten km = c->masked ? put_i32(&t, c->km, GB * GT) : (dten){0};
    t.d->ops->attention_gqa_forward(t.d, out, att, q, k, v, km, GB, GT, GNH, GKV, GHS, c->causal);
    dten dq = put(&t, pre, GQN), dk = put(&t, pre + GQN, GKN), dv = put(&t, pre + GQN + GKN, GKN);
    t.d->ops->attention_gqa_backward(t.d, dq, dk, dv, sc, put(&t, c->R, GQN), q, k, v, att, km,
                                     GB, GT, GNH, GKV, GHS, c->causal);
    get(&t, dq, g);
    get(&t, dk, g + GQN);
    get(&t, dv, g + GQN + GKN);
    tdev_close(&t);
}

static void gqa_backward_case(int causal, int masked)
{
    enum { ALL = GQN + 2 * GKN };
    gqa_case c;
    gqa_init(&c, 871 + 2 * causal + masked, causal, masked);
    double pre[ALL + GAN], fd[ALL], g64[ALL], g32[ALL];
    rnd(pre, ALL + GAN, 872, -1, 1);
    fd_grad(gqa_loss, &c, c.q, GQN, fd);
    fd_grad(gqa_loss, &c, c.k, GKN, fd + GQN);
    fd_grad(gqa_loss, &c, c.v, GKN, fd + GQN + GKN);
    gqa_bwd_run("cpu64", &c, pre, g64);
    assert_added(g64, pre, fd, ALL, FD_TOL, "cpu64", "attention_gqa dq|dk|dv vs finite "
                                                     "differences");
    gqa_bwd_run("cpu", &c, pre, g32);
    assert_close(g32, g64, ALL, 1e-5, "cpu", "attention_gqa dq|dk|dv vs cpu64");
}

static void test_attention_gqa_backward(void **state)
{
    gqa_backward_case(1, 0);
    gqa_backward_case(0, 1);
    gqa_backward_case(1, 1);
}

/* ---- gather_rows -------------------------------------------------------------------------- */

enum { XM = 9, XR = 4, XC = 5 };
typedef struct {
    double x[XR * XC], R[XM * XC];
    int32_t id[XM];
} gather_case;

static void gather_init(gather_case *c, uint64_t seed)
{
    const int32_t id[XM] = {2, 0, 2, 3, 3, 3, 0, 2, 2}; /* repeats; row 1 never picked */
    memcpy(c->id, id, sizeof id);
    rnd(c->x, XR * XC, seed, -1, 1);
    rnd(c->R, XM * XC, seed + 1, -1, 1);
}

static double gather_loss(void *ctx)
{
    gather_case *c = ctx;
    double L = 0;
    for (int m = 0; m < XM; m++)
        for (int j = 0; j < XC; j++)
            L += c->x[c->id[m] * XC + j] * c->R[m * XC + j];
    return L;
}

static void test_gather_rows(void **state)
{
    gather_case c;
    gather_init(&c, 881);
    double want[XM * XC], got[XM * XC], junk[XM * XC], pre[XR * XC], fd[XR * XC], g[XR * XC];
    for (int m = 0; m < XM; m++)
        for (int j = 0; j < XC; j++)
            want[m * XC + j] = c.x[c.id[m] * XC + j];
    rnd(junk, XM * XC, 882, -5, 5);
    rnd(pre, XR * XC, 883, -1, 1);
    fd_grad(gather_loss, &c, c.x, XR * XC, fd);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, XM * XC), id = put_i32(&t, c.id, XM), dx = put(&t, pre, XR * XC);
        t.d->ops->gather_rows_forward(t.d, out, put(&t, c.x, XR * XC), id, XM, XR, XC);
        t.d->ops->gather_rows_backward(t.d, dx, put(&t, c.R, XM * XC), id, XM, XR, XC);
        get(&t, out, got);
        assert_memory_equal(got, want, sizeof want); /* a copy: exact */
        get(&t, dx, g);
        assert_added(g, pre, fd, XR * XC, k == 0 ? 1e-5 : FD_TOL, DEVS[k].spec,
                     "gather_rows dinp vs finite differences");
        tdev_close(&t);
    }
}

/* ---- topk_router -------------------------------------------------------------------------- */

enum { KN = 4, KE = 6, KK = 3 };
typedef struct {
    double x[KN * KE], R[KN * KK];
    int norm;
} topk_case;

/* softmax, then the K largest by sorting the experts (a different method from the ops'), and
 * the selected probabilities, renormalized when norm */
static void topk_ref(const topk_case *c, double *w, int32_t *id, double *p)
{
    for (int n = 0; n < KN; n++) {
        const double *x = c->x + n * KE;
        double mx = x[0], sum = 0, sel = 0;
        for (int e = 1; e < KE; e++)
            mx = fmax(mx, x[e]);
        for (int e = 0; e < KE; e++)
            sum += exp(x[e] - mx);
        int order[KE];
        for (int e = 0; e < KE; e++) {
            p[n * KE + e] = exp(x[e] - mx) / sum;
            order[e] = e;
        }
        for (int i = 1; i < KE; i++) /* insertion sort, descending, stable */
            for (int j = i; j > 0 && x[order[j]] > x[order[j - 1]]; j--) {
                int tmp = order[j];
                order[j] = order[j - 1];
                order[j - 1] = tmp;
            }
        for (int k = 0; k < KK; k++)
            sel += p[n * KE + order[k]];
        for (int k = 0; k < KK; k++) {
            id[n * KK + k] = order[k];
            w[n * KK + k] = p[n * KE + order[k]] / (c->norm ? sel : 1);
        }
    }
}

static double topk_loss(void *ctx)
{
    topk_case *c = ctx;
    double w[KN * KK], p[KN * KE];
    int32_t id[KN * KK];
    topk_ref(c, w, id, p);
    return dotp(w, c->R, KN * KK);
}

static void topk_case_run(int norm)
{
    topk_case c = {.norm = norm};
    rnd(c.x, KN * KE, 891 + norm, -3, 3);
    rnd(c.R, KN * KK, 893, -1, 1);
    double w[KN * KK], p[KN * KE], gw[KN * KK], gp[KN * KE], pre[KN * KE], fd[KN * KE];
    double g[KN * KE];
    int32_t id[KN * KK], gid[KN * KK], junk_id[KN * KK];
    for (int i = 0; i < KN * KK; i++)
        junk_id[i] = -3;
    topk_ref(&c, w, id, p);
    rnd(pre, KN * KE, 894, -1, 1);
    fd_grad(topk_loss, &c, c.x, KN * KE, fd);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten wv = put(&t, pre, KN * KK), iv = put_i32(&t, junk_id, KN * KK);
        dten pv = put(&t, pre, KN * KE), dx = put(&t, pre, KN * KE);
        t.d->ops->topk_router_forward(t.d, wv, iv, pv, put(&t, c.x, KN * KE), KN, KE, KK, norm);
        t.d->ops->topk_router_backward(t.d, dx, put(&t, c.R, KN * KK), wv, iv, pv, KN, KE, KK,
                                       norm);
        get(&t, wv, gw);
        get(&t, pv, gp);
        get(&t, dx, g);
        t.d->ops->download_i32(t.d, gid, iv);
        assert_memory_equal(gid, id, sizeof id);
        assert_close(gw, w, KN * KK, DEVS[k].tol, DEVS[k].spec, "topk_router weights");
        assert_close(gp, p, KN * KE, DEVS[k].tol, DEVS[k].spec, "topk_router probs");
        assert_added(g, pre, fd, KN * KE, k == 0 ? 1e-5 : FD_TOL, DEVS[k].spec,
                     "topk_router dlogits vs finite differences");
        tdev_close(&t);
    }
}

static void test_topk_router(void **state)
{
    topk_case_run(1);
    topk_case_run(0);
}

/* ---- dropout ------------------------------------------------------------------------------ */

enum { DRN = 1001 };
#define D_SEED 0x0123456789abcdefULL

/* forward against philox.h's decisions times 1/(1-p); backward adds dout the same way; the mask
 * output is the decisions; p = 0 is the identity and p = 1 gives zeros */
static void dropout_case(double p, uint32_t step, uint32_t layer, uint32_t site)
{
    static double x[DRN], g[DRN], pre[DRN], want[DRN], wantg[DRN], got[DRN], junk[DRN];
    static int32_t keep[DRN], mask[DRN], back[DRN];
    rnd(x, DRN, 701 + step, -2, 2);
    rnd(g, DRN, 702 + step, -2, 2);
    rnd(pre, DRN, 703 + step, -1, 1);
    rnd(junk, DRN, 704, -5, 5);
    uint64_t thr = philox_dropout_threshold(p);
    for (int i = 0; i < DRN; i++) {
        keep[i] = philox_dropout_keep(D_SEED, step, layer, site, (uint64_t)i, thr);
        want[i] = keep[i] ? x[i] / (1 - p) : 0;
        wantg[i] = keep[i] ? g[i] / (1 - p) : 0;
        mask[i] = -5;
    }
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, DRN), m = put_i32(&t, mask, DRN), in = put(&t, x, DRN);
        dten dx = put(&t, pre, DRN);
        t.d->ops->dropout_forward(t.d, out, m, in, DRN, p, D_SEED, step, layer, site);
        t.d->ops->dropout_backward(t.d, dx, put(&t, g, DRN), DRN, p, D_SEED, step, layer, site);
        get(&t, out, got);
        assert_close(got, want, DRN, DEVS[k].tol, DEVS[k].spec, "dropout out");
        if (p == 0)
            assert_memory_equal(got, x, sizeof x);
        t.d->ops->download_i32(t.d, back, m);
        assert_memory_equal(back, keep, sizeof keep);
        get(&t, dx, got);
        assert_added(got, pre, wantg, DRN, DEVS[k].tol, DEVS[k].spec, "dropout dinp");
        tdev_close(&t);
    }
}

static void test_dropout(void **state)
{
    dropout_case(0.1, 5, 2, 1);
    dropout_case(0.5, 6, 0, 0);
    dropout_case(0, 1, 1, 1);
    dropout_case(1, 1, 1, 1);
}

/* over 2^20 elements the kept fraction is within 5 standard deviations of 1 - p; another step,
 * layer or site draws another mask */
static void test_dropout_statistics(void **state)
{
    const int n = 1 << 20;
    const double p = 0.1;
    tdev t;
    tdev_open(&t, "cpu");
    dten x = tdev_alloc(&t, (size_t)n, DT_REAL), y = tdev_alloc(&t, (size_t)n, DT_REAL);
    dten m1 = tdev_alloc(&t, (size_t)n, DT_I32), m2 = tdev_alloc(&t, (size_t)n, DT_I32);
    int32_t *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    assert_true(a && b);
    const uint32_t other[3][3] = {{8, 3, 2}, {7, 4, 2}, {7, 3, 5}};
    t.d->ops->dropout_forward(t.d, y, m1, x, n, p, D_SEED, 7, 3, 2);
    t.d->ops->download_i32(t.d, a, dten_view(m1, 0, (size_t)n));
    long kept = 0;
    for (int i = 0; i < n; i++)
        kept += a[i];
    double sd = sqrt(n * p * (1 - p));
    if (fabs(kept - n * (1 - p)) > 5 * sd)
        fail_msg("kept %ld of %d, expected %.0f +- %.0f", kept, n, n * (1 - p), 5 * sd);
    for (int o = 0; o < 3; o++) {
        t.d->ops->dropout_forward(t.d, y, m2, x, n, p, D_SEED, other[o][0], other[o][1],
                                  other[o][2]);
        t.d->ops->download_i32(t.d, b, dten_view(m2, 0, (size_t)n));
        long same = 0;
        for (int i = 0; i < n; i++)
            same += a[i] == b[i];
        /* independent masks agree on p^2 + (1-p)^2 = 82 % of elements, not all */
        assert_true(same < n - 1000);
    }
    no_error(&t);
    free(a);
    free(b);
    tdev_close(&t);
}

/* add, accumulate and scale, each on a view inside a larger buffer */
static void test_add_accumulate_scale(void **state)
{
    double a[EN], b[EN], junk[EN], want[EN], got[EN];
    rnd(a, EN, 621, -1, 1);
    rnd(b, EN, 622, -1, 1);
    rnd(junk, EN, 623, -5, 5);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten out = put(&t, junk, EN), av = put(&t, a, EN), bv = put(&t, b, EN);
        t.d->ops->add(t.d, out, av, bv, EN);
        get(&t, out, got);
        for (int i = 0; i < EN; i++)
            want[i] = a[i] + b[i];
        assert_close(got, want, EN, DEVS[k].tol, DEVS[k].spec, "add");
        t.d->ops->accumulate(t.d, av, bv, EN);
        get(&t, av, got);
        assert_close(got, want, EN, DEVS[k].tol, DEVS[k].spec, "accumulate");
        t.d->ops->scale(t.d, bv, -1.7, EN);
        get(&t, bv, got);
        for (int i = 0; i < EN; i++)
            want[i] = -1.7 * b[i];
        assert_close(got, want, EN, DEVS[k].tol, DEVS[k].spec, "scale");
        tdev_close(&t);
    }
}

/* ---- softmax cross-entropy ---------------------------------------------------------------- */

enum { XN = 7, XV = 11, XIGNORE = -100 };
typedef struct {
    double logits[XN * XV];
    int32_t tg[XN];
    double scale;
} xent_case;

static void xent_init(xent_case *c, uint64_t seed)
{
    uint64_t s = seed;
    rnd(c->logits, XN * XV, seed, -3, 3);
    for (int i = 0; i < XV; i++)
        c->logits[4 * XV + i] += 90; /* exp(90) overflows fp32: needs the row max subtracted */
    c->logits[3 * XV + 5] += 95;     /* one spike: subtracting any other logit is not enough */
    for (int n = 0; n < XN; n++)
        c->tg[n] = (int32_t)tu_uniform(&s, 0, XV);
    c->tg[2] = c->tg[5] = XIGNORE;
    c->tg[6] = XV - 1;
    c->scale = 1.0 / (XN - 2);
}

/* log-sum-exp with the row max, as a reference should be */
static void xent_ref(const xent_case *c, double *loss, double *probs)
{
    for (int n = 0; n < XN; n++) {
        const double *x = c->logits + n * XV;
        double mx = x[0], sum = 0;
        for (int i = 1; i < XV; i++)
            mx = x[i] > mx ? x[i] : mx;
        for (int i = 0; i < XV; i++)
            sum += exp(x[i] - mx);
        double lse = mx + log(sum);
        for (int i = 0; i < XV; i++)
            probs[n * XV + i] = exp(x[i] - lse);
        loss[n] = c->tg[n] == XIGNORE ? 0 : lse - x[c->tg[n]];
    }
}

/* L = scale * sum of the losses, whose gradient the backward op adds */
static double xent_loss(void *ctx)
{
    xent_case *c = ctx;
    double loss[XN], probs[XN * XV];
    xent_ref(c, loss, probs);
    double L = 0;
    for (int n = 0; n < XN; n++)
        L += loss[n];
    return c->scale * L;
}

static void test_softmax_xent_forward(void **state)
{
    xent_case c;
    xent_init(&c, 701);
    double wl[XN], wp[XN * XV], gl[XN], gp[XN * XV], junk[XN * XV];
    xent_ref(&c, wl, wp);
    rnd(junk, XN * XV, 702, -5, 5);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten loss = put(&t, junk, XN), probs = put(&t, junk, XN * XV);
        t.d->ops->softmax_xent_forward(t.d, loss, probs, put(&t, c.logits, XN * XV),
                                       put_i32(&t, c.tg, XN), XN, XV, XIGNORE);
        get(&t, loss, gl);
        get(&t, probs, gp);
        assert_close(gl, wl, XN, DEVS[k].tol, DEVS[k].spec, "xent losses");
        assert_close(gp, wp, XN * XV, DEVS[k].tol, DEVS[k].spec, "xent probs");
        assert_true(gl[2] == 0 && gl[5] == 0); /* ignored rows: exactly 0 */
        tdev_close(&t);
    }
}

static void xent_bwd_run(const char *spec, const xent_case *c, const double *pre, double *got)
{
    tdev t;
    tdev_open(&t, spec);
    dten loss = put(&t, pre, XN), probs = put(&t, pre, XN * XV), tg = put_i32(&t, c->tg, XN);
    t.d->ops->softmax_xent_forward(t.d, loss, probs, put(&t, c->logits, XN * XV), tg, XN, XV,
                                   XIGNORE);
    dten dl = put(&t, pre, XN * XV);
    t.d->ops->softmax_xent_backward(t.d, dl, probs, tg, XN, XV, XIGNORE, c->scale);
    get(&t, dl, got);
    tdev_close(&t);
}

static void test_softmax_xent_backward(void **state)
{
    xent_case c;
    xent_init(&c, 711);
    double pre[XN * XV], fd[XN * XV], g64[XN * XV], g32[XN * XV];
    rnd(pre, XN * XV, 712, -1, 1);
    fd_grad(xent_loss, &c, c.logits, XN * XV, fd);
    xent_bwd_run("cpu64", &c, pre, g64);
    assert_added(g64, pre, fd, XN * XV, FD_TOL, "cpu64", "dlogits vs finite differences");
    xent_bwd_run("cpu", &c, pre, g32);
    assert_close(g32, g64, XN * XV, 1e-5, "cpu", "dlogits vs cpu64");
    for (int i = 0; i < XV; i++) /* ignored rows: untouched, bit for bit */
        for (int n = 2; n <= 5; n += 3)
            assert_true(g64[n * XV + i] == pre[n * XV + i] && g32[n * XV + i] == pre[n * XV + i]);
}

/* ---- adamw -------------------------------------------------------------------------------- */

enum { AN = 29, ASTEPS = 3 };
#define A_LR 1e-2
#define A_B1 0.9
#define A_B2 0.999
#define A_EPS 1e-8

/* the textbook form of torch.optim.AdamW: decoupled decay, bias-corrected moments */
static void adamw_ref(double *p, const double *g, double *m, double *v, double wd, int t)
{
    for (int i = 0; i < AN; i++) {
        p[i] -= A_LR * wd * p[i];
        m[i] = A_B1 * m[i] + (1 - A_B1) * g[i];
        v[i] = A_B2 * v[i] + (1 - A_B2) * g[i] * g[i];
        double mhat = m[i] / (1 - pow(A_B1, t)), vhat = v[i] / (1 - pow(A_B2, t));
        p[i] -= A_LR * mhat / (sqrt(vhat) + A_EPS);
    }
}

/* steps t = 1..ASTEPS with fresh gradients; moments start at zero (as PyTorch) or random */
static void adamw_case(double wd, int zero_moments, uint64_t seed)
{
    double p0[AN], m0[AN], v0[AN], g[ASTEPS][AN], p[AN], m[AN], v[AN], got[AN];
    rnd(p0, AN, seed, -1, 1);
    rnd(m0, AN, seed + 1, -0.1, 0.1);
    rnd(v0, AN, seed + 2, 0, 0.01);
    for (int i = 0; zero_moments && i < AN; i++)
        m0[i] = v0[i] = 0;
    for (int s = 0; s < ASTEPS; s++)
        rnd(g[s], AN, seed + 10 + s, -1, 1);
    memcpy(p, p0, sizeof p);
    memcpy(m, m0, sizeof m);
    memcpy(v, v0, sizeof v);
    for (int s = 0; s < ASTEPS; s++)
        adamw_ref(p, g[s], m, v, wd, s + 1);
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten pv = put(&t, p0, AN), mv = put(&t, m0, AN), vv = put(&t, v0, AN);
        for (int s = 0; s < ASTEPS; s++)
            t.d->ops->adamw(t.d, pv, put(&t, g[s], AN), mv, vv, AN, A_LR, A_B1, A_B2, A_EPS, wd,
                            s + 1);
        get(&t, pv, got);
        assert_close(got, p, AN, DEVS[k].tol, DEVS[k].spec, "adamw p");
        get(&t, mv, got);
        assert_close(got, m, AN, DEVS[k].tol, DEVS[k].spec, "adamw m");
        get(&t, vv, got);
        assert_close(got, v, AN, DEVS[k].tol, DEVS[k].spec, "adamw v");
        tdev_close(&t);
    }
}

static void test_adamw(void **state)
{
    adamw_case(0.1, 1, 901);
    adamw_case(0.0, 1, 902);
    adamw_case(0.1, 0, 903);
}

/* ---- reductions --------------------------------------------------------------------------- */

enum { RN = 10007, ROFF = 5, RSUB = 1000 };

static void test_sum_sumsq(void **state)
{
    static double x[RN];
    rnd(x, RN, 801, -1, 1);
    double s = 0, s2 = 0, sa = 0, ss = 0;
    for (int i = 0; i < RN; i++) {
        s += x[i];
        s2 += x[i] * x[i];
        sa += fabs(x[i]);
    }
    for (int i = ROFF; i < ROFF + RSUB; i++)
        ss += x[i];
    /* both devices must accumulate in double: bounds are ~1e-10 of sum|x| (an fp32 running
     * sum over 10^4 terms would be off by ~1e-6 of it) */
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten v = put(&t, x, RN);
        assert_true(fabs(t.d->ops->sum(t.d, v, RN) - s) <= 1e-10 * sa);
        assert_true(fabs(t.d->ops->sumsq(t.d, v, RN) - s2) <= 1e-10 * s2);
        assert_true(fabs(t.d->ops->sum(t.d, dten_view(v, ROFF, RSUB), RSUB) - ss) <= 1e-10 * sa);
        assert_true(t.d->ops->sum(t.d, v, 0) == 0);
        no_error(&t);
        tdev_close(&t);
    }
}

/* ---- transfers, zero, copy ---------------------------------------------------------------- */

enum { TN = 23 };

static void transfers_on(const char *spec, int fp64)
{
    double x[TN], back[TN];
    float xf[TN], backf[TN];
    int32_t xi[TN], backi[TN];
    uint64_t s = 1001;
    tu_fill(x, TN, &s, -1e3, 1e3); /* not float-representable */
    for (int i = 0; i < TN; i++) {
        xf[i] = (float)(x[i] / 7);
        xi[i] = (int32_t)(x[i] * 1e6);
    }
    xi[0] = INT32_MAX;
    xi[1] = INT32_MIN;
    tdev t;
    tdev_open(&t, spec);
    dten all = tdev_alloc(&t, TN, DT_REAL), v = dten_view(all, PAD, TN);
    t.d->ops->upload_f64(t.d, v, x);
    t.d->ops->download_f64(t.d, back, v);
    for (int i = 0; i < TN; i++)
        assert_true(back[i] == (fp64 ? x[i] : (double)(float)x[i]));
    t.d->ops->upload(t.d, v, xf);
    t.d->ops->download(t.d, backf, v);
    t.d->ops->download_f64(t.d, back, v);
    for (int i = 0; i < TN; i++)
        assert_true(backf[i] == xf[i] && back[i] == (double)xf[i]);
    dten iall = tdev_alloc(&t, TN, DT_I32), iv = dten_view(iall, PAD, TN);
    t.d->ops->upload_i32(t.d, iv, xi);
    t.d->ops->download_i32(t.d, backi, iv);
    assert_memory_equal(backi, xi, sizeof xi);
    no_error(&t);
    tdev_close(&t);
}

static void test_transfers(void **state)
{
    transfers_on("cpu", 0);
    transfers_on("cpu64", 1);
}

static void test_zero_copy(void **state)
{
    double x[TN], y[TN], got[TN];
    int32_t xi[TN], gi[TN + 2 * PAD];
    rnd(x, TN, 1011, -1, 1);
    rnd(y, TN, 1012, -1, 1);
    for (int i = 0; i < TN; i++)
        xi[i] = 100 + i;
    for (int k = 0; k < 2; k++) {
        tdev t;
        tdev_open(&t, DEVS[k].spec);
        dten a = put(&t, x, TN), b = put(&t, y, TN), ia = put_i32(&t, xi, TN);
        t.d->ops->copy(t.d, dten_view(b, 4, 10), dten_view(a, 2, 10));
        get(&t, b, got);
        for (int i = 0; i < TN; i++)
            assert_true(got[i] == (i >= 4 && i < 14 ? x[i - 2] : y[i]));
        t.d->ops->zero(t.d, dten_view(a, 3, 7));
        get(&t, a, got);
        for (int i = 0; i < TN; i++)
            assert_true(got[i] == (i >= 3 && i < 10 ? 0 : x[i]));
        t.d->ops->zero(t.d, dten_view(ia, 1, 5));
        t.d->ops->download_i32(t.d, gi, (dten){ia.buf, 0, TN + 2 * PAD});
        for (int i = 0; i < TN + 2 * PAD; i++) {
            int j = i - PAD;
            assert_int_equal(gi[i], j < 0 || j >= TN ? -7777 : (j >= 1 && j < 6) ? 0 : xi[j]);
        }
        no_error(&t);
        tdev_close(&t);
    }
}

/* ---- memory accounting and opening -------------------------------------------------------- */

static void memory_on(const char *spec, size_t real_size, const char *dtype)
{
    char err[DEVICE_ERR];
    device *d = device_open(spec, err, sizeof err);
    assert_non_null(d);
    assert_int_equal(d->real_size, real_size);
    assert_string_equal(d->dtype, dtype);
    assert_string_equal(d->backend, spec);
    assert_int_equal(d->mem_current, 0);
    dten a = device_alloc(d, 1000, DT_REAL);
    assert_int_equal(d->mem_current, 1000 * real_size);
    dten b = device_alloc(d, 77, DT_I32);
    size_t both = 1000 * real_size + 77 * 4;
    assert_int_equal(d->mem_current, both);
    assert_int_equal(d->mem_peak, both);
    device_free(d, a);
    assert_int_equal(d->mem_current, 77 * 4);
    assert_int_equal(d->mem_peak, both);
    device_free(d, b);
    assert_int_equal(d->mem_current, 0);
    assert_int_equal(d->mem_peak, both);
    assert_null(device_error(d));
    device_close(d);
}

static void test_memory_and_open(void **state)
{
    memory_on("cpu", 4, "fp32");
    memory_on("cpu64", 8, "fp64");
    char err[DEVICE_ERR] = "";
    assert_null(device_open("cpu:7", err, sizeof err));
    assert_non_null(strstr(err, "cpu:7"));
    err[0] = 0;
    assert_null(device_open("nosuch", err, sizeof err));
    assert_non_null(strstr(err, "nosuch"));
    device *d = device_open("cpu64:0", err, sizeof err);
    assert_non_null(d);
    device_close(d);
}

/* ---- argument checks and the sticky error ------------------------------------------------- */

static double J[4096]; /* junk values for calls that must fail */

static const char *bad_token(tdev *t)
{
    int32_t tok[4] = {0, 1, 11, 2}; /* 11 is past the 11 rows of wte */
    t->d->ops->embedding_forward(t->d, put(t, J, 12), put_i32(t, tok, 4), put(t, J, 33),
                                 put(t, J, 6), 2, 2, 3);
    return "embedding_forward";
}

static const char *bad_gemm_c(tdev *t)
{
    t->d->ops->gemm(t->d, 0, 0, 4, 4, 4, 1, put(t, J, 32), 4, 16, put(t, J, 32), 4, 16, 0,
                    put(t, J, 31), 4, 16, 2);
    return "gemm";
}

static const char *bad_gemm_ld(tdev *t)
{
    t->d->ops->gemm(t->d, 1, 0, 4, 4, 4, 1, put(t, J, 64), 3, 16, put(t, J, 64), 4, 16, 0,
                    put(t, J, 64), 4, 16, 2);
    return "gemm";
}

static const char *bad_target(tdev *t)
{
    int32_t tg[3] = {0, 11, XIGNORE};
    t->d->ops->softmax_xent_forward(t->d, put(t, J, 3), put(t, J, 33), put(t, J, 33),
                                    put_i32(t, tg, 3), 3, 11, XIGNORE);
    return "softmax_xent_forward";
}

static const char *bad_heads(tdev *t)
{
    t->d->ops->attention_forward(t->d, put(t, J, 40), put(t, J, 48), put(t, J, 120), 1, 4, 10,
                                 3, 1);
    return "attention_forward";
}

static const char *bad_scratch(tdev *t)
{
    t->d->ops->attention_backward(t->d, put(t, J, 144), put(t, J, 31), put(t, J, 48),
                                  put(t, J, 144), put(t, J, 32), 1, 4, 12, 2, 1);
    return "attention_backward";
}

static const char *bad_mean(tdev *t)
{
    t->d->ops->layernorm_forward(t->d, put(t, J, 15), put(t, J, 2), put(t, J, 3), put(t, J, 15),
                                 put(t, J, 5), put(t, J, 5), 3, 5, 1e-5);
    return "layernorm_forward";
}

static const char *bad_add(tdev *t)
{
    t->d->ops->add(t->d, put(t, J, 10), put(t, J, 10), put(t, J, 9), 10);
    return "add";
}

static const char *bad_step(tdev *t)
{
    dten x = put(t, J, 8);
    t->d->ops->adamw(t->d, x, x, x, x, 8, 1e-3, 0.9, 0.999, 1e-8, 0, 0);
    return "adamw";
}

static const char *bad_kind(tdev *t)
{
    t->d->ops->embedding_backward(t->d, put(t, J, 33), put(t, J, 6), put(t, J, 12),
                                  put(t, J, 4), 2, 2, 3);
    return "embedding_backward";
}

static const char *bad_negative(tdev *t)
{
    t->d->ops->gelu_forward(t->d, put(t, J, 8), put(t, J, 8), -1);
    return "gelu_forward";
}

static const char *bad_rstd(tdev *t)
{
    t->d->ops->rmsnorm_forward(t->d, put(t, J, 15), put(t, J, 2), put(t, J, 15), put(t, J, 5), 3,
                               5, 1e-6);
    return "rmsnorm_forward";
}

static const char *bad_dw(tdev *t)
{
    t->d->ops->rmsnorm_backward(t->d, put(t, J, 15), put(t, J, 4), put(t, J, 15), put(t, J, 15),
                                put(t, J, 5), put(t, J, 3), 3, 5);
    return "rmsnorm_backward";
}

static const char *bad_up(tdev *t)
{
    t->d->ops->silu_mul_backward(t->d, put(t, J, 10), put(t, J, 10), put(t, J, 10),
                                 put(t, J, 10), put(t, J, 9), 10);
    return "silu_mul_backward";
}

static const char *bad_odd_head(tdev *t)
{
    t->d->ops->rope_forward(t->d, put(t, J, 30), put(t, J, 30), put(t, J, 10), put(t, J, 10), 1,
                            2, 3, 5);
    return "rope_forward";
}

static const char *bad_rope_table(tdev *t)
{
    t->d->ops->rope_backward(t->d, put(t, J, 48), put(t, J, 48), put(t, J, 6), put(t, J, 5), 1,
                             3, 4, 4);
    return "rope_backward";
}

static const char *bad_kv_heads(tdev *t)
{
    t->d->ops->attention_gqa_forward(t->d, put(t, J, 24), put(t, J, 48), put(t, J, 24),
                                     put(t, J, 16), put(t, J, 16), (dten){0}, 1, 4, 3, 2, 2, 1);
    return "attention_gqa_forward";
}

static const char *bad_gqa_scratch(tdev *t)
{
    dten x = put(t, J, 64);
    t->d->ops->attention_gqa_backward(t->d, x, put(t, J, 32), put(t, J, 32), put(t, J, 15), x,
                                      x, put(t, J, 32), put(t, J, 32), put(t, J, 64), (dten){0},
                                      1, 4, 4, 2, 4, 1);
    return "attention_gqa_backward";
}

static const char *bad_gather_id(tdev *t)
{
    int32_t id[3] = {0, 4, 1}; /* 4 is past the 4 rows */
    t->d->ops->gather_rows_forward(t->d, put(t, J, 6), put(t, J, 8), put_i32(t, id, 3), 3, 4, 2);
    return "gather_rows_forward";
}

static const char *bad_scatter_id(tdev *t)
{
    int32_t id[3] = {0, -1, 1};
    t->d->ops->gather_rows_backward(t->d, put(t, J, 8), put(t, J, 6), put_i32(t, id, 3), 3, 4, 2);
    return "gather_rows_backward";
}

static const char *bad_topk_k(tdev *t)
{
    int32_t id[6] = {0};
    t->d->ops->topk_router_forward(t->d, put(t, J, 6), put_i32(t, id, 6), put(t, J, 4),
                                   put(t, J, 4), 2, 2, 3, 1);
    return "topk_router_forward";
}

static const char *bad_topk_id(tdev *t)
{
    int32_t id[4] = {0, 1, 3, 2}; /* 3 is past the 3 experts */
    t->d->ops->topk_router_backward(t->d, put(t, J, 6), put(t, J, 4), put(t, J, 4),
                                    put_i32(t, id, 4), put(t, J, 6), 2, 3, 2, 0);
    return "topk_router_backward";
}

/* each bad call records "<backend>: <op>: ..." and turns later ops into no-ops */
static void test_argument_checks(void **state)
{
    static const char *(*const bad[])(tdev *) = {
        bad_token, bad_gemm_c, bad_gemm_ld, bad_target, bad_heads, bad_scratch,
        bad_mean,  bad_add,    bad_step,    bad_kind,   bad_negative, bad_rstd,
        bad_dw,    bad_up,     bad_odd_head, bad_rope_table, bad_kv_heads, bad_gqa_scratch,
        bad_gather_id, bad_scatter_id, bad_topk_k, bad_topk_id};
    rnd(J, sizeof J / sizeof J[0], 1101, -1, 1);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            tdev t;
            tdev_open(&t, DEVS[k].spec);
            dten v = put(&t, J, 8);
            const char *op = bad[i](&t);
            const char *err = device_error(t.d);
            if (!err || strncmp(err, DEVS[k].spec, strlen(DEVS[k].spec)) != 0 || !strstr(err, op))
                fail_msg("%s %s: expected an error naming the op, got %s", DEVS[k].spec, op,
                         err ? err : "none");
            double before[8], after[8];
            t.d->ops->download_f64(t.d, before, v);
            t.d->ops->scale(t.d, v, 2, 8);
            t.d->ops->download_f64(t.d, after, v);
            assert_memory_equal(before, after, sizeof before);
            assert_true(t.d->ops->sumsq(t.d, v, 8) == 0);
            tdev_close(&t);
        }
}

/* ---- determinism across thread counts ----------------------------------------------------- */

enum { DN = 50, DC = 70, DB = 2, DT = 9, DV = 13, DAC = 16, DNH = 2 };

static size_t fetch(tdev *t, dten v, double *out)
{
    get(t, v, out);
    return v.n;
}

/* layernorm, attention, embedding and bias gradients (the ops whose reductions are split
 * across threads), every result appended to out; returns the count */
static size_t det_run(double *out)
{
    static double x[DN * DC], w[DC], qkv[DB * DT * 3 * DAC], zero[DN * DC * 2];
    static int32_t tok[DB * DT];
    rnd(x, DN * DC, 1201, -1, 1);
    rnd(w, DC, 1202, 0.5, 1.5);
    rnd(qkv, DB * DT * 3 * DAC, 1203, -1, 1);
    for (int i = 0; i < DB * DT; i++)
        tok[i] = (i * 7) % DV;
    tdev t;
    tdev_open(&t, "cpu");
    size_t k = 0, na = (size_t)DB * DNH * DT * DT, nq = (size_t)DB * DT * 3 * DAC;
    dten xv = put(&t, x, DN * DC), wv = put(&t, w, DC), y = put(&t, zero, DN * DC);
    dten mean = put(&t, zero, DN), rstd = put(&t, zero, DN), dx = put(&t, zero, DN * DC);
    dten dw = put(&t, zero, DC), db = put(&t, zero, DC);
    t.d->ops->layernorm_forward(t.d, y, mean, rstd, xv, wv, wv, DN, DC, 1e-5);
    t.d->ops->layernorm_backward(t.d, dx, dw, db, xv, xv, wv, mean, rstd, DN, DC);
    t.d->ops->bias_backward(t.d, db, xv, DN, DC);
    k += fetch(&t, y, out + k) + fetch(&t, dx, out + k + DN * DC);
    k += fetch(&t, dw, out + k) + fetch(&t, db, out + k + DC);
    dten q = put(&t, qkv, nq), att = put(&t, zero, na), ao = put(&t, zero, nq / 3);
    dten dq = put(&t, zero, nq);
    t.d->ops->attention_forward(t.d, ao, att, q, DB, DT, DAC, DNH, 1);
    t.d->ops->attention_backward(t.d, dq, put(&t, zero, na), ao, q, att, DB, DT, DAC, DNH, 1);
    k += fetch(&t, ao, out + k) + fetch(&t, att, out + k + nq / 3);
    k += fetch(&t, dq, out + k);
    dten dwte = put(&t, zero, DV * DC), dwpe = put(&t, zero, DT * DC);
    t.d->ops->embedding_backward(t.d, dwte, dwpe, xv, put_i32(&t, tok, DB * DT), DB, DT, DC);
    k += fetch(&t, dwte, out + k) + fetch(&t, dwpe, out + k + DV * DC);
    out[k++] = t.d->ops->sum(t.d, xv, DN * DC) + t.d->ops->sumsq(t.d, dx, DN * DC);
    tdev_close(&t);
    return k;
}

static void test_determinism(void **state)
{
    enum { DMAX = 16384 };
    static double one[DMAX], three[DMAX];
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    size_t n1 = det_run(one);
    omp_set_num_threads(3);
    size_t n3 = det_run(three);
    omp_set_num_threads(saved);
    assert_true(n1 == n3 && n1 <= DMAX);
    assert_memory_equal(one, three, n1 * sizeof one[0]);
}

/* a weight gradient dW += dY^T X over K rows, as the MoE experts' (K = rows routed to one
 * expert: any count, here above OpenBLAS's K block of 320 and above twice it) */
static size_t gemm_det_run(int K, double *out)
{
    enum { GM = 64, GN = 48 };
    static double a[5000 * GM], b[5000 * GN], c[GM * GN];
    rnd(a, (size_t)K * GM, 1301, -1, 1);
    rnd(b, (size_t)K * GN, 1302, -1, 1);
    rnd(c, GM * GN, 1303, -1, 1);
    tdev t;
    tdev_open(&t, "cpu");
    dten av = put(&t, a, (size_t)K * GM), bv = put(&t, b, (size_t)K * GN), cv = put(&t, c, GM * GN);
    t.d->ops->gemm(t.d, 1, 0, GM, GN, K, 1.0, av, GM, 0, bv, GN, 0, 1.0, cv, GN, 0, 1);
    size_t k = fetch(&t, cv, out);
    tdev_close(&t);
    return k;
}

static void test_gemm_determinism(void **state)
{
    (void)state;
    enum { GMAX = 64 * 48 };
    static double one[GMAX], three[GMAX];
    /* 5000: one tile over a long K, cut into K chunks on a machine of 2 processors or more */
    static const int rows[] = {333, 701, 1000, 5000};
    int saved = omp_get_max_threads();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        omp_set_num_threads(1);
        size_t n1 = gemm_det_run(rows[i], one);
        omp_set_num_threads(3);
        size_t n3 = gemm_det_run(rows[i], three);
        omp_set_num_threads(saved);
        assert_true(n1 == n3 && n1 <= GMAX);
        assert_memory_equal(one, three, n1 * sizeof one[0]);
    }
}

/* C = 0.5 C + 0.75 op(A) op(B) on the cpu device (C's rows N apart) against the sum in double,
 * each element within 1e-6 of the sum of its terms' magnitudes; got: M x N scratch */
static void check_gemm_vs_double(int ta, int tb, int M, int N, int K, const double *a, int lda,
                                 const double *b, int ldb, const double *c, double *got)
{
    size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb;
    tdev t;
    tdev_open(&t, "cpu");
    dten av = put(&t, a, na), bv = put(&t, b, nb), cv = put(&t, c, (size_t)M * N);
    t.d->ops->gemm(t.d, ta, tb, M, N, K, 0.75, av, lda, 0, bv, ldb, 0, 0.5, cv, N, 0, 1);
    get(&t, cv, got);
    tdev_close(&t);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double x = ta ? a[(size_t)k * lda + i] : a[(size_t)i * lda + k];
                double y = tb ? b[(size_t)j * ldb + k] : b[(size_t)k * ldb + j];
                sum += x * y;
                mag += fabs(x * y);
            }
            double want = 0.5 * c[i * N + j] + 0.75 * sum;
            if (fabs(got[i * N + j] - want) > 1e-6 * (0.75 * mag + 1))
                fail_msg("gemm %c%c %dx%dx%d lda %d ldb %d: C[%d][%d] %.9g, want %.9g",
                         ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, lda, ldb, i, j, got[i * N + j],
                         want);
        }
}

/* a product over a K long enough to be cut into chunks (cpu_ops_gemm.c: K >= 2048 over fewer
 * tiles than processors) against the sum in double: C = 0.5 C + 0.75 op(A) op(B) for every
 * transpose, so chunk 0's beta and alpha on every chunk are checked too */
static void test_gemm_long_k(void **state)
{
    (void)state;
    enum { LM = 24, LN = 40, LK = 6000 };
    static double a[LM * LK], b[LK * LN], c[LM * LN], got[LM * LN];
    rnd(a, LM * LK, 1401, -1, 1);
    rnd(b, LK * LN, 1402, -1, 1);
    rnd(c, LM * LN, 1403, -1, 1);
    for (int tr = 0; tr < 4; tr++) {
        int ta = tr & 1, tb = tr >> 1;
        check_gemm_vs_double(ta, tb, LM, LN, LK, a, ta ? LM : LK, b, tb ? LK : LN, c, got);
    }
}

/* A transposed A whose rows lie a multiple of 2 KiB apart (the weight gradients' panel copy in
 * cpu_ops_gemm.c): lda above M, every transpose of B, alpha and beta, against a sum in double */
static void test_gemm_padded_panel(void **state)
{
    (void)state;
    enum { PN = 40, PK = 2100, MAXLD = 1536 };
    static double a[PK * MAXLD], b[PK * PN], c[MAXLD * PN], got[MAXLD * PN];
    const int cases[][2] = {{1000, 1024}, {1024, 1536}}; /* M, lda */
    rnd(a, PK * MAXLD, 1411, -1, 1);
    rnd(b, PK * PN, 1412, -1, 1);
    rnd(c, MAXLD * PN, 1413, -1, 1);
    for (int cs = 0; cs < 4; cs++) {
        int tb = cs & 1;
        check_gemm_vs_double(1, tb, cases[cs / 2][0], PN, PK, a, cases[cs / 2][1], b,
                             tb ? PK : PN, c, got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_long_k),
        cmocka_unit_test(test_gemm_padded_panel),
        cmocka_unit_test(test_embedding_forward),
        cmocka_unit_test(test_embedding_backward),
        cmocka_unit_test(test_layernorm_forward),
        cmocka_unit_test(test_layernorm_backward),
        cmocka_unit_test(test_gemm_transposes),
        cmocka_unit_test(test_gemm_special),
        cmocka_unit_test(test_bias_add),
        cmocka_unit_test(test_bias_backward),
        cmocka_unit_test(test_attention_forward),
        cmocka_unit_test(test_attention_backward),
        cmocka_unit_test(test_gelu_forward),
        cmocka_unit_test(test_gelu_backward),
        cmocka_unit_test(test_attention_masked_forward),
        cmocka_unit_test(test_attention_masked_unmasked),
        cmocka_unit_test(test_attention_masked_backward),
        cmocka_unit_test(test_attention_dropout_forward),
        cmocka_unit_test(test_attention_dropout_backward),
        cmocka_unit_test(test_attention_dropout_off),
        cmocka_unit_test(test_embedding_tt_forward),
        cmocka_unit_test(test_embedding_tt_backward),
        cmocka_unit_test(test_gelu_erf_forward),
        cmocka_unit_test(test_gelu_erf_backward),
        cmocka_unit_test(test_rmsnorm_forward),
        cmocka_unit_test(test_rmsnorm_backward),
        cmocka_unit_test(test_silu_mul_forward),
        cmocka_unit_test(test_silu_mul_backward),
        cmocka_unit_test(test_rope_tables),
        cmocka_unit_test(test_rope_forward),
        cmocka_unit_test(test_rope_backward),
        cmocka_unit_test(test_attention_gqa_forward),
        cmocka_unit_test(test_attention_gqa_backward),
        cmocka_unit_test(test_gather_rows),
        cmocka_unit_test(test_topk_router),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_dropout_statistics),
        cmocka_unit_test(test_add_accumulate_scale),
        cmocka_unit_test(test_softmax_xent_forward),
        cmocka_unit_test(test_softmax_xent_backward),
        cmocka_unit_test(test_adamw),
        cmocka_unit_test(test_sum_sumsq),
        cmocka_unit_test(test_transfers),
        cmocka_unit_test(test_zero_copy),
        cmocka_unit_test(test_memory_and_open),
        cmocka_unit_test(test_argument_checks),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_gemm_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
