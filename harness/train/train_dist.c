/* harness/train/train_dist.c: the data-parallel part of a training step: gradients summed over
 * micro-batches and ranks (on the host, or on the device for nccl), per-rank figures gathered. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_dist_internal.h"
#include "util/util.h"

int dist_active(const dist_state *ds)
{
    return ds->accum > 1 || (ds->c && ds->c->size > 1);
}

/* the device sum of the micro-batches (accum > 1; else the gradients are reduced in place) */
static int init_on_device(dist_state *ds)
{
    if (!ds->ranks) {
        log_error("out of host memory for the ranks' figures");
        return EXIT_FAIL;
    }
    if (ds->c->dev != ds->dev) {
        log_error("the %s communicator moves the memory of another device than the model's",
                  ds->c->ops->name);
        return EXIT_FAIL;
    }
    if (!dist_active(ds) || ds->accum == 1)
        return 0;
    ds->dsum = device_alloc(ds->dev, ds->n, DT_REAL);
    if (!ds->dsum.buf) {
        log_error("allocating the gradient sum (%zu elements) on the device: %s", ds->n,
                  device_error(ds->dev) ? device_error(ds->dev) : "failed");
        return EXIT_FAIL;
    }
    return 0;
}

/* an fp64 device's host buffers: the sums in double, and every rank's gathered (world > 1) */
static int init_host_f64(dist_state *ds, int size)
{
    ds->grads64 = malloc(ds->n * sizeof *ds->grads64);
    ds->sum64 = malloc(ds->n * sizeof *ds->sum64);
    if (size > 1)
        ds->ranks64 = malloc(size_mul((uint64_t)size, ds->n * sizeof *ds->ranks64));
    if (!ds->ranks || !ds->grads64 || !ds->sum64 || (size > 1 && !ds->ranks64)) {
        log_error("out of host memory for %zu fp64 gradients (%d rank%s)", ds->n, size,
                  size == 1 ? "" : "s");
        return EXIT_FAIL;
    }
    return 0;
}

int dist_init(dist_state *ds, comm *c, int accum, model *m)
{
    memset(ds, 0, sizeof *ds);
    ds->c = c;
    ds->accum = accum;
    ds->n = model_param_count(m);
    int size = c ? c->size : 1;
    ds->on_device = c && c->ops->device_buffers;
    ds->dev = model_device(m);
    ds->ranks = calloc((size_t)size, sizeof *ds->ranks);
    if (ds->on_device)
        return init_on_device(ds);
    if (dist_active(ds) && ds->dev->real_size == sizeof(double))
        return init_host_f64(ds, size);
    if (dist_active(ds)) {
        ds->grads = malloc(ds->n * sizeof *ds->grads);
        ds->sum = malloc(ds->n * sizeof *ds->sum);
    }
    if (!ds->ranks || (dist_active(ds) && (!ds->grads || !ds->sum))) {
        log_error("out of host memory for %zu gradients", ds->n);
        return EXIT_FAIL;
    }
    return 0;
}

void dist_free(dist_state *ds)
{
    if (ds->dsum.buf)
        device_free(ds->dev, ds->dsum);
    free(ds->grads);
    free(ds->sum);
    free(ds->grads64);
    free(ds->sum64);
    free(ds->ranks64);
    free(ds->ranks);
    memset(ds, 0, sizeof *ds);
}

/* the device ops take int counts: whole views of at most INT_MAX elements */
#define DEVICE_CHUNK ((size_t)INT_MAX)

/* dst += src on the device, in float as the host sum does */
static void device_accumulate(device *d, dten dst, dten src)
{
    for (size_t off = 0; off < dst.n; off += DEVICE_CHUNK) {
        size_t k = dst.n - off < DEVICE_CHUNK ? dst.n - off : DEVICE_CHUNK;
        d->ops->accumulate(d, dten_view(dst, off, k), dten_view(src, off, k), (int)k);
    }
}

/* x *= s on the device: each element times the float s, as the host does */
static void device_scale(device *d, dten x, float s)
{
    for (size_t off = 0; off < x.n; off += DEVICE_CHUNK) {
        size_t k = x.n - off < DEVICE_CHUNK ? x.n - off : DEVICE_CHUNK;
        d->ops->scale(d, dten_view(x, off, k), (double)s, (int)k);
    }
}

/* the micro-batch's gradients into the device sum (accum > 1) */
static int accumulate_on_device(dist_state *ds, model *m, int a)
{
    if (ds->accum == 1)
        return 0;
    device *d = ds->dev;
    dten g = model_all_grads(m);
    if (a == 0)
        d->ops->copy(d, ds->dsum, g);
    else
        device_accumulate(d, ds->dsum, g);
    return device_error(d) ? 1 : 0;
}

/* an fp64 device's micro-batch gradients, summed in double on the host */
static int accumulate_f64(dist_state *ds, model *m, int a)
{
    device *d = ds->dev;
    d->ops->download_f64(d, a == 0 ? ds->sum64 : ds->grads64, model_all_grads(m));
    if (device_error(d)) /* the training loop reports the device's sticky error */
        return 1;
    if (a > 0)
        for (size_t i = 0; i < ds->n; i++)
            ds->sum64[i] += ds->grads64[i];
    return 0;
}

int dist_accumulate(dist_state *ds, model *m, int a)
{
    if (!dist_active(ds))
        return 0;
    if (ds->on_device)
        return accumulate_on_device(ds, m, a);
    if (ds->sum64)
        return accumulate_f64(ds, m, a);
    if (model_get_weights(m, a == 0 ? ds->sum : ds->grads, 1))
        return 1;
    if (a > 0)
        for (size_t i = 0; i < ds->n; i++)
            ds->sum[i] += ds->grads[i];
    return 0;
}

/* the sum over the ranks of the device sum (or of the gradients in place), times scale, as the
 * model's gradients: every step in device memory, in the device's stream order */
static int reduce_on_device(dist_state *ds, model *m, float scale, char *err, size_t len)
{
    device *d = ds->dev;
    comm *c = ds->c;
    dten g = model_all_grads(m), sum = ds->accum > 1 ? ds->dsum : g;
    if (c->ops->allreduce_sum_f32(c, comm_address(c, sum), ds->n)) {
        snprintf(err, len, "%s", c->error);
        return 1;
    }
    device_scale(d, sum, scale);
    if (ds->accum > 1)
        d->ops->copy(d, g, sum);
    if (device_error(d)) {
        snprintf(err, len, "averaging the gradients on the device: %s", device_error(d));
        return 1;
    }
    return 0;
}

/* an fp64 device: every rank's double sum gathered (the host communicators' collectives are
 * fp32) and added in rank order, the same bits on every rank, times scale, uploaded */
static int reduce_f64(dist_state *ds, model *m, double scale, char *err, size_t len)
{
    comm *c = ds->c;
    if (c && c->size > 1) {
        if (c->ops->allgather(c, ds->sum64, ds->ranks64, ds->n * sizeof *ds->sum64)) {
            snprintf(err, len, "%s", c->error);
            return 1;
        }
        for (size_t i = 0; i < ds->n; i++) {
            double total = 0;
            for (int k = 0; k < c->size; k++)
                total += ds->ranks64[(size_t)k * ds->n + i];
            ds->sum64[i] = total;
        }
    }
    for (size_t i = 0; i < ds->n; i++)
        ds->sum64[i] *= scale;
    device *d = model_device(m);
    d->ops->upload_f64(d, model_all_grads(m), ds->sum64);
    if (device_error(d)) {
        snprintf(err, len, "uploading the reduced gradients: %s", device_error(d));
        return 1;
    }
    return 0;
}

int dist_reduce(dist_state *ds, model *m, char *err, size_t len)
{
    if (!dist_active(ds))
        return 0;
    int size = ds->c ? ds->c->size : 1;
    float scale = (float)(1.0 / ((double)ds->accum * size));
    if (ds->on_device)
        return reduce_on_device(ds, m, scale, err, len);
    if (ds->sum64)
        return reduce_f64(ds, m, 1.0 / ((double)ds->accum * size), err, len);
    if (ds->c && comm_allreduce_scaled(ds->c, ds->sum, ds->n, scale)) {
        snprintf(err, len, "%s", ds->c->error);
        return 1;
    }
    if (!ds->c)
        for (size_t i = 0; i < ds->n; i++)
            ds->sum[i] *= scale;
    device *d = model_device(m);
    d->ops->upload(d, model_all_grads(m), ds->sum);
    if (device_error(d)) {
        snprintf(err, len, "uploading the reduced gradients: %s", device_error(d));
        return 1;
    }
    return 0;
}

/* the run's step record from every rank's figures, summed in rank order */
static void combine_ranks(const dist_rank_step *all, int size, step_record *r, int *stop)
{
    double loss = 0, ms = 0;
    int64_t tokens = 0, peak = 0, used = 0;
    *stop = 0;
    for (int k = 0; k < size; k++) {
        loss += all[k].loss;
        ms = fmax(ms, all[k].step_ms);
        tokens += all[k].tokens;
        peak = all[k].mem_peak > peak ? all[k].mem_peak : peak;
        used = all[k].mem_used > used ? all[k].mem_used : used;
        *stop |= all[k].stop != 0;
    }
    r->loss = loss / size;
    r->tokens = tokens;
    r->step_ms = ms;
    r->tokens_per_s = ms > 0 ? tokens / (ms / 1e3) : 0;
    r->mem_peak_bytes = peak;
    r->mem_used_bytes = used;
    r->mem_total_bytes = all[0].mem_total;
    r->threads = all[0].threads;
}

int dist_gather_step(dist_state *ds, const dist_rank_step *mine, step_record *r, int *stop,
                     char *err, size_t len)
{
    int size = ds->c ? ds->c->size : 1;
    comm *host = ds->c ? comm_host(ds->c) : NULL;
    if (host && host->ops->allgather(host, mine, ds->ranks, sizeof *mine)) {
        snprintf(err, len, "%s", host->error);
        return 1;
    }
    if (!ds->c)
        ds->ranks[0] = *mine;
    combine_ranks(ds->ranks, size, r, stop);
    return 0;
}

int dist_sum_counts(dist_state *ds, int64_t *counts, size_t n, int64_t *all, char *err,
                    size_t len)
{
    if (!ds->c || ds->c->size == 1)
        return 0;
    comm *host = comm_host(ds->c);
    if (host->ops->allgather(host, counts, all, n * sizeof *counts)) {
        snprintf(err, len, "%s", host->error);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t total = 0;
        for (int k = 0; k < host->size; k++)
            total += all[(size_t)k * n + i];
        counts[i] = total;
    }
    return 0;
}

/* sha256 of the weights' bytes on this rank */
static int weights_digest(model *m, char hex[65])
{
    size_t n = model_param_count(m);
    float *w = malloc(n * sizeof *w);
    if (!w) {
        log_error("out of host memory for %zu weights", n);
        return EXIT_FAIL;
    }
    int rc = model_get_weights(m, w, 0);
    if (!rc)
        sha256_hex(w, n * sizeof *w, hex);
    free(w);
    return rc ? EXIT_FAIL : 0;
}

int dist_check_replicas(comm *gc, model *m)
{
    if (!gc || gc->size == 1)
        return 0;
    comm *c = comm_host(gc);
    char mine[65], *all = malloc((size_t)c->size * 65);
    if (!all || weights_digest(m, mine)) {
        free(all);
        return EXIT_FAIL;
    }
    int rc = c->ops->allgather(c, mine, all, 65);
    if (rc)
        log_error("checking the initial weights: %s", c->error);
    for (int k = 1; !rc && k < c->size; k++)
        if (memcmp(all, all + (size_t)k * 65, 65) != 0) {
            if (c->rank == 0) /* every rank sees it; one says it */
                log_error("the initial weights of rank %d (sha256 %.16s...) differ from rank "
                          "0's (%.16s...)", k, all + (size_t)k * 65, all);
            rc = EXIT_FAIL;
        }
    free(all);
    return rc;
}
