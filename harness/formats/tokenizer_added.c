/* harness/formats/tokenizer_added.c: the added tokens of a BPE tokenizer as a byte trie, so that finding
 * the longest added token at a position costs its length, not the number of added tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_bpe_internal.h"

/* the child of node for byte c, or 0 */
static int32_t child(const bpe *b, int32_t node, unsigned char c)
{
    if (node == 0)
        return b->added_root[c];
    uint32_t unused;
    int32_t next;
    return pairmap_get(&b->added_edges, node, c, &unused, &next) ? next : 0;
}

static int add_child(bpe *b, int32_t node, unsigned char c, int32_t next)
{
    if (node == 0) {
        b->added_root[c] = next;
        return 0;
    }
    return pairmap_put(&b->added_edges, node, c, 0, next);
}

/* one token's path, new nodes as needed; the first token with a given content keeps it, as the
 * linear scan this replaces did (a longer match wins, an equal one does not) */
static int insert(bpe *b, int index)
{
    const added_token *a = &b->added[index];
    int32_t node = 0;
    for (size_t i = 0; i < a->len; i++) {
        unsigned char c = (unsigned char)a->content[i];
        int32_t next = child(b, node, c);
        if (!next) {
            next = b->n_nodes++;
            b->added_end[next] = -1;
            if (add_child(b, node, c, next))
                return -1;
        }
        node = next;
    }
    if (b->added_end[node] < 0)
        b->added_end[node] = index;
    return 0;
}

int bpe_build_added(bpe *b)
{
    size_t nodes = 1;
    for (int i = 0; i < b->n_added; i++)
        nodes += b->added[i].len;
    if (nodes > INT32_MAX)
        return -1;
    b->added_end = malloc(nodes * sizeof *b->added_end);
    if (!b->added_end)
        return -1;
    memset(b->added_root, 0, sizeof b->added_root);
    b->added_end[0] = -1;
    b->n_nodes = 1;
    for (int i = 0; i < b->n_added; i++)
        if (insert(b, i))
            return -1;
    return 0;
}

/* normalized: -1 any added token, else only those whose `normalized` is as given */
static int longest_at(const bpe *b, const char *text, size_t len, size_t pos, int normalized)
{
    int best = -1;
    int32_t node = 0;
    for (size_t i = pos; i < len; i++) {
        if (!(node = child(b, node, (unsigned char)text[i])))
            break;
        int end = b->added_end[node];
        if (end >= 0 && (normalized < 0 || b->added[end].normalized == normalized))
            best = end;
    }
    return best;
}

int bpe_added_at(const bpe *b, const char *text, size_t len, size_t pos)
{
    return longest_at(b, text, len, pos, -1);
}

int bpe_added_at_class(const bpe *b, const char *text, size_t len, size_t pos, int normalized)
{
    return longest_at(b, text, len, pos, normalized ? 1 : 0);
}

void bpe_free_added(bpe *b)
{
    pairmap_free(&b->added_edges);
    free(b->added_end);
    b->added_end = NULL;
    b->n_nodes = 0;
}
