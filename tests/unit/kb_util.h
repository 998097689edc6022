/* tests/unit/kb_util.h — small helpers shared by the view, index and linalg unit tests.
 * Layer: tests. Everything is static: each test file includes it once. Tensors are built from
 * doubles, laid out in the ways the tests need (contiguous, transposed, sliced with an offset,
 * expanded), ops are called through the real dispatcher, and a recorder hook lists the ops a
 * trace-mode call records (to check what a composite decomposes into). */
#ifndef KB_UTIL_H
#define KB_UTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"

/* Every helper is static and may go unused in a given test file. */
#define KB_FN static __attribute__((unused))

static fx_err kb_err;

/* A contiguous cpu tensor of `dt` holding vals[i] (row-major), or i * scale + shift when vals
 * is NULL. */
KB_FN fx_tensor *kb_tensor(fx_dtype dt, int ndim, const int64_t *sizes, const double *vals,
                            double scale, double shift) {
    fx_tensor *t = NULL;
    if (fx_tensor_empty(ndim, sizes, dt, FX_DEVICE_CPU, &t, &kb_err)) return NULL;
    int64_t n = fx_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        fx_dtype_store_f64(dt, fx_tensor_data(t), i, vals ? vals[i] : (double)i * scale + shift);
    return t;
}

/* Same values, but stored transposed: the result has sizes `sizes` and strides of a
 * contiguous tensor of the reversed shape (a .t() / permute(reversed) of a contiguous one). */
KB_FN fx_tensor *kb_transposed(fx_dtype dt, int ndim, const int64_t *sizes, double scale,
                                double shift) {
    int64_t rs[FX_MAX_DIMS] = {0}, rst[FX_MAX_DIMS], st[FX_MAX_DIMS];
    for (int d = 0; d < ndim; d++) rs[d] = sizes[ndim - 1 - d];
    fx_tensor *base = NULL, *v = NULL;
    if (fx_tensor_empty(ndim, rs, dt, FX_DEVICE_CPU, &base, &kb_err)) return NULL;
    fx_contiguous_strides(ndim, rs, rst);
    for (int d = 0; d < ndim; d++) st[d] = rst[ndim - 1 - d];
    if (fx_tensor_as_strided(base, ndim, sizes, st, 0, &v, &kb_err)) return NULL;
    fx_tensor_release(base);
    int64_t n = fx_tensor_numel(v), idx[FX_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i;
        for (int d = ndim - 1; d >= 0; d--) idx[d] = r % sizes[d], r /= sizes[d];
        fx_tensor_set_f64(v, idx, (double)i * scale + shift);
    }
    return v;
}

/* Same values in a strided view of a larger buffer: every dim has stride (2 * contiguous
 * stride) and the view starts at offset 3 — neither contiguous nor at offset 0. */
KB_FN fx_tensor *kb_gapped(fx_dtype dt, int ndim, const int64_t *sizes, double scale,
                            double shift) {
    int64_t st[FX_MAX_DIMS], big = 3 + 1;
    fx_contiguous_strides(ndim, sizes, st);
    for (int d = 0; d < ndim; d++) {
        st[d] *= 2;
        if (sizes[d] > 0) big += (sizes[d] - 1) * st[d];
    }
    fx_tensor *base = NULL, *v = NULL;
    if (fx_tensor_zeros(1, &big, dt, FX_DEVICE_CPU, &base, &kb_err)) return NULL;
    if (fx_tensor_as_strided(base, ndim, sizes, st, 3, &v, &kb_err)) return NULL;
    fx_tensor_release(base);
    int64_t n = fx_tensor_numel(v), idx[FX_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i;
        for (int d = ndim - 1; d >= 0; d--) idx[d] = r % sizes[d], r /= sizes[d];
        fx_tensor_set_f64(v, idx, (double)i * scale + shift);
    }
    return v;
}

/* A meta tensor (no data) of the given sizes. */
KB_FN fx_tensor *kb_meta(fx_dtype dt, int ndim, const int64_t *sizes) {
    fx_tensor *t = NULL;
    if (fx_tensor_empty(ndim, sizes, dt, FX_DEVICE_META, &t, &kb_err)) return NULL;
    return t;
}

/* Value at a multi-index: kb_at(t, (int64_t[]){1, 2}). */
KB_FN double kb_at(const fx_tensor *t, const int64_t *idx) { return fx_tensor_get_f64(t, idx); }

KB_FN bool kb_sizes_are(const fx_tensor *t, int ndim, const int64_t *sizes) {
    if (fx_tensor_ndim(t) != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (fx_tensor_size(t, d) != sizes[d]) return false;
    return true;
}

KB_FN bool kb_strides_are(const fx_tensor *t, int ndim, const int64_t *strides) {
    if (fx_tensor_ndim(t) != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (fx_tensor_stride(t, d) != strides[d]) return false;
    return true;
}

/* Calls op with nargs ivalue* arguments through the eager dispatcher; returns the (first)
 * result tensor (new reference) or NULL with kb_err set. */
KB_FN fx_tensor *kb_call(fx_ctx *ctx, fx_op_id op, int nargs, ...) {
    const fx_opdef *def = fx_op_get(op);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS], outs[FX_SCHEMA_MAX_RETS];
    memset(args, 0, sizeof args);
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) {
        const fx_ivalue *v = va_arg(ap, const fx_ivalue *);
        if (v) args[i] = *v;
    }
    va_end(ap);
    fx_err_clear(&kb_err);
    if (fx_dispatch(ctx, def, args, outs, &kb_err)) return NULL;
    for (int i = 1; i < def->schema.nrets; i++) fx_ivalue_clear(&outs[i]);
    return outs[0].tag == FX_IV_TENSOR ? outs[0].u.t : NULL;
}

/* A borrowed tensor ivalue (not retained: never clear it). */
KB_FN fx_ivalue kb_iv(fx_tensor *t) { return (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t}; }

/* An int-list ivalue of n int arguments (owned: clear it). */
KB_FN fx_ivalue kb_ints(int n, ...) {
    int64_t v[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) v[i] = va_arg(ap, int);
    va_end(ap);
    fx_ivalue out;
    fx_iv_int_list(n, v, &out, &kb_err);
    return out;
}

/* ---- a recorder: the qualnames of the ops a trace-mode ctx records ------------------------- */

typedef struct kb_rec {
    int n;
    char ops[64][48];
} kb_rec;

KB_FN int kb_record(void *ud, const fx_opdef *op, const fx_ivalue *args, const fx_ivalue *outs,
                     fx_err *err) {
    (void)args, (void)outs, (void)err;
    kb_rec *r = ud;
    if (r->n < 64) snprintf(r->ops[r->n++], sizeof r->ops[0], "%s", fx_op_qualname(op));
    return FX_OK;
}

/* A trace context (real values when `real`) recording into r. */
KB_FN void kb_trace_ctx(fx_ctx *ctx, kb_rec *r, bool real) {
    fx_ctx_init(ctx, FX_MODE_TRACE);
    ctx->real = real;
    ctx->record = kb_record;
    ctx->record_ud = r;
    memset(r, 0, sizeof *r);
}

/* "view.default,clone.default,..." of what r recorded. */
KB_FN const char *kb_rec_str(const kb_rec *r) {
    static char buf[2048];
    buf[0] = 0;
    for (int i = 0; i < r->n; i++) {
        if (i) strncat(buf, ",", sizeof buf - strlen(buf) - 1);
        strncat(buf, r->ops[i], sizeof buf - strlen(buf) - 1);
    }
    return buf;
}

/* ---- allocation-failure sweep ------------------------------------------------------------- */

/* Runs fn with the N-th allocation failing (and every later one), for N = 1, 2, ... until a run
 * succeeds (at most 100,000 points). Each failed run must report FX_ENOMEM and leave no block
 * behind; returns how many runs failed (at least one, or the sweep exercised nothing), or -1
 * (with the allocation named on stderr) when one leaked, gave another error or none succeeded.
 * fn returns FX_OK or the error (its message in kb_err when it has one). */
KB_FN int kb_oom_sweep(int (*fn)(void)) {
    int failures = 0;
    for (int64_t n = 1; n < 100000; n++) {
        fx_alloc_stats before = fx_alloc_get_stats();
        fx_alloc_fail_at(n, 1);
        int rc = fn();
        fx_alloc_fail_at(0, 0);
        fx_alloc_stats after = fx_alloc_get_stats();
        if (after.live_blocks != before.live_blocks) {
            fprintf(stderr, "oom sweep: %lld blocks leaked when allocation %lld failed\n",
                    (long long)(after.live_blocks - before.live_blocks), (long long)n);
            return -1;
        }
        if (rc == FX_OK) return failures;
        if (rc != FX_ENOMEM) {
            fprintf(stderr, "oom sweep: allocation %lld failed with %s: %s\n", (long long)n,
                    fx_status_name(rc), kb_err.msg);
            return -1;
        }
        failures++;
    }
    return -1;
}

/* ---- shared by the sweep tests (gather, shape_ops, nn_kernels, linalg, index, views) ---------- */

/* The eager context the tests dispatch through; kb_setup initializes it (a cmocka group setup). */
static fx_ctx g_eager __attribute__((unused));
KB_FN int kb_setup(void **state) {
    (void)state;
    fx_ctx_init(&g_eager, FX_MODE_EAGER);
    return 0;
}

/* Every dtype, for dtype sweeps. */
static const fx_dtype k_dtypes[] __attribute__((unused)) = {
    FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_F16, FX_DTYPE_BF16, FX_DTYPE_I64,
    FX_DTYPE_I32, FX_DTYPE_I16, FX_DTYPE_I8,  FX_DTYPE_U8,   FX_DTYPE_BOOL};
#define NDT 10

/* Input layouts of a sweep: contiguous, transposed, sliced with gaps, expanded (stride 0). */
enum { L_CONTIG, L_TRANS, L_GAPPED, L_EXPANDED, L_COUNT };

/* Small whole values every dtype holds exactly: element i of a tensor made with `seed`. */
KB_FN double ival(fx_dtype dt, int64_t i, int seed) {
    if (dt == FX_DTYPE_BOOL) return (double)((i * 3 + seed) % 2);
    return (double)((i * 5 + seed) % 11);
}

/* A cpu tensor of `sizes` in `layout` whose element i (row-major) is val(dt, i, seed); the
 * expanded layout broadcasts dim 0 from size 1 (stride 0), so its rows repeat row 0. New
 * reference. */
typedef double (*kb_value_fn)(fx_dtype dt, int64_t i, double seed);
KB_FN fx_tensor *kb_make_with(fx_dtype dt, int nd, const int64_t *sizes, int layout,
                              kb_value_fn val, double seed) {
    fx_tensor *t = NULL;
    if (layout == L_EXPANDED && nd > 0 && sizes[0] > 1) {
        int64_t one[FX_MAX_DIMS], st[FX_MAX_DIMS];
        memcpy(one, sizes, sizeof(int64_t) * (size_t)nd);
        one[0] = 1;
        fx_tensor *b = kb_tensor(dt, nd, one, NULL, 0, 0);
        for (int64_t i = 0; i < fx_tensor_numel(b); i++)
            fx_dtype_store_f64(dt, fx_tensor_data(b), i, val(dt, i, seed));
        memcpy(st, fx_tensor_strides(b), sizeof(int64_t) * (size_t)nd);
        st[0] = 0;
        fx_tensor_as_strided(b, nd, sizes, st, 0, &t, &kb_err);
        fx_tensor_release(b);
        return t;
    }
    t = layout == L_TRANS    ? kb_transposed(dt, nd, sizes, 0, 0)
        : layout == L_GAPPED ? kb_gapped(dt, nd, sizes, 0, 0)
                             : kb_tensor(dt, nd, sizes, NULL, 0, 0);
    int64_t n = fx_tensor_numel(t), idx[FX_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        int64_t q = i;
        for (int d = nd - 1; d >= 0; d--) idx[d] = q % sizes[d], q /= sizes[d];
        fx_tensor_set_f64(t, idx, val(dt, i, seed));
    }
    return t;
}

KB_FN double kb_ival(fx_dtype dt, int64_t i, double seed) { return ival(dt, i, (int)seed); }

/* kb_make_with the small whole values of ival. */
KB_FN fx_tensor *make(fx_dtype dt, int nd, const int64_t *sizes, int layout, int seed) {
    return kb_make_with(dt, nd, sizes, layout, kb_ival, seed);
}

/* Runs a cmocka group and fails it when core allocations are left live (a leak). */
#define kb_run(tests, setup, teardown)                                                         \
    kb_run_((tests), sizeof(tests) / sizeof((tests)[0]), #tests, (setup), (teardown))
KB_FN int kb_run_(const struct CMUnitTest *tests, size_t n, const char *name,
                  CMFixtureFunction setup, CMFixtureFunction teardown) {
    fx_registry_init(NULL); /* its schema defaults live for the process */
    fx_alloc_stats before = fx_alloc_get_stats();
    int rc = _cmocka_run_group_tests(name, tests, n, setup, teardown);
    fx_alloc_stats after = fx_alloc_get_stats();
    if (rc == 0 && after.live_blocks != before.live_blocks) {
        fprintf(stderr, "leak: %lld blocks still live\n",
                (long long)(after.live_blocks - before.live_blocks));
        return 1;
    }
    return rc;
}

#endif
