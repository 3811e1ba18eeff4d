/* harness/util/escape.c: escaping of user strings for HTML/XML, Markdown, CSV, gnuplot string
 * literals and file names (see escape.h for each rule). */
#include "escape.h"

#include <string.h>

int utf8_seq_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || (n == 3 && s[0] > 0xef))
        return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* overlong forms, surrogates and code points above U+10FFFF */
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* the bytes of the character at s (1..4; 1 for a byte that is not UTF-8), *allowed 1 when it is
 * one XML 1.0 allows in text: 0 for bytes that are not UTF-8 and for the noncharacters U+FFFE
 * and U+FFFF (EF BF BE, EF BF BF), valid UTF-8 that XML forbids. Control characters are left to
 * the callers. */
static int xml_char_len(const unsigned char *s, int *allowed)
{
    int n = utf8_seq_len(s);
    *allowed = n > 0 && !(n == 3 && s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe);
    return n > 0 ? n : 1;
}

/* 1 when the n-byte character at s is a C1 control (U+0080..U+009F): a control character like
 * the C0 ones, which some terminals obey */
static int is_c1(const unsigned char *s, int n)
{
    return n == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

/* writes the character at *s HTML-escaped and advances *s past it */
static void html_char(FILE *f, const unsigned char **s)
{
    unsigned char c = **s;
    int allowed, n = xml_char_len(*s, &allowed);
    if (!allowed) {
        fputs("\xef\xbf\xbd", f);
        *s += n;
        return;
    }
    switch (c) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:
        if ((c < 0x20 && c != '\t') || c == 0x7f || is_c1(*s, n))
            fputs("\xef\xbf\xbd", f);
        else
            fwrite(*s, 1, (size_t)n, f);
    }
    *s += n;
}

void esc_html(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p)
        html_char(f, &p);
}

void esc_markdown(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    if (*p && strchr("+-=!", *p)) {
        fputc('\\', f);
        fputc(*p++, f);
    }
    while (*p) {
        if (*p == '\n' || *p == '\r') {
            fputc(' ', f);
            p++;
        } else if (strchr("|\\`*_[]#~", *p)) {
            fputc('\\', f);
            fputc(*p++, f);
        } else {
            html_char(f, &p);
        }
    }
}

void esc_csv(FILE *f, const char *s)
{
    s = s ? s : "";
    int formula = s[0] && strchr("=+-@\t\r", s[0]) != NULL;
    int quote = strpbrk(s, ",\"\r\n") != NULL;
    if (quote)
        fputc('"', f);
    if (formula)
        fputc('\'', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_seq_len(p);
        if (n == 0) { /* not UTF-8: U+FFFD, so the file reads as UTF-8 */
            fputs("\xef\xbf\xbd", f);
            n = 1;
        } else if (*p == '"') {
            fputs("\"\"", f);
        } else if ((*p < 0x20 && *p != '\t' && *p != '\r' && *p != '\n') || *p == 0x7f ||
                   is_c1(p, n)) {
            fputs("\xef\xbf\xbd", f); /* ESC and the like: no terminal codes in a cell */
        } else {
            fwrite(p, 1, (size_t)n, f);
        }
        p += n;
    }
    if (quote)
        fputc('"', f);
}

/* gnuplot's SVG terminal writes text as it is, escaping only & and <: "]]>" (which XML
 * forbids in text) is written "]] >" so that the SVG stays well-formed */
static int ends_cdata_mark(const unsigned char *p)
{
    return p[0] == ']' && p[1] == ']' && p[2] == '>';
}

void esc_gnuplot(FILE *f, const char *s)
{
    fputc('\'', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        int allowed, n = xml_char_len(p, &allowed);
        if (!allowed) { /* gnuplot would copy the bytes into the SVG as they are */
            fputs("\xef\xbf\xbd", f);
        } else if (*p == '\'') {
            fputs("''", f);
        } else if (*p < 0x20 || *p == 0x7f || is_c1(p, n)) {
            fputc(' ', f);
        } else if (ends_cdata_mark(p)) {
            fputs("]] ", f); /* the '>' follows as the next character */
            n = 2;
        } else {
            fwrite(p, 1, (size_t)n, f);
        }
        p += n;
    }
    fputc('\'', f);
}

void esc_filename(const char *s, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = s ? s : ""; *p && n + 1 < len; p++) {
        char c = *p;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || (c == '.' && n > 0);
        out[n++] = ok ? c : '_';
    }
    if (n == 0 && len > 1)
        out[n++] = '_';
    if (len)
        out[n < len ? n : len - 1] = 0;
}

/* the escape of the control or invalid byte c into out[5] */
static void term_escape_byte(unsigned char c, char out[5])
{
    switch (c) {
    case 0x1b: snprintf(out, 5, "\\e"); break;
    case '\n': snprintf(out, 5, "\\n"); break;
    case '\r': snprintf(out, 5, "\\r"); break;
    case '\t': snprintf(out, 5, "\\t"); break;
    default: snprintf(out, 5, "\\x%02x", c);
    }
}

/* bytes of the character at p that are safe on a terminal (0: escape p[0]) */
static int term_char_len(const unsigned char *p, size_t left)
{
    if (p[0] < 0x20 || p[0] == 0x7f)
        return 0;
    if (p[0] < 0x80)
        return 1;
    unsigned char tmp[4] = {0};
    memcpy(tmp, p, left < 4 ? left : 4);
    int n = utf8_seq_len(tmp);
    if (is_c1(p, n))
        return 0; /* C1 controls (U+0080..U+009F): some terminals obey them */
    return n;
}

void esc_term_n(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    for (size_t i = 0; i < n;) {
        int k = term_char_len(p + i, n - i);
        if (k > 0) {
            fwrite(p + i, 1, (size_t)k, f);
            i += (size_t)k;
        } else {
            char e[5];
            term_escape_byte(p[i++], e);
            fputs(e, f);
        }
    }
}

void esc_term(FILE *f, const char *s)
{
    s = s ? s : "";
    esc_term_n(f, s, strlen(s));
}

size_t esc_term_buf(char *out, size_t n, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t len = strlen((const char *)p), o = 0, i = 0, room = n > 4 ? n - 4 : 0;
    while (i < len) {
        int k = term_char_len(p + i, len - i);
        char e[5];
        if (k <= 0)
            term_escape_byte(p[i], e);
        size_t w = k > 0 ? (size_t)k : strlen(e);
        if (o + w > room)
            break;
        memcpy(out + o, k > 0 ? (const char *)p + i : e, w);
        o += w;
        i += k > 0 ? (size_t)k : 1;
    }
    if (i < len && n >= 4) { /* truncated: 3 bytes were kept for the dots */
        memcpy(out + o, "...", 3);
        o += 3;
    }
    if (n)
        out[o < n ? o : n - 1] = 0;
    return o < n ? o : (n ? n - 1 : 0);
}

const char *term_safe(const char *s)
{
    static char ring[8][1024];
    static unsigned next;
    char *out = ring[next++ % 8];
    esc_term_buf(out, sizeof ring[0], s);
    return out;
}
