/* core/kernels/k_copy.c — copies with dtype conversion and broadcasting; fill and zero.
 * Layer: core (private). Kernels of clone, _to_copy, lift_fresh_copy, _unsafe_view, copy,
 * copy_, fill.Scalar, fill_.Scalar and zero_. One table of 10 x 10 conversion loops (source
 * dtype x destination dtype), each with a dense fast path the compiler vectorizes and a strided
 * path; the iteration itself is k_iter's. */
#include <string.h>

#include "core/kernels/k_cast.h"
#include "core/kernels/k_iter.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"

/* ==== conversion loops ===================================================================== */

#define DEF_COPY(SID, DID, DST, DVT)                                                               \
    static void copy_##SID##_##DID(void *ud, int64_t n, char *const *p, const int64_t *st) {       \
        (void)ud;                                                                                  \
        char *d = p[0];                                                                            \
        const char *s = p[1];                                                                      \
        if (st[0] == (int64_t)sizeof(DST) && st[1] == (int64_t)sizeof(K_ST_##SID)) {               \
            DST *dd = (DST *)d;                                                                    \
            const K_ST_##SID *ss = (const K_ST_##SID *)s;                                          \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                    \
                K_STORE(DID, DST, dd + i, K_LOAD_##SID(ss + i));                                   \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                K_STORE(DID, DST, d + i * st[0], K_LOAD_##SID(s + i * st[1]));                     \
        }                                                                                          \
    }
#define DEF_COPY_ROW(SID, SST, SVT) K_DTYPES_A(DEF_COPY, SID)
K_DTYPES(DEF_COPY_ROW)

#define COPY_ENTRY(SID, DID, DST, DVT) copy_##SID##_##DID,
#define COPY_ROW(SID, SST, SVT) {K_DTYPES_A(COPY_ENTRY, SID)},
static const fx_iter_loop k_copy_loops[FX_DTYPE_COUNT][FX_DTYPE_COUNT] = {K_DTYPES(COPY_ROW)};

/* Same dtype, any strides: a byte copy per element (memcpy when dense). */
static void copy_same(void *ud, int64_t n, char *const *p, const int64_t *st) {
    const int64_t es = *(const int64_t *)ud;
    if (st[0] == es && st[1] == es) {
        memcpy(p[0], p[1], (size_t)(n * es));
        return;
    }
    switch (es) {
    case 1:
        for (int64_t i = 0; i < n; i++) p[0][i * st[0]] = p[1][i * st[1]];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++)
            *(uint16_t *)(p[0] + i * st[0]) = *(const uint16_t *)(p[1] + i * st[1]);
        break;
    case 4:
        for (int64_t i = 0; i < n; i++)
            *(uint32_t *)(p[0] + i * st[0]) = *(const uint32_t *)(p[1] + i * st[1]);
        break;
    case 8:
        for (int64_t i = 0; i < n; i++)
            *(uint64_t *)(p[0] + i * st[0]) = *(const uint64_t *)(p[1] + i * st[1]);
        break;
    default: /* complex128 */
        for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * st[0], p[1] + i * st[1], (size_t)es);
        break;
    }
}

/* Conversions to or from a complex dtype (dtypes in ud: source, destination): through a
 * (double, double) pair, as c10::convert does; to a real dtype keeps the real part, to bool is
 * "either part nonzero". */
static void copy_complex(void *ud, int64_t n, char *const *p, const int64_t *st) {
    const fx_dtype *dts = ud;
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        fx_dtype_load_c(dts[0], p[1] + i * st[1], 0, &re, &im);
        fx_dtype_store_c(dts[1], p[0] + i * st[0], 0, re, im);
    }
}

void fx_k_copy_tensor(fx_tensor *dst, const fx_tensor *src) {
    if (!fx_tensor_data(dst) || !fx_tensor_data(src)) return;
    fx_iter it;
    fx_iter_init(&it, dst->ndim, dst->sizes);
    fx_iter_add(&it, dst);
    fx_iter_add(&it, src);
    fx_iter_coalesce(&it);
    if (src->dtype == dst->dtype && src->dtype != FX_DTYPE_BOOL) {
        int64_t es = (int64_t)fx_dtype_size(dst->dtype);
        fx_iter_run_all(&it, copy_same, &es);
    } else if (fx_dtype_is_complex(src->dtype) || fx_dtype_is_complex(dst->dtype)) {
        fx_dtype dts[2] = {src->dtype, dst->dtype};
        fx_iter_run_all(&it, copy_complex, dts);
    } else {
        fx_iter_run_all(&it, k_copy_loops[src->dtype][dst->dtype], NULL);
    }
}

void fx_k_copy_flat(fx_tensor *dst, const fx_tensor *src) {
    /* View dst's contiguous memory with src's sizes: a stack tensor borrowing dst's storage. */
    fx_tensor v = *dst;
    v.ndim = src->ndim;
    for (int d = 0; d < src->ndim; d++) v.sizes[d] = src->sizes[d];
    fx_contiguous_strides(src->ndim, src->sizes, v.strides);
    fx_k_copy_tensor(&v, src);
}

int fx_k_to_dtype(const fx_tensor *src, fx_dtype dt, fx_tensor **out, fx_err *err) {
    int rc = fx_tensor_empty(src->ndim, src->sizes, dt, FX_DEVICE_CPU, out, err);
    if (rc) return rc;
    fx_k_copy_tensor(*out, src);
    return FX_OK;
}

/* ==== fill ================================================================================= */

typedef struct fill_ud {
    uint64_t bits[2]; /* the value's bytes, in the low bytes (16 for complex128) */
    int64_t es;
} fill_ud;

static void fill_loop(void *ud, int64_t n, char *const *p, const int64_t *st) {
    const fill_ud *f = ud;
    char *d = p[0];
    switch (f->es) {
    case 1: {
        uint8_t v = (uint8_t)f->bits[0];
        if (st[0] == 1)
            memset(d, v, (size_t)n);
        else
            for (int64_t i = 0; i < n; i++) d[i * st[0]] = (char)v;
        break;
    }
    case 2: {
        uint16_t v = (uint16_t)f->bits[0];
        if (st[0] == 2)
            for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = v;
        else
            for (int64_t i = 0; i < n; i++) *(uint16_t *)(d + i * st[0]) = v;
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)f->bits[0];
        if (st[0] == 4)
            for (int64_t i = 0; i < n; i++) ((uint32_t *)d)[i] = v;
        else
            for (int64_t i = 0; i < n; i++) *(uint32_t *)(d + i * st[0]) = v;
        break;
    }
    case 8: {
        uint64_t v = f->bits[0];
        if (st[0] == 8)
            for (int64_t i = 0; i < n; i++) ((uint64_t *)d)[i] = v;
        else
            for (int64_t i = 0; i < n; i++) *(uint64_t *)(d + i * st[0]) = v;
        break;
    }
    default: /* complex128 */
        for (int64_t i = 0; i < n; i++) memcpy(d + i * st[0], f->bits, 16);
        break;
    }
}

void fx_k_scalar_store(fx_dtype dt, const fx_ivalue *v, void *dst) {
    switch (v->tag) {
    case FX_IV_INT: fx_k_store_i64(dt, dst, v->u.i); return;
    case FX_IV_BOOL: fx_k_store_i64(dt, dst, v->u.b); return;
    default: fx_k_store_f64(dt, dst, fx_ivalue_to_f64(v)); return;
    }
}

#define STORE_F64_CASE(ID, ST, VT)                                                                 \
    case FX_DTYPE_##ID: K_STORE(ID, ST, dst, v); return;
void fx_k_store_f64(fx_dtype dt, void *dst, double v) {
    switch (dt) {
        K_DTYPES(STORE_F64_CASE)
    default: fx_dtype_store_c(dt, dst, 0, v, 0); return; /* complex: (v, 0) */
    }
}
void fx_k_store_i64(fx_dtype dt, void *dst, int64_t v) {
    switch (dt) {
        K_DTYPES(STORE_F64_CASE)
    default: fx_dtype_store_c(dt, dst, 0, (double)v, 0); return;
    }
}

void fx_k_fill_value(fx_tensor *t, const fx_ivalue *v) {
    if (!fx_tensor_data(t)) return;
    fill_ud f = {{0, 0}, (int64_t)fx_dtype_size(t->dtype)};
    fx_k_scalar_store(t->dtype, v, f.bits);
    fx_iter it;
    fx_iter_init(&it, t->ndim, t->sizes);
    fx_iter_add(&it, t);
    fx_iter_coalesce(&it);
    fx_iter_run_all(&it, fill_loop, &f);
}

/* ==== kernels named in ops.def ============================================================= */

/* clone / _to_copy / lift_fresh_copy / _unsafe_view: out[0] is fresh; copy self into it
 * (same shape: elementwise; different shape, same numel: row-major order). */
int fx_k_copy_into(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *dst = out[0].u.t;
    const fx_tensor *src = a[0].u.t;
    if (fx_tensor_is_meta(dst) || fx_tensor_is_meta(src)) return FX_OK;
    bool same = dst->ndim == src->ndim;
    for (int d = 0; same && d < dst->ndim; d++) same = dst->sizes[d] == src->sizes[d];
    if (same)
        fx_k_copy_tensor(dst, src);
    else
        fx_k_copy_flat(dst, src);
    (void)ctx;
    return FX_OK;
}

/* copy(self, src): out[0] is fresh with self's shape and dtype; src broadcast into it. */
int fx_k_copy(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *dst = out[0].u.t;
    (void)ctx;
    if (fx_tensor_is_meta(dst)) return FX_OK;
    if (a[1].tag != FX_IV_TENSOR) {
        fx_k_fill_value(dst, &a[1]);
        return FX_OK;
    }
    fx_k_copy_tensor(dst, a[1].u.t);
    return FX_OK;
}

/* copy_(self, src): src broadcast into self, converted. Same data: nothing to do. */
int fx_k_copy_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t;
    (void)ctx, (void)out;
    if (fx_tensor_is_meta(self)) return FX_OK;
    if (a[1].tag != FX_IV_TENSOR) {
        fx_k_fill_value(self, &a[1]);
        return FX_OK;
    }
    const fx_tensor *src = a[1].u.t;
    if (fx_tensor_is_meta(src)) return FX_OK;
    if (src == self) return FX_OK;
    fx_k_copy_tensor(self, src);
    return FX_OK;
}

/* fill.Scalar (out[0] fresh) and fill_.Scalar (out[0] is self): every element = value. */
int fx_k_fill(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)ctx;
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    fx_k_fill_value(t, &a[1]);
    return FX_OK;
}

/* zero_(self). */
int fx_k_zero(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)ctx, (void)out;
    fx_tensor *t = a[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    fx_ivalue zero = fx_iv_int(0);
    fx_k_fill_value(t, &zero);
    return FX_OK;
}

/* resize(self, size, memory_format): out[0] (fresh, the resized geometry over a storage at least
 * as large as a dense clone of self) gets self's elements in the clone's layout at the start of
 * its storage and zeros after them, as clone + resize_ leaves the storage. */
int fx_k_resize(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    const fx_tensor *self = a[0].u.t;
    fx_tensor *res = out[0].u.t, *view = NULL;
    fx_storage *s = res->storage;
    if (s->size_bytes > 0) memset(s->data, 0, (size_t)s->size_bytes);
    if (fx_tensor_numel(self) == 0) return FX_OK;
    int64_t strides[FX_MAX_DIMS];
    fx_kb_dense_strides(self, strides);
    int rc = fx_tensor_as_strided(res, self->ndim, self->sizes, strides, 0, &view, ctx->err);
    if (rc) return rc;
    fx_kb_copy(view, self);
    fx_tensor_release(view);
    return FX_OK;
}
