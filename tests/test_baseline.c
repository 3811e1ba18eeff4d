/* tests/test_baseline.c: the baseline file format: write -> parse round trips bit-exactly
 * (escaped values, extra keys, NaN/Inf, awkward doubles), malformed files end in exit 2 with
 * FILE:LINE: FIELD messages, random damage never crashes, scenario JSON diffs name fields. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "judge/baseline.h"
#include "testutil.h"
#include "util/util.h"

static const char SCN[] = "{\"name\": \"t\", \"train\": {\"lr\": 0.003, \"steps\": 3}}";
/* make_baseline's: a run of two ranks (a file's world_size must be its scenario's) */
static const char SCN_WS2[] =
    "{\"name\": \"t\", \"world_size\": 2, \"train\": {\"lr\": 0.003, \"steps\": 3}}";

static void make_baseline(baseline *b, int n)
{
    memset(b, 0, sizeof *b);
    snprintf(b->label, sizeof b->label, "a100 \"quoted\" \\ tab\there");
    snprintf(b->scenario, sizeof b->scenario, "t");
    b->scenario_json = scenario_canonical_json(SCN_WS2);
    assert_non_null(b->scenario_json);
    sha256_hex(b->scenario_json, strlen(b->scenario_json), b->scenario_hash);
    snprintf(b->device, sizeof b->device, "cpu");
    snprintf(b->device_name, sizeof b->device_name, "CPU\nwith newline\x01 and `ticks`");
    snprintf(b->dtype, sizeof b->dtype, "fp32");
    snprintf(b->status, sizeof b->status, "ok");
    snprintf(b->date, sizeof b->date, "2024-01-02T03:04:05Z");
    b->world_size = 2;
    b->mem_total_bytes = INT64_MAX;
    assert_int_equal(baseline_set_extra(b, "source", "pytorch: transformers"), 0);
    assert_int_equal(baseline_set_extra(b, "torch_version", "2.1.0+cpu"), 0);
    b->steps = calloc((size_t)n, sizeof *b->steps);
    b->n_steps = n;
    const double awkward[] = {0.1, 1.0 / 3, 5e-324, 1.7976931348623157e308, -0.0, NAN, INFINITY,
                              -INFINITY, 2.5, 1e-17};
    for (int i = 0; i < n; i++) {
        step_record *r = &b->steps[i];
        r->step = 2 * i + 1;
        r->loss = 5.5451774444795623 - i * 0.0123456789012345;
        r->grad_norm = awkward[i % 10];
        r->lr = 3e-3 * i / 7;
        r->tokens = 512;
        r->step_ms = 12.345678901234567;
        r->tokens_per_s = 41472.123456789012;
        r->mem_peak_bytes = INT64_MAX - i;
        r->mem_used_bytes = 0;
        r->mem_total_bytes = 123456789012345;
    }
}

static char *to_text(const baseline *b, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(baseline_write(f, b), 0);
    fclose(f);
    return buf;
}

static void assert_same_bits(double a, double b)
{
    assert_memory_equal(&a, &b, sizeof a);
}

static void test_round_trip(void **state)
{
    baseline a, b;
    make_baseline(&a, 25);
    size_t len;
    char *text = to_text(&a, &len);
    assert_int_equal(baseline_parse(text, len, "mem.baseline", &b), 0);
    assert_string_equal(b.label, a.label);
    assert_string_equal(b.device_name, a.device_name);
    assert_string_equal(b.scenario_json, a.scenario_json);
    assert_int_equal(b.world_size, 2);
    assert_true(b.mem_total_bytes == INT64_MAX);
    assert_int_equal(b.n_extra, 2);
    assert_string_equal(b.extra[0].key, "source");
    assert_string_equal(b.extra[1].value, "2.1.0+cpu");
    assert_int_equal(b.n_steps, 25);
    for (int i = 0; i < 25; i++) {
        assert_int_equal(b.steps[i].step, a.steps[i].step);
        assert_same_bits(b.steps[i].loss, a.steps[i].loss);
        assert_same_bits(b.steps[i].lr, a.steps[i].lr);
        assert_same_bits(b.steps[i].tokens_per_s, a.steps[i].tokens_per_s);
        assert_true(b.steps[i].mem_peak_bytes == a.steps[i].mem_peak_bytes);
        if (isnan(a.steps[i].grad_norm))
            assert_true(isnan(b.steps[i].grad_norm));
        else /* every value bit for bit, but -0, which reads (as the store keeps it) as 0 */
            assert_same_bits(b.steps[i].grad_norm, a.steps[i].grad_norm == 0 ? 0.0 : a.steps[i].grad_norm);
    }
    assert_true(baseline_same(&a, &b));
    size_t len2;
    char *text2 = to_text(&b, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(text, text2, len);
    /* each line of the file is one key or one step: the device name's newline is escaped */
    assert_non_null(strstr(text, "device_name: CPU\\nwith newline\\x01 and `ticks`\n"));
    free(text);
    free(text2);
    baseline_free(&a);
    baseline_free(&b);
}

static void expect_bad(const char *text, const char *want);

/* a file's dtype edited away from its scenario_json (it sets the tolerances and a golden's
 * standing) is refused like an edited hash; fp64 (the golden device's) fits any */
static void test_dtype_fits_scenario(void **state)
{
    (void)state;
    baseline a;
    make_baseline(&a, 3);
    size_t len;
    char *text = to_text(&a, &len);
    const char *edits[][3] = {{"dtype: fp32", "dtype: bf16", "dtype: 'bf16' is not what a run"},
                              {"dtype: fp32", "dtype: fp16", "dtype: 'fp16' is not what a run"},
                              {"dtype: fp32", "dtype: fp64", NULL}, /* cpu64's: fits */
                              {"world_size: 2", "world_size: 8", NULL}}; /* a job's own count */
    for (int i = 0; i < 4; i++) {
        char *copy = strdup(text), *at = strstr(copy, edits[i][0]);
        assert_non_null(at);
        memcpy(at, edits[i][1], strlen(edits[i][1])); /* same lengths */
        if (edits[i][2]) {
            expect_bad(copy, edits[i][2]);
        } else {
            baseline b;
            assert_int_equal(baseline_parse(copy, strlen(copy), "ok.baseline", &b), 0);
            baseline_free(&b);
        }
        free(copy);
    }
    free(text);
    baseline_free(&a);
}

static void test_save_and_read(void **state)
{
    baseline a, b;
    make_baseline(&a, 3);
    const char *path = tu_temp_path(".baseline");
    assert_int_equal(baseline_save(path, &a), 0);
    assert_int_equal(baseline_read(path, &b), 0);
    assert_true(baseline_same(&a, &b));
    unlink(path);
    baseline_free(&a);
    baseline_free(&b);
    assert_int_equal(baseline_read("/nonexistent/dir/x.baseline", &b), 2);
    assert_int_equal(baseline_save("/nonexistent/dir/x.baseline", &a), 1);
}

/* a minimal valid file with optional columns missing, '-' values, CRLF, comments, extra keys */
static void test_tolerant_reading(void **state)
{
    char hash[65];
    char *canon = scenario_canonical_json(SCN);
    sha256_hex(canon, strlen(canon), hash);
    free(canon);
    char text[1024];
    snprintf(text, sizeof text,
             "# made by tools/torch_reference.py\r\n"
             "format: harness-baseline 1\r\n"
             "scenario: t\nscenario_hash: %s\ndevice: torch-cpu\ndtype: fp32\n"
             "world_size: 1\nsource: pytorch\ntransformers_version: 4.40.0\nempty:\n"
             "steps: 3\n\n"
             "step loss grad_norm\n1 5.5 -\n2\t5.4  1.25\n# a comment\n3 5.3 nan\n",
             hash);
    baseline b;
    assert_int_equal(baseline_parse(text, strlen(text), "t.baseline", &b), 0);
    assert_int_equal(b.n_steps, 3);
    assert_true(isnan(b.steps[0].grad_norm));
    assert_true(isnan(b.steps[0].tokens_per_s));
    assert_float_equal(b.steps[1].grad_norm, 1.25, 0);
    /* '-' is not recorded, a nan beside a number is; a column absent is not recorded */
    assert_true(b.steps[0].unrecorded & STEP_NO_GRAD_NORM);
    assert_false(b.steps[2].unrecorded & STEP_NO_GRAD_NORM);
    assert_true(b.steps[2].unrecorded & STEP_NO_TOKENS_PER_S);
    assert_int_equal(b.n_extra, 3);
    assert_string_equal(b.extra[2].key, "empty");
    assert_string_equal(b.extra[2].value, "");
    assert_string_equal(b.status, "ok");
    assert_null(b.scenario_json);
    baseline_free(&b);
    /* nan at every step (older versions wrote it for a grad norm never logged): not recorded */
    snprintf(text, sizeof text,
             "format: harness-baseline 1\nscenario: t\nscenario_hash: %s\ndevice: torch-cpu\n"
             "dtype: fp32\nworld_size: 1\nsteps: 2\n\nstep loss grad_norm\n1 5.5 nan\n2 5.4 nan\n",
             hash);
    assert_int_equal(baseline_parse(text, strlen(text), "t.baseline", &b), 0);
    assert_true(b.steps[0].unrecorded & STEP_NO_GRAD_NORM);
    assert_true(b.steps[1].unrecorded & STEP_NO_GRAD_NORM);
    baseline_free(&b);
}

/* a UTF-8 byte order mark at the start is skipped (an editor's); anywhere else it is text */
static void test_byte_order_mark(void **state)
{
    (void)state;
    const char *text = "\xef\xbb\xbf# a comment\nformat: harness-baseline 1\nscenario: t\n"
                       "scenario_hash: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
                       "abcdef\ndevice: cpu\ndtype: fp32\nworld_size: 1\nsteps: 1\n"
                       "step loss\n1 5.5\n";
    baseline b;
    assert_int_equal(baseline_parse(text, strlen(text), "bom.baseline", &b), 0);
    assert_int_equal(b.n_steps, 1);
    assert_string_equal(b.scenario, "t");
    baseline_free(&b);
    const char *two = "\xef\xbb\xbf\xef\xbb\xbf" "format: harness-baseline 1\n";
    assert_int_equal(baseline_parse(two, strlen(two), "bom.baseline", &b), 2);
}

/* a baseline of no steps, as the store reads one back (no steps array at all), copies: the
 * copy used to memcpy from NULL (UBSan: report with a zero-step baseline) */
static void test_copy_no_steps(void **state)
{
    (void)state;
    baseline b, d;
    memset(&b, 0, sizeof b);
    snprintf(b.scenario, sizeof b.scenario, "t");
    snprintf(b.status, sizeof b.status, "ok");
    assert_null(b.steps);
    assert_int_equal(baseline_copy(&d, &b), 0);
    assert_int_equal(d.n_steps, 0);
    assert_string_equal(d.scenario, "t");
    assert_true(baseline_same(&b, &d));
    baseline_free(&d);
    double std = 0; /* an ensemble's spread array with no steps either */
    b.loss_std = &std;
    assert_int_equal(baseline_copy(&d, &b), 0);
    assert_non_null(d.loss_std);
    baseline_free(&d);
}

/* parses text and expects exit 2 with the message naming where */
static void expect_bad(const char *text, const char *want)
{
    const char *errpath = tu_temp_path(".err");
    fflush(stderr);
    int saved = dup(2);
    FILE *err = freopen(errpath, "w", stderr);
    assert_non_null(err);
    baseline b;
    int rc = baseline_parse(text, strlen(text), "bad.baseline", &b);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *msg = read_file(errpath, NULL);
    unlink(errpath);
    assert_non_null(msg);
    if (rc != 2 || !strstr(msg, want))
        fail_msg("'%s': rc %d, message '%s', wanted '%s'", text, rc, msg, want);
    free(msg);
}

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEAD "format: harness-baseline 1\nscenario: t\nscenario_hash: " HASH "\n" \
             "device: cpu\ndtype: fp32\nworld_size: 1\n"

/* a time with an offset or a leap day is taken, and kept as UTC */
static void test_dates_to_utc(void **state)
{
    (void)state;
    const char *given[][2] = {{"2028-02-29T23:30:00.25-01:00", "2028-03-01T00:30:00.25Z"},
                              {"2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00Z"},
                              {"2026-06-30T12:00:00", "2026-06-30T12:00:00Z"},
                              {"2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"}};
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, HEAD "date: %s\nsteps: 1\nstep loss\n1 2.0\n", given[i][0]);
        baseline b;
        assert_int_equal(baseline_parse(text, strlen(text), "t.baseline", &b), 0);
        assert_string_equal(b.date, given[i][1]);
        baseline_free(&b);
    }
}

static void test_malformed(void **state)
{
    expect_bad("", "bad.baseline:1: format: missing");
    expect_bad("hello world\n", "bad.baseline:1: expected 'key: value'");
    expect_bad("format: harness-baseline 4\n", "bad.baseline:1: format: 'harness-baseline 4' is a version");
    expect_bad("format: csv\n", "bad.baseline:1: format: 'csv' is not a harness baseline");
    expect_bad("scenario: t\n", "bad.baseline:1: scenario: the first key must be 'format");
    expect_bad(HEAD "steps: 1\n", "bad.baseline:8: step table: missing");
    expect_bad(HEAD "steps: 2\nstep loss\n1 2.0\n", "bad.baseline:10: steps: the header says 2 steps, the table has 1");
    expect_bad(HEAD "steps: 1\nstep loss\n1 2.0 3.0\n", "bad.baseline:9: step table: more values");
    expect_bad(HEAD "steps: 1\nstep loss lr\n1 2.0\n", "bad.baseline:9: step table: 2 values, the header names 3");
    expect_bad(HEAD "steps: 1\nstep loss\n1 two\n", "bad.baseline:9: loss: 'two' is not a number");
    expect_bad(HEAD "steps: 1\nstep loss\n1 2.0x\n", "loss: '2.0x' is not a number");
    expect_bad(HEAD "steps: 1\nstep loss\n0 2.0\n", "bad.baseline:9: step: '0' is not a whole number");
    expect_bad(HEAD "steps: 1\nstep loss\n- 2.0\n", "step: '-' is not a whole number");
    expect_bad(HEAD "steps: 2\nstep loss\n2 2.0\n2 2.0\n", "bad.baseline:10: step: 2 after step 2");
    expect_bad(HEAD "steps: 1\nstep loss\n1 2 junk\n", "more values than the 2 columns");
    expect_bad(HEAD "steps: 1\nstep loss bogus\n", "bad.baseline:8: step table: unknown column 'bogus'");
    expect_bad(HEAD "steps: 1\nstep loss loss\n", "column 'loss' given twice");
    expect_bad(HEAD "steps: 1\nstep lr\n", "must start with 'step' and name 'loss'");
    expect_bad(HEAD "steps: 1\nstep loss tokens\n1 2.0 -5\n", "tokens: '-5' is not a whole number");
    expect_bad(HEAD "steps: 1\nstep loss tokens\n1 2.0 99999999999999999999\n", "tokens:");
    expect_bad(HEAD "steps: x\n", "bad.baseline:7: steps: 'x' is not a whole number");
    expect_bad(HEAD "steps: -1\n", "steps: '-1' is not a whole number");
    expect_bad("format: harness-baseline 1\nworld_size: 0\n", "bad.baseline:2: world_size:");
    expect_bad("format: harness-baseline 1\ndate: yesterday\n", "bad.baseline:2: date: 'yesterday' is not");
    expect_bad("format: harness-baseline 1\nfinished_at: 2026-11-21 23:03:45\n", "finished_at:");
    /* the shape right, a field out of its range (they were stored as written) */
    const char *impossible[] = {"2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "0000-00-00T00:00:00Z",
                                "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z", "2026-01-01T00:00:60Z",
                                "2026-04-31T00:00:00Z", "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00-01:60"};
    for (size_t i = 0; i < sizeof impossible / sizeof impossible[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "format: harness-baseline 1\ndate: %s\n", impossible[i]);
        expect_bad(text, "bad.baseline:2: date: '");
    }
    expect_bad(HEAD "world_size: 2\n", "bad.baseline:7: world_size: given twice");
    expect_bad(HEAD "source: a\nsource: b\n", "bad.baseline:8: source: given twice");
    expect_bad(HEAD "status: diverged\n", "status: 'diverged': a baseline is a finished run");
    expect_bad(HEAD "label: a\\qb\n", "bad.baseline:7: label: unknown escape '\\q'");
    /* \x00 is refused as a NUL, by name; a \x without two hex digits and a lone backslash
     * say what is wrong with them */
    expect_bad(HEAD "label: a\\x00b\n", "bad.baseline:7: label: '\\x00' is a NUL byte");
    expect_bad(HEAD "host: \\x00\n", "bad.baseline:7: host: '\\x00' is a NUL byte");
    expect_bad(HEAD "label: a\\xg1\n", "label: '\\x' needs two hex digits (\\xHH), got '\\xg1'");
    expect_bad(HEAD "label: a\\x4\n", "label: '\\x' needs two hex digits");
    expect_bad(HEAD "label: a\\x\n", "label: '\\x' needs two hex digits");
    expect_bad(HEAD "label: ab\\\n", "bad.baseline:7: label: a lone '\\' ends the value");
    /* the required keys hold a value, and the scenario is the one scenario_json names */
    expect_bad("format: harness-baseline 1\nscenario: \n", "bad.baseline:2: scenario: empty");
    expect_bad("format: harness-baseline 1\nscenario:\n", "bad.baseline:2: scenario: empty");
    expect_bad("format: harness-baseline 1\nscenario: t\ndevice: \n", "bad.baseline:3: device: empty");
    expect_bad("format: harness-baseline 1\nscenario: t\ndtype: \n", "bad.baseline:3: dtype: empty");
    expect_bad("format: harness-baseline 1\nscenario_hash: xyz\n", "bad.baseline:2: scenario_hash: 'xyz' is not a sha256");
    expect_bad(HEAD "scenario_json: {\"a\": \n", "bad.baseline:7: scenario_json: not JSON");
    expect_bad(HEAD "scenario_json: [1]\n", "scenario_json: JSON, but not an object");
    expect_bad(HEAD "scenario_json: {\"a\":1}\nsteps: 0\nstep loss\n", "bad.baseline:3: scenario_hash: does not match scenario_json");
    expect_bad("format: harness-baseline 1\nscenario: t\ndevice: cpu\ndtype: fp32\nworld_size: 1\nsteps: 0\nstep loss\n",
               "bad.baseline:8: scenario_hash: missing");
    expect_bad(HEAD ": value\n", "expected 'key: value'");
    char longname[400];
    memset(longname, 'x', sizeof longname);
    longname[sizeof longname - 1] = 0;
    char text[600];
    snprintf(text, sizeof text, HEAD "device_name: %s\n", longname);
    expect_bad(text, "bad.baseline:7: device_name: longer than 255 bytes");
    /* a NUL byte in the middle */
    static const char nul[] = "format: harness-baseline 1\nsce\0nario: t\n";
    const char *errpath = tu_temp_path(".err");
    int saved = dup(2);
    assert_non_null(freopen(errpath, "w", stderr));
    baseline b;
    assert_int_equal(baseline_parse(nul, sizeof nul - 1, "nul.baseline", &b), 2);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *msg = read_file(errpath, NULL);
    assert_non_null(strstr(msg, "nul.baseline:2: a NUL byte"));
    free(msg);
    unlink(errpath);
}

/* random damage to a valid file: 3000 damaged copies of text, each parsed (0) or refused (2),
 * never a crash (ASan in CI) */
static void fuzz_text(const char *text, size_t len, uint64_t seed)
{
    int saved = dup(2);
    assert_non_null(freopen("/dev/null", "w", stderr));
    uint64_t s = seed;
    int ok = 0;
    for (int iter = 0; iter < 3000; iter++) {
        char *t = malloc(len);
        memcpy(t, text, len);
        size_t n = len;
        int edits = 1 + (int)tu_uniform(&s, 0, 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)tu_uniform(&s, 0, (double)n);
            int kind = (int)tu_uniform(&s, 0, 3);
            if (kind == 0)
                t[at] = (char)(int)tu_uniform(&s, 0, 256);
            else if (kind == 1)
                n = at; /* truncate */
            else
                t[at] = " \n:\\-0x"[(int)tu_uniform(&s, 0, 7)];
        }
        baseline b;
        int rc = baseline_parse(t, n, "fuzz.baseline", &b);
        assert_true(rc == 0 || rc == 2);
        ok += rc == 0;
        if (rc == 0)
            baseline_free(&b);
        free(t);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_true(ok < 3000);
}

static void test_fuzz(void **state)
{
    baseline a;
    make_baseline(&a, 12);
    size_t len;
    char *text = to_text(&a, &len);
    fuzz_text(text, len, 7);
    free(text);
    /* the same as an ensemble (format 3, a loss_std column) */
    a.ensemble_runs = 5;
    a.loss_std = calloc((size_t)a.n_steps, sizeof *a.loss_std);
    assert_non_null(a.loss_std);
    for (int i = 0; i < a.n_steps; i++)
        a.loss_std[i] = 1e-8 * (i + 1);
    text = to_text(&a, &len);
    assert_non_null(strstr(text, "format: harness-baseline 3\n"));
    fuzz_text(text, len, 11);
    free(text);
    baseline_free(&a);
}

static void test_scenario_diff(void **state)
{
    char out[512];
    assert_int_equal(scenario_json_diff(SCN, SCN, out, sizeof out), 0);
    assert_string_equal(out, "");
    const char *b = "{\"name\": \"t\", \"train\": {\"lr\": 0.001, \"steps\": 3, \"seed\": 1}}";
    assert_int_equal(scenario_json_diff(SCN, b, out, sizeof out), 2);
    assert_non_null(strstr(out, "train.lr (0.003 vs 0.001"));
    assert_non_null(strstr(out, "train.seed (absent vs 1)"));
    assert_int_equal(scenario_json_diff(SCN, "not json", out, sizeof out), -1);
    /* key order and whitespace do not matter to the canonical form */
    char *c1 = scenario_canonical_json("{\"b\": 1, \"a\": [1, 2]}");
    char *c2 = scenario_canonical_json("{\"a\":[1,2],\n \"b\":1}");
    assert_string_equal(c1, c2);
    assert_string_equal(c1, "{\"a\":[1,2],\"b\":1}");
    free(c1);
    free(c2);
    assert_null(scenario_canonical_json("{"));
}

/* a value too long for the diff is cut with a marker, never silently */
static void test_scenario_diff_cut(void **state)
{
    (void)state;
    char out[512], longer[200];
    const char *tail = "\"z_last\": 1}}";
    snprintf(longer, sizeof longer, "{\"name\": \"t\", \"tolerances\": {\"a_first\": 0.001, "
             "\"b_second_tolerance\": 0.0001, \"c_third_tolerance\": 0.5, %s", tail);
    assert_int_equal(scenario_json_diff("{\"name\": \"t\"}", longer, out, sizeof out), 1);
    assert_non_null(strstr(out, "tolerances (absent vs {\"a_first\""));
    assert_non_null(strstr(out, "...)")); /* cut, and saying so */
    assert_null(strstr(out, "z_last"));
    /* a value that fits is whole, with no marker */
    assert_int_equal(scenario_json_diff("{\"t\": {\"a\": 1}}", "{\"t\": {\"a\": 2}}", out,
                                        sizeof out), 1);
    assert_string_equal(out, "t.a (1 vs 2)");
    /* a cut never splits a UTF-8 character: each of these is 2 bytes */
    char wide[300] = "{\"s\": \"";
    for (int i = 0; i < 60; i++)
        strcat(wide, "\xc3\xa9");
    strcat(wide, "\"}");
    assert_int_equal(scenario_json_diff("{\"s\": 1}", wide, out, sizeof out), 1);
    char *cut = strstr(out, "...)");
    assert_non_null(cut);
    assert_true(((unsigned char)cut[-1] & 0xC0) != 0xC0); /* no lead byte left alone */
    assert_true(((unsigned char)cut[-2] == 0xc3 && (unsigned char)cut[-1] == 0xa9) ||
                (unsigned char)cut[-1] == '"');
    /* more fields than fit: whole fields, then how many more (the list was cut mid-name) */
    char many_a[2048] = "{", many_b[2048] = "{";
    for (int i = 0; i < 40; i++) {
        char f[64];
        snprintf(f, sizeof f, "%s\"field_number_%02d\": %d", i ? ", " : "", i, i);
        strcat(many_a, f);
        snprintf(f, sizeof f, "%s\"field_number_%02d\": %d", i ? ", " : "", i, i + 100);
        strcat(many_b, f);
    }
    strcat(many_a, "}");
    strcat(many_b, "}");
    char small[200];
    assert_int_equal(scenario_json_diff(many_a, many_b, small, sizeof small), 40);
    char *more = strstr(small, ", and ");
    assert_non_null(more);
    assert_true(more[-1] == ')'); /* the last field shown is whole */
    int shown = 0;
    for (const char *p = small; (p = strstr(p, "field_number_")) != NULL; p++)
        shown++;
    char want[32];
    snprintf(want, sizeof want, ", and %d more", 40 - shown);
    assert_string_equal(more, want);
}

/* a scenario line that is not the name in scenario_json is refused, naming its line */
static void test_scenario_name_mismatch(void **state)
{
    (void)state;
    const char *json = "{\"name\":\"t\"}";
    char hash[65], text[1024];
    sha256_hex(json, strlen(json), hash);
    snprintf(text, sizeof text, "format: harness-baseline 1\nscenario: other\nscenario_hash: %s\n"
             "device: cpu\ndtype: fp32\nworld_size: 1\nscenario_json: %s\nsteps: 1\n"
             "step loss\n1 2.0\n", hash, json);
    expect_bad(text, "bad.baseline:2: scenario: 'other' is not the name in scenario_json ('t')");
    snprintf(text, sizeof text, "format: harness-baseline 1\nscenario: t\nscenario_hash: %s\n"
             "device: cpu\ndtype: fp32\nworld_size: 1\nscenario_json: %s\nsteps: 1\n"
             "step loss\n1 2.0\n", hash, json);
    baseline b;
    assert_int_equal(baseline_parse(text, strlen(text), "good.baseline", &b), 0);
    assert_string_equal(b.scenario, "t");
    baseline_free(&b);
}

/* ---- with the store ---- */

static int64_t store_run(store *st, const char *scenario, const char *json, const char *status,
                         int n, double tps)
{
    char hash[65];
    char *canon = scenario_canonical_json(json);
    sha256_hex(canon, strlen(canon), hash);
    free(canon);
    run_meta m = {scenario, json, hash, "cpu", "Test CPU", "host", "n/a", "blas", 1, "fp32",
                  "testhost", "abc123", "0.1.0", 1 << 30, 4, 0.5};
    int64_t id;
    assert_int_equal(store_begin_run(st, &m, &id), 0);
    for (int i = 0; i < n; i++) {
        step_record r = {.step = i + 1, .loss = 5.0 / (i + 1), .grad_norm = 1.0 / 3, .lr = 1e-3,
                         .tokens = 512, .step_ms = 10.0, .tokens_per_s = tps,
                         .mem_peak_bytes = 1 << 20, .mem_used_bytes = 1 << 19,
                         .mem_total_bytes = 1 << 30};
        assert_int_equal(store_add_step(st, id, &r), 0);
    }
    if (status)
        assert_int_equal(store_finish_run(st, id, status, NULL), 0);
    return id;
}

static void test_store_round_trip(void **state)
{
    const char *db1 = tu_temp_path(".db"), *db2 = tu_temp_path(".db");
    const char *file1 = tu_temp_path(".baseline"), *file2 = tu_temp_path(".baseline");
    store *a, *b;
    assert_int_equal(store_open(db1, &a), 0);
    int64_t id = store_run(a, "t", SCN, "ok", 30, 1000);
    baseline x, y, z;
    assert_int_equal(baseline_from_run(a, id, "ref", &x), 0);
    assert_int_equal(baseline_set_extra(&x, "source", "unit test"), 0);
    assert_int_equal(baseline_save(file1, &x), 0);
    /* file -> import -> store -> file: identical bytes */
    assert_int_equal(baseline_read(file1, &y), 0);
    assert_int_equal(store_open(db2, &b), 0);
    int64_t id2;
    assert_int_equal(baseline_import(b, &y, &id2), 0);
    assert_int_equal(store_set_baseline(b, y.scenario, y.label, id2), 0);
    int64_t found = 0;
    assert_int_equal(store_find_baseline(b, "t", "ref", &found), 0);
    assert_int_equal(found, id2);
    assert_int_equal(store_find_baseline(b, "other", "ref", &found), 1);
    assert_int_equal(baseline_from_run(b, id2, "ref", &z), 0);
    assert_int_equal(z.n_extra, 1);
    assert_true(baseline_same(&x, &z));
    assert_int_equal(baseline_save(file2, &z), 0);
    char *t1 = read_file(file1, NULL), *t2 = read_file(file2, NULL);
    assert_string_equal(t1, t2);
    free(t1);
    free(t2);
    baseline_free(&x);
    baseline_free(&y);
    baseline_free(&z);
    /* one label per scenario: the same label for another scenario is another baseline */
    int64_t other = store_run(b, "u", "{\"name\": \"u\"}", "ok", 3, 1000);
    assert_int_equal(store_set_baseline(b, "u", "ref", other), 0);
    assert_int_equal(store_find_baseline(b, "t", "ref", &found), 0);
    assert_int_equal(found, id2);
    /* verdicts are stored */
    char verdict[16];
    assert_int_equal(store_last_verdict(b, other, verdict), 1);
    assert_int_equal(store_add_comparison(b, other, id2, "fail", 4, 0.5, NAN, "{}"), 0);
    assert_int_equal(store_add_comparison(b, other, id2, "pass", 0, 0, 0, NULL), 0);
    assert_int_equal(store_last_verdict(b, other, verdict), 0);
    assert_string_equal(verdict, "pass");
    store_close(a);
    store_close(b);
    unlink(db1);
    unlink(db2);
    unlink(file1);
    unlink(file2);
}

static void test_store_history(void **state)
{
    const char *db = tu_temp_path(".db");
    store *st;
    assert_int_equal(store_open(db, &st), 0);
    int64_t ids[6];
    for (int i = 0; i < 5; i++)
        ids[i] = store_run(st, "t", SCN, i == 2 ? "failed" : "ok", 5, 1000 + i);
    store_run(st, "t", "{\"name\": \"t\", \"x\": 1}", "ok", 5, 1000); /* another hash */
    ids[5] = store_run(st, "t", SCN, NULL, 5, 1000);                      /* still running */
    int64_t *prev;
    int n;
    assert_int_equal(store_previous_runs(st, ids[5], 0, &prev, &n), 0);
    assert_int_equal(n, 4); /* not the failed run, not the other scenario */
    assert_int_equal(prev[0], ids[4]);
    assert_int_equal(prev[3], ids[0]);
    free(prev);
    assert_int_equal(store_previous_runs(st, ids[5], 2, &prev, &n), 0);
    assert_int_equal(n, 2);
    free(prev);
    assert_int_equal(store_previous_runs(st, ids[0], 0, &prev, &n), 0);
    assert_int_equal(n, 0);
    free(prev);
    store_close(st);
    unlink(db);
}

#define HEAD3 "format: harness-baseline 3\nscenario: t\nscenario_hash: " HASH "\n" \
              "device: cpu\ndtype: fp32\nworld_size: 1\n"

/* an ensemble (format 3): loss_std and ensemble_runs read and written back the same; the
 * arrays must match (a std per step, none without format 3) */
static void test_ensemble_format(void **state)
{
    baseline b;
    const char *good = HEAD3 "steps: 2\nensemble_runs: 3\nstep loss loss_std\n1 2.5 0.25\n"
                             "2 2.0 0\n";
    assert_int_equal(baseline_parse(good, strlen(good), "e.baseline", &b), 0);
    assert_int_equal(b.ensemble_runs, 3);
    assert_non_null(b.loss_std);
    assert_float_equal(b.loss_std[0], 0.25, 0);
    assert_float_equal(b.loss_std[1], 0, 0);
    assert_float_equal(b.steps[0].loss, 2.5, 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(baseline_write(f, &b), 0);
    fclose(f);
    assert_non_null(strstr(text, "format: harness-baseline 3\n"));
    assert_non_null(strstr(text, "ensemble_runs: 3\n"));
    baseline c;
    assert_int_equal(baseline_parse(text, len, "again.baseline", &c), 0);
    assert_true(baseline_same(&b, &c));
    baseline d;
    assert_int_equal(baseline_copy(&d, &b), 0);
    assert_true(baseline_same(&b, &d));
    free(text);
    baseline_free(&b);
    baseline_free(&c);
    baseline_free(&d);
}

static void test_ensemble_malformed(void **state)
{
    expect_bad(HEAD3 "steps: 1\nensemble_runs: 3\nstep loss\n1 2.0\n",
               "bad.baseline:9: step table: format 'harness-baseline 3' (an ensemble) needs the column loss_std");
    expect_bad(HEAD "steps: 1\nstep loss loss_std\n1 2.0 0.1\n",
               "bad.baseline:8: step table: column loss_std belongs to format 'harness-baseline 3'");
    expect_bad(HEAD "ensemble_runs: 3\n", "bad.baseline:7: ensemble_runs: a key of format 'harness-baseline 3'");
    expect_bad(HEAD3 "steps: 1\nstep loss loss_std\n1 2.0 0.1\n",
               "ensemble_runs: missing (a required key of format 'harness-baseline 3')");
    expect_bad(HEAD3 "ensemble_runs: 1\n", "bad.baseline:7: ensemble_runs: '1' is not a whole number in [2, 8]");
    expect_bad(HEAD3 "ensemble_runs: 9\n", "ensemble_runs: '9' is not a whole number in [2, 8]");
    expect_bad(HEAD3 "steps: 1\nensemble_runs: 3\nstep loss loss_std\n1 2.0 -0.1\n",
               "bad.baseline:10: loss_std: '-0.1' is not a finite number >= 0");
    expect_bad(HEAD3 "steps: 1\nensemble_runs: 3\nstep loss loss_std\n1 2.0 nan\n",
               "loss_std: 'nan' is not a finite number >= 0");
    expect_bad(HEAD3 "steps: 1\nensemble_runs: 3\nstep loss loss_std\n1 2.0 -\n",
               "loss_std: '-' is not a finite number >= 0");
    expect_bad(HEAD3 "steps: 2\nensemble_runs: 3\nstep loss loss_std\n1 2.0 0.1\n2 2.0\n",
               "bad.baseline:11: step table: 2 values, the header names 3 columns");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_dtype_fits_scenario),
        cmocka_unit_test(test_save_and_read),
        cmocka_unit_test(test_tolerant_reading),
        cmocka_unit_test(test_byte_order_mark),
        cmocka_unit_test(test_copy_no_steps),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_dates_to_utc),
        cmocka_unit_test(test_ensemble_format),
        cmocka_unit_test(test_ensemble_malformed),
        cmocka_unit_test(test_fuzz),
        cmocka_unit_test(test_scenario_diff),
        cmocka_unit_test(test_scenario_diff_cut),
        cmocka_unit_test(test_scenario_name_mismatch),
        cmocka_unit_test(test_store_round_trip),
        cmocka_unit_test(test_store_history),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
