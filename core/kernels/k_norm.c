/* core/kernels/k_norm.c — kernel of linalg_vector_norm (meta_norm.c).
 * Layer: core (private). Every input element is folded into its output element in double:
 * sum of |x|^p then the 1/p power (p = 2: sqrt of the sum of squares; p = 1: sum of |x|), max |x|
 * for inf, min |x| for -inf, the count of nonzeros for 0. NaN propagates. The result is rounded
 * once to the result dtype. */
#include <math.h>
#include <stdlib.h>

#include "core/kernels/k_cast.h"
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

int fx_k_vector_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    const fx_tensor *x = a[0].u.t;
    if (fx_tensor_is_meta(res)) return FX_OK;
    fx_norm_plan p;
    int rc = fx_norm_plan_make(ctx, a, &p);
    if (rc) return rc;
    const int64_t m = fx_tensor_numel(res), n = fx_tensor_numel(x);
    double *acc = malloc(sizeof(double) * (size_t)(m ? m : 1));
    if (!acc) return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory");
    const double init = isinf(p.ord) && p.ord < 0 ? INFINITY : 0.0; /* min |x| starts at inf */
    for (int64_t i = 0; i < m; i++) acc[i] = init;
    /* output strides over self's dims (0 along reduced dims) */
    int64_t ost[FX_MAX_DIMS], s = 1, idx[FX_MAX_DIMS] = {0};
    for (int d = x->ndim - 1; d >= 0; d--) {
        ost[d] = p.reduced[d] ? 0 : s;
        if (!p.reduced[d]) s *= x->sizes[d];
    }
    const char *src = fx_tensor_data(x);
    for (int64_t e = 0; e < n; e++) {
        if (e > 0 && e % FX_ITER_CANCEL_CHUNK == 0 && fx_interrupt_pending()) {
            fx_interrupt_stopped(); /* Ctrl-C: the dispatcher reports it */
            free(acc);
            return FX_OK;
        }
        double v =
            fabs(fx_dtype_load_f64(x->dtype, src, fx_index_offset(x->ndim, idx, x->strides)));
        double *r = &acc[fx_index_offset(x->ndim, idx, ost)];
        if (v != v)
            *r = v;
        else if (*r != *r)
            ;
        else if (isinf(p.ord))
            *r = p.ord > 0 ? (v > *r ? v : *r) : (v < *r ? v : *r);
        else if (p.ord == 0)
            *r += v != 0;
        else if (p.ord == 1)
            *r += v;
        else if (p.ord == 2)
            *r += v * v;
        else
            *r += pow(v, p.ord);
        fx_index_next(x->ndim, x->sizes, idx, -1);
    }
    for (int64_t i = 0; i < m; i++) {
        double r = acc[i];
        if (!isinf(p.ord) && p.ord != 0 && p.ord != 1)
            r = p.ord == 2 ? sqrt(r) : pow(r, 1.0 / p.ord);
        fx_dtype_store_f64(res->dtype, fx_tensor_data(res), i, r);
    }
    free(acc);
    return FX_OK;
}
