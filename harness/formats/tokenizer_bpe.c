/* harness/formats/tokenizer_bpe.c: byte-level BPE encoding as the tokenizers library does it: added
 * tokens split out (leftmost-longest), the Oniguruma pre-tokenizer split, byte-to-unicode
 * mapping, and merges applied lowest rank first, then leftmost (its Word::merge_all). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_bpe_internal.h"
#include "util/util.h"

const char *const GPT2_SPLIT_PATTERN =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ---- hash maps --------------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static int strmap_grow(strmap *m)
{
    strmap g = {0};
    g.cap = m->cap ? m->cap * 2 : 1024;
    g.keys = calloc(g.cap, sizeof *g.keys);
    g.lens = calloc(g.cap, sizeof *g.lens);
    g.vals = calloc(g.cap, sizeof *g.vals);
    if (!g.keys || !g.lens || !g.vals) {
        strmap_free(&g);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = hash_bytes(m->keys[i], m->lens[i]) & (g.cap - 1);
            while (g.keys[j])
                j = (j + 1) & (g.cap - 1);
            g.keys[j] = m->keys[i];
            g.lens[j] = m->lens[i];
            g.vals[j] = m->vals[i];
        }
    g.n = m->n;
    free(m->keys);
    free(m->lens);
    free(m->vals);
    *m = g;
    return 0;
}

int strmap_put(strmap *m, const char *key, size_t len, int32_t val)
{
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m))
        return -1;
    size_t j = hash_bytes(key, len) & (m->cap - 1);
    for (; m->keys[j]; j = (j + 1) & (m->cap - 1))
        if (m->lens[j] == len && memcmp(m->keys[j], key, len) == 0) {
            m->vals[j] = val;
            return 0;
        }
    if (!(m->keys[j] = malloc(len + 1)))
        return -1;
    memcpy(m->keys[j], key, len);
    m->keys[j][len] = 0;
    m->lens[j] = len;
    m->vals[j] = val;
    m->n++;
    return 0;
}

int32_t strmap_get(const strmap *m, const char *key, size_t len)
{
    if (!m->cap)
        return -1;
    for (size_t j = hash_bytes(key, len) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
        if (m->lens[j] == len && memcmp(m->keys[j], key, len) == 0)
            return m->vals[j];
    return -1;
}

void strmap_free(strmap *m)
{
    for (size_t i = 0; m->keys && i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static int pairmap_grow(pairmap *m)
{
    pairmap g = {0};
    g.cap = m->cap ? m->cap * 2 : 1024;
    g.keys = calloc(g.cap, sizeof *g.keys);
    g.ranks = calloc(g.cap, sizeof *g.ranks);
    g.vals = calloc(g.cap, sizeof *g.vals);
    if (!g.keys || !g.ranks || !g.vals) {
        pairmap_free(&g);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = mix64(m->keys[i]) & (g.cap - 1);
            while (g.keys[j])
                j = (j + 1) & (g.cap - 1);
            g.keys[j] = m->keys[i];
            g.ranks[j] = m->ranks[i];
            g.vals[j] = m->vals[i];
        }
    g.n = m->n;
    pairmap_free(m);
    *m = g;
    return 0;
}

static uint64_t pair_key(int32_t a, int32_t b)
{
    return (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
}

/* a later duplicate replaces an earlier one, as collecting the merges into a HashMap does */
int pairmap_put(pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t val)
{
    if ((m->n + 1) * 2 > m->cap && pairmap_grow(m))
        return -1;
    uint64_t k = pair_key(a, b);
    size_t j = mix64(k) & (m->cap - 1);
    while (m->keys[j] && m->keys[j] != k)
        j = (j + 1) & (m->cap - 1);
    m->n += !m->keys[j];
    m->keys[j] = k;
    m->ranks[j] = rank;
    m->vals[j] = val;
    return 0;
}

int pairmap_get(const pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *val)
{
    if (!m->cap)
        return 0;
    uint64_t k = pair_key(a, b);
    for (size_t j = mix64(k) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
        if (m->keys[j] == k) {
            *rank = m->ranks[j];
            *val = m->vals[j];
            return 1;
        }
    return 0;
}

void pairmap_free(pairmap *m)
{
    free(m->keys);
    free(m->ranks);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- GPT-2's bytes_to_unicode ------------------------------------------------------------ */

static int printable_byte(unsigned b)
{
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* the code point of byte b: itself when printable, else 256 + how many unprintable bytes
 * come before it */
static uint32_t byte_level_cp(unsigned b)
{
    static uint16_t table[256];
    if (!table['!']) {
        uint32_t n = 0;
        for (unsigned x = 0; x < 256; x++)
            table[x] = (uint16_t)(printable_byte(x) ? x : 256 + n++);
    }
    return table[b];
}

int byte_level_char(unsigned b, char out[3])
{
    uint32_t cp = byte_level_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int byte_level_byte(uint32_t cp)
{
    static int16_t table[512];
    static int built;
    if (!built) {
        for (int i = 0; i < 512; i++)
            table[i] = -1;
        for (unsigned b = 0; b < 256; b++)
            table[byte_level_cp(b)] = (int16_t)b;
        built = 1;
    }
    return cp < 512 ? table[cp] : -1;
}

int bpe_finish(bpe *b, const char *where)
{
    for (unsigned x = 0; x < 256; x++) {
        char c[3];
        int n = byte_level_char(x, c);
        b->byte_id[x] = strmap_get(&b->vocab, c, (size_t)n);
    }
    if (bpe_build_added(b)) {
        log_error("%s: out of memory indexing %d added tokens", where, b->n_added);
        return EXIT_FAIL;
    }
    return 0;
}

/* ---- merges: the tokenizers library's Word::merge_all -------------------------------------- */

typedef struct {
    int32_t id;
    int prev, next; /* -1 at the ends */
    int len;        /* 0 once merged into its left neighbour */
} symbol;

typedef struct {
    uint32_t rank;
    int pos;
    int32_t new_id;
} merge_cand;

/* min-heap on (rank, pos) */
static int cand_less(const merge_cand *a, const merge_cand *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

typedef struct {
    merge_cand *h;
    int n, cap;
} heap;

static int heap_push(heap *q, merge_cand c)
{
    if (q->n == q->cap) {
        int cap = q->cap ? q->cap * 2 : 64;
        merge_cand *h = realloc(q->h, (size_t)cap * sizeof *h);
        if (!h)
            return -1;
        q->h = h;
        q->cap = cap;
    }
    int i = q->n++;
    for (; i > 0 && cand_less(&c, &q->h[(i - 1) / 2]); i = (i - 1) / 2)
        q->h[i] = q->h[(i - 1) / 2];
    q->h[i] = c;
    return 0;
}

static merge_cand heap_pop(heap *q)
{
    merge_cand top = q->h[0], last = q->h[--q->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && cand_less(&q->h[c + 1], &q->h[c]))
            c++;
        if (!cand_less(&q->h[c], &last))
            break;
        q->h[i] = q->h[c];
        i = c;
    }
    if (q->n)
        q->h[i] = last;
    return top;
}

static int push_pair(const bpe *b, heap *q, const symbol *s, int pos)
{
    merge_cand c = {0, pos, 0};
    if (s[pos].next < 0 || !pairmap_get(&b->merges, s[pos].id, s[s[pos].next].id, &c.rank, &c.new_id))
        return 0;
    return heap_push(q, c);
}

static int merge_all(const bpe *b, symbol *s, int n, heap *q)
{
    q->n = 0;
    for (int i = 0; i + 1 < n; i++)
        if (push_pair(b, q, s, i))
            return -1;
    while (q->n) {
        merge_cand top = heap_pop(q);
        symbol *cur = &s[top.pos];
        if (cur->len == 0 || cur->next < 0)
            continue;
        symbol *right = &s[cur->next];
        uint32_t rank;
        int32_t id;
        if (!pairmap_get(&b->merges, cur->id, right->id, &rank, &id) || id != top.new_id)
            continue; /* an expired entry */
        cur->id = top.new_id;
        cur->len += right->len;
        cur->next = right->next;
        right->len = 0;
        if (cur->next >= 0)
            s[cur->next].prev = top.pos;
        if ((cur->prev >= 0 && push_pair(b, q, s, cur->prev)) || push_pair(b, q, s, top.pos))
            return -1;
    }
    return 0;
}

static int list_push(id_list *l, int32_t id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        int32_t *ids = realloc(l->ids, cap * sizeof *ids);
        if (!ids)
            return -1;
        l->ids = ids;
        l->cap = cap;
    }
    l->ids[l->n++] = id;
    return 0;
}

/* scratch reused across words */
typedef struct {
    symbol *s;
    int cap;
    heap q;
    char *mapped;
    size_t mapped_cap;
    OnigMatchParam *mp; /* the backtracking limits */
    size_t seg_at;      /* where the segment being split starts in the text */
    size_t prefix;      /* 1 while splitting it behind an added prefix space */
    size_t fail_at;     /* where the search that failed began in the text */
} work;

static int word_direct(const bpe *b, const unsigned char *w, size_t len, work *k, int32_t *id)
{
    if (k->mapped_cap < 2 * len + 1) {
        char *m = realloc(k->mapped, 2 * len + 1);
        if (!m)
            return -1;
        k->mapped = m;
        k->mapped_cap = 2 * len + 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += (size_t)byte_level_char(w[i], k->mapped + n);
    *id = strmap_get(&b->vocab, k->mapped, n);
    return 0;
}

/* one pre-tokenized piece: bytes to symbols, merges, ids out */
static int encode_word(const bpe *b, const unsigned char *w, size_t len, work *k, id_list *out)
{
    int32_t direct = -1;
    if (b->ignore_merges && word_direct(b, w, len, k, &direct))
        return -1;
    if (direct >= 0)
        return list_push(out, direct);
    if ((size_t)k->cap < len) {
        symbol *s = realloc(k->s, len * sizeof *s);
        if (!s)
            return -1;
        k->s = s;
        k->cap = (int)len;
    }
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        int32_t id = b->byte_id[w[i]];
        if (id < 0 && b->unk_id >= 0 && b->fuse_unk && n && k->s[n - 1].id == b->unk_id)
            continue;
        if (id < 0 && (id = b->unk_id) < 0)
            continue; /* no unk token: the character is dropped, as the tokenizers library does */
        k->s[n] = (symbol){id, n - 1, -1, 1};
        if (n)
            k->s[n - 1].next = n;
        n++;
    }
    if (merge_all(b, k->s, n, &k->q))
        return -1;
    for (int i = 0; i < n; i++)
        if (k->s[i].len && list_push(out, k->s[i].id))
            return -1;
    return 0;
}

/* ---- pre-tokenization ---------------------------------------------------------------------- */

static size_t utf8_step(const UChar *s, size_t at, size_t len)
{
    size_t step = 1;
    while (at + step < len && (s[at + step] & 0xC0) == 0x80)
        step++;
    return step;
}

/* onig_search from str[pos] under the backtracking limits: the search's own limit grows with
 * the text it may search, so that the work stays linear in the text */
static int search(const bpe *b, const UChar *str, size_t len, size_t pos, work *k, OnigRegion *r)
{
    unsigned long left = (unsigned long)(len - pos), per_byte = BPE_RETRY_LIMIT_PER_BYTE;
    unsigned long limit = left > BPE_RETRY_LIMIT_IN_MATCH / per_byte ? left * per_byte
                                                                    : BPE_RETRY_LIMIT_IN_MATCH;
    onig_set_retry_limit_in_search_of_match_param(k->mp, limit);
    return onig_search_with_param(b->re, str, str + len, str + pos, str + len, r,
                                  ONIG_OPTION_NONE, k->mp);
}

static int search_failure(int onig_code)
{
    if (onig_code == ONIGERR_RETRY_LIMIT_IN_MATCH_OVER ||
        onig_code == ONIGERR_RETRY_LIMIT_IN_SEARCH_OVER)
        return BPE_REGEX_LIMIT;
    return onig_code == ONIGERR_MEMORY ? BPE_NO_MEMORY : BPE_REGEX_ERROR;
}

/* Isolated split: every match is a piece and so is every gap between matches; an empty match
 * splits nothing */
static int split_and_encode(const bpe *b, const char *seg, size_t len, work *k, id_list *out)
{
    const UChar *str = (const UChar *)seg;
    if (!b->re)
        return len ? encode_word(b, str, len, k, out) : 0;
    OnigRegion *r = onig_region_new();
    int rc = r ? 0 : BPE_NO_MEMORY;
    size_t gap = 0, pos = 0;
    while (!rc && pos < len) {
        int at = search(b, str, len, pos, k, r);
        if (at == ONIG_MISMATCH)
            break;
        if (at < 0) {
            rc = search_failure(at);
            k->fail_at = k->seg_at + (pos >= k->prefix ? pos - k->prefix : 0);
            break;
        }
        size_t mb = (size_t)r->beg[0], me = (size_t)r->end[0];
        if (me == mb) {
            pos = mb + utf8_step(str, mb, len);
            continue;
        }
        if (mb > gap)
            rc = encode_word(b, str + gap, mb - gap, k, out);
        if (!rc)
            rc = encode_word(b, str + mb, me - mb, k, out);
        gap = pos = me;
    }
    if (!rc && gap < len)
        rc = encode_word(b, str + gap, len - gap, k, out);
    if (r)
        onig_region_free(r, 1);
    return rc;
}

/* the text between added tokens: the ByteLevel prefix space, then the split */
static int encode_segment(const bpe *b, const char *seg, size_t len, work *k, id_list *out)
{
    if (!len)
        return 0;
    if (!b->add_prefix_space || seg[0] == ' ')
        return split_and_encode(b, seg, len, k, out);
    char *tmp = malloc(len + 1);
    if (!tmp)
        return -1;
    tmp[0] = ' ';
    memcpy(tmp + 1, seg, len);
    k->prefix = 1;
    int rc = split_and_encode(b, tmp, len + 1, k, out);
    k->prefix = 0;
    free(tmp);
    return rc;
}

static void work_free(work *k)
{
    free(k->s);
    free(k->q.h);
    free(k->mapped);
    if (k->mp)
        onig_free_match_param(k->mp);
}

/* the match parameters with the backtracking limits; 0, or -1 out of memory */
static int work_init(work *k)
{
    memset(k, 0, sizeof *k);
    if (!(k->mp = onig_new_match_param()))
        return -1;
    onig_initialize_match_param(k->mp);
    onig_set_retry_limit_in_match_of_match_param(k->mp, BPE_RETRY_LIMIT_IN_MATCH);
    return 0;
}

int bpe_encode(const bpe *b, const char *text, size_t len, id_list *out, size_t *fail_at)
{
    work k;
    if (work_init(&k)) {
        work_free(&k);
        return BPE_NO_MEMORY;
    }
    int rc = 0;
    size_t seg = 0;
    for (size_t pos = 0; pos < len && !rc; pos++) {
        int a = b->n_added ? bpe_added_at(b, text, len, pos) : -1;
        if (a < 0)
            continue;
        k.seg_at = seg;
        rc = encode_segment(b, text + seg, pos - seg, &k, out);
        if (!rc && list_push(out, b->added[a].id))
            rc = BPE_NO_MEMORY;
        seg = pos + b->added[a].len;
        pos = seg - 1;
    }
    k.seg_at = seg;
    if (!rc)
        rc = encode_segment(b, text + seg, len - seg, &k, out);
    if (rc && fail_at)
        *fail_at = k.fail_at;
    work_free(&k);
    return rc;
}

void bpe_free(bpe *b)
{
    strmap_free(&b->vocab);
    for (int i = 0; i < b->n_tok; i++)
        free(b->tok[i]);
    free(b->tok);
    free(b->tok_len);
    pairmap_free(&b->merges);
    bpe_free_added(b);
    for (int i = 0; i < b->n_added; i++)
        free(b->added[i].content);
    free(b->added);
    if (b->re)
        onig_free(b->re);
    memset(b, 0, sizeof *b);
}

int bpe_compile_regex(bpe *b, const char *pattern, const char *where)
{
    static int inited;
    if (!inited) {
        OnigEncoding enc[] = {ONIG_ENCODING_UTF8};
        onig_initialize(enc, 1);
        inited = 1;
    }
    OnigErrorInfo info;
    const UChar *p = (const UChar *)pattern;
    int r = onig_new(&b->re, p, p + strlen(pattern), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                     ONIG_SYNTAX_DEFAULT, &info);
    if (r != ONIG_NORMAL) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &info);
        log_error("%s: the pre-tokenizer pattern does not compile: %s", where, (char *)msg);
        b->re = NULL;
        return EXIT_USAGE;
    }
    return 0;
}
