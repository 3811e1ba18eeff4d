/* harness/formats/tokenizer_wordpiece.c: encoding with BERT's WordPiece tokenizer: added tokens split out,
 * BertNormalizer, BertPreTokenizer, greedy longest-match-first WordPiece, the [CLS]/[SEP] template. */
#include "tokenizer_wordpiece.h"

#include <stdlib.h>
#include <string.h>

#include "unicode_bert.h"

static int push(id_list *out, int32_t id)
{
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 1024;
        int32_t *ids = realloc(out->ids, cap * sizeof *ids);
        if (!ids)
            return -1;
        out->ids = ids;
        out->cap = cap;
    }
    out->ids[out->n++] = id;
    return 0;
}

/* decodes the UTF-8 code point at s[*i] (the text is valid UTF-8: tokenizer_encode checked) */
static uint32_t next_cp(const unsigned char *s, size_t *i)
{
    unsigned c = s[*i];
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; k++)
        cp = (cp << 6) | (s[*i + k] & 0x3F);
    *i += n;
    return cp;
}

static size_t put_utf8(unsigned char *o, uint32_t cp)
{
    if (cp < 0x80)
        return o[0] = (unsigned char)cp, 1;
    if (cp < 0x800)
        return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return o[0] = (unsigned char)(0xE0 | cp >> 12),
               o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)),
               o[2] = (unsigned char)(0x80 | (cp & 0x3F)), 3;
    return o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F)),
           o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (unsigned char)(0x80 | (cp & 0x3F)), 4;
}

/* one word (code points, no whitespace, no punctuation but itself): greedy longest match first,
 * the prefix on every piece but the first; [UNK] for the whole word when a piece has no match
 * or the word is longer than max_chars. buf holds prefix_len spare bytes, then the word's UTF-8;
 * a piece after the first is looked up with the prefix written over the bytes before it (those
 * of pieces already taken). */
static int encode_word(const wordpiece *w, const uint32_t *cps, size_t n, id_list *out)
{
    if (n > w->max_chars)
        return push(out, w->unk_id);
    unsigned char *buf = malloc(w->prefix_len + 4 * n + 1);
    size_t *at = malloc((n + 1) * sizeof *at);
    if (!buf || !at) {
        free(buf);
        free(at);
        return -1;
    }
    unsigned char *bytes = buf + w->prefix_len;
    at[0] = 0;
    for (size_t i = 0; i < n; i++)
        at[i + 1] = at[i] + put_utf8(bytes + at[i], cps[i]);
    size_t mark = out->n;
    int rc = 0;
    for (size_t start = 0; !rc && start < n;) {
        int32_t id = -1;
        size_t end = n + 1;
        const unsigned char *s = bytes + at[start];
        size_t extra = 0;
        if (start) {
            s -= w->prefix_len;
            extra = w->prefix_len;
            memcpy((unsigned char *)s, w->prefix, w->prefix_len);
        }
        while (id < 0 && --end > start)
            id = strmap_get(&w->v.vocab, (const char *)s, at[end] - at[start] + extra);
        if (id < 0) {
            out->n = mark;
            rc = push(out, w->unk_id);
            break;
        }
        rc = push(out, id);
        start = end;
    }
    free(buf);
    free(at);
    return rc;
}

/* BertPreTokenizer over normalized code points: words split at whitespace (dropped) and at each
 * punctuation character (a word of its own) */
static int split_words(const wordpiece *w, const uint32_t *cps, size_t n, id_list *out)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        int space = i < n && ub_is_whitespace(cps[i]), punct = i < n && ub_is_punctuation(cps[i]);
        if (i < n && !space && !punct)
            continue;
        if (i > start && encode_word(w, cps + start, i - start, out))
            return -1;
        if (punct && encode_word(w, cps + i, 1, out))
            return -1;
        start = i + 1;
    }
    return 0;
}

/* BertNormalizer on one piece of text that holds no whitespace but what clean_text drops
 * (normalizing piece by piece equals normalizing the whole: every step maps characters one by
 * one but NFD's reordering, which never crosses a whitespace character), then split_words */
static int normalize_piece(const wordpiece *w, const uint32_t *raw, size_t n, id_list *out)
{
    uint32_t *a = malloc((3 * n + 1) * sizeof *a), *b = NULL;
    size_t m = 0;
    if (!a)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = raw[i];
        if (w->clean_text && (c == 0 || c == 0xFFFD || ub_is_control(c)))
            continue;
        if (w->clean_text && ub_is_whitespace(c))
            c = ' ';
        if (w->chinese_chars && ub_is_cjk(c)) {
            a[m++] = ' ', a[m++] = c, a[m++] = ' ';
            continue;
        }
        a[m++] = c;
    }
    if (w->strip_accents) {
        long k = (b = malloc((4 * m + 1) * sizeof *b)) ? ub_strip_accents(a, m, b, 4 * m + 1) : -1;
        free(a);
        if (k < 0) {
            free(b);
            return -1;
        }
        a = b, m = (size_t)k;
    }
    if (w->lowercase) {
        if (!(b = malloc((2 * m + 1) * sizeof *b))) {
            free(a);
            return -1;
        }
        size_t k = 0;
        for (size_t i = 0; i < m; i++)
            k += (size_t)ub_lower(a[i], b + k);
        free(a);
        a = b, m = k;
    }
    int rc = split_words(w, a, m, out);
    free(a);
    return rc;
}

/* a stretch of text between added tokens: cut into pieces at the whitespace that survives
 * clean_text, each piece normalized and split into words */
static int encode_segment(const wordpiece *w, const char *text, size_t len, id_list *out)
{
    uint32_t *cps = malloc((len + 1) * sizeof *cps);
    if (!cps)
        return -1;
    size_t n = 0, i = 0;
    while (i < len)
        cps[n++] = next_cp((const unsigned char *)text, &i);
    int rc = 0;
    size_t start = 0;
    for (size_t k = 0; k <= n && !rc; k++) {
        int cut = k == n || (ub_is_whitespace(cps[k]) &&
                             !(w->clean_text && ub_is_control(cps[k])));
        if (!cut)
            continue;
        if (k > start)
            rc = normalize_piece(w, cps + start, k - start, out);
        start = k + 1;
    }
    free(cps);
    return rc;
}

int wp_encode(const wordpiece *w, const char *text, size_t len, int add_template, id_list *out)
{
    for (int i = 0; add_template && i < w->n_before; i++)
        if (push(out, w->before[i]))
            return -1;
    size_t seg = 0;
    for (size_t pos = 0; pos < len;) {
        int a = w->v.n_added ? bpe_added_at(&w->v, text, len, pos) : -1;
        if (a < 0) {
            pos++;
            continue;
        }
        if (encode_segment(w, text + seg, pos - seg, out) || push(out, w->v.added[a].id))
            return -1;
        pos += w->v.added[a].len;
        seg = pos;
    }
    if (encode_segment(w, text + seg, len - seg, out))
        return -1;
    for (int i = 0; add_template && i < w->n_after; i++)
        if (push(out, w->after[i]))
            return -1;
    return 0;
}

void wp_free(wordpiece *w)
{
    bpe_free(&w->v);
    memset(w, 0, sizeof *w);
}
