/* harness/models/model_dir.c: local Hugging Face model directories: refusing config keys that change
 * the computation in ways the harness does not implement, and finding override_config.json. */
#define _POSIX_C_SOURCE 200809L
#include "model_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    return stat(out, &st) == 0; /* not a regular file: refused by its reader, not skipped */
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
