/* core/meta_reduce.c — meta functions of the reductions sum and mean (all overloads).
 * Layer: core. Follows aten/src/ATen/native/ReduceOps.cpp: dims wrap like any dim argument,
 * a dim listed twice is an error, None or an empty list reduces every dim, keepdim keeps the
 * reduced dims as size 1; sum of integers or bools gives int64 unless dtype says otherwise;
 * mean needs a floating input or dtype. The result is a fresh contiguous tensor. */
#include <string.h>

#include "core/meta_common.h"
#include "core/shape.h"

int fx_reduce_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_reduce_plan *p) {
    fx_err *err = ctx->err;
    memset(p, 0, sizeof *p);
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "%s(): argument 'input' must be Tensor",
                           ctx->op->schema.name);
    const fx_tensor *x = a[0].u.t;
    p->is_mean = ctx->op->id == FX_OP_MEAN || ctx->op->id == FX_OP_MEAN_DIM;
    const fx_ivalue *dim = fx_arg(ctx, a, "dim"), *kd = fx_arg(ctx, a, "keepdim");
    const fx_ivalue *dtv = fx_arg(ctx, a, "dtype");
    p->keepdim = kd && kd->tag == FX_IV_BOOL && kd->u.b;

    /* dtype rules */
    bool given = dtv && dtv->tag == FX_IV_DTYPE;
    if (p->is_mean) {
        if (given && !fx_dtype_is_float(dtv->u.dtype))
            return fx_err_setf(err, FX_ETYPE,
                               "mean(): could not infer output dtype. Optional dtype must be "
                               "either a floating point or complex dtype. Got: %s",
                               fx_dtype_c10_name(dtv->u.dtype));
        if (!given && !fx_dtype_is_float(x->dtype))
            return fx_err_setf(err, FX_ETYPE,
                               "mean(): could not infer output dtype. Input dtype must be either "
                               "a floating point or complex dtype. Got: %s",
                               fx_dtype_c10_name(x->dtype));
    }
    if (given)
        p->out_dtype = dtv->u.dtype;
    else if (!fx_dtype_is_float(x->dtype))
        p->out_dtype = FX_DTYPE_I64;
    else
        p->out_dtype = x->dtype;
    p->in_dtype = given ? dtv->u.dtype : x->dtype;

    /* dims */
    bool all = !dim || dim->tag == FX_IV_NONE || (dim->tag == FX_IV_LIST && dim->u.list.n == 0);
    if (all) {
        for (int d = 0; d < x->ndim; d++) p->reduced[d] = true;
    } else {
        int64_t dims[FX_MAX_DIMS];
        int n, rc;
        if ((rc = fx_arg_int_list(dim, dims, &n, err))) return rc;
        for (int i = 0; i < n; i++) {
            int w;
            if ((rc = fx_wrap_dim(dims[i], x->ndim, &w, err))) return rc;
            if (x->ndim == 0) continue; /* dim 0 / -1 of a 0-dim tensor: nothing to reduce */
            if (p->reduced[w])
                return fx_err_setf(err, FX_EARG,
                                   "dim %d appears multiple times in the list of dims", w);
            p->reduced[w] = true;
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

/* sum, sum.dim_IntList, mean, mean.dim. */
int fx_meta_reduce(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_reduce_plan p;
    int rc = fx_reduce_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *t;
    if ((rc = fx_tensor_empty(p.out_ndim, p.out_sizes, p.out_dtype, ctx->device, &t, ctx->err)))
        return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}
