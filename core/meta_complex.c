/* core/meta_complex.c — meta functions of the complex-number ops: view_as_real, view_as_complex
 * (views that reinterpret the storage with another dtype), polar and complex (a complex result
 * built from two real tensors), conj_physical.
 * Layer: core. Follows aten/src/ATen/native/ComplexHelper.h (the view geometry and its checks)
 * and TensorFactories.cpp (complex_check_floating / complex_check_dtype). fxdb has no
 * complex32, so the half-precision forms PyTorch allows are refused with a message saying so. */
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* view_as_real(Tensor(a) self) -> Tensor(a): sizes + [2], strides * 2 + [1], offset * 2, in the
 * real dtype of self's complex dtype. */
int fx_meta_view_as_real(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (!fx_dtype_is_complex(self->dtype))
        return fx_err_setf(ctx->err, FX_EARG, "view_as_real is only supported for complex tensors");
    if (self->ndim >= FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_ESHAPE, "view_as_real: fxdb tensors have at most %d dims",
                           FX_MAX_DIMS);
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    for (int d = 0; d < self->ndim; d++) sizes[d] = self->sizes[d], strides[d] = self->strides[d] * 2;
    sizes[self->ndim] = 2;
    strides[self->ndim] = 1;
    fx_tensor *v;
    rc = fx_tensor_as_strided_dtype(self, fx_dtype_to_real(self->dtype), self->ndim + 1, sizes,
                                    strides, self->offset * 2, &v, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(v);
    return FX_OK;
}

/* view_as_complex(Tensor(a) self) -> Tensor(a): the last dim (size 2, stride 1) becomes the
 * parts of one complex element; every other stride and the offset must be even. */
int fx_meta_view_as_complex(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    fx_err *err = ctx->err;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (self->dtype == FX_DTYPE_F16)
        return fx_err_setf(err, FX_ETYPE,
                           "view_as_complex: fxdb has no complex32 (ComplexHalf) dtype; convert "
                           "the Half tensor to float32 first");
    if (self->dtype != FX_DTYPE_F32 && self->dtype != FX_DTYPE_F64)
        return fx_err_setf(err, FX_ETYPE,
                           "view_as_complex is only supported for half, float and double "
                           "tensors, but got a tensor of scalar type: %s",
                           fx_dtype_c10_name(self->dtype));
    int nd = self->ndim;
    if (nd == 0) return fx_err_setf(err, FX_ESHAPE, "Input tensor must have one or more dimensions");
    if (self->sizes[nd - 1] != 2)
        return fx_err_setf(err, FX_ESHAPE, "Tensor must have a last dimension of size 2");
    if (self->strides[nd - 1] != 1)
        return fx_err_setf(err, FX_ESHAPE, "Tensor must have a last dimension with stride 1");
    int64_t strides[FX_MAX_DIMS];
    for (int d = 0; d < nd - 1; d++) {
        if (self->strides[d] % 2 != 0)
            return fx_err_setf(err, FX_ESHAPE,
                               "Tensor must have a stride divisible by 2 for all but last "
                               "dimension");
        strides[d] = self->strides[d] / 2;
    }
    if (self->offset % 2 != 0)
        return fx_err_setf(err, FX_ESHAPE, "Tensor must have a storage_offset divisible by 2");
    fx_tensor *v;
    rc = fx_tensor_as_strided_dtype(self, fx_dtype_to_complex(self->dtype), nd - 1, self->sizes,
                                    strides, self->offset / 2, &v, err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(v);
    return FX_OK;
}

/* polar(Tensor abs, Tensor angle) / complex(Tensor real, Tensor imag) -> Tensor: both float or
 * double of one dtype, broadcast together; the result is the complex dtype of their precision,
 * laid out as TensorIterator lays out a binary op's output. */
int fx_meta_polar(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *x, *y;
    int rc;
    fx_err *err = ctx->err;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &x)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &y))) return rc;
    bool okx = x->dtype == FX_DTYPE_F32 || x->dtype == FX_DTYPE_F64 || x->dtype == FX_DTYPE_F16;
    bool oky = y->dtype == FX_DTYPE_F32 || y->dtype == FX_DTYPE_F64 || y->dtype == FX_DTYPE_F16;
    if (!okx || !oky)
        return fx_err_setf(err, FX_ETYPE,
                           "Expected both inputs to be Half, Float or Double tensors but got %s "
                           "and %s",
                           fx_dtype_c10_name(x->dtype), fx_dtype_c10_name(y->dtype));
    if (x->dtype != y->dtype)
        return fx_err_setf(err, FX_ETYPE,
                           "Expected object of scalar type %s but got scalar type %s for second "
                           "argument",
                           fx_dtype_c10_name(x->dtype), fx_dtype_c10_name(y->dtype));
    if (x->dtype == FX_DTYPE_F16)
        return fx_err_setf(err, FX_ETYPE,
                           "%s: fxdb has no complex32 (ComplexHalf) dtype; convert the Half "
                           "tensors to float32 first",
                           ctx->op->schema.name);
    int nd;
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    if ((rc = fx_broadcast_shape(x->ndim, x->sizes, y->ndim, y->sizes, &nd, sizes, err))) return rc;
    const fx_tensor *ins[2] = {x, y};
    fx_layout_strides(nd, sizes, 2, ins, strides);
    fx_tensor *t;
    rc = fx_tensor_empty_strided(nd, sizes, strides, fx_dtype_to_complex(x->dtype), ctx->device, &t,
                                 err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}
