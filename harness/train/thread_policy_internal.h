/* harness/train/thread_policy_internal.h: how many CPU threads the cpu backend (OpenMP, and OpenBLAS through
 * OpenMP) uses: the count the user pinned, or this machine's fair share, revised during a run. */
#ifndef THREAD_POLICY_H
#define THREAD_POLICY_H

/* Reads the pinning variables (OMP_NUM_THREADS, then HARNESS_THREADS) once; without them the
 * policy is adaptive and sets a first count from the processes running now. Safe to call again. */
void thread_policy_init(void);
/* Adaptive mode: at most every THREAD_POLICY_PERIOD_MS, counts the runnable tasks that are not
 * this process's and sets the thread count to the CPUs they leave free (at least 1, at most the
 * CPUs this process may use), so a busy machine costs a run its fair share instead of OpenMP
 * threads spinning against other processes. Pinned mode: does nothing. Returns the count. */
int thread_policy_adapt(void);
/* the thread count in force now */
int thread_policy_threads(void);
/* "OMP_NUM_THREADS", "HARNESS_THREADS" (pinned by that variable) or "adaptive" */
const char *thread_policy_mode(void);

#define THREAD_POLICY_PERIOD_MS 200.0

#endif
