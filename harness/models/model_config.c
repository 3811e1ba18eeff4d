/* harness/models/model_config.c: GPT-2 model configuration: GPT2Config's defaults, reading config.json
 * keys, the override_config.json rules, and the checks for what the harness can train. */
#define _POSIX_C_SOURCE 200809L
#include "model_config.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* ---- the keys the harness models ------------------------------------------------------------ */

typedef enum { F_INT, F_REAL, F_ACTIVATION, F_DTYPE } field_type;

typedef struct {
    const char *key;
    field_type type;
    size_t off;
} field;

#define FIELD(k, t) {#k, t, offsetof(gpt2_config, k)}
static const field FIELDS[] = {
    FIELD(vocab_size, F_INT),
    FIELD(n_positions, F_INT),
    FIELD(n_embd, F_INT),
    FIELD(n_layer, F_INT),
    FIELD(n_head, F_INT),
    FIELD(layer_norm_epsilon, F_REAL),
    FIELD(initializer_range, F_REAL),
    FIELD(activation_function, F_ACTIVATION),
    FIELD(resid_pdrop, F_REAL),
    FIELD(embd_pdrop, F_REAL),
    FIELD(attn_pdrop, F_REAL),
    FIELD(summary_first_dropout, F_REAL),
    FIELD(torch_dtype, F_DTYPE),
};
#define NFIELDS (sizeof FIELDS / sizeof FIELDS[0])

/* GPT2Config's attribute_map: each name is GPT2Config's key too, and wins over the field it
 * names wherever both are given (transformers sets it after the field) */
const char *const GPT2_KEY_ALIASES[][2] = {{"hidden_size", "n_embd"},
                                           {"max_position_embeddings", "n_positions"},
                                           {"num_attention_heads", "n_head"},
                                           {"num_hidden_layers", "n_layer"},
                                           {NULL, NULL}};

static const field *find_field(const char *key)
{
    for (size_t i = 0; GPT2_KEY_ALIASES[i][0]; i++)
        if (strcmp(GPT2_KEY_ALIASES[i][0], key) == 0)
            key = GPT2_KEY_ALIASES[i][1];
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(FIELDS[i].key, key) == 0)
            return &FIELDS[i];
    return NULL;
}

/* torch attribute names (as torch.<name>) -> the dtype names the harness records */
static const char *const DTYPES[][2] = {
    {"float32", "float32"}, {"float", "float32"},   {"float16", "float16"}, {"half", "float16"},
    {"bfloat16", "bfloat16"}, {"float64", "float64"}, {"double", "float64"},
};

const char *config_dtype_name(const char *name)
{
    if (strncmp(name, "torch.", 6) == 0)
        name += 6;
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (strcmp(DTYPES[i][0], name) == 0)
            return DTYPES[i][1];
    return NULL;
}

void gpt2_config_defaults(gpt2_config *c)
{
    memset(c, 0, sizeof *c);
    c->vocab_size = 50257;
    c->n_positions = 1024;
    c->n_embd = 768;
    c->n_layer = 12;
    c->n_head = 12;
    c->layer_norm_epsilon = 1e-5;
    c->initializer_range = 0.02;
    snprintf(c->activation_function, sizeof c->activation_function, "gelu_new");
    c->resid_pdrop = c->embd_pdrop = c->attn_pdrop = 0.1;
    c->summary_first_dropout = 0.1;
    snprintf(c->torch_dtype, sizeof c->torch_dtype, "float32");
}

/* ---- messages: `where` is "FILE" or "FILE: PREFIX" (the dotted path of the config object) --- */

/* copies FILE into file and returns PREFIX, or NULL when where names only a file */
static const char *split_where(const char *where, char *file, size_t len)
{
    const char *sep = NULL;
    for (const char *p = strstr(where, ": "); p; p = strstr(p + 1, ": "))
        sep = p;
    const char *prefix = sep ? sep + 2 : NULL;
    if (prefix && (!*prefix || strspn(prefix, "abcdefghijklmnopqrstuvwxyz"
                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
                                   strlen(prefix)))
        prefix = NULL;
    int n = prefix ? (int)(sep - where) : (int)strlen(where);
    snprintf(file, len, "%.*s", n, where);
    return prefix;
}

/* prints "FILE:LINE: FIELD: message", the line found by re-reading FILE (messages are rare);
 * "WHERE: FIELD: message" when FILE cannot be read */
static void report(int warning, const char *where, const char *key, const char *fmt, va_list ap)
{
    char file[PATH_MAX], field_name[256], msg[512];
    const char *prefix = split_where(where ? where : "config", file, sizeof file);
    if (prefix && *key)
        snprintf(field_name, sizeof field_name, "%s.%s", prefix, key);
    else
        snprintf(field_name, sizeof field_name, "%s", prefix ? prefix : key);
    vsnprintf(msg, sizeof msg, fmt, ap);
    char why[INPUT_WHY_LEN];
    char *text = input_read(file, INPUT_MODEL_CONFIG, NULL, why, sizeof why);
    char loc[PATH_MAX + 16];
    if (text)
        snprintf(loc, sizeof loc, "%s:%d", file, json_locate_line(text, field_name));
    else
        snprintf(loc, sizeof loc, "%s", file);
    free(text);
    const char *sep = field_name[0] ? ": " : "";
    if (warning)
        log_warn("%s: %s%s%s", loc, field_name, sep, msg);
    else
        log_error("%s: %s%s%s", loc, field_name, sep, msg);
}

int config_error(const char *where, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(0, where, key, fmt, ap);
    va_end(ap);
    return 2;
}

void config_warn(const char *where, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(1, where, key, fmt, ap);
    va_end(ap);
}

/* ---- reading one key ------------------------------------------------------------------------ */

static int set_int(int *out, json_t *v, const char *where, const char *key)
{
    if (!json_is_integer(v))
        return config_error(where, key, "must be an integer, not %s", json_type_name(v));
    json_int_t i = json_integer_value(v);
    if (i < INT_MIN || i > INT_MAX)
        return config_error(where, key, "%lld does not fit in an int", (long long)i);
    *out = (int)i;
    return 0;
}

static int set_real(double *out, json_t *v, const char *where, const char *key)
{
    if (!json_is_number(v))
        return config_error(where, key, "must be a number, not %s", json_type_name(v));
    *out = json_number_value(v);
    return 0;
}

/* "gelu_pytorch_tanh" is the same function as "gelu_new" and is recorded as gelu_new */
static int set_activation(gpt2_config *c, json_t *v, const char *where)
{
    const char *key = "activation_function";
    if (!json_is_string(v))
        return config_error(where, key, "must be a string, not %s", json_type_name(v));
    const char *name = json_string_value(v);
    if (strcmp(name, "gelu_pytorch_tanh") == 0)
        name = "gelu_new";
    if (strlen(name) >= sizeof c->activation_function)
        return config_error(where, key, "\"%.40s...\" is too long", name);
    snprintf(c->activation_function, sizeof c->activation_function, "%s", name);
    return 0;
}

int config_set_dtype(char *out, size_t len, json_t *v, const char *where)
{
    return config_set_dtype_key(out, len, v, where, "torch_dtype");
}

int config_set_dtype_key(char *out, size_t len, json_t *v, const char *where, const char *key)
{
    if (!json_is_string(v))
        return config_error(where, key, "must be a string naming a dtype, not %s",
                            json_type_name(v));
    const char *name = config_dtype_name(json_string_value(v));
    if (!name)
        return config_error(where, key,
                            "unknown dtype \"%.64s\" (float32, float16, bfloat16, float64 or "
                            "their torch aliases float, half, double)",
                            json_string_value(v));
    snprintf(out, len, "%s", name);
    return 0;
}

int config_read_dtype(char *out, size_t len, json_t *obj, const char *where)
{
    json_t *td = json_object_get(obj, "torch_dtype"), *dt = json_object_get(obj, "dtype");
    int has_td = td && !json_is_null(td);
    char unused[16];
    /* transformers 5 writes "dtype" where 4.x wrote "torch_dtype": each one given is checked
     * under its own name; torch_dtype wins when both are */
    if (dt && !json_is_null(dt)) {
        int rc = has_td ? config_set_dtype_key(unused, sizeof unused, dt, where, "dtype")
                        : config_set_dtype_key(out, len, dt, where, "dtype");
        if (rc)
            return rc;
    }
    return has_td ? config_set_dtype(out, len, td, where)
                  : 0; /* absent or null: transformers' default, float32 */
}

/* field f from v, named key in messages (f's own key, or an alias of it) */
static int set_field(gpt2_config *c, const field *f, json_t *v, const char *where,
                     const char *key)
{
    char *at = (char *)c + f->off;
    switch (f->type) {
    case F_INT: return set_int((int *)at, v, where, key);
    case F_REAL: return set_real((double *)at, v, where, f->key);
    case F_ACTIVATION: return set_activation(c, v, where);
    case F_DTYPE: return config_set_dtype(c->torch_dtype, sizeof c->torch_dtype, v, where);
    }
    return config_error(where, f->key, "internal error: unknown field type");
}

int gpt2_config_from_json(gpt2_config *c, json_t *obj, const char *where)
{
    if (!json_is_object(obj))
        return config_error(where, "", "a model config must be a JSON object, not %s",
                            obj ? json_type_name(obj) : "nothing");
    for (size_t i = 0; i < NFIELDS; i++) {
        json_t *v = json_object_get(obj, FIELDS[i].key);
        if (!v || FIELDS[i].type == F_DTYPE)
            continue; /* absent; torch_dtype below */
        int rc = set_field(c, &FIELDS[i], v, where, FIELDS[i].key);
        if (rc)
            return rc;
    }
    for (size_t i = 0; GPT2_KEY_ALIASES[i][0]; i++) {
        json_t *v = json_object_get(obj, GPT2_KEY_ALIASES[i][0]);
        int rc = v ? set_field(c, find_field(GPT2_KEY_ALIASES[i][0]), v, where,
                               GPT2_KEY_ALIASES[i][0])
                   : 0;
        if (rc)
            return rc;
    }
    return config_read_dtype(c->torch_dtype, sizeof c->torch_dtype, obj, where);
}

/* ---- overrides ------------------------------------------------------------------------------ */

/* the seed's type rule, with JSON's number kinds: an integer key takes only an integer, a real
 * key takes an integer or a real, true and false are one type */
static int same_type(const json_t *cur, const json_t *v)
{
    if (json_is_real(cur))
        return json_is_number(v);
    if (json_is_boolean(cur))
        return json_is_boolean(v);
    return json_typeof(cur) == json_typeof(v);
}

/* an override of "dtype" (transformers 5's name for torch_dtype): checked as a dtype under its
 * own name, then set as torch_dtype (every family models torch_dtype) */
static int apply_dtype(void *c, config_set_fn set, json_t *config, json_t *v, const char *where)
{
    json_t *cur = json_object_get(config, "dtype");
    char name[16];
    if (cur && json_is_null(cur)) {
        config_warn(where, "dtype", "\"dtype\" is null in the config: override skipped");
        return 0;
    }
    int rc = config_set_dtype_key(name, sizeof name, v, where, "dtype");
    return rc ? rc : set(c, "torch_dtype", v, where);
}

static int apply_one(void *c, config_set_fn set, json_t *config, const char *key, json_t *v,
                     const char *where)
{
    if (strcmp(key, "dtype") == 0 && set(c, "torch_dtype", NULL, where) == 0)
        return apply_dtype(c, set, config, v, where);
    json_t *cur = json_object_get(config, key);
    if (strcmp(key, "model_type") == 0 && !json_equal(cur, v)) /* it was accepted, no effect */
        return config_error(where, key, "an override cannot change the model type (the "
                                        "config's decides the architecture: write it there)");
    int modelled = set(c, key, NULL, where) == 0;
    if (!cur && !modelled) {
        config_warn(where, key, "the config has no key \"%s\": override skipped", key);
        return 0;
    }
    if (cur && json_is_null(cur)) {
        config_warn(where, key, "\"%s\" is null in the config: override skipped", key);
        return 0;
    }
    if (modelled)
        return set(c, key, v, where);
    if (!same_type(cur, v))
        return config_error(where, key, "must be %s like the config's value, not %s",
                            json_type_name(cur), json_type_name(v));
    return 0; /* a key the harness does not model: accepted, no effect */
}

int config_apply_overrides(void *c, config_set_fn set, json_t *config, json_t *overrides,
                           const char *where)
{
    if (!json_is_object(overrides))
        return config_error(where, "", "overrides must be a JSON object, not %s",
                            overrides ? json_type_name(overrides) : "nothing");
    if (!json_is_object(config))
        return config_error(where, "", "overrides need the model config as a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach(overrides, key, v)
    {
        int rc = apply_one(c, set, config, key, v, where);
        if (rc)
            return rc;
    }
    return 0;
}

/* config_set_fn for GPT2Config's keys */
static int gpt2_set_key(void *c, const char *key, json_t *v, const char *where)
{
    const field *f = find_field(key);
    if (!f)
        return -1;
    return v ? set_field(c, f, v, where, key) : 0;
}

int gpt2_config_apply_overrides(gpt2_config *c, json_t *config, json_t *overrides,
                                const char *where)
{
    return config_apply_overrides(c, gpt2_set_key, config, overrides, where);
}

/* ---- validation ----------------------------------------------------------------------------- */

uint64_t size_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t size_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t gpt2_config_param_count(const gpt2_config *c)
{
    uint64_t C = (uint64_t)c->n_embd;
    uint64_t per_layer = size_add(size_mul(12, size_mul(C, C)), size_mul(13, C));
    uint64_t n = size_add(size_mul((uint64_t)c->vocab_size, C),
                          size_mul((uint64_t)c->n_positions, C));
    return size_add(size_add(n, size_mul((uint64_t)c->n_layer, per_layer)), size_mul(2, C));
}

/* the tensors and the parameter total within GPT2_MAX_ELEMENTS, the sizes already > 0 */
static int check_products(const gpt2_config *c, const char *where)
{
    uint64_t C = (uint64_t)c->n_embd, max = GPT2_MAX_ELEMENTS;
    uint64_t fc = size_mul(4, size_mul(C, C)), wte = size_mul((uint64_t)c->vocab_size, C);
    uint64_t wpe = size_mul((uint64_t)c->n_positions, C), all = gpt2_config_param_count(c);
    if (fc > max)
        return config_error(where, "n_embd",
                         "%d is too large: mlp.c_fc.weight (n_embd x 4 n_embd) would have %llu "
                         "elements, over the limit of %llu per tensor",
                         c->n_embd, (unsigned long long)fc, (unsigned long long)max);
    if (wte > max)
        return config_error(where, "vocab_size",
                         "%d x n_embd %d = %llu elements in wte.weight, over the limit of %llu "
                         "per tensor",
                         c->vocab_size, c->n_embd, (unsigned long long)wte,
                         (unsigned long long)max);
    if (wpe > max)
        return config_error(where, "n_positions",
                         "%d x n_embd %d = %llu elements in wpe.weight, over the limit of %llu "
                         "per tensor",
                         c->n_positions, c->n_embd, (unsigned long long)wpe,
                         (unsigned long long)max);
    if (all > max)
        return config_error(where, "n_layer",
                         "%d layers of n_embd %d make %llu parameters, over the limit of %llu "
                         "parameters in all",
                         c->n_layer, c->n_embd, (unsigned long long)all, (unsigned long long)max);
    return 0;
}

static int check_sizes(const gpt2_config *c, const char *where)
{
    const struct {
        const char *key;
        int v;
    } sizes[] = {{"vocab_size", c->vocab_size}, {"n_positions", c->n_positions},
                 {"n_embd", c->n_embd},         {"n_layer", c->n_layer},
                 {"n_head", c->n_head}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].v <= 0)
            return config_error(where, sizes[i].key, "must be > 0, got %d", sizes[i].v);
    if (c->n_embd % c->n_head != 0)
        return config_error(where, "n_embd", "%d is not divisible by n_head (%d)", c->n_embd,
                         c->n_head);
    return check_products(c, where);
}

/* range [0, 1) for every dropout (gpt2.c applies the first three; summary_first_dropout is not
 * used by the LM head, so any value in range is accepted) */
static int check_dropouts(const gpt2_config *c, const char *where)
{
    const struct {
        const char *key;
        double p;
    } d[] = {{"resid_pdrop", c->resid_pdrop},
             {"embd_pdrop", c->embd_pdrop},
             {"attn_pdrop", c->attn_pdrop},
             {"summary_first_dropout", c->summary_first_dropout}};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (!(d[i].p >= 0 && d[i].p < 1))
            return config_error(where, d[i].key, "must be in [0, 1), got %g", d[i].p);
    return 0;
}

int gpt2_config_validate(const gpt2_config *c, const char *where)
{
    int rc = check_sizes(c, where);
    if (rc)
        return rc;
    if (strcmp(c->activation_function, "gelu_new") != 0 &&
        strcmp(c->activation_function, "gelu_pytorch_tanh") != 0)
        return config_error(where, "activation_function",
                         "\"%s\" is not implemented: use gelu_new (or gelu_pytorch_tanh)",
                         c->activation_function);
    if (!(c->layer_norm_epsilon > 0) || !isfinite(c->layer_norm_epsilon))
        return config_error(where, "layer_norm_epsilon", "must be > 0, got %g",
                         c->layer_norm_epsilon);
    /* at most 1e30: the normal draws (a few sigma) times it stay finite in fp32 */
    if (!(c->initializer_range >= 0 && c->initializer_range <= 1e30))
        return config_error(where, "initializer_range", "must be in [0, 1e30], got %g",
                         c->initializer_range);
    if (!config_dtype_name(c->torch_dtype))
        return config_error(where, "torch_dtype", "unknown dtype \"%s\"", c->torch_dtype);
    return check_dropouts(c, where);
}
