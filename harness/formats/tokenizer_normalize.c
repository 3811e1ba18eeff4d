/* harness/formats/tokenizer_normalize.c: the normalizers of a BPE tokenizer.json (NFC, NFKC, NFD, NFKD
 * through utf8proc; Prepend; Replace with a string or a regex) run as the tokenizers library runs them. */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer_bpe_internal.h"
#include "tokenizer_steps.h"

static int utf8proc_form(norm_kind kind, const char *in, size_t len, utf8proc_uint8_t **res,
                         utf8proc_ssize_t *n)
{
    int opts = UTF8PROC_STABLE;
    opts |= kind == NORM_NFC || kind == NORM_NFKC ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
    if (kind == NORM_NFKC || kind == NORM_NFKD)
        opts |= UTF8PROC_COMPAT;
    *n = utf8proc_map((const utf8proc_uint8_t *)in, (utf8proc_ssize_t)len, res,
                      (utf8proc_option_t)opts);
    if (*n >= 0)
        return BPE_OK;
    return *n == UTF8PROC_ERROR_NOMEM ? BPE_NO_MEMORY : BPE_REGEX_ERROR;
}

/* cp is one the library's tables leave alone in this form (unicode_norm_compat.c) */
static int kept_by_library(norm_kind kind, uint32_t cp)
{
    const norm_compat *c = &norm_compat_kept[kind];
    int lo = 0, hi = c->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < c->ranges[mid][0])
            hi = mid - 1;
        else if (cp > c->ranges[mid][1])
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

/* the form of in[len] onto out, the code points the library keeps passed through as they are
 * and the runs between them normalized */
static int unicode_form(norm_kind kind, const char *in, size_t len, char **out, size_t *out_len)
{
    piece_list acc = {0};
    int rc = BPE_OK;
    size_t run = 0, i = 0;
    while (!rc) {
        size_t at = i;
        int kept = 0;
        if (i < len && !(kept = kept_by_library(kind, utf8_next((const unsigned char *)in, &i))))
            continue;
        /* [at, i) is a kept code point, or at is the end */
        utf8proc_uint8_t *res = NULL;
        utf8proc_ssize_t n = 0;
        if (at > run && (rc = utf8proc_form(kind, in + run, at - run, &res, &n)))
            break;
        if (piece_append(&acc, (const char *)res, (size_t)n) || piece_append(&acc, in + at, i - at))
            rc = BPE_NO_MEMORY;
        free(res);
        run = i;
        if (at == len)
            break;
    }
    if (!rc && piece_append(&acc, "", 1))
        rc = BPE_NO_MEMORY;
    if (rc) {
        free(acc.buf);
        return rc;
    }
    *out = acc.buf;
    *out_len = acc.len - 1;
    return BPE_OK;
}

static int prepend(const norm_step *s, const char *in, size_t len, char **out, size_t *out_len)
{
    size_t extra = len ? s->text_len : 0; /* an empty text stays empty */
    char *r = malloc(len + extra + 1);
    if (!r)
        return BPE_NO_MEMORY;
    memcpy(r, s->text, extra);
    memcpy(r + extra, in, len);
    r[len + extra] = 0;
    *out = r;
    *out_len = len + extra;
    return BPE_OK;
}

/* every match of the pattern (found as the library's find_matches finds them) becomes the
 * content */
static int replace(const norm_step *s, const char *in, size_t len, step_work *w, char **out,
                   size_t *out_len)
{
    int rc = regex_spans(s->re, in, len, w, &w->spans);
    if (rc)
        return rc;
    size_t n = 0;
    for (size_t i = 0; i < w->spans.n; i++) {
        const span *p = &w->spans.v[i];
        n += p->is_match ? s->text_len : p->end - p->beg;
    }
    char *r = malloc(n + 1);
    if (!r)
        return BPE_NO_MEMORY;
    size_t at = 0;
    for (size_t i = 0; i < w->spans.n; i++) {
        const span *p = &w->spans.v[i];
        const char *src = p->is_match ? s->text : in + p->beg;
        size_t k = p->is_match ? s->text_len : p->end - p->beg;
        memcpy(r + at, src, k);
        at += k;
    }
    r[at] = 0;
    *out = r;
    *out_len = at;
    return BPE_OK;
}

static int run_one(const norm_step *s, const char *in, size_t len, step_work *w, char **out,
                   size_t *out_len)
{
    switch (s->kind) {
    case NORM_PREPEND:
        return prepend(s, in, len, out, out_len);
    case NORM_REPLACE:
        return replace(s, in, len, w, out, out_len);
    default:
        return unicode_form(s->kind, in, len, out, out_len);
    }
}

int norm_run(const norm_step *s, int n, const char *text, size_t len, step_work *w, char **out,
             size_t *out_len)
{
    char *cur = malloc(len + 1);
    if (!cur)
        return BPE_NO_MEMORY;
    memcpy(cur, text, len);
    cur[len] = 0;
    size_t cur_len = len;
    for (int k = 0; k < n; k++) {
        char *next = NULL;
        size_t next_len = 0;
        int rc = run_one(&s[k], cur, cur_len, w, &next, &next_len);
        free(cur);
        if (rc)
            return rc;
        cur = next;
        cur_len = next_len;
    }
    *out = cur;
    *out_len = cur_len;
    return BPE_OK;
}

void norm_step_free(norm_step *s)
{
    free(s->text);
    if (s->re)
        onig_free(s->re);
    memset(s, 0, sizeof *s);
}
