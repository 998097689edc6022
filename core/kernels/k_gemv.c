/* core/kernels/k_gemv.c — float32 matrix-vector products for one-token decoding.
 * Layer: core (kernels). A decoder step multiplies one row by every weight matrix, so its speed is
 * the speed of reading the weights once. OpenBLAS 0.3.21 (Debian 12) does not know this machine's
 * cores (Sapphire Rapids) and falls back to a generic sgemv kernel that reads ~4.7 GB/s here,
 * against ~15-17 GB/s for a plain loop compiled for AVX2 / AVX-512 (bench/bench_llama.lua
 * reports both). These loops are written once in C and compiled for several targets with
 * target_clones; the loader picks the best one the CPU has. Rows (NoTrans) or column blocks
 * (Trans) are split into chunks that fxdb's threads claim one at a time when the matrix is large
 * (fx_parallel_for: a thread the machine does not run takes no chunk, so a loaded machine does
 * not stall the product); each output element is always computed by the same code in the same
 * order, so results do not depend on the thread count. */
#include "core/kernels/k_gemv.h"

#include <stdbool.h>
#include <stdint.h>

#include "core/parallel.h"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define FX_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FX_CLONES
#endif

/* Matrices smaller than this (elements) stay on one thread. */
#define GEMV_PAR_MIN (1 << 16)
/* Elements per chunk of rows when threaded (64 KiB of float32 weights). */
#define GEMV_CHUNK (1 << 14)

/* y[r * incy] = alpha * dot(A[r, :], x) + beta * y for r in [r0, r1): one row after the other,
 * each with 16 partial sums (one or two vector registers), then a fixed-order reduction. One row
 * at a time reads the matrix as a single sequential stream: interleaving four rows (four streams
 * a row apart) read a 53000 x 288 matrix at ~5 GB/s on the bench machine, one row at 15-22 GB/s;
 * the sums are the same, in the same order. */
FX_CLONES
static void rows_n(int64_t r0, int64_t r1, int64_t n, float alpha, const float *restrict a,
                   int64_t lda, const float *restrict x, float beta, float *restrict y,
                   int64_t incy) {
    for (int64_t r = r0; r < r1; r++) {
        const float *w = a + r * lda;
        float s[16] = {0}, t = 0;
        int64_t i = 0;
        for (; i + 16 <= n; i += 16)
            for (int j = 0; j < 16; j++) s[j] += w[i + j] * x[i + j];
        for (; i < n; i++) t += w[i] * x[i];
        for (int j = 0; j < 16; j++) t += s[j];
        float *yo = y + r * incy;
        *yo = beta == 0 ? alpha * t : alpha * t + beta * *yo;
    }
}

/* y[c] = alpha * sum_r A[r, c] x[r] + beta * y[c] for c in [c0, c1): row after row, an axpy over
 * the block (the block of y stays in registers / L1). */
FX_CLONES
static void cols_t(int64_t c0, int64_t c1, int64_t m, float alpha, const float *restrict a,
                   int64_t lda, const float *restrict x, float beta, float *restrict y) {
    for (int64_t c = c0; c < c1; c++) y[c] = beta == 0 ? 0 : beta * y[c];
    for (int64_t r = 0; r < m; r++) {
        float xr = alpha * x[r];
        const float *row = a + r * lda;
        for (int64_t c = c0; c < c1; c++) y[c] += xr * row[c];
    }
}

static int threads_for(int64_t elems) { return elems < GEMV_PAR_MIN ? 1 : fx_threads_for(elems); }

/* One call's arguments, for the chunks of fx_parallel_for. */
typedef struct gemv_job {
    int64_t m, n, lda, incy, rows; /* rows (NoTrans) or columns (Trans) per chunk */
    float alpha, beta;
    const float *a, *x;
    float *y;
} gemv_job;

static void rows_chunk(void *ctx, int64_t i) {
    const gemv_job *j = ctx;
    int64_t r1 = (i + 1) * j->rows < j->m ? (i + 1) * j->rows : j->m;
    rows_n(i * j->rows, r1, j->n, j->alpha, j->a, j->lda, j->x, j->beta, j->y, j->incy);
}

static void cols_chunk(void *ctx, int64_t i) {
    const gemv_job *j = ctx;
    int64_t c1 = (i + 1) * j->rows < j->n ? (i + 1) * j->rows : j->n;
    cols_t(i * j->rows, c1, j->m, j->alpha, j->a, j->lda, j->x, j->beta, j->y);
}

void fx_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans, blasint m, blasint n, float alpha,
              const float *a, blasint lda, const float *x, blasint incx, float beta, float *y,
              blasint incy) {
    bool notrans = trans == CblasNoTrans;
    if (order != CblasRowMajor || incx != 1 || m <= 0 || n <= 0 || (!notrans && incy != 1) ||
        (trans != CblasNoTrans && trans != CblasTrans)) {
        cblas_sgemv(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
        return;
    }
    int nt = threads_for((int64_t)m * n);
    gemv_job j = {m, n, lda, incy, 256, alpha, beta, a, x, y};
    if (notrans) {
        /* chunks of ~GEMV_CHUNK elements: small enough that a thread the OS preempts holds
         * little back, large enough to repay the claim */
        j.rows = GEMV_CHUNK / n < 1 ? 1 : GEMV_CHUNK / n;
        fx_parallel_for(nt, (m + j.rows - 1) / j.rows, rows_chunk, &j);
        return;
    }
    /* Trans: y has n elements, x has m; blocks of 256 columns */
    fx_parallel_for(nt, (n + j.rows - 1) / j.rows, cols_chunk, &j);
}
