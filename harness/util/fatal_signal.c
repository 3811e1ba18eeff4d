/* harness/util/fatal_signal.c: a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT: in the harness, a
 * device backend or a plugin) or an exit(0) from inside a command says so on stderr. */
#define _DEFAULT_SOURCE /* on_exit */
#include "fatal_signal.h"

#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous[N_FATAL];
static const char *command_name = "";
static volatile int in_command; /* between fatal_signal_report and fatal_command_done */

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    default: return "SIGABRT";
    }
}

static void say(const char *s)
{
    ssize_t ignored = write(STDERR_FILENO, s, strlen(s));
    (void)ignored;
}

/* async-signal-safe: write(2), sigaction, raise. The handler that was there before (the
 * default, or a sanitizer's) is put back; a fault happens again under it when this returns (and
 * abort raises again by itself), while a signal sent by kill() (si_code <= 0: timeout -s ABRT,
 * a batch system) is raised again, or it would be swallowed */
static void on_fatal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    say("harness: fatal: ");
    say(signal_name(sig));
    say(" in 'harness ");
    say(command_name);
    say("' (a crash in the harness, a device backend or a plugin's op): the command did not "
        "finish; a run it was recording stays 'running' in the store (docs/store.md, "
        "\"A killed run\")\n");
    for (size_t i = 0; i < N_FATAL; i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &previous[i], NULL);
    if (!info || info->si_code <= 0) /* sent, not a fault: delivered again once this returns */
        raise(sig);
}

/* exit(0) called before the command returned: not the harness (its own exits inside a command
 * carry the exit code of an error), so a library or a plugin's op ended the process: that is no
 * pass (a CI gate would read 0), so 1 */
static void on_exit_inside(int status, void *arg)
{
    (void)arg;
    if (!in_command || status != 0)
        return;
    say("harness: error: something called exit(0) inside 'harness ");
    say(command_name);
    say("' (a device backend or a plugin's op?): the command did not finish; exit 1\n");
    _exit(1);
}

void fatal_command_done(void)
{
    in_command = 0;
}

void fatal_signal_report(const char *command)
{
    command_name = command;
    in_command = 1;
    on_exit(on_exit_inside, NULL);
    /* the main thread's handler runs on its own stack, so a stack overflow is reported too */
    static char alternate[64 * 1024];
    stack_t ss = {.ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0};
    int on_stack = sigaltstack(&ss, NULL) == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | (on_stack ? SA_ONSTACK : 0);
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; i++)
        sigaction(fatal_signals[i], &sa, &previous[i]);
}
