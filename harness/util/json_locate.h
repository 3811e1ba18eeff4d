/* harness/util/json_locate.h: the line of a key at a dotted path in JSON text, so that messages about
 * a value can point into the file (jansson gives lines only for syntax errors). */
#ifndef JSON_LOCATE_H
#define JSON_LOCATE_H

/* Returns the 1-based line where the key at `path` ("train.lr", "model.overrides.n_layer")
 * appears in `text`. Path components name object keys only (arrays are not entered); keys are
 * compared as written between their quotes (a key spelled with \u escapes does not match).
 * When the whole path is not found, returns the line of the innermost component that was found,
 * or 1 when none was (also for a NULL or empty text or path). Reads `text` only up to its NUL,
 * and never out of bounds, even when the text is not valid JSON. */
int json_locate_line(const char *text, const char *path);

#endif
