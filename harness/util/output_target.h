/* harness/util/output_target.h: checks on a file the harness is asked to write (--dump-batches):
 * writable, not a directory, and neither the store nor a file the run has read as its input. */
#ifndef OUTPUT_TARGET_H
#define OUTPUT_TARGET_H

#include <stdio.h>

/* path with its symbolic links followed (at most 40) to the name they end at, which may not exist
 * yet (a dangling link names the file writing through it would create); 0, or -1 when a path does
 * not fit in len */
int output_follow_links(const char *path, char *out, size_t len);

/* 1 when paths a and b name the same file: the same device and inode when both exist, else the
 * same resolved parent directory and the same last component (one may not exist yet); links are
 * followed first, dangling ones too */
int same_file_path(const char *a, const char *b);

/* 0 when a new entry can be made in directory dir: a probe directory is made there and removed
 * again (access() alone passes where root cannot create, e.g. under /proc); else -1, errno set */
int output_dir_probe(const char *dir);

/* checks, without truncating anything or leaving anything behind, that path (named `option` in messages) could
 * be written as a new output file: an existing file must be a writable non-directory that this
 * process has not read as an input (input_was_read: the scenario, data, tokenizer, weights); a
 * new file's directory must exist and take a new entry (output_dir_probe). 0, or EXIT_USAGE
 * after a message. */
int output_check_target(const char *option, const char *path);

/* 0 when path names neither the SQLite store at db nor one of its companion files (db-wal,
 * db-shm, db-journal), links followed; 1 when it is the store, 2 a companion file (its name
 * into side[len] when side is not NULL): writing there would destroy the store or lose the
 * output */
int output_names_store(const char *path, const char *db, char *side, size_t len);

/* 1 when path names an existing file this process has read as an input (input_was_read) */
int output_is_input(const char *path);

/* a temporary file made afresh for writing (then renamed over its destination): whatever is at
 * path (a crashed run's leftover, a symbolic link planted there) is removed, never written
 * through. NULL with errno set */
FILE *output_create_fresh(const char *path);

#endif
