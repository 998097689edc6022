/* core/kernels/k_gemv.h — a matrix-vector product with cblas_sgemv's signature.
 * Layer: core (kernels, private). See k_gemv.c for why fxdb has its own. */
#ifndef FX_K_GEMV_H
#define FX_K_GEMV_H

#include <cblas.h>

/* y = alpha * op(A) x + beta * y, exactly cblas_sgemv's contract (beta == 0 overwrites y without
 * reading it). Row-major A with unit-stride x (and, for CblasTrans, unit-stride y) runs fxdb's
 * vectorized loops, split over OpenMP threads for large matrices; anything else is handed to
 * cblas_sgemv. The result does not depend on the thread count. */
void fx_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans, blasint m, blasint n, float alpha,
              const float *a, blasint lda, const float *x, blasint incx, float beta, float *y,
              blasint incy);

#endif
