/* core/kernels/k_reduce.c — accumulating reductions: sum, mean, prod, amax / amin / max / min
 * (.default), all, any, var / std (.correction).
 * Layer: core (private). The input (cast first to the dtype argument when one is given) is
 * walked once in row-major order together with an accumulator buffer that has the output's
 * shape with stride 0 on the reduced dims, so one k_iter pass serves every dim set and stride
 * pattern. Rows whose accumulator stride is 0 are combined horizontally (a register
 * accumulator, with eight partial accumulators on dense rows so the loop vectorizes); otherwise
 * each row combines into a row of accumulators (vertical). Floating inputs accumulate in
 * double, integers and bools in 64 bits (sums and products wrap), then the result is rounded
 * once into the output. var / std take two passes: the mean, then the sum of squared
 * deviations from it, divided by max(0, count - correction).
 *
 * Threads (red_run): above FX_PAR_GRAIN elements, a reduction with kept dims splits its largest
 * kept dim over threads — each output is still combined in the one-thread order, so results
 * are bit-identical for any thread count; a full reduction is cut into fixed chunks of
 * RED_CHUNK elements whose partial results are combined in chunk order, so its result does not
 * depend on the thread count either. */
#include <math.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/kernels/k_cast.h"
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define RED_CHUNK ((int64_t)1 << 16)

/* Combines: COMB(acc, v). Floats accumulate in double, integers in (u)int64. */
#define C_ADD(a, b) ((a) + (b))
#define C_MUL(a, b) ((a) * (b))
#define C_MAXF(a, b) (((b) != (b) || (b) > (a)) ? (b) : (a)) /* NaN wins and stays */
#define C_MINF(a, b) (((b) != (b) || (b) < (a)) ? (b) : (a))
#define C_MAXI(a, b) ((b) > (a) ? (b) : (a))
#define C_MINI(a, b) ((b) < (a) ? (b) : (a))
#define C_AND(a, b) ((a) & (b))
#define C_OR(a, b) ((a) | (b))
/* Maps from an element (value type) to the accumulator. */
#define M_VAL(ACC, x) ((ACC)(x))
#define M_NZ(ACC, x) ((ACC)((x) != 0))

/* p[0]: accumulators (8 bytes each), p[1]: input elements of dtype ID. */
#define RED_LOOP(NAME, ID, ST, VT, ACC, IDENT, COMB, MAP)                                          \
    static void NAME##_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {              \
        (void)ud;                                                                                  \
        if (st[0] == 0) {                                                                          \
            ACC s = IDENT;                                                                         \
            if (st[1] == (int64_t)sizeof(ST)) {                                                    \
                const ST *restrict x = (const ST *)p[1];                                           \
                ACC part[8];                                                                       \
                for (int k = 0; k < 8; k++) part[k] = IDENT;                                       \
                int64_t i = 0;                                                                     \
                for (; i + 8 <= n; i += 8)                                                         \
                    for (int k = 0; k < 8; k++)                                                    \
                        part[k] = COMB(part[k], MAP(ACC, K_LOAD_##ID(x + i + k)));                 \
                for (int k = 0; k < 8; k++) s = COMB(s, part[k]);                                  \
                for (; i < n; i++) s = COMB(s, MAP(ACC, K_LOAD_##ID(x + i)));                      \
            } else {                                                                               \
                for (int64_t i = 0; i < n; i++)                                                    \
                    s = COMB(s, MAP(ACC, K_LOAD_##ID(p[1] + i * st[1])));                          \
            }                                                                                      \
            *(ACC *)p[0] = COMB(*(ACC *)p[0], s);                                                  \
        } else if (st[0] == (int64_t)sizeof(ACC) && st[1] == (int64_t)sizeof(ST)) {                \
            ACC *restrict acc = (ACC *)p[0];                                                       \
            const ST *restrict x = (const ST *)p[1];                                               \
            for (int64_t i = 0; i < n; i++) acc[i] = COMB(acc[i], MAP(ACC, K_LOAD_##ID(x + i)));   \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ACC *a_ = (ACC *)(p[0] + i * st[0]);                                               \
                *a_ = COMB(*a_, MAP(ACC, K_LOAD_##ID(p[1] + i * st[1])));                          \
            }                                                                                      \
        }                                                                                          \
    }

#define FLOAT_RED(ID, ST, VT)                                                                      \
    RED_LOOP(sum, ID, ST, VT, double, 0.0, C_ADD, M_VAL)                                           \
    RED_LOOP(prod, ID, ST, VT, double, 1.0, C_MUL, M_VAL)                                          \
    RED_LOOP(max, ID, ST, VT, double, -INFINITY, C_MAXF, M_VAL)                                    \
    RED_LOOP(min, ID, ST, VT, double, INFINITY, C_MINF, M_VAL)                                     \
    RED_LOOP(all, ID, ST, VT, uint64_t, 1, C_AND, M_NZ)                                            \
    RED_LOOP(any, ID, ST, VT, uint64_t, 0, C_OR, M_NZ)
FLOAT_RED(F32, float, float)
FLOAT_RED(F64, double, double)
FLOAT_RED(F16, uint16_t, float)
FLOAT_RED(BF16, uint16_t, float)
/* Integers and bool: 64-bit accumulation; sum and prod wrap (unsigned arithmetic). */
#define INT_RED(ID, ST, VT)                                                                        \
    RED_LOOP(sum, ID, ST, VT, uint64_t, 0, C_ADD, M_VAL)                                           \
    RED_LOOP(prod, ID, ST, VT, uint64_t, 1, C_MUL, M_VAL)                                          \
    RED_LOOP(max, ID, ST, VT, int64_t, INT64_MIN, C_MAXI, M_VAL)                                   \
    RED_LOOP(min, ID, ST, VT, int64_t, INT64_MAX, C_MINI, M_VAL)                                   \
    RED_LOOP(all, ID, ST, VT, uint64_t, 1, C_AND, M_NZ)                                            \
    RED_LOOP(any, ID, ST, VT, uint64_t, 0, C_OR, M_NZ)
INT_RED(I64, int64_t, int64_t)
INT_RED(I32, int32_t, int32_t)
INT_RED(I16, int16_t, int16_t)
INT_RED(I8, int8_t, int8_t)
INT_RED(U8, uint8_t, uint8_t)
INT_RED(BOOL, uint8_t, uint8_t)

/* var's second pass: p[0] accumulators, p[1] the mean of each output (doubles with the same
 * strides), p[2] the input: acc += (x - mean)^2. */
#define M2_LOOP(ID, ST, VT)                                                                        \
    static void m2_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {                  \
        (void)ud;                                                                                  \
        if (st[0] == 0) {                                                                          \
            const double m = *(const double *)p[1];                                                \
            double s = 0;                                                                          \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const double d = (double)K_LOAD_##ID(p[2] + i * st[2]) - m;                        \
                s += d * d;                                                                        \
            }                                                                                      \
            *(double *)p[0] += s;                                                                  \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const double d =                                                                   \
                    (double)K_LOAD_##ID(p[2] + i * st[2]) - *(const double *)(p[1] + i * st[1]);   \
                *(double *)(p[0] + i * st[0]) += d * d;                                            \
            }                                                                                      \
        }                                                                                          \
    }
M2_LOOP(F32, float, float)
M2_LOOP(F64, double, double)
M2_LOOP(F16, uint16_t, float)
M2_LOOP(BF16, uint16_t, float)

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        NAME##_F32, NAME##_F64, NAME##_F16, NAME##_BF16, NAME##_I64, NAME##_I32, NAME##_I16,       \
            NAME##_I8, NAME##_U8, NAME##_BOOL                                                      \
    }
enum { K_SUM, K_PROD, K_MAX, K_MIN, K_ALL, K_ANY, K_M2, K_COUNT };
static const fx_iter_loop k_red_loops[K_COUNT][FX_DTYPE_COUNT] = {
    ROW(sum),
    ROW(prod),
    ROW(max),
    ROW(min),
    ROW(all),
    ROW(any),
    {m2_F32, m2_F64, m2_F16, m2_BF16, NULL, NULL, NULL, NULL, NULL, NULL},
};

/* The identity of a loop's accumulator, as its 8 bytes. */
static uint64_t red_identity(int k, bool fp) {
    union {
        double d;
        int64_t i;
        uint64_t u;
    } v = {.u = 0};
    switch (k) {
    case K_PROD:
        if (fp)
            v.d = 1.0;
        else
            v.u = 1;
        break;
    case K_MAX:
        if (fp)
            v.d = -INFINITY;
        else
            v.i = INT64_MIN;
        break;
    case K_MIN:
        if (fp)
            v.d = INFINITY;
        else
            v.i = INT64_MAX;
        break;
    case K_ALL: v.u = 1; break;
    default: v.u = 0; break;
    }
    return v.u;
}

/* *acc = COMB(*acc, *part) for loop k (the chunk combination of full reductions). */
static void red_combine(int k, bool fp, void *acc, const void *part) {
    if (fp && k <= K_MIN) {
        double *a = acc, b = *(const double *)part;
        switch (k) {
        case K_SUM: *a = C_ADD(*a, b); break;
        case K_PROD: *a = C_MUL(*a, b); break;
        case K_MAX: *a = C_MAXF(*a, b); break;
        default: *a = C_MINF(*a, b); break;
        }
        return;
    }
    if (k == K_M2) {
        *(double *)acc += *(const double *)part;
        return;
    }
    uint64_t *a = acc, b = *(const uint64_t *)part;
    int64_t ai = (int64_t)*a, bi = (int64_t)b;
    switch (k) {
    case K_SUM: *a = C_ADD(*a, b); break;
    case K_PROD: *a = C_MUL(*a, b); break;
    case K_MAX: *a = (uint64_t)C_MAXI(ai, bi); break;
    case K_MIN: *a = (uint64_t)C_MINI(ai, bi); break;
    case K_ALL: *a = C_AND(*a, b); break;
    default: *a = C_OR(*a, b); break;
    }
}

/* Runs loop k of a built iteration whose operand 0 is the accumulator buffer (stride 0 on
 * reduced dims) — in parallel where the result stays the one-thread result (see the top
 * comment). FX_ENOMEM only for the chunk partials of a large full reduction. */
static int red_run(fx_iter *it, int k, bool fp, fx_iter_loop fn, fx_err *err) {
    const int64_t n = it->numel;
    if (n < FX_PAR_GRAIN) {
        fx_iter_run_all(it, fn, NULL);
        return FX_OK;
    }
    int kept = -1;
    for (int d = 0; d < it->ndim; d++)
        if (it->strides[0][d] != 0 && it->sizes[d] > 1 &&
            (kept < 0 || it->sizes[d] > it->sizes[kept]))
            kept = d;
    const int nt = fx_par_threads(n);
    if (kept >= 0) {
        int64_t size = it->sizes[kept];
        int64_t parts = nt < size ? nt : size;
        if (parts <= 1) {
            fx_iter_run_all(it, fn, NULL);
            return FX_OK;
        }
#ifdef _OPENMP
#pragma omp parallel for num_threads((int)parts) schedule(static)
#endif
        for (int64_t t = 0; t < parts; t++) {
            fx_iter sub = *it;
            int64_t s0 = size * t / parts, s1 = size * (t + 1) / parts;
            fx_iter_narrow(&sub, kept, s0, s1 - s0);
            fx_iter_run_all(&sub, fn, NULL);
        }
        return FX_OK;
    }
    /* full reduction: fixed chunks, partials combined in order */
    int64_t nchunks = (n + RED_CHUNK - 1) / RED_CHUNK;
    uint64_t *part = fx_malloc((size_t)nchunks * sizeof *part);
    if (!part) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating reduction partials");
    const uint64_t ident = k == K_M2 ? 0 : red_identity(k, fp);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
    for (int64_t c = 0; c < nchunks; c++) {
        fx_iter sub = *it;
        part[c] = ident;
        if (c > 0 && fx_interrupt_pending()) { /* Ctrl-C: the dispatcher reports it */
            fx_interrupt_stopped();
            continue;
        }
        sub.data[0] = (char *)&part[c];
        int64_t e1 = (c + 1) * RED_CHUNK < n ? (c + 1) * RED_CHUNK : n;
        fx_iter_run_elems(&sub, c * RED_CHUNK, e1, fn, NULL);
    }
    for (int64_t c = 0; c < nchunks; c++) red_combine(k, fp, it->data[0], &part[c]);
    fx_free(part);
    return FX_OK;
}

/* Accumulator strides over x's shape: contiguous over kept dims, 0 over reduced dims. */
static void acc_strides(const fx_tensor *x, const bool *reduced, int64_t *astr) {
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        astr[d] = reduced[d] ? 0 : s;
        if (!reduced[d]) s *= x->sizes[d];
    }
}

/* One pass of loop k over x into acc (nout accumulators set to the identity first); mean is
 * var's second operand or NULL. */
static int red_pass(const fx_tensor *x, const bool *reduced, int k, void *acc, int64_t nout,
                    const double *mean, fx_err *err) {
    const bool fp = fx_dtype_is_float(x->dtype);
    uint64_t ident = k == K_M2 ? 0 : red_identity(k, fp);
    for (int64_t i = 0; i < nout; i++) ((uint64_t *)acc)[i] = ident;
    int64_t astr[FX_MAX_DIMS] = {0};
    acc_strides(x, reduced, astr);
    fx_iter it;
    fx_iter_init(&it, x->ndim, x->sizes);
    fx_iter_add_raw(&it, acc, astr, 8);
    if (mean) fx_iter_add_raw(&it, (void *)mean, astr, 8);
    fx_iter_add(&it, x);
    fx_iter_coalesce(&it);
    return red_run(&it, k, fp, k_red_loops[k][x->dtype], err);
}

/* sum / mean of a complex tensor: the real view [..., 2] (the parts as one more kept dim)
 * reduced as floats, so each output's real and imaginary parts accumulate in double exactly as
 * a real sum does; then rounded once into res. */
static int reduce_complex(const fx_reduce_plan *p, const fx_tensor *x, fx_tensor *res,
                          fx_err *err) {
    if (x->ndim >= FX_MAX_DIMS)
        return fx_err_setf(err, FX_ENOTIMPL, "sum of a complex tensor with %d dims", x->ndim);
    fx_tensor v = *x; /* a stack view borrowing x's storage: never retained or released */
    v.dtype = fx_dtype_to_real(x->dtype);
    for (int d = 0; d < x->ndim; d++) v.strides[d] = x->strides[d] * 2;
    v.sizes[x->ndim] = 2;
    v.strides[x->ndim] = 1;
    v.ndim = x->ndim + 1;
    v.offset = x->offset * 2;
    bool reduced[FX_MAX_DIMS];
    memcpy(reduced, p->reduced, sizeof(bool) * (size_t)x->ndim);
    reduced[x->ndim] = false;
    const int64_t nout = fx_tensor_numel(res);
    double *acc = fx_malloc(sizeof(double) * 2 * (size_t)(nout > 0 ? nout : 1));
    if (!acc) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating a reduction buffer");
    int rc = red_pass(&v, reduced, K_SUM, acc, 2 * nout, NULL, err);
    for (int64_t i = 0; i < nout && !rc; i++) {
        double re = acc[2 * i], im = acc[2 * i + 1];
        if (p->is_mean) re /= (double)p->count, im /= (double)p->count;
        fx_dtype_store_c(res->dtype, fx_tensor_data(res), i, re, im);
    }
    fx_free(acc);
    return rc;
}

/* prod of a complex tensor: each output's product over its reduced elements, in row-major
 * order, accumulated in double per part (c10::complex<double>, the CPU accumulate type of both
 * complex dtypes), then rounded once into res. Stops on Ctrl-C between chunks. */
static int prod_complex(const fx_reduce_plan *p, const fx_tensor *x, fx_tensor *res, fx_err *err) {
    const int64_t nout = fx_tensor_numel(res), n = fx_tensor_numel(x);
    double *acc = fx_malloc(sizeof(double) * 2 * (size_t)(nout > 0 ? nout : 1));
    if (!acc) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating a reduction buffer");
    for (int64_t i = 0; i < nout; i++) acc[2 * i] = 1, acc[2 * i + 1] = 0;
    int64_t ostr[FX_MAX_DIMS], pos[FX_MAX_DIMS] = {0}, o = 1;
    for (int d = x->ndim - 1; d >= 0; d--) { /* res is contiguous over the kept dims */
        ostr[d] = p->reduced[d] ? 0 : o;
        if (!p->reduced[d]) o *= x->sizes[d];
    }
    const char *data = fx_tensor_storage(x) ? fx_tensor_data(x) : NULL;
    for (int64_t i = 0; i < n; i++) {
        if (i > 0 && i % FX_ITER_CANCEL_CHUNK == 0 && fx_interrupt_pending()) {
            fx_interrupt_stopped();
            break;
        }
        int64_t xo = 0, oi = 0;
        for (int d = 0; d < x->ndim; d++) xo += pos[d] * x->strides[d], oi += pos[d] * ostr[d];
        double re, im;
        fx_dtype_load_c(x->dtype, data, xo, &re, &im);
        double *a = &acc[2 * oi], r2 = a[0] * re - a[1] * im;
        a[1] = a[0] * im + a[1] * re, a[0] = r2;
        for (int d = x->ndim - 1; d >= 0; d--) {
            if (++pos[d] < x->sizes[d]) break;
            pos[d] = 0;
        }
    }
    for (int64_t i = 0; i < nout; i++) fx_dtype_store_c(res->dtype, fx_tensor_data(res), i, acc[2 * i], acc[2 * i + 1]);
    fx_free(acc);
    return FX_OK;
}

/* sum, mean, prod, amax, amin, max, min, all, any, var.correction, std.correction: out[0] is the
 * fresh contiguous result. */
int fx_k_reduce(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_reduce_plan p;
    int rc = fx_reduce_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *res = out[0].u.t;
    const fx_tensor *x = a[0].u.t;
    if (fx_tensor_is_meta(res) || fx_tensor_is_meta(x)) return FX_OK;

    fx_tensor *cast = NULL;
    if (p.in_dtype != x->dtype) {
        if ((rc = fx_k_to_dtype(x, p.in_dtype, &cast, ctx->err))) return rc;
        x = cast;
    }
    if (fx_dtype_is_complex(x->dtype)) {
        rc = p.kind == FX_RED_SUM || p.kind == FX_RED_MEAN ? reduce_complex(&p, x, res, ctx->err)
             : p.kind == FX_RED_PROD                       ? prod_complex(&p, x, res, ctx->err)
                                                           : fx_err_setf(ctx->err, FX_ETYPE, "\"%s\" not implemented for '%s'",
                               ctx->op->schema.name, fx_dtype_c10_name(x->dtype));
        fx_tensor_release(cast);
        return rc;
    }
    const bool fp = fx_dtype_is_float(x->dtype);
    const int64_t nout = fx_tensor_numel(res);
    const size_t nacc = (size_t)(nout > 0 ? nout : 1);
    const bool var = p.kind == FX_RED_VAR || p.kind == FX_RED_STD;
    void *acc = fx_malloc(nacc * 8 * (var ? 2 : 1));
    if (!acc) {
        fx_tensor_release(cast);
        return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory allocating a reduction buffer");
    }
    int k;
    switch (p.kind) {
    case FX_RED_PROD: k = K_PROD; break;
    case FX_RED_MAX: k = K_MAX; break;
    case FX_RED_MIN: k = K_MIN; break;
    case FX_RED_ALL: k = K_ALL; break;
    case FX_RED_ANY: k = K_ANY; break;
    default: k = K_SUM; break;
    }
    double *mean = var ? (double *)acc + nacc : NULL;
    rc = red_pass(x, p.reduced, k, var ? (void *)mean : acc, nout, NULL, ctx->err);
    if (!rc && var) {
        for (int64_t i = 0; i < nout; i++) mean[i] /= (double)p.count;
        rc = red_pass(x, p.reduced, K_M2, acc, nout, mean, ctx->err);
    }
    if (rc) goto done;

    char *o = fx_tensor_data(res);
    const int64_t es = (int64_t)fx_dtype_size(res->dtype);
    const double dof = (double)p.count - p.correction > 0 ? (double)p.count - p.correction : 0;
    for (int64_t i = 0; i < nout; i++) {
        if (fp && k != K_ALL && k != K_ANY) {
            double v = ((const double *)acc)[i];
            if (p.is_mean) v /= (double)p.count;
            if (var) {
                v /= dof;
                if (p.kind == FX_RED_STD) v = sqrt(v);
            }
            fx_k_store_f64(res->dtype, o + i * es, v);
        } else {
            int64_t v = (int64_t)((const uint64_t *)acc)[i];
            fx_k_store_i64(res->dtype, o + i * es, v);
        }
    }
done:
    fx_free(acc);
    fx_tensor_release(cast);
    return rc;
}
