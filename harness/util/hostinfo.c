/* harness/util/hostinfo.c: the host facts recorded with each run (docs/store.md, runs.threads and
 * runs.load_avg): OpenMP's thread count and the 1-minute load average. */
#define _DEFAULT_SOURCE /* getloadavg */
#include "hostinfo.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

int host_threads(void)
{
    return omp_get_max_threads();
}

double host_load_avg(void)
{
    double load[1];
    return getloadavg(load, 1) == 1 ? load[0] : NAN;
}
