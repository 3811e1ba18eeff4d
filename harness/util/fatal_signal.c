/* harness/util/fatal_signal.c: a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT: in the harness, a
 * device backend or a plugin) says so on stderr before the process dies as it would have. */
#define _POSIX_C_SOURCE 200809L
#include "fatal_signal.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous[N_FATAL];
static const char *command_name = "";

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

/* async-signal-safe: write(2) only; then the handler that was there before (the default, or a
 * sanitizer's) is put back, and returning makes the fault happen again under it (abort raises
 * again by itself) */
static void on_fatal(int sig)
{
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
}

void fatal_signal_report(const char *command)
{
    command_name = command;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; i++)
        sigaction(fatal_signals[i], &sa, &previous[i]);
}
