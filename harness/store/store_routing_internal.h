/* harness/store/store_routing_internal.h: private to harness/store: writing a step's sparse-MoE
 * expert counts (table expert_tokens) in the same transaction as the step itself. */
#ifndef STORE_ROUTING_INTERNAL_H
#define STORE_ROUTING_INTERNAL_H

#include <stdint.h>

#include "store.h"

/* 1 when r carries expert counts (expert_tokens set, moe_layers and moe_experts > 0) */
int routing_present(const step_record *r);
/* Replaces the counts of (run_id, r->step) by r's (after checking the shape against the limits
 * and every count >= 0). The caller holds a transaction (routing_begin). 0, or 1 after a
 * message. */
int routing_put(store *st, int64_t run_id, const step_record *r);
/* SAVEPOINT name: a transaction of its own, or nested in the caller's. 0 or 1. */
int routing_begin(store *st, const char *name);
/* rc 0: RELEASE name (commits when it began the transaction); else ROLLBACK TO and RELEASE.
 * Returns rc, or 1 when the release failed. */
int routing_end(store *st, const char *name, int rc);

#endif
