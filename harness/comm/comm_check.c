/* harness/comm/comm_check.c: comm-check as nccl-tests does it: every rank fills known values,
 * runs one collective per size (on host or device memory), checks the result, and times it. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "util/util.h"

static const char *const op_names[CC_N_OPS] = {"allreduce", "allgather", "reducescatter",
                                               "broadcast"};

const char *cc_op_name(cc_op op)
{
    return op < CC_N_OPS ? op_names[op] : "?";
}

int cc_op_parse(const char *name)
{
    for (int i = 0; i < CC_N_OPS; i++)
        if (strcmp(name, op_names[i]) == 0)
            return i;
    return -1;
}

double cc_busbw_factor(cc_op op, int n)
{
    if (op == CC_ALLREDUCE)
        return 2.0 * (n - 1) / n;
    if (op == CC_ALLGATHER || op == CC_REDUCESCATTER)
        return (double)(n - 1) / n;
    return 1.0;
}

/* "64", "8B", "4K", "256M", "1G" (powers of 1024); 0, or 1 */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return 1;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end && end[1] == '\0') {
        const char *units = "BKMG", *u = strchr(units, toupper((unsigned char)*end));
        if (!u)
            return 1;
        shift = 10u * (unsigned)(u - units);
        end++;
    }
    if (*end || v == 0 || v > (1ull << 40) >> shift)
        return 1;
    *out = (size_t)(v << shift);
    return 0;
}

int cc_parse_sizes(const char *spec, size_t *min, size_t *max)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", spec);
    char *colon = strchr(buf, ':');
    if (colon)
        *colon = '\0';
    if (strlen(spec) >= sizeof buf || parse_size(buf, min) ||
        parse_size(colon ? colon + 1 : buf, max) || *max < *min) {
        log_error("comm-check: --sizes '%s' is not MIN:MAX (e.g. 8B:256M; B, K, M, G; at most "
                  "1024G; MIN <= MAX)", term_safe(spec));
        return EXIT_USAGE;
    }
    return 0;
}

/* the value rank r puts at element i: small integers (sums exact in fp32 for any world this
 * harness runs) or fractions in (0, 1] */
static float fill_value(const cc_options *o, int r, size_t i)
{
    unsigned k = (unsigned)((i * 7u + (size_t)r * 13u) % 1021u) + 1u;
    return o->float_values ? (float)k / 1021.0f : (float)(k % 31u + 1u);
}

typedef struct {
    size_t n_in, n_out; /* floats this rank sends and receives */
    float *in, *out;    /* host; the check reads them */
    dten din, dout;     /* a device_buffers communicator's: what the collective works on */
} cc_bufs;

/* c's device, when its collectives take device memory, else NULL */
static device *buffers_device(comm *c)
{
    return c->ops->device_buffers ? c->dev : NULL;
}

static int alloc_device_bufs(comm *c, cc_bufs *b)
{
    device *d = c->dev;
    if (!d || d->real_size != sizeof(float))
        return comm_fail(c, "comm-check", "the communicator's device holds no fp32 buffers");
    b->din = device_alloc(d, b->n_in, DT_REAL);
    b->dout = device_alloc(d, b->n_out, DT_REAL);
    if (b->din.buf && b->dout.buf)
        return 0;
    return comm_fail(c, "comm-check", "allocating %zu + %zu floats on %s: %s", b->n_in,
                     b->n_out, d->backend, device_error(d) ? device_error(d) : "failed");
}

static int alloc_bufs(comm *c, cc_op op, size_t count, cc_bufs *b)
{
    size_t W = (size_t)c->size;
    b->n_in = op == CC_REDUCESCATTER ? count * W : count;
    b->n_out = op == CC_ALLGATHER ? count * W : count;
    b->in = malloc(b->n_in * sizeof *b->in);
    b->out = malloc(b->n_out * sizeof *b->out);
    if (!b->in || !b->out)
        return comm_fail(c, "comm-check", "out of host memory");
    return buffers_device(c) ? alloc_device_bufs(c, b) : 0;
}

static void free_bufs(comm *c, cc_bufs *b)
{
    if (b->din.buf)
        device_free(c->dev, b->din);
    if (b->dout.buf)
        device_free(c->dev, b->dout);
    free(b->in);
    free(b->out);
}

/* a device error as the communicator's: 0, or 1 with c->error naming it */
static int device_ok(comm *c, const char *what)
{
    device *d = buffers_device(c);
    const char *e = d ? device_error(d) : NULL;
    return e ? comm_fail(c, "comm-check", "%s: %s", what, e) : 0;
}

/* the known values into the send buffer (uploaded to the device's) */
static int fill(comm *c, cc_op op, const cc_options *o, cc_bufs *b)
{
    for (size_t i = 0; i < b->n_in; i++)
        b->in[i] = op == CC_BROADCAST && c->rank != 0 ? -1.0f : fill_value(o, c->rank, i);
    device *d = buffers_device(c);
    if (d)
        d->ops->upload(d, b->din, b->in);
    return device_ok(c, "uploading the values");
}

static int run_op(comm *c, cc_op op, cc_bufs *b, size_t count)
{
    int dev = buffers_device(c) != NULL;
    float *in = dev ? comm_address(c, b->din) : b->in;
    float *out = dev ? comm_address(c, b->dout) : b->out;
    switch (op) {
    case CC_ALLREDUCE:
        return c->ops->allreduce_sum_f32(c, in, count);
    case CC_ALLGATHER:
        return c->ops->allgather(c, in, out, count * sizeof *in);
    case CC_REDUCESCATTER:
        return c->ops->reducescatter_sum_f32(c, in, out, count);
    default:
        return c->ops->broadcast(c, in, count * sizeof *in, 0);
    }
}

/* the result this rank holds: in place for allreduce and broadcast */
static const float *result(cc_op op, const cc_bufs *b)
{
    return op == CC_ALLREDUCE || op == CC_BROADCAST ? b->in : b->out;
}

/* what element i of this rank's result must be, and its fp32 bound */
static double expected(comm *c, cc_op op, const cc_options *o, size_t i, size_t count,
                       double *bound)
{
    int W = c->size;
    *bound = 0;
    if (op == CC_ALLGATHER)
        return fill_value(o, (int)(i / count), i % count);
    if (op == CC_BROADCAST)
        return fill_value(o, 0, i);
    size_t at = op == CC_REDUCESCATTER ? (size_t)c->rank * count + i : i;
    double sum = 0, mag = 0;
    for (int r = 0; r < W; r++) {
        sum += fill_value(o, r, at);
        mag += fabs(fill_value(o, r, at));
    }
    if (o->float_values) /* W roundings of a float sum, at most, each within 2^-24 of mag */
        *bound = W * ldexp(mag, -24);
    return sum;
}

typedef struct {
    double time_us;
    int64_t wrong, first_index;
    double got, expected;
} cc_rank_result;

static void check(comm *c, cc_op op, const cc_options *o, const cc_bufs *b, size_t count,
                  cc_rank_result *mine)
{
    const float *res = result(op, b);
    size_t n = op == CC_ALLGATHER ? b->n_out : count;
    mine->first_index = -1;
    for (size_t i = 0; i < n; i++) {
        double bound, want = expected(c, op, o, i, count, &bound);
        if (fabs((double)res[i] - want) <= bound)
            continue;
        if (mine->wrong++ == 0) {
            mine->first_index = (int64_t)i;
            mine->got = res[i];
            mine->expected = want;
        }
    }
}

/* every rank's figures to every rank; r from them: the slowest time, the wrong elements */
static int combine(comm *c, const cc_rank_result *mine, cc_result *r)
{
    cc_rank_result *all = calloc((size_t)c->size, sizeof *all);
    comm *host = comm_host(c);
    if (!all)
        return comm_fail(c, "comm-check", "out of host memory");
    if (host->ops->allgather(host, mine, all, sizeof *mine)) {
        if (host != c)
            snprintf(c->error, sizeof c->error, "%s", host->error);
        free(all);
        return 1;
    }
    for (int k = 0; k < c->size; k++) {
        r->time_us = fmax(r->time_us, all[k].time_us);
        r->wrong += all[k].wrong;
        if (all[k].wrong && r->first_bad_rank < 0) {
            r->first_bad_rank = k;
            r->first_bad_index = all[k].first_index;
            r->got = all[k].got;
            r->expected = all[k].expected;
        }
    }
    free(all);
    return 0;
}

/* the result of the last collective, downloaded from the device into the host buffers */
static int fetch_result(comm *c, cc_op op, cc_bufs *b)
{
    device *d = buffers_device(c);
    int in_place = op == CC_ALLREDUCE || op == CC_BROADCAST;
    if (d)
        d->ops->download(d, in_place ? b->in : b->out, in_place ? b->din : b->dout);
    return device_ok(c, "downloading the result");
}

/* the iterations, timed; the fault injection spoils the result after each (on the host copy of
 * the last one when the buffers are device memory) */
static int time_iters(comm *c, cc_op op, const cc_options *o, cc_bufs *b, size_t count,
                      double *us)
{
    double total = 0;
    int dev = buffers_device(c) != NULL;
    for (int it = -o->warmup; it < o->iters; it++) {
        if (fill(c, op, o, b) || c->ops->barrier(c))
            return 1;
        double t0 = now_ms();
        if (run_op(c, op, b, count))
            return 1;
        if (it >= 0)
            total += now_ms() - t0;
        if (!dev && c->rank == o->fault_rank) /* a transfer to this rank gone wrong */
            ((float *)result(op, b))[0] += 1000.0f;
    }
    if (fetch_result(c, op, b))
        return 1;
    if (dev && c->rank == o->fault_rank)
        ((float *)result(op, b))[0] += 1000.0f;
    *us = total * 1e3 / o->iters;
    return 0;
}

/* the floats per rank of a requested size: whole floats per rank, at least one */
static size_t row_count(cc_op op, size_t bytes, int world, size_t *per)
{
    *per = op == CC_ALLGATHER || op == CC_REDUCESCATTER ? (size_t)world : 1;
    size_t count = bytes / sizeof(float) / *per;
    return count ? count : 1;
}

size_t cc_row_bytes(cc_op op, size_t bytes, int world)
{
    size_t per;
    size_t count = row_count(op, bytes, world, &per);
    return count * per * sizeof(float);
}

int cc_run_one(comm *c, cc_op op, size_t bytes, const cc_options *o, cc_result *r)
{
    size_t per;
    size_t count = row_count(op, bytes, c->size, &per);
    memset(r, 0, sizeof *r);
    *r = (cc_result){op, count * per * sizeof(float), count, o->iters, 0, 0, 0, 0, -1, -1,
                     0, 0};
    cc_bufs b = {0};
    cc_rank_result mine = {0};
    int rc = alloc_bufs(c, op, count, &b);
    if (!rc)
        rc = time_iters(c, op, o, &b, count, &mine.time_us);
    if (!rc) {
        check(c, op, o, &b, count, &mine);
        rc = combine(c, &mine, r);
    }
    free_bufs(c, &b);
    if (rc)
        return 1;
    double s = r->time_us / 1e6;
    r->algbw = s > 0 ? (double)r->bytes / s / 1e9 : 0;
    r->busbw = r->algbw * cc_busbw_factor(op, c->size);
    return 0;
}
