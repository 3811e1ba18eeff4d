/* harness/train/scenario.c: reads and validates a scenario file (JSON) into a scenario: every key
 * type- and range-checked, every message "<file>:<line>: <field>: <what is wrong>". */
#define _POSIX_C_SOURCE 200809L
#include "scenario.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/models.h"
#include "net/net.h"
#include "util/util.h"

/* a JSON document being read: its file (for messages), its text (for line numbers), the dotted
 * path of the object at hand ("" for the root) and the folder relative paths start from */
typedef struct {
    const char *file;
    const char *text;
    const char *prefix;
    const char *dir;
} src;

static src sub(const src *x, const char *prefix)
{
    src s = *x;
    s.prefix = prefix;
    return s;
}

/* ---- messages ------------------------------------------------------------------------------- */

static void field_name(const src *x, const char *key, char *out, size_t len)
{
    if (!key || !*key)
        snprintf(out, len, "%s", x->prefix);
    else if (!x->prefix[0])
        snprintf(out, len, "%s", key);
    else
        snprintf(out, len, "%s.%s", x->prefix, key);
}

/* "<file>:<line>: <prefix.key>: <message>" (no field when both are empty); returns 2 */
__attribute__((format(printf, 3, 4))) static int fail(const src *x, const char *key,
                                                      const char *fmt, ...)
{
    char field[256], msg[1024];
    field_name(x, key, field, sizeof field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = json_locate_line(x->text, field);
    log_error("%s:%d: %s%s%s", x->file, line, field, field[0] ? ": " : "", msg);
    return 2;
}

/* jansson's message quotes the input near the error: bytes that are not printable ASCII are
 * shown as '?' so that a binary file does not write control bytes to the terminal */
static int syntax_error(const char *file, const json_error_t *e, const char *doc)
{
    if (doc && strncmp(doc, "\xef\xbb\xbf", 3) == 0) { /* as Python's json refuses it too */
        log_error("%s:1:1: invalid JSON: the file starts with a UTF-8 byte-order mark (BOM); "
                  "save it without one", file);
        return 2;
    }
    char text[JSON_ERROR_TEXT_LENGTH];
    snprintf(text, sizeof text, "%s", e->text);
    for (char *c = text; *c; c++)
        if (*c < 0x20 || *c > 0x7e)
            *c = '?';
    log_error("%s:%d:%d: invalid JSON: %s", file, e->line, e->column, text);
    return 2;
}

/* NULL when path is a readable regular file within kind's size cap, else why not (in why) */
static const char *unreadable(const char *path, input_kind kind, char why[INPUT_WHY_LEN])
{
    uint64_t size = 0;
    int fd = input_open(path, &size, why, INPUT_WHY_LEN);
    if (fd < 0)
        return why;
    close(fd);
    if (size <= input_cap(kind))
        return NULL;
    snprintf(why, INPUT_WHY_LEN, "it is %llu bytes, over the %llu MiB limit for a %s "
             "(docs/limits.md)", (unsigned long long)size,
             (unsigned long long)(input_cap(kind) >> 20), input_kind_name(kind));
    return why;
}

/* ---- typed members: absent and optional leaves *out as it is --------------------------------- */

static json_t *member(const src *x, json_t *o, const char *key, int required, int *rc)
{
    json_t *v = json_object_get(o, key);
    *rc = !v && required ? fail(x, key, "is required") : 0;
    return v;
}

static int get_int(const src *x, json_t *o, const char *key, int req, int min, int *out)
{
    int rc;
    json_t *v = member(x, o, key, req, &rc);
    if (!v)
        return rc;
    if (!json_is_integer(v))
        return fail(x, key, "must be an integer, not %s", json_type_name(v));
    long long i = json_integer_value(v);
    if (i < min)
        return fail(x, key, "must be >= %d, got %lld", min, i);
    if (i > INT_MAX)
        return fail(x, key, "%lld is too large (at most %d)", i, INT_MAX);
    *out = (int)i;
    return 0;
}

/* a number (integer or real) that is >= min, or > min when strict */
static int get_real(const src *x, json_t *o, const char *key, int req, double min, int strict,
                    double *out)
{
    int rc;
    json_t *v = member(x, o, key, req, &rc);
    if (!v)
        return rc;
    if (!json_is_number(v))
        return fail(x, key, "must be a number, not %s", json_type_name(v));
    double d = json_number_value(v);
    if (strict ? !(d > min) : !(d >= min))
        return fail(x, key, "must be %s %g, got %g", strict ? ">" : ">=", min, d);
    *out = d;
    return 0;
}

static int get_str(const src *x, json_t *o, const char *key, int req, char *out, size_t len)
{
    int rc;
    json_t *v = member(x, o, key, req, &rc);
    if (!v)
        return rc;
    if (!json_is_string(v))
        return fail(x, key, "must be a string, not %s", json_type_name(v));
    if (json_string_length(v) >= len)
        return fail(x, key, "is too long (at most %zu bytes)", len - 1);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return fail(x, key, "must not contain a NUL character");
    snprintf(out, len, "%s", json_string_value(v));
    return 0;
}

static int get_bool(const src *x, json_t *o, const char *key, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return fail(x, key, "must be true or false, not %s", json_type_name(v));
    *out = json_is_true(v);
    return 0;
}

static int get_obj(const src *x, json_t *o, const char *key, int req, json_t **out)
{
    int rc;
    json_t *v = member(x, o, key, req, &rc);
    *out = NULL;
    if (!v)
        return rc;
    if (!json_is_object(v))
        return fail(x, key, "must be an object, not %s", json_type_name(v));
    *out = v;
    return 0;
}

/* 1 when s is in the NULL-terminated list; its items joined by ", " into out either way */
static int in_list(const char *s, const char *const *list, char *out, size_t len)
{
    int found = 0;
    out[0] = 0;
    for (const char *const *o = list; *o; o++) {
        found |= strcmp(*o, s) == 0;
        size_t n = strlen(out);
        snprintf(out + n, len - n, "%s%s", n ? ", " : "", *o);
    }
    return found;
}

static int one_of(const src *x, const char *key, const char *value, const char *const *options)
{
    char known[256];
    if (in_list(value, options, known, sizeof known))
        return 0;
    return fail(x, key, "unknown value \"%.64s\" (known: %s)", value, known);
}

/* every key of o must be in the NULL-terminated list */
static int check_keys(const src *x, json_t *o, const char *const *keys)
{
    const char *key;
    json_t *v;
    char known[512];
    json_object_foreach(o, key, v)
    {
        if (!in_list(key, keys, known, sizeof known))
            return fail(x, key, "unknown key (known: %s)", known);
    }
    return 0;
}

/* dir joined with rel into out[PATH_MAX] */
static int resolve(const src *x, const char *key, const char *rel, char *out)
{
    if (!rel[0])
        return fail(x, key, "must not be empty");
    if (strlen(x->dir) + strlen(rel) + 2 > PATH_MAX)
        return fail(x, key, "the path is too long");
    path_join(x->dir, rel, out, PATH_MAX);
    return 0;
}

/* ---- model ---------------------------------------------------------------------------------- */

/* model.config or model.overrides: inline, or read from the file that *_path names */
typedef struct {
    json_t *obj;                  /* new reference; NULL when absent */
    char *text;                   /* the file's text when read from a file */
    char path[PATH_MAX];          /* the file, "" when inline */
    char where[PATH_MAX + 64];    /* "FILE" or "FILE: model.config", for model_config.h */
    src at;                       /* where it came from, for messages */
} part;

static void part_close(part *p)
{
    json_decref(p->obj);
    free(p->text);
    memset(p, 0, sizeof *p);
}

/* reads the JSON object in p->path; `key` (model.*_path) is the field that named it */
static int part_read(const src *mx, const char *key, part *p)
{
    char why[INPUT_WHY_LEN];
    size_t len = 0;
    if (!(p->text = input_read(p->path, INPUT_MODEL_CONFIG, &len, why, sizeof why)))
        return fail(mx, key, "cannot read %s: %s", p->path, why);
    json_error_t e;
    p->obj = json_loadb(p->text, len, JSON_REJECT_DUPLICATES, &e);
    if (!p->obj)
        return syntax_error(p->path, &e, p->text);
    p->at = (src){p->path, p->text, "", mx->dir};
    snprintf(p->where, sizeof p->where, "%s", p->path);
    if (!json_is_object(p->obj))
        return fail(&p->at, NULL, "must be a JSON object, not %s", json_type_name(p->obj));
    return 0;
}

/* model.<key> inline, or model.<key>_path (a directory means DIR/config.json when dir_ok) */
static int part_open(const src *mx, json_t *m, const char *key, const char *prefix, int dir_ok,
                     part *p)
{
    char path_key[32], rel[PATH_MAX];
    snprintf(path_key, sizeof path_key, "%s_path", key);
    json_t *inl = json_object_get(m, key);
    if (inl) {
        if (!json_is_object(inl))
            return fail(mx, key, "must be an object, not %s", json_type_name(inl));
        p->obj = json_incref(inl);
        p->at = sub(mx, prefix);
        snprintf(p->where, sizeof p->where, "%s: %s", mx->file, prefix);
        return 0;
    }
    if (!json_object_get(m, path_key))
        return 0;
    int rc = get_str(mx, m, path_key, 1, rel, sizeof rel);
    if (!rc)
        rc = resolve(mx, path_key, rel, p->path);
    struct stat st;
    if (!rc && dir_ok && stat(p->path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (strlen(p->path) + sizeof "/config.json" > PATH_MAX)
            return fail(mx, path_key, "the path is too long");
        strcat(p->path, "/config.json");
    }
    return rc ? rc : part_read(mx, path_key, p);
}

/* both of model.<a> and model.<b> is an error; neither is one when required */
static int exactly_one(const src *mx, json_t *m, const char *a, const char *b, int required)
{
    int has_a = json_object_get(m, a) != NULL, has_b = json_object_get(m, b) != NULL;
    if (has_a && has_b)
        return fail(mx, b, "give model.%s or model.%s, not both", a, b);
    if (required && !has_a && !has_b)
        return fail(mx, NULL, "needs \"%s\" (an object) or \"%s\" (a file)", a, b);
    return 0;
}

/* a config.json of a model type the family does not read (gpt2 reads gpt2; llama reads llama,
 * qwen2, mistral, mixtral) is refused */
static int check_model_type(const part *cfg, const model_family *f)
{
    json_t *t = json_object_get(cfg->obj, "model_type");
    if (t && !json_is_string(t))
        return fail(&cfg->at, "model_type", "must be a string, not %s", json_type_name(t));
    if (json_is_string(t) && !model_family_reads_type(f, json_string_value(t)))
        return fail(&cfg->at, "model_type", "\"%.64s\" is not a %s config",
                    json_string_value(t), f->name);
    return 0;
}

/* model.path: a Hugging Face model directory; its config.json, and its override_config.json
 * unless the scenario gives overrides */
/* model.repo: "ORG/NAME[@REV]" resolved offline to its snapshot in the hub cache (net/) */
static int resolve_repo(const src *mx, json_t *m, char out[PATH_MAX])
{
    char spec[600], cache[PATH_MAX], what[PATH_MAX + 16];
    repo_ref r;
    int rc = get_str(mx, m, "repo", 1, spec, sizeof spec);
    snprintf(what, sizeof what, "%s: model.repo", mx->file);
    if (rc || (rc = repo_ref_parse(spec, 0, what, &r)) || (rc = hub_cache_default(cache, PATH_MAX)))
        return rc;
    if ((rc = hub_cache_snapshot(cache, &r, out, PATH_MAX))) /* the line above says why */
        return fail(mx, "repo", "%s@%s cannot be used from the cache %s", r.id, r.revision,
                    cache);
    log_info("%s: model.repo %s@%s is %s", mx->file, r.id, r.revision, out);
    return 0;
}

/* a model directory: model.path, or model.repo (a snapshot in the hub cache) */
static int has_model_dir(json_t *m)
{
    return json_object_get(m, "path") || json_object_get(m, "repo");
}

static int open_model_dir(const src *mx, json_t *m, scenario *s, part *cfg, part *ovr)
{
    char rel[PATH_MAX];
    struct stat st;
    int rc = 0;
    if (json_object_get(m, "repo"))
        rc = resolve_repo(mx, m, s->model_dir);
    else if (!(rc = get_str(mx, m, "path", 1, rel, sizeof rel)))
        rc = resolve(mx, "path", rel, s->model_dir);
    if (rc)
        return rc;
    if (stat(s->model_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(mx, "path", "%s is not a directory (a Hugging Face model directory)",
                    s->model_dir);
    if (strlen(s->model_dir) + sizeof "/" OVERRIDE_FILE > PATH_MAX)
        return fail(mx, "path", "the path is too long");
    size_t n = strlen(s->model_dir); /* fits: checked above */
    memcpy(cfg->path, s->model_dir, n);
    memcpy(cfg->path + n, "/config.json", sizeof "/config.json");
    if ((rc = part_read(mx, "path", cfg)))
        return rc;
    if (json_object_get(m, "overrides") || json_object_get(m, "overrides_path") ||
        !model_dir_overrides(s->model_dir, ovr->path, sizeof ovr->path))
        return part_open(mx, m, "overrides", "model.overrides", 0, ovr);
    log_info("%s: applying %s", mx->file, ovr->path);
    return part_read(mx, "path", ovr);
}

/* model.weights: "seeded" (the default without model.path) or "pretrained" (the directory's
 * safetensors, the default with it) */
static int load_weights_key(const src *mx, json_t *m, scenario *s)
{
    static const char *const kinds[] = {"seeded", "pretrained", NULL};
    snprintf(s->weights, sizeof s->weights, "%s", s->model_dir[0] ? "pretrained" : "seeded");
    int rc = get_str(mx, m, "weights", 0, s->weights, sizeof s->weights);
    if (!rc)
        rc = one_of(mx, "weights", s->weights, kinds);
    if (rc || strcmp(s->weights, "pretrained") != 0)
        return rc;
    if (!s->model_dir[0])
        return fail(mx, "weights", "\"pretrained\" needs model.path (a model directory)");
    if (!checkpoint_exists(s->model_dir))
        return fail(mx, "weights", "%s has no model.safetensors or model.safetensors.index.json",
                    s->model_dir);
    return 0;
}

/* the family's config (its keys and defaults) from model.config/model.path, plus overrides */
static int load_family_config(const src *mx, json_t *m, scenario *s)
{
    part cfg, ovr;
    memset(&cfg, 0, sizeof cfg);
    memset(&ovr, 0, sizeof ovr);
    int rc = has_model_dir(m) ? open_model_dir(mx, m, s, &cfg, &ovr)
                              : part_open(mx, m, "config", "model.config", 1, &cfg);
    if (!rc && !has_model_dir(m))
        rc = part_open(mx, m, "overrides", "model.overrides", 0, &ovr);
    if (!rc) {
        snprintf(s->config_path, sizeof s->config_path, "%s", cfg.path);
        snprintf(s->overrides_path, sizeof s->overrides_path, "%s", ovr.path);
        rc = check_model_type(&cfg, s->fam);
    }
    const model_family *f = s->fam;
    if (!rc) {
        f->config_defaults(&s->model);
        rc = f->config_from_json(&s->model, cfg.obj, cfg.where);
    }
    if (!rc && ovr.obj)
        rc = f->config_apply_overrides(&s->model, cfg.obj, ovr.obj, ovr.where);
    if (!rc)
        rc = f->config_validate(&s->model, cfg.obj, cfg.where);
    if (!rc)
        rc = load_weights_key(mx, m, s);
    part_close(&cfg);
    part_close(&ovr);
    return rc;
}

static int load_model(const src *x, json_t *root, scenario *s)
{
    static const char *const keys[] = {"family",         "config", "config_path", "overrides",
                                       "overrides_path", "path",   "weights",     "repo",
                                       NULL};
    const char *families[16] = {NULL}; /* the registry's names, for one_of's message */
    for (int i = 0; i < 15 && model_family_at(i); i++)
        families[i] = model_family_at(i)->name;
    json_t *m;
    int rc = get_obj(x, root, "model", 1, &m);
    if (rc)
        return rc;
    src mx = sub(x, "model");
    rc = check_keys(&mx, m, keys);
    if (!rc)
        rc = get_str(&mx, m, "family", 1, s->family, sizeof s->family);
    if (!rc)
        rc = one_of(&mx, "family", s->family, families);
    if (!rc)
        s->fam = model_family_find(s->family);
    if (!rc && json_object_get(m, "path") && json_object_get(m, "repo"))
        rc = fail(&mx, "repo", "give model.path (a model directory) or model.repo (one in the "
                               "hub cache), not both");
    if (!rc && has_model_dir(m) &&
        (json_object_get(m, "config") || json_object_get(m, "config_path")))
        rc = fail(&mx, json_object_get(m, "path") ? "path" : "repo",
                  "give model.path or model.repo (a model directory) or model.config / "
                  "model.config_path, not both");
    if (!rc)
        rc = exactly_one(&mx, m, "config", "config_path", !has_model_dir(m));
    if (!rc)
        rc = exactly_one(&mx, m, "overrides", "overrides_path", 0);
    return rc ? rc : load_family_config(&mx, m, s);
}

/* ---- data, train, tolerances ---------------------------------------------------------------- */

/* data.tokenizer_path: where a bpe or wordpiece tokenizer is (default: the model directory) */
static int load_tokenizer_path(const src *dx, json_t *d, scenario *s)
{
    char rel[PATH_MAX];
    int bpe = strcmp(s->tokenizer, "byte") != 0, rc;
    if (!json_object_get(d, "tokenizer_path")) {
        if (bpe && !s->model_dir[0])
            return fail(dx, "tokenizer", "%s needs data.tokenizer_path (tokenizer.json, vocab.json, "
                                         "vocab.txt or a folder) or a model directory (model.path)",
                        s->tokenizer);
        snprintf(s->tokenizer_path, sizeof s->tokenizer_path, "%s", bpe ? s->model_dir : "");
        return 0;
    }
    if (!bpe)
        return fail(dx, "tokenizer_path", "is only for the bpe and wordpiece tokenizers");
    if ((rc = get_str(dx, d, "tokenizer_path", 1, rel, sizeof rel)) ||
        (rc = resolve(dx, "tokenizer_path", rel, s->tokenizer_path)))
        return rc;
    struct stat st;
    if (stat(s->tokenizer_path, &st) != 0)
        return fail(dx, "tokenizer_path", "%s: %s", s->tokenizer_path, strerror(errno));
    return 0;
}

/* data.objective "clm" (default) or "mlm", and the masked-LM options, only with "mlm" */
static int load_objective(const src *dx, json_t *d, scenario *s)
{
    static const char *const objectives[] = {"clm", "mlm", NULL};
    int rc;
    s->mlm_probability = 0.15;
    if ((rc = get_str(dx, d, "objective", 0, s->objective, sizeof s->objective)) ||
        (rc = one_of(dx, "objective", s->objective, objectives)))
        return rc;
    if (strcmp(s->objective, "mlm") != 0) {
        if (json_object_get(d, "mlm_probability") || json_object_get(d, "line_by_line"))
            return fail(dx, json_object_get(d, "line_by_line") ? "line_by_line" : "mlm_probability",
                        "is only for \"objective\": \"mlm\"");
        if (s->fam && s->fam->labels == LABELS_MLM)
            return fail(dx, "objective", "the %s family trains masked LM: set \"objective\": "
                        "\"mlm\"", s->family);
        return 0;
    }
    if (strcmp(s->family, "bert") != 0)
        return fail(dx, "objective", "mlm is the bert family's objective (model.family is %s)",
                    s->family);
    if (strcmp(s->tokenizer, "wordpiece") != 0)
        return fail(dx, "objective", "mlm needs the wordpiece tokenizer ([MASK], [CLS], [SEP])");
    if ((rc = get_real(dx, d, "mlm_probability", 0, 0, 1, &s->mlm_probability)))
        return rc;
    if (s->mlm_probability > 1)
        return fail(dx, "mlm_probability", "must be <= 1, got %g", s->mlm_probability);
    return get_bool(dx, d, "line_by_line", &s->line_by_line);
}

/* data.path (a file) and its tokenizer and objective: the text and alpaca formats */
static int load_text_source(const src *dx, json_t *d, scenario *s)
{
    static const char *const tokenizers[] = {"byte", "bpe", "wordpiece", NULL};
    char rel[PATH_MAX];
    int rc;
    if ((rc = get_str(dx, d, "path", 1, rel, sizeof rel)) ||
        (rc = resolve(dx, "path", rel, s->data_path)))
        return rc;
    char why_buf[INPUT_WHY_LEN];
    const char *why = unreadable(s->data_path, INPUT_DATA, why_buf);
    if (why)
        return fail(dx, "path", "cannot read the data file %s: %s", s->data_path, why);
    if ((rc = get_str(dx, d, "tokenizer", 0, s->tokenizer, sizeof s->tokenizer)) ||
        (rc = one_of(dx, "tokenizer", s->tokenizer, tokenizers)) ||
        (rc = load_tokenizer_path(dx, d, s)) || (rc = load_objective(dx, d, s)))
        return rc;
    model_sizes z = s->fam->config_sizes(&s->model);
    if (strcmp(s->tokenizer, "byte") == 0 && z.vocab_size < 256)
        return fail(dx, "tokenizer", "the byte tokenizer needs vocab_size >= 256, the model has %d",
                    z.vocab_size);
    return 0;
}

/* the first of keys (NULL-terminated) that d has, or NULL */
static const char *first_present(json_t *d, const char *const *keys)
{
    for (const char *const *k = keys; *k; k++)
        if (json_object_get(d, *k))
            return *k;
    return NULL;
}

/* data.model_max_length, data.eos_token, data.pad_token: alpaca's, after seq_len */
static int load_alpaca(const src *dx, json_t *d, scenario *s)
{
    static const char *const own[] = {"model_max_length", "eos_token", "pad_token", NULL};
    const char *k = first_present(d, own);
    if (strcmp(s->data_format, "alpaca") != 0)
        return k ? fail(dx, k, "is only for \"format\": \"alpaca\"") : 0;
    int rc;
    if (strcmp(s->objective, "clm") != 0 || s->fam->labels != LABELS_CAUSAL)
        return fail(dx, "format", "alpaca data train a causal LM (objective clm, a decoder "
                    "family), not %s with the %s family", s->objective, s->family);
    s->model_max_length = s->seq_len;
    if ((rc = get_int(dx, d, "model_max_length", 0, 2, &s->model_max_length)) ||
        (rc = get_str(dx, d, "eos_token", 0, s->eos_token, sizeof s->eos_token)) ||
        (rc = get_str(dx, d, "pad_token", 0, s->pad_token, sizeof s->pad_token)))
        return rc;
    if (s->model_max_length > s->seq_len)
        return fail(dx, "model_max_length", "%d is larger than seq_len %d (every row is padded to "
                    "seq_len)", s->model_max_length, s->seq_len);
    return 0;
}

/* one megatron dataset: PREFIX.idx and PREFIX.bin must be readable files */
static int add_dataset(const src *dx, const char *key, size_t i, const char *rel, double weight,
                       scenario *s)
{
    if (s->n_blend >= SCN_MAX_BLEND)
        return fail(dx, key, "more than %d datasets", SCN_MAX_BLEND);
    char *out = s->blend_path[s->n_blend], file[PATH_MAX + 8], why[INPUT_WHY_LEN];
    int rc = resolve(dx, key, rel, out);
    if (rc)
        return rc;
    for (int k = 0; k < 2; k++) {
        snprintf(file, sizeof file, "%s%s", out, k ? ".bin" : ".idx");
        uint64_t size;
        int fd = input_open(file, &size, why, sizeof why);
        if (fd < 0)
            return fail(dx, key, "dataset %zu: cannot read %s: %s", i, file, why);
        close(fd);
    }
    if (!(weight > 0) || weight > 1e300)
        return fail(dx, key, "dataset %zu: the weight must be a number in (0, 1e300], got %g", i,
                    weight);
    s->blend_weight[s->n_blend++] = weight;
    return 0;
}

/* one entry of data.blend: {"path": P, "weight": W} */
static int blend_object(const src *dx, json_t *e, size_t i, scenario *s)
{
    json_t *p = json_object_get(e, "path"), *w = json_object_get(e, "weight");
    if (json_object_size(e) != 2 || !json_is_string(p) || !json_is_number(w))
        return fail(dx, "blend", "entry %zu: must be {\"path\": PREFIX, \"weight\": NUMBER}", i);
    return add_dataset(dx, "blend", i, json_string_value(p), json_number_value(w), s);
}

/* a flat blend list's weight: a number, or a string holding one (Megatron's --data-path words,
 * which Python's float() reads: white space around it is fine, a hexadecimal number is not) */
static int blend_weight(json_t *e, double *w)
{
    if (json_is_number(e)) {
        *w = json_number_value(e);
        return 1;
    }
    if (!json_is_string(e))
        return 0;
    char text[64];
    const char *v = json_string_value(e);
    v += strspn(v, " \t\n\r\f\v");
    size_t n = strlen(v);
    while (n && strchr(" \t\n\r\f\v", v[n - 1]))
        n--;
    if (n >= sizeof text || strpbrk(v, "xX") != NULL)
        return 0;
    snprintf(text, sizeof text, "%.*s", (int)n, v);
    return parse_double(text, w) == 0;
}

/* data.blend: [{"path", "weight"}, ...] or Megatron's flat [W, PREFIX, W, PREFIX, ...] */
static int load_blend(const src *dx, json_t *b, scenario *s)
{
    size_t n = json_array_size(b);
    if (!json_is_array(b) || n == 0)
        return fail(dx, "blend", "must be a non-empty array of {\"path\", \"weight\"} objects or "
                    "[weight, prefix, ...]");
    int flat = !json_is_object(json_array_get(b, 0)), rc = 0;
    double w = 0;
    if (flat && n % 2)
        return fail(dx, "blend", "the flat form pairs a weight with a prefix: %zu items", n);
    for (size_t i = 0; !rc && i < n; i += flat ? 2 : 1) {
        json_t *e = json_array_get(b, i), *p = flat ? json_array_get(b, i + 1) : NULL;
        if (!flat)
            rc = json_is_object(e) ? blend_object(dx, e, i, s)
                                   : fail(dx, "blend", "entry %zu: must be an object", i);
        else if (!blend_weight(e, &w) || !json_is_string(p))
            rc = fail(dx, "blend", "items %zu and %zu: must be a weight (a number) and a prefix",
                      i, i + 1);
        else
            rc = add_dataset(dx, "blend", i / 2, json_string_value(p), w, s);
    }
    return rc;
}

/* data.path (one prefix) or data.blend; no tokenizer keys (the files hold token ids) */
static int load_megatron(const src *dx, json_t *d, scenario *s)
{
    static const char *const text_only[] = {"tokenizer", "tokenizer_path", "objective",
                                            "mlm_probability", "line_by_line", NULL};
    const char *k = first_present(d, text_only);
    if (k)
        return fail(dx, k, "is not used by the megatron format (its files hold token ids)");
    if (s->fam->labels != LABELS_CAUSAL)
        return fail(dx, "format", "megatron data train a causal LM; the %s family is not one",
                    s->family);
    json_t *p = json_object_get(d, "path"), *b = json_object_get(d, "blend");
    if (!p == !b)
        return fail(dx, p ? "blend" : "path", "give data.path (one dataset's prefix) or "
                    "data.blend, %s", p ? "not both" : "one of them");
    if (b)
        return load_blend(dx, b, s);
    if (!json_is_string(p))
        return fail(dx, "path", "must be a string (a prefix without .bin/.idx), not %s",
                    json_type_name(p));
    int rc = add_dataset(dx, "path", 0, json_string_value(p), 1.0, s);
    if (!rc)
        snprintf(s->data_path, sizeof s->data_path, "%s", s->blend_path[0]);
    return rc;
}

static int load_data(const src *x, json_t *root, scenario *s)
{
    static const char *const keys[] = {"path",         "tokenizer",       "tokenizer_path",
                                       "seq_len",      "objective",       "mlm_probability",
                                       "line_by_line", "format",          "model_max_length",
                                       "eos_token",    "pad_token",       "blend",
                                       NULL};
    static const char *const formats[] = {"text", "alpaca", "megatron", NULL};
    json_t *d;
    int rc = get_obj(x, root, "data", 1, &d);
    if (rc)
        return rc;
    src dx = sub(x, "data");
    if ((rc = check_keys(&dx, d, keys)) ||
        (rc = get_str(&dx, d, "format", 0, s->data_format, sizeof s->data_format)) ||
        (rc = one_of(&dx, "format", s->data_format, formats)))
        return rc;
    int megatron = strcmp(s->data_format, "megatron") == 0;
    if (!megatron && json_object_get(d, "blend"))
        return fail(&dx, "blend", "is only for \"format\": \"megatron\"");
    if ((rc = megatron ? load_megatron(&dx, d, s) : load_text_source(&dx, d, s)) ||
        (rc = get_int(&dx, d, "seq_len", 1, 2, &s->seq_len)))
        return rc;
    model_sizes z = s->fam->config_sizes(&s->model);
    if (s->seq_len > z.max_positions)
        return fail(&dx, "seq_len", "%d is larger than the model's %s (%d)", s->seq_len,
                    z.positions_key, z.max_positions);
    return load_alpaca(&dx, d, s);
}

static int get_betas(const src *tx, json_t *t, scenario *s)
{
    json_t *b = json_object_get(t, "betas");
    if (!b)
        return 0;
    if (!json_is_array(b) || json_array_size(b) != 2)
        return fail(tx, "betas", "must be an array of two numbers [beta1, beta2]");
    double v[2];
    for (size_t i = 0; i < 2; i++) {
        json_t *e = json_array_get(b, i);
        if (!json_is_number(e))
            return fail(tx, "betas", "beta%zu must be a number, not %s", i + 1, json_type_name(e));
        v[i] = json_number_value(e);
        if (!(v[i] >= 0 && v[i] < 1))
            return fail(tx, "betas", "beta%zu must be in [0, 1), got %g", i + 1, v[i]);
    }
    s->beta1 = v[0];
    s->beta2 = v[1];
    return 0;
}

static int get_seed(const src *tx, json_t *t, scenario *s)
{
    json_t *v = json_object_get(t, "seed");
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return fail(tx, "seed", "must be a non-negative integer");
    s->seed = (uint64_t)json_integer_value(v);
    return 0;
}

static int load_train(const src *x, json_t *root, scenario *s)
{
    static const char *const keys[] = {"steps", "batch_size", "lr", "warmup_steps", "schedule",
                                       "weight_decay", "decay_all", "betas", "eps", "clip",
                                       "seed", "eval_every", "gradient_accumulation_steps", NULL};
    static const char *const schedules[] = {"constant", "linear", "cosine", NULL};
    json_t *t;
    int rc = get_obj(x, root, "train", 1, &t);
    if (rc)
        return rc;
    src tx = sub(x, "train");
    if ((rc = check_keys(&tx, t, keys)) || (rc = get_int(&tx, t, "steps", 1, 1, &s->steps)) ||
        (rc = get_int(&tx, t, "batch_size", 1, 1, &s->batch_size)) ||
        (rc = get_real(&tx, t, "lr", 1, 0, 1, &s->lr)) ||
        (rc = get_int(&tx, t, "warmup_steps", 0, 0, &s->warmup_steps)) ||
        (rc = get_str(&tx, t, "schedule", 0, s->schedule, sizeof s->schedule)) ||
        (rc = one_of(&tx, "schedule", s->schedule, schedules)))
        return rc;
    if ((rc = get_real(&tx, t, "weight_decay", 0, 0, 0, &s->weight_decay)) ||
        (rc = get_bool(&tx, t, "decay_all", &s->decay_all)) || (rc = get_betas(&tx, t, s)) ||
        (rc = get_real(&tx, t, "eps", 0, 0, 1, &s->eps)) ||
        (rc = get_real(&tx, t, "clip", 0, 0, 0, &s->clip)) || (rc = get_seed(&tx, t, s)))
        return rc;
    if ((rc = get_int(&tx, t, "eval_every", 0, 0, &s->eval_every)) ||
        (rc = get_int(&tx, t, "gradient_accumulation_steps", 0, 1, &s->grad_accum)))
        return rc;
    if (s->grad_accum > SCENARIO_MAX_ACCUM)
        return fail(&tx, "gradient_accumulation_steps", "%d is too large (at most %d)",
                    s->grad_accum, SCENARIO_MAX_ACCUM);
    if ((long long)s->steps * s->grad_accum > INT_MAX) /* the loader counts micro-batches */
        return fail(&tx, "gradient_accumulation_steps", "%d x train.steps %d is more than %d "
                    "micro-batches", s->grad_accum, s->steps, INT_MAX);
    /* refused rather than ignored until the runner evaluates */
    return s->eval_every ? fail(&tx, "eval_every", "evaluation is not implemented yet: use 0")
                         : 0;
}

/* the verdict that decides and its factors k (> 0) and floors (>= 0): docs/compare.md */
static int load_verdict_fields(const src *tx, json_t *t, scenario *s)
{
    static const char *const verdicts[] = {"band", "error_ratio", "ensemble", NULL};
    int rc = get_str(tx, t, "verdict", 0, s->verdict, sizeof s->verdict);
    if (!rc && json_object_get(t, "verdict"))
        rc = one_of(tx, "verdict", s->verdict, verdicts);
    if (!rc)
        rc = get_real(tx, t, "error_ratio_k", 0, 0, 1, &s->error_ratio_k);
    if (!rc)
        rc = get_real(tx, t, "ensemble_k", 0, 0, 1, &s->ensemble_k);
    if (!rc)
        rc = get_real(tx, t, "error_ratio_floor", 0, 0, 0, &s->error_ratio_floor);
    if (!rc)
        rc = get_real(tx, t, "ensemble_floor", 0, 0, 0, &s->ensemble_floor);
    return rc;
}

static int load_tolerances(const src *x, json_t *root, scenario *s)
{
    static const char *const keys[] = {"loss_rtol", "loss_atol", "grad_norm_rtol",
                                       "grad_norm_atol", "min_throughput_ratio",
                                       "max_memory_ratio", "expert_tokens_rtol", "verdict",
                                       "error_ratio_k", "error_ratio_floor", "ensemble_k",
                                       "ensemble_floor", NULL};
    double *out[] = {&s->loss_rtol, &s->loss_atol, &s->grad_norm_rtol, &s->grad_norm_atol,
                     &s->min_throughput_ratio, &s->max_memory_ratio, &s->expert_tokens_rtol};
    json_t *t;
    int rc = get_obj(x, root, "tolerances", 0, &t);
    if (rc || !t)
        return rc;
    src tx = sub(x, "tolerances");
    rc = check_keys(&tx, t, keys);
    for (size_t i = 0; !rc && i < sizeof out / sizeof out[0]; i++) /* a memory gate of 0 fails */
        rc = get_real(&tx, t, keys[i], 0, 0, out[i] == &s->max_memory_ratio, out[i]);
    return rc ? rc : load_verdict_fields(&tx, t, s);
}

/* ---- the document --------------------------------------------------------------------------- */

static void set_defaults(scenario *s)
{
    model_family_find("gpt2")->config_defaults(&s->model); /* until model.family says */
    snprintf(s->tokenizer, sizeof s->tokenizer, "byte");
    snprintf(s->objective, sizeof s->objective, "clm");
    snprintf(s->data_format, sizeof s->data_format, "text");
    snprintf(s->schedule, sizeof s->schedule, "constant");
    s->decay_all = 1;
    s->beta1 = 0.9;
    s->beta2 = 0.999;
    s->eps = 1e-8;
    s->clip = 1.0;
    s->world_size = 1;
    s->grad_accum = 1;
    snprintf(s->dtype, sizeof s->dtype, "fp32");
    s->loss_rtol = s->loss_atol = s->grad_norm_rtol = s->grad_norm_atol = -1;
    s->min_throughput_ratio = s->max_memory_ratio = s->expert_tokens_rtol = -1;
    s->error_ratio_k = s->error_ratio_floor = s->ensemble_k = s->ensemble_floor = -1;
}

/* "baseline": {"url": "https://...", "sha256": "HEX"}: a baseline file fetched and verified when
 * the run is compared (judge/baseline_url.c) */
static int check_baseline_url(const src *x, json_t *b)
{
    static const char *const keys[] = {"url", "sha256", NULL};
    char url[2048], sha[80];
    src bx = sub(x, "baseline");
    int rc = check_keys(&bx, b, keys);
    if (!rc && !(rc = get_str(&bx, b, "url", 1, url, sizeof url)) &&
        strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0)
        rc = fail(&bx, "url", "not an https:// (or http://) URL");
    if (!rc && !(rc = get_str(&bx, b, "sha256", 1, sha, sizeof sha)) && !is_hex(sha, 64))
        rc = fail(&bx, "sha256", "not a sha256 (64 hex digits)");
    return rc;
}

static int load_root(const src *x, json_t *root, scenario *s)
{
    static const char *const keys[] = {"name",       "description", "model",      "data",
                                       "train",      "world_size",  "dtype",      "tolerances",
                                       "baseline",   NULL};
    static const char *const dtypes[] = {"fp32", "bf16", "fp16", NULL};
    int rc;
    if (!json_is_object(root))
        return fail(x, NULL, "a scenario must be a JSON object, not %s", json_type_name(root));
    if ((rc = check_keys(x, root, keys)) ||
        (rc = get_str(x, root, "name", 1, s->name, sizeof s->name)))
        return rc;
    if (!s->name[0])
        return fail(x, "name", "must not be empty");
    if ((rc = get_str(x, root, "description", 0, s->description, sizeof s->description)) ||
        (rc = load_model(x, root, s)) || (rc = load_data(x, root, s)) ||
        (rc = load_train(x, root, s)) ||
        (rc = get_int(x, root, "world_size", 0, 1, &s->world_size)) ||
        (rc = get_str(x, root, "dtype", 0, s->dtype, sizeof s->dtype)) ||
        (rc = one_of(x, "dtype", s->dtype, dtypes)) || (rc = load_tolerances(x, root, s)))
        return rc;
    if (s->world_size > SCENARIO_MAX_WORLD)
        return fail(x, "world_size", "%d is too large (at most %d)", s->world_size,
                    SCENARIO_MAX_WORLD);
    json_t *b = json_object_get(root, "baseline");
    if (b && !json_is_object(b) && !json_is_string(b))
        return fail(x, "baseline", "must be a string (a baseline file, label or run id) or an "
                    "object {\"url\", \"sha256\"}");
    return json_is_object(b) ? check_baseline_url(x, b)
                             : get_str(x, root, "baseline", 0, s->baseline, sizeof s->baseline);
}

/* sha256 of the sorted, compact dump: whitespace and key order do not change it */
static int hash_doc(const char *file, json_t *root, char out[65])
{
    char *dump = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT);
    if (!dump) {
        log_error("%s: cannot serialise the scenario to hash it", file);
        return 2;
    }
    sha256_hex(dump, strlen(dump), out);
    free(dump);
    return 0;
}

static int load_text(scenario *s, const char *path, size_t *len)
{
    if (!path || !*path) {
        log_error("scenario: no file given");
        return 2;
    }
    if (strlen(path) >= sizeof s->path) {
        log_error("%.64s...: the scenario path is too long", path);
        return 2;
    }
    snprintf(s->path, sizeof s->path, "%s", path);
    char why[INPUT_WHY_LEN];
    if (!(s->json = input_read(path, INPUT_SCENARIO, len, why, sizeof why))) {
        log_error("%s: cannot read the scenario: %s", path, why);
        return 2;
    }
    return 0;
}

int scenario_load(const char *path, scenario *s)
{
    memset(s, 0, sizeof *s);
    set_defaults(s);
    size_t len = 0;
    int rc = load_text(s, path, &len);
    if (rc)
        return rc;
    char dir[PATH_MAX];
    path_dirname(s->path, dir, sizeof dir);
    src x = {s->path, s->json, "", dir};
    json_error_t e;
    json_t *root = json_loadb(s->json, len, JSON_REJECT_DUPLICATES, &e);
    rc = root ? load_root(&x, root, s) : syntax_error(s->path, &e, s->json);
    if (!rc)
        rc = hash_doc(s->path, root, s->hash);
    json_decref(root);
    if (rc) {
        free(s->json);
        s->json = NULL;
    }
    return rc;
}

void scenario_free(scenario *s)
{
    if (!s)
        return;
    free(s->json);
    free(s->file_text);
    memset(s, 0, sizeof *s);
}

/* A run with `--steps N` trains another scenario (the LR schedule spans N steps): its stored
 * JSON and hash say so, so compare and history never mix it with full-length runs. */
int scenario_override_steps(scenario *s, int steps)
{
    if ((long long)steps * s->grad_accum > INT_MAX) {
        log_error("--steps %d: with gradient_accumulation_steps %d, more than %d micro-batches",
                  steps, s->grad_accum, INT_MAX);
        return 2;
    }
    json_error_t e;
    json_t *root = json_loads(s->json, 0, &e), *train = root ? json_object_get(root, "train") : NULL;
    if (!train || json_object_set_new(train, "steps", json_integer(steps)) != 0) {
        log_error("%s: cannot set train.steps to %d", s->path, steps);
        json_decref(root);
        return 2;
    }
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    int rc = text ? hash_doc(s->path, root, s->hash) : 2;
    json_decref(root);
    if (rc) {
        free(text);
        log_error("%s: cannot serialise the scenario with train.steps %d", s->path, steps);
        return 2;
    }
    if (!s->file_text)
        s->file_text = s->json; /* kept: messages name its lines */
    else
        free(s->json);
    s->json = text;
    s->steps = steps;
    s->steps_override = steps;
    return 0;
}
