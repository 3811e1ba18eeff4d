/* harness/models/model_dir.c: local Hugging Face model directories: refusing config keys that change
 * the computation in ways the harness does not implement, finding override_config.json, and
 * copying a tokenizer's files into a directory the harness writes. */
#define _POSIX_C_SOURCE 200809L
#include "model_dir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "model_config.h"
#include "util/util.h"

/* a boolean key that must keep GPT2Config's default to be trained as the harness trains */
static int check_bool(json_t *config, const char *key, int want, const char *where)
{
    json_t *v = json_object_get(config, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return config_error(where, key, "must be true or false");
    if (json_is_true(v) == want)
        return 0;
    return config_error(where, key, "%s is not implemented by the harness (GPT2Config's default "
                        "is %s)", want ? "false" : "true", want ? "true" : "false");
}

int model_dir_check_config(json_t *config, const gpt2_config *c, const char *where)
{
    json_t *inner = json_object_get(config, "n_inner");
    if (inner && !json_is_null(inner) &&
        !(json_is_integer(inner) && json_integer_value(inner) == 4LL * c->n_embd)) {
        return config_error(where, "n_inner", "only null (4 * n_embd = %lld) is implemented",
                            4LL * c->n_embd);
    }
    static const struct {
        const char *key;
        int want;
    } flags[] = {{"scale_attn_weights", 1},      {"scale_attn_by_inverse_layer_idx", 0},
                 {"reorder_and_upcast_attn", 0}, {"add_cross_attention", 0},
                 {"tie_word_embeddings", 1}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        int rc = check_bool(config, flags[i].key, flags[i].want, where);
        if (rc)
            return rc;
    }
    return 0;
}

int model_dir_overrides(const char *dir, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", dir, OVERRIDE_FILE);
    struct stat st;
    /* lstat: a symbolic link whose target is missing is something there too; whatever is not a
     * regular file (that link, a directory, a FIFO) is refused by its reader, never skipped */
    return lstat(out, &st) == 0;
}

json_t *model_dir_raw_config(const char *config_path)
{
    if (!config_path || !config_path[0])
        return NULL;
    char why[INPUT_WHY_LEN];
    size_t len = 0;
    char *text = input_read(config_path, INPUT_MODEL_CONFIG, &len, why, sizeof why);
    json_error_t e;
    json_t *config = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &e) : NULL;
    free(text);
    return config;
}

/* ---- the tokenizer's files beside saved weights ------------------------------------------- */

static int is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* the file `from` as DIR/name, written afresh (checkpoint_write_file) */
static int copy_file(const char *from, const char *dir, const char *name)
{
    char to[PATH_MAX + 64], why[INPUT_WHY_LEN];
    if (snprintf(to, sizeof to, "%s/%s", dir, name) >= (int)sizeof to) {
        log_error("%.64s...: the tokenizer copy's path is too long", dir);
        return EXIT_USAGE;
    }
    size_t len = 0;
    char *data = input_read(from, INPUT_TOKENIZER, &len, why, sizeof why);
    if (!data) {
        log_error("%s: cannot copy the tokenizer file: %s", from, why);
        return EXIT_USAGE;
    }
    int rc = checkpoint_write_file(to, data, len, "the tokenizer file");
    free(data);
    return rc;
}

/* base/name as DIR/name when anything is there (lstat: a link whose target is missing is
 * refused by copy_file, not skipped); *copied says whether it was */
static int copy_if_present(const char *base, const char *name, const char *dir, int *copied)
{
    char from[PATH_MAX + 64];
    struct stat st;
    *copied = 0;
    if (snprintf(from, sizeof from, "%s/%s", base, name) >= (int)sizeof from) {
        log_error("%.64s...: the tokenizer's path is too long", base);
        return EXIT_USAGE;
    }
    if (lstat(from, &st) != 0)
        return 0;
    *copied = 1;
    return copy_file(from, dir, name);
}

/* a tokenizer file DIR holds from before that this tokenizer does not have is removed: a stale
 * tokenizer.json beside a new vocab.json would be read first (by the harness and by
 * transformers), so the directory would tokenize otherwise than the run did */
static int remove_stale(const char *dir, const char *name)
{
    char at[PATH_MAX + 64];
    struct stat st;
    snprintf(at, sizeof at, "%s/%s", dir, name);
    if (lstat(at, &st) != 0 || S_ISDIR(st.st_mode))
        return 0; /* none, or a folder: the harness would refuse to read it as a tokenizer */
    if (unlink(at) != 0) {
        log_error("%s: cannot remove the tokenizer file left from before: %s", at,
                  strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

int model_dir_copy_tokenizer(const char *kind, const char *path, const char *dir)
{
    static const char *const bpe_files[] = {"tokenizer.json", "vocab.json", "merges.txt",
                                            "tokenizer_config.json", NULL};
    static const char *const wp_files[] = {"tokenizer.json", "vocab.txt", "tokenizer_config.json",
                                           NULL};
    int bpe = kind && strcmp(kind, "bpe") == 0;
    if (!bpe && !(kind && strcmp(kind, "wordpiece") == 0))
        return 0; /* the byte tokenizer has no files */
    const char *const *names = bpe ? bpe_files : wp_files;
    int rc = 0, copied[4] = {0};
    if (is_directory(path)) {
        for (int i = 0; names[i] && !rc; i++)
            rc = copy_if_present(path, names[i], dir, &copied[i]);
    } else { /* one file: under the name the harness reads it as, the files beside it too */
        int is_vocab = ends_with(path, bpe ? "vocab.json" : ".txt");
        char base[PATH_MAX];
        path_dirname(path, base, sizeof base);
        rc = copy_file(path, dir, is_vocab ? names[1] : names[0]);
        copied[is_vocab ? 1 : 0] = 1;
        if (!rc && bpe && is_vocab)
            rc = copy_if_present(base, "merges.txt", dir, &copied[2]);
        if (!rc)
            rc = copy_if_present(base, "tokenizer_config.json", dir, &copied[bpe ? 3 : 2]);
    }
    for (int i = 0; names[i] && !rc; i++)
        if (!copied[i])
            rc = remove_stale(dir, names[i]);
    return rc;
}
