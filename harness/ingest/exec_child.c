/* harness/ingest/exec_child.c: the exec'd command: fork/execvp into its own process group, stdout and
 * stderr read with poll() and passed through as they come, signals forwarded to the group. */
#define _GNU_SOURCE
#include "exec_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

static volatile sig_atomic_t child_group, last_forwarded;

static int script_interpreter(const char *path, char *out, size_t n);

static const int forwarded_sigs[] = {SIGINT, SIGTERM, SIGHUP};
#define N_FORWARDED (sizeof forwarded_sigs / sizeof forwarded_sigs[0])
/* the signals the harness inherited as ignored (nohup's SIGHUP, SIGINT of a script's background
 * job): they stay ignored for the harness and for CMD, never forwarded nor reset to default */
static int inherited_ignored[N_FORWARDED];

static void forward(int sig)
{
    if (child_group > 0)
        kill(-(pid_t)child_group, sig);
    last_forwarded = sig;
}

/* notes which of the forwarded signals the harness inherited as ignored; 0 or -1 */
static int note_ignored(void)
{
    for (size_t i = 0; i < N_FORWARDED; i++) {
        struct sigaction old;
        if (sigaction(forwarded_sigs[i], NULL, &old) != 0)
            return -1;
        inherited_ignored[i] = old.sa_handler == SIG_IGN;
    }
    return 0;
}

/* handler for each forwarded signal, except those inherited as ignored (left ignored) */
static int install(void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FORWARDED; i++)
        if (!inherited_ignored[i] && sigaction(forwarded_sigs[i], &sa, NULL) != 0)
            return -1;
    return 0;
}

/* blocks (how SIG_BLOCK) or unblocks (SIG_UNBLOCK) the signals forward() passes on; 0 or -1 */
static int mask_forwarded(int how)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    return sigprocmask(how, &set, NULL);
}

/* in the child between fork and exec: only async-signal-safe calls. The forwarded signals are
 * blocked until their default action is back, so one sent to the group meanwhile is not lost;
 * one the harness inherited as ignored stays ignored (install skips it) */
static void exec_in_child(char *const argv[], int out[2], int errp[2], int report[2])
{
    setpgid(0, 0);
    install(SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    mask_forwarded(SIG_UNBLOCK);
    close(out[0]);
    close(errp[0]);
    close(report[0]);
    if (dup2(out[1], 1) < 0 || dup2(errp[1], 2) < 0) {
        int e = errno;
        (void)!write(report[1], &e, sizeof e);
        _exit(127);
    }
    if (!getenv("PYTHONUNBUFFERED"))
        setenv("PYTHONUNBUFFERED", "1", 0);
    execvp(argv[0], argv);
    int e = errno;
    (void)!write(report[1], &e, sizeof e);
    _exit(127);
}

static void close_pair(int p[2])
{
    if (p[0] >= 0) close(p[0]);
    if (p[1] >= 0) close(p[1]);
}

int child_start(char *const argv[], child_proc *c, char *err, size_t n)
{
    int out[2] = {-1, -1}, errp[2] = {-1, -1}, report[2] = {-1, -1};
    memset(c, 0, sizeof *c);
    c->out_fd = c->err_fd = -1;
    if (pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) || pipe2(report, O_CLOEXEC)) {
        snprintf(err, n, "pipe: %s", strerror(errno));
        close_pair(out), close_pair(errp), close_pair(report);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a closed terminal must not kill the recorder */
    /* a signal that comes before the child's group is known waits (blocked) until it is, then
     * forward() passes it on: none is lost between here and the fork */
    if (note_ignored() != 0 || install(forward) != 0 || mask_forwarded(SIG_BLOCK) != 0) {
        snprintf(err, n, "exec: setting up signal forwarding: %s", strerror(errno));
        close_pair(out), close_pair(errp), close_pair(report);
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, n, "fork: %s", strerror(errno));
        mask_forwarded(SIG_UNBLOCK);
        close_pair(out), close_pair(errp), close_pair(report);
        return 2;
    }
    if (pid == 0)
        exec_in_child(argv, out, errp, report);
    setpgid(pid, pid); /* also here: no race with a signal before the child's own call */
    child_group = pid;
    mask_forwarded(SIG_UNBLOCK);
    close(out[1]), close(errp[1]), close(report[1]);
    int e = 0;
    ssize_t got;
    while ((got = read(report[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(report[0]);
    c->pid = pid;
    c->out_fd = out[0];
    c->err_fd = errp[0];
    if (got == (ssize_t)sizeof e) { /* execvp failed: nothing ran */
        char interp[256];
        if (e == ENOENT && script_interpreter(argv[0], interp, sizeof interp))
            snprintf(err, n, "cannot run '%s': its #! interpreter '%s' is not there", argv[0],
                     interp);
        else
            snprintf(err, n, "cannot run '%s': %s", argv[0], strerror(e));
        child_pump(c, NULL, NULL);
        return 2;
    }
    return 0;
}

/* the interpreter a script that is there names in its "#!" line (ENOENT from execvp then means
 * that one is missing, not the script); 0 when path is no such script */
static int script_interpreter(const char *path, char *out, size_t n)
{
    FILE *f = strchr(path, '/') ? fopen(path, "rb") : NULL; /* a bare name: found in PATH */
    char line[256] = "";
    int ok = f && fgets(line, sizeof line, f) && line[0] == '#' && line[1] == '!';
    if (f)
        fclose(f);
    if (!ok)
        return 0;
    const char *p = line + 2 + strspn(line + 2, " \t");
    snprintf(out, n, "%.*s", (int)strcspn(p, " \t\r\n"), p);
    return out[0] != 0;
}

/* an executable regular file (execvp refuses a directory, even one with its x bits set) */
static int runnable(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || access(path, X_OK) != 0)
        return 0;
    if (!S_ISREG(st.st_mode)) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : EACCES;
        return 0;
    }
    return 1;
}

int child_findable(const char *prog, char *err, size_t n)
{
    if (strchr(prog, '/')) {
        if (runnable(prog))
            return 0;
        snprintf(err, n, "cannot run '%s': %s", prog, strerror(errno));
        return 2;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        char full[4096];
        if (snprintf(full, sizeof full, "%.*s/%s", (int)len, len ? p : ".", prog) <
                (int)sizeof full && runnable(full))
            return 0;
        p += len + (p[len] == ':');
    }
    snprintf(err, n, "cannot run '%s': not found in PATH", prog);
    return 2;
}

/* after a signal was passed on: how long a write through waits for the reader */
#define PASS_THROUGH_STALL_MS 2000

/* writes all of data to fd; a failing terminal only stops the pass-through. Once a signal has
 * been passed on to CMD, a reader that takes nothing for PASS_THROUGH_STALL_MS stops it too
 * (pieces of at most PIPE_BUF, each written only when poll says it fits): the harness must not
 * stay in a blocked write, its run 'running', until a stalled reader goes away; CMD's last words
 * still reach a reader that reads */
static void pass_through(int fd, const char *data, size_t len, int *broken)
{
    while (len && !*broken) {
        size_t n = len;
        if (last_forwarded) {
            struct pollfd p = {fd, POLLOUT, 0};
            int r = poll(&p, 1, PASS_THROUGH_STALL_MS);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0 || !(p.revents & POLLOUT)) {
                *broken = 1;
                return;
            }
            n = len < PIPE_BUF ? len : PIPE_BUF;
        }
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            *broken = 1;
            return;
        }
        data += w;
        len -= (size_t)w;
    }
}

/* one read from the fd at *fd; closes it at end of file. 1 when bytes came */
static int drain(int *fd, int stream, int *broken,
                 void (*fn)(int, const char *, size_t, void *), void *arg)
{
    static char buf[65536];
    ssize_t got = read(*fd, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (got <= 0) {
        close(*fd);
        *fd = -1;
        return 0;
    }
    pass_through(stream, buf, (size_t)got, broken);
    if (fn)
        fn(stream, buf, (size_t)got, arg);
    return 1;
}

static int reap(child_proc *c, int options)
{
    int status;
    pid_t w;
    while ((w = waitpid(c->pid, &status, options)) < 0 && errno == EINTR)
        ;
    if (w < 0) {
        log_error("exec: waiting for process %d: %s", (int)c->pid, strerror(errno));
        c->exited = 1;
        c->exit_code = -1;
        return -1;
    }
    if (w == 0)
        return 0;
    c->exited = WIFEXITED(status);
    c->exit_code = c->exited ? WEXITSTATUS(status) : 0;
    c->signaled = WIFSIGNALED(status);
    c->signal = c->signaled ? WTERMSIG(status) : 0;
    c->exited |= c->signaled;
    return 1;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int child_pump(child_proc *c, void (*fn)(int stream, const char *data, size_t len, void *arg),
               void *arg)
{
    int broken[3] = {0, 0, 0}, reaped = 0, wait_failed = 0;
    double drain_until = 0;
    while (c->out_fd >= 0 || c->err_fd >= 0) {
        struct pollfd p[2] = {{c->out_fd, POLLIN, 0}, {c->err_fd, POLLIN, 0}};
        /* once the child is gone, pipes its own children still hold are read for 1 s more,
         * however much they print meanwhile (a daemon it left behind must not hold us) */
        int wait_ms = 500;
        if (reaped) {
            double left = drain_until - now_s();
            if (left <= 0)
                break;
            wait_ms = (int)(left * 1000.0) + 1;
        }
        int ready = poll(p, 2, wait_ms);
        if (ready < 0 && errno != EINTR) {
            log_error("exec: poll: %s", strerror(errno));
            break;
        }
        if (ready > 0) {
            if (p[0].revents && c->out_fd >= 0)
                drain(&c->out_fd, 1, &broken[1], fn, arg);
            if (p[1].revents && c->err_fd >= 0)
                drain(&c->err_fd, 2, &broken[2], fn, arg);
        } else if (ready == 0 && reaped)
            break;
        if (!reaped && (reaped = reap(c, WNOHANG)) < 0) {
            wait_failed = 1;
            break;
        }
        if (reaped && !drain_until)
            drain_until = now_s() + 1.0;
    }
    if (c->out_fd >= 0) close(c->out_fd);
    if (c->err_fd >= 0) close(c->err_fd);
    c->out_fd = c->err_fd = -1;
    int rc = wait_failed || (!reaped && reap(c, 0) < 0);
    c->forwarded = last_forwarded;
    child_group = 0;
    install(SIG_DFL);
    return rc ? 1 : 0;
}

void child_describe(const child_proc *c, char *out, size_t n)
{
    if (c->signaled)
        snprintf(out, n, "killed by signal %d (%s)%s", c->signal, strsignal(c->signal),
                 c->forwarded ? ", passed on by the harness" : "");
    else
        snprintf(out, n, "exit code %d%s", c->exit_code,
                 c->forwarded ? " after the harness passed on a signal" : "");
}
