/* core/kernels/k_creation.c — kernels of the factories: zeros, ones, full, empty, *_like,
 * arange, eye, tril / triu.
 * Layer: core (private). The meta functions made the (fresh) outputs; these fill them. empty
 * and empty_like zero their memory (PyTorch leaves it uninitialised; zeros keep runs
 * reproducible and valgrind quiet). */
#include <string.h>

#include "core/kernels/k_cast.h"
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

/* zeros, ones, full, empty.memory_format, zeros_like, ones_like, empty_like, full_like. */
int fx_k_fill_factory(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    fx_ivalue v;
    switch (ctx->op->id) {
    case FX_OP_ONES:
    case FX_OP_ONES_LIKE: v = fx_iv_int(1); break;
    case FX_OP_FULL:
    case FX_OP_FULL_LIKE: v = a[1]; break;
    default: /* zeros, empty: the storage is fresh, clear all of it */
        if (t->storage->data) memset(t->storage->data, 0, (size_t)t->storage->size_bytes);
        return FX_OK;
    }
    fx_k_fill_value(t, &v);
    return FX_OK;
}

#define ARANGE_FLOAT(ID, ST, ACC)                                                                  \
    static void arange_##ID(ST *o, int64_t n, double start, double step) {                         \
        const ACC s = (ACC)start, d = (ACC)step;                                                   \
        for (int64_t i = 0; i < n; i++) K_STORE(ID, ST, o + i, s + d * (ACC)i);                    \
    }
ARANGE_FLOAT(F32, float, double)
ARANGE_FLOAT(F64, double, double)
ARANGE_FLOAT(F16, uint16_t, float)
ARANGE_FLOAT(BF16, uint16_t, float)

#define ARANGE_INT(ID, ST)                                                                         \
    static void arange_##ID(ST *o, int64_t n, int64_t start, int64_t step) {                       \
        for (int64_t i = 0; i < n; i++)                                                            \
            K_STORE(ID, ST, o + i, (int64_t)((uint64_t)start + (uint64_t)step * (uint64_t)i));     \
    }
ARANGE_INT(I64, int64_t)
ARANGE_INT(I32, int32_t)
ARANGE_INT(I16, int16_t)
ARANGE_INT(I8, int8_t)
ARANGE_INT(U8, uint8_t)

static int64_t as_i64(const fx_ivalue *v) {
    return v->tag == FX_IV_INT ? v->u.i : v->tag == FX_IV_BOOL ? v->u.b : (int64_t)v->u.f;
}

/* arange (every overload): out[i] = start + step * i in the accumulate type (double for
 * float32 and float64, float for the half types, int64 for integers), then cast. */
int fx_k_arange(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    fx_ivalue v[3];
    int rc = fx_arange_args(ctx, a, v);
    if (rc) return rc;
    int64_t n = fx_tensor_numel(t);
    void *o = fx_tensor_data(t);
    double ds = fx_ivalue_to_f64(&v[0]), dstep = fx_ivalue_to_f64(&v[2]);
    int64_t is = as_i64(&v[0]), istep = as_i64(&v[2]);
    switch (t->dtype) {
    case FX_DTYPE_F32: arange_F32(o, n, ds, dstep); break;
    case FX_DTYPE_F64: arange_F64(o, n, ds, dstep); break;
    case FX_DTYPE_F16: arange_F16(o, n, ds, dstep); break;
    case FX_DTYPE_BF16: arange_BF16(o, n, ds, dstep); break;
    case FX_DTYPE_I64: arange_I64(o, n, is, istep); break;
    case FX_DTYPE_I32: arange_I32(o, n, is, istep); break;
    case FX_DTYPE_I16: arange_I16(o, n, is, istep); break;
    case FX_DTYPE_I8: arange_I8(o, n, is, istep); break;
    case FX_DTYPE_U8: arange_U8(o, n, is, istep); break;
    default: break;
    }
    return FX_OK;
}

/* eye / eye.m: zeros with ones on the main diagonal (out[0] fresh and contiguous). */
int fx_k_eye(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)ctx, (void)a;
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    const int64_t es = (int64_t)fx_dtype_size(t->dtype);
    char *o = fx_tensor_data(t);
    memset(o, 0, (size_t)(fx_tensor_numel(t) * es));
    int64_t n = t->sizes[0] < t->sizes[1] ? t->sizes[0] : t->sizes[1];
    fx_ivalue one = fx_iv_int(1);
    for (int64_t i = 0; i < n; i++)
        fx_k_scalar_store(t->dtype, &one, o + (i * t->strides[0] + i * t->strides[1]) * es);
    return FX_OK;
}

/* tril / triu (out[0] fresh: a copy of self with the other triangle zeroed) and tril_ / triu_
 * (self: the other triangle zeroed in place). Element (..., i, j) is kept when j - i <= k
 * (tril) or j - i >= k (triu), k the diagonal. */
int fx_k_tril(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    const fx_tensor *self = a[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    const fx_op_id id = ctx->op->id;
    const bool lower = id == FX_OP_TRIL || id == FX_OP_TRIL_;
    const int64_t k = a[1].u.i;
    if (res != self) fx_k_copy_tensor(res, self);
    const int nd = res->ndim;
    const int64_t es = (int64_t)fx_dtype_size(res->dtype);
    const int64_t R = res->sizes[nd - 2], C = res->sizes[nd - 1];
    const int64_t rs = res->strides[nd - 2] * es, cs = res->strides[nd - 1] * es;
    int64_t batch = 1, idx[FX_MAX_DIMS] = {0};
    for (int d = 0; d < nd - 2; d++) batch *= res->sizes[d];
    if (R == 0 || C == 0) return FX_OK;
    for (int64_t b = 0; b < batch; b++) {
        char *base = (char *)fx_tensor_data(res) + fx_index_offset(nd - 2, idx, res->strides) * es;
        for (int64_t i = 0; i < R; i++) {
            /* the columns to zero: j > i + k (tril) or j < i + k (triu) */
            int64_t j0 = lower ? i + k + 1 : 0, j1 = lower ? C : i + k;
            if (j0 < 0) j0 = 0;
            if (j1 > C) j1 = C;
            for (int64_t j = j0; j < j1; j++) memset(base + i * rs + j * cs, 0, (size_t)es);
        }
        fx_index_next(nd - 2, res->sizes, idx, -1);
    }
    return FX_OK;
}
