/* core/meta_unary.c — meta functions of the unary pointwise ops: abs exp log log1p sqrt rsqrt
 * sin cos tanh sigmoid relu gelu silu reciprocal logical_not bitwise_not sign floor ceil trunc
 * round (and round.decimals) erf expm1 softplus and their in-place twins.
 * Layer: core. Dtype rules of PyTorch's unary ops: the float-only ops (exp ... reciprocal)
 * promote integer and bool inputs to the default float dtype (so do erf and expm1); abs and relu
 * keep the dtype and refuse bool; sign keeps every dtype (bool included); floor ceil trunc round
 * keep the dtype, copy integers and refuse bool; round.decimals and softplus need a floating
 * input; gelu and silu need a floating input; bitwise_not needs an integral or bool
 * input; logical_not gives bool. The result is laid out like self (empty_like). */
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

/* Does the op promote integral inputs to float (UnaryOps' unary_float_op)? */
static bool float_op(fx_op_id id) {
    switch (id) {
    case FX_OP_EXP:
    case FX_OP_EXP_:
    case FX_OP_LOG:
    case FX_OP_LOG_:
    case FX_OP_LOG1P:
    case FX_OP_LOG1P_:
    case FX_OP_SQRT:
    case FX_OP_SQRT_:
    case FX_OP_RSQRT:
    case FX_OP_RSQRT_:
    case FX_OP_SIN:
    case FX_OP_SIN_:
    case FX_OP_COS:
    case FX_OP_COS_:
    case FX_OP_TANH:
    case FX_OP_TANH_:
    case FX_OP_SIGMOID:
    case FX_OP_SIGMOID_:
    case FX_OP_RECIPROCAL:
    case FX_OP_RECIPROCAL_:
    case FX_OP_ERF:
    case FX_OP_ERF_:
    case FX_OP_EXPM1:
    case FX_OP_EXPM1_: return true;
    default: return false;
    }
}

fx_dtype fx_unary_compute_dtype(fx_op_id id, fx_dtype in) {
    if (fx_dtype_is_complex(in)) return id == FX_OP_ABS ? fx_dtype_to_real(in) : in;
    if (float_op(id) && !fx_dtype_is_float(in)) return FX_DTYPE_DEFAULT;
    return in;
}

/* The dtype checks of each op (PyTorch's kernel dispatch messages) and gelu's argument. */
static int check_unary(const fx_opctx *ctx, const fx_ivalue *a) {
    fx_err *err = ctx->err;
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "%s(): argument 'input' (position 1) must be Tensor",
                           ctx->op->schema.name);
    fx_dtype dt = a[0].u.t->dtype;
    const char *cn = fx_dtype_c10_name(dt);
    switch (ctx->op->id) {
    case FX_OP_ABS:
    case FX_OP_ABS_:
        if (ctx->op->id == FX_OP_ABS_ && fx_dtype_is_complex(dt))
            return fx_err_setf(err, FX_ETYPE, "In-place abs is not supported for complex tensors.");
        if (dt == FX_DTYPE_BOOL)
            return fx_err_setf(err, FX_ETYPE, "\"abs_cpu\" not implemented for 'Bool'");
        break;
    case FX_OP_RELU:
    case FX_OP_RELU_:
        if (dt == FX_DTYPE_BOOL)
            return fx_err_setf(err, FX_ETYPE, "Boolean inputs not supported for relu");
        break;
    case FX_OP_GELU:
    case FX_OP_GELU_: {
        const fx_ivalue *ap = fx_arg(ctx, a, "approximate");
        if (ap && ap->tag == FX_IV_STR && strcmp(ap->u.s, "none") && strcmp(ap->u.s, "tanh"))
            return fx_err_setf(err, FX_EARG, "approximate argument must be either none or tanh.");
        if (!fx_dtype_is_float(dt))
            return fx_err_setf(err, FX_ETYPE, "\"GeluKernelImpl\" not implemented for '%s'", cn);
        break;
    }
    case FX_OP_SILU:
    case FX_OP_SILU_:
        if (!fx_dtype_is_float(dt))
            return fx_err_setf(err, FX_ETYPE, "\"silu_cpu\" not implemented for '%s'", cn);
        break;
    case FX_OP_FLOOR:
    case FX_OP_FLOOR_:
    case FX_OP_CEIL:
    case FX_OP_CEIL_:
    case FX_OP_TRUNC:
    case FX_OP_TRUNC_:
    case FX_OP_ROUND:
    case FX_OP_ROUND_:
        /* integers are copied (UnaryOps.cpp's integral fast path); bool reaches the float-only
         * kernel and is refused there */
        if (dt == FX_DTYPE_BOOL) {
            const char *nm = ctx->op->schema.name;
            int len = (int)strlen(nm) - (nm[strlen(nm) - 1] == '_'); /* floor_ -> floor */
            return fx_err_setf(err, FX_ETYPE, "\"%.*s_vml_cpu\" not implemented for 'Bool'", len,
                               nm);
        }
        break;
    case FX_OP_ROUND_DECIMALS:
    case FX_OP_ROUND__DECIMALS: {
        const fx_ivalue *dv = fx_arg(ctx, a, "decimals");
        int64_t dec = dv && dv->tag == FX_IV_INT ? dv->u.i : 0;
        /* decimals == 0 takes round's kernel, any other the decimals kernel: both float-only */
        if (!fx_dtype_is_float(dt))
            return fx_err_setf(err, FX_ETYPE, "\"%s\" not implemented for '%s'",
                               dec ? "round_cpu" : "round_vml_cpu", cn);
        break;
    }
    case FX_OP_SOFTPLUS:
        if (!fx_dtype_is_float(dt))
            return fx_err_setf(err, FX_ETYPE, "\"softplus_cpu\" not implemented for '%s'", cn);
        break;
    case FX_OP_BITWISE_NOT:
    case FX_OP_BITWISE_NOT_:
        if (fx_dtype_is_float(dt))
            return fx_err_setf(err, FX_ETYPE, "\"bitwise_not_cpu\" not implemented for '%s'", cn);
        break;
    default: break;
    }
    return FX_OK;
}

/* Functional unary ops: a fresh tensor like self, of the op's result dtype. */
int fx_meta_unary(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int rc = check_unary(ctx, a);
    if (rc) return rc;
    const fx_tensor *self = a[0].u.t;
    fx_dtype dt = ctx->op->id == FX_OP_LOGICAL_NOT
                      ? FX_DTYPE_BOOL
                      : fx_unary_compute_dtype(ctx->op->id, self->dtype);
    int64_t strides[FX_MAX_DIMS];
    fx_layout_like(self, strides);
    fx_tensor *t;
    rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, dt, ctx->device, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* In-place unary ops: self, after the dtype checks, the internal-overlap check and the cast of
 * the result back to self's dtype (a float result cannot go into an integer self). */
int fx_meta_unary_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    int rc = check_unary(ctx, a);
    if (rc) return rc;
    fx_tensor *self = a[0].u.t;
    if ((rc = fx_check_no_internal_overlap(self, ctx->err))) return rc;
    fx_dtype c = fx_unary_compute_dtype(ctx->op->id, self->dtype);
    if (ctx->op->id != FX_OP_LOGICAL_NOT_ && !fx_can_cast(c, self->dtype))
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "result type %s can't be cast to the desired output type %s",
                           fx_dtype_c10_name(c), fx_dtype_c10_name(self->dtype));
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}
