/* tests/test_scenario.c: scenario files (good ones, defaults, the hash, every kind of bad input
 * with its message), the GPT-2 config and override rules, and json_locate_line. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/json_locate.h"
#include "models/model_config.h"
#include "train/scenario.h"
#include "testutil.h"
#include "util/util.h"

/* ---- stderr capture ------------------------------------------------------------------------- */

static char captured[16384];
static int saved_fd = -1;
static const char *capture_path;

static void capture_begin(void)
{
    fflush(stderr);
    capture_path = tu_temp_path(".err");
    int fd = open(capture_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    saved_fd = dup(2);
    assert_true(saved_fd >= 0);
    assert_true(dup2(fd, 2) >= 0);
    close(fd);
}

/* restores stderr, leaves what was written in `captured` and echoes it for the test log */
static void capture_end(void)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    size_t n = 0;
    char *text = read_file(capture_path, &n);
    snprintf(captured, sizeof captured, "%s", text ? text : "");
    free(text);
    unlink(capture_path);
    fputs(captured, stderr);
}

static const char *fixture(const char *name)
{
    static char rel[256];
    snprintf(rel, sizeof rel, "tests/data/scenarios/%s", name);
    return tu_source_path(rel);
}

static int load_captured(const char *name, scenario *s)
{
    capture_begin();
    int rc = scenario_load(fixture(name), s);
    capture_end();
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* ---- good files ----------------------------------------------------------------------------- */

static void test_good_values(void **state)
{
    scenario s;
    assert_int_equal(load_captured("good.json", &s), 0);
    assert_string_equal(s.name, "gpt2-tiny");
    assert_string_equal(s.description, "a tiny gpt2 for the scenario tests");
    assert_string_equal(s.family, "gpt2");
    assert_int_equal(s.model.gpt2.vocab_size, 256);
    assert_int_equal(s.model.gpt2.n_positions, 128);
    assert_int_equal(s.model.gpt2.n_embd, 32);
    assert_int_equal(s.model.gpt2.n_layer, 2);
    assert_int_equal(s.model.gpt2.n_head, 4);
    assert_string_equal(s.model.gpt2.activation_function, "gelu_new"); /* from gelu_pytorch_tanh */
    assert_true(s.model.gpt2.attn_pdrop == 0 && s.model.gpt2.embd_pdrop == 0 && s.model.gpt2.resid_pdrop == 0);
    assert_true(s.model.gpt2.summary_first_dropout == 0);
    assert_string_equal(s.config_path, "");
    assert_true(ends_with(s.data_path, "tests/data/scenarios/tiny.txt"));
    assert_string_equal(s.tokenizer, "byte");
    assert_int_equal(s.seq_len, 64);
    assert_int_equal(s.steps, 30);
    assert_int_equal(s.batch_size, 4);
    assert_true(s.lr == 1e-3 && s.warmup_steps == 5 && s.weight_decay == 0.1);
    assert_string_equal(s.schedule, "cosine");
    assert_int_equal(s.decay_all, 0);
    assert_true(s.beta1 == 0.9 && s.beta2 == 0.95 && s.eps == 1e-6 && s.clip == 0);
    assert_true(s.seed == 123 && s.eval_every == 0 && s.world_size == 2);
    assert_string_equal(s.dtype, "fp32");
    assert_true(s.loss_rtol == 1e-4 && s.loss_atol == 0 && s.grad_norm_rtol == 1e-3);
    assert_true(s.grad_norm_atol == 1e-6 && s.min_throughput_ratio == 0.2);
    assert_true(s.max_memory_ratio == 1.5);
    assert_string_equal(s.baseline, "cpu");
    assert_non_null(s.json);
    assert_int_equal(s.json[0], '{');
    assert_int_equal(strlen(s.hash), 64);
    assert_true(ends_with(s.path, "good.json"));
    scenario_free(&s);
    assert_null(s.json);
}

static void test_minimal_defaults(void **state)
{
    scenario s;
    assert_int_equal(load_captured("minimal.json", &s), 0);
    assert_string_equal(s.description, "");
    assert_string_equal(s.tokenizer, "byte");
    assert_int_equal(s.warmup_steps, 0);
    assert_string_equal(s.schedule, "constant");
    assert_true(s.weight_decay == 0 && s.decay_all == 1);
    assert_true(s.beta1 == 0.9 && s.beta2 == 0.999 && s.eps == 1e-8 && s.clip == 1.0);
    assert_true(s.seed == 0 && s.eval_every == 0 && s.world_size == 1);
    assert_string_equal(s.dtype, "fp32");
    assert_true(s.loss_rtol == -1 && s.loss_atol == -1 && s.grad_norm_rtol == -1);
    assert_true(s.grad_norm_atol == -1 && s.min_throughput_ratio == -1);
    assert_true(s.max_memory_ratio == -1);
    assert_string_equal(s.baseline, "");
    /* GPT2Config defaults for the keys the inline config leaves out */
    assert_true(s.model.gpt2.layer_norm_epsilon == 1e-5 && s.model.gpt2.initializer_range == 0.02);
    assert_string_equal(s.model.gpt2.activation_function, "gelu_new");
    assert_string_equal(s.model.gpt2.torch_dtype, "float32");
    assert_true(s.model.gpt2.summary_first_dropout == 0.1);
    scenario_free(&s);
}

static void test_hash(void **state)
{
    scenario a, b, c;
    assert_int_equal(load_captured("good.json", &a), 0);
    assert_int_equal(load_captured("good_reformatted.json", &b), 0);
    assert_int_equal(load_captured("good_lr.json", &c), 0);
    assert_string_equal(a.hash, b.hash);  /* whitespace, key order, 1e-05 vs 0.00001 */
    assert_string_not_equal(a.hash, c.hash); /* lr 1e-3 -> 2e-3 */
    assert_string_not_equal(a.json, b.json);
    scenario_free(&a);
    scenario_free(&b);
    scenario_free(&c);
}

static void test_config_dir(void **state)
{
    scenario s;
    assert_int_equal(load_captured("config_dir.json", &s), 0);
    assert_true(ends_with(s.config_path, "scenarios/gpt2-tiny/config.json"));
    assert_int_equal(s.model.gpt2.vocab_size, 512);
    assert_int_equal(s.model.gpt2.n_embd, 64);
    assert_int_equal(s.model.gpt2.n_layer, 2);
    assert_int_equal(s.model.gpt2.n_positions, 128);
    assert_true(s.model.gpt2.attn_pdrop == 0 && s.model.gpt2.summary_first_dropout == 0);
    assert_string_equal(s.model.gpt2.torch_dtype, "float32");
    scenario_free(&s);
}

static void test_config_file_inline_overrides(void **state)
{
    scenario s;
    assert_int_equal(load_captured("config_file.json", &s), 0);
    assert_true(ends_with(s.config_path, "scenarios/gpt2-tiny/config.json"));
    assert_int_equal(s.model.gpt2.n_layer, 1);
    assert_true(s.model.gpt2.summary_first_dropout == 0.1); /* unused by the LM head: accepted */
    scenario_free(&s);
}

/* a config file's dropouts (0.1 each) are trained as they are, no override needed */
static void test_config_file_dropout(void **state)
{
    scenario s;
    assert_int_equal(load_captured("config_file_dropout.json", &s), 0);
    assert_true(s.model.gpt2.resid_pdrop == 0.1 && s.model.gpt2.embd_pdrop == 0.1);
    assert_true(s.model.gpt2.attn_pdrop == 0.1);
    scenario_free(&s);
}

static void test_override_missing_key(void **state)
{
    scenario s;
    assert_int_equal(load_captured("override_missing_key.json", &s), 0);
    assert_non_null(strstr(captured, "warning: "));
    assert_non_null(strstr(captured, "override_missing_key.json:8: "
                                     "model.overrides.rotary_dim: "));
    assert_int_equal(s.model.gpt2.n_layer, 2); /* the other override applied */
    scenario_free(&s);
}

static void test_override_null_key(void **state)
{
    scenario s;
    assert_int_equal(load_captured("override_null_key.json", &s), 0);
    assert_non_null(strstr(captured, "warning: "));
    assert_non_null(strstr(captured, "override_null_key.json:7: model.overrides.n_inner: "));
    assert_non_null(strstr(captured, "null"));
    scenario_free(&s);
}

static void test_override_dtype(void **state)
{
    scenario s;
    assert_int_equal(load_captured("override_dtype.json", &s), 0);
    assert_string_equal(s.model.gpt2.torch_dtype, "bfloat16");
    assert_string_equal(captured, "");
    scenario_free(&s);
}

/* ---- bad files: each returns 2 with a message naming file, line and field ------------------- */

typedef struct {
    const char *file;
    const char *message; /* a part of what it prints */
} bad_case;

static const bad_case BAD[] = {
    {"bad_syntax.json", "bad_syntax.json:3:30: invalid JSON: "},
    {"bad_truncated.json", "bad_truncated.json:8:14: invalid JSON: premature end of input"},
    {"empty.json", "empty.json:1:0: invalid JSON: "},
    {"garbage.json", "garbage.json:1:1: invalid JSON: "},
    {"bad_not_object.json", "bad_not_object.json:1: a scenario must be a JSON object, not an "
                            "array"},
    {"bad_duplicate.json", "bad_duplicate.json:3:8: invalid JSON: duplicate object key"},
    {"bad_unknown_top.json", "bad_unknown_top.json:3: epochs: unknown key"},
    {"bad_unknown_train.json", "bad_unknown_train.json:10: train.momentum: unknown key"},
    {"bad_unknown_model.json", "bad_unknown_model.json:5: model.checkpoint: unknown key"},
    {"bad_unknown_tolerances.json", "bad_unknown_tolerances.json:11: tolerances.loss_tol: "
                                    "unknown key"},
    {"bad_type.json", "bad_type.json:9: train.steps: must be an integer, not a string"},
    {"bad_lr_zero.json", "bad_lr_zero.json:9: train.lr: must be > 0, got 0"},
    {"bad_steps_negative.json", "bad_steps_negative.json:9: train.steps: must be >= 1, got -5"},
    {"bad_seq_len.json", "bad_seq_len.json:8: data.seq_len: 65 is larger than the model's "
                         "n_positions (64)"},
    {"bad_schedule.json", "bad_schedule.json:10: train.schedule: unknown value \"step\""},
    {"bad_no_name.json", "bad_no_name.json:1: name: is required"},
    {"bad_missing_data.json", "bad_missing_data.json:8: data.path: cannot read the data file "},
    {"bad_both_config.json", "bad_both_config.json:5: model.config_path: give model.config or "
                             "model.config_path, not both"},
    {"bad_no_config.json", "bad_no_config.json:3: model: needs \"config\""},
    {"bad_dropout.json", "bad_dropout.json:6: model.config.attn_pdrop: must be in [0, 1), got 1"},
    {"bad_heads.json", "bad_heads.json:5: model.config.n_embd: 16 is not divisible by n_head"},
    {"bad_config_type.json", "bad_config_type.json:5: model.config.n_layer: must be an "
                             "integer, not a real number"},
    {"bad_config_path_missing.json", "bad_config_path_missing.json:5: model.config_path: "
                                     "cannot read "},
    {"bad_config_path_malformed.json", "malformed/config.json:4:10: invalid JSON: "},
    {"bad_config_file_type.json", "bad_config_file_type.json:4: model.overrides.use_cache: "
                                  "must be a boolean like the config's value, not an integer"},
    {"bad_override_type.json", "bad_override_type.json:7: model.overrides.n_layer: must be an "
                               "integer, not a string"},
    {"bad_override_dtype.json", "bad_override_dtype.json:7: model.overrides.torch_dtype: "
                                "unknown dtype \"float8\""},
    {"bad_betas.json", "bad_betas.json:10: train.betas: beta2 must be in [0, 1), got 1"},
    {"bad_family.json", "bad_family.json:4: model.family: unknown value \"t5\""},
    {"bad_world_size.json", "bad_world_size.json:9: world_size: must be >= 1, got 0"},
    {"bad_seed.json", "bad_seed.json:9: train.seed: must be a non-negative integer"},
    {"bad_world_size_huge.json", "bad_world_size_huge.json:9: world_size: 65537 is too large "
                                 "(at most 65536)"},
    {"bad_accum_zero.json", "bad_accum_zero.json:9: train.gradient_accumulation_steps: must be "
                            ">= 1, got 0"},
    {"bad_accum_huge.json", "bad_accum_huge.json:9: train.gradient_accumulation_steps: 70000 is "
                            "too large (at most 65536)"},
    {"bad_accum_type.json", "bad_accum_type.json:9: train.gradient_accumulation_steps: must be "
                            "an integer, not a string"},
    {"no-such-scenario.json", "no-such-scenario.json: cannot read the scenario: "},
    {"gpt2-tiny", "gpt2-tiny: cannot read the scenario: it is a directory, not a regular file"},
};

static void test_bad_files(void **state)
{
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        scenario s;
        int rc = load_captured(BAD[i].file, &s);
        if (rc != 2 || !strstr(captured, BAD[i].message) || !strstr(captured, "error: "))
            fail_msg("%s: rc %d, wanted 2 and a message with \"%s\", got \"%s\"", BAD[i].file, rc,
                     BAD[i].message, captured);
        assert_null(s.json);
        scenario_free(&s);
        scenario_free(&s); /* safe twice */
    }
}

static void test_no_path(void **state)
{
    scenario s;
    capture_begin();
    int rc = scenario_load(NULL, &s);
    capture_end();
    assert_int_equal(rc, 2);
    assert_non_null(strstr(captured, "no file given"));
    scenario_free(&s);
}

/* a scenario written elsewhere: relative paths start from its own folder, absolute ones not */
static void test_absolute_data_path(void **state)
{
    const char *path = tu_temp_path(".json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"name\": \"abs\", \"model\": {\"family\": \"gpt2\", \"config_path\": \"%s\", "
               "\"overrides_path\": \"%s\"}, \"data\": {\"path\": \"%s\", \"seq_len\": 8}, "
               "\"train\": {\"steps\": 1, \"batch_size\": 1, \"lr\": 0.1}}\n",
            fixture("gpt2-tiny"), fixture("gpt2-tiny/override_config.json"),
            fixture("tiny.txt"));
    fclose(f);
    scenario s;
    capture_begin();
    int rc = scenario_load(path, &s);
    capture_end();
    unlink(path);
    assert_int_equal(rc, 0);
    assert_string_equal(s.data_path, fixture("tiny.txt"));
    scenario_free(&s);
}

/* ---- the GPT-2 config and override rules ---------------------------------------------------- */

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("test JSON does not parse: %s: %s", text, e.text);
    return j;
}

static int from_json(gpt2_config *c, const char *text)
{
    json_t *j = parse(text);
    capture_begin();
    int rc = gpt2_config_from_json(c, j, "cfg.json");
    capture_end();
    json_decref(j);
    return rc;
}

static void test_config_defaults_and_types(void **state)
{
    gpt2_config c;
    gpt2_config_defaults(&c);
    assert_int_equal(c.vocab_size, 50257);
    assert_int_equal(c.n_positions, 1024);
    assert_int_equal(c.n_embd, 768);
    assert_true(c.n_layer == 12 && c.n_head == 12);
    assert_string_equal(c.activation_function, "gelu_new");
    assert_true(c.resid_pdrop == 0.1 && c.embd_pdrop == 0.1 && c.attn_pdrop == 0.1);
    assert_true(c.layer_norm_epsilon == 1e-5 && c.initializer_range == 0.02);
    assert_true(c.summary_first_dropout == 0.1);
    assert_string_equal(c.torch_dtype, "float32");

    assert_int_equal(from_json(&c, "{\"layer_norm_epsilon\": 1, \"n_inner\": null, "
                                   "\"torch_dtype\": null, \"foo\": [1]}"), 0);
    assert_true(c.layer_norm_epsilon == 1.0); /* an integer is a number */
    assert_int_equal(from_json(&c, "{\"n_layer\": 2.0}"), 2);
    assert_non_null(strstr(captured, "cfg.json: n_layer: must be an integer, not a real"));
    assert_int_equal(from_json(&c, "{\"n_layer\": \"2\"}"), 2);
    assert_int_equal(from_json(&c, "{\"n_layer\": 3000000000}"), 2);
    assert_int_equal(from_json(&c, "{\"attn_pdrop\": false}"), 2);
    assert_int_equal(from_json(&c, "{\"activation_function\": 1}"), 2);
    assert_int_equal(from_json(&c, "{\"torch_dtype\": \"int8\"}"), 2);
    assert_int_equal(from_json(&c, "[1]"), 2);
    assert_int_equal(from_json(&c, "{\"torch_dtype\": \"torch.float16\"}"), 0);
    assert_string_equal(c.torch_dtype, "float16");
}

/* applies overrides_text to a config made from config_text; returns the result code */
static int overrides(gpt2_config *c, const char *config_text, const char *overrides_text)
{
    json_t *cfg = parse(config_text), *ovr = parse(overrides_text);
    gpt2_config_defaults(c);
    capture_begin();
    int rc = gpt2_config_from_json(c, cfg, "cfg.json");
    if (!rc)
        rc = gpt2_config_apply_overrides(c, cfg, ovr, "ovr.json");
    capture_end();
    json_decref(cfg);
    json_decref(ovr);
    return rc;
}

static void test_override_rules(void **state)
{
    const char *cfg = "{\"attn_pdrop\": 0.1, \"use_cache\": true, \"n_inner\": null, "
                      "\"n_ctx\": 1024, \"architectures\": [\"GPT2LMHeadModel\"]}";
    gpt2_config c;
    assert_int_equal(overrides(&c, cfg, "{\"attn_pdrop\": 0, \"resid_pdrop\": 0.0}"), 0);
    assert_true(c.attn_pdrop == 0 && c.resid_pdrop == 0); /* resid_pdrop: a GPT2Config key */
    assert_string_equal(captured, "");
    assert_int_equal(overrides(&c, cfg, "{\"no_such_key\": 1, \"n_layer\": 3}"), 0);
    assert_non_null(strstr(captured, "warning: ovr.json: no_such_key: "));
    assert_int_equal(c.n_layer, 3);
    assert_int_equal(overrides(&c, cfg, "{\"n_inner\": 3072}"), 0);
    assert_non_null(strstr(captured, "warning: ovr.json: n_inner: "));
    assert_int_equal(overrides(&c, cfg, "{\"use_cache\": false, \"n_ctx\": 64}"), 0);
    assert_int_equal(overrides(&c, cfg, "{\"architectures\": []}"), 0);
    assert_int_equal(overrides(&c, cfg, "{\"use_cache\": 0}"), 2);
    assert_non_null(strstr(captured, "error: ovr.json: use_cache: must be a boolean"));
    assert_int_equal(overrides(&c, cfg, "{\"n_ctx\": 64.0}"), 2);
    assert_int_equal(overrides(&c, cfg, "{\"n_layer\": 2.5}"), 2);
    assert_int_equal(overrides(&c, cfg, "{\"attn_pdrop\": null}"), 2);
    assert_int_equal(overrides(&c, cfg, "{\"torch_dtype\": \"half\"}"), 0);
    assert_string_equal(c.torch_dtype, "float16");
    assert_int_equal(overrides(&c, cfg, "{\"torch_dtype\": \"double\"}"), 0);
    assert_string_equal(c.torch_dtype, "float64");
    assert_int_equal(overrides(&c, cfg, "{\"torch_dtype\": \"fp8\"}"), 2);
    assert_int_equal(overrides(&c, cfg, "{\"torch_dtype\": 32}"), 2);
    assert_int_equal(overrides(&c, "{\"torch_dtype\": null}", "{\"torch_dtype\": \"half\"}"), 0);
    assert_string_equal(c.torch_dtype, "float32"); /* null in the config: skipped */
    assert_int_equal(overrides(&c, cfg, "[]"), 2);
}

static int validate(const gpt2_config *c)
{
    capture_begin();
    int rc = gpt2_config_validate(c, "cfg.json");
    capture_end();
    return rc;
}

static void test_validate(void **state)
{
    gpt2_config c;
    gpt2_config_defaults(&c);
    assert_int_equal(validate(&c), 0); /* every dropout 0.1 by default: trained as it is */
    c.attn_pdrop = 1.0; /* [0, 1) */
    assert_int_equal(validate(&c), 2);
    assert_non_null(strstr(captured, "cfg.json: attn_pdrop: must be in [0, 1), got 1"));
    c.attn_pdrop = 0.1;
    c.resid_pdrop = -0.1;
    assert_int_equal(validate(&c), 2);
    assert_non_null(strstr(captured, "cfg.json: resid_pdrop: must be in [0, 1), got -0.1"));
    c.resid_pdrop = 0.1;
    c.embd_pdrop = 0.999;
    assert_int_equal(validate(&c), 0);
    c.attn_pdrop = c.embd_pdrop = c.resid_pdrop = 0;
    assert_int_equal(validate(&c), 0); /* summary_first_dropout 0.1: unused, accepted */
    snprintf(c.activation_function, sizeof c.activation_function, "gelu_pytorch_tanh");
    assert_int_equal(validate(&c), 0);
    snprintf(c.activation_function, sizeof c.activation_function, "relu");
    assert_int_equal(validate(&c), 2);
    assert_non_null(strstr(captured, "cfg.json: activation_function: \"relu\""));
    snprintf(c.activation_function, sizeof c.activation_function, "gelu_new");
    c.summary_first_dropout = 1.0;
    assert_int_equal(validate(&c), 2);
    c.summary_first_dropout = 0;
    c.n_head = 0;
    assert_int_equal(validate(&c), 2);
    assert_non_null(strstr(captured, "n_head: must be > 0, got 0"));
    c.n_head = 5;
    assert_int_equal(validate(&c), 2);
    c.n_head = 12;
    c.layer_norm_epsilon = 0;
    assert_int_equal(validate(&c), 2);
    c.layer_norm_epsilon = 1e-5;
    c.vocab_size = -1;
    assert_int_equal(validate(&c), 2);
}

/* ---- json_locate_line ----------------------------------------------------------------------- */

static const char *DOC = "{\n"                                             /* 1 */
                         "  \"name\": \"x\",\n"                            /* 2 */
                         "  \"description\": \"train.lr \\\"lr\\\": 1\",\n" /* 3 */
                         "  \"model\": {\n"                                /* 4 */
                         "    \"overrides\": {\"lr\": 1,\n"                /* 5 */
                         "      \"n_layer\": 2}\n"                         /* 6 */
                         "  },\n"                                          /* 7 */
                         "  \"s\": \"ends in a backslash \\\\\",\n"        /* 8 */
                         "  \"train\": {\"steps\": 3,\n"                   /* 9 */
                         "    \"lr\": 0.1}\n"                              /* 10 */
                         "}\n";

static void test_locate_paths(void **state)
{
    assert_int_equal(json_locate_line(DOC, "name"), 2);
    assert_int_equal(json_locate_line(DOC, "train"), 9);
    assert_int_equal(json_locate_line(DOC, "train.lr"), 10); /* not in the string, not model's */
    assert_int_equal(json_locate_line(DOC, "train.steps"), 9);
    assert_int_equal(json_locate_line(DOC, "model.overrides.n_layer"), 6);
    assert_int_equal(json_locate_line(DOC, "model.overrides.lr"), 5);
    assert_int_equal(json_locate_line(DOC, "model.overrides.missing"), 5); /* innermost found */
    assert_int_equal(json_locate_line(DOC, "model.missing"), 4);
    assert_int_equal(json_locate_line(DOC, "lr"), 1); /* no top-level lr */
    assert_int_equal(json_locate_line(DOC, "missing"), 1);
    assert_int_equal(json_locate_line(DOC, "name.x"), 2); /* a scalar has no keys */
}

static void test_locate_scope(void **state)
{
    /* a key of the same name in a sibling object, or after a scalar value, does not match */
    const char *doc = "{\"a\": 1, \"b\": {\"x\": 1},\n"
                      " \"c\": [{\"x\": 2}],\n"
                      " \"x\": 3,\n"
                      " \"d\": {\"e\": {\"x\": 4}},\n"
                      " \"f\": {\n"
                      "  \"x\": 5}}";
    assert_int_equal(json_locate_line(doc, "x"), 3);
    assert_int_equal(json_locate_line(doc, "a.x"), 1);
    assert_int_equal(json_locate_line(doc, "c.x"), 2); /* arrays are not entered */
    assert_int_equal(json_locate_line(doc, "d.x"), 4);
    assert_int_equal(json_locate_line(doc, "f.x"), 6);
    /* a string value followed by ':' in an array is not a key (invalid JSON, but no crash) */
    assert_int_equal(json_locate_line("{\n\"k\": [\"x\"],\n\"x\": 1}", "x"), 3);
}

static void test_locate_garbage(void **state)
{
    const char *bad[] = {"", "{", "}", "}}}}]]", "\"", "\"\\", "\\", "{\"a", "{\"a\\\"",
                         "{\"a\":{\"b\":", "{\"a\"\n:\n{\"b\"\n:", "[[[[[[", "\"a\":\"a\":"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int line = json_locate_line(bad[i], "a.b");
        assert_true(line >= 1 && line <= 3);
    }
    assert_int_equal(json_locate_line("{\"a\"\n:\n{\"b\"\n:", "a.b"), 3);
    assert_int_equal(json_locate_line(NULL, "a"), 1);
    assert_int_equal(json_locate_line("{\"a\": 1}", NULL), 1);
    assert_int_equal(json_locate_line("{\"a\": 1}", ""), 1);
    /* random bytes in exactly-sized heap buffers: ASan catches any read past the NUL */
    uint64_t rng = 42;
    const char alphabet[] = "{}[]\":,\\ab.\n x\x01\xff";
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)tu_uniform(&rng, 0, 64);
        char *text = malloc(n + 1);
        assert_non_null(text);
        for (size_t i = 0; i < n; i++)
            text[i] = alphabet[(size_t)tu_uniform(&rng, 0, sizeof alphabet - 1)];
        text[n] = 0;
        assert_true(json_locate_line(text, round % 2 ? "a" : "a.b.x") >= 1);
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_values),
        cmocka_unit_test(test_minimal_defaults),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_config_dir),
        cmocka_unit_test(test_config_file_inline_overrides),
        cmocka_unit_test(test_config_file_dropout),
        cmocka_unit_test(test_override_missing_key),
        cmocka_unit_test(test_override_null_key),
        cmocka_unit_test(test_override_dtype),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_no_path),
        cmocka_unit_test(test_absolute_data_path),
        cmocka_unit_test(test_config_defaults_and_types),
        cmocka_unit_test(test_override_rules),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_locate_paths),
        cmocka_unit_test(test_locate_scope),
        cmocka_unit_test(test_locate_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
