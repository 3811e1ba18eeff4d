/* tests/test_topk_ties.c: top-k ties broken as torch.topk breaks them on CPU: the selection of
 * devices/topk_select.h and topk_router_forward on cpu, cpu64 and opencl against torch's ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "topk_select.h"
#include "testutil.h"

/* The fixture tests/data/topk_ties.txt comes from tools/make_topk_fixture.py (torch and
 * transformers): one row a line, "E K logits[E] topk_ids[K] router_ids[K]", '#' a comment. */
#define MAX_ROWS 1024
#define MAX_K 64

typedef struct {
    int E, K;
    float x[TOPK_MAX_EXPERTS];
    int topk[MAX_K], router[MAX_K];
} tie_row;

static tie_row *rows;
static int nrows;

/* one fixture line into r; 0 with a message naming the line when it does not parse */
static int parse_row(char *s, int line, tie_row *r)
{
    char *end;
    r->E = (int)strtol(s, &end, 10);
    r->K = (int)strtol(end, &end, 10);
    if (r->E < 1 || r->E > TOPK_MAX_EXPERTS || r->K < 1 || r->K > r->E || r->K > MAX_K) {
        print_error("topk_ties.txt line %d: E=%d K=%d out of range\n", line, r->E, r->K);
        return 0;
    }
    for (int e = 0; e < r->E; e++) {
        char *at = end;
        r->x[e] = strtof(at, &end);
        if (end == at)
            return print_error("topk_ties.txt line %d: logit %d missing\n", line, e), 0;
    }
    for (int k = 0; k < 2 * r->K; k++) {
        char *at = end;
        long id = strtol(at, &end, 10);
        if (end == at || id < 0 || id >= r->E)
            return print_error("topk_ties.txt line %d: id %d missing or bad\n", line, k), 0;
        (k < r->K ? r->topk : r->router)[k % r->K] = (int)id;
    }
    return 1;
}

static int load_rows(void **state)
{
    (void)state;
    const char *src = getenv("HARNESS_SOURCE");
    char path[1024], buf[16384];
    snprintf(path, sizeof path, "%s/tests/data/topk_ties.txt", src ? src : "..");
    FILE *f = fopen(path, "r");
    rows = calloc(MAX_ROWS, sizeof *rows);
    if (!f || !rows) {
        print_error("%s: %s\n", path, f ? "out of memory" : "cannot open");
        return -1;
    }
    int line = 0, ok = 1;
    while (ok && fgets(buf, sizeof buf, f)) {
        line++;
        if (buf[0] == '#')
            continue;
        ok = nrows < MAX_ROWS && parse_row(buf, line, &rows[nrows++]);
    }
    fclose(f);
    return ok && nrows > 100 ? 0 : -1;
}

static int free_rows(void **state)
{
    (void)state;
    free(rows);
    return 0;
}

static void ids_equal(const int *got, const int *want, int K, int row, const char *what)
{
    for (int k = 0; k < K; k++)
        if (got[k] != want[k])
            fail_msg("%s: fixture row %d (E=%d K=%d): id[%d] = %d, torch gives %d", what, row,
                     rows[row].E, K, k, got[k], want[k]);
}

/* topk_select on the logits themselves gives torch.topk(logits, K).indices */
static void test_select_matches_torch(void **state)
{
    (void)state;
    int paths[2] = {0, 0};
    for (int r = 0; r < nrows; r++) {
        topk_pair q[TOPK_MAX_EXPERTS];
        int got[MAX_K];
        for (int e = 0; e < rows[r].E; e++)
            q[e] = (topk_pair){rows[r].x[e], e};
        topk_select(q, rows[r].E, rows[r].K);
        for (int k = 0; k < rows[r].K; k++)
            got[k] = q[k].i;
        ids_equal(got, rows[r].topk, rows[r].K, r, "topk_select");
        paths[rows[r].K * 64 <= rows[r].E]++;
    }
    assert_true(paths[0] > 0 && paths[1] > 0); /* both nth_element and partial_sort taken */
}

/* topk_router_forward on one device gives torch.topk's ids of the logits for every fixture row;
 * these are the router's ids except where torch's fp32 softmax rounds neighbouring logits to
 * equal probabilities (device.h), rows the fixture shows and this counts */
static void router_rows_on(const char *spec)
{
    char err[DEVICE_ERR];
    device *d = device_open(spec, err, sizeof err);
    if (!d) {
        if (strcmp(spec, "opencl") == 0) {
            print_message("  (no opencl device: %s)\n", err);
            return;
        }
        fail_msg("device_open(%s): %s", spec, err);
    }
    int rounded = 0; /* rows whose router ids differ from topk(logits) */
    for (int r = 0; r < nrows; r++) {
        int E = rows[r].E, K = rows[r].K, ids[MAX_K];
        double x[TOPK_MAX_EXPERTS];
        for (int e = 0; e < E; e++)
            x[e] = rows[r].x[e];
        dten w = device_alloc(d, (size_t)K, DT_REAL), id = device_alloc(d, (size_t)K, DT_I32);
        dten p = device_alloc(d, (size_t)E, DT_REAL), lg = device_alloc(d, (size_t)E, DT_REAL);
        assert_true(w.buf && id.buf && p.buf && lg.buf);
        d->ops->upload_f64(d, lg, x);
        d->ops->topk_router_forward(d, w, id, p, lg, 1, E, K, 1);
        int32_t got[MAX_K];
        d->ops->download_i32(d, got, id);
        if (device_error(d))
            fail_msg("%s: %s", spec, device_error(d));
        for (int k = 0; k < K; k++)
            ids[k] = got[k];
        ids_equal(ids, rows[r].topk, K, r, spec);
        rounded += memcmp(rows[r].topk, rows[r].router, (size_t)K * sizeof(int)) != 0;
        device_free(d, w);
        device_free(d, id);
        device_free(d, p);
        device_free(d, lg);
    }
    device_close(d);
    print_message("  %s: %d rows as torch.topk, %d of them where the router's fp32 softmax "
                  "picks otherwise\n", spec, nrows, rounded);
}

static void test_router_cpu(void **state)
{
    (void)state;
    router_rows_on("cpu");
}

static void test_router_cpu64(void **state)
{
    (void)state;
    router_rows_on("cpu64");
}

static void test_router_opencl(void **state)
{
    (void)state;
    router_rows_on("opencl");
}

/* more experts than a row may hold is a device error, not a write past an array */
static void test_too_many_experts(void **state)
{
    (void)state;
    char err[DEVICE_ERR];
    device *d = device_open("cpu", err, sizeof err);
    assert_non_null(d);
    int E = TOPK_MAX_EXPERTS + 1;
    dten w = device_alloc(d, 2, DT_REAL), id = device_alloc(d, 2, DT_I32);
    dten p = device_alloc(d, (size_t)E, DT_REAL), lg = device_alloc(d, (size_t)E, DT_REAL);
    d->ops->topk_router_forward(d, w, id, p, lg, 1, E, 2, 1);
    assert_non_null(device_error(d));
    assert_non_null(strstr(device_error(d), "experts is more than the 512 a row may hold"));
    device_free(d, w);
    device_free(d, id);
    device_free(d, p);
    device_free(d, lg);
    device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_matches_torch),
        cmocka_unit_test(test_router_cpu),
        cmocka_unit_test(test_router_cpu64),
        cmocka_unit_test(test_router_opencl),
        cmocka_unit_test(test_too_many_experts),
    };
    return cmocka_run_group_tests(tests, load_rows, free_rows);
}
