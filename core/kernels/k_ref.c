/* core/kernels/k_ref.c — naive reference kernels (test-only; see k_ref.h).
 * Layer: core (private, test-only). Deliberately slow and plain. */
#include "core/kernels/k_ref.h"

#include <math.h>
#include <stdlib.h>

#include "core/tensor_impl.h"

/* Offset (elements) of the element of t seen at out multi-index idx (nd dims), broadcasting. */
static int64_t bcast_offset(const fx_tensor *t, int nd, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) {
        int od = d + (nd - t->ndim);
        int64_t i = t->sizes[d] == 1 ? 0 : idx[od];
        off += i * t->strides[d];
    }
    return off;
}

static void unravel(int64_t i, int nd, const int64_t *sizes, int64_t *idx) {
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = sizes[d] ? i % sizes[d] : 0;
        i = sizes[d] ? i / sizes[d] : 0;
    }
}

static double round_to(fx_dtype dt, double v) {
    switch (dt) {
    case FX_DTYPE_F32: return (float)v;
    case FX_DTYPE_F16: return fx_f16_to_f32(fx_f32_to_f16((float)v));
    case FX_DTYPE_BF16: return fx_bf16_to_f32(fx_f32_to_bf16((float)v));
    default: return v;
    }
}

/* Wrap an int64 value into an integer dtype's range (two's complement), as a cast does. */
static int64_t wrap_int(fx_dtype dt, int64_t v) {
    switch (dt) {
    case FX_DTYPE_I32: return (int32_t)(uint32_t)v;
    case FX_DTYPE_I16: return (int16_t)(uint16_t)v;
    case FX_DTYPE_I8: return (int8_t)(uint8_t)v;
    case FX_DTYPE_U8: return (uint8_t)v;
    case FX_DTYPE_BOOL: return v != 0;
    default: return v;
    }
}

double fx_ref_get(const fx_tensor *t, int64_t i) {
    int64_t idx[FX_MAX_DIMS];
    unravel(i, t->ndim, t->sizes, idx);
    return fx_dtype_load_f64(t->dtype, fx_tensor_data(t), bcast_offset(t, t->ndim, idx));
}

int64_t fx_ref_get_i(const fx_tensor *t, int64_t i) {
    int64_t idx[FX_MAX_DIMS];
    unravel(i, t->ndim, t->sizes, idx);
    return fx_dtype_load_i64(t->dtype, fx_tensor_data(t), bcast_offset(t, t->ndim, idx));
}

/* Operand value at out index idx, in the compute dtype (double or int64 form). */
static void operand(const fx_ivalue *v, fx_dtype compute, bool opmath, int nd, const int64_t *idx,
                    double *d, int64_t *i) {
    if (v->tag == FX_IV_TENSOR) {
        const fx_tensor *t = v->u.t;
        int64_t off = bcast_offset(t, nd, idx);
        double x = fx_dtype_load_f64(t->dtype, fx_tensor_data(t), off);
        int64_t xi = fx_dtype_load_i64(t->dtype, fx_tensor_data(t), off);
        *d = opmath ? (float)x : round_to(compute, x);
        *i = wrap_int(compute, xi);
        return;
    }
    double x = v->tag == FX_IV_INT ? (double)v->u.i : v->tag == FX_IV_BOOL ? v->u.b : v->u.f;
    int64_t xi = v->tag == FX_IV_INT ? v->u.i : v->tag == FX_IV_BOOL ? v->u.b : (int64_t)v->u.f;
    *d = opmath ? (float)x : round_to(compute, x);
    *i = wrap_int(compute, xi);
}

void fx_ref_binary(fx_ref_binop op, fx_dtype compute, const fx_ivalue *a, const fx_ivalue *b,
                   double alpha, bool opmath_b, fx_tensor *out) {
    const bool fp = fx_dtype_is_float(compute);
    const int nd = out->ndim;
    int64_t n = fx_tensor_numel(out), idx[FX_MAX_DIMS];
    void *o = fx_tensor_data(out);
    for (int64_t k = 0; k < n; k++) {
        unravel(k, nd, out->sizes, idx);
        int64_t off = bcast_offset(out, nd, idx);
        double x, y;
        int64_t xi, yi;
        operand(a, compute, false, nd, idx, &x, &xi);
        operand(b, compute, opmath_b, nd, idx, &y, &yi);
        if (fp) {
            double r = 0;
            switch (op) {
            case FX_REF_ADD: {
                double ar = round_to(compute, alpha);
                double prod = ar * y;
                /* half types round the product; float32/64 fuse it */
                if (compute == FX_DTYPE_F16 || compute == FX_DTYPE_BF16)
                    prod = round_to(compute, prod);
                r = x + prod;
                break;
            }
            case FX_REF_MUL: r = x * y; break;
            case FX_REF_DIV: r = x / y; break;
            case FX_REF_TRUNC:
                r = opmath_b ? trunc((float)x / (float)y) : trunc(round_to(compute, x / y));
                break;
            case FX_REF_FLOOR:
                if (y == 0)
                    r = x / y;
                else
                    r = floorl((long double)x / (long double)y);
                break;
            }
            fx_dtype_store_f64(out->dtype, o, off, round_to(compute, r));
        } else {
            int64_t r = 0;
            uint64_t ux = (uint64_t)xi, uy = (uint64_t)yi;
            switch (op) {
            case FX_REF_ADD: r = (int64_t)(ux + (uint64_t)(int64_t)alpha * uy); break;
            case FX_REF_MUL: r = (int64_t)(ux * uy); break;
            case FX_REF_TRUNC: r = yi == -1 ? (int64_t)(0 - ux) : xi / yi; break;
            case FX_REF_FLOOR: {
                if (yi == -1) {
                    r = (int64_t)(0 - ux);
                    break;
                }
                lldiv_t q = lldiv(xi, yi);
                r = q.quot - ((q.rem != 0) && ((q.rem < 0) != (yi < 0)));
                break;
            }
            case FX_REF_DIV: break;
            }
            if (compute == FX_DTYPE_BOOL) r = r != 0;
            fx_dtype_store_i64(out->dtype, o, off, wrap_int(compute, r));
        }
    }
}

void fx_ref_neg(const fx_tensor *a, fx_tensor *out) {
    int64_t n = fx_tensor_numel(out), idx[FX_MAX_DIMS];
    for (int64_t k = 0; k < n; k++) {
        unravel(k, out->ndim, out->sizes, idx);
        int64_t oo = bcast_offset(out, out->ndim, idx), ao = bcast_offset(a, out->ndim, idx);
        if (fx_dtype_is_float(a->dtype))
            fx_dtype_store_f64(out->dtype, fx_tensor_data(out), oo,
                               -fx_dtype_load_f64(a->dtype, fx_tensor_data(a), ao));
        else
            fx_dtype_store_i64(
                out->dtype, fx_tensor_data(out), oo,
                wrap_int(a->dtype, (int64_t)(0 - (uint64_t)fx_dtype_load_i64(
                                                     a->dtype, fx_tensor_data(a), ao))));
    }
}

void fx_ref_copy(fx_tensor *dst, const fx_tensor *src) {
    int64_t n = fx_tensor_numel(dst), idx[FX_MAX_DIMS];
    for (int64_t k = 0; k < n; k++) {
        unravel(k, dst->ndim, dst->sizes, idx);
        int64_t d = bcast_offset(dst, dst->ndim, idx), s = bcast_offset(src, dst->ndim, idx);
        if (fx_dtype_is_float(src->dtype))
            fx_dtype_store_f64(dst->dtype, fx_tensor_data(dst), d,
                               fx_dtype_load_f64(src->dtype, fx_tensor_data(src), s));
        else
            fx_dtype_store_i64(dst->dtype, fx_tensor_data(dst), d,
                               fx_dtype_load_i64(src->dtype, fx_tensor_data(src), s));
    }
}

void fx_ref_fill(fx_tensor *t, double v) {
    int64_t n = fx_tensor_numel(t), idx[FX_MAX_DIMS];
    for (int64_t k = 0; k < n; k++) {
        unravel(k, t->ndim, t->sizes, idx);
        fx_dtype_store_f64(t->dtype, fx_tensor_data(t), bcast_offset(t, t->ndim, idx), v);
    }
}

void fx_ref_reduce(const fx_tensor *x, const bool *reduced, bool mean, fx_tensor *out) {
    int64_t nout = fx_tensor_numel(out), n = fx_tensor_numel(x), idx[FX_MAX_DIMS];
    const bool fp = fx_dtype_is_float(x->dtype);
    double *accd = calloc((size_t)(nout ? nout : 1), sizeof(double));
    int64_t *acci = calloc((size_t)(nout ? nout : 1), sizeof(int64_t));
    int64_t count = 1;
    for (int d = 0; d < x->ndim; d++)
        if (reduced[d]) count *= x->sizes[d];
    for (int64_t k = 0; k < n; k++) {
        unravel(k, x->ndim, x->sizes, idx);
        int64_t o = 0; /* row-major index over the kept dims */
        for (int d = 0; d < x->ndim; d++)
            if (!reduced[d]) o = o * x->sizes[d] + idx[d];
        int64_t off = bcast_offset(x, x->ndim, idx);
        if (fp)
            accd[o] += fx_dtype_load_f64(x->dtype, fx_tensor_data(x), off);
        else
            acci[o] = (int64_t)((uint64_t)acci[o] +
                                (uint64_t)fx_dtype_load_i64(x->dtype, fx_tensor_data(x), off));
    }
    for (int64_t o = 0; o < nout; o++) {
        if (fp)
            fx_dtype_store_f64(out->dtype, fx_tensor_data(out), o,
                               mean ? accd[o] / (double)count : accd[o]);
        else
            fx_dtype_store_i64(out->dtype, fx_tensor_data(out), o, acci[o]);
    }
    free(accd);
    free(acci);
}

void fx_ref_arange(double start, double step, fx_tensor *out) {
    int64_t n = fx_tensor_numel(out);
    for (int64_t i = 0; i < n; i++)
        fx_dtype_store_f64(out->dtype, fx_tensor_data(out), i * out->strides[0],
                           start + (double)i * step);
}
