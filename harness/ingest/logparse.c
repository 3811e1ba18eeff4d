/* harness/ingest/logparse.c: the registry of log formats and the reader: rank tags, format detection
 * (the first format that gives a step is kept; one without losses gives way), --format, --keys. */
#include "logparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const log_parser lp_harness, lp_trainer, lp_seed, lp_mllog, lp_deepspeed, lp_jsonl;

/* detection order: the harness's own line first, the generic JSON lines last */
static const log_parser *const parsers[] = {&lp_harness, &lp_trainer, &lp_seed, &lp_mllog,
                                            &lp_deepspeed, &lp_jsonl, NULL};

const log_parser *const *lp_parsers(void)
{
    return parsers;
}

const log_parser *lp_find(const char *name)
{
    for (int i = 0; parsers[i]; i++)
        if (strcmp(parsers[i]->name, name) == 0)
            return parsers[i];
    return NULL;
}

void lp_format_names(char *out, size_t n)
{
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; parsers[i] && o < n; i++)
        o += (size_t)snprintf(out + o, n - o, "%s%s", i ? ", " : "", parsers[i]->name);
}

static const char *const default_keys[] = {"step", "loss", "grad_norm", "lr", "tokens", "step_ms",
                                           "tokens_per_s", "mem_peak_bytes", "mem_used_bytes",
                                           "mem_total_bytes", "loss_scale", "skipped", "rank"};

static int add_key(lp_state *st, const char *field, size_t flen, const char *json, size_t jlen,
                   char *err, size_t n)
{
    lp_step probe;
    char name[LP_KEY];
    memset(&probe, 0, sizeof probe);
    snprintf(name, sizeof name, "%.*s", (int)(flen < LP_KEY ? flen : LP_KEY - 1), field);
    if (!flen || !jlen || flen >= LP_KEY || jlen >= LP_KEY || !lp_step_set(&probe, name, 0)) {
        snprintf(err, n, "--keys: '%.*s=%.*s': expected FIELD=KEY with FIELD one of step, loss, "
                 "grad_norm, lr, tokens, step_ms, tokens_per_s, mem_peak_bytes, mem_used_bytes, "
                 "mem_total_bytes, loss_scale, skipped, rank", (int)(flen % 200), field,
                 (int)(jlen % 200), json);
        return 2;
    }
    if (st->n_keys == LP_MAX_KEYS) {
        snprintf(err, n, "--keys: more than %d keys", LP_MAX_KEYS);
        return 2;
    }
    snprintf(st->key_field[st->n_keys], LP_KEY, "%s", name);
    snprintf(st->key_json[st->n_keys++], LP_KEY, "%.*s", (int)jlen, json);
    return 0;
}

/* "step=iter,loss=lm_loss" */
static int parse_keys(lp_state *st, const char *keys, char *err, size_t n)
{
    for (const char *p = keys;;) {
        size_t len = strcspn(p, ","), eq = strcspn(p, "=");
        if (eq >= len) {
            snprintf(err, n, "--keys: '%.*s' has no '=' (expected FIELD=KEY,...)", (int)(len % 200), p);
            return 2;
        }
        if (add_key(st, p, eq, p + eq + 1, len - eq - 1, err, n))
            return 2;
        if (!p[len])
            break;
        p += len + 1;
    }
    lp_step probe;
    memset(&probe, 0, sizeof probe);
    int has_step = 0, has_loss = 0;
    for (int i = 0; i < st->n_keys; i++) {
        has_step |= !strcmp(st->key_field[i], "step");
        has_loss |= !strcmp(st->key_field[i], "loss");
    }
    if (!has_step || !has_loss) {
        snprintf(err, n, "--keys: name the keys of both step and loss (e.g. step=iter,loss=lm_loss)");
        return 2;
    }
    return 0;
}

int lp_reader_init(lp_reader *r, const char *format, const char *keys, char *err, size_t n)
{
    memset(r, 0, sizeof *r);
    if (format && !(r->forced = lp_find(format))) {
        char names[256];
        lp_format_names(names, sizeof names);
        snprintf(err, n, "--format '%.60s': not a known format (%s)", format, names);
        return 2;
    }
    if (keys && r->forced && r->forced != &lp_jsonl) {
        snprintf(err, n, "--keys goes with --format jsonl");
        return 2;
    }
    if (keys)
        return parse_keys(&r->st, keys, err, n);
    for (size_t i = 0; i < sizeof default_keys / sizeof default_keys[0]; i++)
        add_key(&r->st, default_keys[i], strlen(default_keys[i]), default_keys[i],
                strlen(default_keys[i]), err, n);
    return 0;
}

/* "1: " or " 1: " (srun --label, padded to the widest task id): sets *rank, returns how many
 * bytes the label takes (0 when none) */
static size_t srun_label(const char *line, size_t len, int *rank)
{
    size_t i = 0, digits;
    while (i < len && i < 8 && line[i] == ' ')
        i++;
    long v = 0;
    for (digits = 0; i < len && line[i] >= '0' && line[i] <= '9' && digits < 6; digits++)
        v = v * 10 + (line[i++] - '0');
    if (!digits || i >= len || line[i] != ':' || (i + 1 < len && line[i + 1] != ' '))
        return 0;
    *rank = (int)v;
    return i + 1 + (i + 1 < len);
}

/* "[rank1]:", "[default1]:" (torchrun's tags), "[Rank 1]" (DeepSpeed), "1: " (srun --label):
 * sets *rank, returns how many bytes the tag takes at the start of line (0 when none) */
static size_t rank_tag(const char *line, size_t len, int *rank)
{
    static const char *const tags[] = {"[rank", "[default", "[Rank "};
    for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++) {
        size_t tl = strlen(tags[t]), i = tl;
        if (len <= tl || memcmp(line, tags[t], tl) != 0)
            continue;
        long v = 0;
        while (i < len && line[i] >= '0' && line[i] <= '9' && v < 100000)
            v = v * 10 + (line[i++] - '0');
        if (i == tl || i >= len || line[i] != ']')
            continue;
        *rank = (int)v;
        i++;
        if (i < len && line[i] == ':')
            i++;
        return t == 2 ? 0 : i; /* DeepSpeed's tag sits mid-line too: left for the parser */
    }
    return srun_label(line, len, rank);
}

/* the DeepSpeed tag "[Rank N]" anywhere in a line (after the logger's prefix) */
static void rank_anywhere(const char *line, size_t len, int *rank)
{
    const char *p = lp_find_text(line, len, "[Rank ");
    if (p && *rank < 0)
        rank_tag(p, len - (size_t)(p - line), rank);
}

/* whether p's step ev takes the lock from the locked format: that one has given steps, but
 * none with a loss (DeepSpeed's engine lines before Trainer's dicts), and ev has one */
static int supersedes(const lp_reader *r, const log_parser *p, const lp_event *ev)
{
    return r->locked && p != r->locked && r->stepped && !r->lossy &&
           (ev->step.has & LP_LOSS);
}

static int take_step(lp_reader *r, const log_parser *p, lp_event *ev)
{
    if (!r->locked || supersedes(r, p, ev)) {
        r->locked = p;
        r->stepped = r->lossy = 0; /* the offset is the new format's */
    }
    if (p != r->locked)
        return 0;
    if (!r->stepped) { /* the first step, also after HARNESS_META locked the format */
        r->stepped = 1;
        r->offset = ev->step.step == 0;
    }
    ev->step.step += r->offset;
    if (ev->step.step >= 1 && (ev->step.has & LP_LOSS))
        r->lossy = 1;
    return ev->step.step >= 1;
}

int lp_read_line(lp_reader *r, const char *line, size_t len, lp_event *ev)
{
    if (memchr(line, '\033', len)) { /* colours ("\033[32m[rank1]:\033[0m"): taken out */
        len = lp_strip_ansi(line, len, r->clean, sizeof r->clean);
        line = r->clean;
    }
    int rank = -1;
    size_t skip = rank_tag(line, len, &rank);
    line += skip;
    len -= skip;
    rank_anywhere(line, len, &rank);
    r->lines++;
    r->st.line_rank = rank;
    r->st.mem_rank = rank >= 0 ? rank : r->source_rank > 0 ? r->source_rank : 0;
    int got = 0;
    for (int i = 0; parsers[i] && !got; i++) {
        const log_parser *p = r->forced ? r->forced : parsers[i];
        if (r->forced && i > 0)
            break;
        if (!p->detect(line, len) || !p->parse(line, len, &r->st, ev))
            continue;
        if (ev->has_step && !take_step(r, p, ev))
            ev->has_step = 0;
        if (p == parsers[0] && !r->locked && ev->n_meta) /* HARNESS_META announces protocol v1: */
            r->locked = p;                                /* only its step lines count then */
        got = ev->has_step || ev->n_meta > 0;
    }
    if (got && ev->has_step) {
        if (ev->step.rank < 0)
            ev->step.rank = rank;
        r->steps++;
    }
    return got;
}
