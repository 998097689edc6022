/* core/kernels/k_reduce.c — sum and mean over any set of dims.
 * Layer: core (private). The input (cast first to the dtype argument when one is given) is
 * walked once in row-major order together with an accumulator buffer that has the output's
 * shape with stride 0 on the reduced dims, so one k_iter pass serves every dim set and stride
 * pattern. Rows whose accumulator stride is 0 are summed horizontally (a register sum, with
 * eight partial sums on dense rows so the loop vectorizes); otherwise each row adds into a row
 * of accumulators (vertical). Floating inputs accumulate in double, integers and bools in
 * int64 (wrapping), then the result is rounded once into the output (divided by the count
 * first for mean). */
#include "core/fx_alloc.h"
#include "core/kernels/k_cast.h"
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

/* p[0]: accumulators (double or int64), p[1]: input elements of dtype ID. */
#define RED_LOOP(ID, ST, VT, ACC)                                                                  \
    static void red_##ID(void *ud, int64_t n, char *const *p, const int64_t *st) {                 \
        (void)ud;                                                                                  \
        if (st[0] == 0) {                                                                          \
            ACC s = 0;                                                                             \
            if (st[1] == (int64_t)sizeof(ST)) {                                                    \
                const ST *restrict x = (const ST *)p[1];                                           \
                ACC part[8] = {0};                                                                 \
                int64_t i = 0;                                                                     \
                for (; i + 8 <= n; i += 8)                                                         \
                    for (int k = 0; k < 8; k++) part[k] += (ACC)K_LOAD_##ID(x + i + k);            \
                for (int k = 0; k < 8; k++) s += part[k];                                          \
                for (; i < n; i++) s += (ACC)K_LOAD_##ID(x + i);                                   \
            } else {                                                                               \
                for (int64_t i = 0; i < n; i++) s += (ACC)K_LOAD_##ID(p[1] + i * st[1]);           \
            }                                                                                      \
            *(ACC *)p[0] += s;                                                                     \
        } else if (st[0] == (int64_t)sizeof(ACC) && st[1] == (int64_t)sizeof(ST)) {                \
            ACC *restrict acc = (ACC *)p[0];                                                       \
            const ST *restrict x = (const ST *)p[1];                                               \
            for (int64_t i = 0; i < n; i++) acc[i] += (ACC)K_LOAD_##ID(x + i);                     \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                *(ACC *)(p[0] + i * st[0]) += (ACC)K_LOAD_##ID(p[1] + i * st[1]);                  \
        }                                                                                          \
    }
RED_LOOP(F32, float, float, double)
RED_LOOP(F64, double, double, double)
RED_LOOP(F16, uint16_t, float, double)
RED_LOOP(BF16, uint16_t, float, double)
/* Integers: int64 accumulation that wraps (unsigned arithmetic). */
RED_LOOP(I64, int64_t, int64_t, uint64_t)
RED_LOOP(I32, int32_t, int32_t, uint64_t)
RED_LOOP(I16, int16_t, int16_t, uint64_t)
RED_LOOP(I8, int8_t, int8_t, uint64_t)
RED_LOOP(U8, uint8_t, uint8_t, uint64_t)
RED_LOOP(BOOL, uint8_t, uint8_t, uint64_t)

static const fx_iter_loop k_red_loops[FX_DTYPE_COUNT] = {
    red_F32, red_F64, red_F16, red_BF16, red_I64, red_I32, red_I16, red_I8, red_U8, red_BOOL};

/* sum, sum.dim_IntList, mean, mean.dim: out[0] is the fresh contiguous result. */
int fx_k_reduce(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_reduce_plan p;
    int rc = fx_reduce_plan_make(ctx, a, &p);
    if (rc) return rc;
    fx_tensor *res = out[0].u.t;
    const fx_tensor *x = a[0].u.t;
    if (fx_tensor_is_meta(res) || fx_tensor_is_meta(x)) return FX_OK;

    fx_tensor *cast = NULL;
    if (p.in_dtype != x->dtype) {
        if ((rc = fx_k_to_dtype(x, p.in_dtype, &cast, ctx->err))) return rc;
        x = cast;
    }
    const bool fp = fx_dtype_is_float(x->dtype);
    const int64_t nout = fx_tensor_numel(res);
    void *acc = fx_calloc((size_t)(nout > 0 ? nout : 1), 8);
    if (!acc) {
        fx_tensor_release(cast);
        return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory allocating a reduction buffer");
    }
    /* accumulator strides over x's shape: contiguous over kept dims, 0 over reduced dims */
    int64_t astr[FX_MAX_DIMS] = {0}, s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        astr[d] = p.reduced[d] ? 0 : s;
        if (!p.reduced[d]) s *= x->sizes[d];
    }
    fx_iter it;
    fx_iter_init(&it, x->ndim, x->sizes);
    fx_iter_add_raw(&it, acc, astr, 8);
    fx_iter_add(&it, x);
    fx_iter_coalesce(&it);
    fx_iter_run_all(&it, k_red_loops[x->dtype], NULL);

    char *o = fx_tensor_data(res);
    const int64_t es = (int64_t)fx_dtype_size(res->dtype);
    for (int64_t i = 0; i < nout; i++) {
        if (fp) {
            double v = ((const double *)acc)[i];
            if (p.is_mean) v /= (double)p.count;
            fx_k_store_f64(res->dtype, o + i * es, v);
        } else {
            int64_t v = (int64_t)((const uint64_t *)acc)[i];
            fx_k_store_i64(res->dtype, o + i * es, v);
        }
    }
    fx_free(acc);
    fx_tensor_release(cast);
    return FX_OK;
}
