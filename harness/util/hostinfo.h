/* harness/util/hostinfo.h: small facts about the machine a run happens on, recorded with each run:
 * the CPU threads the run may use and the machine's load when it starts. */
#ifndef HOSTINFO_H
#define HOSTINFO_H

/* The CPU threads a run uses: OpenMP's omp_get_max_threads() (OMP_NUM_THREADS when set). */
int host_threads(void);
/* The 1-minute load average (getloadavg); NaN when the system does not say. */
double host_load_avg(void);

#endif
