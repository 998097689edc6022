/* core/meta_norm.c — meta function of linalg_vector_norm (what torch.norm, Tensor.norm and
 * torch.linalg.vector_norm record for a numeric p).
 * Layer: core. Follows LinearAlgebra.cpp's linalg_vector_norm: a floating input (or a floating
 * dtype= to convert it to first: "linalg.vector_norm: Expected a floating point or complex
 * tensor as input. Got Long"), dims wrapped and not repeated (None or [] = every dim),
 * keepdim; an empty reduction of a negative or infinite ord is refused as PyTorch refuses it. */
#include <math.h>
#include <string.h>

#include "core/meta_common.h"
#include "core/ops_shape.h"
#include "core/shape.h"

int fx_norm_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_norm_plan *p) {
    memset(p, 0, sizeof *p);
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    const fx_ivalue *dt = fx_arg(ctx, a, "dtype");
    p->in_dtype = dt && dt->tag == FX_IV_DTYPE ? dt->u.dtype : self->dtype;
    if (!fx_dtype_is_float(p->in_dtype))
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "linalg.vector_norm: Expected a floating point or complex tensor as "
                           "input. Got %s",
                           fx_dtype_c10_name(p->in_dtype));
    p->ord = a[1].tag == FX_IV_NONE ? 2.0 : fx_ivalue_to_f64(&a[1]);
    const fx_ivalue *kd = fx_arg(ctx, a, "keepdim");
    bool keepdim = p->keepdim = kd && kd->tag == FX_IV_BOOL && kd->u.b;
    bool all = a[2].tag == FX_IV_NONE || (a[2].tag == FX_IV_LIST && a[2].u.list.n == 0);
    if (!all) {
        int64_t dims[FX_MAX_DIMS];
        int n;
        if ((rc = fx_kb_ints_arg(ctx, a, 2, dims, &n))) return rc;
        for (int i = 0; i < n; i++) {
            int d;
            if ((rc = fx_wrap_dim(dims[i], self->ndim, &d, ctx->err))) return rc;
            if (p->reduced[d])
                return fx_err_setf(ctx->err, FX_EARG,
                                   "dim %d appears multiple times in the list of dims", d);
            p->reduced[d] = true;
        }
    } else {
        for (int d = 0; d < self->ndim; d++) p->reduced[d] = true;
    }
    for (int d = 0; d < self->ndim; d++) {
        if (p->reduced[d] && self->sizes[d] == 0 && (p->ord < 0 || isinf(p->ord)))
            return fx_err_setf(ctx->err, FX_EINDEX,
                               "linalg.vector_norm cannot compute the %g norm on an empty tensor "
                               "because the operation does not have an identity",
                               p->ord);
        if (!p->reduced[d])
            p->out_sizes[p->out_ndim++] = self->sizes[d];
        else if (keepdim)
            p->out_sizes[p->out_ndim++] = 1;
    }
    return FX_OK;
}

/* linalg_vector_norm: a fresh contiguous result of the (converted) input's dtype. */
int fx_meta_vector_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_norm_plan p;
    int rc = fx_norm_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *t;
    if ((rc = fx_tensor_empty(p.out_ndim, p.out_sizes, p.in_dtype, ctx->device, &t, ctx->err)))
        return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}
