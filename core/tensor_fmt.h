/* core/tensor_fmt.h — printing tensors as PyTorch's repr does.
 * Layer: core. Follows torch/_tensor_str.py: precision 4, scientific notation when the ratio
 * of max to min magnitude > 1000 or values are too large/small, integer-valued floats printed
 * with a trailing '.', summarization with '...' past 1000 elements (3 edge items per dim),
 * the `dtype=` suffix unless the dtype is float32 / int64 / bool (PyTorch's defaults), and
 * `device='meta'` (with `size=(...)`) for meta tensors. */
#ifndef FX_TENSOR_FMT_H
#define FX_TENSOR_FMT_H

#include "core/strbuf.h"
#include "core/tensor.h"

/* Appends repr(t): "tensor([1., 2., 3.], dtype=torch.float16)". */
void fx_tensor_format(fx_strbuf *sb, const fx_tensor *t);

#endif
