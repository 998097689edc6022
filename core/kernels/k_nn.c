/* core/kernels/k_nn.c — softmax, log_softmax, layer_norm, rms_norm, embedding, dropout and
 * scaled_dot_product_attention on the CPU.
 * Layer: core (kernels). Semantics of aten/src/ATen/native/SoftMax.cpp + cpu/SoftMaxKernel.cpp,
 * layer_norm.cpp + cpu/layer_norm_kernel.cpp, the composite rms_norm, Embedding.cpp and
 * transformers/attention.cpp (the math path, with _safe_softmax).
 *
 * Like PyTorch's CPU kernels these first make their input contiguous, then work on rows:
 * float32 in float, float64 in double, and float16 / bfloat16 widened to float32 buffers and
 * rounded once when the result is stored. A reduction over a row accumulates in double (PyTorch
 * accumulates float rows pairwise in float: the two agree within float rounding). Large row
 * counts are split over OpenMP threads; each row's arithmetic is the same whatever the thread
 * count, so results do not depend on it. No allocation happens inside the row loops. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/kernels/k_iter.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/parallel.h"
#include "core/random.h"
#include "core/shape.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Work (elements) below which a kernel stays on one thread. */
#define KNN_PAR_MIN (1 << 15)

static int oom(fx_opctx *ctx) {
    return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory in %s", fx_op_qualname(ctx->op));
}

static int thread_num(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* The compute dtype of a floating dtype: float64 stays, the others compute in float32. */
static fx_dtype compute_dtype(fx_dtype dt) {
    return dt == FX_DTYPE_F64 ? FX_DTYPE_F64 : FX_DTYPE_F32;
}

/* *out = t itself (retained) when it is contiguous cpu data of dtype dt, else a new contiguous
 * copy converted to dt. Release *out when done. */
static int contiguous_as(fx_opctx *ctx, fx_tensor *t, fx_dtype dt, fx_tensor **out) {
    if (t->dtype == dt && fx_tensor_is_contiguous(t)) {
        *out = fx_tensor_retain(t);
        return FX_OK;
    }
    int rc = fx_tensor_empty(t->ndim, t->sizes, dt, FX_DEVICE_CPU, out, ctx->err);
    if (!rc) fx_kb_copy(*out, t);
    return rc;
}

/* A contiguous scratch result in the compute dtype for `res` when res is not already that:
 * *tmp = NULL means write straight into res. */
static int result_buffer(fx_opctx *ctx, fx_tensor *res, fx_dtype cdt, fx_tensor **tmp) {
    *tmp = NULL;
    if (res->dtype == cdt && fx_tensor_is_contiguous(res)) return FX_OK;
    return fx_tensor_empty(res->ndim, res->sizes, cdt, FX_DEVICE_CPU, tmp, ctx->err);
}

/* ====================================================================================== */
/* softmax / log_softmax                                                                   */
/* ====================================================================================== */

/* ---- float32 building blocks that vectorize ------------------------------------------------ */

/* GCC if-converts the selects below (and so vectorizes the loops) only without trapping math;
 * FP exception flags are never read here. */
#if defined(__GNUC__) && !defined(__clang__)
#define KNN_VEC __attribute__((optimize("no-trapping-math")))
#else
#define KNN_VEC
#endif

/* exp(x) for float32 x <= 0 (or NaN), the only arguments softmax-like code passes (x - max):
 * Cody-Waite reduction by ln 2 and Cephes' degree-6 polynomial, within 1 ulp of the correctly
 * rounded exp; exp(-inf) = 0, NaN stays NaN, results below FLT_MIN flush to 0. Branch-free, so
 * loops of it vectorize (libm's expf does not). */
KNN_VEC static inline float exp_nonpos(float x) {
    float xc = x < -87.33654f ? -87.33654f : x;
    xc = xc > 0.0f ? 0.0f : xc;
    xc = x == x ? xc : 0.0f;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    union {
        uint32_t u;
        float f;
    } scale = {.u = (uint32_t)((int32_t)n + 127) << 23};
    float y = p * scale.f;
    y = x < -87.33654f ? 0.0f : y;
    return x == x ? y : x;
}

/* max(x[0..n)), NaN if any element is NaN. */
KNN_VEC static float row_max_f32(const float *x, int64_t n) {
    float m = -INFINITY;
    int nan = 0;
#pragma omp simd reduction(max : m) reduction(+ : nan)
    for (int64_t j = 0; j < n; j++) {
        m = x[j] > m ? x[j] : m;
        nan += x[j] != x[j];
    }
    return nan ? NAN : m;
}

/* y[j] = exp(x[j] - m) (y may be NULL) and their sum. */
KNN_VEC static float exp_sum_f32(const float *x, float *y, int64_t n, float m) {
    float sum = 0;
    if (y) {
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < n; j++) {
            float e = exp_nonpos(x[j] - m);
            y[j] = e;
            sum += e;
        }
    } else {
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < n; j++) sum += exp_nonpos(x[j] - m);
    }
    return sum;
}

/* One contiguous float32 row of n: y = softmax(x) (or log_softmax). A row holding NaN gives
 * NaN, a row of -inf gives NaN (0/0), as PyTorch's kernels. y may be x. */
KNN_VEC static void softmax_row_f32(const float *x, float *y, int64_t n, bool is_log) {
    float m = row_max_f32(x, n);
    if (is_log) {
        float lse = m + logf(exp_sum_f32(x, NULL, n, m));
#pragma omp simd
        for (int64_t j = 0; j < n; j++) y[j] = x[j] - lse;
        return;
    }
    float inv = 1.0f / exp_sum_f32(x, y, n, m);
#pragma omp simd
    for (int64_t j = 0; j < n; j++) y[j] *= inv;
}

/* The same over float64, with libm's exp. */
static void softmax_row_f64(const double *x, double *y, int64_t n, bool is_log) {
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++) m = (x[j] > m || x[j] != x[j]) ? x[j] : m;
    if (is_log) {
        for (int64_t j = 0; j < n; j++) sum += exp(x[j] - m);
        double lse = m + log(sum);
        for (int64_t j = 0; j < n; j++) y[j] = x[j] - lse;
        return;
    }
    for (int64_t j = 0; j < n; j++) sum += (y[j] = exp(x[j] - m));
    double inv = 1 / sum;
    for (int64_t j = 0; j < n; j++) y[j] *= inv;
}

/* A softmax over dim of a contiguous [outer, n, inner] block with inner > 1: for each outer
 * index, the inner columns are reduced together (vectorizable across inner), with per-thread
 * scratch mx / sm of `inner` entries each. */
#define SOFTMAX_COLS(T, NAME, EXP, LOG)                                                            \
    KNN_VEC static void NAME(const T *x, T *y, int64_t n, int64_t inner, bool is_log, T *mx,       \
                             T *sm) {                                                              \
        for (int64_t i = 0; i < inner; i++) mx[i] = -INFINITY, sm[i] = 0;                          \
        for (int64_t j = 0; j < n; j++) {                                                          \
            const T *xj = x + j * inner;                                                           \
            _Pragma("omp simd") for (int64_t i = 0; i < inner; i++) {                              \
                T v = xj[i];                                                                       \
                mx[i] = (v > mx[i] || v != v) ? v : mx[i];                                         \
            }                                                                                      \
        }                                                                                          \
        for (int64_t j = 0; j < n; j++) {                                                          \
            const T *xj = x + j * inner;                                                           \
            T *yj = y + j * inner;                                                                 \
            _Pragma("omp simd") for (int64_t i = 0; i < inner; i++) {                              \
                T e = EXP(xj[i] - mx[i]);                                                          \
                if (!is_log) yj[i] = e;                                                            \
                sm[i] += e;                                                                        \
            }                                                                                      \
        }                                                                                          \
        if (is_log) {                                                                              \
            for (int64_t i = 0; i < inner; i++) sm[i] = mx[i] + LOG(sm[i]);                        \
            for (int64_t j = 0; j < n; j++)                                                        \
                for (int64_t i = 0; i < inner; i++) y[j * inner + i] = x[j * inner + i] - sm[i];   \
            return;                                                                                \
        }                                                                                          \
        for (int64_t i = 0; i < inner; i++) sm[i] = (T)1 / sm[i];                                  \
        for (int64_t j = 0; j < n; j++) {                                                          \
            T *yj = y + j * inner;                                                                 \
            _Pragma("omp simd") for (int64_t i = 0; i < inner; i++) yj[i] *= sm[i];                \
        }                                                                                          \
    }
SOFTMAX_COLS(float, softmax_cols_f32, exp_nonpos, logf)
SOFTMAX_COLS(double, softmax_cols_f64, exp, log)

/* Softmax of the contiguous buffer x (dtype cdt, float32 or float64) viewed as
 * [outer, n, inner] into y (same layout). */
static int softmax_blocks(fx_opctx *ctx, fx_dtype cdt, const void *x, void *y, int64_t outer,
                          int64_t n, int64_t inner, bool log) {
    size_t item = fx_dtype_size(cdt);
    int nt = outer > 1 && outer * n * inner >= KNN_PAR_MIN ? fx_threads_for(outer * n * inner) : 1;
    bool par = nt > 1;
    if (inner == 1) {
#pragma omp parallel for if (par) num_threads(nt) schedule(static)
        for (int64_t r = 0; r < outer; r++) {
            if (cdt == FX_DTYPE_F32)
                softmax_row_f32((const float *)x + r * n, (float *)y + r * n, n, log);
            else
                softmax_row_f64((const double *)x + r * n, (double *)y + r * n, n, log);
        }
        return FX_OK;
    }
    char *scratch = fx_malloc(item * (size_t)(2 * inner * nt));
    if (!scratch) return oom(ctx);
#pragma omp parallel for if (par) num_threads(nt) schedule(static)
    for (int64_t r = 0; r < outer; r++) {
        char *s = scratch + item * (size_t)(2 * inner * (par ? thread_num() : 0));
        int64_t off = r * n * inner;
        if (cdt == FX_DTYPE_F32)
            softmax_cols_f32((const float *)x + off, (float *)y + off, n, inner, log, (float *)s,
                             (float *)s + inner);
        else
            softmax_cols_f64((const double *)x + off, (double *)y + off, n, inner, log, (double *)s,
                             (double *)s + inner);
    }
    fx_free(scratch);
    return FX_OK;
}

/* _softmax(Tensor self, int dim, bool half_to_float) -> Tensor and
 * _log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor: out[0] is fresh and
 * contiguous (fx_meta_softmax). A 0-dim self is a row of one. */
int fx_k_softmax(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *res = out[0].u.t, *x = NULL, *y = NULL;
    bool log = ctx->op->id == FX_OP__LOG_SOFTMAX;
    if (a[2].u.b)
        return fx_err_setf(ctx->err, FX_ENOTIMPL,
                           "%s with half to float conversion is not "
                           "supported on CPU",
                           log ? "log_softmax" : "softmax");
    int64_t numel = fx_tensor_numel(self);
    if (numel == 0) return FX_OK;
    int d = 0;
    int rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err);
    if (rc) return rc;
    fx_dtype cdt = compute_dtype(self->dtype);
    int64_t n = self->ndim ? self->sizes[d] : 1, inner = 1;
    for (int e = d + 1; e < self->ndim; e++) inner *= self->sizes[e];
    if ((rc = contiguous_as(ctx, self, cdt, &x)) || (rc = result_buffer(ctx, res, cdt, &y)))
        goto done;
    rc = softmax_blocks(ctx, cdt, fx_tensor_data(x), fx_tensor_data(y ? y : res),
                        numel / (n * inner), n, inner, log);
    if (!rc && y) fx_kb_copy(res, y);
done:
    fx_tensor_release(x);
    fx_tensor_release(y);
    return rc;
}

/* ====================================================================================== */
/* layer_norm / native_layer_norm                                                          */
/* ====================================================================================== */

/* Mean and biased variance of a row, accumulated in double (two passes, vectorized). */
#define MOMENTS(T, NAME)                                                                           \
    static void NAME(const T *x, int64_t n, double *mean, double *var) {                           \
        double s = 0;                                                                              \
        _Pragma("omp simd reduction(+ : s)") for (int64_t j = 0; j < n; j++) s += x[j];            \
        double mu = s / (double)n, q = 0;                                                          \
        _Pragma("omp simd reduction(+ : q)") for (int64_t j = 0; j < n; j++) {                     \
            double e = x[j] - mu;                                                                  \
            q += e * e;                                                                            \
        }                                                                                          \
        *mean = mu;                                                                                \
        *var = q / (double)n;                                                                      \
    }
MOMENTS(float, moments_f32)
MOMENTS(double, moments_f64)

/* y = (x * rstd - mean * rstd) * g + b over a row (g / b NULL for none), in T — the order of
 * LayerNormKernelImplInternal. */
#define LN_ROW(T, NAME)                                                                            \
    static void NAME(const T *x, T *y, int64_t n, T mean, T rstd, const T *g, const T *b) {        \
        T scale = rstd, bias = -mean * rstd;                                                       \
        if (g && b) {                                                                              \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] =                             \
                (x[j] * scale + bias) * g[j] + b[j];                                               \
            return;                                                                                \
        }                                                                                          \
        for (int64_t j = 0; j < n; j++) {                                                          \
            T v = x[j] * scale + bias;                                                             \
            if (g) v *= g[j];                                                                      \
            if (b) v += b[j];                                                                      \
            y[j] = v;                                                                              \
        }                                                                                          \
    }
LN_ROW(float, ln_row_f32)
LN_ROW(double, ln_row_f64)

/* layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None,
 * float eps=1e-05, bool cudnn_enable=True) -> Tensor and native_layer_norm(...) -> (Tensor,
 * Tensor, Tensor): rows of N = prod(normalized_shape) elements; mean and biased variance per
 * row, rstd = 1 / sqrt(var + eps); native_layer_norm also fills mean and rstd ([M] values in
 * out[1] / out[2]). */
int fx_k_layer_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *res = out[0].u.t;
    fx_tensor *w = a[2].tag == FX_IV_TENSOR ? a[2].u.t : NULL;
    fx_tensor *b = a[3].tag == FX_IV_TENSOR ? a[3].u.t : NULL;
    double eps = fx_ivalue_to_f64(&a[4]);
    bool native = ctx->op->id == FX_OP_NATIVE_LAYER_NORM;
    int nn = a[1].tag == FX_IV_LIST ? a[1].u.list.n : 1;
    int64_t N = 1, numel = fx_tensor_numel(self);
    for (int d = self->ndim - nn; d < self->ndim; d++) N *= self->sizes[d];
    int64_t M = N ? numel / N : 0;
    fx_dtype cdt = compute_dtype(self->dtype);
    fx_tensor *x = NULL, *y = NULL, *wc = NULL, *bc = NULL;
    double *stats = NULL; /* (M, 2): mean, rstd */
    int rc = contiguous_as(ctx, self, cdt, &x);
    if (!rc) rc = result_buffer(ctx, res, cdt, &y);
    if (!rc && w) rc = contiguous_as(ctx, w, cdt, &wc);
    if (!rc && b) rc = contiguous_as(ctx, b, cdt, &bc);
    if (!rc && native && !(stats = fx_malloc(sizeof(double) * (size_t)(2 * (M ? M : 1)))))
        rc = oom(ctx);
    if (rc || numel == 0) goto done;
    const void *xp = fx_tensor_data(x), *gp = wc ? fx_tensor_data(wc) : NULL;
    const void *bp = bc ? fx_tensor_data(bc) : NULL;
    void *yp = fx_tensor_data(y ? y : res);
#pragma omp parallel for if (numel >= KNN_PAR_MIN && M > 1) \
    num_threads(numel >= KNN_PAR_MIN && M > 1 ? fx_threads_for(numel) : 1) schedule(static)
    for (int64_t r = 0; r < M; r++) {
        double mean, var;
        if (cdt == FX_DTYPE_F32) {
            const float *xr = (const float *)xp + r * N;
            moments_f32(xr, N, &mean, &var);
            float rstd = 1.0f / sqrtf((float)var + (float)eps);
            ln_row_f32(xr, (float *)yp + r * N, N, (float)mean, rstd, gp, bp);
            if (stats) stats[2 * r] = (float)mean, stats[2 * r + 1] = rstd;
        } else {
            const double *xr = (const double *)xp + r * N;
            moments_f64(xr, N, &mean, &var);
            double rstd = 1.0 / sqrt(var + eps);
            ln_row_f64(xr, (double *)yp + r * N, N, mean, rstd, gp, bp);
            if (stats) stats[2 * r] = mean, stats[2 * r + 1] = rstd;
        }
    }
    if (y) fx_kb_copy(res, y);
    if (native) /* mean / rstd are contiguous [M] (stat shape) */
        for (int64_t r = 0; r < M; r++) {
            fx_dtype_store_f64(out[1].u.t->dtype, fx_tensor_data(out[1].u.t), r, stats[2 * r]);
            fx_dtype_store_f64(out[2].u.t->dtype, fx_tensor_data(out[2].u.t), r, stats[2 * r + 1]);
        }
done:
    fx_free(stats);
    fx_tensor_release(x);
    fx_tensor_release(y);
    fx_tensor_release(wc);
    fx_tensor_release(bc);
    return rc;
}

/* ====================================================================================== */
/* rms_norm                                                                                */
/* ====================================================================================== */

/* v rounded to dtype dt (float16 / bfloat16 / float32 rounding; float64 unchanged). */
static inline double round_to(fx_dtype dt, double v) {
    switch (dt) {
    case FX_DTYPE_F32: return (float)v;
    case FX_DTYPE_F16: return fx_f16_to_f32(fx_f32_to_f16((float)v));
    case FX_DTYPE_BF16: return fx_bf16_to_f32(fx_f32_to_bf16((float)v));
    default: return v;
    }
}

/* rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None)
 * -> Tensor, as aten's composite: x upcast to the compute dtype, r = rsqrt(mean(x^2) + eps)
 * per row (eps defaults to the compute dtype's machine epsilon), t = (x * r) rounded to input's
 * dtype, then out = t * weight in the promoted dtype. float32 rows take a direct loop. */
int fx_k_rms_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *res = out[0].u.t;
    fx_tensor *w = a[2].tag == FX_IV_TENSOR ? a[2].u.t : NULL;
    fx_dtype cdt = compute_dtype(self->dtype), odt = res->dtype;
    double eps = a[3].tag == FX_IV_NONE ? (cdt == FX_DTYPE_F64 ? DBL_EPSILON : FLT_EPSILON)
                                        : fx_ivalue_to_f64(&a[3]);
    int nn = a[1].tag == FX_IV_LIST ? a[1].u.list.n : 1;
    int64_t N = 1, numel = fx_tensor_numel(self);
    for (int d = self->ndim - nn; d < self->ndim; d++) N *= self->sizes[d];
    int64_t M = N ? numel / N : 0;
    fx_dtype wcdt = compute_dtype(odt); /* the dtype t * weight computes in */
    fx_tensor *x = NULL, *wc = NULL, *y = NULL;
    int rc = contiguous_as(ctx, self, cdt, &x);
    if (!rc && w) rc = contiguous_as(ctx, w, wcdt, &wc);
    if (!rc) rc = result_buffer(ctx, res, wcdt, &y);
    if (rc || numel == 0) goto done;
    const void *xp = fx_tensor_data(x), *wp = wc ? fx_tensor_data(wc) : NULL;
    void *yp = fx_tensor_data(y ? y : res);
    bool fast = cdt == FX_DTYPE_F32 && self->dtype == FX_DTYPE_F32 && wcdt == FX_DTYPE_F32;
#pragma omp parallel for if (numel >= KNN_PAR_MIN && M > 1) \
    num_threads(numel >= KNN_PAR_MIN && M > 1 ? fx_threads_for(numel) : 1) schedule(static)
    for (int64_t r = 0; r < M; r++) {
        double ss = 0;
        if (cdt == FX_DTYPE_F32) {
            const float *xr = (const float *)xp + r * N;
#pragma omp simd reduction(+ : ss)
            for (int64_t j = 0; j < N; j++) ss += (double)(xr[j] * xr[j]);
            float rr = 1.0f / sqrtf((float)(ss / (double)N) + (float)eps);
            if (fast) {
                float *yr = (float *)yp + r * N;
                const float *wr = wp;
                if (wr) {
#pragma omp simd
                    for (int64_t j = 0; j < N; j++) yr[j] = (xr[j] * rr) * wr[j];
                } else {
#pragma omp simd
                    for (int64_t j = 0; j < N; j++) yr[j] = xr[j] * rr;
                }
                continue;
            }
            for (int64_t j = 0; j < N; j++) {
                double t = round_to(self->dtype, (double)(xr[j] * rr));
                if (wcdt == FX_DTYPE_F32) {
                    float v = wp ? (float)t * ((const float *)wp)[j] : (float)t;
                    ((float *)yp)[r * N + j] = v;
                } else {
                    ((double *)yp)[r * N + j] = wp ? t * ((const double *)wp)[j] : t;
                }
            }
        } else {
            const double *xr = (const double *)xp + r * N;
#pragma omp simd reduction(+ : ss)
            for (int64_t j = 0; j < N; j++) ss += xr[j] * xr[j];
            double rr = 1.0 / sqrt(ss / (double)N + eps);
            double *yr = (double *)yp + r * N;
            const double *wr = wp;
            for (int64_t j = 0; j < N; j++) yr[j] = wr ? (xr[j] * rr) * wr[j] : xr[j] * rr;
        }
    }
    if (y) fx_kb_copy(res, y);
done:
    fx_tensor_release(x);
    fx_tensor_release(wc);
    fx_tensor_release(y);
    return rc;
}

/* ====================================================================================== */
/* embedding                                                                               */
/* ====================================================================================== */

/* embedding(Tensor weight, Tensor indices, ...) -> Tensor: out[i..., :] = weight[indices[i...]]
 * (index_select's bounds rule: 0 <= index < n, "index out of range in self"). */
int fx_k_embedding(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *w = a[0].u.t, *idx = a[1].u.t, *res = out[0].u.t;
    int64_t n = fx_tensor_numel(idx), rows = w->sizes[0], D = w->sizes[1];
    size_t item = fx_dtype_size(w->dtype);
    const char *wp = fx_tensor_data(w);
    char *op = fx_tensor_data(res);
    bool i64 = idx->dtype == FX_DTYPE_I64;
    const char *ip = fx_tensor_data(idx);
    kb_walk wk;
    walk_init(&wk, idx->ndim, idx->sizes, 1);
    memcpy(wk.st[0], idx->strides, sizeof(int64_t) * (size_t)idx->ndim);
    bool dense_row = w->strides[1] == 1 || D <= 1;
    for (int64_t i = 0; i < n; i++, walk_next(&wk)) {
        int64_t r = i64 ? ((const int64_t *)ip)[wk.off[0]] : ((const int32_t *)ip)[wk.off[0]];
        if (r < 0 || r >= rows)
            return fx_err_setf(ctx->err, FX_EINDEX, "index out of range in self");
        const char *src = wp + r * w->strides[0] * (int64_t)item;
        char *dst = op + i * D * (int64_t)item;
        if (dense_row) {
            memcpy(dst, src, (size_t)D * item);
        } else {
            for (int64_t j = 0; j < D; j++)
                memcpy(dst + j * (int64_t)item, src + j * w->strides[1] * (int64_t)item, item);
        }
    }
    return FX_OK;
}

/* ====================================================================================== */
/* dropout                                                                                 */
/* ====================================================================================== */

/* dropout(Tensor input, float p, bool train) -> Tensor: a copy of input when not training (or
 * p == 0); when training each element is zeroed with probability p and the rest scaled by
 * 1 / (1 - p). The draws come from fxdb's generator (one 24-bit uniform per element, in memory
 * order), so the mask is reproducible under torch.manual_seed but is not PyTorch's (whose CPU
 * bernoulli_ may go through MKL's own stream). */
int fx_k_dropout(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *x = a[0].u.t, *res = out[0].u.t;
    double p = fx_ivalue_to_f64(&a[1]);
    if (!a[2].u.b || p == 0) {
        if (res != x) fx_kb_copy(res, x);
        return FX_OK;
    }
    if (res == x && !fx_tensor_is_contiguous(x)) { /* dropout_ on a strided view: through a copy */
        fx_tensor *tmp;
        int rc = fx_tensor_empty(x->ndim, x->sizes, x->dtype, FX_DEVICE_CPU, &tmp, ctx->err);
        if (rc) return rc;
        fx_kb_copy(tmp, x);
        fx_ivalue ta[3] = {{.tag = FX_IV_TENSOR, .u.t = tmp}, a[1], a[2]}; /* borrowed */
        rc = fx_k_dropout(ctx, ta, ta);
        if (!rc) fx_kb_copy(x, tmp);
        fx_tensor_release(tmp);
        return rc;
    }
    if (res != x) fx_kb_copy(res, x);
    /* res is dense and non-overlapping: its elements are the numel slots from its data */
    int64_t n = fx_tensor_numel(res);
    void *d = fx_tensor_data(res);
    double scale = p < 1 ? 1.0 / (1.0 - p) : 0;
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(fx_random_u32() & 0xffffffu) / 16777216.0;
        double v = u < p ? 0 : fx_dtype_load_f64(res->dtype, d, i) * scale;
        fx_dtype_store_f64(res->dtype, d, i, v);
    }
    return FX_OK;
}

/* ====================================================================================== */
/* scaled_dot_product_attention                                                            */
/* ====================================================================================== */

/* The element strides of t's batch dims aligned right to nb broadcast dims (0 where t has no
 * such dim or size 1), and for enable_gqa the divisor that maps a query head to t's head. */
static void batch_strides(const fx_tensor *t, int nb, const int64_t *bshape, int64_t *st,
                          int64_t *div) {
    int tb = t->ndim - 2;
    for (int d = 0; d < nb; d++) {
        int e = d - (nb - tb);
        st[d] = (e >= 0 && t->sizes[e] > 1) ? t->strides[e] : 0;
        div[d] =
            (e >= 0 && t->sizes[e] > 1 && t->sizes[e] < bshape[d]) ? bshape[d] / t->sizes[e] : 1;
    }
}

static int64_t batch_offset(int nb, const int64_t *pos, const int64_t *st, const int64_t *div) {
    int64_t off = 0;
    for (int d = 0; d < nb; d++) off += pos[d] / div[d] * st[d];
    return off;
}

/* Row-wise _safe_softmax of scores [L, S] in place: a row whose entries are all -inf becomes
 * zeros instead of NaN. */
KNN_VEC static void safe_softmax_f32(float *s, int64_t L, int64_t S) {
    for (int64_t i = 0; i < L; i++) {
        float *row = s + i * S, m = row_max_f32(row, S);
        if (m == -INFINITY) {
            memset(row, 0, sizeof(float) * (size_t)S);
            continue;
        }
        float inv = 1.0f / exp_sum_f32(row, row, S, m);
#pragma omp simd
        for (int64_t j = 0; j < S; j++) row[j] *= inv;
    }
}

static void safe_softmax_f64(double *s, int64_t L, int64_t S) {
    for (int64_t i = 0; i < L; i++) {
        double *row = s + i * S, m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; j++) m = (row[j] > m || row[j] != row[j]) ? row[j] : m;
        if (m == -INFINITY) {
            memset(row, 0, sizeof(double) * (size_t)S);
            continue;
        }
        for (int64_t j = 0; j < S; j++) sum += (row[j] = exp(row[j] - m));
        double inv = 1 / sum;
        for (int64_t j = 0; j < S; j++) row[j] *= inv;
    }
}

/* scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
 * is_causal=False, *, scale=None, enable_gqa=False) -> Tensor: per broadcast batch entry,
 * scores = scale * q @ k^T (scale defaults to 1 / sqrt(E)), then the causal mask (top-left:
 * key j > query i is masked), a bool mask (False is masked) or an additive mask, a row-wise
 * _safe_softmax, and out = scores @ v. Both products go through fx_kb_gemm (sgemv when L == 1,
 * a decoder's step). float16 / bfloat16 compute in float32. */
int fx_k_sdpa(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *q0 = a[0].u.t, *k0 = a[1].u.t, *v0 = a[2].u.t, *res = out[0].u.t;
    fx_tensor *m = a[3].tag == FX_IV_TENSOR ? a[3].u.t : NULL;
    bool causal = a[5].u.b;
    fx_dtype cdt = compute_dtype(q0->dtype);
    size_t item = fx_dtype_size(cdt);
    int nb = res->ndim - 2;
    int64_t L = res->sizes[nb], Ev = res->sizes[nb + 1];
    int64_t E = q0->sizes[q0->ndim - 1], S = k0->sizes[k0->ndim - 2];
    double scale = a[6].tag == FX_IV_NONE || a[6].tag == FX_IV_UNSET ? 1.0 / sqrt((double)E)
                                                                     : fx_ivalue_to_f64(&a[6]);
    int64_t batch = 1;
    for (int d = 0; d < nb; d++) batch *= res->sizes[d];
    if (batch == 0 || L == 0 || Ev == 0) return FX_OK;
    fx_tensor *q = NULL, *k = NULL, *v = NULL, *y = NULL;
    char *scores = NULL;
    int rc = FX_OK;
    /* half types are widened once; float32 / float64 inputs are used in place, any strides */
    if (cdt != q0->dtype) {
        if ((rc = contiguous_as(ctx, q0, cdt, &q)) || (rc = contiguous_as(ctx, k0, cdt, &k)) ||
            (rc = contiguous_as(ctx, v0, cdt, &v)))
            goto done;
    } else {
        q = fx_tensor_retain(q0), k = fx_tensor_retain(k0), v = fx_tensor_retain(v0);
    }
    if ((rc = result_buffer(ctx, res, cdt, &y))) goto done;
    if (!(scores = fx_malloc(item * (size_t)(L * S > 0 ? L * S : 1)))) {
        rc = oom(ctx);
        goto done;
    }
    int64_t qst[FX_MAX_DIMS], kst[FX_MAX_DIMS], vst[FX_MAX_DIMS], mst[FX_MAX_DIMS];
    int64_t qdv[FX_MAX_DIMS], kdv[FX_MAX_DIMS], vdv[FX_MAX_DIMS], mdv[FX_MAX_DIMS];
    batch_strides(q, nb, res->sizes, qst, qdv);
    batch_strides(k, nb, res->sizes, kst, kdv);
    batch_strides(v, nb, res->sizes, vst, vdv);
    int64_t mL = 0, mS = 0; /* the mask's strides over (L, S); 0 when broadcast */
    if (m) {
        int64_t msz[FX_MAX_DIMS], mstr[FX_MAX_DIMS];
        int64_t full[FX_MAX_DIMS];
        memcpy(full, res->sizes, sizeof(int64_t) * (size_t)nb);
        full[nb] = L, full[nb + 1] = S;
        memcpy(msz, full, sizeof msz);
        if ((rc = fx_expand_strides(m, nb + 2, msz, mstr, ctx->err))) goto done;
        for (int d = 0; d < nb; d++) mst[d] = mstr[d], mdv[d] = 1;
        mL = mstr[nb], mS = mstr[nb + 1];
    }
    const char *qp = fx_tensor_data(q), *kp = fx_tensor_data(k), *vp = fx_tensor_data(v);
    const char *mp = m ? fx_tensor_data(m) : NULL;
    char *yp = fx_tensor_data(y ? y : res);
    int64_t qs0 = q->strides[q->ndim - 2], qs1 = q->strides[q->ndim - 1];
    int64_t ks0 = k->strides[k->ndim - 2], ks1 = k->strides[k->ndim - 1];
    int64_t vs0 = v->strides[v->ndim - 2], vs1 = v->strides[v->ndim - 1];
    int64_t pos[FX_MAX_DIMS] = {0};
    for (int64_t bi = 0; bi < batch && !rc; bi++) {
        int64_t rem = bi;
        for (int d = nb - 1; d >= 0; d--) pos[d] = rem % res->sizes[d], rem /= res->sizes[d];
        const char *qb = qp + batch_offset(nb, pos, qst, qdv) * (int64_t)item;
        const char *kb = kp + batch_offset(nb, pos, kst, kdv) * (int64_t)item;
        const char *vb = vp + batch_offset(nb, pos, vst, vdv) * (int64_t)item;
        /* scores[L, S] = scale * q[L, E] @ k[S, E]^T */
        rc = fx_kb_gemm(cdt, qb, L, E, qs0, qs1, kb, S, ks1, ks0, scores, S > 1 ? S : 1, scale, 0,
                        ctx->err);
        if (rc) break;
        int64_t moff = m ? batch_offset(nb, pos, mst, mdv) : 0;
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++) {
                double add = 0;
                if (causal && j > i) {
                    add = -INFINITY;
                } else if (m) {
                    int64_t o = moff + i * mL + j * mS;
                    if (m->dtype == FX_DTYPE_BOOL)
                        add = ((const uint8_t *)mp)[o] ? 0 : -INFINITY;
                    else
                        add = fx_dtype_load_f64(m->dtype, mp, o);
                }
                if (add == 0) continue;
                if (cdt == FX_DTYPE_F32)
                    ((float *)scores)[i * S + j] += (float)add;
                else
                    ((double *)scores)[i * S + j] += add;
            }
        if (cdt == FX_DTYPE_F32)
            safe_softmax_f32((float *)scores, L, S);
        else
            safe_softmax_f64((double *)scores, L, S);
        /* out[L, Ev] = scores[L, S] @ v[S, Ev] */
        rc = fx_kb_gemm(cdt, scores, L, S, S, 1, vb, Ev, vs0, vs1, yp + bi * L * Ev * (int64_t)item,
                        Ev > 1 ? Ev : 1, 1, 0, ctx->err);
    }
    if (!rc && y) fx_kb_copy(res, y);
done:
    fx_free(scores);
    fx_tensor_release(q);
    fx_tensor_release(k);
    fx_tensor_release(v);
    fx_tensor_release(y);
    return rc;
}
