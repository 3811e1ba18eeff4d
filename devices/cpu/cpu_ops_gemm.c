/* devices/cpu/cpu_ops_gemm.c: the cpu backend's strided-batched GEMM (fp32: oneDNN's sgemm over
 * fixed output tiles; fp64 and builds without oneDNN: OpenBLAS) and the bias add and gradient. */
#define _POSIX_C_SOURCE 200809L /* pthread_sigmask */
#include "cpu_real.h"
#include "cpu_simd.h"
#include "blas_core.h"
#include "cpu_gemm_amx.h"

#include <cblas.h>
#include <stdio.h>

#if defined(CPU_HAVE_ONEDNN) && !defined(CPU_REAL_DOUBLE)
#define CPU_GEMM_ONEDNN 1
#include <dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#endif

/* The OpenBLAS path. OpenBLAS (0.3.21) splits a K above its GEMM_Q (320 for sgemm, 384 for
 * dgemm on this Zen) into blocks, the last two by halving what is left, and its single-thread
 * and threaded drivers round that half differently: a gemm with, say, K = 333 (an expert's rows)
 * gave other bits at 1 and 2 threads. So K is summed as a head of whole multiples of this many
 * terms (GEMM_Q being a multiple of 64, every block of the head, halves included, is a multiple
 * of 32 that both drivers leave as it is) and then the tail of fewer than this many (below
 * GEMM_Q: one block in both): the same bits at any thread count, for one more cblas call. */
#define CPU_GEMM_K_UNIT 256

/* C = beta * C, for the cases BLAS is not called (no product terms) */
static void gemm_scale_only(real *c, int M, int N, int ldc, long strideC, int batch, real beta)
{
    for (int i = 0; i < batch; i++)
        for (int r = 0; r < M; r++) {
            real *row = c + (size_t)i * strideC + (size_t)r * ldc;
            for (int j = 0; j < N; j++)
                row[j] = beta == 0 ? 0 : beta * row[j];
        }
}

#ifdef CPU_GEMM_ONEDNN
/* oneDNN's sgemm (about 15 % faster than OpenBLAS 0.3.21's on the linear layers' shapes here,
 * docs/benchmarks.md) splits K across its threads for some shapes, which would make the bits
 * depend on the thread count. So C is cut into tiles that depend on the shape and the machine
 * alone, and each tile is one single-threaded call: the tiles are shared out over the threads,
 * and every element's sum is the same at any thread count. C is halved along its longer side
 * until there are as many tiles as the machine has processors (at least 8, at most 64; the
 * processors online, not the threads in use nor the affinity: the same tiles whatever the
 * thread policy does) or a side would fall below the floor; the floor grows with K, since each
 * tile packs its own panels of A and B, which come from memory when K is long: fewer, larger
 * tiles then (measured: a 128-row tile of GPT-2's 50257-wide head ran at 250 GFLOP/s, a 512-row
 * one at 367). On 2 cores 8 tiles ran gpt2-small 2-3 % faster than 16 or 32; on 16 cores 16
 * tiles ran it 25 % faster than 8 (docs/benchmarks.md). */
#define CPU_GEMM_MIN_TILES 8
#define CPU_GEMM_MAX_TILES 64

/* the machine's processors online, 1 to CPU_GEMM_MAX_TILES */
static int cpu_gemm_procs(void)
{
    static int procs;
    if (!procs) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        procs = n < 1 ? 1 : n > CPU_GEMM_MAX_TILES ? CPU_GEMM_MAX_TILES : (int)n;
    }
    return procs;
}

static int cpu_gemm_tile_target(void)
{
    return cpu_gemm_procs() < CPU_GEMM_MIN_TILES ? CPU_GEMM_MIN_TILES : cpu_gemm_procs();
}

/* A long K over few tiles (GPT-2 124M's head gradient dlnf = dlogits . wte: 1024 x 768 over
 * 50257 terms, two tiles at the floor) would keep all but a few processors idle: K is then cut
 * into chunks of at least this many terms, as many as fill the processors, each chunk of each
 * tile one call, chunk 0 into C and the others into partial sums added to C in chunk order. The
 * chunks depend on the shape and the machine alone: the same bits at any thread count (other
 * bits than one call over K: the sum is associated per chunk). */
#define CPU_GEMM_MIN_CHUNK 1024

static int gemm_k_chunks(int tiles, int K)
{
    int procs = cpu_gemm_procs(), most = K / CPU_GEMM_MIN_CHUNK;
    if (tiles >= procs || most < 2)
        return 1;
    int want = (procs + tiles - 1) / tiles;
    return want < most ? want : most;
}

static int gemm_tile_floor(int K)
{
    return K <= 1024 ? 128 : K <= 4096 ? 256 : 512;
}

/* the half of a side, rounded up to a multiple of 16 (aligned rows), or 0 below the floor */
static int gemm_half_side(int side, int floor)
{
    int half = ((side + 1) / 2 + 15) / 16 * 16;
    return half >= floor && half < side ? half : 0;
}

/* the tile *tm x *tn of an M x N product over K terms */
static void gemm_tile_shape(int M, int N, int K, int *tm, int *tn)
{
    int floor = gemm_tile_floor(K), m = M, n = N;
    for (;;) {
        long tiles = (long)((M + m - 1) / m) * ((N + n - 1) / n);
        if (tiles >= cpu_gemm_tile_target())
            break;
        int hm = gemm_half_side(m, floor), hn = gemm_half_side(n, floor);
        if (hm && (m >= n || !hn))
            m = hm;
        else if (hn)
            n = hn;
        else
            break;
    }
    *tm = m;
    *tn = n;
}

/* how one product runs: tiles of tm x tn (`across` of them in a row of tiles) times K chunks of
 * klen terms; part holds chunks 1.. as M x N partial sums (NULL for one chunk) */
typedef struct {
    int tm, tn, across, tiles, chunks, klen, slab_ld;
    real *part, *slabs; /* slabs: a klen x slab_ld copy of A's panel per thread (NULL: none) */
} gemm_plan;

/* A transposed A (C = A^T B: the weight gradients) whose rows lie a multiple of 2 KiB apart
 * reads its panel down columns whose addresses fall into the same few cache sets: oneDNN's
 * sgemm ran these at 277-296 GFLOP/s (gpt2-small's 1024 x 256 x 1024 fcproj gradient,
 * GPT-2 124M's 3072 x 768 x 1024; docs/benchmarks.md). Each tile then copies its panel of A
 * into rows padded by this many reals first (332-376 GFLOP/s), when one tile spans all of N (else each panel would be copied
 * once per tile of its row: a loss, measured at 1024 x 1024 x 1024). Same values, same sums. */
#define GEMM_SLAB_PAD 16

static int gemm_wants_slab(int transA, int lda, int across)
{
    return transA && across == 1 && lda >= 1024 && lda % 512 == 0;
}

/* task t of the plan: a tile (t % tiles) over a K chunk (t / tiles), one single-threaded call */
static int gemm_task(const gemm_plan *p, int t, int transA, int transB, int M, int N, int k0,
                     int k1, real alpha, const real *a, int lda, const real *b, int ldb,
                     real beta, real *c, int ldc)
{
    int tile = t % p->tiles, ch = t / p->tiles;
    int m0 = tile / p->across * p->tm, n0 = tile % p->across * p->tn;
    int mm = M - m0 < p->tm ? M - m0 : p->tm, nn = N - n0 < p->tn ? N - n0 : p->tn;
    int kc0 = k0 + ch * p->klen, kc1 = k1 - kc0 < p->klen ? k1 : kc0 + p->klen;
    const real *ak = a + (transA ? (size_t)kc0 * lda + m0 : (size_t)m0 * lda + kc0);
    if (p->slabs) { /* this thread's padded copy of A's panel (transposed A: K rows of mm) */
        real *slab = p->slabs + (size_t)omp_get_thread_num() * p->klen * p->slab_ld;
        for (int k = 0; k < kc1 - kc0; k++)
            memcpy(slab + (size_t)k * p->slab_ld, ak + (size_t)k * lda, (size_t)mm * sizeof *ak);
        ak = slab;
        lda = p->slab_ld;
    }
    const real *bk = b + (transB ? (size_t)n0 * ldb + kc0 : (size_t)kc0 * ldb + n0);
    real *dst = ch ? p->part + (size_t)(ch - 1) * M * N + (size_t)m0 * N + n0
                   : c + (size_t)m0 * ldc + n0;
    return dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', mm, nn, kc1 - kc0, alpha, ak, lda,
                      bk, ldb, ch ? 0 : beta, dst, ch ? N : ldc) != dnnl_success;
}

/* C's rows += the partial sums of chunks 1.., in chunk order */
static void gemm_add_parts(const gemm_plan *p, int M, int N, real *c, int ldc)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < M; r++)
        for (int ch = 1; ch < p->chunks; ch++) {
            const real *src = p->part + (size_t)(ch - 1) * M * N + (size_t)r * N;
            real *row = c + (size_t)r * ldc;
            for (int j = 0; j < N; j++)
                row[j] += src[j];
        }
}

/* C = beta C + alpha A B over the K terms [k0, k1), one tile and K chunk per call. oneDNN
 * 2.6.3's sgemm kernels corrupt the heap when a signal handler runs on their thread mid-call
 * (measured: a 37 us SIGALRM timer with a handler aborts a loop of dnnl_sgemm calls in "free():
 * invalid pointer"; tests/test_gemm_signals.c), and the runner catches SIGINT, SIGTERM, SIGHUP
 * and SIGPIPE. So every thread blocks the maskable signals while it runs tiles: a signal waits
 * the few milliseconds until the GEMM is done, and is then handled as before. */
static void gemm_onednn_tiled(device *d, int transA, int transB, int M, int N, int k0, int k1,
                              real alpha, const real *a, int lda, const real *b, int ldb,
                              real beta, real *c, int ldc)
{
    gemm_plan p = {0};
    gemm_tile_shape(M, N, k1 - k0, &p.tm, &p.tn);
    p.across = (N + p.tn - 1) / p.tn;
    p.tiles = (M + p.tm - 1) / p.tm * p.across;
    p.chunks = gemm_k_chunks(p.tiles, k1 - k0);
    p.klen = (k1 - k0 + p.chunks - 1) / p.chunks;
    /* through the device, so its memory figures count the partial sums and panel copies */
    dten part = {0}, slabs = {0};
    if (p.chunks > 1) {
        part = device_alloc(d, (size_t)(p.chunks - 1) * M * N, DT_REAL);
        if (!part.buf)
            return; /* the device failed, naming the allocation */
        p.part = RP(part);
    }
    if (gemm_wants_slab(transA, lda, p.across)) {
        p.slab_ld = p.tm + GEMM_SLAB_PAD;
        slabs = device_alloc(d, (size_t)omp_get_max_threads() * p.klen * p.slab_ld, DT_REAL);
        if (!slabs.buf) {
            if (part.buf)
                device_free(d, part);
            return;
        }
        p.slabs = RP(slabs);
    }
    int failed = 0, tasks = p.tiles * p.chunks;
    sigset_t all;
    sigfillset(&all);
#pragma omp parallel reduction(| : failed)
    {
        sigset_t old;
        failed |= pthread_sigmask(SIG_BLOCK, &all, &old) != 0;
        omp_set_num_threads(1); /* this task's own setting: oneDNN runs each tile on one thread */
#pragma omp for schedule(static)
        for (int t = 0; t < tasks; t++)
            failed |= gemm_task(&p, t, transA, transB, M, N, k0, k1, alpha, a, lda, b, ldb, beta,
                                c, ldc);
        failed |= pthread_sigmask(SIG_SETMASK, &old, NULL) != 0;
    }
    if (!failed && p.part)
        gemm_add_parts(&p, M, N, c, ldc);
    if (part.buf)
        device_free(d, part);
    if (slabs.buf)
        device_free(d, slabs);
    if (failed)
        device_fail(d, "%s: gemm: oneDNN's sgemm refused %dx%dx%d (lda %d, ldb %d, ldc %d)",
                    d->backend, M, N, k1 - k0, lda, ldb, ldc);
}
#endif

/* one product C = beta C + alpha A B over the K terms [k0, k1) */
static void gemm_k_range(device *d, int transA, int transB, int M, int N, int k0, int k1,
                         real alpha, const real *a, int lda, const real *b, int ldb, real beta,
                         real *c, int ldc)
{
    /* A's and B's first term of the range */
    const real *ak = a + (transA ? (size_t)k0 * lda : (size_t)k0);
    const real *bk = b + (transB ? (size_t)k0 : (size_t)k0 * ldb);
#ifndef CPU_REAL_DOUBLE
    if (cpu_amx_fits(M, N, k1 - k0, alpha)) { /* where the machine has AMX (docs/ops.md) */
        cpu_amx_gemm(d, transA, transB, M, N, k1 - k0, ak, lda, bk, ldb, beta, c, ldc);
        return;
    }
#endif
#ifdef CPU_GEMM_ONEDNN
    (void)ak, (void)bk; /* the tiles offset A and B themselves */
    gemm_onednn_tiled(d, transA, transB, M, N, k0, k1, alpha, a, lda, b, ldb, beta, c, ldc);
#else
    (void)d;
    enum CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
    cblas_real_gemm(CblasRowMajor, ta, tb, M, N, k1 - k0, alpha, ak, lda, bk, ldb, beta, c, ldc);
#endif
}

/* C = beta C + alpha A B as the head (whole units of K) and then the tail (the rest); oneDNN's
 * tiles need no such split: one call */
static void gemm_head_tail(device *d, int transA, int transB, int M, int N, int K, real alpha,
                           const real *a, int lda, const real *b, int ldb, real beta, real *c,
                           int ldc)
{
#ifdef CPU_GEMM_ONEDNN
    int head = K;
#else
    int head = K - K % CPU_GEMM_K_UNIT;
#endif
    if (head > 0)
        gemm_k_range(d, transA, transB, M, N, 0, head, alpha, a, lda, b, ldb, beta, c, ldc);
    if (head < K)
        gemm_k_range(d, transA, transB, M, N, head, K, alpha, a, lda, b, ldb,
                     head > 0 ? (real)1 : beta, c, ldc);
}

/* device.perturb p > 0 (an ensemble member, docs/compare.md): K summed in blocks of p times
 * this many terms, one call each, so C takes another rounding at each block: the same math in
 * another order. Every block is below GEMM_Q, so the bits stay the same at any thread count. */
#define CPU_GEMM_PERTURB_BLOCK 8

static void gemm_k_blocks(device *d, int transA, int transB, int M, int N, int K, int unit,
                          real alpha, const real *a, int lda, const real *b, int ldb, real beta,
                          real *c, int ldc)
{
    for (int k0 = 0; k0 < K; k0 += unit) {
        int k1 = K - k0 <= unit ? K : k0 + unit;
        gemm_k_range(d, transA, transB, M, N, k0, k1, alpha, a, lda, b, ldb, k0 ? (real)1 : beta,
                     c, ldc);
    }
}

static void cpu_gemm(device *d, int transA, int transB, int M, int N, int K, double alpha, dten A,
                     int lda, long strideA, dten Bm, int ldb, long strideB, double beta, dten Cm,
                     int ldc, long strideC, int batch)
{
    if (!op_gemm_ok(d, transA, transB, M, N, K, A, lda, strideA, Bm, ldb, strideB, Cm, ldc,
                    strideC, batch))
        return;
    real *c = RP(Cm);
    if (M == 0 || N == 0 || batch == 0)
        return;
    if (K == 0 || alpha == 0) {
        gemm_scale_only(c, M, N, ldc, strideC, batch, (real)beta);
        return;
    }
    const real *a = RP(A), *b = RP(Bm);
    for (int i = 0; i < batch; i++)
        if (d->perturb > 0)
            gemm_k_blocks(d, transA, transB, M, N, K, CPU_GEMM_PERTURB_BLOCK * d->perturb,
                          (real)alpha, a + (size_t)i * strideA, lda, b + (size_t)i * strideB, ldb,
                          (real)beta, c + (size_t)i * strideC, ldc);
        else
            gemm_head_tail(d, transA, transB, M, N, K, (real)alpha, a + (size_t)i * strideA, lda,
                           b + (size_t)i * strideB, ldb, (real)beta, c + (size_t)i * strideC,
                           ldc);
}

/* rows [0, n) of out[n, C] += bias */
CPU_CLONES static void bias_add_rows(real *restrict o, const real *restrict b, long n, int C)
{
    for (long r = 0; r < n; r++) {
        real *row = o + (size_t)r * C;
        for (int c = 0; c < C; c++)
            row[c] += b[c];
    }
}

/* rows per chunk of the bias loops */
#define BIAS_ROWS 16L

static void cpu_bias_add(device *d, dten out, dten bias, int N, int C)
{
    if (!op_bias_ok(d, "bias_add", out, bias, N, C))
        return;
    real *o = RP(out);
    const real *b = RP(bias);
    long chunks = ((long)N + BIAS_ROWS - 1) / BIAS_ROWS;
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < chunks; ch++) {
        long r0 = ch * BIAS_ROWS;
        bias_add_rows(o + (size_t)r0 * C, b, N - r0 < BIAS_ROWS ? N - r0 : BIAS_ROWS, C);
    }
}

/* channels per block of the column sums: each channel's sum runs over the rows in order, so
 * the width changes no bit; a wide block keeps the rows' reads long */
#define BIAS_COL_BLOCK 128

/* db[0..nc) += the sums over rows [0, N) of g's columns (rows ldg apart), each in double in
 * row order */
CPU_CLONES static void column_sums(real *restrict db, const real *restrict g, long N, int ldg,
                                   int nc)
{
    double acc[BIAS_COL_BLOCK] = {0};
    for (long n = 0; n < N; n++) {
        const real *row = g + (size_t)n * ldg;
        for (int j = 0; j < nc; j++)
            acc[j] += row[j];
    }
    for (int j = 0; j < nc; j++)
        db[j] += (real)acc[j];
}

/* column sums in double: channel blocks in parallel, rows in order within a block */
static void cpu_bias_backward(device *d, dten dbias, dten dout, int N, int C)
{
    if (!op_bias_ok(d, "bias_backward", dout, dbias, N, C))
        return;
    real *db = RP(dbias);
    const real *g = RP(dout);
    int nblocks = (C + BIAS_COL_BLOCK - 1) / BIAS_COL_BLOCK;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * BIAS_COL_BLOCK, nc = C - c0 < BIAS_COL_BLOCK ? C - c0 : BIAS_COL_BLOCK;
        column_sums(db + c0, g + c0, N, C, nc);
    }
}

/* the AMX path's part of the library line, when it runs products of this build here */
static const char *amx_name(void)
{
#ifndef CPU_REAL_DOUBLE
    if (cpu_amx_ready())
        return "AMX bf16x6 (fp32 GEMMs of sides >= 128), ";
#endif
    return "";
}

void cpu_gemm_library(char *out, size_t cap)
{
#ifdef CPU_GEMM_ONEDNN
    const dnnl_version_t *v = dnnl_version();
    snprintf(out, cap, "%soneDNN %d.%d.%d (sgemm, %d tiles), OpenBLAS (%s)", amx_name(), v->major,
             v->minor, v->patch, cpu_gemm_tile_target(), blas_core_name());
#else
    snprintf(out, cap, "%sOpenBLAS (%s)", amx_name(), blas_core_name());
#endif
}

void cpu_fill_gemm(device_i *ops)
{
    ops->gemm = cpu_gemm;
    ops->bias_add = cpu_bias_add;
    ops->bias_backward = cpu_bias_backward;
}
