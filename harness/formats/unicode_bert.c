/* harness/formats/unicode_bert.c: BERT's character classes (whitespace, control, punctuation, CJK),
 * lowercasing and accent stripping (NFD, nonspacing marks dropped), on utf8proc's tables. */
#include "unicode_bert.h"

#include <stdlib.h>

#include <utf8proc.h>

static utf8proc_category_t category(uint32_t cp)
{
    return cp > 0x10FFFF ? UTF8PROC_CATEGORY_CN : utf8proc_category((utf8proc_int32_t)cp);
}

/* the library's flags for cp when its tables differ from utf8proc's, else -1 */
static int compat_flags(uint32_t cp)
{
    size_t lo = 0, hi = ub_compat_n_ranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < ub_compat_ranges[mid].first)
            hi = mid;
        else if (cp > ub_compat_ranges[mid].last)
            lo = mid + 1;
        else
            return ub_compat_ranges[mid].flags;
    }
    return -1;
}

int ub_is_whitespace(uint32_t cp)
{
    if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x85)
        return 1;
    utf8proc_category_t c = category(cp);
    return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

int ub_is_control(uint32_t cp)
{
    if (cp == '\t' || cp == '\n' || cp == '\r')
        return 0;
    int f = compat_flags(cp);
    if (f >= 0)
        return (f & UB_CONTROL) != 0;
    utf8proc_category_t c = category(cp);
    return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO ||
           c == UTF8PROC_CATEGORY_CS;
}

int ub_is_punctuation(uint32_t cp)
{
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
        (cp >= 123 && cp <= 126))
        return 1;
    int f = compat_flags(cp);
    if (f >= 0)
        return (f & UB_PUNCTUATION) != 0;
    utf8proc_category_t c = category(cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

int ub_is_cjk(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

int ub_lower(uint32_t cp, uint32_t out[2])
{
    if (cp == 0x130) { /* the one full lowercase mapping of two code points */
        out[0] = 'i';
        out[1] = 0x307;
        return 2;
    }
    size_t lo = 0, hi = ub_compat_n_lower;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp == ub_compat_lower[mid].cp) {
            out[0] = ub_compat_lower[mid].lower;
            return 1;
        }
        if (cp < ub_compat_lower[mid].cp)
            hi = mid;
        else
            lo = mid + 1;
    }
    out[0] = cp > 0x10FFFF ? cp : (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
    return 1;
}

static int ccc(uint32_t cp)
{
    return utf8proc_get_property((utf8proc_int32_t)cp)->combining_class;
}

/* the canonical ordering of NFD: a stable sort by combining class within each run of
 * characters whose class is not 0, by counting (linear however hostile the run); tmp holds n */
static void canonical_order(uint32_t *s, size_t n, uint32_t *tmp)
{
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b < n && ccc(s[b]))
            b++;
        if (b - a > 1) {
            size_t start[257] = {0};
            for (size_t i = a; i < b; i++)
                start[ccc(s[i]) + 1]++;
            for (int c = 1; c <= 256; c++)
                start[c] += start[c - 1];
            for (size_t i = a; i < b; i++)
                tmp[start[ccc(s[i])]++] = s[i];
            for (size_t i = a; i < b; i++)
                s[i] = tmp[i - a];
        }
        a = b > a ? b : a + 1;
    }
}

long ub_strip_accents(const uint32_t *cps, size_t n, uint32_t *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        utf8proc_int32_t d[32];
        int last = 0;
        utf8proc_ssize_t m = utf8proc_decompose_char((utf8proc_int32_t)cps[i], d, 32,
                                                     UTF8PROC_DECOMPOSE, &last);
        if (m < 0 || m > 32 || k + (size_t)m > cap)
            return -1;
        for (utf8proc_ssize_t j = 0; j < m; j++)
            out[k++] = (uint32_t)d[j];
    }
    uint32_t *tmp = malloc((k ? k : 1) * sizeof *tmp);
    if (!tmp)
        return -1;
    canonical_order(out, k, tmp);
    free(tmp);
    size_t w = 0;
    for (size_t i = 0; i < k; i++) {
        int f = compat_flags(out[i]);
        if (f >= 0 ? !(f & UB_NONSPACING) : category(out[i]) != UTF8PROC_CATEGORY_MN)
            out[w++] = out[i];
    }
    return (long)w;
}
