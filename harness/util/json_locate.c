/* harness/util/json_locate.c: finds the line of a key at a dotted path in JSON text by a single
 * scan that skips strings (with escapes) and tracks nesting depth. */
#include "json_locate.h"

#include <stddef.h>
#include <string.h>

#define MAX_PARTS 32

typedef struct {
    const char *s;
    size_t n;
} part;

/* splits "a.b.c" into at most MAX_PARTS components; returns their count */
static int split_path(const char *path, part *parts)
{
    int n = 0;
    while (n < MAX_PARTS) {
        const char *dot = strchr(path, '.');
        parts[n].s = path;
        parts[n].n = dot ? (size_t)(dot - path) : strlen(path);
        n++;
        if (!dot)
            break;
        path = dot + 1;
    }
    return n;
}

/* *p is at an opening quote: moves past the closing one (or to the NUL), counting newlines;
 * the body between the quotes is returned through body/len */
static const char *skip_string(const char *p, int *line, const char **body, size_t *len)
{
    const char *start = ++p;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        if (*p == '\n')
            (*line)++;
        p++;
    }
    *body = start;
    *len = (size_t)(p - start);
    return *p ? p + 1 : p;
}

/* a string followed by ':' is an object key */
static int colon_follows(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    return *p == ':';
}

int json_locate_line(const char *text, const char *path)
{
    if (!text || !path || !*path)
        return 1;
    part parts[MAX_PARTS];
    int nparts = split_path(path, parts);
    int matched = 0, depth = 0, line = 1, best = 1;
    const char *p = text;
    while (*p) {
        if (*p == '"') {
            const char *body;
            size_t len;
            int at = line;
            p = skip_string(p, &line, &body, &len);
            /* the next component is a key of the object that holds the last matched value */
            if (depth == matched + 1 && colon_follows(p) && len == parts[matched].n &&
                memcmp(body, parts[matched].s, len) == 0) {
                best = at;
                if (++matched == nparts)
                    return best;
            }
            continue;
        }
        if (*p == '\n')
            line++;
        else if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && --depth < matched)
            return best; /* left the object that held the last matched key */
        else if (*p == ',' && matched > 0 && depth == matched)
            return best; /* the last matched key's value ended without the next component */
        p++;
    }
    return best;
}
