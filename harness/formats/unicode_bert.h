/* harness/formats/unicode_bert.h: the character classes and normalization steps of BERT's basic
 * tokenizer (the tokenizers library's BertNormalizer and BertPreTokenizer), on utf8proc with the
 * library's own answers where its Unicode tables differ (unicode_bert_compat.c). */
#ifndef UNICODE_BERT_H
#define UNICODE_BERT_H

#include <stddef.h>
#include <stdint.h>

/* White_Space (Rust's char::is_whitespace): Zs, Zl, Zp, U+0009..U+000D and U+0085 */
int ub_is_whitespace(uint32_t cp);
/* what clean_text drops: NUL, U+FFFD and the "other" categories Cc, Cf, Co (tab, newline and
 * carriage return excepted: they count as whitespace) */
int ub_is_control(uint32_t cp);
/* BERT's punctuation: the ASCII symbols !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ and Unicode P* */
int ub_is_punctuation(uint32_t cp);
/* the CJK Unified Ideograph blocks BERT splits into single characters, as the tokenizers library
 * lists them (its block after U+2B81F starts at U+2B920; Google's BERT and transformers' Python
 * BertTokenizer start it at U+2B820) */
int ub_is_cjk(uint32_t cp);

/* the lowercase of cp (Rust's char::to_lowercase: U+0130 becomes "i" + U+0307) into out[2];
 * returns how many code points */
int ub_lower(uint32_t cp, uint32_t out[2]);

/* NFD of cps[n] with the nonspacing marks (Mn) dropped, into out (cap entries). Returns the
 * count, or -1 when out is too small or utf8proc fails. */
long ub_strip_accents(const uint32_t *cps, size_t n, uint32_t *out, size_t cap);

/* the code points where the tokenizers library's tables differ from utf8proc's (generated:
 * harness/unicode_bert_compat.c, tools/make_unicode_compat.py): ranges with the library's flags
 * (UB_CONTROL | UB_PUNCTUATION | UB_NONSPACING), sorted; lowercase mappings, sorted */
enum { UB_CONTROL = 1, UB_PUNCTUATION = 2, UB_NONSPACING = 4 };
typedef struct {
    uint32_t first, last;
    int flags;
} ub_range;
typedef struct {
    uint32_t cp, lower;
} ub_lower_pair;
extern const ub_range ub_compat_ranges[];
extern const size_t ub_compat_n_ranges;
extern const ub_lower_pair ub_compat_lower[];
extern const size_t ub_compat_n_lower;

#endif
