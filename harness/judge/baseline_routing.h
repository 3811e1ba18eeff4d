/* harness/judge/baseline_routing.h: the expert-count section of a baseline file (format
 * harness-baseline 2, docs/baselines.md): its rows parsed and checked, written, copied. */
#ifndef BASELINE_ROUTING_H
#define BASELINE_ROUTING_H

#include <stdio.h>

#include "store/store.h"

/* what the section's parser knows between lines */
typedef struct {
    const char *file;
    int line;          /* the line being parsed, for messages */
    int declared;      /* the header's routed_steps */
    int layer_next;    /* the layer the next row must give; 0: a new step begins */
    size_t cap_counts; /* counts allocated in the table */
    int cap_steps;
} routing_parser;

/* The section's header line "expert_tokens step layer e0 e1 ..." (one name per expert of t,
 * whose shape the file's header gave). 0, or 2 after "FILE:LINE: expert_tokens: why". */
int routing_parse_header(routing_parser *rp, const routing_table *t, char *text);
/* One row "STEP LAYER COUNT...": STEP one of steps[0..n_steps) (the step table, increasing),
 * each step's layers 0, 1, ... in order, steps increasing. 0, or 2 after a message. */
int routing_parse_row(routing_parser *rp, routing_table *t, const step_record *steps,
                      int n_steps, char *text);
/* after the last line: the last step whole and as many steps as routed_steps declared. 0 or 2 */
int routing_parse_end(routing_parser *rp, const routing_table *t);

/* the section (header line and one row per step and layer); nothing when t has no counts */
void routing_write(FILE *f, const routing_table *t);
/* a deep copy; 0, or -1 when out of memory (dst then empty) */
int routing_copy(routing_table *dst, const routing_table *src);

#endif
