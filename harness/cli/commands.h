/* harness/cli/commands.h: the subcommands of the `harness` executable, one cmd_<name> each. Each
 * takes the arguments after its name (argv[0] is the command name) and returns the exit code
 * (0 pass, 1 a check or run failed, 2 usage or input error). */
#ifndef COMMANDS_H
#define COMMANDS_H

int cmd_run(int argc, char **argv);     /* harness/cli/cmd_run.c */
int cmd_comm_check(int argc, char **argv); /* harness/cli/cmd_comm_check.c */
int cmd_init(int argc, char **argv);    /* harness/cli/cmd_init.c */
int cmd_runs(int argc, char **argv);    /* harness/cli/cmd_list.c */
int cmd_show(int argc, char **argv);    /* harness/cli/cmd_list.c */
int cmd_devices(int argc, char **argv); /* harness/cli/cmd_list.c */
int cmd_ops(int argc, char **argv);     /* harness/cli/cmd_ops.c */
int cmd_baseline(int argc, char **argv); /* harness/cli/cmd_baseline.c */
int cmd_compare(int argc, char **argv);  /* harness/cli/cmd_compare.c */
int cmd_report(int argc, char **argv);   /* harness/cli/cmd_report.c */
int cmd_exec(int argc, char **argv);     /* harness/cli/cmd_exec.c */
int cmd_ingest(int argc, char **argv);   /* harness/cli/cmd_ingest.c */
int cmd_preprocess(int argc, char **argv); /* harness/cli/cmd_preprocess.c */
int cmd_fetch(int argc, char **argv);    /* harness/cli/cmd_fetch.c */

/* default database file when --db is not given */
#define DEFAULT_DB "harness.db"

#endif
