/* harness/cli/cmd_init.c: `harness init SCENARIO OUT_DIR`: writes the scenario's initial weights and
 * config (and its tokenizer files) as a Hugging Face model directory any framework loads. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
               "plus the files of a bpe or wordpiece tokenizer (as tokenizer.json, or vocab.json\n"
               "+ merges.txt, or vocab.txt, with the tokenizer_config.json beside them). Every\n"
               "file is written afresh and renamed into place (never through a link).\n"
               "transformers' from_pretrained(OUT_DIR) then starts from the same bits as\n"
               "'harness run'.\n\n"
               "  --device SPEC  device that builds the weights (default cpu)\n\n"
               "Exit codes: 0 written, 1 a write failed, 2 usage or input error.\n");
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
        rc = train_save(m, s, out); /* the tokenizer's files too */
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
    if ((rc = train_check_save_dir("init: OUT_DIR", out)) != 0 ||
        (rc = checkpoint_check_target(out)) != 0) {
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
