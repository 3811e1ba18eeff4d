/* harness/ingest/exec_record.c: the recorder of exec and ingest: splits output into lines, runs the
 * log parsers, merges and stores each step at once, keeps the raw log and ends the run. */
#define _POSIX_C_SOURCE 200809L
#include "exec_record.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/util.h"

#define LOG_CHUNK 65536
/* last_has: the rank has rows in rank_steps (a tagged line said so); kept across its steps */
#define REC_IN_RANK_STEPS (1u << 30)

int rec_init(recorder *r, store *st, int64_t run_id, const char *format, const char *keys,
             int64_t tokens_per_step)
{
    memset(r, 0, sizeof *r);
    r->st = st;
    r->run_id = run_id;
    r->tokens_per_step = tokens_per_step;
    r->log_src = -1;
    r->final_loss = NAN;
    r->scales_loss = -1;
    char err[512];
    if (lp_reader_init(&r->reader, format, keys, err, sizeof err)) {
        log_error("%s", err);
        return 2;
    }
    return 0;
}

void rec_set_dtype(recorder *r, const char *dtype)
{
    r->scales_loss = !dtype || !dtype[0] ? -1 : strcmp(dtype, "fp16") == 0;
}

int rec_source_add(recorder *r, const char *name, int rank)
{
    if (r->n_src == REC_MAX_SOURCES)
        return -1;
    rec_source *s = &r->src[r->n_src];
    memset(s, 0, sizeof *s);
    s->rank = rank;
    s->first_line = 1;
    s->line_no = 1;
    if (!(s->name = strdup(name)) || !(s->line = malloc(REC_LINE_MAX))) {
        log_error("out of memory for a line buffer of %s", name);
        free(s->name);
        s->name = NULL;
        return -1;
    }
    return r->n_src++;
}

static void store_log(recorder *r)
{
    if (r->log_len && r->log_src >= 0 && !r->failed &&
        store_add_log(r->st, r->run_id, r->src[r->log_src].name, r->log, r->log_len))
        r->failed = 1;
    r->log_len = 0;
}

/* the raw bytes, kept in order; stored in chunks of one source */
static void keep_log(recorder *r, int src, const char *data, size_t len)
{
    if (len > REC_LOG_LIMIT - r->log_total) { /* also when the limit was met exactly before */
        len = REC_LOG_LIMIT - r->log_total;
        rec_extra(r, "log_truncated", "the raw log passed 256 MiB; the rest was not kept");
    }
    if (!len)
        return;
    r->log_total += len;
    if (src != r->log_src || r->log_len + len > LOG_CHUNK)
        store_log(r);
    r->log_src = src;
    if (len > LOG_CHUNK) {
        if (!r->failed && store_add_log(r->st, r->run_id, r->src[src].name, data, len))
            r->failed = 1;
        return;
    }
    if (!r->log && !(r->log = malloc(LOG_CHUNK))) {
        r->failed = 1;
        log_error("out of memory for the raw log");
        return;
    }
    memcpy(r->log + r->log_len, data, len);
    r->log_len += len;
}

void rec_extra(recorder *r, const char *key, const char *value)
{
    for (int i = 0; i < r->n_keys; i++)
        if (strcmp(r->keys[i], key) == 0)
            return;
    if (r->n_keys < REC_MAX_KEYS)
        snprintf(r->keys[r->n_keys++], sizeof r->keys[0], "%s", key);
    if (!r->failed && store_add_extra(r->st, r->run_id, key, value))
        r->failed = 1;
}

/* 1 when key is one of the recorder's own run_extra keys (or in one of its namespaces: log.N,
 * env.NAME, the parsers' trainer_* and mllog_*), which the workload's metadata may not take */
static int recorder_key(const char *key)
{
    static const char *const own[] = {"exit_code", "signal", "log_truncated", "log_format",
                                      "loss_kind", "command", "cwd", "recorded_by",
                                      "series_rank", "fields_out_of_range"};
    static const char *const prefixes[] = {"log.", "env.", "trainer_", "mllog_"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcmp(key, own[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

/* a run_extra key for a key the workload chose: the characters a baseline file's keys may have
 * ([A-Za-z0-9_.-], others become '_'), and "workload." before the names that baseline files and
 * the runs table already use (host, device_name, world_size, ...), so `baseline record` of the
 * run writes no key twice, and before the recorder's own keys (own: the key is not the
 * workload's but a parser's, as the seed parser's loss_kind). Returns 1 when it took a
 * recorder's key's name. */
static int extra_key(const char *key, int own, char *out, size_t n)
{
    static const char *const taken[] = {
        "format", "label", "scenario", "scenario_hash", "device", "device_name", "vendor",
        "driver_version", "runtime_version", "dtype", "world_size", "mem_total_bytes", "host",
        "date", "finished_at", "harness_version", "git_commit", "status", "scenario_json",
        "steps", STORE_ENSEMBLE_MEMBER_KEY /* marks a perturbed run: never a workload's */,
        STORE_STEPS_OVERRIDE_KEY /* marks a run --steps made: never a workload's */};
    char clean[LP_KEY]; /* the name as stored: "exit code" is exit_code too */
    size_t o = 0;
    for (const char *p = key; *p && o + 1 < sizeof clean; p++)
        clean[o++] = (strchr("_.-", *p) || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                      (*p >= 'A' && *p <= 'Z')) ? *p : '_';
    clean[o] = 0;
    int reserved = !own && recorder_key(clean), clash = !clean[0] || reserved;
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
        clash |= strcmp(clean, taken[i]) == 0;
    snprintf(out, n, "%s%s", clash ? "workload." : "", clean);
    return reserved;
}

/* the workload's self-report: the runs columns it names, and every key in run_extra */
static void take_meta(recorder *r, const lp_event *ev, int line_rank)
{
    /* the run is rank 0's (its steps are rank 0's): another rank's self-report (by its "rank"
     * key, its line's rank tag or its rank file), which may come first, would name its device */
    if (ev->n_meta && line_rank > 0)
        return;
    for (int i = 0; i < ev->n_meta; i++) {
        long rank = 0;
        if (strcmp(ev->meta[i].key, "rank") == 0 && parse_long(ev->meta[i].value, &rank) == 0 &&
            rank > 0)
            return;
    }
    if ((ev->meta_left_out || ev->meta_cut) && !r->warned_meta_line)
        log_warn("a metadata line had %d keys left out and %d values cut: a line keeps at most "
                 "%d keys of at most %d bytes, values of at most %d bytes (said once)",
                 ev->meta_left_out, ev->meta_cut, LP_MAX_META, LP_KEY - 1, LP_VALUE - 1);
    r->warned_meta_line |= ev->meta_left_out || ev->meta_cut;
    for (int i = 0; i < ev->n_meta; i++) {
        const lp_kv *kv = &ev->meta[i];
        char key[LP_KEY + 16];
        int reserved = extra_key(kv->key, !ev->meta_from_workload, key, sizeof key);
        int known = 0;
        for (int k = 0; k < r->n_keys; k++)
            known |= strcmp(r->keys[k], key) == 0;
        if (known)
            continue;
        if (reserved) /* the name as stored, after "workload." */
            log_warn("HARNESS_META key '%s' is the recorder's own; the workload's value is "
                     "stored as '%s'", key + strlen("workload."), key);
        if (r->n_meta_keys == REC_MAX_META_KEYS) { /* a key per step would grow run_extra */
            if (!r->warned_meta)
                log_warn("the workload named more than %d metadata keys; '%s' and later new "
                         "keys are left out", REC_MAX_META_KEYS, key);
            r->warned_meta = 1; /* once, not a count: a log may repeat it without end */
            continue;
        }
        r->n_meta_keys++;
        const char *name = strcmp(kv->key, "device_name") ? NULL : kv->value;
        const char *driver = strcmp(kv->key, "driver") ? NULL : kv->value;
        char runtime[LP_VALUE + 8] = "";
        if (strcmp(kv->key, "torch") == 0)
            snprintf(runtime, sizeof runtime, "torch %s", kv->value);
        long ws = 0, mem = 0;
        if (strcmp(kv->key, "world_size") == 0)
            parse_long(kv->value, &ws);
        if (strcmp(kv->key, "mem_total_bytes") == 0)
            parse_long(kv->value, &mem);
        if ((name || driver || runtime[0] || ws > 0 || mem > 0) && !r->failed &&
            store_set_run_identity(r->st, r->run_id, name, driver, runtime,
                                   ws > 0 && ws < 1000000 ? (int)ws : 0, mem))
            r->failed = 1;
        rec_extra(r, key, kv->value);
    }
}

/* merges a parsed step into the rank's newest step (the same step completed by a later line) */
static step_record *merge(recorder *r, int rank, const lp_step *s)
{
    step_record *m = &r->last[rank];
    /* lines of one step merge (DeepSpeed's engine line, then Megatron's with the loss; MLPerf's
     * tracked_stats and train_loss, the same loss twice); another loss for the step is the step
     * logged again (a replay after a resume): its latest values alone, as for a step logged
     * again later */
    int again = (s->has & LP_LOSS) && (r->last_has[rank] & LP_LOSS) &&
                !(m->loss == s->loss || (isnan(m->loss) && isnan(s->loss)));
    if (m->step != s->step || !r->last_has[rank] || again) {
        memset(m, 0, sizeof *m);
        m->step = s->step;
        m->loss = m->grad_norm = m->lr = m->step_ms = m->tokens_per_s = NAN;
        m->unrecorded = STEP_NO_LOSS | STEP_NO_GRAD_NORM | STEP_NO_LR | STEP_NO_STEP_MS |
                        STEP_NO_TOKENS_PER_S; /* stored as NULL until a line gives them */
        r->last_has[rank] = (1u << 31) | (r->last_has[rank] & REC_IN_RANK_STEPS);
    }
    unsigned h = s->has;
    if (h & LP_LOSS) m->loss = s->loss, m->unrecorded &= ~STEP_NO_LOSS;
    if (h & LP_GRAD_NORM) m->grad_norm = s->grad_norm, m->unrecorded &= ~STEP_NO_GRAD_NORM;
    if (h & LP_LR) m->lr = s->lr, m->unrecorded &= ~STEP_NO_LR;
    if (h & LP_TOKENS) m->tokens = s->tokens;
    if (h & LP_STEP_MS) m->step_ms = s->step_ms, m->unrecorded &= ~STEP_NO_STEP_MS;
    if (h & LP_TOKENS_PER_S)
        m->tokens_per_s = s->tokens_per_s, m->unrecorded &= ~STEP_NO_TOKENS_PER_S;
    if (h & LP_MEM_PEAK) m->mem_peak_bytes = s->mem_peak_bytes;
    if (h & LP_MEM_USED) m->mem_used_bytes = s->mem_used_bytes;
    if (h & LP_MEM_TOTAL) m->mem_total_bytes = s->mem_total_bytes;
    /* a loss scale goes with the line's skipped flag (true/false, 0/1): one without it, or
     * with one not given validly, is no loss scaling as far as the record goes, never a "no" */
    if ((h & LP_LOSS_SCALE) && (h & LP_SKIPPED)) {
        m->loss_scale = s->loss_scale; /* stored, with skipped, when > 0 */
        m->skipped = (int)s->skipped;
    }
    r->last_has[rank] |= h;
    if (!(r->last_has[rank] & LP_TOKENS) && r->tokens_per_step > 0)
        m->tokens = r->tokens_per_step;
    if (!(r->last_has[rank] & LP_TOKENS_PER_S) && m->tokens > 0 && m->step_ms > 0) {
        m->tokens_per_s = (double)m->tokens / (m->step_ms / 1000.0);
        m->unrecorded &= ~STEP_NO_TOKENS_PER_S;
    }
    return m;
}

/* rank 0's expert counts from the line into m (kept for later lines of the same step); a
 * malformed field is warned about and left out, the step kept */
static void take_routing(recorder *r, const lp_step *s, step_record *m)
{
    char why[160];
    int layers, experts;
    if (lp_expert_tokens(s->expert_tokens, s->expert_tokens_len, &r->routing, &r->routing_cap,
                         &layers, &experts, why, sizeof why)) {
        log_warn("step %d: expert_tokens left out: %s", s->step, why);
        return;
    }
    if (r->routing_layers && (layers != r->routing_layers || experts != r->routing_experts)) {
        /* a run's counts are one table of layers x experts: another shape is not that run's */
        log_warn("step %d: expert_tokens left out: %d layers x %d experts, where the run's "
                 "earlier steps have %d x %d", s->step, layers, experts, r->routing_layers,
                 r->routing_experts);
        return;
    }
    r->routing_layers = layers;
    r->routing_experts = experts;
    m->moe_layers = layers;
    m->moe_experts = experts;
    m->expert_tokens = r->routing;
}

/* grows the set to hold one more step; 0, or -1 out of memory */
static int step_set_grow(rec_step_set *set)
{
    if (2 * (set->n + 1) <= set->cap)
        return 0;
    size_t cap = set->cap ? set->cap * 2 : 1024;
    int *slots = calloc(cap, sizeof *slots);
    unsigned char *bad = calloc(cap, 1);
    if (!slots || !bad) {
        free(slots);
        free(bad);
        return -1;
    }
    for (size_t i = 0; i < set->cap; i++)
        if (set->slots[i]) {
            size_t k = ((size_t)set->slots[i] * 2654435761u) & (cap - 1);
            while (slots[k])
                k = (k + 1) & (cap - 1);
            slots[k] = set->slots[i];
            bad[k] = set->bad[i];
        }
    free(set->slots);
    free(set->bad);
    set->slots = slots;
    set->bad = bad;
    set->cap = cap;
    return 0;
}

/* the slot of step (>= 1), added when it was not there (*added 1, else 0); -1 out of memory */
static long step_set_slot(rec_step_set *set, int step, int *added)
{
    *added = 0;
    if (step_set_grow(set))
        return -1;
    size_t k = ((size_t)step * 2654435761u) & (set->cap - 1);
    for (; set->slots[k]; k = (k + 1) & (set->cap - 1))
        if (set->slots[k] == step)
            return (long)k;
    set->slots[k] = step;
    set->n++;
    *added = 1;
    return (long)k;
}

/* the lowest step whose kept loss is NaN or Inf, 0 when none is */
static int step_set_first_bad(const rec_step_set *set, int *by_grad_norm)
{
    int first = 0;
    *by_grad_norm = 0;
    for (size_t i = 0; i < set->cap && set->n_bad; i++)
        if (set->bad[i] && (!first || set->slots[i] < first)) {
            first = set->slots[i];
            *by_grad_norm = set->bad[i] == 2;
        }
    return first;
}

/* rank 0's step m with a loss was stored: counted once however often it is logged; whether its
 * kept loss (the latest line's: a step logged again keeps its latest values) is NaN or Inf */
static void count_step(recorder *r, const step_record *m)
{
    rec_step_set *set = &r->steps_seen;
    int added;
    long k = step_set_slot(set, m->step, &added);
    if (k < 0) {
        log_error("out of memory counting the steps of the run");
        r->failed = 1;
        return;
    }
    r->steps_stored += added;
    if (m->step >= r->final_step) {
        r->final_step = m->step;
        r->final_loss = m->loss;
    }
    /* a non-finite grad norm diverges a run without loss scaling, as a native run: where the
     * line gave a loss scale its skipped flag says (an fp16 step skipped for Inf/NaN gradients);
     * else where the scenario says the run does not scale the loss (not fp16) */
    int grad_bad = !(m->unrecorded & STEP_NO_GRAD_NORM) && !isfinite(m->grad_norm) &&
                   (m->loss_scale > 0 ? !m->skipped : r->scales_loss == 0);
    unsigned char bad = !isfinite(m->loss) ? 1 : grad_bad ? 2 : 0; /* 2: by the grad norm */
    if (!bad != !set->bad[k])
        set->n_bad = bad ? set->n_bad + 1 : set->n_bad - 1;
    set->bad[k] = bad;
}

static void take_step(recorder *r, const lp_step *s, int line_rank)
{
    int rank = s->rank >= 0 ? s->rank : line_rank >= 0 ? line_rank : 0;
    if (rank >= LP_MAX_RANKS) {
        if (!r->warned_rank)
            log_warn("rank %d: the recorder keeps ranks 0 to %d; the steps of higher ranks are "
                     "left out", rank, LP_MAX_RANKS - 1);
        r->warned_rank = 1;
        return;
    }
    step_record *m = merge(r, rank, s);
    if ((s->has & LP_LOSS) && !r->lossy[rank]) {
        r->lossy[rank] = 1;
        r->n_lossy++;
        r->lossy_rank = rank;
    }
    if (rank == 0 && s->expert_tokens)
        take_routing(r, s, m);
    if (rank + 1 > r->ranks_seen)
        r->ranks_seen = rank + 1;
    store_log(r); /* the log up to this step is kept with it */
    /* a tagged line's step goes to rank_steps, and so does an untagged line's once its rank
     * has rows there (DeepSpeed's "[Rank 0] step=N" beside Megatron's untagged loss line) */
    if (s->rank >= 0 || line_rank >= 0 || (r->last_has[rank] & REC_IN_RANK_STEPS)) {
        r->last_has[rank] |= REC_IN_RANK_STEPS;
        if (!r->failed && store_put_rank_step(r->st, r->run_id, rank, m))
            r->failed = 1;
    }
    if (rank != 0 || !(r->last_has[0] & LP_LOSS))
        return;
    if (!r->failed && store_put_step(r->st, r->run_id, m))
        r->failed = 1;
    if (!r->failed && (s->has & LP_LOSS)) /* counted when stored: none after a refused write */
        count_step(r, m);
}

/* the length of the valid UTF-8 sequence at p[0..n) (a byte >= 0x80), 0 when it is none (as
 * util's utf8_seq_len, within n bytes) */
static size_t utf8_sequence(const unsigned char *p, size_t n)
{
    size_t want = p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
                : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
    if (!want || want > n)
        return 0;
    for (size_t k = 1; k < want; k++)
        if ((p[k] & 0xC0) != 0x80)
            return 0;
    /* overlong forms, surrogates and code points above U+10FFFF are no UTF-8 either */
    if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0) ||
        (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))
        return 0;
    return want;
}

/* line[0..len) as text for the run's error into out[n]: control bytes as spaces, bytes that are
 * no UTF-8 (a compressed or binary file) as '?', a character never cut in two */
static void printable_text(const char *line, size_t len, char *out, size_t n)
{
    const unsigned char *u = (const unsigned char *)line;
    size_t o = 0;
    for (size_t k = 0; k < len && o + 1 < n;) {
        size_t seq = u[k] >= 0x80 ? utf8_sequence(u + k, len - k) : 1;
        if (seq > 1 && o + seq < n) {
            memcpy(out + o, line + k, seq);
            o += seq;
            k += seq;
            continue;
        }
        if (seq > 1) /* a whole character does not fit: the text ends before it */
            break;
        out[o++] = u[k] >= 0x80 ? '?' : u[k] < 0x20 || u[k] == 0x7F ? ' ' : line[k];
        k++;
    }
    out[o] = 0;
}

static void remember_tail(recorder *r, const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == len)
        return;
    if (r->n_tail == REC_TAIL) {
        memmove(r->tail[0], r->tail[1], sizeof r->tail[0] * (REC_TAIL - 1));
        r->n_tail--;
    }
    printable_text(line + i, len - i, r->tail[r->n_tail++], sizeof r->tail[0]);
}

/* the fields of a step line that were out of range and left out: a warning naming the file,
 * line and field for each of the first REC_MAX_FIELD_WARNINGS, then one saying so */
static void warn_rejected(recorder *r, const rec_source *s, const lp_step *step)
{
    for (int i = 0; i < LP_N_FIELDS; i++) {
        unsigned bit = 1u << i;
        if (!(step->rejected & bit))
            continue;
        if (++r->bad_fields <= REC_MAX_FIELD_WARNINGS)
            log_warn("%s:%ld: %s %g is out of range (%s): left out, the line's other fields "
                     "kept", s->name, s->line_no, lp_field_name(bit), step->rejected_value[i],
                     lp_field_range(bit));
        else if (r->bad_fields == REC_MAX_FIELD_WARNINGS + 1)
            log_warn("more fields out of range: left out without a warning each (their count "
                     "is fields_out_of_range in run_extra)");
    }
}

static void parse_line(recorder *r, const rec_source *s, const char *line, size_t len)
{
    lp_event ev;
    r->reader.source_rank = s->rank; /* an untagged line uses its file's parser memory */
    if (lp_read_line(&r->reader, line, len, &ev)) {
        take_meta(r, &ev, r->reader.st.line_rank >= 0 ? r->reader.st.line_rank : s->rank);
        if (ev.has_step && ev.step.rejected)
            warn_rejected(r, s, &ev.step);
        if (ev.has_step)
            take_step(r, &ev.step, s->rank);
    }
}

/* 1 when p starts a harness protocol tag */
static int is_harness_tag(const char *p, size_t left)
{
    static const char step[] = "HARNESS_STEP {", meta[] = "HARNESS_META {";
    return left >= sizeof step - 1 &&
           (memcmp(p, step, sizeof step - 1) == 0 || memcmp(p, meta, sizeof meta - 1) == 0);
}

/* where the second harness tag of line starts, len when it holds at most one */
/* where a torchrun rank tag ("[rank1]:", "[default1]:") ends at i: its '[', else i */
static size_t tag_start(const char *line, size_t i)
{
    if (i < 3 || line[i - 1] != ':' || line[i - 2] != ']')
        return i;
    for (size_t k = i - 2; k-- > 0 && i - k <= 24;)
        if (line[k] == '[')
            return k;
    return i;
}

static size_t second_tag(const char *line, size_t len)
{
    int seen = 0;
    for (size_t i = 0; i < len; i++)
        if (line[i] == 'H' && is_harness_tag(line + i, len - i) && seen++)
            return tag_start(line, i); /* a rank's tag goes with its line, not the one before */
    return len;
}

/* a last part of a line without its newline is cut off when it ends where a number could go on
 * (a digit, '.', 'e', 'E', '+', '-': "lm loss: 1.134567E+0" would read 10x too small); one
 * ending otherwise ('}', '|', ']', "tokens/s", "GB") is whole */
static int ends_cut(const char *line, size_t len)
{
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    return len && strchr("0123456789.eE+-", line[len - 1]);
}

/* A line holding several harness tags is several ranks' lines run together: print() writes a
 * line's text and its newline apart when Python is unbuffered, so torchrun's ranks sharing one
 * pipe interleave as "HARNESS_STEP {rank 0}HARNESS_STEP {rank 1}\n". Each part is parsed, a
 * part's torchrun tag with it. at_end: the source ended without its newline, so its last part
 * may be cut off */
static void take_line(recorder *r, rec_source *s, int at_end)
{
    /* colours out (of the parsers' view and of the error's last lines; the raw log keeps them) */
    s->len = lp_strip_ansi(s->line, s->len, s->line, s->len);
    const char *line = s->line;
    size_t len = s->len;
    if (s->first_line && len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
        line += 3; /* a UTF-8 byte order mark: a Windows editor's, not the line's */
        len -= 3;
    }
    remember_tail(r, line, len);
    for (size_t cut = second_tag(line, len); len; cut = second_tag(line, len)) {
        if (!(at_end && cut == len && ends_cut(line, cut)))
            parse_line(r, s, line, cut);
        else if (lp_find_text(line, cut, "loss")) /* a job killed mid-write: said */
            log_warn("%s:%ld: the last line has no newline and ends in a number that may be "
                     "cut: skipped", s->name, s->line_no);
        line += cut;
        len -= cut;
    }
    s->len = 0;
}

void rec_feed(recorder *r, int src, const char *data, size_t len)
{
    if (src < 0 || src >= r->n_src)
        return;
    keep_log(r, src, data, len);
    r->saw_nul |= memchr(data, 0, len) != NULL;
    rec_source *s = &r->src[src];
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (c == '\n' || c == '\r') {
            if (!s->overflow && s->len)
                take_line(r, s, 0);
            s->len = 0;
            s->overflow = 0;
            s->first_line = 0;
            s->line_no += c == '\n';
        } else if (s->len < REC_LINE_MAX) {
            s->line[s->len++] = c;
        } else if (!s->overflow) { /* a line this long is parsed as far as it went */
            take_line(r, s, 0);
            s->overflow = 1;
        }
    }
}

void rec_flush(recorder *r)
{
    for (int i = 0; i < r->n_src; i++) {
        rec_source *s = &r->src[i];
        if (s->len && !s->overflow)
            take_line(r, s, 1);
        s->len = 0;
    }
    store_log(r);
}

typedef struct {
    int rank;
    step_record *rows;
    size_t n, cap;
    int failed;
} rank_rows;

static int keep_rank_row(int rank, const step_record *row, void *arg)
{
    rank_rows *k = arg;
    if (rank != k->rank)
        return 0;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 256;
        step_record *grown = realloc(k->rows, cap * sizeof *grown);
        if (!grown) {
            k->failed = 1;
            return 1;
        }
        k->rows = grown;
        k->cap = cap;
    }
    step_record *m = &k->rows[k->n++];
    *m = *row;
    if (m->tokens > 0 && m->step_ms > 0) /* rank_steps keeps no tokens/s: computed again */
        m->tokens_per_s = (double)m->tokens / (m->step_ms / 1000.0);
    else {
        m->tokens_per_s = NAN;
        m->unrecorded |= STEP_NO_TOKENS_PER_S;
    }
    return 0;
}

/* No step of rank 0 had a loss and exactly one other rank's did (Megatron prints the loss on
 * the last rank, print_rank_last): that rank's steps, kept in rank_steps, are the run's. Not
 * for the harness's own protocol, whose steps are rank 0's by definition. */
static void adopt_only_lossy_rank(recorder *r)
{
    if (r->steps_stored || r->n_lossy != 1 || r->lossy[0] || r->failed ||
        !r->reader.locked || strcmp(r->reader.locked->name, "harness") == 0)
        return;
    rank_rows k = {r->lossy_rank, NULL, 0, 0, 0};
    if (store_each_rank_step(r->st, r->run_id, keep_rank_row, &k) || k.failed) {
        log_error("reading rank %d's steps to make them the run's%s", k.rank,
                  k.failed ? ": out of memory" : "");
        r->failed = 1;
    }
    for (size_t i = 0; i < k.n && !r->failed; i++) {
        if (store_put_step(r->st, r->run_id, &k.rows[i]))
            r->failed = 1;
        else if (!(k.rows[i].unrecorded & STEP_NO_LOSS))
            count_step(r, &k.rows[i]);
    }
    free(k.rows);
    if (r->failed)
        return;
    char text[160];
    snprintf(text, sizeof text, "%d (no step of rank 0 had a loss; rank %d's did: Megatron "
             "prints the loss on the last rank)", k.rank, k.rank);
    rec_extra(r, "series_rank", text);
    log_warn("no step of rank 0 had a loss: the run's steps are rank %d's, the only rank whose "
             "lines carry one", k.rank);
}

/* s without a UTF-8 character that a cut left incomplete at its end */
static void drop_cut_character(char *s)
{
    size_t len = strlen(s), lead = len;
    while (lead > 0 && len - lead < 4 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0 || (unsigned char)s[lead - 1] < 0xC0)
        return; /* ends in ASCII or a lone continuation byte: nothing cut */
    lead--;
    if (utf8_sequence((const unsigned char *)s + lead, len - lead) != len - lead)
        s[lead] = 0;
}

/* "failed: WHY; last output: ...", cut to fit (never inside a character) */
static void failure_text(const recorder *r, const char *why, char *out, size_t n)
{
    size_t o = (size_t)snprintf(out, n, "%s", why);
    for (int i = 0; i < r->n_tail && o < n; i++)
        o += (size_t)snprintf(out + o, n - o, "%s%s", i ? " | " : "; last output: ", r->tail[i]);
    drop_cut_character(out);
}

int rec_finish(recorder *r, int ended_ok, const char *why, FILE *out)
{
    rec_flush(r);
    char error[1024] = "", formats[256];
    const char *status = "ok";
    if (r->reader.locked)
        rec_extra(r, "log_format", r->reader.locked->name);
    if (r->bad_fields) {
        char count[32];
        snprintf(count, sizeof count, "%ld", r->bad_fields);
        rec_extra(r, "fields_out_of_range", count);
    }
    adopt_only_lossy_rank(r);
    if (r->ranks_seen > 1 && !r->failed &&
        store_set_run_identity(r->st, r->run_id, NULL, NULL, NULL, r->ranks_seen, 0))
        r->failed = 1;
    int by_grad_norm = 0;
    r->diverged_step = step_set_first_bad(&r->steps_seen, &by_grad_norm);
    if (r->failed) { /* a write the store refused: what came after it is not in the store */
        status = "failed";
        snprintf(error, sizeof error, "recording stopped when the store refused a write (the "
                 "message above): the run's steps after the %d recorded were not kept",
                 r->steps_stored);
    } else if (r->diverged_step) {
        status = "diverged";
        snprintf(error, sizeof error, "NaN/Inf %s at step %d",
                 by_grad_norm ? "grad norm" : "loss", r->diverged_step);
    } else if (!r->steps_stored) {
        status = "failed";
        lp_format_names(formats, sizeof formats);
        char what[512];
        if (r->reader.steps > 0) /* steps were read, none of them rank 0's with a loss */
            snprintf(what, sizeof what, "%s%sno step of rank 0 with a loss in %ld lines of "
                     "output (%ld %s step lines: of other ranks, or without a loss)",
                     ended_ok ? "" : why, ended_ok ? "" : "; ", r->reader.lines,
                     r->reader.steps, r->reader.locked ? r->reader.locked->name : "");
        else
            snprintf(what, sizeof what, "%s%s%sno training step recognised in %ld lines of output "
                     "(formats tried: %s)", ended_ok ? "" : why, ended_ok ? "" : "; ",
                     r->saw_nul ? "binary data (NUL bytes): not a text log? " : "",
                     r->reader.lines, r->reader.forced ? r->reader.forced->name : formats);
        failure_text(r, what, error, sizeof error);
    } else if (!ended_ok) {
        status = "failed";
        failure_text(r, why, error, sizeof error);
    }
    int unfinished = store_finish_run(r->st, r->run_id, status, error[0] ? error : NULL);
    int bad = unfinished || r->failed;
    fprintf(out, "run %lld: %s, %d steps, final loss %.6f (format %s)%s%s%s\n",
            (long long)r->run_id, status, r->steps_stored, r->final_loss,
            r->reader.locked ? r->reader.locked->name : "none", error[0] ? ": " : "", error,
            unfinished ? " (the store refused this status too: the run stays 'running' there)"
                       : "");
    return strcmp(status, "ok") == 0 && !bad ? 0 : 1;
}

void rec_free(recorder *r)
{
    for (int i = 0; i < r->n_src; i++) {
        free(r->src[i].line);
        free(r->src[i].name);
    }
    free(r->log);
    r->log = NULL;
    free(r->routing);
    r->routing = NULL;
    r->routing_cap = 0;
    free(r->steps_seen.slots);
    free(r->steps_seen.bad);
    memset(&r->steps_seen, 0, sizeof r->steps_seen);
    r->n_src = 0;
}
