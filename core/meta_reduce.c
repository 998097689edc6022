/* core/meta_reduce.c — meta functions of the reductions: sum, mean, prod, amax, amin, max, min
 * (.default and .dim), argmax, argmin, all, any (.default, .dim, .dims), var / std
 * (.correction), and of cumsum.
 * Layer: core. Follows aten/src/ATen/native/ReduceOps.cpp and TensorCompare.cpp: dims wrap like
 * any dim argument, a dim listed twice is an error, None or an empty list reduces every dim,
 * keepdim keeps the reduced dims as size 1; sum/prod of integers or bools give int64 unless
 * dtype says otherwise; mean and var/std need a floating input; all/any give bool (uint8 for
 * uint8 input); max/argmax refuse empty reductions with zero_numel_check_dims' messages. The
 * results are fresh contiguous tensors. */
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/shape.h"

/* How an op names its reduced dims. */
enum { DIMS_ALL, DIMS_LIST, DIMS_ONE, DIMS_OPT_ONE };

static void op_kind(fx_op_id id, fx_reduce_kind *kind, int *dims) {
    switch (id) {
    case FX_OP_SUM: *kind = FX_RED_SUM, *dims = DIMS_ALL; return;
    case FX_OP_SUM_DIM_INTLIST: *kind = FX_RED_SUM, *dims = DIMS_LIST; return;
    case FX_OP_MEAN: *kind = FX_RED_MEAN, *dims = DIMS_ALL; return;
    case FX_OP_MEAN_DIM: *kind = FX_RED_MEAN, *dims = DIMS_LIST; return;
    case FX_OP_PROD: *kind = FX_RED_PROD, *dims = DIMS_ALL; return;
    case FX_OP_PROD_DIM_INT: *kind = FX_RED_PROD, *dims = DIMS_ONE; return;
    case FX_OP_AMAX: *kind = FX_RED_MAX, *dims = DIMS_LIST; return;
    case FX_OP_AMIN: *kind = FX_RED_MIN, *dims = DIMS_LIST; return;
    case FX_OP_MAX: *kind = FX_RED_MAX, *dims = DIMS_ALL; return;
    case FX_OP_MIN: *kind = FX_RED_MIN, *dims = DIMS_ALL; return;
    case FX_OP_ALL: *kind = FX_RED_ALL, *dims = DIMS_ALL; return;
    case FX_OP_ALL_DIM: *kind = FX_RED_ALL, *dims = DIMS_ONE; return;
    case FX_OP_ALL_DIMS: *kind = FX_RED_ALL, *dims = DIMS_LIST; return;
    case FX_OP_ANY: *kind = FX_RED_ANY, *dims = DIMS_ALL; return;
    case FX_OP_ANY_DIM: *kind = FX_RED_ANY, *dims = DIMS_ONE; return;
    case FX_OP_ANY_DIMS: *kind = FX_RED_ANY, *dims = DIMS_LIST; return;
    case FX_OP_VAR_CORRECTION: *kind = FX_RED_VAR, *dims = DIMS_LIST; return;
    case FX_OP_STD_CORRECTION: *kind = FX_RED_STD, *dims = DIMS_LIST; return;
    case FX_OP_MAX_DIM: *kind = FX_RED_MAX_DIM, *dims = DIMS_ONE; return;
    case FX_OP_MIN_DIM: *kind = FX_RED_MIN_DIM, *dims = DIMS_ONE; return;
    case FX_OP_ARGMAX: *kind = FX_RED_ARGMAX, *dims = DIMS_OPT_ONE; return;
    case FX_OP_ARGMIN: *kind = FX_RED_ARGMIN, *dims = DIMS_OPT_ONE; return;
    default: *kind = FX_RED_SUM, *dims = -1; return;
    }
}

/* The name zero_numel_check_dims prints ("amax()"), for ops that refuse empty reductions. */
static const char *empty_check_name(fx_op_id id) {
    switch (id) {
    case FX_OP_AMAX: return "amax()";
    case FX_OP_AMIN: return "amin()";
    case FX_OP_MAX:
    case FX_OP_MAX_DIM: return "max()";
    case FX_OP_MIN:
    case FX_OP_MIN_DIM: return "min()";
    case FX_OP_ARGMAX: return "argmax()";
    case FX_OP_ARGMIN: return "argmin()";
    default: return NULL;
    }
}

/* The dtype rules of each kind. */
static int plan_dtypes(const fx_opctx *ctx, const fx_ivalue *a, const fx_tensor *x,
                       fx_reduce_plan *p) {
    fx_err *err = ctx->err;
    const fx_ivalue *dtv = fx_arg(ctx, a, "dtype");
    bool given = dtv && dtv->tag == FX_IV_DTYPE;
    fx_dtype xd = x->dtype;
    p->in_dtype = given ? dtv->u.dtype : xd;
    switch (p->kind) {
    case FX_RED_MEAN:
        if (given && !fx_dtype_is_float(dtv->u.dtype) && !fx_dtype_is_complex(dtv->u.dtype))
            return fx_err_setf(err, FX_ETYPE,
                               "mean(): could not infer output dtype. Optional dtype must be "
                               "either a floating point or complex dtype. Got: %s",
                               fx_dtype_c10_name(dtv->u.dtype));
        if (!given && !fx_dtype_is_float(xd) && !fx_dtype_is_complex(xd))
            return fx_err_setf(err, FX_ETYPE,
                               "mean(): could not infer output dtype. Input dtype must be either "
                               "a floating point or complex dtype. Got: %s",
                               fx_dtype_c10_name(xd));
        /* fall through */
    case FX_RED_SUM:
    case FX_RED_PROD:
        p->out_dtype = given                                                ? dtv->u.dtype
                       : fx_dtype_is_float(xd) || fx_dtype_is_complex(xd) ? xd
                                                                          : FX_DTYPE_I64;
        return FX_OK;
    case FX_RED_ALL:
    case FX_RED_ANY: p->out_dtype = xd == FX_DTYPE_U8 ? FX_DTYPE_U8 : FX_DTYPE_BOOL; return FX_OK;
    case FX_RED_VAR:
    case FX_RED_STD:
        if (!fx_dtype_is_float(xd))
            return fx_err_setf(err, FX_ETYPE,
                               "std and var only support floating point and complex dtypes");
        p->out_dtype = xd;
        return FX_OK;
    case FX_RED_ARGMAX:
    case FX_RED_ARGMIN:
        if (xd == FX_DTYPE_BOOL)
            return fx_err_setf(err, FX_ETYPE, "\"%s\" not implemented for 'Bool'",
                               p->kind == FX_RED_ARGMAX ? "argmax_cpu" : "argmin_cpu");
        p->out_dtype = FX_DTYPE_I64;
        return FX_OK;
    default: p->out_dtype = xd; return FX_OK;
    }
}

int fx_reduce_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_reduce_plan *p) {
    fx_err *err = ctx->err;
    memset(p, 0, sizeof *p);
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "%s(): argument 'input' must be Tensor",
                           ctx->op->schema.name);
    const fx_tensor *x = a[0].u.t;
    int dims_form;
    op_kind(ctx->op->id, &p->kind, &dims_form);
    if (dims_form < 0)
        return fx_err_setf(err, FX_EINTERNAL, "%s is not a reduction", ctx->op->qualname);
    p->is_mean = p->kind == FX_RED_MEAN;
    p->dim = -1;
    const fx_ivalue *dim = fx_arg(ctx, a, "dim"), *kd = fx_arg(ctx, a, "keepdim");
    p->keepdim = kd && kd->tag == FX_IV_BOOL && kd->u.b;
    int rc;
    if ((rc = plan_dtypes(ctx, a, x, p))) return rc;
    if (p->kind == FX_RED_VAR || p->kind == FX_RED_STD) {
        const fx_ivalue *c = fx_arg(ctx, a, "correction");
        p->correction = (c && fx_ivalue_is_scalar(c)) ? fx_ivalue_to_f64(c) : 1.0;
    }

    /* dims: the list as given (for messages) and the wrapped flags */
    int64_t dims[FX_MAX_DIMS];
    int n = 0;
    bool all = dims_form == DIMS_ALL || !dim || dim->tag == FX_IV_NONE;
    if (!all) {
        if ((rc = fx_arg_int_list(dim, dims, &n, err))) return rc;
        if (n == 0) all = dims_form == DIMS_LIST; /* [] reduces everything */
    }
    const char *ename = empty_check_name(ctx->op->id);
    if (ename && fx_tensor_numel(x) == 0 && x->ndim > 0) {
        if (all) {
            if (p->kind == FX_RED_ARGMAX || p->kind == FX_RED_ARGMIN)
                return fx_err_setf(err, FX_EINDEX,
                                   "%s: Expected reduction dim to be specified for input.numel() "
                                   "== 0.",
                                   ename);
            return fx_err_setf(err, FX_EARG,
                               "%s: Expected reduction dim to be specified for input.numel() == "
                               "0. Specify the reduction dim with the 'dim' argument.",
                               ename);
        }
        for (int i = 0; i < n; i++) {
            int w;
            if ((rc = fx_wrap_dim(dims[i], x->ndim, &w, err))) return rc;
            if (x->sizes[w] == 0)
                return fx_err_setf(err, FX_EINDEX,
                                   "%s: Expected reduction dim %lld to have non-zero size.", ename,
                                   (long long)dims[i]);
        }
    }
    if (all) {
        for (int d = 0; d < x->ndim; d++) p->reduced[d] = true;
    } else {
        for (int i = 0; i < n; i++) {
            int w;
            if ((rc = fx_wrap_dim(dims[i], x->ndim, &w, err))) return rc;
            if (x->ndim == 0) continue; /* dim 0 / -1 of a 0-dim tensor: nothing to reduce */
            if (p->reduced[w])
                return fx_err_setf(err, FX_EARG,
                                   "dim %d appears multiple times in the list of dims", w);
            p->reduced[w] = true;
            p->dim = w;
        }
    }
    p->count = 1;
    p->out_ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (p->reduced[d]) {
            p->count *= x->sizes[d];
            if (p->keepdim) p->out_sizes[p->out_ndim++] = 1;
        } else {
            p->out_sizes[p->out_ndim++] = x->sizes[d];
        }
    }
    return FX_OK;
}

/* Every reduction: fresh contiguous results (max.dim / min.dim also an int64 indices tensor of
 * the same shape). */
int fx_meta_reduce(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_reduce_plan p;
    int rc = fx_reduce_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *t;
    if ((rc = fx_tensor_empty(p.out_ndim, p.out_sizes, p.out_dtype, ctx->device, &t, ctx->err)))
        return rc;
    out[0] = fx_iv_tensor_steal(t);
    if (p.kind == FX_RED_MAX_DIM || p.kind == FX_RED_MIN_DIM) {
        if ((rc = fx_tensor_empty(p.out_ndim, p.out_sizes, FX_DTYPE_I64, ctx->device, &t,
                                  ctx->err))) {
            fx_ivalue_clear(&out[0]);
            return rc;
        }
        out[1] = fx_iv_tensor_steal(t);
    }
    return FX_OK;
}

/* ---- cumsum, cumprod ------------------------------------------------------------------------ */

int fx_cumsum_plan(const fx_opctx *ctx, const fx_ivalue *a, int *dim, fx_dtype *in_dtype,
                   fx_dtype *out_dtype) {
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'input' must be Tensor",
                           ctx->op->schema.name);
    const fx_tensor *x = a[0].u.t;
    int rc = fx_wrap_dim(a[1].u.i, x->ndim, dim, ctx->err);
    if (rc) return rc;
    const fx_ivalue *dtv = fx_arg(ctx, a, "dtype");
    bool given = dtv && dtv->tag == FX_IV_DTYPE;
    if (ctx->op->id == FX_OP_CUMSUM_ || ctx->op->id == FX_OP_CUMPROD_) {
        *out_dtype = x->dtype;
        if (given && dtv->u.dtype != x->dtype)
            return fx_err_setf(ctx->err, FX_ETYPE,
                               "Expected out tensor to have dtype %s, but got %s instead",
                               fx_dtype_c10_name(dtv->u.dtype), fx_dtype_c10_name(x->dtype));
    } else {
        *out_dtype = given                                                         ? dtv->u.dtype
                     : fx_dtype_is_float(x->dtype) || fx_dtype_is_complex(x->dtype) ? x->dtype
                                                                                   : FX_DTYPE_I64;
    }
    *in_dtype = *out_dtype; /* self.to(result.scalar_type()) before the scan */
    return FX_OK;
}

/* cumsum / cumprod (fresh contiguous result of the result dtype) and cumsum_ / cumprod_
 * (self). */
int fx_meta_cumsum(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int dim;
    fx_dtype in, od;
    int rc = fx_cumsum_plan(ctx, a, &dim, &in, &od);
    if (rc) return rc;
    fx_tensor *self = a[0].u.t;
    if (ctx->op->id == FX_OP_CUMSUM_ || ctx->op->id == FX_OP_CUMPROD_) {
        if ((rc = fx_check_no_internal_overlap(self, ctx->err))) return rc;
        out[0] = fx_iv_tensor(self);
        return FX_OK;
    }
    fx_tensor *t;
    if ((rc = fx_tensor_empty(self->ndim, self->sizes, od, ctx->device, &t, ctx->err))) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* var / var.dim / std / std.dim: CompositeImplicitAutograd forms of var.correction /
 * std.correction with correction = unbiased ? 1 : 0 (what the graph records). */
int fx_c_var_std(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_op_id id = ctx->op->id;
    bool is_var = id == FX_OP_VAR || id == FX_OP_VAR_DIM;
    bool has_dim = id == FX_OP_VAR_DIM || id == FX_OP_STD_DIM;
    const fx_ivalue *unb = fx_arg(ctx, a, "unbiased");
    bool unbiased = !unb || unb->tag != FX_IV_BOOL || unb->u.b;
    fx_ivalue none = fx_iv_none(), corr = fx_iv_int(unbiased ? 1 : 0);
    fx_ivalue keep = fx_iv_bool(false);
    const fx_ivalue *kd = fx_arg(ctx, a, "keepdim");
    if (kd && kd->tag == FX_IV_BOOL) keep = *kd;
    const fx_ivalue *dim = has_dim ? fx_arg(ctx, a, "dim") : &none;
    fx_op_id to = is_var ? FX_OP_VAR_CORRECTION : FX_OP_STD_CORRECTION;
    return fx_call(ctx->ctx, to, &out[0], ctx->err, 4, &a[0], dim, &corr, &keep);
}
