/* tests/test_gemm_signals.c: the cpu gemm op keeps the heap whole and its results right while a
 * signal handler runs every few microseconds (oneDNN 2.6.3's sgemm corrupted the heap then). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "device.h"

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
    (void)sig;
    handled++;
}

/* one shape of the linear layers, forward and backward: op(A) M x K, op(B) K x N */
typedef struct {
    int transA, transB, M, N, K;
    double beta;
} gemm_shape;

static const gemm_shape SHAPES[] = {
    {0, 0, 256, 384, 128, 0}, {0, 1, 256, 128, 384, 0}, {1, 0, 128, 384, 256, 1},
    {0, 0, 64, 64, 64, 0},    {1, 0, 64, 192, 512, 1},  {0, 1, 300, 64, 96, 0},
};

/* max |C - reference| / (1 + |reference|) of one shape, C computed `reps` times under the timer
 * (beta = 1 accumulates: the reference scales with the repetitions) */
static double run_shape(device *d, const gemm_shape *s, int reps)
{
    size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
    float *ha = malloc(na * sizeof *ha), *hb = malloc(nb * sizeof *hb), *hc = calloc(nc, sizeof *hc);
    assert_non_null(ha);
    assert_non_null(hb);
    assert_non_null(hc);
    for (size_t i = 0; i < na; i++)
        ha[i] = (float)((int)(i * 7 % 13) - 6) / 8.0f;
    for (size_t i = 0; i < nb; i++)
        hb[i] = (float)((int)(i * 5 % 11) - 5) / 4.0f;
    dten a = device_alloc(d, na, DT_REAL), b = device_alloc(d, nb, DT_REAL);
    dten c = device_alloc(d, nc, DT_REAL);
    assert_non_null(a.buf);
    assert_non_null(b.buf);
    assert_non_null(c.buf);
    d->ops->upload(d, a, ha);
    d->ops->upload(d, b, hb);
    d->ops->upload(d, c, hc);
    int lda = s->transA ? s->M : s->K, ldb = s->transB ? s->K : s->N;
    for (int r = 0; r < reps; r++)
        d->ops->gemm(d, s->transA, s->transB, s->M, s->N, s->K, 1.0, a, lda, 0, b, ldb, 0, s->beta,
                     c, s->N, 0, 1);
    assert_false(device_error(d));
    d->ops->download(d, hc, c);
    double worst = 0, times = s->beta != 0 ? reps : 1;
    for (int i = 0; i < s->M; i++)
        for (int j = 0; j < s->N; j++) {
            double want = 0;
            for (int k = 0; k < s->K; k++)
                want += (double)ha[s->transA ? (size_t)k * s->M + i : (size_t)i * s->K + k] *
                        hb[s->transB ? (size_t)j * s->K + k : (size_t)k * s->N + j];
            want *= times;
            double err = fabs(hc[(size_t)i * s->N + j] - want) / (1 + fabs(want));
            worst = err > worst ? err : worst;
        }
    device_free(d, a);
    device_free(d, b);
    device_free(d, c);
    free(ha);
    free(hb);
    free(hc);
    return worst;
}

static void test_gemm_under_signals(void **state)
{
    (void)state;
    char err[DEVICE_ERR];
    device *d = device_open("cpu", err, sizeof err);
    if (!d)
        fail_msg("device_open(cpu): %s", err);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
    struct itimerval every = {{0, 37}, {0, 37}}, off = {{0, 0}, {0, 0}};
    assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
    double worst = 0;
    for (int round = 0; round < 4; round++)
        for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
            double e = run_shape(d, &SHAPES[i], 60);
            worst = e > worst ? e : worst;
        }
    assert_int_equal(setitimer(ITIMER_REAL, &off, NULL), 0);
    assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
    device_close(d);
    print_message("%d signals handled, worst relative error %.3g\n", (int)handled, worst);
    assert_true(handled > 100); /* the timer really interrupted the GEMMs */
    assert_true(worst < 1e-5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gemm_under_signals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
