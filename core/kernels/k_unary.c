/* core/kernels/k_unary.c — elementwise unary kernels: abs exp log log1p sqrt rsqrt sin cos tanh
 * sigmoid relu gelu silu reciprocal logical_not bitwise_not sign floor ceil trunc round
 * (round.decimals) erf expm1 softplus (and their in-place twins).
 * Layer: core (private). The meta function (meta_unary.c) has checked the dtypes and made the
 * output. The input is brought to the compute dtype first (int -> float32 for the float-only
 * ops, as TensorIterator's promote_integer_inputs_to_float), the loop writes the compute dtype
 * (bool for logical_not) and a result of another dtype (an in-place op on a narrower self) goes
 * through a temporary. Half types load to float, compute in float and round once. exp, sigmoid
 * and silu on the float types use k_vmath.h's branch-free exp, so their dense loops vectorize;
 * the other functions are libm's. Large tensors split over threads (fx_iter_run_par); every
 * element is independent. */
#include <math.h>
#include <string.h>

#include "core/kernels/k_cast.h"
#include "core/kernels/k_complex.h"
#include "core/kernels/k_iter.h"
#include "core/kernels/k_vmath.h"
#include "core/meta_common.h"

/* The gelu constants of GeluKernel.cpp: erf form x * 0.5 * (1 + erf(x / sqrt(2))), tanh form
 * 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))). */
#define K_SQRT1_2 0.70710678118654752440
#define K_GELU_BETA (1.41421356237309504880 * 1.12837916709551257390 * 0.5)
#define K_GELU_KAPPA 0.044715

/* Per value type T (float or double): the math of each op. */
static inline float relu_f(float x) { return x < 0 ? 0.0f : x; }
static inline double relu_d(double x) { return x < 0 ? 0.0 : x; }
#define sigmoid_f k_sigmoidf
static inline double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
#define silu_f k_siluf
static inline double silu_d(double x) { return x / (1.0 + exp(-x)); }
static inline float gelu_f(float x) { return x * 0.5f * (1.0f + erff(x * (float)K_SQRT1_2)); }
static inline double gelu_d(double x) { return x * 0.5 * (1.0 + erf(x * K_SQRT1_2)); }
static inline float gelut_f(float x) {
    const float inner = (float)K_GELU_BETA * (x + (float)K_GELU_KAPPA * (x * x * x));
    return 0.5f * x * (1.0f + tanhf(inner));
}
static inline double gelut_d(double x) {
    const double inner = K_GELU_BETA * (x + K_GELU_KAPPA * (x * x * x));
    return 0.5 * x * (1.0 + tanh(inner));
}
static inline float rsqrt_f(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt_d(double x) { return 1.0 / sqrt(x); }
static inline float recip_f(float x) { return 1.0f / x; }
static inline double recip_d(double x) { return 1.0 / x; }
/* sign: (0 < x) - (x < 0), so NaN and -0.0 give 0 (c10's sign) */
static inline float sign_f(float x) { return (float)((0.0f < x) - (x < 0.0f)); }
static inline double sign_d(double x) { return (double)((0.0 < x) - (x < 0.0)); }
/* softplus (Activation.cpp): x where beta * x > threshold, else log1p(exp(beta * x)) / beta */
static inline float softplus_f(float x, float beta, float thr) {
    return x * beta > thr ? x : log1pf(expf(x * beta)) / beta;
}
static inline double softplus_d(double x, double beta, double thr) {
    return x * beta > thr ? x : log1p(exp(x * beta)) / beta;
}
/* round.decimals (UnaryOpsKernel.cpp): a negative count rounds to tens, hundreds, ...; p is
 * 10^|decimals| in the value type, n whether decimals < 0; halves go to even (nearbyint) */
static inline float rdec_f(float x, float p, float n) {
    return n != 0.0f ? nearbyintf(x / p) * p : nearbyintf(x * p) / p;
}
static inline double rdec_d(double x, double p, double n) {
    return n != 0.0 ? nearbyint(x / p) * p : nearbyint(x * p) / p;
}

/* UNARY_LOOP(NAME, ID, ST, VT, OST, OID, EXPR): out (storage OST, dtype OID) = EXPR(x), x the
 * input element of dtype ID loaded as VT; a dense fast path the compiler vectorizes. */
#define UNARY_LOOP(NAME, ID, ST, VT, OID, OST, EXPR)                                               \
    K_VEC K_CLONES static void NAME##_##ID(void *ud, int64_t n, char *const *p,                    \
                                           const int64_t *st) {                                    \
        (void)ud;                                                                                  \
        if (st[0] == (int64_t)sizeof(OST) && st[1] == (int64_t)sizeof(ST)) {                       \
            OST *o = (OST *)p[0];                                                                  \
            const ST *pa = (const ST *)p[1];                                                       \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                  \
                const VT x = K_LOAD_##ID(pa + i);                                                  \
                K_STORE(OID, OST, o + i, (EXPR));                                                  \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const VT x = K_LOAD_##ID(p[1] + i * st[1]);                                        \
                K_STORE(OID, OST, p[0] + i * st[0], (EXPR));                                       \
            }                                                                                      \
        }                                                                                          \
    }
#define SAME(NAME, ID, ST, VT, EXPR) UNARY_LOOP(NAME, ID, ST, VT, ID, ST, EXPR)

/* floating ops: float32 and the half types use the float functions (exp the vectorizing
 * k_expf), float64 the double ones */
#define EXPf k_expf
#define EXP exp
#define FLOAT_MATH(ID, ST, VT, S)                                                                  \
    SAME(exp, ID, ST, VT, EXP##S(x))                                                               \
    SAME(log, ID, ST, VT, log##S(x))                                                               \
    SAME(log1p, ID, ST, VT, log1p##S(x))                                                           \
    SAME(sqrt, ID, ST, VT, sqrt##S(x))                                                             \
    SAME(sin, ID, ST, VT, sin##S(x))                                                               \
    SAME(cos, ID, ST, VT, cos##S(x))                                                               \
    SAME(tanh, ID, ST, VT, tanh##S(x))                                                             \
    SAME(abs, ID, ST, VT, fabs##S(x))                                                              \
    SAME(floor, ID, ST, VT, floor##S(x))                                                           \
    SAME(ceil, ID, ST, VT, ceil##S(x))                                                             \
    SAME(trunc, ID, ST, VT, trunc##S(x))                                                           \
    SAME(round, ID, ST, VT, nearbyint##S(x))                                                       \
    SAME(erf, ID, ST, VT, erf##S(x))                                                               \
    SAME(expm1, ID, ST, VT, expm1##S(x))
FLOAT_MATH(F32, float, float, f)
FLOAT_MATH(F16, uint16_t, float, f)
FLOAT_MATH(BF16, uint16_t, float, f)
FLOAT_MATH(F64, double, double, )

#define FLOAT_MATH2(ID, ST, VT, S)                                                                 \
    SAME(rsqrt, ID, ST, VT, rsqrt_##S(x))                                                          \
    SAME(sigmoid, ID, ST, VT, sigmoid_##S(x))                                                      \
    SAME(relu, ID, ST, VT, relu_##S(x))                                                            \
    SAME(gelu, ID, ST, VT, gelu_##S(x))                                                            \
    SAME(gelut, ID, ST, VT, gelut_##S(x))                                                          \
    SAME(silu, ID, ST, VT, silu_##S(x))                                                            \
    SAME(recip, ID, ST, VT, recip_##S(x))                                                          \
    SAME(sign, ID, ST, VT, sign_##S(x))
FLOAT_MATH2(F32, float, float, f)
FLOAT_MATH2(F16, uint16_t, float, f)
FLOAT_MATH2(BF16, uint16_t, float, f)
FLOAT_MATH2(F64, double, double, d)

/* PARAM_LOOP(NAME, ID, ST, VT, FN): out = FN(x, P0, P1), the two parameters from ud (a double[2])
 * converted once to the value type. */
#define PARAM_LOOP(NAME, ID, ST, VT, FN)                                                           \
    static void NAME##_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {              \
        const double *prm = ud;                                                                    \
        const VT p0 = (VT)prm[0], p1 = (VT)prm[1];                                                 \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const VT x = K_LOAD_##ID(p[1] + i * st[1]);                                            \
            K_STORE(ID, ST, p[0] + i * st[0], FN(x, p0, p1));                                      \
        }                                                                                          \
    }
#define PARAM_MATH(ID, ST, VT, S)                                                                  \
    PARAM_LOOP(softplus, ID, ST, VT, softplus_##S)                                                 \
    PARAM_LOOP(rdec, ID, ST, VT, rdec_##S)
PARAM_MATH(F32, float, float, f)
PARAM_MATH(F16, uint16_t, float, f)
PARAM_MATH(BF16, uint16_t, float, f)
PARAM_MATH(F64, double, double, d)

/* integers: abs wraps (abs(INT_MIN) = INT_MIN), relu is max(x, 0), bitwise_not is ~x */
#define INT_MATH(ID, ST, VT)                                                                       \
    SAME(abs, ID, ST, VT, x < 0 ? (int64_t)(0 - (uint64_t)(int64_t)x) : (int64_t)x)                \
    SAME(relu, ID, ST, VT, x < 0 ? 0 : x)                                                          \
    SAME(bnot, ID, ST, VT, ~(int64_t)x)
INT_MATH(I64, int64_t, int64_t)
INT_MATH(I32, int32_t, int32_t)
INT_MATH(I16, int16_t, int16_t)
INT_MATH(I8, int8_t, int8_t)
SAME(abs, U8, uint8_t, uint8_t, x)
SAME(relu, U8, uint8_t, uint8_t, x)
SAME(bnot, U8, uint8_t, uint8_t, ~(int64_t)x)
SAME(bnot, BOOL, uint8_t, uint8_t, !x)
#define INT_SIGN(ID, ST, VT) SAME(sign, ID, ST, VT, (x > 0) - (x < 0))
INT_SIGN(I64, int64_t, int64_t)
INT_SIGN(I32, int32_t, int32_t)
INT_SIGN(I16, int16_t, int16_t)
INT_SIGN(I8, int8_t, int8_t)
SAME(sign, U8, uint8_t, uint8_t, x > 0)
SAME(sign, BOOL, uint8_t, uint8_t, x)

/* logical_not: any dtype in, bool out */
#define LNOT(ID, ST, VT) UNARY_LOOP(lnot, ID, ST, VT, BOOL, uint8_t, x == 0)
K_DTYPES(LNOT)

enum {
    U_EXP,
    U_LOG,
    U_LOG1P,
    U_SQRT,
    U_RSQRT,
    U_SIN,
    U_COS,
    U_TANH,
    U_SIGMOID,
    U_RECIP,
    U_ABS,
    U_RELU,
    U_GELU,
    U_GELUT,
    U_SILU,
    U_BNOT,
    U_LNOT,
    U_SIGN,
    U_FLOOR,
    U_CEIL,
    U_TRUNC,
    U_ROUND,
    U_ERF,
    U_EXPM1,
    U_SOFTPLUS,
    U_RDEC,
    U_COUNT
};

static fx_iter_loop k_unary_loops[U_COUNT][FX_DTYPE_COUNT];

#define SET_U(U, NAME, ID) (k_unary_loops[U][FX_DTYPE_##ID] = NAME##_##ID)
#define SET_UF(U, NAME)                                                                            \
    do {                                                                                           \
        SET_U(U, NAME, F32);                                                                       \
        SET_U(U, NAME, F64);                                                                       \
        SET_U(U, NAME, F16);                                                                       \
        SET_U(U, NAME, BF16);                                                                      \
    } while (0)
#define SET_UI(U, NAME)                                                                            \
    do {                                                                                           \
        SET_U(U, NAME, I64);                                                                       \
        SET_U(U, NAME, I32);                                                                       \
        SET_U(U, NAME, I16);                                                                       \
        SET_U(U, NAME, I8);                                                                        \
        SET_U(U, NAME, U8);                                                                        \
    } while (0)

static void init_unary_loops(void) {
    static volatile int ready;
    if (ready) return;
    SET_UF(U_EXP, exp);
    SET_UF(U_LOG, log);
    SET_UF(U_LOG1P, log1p);
    SET_UF(U_SQRT, sqrt);
    SET_UF(U_RSQRT, rsqrt);
    SET_UF(U_SIN, sin);
    SET_UF(U_COS, cos);
    SET_UF(U_TANH, tanh);
    SET_UF(U_SIGMOID, sigmoid);
    SET_UF(U_RECIP, recip);
    SET_UF(U_GELU, gelu);
    SET_UF(U_GELUT, gelut);
    SET_UF(U_SILU, silu);
    SET_UF(U_ABS, abs);
    SET_UI(U_ABS, abs);
    SET_UF(U_RELU, relu);
    SET_UI(U_RELU, relu);
    SET_UI(U_BNOT, bnot);
    SET_U(U_BNOT, bnot, BOOL);
    SET_UF(U_LNOT, lnot);
    SET_UI(U_LNOT, lnot);
    SET_U(U_LNOT, lnot, BOOL);
    SET_UF(U_SIGN, sign);
    SET_UI(U_SIGN, sign);
    SET_U(U_SIGN, sign, BOOL);
    SET_UF(U_FLOOR, floor);
    SET_UF(U_CEIL, ceil);
    SET_UF(U_TRUNC, trunc);
    SET_UF(U_ROUND, round);
    SET_UF(U_ERF, erf);
    SET_UF(U_EXPM1, expm1);
    SET_UF(U_SOFTPLUS, softplus);
    SET_UF(U_RDEC, rdec);
    ready = 1;
}

/* The loop row of an op (gelu's row depends on its `approximate` argument). */
static int unary_row(const fx_opctx *ctx, const fx_ivalue *a) {
    switch (ctx->op->id) {
    case FX_OP_EXP:
    case FX_OP_EXP_: return U_EXP;
    case FX_OP_LOG:
    case FX_OP_LOG_: return U_LOG;
    case FX_OP_LOG1P:
    case FX_OP_LOG1P_: return U_LOG1P;
    case FX_OP_SQRT:
    case FX_OP_SQRT_: return U_SQRT;
    case FX_OP_RSQRT:
    case FX_OP_RSQRT_: return U_RSQRT;
    case FX_OP_SIN:
    case FX_OP_SIN_: return U_SIN;
    case FX_OP_COS:
    case FX_OP_COS_: return U_COS;
    case FX_OP_TANH:
    case FX_OP_TANH_: return U_TANH;
    case FX_OP_SIGMOID:
    case FX_OP_SIGMOID_: return U_SIGMOID;
    case FX_OP_RECIPROCAL:
    case FX_OP_RECIPROCAL_: return U_RECIP;
    case FX_OP_ABS:
    case FX_OP_ABS_: return U_ABS;
    case FX_OP_RELU:
    case FX_OP_RELU_: return U_RELU;
    case FX_OP_SILU:
    case FX_OP_SILU_: return U_SILU;
    case FX_OP_BITWISE_NOT:
    case FX_OP_BITWISE_NOT_: return U_BNOT;
    case FX_OP_LOGICAL_NOT:
    case FX_OP_LOGICAL_NOT_: return U_LNOT;
    case FX_OP_SIGN:
    case FX_OP_SIGN_: return U_SIGN;
    case FX_OP_FLOOR:
    case FX_OP_FLOOR_: return U_FLOOR;
    case FX_OP_CEIL:
    case FX_OP_CEIL_: return U_CEIL;
    case FX_OP_TRUNC:
    case FX_OP_TRUNC_: return U_TRUNC;
    case FX_OP_ROUND:
    case FX_OP_ROUND_: return U_ROUND;
    case FX_OP_ERF:
    case FX_OP_ERF_: return U_ERF;
    case FX_OP_EXPM1:
    case FX_OP_EXPM1_: return U_EXPM1;
    case FX_OP_SOFTPLUS: return U_SOFTPLUS;
    case FX_OP_ROUND_DECIMALS:
    case FX_OP_ROUND__DECIMALS: {
        const fx_ivalue *dv = fx_arg(ctx, a, "decimals");
        return dv && dv->tag == FX_IV_INT && dv->u.i != 0 ? U_RDEC : U_ROUND;
    }
    case FX_OP_GELU:
    case FX_OP_GELU_: {
        const fx_ivalue *ap = fx_arg(ctx, a, "approximate");
        return (ap && ap->tag == FX_IV_STR && !strcmp(ap->u.s, "tanh")) ? U_GELUT : U_GELU;
    }
    default: return -1;
    }
}

/* Every op of meta_unary.c: out[0] is the fresh result or self. */
int fx_k_unary_math(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    const fx_tensor *src = a[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    if (fx_dtype_is_complex(src->dtype)) return fx_k_unary_complex(ctx, src, res);
    init_unary_loops();
    int row = unary_row(ctx, a);
    bool rounding = row == U_FLOOR || row == U_CEIL || row == U_TRUNC || row == U_ROUND;
    if (rounding && !fx_dtype_is_float(src->dtype)) { /* integers round to themselves */
        fx_k_copy_tensor(res, src);
        return FX_OK;
    }
    double prm[2] = {0, 0}; /* softplus: beta, threshold; round.decimals: 10^|d|, d < 0 */
    if (row == U_SOFTPLUS) {
        const fx_ivalue *b = fx_arg(ctx, a, "beta"), *th = fx_arg(ctx, a, "threshold");
        prm[0] = b && b->tag != FX_IV_NONE ? fx_ivalue_to_f64(b) : 1.0;
        prm[1] = th && th->tag != FX_IV_NONE ? fx_ivalue_to_f64(th) : 20.0;
    } else if (row == U_RDEC) {
        int64_t d = fx_arg(ctx, a, "decimals")->u.i;
        prm[0] = pow(10.0, fabs((double)d));
        prm[1] = d < 0;
    }
    fx_dtype C = fx_unary_compute_dtype(ctx->op->id, src->dtype);
    fx_iter_loop fn = row >= 0 ? k_unary_loops[row][C] : NULL;
    if (!fn)
        return fx_err_setf(ctx->err, FX_EINTERNAL, "no %s loop for %s", ctx->op->qualname,
                           fx_dtype_name(C));
    const fx_dtype loop_out = row == U_LNOT ? FX_DTYPE_BOOL : C;
    fx_tensor *tmp_in = NULL, *tmp_out = NULL, *dst = res;
    int rc = FX_OK;
    if (src->dtype != C) {
        if ((rc = fx_k_to_dtype(src, C, &tmp_in, ctx->err))) return rc;
        src = tmp_in;
    }
    if (res->dtype != loop_out) {
        if ((rc = fx_tensor_empty(res->ndim, res->sizes, loop_out, FX_DEVICE_CPU, &tmp_out,
                                  ctx->err)))
            goto done;
        dst = tmp_out;
    }
    fx_iter it;
    fx_iter_init(&it, res->ndim, res->sizes);
    fx_iter_add(&it, dst);
    fx_iter_add(&it, src);
    fx_iter_coalesce(&it);
    fx_iter_run_par(&it, fn, prm);
    if (tmp_out) fx_k_copy_tensor(res, tmp_out);
done:
    fx_tensor_release(tmp_in);
    fx_tensor_release(tmp_out);
    return rc;
}
