/* harness/util/json_util.c: small jansson helpers: the type names of the config readers' error
 * messages ("must be an integer, not a string"), and JSON text with the shortest exact reals. */
#include "json_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* ---- JSON text with the shortest reals ---------------------------------------------------- */

size_t real_text_shortest(double v, char *out, size_t len)
{
    for (int p = 15; p <= 17; p++) {
        snprintf(out, len, "%.*g", p, v);
        if (strtod(out, NULL) == v)
            break;
    }
    return strlen(out);
}

/* real_text_shortest, with ".0" when that looks like an integer (it stays a real); returns
 * the length */
static size_t shortest_real(double v, char *out, size_t len)
{
    real_text_shortest(v, out, len);
    if (!strpbrk(out, ".eEni"))
        strncat(out, ".0", len - strlen(out) - 1);
    return strlen(out);
}

/* the length of the number token at p (JSON number characters) */
static size_t number_length(const char *p)
{
    return strspn(p, "0123456789+-.eE");
}

char *json_dumps_short(const json_t *root, size_t flags)
{
    char *raw = json_dumps(root, flags);
    if (!raw)
        return NULL;
    size_t n = strlen(raw);
    char *out = malloc(2 * n + 32); /* a real never grows by more than its ".0" */
    if (!out) {
        free(raw);
        return NULL;
    }
    size_t o = 0;
    int in_string = 0;
    for (size_t i = 0; i < n;) {
        char c = raw[i];
        if (in_string || c == '"') {
            if (in_string && c == '\\' && i + 1 < n)
                out[o++] = raw[i++];
            else if (c == '"')
                in_string = !in_string;
            out[o++] = raw[i++];
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t k = number_length(raw + i);
            char token[64];
            if (k < sizeof token && memchr(raw + i, '.', k) == NULL &&
                memchr(raw + i, 'e', k) == NULL && memchr(raw + i, 'E', k) == NULL) {
                memcpy(out + o, raw + i, k); /* an integer: as it is */
                o += k;
            } else if (k < sizeof token) {
                memcpy(token, raw + i, k);
                token[k] = 0;
                o += shortest_real(strtod(token, NULL), out + o, 40);
            } else {
                memcpy(out + o, raw + i, k);
                o += k;
            }
            i += k;
        } else {
            out[o++] = raw[i++];
        }
    }
    out[o] = 0;
    free(raw);
    return out;
}

static int same_members(const json_t *a, const json_t *b)
{
    const char *key;
    const json_t *v;
    if (json_object_size(a) != json_object_size(b))
        return 0;
    json_object_foreach((json_t *)a, key, v) {
        const json_t *w = json_object_get(b, key);
        if (!w || !json_same_value(v, w))
            return 0;
    }
    return 1;
}

int json_same_value(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b) &&
               (json_is_real(a) || json_is_real(b) || json_integer_value(a) == json_integer_value(b));
    if (json_is_object(a) && json_is_object(b))
        return same_members(a, b);
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!json_same_value(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    return json_equal(a, b);
}
