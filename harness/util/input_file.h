/* harness/util/input_file.h: the one way the harness reads a file it is given: regular files only
 * (symlinks followed), opened without blocking, and each kind of file capped at a size. */
#ifndef INPUT_FILE_H
#define INPUT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* what a file is read as; each kind has its size cap (the table in input_file.c, documented in
 * docs/limits.md: keep the two the same) */
typedef enum {
    INPUT_SCENARIO,     /* a scenario JSON */
    INPUT_MODEL_CONFIG, /* config.json, override_config.json, model.config_path / *_path files */
    INPUT_SHARD_INDEX,  /* model.safetensors.index.json */
    INPUT_TOKENIZER,    /* tokenizer.json, vocab.json, merges.txt */
    INPUT_DATA,         /* a training text file */
    INPUT_BASELINE,     /* a baseline JSON (harness baseline import, the scenario's baseline) */
    INPUT_IMAGE,        /* a plot inlined into the HTML report */
    INPUT_ANY,          /* anything else (tests, fuzz replay): the largest cap */
    INPUT_KINDS
} input_kind;

/* the size cap of kind in bytes, and its name in messages ("scenario file") */
uint64_t input_cap(input_kind kind);
const char *input_kind_name(input_kind kind);

/* why[] of at least this size holds every reason the functions below give */
#define INPUT_WHY_LEN 160

/* opens path read-only as a regular file: O_NONBLOCK|O_NOCTTY first, so that a FIFO or a
 * terminal never blocks, then fstat. Returns the descriptor and *size, or -1 with why set:
 * strerror's text, or "it is a FIFO (named pipe), not a regular file" and the like. */
int input_open(const char *path, uint64_t *size, char *why, size_t why_len);

/* 1 when the file st describes (its device and inode) was opened by input_open in this process:
 * an output file must not overwrite what the run reads (harness/util/output_target.h) */
int input_was_read(const struct stat *st);

/* the whole regular file at path into a NUL-terminated heap buffer of *len bytes, refused
 * (NULL, why set, errno set) when it is not a regular file or larger than kind's cap; the read
 * loop stops at the cap even when the file grows while it is read. */
char *input_read(const char *path, input_kind kind, size_t *len, char *why, size_t why_len);

#endif
