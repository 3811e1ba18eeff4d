/* harness/ingest/log_decode.c: a log file's bytes as UTF-8 for the parsers: UTF-16 logs (by their
 * byte-order mark) through glibc's iconv, a chunk at a time; a UTF-8 byte-order mark dropped. */
#include "log_decode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

void log_decoder_init(log_decoder *d)
{
    memset(d, 0, sizeof *d);
    d->cd = (iconv_t)-1;
}

void log_decoder_free(log_decoder *d)
{
    if (d->cd != (iconv_t)-1)
        iconv_close(d->cd);
    free(d->out);
    log_decoder_init(d);
}

const char *log_decoder_encoding(const log_decoder *d)
{
    return d->kind != 2 ? "UTF-8" : d->big_endian ? "UTF-16BE" : "UTF-16LE";
}

/* from the first bytes: 1 UTF-8 (*skip: its mark's 3 bytes, or 0), 2 UTF-16 (*skip 2) */
static int decide(log_decoder *d, const unsigned char *b, size_t n, size_t *skip)
{
    *skip = 0;
    if (n >= 2 && ((b[0] == 0xFF && b[1] == 0xFE) || (b[0] == 0xFE && b[1] == 0xFF))) {
        d->big_endian = b[0] == 0xFE;
        d->cd = iconv_open("UTF-8", d->big_endian ? "UTF-16BE" : "UTF-16LE");
        if (d->cd == (iconv_t)-1)
            return -1;
        *skip = 2;
        return d->kind = 2;
    }
    if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF)
        *skip = 3;
    return d->kind = 1;
}

/* room for the UTF-8 of n bytes of UTF-16 (at most 3 bytes out for 2 in) */
static int reserve(log_decoder *d, size_t n)
{
    size_t need = n / 2 * 3 + 16;
    if (need <= d->cap)
        return 0;
    char *grown = realloc(d->out, need);
    if (!grown)
        return -1;
    d->out = grown;
    d->cap = need;
    return 0;
}

/* converts src[0..n) into d->out; a cut unit at the end is kept in carry. Returns the length */
static size_t convert(log_decoder *d, char *src, size_t n)
{
    char *o = d->out;
    size_t left_out = d->cap;
    while (n > 0) {
        if (iconv(d->cd, &src, &n, &o, &left_out) != (size_t)-1)
            break;
        if (errno == E2BIG || left_out < sizeof REPLACEMENT) /* cannot be: room for 3 per 2 */
            break;
        if (errno == EINVAL && n < sizeof d->carry) { /* cut by the chunk's end */
            memcpy(d->carry, src, n);
            d->n_carry = n;
            break;
        }
        /* an unpaired surrogate (or a cut unit too long to keep): U+FFFD for its 2 bytes */
        size_t step = n < 2 ? n : 2;
        memcpy(o, REPLACEMENT, 3);
        o += 3;
        left_out -= 3;
        src += step;
        n -= step;
        iconv(d->cd, NULL, NULL, NULL, NULL);
    }
    return (size_t)(o - d->out);
}

int log_decode(log_decoder *d, const char *in, size_t n, const char **out, size_t *len)
{
    size_t skip = 0;
    if (!d->kind && n > 0 && decide(d, (const unsigned char *)in, n, &skip) < 0)
        return -1;
    in += skip;
    n -= skip;
    if (d->kind != 2) { /* UTF-8 (or nothing read yet): as it is */
        *out = in;
        *len = n;
        return 0;
    }
    size_t total = d->n_carry + n;
    char *src = malloc(total ? total : 1); /* the carried bytes, then the new ones */
    if (!src || reserve(d, total)) {
        free(src);
        return -1;
    }
    memcpy(src, d->carry, d->n_carry);
    memcpy(src + d->n_carry, in, n);
    d->n_carry = 0;
    *len = convert(d, src, total);
    free(src);
    *out = d->out;
    return 0;
}
