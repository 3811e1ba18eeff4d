/* harness/formats/tokenizer_load_steps.c: reads the normalizer, pre-tokenizer and post-processor of a BPE
 * tokenizer.json into steps; any component not implemented is refused naming its JSON path. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_bpe_internal.h"
#include "util/util.h"

#define MAX_STEPS 64 /* normalizers or pre-tokenizers after flattening the Sequences */
#define MAX_DEPTH 8  /* Sequences inside Sequences */

typedef struct {
    bpe *b;
    const char *file;
    int after_byte_level; /* a pre-tokenizer after ByteLevel is refused */
    int templates;
} loader;

__attribute__((format(printf, 3, 4))) static int refuse(const loader *L, const char *at,
                                                        const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
    log_error("%s: %s: %s", L->file, at, msg);
    return EXIT_USAGE;
}

static const char *type_of(json_t *j)
{
    json_t *t = json_object_get(j, "type");
    return json_is_string(t) ? json_string_value(t) : NULL;
}

/* "type" present and a string, else a refusal */
static int need_type(const loader *L, json_t *j, const char *at, const char **type)
{
    if (!json_is_object(j) || !(*type = type_of(j)))
        return refuse(L, at, "must be an object with a string \"type\"");
    return 0;
}

/* an optional boolean (def when absent) */
static int get_bool(const loader *L, json_t *j, const char *key, int def, const char *at, int *out)
{
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return refuse(L, at, "\"%s\" must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* a regex source for a {"String": s} (escaped, as the library's regex::escape) or
 * {"Regex": r} pattern, compiled */
static int compile_pattern(const loader *L, json_t *pat, const char *at, OnigRegex *re)
{
    json_t *s = json_object_get(pat, "String"), *r = json_object_get(pat, "Regex");
    if (!json_is_object(pat) || json_object_size(pat) != 1 || (!json_is_string(s) && !json_is_string(r)))
        return refuse(L, at, "pattern must be {\"String\": ...} or {\"Regex\": ...}");
    char where[600];
    snprintf(where, sizeof where, "%s: %s.pattern", L->file, at);
    if (r)
        return bpe_compile_regex(re, json_string_value(r), json_string_length(r), where);
    size_t n = json_string_length(s);
    const char *src = json_string_value(s);
    char *esc = malloc(2 * n + 1);
    if (!esc)
        return refuse(L, at, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c < 0x80 && c > 0x20 && strchr("\\^$.|?*+()[]{}-#&~", c))
            esc[k++] = '\\';
        esc[k++] = (char)c;
    }
    int rc = bpe_compile_regex(re, esc, k, where);
    free(esc);
    return rc;
}

/* ---- normalizers ------------------------------------------------------------------------------ */

static norm_step *new_norm(loader *L, const char *at)
{
    bpe *b = L->b;
    if (b->n_norm >= MAX_STEPS) {
        refuse(L, at, "more than %d normalizers", MAX_STEPS);
        return NULL;
    }
    norm_step *n = realloc(b->norm, (size_t)(b->n_norm + 1) * sizeof *n);
    if (!n) {
        refuse(L, at, "out of memory");
        return NULL;
    }
    b->norm = n;
    memset(&n[b->n_norm], 0, sizeof *n);
    return &n[b->n_norm++];
}

static int copy_text(const loader *L, json_t *v, const char *key, const char *at, norm_step *s)
{
    if (!json_is_string(v))
        return refuse(L, at, "\"%s\" must be a string", key);
    s->text_len = json_string_length(v);
    if (!(s->text = malloc(s->text_len + 1)))
        return refuse(L, at, "out of memory");
    memcpy(s->text, json_string_value(v), s->text_len + 1);
    return 0;
}

static int read_normalizer(loader *L, json_t *j, const char *at, int depth);

static int read_norm_sequence(loader *L, json_t *j, const char *at, int depth)
{
    json_t *items = json_object_get(j, "normalizers"), *it;
    char sub[300];
    size_t i;
    if (!json_is_array(items))
        return refuse(L, at, "\"normalizers\" must be an array");
    if (depth >= MAX_DEPTH)
        return refuse(L, at, "Sequences nested more than %d deep", MAX_DEPTH);
    json_array_foreach(items, i, it)
    {
        snprintf(sub, sizeof sub, "%s.normalizers[%zu]", at, i);
        int rc = read_normalizer(L, it, sub, depth + 1);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_normalizer(loader *L, json_t *j, const char *at, int depth)
{
    const char *type;
    int rc = need_type(L, j, at, &type);
    if (rc)
        return rc;
    if (!strcmp(type, "Sequence"))
        return read_norm_sequence(L, j, at, depth);
    static const char *const forms[] = {"NFC", "NFKC", "NFD", "NFKD"};
    static const norm_kind kinds[] = {NORM_NFC, NORM_NFKC, NORM_NFD, NORM_NFKD};
    for (int f = 0; f < 4; f++)
        if (!strcmp(type, forms[f])) {
            norm_step *s = new_norm(L, at);
            return s ? (s->kind = kinds[f], 0) : EXIT_USAGE;
        }
    if (!strcmp(type, "Prepend")) {
        norm_step *s = new_norm(L, at);
        if (!s)
            return EXIT_USAGE;
        s->kind = NORM_PREPEND;
        return copy_text(L, json_object_get(j, "prepend"), "prepend", at, s);
    }
    if (!strcmp(type, "Replace")) {
        norm_step *s = new_norm(L, at);
        if (!s)
            return EXIT_USAGE;
        s->kind = NORM_REPLACE;
        if ((rc = copy_text(L, json_object_get(j, "content"), "content", at, s)))
            return rc;
        return compile_pattern(L, json_object_get(j, "pattern"), at, &s->re);
    }
    return refuse(L, at, "type: \"%.40s\" is not supported (normalizers: NFC, NFKC, NFD, NFKD, "
                         "Prepend, Replace, Sequence)", type);
}

/* ---- pre-tokenizers --------------------------------------------------------------------------- */

static pre_step *new_pre(loader *L, const char *at)
{
    bpe *b = L->b;
    if (L->after_byte_level) {
        refuse(L, at, "a pre-tokenizer after ByteLevel is not supported (ByteLevel must be last)");
        return NULL;
    }
    if (b->n_pre >= MAX_STEPS) {
        refuse(L, at, "more than %d pre-tokenizers", MAX_STEPS);
        return NULL;
    }
    pre_step *p = realloc(b->pre, (size_t)(b->n_pre + 1) * sizeof *p);
    if (!p) {
        refuse(L, at, "out of memory");
        return NULL;
    }
    b->pre = p;
    memset(&p[b->n_pre], 0, sizeof *p);
    return &p[b->n_pre++];
}

static int read_split(loader *L, json_t *j, const char *at)
{
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
    pre_step *s = new_pre(L, at);
    if (!s)
        return EXIT_USAGE;
    s->kind = PRE_SPLIT;
    json_t *beh = json_object_get(j, "behavior");
    int found = -1;
    for (int i = 0; i < 5 && json_is_string(beh); i++)
        if (!strcmp(json_string_value(beh), names[i]))
            found = i;
    if (found < 0)
        return refuse(L, at, "behavior must be one of Removed, Isolated, MergedWithPrevious, "
                             "MergedWithNext, Contiguous");
    s->behavior = (split_behavior)found;
    int rc = get_bool(L, j, "invert", 0, at, &s->invert);
    return rc ? rc : compile_pattern(L, json_object_get(j, "pattern"), at, &s->re);
}

/* prepend_scheme, or the older add_prefix_space (true: always, false: never) */
static int read_prepend_scheme(loader *L, json_t *j, const char *at, pre_step *s)
{
    json_t *scheme = json_object_get(j, "prepend_scheme");
    if (!scheme) {
        int add = 1;
        int rc = get_bool(L, j, "add_prefix_space", 1, at, &add);
        s->prepend = add ? PREPEND_ALWAYS : PREPEND_NEVER;
        return rc;
    }
    const char *v = json_is_string(scheme) ? json_string_value(scheme) : "";
    if (!strcmp(v, "always"))
        s->prepend = PREPEND_ALWAYS;
    else if (!strcmp(v, "first"))
        s->prepend = PREPEND_FIRST;
    else if (!strcmp(v, "never"))
        s->prepend = PREPEND_NEVER;
    else
        return refuse(L, at, "prepend_scheme must be \"always\", \"first\" or \"never\"");
    return 0;
}

static int read_metaspace(loader *L, json_t *j, const char *at)
{
    pre_step *s = new_pre(L, at);
    if (!s)
        return EXIT_USAGE;
    s->kind = PRE_METASPACE;
    json_t *r = json_object_get(j, "replacement");
    size_t i = 0;
    if (!json_is_string(r) || !json_string_length(r))
        return refuse(L, at, "replacement must be one character");
    s->repl_cp = utf8_next((const unsigned char *)json_string_value(r), &i);
    if (i != json_string_length(r))
        return refuse(L, at, "replacement must be one character");
    memcpy(s->repl, json_string_value(r), i);
    s->repl_len = i;
    int rc = get_bool(L, j, "split", 1, at, &s->split);
    return rc ? rc : read_prepend_scheme(L, j, at, s);
}

static int read_byte_level(loader *L, json_t *j, const char *at)
{
    pre_step *s = new_pre(L, at);
    if (!s)
        return EXIT_USAGE;
    s->kind = PRE_BYTE_LEVEL;
    int use_regex = 1, rc = get_bool(L, j, "add_prefix_space", 1, at, &s->add_prefix_space);
    if (!rc)
        rc = get_bool(L, j, "use_regex", 1, at, &use_regex);
    if (!rc && use_regex)
        rc = bpe_compile_regex(&s->re, GPT2_SPLIT_PATTERN, strlen(GPT2_SPLIT_PATTERN), L->file);
    L->after_byte_level = 1;
    L->b->byte_level = 1;
    return rc;
}

static int read_pre(loader *L, json_t *j, const char *at, int depth);

static int read_pre_sequence(loader *L, json_t *j, const char *at, int depth)
{
    json_t *items = json_object_get(j, "pretokenizers"), *it;
    char sub[300];
    size_t i;
    if (!json_is_array(items))
        return refuse(L, at, "\"pretokenizers\" must be an array");
    if (depth >= MAX_DEPTH)
        return refuse(L, at, "Sequences nested more than %d deep", MAX_DEPTH);
    json_array_foreach(items, i, it)
    {
        snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", at, i);
        int rc = read_pre(L, it, sub, depth + 1);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_pre(loader *L, json_t *j, const char *at, int depth)
{
    const char *type;
    int rc = need_type(L, j, at, &type);
    if (rc)
        return rc;
    if (!strcmp(type, "Sequence"))
        return read_pre_sequence(L, j, at, depth);
    if (!strcmp(type, "Split"))
        return read_split(L, j, at);
    if (!strcmp(type, "Metaspace"))
        return read_metaspace(L, j, at);
    if (!strcmp(type, "ByteLevel"))
        return read_byte_level(L, j, at);
    if (!strcmp(type, "Digits")) {
        pre_step *s = new_pre(L, at);
        if (!s)
            return EXIT_USAGE;
        s->kind = PRE_DIGITS;
        return get_bool(L, j, "individual_digits", 0, at, &s->individual_digits);
    }
    return refuse(L, at, "type: \"%.40s\" is not supported (pre-tokenizers: ByteLevel, Split, "
                         "Metaspace, Digits, Sequence)", type);
}

/* ---- post-processors -------------------------------------------------------------------------- */

/* the ids of special token `name` from the template's special_tokens onto ids[*n] */
static int template_ids(const loader *L, json_t *specials, const char *name, const char *at,
                        int32_t *ids, int *n)
{
    json_t *ent = json_object_get(specials, name), *list = json_object_get(ent, "ids"), *v;
    size_t i;
    if (!json_is_array(list))
        return refuse(L, at, "special token \"%.64s\" is not in special_tokens (with \"ids\")", name);
    json_array_foreach(list, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= L->b->n_tok)
            return refuse(L, at, "special_tokens \"%.64s\": ids must be token ids in [0, %d)",
                          name, L->b->n_tok);
        if (*n >= BPE_MAX_TEMPLATE)
            return refuse(L, at, "more than %d special ids around the text", BPE_MAX_TEMPLATE);
        ids[(*n)++] = (int32_t)json_integer_value(v);
    }
    return 0;
}

/* TemplateProcessing's "single": special tokens around exactly one {"Sequence": {"id": "A"}} */
static int read_template(loader *L, json_t *j, const char *at)
{
    json_t *single = json_object_get(j, "single"), *specials = json_object_get(j, "special_tokens");
    char sub[320];
    int seen_a = 0, rc = 0;
    size_t i;
    json_t *it;
    if (L->templates++)
        return refuse(L, at, "more than one TemplateProcessing is not supported");
    if (!json_is_array(single) || !json_is_object(specials))
        return refuse(L, at, "TemplateProcessing needs \"single\" (an array) and "
                             "\"special_tokens\" (an object)");
    json_array_foreach(single, i, it)
    {
        snprintf(sub, sizeof sub, "%s.single[%zu]", at, i);
        json_t *sp = json_object_get(it, "SpecialToken"), *seq = json_object_get(it, "Sequence");
        json_t *id = json_object_get(sp ? sp : seq, "id");
        if (!json_is_object(it) || json_object_size(it) != 1 || !json_is_string(id))
            return refuse(L, sub, "must be {\"SpecialToken\": {\"id\": ...}} or "
                                  "{\"Sequence\": {\"id\": \"A\"}}");
        if (seq && (strcmp(json_string_value(id), "A") != 0 || seen_a++))
            return refuse(L, sub, "the single template must hold sequence A once");
        if (sp && (rc = template_ids(L, specials, json_string_value(id), sub,
                                     seen_a ? L->b->tpl_after : L->b->tpl_before,
                                     seen_a ? &L->b->n_after : &L->b->n_before)))
            return rc;
    }
    return seen_a ? 0 : refuse(L, at, "the single template must hold sequence A once");
}

static int read_post(loader *L, json_t *j, const char *at, int depth)
{
    const char *type;
    int rc = need_type(L, j, at, &type);
    if (rc)
        return rc;
    if (!strcmp(type, "ByteLevel"))
        return 0; /* it only trims offsets: the ids are the same */
    if (!strcmp(type, "TemplateProcessing"))
        return read_template(L, j, at);
    if (strcmp(type, "Sequence") != 0)
        return refuse(L, at, "type: \"%.40s\" is not supported (post-processors: ByteLevel, "
                             "TemplateProcessing, Sequence)", type);
    json_t *items = json_object_get(j, "processors"), *it;
    char sub[300];
    size_t i;
    if (!json_is_array(items))
        return refuse(L, at, "\"processors\" must be an array");
    if (depth >= MAX_DEPTH)
        return refuse(L, at, "Sequences nested more than %d deep", MAX_DEPTH);
    json_array_foreach(items, i, it)
    {
        snprintf(sub, sizeof sub, "%s.processors[%zu]", at, i);
        if ((rc = read_post(L, it, sub, depth + 1)))
            return rc;
    }
    return 0;
}

int bpe_read_steps(bpe *b, json_t *root, const char *path)
{
    loader L = {b, path, 0, 0};
    json_t *norm = json_object_get(root, "normalizer"), *pre = json_object_get(root, "pre_tokenizer");
    json_t *post = json_object_get(root, "post_processor");
    int rc = 0;
    if (norm && !json_is_null(norm))
        rc = read_normalizer(&L, norm, "normalizer", 0);
    if (!rc && pre && !json_is_null(pre))
        rc = read_pre(&L, pre, "pre_tokenizer", 0);
    if (!rc && post && !json_is_null(post))
        rc = read_post(&L, post, "post_processor", 0);
    return rc;
}
