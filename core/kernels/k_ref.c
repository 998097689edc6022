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

/* ==== issue 3 (kernels A) ===================================================================== */

static bool is_fp(fx_dtype dt) { return fx_dtype_is_float(dt); }

void fx_ref_unary(fx_ref_unop op, const fx_tensor *a, fx_tensor *out) {
    int64_t n = fx_tensor_numel(out), idx[FX_MAX_DIMS];
    for (int64_t k = 0; k < n; k++) {
        unravel(k, out->ndim, out->sizes, idx);
        int64_t oo = bcast_offset(out, out->ndim, idx), ao = bcast_offset(a, out->ndim, idx);
        double x = fx_dtype_load_f64(a->dtype, fx_tensor_data(a), ao);
        int64_t xi = fx_dtype_load_i64(a->dtype, fx_tensor_data(a), ao);
        void *o = fx_tensor_data(out);
        double r = 0;
        switch (op) {
        case FX_REF_EXP: r = exp(x); break;
        case FX_REF_LOG: r = log(x); break;
        case FX_REF_LOG1P: r = log1p(x); break;
        case FX_REF_SQRT: r = sqrt(x); break;
        case FX_REF_RSQRT: r = 1.0 / sqrt(x); break;
        case FX_REF_SIN: r = sin(x); break;
        case FX_REF_COS: r = cos(x); break;
        case FX_REF_TANH: r = tanh(x); break;
        case FX_REF_SIGMOID: r = 1.0 / (1.0 + exp(-x)); break;
        case FX_REF_RECIP: r = 1.0 / x; break;
        case FX_REF_GELU: r = 0.5 * x * (1.0 + erf(x / sqrt(2.0))); break;
        case FX_REF_GELU_TANH:
            r = 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
            break;
        case FX_REF_SILU: r = x / (1.0 + exp(-x)); break;
        case FX_REF_LNOT: fx_dtype_store_i64(out->dtype, o, oo, x == 0); continue;
        case FX_REF_SIGN: r = x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; break;
        case FX_REF_FLOOR_U: r = floor(x); break;
        case FX_REF_CEIL_U: r = ceil(x); break;
        case FX_REF_TRUNC_U: r = trunc(x); break;
        case FX_REF_ROUND: {
            double f = floor(x), d = x - f; /* ties to the even neighbour */
            r = d > 0.5 ? f + 1 : d < 0.5 ? f : (fmod(f, 2.0) == 0 ? f : f + 1);
            break;
        }
        case FX_REF_ERF: r = erf(x); break;
        case FX_REF_EXPM1: r = expm1(x); break;
        case FX_REF_ABS:
            if (!is_fp(a->dtype)) {
                fx_dtype_store_i64(out->dtype, o, oo, xi < 0 ? (int64_t)(0 - (uint64_t)xi) : xi);
                continue;
            }
            r = fabs(x);
            break;
        case FX_REF_RELU:
            if (!is_fp(a->dtype)) {
                fx_dtype_store_i64(out->dtype, o, oo, xi < 0 ? 0 : xi);
                continue;
            }
            r = x < 0 ? 0.0 : x;
            break;
        case FX_REF_BNOT:
            fx_dtype_store_i64(out->dtype, o, oo, a->dtype == FX_DTYPE_BOOL ? !xi : ~xi);
            continue;
        }
        fx_dtype_store_f64(out->dtype, o, oo, round_to(out->dtype, r));
    }
}

/* The width in bits of an integer dtype. */
static int int_bits(fx_dtype dt) { return (int)fx_dtype_size(dt) * 8; }

void fx_ref_binary2(fx_ref_binop2 op, fx_dtype compute, const fx_ivalue *a, const fx_ivalue *b,
                    fx_tensor *out) {
    const bool fp = is_fp(compute);
    const int nd = out->ndim;
    int64_t n = fx_tensor_numel(out), idx[FX_MAX_DIMS];
    void *o = fx_tensor_data(out);
    for (int64_t k = 0; k < n; k++) {
        unravel(k, nd, out->sizes, idx);
        int64_t off = bcast_offset(out, nd, idx);
        double x, y;
        int64_t xi, yi;
        operand(a, compute, false, nd, idx, &x, &xi);
        operand(b, compute, false, nd, idx, &y, &yi);
        if (op >= FX_REF_EQ) {
            int r = 0;
            switch (op) {
            case FX_REF_EQ: r = fp ? x == y : xi == yi; break;
            case FX_REF_NE: r = fp ? x != y : xi != yi; break;
            case FX_REF_LT: r = fp ? x < y : xi < yi; break;
            case FX_REF_LE: r = fp ? x <= y : xi <= yi; break;
            case FX_REF_GT: r = fp ? x > y : xi > yi; break;
            case FX_REF_GE: r = fp ? x >= y : xi >= yi; break;
            case FX_REF_LAND: r = (fp ? x != 0 : xi != 0) && (fp ? y != 0 : yi != 0); break;
            case FX_REF_LOR: r = (fp ? x != 0 : xi != 0) || (fp ? y != 0 : yi != 0); break;
            default: r = (fp ? x != 0 : xi != 0) != (fp ? y != 0 : yi != 0); break;
            }
            fx_dtype_store_i64(out->dtype, o, off, r);
            continue;
        }
        if (fp) {
            double r = 0;
            switch (op) {
            case FX_REF_REM: {
                r = fmod(x, y);
                if (r != 0 && ((y < 0) != (r < 0))) r += y;
                break;
            }
            case FX_REF_POW: r = pow(x, y); break;
            case FX_REF_MAX: r = (isnan(x) || isnan(y)) ? NAN : x > y ? x : y; break;
            case FX_REF_MIN: r = (isnan(x) || isnan(y)) ? NAN : x < y ? x : y; break;
            default: break;
            }
            fx_dtype_store_f64(out->dtype, o, off, round_to(compute, r));
            continue;
        }
        int64_t r = 0;
        const int bits = int_bits(compute);
        const bool sgn = compute != FX_DTYPE_U8 && compute != FX_DTYPE_BOOL;
        switch (op) {
        case FX_REF_REM:
            if (yi == -1)
                r = 0;
            else {
                r = xi % yi;
                if (r != 0 && ((r < 0) != (yi < 0))) r += yi;
            }
            break;
        case FX_REF_POW:
            if (yi < 0)
                r = xi == 1 ? 1 : xi == -1 ? ((-yi) % 2 ? -1 : 1) : 0;
            else {
                uint64_t acc = 1;
                for (int64_t e = 0; e < yi; e++) acc *= (uint64_t)xi;
                r = (int64_t)acc;
            }
            break;
        case FX_REF_MAX: r = xi > yi ? xi : yi; break;
        case FX_REF_MIN: r = xi < yi ? xi : yi; break;
        case FX_REF_BAND: r = xi & yi; break;
        case FX_REF_BOR: r = xi | yi; break;
        case FX_REF_BXOR: r = xi ^ yi; break;
        case FX_REF_SHL: r = (yi < 0 || yi >= bits) ? 0 : (int64_t)((uint64_t)xi << yi); break;
        case FX_REF_SHR: {
            int ms = bits - (sgn ? 1 : 0);
            r = (yi < 0 || yi >= ms) ? (xi < 0 ? -1 : 0) : xi >> yi;
            break;
        }
        default: break;
        }
        fx_dtype_store_i64(out->dtype, o, off, wrap_int(compute, r));
    }
}

void fx_ref_where(const fx_tensor *cond, const fx_ivalue *a, const fx_ivalue *b, fx_tensor *out) {
    const int nd = out->ndim;
    int64_t n = fx_tensor_numel(out), idx[FX_MAX_DIMS];
    for (int64_t k = 0; k < n; k++) {
        unravel(k, nd, out->sizes, idx);
        int64_t off = bcast_offset(out, nd, idx);
        bool c = fx_dtype_load_i64(cond->dtype, fx_tensor_data(cond), bcast_offset(cond, nd, idx));
        double x;
        int64_t xi;
        operand(c ? a : b, out->dtype, false, nd, idx, &x, &xi);
        if (is_fp(out->dtype))
            fx_dtype_store_f64(out->dtype, fx_tensor_data(out), off, x);
        else
            fx_dtype_store_i64(out->dtype, fx_tensor_data(out), off, xi);
    }
}

void fx_ref_clamp(fx_dtype compute, const fx_tensor *x, const fx_ivalue *lo, const fx_ivalue *hi,
                  bool scalar_form, fx_tensor *out) {
    const int nd = out->ndim;
    const bool fp = is_fp(compute);
    int64_t n = fx_tensor_numel(out), idx[FX_MAX_DIMS];
    fx_ivalue xv = {.tag = FX_IV_TENSOR, .u.t = (fx_tensor *)x};
    for (int64_t k = 0; k < n; k++) {
        unravel(k, nd, out->sizes, idx);
        int64_t off = bcast_offset(out, nd, idx);
        double v, l = 0, h = 0;
        int64_t vi, li = 0, hi_ = 0;
        operand(&xv, compute, false, nd, idx, &v, &vi);
        bool has_l = lo->tag != FX_IV_NONE, has_h = hi->tag != FX_IV_NONE;
        if (has_l) operand(lo, compute, false, nd, idx, &l, &li);
        if (has_h) operand(hi, compute, false, nd, idx, &h, &hi_);
        if (fp) {
            double r = v;
            if (scalar_form) {
                if (!isnan(v)) {
                    if (has_l && r < l) r = l;
                    if (has_h && r > h) r = h;
                }
            } else if (has_l && has_h) {
                if (isnan(l) || isnan(h))
                    r = NAN;
                else
                    r = fmin(fmax(v, l), h), r = isnan(v) ? v : r;
            } else if (has_l) {
                r = (isnan(v) || isnan(l)) ? NAN : (v > l ? v : l);
            } else {
                r = (isnan(v) || isnan(h)) ? NAN : (v < h ? v : h);
            }
            fx_dtype_store_f64(out->dtype, fx_tensor_data(out), off, r);
        } else {
            int64_t r = vi;
            if (has_l && r < li) r = li;
            if (has_h && r > hi_) r = hi_;
            fx_dtype_store_i64(out->dtype, fx_tensor_data(out), off, r);
        }
    }
}

void fx_ref_reduce2(fx_ref_redop op, const fx_tensor *x, const bool *reduced, double correction,
                    fx_tensor *out) {
    int64_t nout = fx_tensor_numel(out), n = fx_tensor_numel(x), idx[FX_MAX_DIMS];
    const bool fp = is_fp(x->dtype);
    size_t cap = (size_t)(nout ? nout : 1);
    double *ad = calloc(cap, sizeof(double)), *mean = calloc(cap, sizeof(double));
    int64_t *ai = calloc(cap, sizeof(int64_t));
    bool *seen = calloc(cap, sizeof(bool));
    int64_t count = 1;
    for (int d = 0; d < x->ndim; d++)
        if (reduced[d]) count *= x->sizes[d];
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t k = 0; k < n; k++) {
            unravel(k, x->ndim, x->sizes, idx);
            int64_t o = 0;
            for (int d = 0; d < x->ndim; d++)
                if (!reduced[d]) o = o * x->sizes[d] + idx[d];
            int64_t off = bcast_offset(x, x->ndim, idx);
            double v = fx_dtype_load_f64(x->dtype, fx_tensor_data(x), off);
            int64_t vi = fx_dtype_load_i64(x->dtype, fx_tensor_data(x), off);
            bool first = !seen[o];
            seen[o] = true;
            switch (op) {
            case FX_REF_RPROD:
                if (fp)
                    ad[o] = (first ? 1.0 : ad[o]) * v;
                else
                    ai[o] = (int64_t)((uint64_t)(first ? 1 : ai[o]) * (uint64_t)vi);
                break;
            case FX_REF_RMAX:
            case FX_REF_RMIN: {
                bool mx = op == FX_REF_RMAX;
                if (fp) {
                    if (first)
                        ad[o] = v; /* the first NaN stays */
                    else if (!isnan(ad[o]) && (isnan(v) || (mx ? v > ad[o] : v < ad[o])))
                        ad[o] = v;
                } else if (first || (mx ? vi > ai[o] : vi < ai[o])) {
                    ai[o] = vi;
                }
                break;
            }
            case FX_REF_RALL: ai[o] = (first ? 1 : ai[o]) && (fp ? v != 0 : vi != 0); break;
            case FX_REF_RANY: ai[o] = (first ? 0 : ai[o]) || (fp ? v != 0 : vi != 0); break;
            default: /* var / std: pass 0 sums, pass 1 squared deviations */
                if (pass == 0)
                    mean[o] += v;
                else
                    ad[o] += (v - mean[o]) * (v - mean[o]);
                break;
            }
        }
        if (op != FX_REF_RVAR && op != FX_REF_RSTD) break;
        if (pass == 0)
            for (int64_t o = 0; o < nout; o++) mean[o] /= (double)count;
    }
    for (int64_t o = 0; o < nout; o++) {
        void *p = fx_tensor_data(out);
        switch (op) {
        case FX_REF_RPROD:
            if (!seen[o]) ad[o] = 1.0, ai[o] = 1;
            if (fp)
                fx_dtype_store_f64(out->dtype, p, o, ad[o]);
            else
                fx_dtype_store_i64(out->dtype, p, o, ai[o]);
            break;
        case FX_REF_RMAX:
        case FX_REF_RMIN:
            if (fp)
                fx_dtype_store_f64(out->dtype, p, o, ad[o]);
            else
                fx_dtype_store_i64(out->dtype, p, o, ai[o]);
            break;
        case FX_REF_RALL: fx_dtype_store_i64(out->dtype, p, o, seen[o] ? ai[o] : 1); break;
        case FX_REF_RANY: fx_dtype_store_i64(out->dtype, p, o, ai[o]); break;
        default: {
            double dof = (double)count - correction;
            double v = ad[o] / (dof > 0 ? dof : 0);
            if (op == FX_REF_RSTD) v = sqrt(v);
            fx_dtype_store_f64(out->dtype, p, o, v);
        }
        }
    }
    free(ad), free(mean), free(ai), free(seen);
}

void fx_ref_argreduce(bool ismax, const fx_tensor *x, int dim, fx_tensor *vals, fx_tensor *idx) {
    const int nd = x->ndim;
    int64_t pos[FX_MAX_DIMS];
    const bool fp = is_fp(x->dtype);
    int64_t nout = fx_tensor_numel(idx);
    int64_t len = dim < 0 ? fx_tensor_numel(x) : x->sizes[dim];
    /* output position o enumerates the other dims in row-major order */
    int64_t osz[FX_MAX_DIMS];
    for (int d = 0; d < nd; d++) osz[d] = (dim < 0 || d == dim) ? 1 : x->sizes[d];
    for (int64_t o = 0; o < nout; o++) {
        unravel(o, nd, osz, pos);
        int64_t best = 0;
        double bv = 0;
        int64_t bi = 0;
        for (int64_t r = 0; r < len; r++) {
            int64_t full[FX_MAX_DIMS];
            if (dim < 0)
                unravel(r, nd, x->sizes, full);
            else {
                for (int d = 0; d < nd; d++) full[d] = pos[d];
                full[dim] = r;
            }
            int64_t off = bcast_offset(x, nd, full);
            double v = fx_dtype_load_f64(x->dtype, fx_tensor_data(x), off);
            int64_t vi = fx_dtype_load_i64(x->dtype, fx_tensor_data(x), off);
            bool take;
            if (r == 0)
                take = true;
            else if (fp)
                take = !isnan(bv) && (isnan(v) || (ismax ? v > bv : v < bv));
            else
                take = ismax ? vi > bi : vi < bi;
            if (take) best = r, bv = v, bi = vi;
        }
        fx_dtype_store_i64(FX_DTYPE_I64, fx_tensor_data(idx), o, best);
        if (vals) {
            if (fp)
                fx_dtype_store_f64(vals->dtype, fx_tensor_data(vals), o, bv);
            else
                fx_dtype_store_i64(vals->dtype, fx_tensor_data(vals), o, bi);
        }
    }
}

void fx_ref_cumsum(const fx_tensor *x, int dim, fx_tensor *out) {
    int64_t n = fx_tensor_numel(out), idx[FX_MAX_DIMS];
    const bool fp = is_fp(out->dtype);
    for (int64_t k = 0; k < n; k++) {
        unravel(k, out->ndim, out->sizes, idx);
        double s = 0;
        int64_t si = 0;
        int64_t full[FX_MAX_DIMS];
        for (int d = 0; d < out->ndim; d++) full[d] = idx[d];
        for (int64_t r = 0; r <= (out->ndim ? idx[dim] : 0); r++) {
            if (out->ndim) full[dim] = r;
            int64_t off = bcast_offset(x, out->ndim, full);
            s += fx_dtype_load_f64(x->dtype, fx_tensor_data(x), off);
            si = (int64_t)((uint64_t)si +
                           (uint64_t)fx_dtype_load_i64(x->dtype, fx_tensor_data(x), off));
        }
        int64_t oo = bcast_offset(out, out->ndim, idx);
        if (fp)
            fx_dtype_store_f64(out->dtype, fx_tensor_data(out), oo, s);
        else
            fx_dtype_store_i64(out->dtype, fx_tensor_data(out), oo, si);
    }
}

void fx_ref_tril(const fx_tensor *x, int64_t k, bool lower, fx_tensor *out) {
    int64_t n = fx_tensor_numel(out), idx[FX_MAX_DIMS];
    const int nd = out->ndim;
    for (int64_t e = 0; e < n; e++) {
        unravel(e, nd, out->sizes, idx);
        int64_t i = idx[nd - 2], j = idx[nd - 1];
        bool keep = lower ? j - i <= k : j - i >= k;
        int64_t oo = bcast_offset(out, nd, idx), xo = bcast_offset(x, nd, idx);
        if (is_fp(x->dtype))
            fx_dtype_store_f64(out->dtype, fx_tensor_data(out), oo,
                               keep ? fx_dtype_load_f64(x->dtype, fx_tensor_data(x), xo) : 0.0);
        else
            fx_dtype_store_i64(out->dtype, fx_tensor_data(out), oo,
                               keep ? fx_dtype_load_i64(x->dtype, fx_tensor_data(x), xo) : 0);
    }
}
