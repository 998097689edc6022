/* bench/bench_interp.c — interpreter overhead per node, and the machine's copy bandwidth.
 * Layer: bench (links libfxdb.a). Prints two tables:
 *  1. µs per node for a graph of 1-element ops (a chain of 2000 mul / add on a 1-element tensor,
 *     traced, exported and run again and again): the planned interpreter (fx_interp_reset + run,
 *     what ep:module() does per call), the naive one (every node through fx_dispatch), and eager
 *     dispatch of the same ops for reference. Target: planned <= 0.3 µs per node.
 *  2. memcpy and read bandwidth of buffers the size of the stories15M / stories110M weights, on
 *     1 and 2 threads (OpenMP halves), in fx_malloc blocks (the pages weight tensors get: 2 MiB
 *     aligned, advised for huge pages). Decoding one token streams every weight once and writes
 *     little, so the machine's limit for decoding is the READ bandwidth / weight bytes (memcpy
 *     moves each byte twice and is shown for reference).
 * Usage: bench_interp [--memcpy|--read BYTES THREADS]  (the second form prints one GB/s number,
 * for bench/bench_llama.lua). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fx.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define CHAIN 1000 /* mul + add pairs: 2000 op nodes */

static fx_err g_err;

static void die(const char *what) {
    fprintf(stderr, "bench_interp: %s: %s\n", what, g_err.msg);
    exit(1);
}

static fx_program *export_chain(fx_tensor *x) {
    fx_trace_opts o = {0};
    fx_tracer *tr = fx_tracer_new(&o, &g_err);
    if (!tr) die("tracer");
    fx_tensor *tx;
    if (fx_tracer_input(tr, FX_INPUT_USER_INPUT, "x", NULL, false, x, &tx, &g_err)) die("input");
    fx_ctx *ctx = fx_tracer_ctx(tr);
    fx_ivalue h = fx_iv_tensor_steal(tx), k1 = fx_iv_float(1.0001), k2 = fx_iv_float(0.5);
    for (int i = 0; i < CHAIN; i++) {
        fx_ivalue m, s;
        if (fx_call(ctx, FX_OP_MUL_TENSOR, &m, &g_err, 2, &h, &k1)) die("mul");
        if (fx_call(ctx, FX_OP_ADD_TENSOR, &s, &g_err, 2, &m, &k2)) die("add");
        fx_ivalue_clear(&m);
        fx_ivalue_clear(&h);
        h = s;
    }
    if (fx_tracer_finish(tr, &h, 1, &g_err)) die("finish");
    fx_graph *raw;
    fx_input_info *infos;
    int ninfos;
    if (fx_tracer_take(tr, &raw, &infos, &ninfos, &g_err)) die("take");
    fx_program *ep = NULL;
    fx_export_opts eo = {0};
    if (fx_export_build(raw, infos, ninfos, NULL, 0, &eo, &ep, &g_err)) die("export");
    fx_ivalue_clear(&h);
    fx_tracer_free(tr);
    return ep;
}

/* µs per op node over `reps` runs of g (planned unless naive). */
static double per_node(const fx_graph *g, fx_tensor *x, bool naive, int reps) {
    fx_interp_opts o = {0};
    o.naive = naive;
    fx_ivalue in = fx_iv_tensor(x), out;
    fx_interp *it;
    if (fx_interp_new(g, &in, 1, &o, &it, &g_err)) die("interp");
    if (fx_interp_run(it, &g_err)) die("run"); /* warm up */
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t = now();
        for (int r = 0; r < reps; r++) {
            if (fx_interp_reset(it, &in, 1, &g_err) || fx_interp_run(it, &g_err)) die("rerun");
            if (fx_interp_take_outputs(it, &out, &g_err)) die("outputs");
            fx_ivalue_clear(&out);
        }
        double us = (now() - t) / reps / (2 * CHAIN) * 1e6;
        if (us < best) best = us;
    }
    fx_interp_free(it);
    fx_ivalue_clear(&in);
    return best;
}

static double eager_per_op(fx_tensor *x, int reps) {
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    fx_ivalue k1 = fx_iv_float(1.0001), k2 = fx_iv_float(0.5);
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t = now();
        for (int r = 0; r < reps; r++) {
            fx_ivalue h = fx_iv_tensor(x);
            for (int i = 0; i < CHAIN; i++) {
                fx_ivalue m, s;
                if (fx_call(&eager, FX_OP_MUL_TENSOR, &m, &g_err, 2, &h, &k1)) die("mul");
                if (fx_call(&eager, FX_OP_ADD_TENSOR, &s, &g_err, 2, &m, &k2)) die("add");
                fx_ivalue_clear(&m);
                fx_ivalue_clear(&h);
                h = s;
            }
            fx_ivalue_clear(&h);
        }
        double us = (now() - t) / reps / (2 * CHAIN) * 1e6;
        if (us < best) best = us;
    }
    return best;
}

/* This OpenMP thread's share [*lo, *hi) of n items, cut at multiples of align (a power of two);
 * the last thread takes the rest. */
static void thread_range(size_t n, size_t align, size_t *lo, size_t *hi) {
    size_t k = (size_t)omp_get_num_threads(), i = (size_t)omp_get_thread_num();
    *lo = n * i / k & ~(align - 1);
    *hi = i + 1 == k ? n : n * (i + 1) / k & ~(align - 1);
}

/* Bytes copied per second by memcpy of a `bytes` buffer into another, split over `threads`
 * OpenMP threads; the best of several rounds. */
static double memcpy_gbs(size_t bytes, int threads) {
    char *a = fx_malloc(bytes), *b = fx_malloc(bytes);
    if (!a || !b) {
        fx_free(a);
        fx_free(b);
        return 0;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    int reps = (int)(2e9 / (double)bytes) + 2;
    double best = 0;
    for (int round = 0; round < 4; round++) {
        double t = now();
        for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(threads)
            {
                size_t lo, hi;
                thread_range(bytes, 64, &lo, &hi);
                memcpy((r & 1 ? a : b) + lo, (r & 1 ? b : a) + lo, hi - lo);
            }
            __asm__ volatile("" ::: "memory");
        }
        double gbs = (double)bytes * reps / (now() - t) / 1e9;
        if (gbs > best) best = gbs;
    }
    fx_free(a);
    fx_free(b);
    return best;
}

/* Bytes read per second by summing a `bytes` buffer of 64-bit words (four running sums, so the
 * loop is bound by memory, not by the adds), split over `threads` OpenMP threads; the best of
 * several rounds. */
static double read_gbs(size_t bytes, int threads) {
    size_t n = bytes / sizeof(uint64_t);
    uint64_t *a = fx_malloc(n * sizeof(uint64_t));
    if (!a) return 0;
    for (size_t i = 0; i < n; i++) a[i] = i;
    int reps = (int)(4e9 / (double)bytes) + 2;
    double best = 0;
    volatile uint64_t sink = 0;
    for (int round = 0; round < 4; round++) {
        double t = now();
        for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(threads)
            {
                size_t lo, hi;
                thread_range(n, 8, &lo, &hi);
                uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                size_t j = lo;
                for (; j + 4 <= hi; j += 4) {
                    s0 += a[j];
                    s1 += a[j + 1];
                    s2 += a[j + 2];
                    s3 += a[j + 3];
                }
                for (; j < hi; j++) s0 += a[j];
                sink += s0 + s1 + s2 + s3; /* a race on purpose: only keeps the loop alive */
            }
        }
        double gbs = (double)(n * sizeof(uint64_t)) * reps / (now() - t) / 1e9;
        if (gbs > best) best = gbs;
    }
    fx_free(a);
    return best;
}

int main(int argc, char **argv) {
    if (argc == 4 && (!strcmp(argv[1], "--memcpy") || !strcmp(argv[1], "--read"))) {
        size_t bytes = (size_t)atoll(argv[2]);
        int threads = atoi(argv[3]);
        printf("%.3f\n", argv[1][2] == 'm' ? memcpy_gbs(bytes, threads) : read_gbs(bytes, threads));
        return 0;
    }
    fx_err_clear(&g_err);
    if (fx_registry_init(&g_err)) die("registry");
    int64_t one = 1;
    fx_tensor *x;
    if (fx_tensor_zeros(1, &one, FX_DTYPE_F32, FX_DEVICE_CPU, &x, &g_err)) die("x");
    fx_program *ep = export_chain(x);
    printf("interpreter overhead, graph of %d one-element ops (mul / add chain)\n", 2 * CHAIN);
    printf("  %-34s %10s\n", "mode", "us/node");
    printf("  %-34s %10.3f   (target <= 0.3)\n", "planned (fx_interp_reset + run)", per_node(ep->graph, x, false, 200));
    printf("  %-34s %10.3f\n", "naive (fx_dispatch per node)", per_node(ep->graph, x, true, 50));
    printf("  %-34s %10.3f\n", "eager fx_call, for reference", eager_per_op(x, 50));
    fx_program_free(ep);
    fx_tensor_release(x);

    static const struct {
        const char *name;
        size_t bytes;
    } sizes[] = {{"stories15M weights", 60766848}, {"stories110M weights", 438119424}};
    printf("\nbandwidth of fx_malloc buffers (read: bytes summed per second, the decode limit is this /"
           " weight bytes; memcpy: bytes copied per second)\n");
    printf("  %-22s %8s %15s %15s %15s %15s\n", "buffer", "MB", "read 1 thread", "read 2 threads",
           "memcpy 1 thr.", "memcpy 2 thr.");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        printf("  %-22s %8.1f %10.2f GB/s %10.2f GB/s %10.2f GB/s %10.2f GB/s\n", sizes[i].name,
               sizes[i].bytes / 1e6, read_gbs(sizes[i].bytes, 1), read_gbs(sizes[i].bytes, 2),
               memcpy_gbs(sizes[i].bytes, 1), memcpy_gbs(sizes[i].bytes, 2));
    return 0;
}
