/* harness/models/checkpoint.c: any family's weights in Hugging Face model directories: config.json
 * and model.safetensors as save_pretrained writes them, and loading by name with shape checks. */
#define _POSIX_C_SOURCE 200809L
#include "checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/formats.h"
#include "util/output_target.h"
#include "util/util.h"

/* ---- writing ------------------------------------------------------------------------------- */

static int mkdir_p(const char *dir)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

json_t *checkpoint_config_json(const model_family *f, const model_config_u *c, json_t *src_config)
{
    return f->config_json(c, src_config);
}

int checkpoint_write_file(const char *path, const void *data, size_t len, const char *what)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        log_error("%.64s...: cannot write %s: the path is too long", path, what);
        return EXIT_FAIL;
    }
    FILE *f = output_create_fresh(tmp); /* whatever is at tmp is removed, never written through */
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0) /* a link at path is replaced, its target untouched */
        ok = 0;
    if (!ok) {
        log_error("%s: cannot write %s: %s", path, what, strerror(errno));
        if (f)
            unlink(tmp);
    }
    return ok ? 0 : EXIT_FAIL;
}

static int write_config(const model_family *f, const model_config_u *c, json_t *src_config,
                        const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *j = checkpoint_config_json(f, c, src_config);
    char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15))
                   : NULL;
    json_decref(j);
    if (!text) {
        log_error("%s: cannot write the config: out of memory", path);
        return EXIT_FAIL;
    }
    int rc = checkpoint_write_file(path, text, strlen(text), "the config");
    free(text);
    /* the config written is the resolved one: an override_config.json left from before would
     * be applied on top of it where the directory is trained next (transformers ignores it) */
    snprintf(path, sizeof path, "%s/override_config.json", dir);
    if (!rc && unlink(path) != 0 && errno != ENOENT) {
        log_error("%s: cannot remove the override file left from before: %s", path,
                  strerror(errno));
        rc = EXIT_FAIL;
    }
    return rc;
}

static int write_weights(model *m, const float *host, const char *dir)
{
    int n = model_n_params(m);
    st_entry *e = calloc((size_t)n, sizeof *e);
    char (*names)[80] = calloc((size_t)n, sizeof *names);
    int rc = e && names ? 0 : EXIT_FAIL;
    for (int i = 0; i < n && !rc; i++) {
        const param_info *p = model_param(m, i);
        model_hf_name(m, i, names[i], sizeof names[i]);
        e[i] = (st_entry){names[i], host + p->offset, NULL, p->ndim, {p->shape[0], p->shape[1]}};
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    json_t *meta = json_pack("{s:s}", "format", "pt");
    if (!rc)
        rc = st_write(path, e, n, meta);
    else
        log_error("%s: out of memory", path);
    json_decref(meta);
    free(e);
    free(names);
    return rc;
}

/* the nearest existing ancestor of path (path itself when it exists) into out; 0, -1 (errno
 * set), or -2 when out is a symbolic link whose target is missing (not a directory to make) */
static int existing_ancestor(const char *path, char *out, size_t len, struct stat *st)
{
    snprintf(out, len, "%s", path);
    for (;;) {
        if (stat(out, st) == 0)
            return 0;
        if (errno != ENOENT)
            return -1;
        if (lstat(out, st) == 0)
            return -2;
        char *slash = strrchr(out, '/');
        while (slash && slash > out && slash[1] == 0) { /* trailing slashes */
            *slash = 0;
            slash = strrchr(out, '/');
        }
        if (!slash)
            snprintf(out, len, ".");
        else if (slash == out)
            out[1] = 0;
        else
            *slash = 0;
    }
}

int checkpoint_check_target(const char *dir)
{
    char at[4096];
    struct stat st;
    if (!dir || !*dir) {
        log_error("--save: the checkpoint directory is an empty path");
        return EXIT_USAGE;
    }
    if (strlen(dir) >= sizeof at - 64) {
        log_error("%.64s...: the checkpoint directory path is too long", dir);
        return EXIT_USAGE;
    }
    int found = existing_ancestor(dir, at, sizeof at, &st);
    if (found == -2) {
        log_error("%s: cannot create the checkpoint directory: %s is a symbolic link whose "
                  "target is missing", dir, at);
        return EXIT_USAGE;
    }
    if (found != 0) {
        log_error("%s: cannot use it as the checkpoint directory: %s", dir, strerror(errno));
        return EXIT_USAGE;
    }
    if (!S_ISDIR(st.st_mode)) {
        log_error("%s: cannot create the checkpoint directory: %s is not a directory", dir, at);
        return EXIT_USAGE;
    }
    if (access(at, W_OK | X_OK) != 0 || output_dir_probe(at) != 0) {
        log_error("%s: cannot write the checkpoint directory: nothing can be created in %s (%s)",
                  dir, at, strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

int checkpoint_save(model *m, const model_config_u *c, json_t *src_config, const char *dir)
{
    if (mkdir_p(dir) != 0) {
        log_error("%s: cannot create the checkpoint directory: %s", dir, strerror(errno));
        return EXIT_FAIL;
    }
    float *host = malloc(model_param_count(m) * sizeof *host);
    if (!host) {
        log_error("%s: out of host memory for %zu weights", dir, model_param_count(m));
        return EXIT_FAIL;
    }
    int rc = model_get_weights(m, host, 0);
    if (!rc)
        rc = write_weights(m, host, dir);
    if (!rc)
        rc = write_config(model_family_of(m), c, src_config, dir);
    free(host);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------------- */

int checkpoint_exists(const char *dir)
{
    char a[4200], b[4200];
    struct stat st;
    snprintf(a, sizeof a, "%s/model.safetensors", dir);
    snprintf(b, sizeof b, "%s/model.safetensors.index.json", dir);
    return lstat(a, &st) == 0 || lstat(b, &st) == 0; /* a dangling link: refused by its reader */
}

static void shape_str(const int64_t *shape, int ndim, char *out, size_t len)
{
    size_t n = (size_t)snprintf(out, len, "[");
    for (int i = 0; i < ndim && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < len)
        snprintf(out + n, len - n, "]");
}

static int check_shape(const param_info *p, const st_tensor *t, const char *where)
{
    int64_t want[2] = {p->shape[0], p->shape[1]};
    int same = t->ndim == p->ndim;
    for (int i = 0; same && i < p->ndim; i++)
        same = t->shape[i] == want[i];
    if (same)
        return 0;
    char a[128], b[128];
    shape_str(t->shape, t->ndim, a, sizeof a);
    shape_str(want, p->ndim, b, sizeof b);
    log_error("%s: tensor \"%s\" has shape %s, the model config needs %s", where, t->name, a, b);
    return EXIT_USAGE;
}

typedef struct {
    model *m;
    const model_family *f;
    float *host;
    char *seen;         /* per parameter: 0, 1 by its name, 2 by an alias spelling */
    const st_tensor *lm_head; /* a tied head saved anyway, checked against the parameter it is */
    const st_file *lm_head_file;
    int lm_head_of;
    int64_t dropped;    /* tensors of layers past the config's count (num_hidden_layers: 1) */
    char first_dropped[128];
    struct alias_load { /* each tensor read by an alias spelling, checked at the end */
        int param;
        const st_file *f;
        const st_tensor *t;
    } *aliases;
    int n_aliases;
} loader;

/* the parameter a checkpoint name (prefix stripped) is, or -1; *alias 1 for another spelling */
static int find_index(const loader *L, const char *name, int *alias)
{
    *alias = 0;
    if (L->f->checkpoint_index)
        return L->f->checkpoint_index(model_impl(L->m), name, alias);
    return model_find_param(L->m, name);
}

/* 1 when name is a tensor of layer N >= 1 whose layer-0 twin is a parameter: a checkpoint of
 * more layers than the config keeps (seed 1's num_hidden_layers: 1 override), which transformers'
 * from_pretrained loads by skipping those tensors with a warning. The layer is the name's first
 * number (a later one, such as an expert's, is not: layer 0's expert 4 of a model of 4 experts
 * is unexpected). N is written as PyTorch names modules (str(int)): "00" or "01" is no layer
 * number, so such a tensor is unexpected. */
static int is_dropped_layer(const loader *L, const char *name)
{
    for (const char *p = strchr(name, '.'); p; p = strchr(p + 1, '.')) {
        size_t digits = strspn(p + 1, "0123456789");
        if (digits == 0 || p[1 + digits] != '.')
            continue; /* not a number */
        if (p[1] == '0')
            return 0; /* layer 0 itself, or a leading zero */
        char twin[256];
        int n = snprintf(twin, sizeof twin, "%.*s.0%s", (int)(p - name), name, p + 1 + digits);
        int alias;
        return n > 0 && (size_t)n < sizeof twin && find_index(L, twin, &alias) >= 0;
    }
    return 0;
}

static int load_one(loader *L, const st_file *f, const st_tensor *t)
{
    const char *prefix = L->f->hf_prefix;
    const char *name = strncmp(t->name, prefix, strlen(prefix)) == 0 ? t->name + strlen(prefix)
                                                                     : t->name;
    if (L->f->tied_head && strcmp(t->name, L->f->tied_head) == 0) {
        L->lm_head = t;
        L->lm_head_file = f;
        return check_shape(model_param(L->m, 0), t, f->path);
    }
    if (L->f->ignored_tensor && L->f->ignored_tensor(name))
        return 0;
    int alias, i = find_index(L, name, &alias);
    if (i < 0 && is_dropped_layer(L, name)) {
        if (L->dropped++ == 0)
            snprintf(L->first_dropped, sizeof L->first_dropped, "%s", t->name);
        return 0;
    }
    if (i < 0) {
        log_error("%s: unexpected tensor \"%.96s\": not a parameter of this %s config",
                  f->path, t->name, L->f->name);
        return EXIT_USAGE;
    }
    const param_info *p = model_param(L->m, i);
    if (alias && strcmp(name, "lm_head.weight") == 0) { /* llama's tied head: checked at the end */
        L->lm_head = t;
        L->lm_head_file = f;
        L->lm_head_of = i;
        return check_shape(p, t, f->path);
    }
    if (alias)
        L->aliases[L->n_aliases++] = (struct alias_load){i, f, t};
    if (alias && L->seen[i]) /* the same tensor under its own name too: equal values, checked
                              * at the end (check_aliases) */
        return check_shape(p, t, f->path);
    if (L->seen[i] == 1 && !alias) {
        log_error("%s: tensor \"%s\" is given twice (with and without \"%s\")", f->path,
                  p->name, prefix);
        return EXIT_USAGE;
    }
    L->seen[i] = alias ? 2 : 1;
    int rc = check_shape(p, t, f->path);
    return rc ? rc : st_read_f32_finite(f, t, L->host + p->offset);
}

/* the n floats at a and b hold the same values (-0 equals 0, as torch.equal has it) */
static int same_values(const float *a, const float *b, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (a[k] != b[k])
            return 0;
    return 1;
}

/* a tensor given under two spellings (BERT's cls.predictions.bias and decoder.bias, a LayerNorm's
 * gamma and weight) must hold the same finite values in both: which one transformers takes
 * differs by version, so differing ones are refused rather than one read silently */
static int check_aliases(const loader *L)
{
    int rc = 0;
    for (int a = 0; a < L->n_aliases && !rc; a++) {
        const struct alias_load *x = &L->aliases[a];
        const param_info *p = model_param(L->m, x->param);
        float *v = malloc(p->n * sizeof *v);
        if (!v) {
            log_error("%s: out of host memory for %s", x->f->path, x->t->name);
            return EXIT_FAIL;
        }
        rc = st_read_f32_finite(x->f, x->t, v);
        if (!rc && !same_values(v, L->host + p->offset, p->n)) {
            char name[128];
            model_hf_name(L->m, x->param, name, sizeof name);
            log_error("%s: tensor \"%s\" is given again as \"%s\" with other values: which one "
                      "transformers reads differs by version; keep one of them", x->f->path,
                      name, x->t->name);
            rc = EXIT_USAGE;
        }
        free(v);
    }
    return rc;
}

static int check_missing(const loader *L, const char *dir)
{
    int missing = 0, first = -1;
    for (int i = 0; i < model_n_params(L->m); i++)
        if (!L->seen[i] && missing++ == 0)
            first = i;
    if (!missing)
        return 0;
    char name[128];
    model_hf_name(L->m, first, name, sizeof name);
    log_error("%s: the weights lack tensor \"%s\"%s", dir, name, missing > 1 ? " (and others)" : "");
    return EXIT_USAGE;
}

/* a base-model checkpoint (BertModel's) lacks the head: those tensors take the family's seeded
 * init, as from_pretrained initialises what a checkpoint lacks, with a warning naming them */
static int init_missing_head(loader *L, const char *dir, uint64_t seed)
{
    int missing = 0;
    for (int i = 0; i < model_n_params(L->m); i++)
        if (!L->seen[i] && !model_param_is_head(L->m, i))
            return 0; /* a tensor of the base model: check_missing refuses it */
        else if (!L->seen[i])
            missing++;
    if (!missing)
        return 0;
    float *init = malloc(model_param_count(L->m) * sizeof *init);
    if (!init || model_init_host(L->m, seed, init)) {
        free(init);
        log_error("%s: out of host memory for the initial weights of the head", dir);
        return EXIT_FAIL;
    }
    for (int i = 0; i < model_n_params(L->m); i++) {
        const param_info *p = model_param(L->m, i);
        if (L->seen[i])
            continue;
        char name[128];
        model_hf_name(L->m, i, name, sizeof name);
        log_warn("%s: the weights lack the head tensor \"%s\": seeded init (train.seed %llu)",
                 dir, name, (unsigned long long)seed);
        memcpy(L->host + p->offset, init + p->offset, p->n * sizeof *init);
        L->seen[i] = 1;
    }
    free(init);
    return 0;
}

/* a tied checkpoint that holds only the head (lm_head.weight, no embedding): the embedding is
 * read from it, as from_pretrained ties the missing one to the one given */
static int embedding_from_head(loader *L)
{
    if (!L->lm_head || L->seen[L->lm_head_of])
        return 0;
    const param_info *p = model_param(L->m, L->lm_head_of);
    int rc = st_read_f32_finite(L->lm_head_file, L->lm_head, L->host + p->offset);
    if (!rc)
        L->seen[L->lm_head_of] = 1;
    return rc;
}

/* A tied head saved anyway (GPT-2's lm_head.weight, BERT's decoder weight: parameter 0; llama's
 * lm_head.weight with tie_word_embeddings) must hold the embedding's values: transformers 4 tied
 * a differing one to the embedding, transformers 5 keeps it untied, so such a checkpoint trains
 * differently by version and is refused rather than read one way silently */
static int check_lm_head(const loader *L)
{
    if (!L->lm_head)
        return 0;
    const param_info *wte = model_param(L->m, L->lm_head_of);
    float *head = malloc(wte->n * sizeof *head);
    if (!head || st_read_f32(L->lm_head_file, L->lm_head, head)) {
        if (!head)
            log_error("%s: out of host memory for %s", L->lm_head_file->path, L->lm_head->name);
        free(head);
        return EXIT_USAGE;
    }
    int same = same_values(head, L->host + wte->offset, wte->n);
    free(head);
    if (same)
        return 0;
    log_error("%s: %s differs from %s, but the config ties them (tie_word_embeddings): "
              "transformers 5 keeps such a head untied, transformers 4 tied it to the embedding; "
              "%s", L->lm_head_file->path, L->lm_head->name, wte->name,
              strcmp(L->f->name, "llama") == 0
                  ? "set \"tie_word_embeddings\": false to train it untied"
                  : "the harness's model ties them: save the model tied (or drop the tensor)");
    return EXIT_USAGE;
}

static int load(model *m, const char *dir, int head_may_miss, uint64_t seed)
{
    st_set s;
    int rc = st_set_open_dir(dir, &s);
    if (rc < 0) {
        log_error("%s: no weights: neither model.safetensors nor model.safetensors.index.json",
                  dir);
        return EXIT_USAGE;
    }
    if (rc)
        return rc;
    loader L = {m, model_family_of(m), malloc(model_param_count(m) * sizeof(float)),
                calloc((size_t)model_n_params(m), 1), NULL, NULL, 0, 0, "",
                calloc((size_t)s.n + 1, sizeof *L.aliases), 0};
    if (!L.host || !L.seen || !L.aliases) {
        log_error("%s: out of host memory for %zu weights", dir, model_param_count(m));
        rc = EXIT_FAIL;
    }
    for (int i = 0; i < s.n && !rc; i++)
        rc = load_one(&L, s.of[i], s.t[i]);
    if (!rc && L.dropped)
        log_warn("%s: %lld tensors of layers the config does not have were not used (the first: "
                 "\"%s\"), as from_pretrained skips them", dir, (long long)L.dropped,
                 L.first_dropped);
    if (!rc)
        rc = embedding_from_head(&L);
    if (!rc && head_may_miss)
        rc = init_missing_head(&L, dir, seed);
    if (!rc)
        rc = check_missing(&L, dir);
    if (!rc)
        rc = check_lm_head(&L);
    if (!rc)
        rc = check_aliases(&L);
    if (!rc && model_set_weights(m, L.host))
        rc = EXIT_FAIL;
    free(L.host);
    free(L.seen);
    free(L.aliases);
    st_set_close(&s);
    return rc;
}

int checkpoint_load(model *m, const char *dir) { return load(m, dir, 0, 0); }

int checkpoint_load_pretrained(model *m, const char *dir, uint64_t seed)
{
    return load(m, dir, 1, seed);
}
