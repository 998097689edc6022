/* core/meta_creation.c — meta functions of factories and copies: zeros, ones, full, empty,
 * rand, randn, arange (3 overloads), eye, tril / triu, randint, randperm, normal_ / uniform_ /
 * bernoulli (and functional forms), *_like, clone, _to_copy, lift_fresh_copy, copy, copy_.
 * Layer: core. Factories take their dtype from the dtype argument, else the default (float32),
 * except full, which infers it from the fill value (bool -> bool, int -> int64, float ->
 * float32), and arange (int64 unless an argument is a float). Fresh outputs are contiguous for
 * factories and laid out like their input for *_like / clone / _to_copy (preserve_format). */
#include <math.h>
#include <stdio.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/shape.h"

/* Reads a size list and refuses negative sizes with PyTorch's message. */
static int read_sizes(const fx_ivalue *v, int64_t *sizes, int *n, fx_err *err) {
    int rc = fx_arg_int_list(v, sizes, n, err);
    if (rc) return rc;
    for (int d = 0; d < *n; d++)
        if (sizes[d] < 0) {
            char b[160];
            return fx_err_setf(err, FX_ESHAPE,
                               "Trying to create tensor with negative dimension %lld: %s",
                               (long long)sizes[d], fx_shape_str(*n, sizes, b, sizeof b));
        }
    return FX_OK;
}

/* zeros / ones / full / empty.memory_format / rand / randn (size, [fill_value], *, dtype, ...). */
int fx_meta_factory(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int64_t sizes[FX_MAX_DIMS];
    int n, rc;
    if ((rc = read_sizes(&a[0], sizes, &n, ctx->err))) return rc;
    fx_dtype def = FX_DTYPE_DEFAULT;
    const fx_ivalue *fill = NULL;
    if (ctx->op->id == FX_OP_FULL) {
        fill = &a[1];
        def = fill->tag == FX_IV_BOOL  ? FX_DTYPE_BOOL
              : fill->tag == FX_IV_INT ? FX_DTYPE_I64
                                       : FX_DTYPE_DEFAULT;
    }
    fx_dtype dt = fx_arg_dtype_or(fx_arg(ctx, a, "dtype"), def);
    /* complex dtypes draw their real view (uniform_ / normal_ on view_as_real) */
    if (ctx->op->id == FX_OP_RAND && !fx_dtype_is_float(dt) && !fx_dtype_is_complex(dt))
        return fx_err_setf(ctx->err, FX_ETYPE, "\"check_uniform_bounds\" not implemented for '%s'",
                           fx_dtype_c10_name(dt));
    if (ctx->op->id == FX_OP_RANDN && !fx_dtype_is_float(dt) && !fx_dtype_is_complex(dt))
        return fx_err_setf(ctx->err, FX_ETYPE, "\"normal_kernel_cpu\" not implemented for '%s'",
                           fx_dtype_c10_name(dt));
    if (fill && (rc = fx_scalar_check(dt, fill, ctx->err))) return rc;
    fx_tensor *t;
    fx_device dev = fx_out_device(ctx, fx_arg(ctx, a, "device"));
    if ((rc = fx_tensor_empty(n, sizes, dt, dev, &t, ctx->err))) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* zeros_like / ones_like / empty_like / full_like (self, [fill_value,] *, dtype, layout, device,
 * pin_memory, memory_format): self's shape, dtype unless given, layout by memory_format
 * (preserve); full_like checks that fill_value fits the dtype (fill_'s Scalar::to). */
int fx_meta_like(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'input' must be Tensor",
                           ctx->op->schema.name);
    const fx_tensor *self = a[0].u.t;
    fx_dtype dt = fx_arg_dtype_or(fx_arg(ctx, a, "dtype"), self->dtype);
    int rc;
    if (ctx->op->id == FX_OP_FULL_LIKE && (rc = fx_scalar_check(dt, &a[1], ctx->err))) return rc;
    fx_memfmt mf = fx_arg_memfmt(fx_arg(ctx, a, "memory_format"), FX_MEMFMT_PRESERVE);
    int64_t strides[FX_MAX_DIMS];
    fx_memfmt_strides(self, mf, strides);
    fx_tensor *t;
    fx_device dev = fx_out_device(ctx, fx_arg(ctx, a, "device"));
    rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, dt, dev, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* ---- arange ---------------------------------------------------------------------------------- */

/* The length of arange(start, end, step) in dtype dt, with RangeFactories.cpp's checks. */
static int arange_len(const fx_opctx *ctx, const fx_ivalue *s, const fx_ivalue *e,
                      const fx_ivalue *st, fx_dtype dt, int64_t *len) {
    fx_err *err = ctx->err;
    double ds = fx_ivalue_to_f64(s), de = fx_ivalue_to_f64(e), dstep = fx_ivalue_to_f64(st);
    int rc;
    if (dt == FX_DTYPE_BOOL)
        return fx_err_setf(err, FX_ETYPE, "\"arange_cpu\" not implemented for 'Bool'");
    /* start/end/step converted to the accumulate type (int64 for integer dtypes) */
    bool integral = !fx_dtype_is_float(dt);
    if (integral) {
        const fx_ivalue *v[3] = {s, e, st};
        for (int i = 0; i < 3; i++)
            if ((rc = fx_scalar_check(FX_DTYPE_I64, v[i], err))) return rc;
    }
    double xs = ds, xe = de, xstep = dstep;
    int64_t is = 0, ie = 0, istep = 0;
    if (integral) {
        is = s->tag == FX_IV_INT ? s->u.i : (int64_t)ds;
        ie = e->tag == FX_IV_INT ? e->u.i : (int64_t)de;
        istep = st->tag == FX_IV_INT ? st->u.i : (int64_t)dstep;
        xs = (double)is, xe = (double)ie, xstep = (double)istep;
    } else if (dt != FX_DTYPE_F64) {
        /* half types accumulate in float; float32 in double (CPU acc_type) */
        if (dt != FX_DTYPE_F32) xs = (float)ds, xe = (float)de, xstep = (float)dstep;
    }
    if (!(xstep > 0 || xstep < 0)) return fx_err_setf(err, FX_EARG, "step must be nonzero");
    if (!isfinite(xs) || !isfinite(xe)) {
        char b1[40], b2[40];
        snprintf(b1, sizeof b1, "%g", xs);
        snprintf(b2, sizeof b2, "%g", xe);
        return fx_err_setf(err, FX_EARG, "unsupported range: %s -> %s", b1, b2);
    }
    if (!((xstep > 0 && xe >= xs) || (xstep < 0 && xe <= xs)))
        return fx_err_setf(err, FX_EARG,
                           "upper bound and larger bound inconsistent with step sign");
    double size_d;
    if (dt == FX_DTYPE_I64) {
        int64_t sgn = (istep > 0) - (istep < 0);
        size_d = ceil((double)((ie - is + istep - sgn) / istep));
    } else {
        size_d = ceil((de - ds) / dstep);
    }
    if (!(size_d >= 0 && size_d <= 9.2233720368547758e18))
        return fx_err_setf(err, FX_EARG, "invalid size, possible overflow?");
    *len = (int64_t)size_d;
    return FX_OK;
}

int fx_arange_args(const fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *v) {
    switch (ctx->op->id) {
    case FX_OP_ARANGE: v[0] = fx_iv_int(0), v[1] = a[0], v[2] = fx_iv_int(1); break;
    case FX_OP_ARANGE_START: v[0] = a[0], v[1] = a[1], v[2] = fx_iv_int(1); break;
    default: v[0] = a[0], v[1] = a[1], v[2] = a[2]; break;
    }
    static const char *const names[3] = {"start", "end", "step"};
    for (int i = 0; i < 3; i++)
        if (!fx_ivalue_is_scalar(&v[i]))
            return fx_err_setf(ctx->err, FX_EARG, "arange(): argument '%s' must be Number",
                               names[i]);
    return FX_OK;
}

/* arange(end), arange.start(start, end), arange.start_step(start, end, step=1), each with
 * *, dtype, ...: 1-d, int64 unless a bound is a float. */
int fx_meta_arange(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_ivalue v[3];
    int rc = fx_arange_args(ctx, a, v);
    if (rc) return rc;
    bool any_float = v[0].tag == FX_IV_FLOAT || v[1].tag == FX_IV_FLOAT || v[2].tag == FX_IV_FLOAT;
    fx_dtype dt =
        fx_arg_dtype_or(fx_arg(ctx, a, "dtype"), any_float ? FX_DTYPE_DEFAULT : FX_DTYPE_I64);
    int64_t len;
    if ((rc = arange_len(ctx, &v[0], &v[1], &v[2], dt, &len))) return rc;
    fx_tensor *t;
    fx_device dev = fx_out_device(ctx, fx_arg(ctx, a, "device"));
    if ((rc = fx_tensor_empty(1, &len, dt, dev, &t, ctx->err))) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* ---- eye, tril / triu --------------------------------------------------------------------- */

/* eye(n, *, dtype, ...) and eye.m(n, m, *, dtype, ...): an n x m matrix (default float32). */
int fx_meta_eye(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int64_t sz[2] = {a[0].u.i, ctx->op->id == FX_OP_EYE_M ? a[1].u.i : a[0].u.i};
    if (sz[0] < 0)
        return fx_err_setf(ctx->err, FX_EARG, "n must be greater or equal to 0, got %lld",
                           (long long)sz[0]);
    if (sz[1] < 0)
        return fx_err_setf(ctx->err, FX_EARG, "m must be greater or equal to 0, got %lld",
                           (long long)sz[1]);
    fx_dtype dt = fx_arg_dtype_or(fx_arg(ctx, a, "dtype"), FX_DTYPE_DEFAULT);
    fx_tensor *t;
    fx_device dev = fx_out_device(ctx, fx_arg(ctx, a, "device"));
    int rc = fx_tensor_empty(2, sz, dt, dev, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* tril / triu (a fresh contiguous copy, as LEGACY_CONTIGUOUS_MEMORY_FORMAT) and tril_ / triu_
 * (self): the input needs at least 2 dims. */
int fx_meta_tril(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'input' must be Tensor",
                           ctx->op->schema.name);
    fx_tensor *self = a[0].u.t;
    fx_op_id id = ctx->op->id;
    bool lower = id == FX_OP_TRIL || id == FX_OP_TRIL_;
    if (self->ndim < 2)
        return fx_err_setf(ctx->err, FX_ESHAPE, "%s: input tensor must have at least 2 dimensions",
                           lower ? "tril" : "triu");
    if (id == FX_OP_TRIL_ || id == FX_OP_TRIU_) {
        out[0] = fx_iv_tensor(self);
        return FX_OK;
    }
    fx_tensor *t;
    int rc = fx_tensor_empty(self->ndim, self->sizes, self->dtype, ctx->device, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* ---- randomness ----------------------------------------------------------------------------- */

/* random_'s check_from_to for [low, high) in dtype dt. */
static int check_from_to(const fx_opctx *ctx, int64_t low, int64_t high, fx_dtype dt) {
    fx_err *err = ctx->err;
    if (low >= high)
        return fx_err_setf(err, FX_EARG,
                           "random_ expects 'from' to be less than 'to', but got from=%lld >= "
                           "to=%lld",
                           (long long)low, (long long)high);
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    switch (dt) {
    case FX_DTYPE_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case FX_DTYPE_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case FX_DTYPE_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case FX_DTYPE_U8: lo = 0, hi = UINT8_MAX; break;
    case FX_DTYPE_BOOL: lo = 0, hi = 1; break;
    case FX_DTYPE_F32: lo = -(1ll << 24), hi = 1ll << 24; break;
    case FX_DTYPE_F16: lo = -(1ll << 11), hi = 1ll << 11; break;
    case FX_DTYPE_BF16: lo = -(1ll << 8), hi = 1ll << 8; break;
    case FX_DTYPE_F64: lo = -(1ll << 53), hi = 1ll << 53; break;
    default: break;
    }
    if (low < lo || low > hi)
        return fx_err_setf(err, FX_EARG, "from is out of bounds for %s", fx_typemeta_name(dt));
    if (high - 1 < lo || high - 1 > hi)
        return fx_err_setf(err, FX_EARG, "to - 1 is out of bounds for %s", fx_typemeta_name(dt));
    return FX_OK;
}

/* randint(high, size, *, dtype=long, ...) / randint.low(low, high, size, ...). */
int fx_meta_randint(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    bool low_form = ctx->op->id == FX_OP_RANDINT_LOW;
    int64_t low = low_form ? a[0].u.i : 0, high = a[low_form ? 1 : 0].u.i;
    int64_t sizes[FX_MAX_DIMS];
    int n, rc;
    if ((rc = read_sizes(&a[low_form ? 2 : 1], sizes, &n, ctx->err))) return rc;
    fx_dtype dt = fx_arg_dtype_or(fx_arg(ctx, a, "dtype"), FX_DTYPE_I64);
    if ((rc = check_from_to(ctx, low, high, dt))) return rc;
    fx_tensor *t;
    fx_device dev = fx_out_device(ctx, fx_arg(ctx, a, "device"));
    if ((rc = fx_tensor_empty(n, sizes, dt, dev, &t, ctx->err))) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* randperm(n, *, dtype=long, ...): a 1-d permutation of 0..n-1. */
int fx_meta_randperm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int64_t n = a[0].u.i;
    int nd, rc;
    if ((rc = read_sizes(&a[0], &n, &nd, ctx->err))) return rc;
    fx_dtype dt = fx_arg_dtype_or(fx_arg(ctx, a, "dtype"), FX_DTYPE_I64);
    if (dt == FX_DTYPE_BOOL)
        return fx_err_setf(ctx->err, FX_ETYPE, "\"randperm\" not implemented for 'Bool'");
    /* check_supported_max_int_with_precision */
    if (dt == FX_DTYPE_F16 && n > (1ll << 11) + 1)
        return fx_err_setf(ctx->err, FX_EARG, "n cannot be greater than 2049 for Half type.");
    if (dt == FX_DTYPE_F32 && n > (1ll << 24) + 1)
        return fx_err_setf(ctx->err, FX_EARG, "n cannot be greater than 2^24+1 for Float type.");
    if (dt == FX_DTYPE_F64 && n > (1ll << 53) + 1)
        return fx_err_setf(ctx->err, FX_EARG, "n cannot be greater than 2^53+1 for Double type.");
    fx_tensor *t;
    fx_device dev = fx_out_device(ctx, fx_arg(ctx, a, "device"));
    if ((rc = fx_tensor_empty(1, &n, dt, dev, &t, ctx->err))) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* normal_ / normal_functional (mean, std), uniform_ / uniform (from, to), bernoulli (p = self),
 * bernoulli.p / bernoulli_.float (p): the in-place forms return self, the functional forms a
 * fresh tensor like self. Checks as the CPU kernels: floating dtypes for normal / uniform /
 * bernoulli(self), std >= 0, from <= to, 0 <= p <= 1. */
int fx_meta_random_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_err *err = ctx->err;
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "%s(): argument 'self' must be Tensor",
                           ctx->op->schema.name);
    fx_tensor *self = a[0].u.t;
    fx_op_id id = ctx->op->id;
    const char *cn = fx_dtype_c10_name(self->dtype);
    bool fp = fx_dtype_is_float(self->dtype);
    char b1[40], b2[40];
    switch (id) {
    case FX_OP_NORMAL_:
    case FX_OP_NORMAL_FUNCTIONAL: {
        double sd = fx_ivalue_to_f64(&a[2]);
        if (!(sd >= 0.0)) {
            snprintf(b1, sizeof b1, "%g", sd);
            return fx_err_setf(err, FX_EARG, "normal expects std >= 0.0, but found std %s", b1);
        }
        if (!fp)
            return fx_err_setf(err, FX_ETYPE, "\"normal_kernel_cpu\" not implemented for '%s'", cn);
        break;
    }
    case FX_OP_UNIFORM_:
    case FX_OP_UNIFORM: {
        if (!fp)
            return fx_err_setf(err, FX_ETYPE, "\"check_uniform_bounds\" not implemented for '%s'",
                               cn);
        double from = fx_ivalue_to_f64(&a[1]), to = fx_ivalue_to_f64(&a[2]);
        if (from > to) {
            snprintf(b1, sizeof b1, "%g", from);
            snprintf(b2, sizeof b2, "%g", to);
            return fx_err_setf(err, FX_EARG,
                               "uniform_ expects to return a [from, to) range, but found from=%s "
                               "> to=%s",
                               b1, b2);
        }
        break;
    }
    case FX_OP_BERNOULLI:
        if (!fp)
            return fx_err_setf(err, FX_ETYPE,
                               "\"bernoulli_tensor_cpu_p_\" not implemented for '%s'", cn);
        break;
    default: { /* bernoulli.p, bernoulli_.float */
        double pv = fx_ivalue_to_f64(&a[1]);
        if (!(pv >= 0 && pv <= 1)) {
            snprintf(b1, sizeof b1, "%g", pv);
            return fx_err_setf(err, FX_EARG, "bernoulli_ expects p to be in [0, 1], but got p=%s",
                               b1);
        }
        break;
    }
    }
    if (id == FX_OP_NORMAL_ || id == FX_OP_UNIFORM_ || id == FX_OP_BERNOULLI__FLOAT) {
        out[0] = fx_iv_tensor(self);
        return FX_OK;
    }
    int64_t strides[FX_MAX_DIMS];
    fx_layout_like(self, strides);
    fx_tensor *t;
    int rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, self->dtype, ctx->device, &t,
                                     err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* ---- copies ---------------------------------------------------------------------------------- */

static int fresh_like(const fx_opctx *ctx, const fx_tensor *self, fx_dtype dt, fx_memfmt mf,
                      fx_device dev, fx_ivalue *out) {
    int64_t strides[FX_MAX_DIMS];
    fx_memfmt_strides(self, mf, strides);
    fx_tensor *t;
    int rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, dt, dev, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

static int need_tensor(const fx_opctx *ctx, const fx_ivalue *v, const char *name) {
    if (v->tag == FX_IV_TENSOR) return FX_OK;
    return fx_err_setf(ctx->err, FX_EARG, "%s(): argument '%s' must be Tensor",
                       ctx->op->schema.name, name);
}

/* clone(self, *, memory_format) and lift_fresh_copy(self): a fresh copy laid out like self. */
int fx_meta_clone(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int rc = need_tensor(ctx, &a[0], "self");
    if (rc) return rc;
    fx_memfmt mf = fx_arg_memfmt(fx_arg(ctx, a, "memory_format"), FX_MEMFMT_PRESERVE);
    return fresh_like(ctx, a[0].u.t, a[0].u.t->dtype, mf, ctx->device, out);
}

/* _to_copy(self, *, dtype, layout, device, pin_memory, non_blocking, memory_format). */
int fx_meta_to_copy(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int rc = need_tensor(ctx, &a[0], "self");
    if (rc) return rc;
    const fx_tensor *self = a[0].u.t;
    fx_dtype dt = fx_arg_dtype_or(fx_arg(ctx, a, "dtype"), self->dtype);
    fx_memfmt mf = fx_arg_memfmt(fx_arg(ctx, a, "memory_format"), FX_MEMFMT_PRESERVE);
    return fresh_like(ctx, self, dt, mf, fx_out_device(ctx, fx_arg(ctx, a, "device")), out);
}

/* Broadcast check of src into dst's shape, as TensorIterator with resize_outputs(false); a
 * meta source cannot fill a tensor with data (copy_impl's check). */
static int check_into(const fx_opctx *ctx, const fx_tensor *dst, const fx_ivalue *src) {
    if (src->tag != FX_IV_TENSOR) return FX_OK;
    int64_t shape[FX_MAX_DIMS];
    int n, rc;
    const fx_tensor *s = src->u.t;
    /* only when data would move: a meta-mode dispatch (shape propagation, e.g. while
     * functionalizing a graph traced with real values) copies nothing */
    if (ctx->ctx->mode != FX_MODE_META && fx_tensor_is_meta(s) && !fx_tensor_is_meta(dst))
        return fx_err_setf(ctx->err, FX_EARG, "Cannot copy out of meta tensor; no data!");
    if ((rc = fx_broadcast_shape(dst->ndim, dst->sizes, s->ndim, s->sizes, &n, shape, ctx->err)))
        return rc;
    return fx_check_inplace_shape(dst->ndim, dst->sizes, n, shape, ctx->err);
}

/* copy(self, src, non_blocking): functional copy_ — a fresh tensor with self's shape, dtype
 * and strides (clone_preserve_strides; dense strides when self is expanded) holding src
 * broadcast and cast. */
int fx_meta_copy(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int rc = need_tensor(ctx, &a[0], "self");
    if (rc) return rc;
    const fx_tensor *self = a[0].u.t;
    if ((rc = check_into(ctx, self, &a[1]))) return rc;
    int64_t strides[FX_MAX_DIMS];
    if (fx_tensor_has_internal_overlap(self))
        fx_layout_like(self, strides);
    else
        for (int d = 0; d < self->ndim; d++) strides[d] = self->strides[d];
    fx_tensor *t;
    rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, self->dtype, ctx->device, &t,
                                 ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* copy_(self, src, non_blocking): self, after PyTorch's checks (internal overlap of self,
 * partial overlap with src, broadcast of src to self's shape). Copying a tensor onto the same
 * data is a no-op that skips the checks, as copy_impl does. */
int fx_meta_copy_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int rc = need_tensor(ctx, &a[0], "self");
    if (rc) return rc;
    fx_tensor *self = a[0].u.t;
    const fx_ivalue *src = &a[1];
    bool same_data = false;
    if (src->tag == FX_IV_TENSOR) {
        const fx_tensor *s = src->u.t;
        same_data = s == self || (s->storage == self->storage && s->offset == self->offset &&
                                  s->dtype == self->dtype && s->ndim == self->ndim);
        for (int d = 0; same_data && d < s->ndim; d++)
            same_data = s->sizes[d] == self->sizes[d] && s->strides[d] == self->strides[d];
    }
    if (!same_data) {
        if ((rc = fx_check_no_internal_overlap(self, ctx->err))) return rc;
        if (src->tag == FX_IV_TENSOR &&
            (rc = fx_check_no_partial_overlap(self, src->u.t, ctx->err)))
            return rc;
        if ((rc = check_into(ctx, self, src))) return rc;
    }
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}
