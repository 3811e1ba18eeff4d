/* harness/comm/comm_rooted.c: the collectives of the host communicators over a point-to-point
 * transport: every rank's data to rank 0 in rank order, summed there in double, sent back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

/* floats reduced per round: the root holds one such chunk of every kind at a time */
#define REDUCE_CHUNK ((size_t)1 << 20)

static const comm_transport *transport(comm *c)
{
    return ((comm_rooted_impl *)c->impl)->t;
}

/* on rank 0: buf[n] += every other rank's buf[n], rank 1 first, in double; on the others: send
 * buf. Chunked so the root's scratch stays small; the same chunks on every rank. */
static int reduce_to_root(comm *c, const char *call, float *buf, size_t n)
{
    const comm_transport *t = transport(c);
    if (c->rank != 0) {
        for (size_t off = 0; off < n; off += REDUCE_CHUNK) {
            size_t k = n - off < REDUCE_CHUNK ? n - off : REDUCE_CHUNK;
            if (t->send(c, call, 0, buf + off, k * sizeof *buf))
                return 1;
        }
        return 0;
    }
    size_t cap = n < REDUCE_CHUNK ? n : REDUCE_CHUNK;
    float *part = malloc((cap ? cap : 1) * sizeof *part);
    double *acc = malloc((cap ? cap : 1) * sizeof *acc);
    int rc = part && acc ? 0 : comm_fail(c, call, "out of host memory for %zu floats", cap);
    for (size_t off = 0; !rc && off < n; off += REDUCE_CHUNK) {
        size_t k = n - off < REDUCE_CHUNK ? n - off : REDUCE_CHUNK;
        for (size_t j = 0; j < k; j++)
            acc[j] = buf[off + j];
        for (int r = 1; !rc && r < c->size; r++) {
            rc = t->recv(c, call, r, part, k * sizeof *part);
            for (size_t j = 0; !rc && j < k; j++)
                acc[j] += part[j];
        }
        for (size_t j = 0; !rc && j < k; j++)
            buf[off + j] = (float)acc[j];
    }
    free(part);
    free(acc);
    return rc;
}

/* rank 0's buf[bytes] to every other rank, rank 1 first (skip: a rank that has it already) */
static int send_from_root(comm *c, const char *call, void *buf, size_t bytes, int skip)
{
    const comm_transport *t = transport(c);
    if (c->rank != 0)
        return c->rank == skip ? 0 : t->recv(c, call, 0, buf, bytes);
    for (int r = 1; r < c->size; r++)
        if (r != skip && t->send(c, call, r, buf, bytes))
            return 1;
    return 0;
}

int rooted_allreduce_sum_f32(comm *c, float *buf, size_t n)
{
    if (reduce_to_root(c, "allreduce", buf, n))
        return 1;
    return send_from_root(c, "allreduce", buf, n * sizeof *buf, -1);
}

int rooted_reducescatter_sum_f32(comm *c, const float *in, float *out, size_t n)
{
    const comm_transport *t = transport(c);
    size_t all = n * (size_t)c->size;
    if (c->rank != 0) {
        if (reduce_to_root(c, "reducescatter", (float *)in, all))
            return 1;
        return t->recv(c, "reducescatter", 0, out, n * sizeof *out);
    }
    float *sum = malloc((all ? all : 1) * sizeof *sum);
    if (!sum)
        return comm_fail(c, "reducescatter", "out of host memory for %zu floats", all);
    memcpy(sum, in, all * sizeof *sum);
    int rc = reduce_to_root(c, "reducescatter", sum, all);
    for (int r = 1; !rc && r < c->size; r++)
        rc = t->send(c, "reducescatter", r, sum + (size_t)r * n, n * sizeof *sum);
    if (!rc)
        memcpy(out, sum, n * sizeof *sum);
    free(sum);
    return rc;
}

int rooted_allgather(comm *c, const void *in, void *out, size_t bytes)
{
    const comm_transport *t = transport(c);
    size_t all = bytes * (size_t)c->size;
    if (c->rank != 0) {
        if (t->send(c, "allgather", 0, in, bytes))
            return 1;
    } else {
        memmove(out, in, bytes);
        for (int r = 1; r < c->size; r++)
            if (t->recv(c, "allgather", r, (char *)out + (size_t)r * bytes, bytes))
                return 1;
    }
    return send_from_root(c, "allgather", out, all, -1);
}

int rooted_broadcast(comm *c, void *buf, size_t bytes, int root)
{
    if (root < 0 || root >= c->size)
        return comm_fail(c, "broadcast", "root %d is not a rank of %d", root, c->size);
    const comm_transport *t = transport(c);
    if (root != 0 && c->rank == root && t->send(c, "broadcast", 0, buf, bytes))
        return 1;
    if (root != 0 && c->rank == 0 && t->recv(c, "broadcast", root, buf, bytes))
        return 1;
    return send_from_root(c, "broadcast", buf, bytes, root);
}

int rooted_barrier(comm *c)
{
    char one = 1, *all = calloc((size_t)c->size, 1);
    if (!all)
        return comm_fail(c, "barrier", "out of host memory");
    int rc = rooted_allgather(c, &one, all, 1);
    if (rc) { /* the error names the barrier, not the allgather it is made of */
        char inner[COMM_ERR];
        memcpy(inner, c->error, sizeof inner);
        snprintf(c->error, sizeof c->error, "barrier: %.*s", COMM_ERR - 16, inner);
    }
    free(all);
    return rc;
}
