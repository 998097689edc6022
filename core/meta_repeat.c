/* core/meta_repeat.c — repeat_interleave: the op on a repeats tensor (meta function and kernel)
 * and the self_int / self_Tensor composites.
 * Layer: core. Follows aten/src/ATen/native/Repeat.cpp (torch 2.5):
 *   repeat_interleave.self_int(self, r, dim=None): self flattened when dim is None, then
 *     unsqueeze(dim + 1), expand r copies, clone(contiguous), flatten(dim, dim + 1) (a view);
 *   repeat_interleave.self_Tensor(self, repeats, dim=None): a 0-dim or one-element repeats is
 *     reshaped to [1] and expanded to the dim's size; then index_select(dim,
 *     repeat_interleave.Tensor(repeats));
 *   repeat_interleave.Tensor(repeats): [0, 0, 1, 2, 2, ...] — index i repeated repeats[i] times;
 *     its length is the sum of repeats, which a meta tensor cannot know unless output_size is
 *     given (data-dependent, as under FakeTensor).
 * Composites return new references in out[0]; intermediates are released. */
#include <string.h>

#include "core/meta_common.h"
#include "core/ops_shape.h"
#include "core/shape.h"

static fx_ivalue borrow(fx_tensor *t) { return (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t}; }

/* The optional SymInt output_size argument: *has and its value (hint). */
static void output_size(const fx_opctx *ctx, const fx_ivalue *a, bool *has, int64_t *v) {
    const fx_ivalue *o = fx_arg(ctx, a, "output_size");
    fx_symint s;
    *has = o && fx_ivalue_symint(o, &s);
    *v = *has ? s.hint : 0;
}

/* repeats: 1-d, int64 or int32 ("repeats has to be Long or Int tensor"), non-negative on cpu. */
static int check_repeats(fx_opctx *ctx, const fx_tensor *r) {
    if (r->ndim != 1) return fx_err_setf(ctx->err, FX_ESHAPE, "repeat_interleave only accept 1D vector as repeat");
    if (r->dtype != FX_DTYPE_I64 && r->dtype != FX_DTYPE_I32)
        return fx_err_setf(ctx->err, FX_ETYPE, "repeats has to be Long or Int tensor");
    return FX_OK;
}

/* repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor */
int fx_meta_repeat_interleave(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *r, *t;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &r)) || (rc = check_repeats(ctx, r))) return rc;
    bool has;
    int64_t n;
    output_size(ctx, a, &has, &n);
    if (!has) {
        fx_err e;
        fx_err_clear(&e);
        fx_shape_env *env = fx_tensor_is_meta(r) ? fx_trace_env_of(ctx->ctx, &e) : NULL;
        if (env) { /* an export: the length is a new size-like unbacked symbol (FakeTensor's impl) */
            const fx_sym *u;
            if ((rc = fx_shape_env_create_unbacked(env, "repeat_interleave.Tensor", &u, ctx->err)) ||
                (rc = fx_shape_env_mark_size_like(u, ctx->err)))
                return rc;
            fx_symint un = fx_si_from_expr(u);
            n = un.hint;
            if ((rc = fx_tensor_empty(1, &n, r->dtype, ctx->device, &t, ctx->err))) return rc;
            fx_symint st = FX_SI(1);
            if ((rc = fx_tensor_set_sym(t, &un, &st, FX_SI(0), ctx->err))) {
                fx_tensor_release(t);
                return rc;
            }
            out[0] = fx_iv_tensor_steal(t);
            return FX_OK;
        }
        if (e.code) return *ctx->err = e, e.code;
        if (fx_tensor_is_meta(r)) {
            fx_err_kind(ctx->err, "data_dependent");
            fx_err_setf(ctx->err, FX_EDATADEP,
                        "repeat_interleave: the output size is the sum of repeats, which is "
                        "data-dependent");
            return fx_err_hintf(ctx->err, "pass output_size = <the sum of repeats> "
                                          "(torch.repeat_interleave(x, r, dim, {output_size = n}))");
        }
        n = 0;
        for (int64_t i = 0; i < r->sizes[0]; i++) {
            int64_t v = fx_dtype_load_i64(r->dtype, fx_tensor_data(r), i * r->strides[0]);
            if (v < 0) return fx_err_setf(ctx->err, FX_EARG, "repeats can not be negative");
            n += v;
        }
    }
    if ((rc = fx_tensor_empty(1, &n, r->dtype, ctx->device, &t, ctx->err))) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

int fx_k_repeat_interleave(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *r = a[0].u.t, *res = out[0].u.t;
    int64_t k = 0, n = res->sizes[0];
    for (int64_t i = 0; i < r->sizes[0]; i++) {
        int64_t v = fx_dtype_load_i64(r->dtype, fx_tensor_data(r), i * r->strides[0]);
        if (v < 0) return fx_err_setf(ctx->err, FX_EARG, "repeats can not be negative");
        for (int64_t j = 0; j < v; j++, k++)
            if (k < n) fx_dtype_store_i64(res->dtype, fx_tensor_data(res), k * res->strides[0], i);
    }
    if (k != n)
        return fx_err_setf(ctx->err, FX_EARG, "allocated size does not match required size");
    return FX_OK;
}

/* self_int / self_Tensor */
int fx_c_repeat_interleave(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *input = NULL, *t = NULL;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    bool has_dim = a[2].tag == FX_IV_INT;
    int dim = 0;
    if (has_dim && (rc = fx_wrap_dim(a[2].u.i, self->ndim, &dim, ctx->err))) return rc;
    fx_ivalue sv = borrow(self);
    if (has_dim) {
        input = fx_tensor_retain(self);
    } else {
        fx_ivalue s0 = fx_iv_int(0), e = fx_iv_int(-1);
        if ((rc = fx_call_t(ctx->ctx, FX_OP_FLATTEN_USING_INTS, &input, ctx->err, 3, &sv, &s0, &e)))
            return rc;
    }
    bool has_out;
    int64_t osz;
    output_size(ctx, a, &has_out, &osz);
    if (ctx->op->id == FX_OP_REPEAT_INTERLEAVE_SELF_INT) {
        fx_symint rep;
        if (!fx_ivalue_symint(&a[1], &rep)) rep = FX_SI(0);
        if (rep.hint < 0) {
            fx_tensor_release(input);
            return fx_err_setf(ctx->err, FX_EARG, "Repeats can not be negative");
        }
        fx_ivalue iv = borrow(input), d1 = fx_iv_int(dim + 1);
        fx_tensor *u = NULL, *e = NULL, *c = NULL;
        rc = fx_call_t(ctx->ctx, FX_OP_UNSQUEEZE, &u, ctx->err, 2, &iv, &d1);
        if (!rc) {
            fx_ivalue lv;
            rc = fx_iv_list(u->ndim, &lv, ctx->err);
            for (int d = 0; !rc && d < u->ndim; d++)
                lv.u.list.items[d] = d == dim + 1 ? a[1] : fx_iv_symint(fx_tensor_sym_size(u, d));
            if (!rc) {
                fx_ivalue uv = borrow(u);
                rc = fx_call_t(ctx->ctx, FX_OP_EXPAND, &e, ctx->err, 2, &uv, &lv);
                lv.u.list.items[dim + 1] = fx_iv_none(); /* borrowed a[1]: not ours to clear */
                fx_ivalue_clear(&lv);
            }
        }
        if (!rc && has_out && osz != rep.hint * input->sizes[dim])
            rc = fx_err_setf(ctx->err, FX_EARG,
                             "repeat_interleave: Invalid output_size, expected %lld but got %lld",
                             (long long)(rep.hint * input->sizes[dim]), (long long)osz);
        if (!rc) {
            fx_ivalue ev = borrow(e), mf = fx_iv_str("torch.contiguous_format");
            rc = fx_call_t(ctx->ctx, FX_OP_CLONE, &c, ctx->err, 2, &ev, &mf);
            fx_ivalue_clear(&mf);
        }
        if (!rc) {
            fx_ivalue cv = borrow(c), s0 = fx_iv_int(dim), e1 = fx_iv_int(dim + 1);
            rc = fx_call_t(ctx->ctx, FX_OP_FLATTEN_USING_INTS, &t, ctx->err, 3, &cv, &s0, &e1);
        }
        fx_tensor_release(u), fx_tensor_release(e), fx_tensor_release(c);
        fx_tensor_release(input);
        if (rc) return rc;
        out[0] = fx_iv_tensor_steal(t);
        return FX_OK;
    }
    /* self_Tensor */
    fx_tensor *reps;
    if ((rc = fx_kb_tensor_arg(ctx, a, 1, &reps))) {
        fx_tensor_release(input);
        return rc;
    }
    fx_tensor *r1 = NULL, *idx = NULL;
    int64_t size = input->sizes[dim];
    if (reps->ndim == 0 || (reps->ndim == 1 && reps->sizes[0] == 1)) {
        fx_ivalue rv = borrow(reps), one, sz;
        int64_t o1 = 1;
        fx_tensor *rr = NULL;
        rc = fx_iv_int_list(1, &o1, &one, ctx->err);
        if (!rc) rc = fx_call_t(ctx->ctx, FX_OP_RESHAPE, &rr, ctx->err, 2, &rv, &one);
        fx_ivalue_clear(&one);
        if (!rc) {
            rc = fx_iv_list(1, &sz, ctx->err);
            if (!rc) {
                sz.u.list.items[0] = fx_iv_symint(fx_tensor_sym_size(input, dim));
                fx_ivalue rrv = borrow(rr);
                rc = fx_call_t(ctx->ctx, FX_OP_EXPAND, &r1, ctx->err, 2, &rrv, &sz);
                fx_ivalue_clear(&sz);
            }
        }
        fx_tensor_release(rr);
    } else if (reps->ndim == 1) {
        if (reps->sizes[0] != size)
            rc = fx_err_setf(ctx->err, FX_ESHAPE,
                             "repeats must have the same size as input along dim, but got "
                             "repeats.size(0) = %lld and input.size(%d) = %lld",
                             (long long)reps->sizes[0], dim, (long long)size);
        else
            r1 = fx_tensor_retain(reps);
    } else {
        rc = fx_err_setf(ctx->err, FX_ESHAPE, "repeats must be 0-dim or 1-dim tensor");
    }
    if (!rc) {
        fx_ivalue rv = borrow(r1);
        const fx_ivalue *os = fx_arg(ctx, a, "output_size");
        fx_ivalue ov = os ? *os : fx_iv_none();
        rc = fx_call_t(ctx->ctx, FX_OP_REPEAT_INTERLEAVE_TENSOR, &idx, ctx->err, 2, &rv, &ov);
    }
    if (!rc) {
        fx_ivalue iv = borrow(input), dv = fx_iv_int(dim), xv = borrow(idx);
        rc = fx_call_t(ctx->ctx, FX_OP_INDEX_SELECT, &t, ctx->err, 3, &iv, &dv, &xv);
    }
    fx_tensor_release(r1), fx_tensor_release(idx), fx_tensor_release(input);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}
