/* core/parallel.h — how many threads fxdb's kernels use.
 * Layer: core.
 *
 * Kernels split large loops over threads: elementwise loops, matrix-vector products and the
 * blocks of large matrix products over fx_parallel_for's pool (below), reductions and the nn
 * kernels (k_reduce.c, k_reduce_index.c, k_nn.c) over OpenMP teams; both take their count from
 * fx_threads_for. OpenBLAS computes on the calling thread only: it is set to one thread and its
 * own pool is stopped at program start (a constructor in parallel.c), and each of fxdb's threads
 * calls it on its own block (OPENBLAS_NUM_THREADS has no effect; a program linking libfxdb.a
 * gets a single-threaded OpenBLAS too). A region only goes
 * parallel when it has enough work to repay the start-up of the threads, and, in the automatic
 * mode (the default), only when the machine has idle CPUs: on a shared machine a thread that
 * loses its CPU stalls every parallel region for a scheduler time slice, which made default runs
 * 30-50x slower than one thread. So:
 *
 *   - automatic (the default, fx_set_num_threads(0)): up to the CPUs this process may use
 *     (sched_getaffinity, capped by a cgroup v2 cpu.max quota), minus the CPUs other processes
 *     are keeping busy, measured from /proc/stat and getrusage over the last ~0.2 s and from the
 *     1-minute load average (at the start, from the run queue length and load average in
 *     /proc/loadavg). Under load, steady or in bursts, that is 1 thread.
 *   - fixed (fx_set_num_threads(n), n >= 1, or OMP_NUM_THREADS=n in the environment at the
 *     first call): n threads for large regions whatever the load, as PyTorch's
 *     torch.set_num_threads.
 *
 * Thread-safe; cheap enough to call once per kernel (one clock read; /proc is read at most every
 * 0.2 s). Without OpenMP the reductions and nn kernels run on one thread. */
#ifndef FX_PARALLEL_H
#define FX_PARALLEL_H

#include <stdint.h>

/* Sets the thread count: n >= 1 fixed, 0 automatic. Negative n is ignored. */
void fx_set_num_threads(int n);
/* The fixed count, or in automatic mode the CPUs available to this process (the most a region
 * will use; fewer while the machine is busy). >= 1. */
int fx_get_num_threads(void);
/* Nonzero when the count is automatic. */
int fx_num_threads_automatic(void);
/* The threads a parallel region with `work` units (elements touched, or multiply-adds) should
 * use now: 1 inside a parallel region, below FX_PAR_MIN_WORK, or while the machine is busy in
 * automatic mode; never more than work / (FX_PAR_MIN_WORK / 2). */
int fx_threads_for(int64_t work);
#define FX_PAR_MIN_WORK 32768

/* Runs fn(ctx, i) for every i in [0, n) on up to `threads` threads, the caller one of them
 * (threads: fx_threads_for's answer). The chunks are claimed one at a time from a shared counter
 * by whichever thread is running: a thread the OS has not scheduled takes none and holds nothing
 * up (an OpenMP region waits for every thread of its team, a time slice whenever another job has
 * that CPU), so a busy machine costs at most the wake-up beside running alone. Returns when every
 * chunk has run. Chunks run in no particular order and concurrently: fn must write disjoint data.
 * Runs serially for threads <= 1, n >= 65536, inside a chunk (nested calls), or while another
 * thread's call is in progress. The worker threads are started on first need and kept (they
 * spin ~0.1 ms after each job, then sleep). */
void fx_parallel_for(int threads, int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx);

#endif
