/* harness/formats/tokenizer_bpe.c: the BPE model as the tokenizers library runs it on one pre-tokenized
 * word: GPT-2's byte-to-unicode mapping (byte-level), characters or their <0xXX> byte-fallback
 * tokens or unk, and merges applied lowest rank first, then leftmost (its Word::merge_all). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_bpe_internal.h"
#include "util/util.h"

const char *const GPT2_SPLIT_PATTERN =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

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

int bpe_list_push(id_list *l, int32_t id)
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
struct word_work {
    symbol *s;
    size_t cap;
    heap q;
    char *mapped;
    size_t mapped_len, mapped_cap;
};

word_work *word_work_new(void)
{
    return calloc(1, sizeof(word_work));
}

void word_work_free(word_work *k)
{
    if (!k)
        return;
    free(k->s);
    free(k->q.h);
    free(k->mapped);
    free(k);
}

/* a byte-level word: each byte as GPT-2's character (what the ByteLevel pre-tokenizer does) */
static int map_bytes(const unsigned char *w, size_t len, word_work *k)
{
    if (len > (SIZE_MAX - 1) / 2)
        return -1;
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
    k->mapped_len = n;
    return 0;
}

static void add_symbol(word_work *k, int *n, int32_t id)
{
    k->s[*n] = (symbol){id, *n - 1, -1, 1};
    if (*n)
        k->s[*n - 1].next = *n;
    (*n)++;
}

/* the library's BPE::merge_word before the merges: a symbol per character found in the
 * vocabulary; else its bytes' <0xXX> tokens (byte_fallback); else the unk token (fused with
 * the unk before it when fuse_unk); else the character is dropped */
static int word_symbols(const bpe *b, const char *w, size_t len, word_work *k)
{
    int n = 0;
    int32_t pending_unk = -1;
    for (size_t i = 0; i < len;) {
        size_t at = i;
        utf8_next((const unsigned char *)w, &i);
        int32_t id = strmap_get(&b->vocab, w + at, i - at);
        if (id >= 0) {
            if (pending_unk >= 0)
                add_symbol(k, &n, pending_unk);
            pending_unk = -1;
            add_symbol(k, &n, id);
        } else if (b->byte_fallback) {
            for (size_t j = at; j < i; j++)
                add_symbol(k, &n, b->fallback_id[(unsigned char)w[j]]);
        } else if (b->unk_id >= 0) {
            if (pending_unk >= 0 && !b->fuse_unk)
                add_symbol(k, &n, pending_unk);
            pending_unk = b->unk_id;
        }
    }
    if (pending_unk >= 0)
        add_symbol(k, &n, pending_unk);
    return n;
}

int bpe_encode_word(const bpe *b, const char *piece, size_t len, word_work *k, id_list *out)
{
    const char *w = piece;
    if (b->byte_level) {
        if (map_bytes((const unsigned char *)piece, len, k))
            return BPE_NO_MEMORY;
        w = k->mapped;
        len = k->mapped_len;
    }
    int32_t direct = b->ignore_merges ? strmap_get(&b->vocab, w, len) : -1;
    if (direct >= 0)
        return bpe_list_push(out, direct) ? BPE_NO_MEMORY : BPE_OK;
    if (len > INT_MAX)
        return BPE_NO_MEMORY;
    if (k->cap < len) {
        symbol *s = realloc(k->s, len * sizeof *s);
        if (!s)
            return BPE_NO_MEMORY;
        k->s = s;
        k->cap = len;
    }
    int n = word_symbols(b, w, len, k);
    if (merge_all(b, k->s, n, &k->q))
        return BPE_NO_MEMORY;
    for (int i = 0; i < n; i++)
        if (k->s[i].len && bpe_list_push(out, k->s[i].id))
            return BPE_NO_MEMORY;
    return BPE_OK;
}

void bpe_free(bpe *b)
{
    strmap_free(&b->vocab);
    strmap_free(&b->added_ids);
    for (int i = 0; i < b->n_tok; i++)
        free(b->tok[i]);
    free(b->tok);
    free(b->tok_len);
    pairmap_free(&b->merges);
    bpe_free_added(b);
    for (int i = 0; i < b->n_added; i++)
        free(b->added[i].content);
    free(b->added);
    for (int i = 0; i < b->n_norm; i++)
        norm_step_free(&b->norm[i]);
    free(b->norm);
    for (int i = 0; i < b->n_pre; i++)
        pre_step_free(&b->pre[i]);
    free(b->pre);
    memset(b, 0, sizeof *b);
}

int bpe_compile_regex(OnigRegex *re, const char *pattern, size_t len, const char *where)
{
    static int inited;
    if (!inited) {
        OnigEncoding enc[] = {ONIG_ENCODING_UTF8};
        onig_initialize(enc, 1);
        inited = 1;
    }
    OnigErrorInfo info;
    const UChar *p = (const UChar *)pattern;
    int r = onig_new(re, p, p + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT,
                     &info);
    if (r != ONIG_NORMAL) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &info);
        log_error("%s: the pattern does not compile: %s", where, (char *)msg);
        *re = NULL;
        return EXIT_USAGE;
    }
    return 0;
}
