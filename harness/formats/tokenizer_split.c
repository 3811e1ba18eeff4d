/* harness/formats/tokenizer_split.c: splitting as the tokenizers library does it: a pattern's matches
 * as spans (Oniguruma under backtracking limits), and the split behaviors (Removed, Isolated, ...). */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer_bpe_internal.h"
#include "tokenizer_steps.h"

int span_push(span_list *l, size_t beg, size_t end, int is_match)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        span *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (span){beg, end, is_match};
    return 0;
}

uint32_t utf8_next(const unsigned char *s, size_t *i)
{
    unsigned c = s[*i];
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; k++)
        cp = (cp << 6) | (s[*i + k] & 0x3F);
    *i += n;
    return cp;
}

int unicode_is_numeric(uint32_t cp)
{
    if (cp > 0x10FFFF)
        return 0;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

int regex_search(OnigRegex re, const char *text, size_t len, size_t pos, step_work *w,
                 OnigRegion *r)
{
    const UChar *str = (const UChar *)text;
    unsigned long left = (unsigned long)(len - pos), per_byte = BPE_RETRY_LIMIT_PER_BYTE;
    unsigned long limit = left > BPE_RETRY_LIMIT_IN_MATCH / per_byte ? left * per_byte
                                                                    : BPE_RETRY_LIMIT_IN_MATCH;
    onig_set_retry_limit_in_search_of_match_param(w->mp, limit);
    return onig_search_with_param(re, str, str + len, str + pos, str + len, r, ONIG_OPTION_NONE,
                                  w->mp);
}

static int search_failure(int onig_code)
{
    if (onig_code == ONIGERR_RETRY_LIMIT_IN_MATCH_OVER ||
        onig_code == ONIGERR_RETRY_LIMIT_IN_SEARCH_OVER)
        return BPE_REGEX_LIMIT;
    return onig_code == ONIGERR_MEMORY ? BPE_NO_MEMORY : BPE_REGEX_ERROR;
}

static size_t char_len_at(const char *s, size_t at, size_t len)
{
    size_t step = 1;
    while (at + step < len && ((unsigned char)s[at + step] & 0xC0) == 0x80)
        step++;
    return step;
}

/* onig's find_iter: every match from where the last one ended; an empty match where the last
 * match ended is skipped by one character */
static int find_iter(OnigRegex re, const char *text, size_t len, step_work *w, OnigRegion *r,
                     span_list *out)
{
    size_t last_end = 0, last_match_end = 0;
    int have_last = 0;
    while (last_end <= len) {
        onig_region_clear(r);
        int at = regex_search(re, text, len, last_end, w, r);
        if (at == ONIG_MISMATCH)
            return BPE_OK;
        if (at < 0) {
            w->fail_offset = last_end;
            return search_failure(at);
        }
        size_t s = (size_t)r->beg[0], e = (size_t)r->end[0];
        if (s == e && have_last && last_match_end == e) {
            last_end += last_end < len ? char_len_at(text, last_end, len) : 1;
            continue;
        }
        last_end = last_match_end = e;
        have_last = 1;
        if (span_push(out, s, e, 1))
            return BPE_NO_MEMORY;
    }
    return BPE_OK;
}

int regex_spans(OnigRegex re, const char *text, size_t len, step_work *w, span_list *out)
{
    span_list matches = {0};
    OnigRegion *r = onig_region_new();
    int rc = r ? find_iter(re, text, len, w, r, &matches) : BPE_NO_MEMORY;
    if (r)
        onig_region_free(r, 1);
    out->n = 0;
    size_t prev = 0;
    for (size_t i = 0; !rc && i < matches.n; i++) {
        if (prev != matches.v[i].beg && span_push(out, prev, matches.v[i].beg, 0))
            rc = BPE_NO_MEMORY;
        if (!rc && span_push(out, matches.v[i].beg, matches.v[i].end, 1))
            rc = BPE_NO_MEMORY;
        prev = matches.v[i].end;
    }
    if (!rc && prev != len && span_push(out, prev, len, 0))
        rc = BPE_NO_MEMORY;
    free(matches.v);
    return rc;
}

/* MergedWithPrevious: a match joins the piece before it (when the one before is no match) */
static int merged_with_previous(const span_list *in, span_list *out)
{
    int previous_match = 0;
    for (size_t i = 0; i < in->n; i++) {
        const span *s = &in->v[i];
        if (s->is_match && !previous_match && out->n)
            out->v[out->n - 1].end = s->end;
        else if (span_push(out, s->beg, s->end, 0))
            return -1;
        previous_match = s->is_match;
    }
    return 0;
}

/* MergedWithNext: a match joins the piece after it (when the one after is no match); built
 * from the end, then reversed */
static int merged_with_next(const span_list *in, span_list *out)
{
    int previous_match = 0;
    for (size_t i = in->n; i-- > 0;) {
        const span *s = &in->v[i];
        if (s->is_match && !previous_match && out->n)
            out->v[out->n - 1].beg = s->beg;
        else if (span_push(out, s->beg, s->end, 0))
            return -1;
        previous_match = s->is_match;
    }
    for (size_t i = 0; i < out->n / 2; i++) {
        span t = out->v[i];
        out->v[i] = out->v[out->n - 1 - i];
        out->v[out->n - 1 - i] = t;
    }
    return 0;
}

/* Contiguous: neighbours that are both matches or both not are one piece */
static int contiguous(const span_list *in, span_list *out)
{
    int previous = -1;
    for (size_t i = 0; i < in->n; i++) {
        const span *s = &in->v[i];
        if (s->is_match == previous && out->n)
            out->v[out->n - 1].end = s->end;
        else if (span_push(out, s->beg, s->end, 0))
            return -1;
        previous = s->is_match;
    }
    return 0;
}

int split_by_behavior(const span_list *in, split_behavior behavior, int invert, span_list *out)
{
    out->n = 0;
    if (invert)
        for (size_t i = 0; i < in->n; i++)
            in->v[i].is_match = !in->v[i].is_match;
    switch (behavior) {
    case SPLIT_REMOVED:
        for (size_t i = 0; i < in->n; i++)
            if (span_push(out, in->v[i].beg, in->v[i].end, in->v[i].is_match))
                return -1;
        return 0;
    case SPLIT_ISOLATED:
        for (size_t i = 0; i < in->n; i++)
            if (span_push(out, in->v[i].beg, in->v[i].end, 0))
                return -1;
        return 0;
    case SPLIT_MERGED_WITH_PREVIOUS:
        return merged_with_previous(in, out);
    case SPLIT_MERGED_WITH_NEXT:
        return merged_with_next(in, out);
    case SPLIT_CONTIGUOUS:
        return contiguous(in, out);
    }
    return 0;
}

int step_work_init(step_work *w)
{
    memset(w, 0, sizeof *w);
    if (!(w->mp = onig_new_match_param()))
        return -1;
    onig_initialize_match_param(w->mp);
    onig_set_retry_limit_in_match_of_match_param(w->mp, BPE_RETRY_LIMIT_IN_MATCH);
    return 0;
}

static void piece_list_free(piece_list *l)
{
    free(l->buf);
    free(l->p);
}

void step_work_free(step_work *w)
{
    if (w->mp)
        onig_free_match_param(w->mp);
    free(w->spans.v);
    free(w->kept.v);
    piece_list_free(&w->a);
    piece_list_free(&w->b);
    memset(w, 0, sizeof *w);
}
