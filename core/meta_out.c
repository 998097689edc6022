/* core/meta_out.c — the `out=` overloads (sin.out, add.out, sum.IntList_out, ...): one meta
 * function and one kernel for all of them, in terms of the functional op in their TWIN column.
 * Layer: core. Follows at::native::resize_output and TensorIterator's output checks as eager
 * PyTorch applies them to `torch.sin(x, out=y)`: the result is computed as the functional op
 * computes it, then written into `out`, whose dtype must be one the result can be cast to
 * ("result type Float can't be cast to the desired output type Long"). PyTorch resizes an `out`
 * of another shape (with a deprecation warning when it had elements); fxdb tensors keep their
 * geometry, so such a call is refused as not yet supported, naming both shapes.
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

/* Checks result r against out o (shape, dtype) as eager PyTorch would accept it. */
static int check_out(fx_opctx *ctx, const fx_tensor *r, const fx_tensor *o) {
    char b1[160], b2[160];
    bool same = r->ndim == o->ndim;
    for (int d = 0; same && d < r->ndim; d++) same = r->sizes[d] == o->sizes[d];
    if (!same) {
        fx_err_setf(ctx->err, FX_ENOTIMPL,
                    "%s: out= with a tensor of shape %s where the result has shape %s is not yet "
                    "supported by fxdb (PyTorch would resize out)",
                    ctx->op->qualname, fx_shape_str(o->ndim, o->sizes, b1, sizeof b1),
                    fx_shape_str(r->ndim, r->sizes, b2, sizeof b2));
        fx_err_kind(ctx->err, "not_implemented");
        return fx_err_hintf(ctx->err, "pass an out tensor of the result's shape, or use the result: "
                                      "y = torch.%s(...)",
                            ctx->op->schema.name);
    }
    if (!fx_can_cast(r->dtype, o->dtype))
        return fx_err_setf(ctx->err, FX_ETYPE, "result type %s can't be cast to the desired output type %s",
                           fx_dtype_c10_name(r->dtype), fx_dtype_c10_name(o->dtype));
    return FX_OK;
}

/* X.out(..., *, Tensor(a!) out) -> Tensor(a!): out itself, after the functional op's checks. */
int fx_meta_out(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *o;
    int rc = fx_kb_tensor_arg(ctx, a, ctx->op->schema.mutated_arg, &o);
    if (rc) return rc;
    fx_ctx meta;
    fx_ctx_init(&meta, FX_MODE_META);
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
