/* core/composite_pointwise.c — pointwise composite ops: square, square_, type_as.
 * Layer: core. CompositeImplicitAutograd kernels as aten's: they call other ops through the
 * dispatcher, so a trace records what they decompose into — square(x) is pow.Tensor_Scalar(x, 2)
 * and square_(x) is pow_.Scalar(x, 2) (UnaryOps.cpp); type_as(x, other) is x.to(other's dtype)
 * (TensorConversions.cpp): x itself when the dtype already matches, else
 * _to_copy(x, dtype=other.dtype).
 *
 * Ownership: the result goes to out[0] as a new reference. */
#include "core/ops_impl.h"
#include "core/ops_shape.h"

static fx_ivalue borrow(fx_tensor *t) { return (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t}; }

/* square(Tensor self) -> Tensor / square_(Tensor(a!) self) -> Tensor(a!). */
int fx_c_square(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    fx_ivalue sv = borrow(self), two = fx_iv_int(2);
    fx_op_id to = ctx->op->id == FX_OP_SQUARE_ ? FX_OP_POW__SCALAR : FX_OP_POW_TENSOR_SCALAR;
    return fx_call(ctx->ctx, to, &out[0], ctx->err, 2, &sv, &two);
}

/* type_as(Tensor self, Tensor other) -> Tensor. */
int fx_c_type_as(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *other;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &other)))
        return rc;
    if (self->dtype == other->dtype) {
        out[0] = fx_iv_tensor(self);
        return FX_OK;
    }
    const fx_opdef *tc = fx_op_get(FX_OP__TO_COPY);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS];
    args[0] = borrow(self);
    args[fx_schema_arg_index(&tc->schema, "dtype")] = fx_iv_dtype(other->dtype);
    if ((rc = fx_dispatch(ctx->ctx, tc, args, outs, ctx->err))) return rc;
    out[0] = outs[0];
    return FX_OK;
}

/* ====================================================================================== */
/* real / imag / conj (complex numbers)                                                    */
/* ====================================================================================== */

/* real / imag of a complex tensor: select(view_as_real(self), -1, 0 or 1), a view of self's
 * storage (aten's real / imag). real of a real tensor is self; imag of one is an error. */
static int real_imag(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out, int64_t part) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (!fx_dtype_is_complex(self->dtype)) {
        if (part == 1)
            return fx_err_setf(ctx->err, FX_ETYPE,
                               "imag is not implemented for tensors with non-complex dtypes.");
        out[0] = fx_iv_tensor(self);
        return FX_OK;
    }
    fx_ivalue sv = borrow(self), r;
    if ((rc = fx_call(ctx->ctx, FX_OP_VIEW_AS_REAL, &r, ctx->err, 1, &sv))) return rc;
    fx_ivalue dim = fx_iv_int(self->ndim), idx = fx_iv_int(part);
    rc = fx_call(ctx->ctx, FX_OP_SELECT_INT, &out[0], ctx->err, 3, &r, &dim, &idx);
    fx_ivalue_clear(&r);
    return rc;
}

int fx_c_real(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) { return real_imag(ctx, a, out, 0); }
int fx_c_imag(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) { return real_imag(ctx, a, out, 1); }

/* conj(self): self for a real tensor; for a complex one conj_physical(self), a new tensor —
 * fxdb has no conjugate bit, so PyTorch's lazy conjugate view is materialized (see
 * docs/CHOICES.md). */
int fx_c_conj(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (!fx_dtype_is_complex(self->dtype)) {
        out[0] = fx_iv_tensor(self);
        return FX_OK;
    }
    fx_ivalue sv = borrow(self);
    return fx_call(ctx->ctx, FX_OP_CONJ_PHYSICAL, &out[0], ctx->err, 1, &sv);
}
