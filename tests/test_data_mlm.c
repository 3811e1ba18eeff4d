/* tests/test_data_mlm.c: masked-LM data: line-by-line and grouped rows from the WordPiece test
 * tokenizer, and the masking's rules, proportions, determinism and one hand-checked row. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "formats/data_mlm.h"
#include "philox.h"
#include "testutil.h"
#include "formats/tokenizer.h"

static tokenizer *open_wp(void)
{
    tokenizer *t = NULL;
    assert_int_equal(tokenizer_open("wordpiece", tu_source_path("tests/data/hf/wordpiece/tokenizer.json"), &t), 0);
    return t;
}

static const char *write_temp(const char *text)
{
    const char *path = tu_temp_path(".txt");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static int32_t id_of(tokenizer *t, const char *word)
{
    id_list ids = {0};
    assert_int_equal(tokenizer_encode(t, word, strlen(word), "w", &ids), 0);
    assert_int_equal(ids.n, 3); /* [CLS] word [SEP] */
    int32_t id = ids.ids[1];
    id_list_free(&ids);
    return id;
}

static void test_line_by_line_rows(void **state)
{
    (void)state;
    tokenizer *t = open_wp();
    /* blank as Python's str.isspace() (run_mlm.py's filter): ASCII, U+3000, U+00A0, U+2028 */
    const char *path = write_temp("the loss\n  \n\n\xe3\x80\x80\n\xc2\xa0 \t\n\xe2\x80\xa8\n"
                                  "the loss the loss the loss\r\nloss\n");
    mlm_options o = {.seq_len = 6, .line_by_line = 1, .mlm_probability = 0.15};
    mlm_dataset ds;
    assert_int_equal(mlm_dataset_load(path, t, &o, &ds), 0);
    int32_t the = id_of(t, "the"), loss = id_of(t, "loss");
    assert_int_equal(ds.n_rows, 3); /* blank lines skipped */
    const int32_t want[3][6] = {{2, the, loss, 3, 0, 0}, {2, the, loss, the, loss, 3}, {2, loss, 3, 0, 0, 0}};
    const uint8_t want_special[3][6] = {{1, 0, 0, 1, 1, 1}, {1, 0, 0, 0, 0, 1}, {1, 0, 1, 1, 1, 1}};
    const uint8_t want_att[3][6] = {{1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 1, 1}, {1, 1, 1, 0, 0, 0}};
    for (int r = 0; r < 3; r++) {
        assert_memory_equal(ds.ids + r * 6, want[r], sizeof want[r]);
        assert_memory_equal(ds.special + r * 6, want_special[r], 6);
        assert_memory_equal(ds.attention + r * 6, want_att[r], 6);
    }
    mlm_dataset_free(&ds);
    remove(path);
    tokenizer_free(t);
}

static void test_grouped_rows(void **state)
{
    (void)state;
    tokenizer *t = open_wp();
    const char *path = write_temp("the loss\nloss\n\nthe\nloss");
    mlm_options o = {.seq_len = 4, .line_by_line = 0, .mlm_probability = 0.15};
    mlm_dataset ds;
    assert_int_equal(mlm_dataset_load(path, t, &o, &ds), 0);
    int32_t the = id_of(t, "the"), loss = id_of(t, "loss");
    /* [CLS] the loss [SEP] [CLS] loss [SEP] [CLS] [SEP] [CLS] the [SEP]: 12 ids, 3 rows of 4 (an
     * empty line is [CLS] [SEP], as tokenizing it gives) */
    const int32_t want[12] = {2, the, loss, 3, 2, loss, 3, 2, 3, 2, the, 3};
    const uint8_t want_special[12] = {1, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1};
    assert_int_equal(ds.n_rows, 3);
    assert_memory_equal(ds.ids, want, sizeof want);
    assert_memory_equal(ds.special, want_special, 12);
    for (int i = 0; i < 12; i++)
        assert_int_equal(ds.attention[i], 1);
    mlm_dataset_free(&ds);
    remove(path);
    tokenizer_free(t);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    tokenizer *t = open_wp(), *byte = NULL;
    mlm_dataset ds;
    mlm_options o = {.seq_len = 8, .line_by_line = 1, .mlm_probability = 0.15};
    const char *path = write_temp(" \n\t\n");
    assert_int_equal(mlm_dataset_load(path, t, &o, &ds), 2); /* no non-blank line */
    o.line_by_line = 0;
    assert_int_equal(mlm_dataset_load(path, t, &o, &ds), 2); /* no full block */
    /* grouped blank lines that fill blocks of [CLS] [SEP] pairs: nothing to mask */
    const char *blanks = write_temp("\n\n\n\n\n\n\n\n\n");
    o.seq_len = 4;
    assert_int_equal(mlm_dataset_load(blanks, t, &o, &ds), 2);
    remove(blanks);
    o.seq_len = 8;
    assert_int_equal(mlm_dataset_load("/nonexistent", t, &o, &ds), 2);
    o.seq_len = 2;
    assert_int_equal(mlm_dataset_load(path, t, &o, &ds), 2); /* no room beside the template */
    o.seq_len = 8, o.mlm_probability = 0;
    assert_int_equal(mlm_dataset_load(path, t, &o, &ds), 2);
    o.mlm_probability = 0.15;
    assert_int_equal(tokenizer_open("byte", NULL, &byte), 0);
    assert_int_equal(mlm_dataset_load(path, byte, &o, &ds), 2); /* no [MASK] */
    const char *bad = write_temp("ok\n\xff\xfe\n");
    assert_int_equal(mlm_dataset_load(bad, t, &o, &ds), 2); /* not UTF-8 */
    remove(bad);
    remove(path);
    tokenizer_free(byte);
    tokenizer_free(t);
}

/* a hand-made dataset: every id 7 (not [MASK]), no special position, vocab 1000 */
static mlm_dataset plain(int T, size_t rows, uint8_t *special_of_all, double p)
{
    mlm_dataset ds = {0};
    ds.seq_len = T;
    ds.n_rows = rows;
    ds.vocab_size = 1000;
    ds.mask_id = 4;
    ds.mlm_probability = p;
    ds.ids = malloc(rows * T * sizeof *ds.ids);
    ds.special = malloc(rows * T);
    ds.attention = malloc(rows * T);
    assert_true(ds.ids && ds.special && ds.attention);
    for (size_t i = 0; i < rows * (size_t)T; i++) {
        ds.ids[i] = 7;
        ds.special[i] = special_of_all ? special_of_all[i % (size_t)T] : 0;
        ds.attention[i] = 1;
    }
    return ds;
}

typedef struct {
    int32_t *ids, *types, *att, *labels;
} batch_bufs;

static batch_bufs run_batch(const mlm_dataset *ds, uint64_t seed, int step, int batch)
{
    size_t n = (size_t)batch * (size_t)ds->seq_len;
    batch_bufs b = {malloc(n * 4), malloc(n * 4), malloc(n * 4), malloc(n * 4)};
    assert_true(b.ids && b.types && b.att && b.labels);
    mlm_batch(ds, seed, step, batch, (mlm_place){0, 1, 1}, b.ids, b.types, b.att, b.labels);
    return b;
}

static void free_bufs(batch_bufs *b)
{
    free(b->ids), free(b->types), free(b->att), free(b->labels);
}

/* within 4 standard deviations of the binomial's mean */
static void near(size_t got, size_t n, double p, const char *what)
{
    double mean = n * p, sd = sqrt(n * p * (1 - p));
    if (fabs((double)got - mean) > 4 * sd)
        fail_msg("%s: %zu of %zu, expected %.0f +- %.0f", what, got, n, mean, 4 * sd);
}

static void test_proportions(void **state)
{
    (void)state;
    mlm_dataset ds = plain(512, 128, NULL, 0.15);
    batch_bufs b = run_batch(&ds, 1234, 3, 128);
    size_t n = 128 * 512, chosen = 0, masked = 0, random = 0, kept = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(b.types[i], 0);
        assert_int_equal(b.att[i], 1);
        if (b.labels[i] == -100) {
            assert_int_equal(b.ids[i], 7); /* not chosen: unchanged */
            continue;
        }
        assert_int_equal(b.labels[i], 7);
        chosen++;
        masked += b.ids[i] == 4;
        random += b.ids[i] != 4 && b.ids[i] != 7;
        kept += b.ids[i] == 7;
        assert_true(b.ids[i] >= 0 && b.ids[i] < 1000);
    }
    near(chosen, n, 0.15, "chosen");
    near(masked, chosen, 0.8, "[MASK] of the chosen");
    near(random + kept, chosen, 0.2, "random or kept of the chosen");
    near(random, chosen, 0.1 * 0.999, "random of the chosen"); /* 1 in 1000 draws 7 again */
    free_bufs(&b);
    mlm_dataset_free(&ds);
}

static void test_special_and_padding_never_chosen(void **state)
{
    (void)state;
    tokenizer *t = open_wp();
    const char *path = write_temp("the loss\nthe loss the loss the loss the loss the loss the loss\nloss\n");
    mlm_options o = {.seq_len = 16, .line_by_line = 1, .mlm_probability = 1.0};
    mlm_dataset ds;
    assert_int_equal(mlm_dataset_load(path, t, &o, &ds), 0);
    batch_bufs b = run_batch(&ds, 99, 0, 3);
    for (size_t i = 0; i < 3 * 16; i++) {
        if (ds.special[i]) {
            assert_int_equal(b.labels[i], -100);
            assert_int_equal(b.ids[i], ds.ids[i]);
        } else {
            assert_int_equal(b.labels[i], ds.ids[i]); /* p = 1: every other one chosen */
        }
        assert_int_equal(b.att[i], ds.attention[i]);
    }
    free_bufs(&b);
    mlm_dataset_free(&ds);
    remove(path);
    tokenizer_free(t);
}

static void test_same_seed_step_same_masks(void **state)
{
    (void)state;
    mlm_dataset ds = plain(64, 8, NULL, 0.15);
    batch_bufs a = run_batch(&ds, 5, 10, 8), b = run_batch(&ds, 5, 10, 8);
    batch_bufs c = run_batch(&ds, 5, 11, 8), d = run_batch(&ds, 6, 10, 8);
    assert_memory_equal(a.ids, b.ids, 8 * 64 * 4);
    assert_memory_equal(a.labels, b.labels, 8 * 64 * 4);
    assert_memory_not_equal(a.labels, c.labels, 8 * 64 * 4); /* another step */
    assert_memory_not_equal(a.labels, d.labels, 8 * 64 * 4); /* another seed */
    /* rank 1 of 2 draws row j = 1 + 2i: the same masks as global row j of one rank */
    int32_t ids[64], types[2 * 64], att[2 * 64], labels[64], ids1[2 * 64], labels1[2 * 64];
    mlm_batch(&ds, 5, 10, 1, (mlm_place){1, 2, 1}, ids, types, att, labels);
    mlm_batch(&ds, 5, 10, 2, (mlm_place){0, 1, 1}, ids1, types, att, labels1);
    assert_memory_equal(labels, labels1 + 64, sizeof labels);
    free_bufs(&a), free_bufs(&b), free_bufs(&c), free_bufs(&d);
    mlm_dataset_free(&ds);
}

/* The samples and masks of optimizer step `opt` (from 0) of a run with global batch 4 made as
 * world x accumulation x batch, in global-sample order into ids[4*T], labels[4*T]: rank r's
 * row i of micro-batch a is global sample r + (a*batch + i)*world of the step */
static void global_step(const mlm_dataset *ds, int opt, int world, int accum, int32_t *ids,
                        int32_t *labels)
{
    int batch = 4 / (world * accum), T = ds->seq_len;
    int32_t b_ids[4 * 16], types[4 * 16], att[4 * 16], b_lab[4 * 16];
    assert_true(T <= 16);
    for (int r = 0; r < world; r++)
        for (int a = 0; a < accum; a++) {
            mlm_batch(ds, 77, opt * accum + a, batch, (mlm_place){r, world, accum}, b_ids, types,
                      att, b_lab);
            for (int i = 0; i < batch; i++) {
                int g = r + (a * batch + i) * world;
                memcpy(ids + g * T, b_ids + i * T, (size_t)T * sizeof *ids);
                memcpy(labels + g * T, b_lab + i * T, (size_t)T * sizeof *labels);
            }
        }
}

/* a sample's mask depends on its place in the global sample stream only: one rank with batch
 * 4, accumulation 2 x 2, 2 ranks x 2, 2 ranks with accumulation 2 x 1 and 4 ranks x 1 mask
 * every sample of every step alike (with accumulation the micro-batch was ignored: rows 2 and
 * 3 of the global batch drew rows 0 and 1's masks at another step) */
static void test_masks_same_at_every_world_and_accumulation(void **state)
{
    (void)state;
    enum { T = 16, ROWS = 12 };
    mlm_dataset ds = plain(T, ROWS, NULL, 0.5);
    for (size_t r = 0; r < ROWS; r++) /* rows told apart by their ids */
        for (size_t t = 0; t < T; t++)
            ds.ids[r * T + t] = (int32_t)(10 + r);
    static const int shapes[][2] = {{1, 2}, {2, 1}, {2, 2}, {4, 1}, {1, 4}};
    for (int opt = 0; opt < 3; opt++) {
        int32_t ids1[4 * T], lab1[4 * T], ids[4 * T], lab[4 * T];
        global_step(&ds, opt, 1, 1, ids1, lab1);
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            global_step(&ds, opt, shapes[k][0], shapes[k][1], ids, lab);
            if (memcmp(ids, ids1, sizeof ids) || memcmp(lab, lab1, sizeof lab))
                fail_msg("step %d: world %d x accumulation %d masks other samples or masks than "
                         "one rank with batch 4", opt, shapes[k][0], shapes[k][1]);
        }
    }
    mlm_dataset_free(&ds);
}

/* one row checked by hand against the rule in data_mlm.h, drawing Philox directly with the
 * documented counter and literal thresholds: p = 0.5 is 2^31, 0.8 is 3435973837 */
static void test_hand_case(void **state)
{
    (void)state;
    uint8_t special[8] = {1, 0, 0, 0, 0, 0, 0, 1};
    mlm_dataset ds = plain(8, 1, special, 0.5);
    const uint64_t seed = 0x0123456789ABCDEFull;
    const int step = 7;
    int32_t ids[8], labels[8];
    memcpy(ids, ds.ids, sizeof ids);
    mlm_mask_row(&ds, seed, step, 3, ids, special, labels);
    int n_chosen = 0;
    for (uint32_t t = 0; t < 8; t++) {
        philox_ctr c = {{t, 3, 0x4D4C4D00u, 7}};
        c = philox4x32_10(c, 0x89ABCDEFu, 0x01234567u);
        int32_t want_id = 7, want_label = -100;
        if (!special[t] && c.v[0] < 0x80000000u) {
            want_label = 7;
            n_chosen++;
            if (c.v[1] < 3435973837u)
                want_id = 4;
            else if (c.v[2] < 0x80000000u)
                want_id = (int32_t)(((uint64_t)c.v[3] * 1000) >> 32);
        }
        assert_int_equal(ids[t], want_id);
        assert_int_equal(labels[t], want_label);
    }
    assert_true(n_chosen > 0 && n_chosen < 6); /* this seed chooses some, not all */
    mlm_dataset_free(&ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_by_line_rows),
        cmocka_unit_test(test_grouped_rows),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_proportions),
        cmocka_unit_test(test_special_and_padding_never_chosen),
        cmocka_unit_test(test_same_seed_step_same_masks),
        cmocka_unit_test(test_masks_same_at_every_world_and_accumulation),
        cmocka_unit_test(test_hand_case),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
