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
#include <stdbool.h>
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
 * was burnt while fxdb traced on meta tensors (27 ms CPU for a 13.6 ms export).
 * Setting the count to 1 does not stop the workers the library started when it was loaded: they
 * spin out their ~0.1 s first, so every fxdb process burnt a second CPU for its first 0.1 s (an
 * export measured then took twice its wall time in CPU). The pthread build of OpenBLAS exports
 * blas_thread_shutdown_, the call its own fork handler makes to stop the pool (a later threaded
 * call would start it again; with one thread none does): call it when the library has it (a weak
 * reference: the serial and OpenMP builds have no such pool and no such symbol). */
extern int blas_thread_shutdown_(void) __attribute__((weak));
__attribute__((constructor)) static void blas_on_one_thread(void) {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

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

/* Nonzero on a thread that is running chunks of fx_parallel_for (nested regions run serially). */
static _Thread_local int tl_in_chunks;

int fx_threads_for(int64_t work) {
    if (work < FX_PAR_MIN_WORK || tl_in_chunks) return 1;
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

/* ---- fx_parallel_for: chunks claimed from a shared counter ------------------------------------
 * One job at a time. Its state is the 64-bit claim word: generation (32 bits) | chunk count (16)
 * | next chunk (16). A thread takes chunk i by a compare-and-swap of (g, n, i) to (g, n, i + 1),
 * so a worker still holding an older generation takes nothing, and one that the OS has not run
 * yet takes nothing either: the caller takes every chunk left. The caller then waits only for
 * the chunks others took (done == n). Job fields (fn, ctx, threads) are written before the claim
 * word is published and not again until every chunk of that generation is done. Workers spin
 * for POOL_SPIN_NS after each job (the next decoder matrix follows within microseconds) and then
 * sleep on a condition variable. */
#define POOL_MAX 255
#define POOL_SPIN_NS 100000LL
#define CHUNK_BITS 16

static pthread_mutex_t p_lock = PTHREAD_MUTEX_INITIALIZER; /* workers' sleep, pool growth */
static pthread_cond_t p_wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t p_busy = PTHREAD_MUTEX_INITIALIZER; /* one caller at a time */
static int p_workers;                                      /* threads started */
static int p_sleepers;                                     /* of them, waiting on p_wake */
static uint64_t p_claim;                                   /* gen | n | next (atomic) */
static int64_t p_done;                                     /* chunks finished (atomic) */
static void (*p_fn)(void *, int64_t);
static void *p_ctx;
static int p_threads; /* workers 0 .. p_threads - 2 take part */

static uint32_t claim_gen(uint64_t c) { return (uint32_t)(c >> (2 * CHUNK_BITS)); }

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Takes and runs chunks of generation gen until none is left. */
static void run_chunks(uint32_t gen) {
    uint64_t c = __atomic_load_n(&p_claim, __ATOMIC_ACQUIRE);
    const uint64_t mask = ((uint64_t)1 << CHUNK_BITS) - 1;
    for (;;) {
        if (claim_gen(c) != gen || (c & mask) >= ((c >> CHUNK_BITS) & mask)) return;
        if (!__atomic_compare_exchange_n(&p_claim, &c, c + 1, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            continue; /* c now holds the current word */
        p_fn(p_ctx, (int64_t)(c & mask));
        __atomic_add_fetch(&p_done, 1, __ATOMIC_RELEASE);
        c = __atomic_load_n(&p_claim, __ATOMIC_ACQUIRE);
    }
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    tl_in_chunks = 1;
    uint32_t seen = claim_gen(__atomic_load_n(&p_claim, __ATOMIC_ACQUIRE));
    for (;;) {
        /* spin a while for the next job, then sleep */
        int64_t until = now_ns(CLOCK_MONOTONIC) + POOL_SPIN_NS;
        uint32_t gen = seen;
        for (int i = 0; (gen = claim_gen(__atomic_load_n(&p_claim, __ATOMIC_ACQUIRE))) == seen;
             i++) {
            cpu_relax();
            if ((i & 255) == 255 && now_ns(CLOCK_MONOTONIC) > until) break;
        }
        if (gen == seen) {
            pthread_mutex_lock(&p_lock);
            while ((gen = claim_gen(__atomic_load_n(&p_claim, __ATOMIC_ACQUIRE))) == seen) {
                p_sleepers++;
                pthread_cond_wait(&p_wake, &p_lock);
                p_sleepers--;
            }
            pthread_mutex_unlock(&p_lock);
        }
        seen = gen;
        if (id < __atomic_load_n(&p_threads, __ATOMIC_ACQUIRE) - 1) run_chunks(gen);
    }
    return NULL;
}

/* Starts workers until there are `want` (or thread creation fails); lock held. */
static void grow(int want) {
    while (p_workers < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &attr, worker, (void *)(intptr_t)p_workers);
        pthread_attr_destroy(&attr);
        if (rc) break;
        p_workers++;
    }
}

void fx_parallel_for(int threads, int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx) {
    if (n <= 0) return;
    if (threads > POOL_MAX + 1) threads = POOL_MAX + 1;
    int serial = threads <= 1 || n == 1 || n >= ((int64_t)1 << CHUNK_BITS) || tl_in_chunks ||
                 pthread_mutex_trylock(&p_busy);
    if (serial) {
        for (int64_t i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    pthread_mutex_lock(&p_lock);
    grow(threads - 1);
    int helpers = p_workers < threads - 1 ? p_workers : threads - 1;
    pthread_mutex_unlock(&p_lock);
    p_fn = fn;
    p_ctx = ctx;
    __atomic_store_n(&p_threads, helpers + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&p_done, 0, __ATOMIC_RELAXED);
    uint32_t gen = claim_gen(__atomic_load_n(&p_claim, __ATOMIC_RELAXED)) + 1;
    __atomic_store_n(&p_claim, (uint64_t)gen << (2 * CHUNK_BITS) | (uint64_t)n << CHUNK_BITS,
                     __ATOMIC_RELEASE);
    pthread_mutex_lock(&p_lock);
    if (p_sleepers) pthread_cond_broadcast(&p_wake);
    pthread_mutex_unlock(&p_lock);
    tl_in_chunks = 1;
    run_chunks(gen);
    tl_in_chunks = 0;
    /* the chunks others took: spin briefly, then yield the CPU to them */
    for (int i = 0; __atomic_load_n(&p_done, __ATOMIC_ACQUIRE) < n; i++) {
        if (i < 4096)
            cpu_relax();
        else
            sched_yield();
    }
    pthread_mutex_unlock(&p_busy);
}
