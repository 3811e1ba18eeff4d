/* tests/test_cpu_expf.c: the fp32 cpu device's exp (cpu_vexp in float, Cephes' polynomial in
 * plain arithmetic, so its loops vectorize) against double exp: within 1.5 ulp of the true
 * value (in the float's ulp) over its normal range, and its edges. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "cpu/cpu_simd.h"

/* got's error in units in the last place of the float nearest to want */
static double ulp_error(float got, double want)
{
    int e;
    frexp(want, &e);
    return fabs((double)got - want) / ldexp(1.0, e - 24);
}

/* the worst error over n points spread uniformly at random over [lo, hi) (a fixed seed) */
static double worst_over(double lo, double hi, int n, float *at)
{
    uint64_t seed = 0x9e3779b97f4a7c15u;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        float x = (float)(lo + (hi - lo) * ((double)(seed >> 11) / 9007199254740992.0));
        double err = ulp_error(cpu_vexp(x), exp((double)x));
        if (err > worst) {
            worst = err;
            *at = x;
        }
    }
    return worst;
}

static void within_ulps(void **state)
{
    (void)state;
    static const double ranges[][2] = {{-0.35, 0.35}, {-20, 20}, {-87.3, 88.7}};
    for (int r = 0; r < 3; r++) {
        float at = 0;
        double worst = worst_over(ranges[r][0], ranges[r][1], 2000000, &at);
        printf("expf over [%g, %g]: worst %.3f ulp at %.9g\n", ranges[r][0], ranges[r][1], worst,
               at);
        assert_true(worst <= 1.5);
    }
}

static void edges(void **state)
{
    (void)state;
    assert_true(cpu_vexp(0.0f) == 1.0f);
    assert_true(isnan(cpu_vexp(NAN)));
    assert_true(cpu_vexp(INFINITY) == INFINITY);
    assert_true(cpu_vexp(-INFINITY) == 0.0f);
    assert_true(cpu_vexp(89.0f) == INFINITY);
    assert_true(cpu_vexp(-88.0f) == 0.0f);
    assert_true(isfinite(cpu_vexp(88.7f)) && cpu_vexp(88.7f) > 3.0e38f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(within_ulps), cmocka_unit_test(edges)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
