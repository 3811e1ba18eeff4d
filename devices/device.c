/* devices/device.c: the backend-independent part of a device: allocation with the harness's
 * own current/peak byte accounting, views, the sticky error, the ops' argument checks, close. */
#include "device.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static size_t kind_size(const device *d, dkind kind)
{
    return kind == DT_I32 ? sizeof(int32_t) : d->real_size;
}

dten device_alloc(device *d, size_t n, dkind kind)
{
    dten t = {NULL, 0, n};
    if (d->failed)
        return t;
    t.buf = d->ops->alloc(d, n, kind);
    if (!t.buf) { /* a backend that failed without saying so still leaves the device failed */
        device_fail(d, "%s: allocating %zu elements failed (the backend gave no reason)",
                    d->backend, n);
        return t;
    }
    dbuf_head *h = (dbuf_head *)(void *)t.buf;
    h->n = n;
    h->kind = kind;
    h->bytes = n * kind_size(d, kind);
    d->mem_current += h->bytes;
    if (d->mem_current > d->mem_peak)
        d->mem_peak = d->mem_current;
    return t;
}

/* frees a whole allocation (t must be what device_alloc returned, not a sub-view) */
void device_free(device *d, dten t)
{
    if (!t.buf)
        return;
    assert(t.off == 0);
    size_t bytes = ((const dbuf_head *)(const void *)t.buf)->bytes;
    d->ops->free(d, t.buf);
    d->mem_current = bytes > d->mem_current ? 0 : d->mem_current - bytes;
}

dten dten_view(dten t, size_t off, size_t n)
{
    assert(off + n <= t.n);
    dten v = {t.buf, t.off + off, n};
    return v;
}

void device_fail(device *d, const char *fmt, ...)
{
    if (d->failed)
        return; /* keep the first error: later ones are usually its consequences */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    d->failed = 1;
}

const char *device_error(const device *d)
{
    return d->failed ? d->err : NULL;
}

int device_view_ok(device *d, const char *op, const char *name, dten t, size_t need, dkind kind)
{
    if (!t.buf) {
        device_fail(d, "%s: %s: %s has no buffer", d->backend, op, name);
        return 0;
    }
    const dbuf_head *h = (const dbuf_head *)(const void *)t.buf;
    if (h->kind != kind) {
        device_fail(d, "%s: %s: %s must be %s", d->backend, op, name,
                    kind == DT_I32 ? "DT_I32" : "DT_REAL");
        return 0;
    }
    if (t.off > h->n || t.n > h->n - t.off) {
        device_fail(d, "%s: %s: %s (offset %zu, %zu elements) runs past its buffer of %zu",
                    d->backend, op, name, t.off, t.n, h->n);
        return 0;
    }
    if (t.n < need) {
        device_fail(d, "%s: %s: %s has %zu elements, the op needs %zu", d->backend, op, name,
                    t.n, need);
        return 0;
    }
    return 1;
}

int device_dims_ok(device *d, const char *op, const int *dims, int ndims, int min)
{
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < min) {
            device_fail(d, "%s: %s: size %d (argument %d of the shape) must be >= %d",
                        d->backend, op, dims[i], i + 1, min);
            return 0;
        }
    }
    return 1;
}

void device_reset_peak(device *d)
{
    d->mem_peak = d->mem_current;
}

void device_close(device *d)
{
    if (d)
        d->ops->close(d);
}
