/* core/kernels/k_conv.c — kernel of convolution (meta_conv.c): im2col + GEMM.
 * Layer: core (private). For each batch element and group, the input patches are unfolded into
 * a column matrix [C/groups * prod(k), prod(out)] (zeros where the window reaches the padding),
 * and the group's weight rows [OC/groups, C/groups * prod(k)] multiply it through fx_kb_gemm
 * (OpenBLAS sgemm / dgemm for float32 / float64; the half types accumulate in float32; integers
 * in a plain loop), writing straight into the contiguous result; the bias is added last. Values
 * are moved by element size, so the unfolding serves every dtype. */
#include <stdlib.h>
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/ops_shape.h"

int fx_k_convolution(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    fx_conv_plan p;
    int rc = fx_conv_plan_make(ctx, a, &p);
    if (rc) return rc;
    const fx_tensor *x = a[0].u.t, *w0 = a[1].u.t;
    const fx_tensor *b = a[2].tag == FX_IV_TENSOR ? a[2].u.t : NULL;
    const fx_dtype dt = x->dtype;
    const size_t es = fx_dtype_size(dt);
    const int nsp = p.nsp;
    int64_t ksz = 1, osz = 1;
    for (int d = 0; d < nsp; d++) ksz *= p.k[d], osz *= p.out[d];
    const int64_t cg = p.c / p.groups, ocg = p.oc / p.groups, K = cg * ksz;
    if (fx_tensor_numel(res) == 0) return FX_OK;
    fx_tensor *wc = NULL; /* the weight as contiguous rows [OC, K] */
    const fx_tensor *w = w0;
    if (!fx_tensor_is_contiguous(w0)) {
        if ((rc = fx_tensor_empty(w0->ndim, w0->sizes, dt, FX_DEVICE_CPU, &wc, ctx->err)))
            return rc;
        fx_k_copy_tensor(wc, w0);
        w = wc;
    }
    char *col = malloc((size_t)(K * osz) * es + 1);
    if (!col) {
        fx_tensor_release(wc);
        return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory");
    }
    const char *src = fx_tensor_data(x);
    const char *wd = fx_tensor_data(w);
    char *dst = fx_tensor_data(res);
    bool stopped = false;
    for (int64_t n = 0; n < p.n && !rc && !stopped; n++)
        for (int64_t g = 0; g < p.groups && !rc && !stopped; g++) {
            if ((n > 0 || g > 0) && fx_interrupt_pending()) { /* Ctrl-C between (batch, group) */
                fx_interrupt_stopped();
                stopped = true;
                break;
            }
            /* im2col: row r = (channel, kernel offsets), column = output position */
            for (int64_t r = 0; r < K; r++) {
                int64_t c = g * cg + r / ksz, kr = r % ksz, ki[FX_CONV_MAX_SPATIAL];
                for (int d = nsp - 1; d >= 0; d--) ki[d] = kr % p.k[d], kr /= p.k[d];
                const int64_t base = n * x->strides[0] + c * x->strides[1];
                for (int64_t o = 0; o < osz; o++) {
                    int64_t orem = o, off = base;
                    bool inside = true;
                    for (int d = nsp - 1; d >= 0; d--) {
                        int64_t od = orem % p.out[d];
                        orem /= p.out[d];
                        int64_t id = od * p.stride[d] - p.pad[d] + ki[d] * p.dil[d];
                        if (id < 0 || id >= p.in[d]) inside = false;
                        off += id * x->strides[d + 2];
                    }
                    char *cell = col + (r * osz + o) * (int64_t)es;
                    if (inside)
                        memcpy(cell, src + off * (int64_t)es, es);
                    else
                        memset(cell, 0, es);
                }
            }
            char *og = dst + ((n * p.oc + g * ocg) * osz) * (int64_t)es;
            rc = fx_kb_gemm(dt, wd + (g * ocg * K) * (int64_t)es, ocg, K, K, 1, col, osz, osz, 1,
                            og, osz, 1.0, 0.0, ctx->err);
        }
    free(col);
    fx_tensor_release(wc);
    if (rc || !b || stopped) return rc; /* stopped: the dispatcher reports the interrupt */
    /* bias: out[n, oc, ...] += b[oc], in the result dtype (float math for the float types) */
    for (int64_t n = 0; n < p.n; n++)
        for (int64_t oc = 0; oc < p.oc; oc++) {
            int64_t boff = oc * b->strides[0], base = (n * p.oc + oc) * osz;
            if (fx_dtype_is_float(dt)) {
                double bv = fx_dtype_load_f64(dt, fx_tensor_data(b), boff);
                for (int64_t o = 0; o < osz; o++)
                    fx_dtype_store_f64(dt, dst, base + o,
                                       fx_dtype_load_f64(dt, dst, base + o) + bv);
            } else {
                int64_t bv = fx_dtype_load_i64(dt, fx_tensor_data(b), boff);
                for (int64_t o = 0; o < osz; o++)
                    fx_dtype_store_i64(dt, dst, base + o,
                                       fx_dtype_load_i64(dt, dst, base + o) + bv);
            }
        }
    return FX_OK;
}
