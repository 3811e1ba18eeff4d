/* harness/formats/tokenizer_steps.h: the normalizers and pre-tokenizers a BPE tokenizer.json may name, as
 * steps the encoder runs (tokenizer_normalize.c, tokenizer_pretok.c), and the splitting they share. */
#ifndef TOKENIZER_STEPS_H
#define TOKENIZER_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include <oniguruma.h>

/* ---- normalizers ------------------------------------------------------------------------------ */

typedef enum { NORM_NFC, NORM_NFKC, NORM_NFD, NORM_NFKD, NORM_PREPEND, NORM_REPLACE } norm_kind;

typedef struct {
    norm_kind kind;
    char *text;         /* Prepend's prefix, Replace's content */
    size_t text_len;
    OnigRegex re;       /* Replace's pattern (a String pattern compiled escaped, as the library does) */
} norm_step;

/* unicode_norm_compat.c (generated): per form (NFC, NFKC, NFD, NFKD, in norm_kind's order) the
 * code point ranges the tokenizers library leaves alone while utf8proc changes them */
typedef struct {
    const uint32_t (*ranges)[2];
    int n;
} norm_compat;
extern const norm_compat norm_compat_kept[4];

/* ---- pre-tokenizers --------------------------------------------------------------------------- */

typedef enum { PRE_SPLIT, PRE_METASPACE, PRE_DIGITS, PRE_BYTE_LEVEL } pre_kind;
/* the library's SplitDelimiterBehavior */
typedef enum {
    SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_WITH_PREVIOUS, SPLIT_MERGED_WITH_NEXT,
    SPLIT_CONTIGUOUS
} split_behavior;
typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } prepend_scheme;

typedef struct {
    pre_kind kind;
    OnigRegex re;              /* Split's pattern; ByteLevel's GPT-2 pattern when use_regex */
    split_behavior behavior;   /* Split */
    int invert;                /* Split */
    char repl[5];              /* Metaspace's replacement character (UTF-8) */
    size_t repl_len;
    uint32_t repl_cp;
    prepend_scheme prepend;    /* Metaspace */
    int split;                 /* Metaspace: split before every replacement character */
    int individual_digits;     /* Digits */
    int add_prefix_space;      /* ByteLevel */
} pre_step;

/* ---- what the steps share ------------------------------------------------------------------------ */

/* a piece of text: [beg, end) of a buffer; at_start: it begins at byte 0 of the encoded text
 * (Metaspace's prepend_scheme "first") */
typedef struct {
    size_t beg, end;
    int at_start;
} piece;

typedef struct {
    char *buf;
    size_t len, cap;
    piece *p;
    size_t n, cap_p;
} piece_list;

/* n bytes of s onto the end of l->buf (no piece made); 0, or -1 out of memory */
int piece_append(piece_list *l, const char *s, size_t n);

/* the library's find_matches: the text cut into spans, each a match of the pattern or not */
typedef struct {
    size_t beg, end;
    int is_match;
} span;

typedef struct {
    span *v;
    size_t n, cap;
} span_list;

/* scratch of one encode call */
typedef struct {
    OnigMatchParam *mp;   /* Oniguruma's backtracking limits */
    span_list spans, kept;
    piece_list a, b;      /* the pre-tokenizers' input and output, swapped after each step */
    size_t fail_offset;   /* where a regex search that failed began, in the text it searched */
} step_work;

/* results: BPE_OK (0), or BPE_NO_MEMORY / BPE_REGEX_LIMIT / BPE_REGEX_ERROR of
 * tokenizer_bpe_internal.h */

/* text[len] through the steps into *out (malloc'ed, *out_len bytes); valid UTF-8 in and out */
int norm_run(const norm_step *s, int n, const char *text, size_t len, step_work *w, char **out,
             size_t *out_len);
/* text[len] through the steps: the pieces in w->a (w->a.buf holds them) */
int pretok_run(const pre_step *s, int n, const char *text, size_t len, int at_start,
               step_work *w);

/* the regex's matches in text[len] as the library's find_matches finds them (onig's find_iter:
 * an empty match right after a match is skipped) */
int regex_spans(OnigRegex re, const char *text, size_t len, step_work *w, span_list *out);
/* spans -> the pieces to keep (is_match: removed) by behavior, after inverting when asked */
int split_by_behavior(const span_list *in, split_behavior behavior, int invert, span_list *out);
int span_push(span_list *l, size_t beg, size_t end, int is_match);

/* Unicode "numeric" (Nd, Nl, No), as Rust's char::is_numeric that the Digits step uses */
int unicode_is_numeric(uint32_t cp);
/* the code point at s[*i] (valid UTF-8), *i moved past it */
uint32_t utf8_next(const unsigned char *s, size_t *i);

int step_work_init(step_work *w);   /* 0, or -1 out of memory */
void step_work_free(step_work *w);
void norm_step_free(norm_step *s);
void pre_step_free(pre_step *s);

/* Oniguruma with the limits of tokenizer_bpe_internal.h, from text[pos] */
int regex_search(OnigRegex re, const char *text, size_t len, size_t pos, step_work *w,
                 OnigRegion *r);

#endif
