/* harness/cli/show_routing.h: `harness show`'s sparse-MoE routing: per-step lines and the last step's
 * table per layer as text, the full counts as JSON. Private to harness/cli. */
#ifndef SHOW_ROUTING_H
#define SHOW_ROUTING_H

#include <jansson.h>
#include <stdio.h>

#include "store/store.h"

/* the routing section of `show` (nothing when t has no counts) */
void show_routing_text(FILE *f, const routing_table *t);
/* the counts of step i of t as [[layer 0's experts], [layer 1's], ...]; NULL when out of memory */
json_t *show_routing_step_json(const routing_table *t, int i);

#endif
