/* tests/test_cpu_exp.c: the golden device's exp (cpu_vexp of cpu64, plain arithmetic so its
 * loops vectorize) against long double expl: within 0.7 ulp where the result is a normal
 * number, 1 ulp in the subnormals, and its edges. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#define CPU_REAL_DOUBLE 1
#include "cpu/cpu_simd.h"

/* the error of got in units in the last place of the double nearest to want */
static double ulp_error(double got, long double want)
{
    double w = (double)want;
    if (w == 0)
        return got == 0 ? 0 : INFINITY;
    int e;
    frexp(w, &e);
    double ulp = ldexp(1.0, (e - 53 < -1074 ? -1074 : e - 53)); /* subnormals: the fixed step */
    return (double)fabsl((long double)got - want) / ulp;
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* the worst error over n points spread uniformly over [lo, hi] */
static double worst_over(double lo, double hi, int n, uint64_t seed, double *at)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double x = lo + (hi - lo) * ((double)(next_random(&seed) >> 11) / 9007199254740992.0);
        double err = ulp_error(cpu_vexp(x), expl((long double)x));
        if (err > worst) {
            worst = err;
            *at = x;
        }
    }
    return worst;
}

static void within_one_ulp(void **state)
{
    (void)state;
    static const double ranges[][2] = {{-0.35, 0.35}, {-20, 20},      {-708, 709.78},
                                       {-745.13, -708}, {700, 709.78}, {-1e-12, 1e-12}};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        double at = 0, worst = worst_over(ranges[r][0], ranges[r][1], 400000, 88172645463325252ull + r, &at);
        printf("exp over [%g, %g]: worst %.3f ulp at %.17g\n", ranges[r][0], ranges[r][1], worst, at);
        /* about 0.5 ulp plus the polynomial's rounding; a subnormal result is rounded twice
         * (e^r to 53 bits, then to the subnormal's fewer), so within 1 ulp of its fixed step */
        assert_true(worst <= (ranges[r][1] <= -708 ? 1.0 : 0.7));
    }
}

static void edges(void **state)
{
    (void)state;
    assert_true(cpu_vexp(0.0) == 1.0);
    assert_true(cpu_vexp(-0.0) == 1.0);
    assert_true(isnan(cpu_vexp(NAN)));
    assert_true(cpu_vexp(INFINITY) == INFINITY);
    assert_true(cpu_vexp(-INFINITY) == 0.0);
    assert_true(cpu_vexp(710.0) == INFINITY);
    assert_true(isfinite(cpu_vexp(709.78)) && cpu_vexp(709.78) > 1.7e308);
    assert_true(cpu_vexp(-746.0) == 0.0);
    double sub = cpu_vexp(-740.0); /* a subnormal result, rounded once */
    assert_true(sub > 0 && sub < 2.2250738585072014e-308);
    assert_true(ulp_error(sub, expl(-740.0L)) <= 1.0);
    assert_true(ulp_error(cpu_vexp(1.0), expl(1.0L)) <= 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(within_one_ulp), cmocka_unit_test(edges)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
