/* core/shape.c — broadcasting, dim wrapping, view legality.
 * Layer: core. */
#include "core/shape.h"

#include <string.h>

#include "core/tensor_impl.h"

int fx_wrap_dim(int64_t dim, int ndim, int *out, fx_err *err) {
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n)
        return fx_err_setf(err, FX_EINDEX,
                           "Dimension out of range (expected to be in range of [%d, %d], but got "
                           "%lld)",
                           -n, n - 1, (long long)dim);
    *out = (int)(dim < 0 ? dim + n : dim);
    return FX_OK;
}

int fx_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                       int64_t *out, fx_err *err) {
    int n = na > nb ? na : nb;
    for (int i = n - 1; i >= 0; i--) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return fx_err_setf(err, FX_ESHAPE,
                               "The size of tensor a (%lld) must match the size of tensor b "
                               "(%lld) at non-singleton dimension %d",
                               (long long)sa, (long long)sb, i);
        out[i] = sa == 1 ? sb : sa;
    }
    *nout = n;
    return FX_OK;
}

int fx_expand_strides(const fx_tensor *t, int ndim, int64_t *sizes, int64_t *strides,
                      fx_err *err) {
    char b1[128], b2[128];
    if (ndim < t->ndim)
        return fx_err_setf(err, FX_ESHAPE,
                           "expand(torch.FloatTensor{%s}, size=%s): the number of sizes provided "
                           "(%d) must be greater or equal to the number of dimensions in the "
                           "tensor (%d)",
                           fx_shape_str(t->ndim, t->sizes, b1, sizeof b1),
                           fx_shape_str(ndim, sizes, b2, sizeof b2), ndim, t->ndim);
    for (int i = ndim - 1; i >= 0; i--) {
        int j = i - (ndim - t->ndim);
        if (j < 0) {
            if (sizes[i] < 0)
                return fx_err_setf(err, FX_ESHAPE,
                                   "The expanded size of the tensor (%lld) isn't allowed in a "
                                   "leading, non-existing dimension %d",
                                   (long long)sizes[i], i);
            strides[i] = 0;
            continue;
        }
        if (sizes[i] == -1) sizes[i] = t->sizes[j];
        if (t->sizes[j] == sizes[i]) strides[i] = t->strides[j];
        else if (t->sizes[j] == 1) strides[i] = 0;
        else
            return fx_err_setf(err, FX_ESHAPE,
                               "The expanded size of the tensor (%lld) must match the existing "
                               "size (%lld) at non-singleton dimension %d.  Target sizes: %s.  "
                               "Tensor sizes: %s",
                               (long long)sizes[i], (long long)t->sizes[j], i,
                               fx_shape_str(ndim, sizes, b1, sizeof b1),
                               fx_shape_str(t->ndim, t->sizes, b2, sizeof b2));
    }
    return FX_OK;
}

int fx_infer_view_shape(int n, const int64_t *shape, int64_t numel, int64_t *out, fx_err *err) {
    int infer = -1;
    int64_t prod = 1;
    char b[128];
    for (int i = 0; i < n; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) return fx_err_setf(err, FX_ESHAPE, "only one dimension can be inferred");
            infer = i;
        } else if (shape[i] < 0) {
            return fx_err_setf(err, FX_ESHAPE, "invalid shape dimension %lld", (long long)shape[i]);
        } else {
            prod *= shape[i];
        }
    }
    if (infer >= 0) {
        if (prod == 0)
            return fx_err_setf(err, FX_ESHAPE,
                               "cannot reshape tensor of 0 elements into shape %s because the "
                               "unspecified dimension size -1 can be any value and is ambiguous",
                               fx_shape_str(n, shape, b, sizeof b));
        if (numel % prod != 0) {
            return fx_err_setf(err, FX_ESHAPE, "shape '%s' is invalid for input of size %lld",
                               fx_shape_str(n, shape, b, sizeof b), (long long)numel);
        }
        out[infer] = numel / prod;
        return FX_OK;
    }
    if (prod != numel)
        return fx_err_setf(err, FX_ESHAPE, "shape '%s' is invalid for input of size %lld",
                           fx_shape_str(n, shape, b, sizeof b), (long long)numel);
    return FX_OK;
}

bool fx_view_strides(int ndim, const int64_t *sizes, const int64_t *strides, int new_ndim,
                     const int64_t *new_sizes, int64_t *new_strides) {
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) numel *= sizes[d];
    if (numel == 0) {
        fx_contiguous_strides(new_ndim, new_sizes, new_strides);
        return true;
    }
    if (ndim == 0) {
        for (int d = 0; d < new_ndim; d++) new_strides[d] = 1;
        return true;
    }
    /* computeStride: walk old dims from the back in chunks that are contiguous among
     * themselves, matching new dims against each chunk's element count. */
    int view_d = new_ndim - 1;
    int64_t chunk_base_stride = strides[ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        tensor_numel *= sizes[d];
        if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
                new_strides[view_d] = view_numel * chunk_base_stride;
                view_numel *= new_sizes[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base_stride = strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}
