/* core/meta_inplace_view.c — metadata-mutating in-place ops (transpose_, t_, unsqueeze_, squeeze_).
 * Layer: core. Each takes the geometry its view twin (ops.def TWIN column) would give and writes
 * it into `self`'s own sizes, strides and offset, as PyTorch's in-place view ops change the
 * TensorImpl's metadata without touching the data. Other views of the same storage keep theirs. */
#include <string.h>

#include "core/ops_impl.h"

int fx_meta_inplace_view(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    const fx_opdef *view = fx_op_get(ctx->op->twin);
    if (!view || !view->meta)
        return fx_err_setf(ctx->err, FX_EINTERNAL, "%s has no view twin", fx_op_qualname(ctx->op));
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'self' (position 1) must be Tensor",
                           ctx->op->schema.name);
    fx_tensor *self = a[0].u.t;
    fx_opctx vc = *ctx;
    vc.op = view;
    fx_ivalue res[FX_SCHEMA_MAX_RETS] = {0};
    int rc = view->meta(&vc, a, res);
    if (rc) return rc;
    const fx_tensor *v = res[0].u.t;
    self->ndim = v->ndim;
    memcpy(self->sizes, v->sizes, sizeof self->sizes);
    memcpy(self->strides, v->strides, sizeof self->strides);
    self->offset = v->offset;
    fx_ivalue_clear(&res[0]);
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}
