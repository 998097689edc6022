/* core/kernels/k_reduce_index.c — reductions along one dim that keep positions: max.dim,
 * min.dim, argmax, argmin, and the scan cumsum.
 * Layer: core (private). Each output position walks its line of the reduced dim (the line's
 * first element, length and byte stride) in order, so ties resolve to the first index and the
 * first NaN wins for floats (PyTorch's greater_or_nan / less_or_nan), and cumsum's running sum
 * runs in the accumulate type (double for float32/64, float for the half types, int64 for
 * integers, wrapping) and is rounded at every output. Lines are independent: large outputs
 * split over threads. argmax / argmin without a dim scan the row-major flattening (a
 * contiguous copy when the input is strided); a long flat scan is cut into fixed chunks whose
 * winners are merged in chunk order, so results do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/kernels/k_cast.h"
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define SCAN_CHUNK ((int64_t)1 << 16)

/* The winner of a line: its index and a pointer to its element. */
typedef struct best_t {
    int64_t idx;
    const char *p;
} best_t;

/* scan_ID(p, n, st, ismax, &b): the first max (or min) of n elements at p, stride st bytes; a
 * NaN is the winner and ends the scan. */
#define SCAN_F(ID, ST, VT)                                                                         \
    static void scan_##ID(const char *p, int64_t n, int64_t st, int ismax, best_t *b) {            \
        VT best = K_LOAD_##ID(p);                                                                  \
        b->idx = 0, b->p = p;                                                                      \
        if (best != best) return;                                                                  \
        for (int64_t i = 1; i < n; i++) {                                                          \
            const VT v = K_LOAD_##ID(p + i * st);                                                  \
            if (v != v || (ismax ? v > best : v < best)) {                                         \
                best = v, b->idx = i, b->p = p + i * st;                                           \
                if (v != v) return;                                                                \
            }                                                                                      \
        }                                                                                          \
    }
#define SCAN_I(ID, ST, VT)                                                                         \
    static void scan_##ID(const char *p, int64_t n, int64_t st, int ismax, best_t *b) {            \
        VT best = K_LOAD_##ID(p);                                                                  \
        b->idx = 0, b->p = p;                                                                      \
        for (int64_t i = 1; i < n; i++) {                                                          \
            const VT v = K_LOAD_##ID(p + i * st);                                                  \
            if (ismax ? v > best : v < best) best = v, b->idx = i, b->p = p + i * st;              \
        }                                                                                          \
    }
SCAN_F(F32, float, float)
SCAN_F(F64, double, double)
SCAN_F(F16, uint16_t, float)
SCAN_F(BF16, uint16_t, float)
SCAN_I(I64, int64_t, int64_t)
SCAN_I(I32, int32_t, int32_t)
SCAN_I(I16, int16_t, int16_t)
SCAN_I(I8, int8_t, int8_t)
SCAN_I(U8, uint8_t, uint8_t)
SCAN_I(BOOL, uint8_t, uint8_t)

typedef void (*scan_fn)(const char *p, int64_t n, int64_t st, int ismax, best_t *b);
static const scan_fn k_scans[FX_DTYPE_COUNT] = {scan_F32, scan_F64, scan_F16, scan_BF16, scan_I64,
                                                scan_I32, scan_I16, scan_I8,  scan_U8,   scan_BOOL};

/* Does candidate c beat the current winner w (both whole-line winners, c from a later chunk)? */
static bool beats(fx_dtype dt, const best_t *w, const best_t *c, int ismax) {
    if (fx_dtype_is_float(dt)) {
        double a = fx_dtype_load_f64(dt, w->p, 0), b = fx_dtype_load_f64(dt, c->p, 0);
        if (a != a) return false;
        if (b != b) return true;
        return ismax ? b > a : b < a;
    }
    int64_t a = fx_dtype_load_i64(dt, w->p, 0), b = fx_dtype_load_i64(dt, c->p, 0);
    return ismax ? b > a : b < a;
}

typedef struct line_ud {
    scan_fn scan;
    int64_t len, stride; /* the reduced line: elements and byte stride */
    int64_t elsize;
    int ismax, want_vals;
} line_ud;

/* p[0] indices (int64), p[1] line starts of the input, p[2] values (when want_vals). */
static void index_lines(void *ud, int64_t n, char *const *p, const int64_t *st) {
    const line_ud *u = ud;
    for (int64_t i = 0; i < n; i++) {
        best_t b;
        u->scan(p[1] + i * st[1], u->len, u->stride, u->ismax, &b);
        *(int64_t *)(p[0] + i * st[0]) = b.idx;
        if (u->want_vals) memcpy(p[2] + i * st[2], b.p, (size_t)u->elsize);
    }
}

/* The winner of a flat contiguous run of n elements, chunked when long. */
static int flat_best(const fx_tensor *x, int ismax, best_t *out, fx_err *err) {
    const fx_dtype dt = x->dtype;
    const int64_t n = fx_tensor_numel(x), es = (int64_t)fx_dtype_size(dt);
    const char *p = fx_tensor_data(x);
    scan_fn scan = k_scans[dt];
    if (n < 2 * SCAN_CHUNK) {
        scan(p, n, es, ismax, out);
        return FX_OK;
    }
    int64_t nchunks = (n + SCAN_CHUNK - 1) / SCAN_CHUNK;
    best_t *part = fx_malloc((size_t)nchunks * sizeof *part);
    if (!part) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating reduction partials");
#ifdef _OPENMP
#pragma omp parallel for num_threads(fx_par_threads(n)) schedule(static)
#endif
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t e0 = c * SCAN_CHUNK, len = n - e0 < SCAN_CHUNK ? n - e0 : SCAN_CHUNK;
        scan(p + e0 * es, len, es, ismax, &part[c]);
        part[c].idx += e0;
    }
    *out = part[0];
    for (int64_t c = 1; c < nchunks; c++)
        if (beats(dt, out, &part[c], ismax)) *out = part[c];
    fx_free(part);
    return FX_OK;
}

/* max.dim, min.dim (out[0] values, out[1] indices), argmax, argmin (out[0] indices). */
int fx_k_reduce_index(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_reduce_plan p;
    int rc = fx_reduce_plan_make(ctx, a, &p);
    if (rc) return rc;
    const bool with_vals = p.kind == FX_RED_MAX_DIM || p.kind == FX_RED_MIN_DIM;
    const int ismax = p.kind == FX_RED_MAX_DIM || p.kind == FX_RED_ARGMAX;
    fx_tensor *vals = with_vals ? out[0].u.t : NULL, *idx = with_vals ? out[1].u.t : out[0].u.t;
    const fx_tensor *x = a[0].u.t;
    if (fx_tensor_is_meta(idx) || fx_tensor_is_meta(x)) return FX_OK;
    const int64_t es = (int64_t)fx_dtype_size(x->dtype);
    if (fx_tensor_numel(idx) == 0) return FX_OK;

    if (x->ndim == 0 || p.dim < 0) { /* one line: the row-major flattening */
        fx_tensor *flat = NULL;
        if (!fx_tensor_is_contiguous(x)) {
            if ((rc = fx_k_to_dtype(x, x->dtype, &flat, ctx->err))) return rc;
            x = flat;
        }
        best_t b;
        rc = flat_best(x, ismax, &b, ctx->err);
        if (!rc) {
            *(int64_t *)fx_tensor_data(idx) = b.idx;
            if (vals) memcpy(fx_tensor_data(vals), b.p, (size_t)es);
        }
        fx_tensor_release(flat);
        return rc;
    }

    /* one line per output position: iterate x's shape with the reduced dim squeezed to 1 */
    const int d = p.dim;
    int64_t sizes[FX_MAX_DIMS], ostr[FX_MAX_DIMS], xstr[FX_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) sizes[k] = x->sizes[k], xstr[k] = x->strides[k];
    sizes[d] = 1;
    fx_contiguous_strides(x->ndim, sizes, ostr); /* the outputs are contiguous (keepdim or not) */
    line_ud u = {k_scans[x->dtype], x->sizes[d], x->strides[d] * es, es, ismax, vals != NULL};
    fx_iter it;
    fx_iter_init(&it, x->ndim, sizes);
    fx_iter_add_raw(&it, fx_tensor_data(idx), ostr, 8);
    fx_iter_add_raw(&it, fx_tensor_data(x), xstr, (size_t)es);
    if (vals) fx_iter_add_raw(&it, fx_tensor_data(vals), ostr, (size_t)es);
    fx_iter_coalesce(&it);
    fx_iter_run_par(&it, index_lines, &u);
    return FX_OK;
}

/* ---- cumsum --------------------------------------------------------------------------------- */

typedef struct cum_ud {
    int64_t len, xs, os; /* line length, input and output byte strides along the dim */
} cum_ud;

/* p[0] output line starts, p[1] input line starts (both of dtype ID); ACC the running sum
 * (NAME cum, starting at 0) or product (NAME cumprod, starting at 1). */
#define CUM_LOOP_OP(NAME, INIT, ID, ST, VT, ACC, WRAP)                                             \
    static void NAME##_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {              \
        const cum_ud *u = ud;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const char *x = p[1] + i * st[1];                                                      \
            char *o = p[0] + i * st[0];                                                            \
            ACC s = INIT;                                                                          \
            for (int64_t k = 0; k < u->len; k++) {                                                 \
                s = WRAP(s, K_LOAD_##ID(x + k * u->xs));                                           \
                K_STORE(ID, ST, o + k * u->os, s);                                                 \
            }                                                                                      \
        }                                                                                          \
    }
#define CUM_LOOP(ID, ST, VT, ACC, WRAP) CUM_LOOP_OP(cum, 0, ID, ST, VT, ACC, WRAP)
#define ADDF(s, v) ((s) + (v))
#define ADDI(s, v) ((int64_t)((uint64_t)(s) + (uint64_t)(int64_t)(v)))
CUM_LOOP(F32, float, float, double, ADDF)
CUM_LOOP(F64, double, double, double, ADDF)
CUM_LOOP(F16, uint16_t, float, float, ADDF)
CUM_LOOP(BF16, uint16_t, float, float, ADDF)
CUM_LOOP(I64, int64_t, int64_t, int64_t, ADDI)
CUM_LOOP(I32, int32_t, int32_t, int64_t, ADDI)
CUM_LOOP(I16, int16_t, int16_t, int64_t, ADDI)
CUM_LOOP(I8, int8_t, int8_t, int64_t, ADDI)
CUM_LOOP(U8, uint8_t, uint8_t, int64_t, ADDI)
CUM_LOOP(BOOL, uint8_t, uint8_t, int64_t, ADDI)
static const fx_iter_loop k_cums[FX_DTYPE_COUNT] = {cum_F32, cum_F64, cum_F16, cum_BF16, cum_I64,
                                                    cum_I32, cum_I16, cum_I8,  cum_U8,   cum_BOOL};
#define CUMPROD_LOOP(ID, ST, VT, ACC, WRAP) CUM_LOOP_OP(cumprod, 1, ID, ST, VT, ACC, WRAP)
#define MULF(s, v) ((s) * (v))
#define MULI(s, v) ((int64_t)((uint64_t)(s) * (uint64_t)(int64_t)(v)))
CUMPROD_LOOP(F32, float, float, double, MULF)
CUMPROD_LOOP(F64, double, double, double, MULF)
CUMPROD_LOOP(F16, uint16_t, float, float, MULF)
CUMPROD_LOOP(BF16, uint16_t, float, float, MULF)
CUMPROD_LOOP(I64, int64_t, int64_t, int64_t, MULI)
CUMPROD_LOOP(I32, int32_t, int32_t, int64_t, MULI)
CUMPROD_LOOP(I16, int16_t, int16_t, int64_t, MULI)
CUMPROD_LOOP(I8, int8_t, int8_t, int64_t, MULI)
CUMPROD_LOOP(U8, uint8_t, uint8_t, int64_t, MULI)
CUMPROD_LOOP(BOOL, uint8_t, uint8_t, int64_t, MULI)
static const fx_iter_loop k_cumprods[FX_DTYPE_COUNT] = {
    cumprod_F32, cumprod_F64, cumprod_F16, cumprod_BF16, cumprod_I64,
    cumprod_I32, cumprod_I16, cumprod_I8,  cumprod_U8,   cumprod_BOOL};

/* complex64 / complex128 lines: the running sum or product in double precision per part
 * (at::acc_type of c10::complex<float> is c10::complex<double>), stored in the element's own. */
#define CCUM_LOOP(NAME, T, PROD)                                                                   \
    static void NAME(void *ud, int64_t n, char *const *p, const int64_t *st) {                     \
        const cum_ud *u = ud;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const char *x = p[1] + i * st[1];                                                      \
            char *o = p[0] + i * st[0];                                                            \
            double re = PROD ? 1 : 0, im = 0;                                                      \
            for (int64_t k = 0; k < u->len; k++) {                                                 \
                const T *v = (const T *)(x + k * u->xs);                                           \
                if (PROD) {                                                                        \
                    double r2 = re * v[0] - im * v[1];                                             \
                    im = re * v[1] + im * v[0], re = r2;                                           \
                } else {                                                                           \
                    re += v[0], im += v[1];                                                        \
                }                                                                                  \
                T *w = (T *)(o + k * u->os);                                                       \
                w[0] = (T)re, w[1] = (T)im;                                                        \
            }                                                                                      \
        }                                                                                          \
    }
CCUM_LOOP(cum_C64, float, 0)
CCUM_LOOP(cum_C128, double, 0)
CCUM_LOOP(cumprod_C64, float, 1)
CCUM_LOOP(cumprod_C128, double, 1)

/* cumsum / cumsum_ / cumprod / cumprod_: out[0] is the fresh result or self. */
int fx_k_cumsum(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int d;
    fx_dtype in_dt, out_dt;
    int rc = fx_cumsum_plan(ctx, a, &d, &in_dt, &out_dt);
    if (rc) return rc;
    fx_tensor *res = out[0].u.t;
    const fx_tensor *x = a[0].u.t;
    if (fx_tensor_is_meta(res) || fx_tensor_is_meta(x)) return FX_OK;
    if (fx_tensor_numel(res) == 0) return FX_OK;
    fx_tensor *cast = NULL;
    if (x->dtype != in_dt) { /* in place needs no copy: each element is read before written */
        if ((rc = fx_k_to_dtype(x, in_dt, &cast, ctx->err))) return rc;
        x = cast;
    }
    if (res->ndim == 0) {
        fx_k_copy_tensor(res, x);
        fx_tensor_release(cast);
        return FX_OK;
    }
    const int64_t es = (int64_t)fx_dtype_size(out_dt);
    int64_t sizes[FX_MAX_DIMS];
    for (int k = 0; k < res->ndim; k++) sizes[k] = res->sizes[k];
    sizes[d] = 1;
    cum_ud u = {res->sizes[d], x->strides[d] * es, res->strides[d] * es};
    fx_iter it;
    fx_iter_init(&it, res->ndim, sizes);
    fx_iter_add_raw(&it, fx_tensor_data(res), res->strides, (size_t)es);
    fx_iter_add_raw(&it, fx_tensor_data(x), x->strides, (size_t)es);
    fx_iter_coalesce(&it);
    bool prod = ctx->op->id == FX_OP_CUMPROD || ctx->op->id == FX_OP_CUMPROD_;
    fx_iter_loop fn = out_dt == FX_DTYPE_C64    ? (prod ? cumprod_C64 : cum_C64)
                      : out_dt == FX_DTYPE_C128 ? (prod ? cumprod_C128 : cum_C128)
                      : prod                    ? k_cumprods[out_dt]
                                                : k_cums[out_dt];
    fx_iter_run_par(&it, fn, &u);
    fx_tensor_release(cast);
    return FX_OK;
}
