/* core/meta_sort.c — meta functions of sort (default and stable overloads) and topk, and the
 * composite argsort.
 * Layer: core. Follows Sorting.cpp / TensorCompare: sort gives values of self's dtype and int64
 * indices, laid out like self; topk refuses k outside [0, size] ("selected index k out of
 * range") and bool ("\"topk_cpu\" not implemented for 'Bool'"), its results are contiguous with
 * k along dim. A 0-dim self sorts as one element. argsort(self, dim, descending) is
 * CompositeImplicitAutograd: the indices of sort (argsort.stable: of sort.stable), so a trace
 * records the sort and a getitem. */
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/ops_shape.h"
#include "core/shape.h"

int fx_sort_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_sort_plan *p) {
    memset(p, 0, sizeof *p);
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    const fx_ivalue *dv = fx_arg(ctx, a, "dim");
    int64_t dim = dv && dv->tag == FX_IV_INT ? dv->u.i : -1;
    if ((rc = fx_wrap_dim(dim, self->ndim, &p->dim, ctx->err))) return rc;
    p->len = self->ndim ? self->sizes[p->dim] : 1;
    if (ctx->op->id == FX_OP_TOPK) {
        const fx_ivalue *lv = fx_arg(ctx, a, "largest");
        p->descending = !lv || lv->tag != FX_IV_BOOL || lv->u.b;
        p->k = a[1].u.i;
        if (p->k < 0 || p->k > p->len)
            return fx_err_setf(ctx->err, FX_EINDEX, "selected index k out of range");
        if (self->dtype == FX_DTYPE_BOOL)
            return fx_err_setf(ctx->err, FX_ETYPE, "\"topk_cpu\" not implemented for 'Bool'");
    } else {
        const fx_ivalue *dsc = fx_arg(ctx, a, "descending");
        p->descending = dsc && dsc->tag == FX_IV_BOOL && dsc->u.b;
        p->k = p->len;
    }
    return FX_OK;
}

int fx_meta_sort(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_sort_plan p;
    int rc = fx_sort_plan_make(ctx, a, &p);
    if (rc) return rc;
    const fx_tensor *self = a[0].u.t;
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    memcpy(sizes, self->sizes, sizeof(int64_t) * (size_t)self->ndim);
    if (ctx->op->id == FX_OP_TOPK) {
        if (self->ndim) sizes[p.dim] = p.k;
        fx_contiguous_strides(self->ndim, sizes, strides);
    } else {
        fx_layout_like(self, strides);
    }
    fx_tensor *v = NULL, *i = NULL;
    if ((rc = fx_tensor_empty_strided(self->ndim, sizes, strides, self->dtype, ctx->device, &v,
                                      ctx->err)))
        return rc;
    if ((rc = fx_tensor_empty_strided(self->ndim, sizes, strides, FX_DTYPE_I64, ctx->device, &i,
                                      ctx->err))) {
        fx_tensor_release(v);
        return rc;
    }
    out[0] = fx_iv_tensor_steal(v);
    out[1] = fx_iv_tensor_steal(i);
    return FX_OK;
}

/* argsort(self, dim, descending) -> sort(...)[1]; argsort.stable -> sort.stable(...)[1]. */
int fx_c_argsort(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    bool stable = ctx->op->id == FX_OP_ARGSORT_STABLE;
    const fx_opdef *op = fx_op_get(stable ? FX_OP_SORT_STABLE : FX_OP_SORT);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS];
    args[0] = a[0];
    const char *names[] = {"stable", "dim", "descending"};
    for (int k = stable ? 0 : 1; k < 3; k++) {
        const fx_ivalue *v = fx_arg(ctx, a, names[k]);
        int at = fx_schema_arg_index(&op->schema, names[k]);
        if (v && at >= 0) args[at] = *v;
    }
    int rc = fx_dispatch(ctx->ctx, op, args, outs, ctx->err);
    if (rc) return rc;
    fx_ivalue_clear(&outs[0]);
    out[0] = outs[1];
    return FX_OK;
}

/* topk: sort's meta (its own name so the symbolic rule can size dim by k). */
int fx_meta_topk(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    return fx_meta_sort(ctx, a, out);
}
