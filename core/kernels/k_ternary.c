/* core/kernels/k_ternary.c — kernels of where (all overloads), clamp (Scalar and Tensor
 * bounds, in-place twins) and lerp (Scalar and Tensor weight, in-place twins).
 * Layer: core (private). Values are first brought to the common dtype (converted copies,
 * scalars converted once), then one strided loop runs over the broadcast shape, split over
 * threads for large tensors. where selects bytes, so one loop per element size serves every
 * dtype. clamp follows TensorCompare's kernels: Scalar bounds keep a NaN input, a missing bound
 * makes it maximum / minimum (NaN from either side), two tensor bounds give NaN when a bound is
 * NaN. */
#include <math.h>
#include <string.h>

#include "core/kernels/k_cast.h"
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

/* ---- where ---------------------------------------------------------------------------------- */

/* p[0] out, p[1] condition (bool or uint8 bytes), p[2] self, p[3] other; all of element type T. */
#define WHERE_LOOP(T)                                                                              \
    static void where_##T(void *ud, int64_t n, char *const *p, const int64_t *st) {                \
        (void)ud;                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const T *src = *(const uint8_t *)(p[1] + i * st[1]) ? (const T *)(p[2] + i * st[2])    \
                                                                : (const T *)(p[3] + i * st[3]);   \
            *(T *)(p[0] + i * st[0]) = *src;                                                       \
        }                                                                                          \
    }
WHERE_LOOP(uint8_t)
WHERE_LOOP(uint16_t)
WHERE_LOOP(uint32_t)
WHERE_LOOP(uint64_t)
typedef struct { uint64_t lo, hi; } k_u128; /* complex128 */
WHERE_LOOP(k_u128)

/* Brings v (a tensor or a wrapped number) to dtype dt: *t is the tensor to read (a converted
 * copy in *tmp when needed), or NULL with the value stored in *buf (two words for complex128). */
static int operand_as(const fx_ivalue *v, fx_dtype dt, const fx_tensor **t, fx_tensor **tmp,
                      uint64_t *buf, fx_err *err) {
    *t = NULL;
    *tmp = NULL;
    memset(buf, 0, fx_dtype_size(dt) > 8 ? 16 : 8); /* complex128: two words (where only) */
    if (v->tag != FX_IV_TENSOR) {
        fx_k_scalar_store(dt, v, buf);
        return FX_OK;
    }
    *t = v->u.t;
    if ((*t)->dtype == dt) return FX_OK;
    int rc = fx_k_to_dtype(*t, dt, tmp, err);
    *t = *tmp;
    return rc;
}

static void add_operand(fx_iter *it, const fx_tensor *t, const uint64_t *buf, fx_dtype dt) {
    if (t)
        fx_iter_add(it, t);
    else
        fx_iter_add_scalar(it, buf, fx_dtype_size(dt));
}

/* where: out[0] is the fresh result. */
int fx_k_where(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_ternary_plan p;
    int rc = fx_where_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *res = out[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    const fx_dtype C = p.compute;
    const fx_tensor *ts = NULL, *to = NULL;
    fx_tensor *tmp_s = NULL, *tmp_o = NULL;
    uint64_t bs[2], bo[2]; /* a wrapped number in C (complex128 takes both words) */
    if ((rc = operand_as(p.ops[1], C, &ts, &tmp_s, bs, ctx->err))) goto done;
    if ((rc = operand_as(p.ops[2], C, &to, &tmp_o, bo, ctx->err))) goto done;
    fx_iter it;
    fx_iter_init(&it, p.ndim, p.sizes);
    fx_iter_add(&it, res);
    fx_iter_add(&it, p.ops[0]->u.t);
    add_operand(&it, ts, bs, C);
    add_operand(&it, to, bo, C);
    fx_iter_coalesce(&it);
    switch (fx_dtype_size(C)) {
    case 1: fx_iter_run_par(&it, where_uint8_t, NULL); break;
    case 2: fx_iter_run_par(&it, where_uint16_t, NULL); break;
    case 4: fx_iter_run_par(&it, where_uint32_t, NULL); break;
    case 8: fx_iter_run_par(&it, where_uint64_t, NULL); break;
    default: fx_iter_run_par(&it, where_k_u128, NULL); break;
    }
done:
    fx_tensor_release(tmp_s);
    fx_tensor_release(tmp_o);
    return rc;
}

/* ---- clamp ---------------------------------------------------------------------------------- */

typedef struct clamp_ud {
    int has_lo, has_hi;
    double lo_d, hi_d; /* Scalar bounds in the compute dtype */
    int64_t lo_i, hi_i;
} clamp_ud;

#define CUDV(VT, d, i) (K_IS_FP((VT)0) ? (VT)(d) : (VT)(i))
#define ISNAN(x) ((x) != (x))

/* Scalar bounds: p[0] out, p[1] self. clamp_scalar_kernel_impl: a NaN input stays NaN; one
 * bound is std::max / std::min. */
#define CLAMP_S_LOOP(ID, ST, VT)                                                                   \
    static void clamps_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {              \
        const clamp_ud *u = ud;                                                                    \
        const VT lo = CUDV(VT, u->lo_d, u->lo_i), hi = CUDV(VT, u->hi_d, u->hi_i);                 \
        for (int64_t i = 0; i < n; i++) {                                                          \
            VT x = K_LOAD_##ID(p[1] + i * st[1]);                                                  \
            if (!ISNAN(x)) {                                                                       \
                if (u->has_lo && x < lo) x = lo;                                                   \
                if (u->has_hi && hi < x) x = hi;                                                   \
            }                                                                                      \
            K_STORE(ID, ST, p[0] + i * st[0], x);                                                  \
        }                                                                                          \
    }
K_DTYPES(CLAMP_S_LOOP)

/* Tensor bounds: p[0] out, p[1] self, then the bounds given (lo, hi order). */
#define CLAMP_T_LOOP(ID, ST, VT)                                                                   \
    static void clampt_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {              \
        const clamp_ud *u = ud;                                                                    \
        const int khi = u->has_lo ? 3 : 2;                                                         \
        for (int64_t i = 0; i < n; i++) {                                                          \
            VT x = K_LOAD_##ID(p[1] + i * st[1]);                                                  \
            if (u->has_lo && u->has_hi) {                                                          \
                const VT lo = K_LOAD_##ID(p[2] + i * st[2]);                                       \
                const VT hi = K_LOAD_##ID(p[3] + i * st[3]);                                       \
                if (ISNAN(lo) || ISNAN(hi))                                                        \
                    x = lo + hi;                                                                   \
                else {                                                                             \
                    x = x < lo ? lo : x;                                                           \
                    x = hi < x ? hi : x;                                                           \
                }                                                                                  \
            } else if (u->has_lo) {                                                                \
                const VT lo = K_LOAD_##ID(p[2] + i * st[2]);                                       \
                x = (ISNAN(x) || ISNAN(lo)) ? x + lo : (x > lo ? x : lo);                          \
            } else {                                                                               \
                const VT hi = K_LOAD_##ID(p[khi] + i * st[khi]);                                   \
                x = (ISNAN(x) || ISNAN(hi)) ? x + hi : (x < hi ? x : hi);                          \
            }                                                                                      \
            K_STORE(ID, ST, p[0] + i * st[0], x);                                                  \
        }                                                                                          \
    }
K_DTYPES(CLAMP_T_LOOP)

#define LOOP_ROW(NAME)                                                                             \
    {                                                                                              \
        NAME##_F32, NAME##_F64, NAME##_F16, NAME##_BF16, NAME##_I64, NAME##_I32, NAME##_I16,       \
            NAME##_I8, NAME##_U8, NAME##_BOOL                                                      \
    }
static const fx_iter_loop k_clamps[FX_DTYPE_COUNT] = LOOP_ROW(clamps);
static const fx_iter_loop k_clampt[FX_DTYPE_COUNT] = LOOP_ROW(clampt);

/* clamp, clamp.Tensor, clamp_, clamp_.Tensor: out[0] is the fresh result or self. */
int fx_k_clamp(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_ternary_plan p;
    int rc = fx_clamp_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *res = out[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    const fx_dtype C = p.compute;
    clamp_ud u = {p.ops[1]->tag != FX_IV_NONE, p.ops[2]->tag != FX_IV_NONE, 0, 0, 0, 0};
    const fx_tensor *tv[3] = {NULL, NULL, NULL};
    fx_tensor *tmp[3] = {NULL, NULL, NULL}, *tmp_out = NULL;
    uint64_t buf[3];
    for (int i = 0; i < 3; i++) {
        if (p.ops[i]->tag == FX_IV_NONE) continue;
        if (p.scalar_form && i > 0) {
            if ((rc = fx_scalar_check(C, p.ops[i], ctx->err))) goto done;
            uint64_t v = 0;
            fx_k_scalar_store(C, p.ops[i], &v);
            double d = fx_dtype_load_f64(C, &v, 0);
            int64_t iv = fx_dtype_load_i64(C, &v, 0);
            if (i == 1)
                u.lo_d = d, u.lo_i = iv;
            else
                u.hi_d = d, u.hi_i = iv;
            continue;
        }
        if ((rc = operand_as(p.ops[i], C, &tv[i], &tmp[i], &buf[i], ctx->err))) goto done;
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
    fx_iter_add(&it, tv[0]);
    if (!p.scalar_form)
        for (int i = 1; i < 3; i++)
            if (p.ops[i]->tag != FX_IV_NONE) add_operand(&it, tv[i], &buf[i], C);
    fx_iter_coalesce(&it);
    fx_iter_run_par(&it, p.scalar_form ? k_clamps[C] : k_clampt[C], &u);
    if (tmp_out) fx_k_copy_tensor(res, tmp_out);
done:
    for (int i = 0; i < 3; i++) fx_tensor_release(tmp[i]);
    fx_tensor_release(tmp_out);
    return rc;
}

/* ---- lerp ----------------------------------------------------------------------------------- */

/* p[0] out, p[1] self, p[2] end, p[3] weight (a tensor or a broadcast scalar), all of dtype ID,
 * computed in VT (float for the half types) as Lerp.h: from self when |w| < 0.5, else from end. */
#define LERP_LOOP(ID, ST, VT)                                                                      \
    static void lerp_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {                \
        (void)ud;                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const VT s = K_LOAD_##ID(p[1] + i * st[1]), e = K_LOAD_##ID(p[2] + i * st[2]);         \
            const VT w = K_LOAD_##ID(p[3] + i * st[3]), d = e - s;                                 \
            const VT r = (w < (VT)0.5 && w > (VT)-0.5) ? s + w * d : e - d * ((VT)1 - w);          \
            K_STORE(ID, ST, p[0] + i * st[0], r);                                                  \
        }                                                                                          \
    }
LERP_LOOP(F32, float, float)
LERP_LOOP(F64, double, double)
LERP_LOOP(F16, uint16_t, float)
LERP_LOOP(BF16, uint16_t, float)

/* lerp.Scalar, lerp.Tensor, lerp_: out[0] is the fresh result or self. */
int fx_k_lerp(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_ternary_plan p;
    int rc = fx_lerp_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *res = out[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    const fx_dtype C = p.compute;
    fx_iter_loop fn = C == FX_DTYPE_F32   ? lerp_F32
                      : C == FX_DTYPE_F64 ? lerp_F64
                      : C == FX_DTYPE_F16 ? lerp_F16
                                          : lerp_BF16;
    const fx_tensor *tw = NULL;
    fx_tensor *tmp_w = NULL;
    uint64_t bw;
    if ((rc = operand_as(p.ops[2], C, &tw, &tmp_w, &bw, ctx->err))) return rc;
    fx_iter it;
    fx_iter_init(&it, p.ndim, p.sizes);
    fx_iter_add(&it, res);
    fx_iter_add(&it, p.ops[0]->u.t);
    fx_iter_add(&it, p.ops[1]->u.t);
    add_operand(&it, tw, &bw, C);
    fx_iter_coalesce(&it);
    fx_iter_run_par(&it, fn, NULL);
    fx_tensor_release(tmp_w);
    return FX_OK;
}
