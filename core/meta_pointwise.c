/* core/meta_pointwise.c — meta functions of the pointwise ops: add/sub/mul/div (and in-place
 * twins), neg/neg_, fill/fill_, zero_.
 * Layer: core. Each checks its arguments with PyTorch's messages and creates the output: a
 * fresh tensor laid out as TensorIterator would lay it out (so strides follow the inputs), or
 * `self` for in-place ops. */
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

static const char k_neg_bool[] =
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
    "a mask, use the `~` or `logical_not()` operator instead.";

/* binary functional ops: add.Tensor, sub.Tensor, mul.Tensor, div.Tensor, div.Tensor_mode.
 * Output: result_type dtype (true division: float), broadcast shape, TensorIterator strides. */
int fx_meta_binary(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_binary_plan p;
    int rc = fx_binary_plan_make(ctx, a, &p);
    if (rc) return rc;
    const fx_tensor *ins[2] = {p.self->tag == FX_IV_TENSOR ? p.self->u.t : NULL,
                               p.other->tag == FX_IV_TENSOR ? p.other->u.t : NULL};
    int64_t strides[FX_MAX_DIMS];
    fx_layout_strides(p.ndim, p.sizes, 2, ins, strides);
    fx_tensor *t;
    rc = fx_tensor_empty_strided(p.ndim, p.sizes, strides, p.out_dtype, ctx->device, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* binary in-place ops: add_, sub_, mul_, div_ (both overloads). Output: self. */
int fx_meta_binary_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_binary_plan p;
    int rc = fx_binary_plan_make(ctx, a, &p);
    if (rc) return rc;
    out[0] = fx_iv_tensor(a[0].u.t);
    return FX_OK;
}

/* neg(self) and fill.Scalar(self, value): a fresh tensor like self (empty_like layout). neg
 * refuses bool; fill checks that value fits self's dtype. */
int fx_meta_unary_same(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'self' must be Tensor",
                           ctx->op->schema.name);
    const fx_tensor *self = a[0].u.t;
    if (ctx->op->id == FX_OP_NEG && self->dtype == FX_DTYPE_BOOL)
        return fx_err_setf(ctx->err, FX_ETYPE, "%s", k_neg_bool);
    if (ctx->op->id == FX_OP_FILL_SCALAR) {
        int rc = fx_scalar_check(self->dtype, &a[1], ctx->err);
        if (rc) return rc;
    }
    int64_t strides[FX_MAX_DIMS];
    fx_layout_like(self, strides);
    fx_tensor *t;
    int rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, self->dtype, ctx->device, &t,
                                     ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* neg_, fill_.Scalar, zero_: the output is self. neg_ checks bool and internal overlap (it
 * goes through TensorIterator); fill_ and zero_ write expanded tensors happily, as PyTorch's
 * fill_ disables the overlap check. */
int fx_meta_inplace_self(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'self' must be Tensor",
                           ctx->op->schema.name);
    fx_tensor *self = a[0].u.t;
    int rc;
    switch (ctx->op->id) {
    case FX_OP_NEG_:
        if (self->dtype == FX_DTYPE_BOOL) return fx_err_setf(ctx->err, FX_ETYPE, "%s", k_neg_bool);
        if ((rc = fx_check_no_internal_overlap(self, ctx->err))) return rc;
        break;
    case FX_OP_FILL__SCALAR:
        if ((rc = fx_scalar_check(self->dtype, &a[1], ctx->err))) return rc;
        break;
    default: break;
    }
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}
