/* harness/cli/cmd_preprocess.c: `harness preprocess`: a text or JSON-lines file into a Megatron-LM
 * binarized dataset (.bin/.idx), the arguments of Megatron's tools/preprocess_data.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "formats/formats.h"
#include "formats/data_preprocess.h"
#include "util/util.h"

typedef struct {
    const char *input, *prefix, *tokenizer, *json_key, *eod_token;
    int append_eod;
} preprocess_args;

static void preprocess_usage(FILE *f)
{
    fprintf(f,
        "usage: harness preprocess --input FILE --output-prefix P --tokenizer KIND[:PATH]\n"
        "                          [--json-key KEY] [--append-eod [--eod-token TEXT]]\n\n"
        "Tokenizes FILE into a Megatron-LM binarized dataset, as Megatron's\n"
        "tools/preprocess_data.py writes it: P_KEY_document.bin (every document's ids) and\n"
        "P_KEY_document.idx (MMIDIDX version 1: dtype, sizes, pointers, document index), uint16\n"
        "ids for vocabularies below 65500 ids, else int32. Scenarios read the pair with\n"
        "\"data\": {\"format\": \"megatron\", \"path\": \"P_KEY_document\"} (docs/preprocess.md).\n\n"
        "  --input FILE          FILE.txt: one document per line (LF or CRLF); anything else:\n"
        "                        JSON lines, one object per line, its text under --json-key\n"
        "  --output-prefix P     where to write (P_KEY_document.bin and .idx)\n"
        "  --tokenizer KIND[:PATH]  byte, bpe:PATH or wordpiece:PATH (tokenizer.json, vocab.json,\n"
        "                        vocab.txt or a folder, as data.tokenizer_path)\n"
        "  --json-key KEY        the JSON field holding the text (default text); also the KEY\n"
        "                        of the output name (text for a .txt input too)\n"
        "  --append-eod          append the end-of-document id to every document\n"
        "  --eod-token TEXT      the EOD's text (default: the tokenizer's eos token)\n\n"
        "Nothing is written when the input is malformed. Exit codes: 0 written, 1 a write\n"
        "failed, 2 usage or input error.\n");
}

static int parse_preprocess_args(int argc, char **argv, preprocess_args *a)
{
    memset(a, 0, sizeof *a);
    a->json_key = "text";
    const cmd_opt opts[] = {{"--input", &a->input, NULL},          {"--output-prefix", &a->prefix, NULL},
                            {"--tokenizer", &a->tokenizer, NULL},  {"--json-key", &a->json_key, NULL},
                            {"--eod-token", &a->eod_token, NULL},  {"--append-eod", NULL, &a->append_eod},
                            {NULL, NULL, NULL}};
    int n_pos = 0;
    const char *pos[1];
    int rc = cmd_parse(argc, argv, opts, pos, 0, &n_pos);
    if (rc == 1)
        preprocess_usage(stdout);
    if (rc)
        return rc == 1 ? -1 : rc;
    if (!a->input || !a->prefix || !a->tokenizer)
        return cmd_usage_error("preprocess", "--input, --output-prefix and --tokenizer are required");
    if (a->eod_token && !a->append_eod)
        return cmd_usage_error("preprocess", "--eod-token goes with --append-eod");
    return 0;
}

/* "byte", or "bpe:PATH" / "wordpiece:PATH" */
static int open_tokenizer(const char *spec, tokenizer **t)
{
    char kind[32];
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (n >= sizeof kind)
        return cmd_usage_error("preprocess", "--tokenizer: unknown kind '%.32s'", spec);
    memcpy(kind, spec, n);
    kind[n] = 0;
    if (colon && strcmp(kind, "byte") == 0) /* no file: a path there would be ignored */
        return cmd_usage_error("preprocess", "--tokenizer: the byte tokenizer takes no path, "
                               "got '%.200s'", spec);
    return tokenizer_open(kind, colon ? colon + 1 : NULL, t);
}

int cmd_preprocess(int argc, char **argv)
{
    preprocess_args a;
    int rc = parse_preprocess_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    tokenizer *t = NULL;
    if ((rc = open_tokenizer(a.tokenizer, &t)))
        return rc;
    int32_t eod = -1;
    if (a.append_eod)
        rc = data_special_id(t, "eos", a.eod_token, "preprocess: --eod-token", &eod);
    preprocess_options o = {a.input, a.prefix, a.json_key, a.append_eod, eod};
    long long docs = 0, tokens = 0;
    if (!rc)
        rc = data_preprocess(&o, t, &docs, &tokens);
    if (!rc)
        printf("wrote %s_%s_document.bin and .idx: %lld documents, %lld tokens (%s)\n", a.prefix,
               a.json_key, docs, tokens, tokenizer_name(t));
    tokenizer_free(t);
    return rc;
}
