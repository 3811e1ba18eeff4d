/* harness/ingest/exec_record.h: the recorder shared by exec and ingest: output bytes in, lines split,
 * parsed (harness/ingest/logparse.h), every step stored as it comes, the raw log kept, the status. */
#ifndef EXEC_RECORD_H
#define EXEC_RECORD_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "logparse.h"
#include "store/store.h"

#define REC_MAX_SOURCES 64
#define REC_LINE_MAX LP_LINE_MAX
#define REC_TAIL 6
#define REC_MAX_KEYS 256
#define REC_MAX_META_KEYS 128 /* keys a workload may add (HARNESS_META, trainer_*, mllog_*) */
#define REC_LOG_LIMIT ((size_t)256 << 20) /* raw log bytes kept per run */
#define REC_MAX_FIELD_WARNINGS 20 /* out-of-range fields warned about; later ones counted */

typedef struct {
    char *name;         /* "stdout", "stderr", a file path (whole: run_logs names it so) */
    char *line;         /* the line being gathered */
    size_t len;
    int overflow;       /* the current line passed REC_LINE_MAX: rest skipped */
    int rank;           /* rank of untagged lines (ingest: file k of several is rank k), or -1 */
    int first_line;     /* the line being gathered is the source's first (a UTF-8 BOM is dropped) */
    long line_no;       /* the line being gathered: 1 + the newlines before it (for messages) */
} rec_source;

/* the distinct steps of rank 0 stored so far (open addressing; 0 marks a free slot); bad[k]:
 * the kept loss of slots[k]'s step is NaN or Inf (n_bad of them) */
typedef struct {
    int *slots;
    unsigned char *bad;
    size_t cap, n, n_bad;
} rec_step_set;

typedef struct {
    store *st;
    int64_t run_id;
    lp_reader reader;
    int64_t tokens_per_step; /* from the scenario when the lines do not say; 0 unknown */
    int scales_loss; /* the scenario's dtype is fp16 (1) or another (0); -1 unknown (no
                        scenario): where a line gives no loss scale, a non-finite grad norm
                        diverges the run only when 0 */
    rec_source src[REC_MAX_SOURCES];
    int n_src;
    /* the newest step of each rank, merged as lines complete it */
    step_record last[LP_MAX_RANKS];
    unsigned last_has[LP_MAX_RANKS];
    int ranks_seen;          /* highest rank + 1 */
    int steps_stored; /* distinct steps of rank 0 with a loss */
    int diverged_step; /* the first whose kept loss is NaN/Inf (set when the run ends), or 0 */
    rec_step_set steps_seen;
    int final_step;          /* the highest of them; final_loss is its (latest) loss */
    double final_loss;
    int warned_rank;         /* a rank past LP_MAX_RANKS was reported */
    long bad_fields;         /* fields left out as out of range (the first few warned about) */
    unsigned char lossy[LP_MAX_RANKS]; /* the rank gave a step with a loss */
    int n_lossy, lossy_rank; /* how many ranks did; the highest of them */
    int series_rank;         /* the rank whose steps are the run's: 0, or the only lossy one */
    int n_meta_keys, warned_meta; /* keys the workload added; the cap was reported */
    int warned_meta_line;         /* a line's keys left out or values cut was reported */
    char tail[REC_TAIL][160];
    int n_tail;
    char keys[REC_MAX_KEYS][LP_KEY + 16]; /* run_extra keys so far: the first value is kept */
    int n_keys;
    /* the raw log not yet stored */
    char *log;
    size_t log_len, log_cap, log_total;
    int log_src;
    int failed;              /* the store refused a write (message printed) */
    int saw_nul;             /* a NUL byte came: binary data, not a text log */
    int64_t *routing;        /* rank 0's expert counts of the newest step (HARNESS_STEP) */
    size_t routing_cap;
    int routing_layers, routing_experts; /* the counts' shape, from the first step with them */
} recorder;

/* starts on a begun run; 0 or 2 (bad --format/--keys, message printed) */
int rec_init(recorder *r, store *st, int64_t run_id, const char *format, const char *keys,
             int64_t tokens_per_step);
/* the scenario's dtype (NULL or "": none given): whether the run scales its loss (fp16) */
void rec_set_dtype(recorder *r, const char *dtype);
/* registers a source of bytes; its index, or -1 when there are too many */
int rec_source_add(recorder *r, const char *name, int rank);
/* bytes from a source as they came (any bytes; lines split on \n and \r) */
void rec_feed(recorder *r, int src, const char *data, size_t len);
/* parses what is left of every source's last line and stores the log's rest */
void rec_flush(recorder *r);
/* a run_extra key unless it is already there */
void rec_extra(recorder *r, const char *key, const char *value);
/* Ends the run. When no step of rank 0 had a loss and exactly one other rank's did (Megatron
 * prints the loss on the last rank), that rank's steps (from rank_steps) become the run's,
 * noted as series_rank in run_extra (not in the harness format: its steps are rank 0's). Then: ok when ended_ok and a step was stored, diverged on
 * a NaN/Inf loss, else
 * failed with why (e.g. "exit code 3") plus the last lines of output. Prints the final line
 * on out. Returns 0 ok, 1 otherwise. */
int rec_finish(recorder *r, int ended_ok, const char *why, FILE *out);
void rec_free(recorder *r);

#endif
