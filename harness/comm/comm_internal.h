/* harness/comm/comm_internal.h: private to comm/: the point-to-point transport under the host
 * communicators, and the collectives built on it in a fixed order (comm_rooted.c). */
#ifndef COMM_INTERNAL_H
#define COMM_INTERNAL_H

#include "comm.h"

/* Blocking point-to-point messages between rank 0 and one other rank, each wait bounded by
 * c->timeout_s and c->stop. 0, or 1 with c->error naming call and peer. */
typedef struct {
    int (*send)(comm *c, const char *call, int peer, const void *buf, size_t bytes);
    int (*recv)(comm *c, const char *call, int peer, void *buf, size_t bytes);
} comm_transport;

/* the collectives of comm_ops over a transport: gathered to rank 0 in rank order, summed there
 * in double, sent back; t is found through c->impl's first member */
int rooted_allreduce_sum_f32(comm *c, float *buf, size_t n);
int rooted_reducescatter_sum_f32(comm *c, const float *in, float *out, size_t n);
int rooted_allgather(comm *c, const void *in, void *out, size_t bytes);
int rooted_broadcast(comm *c, void *buf, size_t bytes, int root);
int rooted_barrier(comm *c);

/* c->impl of a rooted communicator starts with its transport */
typedef struct {
    const comm_transport *t;
} comm_rooted_impl;

/* mpi (comm_mpi.c): 0, 1 or 2 as comm_open */
int comm_mpi_open(const comm_env *env, double timeout_s, volatile sig_atomic_t *stop, comm **out);

/* the pause of a wait loop between polls (round: polls so far) */
void comm_poll_pause(int round);

#endif
