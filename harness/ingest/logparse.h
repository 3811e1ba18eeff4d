/* harness/ingest/logparse.h: training-log parsers (one table of functions per format, like
 * devices/device.h for backends) and the reader that detects the format and runs them line by line. */
#ifndef LOGPARSE_H
#define LOGPARSE_H

#include <stddef.h>
#include <stdint.h>

/* which fields of an lp_step a line gave */
enum {
    LP_LOSS = 1u << 0, LP_GRAD_NORM = 1u << 1, LP_LR = 1u << 2, LP_TOKENS = 1u << 3,
    LP_STEP_MS = 1u << 4, LP_TOKENS_PER_S = 1u << 5, LP_MEM_PEAK = 1u << 6,
    LP_MEM_TOTAL = 1u << 7, LP_MEM_USED = 1u << 8, LP_LOSS_SCALE = 1u << 9, LP_SKIPPED = 1u << 10
};

#define LP_N_FIELDS 11 /* the fields above, bits 0..10 */
/* what a field may hold (lp_step_set): loss any real (NaN, Inf: divergence); grad_norm >= 0,
 * NaN or +Inf; lr finite >= 0; step_ms, tokens_per_s, tokens and the memory figures finite,
 * >= 0 and below these caps. A value outside is left out of the step (lp_step.rejected). */
#define LP_CAP_STEP_MS 1e9       /* ms: 11.6 days for one step */
#define LP_CAP_TOKENS 1e13       /* tokens in one step, and tokens per second */
#define LP_CAP_MEM 1152921504606846976.0 /* bytes: 2^60, 1 EiB */
#define LP_LINE_MAX 65536 /* the longest line parsed (exec/ingest cut longer ones there) */

#define LP_MAX_STEP 2000000000 /* the highest step number a parser gives (an int, with room) */
#define LP_RANK_BAD (-2) /* a "rank" that is no rank (1.5, -1, 1e9): the parsers skip the line */
typedef struct {
    int step;   /* optimizer step: 1-based once the reader has it (0-based series shifted) */
    int rank;   /* -1 when the line does not say */
    unsigned has;
    double loss, grad_norm, lr, step_ms, tokens_per_s;
    int64_t tokens, mem_peak_bytes, mem_used_bytes, mem_total_bytes;
    double loss_scale; /* fp16 loss scaling (a HARNESS_STEP's "loss_scale"), with skipped 0/1 */
    int64_t skipped;
    /* a HARNESS_STEP's "expert_tokens" (sparse-MoE routing): the raw text of its array inside
     * the line (or inside the reader's clean copy of a line that had ANSI escape sequences),
     * valid until the next line is read (lp_expert_tokens reads it); NULL when absent */
    const char *expert_tokens;
    size_t expert_tokens_len;
    /* the fields the line gave out of range (LP_* bits; never in has), each one's value at
     * rejected_value[bit index]: the recorder warns about them, the line's other fields kept */
    unsigned rejected;
    double rejected_value[LP_N_FIELDS];
} lp_step;

#define LP_MAX_META 32 /* keys a line keeps; more, or a key of LP_KEY bytes or more, are counted left out */
#define LP_KEY 64
#define LP_VALUE 256
typedef struct {
    char key[LP_KEY], value[LP_VALUE];
} lp_kv;

/* what one line said: a step (has_step), metadata about the run (meta), or both */
typedef struct {
    int has_step;
    lp_step step;
    int n_meta;
    lp_kv meta[LP_MAX_META];
    int meta_from_workload; /* the metadata is the workload's own (HARNESS_META), not a parser's */
    int meta_left_out, meta_cut; /* keys past LP_MAX_META or too long; values cut to LP_VALUE - 1 */
} lp_event;

#define LP_MAX_RANKS 1024 /* ranks 0..1023 are kept; a line of a higher rank is skipped */
typedef struct {
    int seen, epoch, n;
    double mean;
} lp_seed_mem;
#define LP_MAX_KEYS 16 /* --keys pairs: every field once, some twice */
/* the parsers' memory between lines, and the options that shape them */
typedef struct {
    /* jsonl: field name ("step", "loss", ...) -> the JSON key holding it */
    char key_field[LP_MAX_KEYS][LP_KEY], key_json[LP_MAX_KEYS][LP_KEY];
    int n_keys;
    int line_rank;                    /* the rank tag of the line being parsed, -1 none */
    /* whose memory (below) the line uses: its rank tag, else its file's rank (lp_reader's
     * source_rank), else 0; may be >= LP_MAX_RANKS (then the parsers skip the line) */
    int mem_rank;
    int trainer_logs[LP_MAX_RANKS];   /* trainer: log dicts with a loss seen so far, per rank */
    lp_seed_mem seed[LP_MAX_RANKS];   /* seed: the previous running mean, per rank */
    int mllog_losses[LP_MAX_RANKS];   /* mllog: loss events seen so far, per rank */
    double mllog_batch;               /* mllog: global_batch_size when logged, else 0 */
} lp_state;

typedef struct {
    const char *name;    /* --format NAME */
    const char *summary; /* one line for --help and docs */
    /* 1 when the line looks like this format (cheap; no state) */
    int (*detect)(const char *line, size_t len);
    /* fills *ev from one line (never longer than len, which may hold NULs); returns 1 when ev
     * holds a step or metadata, 0 for a line it skips. Never fails on bad input. */
    int (*parse)(const char *line, size_t len, lp_state *st, lp_event *ev);
} log_parser;

/* the formats in detection order, NULL-terminated */
const log_parser *const *lp_parsers(void);
const log_parser *lp_find(const char *name);
/* "harness, trainer, seed, ..." */
void lp_format_names(char *out, size_t n);

typedef struct {
    const log_parser *forced; /* --format, or NULL for detection */
    /* the format whose steps are taken: the first that gave one, until another gives a step
     * with a loss while the locked one has given none (DeepSpeed's engine lines, then
     * Trainer's dicts); a HARNESS_META line locks the harness format for good */
    const log_parser *locked;
    int offset;               /* 1 when the locked format's first step was 0 (0-based) */
    int stepped;              /* the locked format gave a step (offset is known) */
    int lossy;                /* the locked format gave a step with a loss */
    int source_rank;          /* the rank of untagged lines (ingest: file k of several is rank
                               * k), set before each line; 0 (or -1): rank 0 */
    lp_state st;
    long lines, steps;
    char clean[LP_LINE_MAX]; /* a line with its ANSI escape sequences taken out */
} lp_reader;

/* format NULL: detect; keys "field=json_key,..." for jsonl (NULL: the protocol's names).
 * Returns 0, or 2 with a message in err (unknown format, bad --keys). */
int lp_reader_init(lp_reader *r, const char *format, const char *keys, char *err, size_t n);
/* One line without its newline. ANSI escape sequences (colours: CSI ... final byte; OSC ...
 * BEL or ST; other ESC sequences) are taken out first (of its first LP_LINE_MAX bytes). A
 * leading torchrun/DeepSpeed rank tag ("[rank1]:", "[default1]:", "[Rank 1]") sets the rank; an untagged line uses the parser memory (Trainer's
 * dict count, seed's running mean, mllog's count) of r->source_rank. Returns 1 when ev holds
 * something. */
int lp_read_line(lp_reader *r, const char *line, size_t len, lp_event *ev);

/* ---- helpers the parsers share (logparse_dict.c) ---------------------------------------- */
typedef enum { LPV_NUM, LPV_STR, LPV_BOOL, LPV_NULL, LPV_OBJ, LPV_ARR } lpv_type;
typedef struct {
    lpv_type type;
    double num;    /* LPV_NUM (NaN, inf accepted in Python's and JSON-ish spellings), LPV_BOOL */
    const char *p; /* the raw text: a string's inside without quotes, an object's braces */
    size_t len;
} lp_value;
/* Walks the top-level pairs of a JSON object or Python dict repr starting at s[0] == '{'.
 * fn returns nonzero to stop early. Returns 0 when the dict is whole up to its '}', -1 when it
 * is malformed or truncated (fn may have seen some pairs: callers discard them). */
int lp_dict_each(const char *s, size_t len,
                 int (*fn)(const char *key, size_t klen, const lp_value *v, void *arg), void *arg);
int lp_key_is(const char *key, size_t klen, const char *name);
/* a string value unescaped (\" \\ \n \t \uXXXX as '?') into out[n], cut to fit; a number in the
 * fewest digits that read back to it (real_text_shortest: 369.8, not 369.80000000000001) */
void lp_value_text(const lp_value *v, char *out, size_t n);
/* the first occurrence of needle in s[0..len) (NULs allowed), or NULL */
const char *lp_find_text(const char *s, size_t len, const char *needle);
/* a number at s (strtod's syntax plus nan/inf/NaN/Infinity); chars used, 0 when none */
size_t lp_number(const char *s, size_t len, double *out);
/* adds key=value to ev's metadata (cut to fit; ignored when full) */
void lp_meta_add(lp_event *ev, const char *key, const char *value);
/* The counts of a HARNESS_STEP "expert_tokens" array: [[layer 0's count per expert], [layer
 * 1's], ...], whole numbers >= 0, every layer as long, within the store's MoE limits. Into
 * *counts (grown as needed through *cap; the caller frees it), *layers and *experts. 0, or -1
 * with the reason in why[n] (logparse_routing.c). */
int lp_expert_tokens(const char *text, size_t len, int64_t **counts, size_t *cap, int *layers,
                     int *experts, char *why, size_t n);
/* Stores a number into the step field named name ("loss", "grad_norm", ...). 1 stored, -1 a
 * known field whose value is out of its range (above: left out, noted in s->rejected; a step
 * or rank that is not one leaves s->step as it was / sets LP_RANK_BAD), 0 an unknown name. */
int lp_step_set(lp_step *s, const char *name, double v);
/* the name of the field of bit (LP_LOSS ...) and what it may hold, for messages */
const char *lp_field_name(unsigned bit);
const char *lp_field_range(unsigned bit);
/* Copies in[0..len) to out without ANSI escape sequences, at most cap bytes (in == out is
 * fine: it only shrinks). Returns the length written. */
size_t lp_strip_ansi(const char *in, size_t len, char *out, size_t cap);

#endif
