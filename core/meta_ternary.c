/* core/meta_ternary.c — meta functions of where (all overloads), clamp (Scalar and Tensor
 * bounds, in-place twins) and lerp (Scalar and Tensor weight, in-place twins), and max.other /
 * min.other (composites of maximum / minimum).
 * Layer: core. Follows TensorCompare.cpp: where's condition must be bool (uint8 still accepted,
 * deprecated), its result dtype is result_type(self, other); clamp needs a bound, promotes as
 * its structured meta does and refuses an in-place promotion. Outputs are laid out as
 * TensorIterator lays them out (fx_layout_strides over the tensor operands). */
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/shape.h"

static int scalar_kind(const fx_ivalue *v) {
    return v->tag == FX_IV_BOOL ? 0 : v->tag == FX_IV_INT ? 1 : 2;
}

/* Broadcasts the tensors among ops[0..n) (scalars and None are 0-dim) into p->sizes. */
static int broadcast_all(const fx_ivalue *const *ops, int n, fx_ternary_plan *p, fx_err *err) {
    p->ndim = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i]->tag != FX_IV_TENSOR) continue;
        const fx_tensor *t = ops[i]->u.t;
        int64_t tmp[FX_MAX_DIMS];
        int nd, rc;
        if ((rc = fx_broadcast_shape(p->ndim, p->sizes, t->ndim, t->sizes, &nd, tmp, err)))
            return rc;
        p->ndim = nd;
        memcpy(p->sizes, tmp, sizeof(int64_t) * (size_t)nd);
    }
    return FX_OK;
}

int fx_where_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_ternary_plan *p) {
    fx_err *err = ctx->err;
    memset(p, 0, sizeof *p);
    p->ops[0] = &a[0], p->ops[1] = &a[1], p->ops[2] = &a[2];
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG,
                           "where(): argument 'condition' (position 1) must be Tensor");
    fx_dtype cd = a[0].u.t->dtype;
    if (cd != FX_DTYPE_BOOL && cd != FX_DTYPE_U8)
        return fx_err_setf(err, FX_ETYPE,
                           "where expected condition to be a boolean tensor, but got a tensor "
                           "with dtype %s",
                           fx_dtype_c10_name(cd));
    fx_result_type_state rt;
    fx_result_type_init(&rt);
    for (int i = 1; i < 3; i++) {
        if (a[i].tag == FX_IV_TENSOR)
            fx_result_type_tensor(&rt, a[i].u.t->dtype, a[i].u.t->ndim);
        else
            fx_result_type_scalar(&rt, scalar_kind(&a[i]));
    }
    p->compute = p->out_dtype = fx_result_type_get(&rt);
    return broadcast_all(p->ops, 3, p, err);
}

int fx_clamp_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_ternary_plan *p) {
    fx_err *err = ctx->err;
    memset(p, 0, sizeof *p);
    fx_op_id id = ctx->op->id;
    p->inplace = id == FX_OP_CLAMP_ || id == FX_OP_CLAMP__TENSOR;
    p->scalar_form = id == FX_OP_CLAMP || id == FX_OP_CLAMP_;
    p->ops[0] = &a[0], p->ops[1] = &a[1], p->ops[2] = &a[2];
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "clamp(): argument 'input' (position 1) must be Tensor");
    const fx_tensor *self = a[0].u.t;
    if (a[1].tag == FX_IV_NONE && a[2].tag == FX_IV_NONE)
        return fx_err_setf(err, FX_EARG,
                           "torch.clamp: At least one of 'min' or 'max' must not be None");
    int rc;
    if (p->inplace && (rc = fx_check_no_internal_overlap(self, err))) return rc;
    fx_result_type_state rt;
    fx_result_type_init(&rt);
    fx_result_type_tensor(&rt, self->dtype, self->ndim);
    for (int i = 1; i < 3; i++) {
        if (a[i].tag == FX_IV_TENSOR)
            fx_result_type_tensor(&rt, a[i].u.t->dtype, a[i].u.t->ndim);
        else if (a[i].tag != FX_IV_NONE)
            fx_result_type_scalar(&rt, scalar_kind(&a[i]));
    }
    if (p->scalar_form) {
        /* a floating self keeps its dtype; otherwise the bounds take part in promotion */
        p->compute = fx_dtype_is_float(self->dtype) ? self->dtype : fx_result_type_get(&rt);
        if (p->inplace && p->compute != self->dtype)
            return fx_err_setf(err, FX_ETYPE,
                               "result type %s can't be cast to the desired output type %s",
                               fx_dtype_c10_name(p->compute), fx_typemeta_name(self->dtype));
        p->ndim = self->ndim;
        memcpy(p->sizes, self->sizes, sizeof(int64_t) * (size_t)self->ndim);
        if (p->compute == FX_DTYPE_BOOL)
            return fx_err_setf(err, FX_ETYPE, "\"%s\" not implemented for 'Bool'",
                               a[1].tag == FX_IV_NONE   ? "clamp_max_scalar_cpu"
                               : a[2].tag == FX_IV_NONE ? "clamp_min_scalar_cpu"
                                                        : "clamp_scalar_cpu");
    } else {
        for (int i = 1; i < 3; i++)
            if (a[i].tag != FX_IV_TENSOR && a[i].tag != FX_IV_NONE && !fx_ivalue_is_scalar(&a[i]))
                return fx_err_setf(err, FX_EARG, "clamp(): expected a Tensor bound");
        p->compute = fx_result_type_get(&rt);
        if ((rc = broadcast_all(p->ops, 3, p, err))) return rc;
        if (p->inplace) {
            if ((rc = fx_check_inplace_shape(self->ndim, self->sizes, p->ndim, p->sizes, err)))
                return rc;
            if (!fx_can_cast(p->compute, self->dtype))
                return fx_err_setf(err, FX_ETYPE,
                                   "result type %s can't be cast to the desired output type %s",
                                   fx_dtype_c10_name(p->compute), fx_dtype_c10_name(self->dtype));
        }
        if (p->compute == FX_DTYPE_BOOL && a[1].tag != FX_IV_NONE && a[2].tag != FX_IV_NONE)
            return fx_err_setf(err, FX_ETYPE, "\"clamp_cpu\" not implemented for 'Bool'");
    }
    p->out_dtype = p->inplace ? self->dtype : p->compute;
    return FX_OK;
}

/* A fresh result of the plan's shape and dtype, laid out after the tensor operands. */
static int fresh_result(const fx_opctx *ctx, const fx_ternary_plan *p, int first, fx_ivalue *out) {
    const fx_tensor *ins[3] = {NULL, NULL, NULL};
    for (int i = first; i < 3; i++)
        if (p->ops[i]->tag == FX_IV_TENSOR) ins[i] = p->ops[i]->u.t;
    int64_t strides[FX_MAX_DIMS];
    fx_layout_strides(p->ndim, p->sizes, 3, ins, strides);
    fx_tensor *t;
    int rc = fx_tensor_empty_strided(p->ndim, p->sizes, strides, p->out_dtype, ctx->device, &t,
                                     ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* where (every overload): a fresh tensor of result_type(self, other), broadcast shape. */
int fx_meta_where(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_ternary_plan p;
    int rc = fx_where_plan_make(ctx, a, &p);
    if (rc) return rc;
    return fresh_result(ctx, &p, 0, out);
}

/* clamp, clamp.Tensor (fresh result like self / the broadcast), clamp_, clamp_.Tensor (self). */
int fx_meta_clamp(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_ternary_plan p;
    int rc = fx_clamp_plan_make(ctx, a, &p);
    if (rc) return rc;
    if (p.inplace) {
        out[0] = fx_iv_tensor(a[0].u.t);
        return FX_OK;
    }
    if (p.scalar_form) {
        const fx_tensor *self = a[0].u.t;
        int64_t strides[FX_MAX_DIMS];
        fx_layout_like(self, strides);
        fx_tensor *t;
        rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, p.out_dtype, ctx->device, &t,
                                     ctx->err);
        if (rc) return rc;
        out[0] = fx_iv_tensor_steal(t);
        return FX_OK;
    }
    return fresh_result(ctx, &p, 0, out);
}

/* max.other / min.other: CompositeImplicitAutograd aliases of maximum / minimum. */
int fx_c_max_other(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_op_id to = ctx->op->id == FX_OP_MAX_OTHER ? FX_OP_MAXIMUM : FX_OP_MINIMUM;
    return fx_call(ctx->ctx, to, &out[0], ctx->err, 2, &a[0], &a[1]);
}

/* ---- lerp ----------------------------------------------------------------------------------- */

int fx_lerp_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_ternary_plan *p) {
    fx_err *err = ctx->err;
    memset(p, 0, sizeof *p);
    fx_op_id id = ctx->op->id;
    p->inplace = id == FX_OP_LERP__SCALAR || id == FX_OP_LERP__TENSOR;
    p->scalar_form = id == FX_OP_LERP_SCALAR || id == FX_OP_LERP__SCALAR;
    p->ops[0] = &a[0], p->ops[1] = &a[1], p->ops[2] = &a[2];
    if (a[0].tag != FX_IV_TENSOR || a[1].tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "lerp(): arguments 'input' and 'end' must be Tensors");
    const fx_tensor *self = a[0].u.t, *end = a[1].u.t;
    /* lerp's structured meta: end (and a tensor weight) must have self's dtype */
    if (end->dtype != self->dtype)
        return fx_err_setf(err, FX_ETYPE, "expected dtype %s for `end` but got dtype %s",
                           fx_typemeta_name(self->dtype), fx_typemeta_name(end->dtype));
    if (!p->scalar_form) {
        if (a[2].tag != FX_IV_TENSOR)
            return fx_err_setf(err, FX_EARG, "lerp(): argument 'weight' must be Tensor");
        const fx_tensor *w = a[2].u.t;
        if (w->dtype != self->dtype)
            return fx_err_setf(err, FX_ETYPE, "expected dtype %s for `weight` but got dtype %s",
                               fx_typemeta_name(self->dtype), fx_typemeta_name(w->dtype));
        int md = self->ndim > end->ndim ? self->ndim : end->ndim;
        if (w->ndim > md)
            return fx_err_setf(
                err, FX_ESHAPE,
                "weight should be of dimension max(self.dim(), end.dim()) or lesser");
    } else if (!fx_ivalue_is_scalar(&a[2])) {
        return fx_err_setf(err, FX_EARG, "lerp(): argument 'weight' must be Number or Tensor");
    }
    int rc;
    if (p->inplace && (rc = fx_check_no_internal_overlap(self, err))) return rc;
    if ((rc = broadcast_all(p->ops, 3, p, err))) return rc;
    if (p->inplace &&
        (rc = fx_check_inplace_shape(self->ndim, self->sizes, p->ndim, p->sizes, err)))
        return rc;
    if (!fx_dtype_is_float(self->dtype))
        return fx_err_setf(err, FX_ETYPE, "\"%s\" not implemented for '%s'",
                           p->scalar_form ? "lerp_kernel_scalar" : "lerp_kernel_tensor",
                           fx_dtype_c10_name(self->dtype));
    p->compute = p->out_dtype = self->dtype;
    return FX_OK;
}

/* lerp.Scalar / lerp.Tensor (fresh result of the broadcast shape) and lerp_ (self). */
int fx_meta_lerp(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_ternary_plan p;
    int rc = fx_lerp_plan_make(ctx, a, &p);
    if (rc) return rc;
    if (p.inplace) {
        out[0] = fx_iv_tensor(a[0].u.t);
        return FX_OK;
    }
    return fresh_result(ctx, &p, 0, out);
}
