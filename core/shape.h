/* core/shape.h — broadcasting, dim wrapping, view legality, with PyTorch's error wording.
 * Layer: core. Follows aten/src/ATen/ExpandUtils.cpp (infer_size), c10/core/WrapDimMinimal.h
 * (maybe_wrap_dim) and aten/src/ATen/TensorUtils.cpp (computeStride for view). */
#ifndef FX_SHAPE_H
#define FX_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fx_err.h"
#include "core/tensor.h"

/* Wraps a possibly negative dim into [0, ndim) (ndim 0 is treated as 1, as PyTorch does).
 * FX_EINDEX: "Dimension out of range (expected to be in range of [-2, 1], but got 2)". */
int fx_wrap_dim(int64_t dim, int ndim, int *out, fx_err *err);

/* Broadcast shape of a and b (infer_size). FX_ESHAPE: "The size of tensor a (3) must match the
 * size of tensor b (4) at non-singleton dimension 1". */
int fx_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                       int64_t *out, fx_err *err);

/* Strides of t expanded to `sizes` (ndim >= t's ndim): 0 for broadcast dims. FX_ESHAPE as
 * expand's error "The expanded size of the tensor (4) must match the existing size (3) at
 * non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]". Size -1 keeps the
 * existing size. Writes the final sizes back into sizes. */
int fx_expand_strides(const fx_tensor *t, int ndim, int64_t *sizes, int64_t *strides,
                      fx_err *err);

/* Resolves a view/reshape shape with at most one -1 for numel elements (infer_size for view).
 * FX_ESHAPE: "shape '[2, 5]' is invalid for input of size 6", "only one dimension can be
 * inferred". */
int fx_infer_view_shape(int n, const int64_t *shape, int64_t numel, int64_t *out, fx_err *err);

/* Strides for viewing (sizes, strides) as new_sizes without copying (computeStride). Returns
 * false when impossible (the caller reports view's error or copies, as reshape does). */
bool fx_view_strides(int ndim, const int64_t *sizes, const int64_t *strides, int new_ndim,
                     const int64_t *new_sizes, int64_t *new_strides);

#endif
