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

enum {
    CB_ADD,
    CB_MUL,
    CB_DIV,
    CB_POW,        /* cpow(x, y) */
    CB_EQ,         /* (x == y) as (1, 0) / (0, 0); the caller's copy makes it bool */
    CB_NE,
    CB_SQUARE,     /* pow.Tensor_Scalar's special exponents (PowKernel.cpp): x * x */
    CB_CUBE,       /* x * x * x */
    CB_RSQUARE,    /* 1 / (x * x) */
};

/* c10::complex division (a + bi) / (c + di) in precision T, as PyTorch's vectorized CPU kernel:
 * both operands scaled by 1 / max(|c|, |d|) so that c^2 + d^2 cannot overflow. */
#define CDIV(T, a, b, c, d, re, im)                                                                \
    do {                                                                                           \
        const T sc_ = fabs(c) > fabs(d) ? fabs(c) : fabs(d), k_ = (T)1.0 / sc_;                    \
        const T a2_ = (a) * k_, b2_ = (b) * k_, c2_ = (c) * k_, d2_ = (d) * k_;                    \
        const T den_ = c2_ * c2_ + d2_ * d2_;                                                      \
        (re) = (a2_ * c2_ + b2_ * d2_) / den_, (im) = (b2_ * c2_ - a2_ * d2_) / den_;              \
    } while (0)

typedef struct cbin_ud {
    int op;       /* CB_* */
    double alpha; /* add/sub: a + alpha * b (alpha negated for sub) */
} cbin_ud;

/* One binary loop per precision T: operands 1 and 2 (strides may be 0) into operand 0. */
#define CBIN_LOOP(NAME, T, CT, CPOW, MK)                                                           \
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
            case CB_DIV: CDIV(T, a, b, c, d, re, im); break;                                       \
            case CB_POW: {                                                                         \
                CT z = CPOW(MK(a, b), MK(c, d));                                                   \
                re = creal(z), im = cimag(z);                                                      \
                break;                                                                             \
            }                                                                                      \
            case CB_EQ: re = (a == c && b == d), im = 0; break;                                    \
            case CB_NE: re = (a != c || b != d), im = 0; break;                                    \
            case CB_SQUARE: re = a * a - b * b, im = a * b + b * a; break;                         \
            case CB_CUBE: {                                                                        \
                const T r2 = a * a - b * b, i2 = a * b + b * a;                                    \
                re = r2 * a - i2 * b, im = r2 * b + i2 * a;                                        \
                break;                                                                             \
            }                                                                                      \
            default: { /* CB_RSQUARE */                                                            \
                const T r2 = a * a - b * b, i2 = a * b + b * a;                                    \
                CDIV(T, (T)1, (T)0, r2, i2, re, im);                                               \
            }                                                                                      \
            }                                                                                      \
            o[0] = re, o[1] = im;                                                                  \
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
CBIN_LOOP(cbin_c64, float, float complex, cpowf, CMPLXF)
CBIN_LOOP(cbin_c128, double, double complex, cpow, CMPLX)

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
    case FX_BINOP_EQ: u.op = CB_EQ; break;
    case FX_BINOP_NE: u.op = CB_NE; break;
    case FX_BINOP_POW:
        u.op = CB_POW;
        if (p->scalar_exp && p->other->tag != FX_IV_TENSOR) { /* PowKernel.cpp's special exponents */
            double e = fx_ivalue_to_f64(p->other);
            if (e == 0.5 || e == -0.5 || e == -1.0) { /* sqrt / rsqrt / reciprocal kernels */
                fx_opctx uc = *ctx;
                uc.op = fx_op_get(e == 0.5 ? FX_OP_SQRT : e == -0.5 ? FX_OP_RSQRT : FX_OP_RECIPROCAL);
                const fx_tensor *x = p->self->u.t;
                fx_tensor *tx = NULL;
                int rc = x->dtype == C ? FX_OK : fx_k_to_dtype(x, C, &tx, ctx->err);
                if (!rc) rc = fx_k_unary_complex(&uc, tx ? tx : x, res);
                fx_tensor_release(tx);
                return rc;
            }
            if (e == 2) u.op = CB_SQUARE;
            if (e == 3) u.op = CB_CUBE;
            if (e == -2) u.op = CB_RSQUARE;
        }
        break;
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

enum { CU_NEG, CU_EXP, CU_ABS, CU_CONJ, CU_SIN, CU_COS, CU_LOG, CU_SQRT, CU_TANH, CU_RSQRT, CU_SIGMOID, CU_RECIP };

#define CUN_LOOP(NAME, T, CT, MK, CEXP, HYPOT, CSIN, CCOS, CLOG, CSQRT, CTANH)                    \
    static void NAME(void *ud, int64_t n, char *const *p, const int64_t *st) {                     \
        const int op = *(const int *)ud;                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const T *x = (const T *)(p[1] + i * st[1]);                                            \
            T *o = (T *)(p[0] + i * st[0]);                                                        \
            switch (op) {                                                                          \
            case CU_NEG: o[0] = -x[0], o[1] = -x[1]; break;                                        \
            case CU_CONJ: o[0] = x[0], o[1] = -x[1]; break;                                        \
            case CU_ABS: o[0] = HYPOT(x[0], x[1]); break; /* the real result */                  \
            case CU_RECIP: CDIV(T, (T)1, (T)0, x[0], x[1], o[0], o[1]); break;                     \
            case CU_RSQRT: { /* 1 / sqrt(z), c10::complex division */                              \
                CT z = CSQRT(MK(x[0], x[1]));                                                      \
                CDIV(T, (T)1, (T)0, (T)creal(z), (T)cimag(z), o[0], o[1]);                         \
                break;                                                                             \
            }                                                                                      \
            case CU_SIGMOID: { /* 1 / (1 + exp(-z)) */                                             \
                CT z = CEXP(MK(-x[0], -x[1]));                                                     \
                CDIV(T, (T)1, (T)0, (T)(1 + creal(z)), (T)cimag(z), o[0], o[1]);                   \
                break;                                                                             \
            }                                                                                      \
            default: {                                                                             \
                CT w = MK(x[0], x[1]);                                                             \
                CT z = op == CU_EXP ? CEXP(w) : op == CU_SIN ? CSIN(w) : op == CU_COS ? CCOS(w)   \
                     : op == CU_LOG ? CLOG(w) : op == CU_SQRT ? CSQRT(w) : CTANH(w);              \
                o[0] = creal(z), o[1] = cimag(z);                                                  \
            }                                                                                      \
            }                                                                                      \
        }                                                                                          \
    }
CUN_LOOP(cun_c64, float, float complex, CMPLXF, cexpf, hypotf, csinf, ccosf, clogf, csqrtf, ctanhf)
CUN_LOOP(cun_c128, double, double complex, CMPLX, cexp, hypot, csin, ccos, clog, csqrt, ctanh)

int fx_k_unary_complex(fx_opctx *ctx, const fx_tensor *src, fx_tensor *res) {
    int op;
    switch (ctx->op->id) {
    case FX_OP_NEG: case FX_OP_NEG_: op = CU_NEG; break;
    case FX_OP_EXP: case FX_OP_EXP_: op = CU_EXP; break;
    case FX_OP_ABS: op = CU_ABS; break;
    case FX_OP_CONJ_PHYSICAL: case FX_OP_CONJ_PHYSICAL_: op = CU_CONJ; break;
    case FX_OP_SIN: case FX_OP_SIN_: op = CU_SIN; break;
    case FX_OP_COS: case FX_OP_COS_: op = CU_COS; break;
    case FX_OP_LOG: case FX_OP_LOG_: op = CU_LOG; break;
    case FX_OP_SQRT: case FX_OP_SQRT_: op = CU_SQRT; break;
    case FX_OP_TANH: case FX_OP_TANH_: op = CU_TANH; break;
    case FX_OP_RSQRT: case FX_OP_RSQRT_: op = CU_RSQRT; break;
    case FX_OP_SIGMOID: case FX_OP_SIGMOID_: op = CU_SIGMOID; break;
    case FX_OP_RECIPROCAL: case FX_OP_RECIPROCAL_: op = CU_RECIP; break;
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
