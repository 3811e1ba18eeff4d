/* harness/formats/tokenizer_roles.c: a BPE tokenizer's special tokens by role (bos, eos, pad, unk) and
 * add_bos_token/add_eos_token, from the tokenizer_config.json beside its tokenizer.json. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer_bpe_internal.h"
#include "util/util.h"

int32_t bpe_token_id(const bpe *b, const char *s, size_t len)
{
    int32_t id = strmap_get(&b->added_ids, s, len); /* an added token's id comes first */
    return id >= 0 ? id : strmap_get(&b->vocab, s, len);
}

/* "bos_token": "<s>", or {"content": "<s>", ...} as transformers writes an AddedToken, or
 * null / absent (no such token) */
static int read_role(const bpe *b, json_t *cfg, const char *key, const char *path, int32_t *id)
{
    json_t *v = json_object_get(cfg, key);
    *id = -1;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_object(v))
        v = json_object_get(v, "content");
    if (!json_is_string(v)) {
        log_error("%s: %s must be a string, {\"content\": string} or null", path, key);
        return EXIT_USAGE;
    }
    if ((*id = bpe_token_id(b, json_string_value(v), json_string_length(v))) < 0) {
        log_error("%s: %s \"%.64s\" is neither an added token nor in the vocabulary of the "
                  "tokenizer.json beside it", path, key, json_string_value(v));
        return EXIT_USAGE;
    }
    return 0;
}

static int read_flag(json_t *cfg, const char *key, const char *path, int *out)
{
    json_t *v = json_object_get(cfg, key);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v)) {
        log_error("%s: %s must be true or false", path, key);
        return EXIT_USAGE;
    }
    *out = json_is_true(v);
    return 0;
}

static int read_config(bpe *b, const char *path)
{
    char why[INPUT_WHY_LEN];
    size_t len = 0;
    char *text = input_read(path, INPUT_TOKENIZER, &len, why, sizeof why);
    if (!text) {
        log_error("%s: cannot read the tokenizer config: %s", path, why);
        return EXIT_USAGE;
    }
    json_error_t e;
    /* integers as doubles: transformers writes "model_max_length": 1000000000000000019884624838656
     * (its "no limit"), past a 64-bit integer; only strings and booleans are read here */
    json_t *cfg = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &e);
    free(text);
    if (!cfg) {
        log_error("%s: line %d: not JSON: %s", path, e.line, e.text);
        return EXIT_USAGE;
    }
    if (!json_is_object(cfg)) {
        log_error("%s: must be a JSON object, not %s", path, json_type_name(cfg));
        json_decref(cfg);
        return EXIT_USAGE;
    }
    int rc = read_role(b, cfg, "bos_token", path, &b->bos_id);
    if (!rc)
        rc = read_role(b, cfg, "eos_token", path, &b->eos_id);
    if (!rc)
        rc = read_role(b, cfg, "pad_token", path, &b->pad_id);
    if (!rc)
        rc = read_role(b, cfg, "unk_token", path, &b->role_unk_id);
    if (!rc)
        rc = read_flag(cfg, "add_bos_token", path, &b->add_bos_token);
    if (!rc)
        rc = read_flag(cfg, "add_eos_token", path, &b->add_eos_token);
    json_decref(cfg);
    return rc;
}

int bpe_read_roles(bpe *b, const char *path)
{
    char dir[4096], cfg[4200];
    path_dirname(path, dir, sizeof dir);
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
    struct stat st;
    if (lstat(cfg, &st) != 0)
        return 0; /* no config: no roles (a dangling link is refused by its reader) */
    return read_config(b, cfg);
}
