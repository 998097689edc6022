/* core/kernels/k_complex.c — elementwise kernels on complex64 / complex128: add, sub, mul, div
 * (and their in-place twins), neg, exp, abs (a real result), conj_physical, polar, complex.
 * Layer: core (private). fx_k_binary and the unary kernels hand a complex compute dtype here.
 * Operands are first converted to the compute dtype (real operands get imaginary part 0, a
 * wrapped Lua number is a stride-0 operand), then one loop per precision computes in that
 * precision, as c10::complex<float> / c10::complex<double> arithmetic does: mul is
 * (ac - bd) + (ad + bc)i, div is the division of PyTorch's vectorized CPU kernel (both
 * operands scaled by 1 / max(|c|, |d|) so that c^2 + d^2 cannot overflow, then
 * ((ac + bd) + (bc - ad)i) / (c^2 + d^2)), exp is libm's cexp, abs is hypot, polar is
 * (r cos t, r sin t). */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "core/kernels/k_complex.h"
#include "core/kernels/k_iter.h"

enum { CB_ADD, CB_MUL, CB_DIV };

typedef struct cbin_ud {
    int op;       /* CB_* */
    double alpha; /* add/sub: a + alpha * b (alpha negated for sub) */
} cbin_ud;

/* One binary loop per precision T: operands 1 and 2 (strides may be 0) into operand 0. */
#define CBIN_LOOP(NAME, T)                                                                         \
    static void NAME(void *ud, int64_t n, char *const *p, const int64_t *st) {                     \
        const cbin_ud *u = ud;                                                                     \
        const T alpha = (T)u->alpha;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const T *x = (const T *)(p[1] + i * st[1]), *y = (const T *)(p[2] + i * st[2]);        \
            T *o = (T *)(p[0] + i * st[0]);                                                        \
            const T a = x[0], b = x[1], c = y[0], d = y[1];                                        \
            T re, im;                                                                              \
            switch (u->op) {                                                                       \
            case CB_ADD:                                                                           \
                if (alpha == 1) {                                                                  \
                    re = a + c, im = b + d;                                                        \
                } else {                                                                           \
                    re = a + alpha * c, im = b + alpha * d;                                        \
                }                                                                                  \
                break;                                                                             \
            case CB_MUL: re = a * c - b * d, im = a * d + b * c; break;                            \
            default: {                                                                             \
                const T sc = fabs(c) > fabs(d) ? fabs(c) : fabs(d), k = (T)1.0 / sc;               \
                const T a2 = a * k, b2 = b * k, c2 = c * k, d2 = d * k;                            \
                const T den = c2 * c2 + d2 * d2;                                                   \
                re = (a2 * c2 + b2 * d2) / den, im = (b2 * c2 - a2 * d2) / den;                    \
            }                                                                                      \
            }                                                                                      \
            o[0] = re, o[1] = im;                                                                  \
        }                                                                                          \
    }
CBIN_LOOP(cbin_c64, float)
CBIN_LOOP(cbin_c128, double)

/* An operand of a binary op in the compute dtype C: a tensor (converted into *tmp when its
 * dtype differs) or a wrapped number written into buf as (v, 0). */
static int operand(fx_iter *it, const fx_ivalue *v, fx_dtype C, fx_tensor **tmp, double *buf,
                   fx_err *err) {
    if (v->tag == FX_IV_TENSOR) {
        const fx_tensor *t = v->u.t;
        if (t->dtype != C) {
            int rc = fx_k_to_dtype(t, C, tmp, err);
            if (rc) return rc;
            t = *tmp;
        }
        fx_iter_add(it, t);
        return FX_OK;
    }
    memset(buf, 0, 16);
    fx_k_scalar_store(C, v, buf);
    fx_iter_add_scalar(it, buf, fx_dtype_size(C));
    return FX_OK;
}

int fx_k_binary_complex(fx_opctx *ctx, const fx_binary_plan *p, fx_tensor *res) {
    const fx_dtype C = p->compute;
    cbin_ud u = {CB_ADD, 1};
    switch (p->op) {
    case FX_BINOP_ADD:
        u.op = CB_ADD;
        u.alpha = p->alpha ? fx_ivalue_to_f64(p->alpha) : 1;
        if (p->is_sub) u.alpha = -u.alpha;
        break;
    case FX_BINOP_MUL: u.op = CB_MUL; break;
    case FX_BINOP_DIV: u.op = CB_DIV; break;
    default:
        return fx_err_setf(ctx->err, FX_ETYPE, "\"%s\" not implemented for '%s'",
                           ctx->op->schema.name, fx_dtype_c10_name(C));
    }
    fx_tensor *ta = NULL, *tb = NULL, *tout = NULL, *dst = res;
    double abuf[2], bbuf[2];
    int rc = FX_OK;
    if (res->dtype != C) { /* cannot happen for the flagged ops (can_cast), kept for safety */
        if ((rc = fx_tensor_empty(res->ndim, res->sizes, C, FX_DEVICE_CPU, &tout, ctx->err)))
            return rc;
        dst = tout;
    }
    fx_iter it;
    fx_iter_init(&it, p->ndim, p->sizes);
    fx_iter_add(&it, dst);
    if ((rc = operand(&it, p->self, C, &ta, abuf, ctx->err)) ||
        (rc = operand(&it, p->other, C, &tb, bbuf, ctx->err)))
        goto done;
    fx_iter_coalesce(&it);
    fx_iter_run_par(&it, C == FX_DTYPE_C64 ? cbin_c64 : cbin_c128, &u);
    if (tout) fx_k_copy_tensor(res, tout);
done:
    fx_tensor_release(ta);
    fx_tensor_release(tb);
    fx_tensor_release(tout);
    return rc;
}

/* ---- unary ------------------------------------------------------------------------------ */

enum { CU_NEG, CU_EXP, CU_ABS, CU_CONJ };

#define CUN_LOOP(NAME, T, CT, CEXP, HYPOT)                                                         \
    static void NAME(void *ud, int64_t n, char *const *p, const int64_t *st) {                     \
        const int op = *(const int *)ud;                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const T *x = (const T *)(p[1] + i * st[1]);                                            \
            T *o = (T *)(p[0] + i * st[0]);                                                        \
            switch (op) {                                                                          \
            case CU_NEG: o[0] = -x[0], o[1] = -x[1]; break;                                        \
            case CU_CONJ: o[0] = x[0], o[1] = -x[1]; break;                                        \
            case CU_ABS: o[0] = HYPOT(x[0], x[1]); break; /* the real result */                  \
            default: {                                                                             \
                CT z = CEXP(CMPLX_##T(x[0], x[1]));                                                \
                o[0] = creal(z), o[1] = cimag(z);                                                  \
            }                                                                                      \
            }                                                                                      \
        }                                                                                          \
    }
/* glibc's complex.h defines CMPLX / CMPLXF for GCC only; clang (make fuzz-load) has the same
 * builtin. */
#ifndef CMPLXF
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#define CMPLX_float CMPLXF
#define CMPLX_double CMPLX
CUN_LOOP(cun_c64, float, float complex, cexpf, hypotf)
CUN_LOOP(cun_c128, double, double complex, cexp, hypot)

int fx_k_unary_complex(fx_opctx *ctx, const fx_tensor *src, fx_tensor *res) {
    int op;
    switch (ctx->op->id) {
    case FX_OP_NEG: case FX_OP_NEG_: op = CU_NEG; break;
    case FX_OP_EXP: case FX_OP_EXP_: op = CU_EXP; break;
    case FX_OP_ABS: op = CU_ABS; break;
    case FX_OP_CONJ_PHYSICAL: case FX_OP_CONJ_PHYSICAL_: op = CU_CONJ; break;
    default:
        return fx_err_setf(ctx->err, FX_ETYPE, "\"%s\" not implemented for '%s'",
                           ctx->op->schema.name, fx_dtype_c10_name(src->dtype));
    }
    fx_iter it;
    fx_iter_init(&it, res->ndim, res->sizes);
    fx_iter_add(&it, res);
    fx_iter_add(&it, src);
    fx_iter_coalesce(&it);
    fx_iter_run_par(&it, src->dtype == FX_DTYPE_C64 ? cun_c64 : cun_c128, &op);
    return FX_OK;
}

/* conj_physical / conj_physical_ (a real input copies itself, as PyTorch's conj of a real
 * tensor is the identity). */
int fx_k_conj_physical(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    const fx_tensor *src = a[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    if (!fx_dtype_is_complex(src->dtype)) {
        if (res != src) fx_k_copy_tensor(res, src);
        return FX_OK;
    }
    return fx_k_unary_complex(ctx, src, res);
}

/* ---- polar, complex --------------------------------------------------------------------- */

#define PAIR_LOOP(NAME, T, COS, SIN, POLAR)                                                        \
    static void NAME(void *ud, int64_t n, char *const *p, const int64_t *st) {                     \
        (void)ud;                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const T x = *(const T *)(p[1] + i * st[1]), y = *(const T *)(p[2] + i * st[2]);        \
            T *o = (T *)(p[0] + i * st[0]);                                                        \
            if (POLAR)                                                                             \
                o[0] = x * COS(y), o[1] = x * SIN(y);                                              \
            else                                                                                   \
                o[0] = x, o[1] = y;                                                                \
        }                                                                                          \
    }
PAIR_LOOP(polar_f32, float, cosf, sinf, 1)
PAIR_LOOP(polar_f64, double, cos, sin, 1)
PAIR_LOOP(complex_f32, float, cosf, sinf, 0)
PAIR_LOOP(complex_f64, double, cos, sin, 0)

/* polar(abs, angle) / complex(real, imag): out[0] fresh complex, the inputs one real dtype
 * (the meta function checked), broadcast. */
int fx_k_polar(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    const fx_tensor *x = a[0].u.t, *y = a[1].u.t;
    bool polar = ctx->op->id == FX_OP_POLAR;
    bool f32 = x->dtype == FX_DTYPE_F32;
    fx_iter it;
    fx_iter_init(&it, res->ndim, res->sizes);
    fx_iter_add(&it, res);
    fx_iter_add(&it, x);
    fx_iter_add(&it, y);
    fx_iter_coalesce(&it);
    fx_iter_run_par(&it,
                    polar ? (f32 ? polar_f32 : polar_f64) : (f32 ? complex_f32 : complex_f64),
                    NULL);
    return FX_OK;
}
