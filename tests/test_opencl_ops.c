/* tests/test_opencl_ops.c: the opencl backend beyond the op math `harness ops` checks: specs,
 * transfers, zero/copy on views, errors naming the op, bad ids, repeatable sums, timing, and
 * dropout masks (plain and of attention probabilities) equal to the cpu backend's. */

/* Every test is skipped when the build or the machine has no OpenCL device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "device.h"
#include "philox.h"
#include "testutil.h"
#ifdef HARNESS_OPENCL
#include "opencl/opencl.h"
#endif

static device *open_or_skip(const char *spec)
{
    char err[DEVICE_ERR];
    device *d = device_open(spec, err, sizeof err);
    if (!d) {
        fprintf(stderr, "skipping: %s: %s\n", spec, err);
        skip();
    }
    return d;
}

static void expect_error(device *d, const char *part)
{
    const char *e = device_error(d);
    if (!e || !strstr(e, part))
        fail_msg("device error '%s' lacks '%s'", e ? e : "(none)", part);
}

static void test_specs(void **state)
{
    device *d = open_or_skip("opencl");
    assert_string_equal(d->backend, "opencl");
    assert_string_equal(d->dtype, "fp32");
    assert_int_equal(d->real_size, 4);
    assert_true(d->mem_total > 0);
    assert_true(strlen(d->name) > 0);
    char name[8] = "";
    for (int i = 0; i < 4 && d->name[i]; i++) /* part of the name, upper case */
        name[i] = (char)(d->name[i] >= 'a' && d->name[i] <= 'z' ? d->name[i] - 32 : d->name[i]);
    device_close(d);
    char spec[64], err[DEVICE_ERR];
    const char *good[] = {"opencl:0", "opencl:0.0", spec};
    snprintf(spec, sizeof spec, "opencl:%s", name);
    for (int i = 0; i < 3; i++) {
        device *e = device_open(good[i], err, sizeof err);
        if (!e)
            fail_msg("%s: %s", good[i], err);
        device_close(e);
    }
    const char *bad[] = {"opencl:99", "opencl:7.0", "opencl:0.9", "opencl:no such device"};
    for (int i = 0; i < 4; i++) {
        assert_null(device_open(bad[i], err, sizeof err));
        assert_non_null(strstr(err, "this machine has"));
    }
    device_info info[16];
    int n = device_list(info, 16), found = 0;
    for (int i = 0; i < n; i++)
        found += strncmp(info[i].spec, "opencl:", 7) == 0;
    assert_true(found >= 1);
}

/* float, double and int32 round trips through views at odd offsets; zero and copy on views */
static void test_transfers(void **state)
{
    device *d = open_or_skip("opencl");
    dten a = device_alloc(d, 101, DT_REAL), t = device_alloc(d, 9, DT_I32);
    assert_non_null(a.buf);
    assert_true(d->mem_current >= 101 * 4 + 9 * 4);
    double x[101], y[101];
    for (int i = 0; i < 101; i++)
        x[i] = i * 0.5 - 7;
    d->ops->upload_f64(d, a, x);
    d->ops->zero(d, dten_view(a, 3, 5));
    d->ops->copy(d, dten_view(a, 50, 20), dten_view(a, 10, 20));    /* disjoint */
    d->ops->copy(d, dten_view(a, 80, 10), dten_view(a, 75, 10));    /* overlapping */
    d->ops->download_f64(d, y, a);
    assert_null(device_error(d));
    for (int i = 0; i < 101; i++) {
        double want = i >= 3 && i < 8 ? 0 : i >= 50 && i < 70 ? x[i - 40] : i >= 80 && i < 90 ? x[i - 5] : x[i];
        if (y[i] != want)
            fail_msg("element %d: %g, want %g", i, y[i], want);
    }
    int32_t ids[9] = {5, -3, 0, 2147483647, 7, 8, 9, 10, -2147483647}, back[9];
    d->ops->upload_i32(d, t, ids);
    d->ops->download_i32(d, back, t);
    assert_memory_equal(ids, back, sizeof ids);
    assert_int_equal(d->ops->mem_used(d), d->mem_current);
    device_free(d, a);
    device_free(d, t);
    assert_int_equal(d->mem_current, 0);
    device_close(d);
}

/* a view past its buffer and a DT_I32 where a real belongs: errors naming op and tensor */
static void test_argument_errors(void **state)
{
    device *d = open_or_skip("opencl");
    dten a = device_alloc(d, 10, DT_REAL), t = device_alloc(d, 10, DT_I32);
    d->ops->gelu_forward(d, a, a, 11);
    expect_error(d, "opencl: gelu_forward: first tensor has 10 elements, the op needs 11");
    device_free(d, a);
    device_free(d, t);
    device_close(d);
    d = open_or_skip("opencl");
    a = device_alloc(d, 10, DT_REAL);
    t = device_alloc(d, 10, DT_I32);
    d->ops->add(d, a, t, a, 10);
    expect_error(d, "opencl: add: second tensor must be DT_REAL");
    d->ops->scale(d, a, 2, 10); /* a no-op now: the first error stays */
    expect_error(d, "add");
    float back[10]; /* downloads still read after the error, for inspection */
    d->ops->download(d, back, a);
    for (int i = 0; i < 10; i++)
        assert_float_equal(back[i], 0, 0);
    device_free(d, a);
    device_free(d, t);
    device_close(d);
    /* the decoder ops' own checks: an odd head size, a short rstd */
    d = open_or_skip("opencl");
    a = device_alloc(d, 10, DT_REAL);
    d->ops->rope_forward(d, a, a, a, a, 1, 1, 2, 5);
    expect_error(d, "opencl: rope_forward: head size hs=5 is odd");
    device_free(d, a);
    device_close(d);
    d = open_or_skip("opencl");
    a = device_alloc(d, 10, DT_REAL);
    d->ops->rmsnorm_forward(d, a, dten_view(a, 0, 1), a, a, 2, 5, 1e-6);
    expect_error(d, "opencl: rmsnorm_forward: rstd");
    device_free(d, a);
    device_close(d);
    /* a gather id outside the table is caught on the device, naming the op */
    d = open_or_skip("opencl");
    a = device_alloc(d, 10, DT_REAL);
    t = device_alloc(d, 2, DT_I32);
    d->ops->upload_i32(d, t, (const int32_t[]){1, 5});
    d->ops->gather_rows_forward(d, dten_view(a, 0, 4), dten_view(a, 4, 6), t, 2, 3, 2);
    d->ops->download(d, back, a);
    expect_error(d, "gather_rows_forward: an id is outside the rows of inp");
    device_free(d, a);
    device_free(d, t);
    device_close(d);
}

/* a token id outside wte's rows is caught on the device and reported at the next sync */
static void test_bad_token(void **state)
{
    device *d = open_or_skip("opencl");
    int B = 1, T = 3, C = 4, V = 5;
    dten out = device_alloc(d, (size_t)B * T * C, DT_REAL), tok = device_alloc(d, 3, DT_I32);
    dten wte = device_alloc(d, (size_t)V * C, DT_REAL), wpe = device_alloc(d, (size_t)T * C, DT_REAL);
    int32_t ids[3] = {1, 5, 2};
    d->ops->upload_i32(d, tok, ids);
    d->ops->embedding_forward(d, out, tok, wte, wpe, B, T, C);
    d->ops->synchronize(d);
    expect_error(d, "embedding_forward: a token id is outside the rows of wte");
    dten all[] = {out, tok, wte, wpe};
    for (int i = 0; i < 4; i++)
        device_free(d, all[i]);
    device_close(d);
}

/* a token type outside wtt's rows is caught on the device, forward and backward */
static void test_bad_token_type(void **state)
{
    int B = 1, T = 3, C = 4, V = 5;
    int32_t ids[3] = {1, 4, 2}, types[3] = {0, 2, 1}; /* wtt has 2 rows */
    for (int backward = 0; backward < 2; backward++) {
        device *d = open_or_skip("opencl");
        dten out = device_alloc(d, (size_t)B * T * C, DT_REAL);
        dten tok = device_alloc(d, 3, DT_I32), typ = device_alloc(d, 3, DT_I32);
        dten wte = device_alloc(d, (size_t)V * C, DT_REAL);
        dten wpe = device_alloc(d, (size_t)T * C, DT_REAL), wtt = device_alloc(d, 2 * C, DT_REAL);
        d->ops->upload_i32(d, tok, ids);
        d->ops->upload_i32(d, typ, types);
        if (backward)
            d->ops->embedding_tt_backward(d, wte, wpe, wtt, out, tok, typ, B, T, C);
        else
            d->ops->embedding_tt_forward(d, out, tok, typ, wte, wpe, wtt, B, T, C);
        d->ops->synchronize(d);
        expect_error(d, backward ? "embedding_tt_backward: a token type id is outside the rows "
                                   "of dwtt"
                                 : "embedding_tt_forward: a token type id is outside the rows "
                                   "of wtt");
        dten all[] = {out, tok, typ, wte, wpe, wtt};
        for (int i = 0; i < 6; i++)
            device_free(d, all[i]);
        device_close(d);
    }
}

/* dropout on opencl and cpu: the same mask and the same outputs bit for bit (views at odd
 * offsets, n not a multiple of 4), forward and backward */
static void dropout_on(const char *spec, double p, int n, const float *x, int32_t *mask,
                       float *out, float *grad)
{
    char err[DEVICE_ERR];
    device *d = strcmp(spec, "opencl") == 0 ? open_or_skip(spec)
                                            : device_open(spec, err, sizeof err);
    assert_non_null(d);
    dten a = device_alloc(d, (size_t)n + 3, DT_REAL), m = device_alloc(d, (size_t)n + 1, DT_I32);
    dten g = device_alloc(d, (size_t)n + 5, DT_REAL);
    dten xv = dten_view(a, 3, (size_t)n), mv = dten_view(m, 1, (size_t)n);
    dten gv = dten_view(g, 5, (size_t)n);
    d->ops->upload(d, xv, x);
    d->ops->upload(d, gv, x);
    d->ops->dropout_forward(d, xv, mv, xv, n, p, 0xfeedbeefcafeULL, 12345, 11, 3); /* in place */
    d->ops->dropout_backward(d, gv, xv, n, p, 0xfeedbeefcafeULL, 12345, 11, 3);
    d->ops->download(d, out, xv);
    d->ops->download(d, grad, gv);
    d->ops->download_i32(d, mask, mv);
    assert_null(device_error(d));
    device_free(d, a);
    device_free(d, m);
    device_free(d, g);
    device_close(d);
}

static void test_dropout_matches_cpu(void **state)
{
    const int n = 100003;
    float *x = malloc(n * sizeof *x), *o1 = malloc(n * sizeof *x), *o2 = malloc(n * sizeof *x);
    float *g1 = malloc(n * sizeof *x), *g2 = malloc(n * sizeof *x);
    int32_t *m1 = malloc(n * sizeof *m1), *m2 = malloc(n * sizeof *m2);
    assert_true(x && o1 && o2 && g1 && g2 && m1 && m2);
    uint64_t seed = 9;
    for (int i = 0; i < n; i++)
        x[i] = (float)tu_uniform(&seed, -2, 2);
    const double ps[] = {0.1, 0.37, 0};
    for (int k = 0; k < 3; k++) {
        dropout_on("opencl", ps[k], n, x, m1, o1, g1);
        dropout_on("cpu", ps[k], n, x, m2, o2, g2);
        assert_memory_equal(m1, m2, n * sizeof *m1);
        assert_memory_equal(o1, o2, n * sizeof *o1);
        assert_memory_equal(g1, g2, n * sizeof *g1);
        long kept = 0;
        for (int i = 0; i < n; i++)
            kept += m1[i];
        double sd = sqrt(n * ps[k] * (1 - ps[k]));
        assert_true(fabs(kept - n * (1 - ps[k])) <= 5 * sd);
        if (ps[k] == 0)
            assert_memory_equal(o1, x, n * sizeof *x);
    }
    free(x), free(o1), free(o2), free(g1), free(g2), free(m1), free(m2);
}

/* ---- attention-probability dropout: opencl against cpu -------------------------------------- */

enum { AB = 3, AT = 6, AC = 16, ANH = 2, AHS = AC / ANH, AQKV = AB * AT * 3 * AC,
       AOUT = AB * AT * AC, AATT = AB * ANH * AT * AT };

typedef struct {
    float qkv[AQKV], dout[AOUT];
    int32_t km[AB * AT];
    int causal;
} adrop_in;

typedef struct {
    float out[AOUT], att[AATT], dqkv[AQKV];
} adrop_out;

/* forward and backward of the masked attention with dropout on one device (views at odd
 * offsets, dqkv starting from zero) */
static void adrop_run(const char *spec, const adrop_in *in, const attn_dropout *drop,
                      adrop_out *o)
{
    char err[DEVICE_ERR];
    device *d = strcmp(spec, "opencl") == 0 ? open_or_skip(spec)
                                            : device_open(spec, err, sizeof err);
    assert_non_null(d);
    dten buf = device_alloc(d, 1 + 2 * AQKV + 2 * AOUT + 2 * AATT, DT_REAL);
    dten kmb = device_alloc(d, 1 + AB * AT, DT_I32);
    assert_true(buf.buf && kmb.buf);
    dten qkv = dten_view(buf, 1, AQKV), dqkv = dten_view(buf, 1 + AQKV, AQKV);
    dten out = dten_view(buf, 1 + 2 * AQKV, AOUT), dout = dten_view(buf, 1 + 2 * AQKV + AOUT, AOUT);
    dten att = dten_view(buf, 1 + 2 * AQKV + 2 * AOUT, AATT);
    dten sc = dten_view(buf, 1 + 2 * AQKV + 2 * AOUT + AATT, AATT);
    dten km = dten_view(kmb, 1, AB * AT);
    d->ops->upload(d, qkv, in->qkv);
    d->ops->upload(d, dout, in->dout);
    d->ops->upload_i32(d, km, in->km);
    d->ops->zero(d, dqkv);
    d->ops->attention_masked_forward(d, out, att, qkv, km, AB, AT, AC, ANH, in->causal, drop);
    d->ops->attention_masked_backward(d, dqkv, sc, dout, qkv, att, km, AB, AT, AC, ANH,
                                      in->causal, drop);
    d->ops->download(d, o->out, out);
    d->ops->download(d, o->att, att);
    d->ops->download(d, o->dqkv, dqkv);
    assert_null(device_error(d));
    device_free(d, buf);
    device_free(d, kmb);
    device_close(d);
}

/* the zero patterns equal exactly and the values within NMSE 1e-10 (the contraction class) */
static void assert_same_zeros_nmse(const float *a, const float *b, int n, const char *what)
{
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        if ((a[i] == 0) != (b[i] == 0))
            fail_msg("%s[%d]: opencl %g, cpu %g: zero patterns differ", what, i, a[i], b[i]);
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    if (num > 1e-10 * den)
        fail_msg("%s: NMSE %g over 1e-10", what, den > 0 ? num / den : num);
}

/* Inputs: random q and k, a key mask with padding (sequence 1 all padding); v one-hot (value
 * s of head h is channel h*hs + s, hs >= T) so out[b,t,h*hs+s] is the dropped probability
 * att_d[b,h,t,s] exactly, its zeros the mask; or v random for the gradients. */
static void adrop_init(adrop_in *in, int causal, int onehot_v)
{
    uint64_t st = 77 + (uint64_t)causal + 2 * (uint64_t)onehot_v;
    for (int i = 0; i < AQKV; i++) {
        int c = i % (3 * AC);
        in->qkv[i] = (float)tu_uniform(&st, -1.5, 1.5);
        if (onehot_v && c >= 2 * AC)
            in->qkv[i] = (float)((c - 2 * AC) % AHS == (i / (3 * AC)) % AT);
    }
    for (int i = 0; i < AOUT; i++)
        in->dout[i] = (float)tu_uniform(&st, -1, 1);
    for (int i = 0; i < AB * AT; i++)
        in->km[i] = i / AT == 1 ? 0 : tu_uniform(&st, 0, 1) >= 0.3;
    in->causal = causal;
}

static void test_attention_dropout_matches_cpu(void **state)
{
    static adrop_in in;
    static adrop_out o1, o2;
    const attn_dropout drop = {0.1, 0x5eed5eed5eedULL, 42, 3};
    long dropped = 0;
    for (int causal = 0; causal < 2; causal++)
        for (int onehot = 0; onehot < 2; onehot++) {
            adrop_init(&in, causal, onehot);
            adrop_run("opencl", &in, &drop, &o1);
            adrop_run("cpu", &in, &drop, &o2);
            assert_same_zeros_nmse(o1.out, o2.out, AOUT, "out");
            assert_same_zeros_nmse(o1.att, o2.att, AATT, "att");
            assert_same_zeros_nmse(o1.dqkv, o2.dqkv, AQKV, "dqkv");
            if (!onehot)
                continue;
            /* out holds att_d: zero exactly where philox.h drops a visible probability */
            uint64_t thr = philox_dropout_threshold(drop.p);
            for (int b = 0; b < AB; b++)
                for (int h = 0; h < ANH; h++)
                    for (int t = 0; t < AT; t++)
                        for (int s = 0; s < AT; s++) {
                            size_t i = (((size_t)b * ANH + h) * AT + t) * AT + s;
                            int seen = o2.att[i] != 0;
                            int keep = philox_dropout_keep(drop.seed, drop.step, drop.layer,
                                                           DROPOUT_SITE_ATTN_PROBS, i, thr);
                            float got = o1.out[((size_t)b * AT + t) * AC + h * AHS + s];
                            if ((got != 0) != (seen && keep))
                                fail_msg("att_d[%zu] = %g: seen %d keep %d", i, got, seen, keep);
                            dropped += seen && !keep;
                        }
        }
    assert_true(dropped > 0); /* the mask dropped something, so the test can fail */
}

/* an allocation larger than the device allows fails with the CL limit named */
static void test_huge_alloc(void **state)
{
    device *d = open_or_skip("opencl");
    dten a = device_alloc(d, (size_t)1 << 40, DT_REAL);
    assert_null(a.buf);
    expect_error(d, "opencl: alloc:");
    assert_int_equal(d->mem_current, 0);
    device_close(d);
}

/* sums repeat bit for bit, at sizes that are not multiples of a work-group */
static void test_reductions_repeat(void **state)
{
    device *d = open_or_skip("opencl");
    size_t n = 100003;
    float *x = malloc(n * sizeof *x);
    uint64_t seed = 3;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)tu_uniform(&seed, -1, 1);
    dten a = device_alloc(d, n + 1, DT_REAL);
    d->ops->upload(d, dten_view(a, 1, n), x);
    double s1 = d->ops->sum(d, dten_view(a, 1, n), (int)n);
    double q1 = d->ops->sumsq(d, dten_view(a, 1, n), (int)n);
    double s2 = d->ops->sum(d, dten_view(a, 1, n), (int)n);
    double q2 = d->ops->sumsq(d, dten_view(a, 1, n), (int)n);
    double s = 0, q = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i], q += (double)x[i] * x[i];
    assert_memory_equal(&s1, &s2, sizeof s1);
    assert_memory_equal(&q1, &q2, sizeof q1);
    assert_float_equal(s1, s, 1e-9 * q);
    assert_float_equal(q1, q, 1e-9 * q);
    assert_float_equal(d->ops->sum(d, dten_view(a, 1, 0), 0), 0, 0);
    assert_null(device_error(d));
    device_free(d, a);
    free(x);
    device_close(d);
}

/* with timing on, an op's span on the device is known */
static void test_timing(void **state)
{
#ifdef HARNESS_OPENCL
    device *d = open_or_skip("opencl");
    dten a = device_alloc(d, 4096, DT_REAL);
    opencl_set_timing(d, 1);
    d->ops->scale(d, a, 0.5, 4096);
    double ns = opencl_last_op_ns(d);
    assert_true(ns > 0 && ns < 1e10);
    d->ops->gemm(d, 0, 0, 16, 16, 16, 1, a, 16, 0, a, 16, 0, 0, dten_view(a, 512, 256), 16, 0, 1);
    assert_true(opencl_last_op_ns(d) > 0);
    opencl_set_timing(d, 0);
    assert_null(device_error(d));
    device_free(d, a);
    device_close(d);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_specs),
        cmocka_unit_test(test_transfers),
        cmocka_unit_test(test_argument_errors),
        cmocka_unit_test(test_bad_token),
        cmocka_unit_test(test_bad_token_type),
        cmocka_unit_test(test_dropout_matches_cpu),
        cmocka_unit_test(test_attention_dropout_matches_cpu),
        cmocka_unit_test(test_huge_alloc),
        cmocka_unit_test(test_reductions_repeat),
        cmocka_unit_test(test_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
