/* core/meta_conv.c — meta function of convolution and the composites conv1d / conv2d (int and
 * string padding).
 * Layer: core. Follows aten/src/ATen/native/Convolution.cpp: conv1d / conv2d are
 * CompositeImplicitAutograd — an unbatched input gets unsqueeze(0) before and squeeze(0) after,
 * padding="valid" is zero padding, padding="same" pads dilation * (k - 1) in total per dim (an
 * odd total puts the extra element on the right with constant_pad_nd first) and refuses
 * strides — and what the graph records is aten.convolution, as torch.export records it. The
 * result of convolution is a fresh contiguous [N, OC, *out] tensor of the input's dtype. */
#include <stdio.h>
#include <string.h>

#include "core/meta_common.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* An int list argument of nsp entries; a single entry stands for all (PyTorch's int[2] from 1). */
static int spatial_arg(fx_opctx *ctx, const fx_ivalue *a, int i, int nsp, int64_t *v) {
    int64_t tmp[FX_MAX_DIMS];
    int n, rc;
    if ((rc = fx_kb_ints_arg(ctx, a, i, tmp, &n))) return rc;
    if (n != 1 && n != nsp)
        return fx_err_setf(ctx->err, FX_EARG,
                           "expected %s to be a single integer value or a "
                           "list of %d values to match the convolution "
                           "dimensions, but got %s=[%d values]",
                           ctx->op->schema.args[i].name, nsp, ctx->op->schema.args[i].name, n);
    for (int d = 0; d < nsp; d++) v[d] = tmp[n == 1 ? 0 : d];
    return FX_OK;
}

static void list_str(int n, const int64_t *v, char *buf, size_t cap) {
    fx_shape_str(n, v, buf, cap);
}

int fx_conv_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_conv_plan *p) {
    memset(p, 0, sizeof *p);
    fx_tensor *in, *w;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &in)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &w)))
        return rc;
    const fx_tensor *b = a[2].tag == FX_IV_TENSOR ? a[2].u.t : NULL;
    p->has_bias = b != NULL;
    if (a[6].tag == FX_IV_BOOL && a[6].u.b)
        return fx_err_setf(ctx->err, FX_ENOTIMPL,
                           "transposed convolution is not yet supported by fxdb");
    int nsp = w->ndim - 2;
    char b1[160], b2[160];
    if (nsp < 1 || nsp > FX_CONV_MAX_SPATIAL)
        return fx_err_setf(ctx->err, FX_ENOTIMPL,
                           "convolution with a %d-dimensional weight is not supported by fxdb",
                           w->ndim);
    p->nsp = nsp;
    p->groups = a[8].tag == FX_IV_INT ? a[8].u.i : 1;
    if ((rc = spatial_arg(ctx, a, 3, nsp, p->stride)) ||
        (rc = spatial_arg(ctx, a, 4, nsp, p->pad)) || (rc = spatial_arg(ctx, a, 5, nsp, p->dil)))
        return rc;
    for (int d = 0; d < nsp; d++)
        if (p->stride[d] <= 0)
            return fx_err_setf(ctx->err, FX_EARG, "non-positive stride is not supported");
    for (int d = 0; d < nsp; d++)
        if (p->pad[d] < 0)
            return fx_err_setf(ctx->err, FX_EARG, "negative padding is not supported");
    for (int d = 0; d < nsp; d++)
        if (p->dil[d] <= 0)
            return fx_err_setf(ctx->err, FX_EARG,
                               "dilation should be greater than zero, but got %s",
                               (list_str(nsp, p->dil, b1, sizeof b1), b1));
    if (p->groups <= 0)
        return fx_err_setf(ctx->err, FX_EARG, "non-positive groups is not supported");
    if (in->ndim != w->ndim)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected %d-dimensional input for %d-dimensional weight %s, but got "
                           "%d-dimensional input of size %s instead",
                           w->ndim, w->ndim, (list_str(w->ndim, w->sizes, b1, sizeof b1), b1),
                           in->ndim, (list_str(in->ndim, in->sizes, b2, sizeof b2), b2));
    if (w->sizes[0] % p->groups)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Given groups=%lld, expected weight to be divisible by %lld at "
                           "dimension 0, but got weight of size [%s] instead",
                           (long long)p->groups, (long long)p->groups,
                           (list_str(w->ndim, w->sizes, b1, sizeof b1), b1));
    p->n = in->sizes[0];
    p->c = in->sizes[1];
    p->oc = w->sizes[0];
    if (p->c != w->sizes[1] * p->groups)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Given groups=%lld, weight of size %s, expected input%s to have %lld "
                           "channels, but got %lld channels instead",
                           (long long)p->groups, (list_str(w->ndim, w->sizes, b1, sizeof b1), b1),
                           (list_str(in->ndim, in->sizes, b2, sizeof b2), b2),
                           (long long)(w->sizes[1] * p->groups), (long long)p->c);
    if (b && (b->ndim != 1 || b->sizes[0] != p->oc))
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Given weight of size %s, expected bias to be 1-dimensional with %lld "
                           "elements, but got bias of size %s instead",
                           (list_str(w->ndim, w->sizes, b1, sizeof b1), b1), (long long)p->oc,
                           (list_str(b->ndim, b->sizes, b2, sizeof b2), b2));
    bool small = false;
    char pin[96] = "", ks[96] = "";
    for (int d = 0; d < nsp; d++) {
        p->in[d] = in->sizes[d + 2];
        p->k[d] = w->sizes[d + 2];
        int64_t padded, eff;
        if (__builtin_mul_overflow(p->pad[d], 2, &padded) ||
            __builtin_add_overflow(padded, p->in[d], &padded) ||
            __builtin_mul_overflow(p->dil[d], p->k[d] - 1, &eff) ||
            __builtin_add_overflow(eff, 1, &eff))
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "convolution: padding or dilation of spatial dim %d overflows int64",
                               d);
        if (padded < eff) small = true;
        size_t l1 = strlen(pin), l2 = strlen(ks);
        snprintf(pin + l1, sizeof pin - l1, "%s%lld", d ? " x " : "", (long long)padded);
        snprintf(ks + l2, sizeof ks - l2, "%s%lld", d ? " x " : "", (long long)eff);
        p->out[d] = padded < eff ? 0 : (padded - eff) / p->stride[d] + 1;
    }
    if (small)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Calculated padded input size per channel: (%s). Kernel size: (%s). "
                           "Kernel size can't be greater than actual input size",
                           pin, ks);
    if (in->dtype != w->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE, "expected scalar type %s but found %s",
                           fx_dtype_c10_name(in->dtype), fx_dtype_c10_name(w->dtype));
    if (b && b->dtype != in->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "Input type (%s) and bias type (%s) should be the same",
                           fx_typemeta_name(in->dtype), fx_typemeta_name(b->dtype));
    if (in->dtype == FX_DTYPE_BOOL)
        return fx_err_setf(ctx->err, FX_ETYPE, "\"slow_conv%dd_cpu\" not implemented for 'Bool'",
                           nsp);
    return FX_OK;
}

int fx_meta_convolution(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_conv_plan p;
    int rc = fx_conv_plan_make(ctx, a, &p);
    if (rc) return rc;
    int64_t sizes[FX_MAX_DIMS] = {p.n, p.oc};
    for (int d = 0; d < p.nsp; d++) sizes[d + 2] = p.out[d];
    fx_tensor *t;
    if ((rc = fx_tensor_empty(p.nsp + 2, sizes, a[0].u.t->dtype, ctx->device, &t, ctx->err)))
        return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* ---- conv1d / conv2d --------------------------------------------------------------------- */

static fx_ivalue borrow(fx_tensor *t) { return (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t}; }

static int int_list(int n, const int64_t *v, fx_ivalue *out, fx_err *err) {
    return fx_iv_int_list(n, v, out, err);
}

/* conv1d / conv2d (int padding) and conv1d.padding / conv2d.padding (string). */
int fx_c_conv(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_op_id id = ctx->op->id;
    const int nsp = id == FX_OP_CONV1D || id == FX_OP_CONV1D_PADDING ? 1 : 2;
    const char *name = nsp == 1 ? "conv1d" : "conv2d";
    fx_tensor *in, *w;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &in)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &w)))
        return rc;
    if (in->ndim != nsp + 1 && in->ndim != nsp + 2) {
        char b[160];
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected %dD (unbatched) or %dD (batched) input to %s, but got input "
                           "of size: %s",
                           nsp + 1, nsp + 2, name, fx_shape_str(in->ndim, in->sizes, b, sizeof b));
    }
    int64_t stride[FX_MAX_DIMS], pad[FX_MAX_DIMS], dil[FX_MAX_DIMS], zeros[FX_MAX_DIMS] = {0};
    if ((rc = spatial_arg(ctx, a, 3, nsp, stride)) || (rc = spatial_arg(ctx, a, 5, nsp, dil)))
        return rc;
    bool batched = in->ndim == nsp + 2;
    fx_tensor *x = NULL, *tmp = NULL;
    if (batched) {
        x = fx_tensor_retain(in);
    } else {
        fx_ivalue v = borrow(in), z = fx_iv_int(0);
        if ((rc = fx_call_t(ctx->ctx, FX_OP_UNSQUEEZE, &x, ctx->err, 2, &v, &z))) return rc;
    }
    if (id == FX_OP_CONV1D_PADDING || id == FX_OP_CONV2D_PADDING) {
        const char *mode = a[4].tag == FX_IV_STR ? a[4].u.s : "valid";
        if (!strcmp(mode, "valid")) {
            memset(pad, 0, sizeof pad);
        } else if (!strcmp(mode, "same")) {
            for (int d = 0; d < nsp; d++)
                if (stride[d] != 1) {
                    fx_tensor_release(x);
                    return fx_err_setf(ctx->err, FX_EARG,
                                       "padding='same' is not supported for strided convolutions");
                }
            int64_t pad_nd[2 * FX_CONV_MAX_SPATIAL] = {0};
            bool symmetric = true;
            for (int d = 0; d < nsp && w->ndim == nsp + 2; d++) {
                int64_t total = dil[d] * (w->sizes[d + 2] - 1), left = total / 2;
                pad[d] = left;
                if (total - left != left) {
                    symmetric = false;
                    pad_nd[2 * (nsp - 1 - d) + 1] = total - 2 * left; /* extra on the right */
                }
            }
            if (!symmetric) {
                fx_ivalue xv = borrow(x), pl, zero = fx_iv_int(0);
                if ((rc = int_list(2 * nsp, pad_nd, &pl, ctx->err))) {
                    fx_tensor_release(x);
                    return rc;
                }
                rc = fx_call_t(ctx->ctx, FX_OP_CONSTANT_PAD_ND, &tmp, ctx->err, 3, &xv, &pl, &zero);
                fx_ivalue_clear(&pl);
                fx_tensor_release(x);
                if (rc) return rc;
                x = tmp;
            }
        } else {
            fx_tensor_release(x);
            return fx_err_setf(ctx->err, FX_EARG, "Invalid padding string: '%s'", mode);
        }
    } else if ((rc = spatial_arg(ctx, a, 4, nsp, pad))) {
        fx_tensor_release(x);
        return rc;
    }
    fx_ivalue args[9], r;
    memset(args, 0, sizeof args);
    args[0] = borrow(x);
    args[1] = a[1];
    args[2] = a[2];
    bool ok = !int_list(nsp, stride, &args[3], ctx->err);
    ok = ok && !int_list(nsp, pad, &args[4], ctx->err);
    ok = ok && !int_list(nsp, dil, &args[5], ctx->err);
    args[6] = fx_iv_bool(false);
    ok = ok && !int_list(nsp, zeros, &args[7], ctx->err);
    args[8] = a[6].tag == FX_IV_NONE ? fx_iv_int(1) : a[6];
    if (ok)
        rc = fx_call(ctx->ctx, FX_OP_CONVOLUTION, &r, ctx->err, 9, &args[0], &args[1], &args[2],
                     &args[3], &args[4], &args[5], &args[6], &args[7], &args[8]);
    else
        rc = FX_ENOMEM;
    for (int i = 3; i < 8; i++)
        if (i != 6) fx_ivalue_clear(&args[i]);
    fx_tensor_release(x);
    if (rc) return rc;
    if (batched) {
        out[0] = r;
        return FX_OK;
    }
    fx_ivalue z = fx_iv_int(0);
    rc = fx_call(ctx->ctx, FX_OP_SQUEEZE_DIM, &out[0], ctx->err, 2, &r, &z);
    fx_ivalue_clear(&r);
    return rc;
}
