/* tests/test_lowp.c: bf16/fp16 rounding (ties to even, NaN, Inf, fp16 overflow and subnormals) against
 * values worked out from the IEEE formats, the lowp GEMM rule on cpu, opencl's bits, loss scaling. */
#include <float.h>
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
#include "lowp.h"
#include "testutil.h"
#include "train/train.h"

/* the bits of a float, so -0 and NaN compare as what they are */
static uint32_t bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

#define P2(e) ldexpf(1.0f, (e)) /* 2^e as a float, exact */

/* want, as a bf16 of x (the float bit path and the double definition both) */
static void bf16_is(float x, float want)
{
    float got = lowp_bf16_round(x);
    if (bits(got) != bits(want))
        fail_msg("bf16(%a) = %a, want %a", (double)x, (double)got, (double)want);
    assert_true(bits((float)lowp_round_double(x, LOWP_BF16)) == bits(want));
}

static void fp16_is(float x, float want)
{
    float got = lowp_fp16_round(x);
    if (bits(got) != bits(want))
        fail_msg("fp16(%a) = %a, want %a", (double)x, (double)got, (double)want);
    assert_true(bits((float)lowp_round_double(x, LOWP_FP16)) == bits(want));
}

/* bf16 keeps 8 significant bits: the ulp of [1, 2) is 2^-7, exponents as fp32's */
static void test_bf16_values(void **state)
{
    (void)state;
    bf16_is(1.0f, 1.0f);
    bf16_is(1 + P2(-8), 1.0f);                      /* tie: 1 (even) */
    bf16_is(1 + 3 * P2(-8), 1 + P2(-6));            /* tie: 1 + 2^-7 is odd, up */
    bf16_is(1 + P2(-8) + P2(-20), 1 + P2(-7));      /* above the tie */
    bf16_is(-(1 + P2(-8)), -1.0f);
    bf16_is(3.0f, 3.0f);
    float max = (2 - P2(-7)) * P2(127);            /* the largest finite bf16 */
    bf16_is(max, max);
    bf16_is((2 - P2(-7) + P2(-9)) * P2(127), max); /* below max + half an ulp */
    bf16_is((2 - P2(-7) + P2(-8)) * P2(127), INFINITY); /* tie past max: Inf */
    bf16_is(FLT_MAX, INFINITY);
    bf16_is(-FLT_MAX, -INFINITY);
    bf16_is(P2(-133), P2(-133));                    /* the smallest subnormal */
    bf16_is(P2(-134), 0.0f);                        /* tie: 0 */
    bf16_is(3 * P2(-134), P2(-132));                /* tie: up to the even 2 * 2^-133 */
    bf16_is(-P2(-134), -0.0f);
    bf16_is(-0.0f, -0.0f);
    bf16_is(INFINITY, INFINITY);
    bf16_is(-INFINITY, -INFINITY);
    assert_true(isnan(lowp_bf16_round(NAN)));
    /* a NaN whose payload lies in the dropped bits stays a NaN (not Inf) */
    uint32_t low_payload = 0x7f800001u;
    float snan;
    memcpy(&snan, &low_payload, sizeof snan);
    assert_true(isnan(lowp_bf16_round(snan)));
    assert_true(isnan(lowp_round_double(NAN, LOWP_BF16)));
}

/* fp16: 11 significant bits, normals from 2^-14, subnormals in steps of 2^-24, max 65504 */
static void test_fp16_values(void **state)
{
    (void)state;
    fp16_is(1 + P2(-11), 1.0f);               /* tie: 1 */
    fp16_is(1 + 3 * P2(-11), 1 + P2(-9));     /* tie: up to even */
    fp16_is(2049.0f, 2048.0f);                /* spacing 2 in [2048, 4096): tie to 2048 */
    fp16_is(2051.0f, 2052.0f);                /* tie: 2050 is odd, up */
    fp16_is(65504.0f, 65504.0f);
    fp16_is(65519.0f, 65504.0f);              /* below 65504 + 16 */
    fp16_is(65520.0f, INFINITY);              /* the tie past max: Inf */
    fp16_is(70000.0f, INFINITY);
    fp16_is(-70000.0f, -INFINITY);
    fp16_is(P2(-14), P2(-14));                /* the smallest normal */
    fp16_is(P2(-14) - P2(-25), P2(-14));      /* 1023.5 quanta: tie to 1024 */
    fp16_is(P2(-24), P2(-24));                /* the smallest subnormal */
    fp16_is(P2(-25), 0.0f);                   /* tie: 0 */
    fp16_is(3 * P2(-25), P2(-23));            /* tie: 1 quantum is odd, up to 2 */
    fp16_is(P2(-25) + P2(-30), P2(-24));      /* above the tie */
    fp16_is(5 * P2(-24), 5 * P2(-24));        /* a subnormal kept */
    fp16_is(-1e-8f, -0.0f);
    fp16_is(INFINITY, INFINITY);
    assert_true(isnan(lowp_fp16_round(NAN)));
    assert_true(isnan(lowp_round_double(NAN, LOWP_FP16)));
}

/* the float bit paths equal the definition on random bit patterns of every exponent */
static void test_float_paths_match_definition(void **state)
{
    (void)state;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 2000000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t b = (uint32_t)(s >> 32);
        float x;
        memcpy(&x, &b, sizeof x);
        if (isnan(x))
            continue;
        float a = lowp_bf16_round(x), h = lowp_fp16_round(x);
        if (bits(a) != bits((float)lowp_round_double(x, LOWP_BF16)))
            fail_msg("bf16 of bits %08x differ", (unsigned)b);
        if (bits(h) != bits((float)lowp_round_double(x, LOWP_FP16)))
            fail_msg("fp16 of bits %08x differ", (unsigned)b);
    }
}

/* cpu64 rounds its double straight to the format: no double rounding through fp32 */
static void test_double_rounds_once(void **state)
{
    (void)state;
    double x = 1 + ldexp(1, -8) + ldexp(1, -40); /* just above the bf16 tie */
    assert_true(lowp_round_double(x, LOWP_BF16) == 1 + ldexp(1, -7));
    assert_true(lowp_bf16_round((float)x) == 1.0f); /* through fp32 the excess is lost */
}

/* GradScaler's update: x2 after 2000 clean steps in a row, x0.5 and a new count on Inf/NaN */
static void test_loss_scaler(void **state)
{
    (void)state;
    loss_scaler ls = {LOSS_SCALE_INIT, 0};
    assert_true(ls.scale == 65536.0);
    for (int i = 0; i < 1999; i++)
        loss_scaler_update(&ls, 0);
    assert_true(ls.scale == 65536.0);
    loss_scaler_update(&ls, 0);
    assert_true(ls.scale == 131072.0);
    for (int i = 0; i < 1500; i++)
        loss_scaler_update(&ls, 0);
    loss_scaler_update(&ls, 1);
    assert_true(ls.scale == 65536.0);
    for (int i = 0; i < 1999; i++)
        loss_scaler_update(&ls, 0);
    assert_true(ls.scale == 65536.0); /* the count restarted at the skip */
    loss_scaler_update(&ls, 0);
    assert_true(ls.scale == 131072.0);
}

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

/* C (rows x ldc floats) = gemm of A [1,2] and B [2,1] into column 0 of row 0, the rest kept */
static void run_gemm(device *d, const float *a, const float *b, float *c, int nc, double beta)
{
    dten A = device_alloc(d, 2, DT_REAL), B = device_alloc(d, 2, DT_REAL);
    dten C = device_alloc(d, (size_t)nc, DT_REAL);
    assert_non_null(A.buf);
    d->ops->upload(d, A, a);
    d->ops->upload(d, B, b);
    d->ops->upload(d, C, c);
    d->ops->gemm(d, 0, 0, 1, 1, 2, 1.0, A, 2, 0, B, 1, 0, beta, C, 1, 0, 1);
    d->ops->download(d, c, C);
    assert_null(device_error(d));
    device_free(d, A);
    device_free(d, B);
    device_free(d, C);
}

/* autocast's matmul on one device: inputs rounded, product rounded, then beta C added in fp32 */
static void gemm_rule(const char *spec)
{
    device *d = open_or_skip(spec);
    char why[256];
    assert_int_equal(device_set_lowp(d, LOWP_BF16, why, sizeof why), 0);
    /* A rounds to [1, 1 + 2^-7], B to [3, 1 + 2^-7]: A B = 4 + 2^-6 + 2^-14, more than half of
     * the ulp 2^-5 of [4, 8) above 4: bf16 4 + 2^-5 */
    float a[2] = {1 + P2(-8), 1 + P2(-7)}, b[2] = {3, 1 + P2(-7)};
    float c[1] = {0.25f};
    run_gemm(d, a, b, c, 1, 1.0);
    assert_true(c[0] == 0.25f + 4 + P2(-5));
    c[0] = 7;
    run_gemm(d, a, b, c, 1, 0.0);
    assert_true(c[0] == 4 + P2(-5));
    /* fp16: 300 * 300 = 90000 overflows the product to Inf */
    assert_int_equal(device_set_lowp(d, LOWP_FP16, why, sizeof why), 0);
    float a16[2] = {300, 0}, b16[2] = {300, 0};
    run_gemm(d, a16, b16, c, 1, 0.0);
    assert_true(isinf(c[0]) && c[0] > 0);
    /* back to the backend's own gemm: no rounding */
    assert_int_equal(device_set_lowp(d, LOWP_NONE, why, sizeof why), 0);
    run_gemm(d, a, b, c, 1, 0.0);
    assert_true(c[0] == (1 + P2(-8)) * 3 + (1 + P2(-7)) * (1 + P2(-7)));
    device_close(d);
}

static void test_gemm_rule_cpu(void **state)
{
    (void)state;
    gemm_rule("cpu");
}

static void test_gemm_rule_opencl(void **state)
{
    (void)state;
    gemm_rule("opencl");
}

static void test_gemm_rule_cuda(void **state)
{
    (void)state;
    gemm_rule("cuda");
}

/* a C with a leading dimension wider than N: rows merged one by one, the gaps untouched */
static void test_gemm_strided_c(void **state)
{
    (void)state;
    device *d = open_or_skip("cpu");
    char why[64];
    assert_int_equal(device_set_lowp(d, LOWP_BF16, why, sizeof why), 0);
    float a[4] = {1 + P2(-8), 0, 0, 1}, b[4] = {1, 2, 3, 4}, c[6] = {1, 1, 9, 1, 1, 9};
    dten A = device_alloc(d, 4, DT_REAL), B = device_alloc(d, 4, DT_REAL);
    dten C = device_alloc(d, 6, DT_REAL);
    d->ops->upload(d, A, a);
    d->ops->upload(d, B, b);
    d->ops->upload(d, C, c);
    /* C[2,2] (ldc 3) += A[2,2] B[2,2]: A rounds to the identity */
    d->ops->gemm(d, 0, 0, 2, 2, 2, 1.0, A, 2, 0, B, 2, 0, 1.0, C, 3, 0, 1);
    d->ops->download(d, c, C);
    assert_null(device_error(d));
    float want[6] = {2, 3, 9, 4, 5, 9};
    for (int i = 0; i < 6; i++)
        assert_true(c[i] == want[i]);
    device_free(d, A);
    device_free(d, B);
    device_free(d, C);
    device_close(d);
}

/* operands too short for their shapes: a device error naming gemm and the operand, no scratch
 * written past a buffer */
static void test_gemm_bad_views(void **state)
{
    (void)state;
    device *d = open_or_skip("cpu");
    char why[64];
    assert_int_equal(device_set_lowp(d, LOWP_BF16, why, sizeof why), 0);
    dten A = device_alloc(d, 4, DT_REAL), B = device_alloc(d, 4, DT_REAL);
    dten C = device_alloc(d, 3, DT_REAL);
    d->ops->zero(d, A);
    d->ops->zero(d, B);
    d->ops->gemm(d, 0, 0, 2, 2, 2, 1.0, A, 2, 0, B, 2, 0, 0.0, C, 2, 0, 1);
    const char *e = device_error(d);
    assert_non_null(e);
    assert_non_null(strstr(e, "gemm"));
    assert_non_null(strstr(e, "C"));
    device_free(d, A);
    device_free(d, B);
    device_free(d, C);
    device_close(d);
}

/* a backend without round_lowp (as a plugin may be) is refused, naming it */
static void test_refused_without_rounding(void **state)
{
    (void)state;
    device *d = open_or_skip("cpu");
    void (*keep)(device *, dten, int, int) = d->round_lowp;
    d->round_lowp = NULL;
    char why[256] = "";
    assert_int_equal(device_set_lowp(d, LOWP_BF16, why, sizeof why), 1);
    assert_non_null(strstr(why, "round_lowp"));
    assert_true(d->lowp == LOWP_NONE);
    d->round_lowp = keep;
    device_close(d);
}

/* a GPU backend's lowp_round kernel gives the cpu's bits on specials and random patterns */
static void kernel_bits_equal_cpu(const char *spec)
{
    device *d = open_or_skip(spec);
    enum { N = 1 << 18 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, 65520.0f, 65519.0f,
                        P2(-134), 3 * P2(-134), P2(-25), 3 * P2(-25), P2(-14) - P2(-25),
                        1 + P2(-8), 1 + 3 * P2(-8), 2049.0f, 2051.0f};
    int ns = (int)(sizeof specials / sizeof specials[0]);
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t b = (uint32_t)(s >> 32);
        memcpy(&x[i], &b, sizeof b);
        if (i < ns)
            x[i] = specials[i];
    }
    dten t = device_alloc(d, N, DT_REAL);
    assert_non_null(t.buf);
    for (int mode = LOWP_BF16; mode <= LOWP_FP16; mode++) {
        d->ops->upload(d, t, x);
        d->round_lowp(d, t, N, mode);
        d->ops->download(d, y, t);
        assert_null(device_error(d));
        for (int i = 0; i < N; i++) {
            float want = lowp_round_float(x[i], (lowp_mode)mode);
            if (isnan(want) ? !isnan(y[i]) : bits(y[i]) != bits(want))
                fail_msg("%s of %08x: %s %08x, cpu %08x", lowp_mode_name((lowp_mode)mode),
                         (unsigned)bits(x[i]), spec, (unsigned)bits(y[i]),
                         (unsigned)bits(want));
        }
    }
    device_free(d, t);
    device_close(d);
    free(x);
    free(y);
}

static void test_opencl_bits_equal_cpu(void **state)
{
    (void)state;
    kernel_bits_equal_cpu("opencl");
}

/* skipped without a CUDA device (none in CI); on a GPU machine: ctest -R test_lowp */
static void test_cuda_bits_equal_cpu(void **state)
{
    (void)state;
    kernel_bits_equal_cpu("cuda");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_values),
        cmocka_unit_test(test_fp16_values),
        cmocka_unit_test(test_float_paths_match_definition),
        cmocka_unit_test(test_double_rounds_once),
        cmocka_unit_test(test_loss_scaler),
        cmocka_unit_test(test_gemm_rule_cpu),
        cmocka_unit_test(test_gemm_rule_opencl),
        cmocka_unit_test(test_gemm_strided_c),
        cmocka_unit_test(test_gemm_bad_views),
        cmocka_unit_test(test_refused_without_rounding),
        cmocka_unit_test(test_opencl_bits_equal_cpu),
        cmocka_unit_test(test_gemm_rule_cuda),
        cmocka_unit_test(test_cuda_bits_equal_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
