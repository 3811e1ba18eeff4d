/* harness/util/escape.h: escaping of user strings (scenario, device and file names) for every output
 * the harness writes: HTML/XML, Markdown table cells, CSV fields and gnuplot string literals. */
#ifndef ESCAPE_H
#define ESCAPE_H

#include <stdio.h>

/* HTML and XML text and attribute values: & < > " ' become entities; control characters
 * (other than tab), bytes that are not valid UTF-8 and the noncharacters U+FFFE and U+FFFF
 * (not XML characters) become U+FFFD, so the output stays
 * well-formed XML 1.0 whatever the input. */
void esc_html(FILE *f, const char *s);
/* one Markdown table cell: HTML-escaped as above, then | \ ` * _ [ ] < > # and leading
 * + - = ! escaped with a backslash or an entity, newlines as spaces. */
void esc_markdown(FILE *f, const char *s);
/* one CSV field (RFC 4180): quoted when it holds , " CR or LF, quotes doubled. A text field
 * that starts with = + - @ TAB or CR is prefixed with ' so spreadsheets do not run it as a
 * formula (OWASP's CSV injection rule). Bytes that are not UTF-8 and control characters other
 * than TAB, CR and LF become U+FFFD, so the file reads as UTF-8 with no terminal codes. */
void esc_csv(FILE *f, const char *s);
/* a gnuplot single-quoted string literal, quotes included: ' doubled, control characters
 * (newlines end a gnuplot command) replaced by spaces; since gnuplot copies text into its SVG
 * as it is, bytes that are not UTF-8 (and U+FFFE, U+FFFF) become U+FFFD and "]]>" becomes
 * "]] >", so the SVG stays well-formed XML. In a single-quoted string gnuplot
 * expands neither backquotes, nor macros (@name), nor backslash escapes, and system() is text.
 * Use with `noenhanced` so ^ _ { } @ & are not read as markup. */
void esc_gnuplot(FILE *f, const char *s);
/* a file-name part: every byte outside [A-Za-z0-9._-] becomes '_', a leading '.' too; at most
 * len-1 bytes; "_" for an empty string. */
void esc_filename(const char *s, char *out, size_t len);

/* text for a terminal (messages, plain-text listings): every control byte (C0, DEL and the
 * C1 range U+0080..U+009F) and every byte that is not valid UTF-8 written as \e (ESC), \n,
 * \r, \t or \xNN, so that user data cannot move the cursor, retitle or recolour the
 * terminal; valid UTF-8 text is written unchanged. esc_term_n takes n bytes of s. */
void esc_term(FILE *f, const char *s);
void esc_term_n(FILE *f, const char *s, size_t n);
/* s escaped as esc_term does into out[n], always NUL-terminated, cut short with "..." when
 * it does not fit (never inside a character); returns the length written */
size_t esc_term_buf(char *out, size_t n, const char *s);
/* s escaped as esc_term does into one of 8 rotating static buffers of 1024 bytes (truncated
 * with "..."), for printf arguments: valid until 8 more calls. Not thread-safe. */
const char *term_safe(const char *s);

/* length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there are not one */
int utf8_seq_len(const unsigned char *s);

#endif
