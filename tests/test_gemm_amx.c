/* tests/test_gemm_amx.c: the cpu gemm op on AMX tiles (bf16x6 splits) gives fp32 accuracy on every
 * transpose, edge, stride and beta, the same bits at any thread count, and keeps non-finite values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_gemm_amx.h"
#include "device.h"

/* one product: op(A) M x K, op(B) K x N, leading dimensions past the minimum by `pad` */
typedef struct {
    int ta, tb, M, N, K, pad;
    double beta;
} shape;

/* sides from the smallest AMX takes to several column panels, edges that are not whole tiles */
static const shape SHAPES[] = {
    {0, 0, 128, 128, 128, 0, 0},  {0, 1, 130, 200, 129, 3, 1},    {1, 0, 257, 128, 300, 16, 0.5},
    {1, 1, 128, 145, 1000, 1, 0}, {0, 0, 160, 1100, 140, 0, 1},   {1, 0, 1024, 256, 256, 0, 1},
    {0, 1, 200, 300, 555, 7, 0},  {1, 1, 333, 129, 130, 0, 0.25},
};

typedef struct {
    float *a, *b, *c;
    int lda, ldb, ldc;
    size_t na, nb, nc;
} operands;

static void make_operands(const shape *s, operands *o, int integers)
{
    o->lda = (s->ta ? s->M : s->K) + s->pad;
    o->ldb = (s->tb ? s->K : s->N) + s->pad;
    o->ldc = s->N + s->pad;
    o->na = (size_t)(s->ta ? s->K : s->M) * o->lda;
    o->nb = (size_t)(s->tb ? s->N : s->K) * o->ldb;
    o->nc = (size_t)s->M * o->ldc;
    o->a = malloc(o->na * sizeof *o->a);
    o->b = malloc(o->nb * sizeof *o->b);
    o->c = malloc(o->nc * sizeof *o->c);
    assert_true(o->a && o->b && o->c);
    uint64_t x = 88172645463325252ull; /* xorshift: reproducible, not linked to the harness */
    for (size_t i = 0; i < o->na + o->nb + o->nc; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0 - 0.5; /* [-0.5, 0.5) */
        float v = integers ? (float)(int)(u * 16) : (float)(u * (1 + (i % 7)));
        if (i < o->na)
            o->a[i] = v;
        else if (i < o->na + o->nb)
            o->b[i - o->na] = v;
        else
            o->c[i - o->na - o->nb] = s->beta == 0 ? NAN : v; /* beta 0: C must not be read */
    }
}

static void free_operands(operands *o)
{
    free(o->a);
    free(o->b);
    free(o->c);
}

/* C = beta C + op(A) op(B) through the cpu device's gemm op; returns C (caller frees) */
static float *run_gemm(const shape *s, const operands *o)
{
    char err[256];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    dten a = device_alloc(d, o->na, DT_REAL), b = device_alloc(d, o->nb, DT_REAL);
    dten c = device_alloc(d, o->nc, DT_REAL);
    assert_true(a.buf && b.buf && c.buf);
    d->ops->upload(d, a, o->a);
    d->ops->upload(d, b, o->b);
    d->ops->upload(d, c, o->c);
    d->ops->gemm(d, s->ta, s->tb, s->M, s->N, s->K, 1.0, a, o->lda, 0, b, o->ldb, 0, s->beta, c,
                 o->ldc, 0, 1);
    assert_false(device_error(d));
    float *got = malloc(o->nc * sizeof *got);
    assert_non_null(got);
    d->ops->download(d, got, c);
    device_free(d, a);
    device_free(d, b);
    device_free(d, c);
    device_close(d);
    return got;
}

/* the exact sum in double of element (i, j) (the old C as given) */
static double reference(const shape *s, const operands *o, int i, int j)
{
    double sum = 0;
    for (int k = 0; k < s->K; k++) {
        double x = s->ta ? o->a[(size_t)k * o->lda + i] : o->a[(size_t)i * o->lda + k];
        double y = s->tb ? o->b[(size_t)j * o->ldb + k] : o->b[(size_t)k * o->ldb + j];
        sum += x * y;
    }
    return s->beta == 0 ? sum : s->beta * o->c[(size_t)i * o->ldc + j] + sum;
}

static void skip_without_amx(void)
{
    if (!cpu_amx_ready()) {
        print_message("this machine (or HARNESS_CPU_AMX=0) runs no AMX: nothing to check\n");
        skip();
    }
}

/* every element of got (shape n of SHAPES, run as `where` says) equal to the exact sum */
static void assert_exact(size_t n, const shape *s, const operands *o, const float *got,
                         const char *where)
{
    for (int i = 0; i < s->M; i++)
        for (int j = 0; j < s->N; j++)
            if (got[(size_t)i * o->ldc + j] != (float)reference(s, o, i, j))
                fail_msg("shape %zu (%c%c %dx%dx%d)%s: C[%d][%d] %.9g, want %.9g", n,
                         s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->M, s->N, s->K, where, i, j,
                         got[(size_t)i * o->ldc + j], reference(s, o, i, j));
}

/* small integers are bf16 values and their sums exact in fp32: every element must come out
 * exactly, so a tile, pair or transpose put in the wrong place cannot hide in a tolerance */
static void test_amx_exact_on_integers(void **state)
{
    (void)state;
    skip_without_amx();
    for (size_t n = 0; n < sizeof SHAPES / sizeof SHAPES[0]; n++) {
        const shape *s = &SHAPES[n];
        operands o;
        make_operands(s, &o, 1);
        float *got = run_gemm(s, &o);
        assert_exact(n, s, &o, got, "");
        for (int i = 0; i < s->M; i++) /* the padding of C's rows untouched */
            for (int j = s->N; j < o.ldc; j++)
                assert_memory_equal(&got[(size_t)i * o.ldc + j], &o.c[(size_t)i * o.ldc + j],
                                    sizeof(float));
        free(got);
        free_operands(&o);
    }
}

/* real values: the normalized squared error against double at fp32's level (sgemm here: about
 * 1e-13; three bf16 products instead of six would give about 1e-10) */
static void test_amx_fp32_accuracy(void **state)
{
    (void)state;
    skip_without_amx();
    for (size_t n = 0; n < sizeof SHAPES / sizeof SHAPES[0]; n++) {
        const shape *s = &SHAPES[n];
        operands o;
        make_operands(s, &o, 0);
        float *got = run_gemm(s, &o);
        double err = 0, norm = 0;
        for (int i = 0; i < s->M; i++)
            for (int j = 0; j < s->N; j++) {
                double want = reference(s, &o, i, j), e = got[(size_t)i * o.ldc + j] - want;
                err += e * e;
                norm += want * want;
            }
        if (!(err / norm < 1e-12))
            fail_msg("shape %zu (%c%c %dx%dx%d beta %g): NMSE %.3g against double", n,
                     s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->M, s->N, s->K, s->beta,
                     err / norm);
        free(got);
        free_operands(&o);
    }
}

/* the same bits at 1, 2 and 3 threads */
static void test_amx_same_bits_any_threads(void **state)
{
    (void)state;
    skip_without_amx();
    const shape *s = &SHAPES[6];
    operands o;
    make_operands(s, &o, 0);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    float *one = run_gemm(s, &o);
    for (int t = 2; t <= 3; t++) {
        omp_set_num_threads(t);
        float *more = run_gemm(s, &o);
        assert_memory_equal(one, more, o.nc * sizeof *one);
        free(more);
    }
    omp_set_num_threads(saved);
    free(one);
    free_operands(&o);
}

/* a product asked for from inside a parallel region (a team of one, while the thread count
 * says 2): still exact on integers, every shape (the split plan's panels are per thread; a team
 * cut short runs the shared way in the full ones) */
static void test_amx_team_cut_short(void **state)
{
    (void)state;
    skip_without_amx();
    int saved = omp_get_max_threads(), levels = omp_get_max_active_levels();
    omp_set_num_threads(2);
    omp_set_max_active_levels(1);
    for (size_t n = 0; n < sizeof SHAPES / sizeof SHAPES[0]; n++) {
        const shape *s = &SHAPES[n];
        operands o;
        make_operands(s, &o, 1);
        float *got = NULL;
#pragma omp parallel num_threads(2)
        {
#pragma omp master
            got = run_gemm(s, &o);
        }
        assert_exact(n, s, &o, got, " in a team of one");
        free(got);
        free_operands(&o);
    }
    omp_set_max_active_levels(levels);
    omp_set_num_threads(saved);
}

/* a NaN or Inf in A makes its row of C non-finite; finite rows stay finite */
static void test_amx_non_finite_inputs(void **state)
{
    (void)state;
    skip_without_amx();
    const shape s = {0, 0, 128, 144, 160, 0, 0};
    operands o;
    make_operands(&s, &o, 0);
    o.a[5 * o.lda + 17] = NAN;
    o.a[70 * o.lda + 159] = INFINITY;
    float *got = run_gemm(&s, &o);
    for (int i = 0; i < s.M; i++)
        for (int j = 0; j < s.N; j++) {
            int finite = isfinite(got[(size_t)i * o.ldc + j]);
            if (finite != (i != 5 && i != 70))
                fail_msg("C[%d][%d] = %g", i, j, got[(size_t)i * o.ldc + j]);
        }
    free(got);
    free_operands(&o);
}

/* subnormal inputs (a gradient's underflowing tail: 1.4e-43 in a BERT step) stay tiny: a split
 * part's bits below bf16's once reached the pair's other term and gave 4e35 */
static void test_amx_subnormal_inputs(void **state)
{
    (void)state;
    skip_without_amx();
    const shape s = {0, 0, 128, 384, 1536, 0, 0};
    operands o;
    make_operands(&s, &o, 0);
    const float tiny[] = {1.4e-43f, -1.0e-40f, 3.0e-39f, 1.1754942e-38f, -7.0e-45f};
    for (size_t i = 0; i < o.na; i += 97)
        o.a[i] = tiny[i % 5];
    for (size_t i = 0; i < o.nb; i += 89)
        o.b[i] = tiny[(i + 2) % 5];
    float *got = run_gemm(&s, &o);
    double err = 0, norm = 0;
    for (int i = 0; i < s.M; i++)
        for (int j = 0; j < s.N; j++) {
            double want = reference(&s, &o, i, j), e = got[(size_t)i * o.ldc + j] - want;
            err += e * e;
            norm += want * want;
        }
    if (!(err / norm < 1e-12))
        fail_msg("subnormal inputs: NMSE %.3g against double", err / norm);
    free(got);
    free_operands(&o);
}

/* the device names the AMX path in its library line when it takes it */
static void test_amx_named(void **state)
{
    (void)state;
    skip_without_amx();
    char err[256];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    assert_non_null(strstr(d->runtime_version, "AMX"));
    device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amx_exact_on_integers),
        cmocka_unit_test(test_amx_fp32_accuracy),
        cmocka_unit_test(test_amx_same_bits_any_threads),
        cmocka_unit_test(test_amx_team_cut_short),
        cmocka_unit_test(test_amx_non_finite_inputs),
        cmocka_unit_test(test_amx_subnormal_inputs),
        cmocka_unit_test(test_amx_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
