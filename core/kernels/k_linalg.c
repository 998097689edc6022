/* core/kernels/k_linalg.c — mm, bmm, dot, mv, linear, addmm and baddbmm on the CPU.
 * Layer: core (kernels). float32 / float64 go to OpenBLAS (cblas_sgemm / cblas_dgemm, or
 * cblas_sgemv / cblas_dgemv when one side of the product is a single row or column: the
 * (1, dim) @ (dim, n) of a decoder's one-token step is a matrix-vector product); an
 * operand whose strides BLAS can express (unit stride in one dim, a leading dimension large
 * enough in the other) is passed as is, transposed when its unit stride is along rows, else it
 * is packed into a contiguous buffer first, as addmm_impl_cpu_ does. float16 / bfloat16 are
 * widened to float32 buffers, multiplied with sgemm and rounded once (PyTorch's CPU kernels
 * accumulate them in float32 too). complex64 / complex128 go to cblas_cgemm / cblas_zgemm on
 * packed copies. Integer and bool products use a plain loop with 64-bit
 * wrap-around accumulation (bool: OR of ANDs).
 *
 * Every product funnels into gemm(): C[M, N] = alpha * A[M, K] @ B[K, N] + beta * C where A and
 * B are strided matrix views (kb_mat) and C is row-major with leading dimension ldc; beta == 0
 * overwrites C without reading it (NaNs in C do not propagate), as BLAS and addmm do. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/kernels/k_gemv.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/parallel.h"
#include "core/shape.h"

/* A strided matrix: element (r, c) lives at p + (r * s0 + c * s1) * itemsize. */
typedef struct kb_mat {
    const void *p;      /* element (0, 0) */
    int64_t rows, cols; /* sizes */
    int64_t s0, s1;     /* strides in elements */
} kb_mat;

/* Can BLAS read m in place? Sets the transpose flag and leading dimension if so. The stride of
 * a size-1 dim is never used, so it does not constrain the choice. */
static bool blas_layout(const kb_mat *m, enum CBLAS_TRANSPOSE *tr, int64_t *ld) {
    int64_t r1 = m->rows > 1 ? m->rows : 1, c1 = m->cols > 1 ? m->cols : 1;
    bool one_row = m->rows == 1, one_col = m->cols == 1;
    if ((m->s1 == 1 || one_col) && (one_row || m->s0 >= c1)) {
        *tr = CblasNoTrans;
        *ld = one_row ? c1 : m->s0;
        return *ld <= INT_MAX;
    }
    if ((m->s0 == 1 || one_row) && (one_col || m->s1 >= r1)) {
        *tr = CblasTrans;
        *ld = one_col ? r1 : m->s1;
        return *ld <= INT_MAX;
    }
    return false;
}

/* Packs m into a row-major float / double buffer (converting half types), one allocation. */
static float *pack_f32(fx_dtype dt, const kb_mat *m) {
    float *buf = fx_malloc(sizeof(float) * (size_t)(m->rows * m->cols > 0 ? m->rows * m->cols : 1));
    if (!buf) return NULL;
    for (int64_t r = 0; r < m->rows; r++)
        for (int64_t c = 0; c < m->cols; c++) {
            int64_t o = r * m->s0 + c * m->s1;
            float v;
            switch (dt) {
            case FX_DTYPE_F16: v = fx_f16_to_f32(((const uint16_t *)m->p)[o]); break;
            case FX_DTYPE_BF16: v = fx_bf16_to_f32(((const uint16_t *)m->p)[o]); break;
            default: v = ((const float *)m->p)[o]; break;
            }
            buf[r * m->cols + c] = v;
        }
    return buf;
}

static double *pack_f64(const kb_mat *m) {
    double *buf =
        fx_malloc(sizeof(double) * (size_t)(m->rows * m->cols > 0 ? m->rows * m->cols : 1));
    if (!buf) return NULL;
    for (int64_t r = 0; r < m->rows; r++)
        for (int64_t c = 0; c < m->cols; c++)
            buf[r * m->cols + c] = ((const double *)m->p)[r * m->s0 + c * m->s1];
    return buf;
}

static int oom(fx_err *err) {
    return fx_err_setf(err, FX_ENOMEM, "out of memory packing a matrix operand");
}

/* ---- BLAS products over fxdb's threads ------------------------------------------------------ */

/* One call of cblas_?gemm, row-major: C[M, N] = alpha * op(A) op(B) + beta * C. kind 's', 'd',
 * 'c' or 'z'; alpha / beta point at a float, double, float[2] or double[2]. */
typedef struct blas_gemm {
    char kind;
    enum CBLAS_TRANSPOSE ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    const void *a, *b, *alpha, *beta;
    void *c;
} blas_gemm;

/* Row (column) blocks start at multiples of this many rows (columns) of C, so every element of C
 * sits at the same place in OpenBLAS's register tiles as in one call over the whole product. */
#define GEMM_CUT 192
/* The fewest multiply-adds per block: above OpenBLAS's small-matrix kernels (used below 100^3 on
 * this library's AVX-512 targets), so a block takes the same code path as the whole product. */
#define GEMM_BLOCK_MIN ((int64_t)1 << 21)

/* The rows [r0, r1) and columns [c0, c1) of C, one BLAS call. */
static void gemm_block(const blas_gemm *g, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    int64_t ao = g->ta == CblasNoTrans ? r0 * g->lda : r0,
            bo = g->tb == CblasNoTrans ? c0 : c0 * g->ldb, co = r0 * g->ldc + c0;
    blasint m = (blasint)(r1 - r0), n = (blasint)(c1 - c0), k = (blasint)g->K,
            lda = (blasint)g->lda, ldb = (blasint)g->ldb, ldc = (blasint)g->ldc;
    switch (g->kind) {
    case 's':
        cblas_sgemm(CblasRowMajor, g->ta, g->tb, m, n, k, *(const float *)g->alpha,
                    (const float *)g->a + ao, lda, (const float *)g->b + bo, ldb,
                    *(const float *)g->beta, (float *)g->c + co, ldc);
        break;
    case 'd':
        cblas_dgemm(CblasRowMajor, g->ta, g->tb, m, n, k, *(const double *)g->alpha,
                    (const double *)g->a + ao, lda, (const double *)g->b + bo, ldb,
                    *(const double *)g->beta, (double *)g->c + co, ldc);
        break;
    case 'c':
        cblas_cgemm(CblasRowMajor, g->ta, g->tb, m, n, k, g->alpha, (const float *)g->a + 2 * ao,
                    lda, (const float *)g->b + 2 * bo, ldb, g->beta, (float *)g->c + 2 * co, ldc);
        break;
    default:
        cblas_zgemm(CblasRowMajor, g->ta, g->tb, m, n, k, g->alpha, (const double *)g->a + 2 * ao,
                    lda, (const double *)g->b + 2 * bo, ldb, g->beta, (double *)g->c + 2 * co, ldc);
        break;
    }
}

/* A product cut into chunks of whole GEMM_CUT units of rows (or columns) of C. */
typedef struct gemm_job {
    const blas_gemm *g;
    bool by_rows;
    int64_t per, chunks; /* units per chunk; the last chunk also takes the remainder */
} gemm_job;

static void gemm_chunk(void *ctx, int64_t i) {
    const gemm_job *j = ctx;
    int64_t len = j->by_rows ? j->g->M : j->g->N;
    int64_t u0 = i * j->per * GEMM_CUT, u1 = i + 1 == j->chunks ? len : u0 + j->per * GEMM_CUT;
    if (j->by_rows)
        gemm_block(j->g, u0, u1, 0, j->g->N);
    else
        gemm_block(j->g, 0, j->g->M, u0, u1);
}

/* Runs g, cut into row blocks of C (column blocks when C has too few rows) that the threads
 * core/parallel.h grants claim one at a time (fx_parallel_for): OpenBLAS itself runs on one
 * thread inside fxdb (its own pool spun for ~0.1 s after every call and beside fxdb's threads),
 * so the split is fxdb's. Blocks start at multiples of GEMM_CUT and hold at least GEMM_BLOCK_MIN
 * multiply-adds, so the result is the same for every thread count. */
static void gemm_run(const blas_gemm *g) {
    int64_t nt = fx_threads_for(g->M * g->N * g->K);
    int64_t rows = g->M / GEMM_CUT, cols = g->N / GEMM_CUT;
    bool by_rows = rows >= nt || rows >= cols;
    int64_t units = by_rows ? rows : cols;
    int64_t unit_work = GEMM_CUT * (by_rows ? g->N : g->M) * g->K;
    /* units per chunk: enough work each, and about four chunks per thread */
    int64_t per = unit_work > 0 ? (GEMM_BLOCK_MIN + unit_work - 1) / unit_work : 1;
    if (nt > 1 && units / (4 * nt) > per) per = units / (4 * nt);
    int64_t chunks = per > 0 ? units / per : 0;
    if (nt <= 1 || chunks <= 1) {
        gemm_block(g, 0, g->M, 0, g->N);
        return;
    }
    gemm_job j = {g, by_rows, per, chunks};
    fx_parallel_for((int)nt, chunks, gemm_chunk, &j);
}

/* ---- matrix-vector products ----------------------------------------------------------------- */

/* A strided vector for BLAS: BLAS needs a non-zero increment, so a broadcast (stride-0) vector
 * is packed. *buf receives the packed copy (or stays NULL). */
#define GEMV_VEC(T, NAME)                                                                          \
    static const T *NAME(const T *p, int64_t n, int64_t stride, int64_t *inc, T **buf) {           \
        *buf = NULL;                                                                               \
        if (n <= 1 || stride != 0) {                                                               \
            *inc = n <= 1 ? 1 : stride;                                                            \
            return p;                                                                              \
        }                                                                                          \
        if (!(*buf = fx_malloc(sizeof(T) * (size_t)n))) return NULL;                               \
        for (int64_t i = 0; i < n; i++) (*buf)[i] = p[0];                                          \
        *inc = 1;                                                                                  \
        return *buf;                                                                               \
    }
GEMV_VEC(float, vec_f32)
GEMV_VEC(double, vec_f64)

/* The matrix-vector form of C = alpha * A @ B + beta * C when M == 1 (a row times B: y = B^T x,
 * y is C's row 0, contiguous) or N == 1 (A times a column: y = A x, y is C's column 0, stride
 * ldc). The matrix operand goes to BLAS in place when blas_layout allows it, else it is packed.
 * Returns FX_OK, or -1 when this form does not apply (the caller runs gemm). */
#define GEMV_IMPL(T, NAME, VEC, PACK, GEMV)                                                        \
    static int NAME(const kb_mat *A, const kb_mat *B, T *C, int64_t ldc, T alpha, T beta,          \
                    fx_err *err) {                                                                 \
        int64_t M = A->rows, N = B->cols, K = A->cols;                                             \
        bool row = M == 1;                                                                         \
        if (!row && N != 1) return -1;                                                             \
        const kb_mat *mat = row ? B : A;                                                           \
        kb_mat mt = *mat; /* the matrix as BLAS sees it: y = op(mt) v */                           \
        const T *vp = row ? A->p : B->p;                                                           \
        int64_t vstride = row ? A->s1 : B->s0, incv, incy = row ? 1 : ldc, ld;                     \
        int64_t ylen = row ? N : M;                                                                \
        enum CBLAS_TRANSPOSE tr;                                                                   \
        T *vbuf = NULL, *mbuf = NULL;                                                              \
        const T *v = VEC(vp, K, vstride, &incv, &vbuf), *mp = mt.p;                                \
        if (!v) return oom(err);                                                                   \
        if (!blas_layout(&mt, &tr, &ld)) {                                                         \
            if (!(mbuf = PACK(&mt))) {                                                             \
                fx_free(vbuf);                                                                     \
                return oom(err);                                                                   \
            }                                                                                      \
            mp = mbuf, tr = CblasNoTrans, ld = mt.cols > 1 ? mt.cols : 1;                          \
        }                                                                                          \
        /* row: y[N] = mt[K, N]^T v; column: y[M] = mt[M, K] v. In row-major BLAS terms the        \
         * stored matrix is (rows x cols) = mt's shape when NoTrans, its transpose when Trans. */  \
        bool want_t = row; /* do we need op(mt)^T of the logical matrix? */                        \
        enum CBLAS_TRANSPOSE op = (tr == CblasTrans) != want_t ? CblasTrans : CblasNoTrans;        \
        int64_t srows = tr == CblasNoTrans ? mt.rows : mt.cols;                                    \
        int64_t scols = tr == CblasNoTrans ? mt.cols : mt.rows;                                    \
        if (beta == 0)                                                                             \
            for (int64_t i = 0; i < ylen; i++) C[i * incy] = 0;                                    \
        GEMV(CblasRowMajor, op, (blasint)srows, (blasint)scols, alpha, mp, (blasint)ld, v,         \
             (blasint)incv, beta, C, (blasint)incy);                                               \
        fx_free(vbuf);                                                                             \
        fx_free(mbuf);                                                                             \
        return FX_OK;                                                                              \
    }

static float *pack_f32_plain(const kb_mat *m) { return pack_f32(FX_DTYPE_F32, m); }
GEMV_IMPL(float, gemv_f32, vec_f32, pack_f32_plain, fx_sgemv) /* k_gemv.c */
GEMV_IMPL(double, gemv_f64, vec_f64, pack_f64, cblas_dgemv)

/* ---- matrix-matrix products ----------------------------------------------------------------- */

/* C = alpha * A @ B + beta * C in float32 (C float32, row-major, ldc). Half operands are widened
 * into float32 buffers first; single rows / columns go to sgemv. */
static int gemm_f32(fx_dtype dt, const kb_mat *A, const kb_mat *B, float *C, int64_t ldc,
                    float alpha, float beta, fx_err *err) {
    int64_t M = A->rows, N = B->cols, K = A->cols, lda = K, ldb = N;
    if (dt != FX_DTYPE_F32) { /* widen both operands once, then the float32 path */
        float *abuf = pack_f32(dt, A), *bbuf = abuf ? pack_f32(dt, B) : NULL;
        int rc = FX_OK;
        if (!bbuf) {
            rc = oom(err);
        } else {
            kb_mat a32 = {abuf, M, K, K, 1}, b32 = {bbuf, K, N, N, 1};
            rc = gemm_f32(FX_DTYPE_F32, &a32, &b32, C, ldc, alpha, beta, err);
        }
        fx_free(abuf);
        fx_free(bbuf);
        return rc;
    }
    int rc = gemv_f32(A, B, C, ldc, alpha, beta, err);
    if (rc >= 0) return rc;
    enum CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
    float *abuf = NULL, *bbuf = NULL;
    const float *ap = A->p, *bp = B->p;
    if (!blas_layout(A, &ta, &lda)) {
        if (!(abuf = pack_f32(dt, A))) return oom(err);
        ap = abuf, ta = CblasNoTrans, lda = K > 1 ? K : 1;
    }
    if (!blas_layout(B, &tb, &ldb)) {
        if (!(bbuf = pack_f32(dt, B))) {
            fx_free(abuf);
            return oom(err);
        }
        bp = bbuf, tb = CblasNoTrans, ldb = N > 1 ? N : 1;
    }
    gemm_run(&(blas_gemm){'s', ta, tb, M, N, K, lda, ldb, ldc, ap, bp, &alpha, &beta, C});
    fx_free(abuf);
    fx_free(bbuf);
    return FX_OK;
}

static int gemm_f64(const kb_mat *A, const kb_mat *B, double *C, int64_t ldc, double alpha,
                    double beta, fx_err *err) {
    int64_t M = A->rows, N = B->cols, K = A->cols, lda = K, ldb = N;
    int rc = gemv_f64(A, B, C, ldc, alpha, beta, err);
    if (rc >= 0) return rc;
    enum CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
    double *abuf = NULL, *bbuf = NULL;
    const double *ap = A->p, *bp = B->p;
    if (!blas_layout(A, &ta, &lda)) {
        if (!(abuf = pack_f64(A))) return oom(err);
        ap = abuf, ta = CblasNoTrans, lda = K > 1 ? K : 1;
    }
    if (!blas_layout(B, &tb, &ldb)) {
        if (!(bbuf = pack_f64(B))) {
            fx_free(abuf);
            return oom(err);
        }
        bp = bbuf, tb = CblasNoTrans, ldb = N > 1 ? N : 1;
    }
    gemm_run(&(blas_gemm){'d', ta, tb, M, N, K, lda, ldb, ldc, ap, bp, &alpha, &beta, C});
    fx_free(abuf);
    fx_free(bbuf);
    return FX_OK;
}

/* Integer / bool product: 64-bit wrap-around sums, stored back modulo the type's width;
 * alpha and beta are integers here (addmm's Scalar arguments converted as PyTorch does). */
#define GEMM_INT_LOOP(T)                                                                           \
    do {                                                                                           \
        const T *a = A->p, *b = B->p;                                                              \
        T *c = C;                                                                                  \
        for (int64_t i = 0; i < M; i++)                                                            \
            for (int64_t j = 0; j < N; j++) {                                                      \
                uint64_t s = 0;                                                                    \
                for (int64_t k = 0; k < K; k++)                                                    \
                    s += (uint64_t)(int64_t)a[i * A->s0 + k * A->s1] *                             \
                         (uint64_t)(int64_t)b[k * B->s0 + j * B->s1];                              \
                s *= (uint64_t)alpha;                                                              \
                if (beta) s += (uint64_t)beta * (uint64_t)(int64_t)c[i * ldc + j];                 \
                c[i * ldc + j] = (T)(int64_t)s;                                                    \
            }                                                                                      \
    } while (0)

static void gemm_int(fx_dtype dt, const kb_mat *A, const kb_mat *B, void *C, int64_t ldc,
                     int64_t alpha, int64_t beta) {
    int64_t M = A->rows, N = B->cols, K = A->cols;
    switch (dt) {
    case FX_DTYPE_I64: GEMM_INT_LOOP(int64_t); break;
    case FX_DTYPE_I32: GEMM_INT_LOOP(int32_t); break;
    case FX_DTYPE_I16: GEMM_INT_LOOP(int16_t); break;
    case FX_DTYPE_I8: GEMM_INT_LOOP(int8_t); break;
    case FX_DTYPE_U8: GEMM_INT_LOOP(uint8_t); break;
    case FX_DTYPE_BOOL: {
        const uint8_t *a = A->p, *b = B->p;
        uint8_t *c = C;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                bool s = false;
                for (int64_t k = 0; k < K && !s; k++)
                    s = a[i * A->s0 + k * A->s1] && b[k * B->s0 + j * B->s1];
                s = s && alpha;
                c[i * ldc + j] = s || (beta && c[i * ldc + j]);
            }
        break;
    }
    default: break;
    }
}

/* Complex product (complex64 / complex128, real alpha and beta): both operands packed into
 * contiguous buffers, then cblas_cgemm / cblas_zgemm. */
static int gemm_cplx(fx_dtype dt, const kb_mat *A, const kb_mat *B, void *C, int64_t ldc,
                     double alpha, double beta, fx_err *err) {
    int64_t M = A->rows, N = B->cols, K = A->cols;
    size_t item = fx_dtype_size(dt);
    char *abuf = fx_malloc(item * (size_t)(M * K)), *bbuf = fx_malloc(item * (size_t)(K * N));
    if (!abuf || !bbuf) {
        fx_free(abuf);
        fx_free(bbuf);
        return oom(err);
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++)
            memcpy(abuf + (i * K + k) * (int64_t)item,
                   (const char *)A->p + (i * A->s0 + k * A->s1) * (int64_t)item, item);
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            memcpy(bbuf + (k * N + j) * (int64_t)item,
                   (const char *)B->p + (k * B->s0 + j * B->s1) * (int64_t)item, item);
    float al32[2] = {(float)alpha, 0}, be32[2] = {(float)beta, 0};
    double al[2] = {alpha, 0}, be[2] = {beta, 0};
    bool c64 = dt == FX_DTYPE_C64;
    gemm_run(&(blas_gemm){c64 ? 'c' : 'z', CblasNoTrans, CblasNoTrans, M, N, K, K > 1 ? K : 1,
                          N > 1 ? N : 1, ldc, abuf, bbuf, c64 ? (void *)al32 : (void *)al,
                          c64 ? (void *)be32 : (void *)be, C});
    fx_free(abuf);
    fx_free(bbuf);
    return FX_OK;
}

/* C[M, N] = alpha * A @ B + beta * C, C of dtype dt, row-major with leading dimension ldc.
 * A and B have dtype dt. beta == 0 never reads C. An empty product (K == 0) leaves beta * C. */
static int gemm(fx_dtype dt, const kb_mat *A, const kb_mat *B, void *C, int64_t ldc, double alpha,
                double beta, fx_err *err) {
    int64_t M = A->rows, N = B->cols, K = A->cols;
    size_t item = fx_dtype_size(dt);
    if (M == 0 || N == 0) return FX_OK;
    if (K == 0 || alpha == 0) {
        for (int64_t i = 0; i < M; i++) {
            char *row = (char *)C + i * ldc * (int64_t)item;
            if (beta == 0) {
                memset(row, 0, N * item);
                continue;
            }
            for (int64_t j = 0; j < N; j++) {
                double re, im;
                fx_dtype_load_c(dt, row, j, &re, &im);
                fx_dtype_store_c(dt, row, j, beta * re, beta * im);
            }
        }
        if (alpha == 0 || K == 0) return FX_OK;
    }
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || ldc > INT_MAX)
        return fx_err_setf(err, FX_ENOTIMPL, "matrix dimensions exceed the BLAS integer range");
    switch (dt) {
    case FX_DTYPE_F32: return gemm_f32(dt, A, B, C, ldc, (float)alpha, (float)beta, err);
    case FX_DTYPE_F64: return gemm_f64(A, B, C, ldc, alpha, beta, err);
    case FX_DTYPE_C64:
    case FX_DTYPE_C128: return gemm_cplx(dt, A, B, C, ldc, alpha, beta, err);
    case FX_DTYPE_F16:
    case FX_DTYPE_BF16: {
        float *c32 = fx_malloc(sizeof(float) * (size_t)(M * N));
        if (!c32) return oom(err);
        uint16_t *c = C;
        bool h = dt == FX_DTYPE_F16;
        if (beta != 0)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    c32[i * N + j] =
                        h ? fx_f16_to_f32(c[i * ldc + j]) : fx_bf16_to_f32(c[i * ldc + j]);
        int rc = gemm_f32(dt, A, B, c32, N, (float)alpha, (float)beta, err);
        if (!rc)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    c[i * ldc + j] =
                        h ? fx_f32_to_f16(c32[i * N + j]) : fx_f32_to_bf16(c32[i * N + j]);
        fx_free(c32);
        return rc;
    }
    default: gemm_int(dt, A, B, C, ldc, (int64_t)alpha, (int64_t)beta); return FX_OK;
    }
}

int fx_kb_gemm(fx_dtype dt, const void *a, int64_t m, int64_t k, int64_t as0, int64_t as1,
               const void *b, int64_t n, int64_t bs0, int64_t bs1, void *c, int64_t ldc,
               double alpha, double beta, fx_err *err) {
    kb_mat A = {a, m, k, as0, as1}, B = {b, k, n, bs0, bs1};
    return gemm(dt, &A, &B, c, ldc, alpha, beta, err);
}

static kb_mat mat_of(const fx_tensor *t, int d0, int d1) {
    kb_mat m = {fx_tensor_data(t), t->sizes[d0], t->sizes[d1], t->strides[d0], t->strides[d1]};
    return m;
}

static int need_contiguous(fx_opctx *ctx, const fx_tensor *out) {
    if (fx_tensor_is_contiguous(out)) return FX_OK;
    return fx_err_setf(ctx->err, FX_EINTERNAL, "%s: the output is not contiguous",
                       fx_op_qualname(ctx->op));
}

/* ====================================================================================== */
/* Kernels                                                                                 */
/* ====================================================================================== */

/* mm(Tensor self, Tensor mat2) -> Tensor: out[0] fresh contiguous [n, p]. */
int fx_k_mm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s = a[0].u.t, *m = a[1].u.t, *r = out[0].u.t;
    int rc = need_contiguous(ctx, r);
    if (rc) return rc;
    kb_mat A = mat_of(s, 0, 1), B = mat_of(m, 0, 1);
    return gemm(s->dtype, &A, &B, fx_tensor_data(r), r->sizes[1] > 1 ? r->sizes[1] : 1, 1, 0,
                ctx->err);
}

/* out[b] = alpha * s[b] @ m[b] + beta * out[b] for every batch entry (batch strides may be 0, as
 * matmul's expanded operands have); out is contiguous [B, n, p]. */
static int bmm_into(fx_opctx *ctx, fx_tensor *s, fx_tensor *m, fx_tensor *r, double alpha,
                    double beta) {
    int rc = need_contiguous(ctx, r);
    size_t item = fx_dtype_size(s->dtype);
    int64_t N = r->sizes[2], ldc = N > 1 ? N : 1;
    kb_mat A = mat_of(s, 1, 2), B = mat_of(m, 1, 2);
    const char *sp = A.p, *mp = B.p;
    char *rp = fx_tensor_data(r);
    for (int64_t b = 0; b < s->sizes[0] && !rc; b++) {
        A.p = sp + b * s->strides[0] * (int64_t)item;
        B.p = mp + b * m->strides[0] * (int64_t)item;
        rc = gemm(s->dtype, &A, &B, rp + b * r->sizes[1] * N * (int64_t)item, ldc, alpha, beta,
                  ctx->err);
    }
    return rc;
}

/* bmm(Tensor self, Tensor mat2) -> Tensor: one gemm per batch entry. */
int fx_k_bmm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    return bmm_into(ctx, a[0].u.t, a[1].u.t, out[0].u.t, 1, 0);
}

/* dot(Tensor self, Tensor tensor) -> Tensor: a [1, n] @ [n, 1] product into the 0-dim out. */
int fx_k_dot(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s = a[0].u.t, *o = a[1].u.t, *r = out[0].u.t;
    kb_mat A = {fx_tensor_data(s), 1, s->sizes[0], 1, s->strides[0]};
    kb_mat B = {fx_tensor_data(o), o->sizes[0], 1, o->strides[0], 1};
    return gemm(s->dtype, &A, &B, fx_tensor_data(r), 1, 1, 0, ctx->err);
}

/* mv(Tensor self, Tensor vec) -> Tensor: [n, m] @ [m, 1] into the [n] out. */
int fx_k_mv(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s = a[0].u.t, *v = a[1].u.t, *r = out[0].u.t;
    int rc = need_contiguous(ctx, r);
    if (rc) return rc;
    kb_mat A = mat_of(s, 0, 1);
    kb_mat B = {fx_tensor_data(v), v->sizes[0], 1, v->strides[0], 1};
    return gemm(s->dtype, &A, &B, fx_tensor_data(r), 1, 1, 0, ctx->err);
}

/* Copies t broadcast to r's shape into r (the beta term of addmm / baddbmm and linear's
 * bias). */
static int fill_broadcast(fx_opctx *ctx, fx_tensor *r, fx_tensor *t) {
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    fx_tensor *te = NULL;
    memcpy(sizes, r->sizes, sizeof sizes);
    int rc = fx_expand_strides(t, r->ndim, sizes, strides, ctx->err);
    if (!rc) rc = fx_tensor_as_strided(t, r->ndim, sizes, strides, t->offset, &te, ctx->err);
    if (!rc) fx_kb_copy(r, te);
    fx_tensor_release(te);
    return rc;
}

/* linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor: one GEMM over the flattened
 * leading dims of input, out = input @ weight.T (+ bias, pre-filled into out and accumulated,
 * as addmm does with beta = 1). A 1-D weight [k] makes it input @ weight, one matrix-vector
 * product into out [...]. An input whose leading dims cannot be flattened without a copy is
 * copied to a contiguous buffer first. A single row (decoding one token) is a gemv. */
int fx_k_linear(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *x = a[0].u.t, *w = a[1].u.t, *r = out[0].u.t, *xc = NULL;
    fx_tensor *b = a[2].tag == FX_IV_TENSOR ? a[2].u.t : NULL;
    int rc = need_contiguous(ctx, r);
    if (rc) return rc;
    bool wvec = w->ndim == 1;
    int64_t K = x->sizes[x->ndim - 1], N = wvec ? 1 : w->sizes[0], M = 1;
    for (int d = 0; d + 1 < x->ndim; d++) M *= x->sizes[d];
    int64_t msz[2] = {M, K}, mst[2];
    if (x->ndim == 1) {
        mst[0] = K * x->strides[0];
        mst[1] = x->strides[0];
    } else if (!fx_view_strides(x->ndim, x->sizes, x->strides, 2, msz, mst)) {
        if ((rc = fx_tensor_empty(x->ndim, x->sizes, x->dtype, FX_DEVICE_CPU, &xc, ctx->err)))
            return rc;
        fx_kb_copy(xc, x);
        mst[0] = K, mst[1] = 1;
    }
    kb_mat A = {fx_tensor_data(xc ? xc : x), M, K, mst[0], mst[1]};
    kb_mat B = wvec ? (kb_mat){fx_tensor_data(w), K, 1, w->strides[0], 1}
                    : (kb_mat){fx_tensor_data(w), K, N, w->strides[1], w->strides[0]}; /* w.T */
    if (b) rc = fill_broadcast(ctx, r, b); /* out = bias broadcast, then out += x @ w.T */
    if (!rc) rc = gemm(x->dtype, &A, &B, fx_tensor_data(r), N > 1 ? N : 1, 1, b ? 1 : 0, ctx->err);
    fx_tensor_release(xc);
    return rc;
}

/* addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor and
 * addmm_(Tensor(a!) self, ...) -> Tensor(a!): out = beta * self + alpha * (mat1 @ mat2), self
 * broadcast to [n, p]; beta == 0 ignores self entirely (its NaNs too), as PyTorch. The in-place
 * form writes into self, through a contiguous buffer when self is not contiguous. */
int fx_k_addmm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *m1 = a[1].u.t, *m2 = a[2].u.t, *r = out[0].u.t, *tmp = NULL;
    double beta = fx_ivalue_to_f64(&a[3]), alpha = fx_ivalue_to_f64(&a[4]);
    bool inplace = fx_op_is_inplace(ctx->op);
    int rc = FX_OK;
    if (inplace && !fx_tensor_is_contiguous(r))
        rc = fx_tensor_empty(r->ndim, r->sizes, r->dtype, FX_DEVICE_CPU, &tmp, ctx->err);
    fx_tensor *dst = tmp ? tmp : r;
    if (!rc && beta != 0) {
        if (inplace && tmp)
            fx_kb_copy(tmp, self);
        else if (!inplace)
            rc = fill_broadcast(ctx, dst, self);
    }
    kb_mat A = mat_of(m1, 0, 1), B = mat_of(m2, 0, 1);
    if (!rc)
        rc = gemm(m1->dtype, &A, &B, fx_tensor_data(dst), dst->sizes[1] > 1 ? dst->sizes[1] : 1,
                  alpha, beta, ctx->err);
    if (!rc && tmp) fx_kb_copy(r, tmp);
    fx_tensor_release(tmp);
    return rc;
}

/* baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
 * and baddbmm_: out[b] = beta * self[b] + alpha * batch1[b] @ batch2[b], as addmm per batch. */
int fx_k_baddbmm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *b1 = a[1].u.t, *b2 = a[2].u.t, *r = out[0].u.t, *tmp = NULL;
    double beta = fx_ivalue_to_f64(&a[3]), alpha = fx_ivalue_to_f64(&a[4]);
    bool inplace = fx_op_is_inplace(ctx->op);
    int rc = FX_OK;
    if (inplace && !fx_tensor_is_contiguous(r))
        rc = fx_tensor_empty(r->ndim, r->sizes, r->dtype, FX_DEVICE_CPU, &tmp, ctx->err);
    fx_tensor *dst = tmp ? tmp : r;
    if (!rc && beta != 0) {
        if (inplace && tmp)
            fx_kb_copy(tmp, self);
        else if (!inplace)
            rc = fill_broadcast(ctx, dst, self);
    }
    if (!rc) rc = bmm_into(ctx, b1, b2, dst, alpha, beta);
    if (!rc && tmp) fx_kb_copy(r, tmp);
    fx_tensor_release(tmp);
    return rc;
}
