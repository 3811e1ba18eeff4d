/* devices/cpu/cpu_gemm_amx.c: the cpu backend's fp32 GEMM on Intel AMX: every input split exactly
 * into three bf16 parts, the six products that matter in fp32 summed in fp32 tiles (docs/ops.md). */
#define _GNU_SOURCE /* syscall */
#include "cpu_gemm_amx.h"
#include "cpu_real.h"

#ifdef CPU_REAL_DOUBLE /* cpu64 runs dgemm: nothing here (its object keeps one symbol) */
typedef int cpu_gemm_amx_unused;
#else

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#define CPU_AMX_BUILD 1
#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>
#define AMX_TARGET __attribute__((target("avx512f,avx512bw,amx-tile,amx-bf16")))
#endif

/* below this many rows, columns or terms the oneDNN (or OpenBLAS) path runs the product: the
 * tiles pad every side to 32 and the splits cost a pass over A and B (measured: 70 x 50 x 300
 * at 40 GFLOP/s against oneDNN's 105; 1024 x 256 x 256 at 516 against 348) */
#define CPU_AMX_MIN_SIDE 128

/* K is summed in blocks of this many terms (a multiple of 32): each block's splits of A and B
 * are made once (per thread or shared by all, amx_plan), and C holds the sum between blocks
 * (fp32 tiles stored and loaded: no extra rounding) */
#define AMX_KBLOCK 128
/* the split way of sharing a product (amx_plan, below) up to this many threads (measured on
 * 2 cores: gpt2-small's step 70.7 ms against 79.5 shared, every GEMM shape faster); beyond,
 * each thread packing the shorter operand in full grows with the threads, unmeasured here */
#define AMX_SPLIT_MAX_THREADS 2
/* columns of C per panel: a panel's packed B (AMX_KBLOCK x AMX_PANEL x 3 bf16) stays in L2 */
#define AMX_PANEL 512

#ifdef CPU_AMX_BUILD
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

/* the 64-byte tile configuration of palette 1 (Intel SDM, LDTILECFG) */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed)) amx_tilecfg;

/* CPUID leaf 7: AMX-TILE, AMX-BF16, AVX512F and AVX512BW; and the OS saving the AVX-512 state
 * (XCR0's SSE, AVX, opmask and both ZMM halves: a hypervisor may turn them off while CPUID
 * still lists the instructions) */
static int amx_cpu_has(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    int listed = (d >> 24 & 1) && (d >> 22 & 1) && (b >> 16 & 1) && (b >> 30 & 1);
    unsigned a1, b1, c1, d1;
    if (!listed || !__get_cpuid(1, &a1, &b1, &c1, &d1) || !(c1 >> 27 & 1)) /* OSXSAVE */
        return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xE6) == 0xE6;
}

static int amx_probe(void)
{
    const char *env = getenv("HARNESS_CPU_AMX");
    if (env && strcmp(env, "0") == 0)
        return 0;
    /* Linux hands out the 8 KiB tile state only on request, once per process */
    return amx_cpu_has() && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
#endif

int cpu_amx_ready(void)
{
#ifdef CPU_AMX_BUILD
    static int state = -1; /* first asked from the device's open, before any thread runs */
    if (state < 0)
        state = amx_probe();
    return state;
#else
    return 0;
#endif
}

int cpu_amx_fits(int M, int N, int K, double alpha)
{
    return alpha == 1.0 && M >= CPU_AMX_MIN_SIDE && N >= CPU_AMX_MIN_SIDE &&
           K >= CPU_AMX_MIN_SIDE && cpu_amx_ready();
}

#ifdef CPU_AMX_BUILD
/* A tile of bf16 is 16 rows of 32 (1 KiB); a packed tile holds its three parts one after the
 * other: hi, mid, lo */
#define TILE_ELEMS 512
#define PARTS_ELEMS (3 * TILE_ELEMS)

/* out[j][i] = in[i][j] for a 16 x 16 block of floats */
AMX_TARGET static void amx_transpose16(const float *in, long ldi, float *out, int ldo)
{
    __m512i r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_castps_si512(_mm512_loadu_ps(in + i * ldi));
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 16; i += 8)
        for (int j = 0; j < 4; j++) {
            t[i + j] = _mm512_shuffle_i32x4(r[i + j], r[i + 4 + j], 0x88);
            t[i + 4 + j] = _mm512_shuffle_i32x4(r[i + j], r[i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
    }
    for (int i = 0; i < 16; i++)
        _mm512_storeu_ps(out + i * ldo, _mm512_castsi512_ps(r[i]));
}

/* x = hi + mid + lo exactly, each a bf16 (returned as fp32 bits, low halves zero): hi is x cut
 * to 8 significant bits, mid the rest rounded to 8, lo what is left (at most 8 bits: exact for a
 * normal x; for a subnormal one lo may hold bits below bf16's, so it is masked too: they would
 * land in the other half of a tile word, the pair's other term) */
AMX_TARGET static inline void amx_split(__m512 x, __m512i *hi, __m512i *mid, __m512i *lo)
{
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u), one = _mm512_set1_epi32(1);
    __m512i h = _mm512_and_si512(_mm512_castps_si512(x), top);
    __m512 r1 = _mm512_sub_ps(x, _mm512_castsi512_ps(h));
    __m512i v = _mm512_castps_si512(r1);
    __m512i half = _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                    _mm512_and_si512(_mm512_srli_epi32(v, 16), one));
    __m512i m = _mm512_and_si512(_mm512_add_epi32(v, half), top);
    __m512 r2 = _mm512_sub_ps(r1, _mm512_castsi512_ps(m));
    *hi = h;
    *mid = m;
    *lo = _mm512_and_si512(_mm512_castps_si512(r2), top);
}

/* Within a chunk of 32 terms, tile pair i holds terms i and i + 16 (the bf16 in the low half of
 * a 32-bit word is the first): A's and B's tiles agree, so the products are those of the chunk,
 * and each word is two 16-term vectors' high halves joined, no shuffle. */

/* the three parts of two vectors, joined pairwise into tile rows at out, + TILE_ELEMS, + 2x */
AMX_TARGET static inline void amx_pack_pairs(__m512 first, __m512 second, uint16_t *out)
{
    __m512i h0, m0, l0, h1, m1, l1;
    amx_split(first, &h0, &m0, &l0);
    amx_split(second, &h1, &m1, &l1);
    _mm512_storeu_si512(out, _mm512_or_si512(_mm512_srli_epi32(h0, 16), h1));
    _mm512_storeu_si512(out + TILE_ELEMS, _mm512_or_si512(_mm512_srli_epi32(m0, 16), m1));
    _mm512_storeu_si512(out + 2 * TILE_ELEMS, _mm512_or_si512(_mm512_srli_epi32(l0, 16), l1));
}

/* an A tile's three parts from 16 rows of 32 floats (rows m, columns k) */
AMX_TARGET static void amx_pack_a_tile(const float *rows, uint16_t *out)
{
    for (int r = 0; r < 16; r++)
        amx_pack_pairs(_mm512_loadu_ps(rows + r * 32), _mm512_loadu_ps(rows + r * 32 + 16),
                       out + r * 32);
}

/* a B tile's three parts from 32 rows of 16 floats (rows k, columns n) */
AMX_TARGET static void amx_pack_b_tile(const float *rows, uint16_t *out)
{
    for (int i = 0; i < 16; i++)
        amx_pack_pairs(_mm512_loadu_ps(rows + i * 16), _mm512_loadu_ps(rows + (i + 16) * 16),
                       out + i * 32);
}

/* the n (at most 16; none when n <= 0) floats at p, zeros after them */
AMX_TARGET static inline __m512 amx_load(const float *p, long n)
{
    if (n >= 16)
        return _mm512_loadu_ps(p);
    return n <= 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}

/* a strided matrix: element (r, c) of op(X) is x[c * ld + r] when trans, else x[r * ld + c];
 * rows x cols are its extent (reads past them give 0) */
typedef struct {
    const float *x;
    long ld;
    int trans, rows, cols;
} amx_src;

/* out[rows][cols] = op(X) from (r0, c0), zero past its extent; rows and cols multiples of 16 */
AMX_TARGET static void amx_gather(const amx_src *s, int r0, int c0, int rows, int cols, float *out)
{
    if (r0 + rows <= s->rows && c0 + cols <= s->cols) {
        if (!s->trans)
            for (int r = 0; r < rows; r++)
                memcpy(out + r * cols, s->x + (r0 + r) * s->ld + c0, (size_t)cols * sizeof *out);
        else
            for (int r = 0; r < rows; r += 16)
                for (int c = 0; c < cols; c += 16)
                    amx_transpose16(s->x + (c0 + c) * s->ld + r0 + r, s->ld, out + r * cols + c,
                                    cols);
        return;
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            long rr = r0 + r, cc = c0 + c;
            int in = rr < s->rows && cc < s->cols;
            out[r * cols + c] = !in ? 0.0f : s->trans ? s->x[cc * s->ld + rr] : s->x[rr * s->ld + cc];
        }
}

/* one product's state: its operands, its packed K block, its sizes in tiles */
typedef struct {
    amx_src a, b; /* op(A): M x K, op(B): K x N */
    float *c;
    long ldc;
    float beta;
    int M, N, K;
    int mtiles, ntiles;     /* 16-row and 16-column tiles, rounded up to pairs */
    uint16_t *ap, *bp;      /* [tile][chunk][part][16][32] of the current K block */
    int k0, chunks;         /* the K block: its first term and its chunks of 32 terms */
} amx_job;

/* row m of an untransposed A over the K block into its tiles, chunk by chunk (the row read
 * once, in order: rows of A a multiple of 4 KiB apart would fight over cache sets if a tile's
 * 16 rows were read side by side) */
AMX_TARGET static void amx_pack_a_rows(const amx_job *j, int m)
{
    const float *row = j->a.x + m * j->a.ld;
    uint16_t *out = j->ap + (size_t)(m / 16) * j->chunks * PARTS_ELEMS + (m % 16) * 32;
    for (int ch = 0; ch < j->chunks; ch++, out += PARTS_ELEMS) {
        long k = j->k0 + ch * 32, left = m < j->a.rows ? j->a.cols - k : 0;
        amx_pack_pairs(amx_load(row + k, left), amx_load(row + k + 16, left - 16), out);
    }
}

/* rows k and k + 16 of an untransposed B (k relative to the K block, k % 32 < 16) into every
 * column tile's pair row k % 32 */
AMX_TARGET static void amx_pack_b_rows(const amx_job *j, int k)
{
    long kg = j->k0 + k;
    const float *first = j->b.x + kg * j->b.ld, *second = first + 16 * j->b.ld;
    int has_first = kg < j->b.rows, has_second = kg + 16 < j->b.rows;
    uint16_t *out = j->bp + (size_t)(k / 32) * PARTS_ELEMS + (k % 32) * 32;
    for (int t = 0; t < j->ntiles; t++, out += (size_t)j->chunks * PARTS_ELEMS) {
        long n = t * 16L, left = j->b.cols - n;
        amx_pack_pairs(amx_load(first + n, has_first ? left : 0),
                       amx_load(second + n, has_second ? left : 0), out);
    }
}

/* this thread's part [*lo, *hi) of n items shared out over `of` threads, it being number t */
static void amx_share(int n, int t, int of, int *lo, int *hi)
{
    *lo = (int)((long)n * t / of);
    *hi = (int)((long)n * (t + 1) / of);
}

/* this thread's part (t of `of`) of packing the K block's A tiles (all rows) and B tiles (all
 * columns): untransposed sources row by row, transposed ones a 16 x 16 transpose at a time */
AMX_TARGET static void amx_pack_block(const amx_job *j, int t, int of)
{
    float rows[16 * 32];
    int lo, hi;
    if (!j->a.trans) {
        amx_share(j->mtiles * 16, t, of, &lo, &hi);
        for (int m = lo; m < hi; m++)
            amx_pack_a_rows(j, m);
    } else {
        /* chunk by chunk, its tiles in order: the 32 source rows of a chunk are read along
         * their length (tile by tile they would be 64 bytes of 32 rows lda apart) */
        amx_share(j->mtiles * j->chunks, t, of, &lo, &hi);
        for (int i = lo; i < hi; i++) {
            int tile = i % j->mtiles, ch = i / j->mtiles;
            amx_gather(&j->a, tile * 16, j->k0 + ch * 32, 16, 32, rows);
            amx_pack_a_tile(rows, j->ap + ((size_t)tile * j->chunks + ch) * PARTS_ELEMS);
        }
    }
    if (!j->b.trans) {
        amx_share(j->chunks * 16, t, of, &lo, &hi);
        for (int i = lo; i < hi; i++) /* pair i of chunk i / 16 */
            amx_pack_b_rows(j, i / 16 * 32 + i % 16);
    } else {
        amx_share(j->ntiles * j->chunks, t, of, &lo, &hi);
        for (int i = lo; i < hi; i++) {
            int tile = i / j->chunks, ch = i % j->chunks;
            amx_gather(&j->b, j->k0 + ch * 32, tile * 16, 32, 16, rows);
            amx_pack_b_tile(rows, j->bp + (size_t)i * PARTS_ELEMS);
        }
    }
}

#define AMX_DP4()                                                                                \
    do {                                                                                         \
        _tile_dpbf16ps(0, 4, 6);                                                                 \
        _tile_dpbf16ps(1, 4, 7);                                                                 \
        _tile_dpbf16ps(2, 5, 6);                                                                 \
        _tile_dpbf16ps(3, 5, 7);                                                                 \
    } while (0)

/* the 32 x 32 block of C at w (rows ldw floats apart) += the six products over the chunks:
 * tiles 0-3 hold C, 4-5 two row tiles of A, 6-7 two column tiles of B. Per chunk, in this
 * order: lo.hi, mid.hi, hi.hi, hi.lo, hi.mid, mid.mid (mid.lo, lo.mid and lo.lo, below 2^-24 of
 * the product, are left out). zero: start from 0 instead of loading w */
AMX_TARGET static void amx_block(const uint16_t *a0, const uint16_t *b0, int chunks, float *w,
                                 long ldw, int zero)
{
    const uint16_t *a1 = a0 + (size_t)chunks * PARTS_ELEMS, *b1 = b0 + (size_t)chunks * PARTS_ELEMS;
    long stride = ldw * (long)sizeof(float); /* in long: an ldc of 2^27 and more fits */
    if (zero) {
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    } else {
        _tile_loadd(0, w, stride); _tile_loadd(1, w + 16, stride);
        _tile_loadd(2, w + 16L * ldw, stride); _tile_loadd(3, w + 16L * ldw + 16, stride);
    }
    for (int ch = 0; ch < chunks; ch++) {
        const uint16_t *A0 = a0 + ch * PARTS_ELEMS, *A1 = a1 + ch * PARTS_ELEMS;
        const uint16_t *B0 = b0 + ch * PARTS_ELEMS, *B1 = b1 + ch * PARTS_ELEMS;
        _tile_loadd(6, B0, 64); _tile_loadd(7, B1, 64);
        _tile_loadd(4, A0 + 2 * TILE_ELEMS, 64); _tile_loadd(5, A1 + 2 * TILE_ELEMS, 64);
        AMX_DP4();
        _tile_loadd(4, A0 + TILE_ELEMS, 64); _tile_loadd(5, A1 + TILE_ELEMS, 64);
        AMX_DP4();
        _tile_loadd(4, A0, 64); _tile_loadd(5, A1, 64);
        AMX_DP4();
        _tile_loadd(6, B0 + 2 * TILE_ELEMS, 64); _tile_loadd(7, B1 + 2 * TILE_ELEMS, 64);
        AMX_DP4();
        _tile_loadd(6, B0 + TILE_ELEMS, 64); _tile_loadd(7, B1 + TILE_ELEMS, 64);
        AMX_DP4();
        _tile_loadd(4, A0 + TILE_ELEMS, 64); _tile_loadd(5, A1 + TILE_ELEMS, 64);
        AMX_DP4();
    }
    _tile_stored(0, w, stride); _tile_stored(1, w + 16, stride);
    _tile_stored(2, w + 16L * ldw, stride); _tile_stored(3, w + 16L * ldw + 16, stride);
}

/* C's 32 x 32 block (bm, bn) over the current K block; an edge block through a bounce copy */
AMX_TARGET static void amx_c_block(const amx_job *j, int bm, int bn)
{
    const uint16_t *a0 = j->ap + (size_t)(2 * bm) * j->chunks * PARTS_ELEMS;
    const uint16_t *b0 = j->bp + (size_t)(2 * bn) * j->chunks * PARTS_ELEMS;
    int zero = j->k0 == 0 && j->beta == 0.0f; /* beta 0: C's old values (NaN too) unread */
    int rows = j->M - bm * 32 < 32 ? j->M - bm * 32 : 32;
    int cols = j->N - bn * 32 < 32 ? j->N - bn * 32 : 32;
    float *cb = j->c + (bm * 32) * j->ldc + bn * 32;
    if (rows == 32 && cols == 32) {
        amx_block(a0, b0, j->chunks, cb, j->ldc, zero);
        return;
    }
    float bounce[32 * 32] = {0};
    for (int r = 0; r < rows && !zero; r++)
        memcpy(bounce + r * 32, cb + r * j->ldc, (size_t)cols * sizeof *cb);
    amx_block(a0, b0, j->chunks, bounce, 32, zero);
    for (int r = 0; r < rows; r++)
        memcpy(cb + r * j->ldc, bounce + r * 32, (size_t)cols * sizeof *cb);
}

/* this thread's part (t of `of`) of the blocks of C over the current K block: panels of
 * columns, rows shared out in each */
AMX_TARGET static void amx_multiply_block(const amx_job *j, int t, int of)
{
    int bms = j->mtiles / 2, bns = j->ntiles / 2, per_panel = AMX_PANEL / 32, lo, hi;
    amx_share(bms, t, of, &lo, &hi);
    for (int p0 = 0; p0 < bns; p0 += per_panel) {
        int p1 = bns - p0 < per_panel ? bns : p0 + per_panel;
        for (int bm = lo; bm < hi; bm++)
            for (int bn = p0; bn < p1; bn++)
                amx_c_block(j, bm, bn);
    }
}

/* C = beta C first where beta is neither 0 (tiles start at 0) nor 1 (tiles load C): this
 * thread's rows (t of `of`) */
static void amx_scale_c(const amx_job *j, int t, int of)
{
    if (j->beta == 0.0f || j->beta == 1.0f)
        return;
    int lo, hi;
    amx_share(j->M, t, of, &lo, &hi);
    for (int r = lo; r < hi; r++)
        for (int n = 0; n < j->N; n++)
            j->c[(long)r * j->ldc + n] *= j->beta;
}

/* thread t's part of the product, the `of` threads sharing each K block's packed panels (a
 * barrier after the packing and after the products), or with of = 1 the whole of job alone */
AMX_TARGET static void amx_run(const amx_job *job, int t, int of)
{
    amx_scale_c(job, t, of);
    for (int k0 = 0; k0 < job->K; k0 += AMX_KBLOCK) {
        if (of > 1) {
#pragma omp barrier
        }
        amx_job j = *job;
        int len = j.K - k0 < AMX_KBLOCK ? j.K - k0 : AMX_KBLOCK;
        j.k0 = k0;
        j.chunks = (len + 31) / 32;
        j.a.cols = k0 + len; /* terms past the block read as 0 */
        j.b.rows = k0 + len;
        amx_pack_block(&j, t, of);
        if (of > 1) {
#pragma omp barrier
        }
        amx_multiply_block(&j, t, of);
    }
}

/* Two ways to share a product over threads. Shared: every thread packs part of each K block's
 * panels and multiplies with all of them (a barrier after each packing and each block's
 * products; half of what a thread reads comes from the other core's cache). Split: each thread
 * takes whole 32-wide stripes of C's longer side and packs its own panels, the operand along
 * the shorter side in full (packed once per thread), with no barrier until the end. The bits
 * are the same either way: each block of C sums its K blocks and chunks in one order. */
typedef struct {
    int split, rows, threads; /* split (else shared); stripes of rows (else of columns); for */
    size_t a_elems, b_elems;  /* one thread's packed panels (bf16) */
} amx_plan;

static amx_plan amx_plan_for(const amx_job *j, int threads)
{
    int chunks = AMX_KBLOCK / 32;
    amx_plan p = {threads > 1 && threads <= AMX_SPLIT_MAX_THREADS, j->M >= j->N, threads, 0, 0};
    int bms = j->mtiles / 2, bns = j->ntiles / 2;
    int mt = p.split && p.rows ? (bms + threads - 1) / threads * 2 : j->mtiles;
    int nt = p.split && !p.rows ? (bns + threads - 1) / threads * 2 : j->ntiles;
    p.a_elems = (size_t)mt * chunks * PARTS_ELEMS;
    p.b_elems = (size_t)nt * chunks * PARTS_ELEMS;
    return p;
}

/* thread t's stripes of a split product, with its own panels at ap and bp; M or N 0: none */
static amx_job amx_stripes(const amx_job *j, const amx_plan *p, int t, int of, uint16_t *ap,
                           uint16_t *bp)
{
    amx_job s = *j;
    int lo, hi;
    amx_share(p->rows ? j->mtiles / 2 : j->ntiles / 2, t, of, &lo, &hi);
    int side = p->rows ? j->M : j->N, first = lo * 32, end = hi * 32 < side ? hi * 32 : side;
    int n = end > first ? end - first : 0;
    if (p->rows) {
        s.a.x += j->a.trans ? (long)first : (long)first * j->a.ld;
        s.a.rows = s.M = n;
        s.c += (long)first * j->ldc;
        s.mtiles = (hi - lo) * 2;
    } else {
        s.b.x += j->b.trans ? (long)first * j->b.ld : (long)first;
        s.b.cols = s.N = n;
        s.c += first;
        s.ntiles = (hi - lo) * 2;
    }
    s.ap = ap;
    s.bp = bp;
    return s;
}

/* this thread's part of the product; 1 if the signal mask could not be set */
AMX_TARGET static int amx_thread(const amx_job *j, const amx_plan *p, uint16_t *scratch)
{
    sigset_t all, old;
    sigfillset(&all);
    int failed = pthread_sigmask(SIG_BLOCK, &all, &old) != 0;
    amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++)
        cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
    int t = omp_get_thread_num(), of = omp_get_num_threads();
    if (p->split && of == p->threads) { /* (a team cut short runs shared, in the full panels) */
        uint16_t *ap = scratch + (size_t)t * (p->a_elems + p->b_elems);
        amx_job s = amx_stripes(j, p, t, of, ap, ap + p->a_elems);
        if (s.M > 0 && s.N > 0)
            amx_run(&s, 0, 1);
    } else {
        amx_run(j, t, of);
    }
    _tile_release();
    failed |= pthread_sigmask(SIG_SETMASK, &old, NULL) != 0;
    return failed;
}
#endif

void cpu_amx_gemm(device *d, int transA, int transB, int M, int N, int K, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
#ifdef CPU_AMX_BUILD
    amx_job j = {.a = {a, lda, transA, M, K}, .b = {b, ldb, transB, K, N}, .c = c, .ldc = ldc,
                 .beta = beta, .M = M, .N = N, .K = K};
    j.mtiles = (M + 31) / 32 * 2;
    j.ntiles = (N + 31) / 32 * 2;
    int threads = omp_get_max_threads();
    amx_plan p = amx_plan_for(&j, threads);
    /* the split plan's panels, each thread's, or the shared plan's (all of A, all of B: no
     * more than the split plan's, whose stripes cover A or B and whose copies each hold all
     * of the other) */
    size_t full_a = (size_t)j.mtiles * (AMX_KBLOCK / 32) * PARTS_ELEMS;
    size_t copies = p.split ? (size_t)threads : 1, elems = copies * (p.a_elems + p.b_elems);
    float *scratch = cpu_scratch(d, (elems + 1) / 2); /* kept: no page faults per call */
    if (!scratch)
        return; /* the device failed, naming the allocation */
    j.ap = (uint16_t *)scratch;
    j.bp = j.ap + full_a;
    int failed = 0;
#pragma omp parallel num_threads(threads) reduction(| : failed)
    failed |= amx_thread(&j, &p, (uint16_t *)scratch);
    if (failed)
        device_fail(d, "%s: gemm: could not block signals around the AMX tiles (%dx%dx%d)",
                    d->backend, M, N, K);
#else
    (void)transA, (void)transB, (void)M, (void)N, (void)K, (void)a, (void)lda, (void)b;
    (void)ldb, (void)beta, (void)c, (void)ldc;
    device_fail(d, "%s: gemm: this build has no AMX path", d->backend);
#endif
}

#endif /* CPU_REAL_DOUBLE */
