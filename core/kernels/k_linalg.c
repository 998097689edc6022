/* core/kernels/k_linalg.c — mm, bmm, dot, mv and linear on the CPU.
 * Layer: core (kernels). float32 / float64 go to OpenBLAS (cblas_sgemm / cblas_dgemm); an
 * operand whose strides BLAS can express (unit stride in one dim, a leading dimension large
 * enough in the other) is passed as is, transposed when its unit stride is along rows, else it
 * is packed into a contiguous buffer first, as addmm_impl_cpu_ does. float16 / bfloat16 are
 * widened to float32 buffers, multiplied with sgemm and rounded once (PyTorch's CPU kernels
 * accumulate them in float32 too). Integer and bool products use a plain loop with 64-bit
 * wrap-around accumulation (bool: OR of ANDs).
 *
 * Every product funnels into gemm(): C[M, N] (+)= A[M, K] @ B[K, N] where A and B are strided
 * matrix views (kb_mat) and C is row-major with leading dimension ldc. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
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

/* C (+)= A @ B in float32 (C float32, row-major, ldc). Half operands are always packed. */
static int gemm_f32(fx_dtype dt, const kb_mat *A, const kb_mat *B, float *C, int64_t ldc, bool acc,
                    fx_err *err) {
    int64_t M = A->rows, N = B->cols, K = A->cols, lda = K, ldb = N;
    enum CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
    float *abuf = NULL, *bbuf = NULL;
    const float *ap = A->p, *bp = B->p;
    if (dt != FX_DTYPE_F32 || !blas_layout(A, &ta, &lda)) {
        if (!(abuf = pack_f32(dt, A))) return oom(err);
        ap = abuf, ta = CblasNoTrans, lda = K > 1 ? K : 1;
    }
    if (dt != FX_DTYPE_F32 || !blas_layout(B, &tb, &ldb)) {
        if (!(bbuf = pack_f32(dt, B))) {
            fx_free(abuf);
            return oom(err);
        }
        bp = bbuf, tb = CblasNoTrans, ldb = N > 1 ? N : 1;
    }
    cblas_sgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, 1.0f, ap, (blasint)lda,
                bp, (blasint)ldb, acc ? 1.0f : 0.0f, C, (blasint)ldc);
    fx_free(abuf);
    fx_free(bbuf);
    return FX_OK;
}

static int gemm_f64(const kb_mat *A, const kb_mat *B, double *C, int64_t ldc, bool acc,
                    fx_err *err) {
    int64_t M = A->rows, N = B->cols, K = A->cols, lda = K, ldb = N;
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
    cblas_dgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, 1.0, ap, (blasint)lda,
                bp, (blasint)ldb, acc ? 1.0 : 0.0, C, (blasint)ldc);
    fx_free(abuf);
    fx_free(bbuf);
    return FX_OK;
}

/* Integer / bool product: 64-bit wrap-around sums, stored back modulo the type's width. */
#define GEMM_INT_LOOP(T)                                                                           \
    do {                                                                                           \
        const T *a = A->p, *b = B->p;                                                              \
        T *c = C;                                                                                  \
        for (int64_t i = 0; i < M; i++)                                                            \
            for (int64_t j = 0; j < N; j++) {                                                      \
                uint64_t s = acc ? (uint64_t)(int64_t)c[i * ldc + j] : 0;                          \
                for (int64_t k = 0; k < K; k++)                                                    \
                    s += (uint64_t)(int64_t)a[i * A->s0 + k * A->s1] *                             \
                         (uint64_t)(int64_t)b[k * B->s0 + j * B->s1];                              \
                c[i * ldc + j] = (T)(int64_t)s;                                                    \
            }                                                                                      \
    } while (0)

static void gemm_int(fx_dtype dt, const kb_mat *A, const kb_mat *B, void *C, int64_t ldc,
                     bool acc) {
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
                bool s = acc && c[i * ldc + j];
                for (int64_t k = 0; k < K && !s; k++)
                    s = a[i * A->s0 + k * A->s1] && b[k * B->s0 + j * B->s1];
                c[i * ldc + j] = s;
            }
        break;
    }
    default: break;
    }
}

/* C[M, N] = A @ B (+ C when acc), C of dtype dt, row-major with leading dimension ldc.
 * A and B have dtype dt. Empty products leave C as it is (acc) or zero it. */
static int gemm(fx_dtype dt, const kb_mat *A, const kb_mat *B, void *C, int64_t ldc, bool acc,
                fx_err *err) {
    int64_t M = A->rows, N = B->cols, K = A->cols;
    size_t item = fx_dtype_size(dt);
    if (M == 0 || N == 0) return FX_OK;
    if (K == 0) {
        if (!acc)
            for (int64_t i = 0; i < M; i++)
                memset((char *)C + i * ldc * (int64_t)item, 0, N * item);
        return FX_OK;
    }
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || ldc > INT_MAX)
        return fx_err_setf(err, FX_ENOTIMPL, "matrix dimensions exceed the BLAS integer range");
    switch (dt) {
    case FX_DTYPE_F32: return gemm_f32(dt, A, B, C, ldc, acc, err);
    case FX_DTYPE_F64: return gemm_f64(A, B, C, ldc, acc, err);
    case FX_DTYPE_F16:
    case FX_DTYPE_BF16: {
        float *c32 = fx_malloc(sizeof(float) * (size_t)(M * N));
        if (!c32) return oom(err);
        uint16_t *c = C;
        bool h = dt == FX_DTYPE_F16;
        if (acc)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    c32[i * N + j] =
                        h ? fx_f16_to_f32(c[i * ldc + j]) : fx_bf16_to_f32(c[i * ldc + j]);
        int rc = gemm_f32(dt, A, B, c32, N, acc, err);
        if (!rc)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    c[i * ldc + j] =
                        h ? fx_f32_to_f16(c32[i * N + j]) : fx_f32_to_bf16(c32[i * N + j]);
        fx_free(c32);
        return rc;
    }
    default: gemm_int(dt, A, B, C, ldc, acc); return FX_OK;
    }
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
    return gemm(s->dtype, &A, &B, fx_tensor_data(r), r->sizes[1] > 1 ? r->sizes[1] : 1, false,
                ctx->err);
}

/* bmm(Tensor self, Tensor mat2) -> Tensor: one gemm per batch entry (batch strides may be 0,
 * as matmul's expanded operands have). */
int fx_k_bmm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s = a[0].u.t, *m = a[1].u.t, *r = out[0].u.t;
    int rc = need_contiguous(ctx, r);
    if (rc) return rc;
    size_t item = fx_dtype_size(s->dtype);
    int64_t N = r->sizes[2], ldc = N > 1 ? N : 1;
    kb_mat A = mat_of(s, 1, 2), B = mat_of(m, 1, 2);
    const char *sp = A.p, *mp = B.p;
    char *rp = fx_tensor_data(r);
    for (int64_t b = 0; b < s->sizes[0] && !rc; b++) {
        A.p = sp + b * s->strides[0] * (int64_t)item;
        B.p = mp + b * m->strides[0] * (int64_t)item;
        rc = gemm(s->dtype, &A, &B, rp + b * r->sizes[1] * N * (int64_t)item, ldc, false, ctx->err);
    }
    return rc;
}

/* dot(Tensor self, Tensor tensor) -> Tensor: a [1, n] @ [n, 1] product into the 0-dim out. */
int fx_k_dot(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s = a[0].u.t, *o = a[1].u.t, *r = out[0].u.t;
    kb_mat A = {fx_tensor_data(s), 1, s->sizes[0], 1, s->strides[0]};
    kb_mat B = {fx_tensor_data(o), o->sizes[0], 1, o->strides[0], 1};
    return gemm(s->dtype, &A, &B, fx_tensor_data(r), 1, false, ctx->err);
}

/* mv(Tensor self, Tensor vec) -> Tensor: [n, m] @ [m, 1] into the [n] out. */
int fx_k_mv(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s = a[0].u.t, *v = a[1].u.t, *r = out[0].u.t;
    int rc = need_contiguous(ctx, r);
    if (rc) return rc;
    kb_mat A = mat_of(s, 0, 1);
    kb_mat B = {fx_tensor_data(v), v->sizes[0], 1, v->strides[0], 1};
    return gemm(s->dtype, &A, &B, fx_tensor_data(r), 1, false, ctx->err);
}

/* linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor: one GEMM over the flattened
 * leading dims of input, out = input @ weight.T (+ bias, pre-filled into out and accumulated,
 * as addmm does with beta = 1). An input whose leading dims cannot be flattened without a copy
 * is copied to a contiguous buffer first. */
int fx_k_linear(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *x = a[0].u.t, *w = a[1].u.t, *r = out[0].u.t, *xc = NULL;
    fx_tensor *b = a[2].tag == FX_IV_TENSOR ? a[2].u.t : NULL;
    int rc = need_contiguous(ctx, r);
    if (rc) return rc;
    int64_t K = x->sizes[x->ndim - 1], N = w->sizes[0], M = 1;
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
    kb_mat B = {fx_tensor_data(w), K, N, w->strides[1], w->strides[0]}; /* weight.T */
    if (b) { /* out = bias broadcast, then out += x @ w.T */
        int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
        fx_tensor *be = NULL;
        memcpy(sizes, r->sizes, sizeof sizes);
        rc = fx_expand_strides(b, r->ndim, sizes, strides, ctx->err);
        if (!rc) rc = fx_tensor_as_strided(b, r->ndim, sizes, strides, b->offset, &be, ctx->err);
        if (!rc) fx_kb_copy(r, be);
        fx_tensor_release(be);
    }
    if (!rc) rc = gemm(x->dtype, &A, &B, fx_tensor_data(r), N > 1 ? N : 1, b != NULL, ctx->err);
    fx_tensor_release(xc);
    return rc;
}
