/* harness/ingest/log_decode.h: a log file's bytes as UTF-8 for the parsers: UTF-16 (a byte-order
 * mark FF FE or FE FF, as Windows PowerShell's `>` writes) converted, a UTF-8 mark dropped. */
#ifndef LOG_DECODE_H
#define LOG_DECODE_H

#include <iconv.h>
#include <stddef.h>

typedef struct {
    int kind;                /* 0: not known yet, 1: UTF-8 (as it is), 2: UTF-16 */
    int big_endian;          /* UTF-16: FE FF */
    iconv_t cd;              /* UTF-16LE or UTF-16BE to UTF-8 */
    unsigned char carry[4];  /* the bytes of a code unit or pair cut by the chunk's end */
    size_t n_carry;
    char *out;               /* the converted text of the last call */
    size_t cap;
} log_decoder;

void log_decoder_init(log_decoder *d);
/* The next n bytes of the file (the first call decides the encoding from its first bytes): *out
 * and *len the UTF-8 text to pass on, valid until the next call. An unpaired or cut code unit
 * becomes U+FFFD. 0, or -1 when out of memory or iconv is missing UTF-16 (errno set). */
int log_decode(log_decoder *d, const char *in, size_t n, const char **out, size_t *len);
/* what the file was: "UTF-8", "UTF-16LE" or "UTF-16BE" */
const char *log_decoder_encoding(const log_decoder *d);
void log_decoder_free(log_decoder *d);

#endif
