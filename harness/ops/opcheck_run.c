/* harness/ops/opcheck_run.c: the three checks of `harness ops` on one device: test (against the cpu
 * reference: guards, poisoned outputs, NaN, NMSE), grad (central differences), perf (timing). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opcheck.h"
#include "util/util.h"
#ifdef HARNESS_OPENCL
#include "opencl/opencl.h"
#ifdef HARNESS_CUDA
#include "cuda/cuda.h"
#endif
#endif

/* elements around every test view: odd, so views start at unaligned offsets */
#define GUARD 37
/* guards differ per tensor (i), so an op that copies an input's guard into its output's (an
 * identity at those values, as GELU is at 1000) is still caught */
#define GUARD_REAL(i, j) (1000.0f * (float)((i) + 1) + 0.25f * (float)(j))
#define GUARD_I32(i, j) (-7777 - 100000 * (int32_t)(i) - (int32_t)(j))
#define POISON_I32 (-987654321) /* what an integer output holds before the op writes it */

/* ---- inputs ------------------------------------------------------------------------------- */

typedef struct {
    int n;
    oc_tensor spec[OC_MAX_TENSORS];
    double *host[OC_MAX_TENSORS]; /* values of IN and ACC tensors (float-representable) */
} oc_inputs;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(splitmix(s) >> 11) / 9007199254740992.0;
}

/* a seed from the op and its shape, so every case draws its own fixed inputs */
static uint64_t case_seed(const oc_op *op, const oc_shape *s)
{
    char shape[128];
    op->describe(s, shape, sizeof shape);
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = op->name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    for (const char *p = shape; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

static void fill(const oc_tensor *t, double *x, uint64_t *seed)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->gen == OC_UNIFORM)
            x[i] = (float)uniform(seed, t->lo, t->hi);
        else if (t->gen == OC_TARGETS && i % 4 == 2)
            x[i] = OC_IGNORE_INDEX;
        else if (t->gen == OC_KEYMASK)
            x[i] = i / (size_t)t->hi == 1 ? 0 : uniform(seed, 0, 1) >= 0.3;
        else
            x[i] = floor(uniform(seed, 0, t->hi));
    }
}

static void free_inputs(oc_inputs *in)
{
    for (int i = 0; i < in->n; i++)
        free(in->host[i]);
    in->n = 0;
}

/* draws every tensor's values (outputs get values too: grad mode uses them as dout) */
static int make_inputs(const oc_op *op, const oc_shape *s, oc_inputs *in)
{
    memset(in, 0, sizeof *in);
    uint64_t seed = case_seed(op, s);
    in->n = op->tensors(s, in->spec);
    for (int i = 0; i < in->n; i++) {
        in->host[i] = malloc((in->spec[i].n + 1) * sizeof(double));
        if (!in->host[i]) {
            free_inputs(in);
            return 1;
        }
        oc_tensor t = in->spec[i];
        if (t.role == OC_OUT || t.role == OC_SCRATCH)
            t.lo = -1, t.hi = 1;
        fill(&t, in->host[i], &seed);
    }
    return 0;
}

/* ---- device buffers with guards ------------------------------------------------------------ */

typedef struct {
    int n;
    dten all[OC_MAX_TENSORS], view[OC_MAX_TENSORS];
} oc_bufs;

static void free_bufs(device *d, oc_bufs *b)
{
    for (int i = 0; i < b->n; i++)
        device_free(d, b->all[i]);
    b->n = 0;
}

/* guard values around the body: the inputs, or NaN (poison) for what the op must write */
static int upload_one(device *d, const oc_tensor *t, int i, const double *x, size_t guard,
                      dten all)
{
    size_t total = t->n + 2 * guard;
    int poison = t->role == OC_OUT || t->role == OC_SCRATCH;
    if (t->kind == DT_I32) {
        int32_t *h = malloc((total + 1) * sizeof *h);
        if (!h)
            return 1;
        for (size_t j = 0; j < total; j++)
            h[j] = j < guard || j >= guard + t->n ? GUARD_I32(i, j)
                   : poison                       ? POISON_I32
                                                  : (int32_t)x[j - guard];
        d->ops->upload_i32(d, all, h);
        free(h);
        return 0;
    }
    float *h = malloc((total + 1) * sizeof *h);
    if (!h)
        return 1;
    for (size_t j = 0; j < total; j++)
        h[j] = j < guard || j >= guard + t->n ? GUARD_REAL(i, j) : poison ? NAN : (float)x[j - guard];
    d->ops->upload(d, all, h);
    free(h);
    return 0;
}

static int upload_all(device *d, const oc_inputs *in, size_t guard, oc_bufs *b, char *msg,
                      size_t len)
{
    memset(b, 0, sizeof *b);
    for (int i = 0; i < in->n; i++) {
        const oc_tensor *t = &in->spec[i];
        b->all[i] = device_alloc(d, t->n + 2 * guard, t->kind);
        if (!b->all[i].buf) {
            snprintf(msg, len, "allocating %s: %s", t->name, device_error(d));
            return 1;
        }
        b->n = i + 1;
        b->view[i] = dten_view(b->all[i], guard, t->n);
        if (upload_one(d, t, i, in->host[i], guard, b->all[i])) {
            snprintf(msg, len, "out of host memory for %s", t->name);
            return 1;
        }
    }
    return 0;
}

/* downloads tensor i whole; checks the guards and that an input came back unchanged; the body
 * goes to out (doubles). 0, or 1 with msg */
static int download_one(device *d, const oc_inputs *in, int i, const oc_bufs *b, double *out,
                        char *msg, size_t len)
{
    const oc_tensor *t = &in->spec[i];
    size_t total = t->n + 2 * GUARD;
    float *h = malloc((total + 1) * sizeof *h);
    int32_t *hi = malloc((total + 1) * sizeof *hi);
    int bad_guard = -1, bad_input = -1;
    if (h && hi && t->kind == DT_I32)
        d->ops->download_i32(d, hi, b->all[i]);
    else if (h && hi)
        d->ops->download(d, h, b->all[i]);
    for (size_t j = 0; h && hi && j < total; j++) {
        int in_body = j >= GUARD && j < GUARD + t->n;
        double v = t->kind == DT_I32 ? hi[j] : h[j];
        int guard_ok = t->kind == DT_I32
                           ? hi[j] == GUARD_I32(i, j)
                           : memcmp(&h[j], &(float){GUARD_REAL(i, j)}, sizeof(float)) == 0;
        if (!in_body && !guard_ok && bad_guard < 0)
            bad_guard = (int)j;
        if (in_body && t->role == OC_IN && v != in->host[i][j - GUARD] && bad_input < 0)
            bad_input = (int)(j - GUARD);
        if (in_body && out)
            out[j - GUARD] = v;
    }
    free(h);
    free(hi);
    if (bad_guard >= 0 || bad_input >= 0)
        snprintf(msg, len, bad_guard >= 0 ? "%s: the op wrote outside its view (guard element %d)"
                                          : "%s: the op changed its input (element %d)",
                 t->name, bad_guard >= 0 ? bad_guard : bad_input);
    return bad_guard >= 0 || bad_input >= 0 || (!h || !hi);
}

/* runs case c on d with guarded buffers; out[i] receives OUT/ACC tensors. 0, or 1 + msg */
static int run_guarded(device *d, const oc_case *c, const oc_inputs *in, double **out,
                       double *scalar, char *msg, size_t len)
{
    oc_bufs b;
    int rc = upload_all(d, in, GUARD, &b, msg, len);
    if (!rc) {
        *scalar = c->op->run(d, &c->s, b.view);
        d->ops->synchronize(d);
        if (device_error(d)) {
            snprintf(msg, len, "%s", device_error(d));
            rc = 1;
        }
    }
    for (int i = 0; i < in->n && !rc; i++) {
        int result = in->spec[i].role == OC_OUT || in->spec[i].role == OC_ACC;
        rc = download_one(d, in, i, &b, result ? out[i] : NULL, msg, len);
    }
    free_bufs(d, &b);
    return rc;
}

/* ---- test mode ------------------------------------------------------------------------------ */

static double nmse(double err2, double ref2)
{
    return ref2 > 0 ? err2 / ref2 : err2;
}

/* NMSE and max abs of one result tensor; NaN/Inf where the reference is finite counts as bad */
static void compare_one(const char *name, const double *got, const double *want, size_t n,
                        oc_result *r)
{
    double e2 = 0, w2 = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) {
            bad++;
            continue;
        }
        double e = got[i] - want[i];
        e2 += e * e;
        w2 += want[i] * want[i];
        if (fabs(e) > r->max_abs)
            r->max_abs = fabs(e);
    }
    double m = nmse(e2, w2);
    if (bad && !r->message[0])
        snprintf(r->message, sizeof r->message, "%s: %zu of %zu elements NaN/Inf (not written?)",
                 name, bad, n);
    if (bad || m > r->metric || !r->worst[0]) {
        r->metric = bad ? INFINITY : fmax(m, r->metric);
        snprintf(r->worst, sizeof r->worst, "%s", name);
    }
}

/* 1 when the reference's own results are not all finite (then the case itself is broken) */
static int reference_broken(const oc_inputs *in, double **want, oc_result *r)
{
    for (int i = 0; i < in->n; i++) {
        if (!want[i])
            continue;
        for (size_t j = 0; j < in->spec[i].n; j++)
            if (!isfinite(want[i][j])) {
                snprintf(r->message, sizeof r->message, "the reference gave NaN/Inf in %s[%zu]",
                         in->spec[i].name, j);
                return 1;
            }
    }
    return 0;
}

static void free_results(double **x, int n)
{
    for (int i = 0; i < n; i++)
        free(x[i]);
}

static int alloc_results(const oc_inputs *in, double **x)
{
    for (int i = 0; i < in->n; i++) {
        int result = in->spec[i].role == OC_OUT || in->spec[i].role == OC_ACC;
        x[i] = result ? calloc(in->spec[i].n + 1, sizeof(double)) : NULL;
        if (result && !x[i])
            return 1;
    }
    return 0;
}

int oc_test(device *d, device *ref, const oc_case *c, oc_result *r)
{
    memset(r, 0, sizeof *r);
    r->threshold = c->op->nmse_max;
    oc_inputs in;
    double *got[OC_MAX_TENSORS] = {0}, *want[OC_MAX_TENSORS] = {0}, sg = 0, sw = 0;
    int rc = 0;
    if (make_inputs(c->op, &c->s, &in) || alloc_results(&in, got) || alloc_results(&in, want)) {
        snprintf(r->message, sizeof r->message, "out of host memory");
        rc = -1;
    } else if (run_guarded(ref, c, &in, want, &sw, r->message, sizeof r->message) ||
               reference_broken(&in, want, r)) {
        rc = -1;
    } else if (!run_guarded(d, c, &in, got, &sg, r->message, sizeof r->message)) {
        for (int i = 0; i < in.n; i++)
            if (got[i])
                compare_one(in.spec[i].name, got[i], want[i], in.spec[i].n, r);
        if (c->op->scalar)
            compare_one("result", &sg, &sw, 1, r);
        r->pass = !r->message[0] && r->metric <= r->threshold;
    }
    if (rc == 0 && r->message[0] && r->metric == 0)
        r->metric = NAN;
    free_results(got, in.n);
    free_results(want, in.n);
    free_inputs(&in);
    return rc;
}

/* ---- grad mode ------------------------------------------------------------------------------ */

/* central differences: eps ~ cbrt(u) balances truncation (eps^2 f''') against rounding of the
 * outputs (u |f| / eps); for fp32 2^-7, with the step taken as the rounded inputs' difference */
#define FD_EPS_FP32 0.0078125
#define FD_EPS_FP64 1e-5
/* elements checked per input tensor (evenly spread) */
#define FD_SAMPLES 48

double oc_grad_threshold(size_t real_size)
{
    /* fp32: truncation ~eps^2/6 = 1e-5 plus rounding ~u sqrt(k)/eps = 1e-5 (relative to the
     * gradient); 1e-3 leaves a 30x margin and still fails any missing or wrong term (>= 1e-2).
     * fp64: both terms ~1e-10. */
    return real_size == sizeof(float) ? 1e-3 : 1e-7;
}

typedef struct {
    device *d;
    const oc_op *fwd;
    const oc_grad_case *g;
    oc_inputs fin;
    oc_bufs fb;
    double *dout[OC_MAX_TENSORS]; /* the weights of the loss, per forward output */
} fd_ctx;

/* the loss sum_k sum_i w_k[i] out_k[i] after a forward run (ACC outputs reset first) */
static double fd_loss(fd_ctx *f)
{
    device *d = f->d;
    for (int k = 0; k < f->fin.n; k++)
        if (f->fin.spec[k].role == OC_ACC)
            d->ops->upload_f64(d, f->fb.view[k], f->fin.host[k]);
    f->fwd->run(d, &f->g->s, f->fb.view);
    double L = 0;
    for (int k = 0; k < f->fin.n; k++) {
        size_t n = f->fin.spec[k].n;
        if (f->g->weight[k] == W_NONE || n == 0)
            continue;
        double *out = malloc(n * sizeof *out);
        if (!out)
            return NAN;
        d->ops->download_f64(d, out, f->fb.view[k]);
        for (size_t i = 0; i < n; i++)
            L += out[i] * (f->g->weight[k] == W_SCALE ? f->g->s.scale : f->dout[k][i]);
        free(out);
    }
    return L;
}

/* the loss with element e of forward tensor j set to v (v as the device stores it) */
static double fd_loss_at(fd_ctx *f, int j, size_t e, double v)
{
    double saved = f->fin.host[j][e];
    f->fin.host[j][e] = v;
    f->d->ops->upload_f64(f->d, dten_view(f->fb.view[j], e, 1), &v);
    double L = fd_loss(f);
    f->fin.host[j][e] = saved;
    f->d->ops->upload_f64(f->d, dten_view(f->fb.view[j], e, 1), &saved);
    return L;
}

/* compares analytic gradient an[] of forward tensor j with central differences */
static void fd_compare(fd_ctx *f, int j, const double *an, const char *name, oc_result *r)
{
    size_t n = f->fin.spec[j].n, m = n < FD_SAMPLES ? n : FD_SAMPLES;
    double eps = f->d->real_size == sizeof(float) ? FD_EPS_FP32 : FD_EPS_FP64;
    double e2 = 0, a2 = 0;
    for (size_t k = 0; k < m; k++) {
        size_t e = k * n / m;
        double x = f->fin.host[j][e], xp = x + eps, xm = x - eps;
        if (f->d->real_size == sizeof(float))
            xp = (float)xp, xm = (float)xm;
        double fd = (fd_loss_at(f, j, e, xp) - fd_loss_at(f, j, e, xm)) / (xp - xm);
        e2 += (fd - an[e]) * (fd - an[e]);
        a2 += an[e] * an[e];
        double d = fabs(fd - an[e]); /* a NaN stays: fmax would drop it */
        r->max_abs = isnan(d) || isnan(r->max_abs) ? NAN : fmax(r->max_abs, d);
    }
    double rel = sqrt(nmse(e2, a2));
    /* the worst gradient so far, a NaN the worst of all: once the metric is NaN, a later finite
     * gradient must not replace it (!(rel <= NaN) is true, and the row passed) */
    if (!isnan(r->metric) && !(rel <= r->metric)) {
        r->metric = rel;
        snprintf(r->worst, sizeof r->worst, "%s", name);
    }
}

/* the backward op's tensors from their sources; bb holds the ones made here */
static int grad_backward_views(fd_ctx *f, const oc_tensor *bs, int nb, oc_bufs *bb, dten *views,
                               char *msg, size_t len)
{
    device *d = f->d;
    memset(bb, 0, sizeof *bb);
    for (int i = 0; i < nb; i++) {
        oc_src s = f->g->src[i];
        if (s.kind == SRC_FWD) {
            views[i] = f->fb.view[s.idx];
            continue;
        }
        bb->all[bb->n] = device_alloc(d, bs[i].n, bs[i].kind);
        if (!bb->all[bb->n].buf) {
            snprintf(msg, len, "allocating %s: %s", bs[i].name, device_error(d));
            return 1;
        }
        views[i] = bb->all[bb->n++];
        if (s.kind == SRC_DOUT)
            d->ops->upload_f64(d, views[i], f->dout[s.idx]);
        else
            d->ops->zero(d, views[i]);
    }
    return 0;
}

static void grad_cleanup(fd_ctx *f)
{
    for (int k = 0; k < OC_MAX_TENSORS; k++)
        free(f->dout[k]);
    free_bufs(f->d, &f->fb);
    free_inputs(&f->fin);
}

/* the loss weights: random for W_RANDOM outputs (their dout) */
static int grad_weights(fd_ctx *f)
{
    uint64_t seed = case_seed(f->fwd, &f->g->s) ^ 0x5eed;
    for (int k = 0; k < f->fin.n; k++) {
        if (f->g->weight[k] != W_RANDOM)
            continue;
        f->dout[k] = malloc((f->fin.spec[k].n + 1) * sizeof(double));
        if (!f->dout[k])
            return 1;
        for (size_t i = 0; i < f->fin.spec[k].n; i++)
            f->dout[k][i] = (float)uniform(&seed, -1, 1);
    }
    return 0;
}

/* runs the backward once and compares each gradient it produces */
static void grad_check_pairs(fd_ctx *f, const oc_op *bwd, oc_result *r)
{
    device *d = f->d;
    oc_tensor bs[OC_MAX_TENSORS];
    int nb = bwd->tensors(&f->g->s, bs);
    oc_bufs bb;
    dten views[OC_MAX_TENSORS];
    fd_loss(f); /* the forward's saved outputs (mean, rstd, att, probs) for the backward */
    if (grad_backward_views(f, bs, nb, &bb, views, r->message, sizeof r->message) == 0) {
        bwd->run(d, &f->g->s, views);
        for (int p = 0; p < f->g->npairs && !device_error(d); p++) {
            int bi = f->g->pairs[p][0], fj = f->g->pairs[p][1];
            double *an = malloc((bs[bi].n + 1) * sizeof *an);
            if (!an)
                break;
            d->ops->download_f64(d, an, views[bi]);
            fd_compare(f, fj, an, bs[bi].name, r);
            free(an);
        }
    }
    free_bufs(d, &bb);
}

int oc_grad(device *d, const oc_grad_case *g, oc_result *r)
{
    memset(r, 0, sizeof *r);
    r->threshold = oc_grad_threshold(d->real_size);
    const oc_op *fwd = oc_find(g->fwd), *bwd = oc_find(g->bwd);
    fd_ctx f = {.d = d, .fwd = fwd, .g = g};
    if (!fwd || !bwd || make_inputs(fwd, &g->s, &f.fin) || grad_weights(&f)) {
        snprintf(r->message, sizeof r->message, "cannot set up %s / %s", g->fwd, g->bwd);
        grad_cleanup(&f);
        return -1;
    }
    if (upload_all(d, &f.fin, 0, &f.fb, r->message, sizeof r->message) == 0)
        grad_check_pairs(&f, bwd, r);
    d->ops->synchronize(d);
    if (device_error(d) && !r->message[0])
        snprintf(r->message, sizeof r->message, "%s", device_error(d));
    r->pass = !r->message[0] && r->metric <= r->threshold;
    if (r->message[0] && r->metric == 0)
        r->metric = NAN; /* no error measured (a failed op), as test mode shows it: not 0 */
    grad_cleanup(&f);
    return 0;
}

/* ---- perf mode ------------------------------------------------------------------------------ */

#define PERF_MIN_REPS 5
#define PERF_MAX_REPS 200
#define PERF_BUDGET_MS 150.0

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* bytes an op moves at least once: inputs read, outputs written, accumulators both */
static double moved_bytes(const device *d, const oc_inputs *in)
{
    double bytes = 0;
    for (int i = 0; i < in->n; i++) {
        size_t es = in->spec[i].kind == DT_I32 ? sizeof(int32_t) : d->real_size;
        int times = in->spec[i].role == OC_IN || in->spec[i].role == OC_OUT ? 1 : 2;
        bytes += (double)in->spec[i].n * (double)es * times;
    }
    return bytes;
}

/* microseconds of one call: the device's own timer where it has one, else the wall clock */
static double time_one(device *d, const oc_case *c, const dten *views)
{
#ifdef HARNESS_OPENCL
    if (strcmp(d->backend, "opencl") == 0) {
        c->op->run(d, &c->s, views);
        double ns = opencl_last_op_ns(d);
        if (ns >= 0)
            return ns / 1e3;
    }
#endif
#ifdef HARNESS_CUDA
    if (strcmp(d->backend, "cuda") == 0 || strcmp(d->backend, "musa") == 0) {
        cuda_timer_start(d); /* CUDA events around the op on the device's stream */
        c->op->run(d, &c->s, views);
        double ns = cuda_timer_stop_ns(d);
        if (ns >= 0)
            return ns / 1e3;
    }
#endif
    d->ops->synchronize(d);
    double t0 = now_ms();
    c->op->run(d, &c->s, views);
    d->ops->synchronize(d);
    return (now_ms() - t0) * 1e3;
}

int oc_perf(device *d, const oc_case *c, oc_result *r)
{
    memset(r, 0, sizeof *r);
    oc_inputs in;
    oc_bufs b = {0};
    double *t = malloc(PERF_MAX_REPS * sizeof *t);
    if (!t || make_inputs(c->op, &c->s, &in)) {
        snprintf(r->message, sizeof r->message, "out of host memory");
        free(t);
        return -1;
    }
    int reps = 0;
    if (upload_all(d, &in, 0, &b, r->message, sizeof r->message) == 0) {
#ifdef HARNESS_OPENCL
        opencl_set_timing(d, 1);
#endif
        for (int w = 0; w < 2; w++) /* warm-up: kernel compilation, caches */
            c->op->run(d, &c->s, b.view);
        double start = now_ms();
        while (reps < PERF_MAX_REPS && !device_error(d) &&
               (reps < PERF_MIN_REPS || now_ms() - start < PERF_BUDGET_MS))
            t[reps++] = time_one(d, c, b.view);
#ifdef HARNESS_OPENCL
        opencl_set_timing(d, 0);
#endif
    }
    if (device_error(d) && !r->message[0])
        snprintf(r->message, sizeof r->message, "%s", device_error(d));
    if (!r->message[0] && reps > 0) {
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        r->us = t[reps / 2];
        r->gbps = moved_bytes(d, &in) / (r->us * 1e3);
        r->gflops = c->op->flops ? c->op->flops(&c->s) / (r->us * 1e3) : 0;
        r->pass = 1;
    }
    free_bufs(d, &b);
    free_inputs(&in);
    free(t);
    return 0;
}
