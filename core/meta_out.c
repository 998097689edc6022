/* core/meta_out.c — the `out=` overloads (sin.out, add.out, sum.IntList_out, ...): one meta
 * function and one kernel for all of them, in terms of the functional op in their TWIN column.
 * Layer: core. Follows at::native::resize_output and TensorIterator's output checks as eager
 * PyTorch applies them to `torch.sin(x, out=y)`: the result is computed as the functional op
 * computes it, then written into `out`, whose dtype must be one the result can be cast to
 * ("result type Float can't be cast to the desired output type Long"). An `out` of another
 * shape is resized to the result's (resize_output; the deprecation warning when it had elements
 * comes from the Lua binding). In an export, resizing an input is aot_autograd's metadata-
 * mutation error and an intermediate `out` takes the functional op's result.
 *
 * Every out overload's schema is its functional op's followed by `*, Tensor(a!) out`, so the
 * functional op's arguments are the first ones, in order. Functionalization rewrites the call as
 * any in-place op: the functional op, then the write into `out` (a USER_INPUT_MUTATION or
 * BUFFER_MUTATION when `out` is an input), as torch.export does. */
#include <string.h>

#include "core/meta_common.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* Runs the functional twin on a's leading arguments in `mode` (meta: shapes only), writing its
 * results to r. */
static int run_twin(fx_opctx *ctx, const fx_ivalue *a, fx_ctx *mctx, fx_ivalue *r) {
    const fx_opdef *twin = fx_op_get(ctx->op->twin);
    fx_ivalue ta[FX_SCHEMA_MAX_ARGS];
    for (int i = 0; i < twin->schema.nargs; i++) ta[i] = a[i];
    return fx_dispatch(mctx ? mctx : ctx->ctx, twin, ta, r, ctx->err);
}

/* Checks result r against out o as eager PyTorch does: the dtype must be one r casts to; an out
 * of another shape is resized to r's (at::native::resize_output: resize_ to r's sizes,
 * contiguous strides, storage grown when too small; the Lua binding gives PyTorch's deprecation
 * warning when out had elements). */
static int check_out(fx_opctx *ctx, const fx_tensor *r, fx_tensor *o) {
    if (!fx_can_cast(r->dtype, o->dtype))
        return fx_err_setf(ctx->err, FX_ETYPE, "result type %s can't be cast to the desired output type %s",
                           fx_dtype_c10_name(r->dtype), fx_dtype_c10_name(o->dtype));
    bool same = r->ndim == o->ndim;
    for (int d = 0; same && d < r->ndim; d++) same = r->sizes[d] == o->sizes[d];
    if (same) return FX_OK;
    fx_opctx rc_ctx = *ctx;
    rc_ctx.op = fx_op_get(FX_OP_RESIZE_);
    fx_ivalue args[3] = {{.tag = FX_IV_TENSOR, .u.t = o}, {.tag = FX_IV_UNSET}, {.tag = FX_IV_UNSET}}, res[1];
    int rc = fx_iv_int_list(r->ndim, r->sizes, &args[1], ctx->err);
    if (!rc) rc = fx_meta_resize_(&rc_ctx, args, res);
    if (!rc) fx_ivalue_clear(&res[0]);
    fx_ivalue_clear(&args[1]);
    return rc;
}

/* X.out(..., *, Tensor(a!) out) -> Tensor(a!): out itself, after the functional op's checks. */
int fx_meta_out(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *o;
    int rc = fx_kb_tensor_arg(ctx, a, ctx->op->schema.mutated_arg, &o);
    if (rc) return rc;
    fx_ctx meta = {.mode = FX_MODE_META}; /* as fx_ctx_init, which sits above the op files */
    fx_ivalue r[FX_SCHEMA_MAX_RETS] = {0};
    if ((rc = run_twin(ctx, a, &meta, r))) return rc;
    rc = r[0].tag == FX_IV_TENSOR ? check_out(ctx, r[0].u.t, o)
                                  : fx_err_setf(ctx->err, FX_EINTERNAL, "%s: no tensor result", ctx->op->qualname);
    for (int i = 0; i < FX_SCHEMA_MAX_RETS; i++) fx_ivalue_clear(&r[i]);
    if (rc) return rc;
    out[0] = fx_iv_tensor(o);
    return FX_OK;
}

/* The functional op's kernel into a fresh result, copied (converted) into out. */
int fx_k_out(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)out;
    fx_tensor *o = a[ctx->op->schema.mutated_arg].u.t;
    fx_ivalue r[FX_SCHEMA_MAX_RETS] = {0};
    int rc = run_twin(ctx, a, NULL, r);
    if (!rc) fx_kb_copy(o, r[0].u.t);
    for (int i = 0; i < FX_SCHEMA_MAX_RETS; i++) fx_ivalue_clear(&r[i]);
    return rc;
}
