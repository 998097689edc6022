/* core/parallel.c — the thread policy of core/parallel.h.
 * Layer: core. The automatic count is the smaller of floor(own CPU use + idle CPUs + 0.3) and
 * floor(allowed CPUs - others' load + 0.3), between 1 and the CPUs this process may use. Own CPU
 * use and idle CPUs are rates between two samples ~0.2 s apart: our CPU time (getrusage, all our
 * threads, so a spinning OpenMP worker counts as ours) and the machine's idle time (/proc/stat).
 * Others' load is the 1-minute load average (/proc/loadavg) minus our own CPU use: a machine
 * whose other work comes in bursts shows idle CPUs between them, and a second thread started then
 * loses its CPU at the next burst, stalling every parallel region (stories15M decoded up to 3x
 * slower that way at load 12 on 2 CPUs); the load average remembers the bursts. Alone on the
 * machine that is every allowed CPU; beside a CPU-bound process on two CPUs it is 1 (we get
 * ~1.3 CPUs of 2, none idle, and the load average counts it). */
#include "core/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define SAMPLE_NS 200000000LL /* resample the load at most every 0.2 s */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_allowed = 1;                          /* CPUs this process may use */
static int g_fixed;                                /* >= 1 fixed count; 0 automatic */
static int g_auto = 1;                             /* the automatic count now */
static int64_t g_next_ns;                          /* when to resample */
static int64_t g_wall_ns, g_self_ns, g_idle_ticks; /* the previous sample */

static int64_t now_ns(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The CPUs of our affinity mask, capped by a cgroup v2 quota ("200000 100000" = 2 CPUs). */
static int allowed_cpus(void) {
    int n = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        long long quota = 0, period = 0;
        if (fscanf(f, "%lld %lld", &quota, &period) == 2 && quota > 0 && period > 0) {
            int q = (int)((quota + period - 1) / period);
            if (q >= 1 && q < n) n = q;
        }
        fclose(f);
    }
    return n < 1 ? 1 : n;
}

/* The 1-minute load average (runnable and uninterruptible tasks, ours included), or -1; when
 * running is given, also the tasks runnable right now (us included; left as is if unreadable). */
static double load_average(int *running) {
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return -1;
    double a, b, c;
    int r = 0, t = 0;
    int got = fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &r, &t);
    fclose(f);
    if (running && got == 5 && r >= 1) *running = r;
    return got >= 1 ? a : -1;
}

/* Idle + iowait ticks of all CPUs (first line of /proc/stat), or -1. */
static int64_t idle_ticks(void) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    long long v[5] = {0};
    int got = fscanf(f, "cpu %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4]);
    fclose(f);
    return got == 5 ? (int64_t)(v[3] + v[4]) : -1;
}

static int64_t self_cpu_ns(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return 0;
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

static int clamp_threads(double x) {
    int n = (int)x;
    return n < 1 ? 1 : n > g_allowed ? g_allowed : n;
}

static void init(void) {
    g_allowed = allowed_cpus();
    const char *env = getenv("OMP_NUM_THREADS");
    if (env && atoi(env) >= 1) g_fixed = atoi(env);
    /* first estimate: the run queue (which counts us) beside the allowed CPUs */
    int running = 1;
    double load = load_average(&running);
    double n = g_allowed - (running - 1) + 0.3;
    if (load >= 0 && g_allowed - load + 0.3 < n) n = g_allowed - load + 0.3; /* others' load */
    g_auto = clamp_threads(n);
    g_wall_ns = now_ns(CLOCK_MONOTONIC);
    g_self_ns = self_cpu_ns();
    g_idle_ticks = idle_ticks();
    g_next_ns = g_wall_ns + SAMPLE_NS;
}

/* OpenBLAS computes on the calling thread only, from program start: fxdb's kernels split large
 * products over their own threads (k_linalg.c). OpenBLAS's pthread pool would otherwise run
 * beside fxdb's OpenMP threads, and each of its workers spins (sched_yield) for ~0.1 s after
 * every call that used it, or after being given a thread count: with two threads a second CPU
 * was burnt while fxdb traced on meta tensors (27 ms CPU for a 13.6 ms export). */
__attribute__((constructor)) static void blas_on_one_thread(void) { openblas_set_num_threads(1); }

/* A new automatic count from the load since the previous sample (lock held). */
static void resample(int64_t now) {
    int64_t self = self_cpu_ns(), idle = idle_ticks();
    double dt = (double)(now - g_wall_ns);
    if (idle >= 0 && g_idle_ticks >= 0 && dt > 0) {
        double self_cpus = (double)(self - g_self_ns) / dt;
        double idle_cpus = (double)(idle - g_idle_ticks) * 1e9 / (double)sysconf(_SC_CLK_TCK) / dt;
        double n = self_cpus + idle_cpus + 0.3, load = load_average(NULL);
        if (load >= 0) {
            double others = load - self_cpus;
            double free_cpus = g_allowed - (others > 0 ? others : 0) + 0.3;
            if (free_cpus < n) n = free_cpus;
        }
        g_auto = clamp_threads(n);
    }
    g_wall_ns = now;
    g_self_ns = self;
    g_idle_ticks = idle;
    g_next_ns = now + SAMPLE_NS;
}

static int current(void) {
    pthread_once(&g_once, init);
    int fixed = __atomic_load_n(&g_fixed, __ATOMIC_RELAXED);
    if (fixed) return fixed;
    int64_t now = now_ns(CLOCK_MONOTONIC_COARSE);
    if (now >= __atomic_load_n(&g_next_ns, __ATOMIC_RELAXED) && !pthread_mutex_trylock(&g_lock)) {
        if (now >= g_next_ns) resample(now_ns(CLOCK_MONOTONIC));
        pthread_mutex_unlock(&g_lock);
    }
    return __atomic_load_n(&g_auto, __ATOMIC_RELAXED);
}

void fx_set_num_threads(int n) {
    if (n < 0) return;
    pthread_once(&g_once, init);
    pthread_mutex_lock(&g_lock);
    g_fixed = n;
    pthread_mutex_unlock(&g_lock);
}

int fx_get_num_threads(void) {
    pthread_once(&g_once, init);
    int fixed = __atomic_load_n(&g_fixed, __ATOMIC_RELAXED);
    return fixed ? fixed : g_allowed;
}

int fx_num_threads_automatic(void) {
    pthread_once(&g_once, init);
    return __atomic_load_n(&g_fixed, __ATOMIC_RELAXED) == 0;
}

int fx_threads_for(int64_t work) {
    if (work < FX_PAR_MIN_WORK) return 1;
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
#else
    return 1;
#endif
    int n = current();
    int64_t cap = work / (FX_PAR_MIN_WORK / 2);
    if (n > cap) n = (int)cap;
    return n < 1 ? 1 : n;
}
