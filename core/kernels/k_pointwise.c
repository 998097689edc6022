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
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

typedef struct bin_ud {
    double alpha_d; /* alpha (negated for sub), pre-rounded to the half type for half ops */
    int64_t alpha_i;
    double b_d; /* the wrapped second operand, when it is a scalar */
    int64_t b_i;
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

/* Loop table: [op][dtype][0 tensor-tensor, 1 tensor-scalar]; NULL = not implemented. */
#define ROW_F(NAME)                                                                                \
    {                                                                                              \
        {NAME##_tt_F32, NAME##_ts_F32}, {NAME##_tt_F64, NAME##_ts_F64},                            \
            {NAME##_tt_F16, NAME##_ts_F16}, {                                                      \
            NAME##_tt_BF16, NAME##_ts_BF16                                                         \
        }
#define ROW_I(NAME)                                                                                \
    {NAME##_tt_I64, NAME##_ts_I64}, {NAME##_tt_I32, NAME##_ts_I32},                                \
        {NAME##_tt_I16, NAME##_ts_I16}, {NAME##_tt_I8, NAME##_ts_I8}, {                            \
        NAME##_tt_U8, NAME##_ts_U8                                                                 \
    }
enum { OP_ADD_FMA = 5 }; /* add with |alpha| != 1 on floating types */
static const fx_iter_loop k_bin_loops[6][FX_DTYPE_COUNT][2] = {[FX_BINOP_ADD] = ROW_F(add),
                                                               ROW_I(add),
                                                               {add_tt_BOOL, add_ts_BOOL}},
                          [OP_ADD_FMA] = ROW_F(addf), ROW_I(add), {
    add_tt_BOOL, add_ts_BOOL
}
}
, [FX_BINOP_MUL] = ROW_F(mul), ROW_I(mul), { mul_tt_BOOL, mul_ts_BOOL }
}
, [FX_BINOP_DIV] = ROW_F(div)
}
, [FX_BINOP_TRUNC] = ROW_F(trunc), ROW_I(trunc), { NULL, NULL }
}
, [FX_BINOP_FLOOR] = ROW_F(floor), ROW_I(floor), { NULL, NULL }
}
,
}
;
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

/* add/sub/mul/div and their in-place twins: out[0] is the fresh result or self. */
int fx_k_binary(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_binary_plan p;
    int rc = fx_binary_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *res = out[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    const fx_dtype C = p.compute;
    if (p.op != FX_BINOP_DIV && C == FX_DTYPE_BOOL && !k_bin_loops[p.op][C][0])
        return fx_err_setf(ctx->err, FX_ETYPE, "\"%s\" not implemented for 'Bool'",
                           p.op == FX_BINOP_TRUNC ? "div_trunc_cpu" : "div_floor_cpu");
    if (!k_bin_loops[p.op][C][0])
        return fx_err_setf(ctx->err, FX_EINTERNAL, "no %s loop for %s", ctx->op->qualname,
                           fx_dtype_name(C));

    bin_ud u = {0, 0, 0, 0};
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
    bool opmath = is_half(C) && p.op != FX_BINOP_ADD;
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
        u.b_d = opmath ? (double)(float)bd : round_to(C, bd);
        if (!fx_dtype_is_float(C)) u.b_i = scalar_as_int(C, p.other);
    }

    /* integer division by zero */
    if ((p.op == FX_BINOP_TRUNC || p.op == FX_BINOP_FLOOR) && !fx_dtype_is_float(C)) {
        bool zero = b_is_scalar ? u.b_i == 0 : has_zero(tb);
        if (zero) {
            rc = fx_err_setf(ctx->err, FX_EARG, "ZeroDivisionError");
            goto done;
        }
    }

    fx_tensor *dst = res;
    if (res->dtype != C) {
        if ((rc = fx_tensor_empty(res->ndim, res->sizes, C, FX_DEVICE_CPU, &tmp_out, ctx->err)))
            goto done;
        dst = tmp_out;
    }
    fx_iter it;
    fx_iter_init(&it, p.ndim, p.sizes);
    fx_iter_add(&it, dst);
    if (ta)
        fx_iter_add(&it, ta);
    else
        fx_iter_add_scalar(&it, &a_scalar, fx_dtype_size(C));
    if (tb) fx_iter_add(&it, tb);
    fx_iter_coalesce(&it);
    int opi = p.op;
    if (p.op == FX_BINOP_ADD && fx_dtype_is_float(C) && u.alpha_d != 1 && u.alpha_d != -1)
        opi = OP_ADD_FMA;
    fx_iter_run_all(&it, k_bin_loops[opi][C][b_is_scalar ? 1 : 0], &u);
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
