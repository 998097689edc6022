/* tests/unit/ka_util.h — helpers shared by the kernels-A unit tests (header-only).
 * Layer: tests. Deterministic random tensors in several memory layouts (contiguous,
 * transposed, sliced with offset and step, expanded with stride 0), an eager dispatch context,
 * argument builders and allclose / exact comparison. Used with cmocka. */
#ifndef KA_UTIL_H
#define KA_UTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"
#include "core/kernels/k_ref.h"
#include "core/tensor_impl.h"

enum { KA_CONTIG, KA_TRANSPOSED, KA_SLICED, KA_EXPANDED, KA_NLAYOUTS };
static const char *const ka_layout_names[] = {"contiguous", "transposed", "sliced", "expanded"};

static const fx_dtype ka_all_dtypes[] = {FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_F16, FX_DTYPE_BF16,
                                         FX_DTYPE_I64, FX_DTYPE_I32, FX_DTYPE_I16, FX_DTYPE_I8,
                                         FX_DTYPE_U8,  FX_DTYPE_BOOL};
#define KA_NDTYPES 10

static uint64_t ka_seed = 88172645463325252ull;
static inline uint64_t ka_rand(void) { /* xorshift64 */
    ka_seed ^= ka_seed << 13;
    ka_seed ^= ka_seed >> 7;
    ka_seed ^= ka_seed << 17;
    return ka_seed;
}

/* A random value for dtype dt: floats in [-8, 8) with a fraction, ints in [-50, 50] (uint8
 * [0, 100]), bools 0/1; never 0 when nonzero. */
static inline double ka_value(fx_dtype dt, int nonzero) {
    for (;;) {
        double v;
        if (dt == FX_DTYPE_BOOL) v = (double)(ka_rand() & 1);
        else if (dt == FX_DTYPE_U8) v = (double)(ka_rand() % 101);
        else if (fx_dtype_is_int(dt)) v = (double)(int64_t)(ka_rand() % 101) - 50;
        else v = (double)(ka_rand() % 4096) / 256.0 - 8.0 + (double)(ka_rand() % 7) / 7.0;
        if (!nonzero || v != 0) return v;
    }
}

/* A tensor of logical shape (ndim, sizes) and dtype dt in the given layout, filled with random
 * values (the whole underlying storage is filled). New reference. */
static inline fx_tensor *ka_make(fx_dtype dt, int layout, int ndim, const int64_t *sizes,
                                 int nonzero) {
    fx_err err;
    fx_err_clear(&err);
    int64_t bs[FX_MAX_DIMS], st[FX_MAX_DIMS], off = 0;
    fx_tensor *base = NULL, *t = NULL;
    if (layout == KA_TRANSPOSED && ndim < 2) layout = KA_SLICED;
    if (layout == KA_EXPANDED && (ndim < 1 || sizes[0] == 1)) layout = KA_SLICED;
    switch (layout) {
    case KA_TRANSPOSED: /* storage holds the last two dims swapped */
        for (int d = 0; d < ndim; d++) bs[d] = sizes[d];
        bs[ndim - 1] = sizes[ndim - 2], bs[ndim - 2] = sizes[ndim - 1];
        assert_int_equal(fx_tensor_empty(ndim, bs, dt, FX_DEVICE_CPU, &base, &err), FX_OK);
        for (int d = 0; d < ndim; d++) st[d] = base->strides[d];
        st[ndim - 1] = base->strides[ndim - 2], st[ndim - 2] = base->strides[ndim - 1];
        break;
    case KA_SLICED: { /* every dim: start 1, step 2 inside a bigger base */
        for (int d = 0; d < ndim; d++) bs[d] = sizes[d] * 2 + 1;
        assert_int_equal(fx_tensor_empty(ndim, bs, dt, FX_DEVICE_CPU, &base, &err), FX_OK);
        for (int d = 0; d < ndim; d++) st[d] = base->strides[d] * 2, off += base->strides[d];
        break;
    }
    case KA_EXPANDED: /* dim 0 is a stride-0 expansion of one row */
        for (int d = 0; d < ndim; d++) bs[d] = d == 0 ? 1 : sizes[d];
        assert_int_equal(fx_tensor_empty(ndim, bs, dt, FX_DEVICE_CPU, &base, &err), FX_OK);
        for (int d = 0; d < ndim; d++) st[d] = d == 0 ? 0 : base->strides[d];
        break;
    default:
        assert_int_equal(fx_tensor_empty(ndim, sizes, dt, FX_DEVICE_CPU, &base, &err), FX_OK);
        for (int d = 0; d < ndim; d++) st[d] = base->strides[d];
        break;
    }
    int64_t cap = base->storage->size_bytes / (int64_t)fx_dtype_size(dt);
    for (int64_t i = 0; i < cap; i++)
        fx_dtype_store_f64(dt, base->storage->data, i, ka_value(dt, nonzero));
    assert_int_equal(fx_tensor_as_strided(base, ndim, sizes, st, off, &t, &err), FX_OK);
    fx_tensor_release(base);
    return t;
}

/* A contiguous tensor from doubles. */
static inline fx_tensor *ka_from(fx_dtype dt, int ndim, const int64_t *sizes, const double *v) {
    fx_err err;
    fx_tensor *t;
    assert_int_equal(fx_tensor_empty(ndim, sizes, dt, FX_DEVICE_CPU, &t, &err), FX_OK);
    int64_t n = fx_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) fx_dtype_store_f64(dt, t->storage->data, i, v[i]);
    return t;
}

/* An empty contiguous output of the same shape as t (for references). */
static inline fx_tensor *ka_empty(fx_dtype dt, int ndim, const int64_t *sizes) {
    fx_err err;
    fx_tensor *t;
    assert_int_equal(fx_tensor_zeros(ndim, sizes, dt, FX_DEVICE_CPU, &t, &err), FX_OK);
    return t;
}

static fx_ctx ka_ctx;
static inline fx_ctx *ka_eager(void) {
    fx_ctx_init(&ka_ctx, FX_MODE_EAGER);
    return &ka_ctx;
}

/* Calls op with n ivalue pointers (NULL = default); returns the status; *out the tensor. */
static inline int ka_call(fx_op_id op, fx_tensor **out, fx_err *err, int n, ...) {
    const fx_opdef *def = fx_op_get(op);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const fx_ivalue *v = va_arg(ap, const fx_ivalue *);
        if (v) args[i] = *v;
    }
    va_end(ap);
    fx_err_clear(err);
    *out = NULL;
    int rc = fx_dispatch(ka_eager(), def, args, outs, err);
    if (rc == FX_OK) {
        *out = outs[0].u.t;
        for (int i = 1; i < def->schema.nrets; i++) fx_ivalue_clear(&outs[i]);
    }
    return rc;
}

/* Asserts the call fails with exactly this message (an fx_err `err` must be in scope). */
#define KA_ERR(want, call)                                                                     \
    do {                                                                                       \
        assert_int_not_equal((call), FX_OK);                                                   \
        assert_string_equal(err.msg, (want));                                                  \
    } while (0)

/* Same shape and dtype, then exact equality for integers/bools and allclose(rtol, atol) for
 * floats (NaN equal to NaN). Prints the first mismatch. Returns 1 when equal. */
static inline int ka_close(const fx_tensor *got, const fx_tensor *exp, double rtol, double atol,
                           const char *what) {
    if (got->dtype != exp->dtype || got->ndim != exp->ndim) {
        printf("%s: dtype/ndim %s/%d, expected %s/%d\n", what, fx_dtype_name(got->dtype),
               got->ndim, fx_dtype_name(exp->dtype), exp->ndim);
        return 0;
    }
    for (int d = 0; d < got->ndim; d++)
        if (got->sizes[d] != exp->sizes[d]) {
            printf("%s: size mismatch at dim %d\n", what, d);
            return 0;
        }
    int64_t n = fx_tensor_numel(got);
    for (int64_t i = 0; i < n; i++) {
        if (fx_dtype_is_float(got->dtype)) {
            double a = fx_ref_get(got, i), b = fx_ref_get(exp, i);
            if (isnan(a) && isnan(b)) continue;
            if (a == b) continue;
            if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
                printf("%s: element %lld is %.9g, expected %.9g\n", what, (long long)i, a, b);
                return 0;
            }
        } else if (fx_ref_get_i(got, i) != fx_ref_get_i(exp, i)) {
            printf("%s: element %lld is %lld, expected %lld\n", what, (long long)i,
                   (long long)fx_ref_get_i(got, i), (long long)fx_ref_get_i(exp, i));
            return 0;
        }
    }
    return 1;
}

/* Tolerances per dtype: exact-ish for float32/64, a half-type ulp for half types. */
static inline double ka_rtol(fx_dtype dt) {
    return dt == FX_DTYPE_F16 ? 1e-3 : dt == FX_DTYPE_BF16 ? 8e-3 : dt == FX_DTYPE_F32 ? 1e-6 : 1e-12;
}

/* repr of t as a C string in a static buffer (for golden comparisons). */
static inline const char *ka_repr(const fx_tensor *t) {
    static char buf[65536];
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_tensor_format(&sb, t);
    snprintf(buf, sizeof buf, "%s", fx_strbuf_cstr(&sb));
    fx_strbuf_free(&sb);
    return buf;
}

#endif
