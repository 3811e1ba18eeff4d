/* harness/formats/data_preprocess.c: text or JSON lines into a Megatron .bin/.idx pair: every document
 * tokenized first (so bad input writes nothing), then written with its EOD. */
#include "data_preprocess.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_mmidx.h"
#include "tokenizer.h"
#include "util/output_target.h"
#include "util/util.h"

/* the documents' ids, one after another, and where each ends */
typedef struct {
    id_list ids;
    size_t *ends;
    size_t n, cap;
} doc_list;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* one document's text appended (nothing when it has no ids), with the EOD when asked */
static int add_doc(doc_list *d, tokenizer *t, const char *text, size_t len, const char *where,
                   const preprocess_options *o)
{
    size_t before = d->ids.n;
    int rc = tokenizer_encode(t, text, len, where, &d->ids);
    if (rc || d->ids.n == before)
        return rc;
    if (o->append_eod) {
        if (d->ids.n == d->ids.cap) {
            int32_t *p = realloc(d->ids.ids, d->ids.cap * 2 * sizeof *p);
            if (!p)
                return EXIT_FAIL;
            d->ids.ids = p;
            d->ids.cap *= 2;
        }
        d->ids.ids[d->ids.n++] = o->eod_id;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        size_t *e = realloc(d->ends, cap * sizeof *e);
        if (!e)
            return EXIT_FAIL;
        d->ends = e;
        d->cap = cap;
    }
    d->ends[d->n++] = d->ids.n;
    return 0;
}

/* the text of one JSON line's key, or a message */
static int json_line_text(const char *line, size_t len, const char *key, json_t **obj,
                          const char **text, size_t *tlen, char *why, size_t wl)
{
    json_error_t e;
    *obj = json_loadb(line, len, JSON_ALLOW_NUL, &e); /* "\u0000" as Python's json reads it */
    if (!*obj) {
        snprintf(why, wl, "invalid JSON at column %d: %s", e.column, e.text);
        return EXIT_USAGE;
    }
    json_t *v = json_is_object(*obj) ? json_object_get(*obj, key) : NULL;
    if (!json_is_string(v)) {
        snprintf(why, wl, "%s", !json_is_object(*obj) ? "a line must be a JSON object"
                                : v ? "the key's value must be a string" : "the key is missing");
        return EXIT_USAGE;
    }
    *text = json_string_value(v);
    *tlen = json_string_length(v);
    return 0;
}

/* a blank line: empty, or nothing but spaces, tabs and carriage returns */
static int is_blank(const char *line, size_t len)
{
    for (size_t k = 0; k < len; k++)
        if (line[k] != ' ' && line[k] != '\t' && line[k] != '\r')
            return 0;
    return 1;
}

/* one line of the input: the line itself (.txt) or its JSON key's text; a blank line is no
 * document in either kind (not even the template's special tokens, [CLS] [SEP] or <s>) */
static int add_line(doc_list *d, tokenizer *t, const char *line, size_t len, size_t lineno,
                    int is_txt, const preprocess_options *o)
{
    char where[4200], why[256];
    snprintf(where, sizeof where, "%s:%zu", o->input, lineno);
    if (is_blank(line, len))
        return 0;
    if (is_txt)
        return add_doc(d, t, line, len, where, o);
    json_t *obj = NULL;
    const char *text = NULL;
    size_t tlen = 0;
    int rc = json_line_text(line, len, o->json_key, &obj, &text, &tlen, why, sizeof why);
    if (rc)
        log_error("%s: key \"%s\": %s", where, o->json_key, why);
    else
        rc = add_doc(d, t, text, tlen, where, o);
    json_decref(obj);
    return rc;
}

static int read_docs(const preprocess_options *o, tokenizer *t, doc_list *d)
{
    size_t len = 0;
    char why[INPUT_WHY_LEN];
    char *text = input_read(o->input, INPUT_DATA, &len, why, sizeof why);
    if (!text) {
        log_error("%s: cannot read the input: %s", o->input, why);
        return EXIT_USAGE;
    }
    int is_txt = ends_with(o->input, ".txt"), rc = 0;
    size_t lineno = 0;
    for (size_t at = 0; at < len && !rc;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t line_len = end - at;
        if (is_txt && line_len && text[end - 1] == '\r')
            line_len--; /* a CRLF line end: the \r is not the document's */
        rc = add_line(d, t, text + at, line_len, ++lineno, is_txt, o);
        at = end + 1;
    }
    free(text);
    if (!rc && d->n == 0) {
        log_error("%s: no document with any token", o->input);
        rc = EXIT_USAGE;
    }
    return rc;
}

static int write_docs(const preprocess_options *o, tokenizer *t, const doc_list *d)
{
    char prefix[4200];
    if (strlen(o->output_prefix) + strlen(o->json_key) + 32 > sizeof prefix) {
        log_error("%.64s...: the output prefix is too long", o->output_prefix);
        return EXIT_USAGE;
    }
    snprintf(prefix, sizeof prefix, "%s_%s_document", o->output_prefix, o->json_key);
    for (int k = 0; k < 2; k++) { /* never replace what this run read: the input, the tokenizer */
        char out[4300];
        snprintf(out, sizeof out, "%s.%s", prefix, k ? "idx" : "bin");
        if (output_is_input(out)) {
            log_error("%s: is a file this preprocess reads (its input or tokenizer): writing "
                      "it would replace it; choose another --output-prefix", out);
            return EXIT_USAGE;
        }
    }
    mmidx_writer w;
    int rc = mmidx_writer_open(&w, prefix, mmidx_dtype_for_vocab(tokenizer_vocab_size(t)));
    for (size_t i = 0, from = 0; !rc && i < d->n; from = d->ends[i++])
        rc = mmidx_writer_add(&w, d->ids.ids + from, d->ends[i] - from);
    if (!rc)
        return mmidx_writer_finish(&w);
    mmidx_writer_abort(&w);
    return rc;
}

int data_preprocess(const preprocess_options *o, tokenizer *t, long long *docs,
                    long long *tokens)
{
    doc_list d;
    memset(&d, 0, sizeof d);
    int rc = read_docs(o, t, &d);
    if (rc == EXIT_FAIL)
        log_error("%s: out of memory", o->input);
    if (!rc)
        rc = write_docs(o, t, &d);
    if (docs)
        *docs = rc ? 0 : (long long)d.n;
    if (tokens)
        *tokens = rc ? 0 : (long long)d.ids.n;
    id_list_free(&d.ids);
    free(d.ends);
    return rc;
}
