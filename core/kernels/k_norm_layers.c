/* core/kernels/k_norm_layers.c — the CPU kernels of _native_batch_norm_legit and its variants,
 * and of group_norm / native_group_norm (meta_norm_layers.c).
 * Layer: core (kernels). Semantics of aten/src/ATen/native/cpu/batch_norm_kernel.cpp: per channel
 * c of input [N, C, *], over the N * prod(*) elements of that channel,
 *   training:   mean = sum x / n, var = sum (x - mean)^2 / n (biased), rstd = 1 / sqrt(var + eps);
 *               running_mean = momentum * mean + (1 - momentum) * running_mean,
 *               running_var = momentum * var * n / (n - 1) + (1 - momentum) * running_var
 *               (written into the arguments by _native_batch_norm_legit, returned as new tensors
 *               by _functional);
 *   evaluation: mean = running_mean, rstd = 1 / sqrt(running_var + eps);
 *   out = (x - mean) * rstd * weight + bias.
 * Everything is computed in double from a contiguous double copy of the input and rounded once
 * to the result dtypes; PyTorch's float32 sums agree within float rounding. Ctrl-C is looked at
 * between channels. */
#include <math.h>

#include "core/meta_common.h"
#include "core/ops_shape.h"

static double load1(const fx_tensor *t, int64_t i) {
    return fx_dtype_load_f64(t->dtype, fx_tensor_data(t), i * t->strides[0]);
}
/* *xd = a contiguous float64 copy of x, *yd = a float64 buffer shaped like it (new references;
 * both NULL on failure). */
static int double_buffers(fx_opctx *ctx, const fx_tensor *x, fx_tensor **xd, fx_tensor **yd) {
    *xd = *yd = NULL;
    int rc = fx_tensor_empty(x->ndim, x->sizes, FX_DTYPE_F64, FX_DEVICE_CPU, xd, ctx->err);
    if (!rc) rc = fx_tensor_empty(x->ndim, x->sizes, FX_DTYPE_F64, FX_DEVICE_CPU, yd, ctx->err);
    if (rc) {
        fx_tensor_release(*xd);
        *xd = NULL;
        return rc;
    }
    fx_kb_copy(*xd, x);
    return FX_OK;
}

static void store1(fx_tensor *t, int64_t i, double v) {
    fx_dtype_store_f64(t->dtype, fx_tensor_data(t), i * t->strides[0], v);
}

int fx_k_batch_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_batch_norm_args_t p;
    int rc = fx_batch_norm_args(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *x = p.input, *res = out[0].u.t;
    const bool functional = ctx->op->id == FX_OP__NATIVE_BATCH_NORM_LEGIT_FUNCTIONAL;
    const int64_t N = x->sizes[0], C = x->sizes[1], numel = fx_tensor_numel(x);
    const int64_t S = N > 0 && C > 0 ? numel / (N * C) : 0, cnt = N * S;
    fx_tensor *xd, *yd;
    if ((rc = double_buffers(ctx, x, &xd, &yd))) return rc;
    const double *xp = fx_tensor_data(xd);
    double *yp = fx_tensor_data(yd);
    for (int64_t c = 0; c < C; c++) {
        if (c > 0 && fx_interrupt_pending()) { /* the dispatcher reports it */
            fx_interrupt_stopped();
            goto done;
        }
        double mean, rstd;
        if (p.training) {
            double sum = 0, sq = 0;
            for (int64_t n = 0; n < N; n++)
                for (int64_t s = 0; s < S; s++) sum += xp[(n * C + c) * S + s];
            mean = sum / (double)cnt;
            for (int64_t n = 0; n < N; n++)
                for (int64_t s = 0; s < S; s++) {
                    double d = xp[(n * C + c) * S + s] - mean;
                    sq += d * d;
                }
            rstd = 1.0 / sqrt(sq / (double)cnt + p.eps);
            store1(out[1].u.t, c, mean);
            store1(out[2].u.t, c, rstd);
            if (p.running_mean) {
                double m = p.momentum, rm = load1(p.running_mean, c), rv = load1(p.running_var, c);
                rm = m * mean + (1 - m) * rm;
                rv = m * (sq / (double)(cnt - 1)) + (1 - m) * rv;
                store1(functional ? out[3].u.t : p.running_mean, c, rm);
                store1(functional ? out[4].u.t : p.running_var, c, rv);
            }
        } else {
            mean = load1(p.running_mean, c);
            rstd = 1.0 / sqrt(load1(p.running_var, c) + p.eps);
        }
        double w = p.weight ? load1(p.weight, c) : 1, b = p.bias ? load1(p.bias, c) : 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (n * C + c) * S + s;
                yp[i] = (xp[i] - mean) * rstd * w + b;
            }
    }
    fx_kb_copy(res, yd);
done:
    fx_tensor_release(xd);
    fx_tensor_release(yd);
    return rc;
}

/* group_norm / native_group_norm: per (n, g) the mean and biased variance of its C/G * HxW
 * elements; mean / rstd [N, G] for native_group_norm. Ctrl-C between groups. */
int fx_k_group_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_group_norm_args_t p;
    int rc = fx_group_norm_args(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *xd, *yd;
    const bool native = ctx->op->id == FX_OP_NATIVE_GROUP_NORM;
    const int64_t G = p.groups, D = p.c / G, len = D * p.hxw;
    if ((rc = double_buffers(ctx, p.input, &xd, &yd))) return rc;
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
