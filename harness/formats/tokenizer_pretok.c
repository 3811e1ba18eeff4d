/* harness/formats/tokenizer_pretok.c: the pre-tokenizers of a BPE tokenizer.json (Split, Metaspace,
 * Digits, ByteLevel's prefix space and split) run as the tokenizers library runs them, piece by piece. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_bpe_internal.h"
#include "tokenizer_steps.h"

/* room for more bytes in l->buf; 0 or -1 */
static int reserve(piece_list *l, size_t more)
{
    if (l->len + more <= l->cap)
        return 0;
    size_t cap = l->cap ? l->cap : 256;
    while (cap < l->len + more)
        cap *= 2;
    char *buf = realloc(l->buf, cap);
    if (!buf)
        return -1;
    l->buf = buf;
    l->cap = cap;
    return 0;
}

int piece_append(piece_list *l, const char *s, size_t n)
{
    if (!n)
        return 0;
    if (reserve(l, n))
        return -1;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    return 0;
}

/* the bytes appended since `from` become one piece (nothing when they are none) */
static int close_piece(piece_list *l, size_t from, int at_start)
{
    if (l->len == from)
        return 0;
    if (l->n == l->cap_p) {
        size_t cap = l->cap_p ? l->cap_p * 2 : 64;
        piece *p = realloc(l->p, cap * sizeof *p);
        if (!p)
            return -1;
        l->p = p;
        l->cap_p = cap;
    }
    l->p[l->n++] = (piece){from, l->len, at_start};
    return 0;
}

/* the kept spans of s[len] as pieces of out (empty ones dropped, as the library drops them) */
static int emit_kept(const span_list *kept, const char *s, int at_start, piece_list *out)
{
    for (size_t i = 0; i < kept->n; i++) {
        const span *k = &kept->v[i];
        if (k->is_match || k->end == k->beg)
            continue;
        size_t from = out->len;
        if (piece_append(out, s + k->beg, k->end - k->beg) ||
            close_piece(out, from, at_start && k->beg == 0))
            return BPE_NO_MEMORY;
    }
    return BPE_OK;
}

/* every character of s[len] for which is_match holds is a one-character match */
static int char_spans(const char *s, size_t len, const pre_step *st, span_list *out)
{
    out->n = 0;
    size_t last = 0, i = 0;
    while (i < len) {
        size_t at = i;
        uint32_t cp = utf8_next((const unsigned char *)s, &i);
        int hit = st->kind == PRE_DIGITS ? unicode_is_numeric(cp) : cp == st->repl_cp;
        if (!hit)
            continue;
        if ((last < at && span_push(out, last, at, 0)) || span_push(out, at, i, 1))
            return -1;
        last = i;
    }
    return last < len && span_push(out, last, len, 0) ? -1 : 0;
}

/* s[len] cut by spans and behavior into out */
static int split_piece(const span_list *spans, split_behavior behavior, int invert, const char *s,
                       int at_start, step_work *w, piece_list *out)
{
    if (split_by_behavior(spans, behavior, invert, &w->kept))
        return BPE_NO_MEMORY;
    return emit_kept(&w->kept, s, at_start, out);
}

/* Metaspace: spaces become the replacement, which is prepended by the scheme, then (split)
 * every replacement starts a piece */
static int metaspace(const pre_step *st, const char *s, size_t len, int at_start, step_work *w,
                     piece_list *out)
{
    piece_list tmp = {0};
    int rc = BPE_OK;
    for (size_t i = 0; i < len && !rc; i++)
        rc = s[i] == ' ' ? piece_append(&tmp, st->repl, st->repl_len) : piece_append(&tmp, s + i, 1);
    int starts = tmp.len >= st->repl_len && memcmp(tmp.buf, st->repl, st->repl_len) == 0;
    int prepend = !starts && (st->prepend == PREPEND_ALWAYS ||
                              (st->prepend == PREPEND_FIRST && at_start));
    if (!rc && prepend && reserve(&tmp, st->repl_len))
        rc = -1;
    else if (!rc && prepend) {
        memmove(tmp.buf + st->repl_len, tmp.buf, tmp.len);
        memcpy(tmp.buf, st->repl, st->repl_len);
        tmp.len += st->repl_len;
    }
    if (!rc && !st->split) {
        size_t from = out->len;
        rc = piece_append(out, tmp.buf, tmp.len) || close_piece(out, from, at_start);
    } else if (!rc) {
        rc = char_spans(tmp.buf, tmp.len, st, &w->spans) ||
             split_piece(&w->spans, SPLIT_MERGED_WITH_NEXT, 0, tmp.buf, at_start, w, out);
    }
    free(tmp.buf);
    return rc ? BPE_NO_MEMORY : BPE_OK;
}

/* ByteLevel: a space before the piece when asked, then GPT-2's split when use_regex (the byte
 * mapping itself is the model's: tokenizer_bpe.c) */
static int byte_level(const pre_step *st, const char *s, size_t len, int at_start, step_work *w,
                      piece_list *out)
{
    char *tmp = NULL;
    if (st->add_prefix_space && s[0] != ' ') {
        if (!(tmp = malloc(len + 1)))
            return BPE_NO_MEMORY;
        tmp[0] = ' ';
        memcpy(tmp + 1, s, len);
        s = tmp;
        len++;
    }
    int rc;
    if (!st->re) {
        size_t from = out->len;
        rc = piece_append(out, s, len) || close_piece(out, from, at_start) ? BPE_NO_MEMORY : BPE_OK;
    } else if (!(rc = regex_spans(st->re, s, len, w, &w->spans))) {
        rc = split_piece(&w->spans, SPLIT_ISOLATED, 0, s, at_start, w, out);
    }
    free(tmp);
    return rc;
}

static int run_step(const pre_step *st, const char *s, size_t len, int at_start, step_work *w,
                    piece_list *out)
{
    int rc;
    switch (st->kind) {
    case PRE_SPLIT:
        if ((rc = regex_spans(st->re, s, len, w, &w->spans)))
            return rc;
        return split_piece(&w->spans, st->behavior, st->invert, s, at_start, w, out);
    case PRE_DIGITS:
        if (char_spans(s, len, st, &w->spans))
            return BPE_NO_MEMORY;
        return split_piece(&w->spans, st->individual_digits ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS,
                           0, s, at_start, w, out);
    case PRE_METASPACE:
        return metaspace(st, s, len, at_start, w, out);
    case PRE_BYTE_LEVEL:
        return byte_level(st, s, len, at_start, w, out);
    }
    return BPE_OK;
}

int pretok_run(const pre_step *s, int n, const char *text, size_t len, int at_start,
               step_work *w)
{
    w->a.len = w->a.n = 0;
    if (piece_append(&w->a, text, len) || close_piece(&w->a, 0, at_start))
        return BPE_NO_MEMORY;
    for (int k = 0; k < n; k++) {
        w->b.len = w->b.n = 0;
        for (size_t i = 0; i < w->a.n; i++) {
            const piece *p = &w->a.p[i];
            int rc = run_step(&s[k], w->a.buf + p->beg, p->end - p->beg, p->at_start, w, &w->b);
            if (rc) {
                w->fail_offset += p->beg;
                return rc;
            }
        }
        piece_list t = w->a;
        w->a = w->b;
        w->b = t;
    }
    return BPE_OK;
}

void pre_step_free(pre_step *s)
{
    if (s->re)
        onig_free(s->re);
    s->re = NULL;
}
