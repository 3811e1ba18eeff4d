/* harness/cli/cmd_init.c: `harness init SCENARIO OUT_DIR`: writes the scenario's initial weights and
 * config (and its BPE tokenizer files) as a Hugging Face model directory any framework loads. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"
#include "commands.h"
#include "device.h"
#include "models/models.h"
#include "train/train.h"

static void init_usage(FILE *f)
{
    fprintf(f, "usage: harness init SCENARIO OUT_DIR [--device SPEC]\n\n"
               "Writes the scenario's initial weights (seeded, or the model directory's) and its\n"
               "model config as a Hugging Face model directory: OUT_DIR/config.json and\n"
               "OUT_DIR/model.safetensors (fp32, with the tensor names of the family's\n"
               "transformers class: GPT2LMHeadModel, BertForMaskedLM, LlamaForCausalLM, ...),\n"
               "plus the tokenizer files of a bpe tokenizer (as tokenizer.json, or vocab.json +\n"
               "merges.txt, with the tokenizer_config.json beside them). transformers'\n"
               "from_pretrained(OUT_DIR) then starts from the same bits as 'harness run'.\n\n"
               "  --device SPEC  device that builds the weights (default cpu)\n\n"
               "Exit codes: 0 written, 1 a write failed, 2 usage or input error.\n");
}

static int copy_file(const char *from, const char *dir, const char *name)
{
    char to[PATH_MAX + 64];
    snprintf(to, sizeof to, "%s/%s", dir, name);
    size_t len;
    char why[INPUT_WHY_LEN];
    char *data = input_read(from, INPUT_TOKENIZER, &len, why, sizeof why);
    if (!data) {
        log_error("init: cannot read %s: %s", from, why);
        return EXIT_USAGE;
    }
    FILE *f = fopen(to, "wb");
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    free(data);
    if (!ok)
        log_error("init: copying %s to %s: %s", from, to, strerror(errno));
    return ok ? 0 : EXIT_FAIL;
}

/* the files of a bpe tokenizer into dir, under the names from_pretrained looks for, as the
 * harness reads them (formats/tokenizer.c): a folder's tokenizer.json, vocab.json and merges.txt;
 * a file whose name ends in vocab.json as vocab.json with the merges.txt beside it; any other
 * file as tokenizer.json. The tokenizer_config.json beside them (special tokens' roles) too. */
static int copy_tokenizer(const scenario *s, const char *dir)
{
    static const char *const names[] = {"tokenizer.json", "vocab.json", "merges.txt",
                                        "tokenizer_config.json"};
    char base[PATH_MAX], from[PATH_MAX + 64];
    struct stat st;
    if (strcmp(s->tokenizer, "bpe") != 0)
        return 0;
    int is_dir = stat(s->tokenizer_path, &st) == 0 && S_ISDIR(st.st_mode);
    size_t n = strlen(s->tokenizer_path);
    int vocab_form = !is_dir && n >= 10 && strcmp(s->tokenizer_path + n - 10, "vocab.json") == 0;
    if (is_dir)
        snprintf(base, sizeof base, "%s", s->tokenizer_path);
    else
        path_dirname(s->tokenizer_path, base, sizeof base);
    int rc = 0;
    for (size_t i = 0; i < 4 && !rc; i++) {
        int named = !is_dir && i == (vocab_form ? 1u : 0u), wanted = is_dir || i == 3 ||
                    named || (vocab_form && i == 2);
        if (named)
            snprintf(from, sizeof from, "%s", s->tokenizer_path);
        else
            snprintf(from, sizeof from, "%s/%s", base, names[i]);
        if (wanted && stat(from, &st) == 0)
            rc = copy_file(from, dir, names[i]);
    }
    return rc;
}

static int parse_init_args(int argc, char **argv, const char **scn, const char **out,
                           const char **dev)
{
    *scn = *out = NULL;
    *dev = "cpu";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            init_usage(stdout);
            return -1;
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            *dev = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cmd_usage_error("init", "unknown option or missing value: %s", argv[i]);
        } else if (!*scn || !*out) {
            *(*scn ? out : scn) = argv[i];
        } else {
            log_error("init: unexpected argument: %s", argv[i]);
            return EXIT_USAGE;
        }
    }
    if (!*scn || !*out)
        return cmd_usage_error("init", "needs SCENARIO and OUT_DIR");
    if (cmd_nonempty("init", "SCENARIO", *scn) || cmd_nonempty("init", "OUT_DIR", *out) ||
        cmd_nonempty("init", "--device", *dev))
        return EXIT_USAGE;
    return 0;
}

static int write_initial(const scenario *s, device *d, const char *out)
{
    int P = s->fam->config_sizes(&s->model).max_positions;
    int T = P < 2 ? P : 2;
    model *m = model_create(s->fam, d, &s->model, 1, T);
    if (!m)
        return EXIT_FAIL;
    int rc = train_initial_weights(m, s);
    if (!rc)
        rc = train_save(m, s, out);
    if (!rc)
        rc = copy_tokenizer(s, out);
    if (!rc)
        printf("wrote %s/config.json and %s/model.safetensors (%zu parameters, %s weights)\n"
               "scenario_hash: %s\n",
               term_safe(out), term_safe(out), model_param_count(m), s->weights, s->hash);
    model_free(m);
    return rc;
}

int cmd_init(int argc, char **argv)
{
    const char *scn, *out, *dev;
    int rc = parse_init_args(argc, argv, &scn, &out, &dev);
    if (rc)
        return rc < 0 ? EXIT_PASS : rc;
    scenario s;
    if ((rc = scenario_load(scn, &s)) != 0) {
        scenario_free(&s);
        return rc;
    }
    if ((rc = train_check_save_dir("init: OUT_DIR", out)) != 0) {
        scenario_free(&s);
        return rc;
    }
    char err[512];
    device *d = device_open(dev, err, sizeof err);
    if (!d) {
        log_error("init: --device %s: %s", dev, err);
        scenario_free(&s);
        return EXIT_USAGE;
    }
    rc = write_initial(&s, d, out);
    device_close(d);
    scenario_free(&s);
    return rc;
}
