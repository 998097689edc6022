/* core/kernels/k_pointwise.c — elementwise kernels: add/sub (alpha), mul, div (true, trunc,
 * floor), neg.
 * Layer: core (private). One shared binary kernel keyed by the plan's op; per-dtype loops are
 * generated from one element expression per op and dtype family. Operands are first brought to
 * the compute dtype (a converted copy, outside the hot loop), the result is written straight
 * into the output when its dtype is the compute dtype, else into a temporary that is then
 * copied (in-place ops on a narrower self, as TensorIterator's cast_outputs).
 *
 * Numerics, as PyTorch's CPU kernels: float16/bfloat16 load to float, compute, round once —
 * except add's alpha*b, which c10::Half arithmetic rounds before the add; a wrapped number
 * as the second operand of mul/div on half types stays in float (opmath), while add/sub see
 * it rounded to the half type; integers wrap; integer division by zero raises
 * "ZeroDivisionError". */
#include <math.h>

#include "core/kernels/k_cast.h"
#include "core/kernels/k_complex.h"
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

typedef struct bin_ud {
    double alpha_d; /* alpha (negated for sub), pre-rounded to the half type for half ops */
    int64_t alpha_i;
    double b_d; /* the wrapped second operand, when it is a scalar */
    int64_t b_i;
    int pow_mode; /* pow with a scalar exponent: POWM_* */
} bin_ud;

/* Value of a (double, int64) pair as value type VT: floating types take the double. */
#define UDV(VT, d, i) (K_IS_FP((VT)0) ? (VT)(d) : (VT)(i))

/* Round-trip through the storage type: what c10::Half / BFloat16 arithmetic does after each
 * operation. Identity for types whose value type is their storage type. */
#define RND_F32(x) (x)
#define RND_F64(x) (x)
#define RND_F16(x) k_h2f(k_f2h(x))
#define RND_BF16(x) k_b2f(k_f2b(x))

static inline float floordiv_f(float a, float b) {
    if (b == 0) return a / b;
    float mod = fmodf(a, b);
    float div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0f;
    float fl;
    if (div != 0) {
        fl = floorf(div);
        if (div - fl > 0.5f) fl += 1.0f;
    } else {
        fl = copysignf(0.0f, a / b);
    }
    return fl;
}
static inline double floordiv_d(double a, double b) {
    if (b == 0) return a / b;
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0;
    double fl;
    if (div != 0) {
        fl = floor(div);
        if (div - fl > 0.5) fl += 1.0;
    } else {
        fl = copysign(0.0, a / b);
    }
    return fl;
}
#define FLOORDIV_F32 floordiv_f
#define FLOORDIV_F64 floordiv_d
#define FLOORDIV_F16 floordiv_f
#define FLOORDIV_BF16 floordiv_f
/* add with an alpha other than +-1: floats fuse (vec::fmadd), half types round alpha * y to the
 * half type first (c10::Half arithmetic) */
#define ADDA_F32(x, a, y) fmaf(a, y, x)
#define ADDA_F64(x, a, y) fma(a, y, x)
#define ADDA_F16(x, a, y) ((x) + RND_F16((a) * (y)))
#define ADDA_BF16(x, a, y) ((x) + RND_BF16((a) * (y)))
#define TRUNC_F32 truncf
#define TRUNC_F64 trunc
#define TRUNC_F16 truncf
#define TRUNC_BF16 truncf

/* Integer helpers on int64 values (wrapping; the caller's store narrows). */
#define IW(x) ((uint64_t)(int64_t)(x))
static inline int64_t idiv_trunc(int64_t a, int64_t b) {
    return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
}
static inline int64_t idiv_floor(int64_t a, int64_t b) {
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b, r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

/* ---- loop generators -------------------------------------------------------------------- */

/* NAME_tt_ID: out = EXPR(x, y) with x from operand 1, y from operand 2 (both tensors).
 * NAME_ts_ID: the same with y the scalar held in the ud. Both have a dense fast path. */
#define BIN_LOOPS2(NAME, ID, ST, VT, EXPR, EXPR_S)                                                 \
    static void NAME##_tt_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {           \
        const bin_ud *u = ud;                                                                      \
        const VT alpha = UDV(VT, u->alpha_d, u->alpha_i);                                          \
        (void)alpha;                                                                               \
        const int64_t es = (int64_t)sizeof(ST);                                                    \
        if (st[0] == es && st[1] == es && st[2] == es) {                                           \
            ST *o = (ST *)p[0];                                                                    \
            const ST *pa = (const ST *)p[1], *pb = (const ST *)p[2];                               \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                  \
                const VT x = K_LOAD_##ID(pa + i), y = K_LOAD_##ID(pb + i);                         \
                K_STORE(ID, ST, o + i, (EXPR));                                                    \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const VT x = K_LOAD_##ID(p[1] + i * st[1]), y = K_LOAD_##ID(p[2] + i * st[2]);     \
                K_STORE(ID, ST, p[0] + i * st[0], (EXPR));                                         \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_ts_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {           \
        const bin_ud *u = ud;                                                                      \
        const VT alpha = UDV(VT, u->alpha_d, u->alpha_i);                                          \
        const VT y = UDV(VT, u->b_d, u->b_i);                                                      \
        (void)alpha;                                                                               \
        const int64_t es = (int64_t)sizeof(ST);                                                    \
        if (st[0] == es && st[1] == es) {                                                          \
            ST *o = (ST *)p[0];                                                                    \
            const ST *pa = (const ST *)p[1];                                                       \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                  \
                const VT x = K_LOAD_##ID(pa + i);                                                  \
                K_STORE(ID, ST, o + i, (EXPR_S));                                                  \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const VT x = K_LOAD_##ID(p[1] + i * st[1]);                                        \
                K_STORE(ID, ST, p[0] + i * st[0], (EXPR_S));                                       \
            }                                                                                      \
        }                                                                                          \
    }

#define BIN_LOOPS(NAME, ID, ST, VT, EXPR) BIN_LOOPS2(NAME, ID, ST, VT, EXPR, EXPR)

/* Floating types. add with |alpha| == 1 is a plain add (ADDA otherwise). Half types: tensor /
 * tensor trunc rounds the quotient to the half type before truncating (c10::Half division);
 * against a single-element divisor it stays in float (the opmath path of
 * BinaryOpsKernel.cpp). */
#define FLOAT_OPS(ID, ST, VT)                                                                      \
    BIN_LOOPS(add, ID, ST, VT, x + alpha * y)                                                      \
    BIN_LOOPS(addf, ID, ST, VT, ADDA_##ID(x, alpha, y))                                            \
    BIN_LOOPS(mul, ID, ST, VT, x *y)                                                               \
    BIN_LOOPS(div, ID, ST, VT, x / y)                                                              \
    BIN_LOOPS2(trunc, ID, ST, VT, TRUNC_##ID(RND_##ID(x / y)), TRUNC_##ID(x / y))                  \
    BIN_LOOPS(floor, ID, ST, VT, FLOORDIV_##ID(x, y))
FLOAT_OPS(F32, float, float)
FLOAT_OPS(F64, double, double)
FLOAT_OPS(F16, uint16_t, float)
FLOAT_OPS(BF16, uint16_t, float)

/* Integer types: wrapping arithmetic in 64 bits, narrowed by the store. */
#define INT_OPS(ID, ST, VT)                                                                        \
    BIN_LOOPS(add, ID, ST, VT, (int64_t)(IW(x) + IW(alpha) * IW(y)))                               \
    BIN_LOOPS(mul, ID, ST, VT, (int64_t)(IW(x) * IW(y)))                                           \
    BIN_LOOPS(trunc, ID, ST, VT, idiv_trunc(x, y))                                                 \
    BIN_LOOPS(floor, ID, ST, VT, idiv_floor(x, y))
INT_OPS(I64, int64_t, int64_t)
INT_OPS(I32, int32_t, int32_t)
INT_OPS(I16, int16_t, int16_t)
INT_OPS(I8, int8_t, int8_t)
INT_OPS(U8, uint8_t, uint8_t)

/* Bool: add is "any", mul is "and" (C++ bool arithmetic converted back to bool). */
BIN_LOOPS(add, BOOL, uint8_t, uint8_t, (x + alpha * y) != 0)
BIN_LOOPS(mul, BOOL, uint8_t, uint8_t, x &&y)

/* ---- remainder, pow, maximum / minimum, bitwise ops, shifts ------------------------------ */

/* Python's modulo on floats (BinaryOpsKernel.cpp remainder_kernel): the sign of the divisor. */
static inline float rem_f(float a, float b) {
    float m = fmodf(a, b);
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
}
static inline double rem_d(double a, double b) {
    double m = fmod(a, b);
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
}
#define REM_F32 rem_f
#define REM_F64 rem_d
#define REM_F16 rem_f
#define REM_BF16 rem_f
static inline int64_t rem_i(int64_t a, int64_t b) {
    if (b == -1) return 0; /* INT_MIN % -1 */
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* c10's powi: integer powers by squaring (wrapping); negative exponents give 1 for a base of 1,
 * +-1 for -1, else 0. */
static inline int64_t powi(int64_t a, int64_t b) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b % 2) ? -1 : 1;
        return 0;
    }
    uint64_t r = 1, x = (uint64_t)a;
    while (b) {
        if (b & 1) r *= x;
        b >>= 1;
        x *= x;
    }
    return (int64_t)r;
}
#define POW_F32 powf
#define POW_F64 pow
#define POW_F16 powf
#define POW_BF16 powf
/* maximum / minimum: a NaN on either side gives NaN */
#define FMAX(x, y) (((x) != (x) || (y) != (y)) ? (x) + (y) : ((x) > (y) ? (x) : (y)))
#define FMIN(x, y) (((x) != (x) || (y) != (y)) ? (x) + (y) : ((x) < (y) ? (x) : (y)))
#define IMAX(x, y) ((x) > (y) ? (x) : (y))
#define IMIN(x, y) ((x) < (y) ? (x) : (y))
/* Shifts of a BITS-wide integer: past the width (or negative), left gives 0 and right gives the
 * sign fill (BinaryOpsKernel.cpp lshift_kernel / rshift_kernel). */
#define SHL(x, y, BITS)                                                                            \
    (((uint64_t)(int64_t)(y) >= (BITS)) ? 0 : (int64_t)((uint64_t)(int64_t)(x) << (y)))
#define SHR(x, y, MS)                                                                              \
    (((uint64_t)(int64_t)(y) >= (MS)) ? (int64_t)(x) >> (MS) : (int64_t)(x) >> (y))

#define MORE_FLOAT_OPS(ID, ST, VT)                                                                 \
    BIN_LOOPS(rem, ID, ST, VT, REM_##ID(x, y))                                                     \
    BIN_LOOPS(pow, ID, ST, VT, POW_##ID(x, y))                                                     \
    BIN_LOOPS(max, ID, ST, VT, FMAX(x, y))                                                         \
    BIN_LOOPS(min, ID, ST, VT, FMIN(x, y))
MORE_FLOAT_OPS(F32, float, float)
MORE_FLOAT_OPS(F64, double, double)
MORE_FLOAT_OPS(F16, uint16_t, float)
MORE_FLOAT_OPS(BF16, uint16_t, float)

#define MORE_INT_OPS(ID, ST, VT, BITS, MS)                                                         \
    BIN_LOOPS(rem, ID, ST, VT, rem_i(x, y))                                                        \
    BIN_LOOPS(pow, ID, ST, VT, powi(x, y))                                                         \
    BIN_LOOPS(max, ID, ST, VT, IMAX(x, y))                                                         \
    BIN_LOOPS(min, ID, ST, VT, IMIN(x, y))                                                         \
    BIN_LOOPS(band, ID, ST, VT, x &y)                                                              \
    BIN_LOOPS(bor, ID, ST, VT, x | y)                                                              \
    BIN_LOOPS(bxor, ID, ST, VT, x ^ y)                                                             \
    BIN_LOOPS(shl, ID, ST, VT, SHL(x, y, BITS))                                                    \
    BIN_LOOPS(shr, ID, ST, VT, SHR(x, y, MS))
MORE_INT_OPS(I64, int64_t, int64_t, 64, 63)
MORE_INT_OPS(I32, int32_t, int32_t, 32, 31)
MORE_INT_OPS(I16, int16_t, int16_t, 16, 15)
MORE_INT_OPS(I8, int8_t, int8_t, 8, 7)
MORE_INT_OPS(U8, uint8_t, uint8_t, 8, 8)
BIN_LOOPS(max, BOOL, uint8_t, uint8_t, x || y)
BIN_LOOPS(min, BOOL, uint8_t, uint8_t, x &&y)
BIN_LOOPS(band, BOOL, uint8_t, uint8_t, x &y)
BIN_LOOPS(bor, BOOL, uint8_t, uint8_t, x | y)
BIN_LOOPS(bxor, BOOL, uint8_t, uint8_t, x ^ y)

/* ---- pow with a scalar exponent (pow_tensor_scalar_kernel) ---------------------------------- */

enum {
    POWM_GENERAL, /* pow(x, e) */
    POWM_SQRT,    /* e = 0.5, -0.5, -1: the sqrt / rsqrt / reciprocal kernels */
    POWM_RSQRT,
    POWM_RECIP,
    POWM_SQUARE, /* e = 2, 3, -2: multiplications */
    POWM_CUBE,
    POWM_INVSQ,
};

/* p[0] out, p[1] base; the exponent is u->b_d (u->b_i for integers), the mode u->pow_mode. */
#define POW_TS_LOOP(ID, ST, VT, GEN, SQ, CUBE, INVSQ)                                              \
    static void powts_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {               \
        const bin_ud *u = ud;                                                                      \
        const VT e = (VT)u->b_d;                                                                   \
        (void)e;                                                                                   \
        switch (u->pow_mode) {                                                                     \
        case POWM_SQRT: POW_TS_BODY(ID, ST, VT, (VT)sqrt(x)); break;                               \
        case POWM_RSQRT: POW_TS_BODY(ID, ST, VT, (VT)1 / (VT)sqrt(x)); break;                      \
        case POWM_RECIP: POW_TS_BODY(ID, ST, VT, (VT)1 / x); break;                                \
        case POWM_SQUARE: POW_TS_BODY(ID, ST, VT, SQ); break;                                      \
        case POWM_CUBE: POW_TS_BODY(ID, ST, VT, CUBE); break;                                      \
        case POWM_INVSQ: POW_TS_BODY(ID, ST, VT, INVSQ); break;                                    \
        default: POW_TS_BODY(ID, ST, VT, GEN); break;                                              \
        }                                                                                          \
    }
#define POW_TS_BODY(ID, ST, VT, EXPR)                                                              \
    do {                                                                                           \
        if (st[0] == (int64_t)sizeof(ST) && st[1] == (int64_t)sizeof(ST)) {                        \
            ST *o = (ST *)p[0];                                                                    \
            const ST *pa = (const ST *)p[1];                                                       \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const VT x = K_LOAD_##ID(pa + i);                                                  \
                K_STORE(ID, ST, o + i, (EXPR));                                                    \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const VT x = K_LOAD_##ID(p[1] + i * st[1]);                                        \
                K_STORE(ID, ST, p[0] + i * st[0], (EXPR));                                         \
            }                                                                                      \
        }                                                                                          \
    } while (0)
/* float: std::pow(float, double) is the double pow rounded; 1 / (x * x) divides in double.
 * bfloat16 computes each step in float and rounds it to bfloat16 (c10::BFloat16 arithmetic).
 * half: every exponent through powf. */
POW_TS_LOOP(F32, float, float, (float)pow((double)x, u->b_d), x *x, x *x *x,
            (float)(1.0 / (double)(x * x)))
POW_TS_LOOP(F64, double, double, pow(x, e), x *x, x *x *x, 1.0 / (x * x))
POW_TS_LOOP(F16, uint16_t, float, powf(x, e), x *x, x *x *x, 1.0f / (x * x))
POW_TS_LOOP(BF16, uint16_t, float, powf(x, e), x *x, RND_BF16(x *x) * x, 1.0f / RND_BF16(x * x))
#undef POW_TS_BODY

/* ---- predicates: bool out ------------------------------------------------------------------- */

#define PRED_LOOPS(NAME, ID, ST, VT, EXPR)                                                         \
    static void NAME##_tt_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {           \
        (void)ud;                                                                                  \
        const int64_t es = (int64_t)sizeof(ST);                                                    \
        if (st[0] == 1 && st[1] == es && st[2] == es) {                                            \
            uint8_t *o = (uint8_t *)p[0];                                                          \
            const ST *pa = (const ST *)p[1], *pb = (const ST *)p[2];                               \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                  \
                const VT x = K_LOAD_##ID(pa + i), y = K_LOAD_##ID(pb + i);                         \
                o[i] = (uint8_t)(EXPR);                                                            \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const VT x = K_LOAD_##ID(p[1] + i * st[1]), y = K_LOAD_##ID(p[2] + i * st[2]);     \
                *(uint8_t *)(p[0] + i * st[0]) = (uint8_t)(EXPR);                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_ts_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {           \
        const bin_ud *u = ud;                                                                      \
        const VT y = UDV(VT, u->b_d, u->b_i);                                                      \
        const int64_t es = (int64_t)sizeof(ST);                                                    \
        if (st[0] == 1 && st[1] == es) {                                                           \
            uint8_t *o = (uint8_t *)p[0];                                                          \
            const ST *pa = (const ST *)p[1];                                                       \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                  \
                const VT x = K_LOAD_##ID(pa + i);                                                  \
                o[i] = (uint8_t)(EXPR);                                                            \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const VT x = K_LOAD_##ID(p[1] + i * st[1]);                                        \
                *(uint8_t *)(p[0] + i * st[0]) = (uint8_t)(EXPR);                                  \
            }                                                                                      \
        }                                                                                          \
    }
#define PRED_OPS(ID, ST, VT)                                                                       \
    PRED_LOOPS(eq, ID, ST, VT, x == y)                                                             \
    PRED_LOOPS(ne, ID, ST, VT, x != y)                                                             \
    PRED_LOOPS(lt, ID, ST, VT, x < y)                                                              \
    PRED_LOOPS(le, ID, ST, VT, x <= y)                                                             \
    PRED_LOOPS(gt, ID, ST, VT, x > y)                                                              \
    PRED_LOOPS(ge, ID, ST, VT, x >= y)                                                             \
    PRED_LOOPS(land, ID, ST, VT, (x != 0) && (y != 0))                                             \
    PRED_LOOPS(lor, ID, ST, VT, (x != 0) || (y != 0))                                              \
    PRED_LOOPS(lxor, ID, ST, VT, (x != 0) != (y != 0))
K_DTYPES(PRED_OPS)

/* ---- the loop table ------------------------------------------------------------------------ */

enum { OP_ADD_FMA = FX_BINOP_COUNT, OP_POW_SCALAR, NLOOPS }; /* extra rows of the table */
/* [op][dtype][0 tensor-tensor, 1 tensor-scalar]; NULL = the dtype is not supported. */
static fx_iter_loop k_bin_loops[NLOOPS][FX_DTYPE_COUNT][2];

#define SET_ROW(OP, NAME, ID)                                                                      \
    do {                                                                                           \
        k_bin_loops[OP][FX_DTYPE_##ID][0] = NAME##_tt_##ID;                                        \
        k_bin_loops[OP][FX_DTYPE_##ID][1] = NAME##_ts_##ID;                                        \
    } while (0)
#define SET_F(OP, NAME)                                                                            \
    do {                                                                                           \
        SET_ROW(OP, NAME, F32);                                                                    \
        SET_ROW(OP, NAME, F64);                                                                    \
        SET_ROW(OP, NAME, F16);                                                                    \
        SET_ROW(OP, NAME, BF16);                                                                   \
    } while (0)
#define SET_I(OP, NAME)                                                                            \
    do {                                                                                           \
        SET_ROW(OP, NAME, I64);                                                                    \
        SET_ROW(OP, NAME, I32);                                                                    \
        SET_ROW(OP, NAME, I16);                                                                    \
        SET_ROW(OP, NAME, I8);                                                                     \
        SET_ROW(OP, NAME, U8);                                                                     \
    } while (0)
#define SET_ALL(OP, NAME)                                                                          \
    do {                                                                                           \
        SET_F(OP, NAME);                                                                           \
        SET_I(OP, NAME);                                                                           \
        SET_ROW(OP, NAME, BOOL);                                                                   \
    } while (0)

/* Fills the table once (idempotent: every thread writes the same values). */
static void init_bin_loops(void) {
    static volatile int ready;
    if (ready) return;
    SET_ALL(FX_BINOP_ADD, add);
    SET_F(OP_ADD_FMA, addf);
    SET_I(OP_ADD_FMA, add);
    SET_ROW(OP_ADD_FMA, add, BOOL);
    SET_ALL(FX_BINOP_MUL, mul);
    SET_F(FX_BINOP_DIV, div);
    SET_F(FX_BINOP_TRUNC, trunc);
    SET_I(FX_BINOP_TRUNC, trunc);
    SET_F(FX_BINOP_FLOOR, floor);
    SET_I(FX_BINOP_FLOOR, floor);
    SET_F(FX_BINOP_REM, rem);
    SET_I(FX_BINOP_REM, rem);
    SET_F(FX_BINOP_POW, pow);
    SET_I(FX_BINOP_POW, pow);
    SET_ALL(FX_BINOP_MAX, max);
    SET_ALL(FX_BINOP_MIN, min);
    SET_I(FX_BINOP_BAND, band);
    SET_ROW(FX_BINOP_BAND, band, BOOL);
    SET_I(FX_BINOP_BOR, bor);
    SET_ROW(FX_BINOP_BOR, bor, BOOL);
    SET_I(FX_BINOP_BXOR, bxor);
    SET_ROW(FX_BINOP_BXOR, bxor, BOOL);
    SET_I(FX_BINOP_SHL, shl);
    SET_I(FX_BINOP_SHR, shr);
    SET_ALL(FX_BINOP_EQ, eq);
    SET_ALL(FX_BINOP_NE, ne);
    SET_ALL(FX_BINOP_LT, lt);
    SET_ALL(FX_BINOP_LE, le);
    SET_ALL(FX_BINOP_GT, gt);
    SET_ALL(FX_BINOP_GE, ge);
    SET_ALL(FX_BINOP_LAND, land);
    SET_ALL(FX_BINOP_LOR, lor);
    SET_ALL(FX_BINOP_LXOR, lxor);
    /* pow with a scalar exponent: the special-cased float loops, powi for integers */
    k_bin_loops[OP_POW_SCALAR][FX_DTYPE_F32][1] = powts_F32;
    k_bin_loops[OP_POW_SCALAR][FX_DTYPE_F64][1] = powts_F64;
    k_bin_loops[OP_POW_SCALAR][FX_DTYPE_F16][1] = powts_F16;
    k_bin_loops[OP_POW_SCALAR][FX_DTYPE_BF16][1] = powts_BF16;
    for (int d = FX_DTYPE_I64; d <= FX_DTYPE_U8; d++)
        k_bin_loops[OP_POW_SCALAR][d][1] = k_bin_loops[FX_BINOP_POW][d][1];
    ready = 1;
}
_Static_assert(FX_DTYPE_F32 == 0 && FX_DTYPE_BF16 == 3 && FX_DTYPE_U8 == 8 && FX_DTYPE_BOOL == 9,
               "loop tables follow fx_dtype order");

/* ---- neg ---------------------------------------------------------------------------------- */

#define NEG_LOOP(ID, ST, VT, EXPR)                                                                 \
    static void neg_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {                 \
        (void)ud;                                                                                  \
        if (st[0] == (int64_t)sizeof(ST) && st[1] == (int64_t)sizeof(ST)) {                        \
            ST *o = (ST *)p[0];                                                                    \
            const ST *pa = (const ST *)p[1];                                                       \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                  \
                const VT x = K_LOAD_##ID(pa + i);                                                  \
                K_STORE(ID, ST, o + i, (EXPR));                                                    \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const VT x = K_LOAD_##ID(p[1] + i * st[1]);                                        \
                K_STORE(ID, ST, p[0] + i * st[0], (EXPR));                                         \
            }                                                                                      \
        }                                                                                          \
    }
NEG_LOOP(F32, float, float, -x)
NEG_LOOP(F64, double, double, -x)
NEG_LOOP(F16, uint16_t, float, -x)
NEG_LOOP(BF16, uint16_t, float, -x)
NEG_LOOP(I64, int64_t, int64_t, (int64_t)(0 - IW(x)))
NEG_LOOP(I32, int32_t, int32_t, (int64_t)(0 - IW(x)))
NEG_LOOP(I16, int16_t, int16_t, (int64_t)(0 - IW(x)))
NEG_LOOP(I8, int8_t, int8_t, (int64_t)(0 - IW(x)))
NEG_LOOP(U8, uint8_t, uint8_t, (int64_t)(0 - IW(x)))
static const fx_iter_loop k_neg_loops[FX_DTYPE_COUNT] = {
    neg_F32, neg_F64, neg_F16, neg_BF16, neg_I64, neg_I32, neg_I16, neg_I8, neg_U8, NULL};

/* ---- the kernels ---------------------------------------------------------------------------- */

static bool is_half(fx_dtype dt) { return dt == FX_DTYPE_F16 || dt == FX_DTYPE_BF16; }

/* v rounded to dtype dt and read back as double (a scalar as TensorIterator casts it). */
static double round_to(fx_dtype dt, double v) {
    if (dt == FX_DTYPE_F16) return k_h2f(k_f2h((float)v));
    if (dt == FX_DTYPE_BF16) return k_b2f(k_f2b((float)v));
    if (dt == FX_DTYPE_F32) return (float)v;
    return v;
}

/* A scalar ivalue as an int64 of the compute dtype (wrapping as the cast to the dtype does). */
static int64_t scalar_as_int(fx_dtype dt, const fx_ivalue *v) {
    uint64_t buf = 0;
    fx_k_scalar_store(dt, v, &buf);
    return fx_dtype_load_i64(dt, &buf, 0);
}

/* Any zero among the divisor's values (already in the compute dtype)? ud: {found, elsize}. */
static void zero_scan(void *ud, int64_t n, char *const *p, const int64_t *st) {
    int *state = ud;
    for (int64_t i = 0; i < n && !state[0]; i++) {
        const char *q = p[0] + i * st[0];
        switch (state[1]) {
        case 1: state[0] = *(const uint8_t *)q == 0; break;
        case 2: state[0] = *(const int16_t *)q == 0; break;
        case 4: state[0] = *(const int32_t *)q == 0; break;
        default: state[0] = *(const int64_t *)q == 0; break;
        }
    }
}

static bool has_zero(const fx_tensor *t) {
    int state[2] = {0, (int)fx_dtype_size(t->dtype)};
    fx_iter it;
    fx_iter_init(&it, t->ndim, t->sizes);
    fx_iter_add(&it, t);
    fx_iter_coalesce(&it);
    fx_iter_run_all(&it, zero_scan, state);
    return state[0] != 0;
}

/* The pow mode for an exponent e (pow_tensor_scalar_kernel): float, double and bfloat16
 * special-case 0.5, -0.5 and -1 on the scalar as given, then 2, 3 and -2 on the exponent as
 * the compute dtype holds it; half goes through pow for every exponent. */
static int pow_mode(fx_dtype C, double e) {
    if (C == FX_DTYPE_F16 || !fx_dtype_is_float(C)) return POWM_GENERAL;
    if (e == 0.5) return POWM_SQRT;
    if (e == -0.5) return POWM_RSQRT;
    if (e == -1.0) return POWM_RECIP;
    double r = round_to(C, e);
    return r == 2.0 ? POWM_SQUARE : r == 3.0 ? POWM_CUBE : r == -2.0 ? POWM_INVSQ : POWM_GENERAL;
}

/* Whether t has the plan's (broadcast) shape and is contiguous: its elements in row-major order
 * are consecutive from its data pointer. */
static bool dense_as_plan(const fx_tensor *t, const fx_binary_plan *p) {
    if (t->ndim != p->ndim || !fx_tensor_is_contiguous(t)) return false;
    for (int d = 0; d < p->ndim; d++)
        if (t->sizes[d] != p->sizes[d]) return false;
    return true;
}

/* Every op of fx_binary_plan_make (add sub rsub mul div floor_divide remainder pow maximum
 * minimum comparisons logical_* bitwise_* shifts) and their in-place twins: out[0] is the
 * fresh result or self. Operands are converted to the compute dtype first; predicates write
 * bool; a result whose dtype is not the loop's goes through a temporary (cast_outputs). */

int fx_k_binary(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_binary_plan p;
    int rc = fx_binary_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *res = out[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    init_bin_loops();
    const fx_dtype C = p.compute;
    if (fx_dtype_is_complex(C)) return fx_k_binary_complex(ctx, &p, res);
    if (p.op != FX_BINOP_DIV && C == FX_DTYPE_BOOL && !k_bin_loops[p.op][C][0])
        return fx_err_setf(ctx->err, FX_ETYPE, "\"%s\" not implemented for 'Bool'",
                           p.op == FX_BINOP_TRUNC ? "div_trunc_cpu" : "div_floor_cpu");
    if (!k_bin_loops[p.op][C][0])
        return fx_err_setf(ctx->err, FX_EINTERNAL, "no %s loop for %s", ctx->op->qualname,
                           fx_dtype_name(C));

    bin_ud u = {0, 0, 0, 0, 0};
    if (p.alpha) {
        if ((rc = fx_scalar_check(C, p.alpha, ctx->err))) return rc; /* alpha.to<scalar_t>() */
        double ad = fx_ivalue_to_f64(p.alpha);
        int64_t ai = p.alpha->tag == FX_IV_FLOAT ? (int64_t)ad : scalar_as_int(C, p.alpha);
        if (p.is_sub) ad = -ad, ai = (int64_t)(0 - (uint64_t)ai);
        u.alpha_d = round_to(C, ad);
        u.alpha_i = ai;
    }

    /* operands in the compute dtype */
    fx_tensor *tmp_a = NULL, *tmp_b = NULL, *tmp_out = NULL;
    const fx_tensor *ta = NULL, *tb = NULL;
    uint64_t a_scalar = 0;
    if (p.self->tag == FX_IV_TENSOR) {
        ta = p.self->u.t;
        if (ta->dtype != C) {
            if ((rc = fx_k_to_dtype(ta, C, &tmp_a, ctx->err))) goto done;
            ta = tmp_a;
        }
    } else {
        fx_k_scalar_store(C, p.self, &a_scalar);
    }
    /* A single-element divisor / factor of a half-type op is read in float from its original
     * dtype (TensorIterator's is_scalar(2) + original_scalar_value<opmath_t>). */
    bool opmath = is_half(C) && p.op >= FX_BINOP_MUL && p.op <= FX_BINOP_FLOOR;
    bool b_is_scalar =
        p.other->tag != FX_IV_TENSOR || (opmath && fx_tensor_numel(p.other->u.t) == 1);
    if (!b_is_scalar) {
        tb = p.other->u.t;
        if (tb->dtype != C) {
            if ((rc = fx_k_to_dtype(tb, C, &tmp_b, ctx->err))) goto done;
            tb = tmp_b;
        }
    } else if (p.other->tag == FX_IV_TENSOR) {
        const fx_tensor *o = p.other->u.t;
        u.b_d = (float)fx_dtype_load_f64(o->dtype, fx_tensor_data(o), 0);
    } else {
        double bd = fx_ivalue_to_f64(p.other);
        u.b_d = opmath                              ? (double)(float)bd
                : p.scalar_exp && C == FX_DTYPE_F32 ? bd
                                                    : round_to(C, bd);
        if (!fx_dtype_is_float(C)) u.b_i = scalar_as_int(C, p.other);
    }

    /* integer division by zero */
    if ((p.op == FX_BINOP_TRUNC || p.op == FX_BINOP_FLOOR || p.op == FX_BINOP_REM) &&
        !fx_dtype_is_float(C)) {
        bool zero = b_is_scalar ? u.b_i == 0 : has_zero(tb);
        if (zero) {
            rc = fx_err_setf(ctx->err, FX_EARG, "ZeroDivisionError");
            goto done;
        }
    }

    const fx_dtype loop_dt = FX_BINOP_IS_PREDICATE(p.op) ? FX_DTYPE_BOOL : C;
    fx_tensor *dst = res;
    if (res->dtype != loop_dt) {
        if ((rc = fx_tensor_empty(res->ndim, res->sizes, loop_dt, FX_DEVICE_CPU, &tmp_out,
                                  ctx->err)))
            goto done;
        dst = tmp_out;
    }
    int opi = p.op;
    if (p.op == FX_BINOP_ADD && fx_dtype_is_float(C) && u.alpha_d != 1 && u.alpha_d != -1)
        opi = OP_ADD_FMA;
    if (p.op == FX_BINOP_POW && b_is_scalar) {
        opi = OP_POW_SCALAR;
        u.pow_mode = p.scalar_exp ? pow_mode(C, fx_ivalue_to_f64(p.other)) : POWM_GENERAL;
    }
    fx_iter_loop loop = k_bin_loops[opi][C][b_is_scalar ? 1 : 0];
    int64_t numel = fx_tensor_numel(dst);
    if (numel <= FX_PAR_GRAIN && dense_as_plan(dst, &p) && (!ta || dense_as_plan(ta, &p)) &&
        (!tb || dense_as_plan(tb, &p))) {
        /* no broadcast, every operand dense and short (one thread, no Ctrl-C piece): the loop
         * runs once over the elements in memory order, without building an iteration (eager
         * code on small tensors) */
        int64_t es = (int64_t)fx_dtype_size(C);
        char *ptrs[3] = {fx_tensor_data(dst), ta ? fx_tensor_data(ta) : (char *)&a_scalar,
                         tb ? fx_tensor_data(tb) : NULL};
        int64_t st[3] = {(int64_t)fx_dtype_size(loop_dt), ta ? es : 0, es};
        if (numel > 0) loop(&u, numel, ptrs, st);
    } else {
        fx_iter it;
        fx_iter_init(&it, p.ndim, p.sizes);
        fx_iter_add(&it, dst);
        if (ta)
            fx_iter_add(&it, ta);
        else
            fx_iter_add_scalar(&it, &a_scalar, fx_dtype_size(C));
        if (tb) fx_iter_add(&it, tb);
        fx_iter_coalesce(&it);
        fx_iter_run_par(&it, loop, &u);
    }
    if (tmp_out) fx_k_copy_tensor(res, tmp_out);
done:
    fx_tensor_release(tmp_a);
    fx_tensor_release(tmp_b);
    fx_tensor_release(tmp_out);
    return rc;
}

/* neg / neg_: out[0] is the fresh result or self. */
int fx_k_unary(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    const fx_tensor *src = a[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    if (fx_dtype_is_complex(src->dtype)) return fx_k_unary_complex(ctx, src, res);
    fx_iter_loop fn = k_neg_loops[src->dtype];
    if (!fn)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.");
    fx_iter it;
    fx_iter_init(&it, res->ndim, res->sizes);
    fx_iter_add(&it, res);
    fx_iter_add(&it, src);
    fx_iter_coalesce(&it);
    fx_iter_run_all(&it, fn, NULL);
    return FX_OK;
}
