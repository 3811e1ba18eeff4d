/* harness/util/json_util.h: small jansson helpers: how a JSON value's type is named in the config
 * readers' error messages, and JSON text whose reals read back exactly in the fewest digits. */
#ifndef JSON_UTIL_H
#define JSON_UTIL_H

#include <jansson.h>

/* "an object", "an array", "a string", "an integer", "a real number", "a boolean" or "null" */
const char *json_type_name(const json_t *v);

/* json_dumps, but every real written in the fewest significant digits (15, 16 or 17) that read
 * back to the same double: 0.003, not jansson's 0.0030000000000000001. malloc'd; NULL on error. */
char *json_dumps_short(const json_t *root, size_t flags);

/* v as text in the fewest of 15, 16, 17 significant digits ("%.*g") that read back to the same
 * double: "369.8", not "%.17g"'s 369.80000000000001; an integer stays one ("12"). Into
 * out[len] (32 bytes always suffice); returns the length. */
size_t real_text_shortest(double v, char *out, size_t len);

/* json_equal, but numbers compare by value: 1 and 1.0 are the same number (the spelling of a
 * number never makes two scenarios differ) */
int json_same_value(const json_t *a, const json_t *b);

#endif
