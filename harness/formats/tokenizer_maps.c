/* harness/formats/tokenizer_maps.c: the hash maps of the BPE tokenizer: string -> id (the vocabulary)
 * and (id, id) -> (rank, id) (the merges, the added-token trie's edges), open addressing. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_bpe_internal.h"

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

