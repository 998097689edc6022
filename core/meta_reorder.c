/* core/meta_reorder.c — meta functions of the ops that reorder elements without computing:
 * flip and roll.
 * Layer: core. Follows TensorTransformations.cpp: flip(self, dims) wraps every dim and refuses a
 * repeated one, its result is laid out like self (empty_like, preserve format); roll(self,
 * shifts, dims) needs as many shifts as dims (or one shift and no dims: the flattened tensor
 * rolls), its result is contiguous. Both keep self's dtype and shape. */
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/ops_shape.h"
#include "core/shape.h"

int fx_reorder_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_reorder_plan *p) {
    memset(p, 0, sizeof *p);
    fx_tensor *self;
    int rc, n;
    int64_t v[FX_MAX_DIMS];
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_ints_arg(ctx, a, 1, v, &n)))
        return rc;
    if (ctx->op->id == FX_OP_FLIP) {
        for (int i = 0; i < n; i++) {
            int d;
            if ((rc = fx_wrap_dim(v[i], self->ndim, &d, ctx->err))) return rc;
            if (p->flip[d])
                return fx_err_setf(ctx->err, FX_EARG,
                                   "dim %d appears multiple times in the list of dims", d);
            p->flip[d] = true;
        }
        return FX_OK;
    }
    int64_t dims[FX_MAX_DIMS];
    int nd;
    if ((rc = fx_kb_ints_arg(ctx, a, 2, dims, &nd))) return rc;
    if (n == 0) return fx_err_setf(ctx->err, FX_EARG, "`shifts` required");
    if (nd == 0 && n == 1) {
        p->flat = true;
        p->flat_shift = v[0];
        return FX_OK;
    }
    if (n != nd)
        return fx_err_setf(ctx->err, FX_EARG,
                           "shifts and dimensions must align. shifts: %d, dims:%d", n, nd);
    for (int i = 0; i < n; i++) {
        int d;
        if ((rc = fx_wrap_dim(dims[i], self->ndim, &d, ctx->err))) return rc;
        p->shift[d] += v[i]; /* rolling a dim twice adds the shifts */
    }
    return FX_OK;
}

static int reorder_result(fx_opctx *ctx, const fx_ivalue *a, bool preserve, fx_ivalue *out) {
    fx_reorder_plan p;
    int rc = fx_reorder_plan_make(ctx, a, &p);
    if (rc) return rc;
    const fx_tensor *self = a[0].u.t;
    int64_t strides[FX_MAX_DIMS];
    if (preserve)
        fx_layout_like(self, strides);
    else
        fx_contiguous_strides(self->ndim, self->sizes, strides);
    fx_tensor *t;
    rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, self->dtype, ctx->device, &t,
                                 ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* flip(Tensor self, int[] dims) -> Tensor */
int fx_meta_flip(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    return reorder_result(ctx, a, true, out);
}

/* roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor */
int fx_meta_roll(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    return reorder_result(ctx, a, false, out);
}
