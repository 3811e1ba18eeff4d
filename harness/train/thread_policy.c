/* harness/train/thread_policy.c: the cpu backend's thread count: pinned by OMP_NUM_THREADS or
 * HARNESS_THREADS, else the CPUs that other runnable tasks leave free (from /proc), revised. */
#define _GNU_SOURCE
#include "thread_policy_internal.h"

#include <dirent.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

static struct {
    int ready, threads, max_threads;
    const char *mode;
    double last_check_ms;
    int pending, pending_seen; /* a larger count is taken when two checks in a row agree */
} tp;

/* runnable tasks on the machine now ("procs_running" in /proc/stat), -1 if unknown */
static int procs_running(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "procs_running %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* this process's threads in state R (running or runnable): they are in procs_running too */
static int own_running_threads(void)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return 1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
        if (paren && paren[1] == ' ' && paren[2] == 'R')
            n++;
    }
    closedir(dir);
    return n > 0 ? n : 1;
}

static int usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* the CPUs other tasks leave free, between 1 and max_threads */
static int fair_share(void)
{
    int running = procs_running();
    if (running < 0)
        return tp.max_threads;
    int others = running - own_running_threads();
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int free_cpus = (int)(online > 0 ? online : tp.max_threads) - (others > 0 ? others : 0);
    return free_cpus < 1 ? 1 : free_cpus > tp.max_threads ? tp.max_threads : free_cpus;
}

/* a positive integer from the variable, or 0 */
static int env_count(const char *name)
{
    const char *v = getenv(name);
    long n;
    if (!v || !*v)
        return 0;
    if (parse_long(v, &n) || n < 1 || n > 4096) {
        log_warn("%s=%s is not a thread count from 1 to 4096: ignored", name, v);
        return 0;
    }
    return (int)n;
}

void thread_policy_init(void)
{
    if (tp.ready)
        return;
    tp.ready = 1;
    tp.max_threads = usable_cpus();
    tp.mode = "adaptive";
    if (getenv("OMP_NUM_THREADS") && *getenv("OMP_NUM_THREADS")) {
        tp.mode = "OMP_NUM_THREADS"; /* OpenMP has read it already */
        tp.threads = omp_get_max_threads();
        if (tp.threads > 4096) { /* libgomp would start them all, and run out of stack */
            log_warn("OMP_NUM_THREADS=%s: more than 4096 threads; 4096 are used",
                     getenv("OMP_NUM_THREADS"));
            tp.threads = 4096;
            omp_set_num_threads(tp.threads);
        }
        return;
    }
    int pinned = env_count("HARNESS_THREADS");
    if (pinned) {
        tp.mode = "HARNESS_THREADS";
        tp.threads = pinned;
    } else {
        tp.threads = fair_share();
        tp.last_check_ms = now_ms();
    }
    omp_set_num_threads(tp.threads);
}

int thread_policy_adapt(void)
{
    thread_policy_init();
    if (strcmp(tp.mode, "adaptive") != 0)
        return tp.threads;
    double t = now_ms();
    if (t - tp.last_check_ms < THREAD_POLICY_PERIOD_MS)
        return tp.threads;
    tp.last_check_ms = t;
    int want = fair_share();
    if (want == tp.threads) {
        tp.pending_seen = 0;
        return tp.threads;
    }
    /* fewer at once (threads spinning against other processes cost most), more only when two
     * checks in a row agree (a passing process should not make a run flip back and forth) */
    if (want < tp.threads || (tp.pending_seen && tp.pending == want)) {
        tp.threads = want;
        tp.pending_seen = 0;
        omp_set_num_threads(want);
    } else {
        tp.pending = want;
        tp.pending_seen = 1;
    }
    return tp.threads;
}

int thread_policy_threads(void)
{
    thread_policy_init();
    return tp.threads;
}

const char *thread_policy_mode(void)
{
    thread_policy_init();
    return tp.mode;
}
