/* tests/test_logparse.c: the log parsers line by line: each format's real line shapes, detection
 * and locking, rank tags, the seed's running-mean recovery, and malformed or truncated lines. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ingest/logparse.h"

/* one line through a fresh or given reader; 1 when it gave something */
static int read1(lp_reader *r, const char *line, lp_event *ev)
{
    return lp_read_line(r, line, strlen(line), ev);
}

static lp_reader fresh(const char *format, const char *keys)
{
    lp_reader r;
    char err[256];
    assert_int_equal(lp_reader_init(&r, format, keys, err, sizeof err), 0);
    return r;
}

static void test_harness_line(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":3,\"loss\":2.5,\"grad_norm\":1.25,"
                          "\"lr\":1e-3,\"tokens\":512,\"step_ms\":10.5,\"mem_peak_bytes\":1048576,"
                          "\"mem_total_bytes\":2097152,\"rank\":1}", &ev));
    assert_true(ev.has_step);
    assert_int_equal(ev.step.step, 3);
    assert_int_equal(ev.step.rank, 1);
    assert_true(ev.step.loss == 2.5 && ev.step.grad_norm == 1.25 && ev.step.lr == 1e-3);
    assert_int_equal(ev.step.tokens, 512);
    assert_int_equal(ev.step.mem_peak_bytes, 1048576);
    assert_string_equal(r.locked->name, "harness");
    /* Python's json.dumps spells NaN and Infinity so */
    assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":4,\"loss\":NaN}", &ev));
    assert_true(isnan(ev.step.loss));
    assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":5,\"loss\":-Infinity}", &ev));
    assert_true(isinf(ev.step.loss));
}

static void test_harness_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "HARNESS_STEP {\"v\":2,\"step\":1,\"loss\":2.5}",           /* another version */
        "HARNESS_STEP {\"step\":1,\"loss\":2.5}",                   /* no version */
        "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5",            /* truncated */
        "HARNESS_STEP {\"v\":1,\"loss\":2.5}",                      /* no step */
        "HARNESS_STEP {\"v\":1,\"step\":1}",                        /* no loss */
        "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5,}",          /* trailing comma */
        "HARNESS_STEP {\"v\":1,\"step\":-3,\"loss\":2.5}",          /* negative step */
        "HARNESS_STEP {\"v\":1,\"step\":1e99,\"loss\":2.5}",        /* absurd step */
        "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":\"2.5\"}",       /* a string loss */
        "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
        "HARNESS_STEP",
        "HARNESS_STEP {",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lp_reader r = fresh("harness", NULL);
        lp_event ev;
        memset(&ev, 0, sizeof ev);
        int got = read1(&r, bad[i], &ev);
        if (got && ev.has_step)
            fail_msg("took a step from: %s", bad[i]);
    }
}

static void test_meta_locks_protocol(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "HARNESS_META {\"v\":1,\"device_name\":\"A100-SXM4-80GB\",\"torch\":"
                          "\"2.4.0\",\"world_size\":8,\"ok\":true}", &ev));
    assert_int_equal(ev.n_meta, 4);
    assert_string_equal(ev.meta[0].key, "device_name");
    assert_string_equal(ev.meta[0].value, "A100-SXM4-80GB");
    assert_string_equal(ev.meta[2].value, "8");
    assert_string_equal(ev.meta[3].value, "true");
    /* a Trainer dict after the announcement is not a step */
    memset(&ev, 0, sizeof ev);
    read1(&r, "{'loss': 2.31, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.01}", &ev);
    assert_false(ev.has_step);
}

static void test_trainer(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "{'loss': 2.31, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.01}", &ev));
    assert_int_equal(ev.step.step, 1);
    assert_true(ev.step.loss == 2.31 && ev.step.grad_norm == 1.25 && ev.step.lr == 5e-05);
    /* transformers 5 prints strings; older ones a tensor or numpy wrapper */
    assert_true(read1(&r, "{'loss': '2.2', 'grad_norm': '1.1', 'learning_rate': '4e-05', 'epoch': '0.02'}", &ev));
    assert_int_equal(ev.step.step, 2);
    assert_true(ev.step.loss == 2.2 && ev.step.lr == 4e-05);
    assert_true(read1(&r, "{'loss': 2.1, 'grad_norm': tensor(0.9, device='cuda:0'), 'learning_rate': np.float64(3e-05)}", &ev));
    assert_true(ev.step.grad_norm == 0.9 && ev.step.lr == 3e-05);
    /* eval dicts are not training steps; the summary is metadata */
    memset(&ev, 0, sizeof ev);
    read1(&r, "{'eval_loss': 2.0, 'eval_runtime': 1.0}", &ev);
    assert_false(ev.has_step);
    assert_true(read1(&r, "{'train_runtime': 12.5, 'train_samples_per_second': 3.2, 'train_loss': 2.2, 'epoch': 1.0}", &ev));
    assert_false(ev.has_step);
    assert_string_equal(ev.meta[0].key, "trainer_train_runtime");
    assert_string_equal(ev.meta[0].value, "12.5");
    /* truncated: nothing */
    memset(&ev, 0, sizeof ev);
    read1(&r, "{'loss': 2.31, 'grad_norm': 1.2", &ev);
    assert_false(ev.has_step);
}

static void test_seed_running_mean(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    /* steps 0..3 with losses 4, 2, 3, 3: means 4, 3, 3, 3 printed at 0, 1 and 3 */
    assert_true(read1(&r, "epoch[0/9], step[0/100]: train_loss: 4.0, train_tokens_throughput: 1000.5 tokens/s", &ev));
    assert_int_equal(ev.step.step, 1);
    assert_true(ev.step.loss == 4.0 && ev.step.tokens_per_s == 1000.5);
    assert_string_equal(ev.meta[0].key, "loss_kind");
    assert_true(read1(&r, "epoch[0/9], step[1/100]: train_loss: 3.0, train_tokens_throughput: 1000 tokens/s", &ev));
    assert_int_equal(ev.step.step, 2);
    assert_true(ev.step.loss == 2.0);
    assert_true(read1(&r, "epoch[0/9], step[3/100]: train_loss: 3.0, train_tokens_throughput: 1000 tokens/s", &ev));
    assert_int_equal(ev.step.step, 4);
    assert_true(ev.step.loss == 3.0); /* the mean of steps 2 and 3 */
    /* a new epoch restarts the mean; steps count on across epochs */
    assert_true(read1(&r, "epoch[1/9], step[0/100]: train_loss: 1.5, train_tokens_throughput: 1000 tokens/s", &ev));
    assert_int_equal(ev.step.step, 101);
    assert_true(ev.step.loss == 1.5);
    /* malformed */
    memset(&ev, 0, sizeof ev);
    read1(&r, "epoch[1/9], step[x/100]: train_loss: 1.5", &ev);
    assert_false(ev.has_step);
}

static void test_mllog(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", \"key\": \"global_batch_size\", \"value\": 8, \"metadata\": {\"file\": \"x.py\", \"lineno\": 3}}", &ev));
    assert_false(ev.has_step);
    assert_true(read1(&r, ":::MLLOG {\"key\": \"train_loss\", \"value\": 5.5, \"metadata\": {\"samples_count\": 16}}", &ev));
    assert_int_equal(ev.step.step, 2);
    assert_true(ev.step.loss == 5.5);
    assert_true(read1(&r, ":::MLLOG {\"key\": \"tracked_stats\", \"value\": {\"loss\": 5.25, \"throughput\": 99.5}, \"metadata\": {\"step\": 3}}", &ev));
    assert_int_equal(ev.step.step, 3);
    assert_true(ev.step.tokens_per_s == 99.5);
}

static void test_deepspeed_and_ranks(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "[2026-11-23 01:24:13,125] [INFO] [logging.py:123:log_dist] [Rank 0] step=2, skipped=0, lr=[0.001], mom=[(0.9, 0.999)]", &ev));
    assert_int_equal(ev.step.step, 2);
    assert_int_equal(ev.step.rank, 0);
    assert_true(ev.step.lr == 0.001 && !(ev.step.has & LP_LOSS));
    assert_true(read1(&r, " iteration        2/       6 | consumed samples: 16 | elapsed time per iteration (ms): 16.4 | learning rate: 1.000E-03 | lm loss: 5.314900E+00 | grad norm: 2.5 |", &ev));
    assert_true(ev.step.loss == 5.3149 && ev.step.step_ms == 16.4 && ev.step.grad_norm == 2.5);
    lp_reader t = fresh(NULL, NULL);
    assert_true(read1(&t, "[default3]:HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5}", &ev));
    assert_int_equal(ev.step.rank, 3);
    assert_true(read1(&t, "[rank12]:HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5}", &ev));
    assert_int_equal(ev.step.rank, 12);
}

/* srun --label's "N: " (padded to the widest task id) is a rank tag like torchrun's; a
 * Trainer dict printed by several ranks counts each rank's logs on its own */
static void test_srun_labels_and_trainer_ranks(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "0: {'loss': 2.5, 'learning_rate': 1e-4}", &ev));
    assert_int_equal(ev.step.rank, 0);
    assert_int_equal(ev.step.step, 1);
    assert_true(read1(&r, "1: {'loss': 2.6, 'learning_rate': 1e-4}", &ev));
    assert_int_equal(ev.step.rank, 1);
    assert_int_equal(ev.step.step, 1);
    assert_true(read1(&r, "0: {'loss': 2.4, 'learning_rate': 1e-4}", &ev));
    assert_int_equal(ev.step.rank, 0);
    assert_int_equal(ev.step.step, 2);
    lp_reader t = fresh(NULL, NULL);
    assert_true(read1(&t, " 7: HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5}", &ev));
    assert_int_equal(ev.step.rank, 7);
    assert_true(read1(&t, "12: HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5}", &ev));
    assert_int_equal(ev.step.rank, 12);
    /* a clock time is no label */
    assert_true(read1(&t, "12:30:01 HARNESS_STEP {\"v\":1,\"step\":2,\"loss\":2.5}", &ev));
    assert_int_equal(ev.step.rank, -1);
}

static void test_jsonl_keys(void **state)
{
    (void)state;
    char err[256];
    lp_reader r;
    assert_int_equal(lp_reader_init(&r, "jsonl", "step=iter,loss=lm_loss,lr=learning_rate", err, sizeof err), 0);
    lp_event ev;
    assert_true(read1(&r, "{\"iter\": 0, \"lm_loss\": 3.5, \"learning_rate\": 0.1, \"x\": {\"a\": [1, 2]}}", &ev));
    assert_int_equal(ev.step.step, 1); /* a 0-based series is shifted */
    assert_true(read1(&r, "{\"iter\": 1, \"lm_loss\": 3.25}", &ev));
    assert_int_equal(ev.step.step, 2);
    assert_int_not_equal(lp_reader_init(&r, "jsonl", "step=iter", err, sizeof err), 0);
    assert_int_not_equal(lp_reader_init(&r, "jsonl", "nosuch=iter,loss=l", err, sizeof err), 0);
    assert_int_not_equal(lp_reader_init(&r, "jsonl", "step", err, sizeof err), 0);
    assert_int_not_equal(lp_reader_init(&r, "bogus", NULL, err, sizeof err), 0);
    assert_non_null(strstr(err, "harness, trainer, seed, mllog, deepspeed, jsonl"));
}

static void test_first_format_is_kept(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "{'loss': 2.31, 'learning_rate': 5e-05}", &ev));
    memset(&ev, 0, sizeof ev);
    read1(&r, "epoch[0/9], step[0/100]: train_loss: 4.0, train_tokens_throughput: 1 tokens/s", &ev);
    assert_false(ev.has_step);
    assert_string_equal(r.locked->name, "trainer");
}

static void test_binary_bytes(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    char buf[4096];
    unsigned x = 12345;
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof buf; i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = (char)(x >> 16);
        }
        static const char *const seeds[] = {"HARNESS_STEP {", "{'loss': ", ":::MLLOG {", "epoch[", "[rank"};
        const char *s = seeds[round % 5];
        memcpy(buf + (round % 7), s, strlen(s));
        lp_read_line(&r, buf, sizeof buf, &ev); /* must not crash, whatever it makes of it */
    }
    assert_int_equal(r.lines, 200);
}

/* a seed line that ends right after "train_tokens_throughput:" has no throughput: the number is
 * never looked for past the line's end (it was read from stale bytes, or past the copy's end) */
static void test_seed_line_ends_at_label(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    /* the same frame as the next call's: what a read past the end would find */
    assert_true(read1(&r, "epoch[0/9], step[0/100]: train_loss: 4.0, train_tokens_throughput: 1000.5 tokens/s", &ev));
    assert_true(ev.step.has & LP_TOKENS_PER_S);
    memset(&ev, 0, sizeof ev);
    assert_true(read1(&r, "epoch[0/9], step[1/100]: train_loss: 3.0, train_tokens_throughput:", &ev));
    assert_int_equal(ev.step.step, 2);
    assert_false(ev.step.has & LP_TOKENS_PER_S);
    /* 511 bytes from "epoch[" ending in the label: exactly the size of the parser's copy */
    const char *head = "epoch[0/9], step[2/100]: train_loss: 3.0,";
    const char *tag = "train_tokens_throughput:";
    size_t n = 511;
    char *line = malloc(n); /* exact size: ASan sees a read past it */
    assert_non_null(line);
    memset(line, ' ', n);
    memcpy(line, head, strlen(head));
    memcpy(line + n - strlen(tag), tag, strlen(tag));
    memset(&ev, 0, sizeof ev);
    assert_true(lp_read_line(&r, line, n, &ev));
    assert_int_equal(ev.step.step, 3);
    assert_false(ev.step.has & LP_TOKENS_PER_S);
    free(line);
}

/* steps past what an int holds (or past 1e9 in an epoch) are no steps, never an overflow */
static void test_seed_huge_step(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "epoch[0/5], step[2147483647/5]: train_loss: 2.0",
        "epoch[0/5], step[4294967295/5]: train_loss: 2.0",
        "epoch[0/5], step[99999999999999999999/5]: train_loss: 2.0",
        "epoch[3/5], step[1/2147483647]: train_loss: 2.0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lp_reader r = fresh(NULL, NULL);
        lp_event ev;
        memset(&ev, 0, sizeof ev);
        if (read1(&r, bad[i], &ev) && ev.has_step)
            fail_msg("took step %d from: %s", ev.step.step, bad[i]);
    }
}

/* a step or rank that is not a whole number skips the line: 1.5 is not step 1, and a rank of
 * 1.5, -1 or 2e6 is not rank 0 */
static void test_step_and_rank_whole(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "HARNESS_STEP {\"v\":1,\"step\":1.5,\"loss\":2.5}",
        "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5,\"rank\":1.5}",
        "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5,\"rank\":-1}",
        "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.5,\"rank\":2000000}",
        "{\"step\":1.7,\"loss\":2.0}",
        "{\"step\":1,\"loss\":2.0,\"rank\":0.5}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lp_reader r = fresh(NULL, NULL);
        lp_event ev;
        memset(&ev, 0, sizeof ev);
        if (read1(&r, bad[i], &ev) && ev.has_step)
            fail_msg("took step %d rank %d from: %s", ev.step.step, ev.step.rank, bad[i]);
    }
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":2.0,\"loss\":2.5,\"rank\":3.0}", &ev));
    assert_int_equal(ev.step.step, 2);
    assert_int_equal(ev.step.rank, 3);
}

/* protocol v1's step is an integer >= 0: a series from 0 is shifted, also after HARNESS_META
 * locked the format before any step */
static void test_harness_from_step_zero(void **state)
{
    (void)state;
    for (int meta = 0; meta < 2; meta++) {
        lp_reader r = fresh(NULL, NULL);
        lp_event ev;
        if (meta)
            assert_true(read1(&r, "HARNESS_META {\"v\":1,\"device_name\":\"x\"}", &ev));
        assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":0,\"loss\":3.0}", &ev));
        assert_true(ev.has_step);
        assert_int_equal(ev.step.step, 1);
        assert_true(ev.step.loss == 3.0);
        assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.0}", &ev));
        assert_int_equal(ev.step.step, 2);
    }
}

/* a Trainer or seed line of rank 64 (or of a rank past the parsers' memory) never counts as
 * rank 0's: rank 0's Trainer dicts stay 1, 2 */
static void test_high_ranks_apart(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "[rank0]:{'loss': 2.5}", &ev));
    assert_int_equal(ev.step.step, 1);
    assert_true(read1(&r, "[rank64]:{'loss': 9.5}", &ev));
    assert_int_equal(ev.step.rank, 64);
    assert_int_equal(ev.step.step, 1);
    memset(&ev, 0, sizeof ev);
    read1(&r, "[rank99999]:{'loss': 9.5}", &ev);
    assert_false(ev.has_step);
    read1(&r, "[rank99999]:epoch[0/5], step[3/5]: train_loss: 9.0", &ev);
    assert_false(ev.has_step);
    assert_true(read1(&r, "[rank0]:{'loss': 2.4}", &ev));
    assert_int_equal(ev.step.rank, 0);
    assert_int_equal(ev.step.step, 2);
}

/* a JSON line that names its step is jsonl's whatever its key order ("loss" first looked like
 * a Trainer dict, whose steps are counted: 1, 2 instead of 10, 20) */
static void test_json_loss_first_keeps_step(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "{\"loss\": 2.0, \"step\": 10}", &ev));
    assert_true(ev.has_step);
    assert_int_equal(ev.step.step, 10);
    assert_string_equal(r.locked->name, "jsonl");
    /* a Trainer repr is still Trainer's */
    lp_reader t = fresh(NULL, NULL);
    assert_true(read1(&t, "{'loss': 2.0, 'grad_norm': 1.0, 'learning_rate': 5e-05, 'epoch': 0.1}", &ev));
    assert_int_equal(ev.step.step, 1);
    assert_string_equal(t.locked->name, "trainer");
}

/* several untagged rank files (ingest: file k is rank k): each file's rank keeps its own Trainer
 * count, seed running mean and mllog count; a line's own rank tag still says whose it is */
static void test_file_ranks_apart(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    const char *dict = "{'loss': 0.1, 'grad_norm': 1.0, 'learning_rate': 5e-05, 'epoch': 0.1}";
    for (int file = 0; file < 2; file++) {
        r.source_rank = file;
        for (int k = 1; k <= 3; k++) {
            assert_true(read1(&r, dict, &ev));
            assert_int_equal(ev.step.step, k); /* rank 1's dicts are 1, 2, 3, not 4, 5, 6 */
        }
    }
    assert_true(read1(&r, "[rank0]:{'loss': 0.2}", &ev)); /* in rank 1's file, tagged rank 0 */
    assert_int_equal(ev.step.rank, 0);
    assert_int_equal(ev.step.step, 4);
    lp_reader s = fresh(NULL, NULL);
    static const char *const means[2][2] = {
        {"epoch[0/9], step[0/100]: train_loss: 4.0", "epoch[0/9], step[1/100]: train_loss: 3.0"},
        {"epoch[0/9], step[0/100]: train_loss: 8.0", "epoch[0/9], step[1/100]: train_loss: 6.0"}};
    static const double want[2][2] = {{4.0, 2.0}, {8.0, 4.0}};
    for (int file = 0; file < 2; file++)
        for (int k = 0; k < 2; k++) {
            s.source_rank = file;
            memset(&ev, 0, sizeof ev);
            assert_true(read1(&s, means[file][k], &ev) && ev.has_step);
            assert_int_equal(ev.step.step, k + 1);
            assert_true(ev.step.loss == want[file][k]); /* rank 1's own running mean */
        }
    lp_reader m = fresh(NULL, NULL);
    for (int file = 0; file < 2; file++)
        for (int k = 1; k <= 2; k++) {
            m.source_rank = file;
            assert_true(read1(&m, ":::MLLOG {\"key\": \"train_loss\", \"value\": 5.5}", &ev));
            assert_int_equal(ev.step.step, k);
        }
}

/* --keys naming the step: a JSON line with that key is jsonl's, also when "loss" comes first
 * (it looked like a Trainer dict, whose steps are counted: 1, 2 instead of 10, 20) */
static void test_keys_step_loss_first(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, "step=iter,loss=loss");
    lp_event ev;
    assert_true(read1(&r, "{\"loss\": 2.3, \"iter\": 10}", &ev));
    assert_int_equal(ev.step.step, 10);
    assert_true(ev.step.loss == 2.3);
    assert_true(read1(&r, "{\"loss\": 2.2, \"iter\": 20}", &ev));
    assert_int_equal(ev.step.step, 20);
    assert_string_equal(r.locked->name, "jsonl");
}

/* a format whose steps carry no loss (DeepSpeed's engine lines) gives way to one whose steps do
 * (Trainer's dicts under DeepSpeed); Megatron's lines stay merged with DeepSpeed's own */
static void test_lossless_format_superseded(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    const char *ds0 = "[2024-05-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] "
                      "step=1, skipped=0, lr=[5e-05], mom=[(0.9, 0.999)]";
    assert_true(read1(&r, ds0, &ev));
    assert_string_equal(r.locked->name, "deepspeed");
    assert_true(read1(&r, "{'loss': 2.3, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1}", &ev));
    assert_true(ev.has_step);
    assert_int_equal(ev.step.step, 1);
    assert_true(ev.step.loss == 2.3);
    assert_string_equal(r.locked->name, "trainer");
    memset(&ev, 0, sizeof ev);
    read1(&r, ds0, &ev); /* DeepSpeed's lines are no steps of the run now */
    assert_false(ev.has_step);
    assert_true(read1(&r, "{'loss': 2.2, 'grad_norm': 1.1, 'learning_rate': 4e-05, 'epoch': 0.2}", &ev));
    assert_int_equal(ev.step.step, 2);
    /* Megatron-DeepSpeed: the iteration line is DeepSpeed's own; a Trainer dict then is not */
    lp_reader m = fresh(NULL, NULL);
    assert_true(read1(&m, ds0, &ev));
    assert_true(read1(&m, " iteration        1/     100 | lm loss: 7.1E+00 | grad norm: 2.3 |", &ev));
    assert_int_equal(ev.step.step, 1);
    assert_true(ev.step.loss == 7.1 && ev.step.grad_norm == 2.3);
    assert_string_equal(m.locked->name, "deepspeed");
    memset(&ev, 0, sizeof ev);
    read1(&m, "{'loss': 2.3, 'learning_rate': 5e-05}", &ev);
    assert_false(ev.has_step);
    assert_string_equal(m.locked->name, "deepspeed");
}

/* transformers with include_num_input_tokens_seen adds train_runtime and train_tokens_per_second
 * to every step's dict (real transformers 5.23 lines, logging_steps=2): a dict with a loss is a
 * step; the summary is the one without, and only its numbers are the run's metadata */
static void test_trainer_tokens_seen(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "{'loss': '3.889', 'grad_norm': '0.8189', 'learning_rate': '0.0008333', 'epoch': '0.125', 'num_input_tokens_seen': 128, 'train_runtime': '0.0161', 'train_tokens_per_second': '7974'}", &ev));
    assert_true(ev.has_step);
    assert_int_equal(ev.step.step, 1);
    assert_true(ev.step.loss == 3.889 && ev.step.grad_norm == 0.8189 && ev.step.lr == 0.0008333);
    assert_int_equal(ev.n_meta, 0); /* a step's train_runtime is no summary */
    assert_true(read1(&r, "{'loss': '3.902', 'grad_norm': '0.8149', 'learning_rate': '0.0005', 'epoch': '0.25', 'num_input_tokens_seen': 256, 'train_runtime': '0.0235', 'train_tokens_per_second': '1.09e+04'}", &ev));
    assert_int_equal(ev.step.step, 2);
    assert_int_equal(ev.n_meta, 0);
    assert_true(read1(&r, "{'train_runtime': '0.0308', 'train_samples_per_second': '778.7', 'train_steps_per_second': '194.7', 'train_loss': '3.898', 'epoch': '0.375', 'num_input_tokens_seen': 384}", &ev));
    assert_false(ev.has_step);
    assert_string_equal(ev.meta[0].key, "trainer_train_runtime");
    assert_true(atof(ev.meta[0].value) == 0.0308);
    assert_int_equal(r.steps, 2);
    /* the summary in another key order is still the summary */
    assert_true(read1(&r, "{'train_loss': 3.0, 'epoch': 1.0, 'train_runtime': 2.5}", &ev));
    assert_false(ev.has_step);
    assert_int_equal(ev.n_meta, 3);
}

/* a Python dict with a 'step' of its own keeps it, in either key order; one that is no whole
 * number skips the line */
static void test_trainer_own_step(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "{'loss': 2.5, 'step': 10}", &ev));
    assert_int_equal(ev.step.step, 10);
    assert_true(read1(&r, "{'loss': 2.4, 'step': 20}", &ev));
    assert_int_equal(ev.step.step, 20);
    assert_true(read1(&r, "{'step': 30, 'loss': 2.3}", &ev));
    assert_int_equal(ev.step.step, 30);
    assert_true(ev.step.loss == 2.3);
    assert_string_equal(r.locked->name, "trainer");
    memset(&ev, 0, sizeof ev);
    assert_false(read1(&r, "{'step': 40.5, 'loss': 2.2}", &ev) && ev.has_step);
    lp_reader t = fresh(NULL, NULL);
    assert_true(read1(&t, "{'step': 10, 'loss': 2.5, 'grad_norm': 1.0}", &ev));
    assert_int_equal(ev.step.step, 10);
    assert_true(ev.step.grad_norm == 1.0);
}

/* colour codes around a rank tag or a JSON line are taken out before anything else */
static void test_ansi_colours(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "\033[32m[rank0]:\033[0m HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.0}", &ev));
    assert_int_equal(ev.step.rank, 0);
    assert_true(read1(&r, "\033[32m[rank1]:\033[0m HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":9.0}", &ev));
    assert_int_equal(ev.step.rank, 1);
    assert_true(read1(&r, "\033[1;31m3:\033[0m HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":9.0}", &ev));
    assert_int_equal(ev.step.rank, 3);
    lp_reader j = fresh(NULL, NULL);
    assert_true(read1(&j, "\033[32m{\"step\":1,\"loss\":2.0}\033[0m", &ev));
    assert_true(ev.has_step && ev.step.loss == 2.0);
    assert_string_equal(j.locked->name, "jsonl");
    /* OSC (a terminal title, a hyperlink) to BEL or ST, and a charset switch */
    assert_true(read1(&j, "\033]0;title\a\033]8;;http://x\033\\{\"step\":2,\"loss\":1.5}\033(B", &ev));
    assert_int_equal(ev.step.step, 2);
    char buf[64];
    const char *in = "a\033[0;1;32mb\033]2;t\033\\c\033(Bd\033";
    size_t n = lp_strip_ansi(in, strlen(in), buf, sizeof buf);
    assert_int_equal(n, 4);
    assert_memory_equal(buf, "abcd", 4);
}

/* each step field's range: a value outside is left out (noted in rejected), the rest kept */
static void test_field_ranges(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":1,\"loss\":2.0,\"grad_norm\":-1,\"lr\":Infinity,"
                          "\"step_ms\":-5,\"tokens_per_s\":1e308,\"tokens\":64,\"mem_peak_bytes\":-3,"
                          "\"mem_total_bytes\":1e300}", &ev));
    assert_true(ev.has_step);
    assert_int_equal(ev.step.has, LP_LOSS | LP_TOKENS);
    assert_int_equal(ev.step.rejected, LP_GRAD_NORM | LP_LR | LP_STEP_MS | LP_TOKENS_PER_S |
                                       LP_MEM_PEAK | LP_MEM_TOTAL);
    assert_true(ev.step.rejected_value[1] == -1 && ev.step.rejected_value[4] == -5);
    assert_string_equal(lp_field_name(LP_GRAD_NORM), "grad_norm");
    /* in range: a NaN or infinite loss or grad norm (divergence), zeros */
    assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":2,\"loss\":-Infinity,\"grad_norm\":NaN,"
                          "\"lr\":0,\"step_ms\":0,\"tokens_per_s\":0,\"mem_used_bytes\":0}", &ev));
    assert_int_equal(ev.step.rejected, 0);
    assert_int_equal(ev.step.has, LP_LOSS | LP_GRAD_NORM | LP_LR | LP_STEP_MS | LP_TOKENS_PER_S |
                                  LP_MEM_USED);
    assert_true(read1(&r, "HARNESS_STEP {\"v\":1,\"step\":3,\"loss\":1,\"grad_norm\":Infinity,\"lr\":NaN}", &ev));
    assert_int_equal(ev.step.has, LP_LOSS | LP_GRAD_NORM);
    assert_int_equal(ev.step.rejected, LP_LR);
    /* the caps: 1e9 ms, 1e13 tokens and tokens/s, 2^60 bytes */
    lp_step s;
    memset(&s, 0, sizeof s);
    assert_int_equal(lp_step_set(&s, "step_ms", LP_CAP_STEP_MS), -1);
    assert_int_equal(lp_step_set(&s, "step_ms", LP_CAP_STEP_MS / 2), 1);
    assert_int_equal(lp_step_set(&s, "tokens", LP_CAP_TOKENS), -1);
    assert_int_equal(lp_step_set(&s, "mem_peak_bytes", LP_CAP_MEM), -1);
    assert_int_equal(lp_step_set(&s, "mem_peak_bytes", LP_CAP_MEM / 2), 1);
    assert_int_equal(lp_step_set(&s, "no_such_field", 1), 0);
}

/* the default jsonl keys are all of the protocol's names, mem_used_bytes too; --keys takes
 * every field */
static void test_jsonl_every_field(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "{\"step\":1,\"loss\":2,\"mem_used_bytes\":1000}", &ev));
    assert_true(ev.step.has & LP_MEM_USED);
    assert_int_equal(ev.step.mem_used_bytes, 1000);
    lp_reader k = fresh("jsonl", "step=a,loss=b,grad_norm=c,lr=d,tokens=e,step_ms=f,tokens_per_s=g,"
                                 "mem_peak_bytes=h,mem_used_bytes=i,mem_total_bytes=j,rank=k");
    assert_int_equal(k.st.n_keys, 11);
    assert_true(read1(&k, "{\"a\":1,\"b\":2,\"i\":5,\"j\":6,\"k\":0}", &ev));
    assert_int_equal(ev.step.mem_used_bytes, 5);
    assert_int_equal(ev.step.mem_total_bytes, 6);
}

/* a stated step that is no whole number skips its line in every format, never truncated */
static void test_fractional_steps_skipped(void **state)
{
    (void)state;
    static const char *const bad[] = {
        " iteration      1.5/ 100 | lm loss: 2.5 |",
        "iteration      2.5/ 100 | lm loss: 2.5 |",
        ":::MLLOG {\"key\":\"train_loss\",\"value\":2.5,\"metadata\":{\"step\":2.5}}",
        /* a negative, huge or quoted step was given the line's running count instead */
        ":::MLLOG {\"key\":\"train_loss\",\"value\":2.5,\"metadata\":{\"step\":-4}}",
        ":::MLLOG {\"key\":\"train_loss\",\"value\":2.5,\"metadata\":{\"step\":1e300}}",
        ":::MLLOG {\"key\":\"train_loss\",\"value\":2.5,\"metadata\":{\"step\":\"5\"}}",
        ":::MLLOG {\"key\":\"train_loss\",\"value\":2.5,\"metadata\":{\"step_num\":[1]}}",
        "[Rank 0] step=1.5, skipped=0, lr=[0.001], mom=[(0.9, 0.999)]",
        "epoch=0/micro_step=3/global_step=2.5, RunningAvgSamplesPerSec=1, MaxMemAllocated=1GB",
        "{'loss': 2.5, 'step': 3.5}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lp_reader r = fresh(NULL, NULL);
        lp_event ev;
        memset(&ev, 0, sizeof ev);
        if (read1(&r, bad[i], &ev) && ev.has_step)
            fail_msg("took step %d from: %s", ev.step.step, bad[i]);
    }
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, ":::MLLOG {\"key\":\"train_loss\",\"value\":2.5,\"metadata\":{\"step\":3.0}}", &ev));
    assert_int_equal(ev.step.step, 3);
}

/* Megatron's iteration line at the start of a line, after a time stamp or an srun label, in
 * Megatron-LM's full shape; "per iteration (ms)" and "skipped iterations" are no iteration */
static void test_megatron_lines(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "iteration        1/     100 | consumed samples:            8 | elapsed time per iteration (ms): 1234.5 | learning rate: 1.000000E-04 | lm loss: 1.08E+01 |",
        " [2024-05-01 10:00:00] iteration        1/     100 | consumed samples:            8 | elapsed time per iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 12.3 | learning rate: 1.000000E-04 | global batch size:     8 | lm loss: 1.080000E+01 | loss scale: 1.0 | grad norm: 2.345 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        "3:  [2024-05-01 10:00:00] iteration        1/     100 | elapsed time per iteration (ms): 1234.5 | lm loss: 1.08E+01 |",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        lp_reader r = fresh(NULL, NULL);
        lp_event ev;
        memset(&ev, 0, sizeof ev);
        if (!read1(&r, lines[i], &ev) || !ev.has_step)
            fail_msg("no step from: %s", lines[i]);
        assert_int_equal(ev.step.step, 1);
        assert_true(ev.step.loss == 10.8 && ev.step.step_ms == 1234.5);
        assert_string_equal(r.locked->name, "deepspeed");
        assert_int_equal(ev.step.rank, i == 2 ? 3 : -1);
    }
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    memset(&ev, 0, sizeof ev);
    assert_false(read1(&r, "elapsed time per iteration (ms): 1234.5 | lm loss: 1.08E+01 |", &ev) && ev.has_step);
}

/* the meta value of key in ev, or NULL */
static const char *meta_value(const lp_event *ev, const char *key)
{
    for (int i = 0; i < ev->n_meta; i++)
        if (!strcmp(ev->meta[i].key, key))
            return ev->meta[i].value;
    return NULL;
}

/* numbers kept as metadata (Trainer's summary, HARNESS_META, MLPerf's batch size) in the fewest
 * digits that read back to the same double, not %.17g's 369.80000000000001 */
static void test_meta_numbers_shortest(void **state)
{
    (void)state;
    lp_reader r = fresh(NULL, NULL);
    lp_event ev;
    assert_true(read1(&r, "{'train_runtime': '0.0308', 'train_samples_per_second': '369.8', "
                          "'train_steps_per_second': 46.23, 'train_loss': 0.1, 'epoch': 1.0, "
                          "'total_flos': 0.30000000000000004}", &ev));
    assert_false(ev.has_step);
    assert_string_equal(meta_value(&ev, "trainer_train_runtime"), "0.0308");
    assert_string_equal(meta_value(&ev, "trainer_train_samples_per_second"), "369.8");
    assert_string_equal(meta_value(&ev, "trainer_train_steps_per_second"), "46.23");
    assert_string_equal(meta_value(&ev, "trainer_train_loss"), "0.1");
    assert_string_equal(meta_value(&ev, "trainer_epoch"), "1");
    /* a value that needs 17 digits keeps them: it still reads back exactly */
    assert_true(strtod(meta_value(&ev, "trainer_total_flos"), NULL) == 0.30000000000000004);
    lp_reader h = fresh(NULL, NULL);
    assert_true(read1(&h, "HARNESS_META {\"v\":1,\"lr_peak\":0.0003,\"mem_total_bytes\":85899345920}", &ev));
    assert_string_equal(meta_value(&ev, "lr_peak"), "0.0003");
    assert_string_equal(meta_value(&ev, "mem_total_bytes"), "85899345920");
    lp_reader m = fresh(NULL, NULL);
    assert_true(read1(&m, ":::MLLOG {\"key\": \"global_batch_size\", \"value\": 1.1, \"metadata\": {}}", &ev));
    assert_string_equal(meta_value(&ev, "mllog_global_batch_size"), "1.1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_harness_line),     cmocka_unit_test(test_harness_refuses),
        cmocka_unit_test(test_meta_locks_protocol), cmocka_unit_test(test_trainer),
        cmocka_unit_test(test_seed_running_mean), cmocka_unit_test(test_mllog),
        cmocka_unit_test(test_deepspeed_and_ranks), cmocka_unit_test(test_jsonl_keys),
        cmocka_unit_test(test_srun_labels_and_trainer_ranks),
        cmocka_unit_test(test_first_format_is_kept), cmocka_unit_test(test_binary_bytes),
        cmocka_unit_test(test_seed_line_ends_at_label), cmocka_unit_test(test_seed_huge_step),
        cmocka_unit_test(test_step_and_rank_whole), cmocka_unit_test(test_harness_from_step_zero),
        cmocka_unit_test(test_high_ranks_apart), cmocka_unit_test(test_json_loss_first_keeps_step),
        cmocka_unit_test(test_file_ranks_apart), cmocka_unit_test(test_keys_step_loss_first),
        cmocka_unit_test(test_lossless_format_superseded),
        cmocka_unit_test(test_trainer_tokens_seen), cmocka_unit_test(test_trainer_own_step),
        cmocka_unit_test(test_ansi_colours), cmocka_unit_test(test_field_ranges),
        cmocka_unit_test(test_jsonl_every_field), cmocka_unit_test(test_fractional_steps_skipped),
        cmocka_unit_test(test_megatron_lines), cmocka_unit_test(test_meta_numbers_shortest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
