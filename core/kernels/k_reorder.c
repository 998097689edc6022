/* core/kernels/k_reorder.c — kernels of flip and roll (meta_reorder.c).
 * Layer: core (private). Both move whole elements: every output element is copied (by element
 * size, so one loop serves every dtype) from the input element the plan names. The output is
 * walked in row-major order with a multi-index; a flat roll (no dims) walks the flattened
 * indices of self instead. */
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

/* flip, roll: out[0] is the fresh result. */
int fx_k_reorder(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    const fx_tensor *x = a[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    fx_reorder_plan p;
    int rc = fx_reorder_plan_make(ctx, a, &p);
    if (rc) return rc;
    const int nd = x->ndim;
    const int64_t n = fx_tensor_numel(x);
    if (n == 0) return FX_OK;
    const size_t es = fx_dtype_size(x->dtype);
    const char *src = fx_tensor_data(x);
    char *dst = fx_tensor_data(res);
    int64_t oi[FX_MAX_DIMS], si[FX_MAX_DIMS], sh[FX_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int64_t s = x->sizes[d];
        sh[d] = s ? ((p.shift[d] % s) + s) % s : 0;
    }
    const int64_t fs = ((p.flat_shift % n) + n) % n;
    for (int64_t f = 0; f < n; f++) {
        if (f > 0 && f % FX_ITER_CANCEL_CHUNK == 0 && fx_interrupt_pending()) {
            fx_interrupt_stopped(); /* Ctrl-C: the dispatcher reports it */
            return FX_OK;
        }
        if (p.flat) { /* output flat position f takes input flat position f - shift */
            fx_index_unravel(nd, x->sizes, ((f - fs) % n + n) % n, si);
            fx_index_unravel(nd, x->sizes, f, oi);
        } else {
            fx_index_unravel(nd, x->sizes, f, oi);
            for (int d = 0; d < nd; d++) {
                int64_t s = x->sizes[d];
                si[d] = p.flip[d] ? s - 1 - oi[d] : (oi[d] - sh[d] + s) % s;
            }
        }
        memcpy(dst + fx_index_offset(nd, oi, res->strides) * (int64_t)es,
               src + fx_index_offset(nd, si, x->strides) * (int64_t)es, es);
    }
    return FX_OK;
}

/* constant_pad_nd, reflection_pad*, replication_pad*: out[0] is the fresh (contiguous) result.
 * Along a padded dim, output index o reads input index i = o - before: outside [0, n) the
 * constant mode writes the value, reflect mirrors without repeating the edge (-i, 2(n-1) - i),
 * replicate clamps to the edge. A negative constant padding crops. */
int fx_k_pad(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    const fx_tensor *x = a[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    fx_pad_plan p;
    int rc = fx_pad_plan_make(ctx, a, &p);
    if (rc) return rc;
    const int nd = p.ndim;
    const int64_t n = fx_tensor_numel(res);
    const size_t es = fx_dtype_size(x->dtype);
    uint64_t fill = 0;
    if (p.mode == FX_PAD_CONSTANT) fx_k_scalar_store(x->dtype, &a[2], &fill);
    const char *src = fx_tensor_data(x);
    char *dst = fx_tensor_data(res);
    int64_t oi[FX_MAX_DIMS];
    for (int64_t f = 0; f < n; f++) {
        if (f > 0 && f % FX_ITER_CANCEL_CHUNK == 0 && fx_interrupt_pending()) {
            fx_interrupt_stopped(); /* Ctrl-C: the dispatcher reports it */
            return FX_OK;
        }
        fx_index_unravel(nd, p.out_sizes, f, oi);
        int64_t so = 0;
        bool inside = true;
        for (int d = 0; d < nd; d++) {
            int64_t s = x->sizes[d], i = oi[d] - p.before[d];
            if (i < 0 || i >= s) {
                if (p.mode == FX_PAD_CONSTANT) {
                    inside = false;
                    break;
                }
                if (p.mode == FX_PAD_REFLECT)
                    i = i < 0 ? -i : 2 * (s - 1) - i;
                else
                    i = i < 0 ? 0 : s - 1;
            }
            so += i * x->strides[d];
        }
        memcpy(dst + f * (int64_t)es, inside ? src + so * (int64_t)es : (const char *)&fill, es);
    }
    return FX_OK;
}
