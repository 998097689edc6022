/* core/kernels/k_group_norm.c — the CPU kernel of group_norm / native_group_norm
 * (meta_group_norm.c).
 * Layer: core (kernels). Semantics of aten/src/ATen/native/cpu/group_norm_kernel.cpp: input
 * [N, C, *] seen as [N, G, C/G * HxW]; per (n, g) the mean and biased variance of those
 * elements, rstd = 1 / sqrt(var + eps); out = (x - mean) * rstd * weight[c] + bias[c];
 * native_group_norm also returns mean and rstd as [N, G]. Computed in double from a contiguous
 * double copy, rounded once to the result dtypes. Ctrl-C is looked at between groups. */
#include <math.h>

#include "core/meta_common.h"
#include "core/ops_shape.h"

static double load1(const fx_tensor *t, int64_t i) {
    return fx_dtype_load_f64(t->dtype, fx_tensor_data(t), i * t->strides[0]);
}

int fx_k_group_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_group_norm_args_t p;
    int rc = fx_group_norm_args(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *x = p.input, *xd = NULL, *yd = NULL;
    const bool native = ctx->op->id == FX_OP_NATIVE_GROUP_NORM;
    const int64_t G = p.groups, D = p.c / G, len = D * p.hxw;
    if ((rc = fx_tensor_empty(x->ndim, x->sizes, FX_DTYPE_F64, FX_DEVICE_CPU, &xd, ctx->err)) ||
        (rc = fx_tensor_empty(x->ndim, x->sizes, FX_DTYPE_F64, FX_DEVICE_CPU, &yd, ctx->err)))
        goto done;
    fx_kb_copy(xd, x);
    const double *xp = fx_tensor_data(xd);
    double *yp = fx_tensor_data(yd);
    for (int64_t ng = 0; ng < p.n * G; ng++) {
        if (ng > 0 && fx_interrupt_pending()) { /* the dispatcher reports it */
            fx_interrupt_stopped();
            goto done;
        }
        const double *xr = xp + ng * len;
        double *yr = yp + ng * len, sum = 0, sq = 0;
        for (int64_t i = 0; i < len; i++) sum += xr[i];
        double mean = len ? sum / (double)len : NAN;
        for (int64_t i = 0; i < len; i++) sq += (xr[i] - mean) * (xr[i] - mean);
        double rstd = 1.0 / sqrt((len ? sq / (double)len : NAN) + p.eps);
        int64_t g = ng % G;
        for (int64_t d = 0; d < D; d++) {
            int64_t c = g * D + d;
            double w = p.weight ? load1(p.weight, c) : 1, b = p.bias ? load1(p.bias, c) : 0;
            for (int64_t s = 0; s < p.hxw; s++) {
                int64_t i = d * p.hxw + s;
                yr[i] = (xr[i] - mean) * rstd * w + b;
            }
        }
        if (native) {
            fx_dtype_store_f64(out[1].u.t->dtype, fx_tensor_data(out[1].u.t), ng, mean);
            fx_dtype_store_f64(out[2].u.t->dtype, fx_tensor_data(out[2].u.t), ng, rstd);
        }
    }
    fx_kb_copy(out[0].u.t, yd);
done:
    fx_tensor_release(xd);
    fx_tensor_release(yd);
    return rc;
}
