/* harness/formats/tokenizer_encode.c: a BPE tokenizer.json's pipeline as the tokenizers library runs
 * Tokenizer.encode: added tokens split out of the raw text, the normalizer, added tokens split out of
 * the normalized text, the pre-tokenizer, the model on each piece, the template's special tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_bpe_internal.h"
#include "tokenizer_steps.h"

typedef struct {
    step_work steps;
    word_work *words;
    size_t seg_at;    /* where the text being encoded starts in the whole text */
    size_t fail_at;
} encode_work;

/* normalized text with no added token in it: pre-tokenizer, then the model on each piece */
static int encode_text(const bpe *b, const char *s, size_t len, int at_start, encode_work *k,
                       id_list *out)
{
    if (!len)
        return BPE_OK;
    if (!b->n_pre)
        return bpe_encode_word(b, s, len, k->words, out);
    int rc = pretok_run(b->pre, b->n_pre, s, len, at_start, &k->steps);
    if (rc) {
        k->fail_at = k->seg_at + k->steps.fail_offset;
        return rc;
    }
    const piece_list *p = &k->steps.a;
    for (size_t i = 0; i < p->n && !rc; i++)
        rc = bpe_encode_word(b, p->buf + p->p[i].beg, p->p[i].end - p->p[i].beg, k->words, out);
    return rc;
}

/* s[len] cut at the added tokens of one class (normalized or not); the text between them goes
 * to next (normalized text: encode_text; raw text: normalize_and_encode) */
typedef int (*segment_fn)(const bpe *b, const char *s, size_t len, int at_start,
                          encode_work *k, id_list *out);

static int split_added(const bpe *b, const char *s, size_t len, int at_start, int normalized,
                       segment_fn next, encode_work *k, id_list *out)
{
    int rc = BPE_OK;
    size_t seg = 0, base = k->seg_at;
    for (size_t pos = 0; pos < len && !rc; pos++) {
        int a = bpe_added_at_class(b, s, len, pos, normalized);
        if (a < 0)
            continue;
        k->seg_at = base + (normalized ? 0 : seg);
        rc = next(b, s + seg, pos - seg, at_start && seg == 0, k, out);
        if (!rc && bpe_list_push(out, b->added[a].id))
            rc = BPE_NO_MEMORY;
        seg = pos + b->added[a].len;
        pos = seg - 1;
    }
    k->seg_at = base + (normalized ? 0 : seg);
    if (!rc)
        rc = next(b, s + seg, len - seg, at_start && seg == 0, k, out);
    k->seg_at = base;
    return rc;
}

/* raw text between added tokens: the normalizer, then the normalized added tokens */
static int normalize_and_encode(const bpe *b, const char *s, size_t len, int at_start,
                                encode_work *k, id_list *out)
{
    if (!len)
        return BPE_OK;
    char *norm = NULL;
    size_t norm_len = len;
    if (b->n_norm) {
        int rc = norm_run(b->norm, b->n_norm, s, len, &k->steps, &norm, &norm_len);
        if (rc) {
            k->fail_at = k->seg_at;
            return rc;
        }
        s = norm;
    }
    int rc = b->has_normalized_added
                 ? split_added(b, s, norm_len, at_start, 1, encode_text, k, out)
                 : encode_text(b, s, norm_len, at_start, k, out);
    free(norm);
    return rc;
}

static int push_ids(const int32_t *ids, int n, id_list *out)
{
    for (int i = 0; i < n; i++)
        if (bpe_list_push(out, ids[i]))
            return BPE_NO_MEMORY;
    return BPE_OK;
}

int bpe_encode(const bpe *b, const char *text, size_t len, int add_special, id_list *out,
               size_t *fail_at)
{
    encode_work k = {0};
    int rc = BPE_NO_MEMORY;
    if (step_work_init(&k.steps) == 0 && (k.words = word_work_new())) {
        rc = add_special ? push_ids(b->tpl_before, b->n_before, out) : BPE_OK;
        if (!rc)
            rc = split_added(b, text, len, 1, 0, normalize_and_encode, &k, out);
        if (!rc && add_special)
            rc = push_ids(b->tpl_after, b->n_after, out);
    }
    if (rc && fail_at)
        *fail_at = k.fail_at;
    step_work_free(&k.steps);
    word_work_free(k.words);
    return rc;
}
