/* harness/train/scenario_inputs.c: the files a scenario reads besides its own JSON (data, model
 * config and overrides, tokenizer files) and a cheap digest of each, which the ranks of a
 * data-parallel run compare before training (runner_ranks.c). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scenario.h"
#include "util/input_file.h"
#include "util/util.h"

#define DIGEST_PART ((size_t)1 << 20) /* the first and the last MiB of a large file */

typedef struct {
    scenario_input *out;
    int n, max;
} input_list;

/* what's file DIR/NAME (dir "" : name alone), when it fits and there is room */
static void add(input_list *l, const char *what, const char *dir, const char *name)
{
    if (l->n >= l->max)
        return;
    scenario_input *in = &l->out[l->n];
    int len = dir[0] ? snprintf(in->path, sizeof in->path, "%s/%s", dir, name)
                     : snprintf(in->path, sizeof in->path, "%s", name);
    if (len < 0 || (size_t)len >= sizeof in->path)
        return; /* the scenario's own checks refused such a path already */
    snprintf(in->what, sizeof in->what, "%s", what);
    l->n++;
}

static int is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* the tokenizer's files: a folder's candidates, or the file and those read beside it */
static void add_tokenizer(input_list *l, const char *path)
{
    static const char *const in_folder[] = {"tokenizer.json", "vocab.json", "merges.txt",
                                            "vocab.txt", "tokenizer_config.json"};
    const char *what = "data.tokenizer_path";
    if (is_directory(path)) {
        for (size_t i = 0; i < sizeof in_folder / sizeof in_folder[0]; i++)
            add(l, what, path, in_folder[i]);
        return;
    }
    char dir[PATH_MAX];
    path_dirname(path, dir, sizeof dir);
    add(l, what, "", path);
    if (ends_with(path, "vocab.json"))
        add(l, what, dir, "merges.txt");
    add(l, what, dir, "tokenizer_config.json");
}

int scenario_inputs(const scenario *s, scenario_input *out, int max)
{
    input_list l = {out, 0, max};
    if (strcmp(s->data_format, "megatron") == 0) {
        char file[PATH_MAX + 8];
        for (int i = 0; i < s->n_blend; i++) {
            snprintf(file, sizeof file, "%s.bin", s->blend_path[i]);
            add(&l, "data (megatron PREFIX.bin)", "", file);
            snprintf(file, sizeof file, "%s.idx", s->blend_path[i]);
            add(&l, "data (megatron PREFIX.idx)", "", file);
        }
    } else {
        add(&l, "data.path", "", s->data_path);
    }
    if (s->config_path[0])
        add(&l, s->model_dir[0] ? "model.path (config.json)" : "model.config_path", "",
            s->config_path);
    if (s->overrides_path[0])
        add(&l, "model overrides", "", s->overrides_path);
    if (s->tokenizer_path[0] && strcmp(s->tokenizer, "byte") != 0)
        add_tokenizer(&l, s->tokenizer_path);
    return l.n;
}

/* reads want bytes at off into buf; 0, or -1 */
static int read_at(int fd, unsigned char *buf, size_t want, off_t off)
{
    size_t got = 0;
    while (got < want) {
        ssize_t n = pread(fd, buf + got, want - got, off + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

void scenario_input_digest(const char *path, char hex[65])
{
    struct stat st;
    hex[0] = '\0';
    if (stat(path, &st) != 0 && errno == ENOENT) {
        snprintf(hex, 65, "%s", SCN_DIGEST_ABSENT);
        return;
    }
    char why[INPUT_WHY_LEN];
    uint64_t size = 0;
    int fd = input_open(path, &size, why, sizeof why);
    if (fd < 0)
        return;
    size_t head = size > 2 * DIGEST_PART ? DIGEST_PART : (size_t)size;
    size_t tail = size > 2 * DIGEST_PART ? DIGEST_PART : 0;
    unsigned char *buf = malloc(8 + head + tail);
    if (buf) {
        for (int i = 0; i < 8; i++)
            buf[i] = (unsigned char)(size >> (8 * i));
        if (read_at(fd, buf + 8, head, 0) == 0 &&
            read_at(fd, buf + 8 + head, tail, (off_t)(size - tail)) == 0)
            sha256_hex(buf, 8 + head + tail, hex);
    }
    free(buf);
    close(fd);
}
