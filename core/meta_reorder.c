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
        int64_t sz = self->sizes[d]; /* rolling a dim twice adds the shifts (modulo its size) */
        if (sz) p->shift[d] = (p->shift[d] + v[i] % sz) % sz;
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

/* ---- padding ----------------------------------------------------------------------------------
 */

int fx_pad_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_pad_plan *p) {
    memset(p, 0, sizeof *p);
    fx_tensor *self;
    int rc, n;
    int64_t pad[2 * FX_MAX_DIMS];
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (a[1].tag != FX_IV_LIST || a[1].u.list.n > 2 * FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'pad' must be tuple of ints",
                           ctx->op->schema.name);
    n = a[1].u.list.n;
    for (int i = 0; i < n; i++) {
        if (a[1].u.list.items[i].tag != FX_IV_INT)
            return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'pad' must be tuple of ints",
                               ctx->op->schema.name);
        pad[i] = a[1].u.list.items[i].u.i;
    }
    fx_op_id id = ctx->op->id;
    const int nd = self->ndim;
    p->ndim = nd;
    if (id == FX_OP_CONSTANT_PAD_ND) {
        if (n % 2)
            return fx_err_setf(ctx->err, FX_EARG,
                               "Length of pad must be even but instead it equals %d", n);
        if (n > 2 * nd)
            return fx_err_setf(ctx->err, FX_EARG,
                               "Length of pad should be no more than twice the number of "
                               "dimensions of the input. Pad length is %d while the input has "
                               "%d dimensions.",
                               n, nd);
    } else {
        bool reflect = id == FX_OP_REFLECTION_PAD1D || id == FX_OP_REFLECTION_PAD2D ||
                       id == FX_OP_REFLECTION_PAD3D;
        p->mode = reflect ? FX_PAD_REFLECT : FX_PAD_REPLICATE;
        int k = n / 2; /* 1d, 2d, 3d: the last k dims, input of rank k+1 or k+2 */
        if (nd != k + 1 && nd != k + 2)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "%dD or %dD (batch mode) tensor expected for input, but got: %s",
                               k + 1, k + 2, "a tensor of another rank");
        if (self->dtype == FX_DTYPE_BOOL)
            return fx_err_setf(ctx->err, FX_ETYPE, "\"%s\" not implemented for 'Bool'",
                               ctx->op->schema.name);
    }
    for (int i = 0; i < n / 2; i++) {
        int d = nd - 1 - i;
        p->before[d] = pad[2 * i];
        p->after[d] = pad[2 * i + 1];
        if (p->mode == FX_PAD_REFLECT &&
            (p->before[d] >= self->sizes[d] || p->after[d] >= self->sizes[d])) {
            char b[160];
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Argument #%d: Padding size should be less than the corresponding "
                               "input dimension, but got: padding (%lld, %lld) at dimension %d "
                               "of input %s",
                               4 + 2 * i, (long long)p->before[d], (long long)p->after[d], d,
                               fx_shape_str(nd, self->sizes, b, sizeof b));
        }
        if (p->mode != FX_PAD_CONSTANT && self->sizes[d] == 0)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "%s(): input dimension %d of size 0 cannot be padded",
                               ctx->op->schema.name, d);
    }
    for (int d = 0; d < nd; d++) {
        int64_t o;
        if (__builtin_add_overflow(self->sizes[d], p->before[d], &o) ||
            __builtin_add_overflow(o, p->after[d], &o))
            return fx_err_setf(
                ctx->err, FX_ESHAPE, "%s(): padding (%lld, %lld) of dimension %d overflows int64",
                ctx->op->schema.name, (long long)p->before[d], (long long)p->after[d], d);
        if (o < 0)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "The input size %lld, plus negative padding %lld and %lld resulted "
                               "in a negative output size, which is invalid. Check dimension %d "
                               "of your input.",
                               (long long)self->sizes[d], (long long)p->before[d],
                               (long long)p->after[d], d);
        p->out_sizes[d] = o;
    }
    return FX_OK;
}

/* constant_pad_nd, reflection_pad*, replication_pad*: a fresh contiguous tensor of self's
 * dtype. */
int fx_meta_pad(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_pad_plan p;
    int rc = fx_pad_plan_make(ctx, a, &p);
    if (rc) return rc;
    const fx_tensor *self = a[0].u.t;
    if (ctx->op->id == FX_OP_CONSTANT_PAD_ND &&
        (rc = fx_scalar_check(self->dtype, &a[2], ctx->err)))
        return rc;
    fx_tensor *t;
    if ((rc = fx_tensor_empty(p.ndim, p.out_sizes, self->dtype, ctx->device, &t, ctx->err)))
        return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor: aten's
 * CompositeImplicitAutograd pad — constant_pad_nd(self, pad, value or 0) for "constant";
 * otherwise no value, and reflection_pad / replication_pad 1d, 2d, 3d chosen by the pad length
 * (2, 4, 6) for an input of one or two more dims ("circular" is not in fxdb yet). */
int fx_c_pad(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (a[1].tag != FX_IV_LIST)
        return fx_err_setf(ctx->err, FX_EARG, "pad(): argument 'pad' must be tuple of ints");
    int n = a[1].u.list.n, nd = self->ndim;
    const char *mode = a[2].tag == FX_IV_STR ? a[2].u.s : "constant";
    if (n % 2) return fx_err_setf(ctx->err, FX_EARG, "Padding length must be divisible by 2");
    if (n > 2 * nd)
        return fx_err_setf(ctx->err, FX_EARG,
                           "Padding length should be less than or equal to two times the input "
                           "dimension but got padding length %d and input of dimension %d",
                           n, nd);
    if (!strcmp(mode, "constant")) {
        fx_ivalue v = a[3].tag == FX_IV_NONE ? fx_iv_float(0.0) : a[3];
        return fx_call(ctx->ctx, FX_OP_CONSTANT_PAD_ND, &out[0], ctx->err, 3, &a[0], &a[1], &v);
    }
    bool reflect = !strcmp(mode, "reflect"), replicate = !strcmp(mode, "replicate");
    if (!reflect && !replicate && strcmp(mode, "circular"))
        return fx_err_setf(ctx->err, FX_EARG, "Unrecognised padding mode %s", mode);
    if (a[3].tag != FX_IV_NONE && fx_ivalue_to_f64(&a[3]) != 0)
        return fx_err_setf(ctx->err, FX_EARG, "Padding mode \"%s\" doesn't take in value argument",
                           mode);
    if (!reflect && !replicate)
        return fx_err_setf(ctx->err, FX_ENOTIMPL,
                           "pad(): mode \"circular\" is not yet supported by fxdb");
    int k = n / 2;
    if (k < 1 || k > 3 || (nd != k + 1 && nd != k + 2))
        return fx_err_setf(ctx->err, FX_EARG,
                           "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported "
                           "for now");
    static const fx_op_id ops[2][3] = {
        {FX_OP_REFLECTION_PAD1D, FX_OP_REFLECTION_PAD2D, FX_OP_REFLECTION_PAD3D},
        {FX_OP_REPLICATION_PAD1D, FX_OP_REPLICATION_PAD2D, FX_OP_REPLICATION_PAD3D}};
    return fx_call(ctx->ctx, ops[replicate][k - 1], &out[0], ctx->err, 2, &a[0], &a[1]);
}
