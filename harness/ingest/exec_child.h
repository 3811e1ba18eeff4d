/* harness/ingest/exec_child.h: runs a command as a child in its own process group with its stdout and
 * stderr on pipes, passes both through, forwards SIGINT/SIGTERM/SIGHUP to its group. */
#ifndef EXEC_CHILD_H
#define EXEC_CHILD_H

#include <stddef.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    int out_fd, err_fd; /* read ends; -1 once at end of file */
    int exited, exit_code, signaled, signal; /* how it ended (child_wait) */
    int forwarded;      /* the last signal the harness passed on to the group, 0 none */
} child_proc;

/* Starts argv[0] (looked up in PATH, no shell) with PYTHONUNBUFFERED=1 unless set. Returns 0
 * once the program is running, or 2 after writing why into err (not found, not executable). */
int child_start(char *const argv[], child_proc *c, char *err, size_t n);
/* 0 when prog can be run (a path that is executable, or a name found in PATH); else 2 with
 * why in err. Lets exec refuse a missing program before it touches the store. */
int child_findable(const char *prog, char *err, size_t n);
/* Forwards output until both pipes end: each chunk is written to the harness's own stdout or
 * stderr unchanged, then given to fn (stream 1 or 2). Then reaps the child. 0, or 1 when
 * waiting failed (message printed). */
int child_pump(child_proc *c, void (*fn)(int stream, const char *data, size_t len, void *arg),
               void *arg);
/* "exit code 3", "killed by signal 9 (Killed)" */
void child_describe(const child_proc *c, char *out, size_t n);

#endif
