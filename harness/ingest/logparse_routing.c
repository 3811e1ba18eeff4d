/* harness/ingest/logparse_routing.c: the "expert_tokens" field of a HARNESS_STEP line (a sparse-MoE
 * step's routing, docs/workloads.md): a JSON array of layers of per-expert counts, checked. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "logparse.h"
#include "store/store.h"

/* the shape of root ([[...], ...], every row as long) into *layers, *experts; 0 or -1 */
static int grid_shape(json_t *root, int *layers, int *experts, char *why, size_t n)
{
    if (!json_is_array(root) || json_array_size(root) == 0 ||
        !json_is_array(json_array_get(root, 0))) {
        snprintf(why, n, "not an array of layers, each an array of per-expert counts");
        return -1;
    }
    size_t l = json_array_size(root), e = json_array_size(json_array_get(root, 0));
    if (l > STORE_MOE_MAX_LAYERS || e > STORE_MOE_MAX_EXPERTS) {
        snprintf(why, n, "%zu layers x %zu experts: over the limits (%d, %d)", l, e,
                 STORE_MOE_MAX_LAYERS, STORE_MOE_MAX_EXPERTS);
        return -1;
    }
    if (routing_shape_check((int)l, (int)e, why, n))
        return -1;
    *layers = (int)l;
    *experts = (int)e;
    return 0;
}

/* every count of root into c (layers x experts, row-major); 0 or -1 */
static int grid_counts(json_t *root, int layers, int experts, int64_t *c, char *why, size_t n)
{
    for (int l = 0; l < layers; l++) {
        json_t *row = json_array_get(root, (size_t)l);
        if (!json_is_array(row) || json_array_size(row) != (size_t)experts) {
            snprintf(why, n, "layer %d: not an array of %d counts (layer 0's length)", l, experts);
            return -1;
        }
        for (int e = 0; e < experts; e++) {
            json_t *v = json_array_get(row, (size_t)e);
            if (!json_is_integer(v) || json_integer_value(v) < 0) {
                snprintf(why, n, "layer %d, expert %d: not a whole number >= 0", l, e);
                return -1;
            }
            c[(size_t)l * experts + e] = (int64_t)json_integer_value(v);
        }
    }
    return 0;
}

int lp_expert_tokens(const char *text, size_t len, int64_t **counts, size_t *cap, int *layers,
                     int *experts, char *why, size_t n)
{
    json_error_t e;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    int l = 0, x = 0, rc = -1;
    if (!root)
        snprintf(why, n, "not JSON: %s", e.text);
    else if (grid_shape(root, &l, &x, why, n) == 0) {
        size_t need = (size_t)l * (size_t)x; /* <= STORE_MOE_MAX_CELLS */
        if (need > *cap) {
            int64_t *grown = realloc(*counts, need * sizeof *grown);
            if (grown) {
                *counts = grown;
                *cap = need;
            }
        }
        if (need > *cap)
            snprintf(why, n, "out of memory for %zu counts", need);
        else if ((rc = grid_counts(root, l, x, *counts, why, n)) == 0) {
            *layers = l;
            *experts = x;
        }
    }
    json_decref(root);
    return rc;
}
