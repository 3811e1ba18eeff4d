/* harness/util/fatal_signal.h: a message on stderr when the process crashes (a plugin's op that
 * faults, say), naming the signal and the command, or when exit(0) ends it inside a command. */
#ifndef FATAL_SIGNAL_H
#define FATAL_SIGNAL_H

/* installs the handlers; command names the subcommand in the message (a static string). Until
 * fatal_command_done, an exit(0) (a plugin's op ending the process) is turned into exit 1. */
void fatal_signal_report(const char *command);
void fatal_command_done(void);

#endif
