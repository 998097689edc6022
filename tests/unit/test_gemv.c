/* tests/unit/test_gemv.c — core/kernels/k_gemv.c (fx_sgemv) against a double-precision loop.
 * Layer: tests (cmocka, links libfxdb.a). Shapes around the kernel's 4-row and 16-lane blocks and
 * its thread threshold, both transposes, alpha / beta (beta == 0 must not read y: y starts as
 * NaN), strided y, padded leading dimensions; and the same bits on 1 to 5 threads. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/kernels/k_gemv.h"
#include "core/parallel.h"

static float val(int64_t i) { return (float)((i * 37 % 23) - 11) / 8.0f; }

/* Checks one product: A is m x n (lda >= n), op(A) x with alpha, beta. */
static void check(bool trans, int m, int n, int lda, float alpha, float beta, int incy) {
    int xlen = trans ? m : n, ylen = trans ? n : m;
    float *a = malloc(sizeof(float) * (size_t)m * lda), *x = malloc(sizeof(float) * xlen);
    float *y = malloc(sizeof(float) * (size_t)ylen * incy),
          *y0 = malloc(sizeof(float) * (size_t)ylen * incy);
    for (int64_t i = 0; i < (int64_t)m * lda; i++) a[i] = val(i);
    for (int i = 0; i < xlen; i++) x[i] = val(i + 5);
    for (int i = 0; i < ylen * incy; i++) y[i] = y0[i] = beta == 0 ? NAN : val(i + 9);
    fx_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, m, n, alpha, a, lda, x, 1, beta, y,
             incy);
    for (int o = 0; o < ylen; o++) {
        double s = 0, mag = 0;
        for (int k = 0; k < xlen; k++) {
            double w = trans ? a[(int64_t)k * lda + o] : a[(int64_t)o * lda + k];
            s += w * x[k];
            mag += fabs(w * x[k]);
        }
        double want = alpha * s + (beta == 0 ? 0 : beta * y0[o * incy]);
        double tol = 1e-6 * (fabs(alpha) * mag + fabs(beta * y0[o * incy])) + 1e-6;
        if (fabs(y[o * incy] - want) > tol)
            fail_msg("%s m=%d n=%d row %d: got %g want %g", trans ? "T" : "N", m, n, o, y[o * incy],
                     want);
    }
    free(a);
    free(x);
    free(y);
    free(y0);
}

static void test_shapes(void **state) {
    (void)state;
    static const int dims[] = {1, 3, 4, 5, 15, 16, 17, 33, 288};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        for (size_t j = 0; j < sizeof dims / sizeof dims[0]; j++) {
            int m = dims[i], n = dims[j];
            check(false, m, n, n, 1, 0, 1);
            check(true, m, n, n, 1, 0, 1);
            check(false, m, n, n + 3, 0.5f, 2, 1);
            check(true, m, n, n + 3, -1.5f, 0.25f, 1);
            check(false, m, n, n, 1, 0, 3); /* strided y (a column of C) */
        }
    /* large enough for the threaded path */
    check(false, 1000, 300, 300, 1, 0, 1);
    check(true, 300, 1000, 1000, 1, 0, 1);
}

/* The same bits whatever the thread count. */
static void test_threads_same_bits(void **state) {
    (void)state;
    int m = 2003, n = 288;
    float *a = malloc(sizeof(float) * (size_t)m * n), x[2003], y1[2003], y2[2003];
    for (int64_t i = 0; i < (int64_t)m * n; i++) a[i] = val(i);
    for (int i = 0; i < m; i++) x[i] = val(i + 1);
    for (int t = 0; t < 2; t++) {
        bool trans = t == 1;
        int ylen = trans ? n : m;
        fx_set_num_threads(1);
        fx_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, m, n, 1, a, n, x, 1, 0, y1, 1);
        for (int nt = 2; nt <= 5; nt++) {
            fx_set_num_threads(nt);
            fx_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, m, n, 1, a, n, x, 1, 0, y2,
                     1);
            assert_memory_equal(y1, y2, sizeof(float) * ylen);
        }
        fx_set_num_threads(0);
    }
    free(a);
}

/* Column-major and strided x are BLAS's business: same results as cblas_sgemv. */
static void test_fallback(void **state) {
    (void)state;
    float a[6] = {1, 2, 3, 4, 5, 6}, x[6] = {1, 0, 2, 0, 3, 0}, y[3], z[3];
    fx_sgemv(CblasColMajor, CblasNoTrans, 3, 2, 1, a, 3, x, 2, 0, y, 1);
    cblas_sgemv(CblasColMajor, CblasNoTrans, 3, 2, 1, a, 3, x, 2, 0, z, 1);
    assert_memory_equal(y, z, sizeof y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_threads_same_bits),
        cmocka_unit_test(test_fallback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
