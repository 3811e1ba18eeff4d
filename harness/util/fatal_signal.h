/* harness/util/fatal_signal.h: a message on stderr when the process crashes (a plugin's op that
 * faults, say), naming the signal and the command, before it dies as it would have. */
#ifndef FATAL_SIGNAL_H
#define FATAL_SIGNAL_H

/* installs the handlers; command names the subcommand in the message (a static string) */
void fatal_signal_report(const char *command);

#endif
