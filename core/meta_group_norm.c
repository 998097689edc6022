/* core/meta_group_norm.c — meta function of group_norm and native_group_norm.
 * Layer: core. Follows aten/src/ATen/native/group_norm.cpp (check_group_norm_inputs, the
 * mixed-type rule of native_group_norm). group_norm is recorded as itself, as layer_norm is
 * (torch.export keeps this functional composite; docs/CHOICES.md). */
#include <string.h>

#include "core/meta_common.h"
#include "core/ops_shape.h"
#include "core/shape.h"

static int opt_tensor(fx_opctx *ctx, const fx_ivalue *a, int i, fx_tensor **out) {
    *out = NULL;
    if (a[i].tag == FX_IV_NONE || a[i].tag == FX_IV_UNSET) return FX_OK;
    return fx_kb_tensor_arg(ctx, a, i, out);
}

int fx_group_norm_args(fx_opctx *ctx, const fx_ivalue *a, fx_group_norm_args_t *p) {
    memset(p, 0, sizeof *p);
    int rc;
    bool native = ctx->op->id == FX_OP_NATIVE_GROUP_NORM;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &p->input)) ||
        (rc = opt_tensor(ctx, a, native ? 1 : 2, &p->weight)) ||
        (rc = opt_tensor(ctx, a, native ? 2 : 3, &p->bias)))
        return rc;
    const fx_tensor *x = p->input;
    p->groups = native ? a[6].u.i : a[1].u.i;
    p->eps = fx_ivalue_to_f64(&a[native ? 7 : 4]);
    char b1[160], b2[160];
    if (x->ndim < 2)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "Dimension out of range (expected to be in range of [%d, %d], but got 1)",
                           x->ndim ? -x->ndim : -1, x->ndim ? x->ndim - 1 : 0);
    p->n = x->sizes[0];
    p->c = x->sizes[1];
    p->hxw = 1;
    for (int d = 2; d < x->ndim; d++) p->hxw *= x->sizes[d];
    if (native && (a[3].u.i != p->n || a[4].u.i != p->c || a[5].u.i != p->hxw))
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected input of %s to have N=%lld, C=%lld and HxW=%lld elements",
                           fx_shape_str(x->ndim, x->sizes, b1, sizeof b1), (long long)a[3].u.i,
                           (long long)a[4].u.i, (long long)a[5].u.i);
    if (p->groups <= 0)
        return fx_err_setf(ctx->err, FX_EARG, "Expected num groups to be greater than 0, got %lld",
                           (long long)p->groups);
    if (p->c % p->groups != 0)
        return fx_err_setf(ctx->err, FX_EARG,
                           "Expected number of channels in input to be divisible by num_groups, "
                           "but got input of shape %s and num_groups=%lld",
                           fx_shape_str(x->ndim, x->sizes, b1, sizeof b1), (long long)p->groups);
    const fx_tensor *ps[2] = {p->weight, p->bias};
    for (int i = 0; i < 2; i++)
        if (ps[i] && (ps[i]->ndim != 1 || ps[i]->sizes[0] != p->c))
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Expected %s to be a vector of size equal to the number of channels "
                               "in input, but got %s of shape %s and input of shape %s",
                               i ? "bias" : "weight", i ? "bias" : "weight",
                               fx_shape_str(ps[i]->ndim, ps[i]->sizes, b1, sizeof b1),
                               fx_shape_str(x->ndim, x->sizes, b2, sizeof b2));
    if (!fx_dtype_is_float(x->dtype))
        return fx_err_setf(ctx->err, FX_ETYPE, "\"GroupNormKernelImpl\" not implemented for '%s'",
                           fx_kb_scalar_name(x->dtype));
    p->mixed = false;
    for (int i = 0; i < 2; i++)
        if (ps[i] && ps[i]->dtype != x->dtype) p->mixed = true;
    if (p->mixed) {
        for (int i = 0; i < 2; i++)
            if (ps[i] && ps[i]->dtype != FX_DTYPE_F32)
                return fx_err_setf(ctx->err, FX_ETYPE,
                                   "mixed dtype (CPU): expect parameter to have scalar type of Float");
        if (x->dtype != FX_DTYPE_F16 && x->dtype != FX_DTYPE_BF16)
            return fx_err_setf(ctx->err, FX_ETYPE,
                               "mixed dtype (CPU): all inputs must share same datatype.");
    }
    return FX_OK;
}

/* group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None,
 * float eps=1e-05, bool cudnn_enabled=True) -> Tensor and native_group_norm(Tensor input,
 * Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) ->
 * (Tensor, Tensor, Tensor): input [N, C, *] floating, C divisible by the groups, weight / bias
 * [C]; out like input (dense strides kept); native_group_norm's mean / rstd are [N, group], in
 * input's dtype (float32 for a float16 / bfloat16 input with float32 parameters). */
int fx_meta_group_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_group_norm_args_t p;
    int rc = fx_group_norm_args(ctx, a, &p);
    if (rc) return rc;
    const fx_tensor *x = p.input;
    int64_t st[FX_MAX_DIMS];
    fx_kb_dense_strides(x, st);
    fx_tensor *t;
    if ((rc = fx_tensor_empty_strided(x->ndim, x->sizes, st, x->dtype, ctx->device, &t, ctx->err)))
        return rc;
    out[0] = fx_iv_tensor_steal(t);
    if (ctx->op->id != FX_OP_NATIVE_GROUP_NORM) return FX_OK;
    int64_t ss[2] = {p.n, p.groups};
    fx_dtype sdt = p.mixed ? FX_DTYPE_F32 : x->dtype;
    for (int i = 1; i < 3 && !rc; i++) {
        rc = fx_tensor_empty(2, ss, sdt, ctx->device, &t, ctx->err);
        if (!rc) out[i] = fx_iv_tensor_steal(t);
    }
    if (rc)
        for (int i = 0; i < 3; i++) fx_ivalue_clear(&out[i]);
    return rc;
}
