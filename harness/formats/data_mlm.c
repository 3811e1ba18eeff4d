/* harness/formats/data_mlm.c: masked-LM data: lines tokenized with the template into padded examples or
 * grouped blocks; the batch of a step masked with counter-based (Philox) draws. */
#include "data_mlm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/input_file.h"
#include "philox.h"
#include "data.h"
#include "tokenizer.h"
#include "util/util.h"

/* rows grow by doubling */
static int reserve_rows(mlm_dataset *ds, size_t rows, size_t *cap)
{
    if (rows <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 64, T = (size_t)ds->seq_len;
    while (n < rows)
        n *= 2;
    int32_t *ids = realloc(ds->ids, n * T * sizeof *ids);
    if (ids)
        ds->ids = ids;
    uint8_t *sp = ids ? realloc(ds->special, n * T) : NULL;
    if (sp)
        ds->special = sp;
    uint8_t *at = sp ? realloc(ds->attention, n * T) : NULL;
    if (!at)
        return -1;
    ds->attention = at;
    *cap = n;
    return 0;
}

/* 1 when code point c is whitespace to Python's str.isspace(), which run_mlm.py's line filter
 * uses: ASCII's, the separators U+001C..U+001F, and Unicode's spaces and line breaks */
static int python_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* 1 when the line is empty or whitespace only (UTF-8; a byte that is not valid UTF-8 is text) */
static int blank(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t c = p[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 0;
        if (!len || i + len > n)
            return 0;
        if (len > 1)
            c &= len == 2 ? 0x1f : 0x0f;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
            c = (c << 6) | (p[i + k] & 0x3f);
        }
        if (!python_space(c))
            return 0;
        i += len;
    }
    return 1;
}

/* one line's ids as a padded row; special marks the template and the padding */
static int add_example(mlm_dataset *ds, const id_list *ids, int before, int after, int32_t pad,
                       size_t *cap)
{
    size_t T = (size_t)ds->seq_len, n = ids->n < T ? ids->n : T;
    if (reserve_rows(ds, ds->n_rows + 1, cap))
        return -1;
    int32_t *row = ds->ids + ds->n_rows * T;
    uint8_t *sp = ds->special + ds->n_rows * T, *at = ds->attention + ds->n_rows * T;
    memcpy(row, ids->ids, n * sizeof *row);
    for (size_t t = 0; t < T; t++) {
        sp[t] = t >= n || (int)t < before || t >= n - (size_t)after;
        at[t] = t < n;
        if (t >= n)
            row[t] = pad;
    }
    for (int k = 0; k < after && ids->n > T; k++) /* truncated: the template's end kept */
        row[n - (size_t)after + (size_t)k] = ids->ids[ids->n - (size_t)after + (size_t)k];
    ds->n_rows++;
    return 0;
}

/* grouped: the stream of all lines' ids (and their template marks) cut into full rows */
static int add_stream(mlm_dataset *ds, const id_list *all, const uint8_t *marks, size_t *cap)
{
    size_t T = (size_t)ds->seq_len, rows = all->n / T;
    if (rows == 0) /* too short for one row: the caller says so; no copies from NULL */
        return 0;
    if (reserve_rows(ds, rows, cap))
        return -1;
    memcpy(ds->ids, all->ids, rows * T * sizeof *ds->ids);
    memcpy(ds->special, marks, rows * T);
    memset(ds->attention, 1, rows * T);
    ds->n_rows = rows;
    return 0;
}

/* appends the template marks of the ids just added (from `from` to all->n) to *marks */
static int mark_line(uint8_t **marks, size_t *mcap, size_t from, size_t to, int before, int after)
{
    if (to > *mcap) {
        size_t n = *mcap ? *mcap : 4096;
        while (n < to)
            n *= 2;
        uint8_t *m = realloc(*marks, n);
        if (!m)
            return -1;
        *marks = m;
        *mcap = n;
    }
    for (size_t i = from; i < to; i++)
        (*marks)[i] = i < from + (size_t)before || i >= to - (size_t)after;
    return 0;
}

/* every line of text[len] through the tokenizer into ds (line by line or grouped) */
static int tokenize_lines(mlm_dataset *ds, const char *path, struct tokenizer *t, const char *text,
                          size_t len, const mlm_options *o, int32_t pad)
{
    int before, after, rc = 0;
    tokenizer_template_size(t, &before, &after);
    id_list line = {0}, all = {0};
    uint8_t *marks = NULL;
    size_t cap = 0, mcap = 0, lineno = 0;
    for (size_t at = 0; at < len && !rc; lineno++) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        if (n && text[at + n - 1] == '\r')
            n--;
        char where[4300];
        snprintf(where, sizeof where, "%s:%zu", path, lineno + 1);
        if (o->line_by_line && blank(text + at, n)) {
            at = end + 1;
            continue;
        }
        id_list *dst = o->line_by_line ? &line : &all;
        size_t from = dst->n;
        if ((rc = tokenizer_encode(t, text + at, n, where, dst)))
            break;
        if (o->line_by_line ? add_example(ds, &line, before, after, pad, &cap)
                            : mark_line(&marks, &mcap, from, all.n, before, after))
            rc = -1;
        line.n = 0;
        at = end + 1;
    }
    if (!rc && !o->line_by_line && add_stream(ds, &all, marks, &cap))
        rc = -1;
    if (rc < 0) {
        log_error("%s: out of memory building the MLM examples", path);
        rc = EXIT_FAIL;
    }
    id_list_free(&line);
    id_list_free(&all);
    free(marks);
    return rc;
}

int mlm_dataset_load(const char *path, struct tokenizer *t, const mlm_options *o, mlm_dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    int before, after;
    tokenizer_template_size(t, &before, &after);
    int32_t mask = tokenizer_special_id(t, "mask"), pad = tokenizer_special_id(t, "pad");
    if (mask < 0 || (o->line_by_line && pad < 0)) {
        log_error("%s: masked-LM data needs a tokenizer with [MASK]%s (%s has none)", path,
                  o->line_by_line ? " and [PAD]" : "", tokenizer_name(t));
        return EXIT_USAGE;
    }
    if (o->seq_len <= before + after || !(o->mlm_probability > 0 && o->mlm_probability <= 1)) {
        log_error("%s: seq_len %d must exceed the template's %d tokens and mlm_probability %g "
                  "be in (0, 1]", path, o->seq_len, before + after, o->mlm_probability);
        return EXIT_USAGE;
    }
    ds->seq_len = o->seq_len;
    ds->vocab_size = tokenizer_vocab_size(t);
    ds->mask_id = mask;
    ds->mlm_probability = o->mlm_probability;
    size_t len = 0;
    char why[INPUT_WHY_LEN];
    char *text = input_read(path, INPUT_DATA, &len, why, sizeof why);
    if (!text) {
        log_error("%s: cannot read the data file: %s", path, why);
        return EXIT_USAGE;
    }
    int rc = tokenize_lines(ds, path, t, text, len, o, pad);
    free(text);
    if (!rc && ds->n_rows == 0) {
        log_error("%s: no %s of seq_len %d", path, o->line_by_line ? "non-blank line" : "full block",
                  o->seq_len);
        rc = EXIT_USAGE;
    }
    size_t maskable = 0, all = (size_t)ds->n_rows * (size_t)ds->seq_len;
    for (size_t i = 0; !rc && i < all && !maskable; i++)
        maskable = !ds->special[i] && ds->attention[i];
    if (!rc && !maskable) { /* blank lines only: [CLS] [SEP] rows, every label -100 */
        log_error("%s: no token to mask: the rows hold only the tokenizer's special tokens "
                  "(blank lines?)", path);
        rc = EXIT_USAGE;
    }
    if (rc)
        mlm_dataset_free(ds);
    return rc;
}

void mlm_dataset_free(mlm_dataset *ds)
{
    free(ds->ids);
    free(ds->special);
    free(ds->attention);
    memset(ds, 0, sizeof *ds);
}

void mlm_mask_row(const mlm_dataset *ds, uint64_t seed, int step, uint32_t j, int32_t *ids,
                  const uint8_t *special, int32_t *labels)
{
    philox_u64 chosen = philox_dropout_threshold(ds->mlm_probability);
    philox_u64 to_mask = philox_dropout_threshold(0.8), to_random = philox_dropout_threshold(0.5);
    for (int t = 0; t < ds->seq_len; t++) {
        labels[t] = -100;
        if (special[t])
            continue;
        philox_ctr c = {{(philox_u32)t, j, MLM_PHILOX_SITE, (philox_u32)step}};
        c = philox4x32_10(c, (philox_u32)seed, (philox_u32)(seed >> 32));
        if ((philox_u64)c.v[0] >= chosen)
            continue;
        labels[t] = ids[t];
        if ((philox_u64)c.v[1] < to_mask)
            ids[t] = ds->mask_id;
        else if ((philox_u64)c.v[2] < to_random)
            ids[t] = (int32_t)(((uint64_t)c.v[3] * (uint64_t)ds->vocab_size) >> 32);
    }
}

void mlm_batch(const mlm_dataset *ds, uint64_t seed, int step, int batch, mlm_place p,
               int32_t *input_ids, int32_t *token_type_ids, int32_t *attention_mask,
               int32_t *labels)
{
    size_t T = (size_t)ds->seq_len;
    uint64_t global_batch = (uint64_t)batch * (uint64_t)p.world * (uint64_t)p.accum;
    for (int i = 0; i < batch; i++) {
        size_t k = (size_t)step * (size_t)batch + (size_t)i;
        size_t row = sampler_index(k, p.rank, p.world, ds->n_rows);
        uint64_t g = (uint64_t)p.rank + (uint64_t)k * (uint64_t)p.world; /* the global sample */
        int32_t *ids = input_ids + (size_t)i * T;
        memcpy(ids, ds->ids + row * T, T * sizeof *ids);
        for (size_t t = 0; t < T; t++) {
            token_type_ids[(size_t)i * T + t] = 0;
            attention_mask[(size_t)i * T + t] = ds->attention[row * T + t];
        }
        mlm_mask_row(ds, seed, (int)(g / global_batch), (uint32_t)(g % global_batch), ids,
                     ds->special + row * T, labels + (size_t)i * T);
    }
}
