/* harness/train/scenario.h: a scenario file (JSON): model, data, training hyperparameters, world
 * size, dtype, tolerances and the default baseline. See docs/scenario.md for the format. */
#ifndef SCENARIO_H
#define SCENARIO_H

#include <limits.h>
#include <stdint.h>

#include "models/models.h"

#define SCN_STR 256
#define SCN_DESC 4096 /* a description: a paragraph (the shipped 7B scenarios' run to 622 bytes) */
#define SCN_MAX_BLEND 16 /* datasets one megatron data.blend may mix */
#define SCENARIO_MAX_ACCUM 65536 /* train.gradient_accumulation_steps */
#define SCENARIO_MAX_WORLD 65536 /* world_size */
#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct {
    char path[PATH_MAX];        /* the file it was read from */
    char name[SCN_STR];         /* "name" (required) */
    char description[SCN_DESC]; /* optional */

    /* "model": {"family": "gpt2", "config": {...} | "config_path": "dir/config.json",
     *           "overrides": {...} | "overrides_path": "override_config.json"} */
    char family[32];
    const model_family *fam;    /* model_family_find(family) */
    model_config_u model;       /* the family's config: model.gpt2 for "gpt2" */
    char config_path[PATH_MAX]; /* resolved, "" when inline */
    char overrides_path[PATH_MAX]; /* the overrides file read, or looked for in the model
                                      directory (override_config.json); "" when inline */
    /* "model": {"family": "gpt2", "path": "DIR", "weights": "seeded" | "pretrained"}: a local
     * Hugging Face model directory (config.json, override_config.json, safetensors) */
    char model_dir[PATH_MAX];   /* resolved, "" when none */
    char weights[16];           /* "seeded" (default without path) | "pretrained" (with path) */

    /* "data": {"path": "data/corpus.txt", "tokenizer": "byte", "seq_len": 64,
     *          "objective": "clm" | "mlm", "mlm_probability": 0.15, "line_by_line": false} */
    char data_path[PATH_MAX];   /* resolved against the scenario file's folder (megatron with
                                   data.path: the prefix, also blend_path[0]) */
    char tokenizer[64];         /* "byte" | "bpe" | "wordpiece" */
    char tokenizer_path[PATH_MAX]; /* bpe, wordpiece: tokenizer.json, vocab.json, vocab.txt or a
                                      folder (default: the model directory); resolved */
    int seq_len;                /* the length of every row (mlm line by line: max_length) */
    char objective[8];          /* "clm" (next token, default) | "mlm" (masked, data_mlm.h) */
    double mlm_probability;     /* mlm: share of non-special tokens chosen, (0, 1], 0.15 */
    int line_by_line;           /* mlm: 1 one padded row per line, 0 grouped blocks (default) */
    /* "format": "text" (the default: data_path tokenized, data.h / data_mlm.h) | "alpaca"
     * (instruction records, data_alpaca.h) | "megatron" (binarized datasets, data_gpt.h) */
    char data_format[16];
    int model_max_length;       /* alpaca: truncation length, 2 .. seq_len (default seq_len) */
    char eos_token[SCN_STR];    /* alpaca: the EOS's text, "" = the tokenizer's eos token */
    char pad_token[SCN_STR];    /* alpaca: "" = the tokenizer's pad, "eos", "unk" or a text */
    /* megatron: data.path (one dataset) or data.blend: prefixes (without .bin/.idx), resolved,
     * and weights (> 0, normalised by the reader) */
    int n_blend;
    char blend_path[SCN_MAX_BLEND][PATH_MAX];
    double blend_weight[SCN_MAX_BLEND];

    /* "train": {...} */
    int steps;
    int steps_override;         /* --steps N set steps (and the hash) to N: N, else 0 */
    int batch_size;             /* per rank */
    double lr;
    int warmup_steps;
    char schedule[16];          /* "constant" | "linear" | "cosine" */
    double weight_decay;
    int decay_all;              /* 1: weight decay on every parameter (torch AdamW default);
                                   0: not on biases and norm weights (transformers' Trainer) */
    double beta1, beta2, eps;
    double clip;                /* max global grad norm; 0 = no clipping */
    uint64_t seed;
    int eval_every;             /* 0 = no eval */
    int grad_accum;             /* "gradient_accumulation_steps": micro-batches of batch_size
                                   summed per optimizer step, default 1 */

    int world_size;             /* "world_size", default 1 */
    char dtype[16];             /* "fp32" */

    /* "tolerances": {"loss_rtol", "loss_atol", "grad_norm_rtol", "grad_norm_atol",
     *                "min_throughput_ratio", "max_memory_ratio", "expert_tokens_rtol"};
     * negative = not given */
    double loss_rtol, loss_atol, grad_norm_rtol, grad_norm_atol;
    double min_throughput_ratio, max_memory_ratio;
    double expert_tokens_rtol;  /* sparse-MoE routing drift allowed per expert count */
    /* the verdict that decides ("verdict": "band" | "error_ratio" | "ensemble", "" not given)
     * and its numbers ("error_ratio_k", "error_ratio_floor", "ensemble_k", "ensemble_floor";
     * negative = not given): docs/compare.md */
    char verdict[16];
    double error_ratio_k, error_ratio_floor, ensemble_k, ensemble_floor;
    char baseline[SCN_STR];     /* "baseline": default baseline label, "" if none */

    char *json;                 /* the file's text as read (stored with each run) */
    char *file_text;            /* the file as read when --steps re-dumped json, else NULL */
    char hash[65];              /* sha256 of the canonical (sorted, compact) JSON */
} scenario;

/* the text whose lines messages name (FILE:LINE): the file as the user wrote it */
static inline const char *scenario_lines(const scenario *s)
{
    return s->file_text ? s->file_text : s->json;
}

/* Reads and validates a scenario file. Unknown keys, wrong types and out-of-range values are
 * rejected with file, line and field ("scenarios/x.json:12: train.lr: must be > 0"). Returns 0,
 * or 2 after printing the message. */
int scenario_load(const char *path, scenario *s);
void scenario_free(scenario *s);
/* Sets train.steps (a run's --steps): updates steps, the stored JSON and the hash. 0 or 2. */
int scenario_override_steps(scenario *s, int steps);

/* ---- the files a scenario reads besides itself (scenario_inputs.c) ---- */

/* at most this many: megatron's 16 datasets x (.bin, .idx), configs and tokenizer files */
#define SCN_MAX_INPUTS 48
typedef struct {
    char what[40];       /* the scenario field that leads to it: "data.path", ... */
    char path[PATH_MAX]; /* resolved; a file that may be absent (optional ones are looked for) */
} scenario_input;
/* Every file s reads or looks for, in an order that depends only on the scenario's JSON (so
 * ranks with the same scenario list the same fields): the data (megatron: each PREFIX.bin and
 * PREFIX.idx), the model's config and overrides files, and the tokenizer's files (a folder: its
 * tokenizer.json, vocab.json, merges.txt, vocab.txt, tokenizer_config.json; a file: it and the
 * files read beside it). Pretrained weights are not listed: the ranks compare the weights
 * themselves once loaded. Returns how many of out[max] it filled. */
int scenario_inputs(const scenario *s, scenario_input *out, int max);
/* A digest of path's contents: the sha256 of its size (8 bytes, little-endian) and its bytes
 * when it is at most 2 MiB, else of its size, its first MiB and its last MiB (so a data file of
 * many GiB costs 2 MiB of reading). hex: 64 hex digits; "-" when there is no such file; "" when
 * it cannot be read (its reader says why later). */
#define SCN_DIGEST_ABSENT "-"
void scenario_input_digest(const char *path, char hex[65]);

#endif
