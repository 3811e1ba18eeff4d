/* tests/test_cu_blas.c: the cuda backend's cuBLAS loader (devices/cuda/cu_blas.c) on a machine
 * with the CUDA libraries and no GPU: every function resolves; a missing library and a library
 * without cuBLAS's functions fail naming the path and what is missing. Skipped without cuda. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#if defined(HARNESS_CUDA) && !defined(HARNESS_MUSA)
#include "cu_blas.h"

static void test_loads_every_function(void **state)
{
    (void)state;
    char err[1024] = "";
    if (cu_blas_load(err, sizeof err))
        fail_msg("cu_blas_load: %s", err);
    void *fns[] = {(void *)cu_blas.create,        (void *)cu_blas.destroy,
                   (void *)cu_blas.set_stream,    (void *)cu_blas.set_workspace,
                   (void *)cu_blas.set_math_mode, (void *)cu_blas.status_string,
                   (void *)cu_blas.sgemm,         (void *)cu_blas.sgemm_strided_batched};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        assert_non_null(fns[i]);
    /* a call into the library that needs no GPU (cuBLAS 13: "the library was not initialized") */
    const char *s = cu_blas.status_string(CUBLAS_STATUS_NOT_INITIALIZED);
    assert_non_null(s);
    assert_non_null(strstr(s, "not initialized"));
    assert_int_equal(cu_blas_load(err, sizeof err), 0); /* once loaded, at once */
}

static void test_missing_library(void **state)
{
    (void)state;
    char err[1024] = "";
    assert_int_equal(cu_blas_load_from("/nonexistent/libcublas.so.13", err, sizeof err), 1);
    assert_non_null(strstr(err, "cannot load /nonexistent/libcublas.so.13 ("));
}

static void test_library_without_cublas(void **state)
{
    (void)state;
    char err[1024] = "";
    assert_int_equal(cu_blas_load_from("libm.so.6", err, sizeof err), 1);
    assert_non_null(strstr(err, "libm.so.6: no function cublasCreate_v2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_library),
        cmocka_unit_test(test_library_without_cublas),
        cmocka_unit_test(test_loads_every_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
static void test_no_cuda_backend(void **state)
{
    (void)state;
    skip(); /* this build has no cuda backend (or is a MUSA build, which links muBLAS) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_cuda_backend)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
