/* harness/formats/safetensors_set.c: a model directory's weights as one set of tensors: a single
 * model.safetensors, or the shards that model.safetensors.index.json maps each tensor to. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "safetensors.h"
#include "util/util.h"

#define SINGLE_FILE "model.safetensors"
#define INDEX_FILE "model.safetensors.index.json"

__attribute__((format(printf, 4, 5))) static int bad(char *err, size_t len, const char *where,
                                                     const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, len, "%s: %s", where, msg);
    return EXIT_USAGE;
}

/* a shard name must be a plain file name inside the directory */
static int plain_name(const char *s)
{
    return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
           strlen(s) < 256;
}

int st_index_parse(const char *text, size_t len, const char *where, json_t **weight_map,
                   char *err, size_t errlen)
{
    *weight_map = NULL;
    json_error_t e;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    if (!root) {
        for (char *p = e.text; *p; p++)
            if (*p < 0x20 || *p > 0x7e)
                *p = '?';
        return bad(err, errlen, where, "line %d: invalid JSON: %s", e.line, e.text);
    }
    json_t *map = json_object_get(root, "weight_map");
    int rc = 0;
    if (!json_is_object(root) || !json_is_object(map))
        rc = bad(err, errlen, where, "needs an object \"weight_map\" {tensor: shard file}");
    const char *k;
    json_t *v;
    if (!rc)
        json_object_foreach(map, k, v)
        {
            if (!json_is_string(v) || !plain_name(json_string_value(v))) {
                rc = bad(err, errlen, where,
                         "weight_map: the shard of \"%.96s\" must be a file name in the directory",
                         k);
                break;
            }
        }
    if (!rc)
        *weight_map = json_incref(map);
    json_decref(root);
    return rc;
}

static int add_file_tensors(st_set *s, const st_file *f)
{
    const st_tensor **t = realloc(s->t, (size_t)(s->n + f->n + 1) * sizeof *t);
    const st_file **of = realloc(s->of, (size_t)(s->n + f->n + 1) * sizeof *of);
    if (t)
        s->t = t;
    if (of)
        s->of = of;
    if (!t || !of) {
        log_error("out of memory listing tensors");
        return EXIT_FAIL;
    }
    for (int i = 0; i < f->n; i++, s->n++) {
        s->t[s->n] = &f->t[i];
        s->of[s->n] = f;
    }
    return 0;
}

/* the distinct shard names of the map, in first-seen order */
static int shard_names(json_t *map, const char ***names, int *n)
{
    *names = calloc(json_object_size(map) + 1, sizeof **names);
    *n = 0;
    if (!*names)
        return -1;
    const char *k;
    json_t *v;
    json_object_foreach(map, k, v)
    {
        int seen = 0;
        for (int i = 0; i < *n && !seen; i++)
            seen = strcmp((*names)[i], json_string_value(v)) == 0;
        if (!seen)
            (*names)[(*n)++] = json_string_value(v);
    }
    return 0;
}

/* every tensor of every shard is where the map says, and every mapped tensor exists */
static int check_against_map(const st_set *s, json_t *map, const char *index)
{
    for (int i = 0; i < s->n; i++) {
        json_t *want = json_object_get(map, s->t[i]->name);
        const char *base = strrchr(s->of[i]->path, '/');
        base = base ? base + 1 : s->of[i]->path;
        if (!want || strcmp(json_string_value(want), base) != 0) {
            log_error("%s: tensor \"%.96s\" is in %s but the weight_map %s%s", index,
                      s->t[i]->name, base, want ? "puts it in " : "does not list it",
                      want ? json_string_value(want) : "");
            return EXIT_USAGE;
        }
        if (st_set_find(s, s->t[i]->name) != i) {
            log_error("%s: tensor \"%.96s\" appears in two shards", index, s->t[i]->name);
            return EXIT_USAGE;
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach(map, k, v)
    {
        if (st_set_find(s, k) < 0) {
            log_error("%s: the weight_map puts \"%.96s\" in %s, which does not hold it", index, k,
                      json_string_value(v));
            return EXIT_USAGE;
        }
    }
    return 0;
}

static int open_shards(const char *dir, const char *index, json_t *map, st_set *s)
{
    const char **names;
    int n;
    if (shard_names(map, &names, &n)) {
        log_error("out of memory");
        return EXIT_FAIL;
    }
    s->files = calloc((size_t)n + 1, sizeof *s->files);
    int rc = s->files ? 0 : EXIT_FAIL;
    for (int i = 0; i < n && !rc; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = st_open(path, &s->files[i]);
        if (!rc)
            s->n_files++;
    }
    free(names);
    for (int i = 0; i < s->n_files && !rc; i++)
        rc = add_file_tensors(s, &s->files[i]);
    return rc ? rc : check_against_map(s, map, index);
}

static int open_index(const char *dir, const char *index, st_set *s)
{
    size_t len;
    char why[INPUT_WHY_LEN];
    char *text = input_read(index, INPUT_SHARD_INDEX, &len, why, sizeof why);
    if (!text) {
        log_error("%s: cannot read the index: %s", index, why);
        return EXIT_USAGE;
    }
    json_t *map;
    char err[1024];
    int rc = st_index_parse(text, len, index, &map, err, sizeof err);
    free(text);
    if (rc) {
        log_error("%s", err);
        return rc;
    }
    rc = open_shards(dir, index, map, s);
    json_decref(map);
    return rc;
}

/* something is at path: st_open / the index reader then read it or refuse it by what it is (a
 * symbolic link whose target is missing too: lstat, so it is refused, never taken for none) */
static int is_file(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int st_set_open_dir(const char *dir, st_set *s)
{
    memset(s, 0, sizeof *s);
    char single[4096], index[4096];
    snprintf(single, sizeof single, "%s/%s", dir, SINGLE_FILE);
    snprintf(index, sizeof index, "%s/%s", dir, INDEX_FILE);
    int rc;
    if (is_file(single)) {
        s->files = calloc(1, sizeof *s->files);
        rc = s->files ? st_open(single, &s->files[0]) : EXIT_FAIL;
        if (!rc) {
            s->n_files = 1;
            rc = add_file_tensors(s, &s->files[0]);
        }
    } else if (is_file(index)) {
        rc = open_index(dir, index, s);
    } else {
        return -1;
    }
    if (rc)
        st_set_close(s);
    return rc;
}

int st_set_find(const st_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->t[i]->name, name) == 0)
            return i;
    return -1;
}

void st_set_close(st_set *s)
{
    for (int i = 0; i < s->n_files; i++)
        st_close(&s->files[i]);
    free(s->files);
    free(s->t);
    free(s->of);
    memset(s, 0, sizeof *s);
}
