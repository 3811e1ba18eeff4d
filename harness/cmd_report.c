/* harness/cmd_report.c: `harness report` (being written). */
#include "commands.h"
#include "util.h"
int cmd_report(int argc, char **argv)
{
    log_error("report: not yet");
    return EXIT_USAGE;
}
