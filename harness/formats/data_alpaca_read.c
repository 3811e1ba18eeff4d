/* harness/formats/data_alpaca_read.c: reading Alpaca instruction records (instruction, input, output)
 * from a JSON array or JSON lines, each field checked, errors naming the record or line. */
#define _POSIX_C_SOURCE 200809L
#include "data_alpaca.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* a heap copy of a record's string field; "" for an absent or null optional one */
static int take_field(json_t *obj, const char *key, int required, char **out, char *why,
                      size_t wl)
{
    json_t *v = json_object_get(obj, key);
    if ((!v || json_is_null(v)) && !required) {
        *out = strdup("");
    } else if (!v) {
        snprintf(why, wl, "\"%s\" is missing", key);
        return EXIT_USAGE;
    } else if (!json_is_string(v)) {
        snprintf(why, wl, "\"%s\" must be a string, not %s", key, json_type_name(v));
        return EXIT_USAGE;
    } else if (strlen(json_string_value(v)) != json_string_length(v)) {
        snprintf(why, wl, "\"%s\" contains a NUL character (\\u0000): valid JSON, but a prompt the harness does not build", key);
        return EXIT_USAGE;
    } else {
        *out = strdup(json_string_value(v));
    }
    if (!*out) {
        snprintf(why, wl, "out of memory");
        return EXIT_FAIL;
    }
    return 0;
}

static int add_record(alpaca_records *rs, json_t *obj, size_t *cap, char *why, size_t wl)
{
    if (!json_is_object(obj)) {
        snprintf(why, wl, "a record must be an object, not %s", json_type_name(obj));
        return EXIT_USAGE;
    }
    if (rs->n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        alpaca_record *r = realloc(rs->r, c * sizeof *r);
        if (!r) {
            snprintf(why, wl, "out of memory for %zu records", c);
            return EXIT_FAIL;
        }
        rs->r = r;
        *cap = c;
    }
    alpaca_record *r = &rs->r[rs->n];
    memset(r, 0, sizeof *r);
    rs->n++; /* counted now, so alpaca_records_free frees what was taken */
    int rc = take_field(obj, "instruction", 1, &r->instruction, why, wl);
    if (!rc)
        rc = take_field(obj, "input", 0, &r->input, why, wl);
    if (!rc)
        rc = take_field(obj, "output", 1, &r->output, why, wl);
    return rc;
}

static int read_array(const char *path, const char *text, size_t len, alpaca_records *rs)
{
    json_error_t e;
    json_t *root = json_loadb(text, len, JSON_ALLOW_NUL, &e); /* a \u0000 is said below */
    if (!root) {
        log_error("%s:%d:%d: invalid JSON: %s", path, e.line, e.column, e.text);
        return EXIT_USAGE;
    }
    char why[256];
    size_t cap = 0, i;
    json_t *v;
    int rc = 0;
    json_array_foreach(root, i, v)
    {
        if ((rc = add_record(rs, v, &cap, why, sizeof why))) {
            log_error("%s: record %zu: %s", path, i, why);
            break;
        }
    }
    json_decref(root);
    return rc;
}

/* one object per line; blank lines (spaces, tabs, "\r") are skipped */
static int read_lines(const char *path, const char *text, size_t len, alpaca_records *rs)
{
    char why[256];
    size_t cap = 0, line = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, k = at;
        line++;
        while (k < end && strchr(" \t\r", text[k]))
            k++;
        if (k < end) {
            json_error_t e;
            json_t *obj = json_loadb(text + at, end - at, JSON_ALLOW_NUL, &e);
            int rc = obj ? add_record(rs, obj, &cap, why, sizeof why) : EXIT_USAGE;
            if (!obj)
                snprintf(why, sizeof why, "invalid JSON at column %d: %s", e.column, e.text);
            json_decref(obj);
            if (rc) {
                log_error("%s:%zu: %s", path, line, why);
                return rc;
            }
        }
        at = end + 1;
    }
    return 0;
}

int alpaca_read(const char *path, alpaca_records *rs)
{
    memset(rs, 0, sizeof *rs);
    size_t len = 0;
    char why[INPUT_WHY_LEN];
    char *text = input_read(path, INPUT_DATA, &len, why, sizeof why);
    if (!text) {
        log_error("%s: cannot read the data file: %s", path, why);
        return EXIT_USAGE;
    }
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) { /* as Python's json refuses it */
        log_error("%s:1:1: invalid JSON: the file starts with a UTF-8 byte-order mark (BOM); save "
                  "it as UTF-8 without one", path);
        free(text);
        return EXIT_USAGE;
    }
    size_t k = 0;
    while (k < len && strchr(" \t\r\n", text[k]) && text[k])
        k++;
    int rc = k < len && text[k] == '[' ? read_array(path, text, len, rs)
                                       : read_lines(path, text, len, rs);
    free(text);
    if (!rc && rs->n == 0) {
        log_error("%s: no records (a JSON array or JSON lines of instruction/input/output)", path);
        rc = EXIT_USAGE;
    }
    if (rc)
        alpaca_records_free(rs);
    return rc;
}

void alpaca_records_free(alpaca_records *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        free(rs->r[i].instruction);
        free(rs->r[i].input);
        free(rs->r[i].output);
    }
    free(rs->r);
    memset(rs, 0, sizeof *rs);
}
