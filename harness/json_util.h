/* harness/json_util.h: small jansson helpers shared by the config readers (scenario files,
 * model configs): how a JSON value's type is named in error messages. */
#ifndef JSON_UTIL_H
#define JSON_UTIL_H

#include <jansson.h>

/* "an object", "an array", "a string", "an integer", "a real number", "a boolean" or "null" */
const char *json_type_name(const json_t *v);

#endif
