/* bench/bench_kernels.c — kernel throughput through fxdb's dispatcher against the machine's
 * limits, side by side in one run. Layer: bench (links libfxdb.a). Prints four tables:
 *  1. GEMM GFLOP/s, fxdb's mm (fx_dispatch, a fresh output per call) vs cblas_sgemm into a
 *     preallocated C, n x n x n for n = 64 ... 1024, on 1 and 2 threads; target >= 95%.
 *  2. Elementwise add / mul / exp over 16M float32: GB/s (bytes read + written) vs a memcpy of
 *     the same output size (its bytes read + written), 1 and 2 threads, under glibc's default
 *     malloc settings as a C user of libfxdb.a has them. Functional ops allocate a fresh 64 MiB
 *     output per call: timed with libfxdb's large-block cache (core/alloc_cache.h, the default)
 *     and with it turned off (limit 0: every output is mapped and page-faulted in afresh), the
 *     three alternating run by run; the in-place forms allocate nothing. Target >= 70%.
 *  3. softmax, layer_norm, rms_norm over (4096, 4096) float32: GB/s (read + write).
 *  4. Dispatch overhead: µs per add of two 1-element tensors through fx_dispatch (eager) and
 *     through fx_call. (The Lua-side number comes from bench/bench_dispatch.lua.)
 * Every figure is the median of RUNS timed runs; within a run an operation repeats until it
 * has taken MIN_RUN seconds; the two sides of a ratio alternate run by run. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fx.h"

#define RUNS 7
#define MIN_RUN 0.05

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static fx_err g_err;
static fx_ctx g_ctx;

static void die(const char *what) {
    fprintf(stderr, "bench_kernels: %s: %s\n", what, g_err.msg);
    exit(1);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

/* Seconds per call of fn(ud), repeated until MIN_RUN has passed (at least once). */
typedef void (*bench_fn)(void *ud);
static double time_once(bench_fn fn, void *ud) {
    fn(ud); /* warm */
    int reps = 0;
    double t0 = now(), t;
    do {
        fn(ud);
        reps++;
        t = now();
    } while (t - t0 < MIN_RUN);
    return (t - t0) / reps;
}
/* Medians of two functions timed alternately. */
static void time_pair(bench_fn a, void *ua, bench_fn b, void *ub, double *ta, double *tb) {
    double va[RUNS], vb[RUNS];
    for (int r = 0; r < RUNS; r++) {
        va[r] = time_once(a, ua);
        vb[r] = time_once(b, ub);
    }
    *ta = median(va, RUNS);
    *tb = median(vb, RUNS);
}

static fx_tensor *randn_tensor(int ndim, const int64_t *sizes) {
    fx_tensor *t;
    fx_ivalue sz;
    if (fx_iv_int_list(ndim, sizes, &sz, &g_err)) die("sizes");
    if (fx_call_t(&g_ctx, FX_OP_RANDN, &t, &g_err, 1, &sz)) die("randn");
    fx_ivalue_clear(&sz);
    return t;
}

/* ---- calls --------------------------------------------------------------------------------- */

typedef struct op_ud {
    fx_op_id op;
    int nargs;
    fx_ivalue args[6];
} op_ud;

static void run_op(void *ud) {
    op_ud *u = ud;
    const fx_opdef *op = fx_op_get(u->op);
    fx_ivalue a[FX_SCHEMA_MAX_ARGS] = {0}, out[FX_SCHEMA_MAX_RETS];
    for (int i = 0; i < u->nargs; i++) a[i] = u->args[i];
    if (fx_dispatch(&g_ctx, op, a, out, &g_err)) die(op->qualname);
    for (int i = 0; i < op->schema.nrets; i++) fx_ivalue_clear(&out[i]);
}

typedef struct gemm_ud {
    int n;
    const float *a, *b;
    float *c;
} gemm_ud;

static void run_sgemm(void *ud) {
    gemm_ud *g = ud;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b,
                g->n, 0.0f, g->c, g->n);
}

typedef struct copy_ud {
    void *dst;
    const void *src;
    size_t n;
} copy_ud;

/* memcpy on the given number of threads (halves, as OpenMP splits it). */
static int g_copy_threads = 1;
static void run_memcpy(void *ud) {
    copy_ud *c = ud;
    int nt = g_copy_threads;
#pragma omp parallel num_threads(nt)
    {
        size_t t = (size_t)omp_get_thread_num(), m = (size_t)omp_get_num_threads();
        size_t b0 = c->n * t / m, b1 = c->n * (t + 1) / m;
        memcpy((char *)c->dst + b0, (const char *)c->src + b0, b1 - b0);
    }
}

/* memcpy's destination: from fx_malloc, so it has the pages fxdb's tensors have (2 MiB aligned,
 * advised for huge pages: core/alloc_cache.h), already touched. */
static void *anchor_buffer(size_t bytes) {
    void *p = fx_malloc(bytes);
    if (!p) {
        fprintf(stderr, "bench_kernels: out of memory\n");
        exit(1);
    }
    memset(p, 1, bytes);
    return p;
}

static void set_threads(int t) {
    fx_set_num_threads(t); /* fxdb's kernels and OpenBLAS */
    omp_set_num_threads(t);
    g_copy_threads = t;
}

/* ---- tables -------------------------------------------------------------------------------- */

static void bench_gemm(void) {
    printf("GEMM (float32, C = A @ B, n x n x n)    GFLOP/s\n");
    printf("%6s %8s %12s %12s %8s\n", "n", "threads", "cblas_sgemm", "fxdb mm", "ratio");
    const int sizes[] = {64, 128, 256, 512, 1024};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int th = 1; th <= 2; th++) {
            set_threads(th);
            int n = sizes[s];
            int64_t sz[2] = {n, n};
            fx_tensor *A = randn_tensor(2, sz), *B = randn_tensor(2, sz);
            float *C = malloc(sizeof(float) * (size_t)n * (size_t)n);
            gemm_ud g = {n, fx_tensor_data(A), fx_tensor_data(B), C};
            op_ud u = {FX_OP_MM, 2, {fx_iv_tensor(A), fx_iv_tensor(B)}};
            double td, tf;
            time_pair(run_sgemm, &g, run_op, &u, &td, &tf);
            double flop = 2.0 * n * n * (double)n;
            printf("%6d %8d %12.1f %12.1f %7.1f%%\n", n, th, flop / td * 1e-9, flop / tf * 1e-9,
                   100.0 * td / tf);
            fx_ivalue_clear(&u.args[0]), fx_ivalue_clear(&u.args[1]);
            fx_tensor_release(A), fx_tensor_release(B);
            free(C);
        }
    printf("\n");
}

/* Medians of memcpy and of one op with libfxdb's large-block cache on and off (limit 0), timed
 * alternately; the cache's limit is back to its default afterwards. */
static void time_cache_pair(copy_ud *c, op_ud *u, double *tm, double *ton, double *toff) {
    double vm[RUNS], von[RUNS], voff[RUNS];
    for (int r = 0; r < RUNS; r++) {
        vm[r] = time_once(run_memcpy, c);
        von[r] = time_once(run_op, u);
        fx_alloc_cache_set_limit(0);
        voff[r] = time_once(run_op, u);
        fx_alloc_cache_set_limit(FX_ALLOC_CACHE_DEFAULT_LIMIT);
    }
    *tm = median(vm, RUNS);
    *ton = median(von, RUNS);
    *toff = median(voff, RUNS);
}

static void bench_elementwise(void) {
    const int64_t N = 16 << 20;
    printf("Elementwise over 16M float32 (64 MiB per tensor), from C (libfxdb.a, glibc's default "
           "malloc)    GB/s = (bytes read + written) / s\n"
           "functional ops allocate a fresh output: with libfxdb's large-block cache (default) "
           "and without it (limit 0)\n");
    printf("%-6s %8s %8s %8s %8s %9s %9s\n", "op", "threads", "memcpy", "cache", "no cache",
           "% cache", "% none");
    fx_tensor *x = randn_tensor(1, &N), *y = randn_tensor(1, &N), *z = randn_tensor(1, &N);
    size_t bytes = (size_t)N * 4;
    void *dst = anchor_buffer(bytes);
    copy_ud c = {dst, fx_tensor_data(x), bytes};
    struct {
        const char *name;
        fx_op_id op;
        int nargs, ntensors; /* tensors read + written */
        bool inplace;
    } ops[] = {
        {"add", FX_OP_ADD_TENSOR, 2, 3, false},  {"mul", FX_OP_MUL_TENSOR, 2, 3, false},
        {"exp", FX_OP_EXP, 1, 2, false},         {"add_", FX_OP_ADD__TENSOR, 2, 3, true},
        {"mul_", FX_OP_MUL__TENSOR, 2, 3, true}, {"exp_", FX_OP_EXP_, 1, 2, true},
    };
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int th = 1; th <= 2; th++) {
            set_threads(th);
            /* in place on z (its values drift; exp_ of large values gives inf, still a pass) */
            op_ud u = {
                ops[o].op, ops[o].nargs, {fx_iv_tensor(ops[o].inplace ? z : x), fx_iv_tensor(y)}};
            double tm, ton, toff;
            double gm, gon, goff;
            if (ops[o].inplace) { /* nothing allocated: the cache plays no part */
                time_pair(run_memcpy, &c, run_op, &u, &tm, &ton);
                toff = ton;
            } else {
                time_cache_pair(&c, &u, &tm, &ton, &toff);
            }
            gm = 2.0 * (double)bytes / tm * 1e-9;
            gon = (double)ops[o].ntensors * (double)bytes / ton * 1e-9;
            goff = (double)ops[o].ntensors * (double)bytes / toff * 1e-9;
            if (ops[o].inplace)
                printf("%-6s %8d %8.1f %8.1f %8s %8.1f%% %9s\n", ops[o].name, th, gm, gon, "-",
                       100.0 * gon / gm, "-");
            else
                printf("%-6s %8d %8.1f %8.1f %8.1f %8.1f%% %8.1f%%\n", ops[o].name, th, gm, gon,
                       goff, 100.0 * gon / gm, 100.0 * goff / gm);
            fx_ivalue_clear(&u.args[0]), fx_ivalue_clear(&u.args[1]);
        }
    printf("\n");
    fx_tensor_release(x), fx_tensor_release(y), fx_tensor_release(z);
    fx_free(dst);
}

static void bench_nn(void) {
    printf("Row ops over (4096, 4096) float32    GB/s = (bytes read + written) / s\n");
    printf("%-12s %8s %10s %10s %8s\n", "op", "threads", "memcpy", "fxdb", "ratio");
    const fx_opdef *sm = fx_op_lookup("_softmax.default"), *ln = fx_op_lookup("layer_norm.default"),
                   *rn = fx_op_lookup("rms_norm.default");
    if (!sm || !ln || !rn) {
        printf("(skipped: softmax / layer_norm / rms_norm are not registered)\n\n");
        return;
    }
    int64_t sz[2] = {4096, 4096}, h = 4096;
    fx_tensor *x = randn_tensor(2, sz), *w = randn_tensor(1, &h), *b = randn_tensor(1, &h);
    size_t bytes = (size_t)(4096 * 4096) * 4;
    void *dst = anchor_buffer(bytes);
    copy_ud c = {dst, fx_tensor_data(x), bytes};
    fx_ivalue shape;
    if (fx_iv_int_list(1, &h, &shape, &g_err)) die("shape");
    struct {
        const char *name;
        op_ud u;
    } ops[] = {
        {"softmax", {sm->id, 3, {fx_iv_tensor(x), fx_iv_int(-1), fx_iv_bool(false)}}},
        {"layer_norm", {ln->id, 4, {fx_iv_tensor(x), shape, fx_iv_tensor(w), fx_iv_tensor(b)}}},
        {"rms_norm", {rn->id, 3, {fx_iv_tensor(x), shape, fx_iv_tensor(w)}}},
    };
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int th = 1; th <= 2; th++) {
            set_threads(th);
            double tm, tf;
            time_pair(run_memcpy, &c, run_op, &ops[o].u, &tm, &tf);
            double gm = 2.0 * (double)bytes / tm * 1e-9, gf = 2.0 * (double)bytes / tf * 1e-9;
            printf("%-12s %8d %10.1f %10.1f %7.1f%%\n", ops[o].name, th, gm, gf, 100.0 * gf / gm);
        }
    printf("\n");
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int i = 0; i < ops[o].u.nargs; i++)
            if (ops[o].u.args[i].tag == FX_IV_TENSOR) fx_ivalue_clear(&ops[o].u.args[i]);
    fx_ivalue_clear(&shape);
    fx_tensor_release(x), fx_tensor_release(w), fx_tensor_release(b);
    fx_free(dst);
}

static void run_call(void *ud) {
    op_ud *u = ud;
    fx_tensor *r;
    if (fx_call_t(&g_ctx, u->op, &r, &g_err, 2, &u->args[0], &u->args[1])) die("fx_call");
    fx_tensor_release(r);
}

static void bench_dispatch(void) {
    set_threads(1);
    printf("Dispatch overhead: add of two 1-element float32 tensors, eager, from C    µs per op\n");
    int64_t one = 1;
    fx_tensor *x = randn_tensor(1, &one), *y = randn_tensor(1, &one);
    op_ud u = {FX_OP_ADD_TENSOR, 2, {fx_iv_tensor(x), fx_iv_tensor(y)}};
    double td, tc;
    time_pair(run_op, &u, run_call, &u, &td, &tc);
    printf("%-28s %8.3f\n%-28s %8.3f\n\n", "fx_dispatch(add.Tensor)", td * 1e6,
           "fx_call(FX_OP_ADD_TENSOR)", tc * 1e6);
    fx_ivalue_clear(&u.args[0]), fx_ivalue_clear(&u.args[1]);
    fx_tensor_release(x), fx_tensor_release(y);
}

int main(int argc, char **argv) {
    fx_ctx_init(&g_ctx, FX_MODE_EAGER);
    fx_manual_seed(0);
    const char *only = argc > 1 ? argv[1] : NULL;
    printf("bench_kernels: %d processors, medians of %d runs\n\n", omp_get_num_procs(), RUNS);
    if (!only || !strcmp(only, "gemm")) bench_gemm();
    if (!only || !strcmp(only, "elementwise")) bench_elementwise();
    if (!only || !strcmp(only, "nn")) bench_nn();
    if (!only || !strcmp(only, "dispatch")) bench_dispatch();
    return 0;
}
