/* devices/cpu/cpu_backend.c: the cpu device's identity, memory and host transfers (the ops are
 * in cpu_ops*.c). Buffers are aligned host memory; mem_total is the machine's physical RAM. */
#include "cpu_real.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* d->ctx: the scratch of cpu_scratch (a dten; NULL until first asked for) */
static void cpu_close(device *d)
{
    dten *scratch = d->ctx;
    if (scratch) {
        device_free(d, *scratch);
        free(scratch);
    }
    free(d);
}

static dbuf *cpu_alloc(device *d, size_t n, dkind kind)
{
    size_t esize = kind == DT_I32 ? sizeof(int32_t) : sizeof(real);
    size_t bytes = (n ? n : 1) * esize;
    bytes = (bytes + 63) / 64 * 64;
    dbuf *b = calloc(1, sizeof *b);
    if (b)
        b->data = aligned_alloc(64, bytes);
    if (!b || !b->data) {
        free(b);
        device_fail(d, "%s: cannot allocate %zu bytes of host memory", d->backend, bytes);
        return NULL;
    }
    memset(b->data, 0, bytes);
    return b;
}

static void cpu_free(device *d, dbuf *b)
{
    (void)d;
    free(b->data);
    free(b);
}

real *cpu_scratch(device *d, size_t n)
{
    dten *scratch = d->ctx;
    if (!scratch && !(scratch = d->ctx = calloc(1, sizeof *scratch))) {
        device_fail(d, "%s: out of memory for the scratch's handle", d->backend);
        return NULL;
    }
    if (scratch->buf && scratch->n >= n)
        return RP(*scratch);
    device_free(d, *scratch);
    *scratch = device_alloc(d, n, DT_REAL);
    return scratch->buf ? RP(*scratch) : NULL;
}

static void cpu_upload(device *d, dten dst, const float *src)
{
    if (d->failed)
        return;
    real *p = RP(dst);
    for (size_t i = 0; i < dst.n; i++)
        p[i] = (real)src[i];
}

static void cpu_upload_f64(device *d, dten dst, const double *src)
{
    if (d->failed)
        return;
    real *p = RP(dst);
    for (size_t i = 0; i < dst.n; i++)
        p[i] = (real)src[i];
}

static void cpu_upload_i32(device *d, dten dst, const int32_t *src)
{
    if (d->failed)
        return;
    memcpy(IP(dst), src, dst.n * sizeof(int32_t));
}

static void cpu_download(device *d, float *dst, dten src)
{
    const real *p = RP(src);
    for (size_t i = 0; i < src.n; i++)
        dst[i] = (float)p[i];
}

static void cpu_download_f64(device *d, double *dst, dten src)
{
    const real *p = RP(src);
    for (size_t i = 0; i < src.n; i++)
        dst[i] = (double)p[i];
}

static void cpu_download_i32(device *d, int32_t *dst, dten src)
{
    memcpy(dst, IP(src), src.n * sizeof(int32_t));
}

/* bytes per chunk of a parallel zero; a smaller view is one memset */
#define ZERO_CHUNK ((size_t)1 << 20)

static void cpu_zero(device *d, dten t)
{
    if (d->failed)
        return;
    size_t esize = t.buf->head.kind == DT_I32 ? sizeof(int32_t) : sizeof(real);
    char *p = (char *)t.buf->data + t.off * esize;
    size_t bytes = t.n * esize;
    long chunks = (long)((bytes + ZERO_CHUNK - 1) / ZERO_CHUNK);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (long ch = 0; ch < chunks; ch++) {
        size_t lo = (size_t)ch * ZERO_CHUNK;
        memset(p + lo, 0, bytes - lo < ZERO_CHUNK ? bytes - lo : ZERO_CHUNK);
    }
}

static void cpu_copy(device *d, dten dst, dten src)
{
    if (d->failed)
        return;
    if (dst.n != src.n || dst.buf->head.kind != src.buf->head.kind) {
        device_fail(d, "%s: copy: %zu elements into %zu, or of another kind", d->backend, src.n,
                    dst.n);
        return;
    }
    size_t esize = dst.buf->head.kind == DT_I32 ? sizeof(int32_t) : sizeof(real);
    memmove((char *)dst.buf->data + dst.off * esize, (char *)src.buf->data + src.off * esize,
            dst.n * esize);
}

static void cpu_synchronize(device *d)
{
    (void)d;
}

/* resident set size of this process, from /proc/self/statm */
static size_t cpu_mem_used(device *d)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages_total = 0, pages_resident = 0;
    if (!f)
        return 0;
    int got = fscanf(f, "%lu %lu", &pages_total, &pages_resident);
    fclose(f);
    return got == 2 ? (size_t)pages_resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

static void cpu_identity(char *name, size_t len)
{
    snprintf(name, len, "host cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon += 1 + (colon[1] == ' ');
                colon[strcspn(colon, "\n")] = 0;
                snprintf(name, len, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

static size_t cpu_mem_total(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    return pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : 0;
}

static device_i cpu_ops_table;

device *CPU_SYM(device_open)(const char *arg, char *err, size_t errlen)
{
    if (arg && *arg && strcmp(arg, "0") != 0) {
        snprintf(err, errlen, "device %s:%s does not exist (the %s backend has one device, 0)",
                 CPU_BACKEND_NAME, arg, CPU_BACKEND_NAME);
        return NULL;
    }
    device *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "%s: out of memory opening the device", CPU_BACKEND_NAME);
        return NULL;
    }
    if (!cpu_ops_table.alloc) {
        cpu_ops_table = (device_i){
            .close = cpu_close,
            .alloc = cpu_alloc,
            .free = cpu_free,
            .upload = cpu_upload,
            .upload_f64 = cpu_upload_f64,
            .upload_i32 = cpu_upload_i32,
            .download = cpu_download,
            .download_f64 = cpu_download_f64,
            .download_i32 = cpu_download_i32,
            .zero = cpu_zero,
            .copy = cpu_copy,
            .synchronize = cpu_synchronize,
            .mem_used = cpu_mem_used,
        };
        cpu_fill_ops(&cpu_ops_table);
    }
    d->ops = &cpu_ops_table;
    snprintf(d->backend, sizeof d->backend, "%s", CPU_BACKEND_NAME);
    cpu_identity(d->name, sizeof d->name);
    snprintf(d->vendor, sizeof d->vendor, "host");
    snprintf(d->driver_version, sizeof d->driver_version, "n/a");
    cpu_gemm_library(d->runtime_version, sizeof d->runtime_version);
    snprintf(d->dtype, sizeof d->dtype, "%s", CPU_DTYPE);
    d->real_size = sizeof(real);
    d->mem_total = cpu_mem_total();
    d->round_lowp = cpu_round_lowp;
    return d;
}

int CPU_SYM(device_list)(device_info *out, int max)
{
    if (max < 1)
        return 0;
    memset(out, 0, sizeof *out);
    snprintf(out->spec, sizeof out->spec, "%s", CPU_BACKEND_NAME);
    cpu_identity(out->name, sizeof out->name);
    snprintf(out->vendor, sizeof out->vendor, "host");
    snprintf(out->dtype, sizeof out->dtype, "%s", CPU_DTYPE);
    out->mem_total = cpu_mem_total();
    return 1;
}
