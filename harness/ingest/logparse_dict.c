/* harness/ingest/logparse_dict.c: what the log parsers share: a scanner for the flat dicts of log lines
 * (JSON objects and Python dict reprs alike), number and text helpers, step fields by name. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "logparse.h"
#include "util/json_util.h"

#define MAX_DEPTH 32

static size_t skip_space(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* a quoted string at s[i] (' or "); sets the inside span; returns the index after it, 0 if bad */
static size_t scan_string(const char *s, size_t len, size_t i, const char **p, size_t *n)
{
    char q = s[i];
    size_t j = i + 1;
    while (j < len && s[j] != q) {
        if (s[j] == '\\')
            j++;
        j++;
    }
    if (j >= len)
        return 0;
    *p = s + i + 1;
    *n = j - i - 1;
    return j + 1;
}

/* a bracketed value ({...} or [...] or (...)) with strings inside; index after it, 0 if bad */
static size_t scan_nested(const char *s, size_t len, size_t i)
{
    char stack[MAX_DEPTH];
    int depth = 0;
    for (size_t j = i; j < len; j++) {
        char c = s[j];
        if (c == '"' || c == '\'') {
            const char *p;
            size_t n, k = scan_string(s, len, j, &p, &n);
            if (!k)
                return 0;
            j = k - 1;
        } else if (c == '{' || c == '[' || c == '(') {
            if (depth == MAX_DEPTH)
                return 0;
            stack[depth++] = c == '{' ? '}' : c == '[' ? ']' : ')';
        } else if (c == '}' || c == ']' || c == ')') {
            if (depth == 0 || stack[depth - 1] != c)
                return 0;
            if (--depth == 0)
                return j + 1;
        }
    }
    return 0;
}

size_t lp_number(const char *s, size_t len, double *out)
{
    static const struct { const char *w; double v; } words[] = {
        {"-Infinity", -INFINITY}, {"Infinity", INFINITY}, {"-inf", -INFINITY}, {"inf", INFINITY},
        {"NaN", NAN}, {"nan", NAN}, {"-nan", NAN},
        /* Python's '{:E}' (Megatron's loss): */ {"-INF", -INFINITY}, {"INF", INFINITY},
        {"NAN", NAN}, {"-NAN", NAN}};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        size_t wl = strlen(words[k].w);
        if (len >= wl && memcmp(s, words[k].w, wl) == 0 &&
            (len == wl || !isalnum((unsigned char)s[wl]))) {
            *out = words[k].v;
            return wl;
        }
    }
    char buf[64];
    size_t n = 0;
    while (n < len && n < sizeof buf - 1 && strchr("+-.0123456789eE", s[n]))
        n++;
    if (n == 0)
        return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    double v = strtod(buf, &end);
    if (end == buf)
        return 0;
    *out = v;
    return (size_t)(end - buf);
}

/* a bare word (true, None, np.float64(1.5), tensor(2.0, device='cuda:0')) at s[i] */
static size_t scan_word(const char *s, size_t len, size_t i, lp_value *v)
{
    size_t j = i;
    while (j < len && (isalnum((unsigned char)s[j]) || s[j] == '_' || s[j] == '.'))
        j++;
    size_t wl = j - i;
    if (j < len && s[j] == '(' && wl > 0) { /* a wrapper: take its first number */
        size_t end = scan_nested(s, len, j);
        if (!end)
            return 0;
        size_t k = skip_space(s, end, j + 1);
        double x;
        if (lp_number(s + k, end - k, &x)) {
            v->type = LPV_NUM;
            v->num = x;
        } else { /* device(type='cpu'): kept as an opaque value */
            v->type = LPV_OBJ;
            v->p = s + i;
            v->len = end - i;
        }
        return end;
    }
    if ((wl == 4 && (!memcmp(s + i, "true", 4) || !memcmp(s + i, "True", 4))) ||
        (wl == 5 && (!memcmp(s + i, "false", 5) || !memcmp(s + i, "False", 5)))) {
        v->type = LPV_BOOL;
        v->num = s[i] == 't' || s[i] == 'T';
        return j;
    }
    if ((wl == 4 && !memcmp(s + i, "null", 4)) || (wl == 4 && !memcmp(s + i, "None", 4))) {
        v->type = LPV_NULL;
        return j;
    }
    return 0;
}

/* one value at s[i]; index after it, 0 if bad */
static size_t scan_value(const char *s, size_t len, size_t i, lp_value *v)
{
    memset(v, 0, sizeof *v);
    if (i >= len)
        return 0;
    char c = s[i];
    if (c == '"' || c == '\'') {
        v->type = LPV_STR;
        return scan_string(s, len, i, &v->p, &v->len);
    }
    if (c == '{' || c == '[' || c == '(') {
        size_t end = scan_nested(s, len, i);
        v->type = c == '{' ? LPV_OBJ : LPV_ARR;
        v->p = s + i;
        v->len = end ? end - i : 0;
        return end;
    }
    size_t n = lp_number(s + i, len - i, &v->num);
    if (n) {
        v->type = LPV_NUM;
        return i + n;
    }
    return scan_word(s, len, i, v);
}

int lp_dict_each(const char *s, size_t len,
                 int (*fn)(const char *key, size_t klen, const lp_value *v, void *arg), void *arg)
{
    if (len == 0 || s[0] != '{')
        return -1;
    size_t i = skip_space(s, len, 1);
    if (i < len && s[i] == '}')
        return 0;
    for (;;) {
        const char *key;
        size_t klen;
        if (i >= len || (s[i] != '"' && s[i] != '\'') || !(i = scan_string(s, len, i, &key, &klen)))
            return -1;
        i = skip_space(s, len, i);
        if (i >= len || s[i] != ':')
            return -1;
        lp_value v;
        if (!(i = scan_value(s, len, skip_space(s, len, i + 1), &v)))
            return -1;
        if (fn(key, klen, &v, arg))
            return 0;
        i = skip_space(s, len, i);
        if (i < len && s[i] == '}')
            return 0;
        if (i >= len || s[i] != ',')
            return -1;
        i = skip_space(s, len, i + 1);
    }
}

int lp_key_is(const char *key, size_t klen, const char *name)
{
    return strlen(name) == klen && memcmp(key, name, klen) == 0;
}

/* the 4 hex digits at p as a number, or -1 */
static long hex4(const char *p, size_t left)
{
    long v = 0;
    for (int k = 0; k < 4; k++) {
        if ((size_t)k >= left)
            return -1;
        char c = p[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* a \uXXXX escape at v->p[*i] (the 'u'), a surrogate pair's second half too, as its code point
 * (U+FFFD for a lone surrogate or bad digits); *i left on its last character */
static long unicode_escape(const lp_value *v, size_t *i)
{
    long cp = hex4(v->p + *i + 1, v->len - *i - 1);
    if (cp < 0)
        return 0xFFFD;
    *i += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return 0xFFFD;
    if (cp < 0xD800 || cp > 0xDBFF)
        return cp;
    long lo = *i + 6 < v->len && v->p[*i + 1] == '\\' && v->p[*i + 2] == 'u'
                  ? hex4(v->p + *i + 3, v->len - *i - 3) : -1;
    if (lo < 0xDC00 || lo > 0xDFFF)
        return 0xFFFD;
    *i += 6;
    return 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
}

/* cp as UTF-8 (utf8proc's encoder) into out[*o..n-1), whole or not at all; a control
 * character a space, as every other one of the value */
static void put_utf8(long cp, char *out, size_t *o, size_t n)
{
    utf8proc_uint8_t b[4];
    size_t k = (size_t)utf8proc_encode_char((utf8proc_int32_t)(cp < 0x20 ? ' ' : cp), b);
    if (k && *o + k < n) {
        memcpy(out + *o, b, k);
        *o += k;
    }
}

void lp_value_text(const lp_value *v, char *out, size_t n)
{
    size_t o = 0;
    if (v->type == LPV_NUM) { /* 369.8, not %.17g's 369.80000000000001 */
        real_text_shortest(v->num, out, n);
        return;
    }
    for (size_t i = 0; i < v->len && o + 1 < n; i++) {
        char c = v->p[i];
        if (c == '\\' && i + 1 < v->len) {
            c = v->p[++i];
            if (c == 'u') { /* JSON's \uXXXX (Python's json.dumps writes non-ASCII so) */
                put_utf8(unicode_escape(v, &i), out, &o, n);
                continue;
            }
            c = strchr("ntrbf", c) ? ' ' : c;
        }
        out[o++] = (unsigned char)c < 0x20 ? ' ' : c;
    }
    out[o] = 0;
}

const char *lp_find_text(const char *s, size_t len, const char *needle)
{
    size_t nl = strlen(needle);
    for (size_t i = 0; nl && i + nl <= len; i++)
        if (s[i] == needle[0] && memcmp(s + i, needle, nl) == 0)
            return s + i;
    return NULL;
}

void lp_meta_add(lp_event *ev, const char *key, const char *value)
{
    if (ev->n_meta >= LP_MAX_META) {
        ev->meta_left_out++;
        return;
    }
    lp_kv *kv = &ev->meta[ev->n_meta++];
    snprintf(kv->key, sizeof kv->key, "%s", key);
    snprintf(kv->value, sizeof kv->value, "%s", value);
}
