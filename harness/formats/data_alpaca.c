/* harness/formats/data_alpaca.c: Alpaca SFT examples: the prompt template, tokenization of prompt and
 * prompt + output + EOS, prompt labels -100, truncation, right padding; the batch of a step. */
#include "data_alpaca.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "tokenizer.h"
#include "util/util.h"

/* train.py's PROMPT_DICT, cut around its {instruction} and {input} fields */
static const char PROMPT_INPUT_HEAD[] =
    "Below is an instruction that describes a task, paired with an input that provides further "
    "context. Write a response that appropriately completes the request.\n\n### Instruction:\n";
static const char PROMPT_NO_INPUT_HEAD[] =
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n### Instruction:\n";
static const char PROMPT_INPUT_MID[] = "\n\n### Input:\n";
static const char PROMPT_RESPONSE[] = "\n\n### Response:";

char *alpaca_prompt(const alpaca_record *r)
{
    int has_input = r->input[0] != 0;
    const char *head = has_input ? PROMPT_INPUT_HEAD : PROMPT_NO_INPUT_HEAD;
    size_t n = strlen(head) + strlen(r->instruction) + strlen(PROMPT_RESPONSE) + 1;
    if (has_input)
        n += strlen(PROMPT_INPUT_MID) + strlen(r->input);
    char *s = malloc(n);
    if (!s)
        return NULL;
    snprintf(s, n, "%s%s%s%s%s", head, r->instruction, has_input ? PROMPT_INPUT_MID : "",
             r->input, PROMPT_RESPONSE);
    return s;
}

/* ids cut to max ids as truncation does with a template: the first max - after ids, then the
 * template's `after` ids */
static void truncate_ids(id_list *ids, int max, int after)
{
    if (ids->n <= (size_t)max)
        return;
    memmove(ids->ids + max - after, ids->ids + ids->n - after, (size_t)after * sizeof *ids->ids);
    ids->n = (size_t)max;
}

/* the ids of text (template included), with eos (when >= 0) inserted before the template's
 * trailing ids, truncated to o->model_max_length */
static int encode(tokenizer *t, const char *text, const char *where, int32_t eos, int max,
                  id_list *out)
{
    int before, after;
    tokenizer_template_size(t, &before, &after);
    out->n = 0;
    int rc = tokenizer_encode(t, text, strlen(text), where, out);
    if (rc)
        return rc;
    if (eos < 0) {
        truncate_ids(out, max, after);
        return 0;
    }
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 16;
        int32_t *ids = realloc(out->ids, cap * sizeof *ids);
        if (!ids) {
            log_error("%s: out of memory", where);
            return EXIT_FAIL;
        }
        out->ids = ids;
        out->cap = cap;
    }
    size_t at = out->n - (size_t)after;
    memmove(out->ids + at + 1, out->ids + at, (size_t)after * sizeof *out->ids);
    out->ids[at] = eos;
    out->n++;
    truncate_ids(out, max, after);
    return 0;
}

/* row r of ds from the example's ids and the prompt's length */
static void fill_row(alpaca_dataset *ds, size_t r, const id_list *ex, size_t source_len,
                     int32_t pad)
{
    size_t T = (size_t)ds->seq_len;
    int32_t *ids = ds->ids + r * T, *lab = ds->labels + r * T, *att = ds->attention + r * T;
    for (size_t t = 0; t < T; t++) {
        ids[t] = t < ex->n ? ex->ids[t] : pad;
        lab[t] = t < ex->n && t >= source_len ? ids[t] : -100;
        att[t] = ids[t] != pad;
    }
}

/* the prompt alone, encoded the same way: its ids that are not the pad id */
static int source_length(tokenizer *t, const char *prompt, const char *where,
                         const alpaca_options *o, id_list *tmp, size_t *len)
{
    int rc = encode(t, prompt, where, -1, o->model_max_length, tmp);
    *len = 0;
    for (size_t i = 0; !rc && i < tmp->n; i++)
        *len += tmp->ids[i] != o->pad_id;
    return rc;
}

/* one record into row r */
static int tokenize_record(tokenizer *t, const alpaca_record *rec, const char *path, size_t r,
                           const alpaca_options *o, alpaca_dataset *ds, id_list *a, id_list *b)
{
    char where[4200];
    snprintf(where, sizeof where, "%s: record %zu", path, r);
    char *prompt = alpaca_prompt(rec);
    size_t plen = prompt ? strlen(prompt) : 0, olen = strlen(rec->output);
    char *example = prompt ? malloc(plen + olen + 1) : NULL;
    if (!example) {
        free(prompt);
        log_error("%s: out of memory", where);
        return EXIT_FAIL;
    }
    memcpy(example, prompt, plen);
    memcpy(example + plen, rec->output, olen + 1);
    size_t source_len = 0;
    int rc = source_length(t, prompt, where, o, a, &source_len);
    if (!rc)
        rc = encode(t, example, where, o->eos_id, o->model_max_length, b);
    if (!rc)
        fill_row(ds, r, b, source_len, o->pad_id);
    free(prompt);
    free(example);
    return rc;
}

static int check_options(const char *path, tokenizer *t, const alpaca_options *o)
{
    int before, after, vocab = tokenizer_vocab_size(t);
    tokenizer_template_size(t, &before, &after);
    if (o->model_max_length <= before + after || o->model_max_length > o->seq_len) {
        log_error("%s: model_max_length %d must exceed the template's %d tokens and be at most "
                  "seq_len %d", path, o->model_max_length, before + after, o->seq_len);
        return EXIT_USAGE;
    }
    if (o->eos_id < 0 || o->eos_id >= vocab || o->pad_id < 0 || o->pad_id >= vocab) {
        log_error("%s: eos id %d or pad id %d is outside the tokenizer's %d ids", path,
                  (int)o->eos_id, (int)o->pad_id, vocab);
        return EXIT_USAGE;
    }
    return 0;
}

int alpaca_dataset_load(const char *path, tokenizer *t, const alpaca_options *o,
                        alpaca_dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    alpaca_records rs;
    int rc = check_options(path, t, o);
    if (rc || (rc = alpaca_read(path, &rs)))
        return rc;
    size_t T = (size_t)o->seq_len, cells = rs.n * T; /* rs.n <= file bytes / 2: no overflow */
    ds->seq_len = o->seq_len;
    ds->vocab_size = tokenizer_vocab_size(t);
    ds->ids = malloc(cells * sizeof *ds->ids);
    ds->labels = malloc(cells * sizeof *ds->labels);
    ds->attention = malloc(cells * sizeof *ds->attention);
    if (!ds->ids || !ds->labels || !ds->attention) {
        log_error("%s: out of memory for %zu rows of %zu tokens", path, rs.n, T);
        rc = EXIT_FAIL;
    }
    id_list a = {0}, b = {0};
    for (size_t r = 0; !rc && r < rs.n; r++)
        rc = tokenize_record(t, &rs.r[r], path, r, o, ds, &a, &b);
    ds->n_rows = rs.n;
    id_list_free(&a);
    id_list_free(&b);
    alpaca_records_free(&rs);
    if (rc)
        alpaca_dataset_free(ds);
    return rc;
}

void alpaca_dataset_free(alpaca_dataset *ds)
{
    free(ds->ids);
    free(ds->labels);
    free(ds->attention);
    memset(ds, 0, sizeof *ds);
}

void alpaca_batch(const alpaca_dataset *ds, int step, int batch, int rank, int world,
                  int32_t *input_ids, int32_t *attention_mask, int32_t *targets)
{
    size_t T = (size_t)ds->seq_len;
    for (int i = 0; i < batch; i++) {
        size_t k = (size_t)step * batch + i;
        size_t row = sampler_index(k, rank, world, ds->n_rows);
        const int32_t *lab = ds->labels + row * T;
        memcpy(input_ids + i * T, ds->ids + row * T, T * sizeof *input_ids);
        memcpy(attention_mask + i * T, ds->attention + row * T, T * sizeof *attention_mask);
        for (size_t t = 0; t < T; t++)
            targets[i * T + t] = t + 1 < T ? lab[t + 1] : -100;
    }
}

/* the one id text encodes to, the template's ids aside */
static int single_id(tokenizer *t, const char *text, const char *where, int32_t *id)
{
    int before, after;
    tokenizer_template_size(t, &before, &after);
    id_list ids = {0};
    int rc = tokenizer_encode(t, text, strlen(text), where, &ids);
    if (!rc && ids.n != (size_t)(before + after + 1)) {
        log_error("%s: \"%s\" is %zu tokens, not one token of the vocabulary", where, text,
                  ids.n - (size_t)(before + after));
        rc = EXIT_USAGE;
    }
    if (!rc)
        *id = ids.ids[before];
    id_list_free(&ids);
    return rc;
}

int data_special_id(tokenizer *t, const char *role, const char *text, const char *where,
                      int32_t *id)
{
    if (text && text[0] && strcmp(text, "eos") != 0 && strcmp(text, "unk") != 0)
        return single_id(t, text, where, id);
    const char *from = text && text[0] ? text : role;
    *id = tokenizer_special_id(t, from);
    if (*id >= 0)
        return 0;
    if (strcmp(role, "pad") == 0 && from == role)
        log_error("%s: the tokenizer (%s) has no pad token. Alpaca's train.py would add \"[PAD]\" "
                  "and resize the embeddings, which the harness does not do: set data.pad_token to "
                  "\"eos\" or \"unk\" (the choice of the Qwen and Llama SFT scripts) or a token's "
                  "text", where, tokenizer_name(t));
    else
        log_error("%s: the tokenizer (%s) has no %s token: give the token's text there", where,
                  tokenizer_name(t), from);
    return EXIT_USAGE;
}
