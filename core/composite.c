/* core/composite.c — composite ops: contiguous, reshape, matmul, softmax.int /
 * log_softmax.int, narrow, flatten, unflatten, expand_as, chunk, split.sizes, stack, outer.
 * Layer: core. Like CompositeImplicitAutograd kernels these never compute: they call other ops
 * through the dispatcher (fx_call on ctx->ctx), so a trace records the ATen ops they decompose
 * into — those of aten/src/ATen/native/TensorShape.cpp (reshape, narrow, flatten, unflatten,
 * chunk), LinearAlgebra.cpp (_matmul_impl, outer), SoftMax.cpp (softmax) and torch._refs
 * (stack) — and never the composite itself.
 *
 * Ownership: every intermediate tensor is a new reference released before returning; the
 * result goes to out[0] as a new reference. */
#include <string.h>

#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* ---- calling ops with borrowed arguments --------------------------------------------------- */

static fx_ivalue borrow(fx_tensor *t) { return (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t}; }

/* op(t) */
static int op_t(fx_opctx *c, fx_op_id id, fx_tensor *t, fx_tensor **out) {
    fx_ivalue v = borrow(t);
    return fx_call_t(c->ctx, id, out, c->err, 1, &v);
}
/* op(t0, t1) */
static int op_tt(fx_opctx *c, fx_op_id id, fx_tensor *t0, fx_tensor *t1, fx_tensor **out) {
    fx_ivalue v0 = borrow(t0), v1 = borrow(t1);
    return fx_call_t(c->ctx, id, out, c->err, 2, &v0, &v1);
}
/* op(t, i) or op(t, i, j) */
static int op_ti(fx_opctx *c, fx_op_id id, fx_tensor *t, int64_t i, fx_tensor **out) {
    fx_ivalue v = borrow(t), iv = fx_iv_int(i);
    return fx_call_t(c->ctx, id, out, c->err, 2, &v, &iv);
}
static int op_tii(fx_opctx *c, fx_op_id id, fx_tensor *t, int64_t i, int64_t j, fx_tensor **out) {
    fx_ivalue v = borrow(t), iv = fx_iv_int(i), jv = fx_iv_int(j);
    return fx_call_t(c->ctx, id, out, c->err, 3, &v, &iv, &jv);
}
/* op(t, [sizes...]) */
static int op_tl(fx_opctx *c, fx_op_id id, fx_tensor *t, int n, const int64_t *l, fx_tensor **out) {
    fx_ivalue v = borrow(t), lv;
    int rc = fx_iv_int_list(n, l, &lv, c->err);
    if (rc) return rc;
    rc = fx_call_t(c->ctx, id, out, c->err, 2, &v, &lv);
    fx_ivalue_clear(&lv);
    return rc;
}

/* op(t, [sizes...]) with symbolic sizes (plain ones become ints, as op_tl) */
static int op_tsl(fx_opctx *c, fx_op_id id, fx_tensor *t, int n, const fx_symint *l,
                  fx_tensor **out) {
    fx_ivalue v = borrow(t), lv;
    int rc = fx_iv_list(n, &lv, c->err);
    if (rc) return rc;
    for (int i = 0; i < n; i++) lv.u.list.items[i] = fx_iv_symint(l[i]);
    rc = fx_call_t(c->ctx, id, out, c->err, 2, &v, &lv);
    fx_ivalue_clear(&lv);
    return rc;
}

static void sym_sizes(const fx_tensor *t, fx_symint *out) {
    for (int d = 0; d < t->ndim; d++) out[d] = fx_tensor_sym_size(t, d);
}

/* An int / SymInt argument's hint (0 for anything else). */
static int64_t hint_of(const fx_ivalue *v) {
    fx_symint s;
    return fx_ivalue_symint(v, &s) ? s.hint : 0;
}

/* chain(op(..., *t, ..., next), t, next): *t becomes *next, the old *t is released (also on
 * failure, when *t becomes NULL). */
static int chain(int rc, fx_tensor **t, fx_tensor **next) {
    fx_tensor_release(*t);
    *t = rc ? NULL : *next;
    *next = NULL;
    return rc;
}

/* ====================================================================================== */
/* contiguous                                                                              */
/* ====================================================================================== */

/* contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a):
 * self itself (retained, nothing recorded) when already contiguous, else
 * clone(self, memory_format=torch.contiguous_format). The memory format travels as the string
 * ivalue "torch.contiguous_format"; only the contiguous format is supported. */
int fx_c_contiguous(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (a[1].tag == FX_IV_STR && strcmp(a[1].u.s, "contiguous_format") &&
        strcmp(a[1].u.s, "torch.contiguous_format"))
        return fx_err_setf(ctx->err, FX_ENOTIMPL,
                           "contiguous(): memory_format %s is not supported by fxdb", a[1].u.s);
    if (fx_tensor_is_contiguous(self)) {
        out[0] = fx_iv_tensor(self);
        return FX_OK;
    }
    fx_ivalue sv = borrow(self), mf = fx_iv_str("torch.contiguous_format");
    if (mf.tag != FX_IV_STR) return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory");
    rc = fx_call(ctx->ctx, FX_OP_CLONE, &out[0], ctx->err, 2, &sv, &mf);
    fx_ivalue_clear(&mf);
    return rc;
}

/* ====================================================================================== */
/* reshape                                                                                 */
/* ====================================================================================== */

/* reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a), as aten's reshape_symint: a contiguous
 * self is view(self, shape) with the shape as given (-1 kept); a self computeStride can view
 * is view(self, inferred shape); otherwise _unsafe_view(clone(self, contiguous), inferred). */
int fx_c_reshape(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *r = NULL;
    int64_t shape[FX_MAX_DIMS], sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    int n, rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (a[1].tag == FX_IV_LIST) { /* SymInts (dynamic shapes) count by their hints here */
        n = a[1].u.list.n;
        if (n > FX_MAX_DIMS)
            return fx_err_setf(ctx->err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                               FX_MAX_DIMS, n);
        for (int i = 0; i < n; i++) shape[i] = hint_of(&a[1].u.list.items[i]);
    } else if ((rc = fx_kb_ints_arg(ctx, a, 1, shape, &n))) {
        return rc;
    }
    if (fx_tensor_is_contiguous(self)) {
        fx_ivalue sv = borrow(self);
        rc = fx_call_t(ctx->ctx, FX_OP_VIEW, &r, ctx->err, 2, &sv, &a[1]);
    } else {
        if ((rc = fx_infer_view_shape(n, shape, fx_tensor_numel(self), sizes, ctx->err))) return rc;
        /* the same shape as symbolic sizes: the -1 is numel // (the others) */
        fx_symint ss[FX_MAX_DIMS], numel = FX_SI(1), known = FX_SI(1);
        int infer = -1;
        for (int d = 0; d < self->ndim; d++) numel = fx_si_mul(numel, fx_tensor_sym_size(self, d));
        for (int i = 0; i < n; i++) {
            if (a[1].tag != FX_IV_LIST || !fx_ivalue_symint(&a[1].u.list.items[i], &ss[i]))
                ss[i] = FX_SI(shape[i]);
            if (!ss[i].expr && ss[i].hint == -1)
                infer = i;
            else
                known = fx_si_mul(known, ss[i]);
        }
        if (infer >= 0 && (rc = fx_si_floordiv(numel, known, &ss[infer], ctx->err))) return rc;
        if (fx_view_strides(self->ndim, self->sizes, self->strides, n, sizes, strides)) {
            rc = op_tsl(ctx, FX_OP_VIEW, self, n, ss, &r);
        } else {
            fx_ivalue sv = borrow(self), mf = fx_iv_str("torch.contiguous_format");
            if (mf.tag != FX_IV_STR) return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory");
            rc = fx_call_t(ctx->ctx, FX_OP_CLONE, &r, ctx->err, 2, &sv, &mf);
            fx_ivalue_clear(&mf);
            fx_tensor *u = NULL;
            if (!rc) rc = chain(op_tsl(ctx, FX_OP__UNSAFE_VIEW, r, n, ss, &u), &r, &u);
        }
    }
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(r);
    return FX_OK;
}

/* ====================================================================================== */
/* matmul                                                                                  */
/* ====================================================================================== */

/* should_fold: fold the batch of the larger operand (>= 3-D) into mm/mv rows when the other is
 * 1-D or 2-D and the fold needs no copy (or the smaller operand requires grad). */
static bool should_fold(const fx_tensor *t1, const fx_tensor *t2) {
    bool t1_larger = t1->ndim >= t2->ndim;
    const fx_tensor *big = t1_larger ? t1 : t2;
    int dim_big = big->ndim, dim_small = t1_larger ? t2->ndim : t1->ndim;
    if (!(dim_big >= 3 && dim_small <= 2)) return false;
    if (fx_tensor_requires_grad(t1_larger ? t2 : t1)) return true;
    if (t1->ndim == 2) return false;
    if (fx_tensor_numel(big) == 0) return true;
    int64_t sz[FX_MAX_DIMS], st[FX_MAX_DIMS]; /* big, or big.mT when t2 is the larger */
    memcpy(sz, big->sizes, sizeof sz);
    memcpy(st, big->strides, sizeof st);
    if (!t1_larger) {
        int64_t s = sz[dim_big - 1], t = st[dim_big - 1];
        sz[dim_big - 1] = sz[dim_big - 2], st[dim_big - 1] = st[dim_big - 2];
        sz[dim_big - 2] = s, st[dim_big - 2] = t;
    }
    for (int i = 0; i < dim_big - 2; i++)
        if (st[i] != st[i + 1] * sz[i + 1]) return false;
    return true;
}

static int matmul_impl(fx_opctx *ctx, fx_tensor *t1, fx_tensor *t2, fx_tensor **res);

/* N-D @ 1/2-D (or 1/2-D @ N-D): view the big operand as a matrix, one mm / mv,
 * _unsafe_view back (and for 2-D @ N-D transpose back and make contiguous). */
static int matmul_fold(fx_opctx *ctx, fx_tensor *t1, fx_tensor *t2, fx_tensor **res) {
    bool transpose = t2->ndim > t1->ndim;
    fx_tensor *a = NULL, *b = NULL, *folded = NULL, *r = NULL, *tmp = NULL;
    int rc = FX_OK;
    if (transpose) {
        rc = op_tii(ctx, FX_OP_TRANSPOSE_INT, t2, -2, -1, &a);
        if (!rc) {
            if (t1->ndim == 2)
                rc = op_t(ctx, FX_OP_T, t1, &b);
            else
                b = fx_tensor_retain(t1);
        }
    } else {
        a = fx_tensor_retain(t1);
        b = fx_tensor_retain(t2);
    }
    fx_symint oshape[FX_MAX_DIMS], folded_dim = FX_SI(1);
    int on = 0;
    if (!rc) {
        for (int d = 0; d + 1 < a->ndim; d++)
            folded_dim = fx_si_mul(folded_dim, (oshape[on++] = fx_tensor_sym_size(a, d)));
        if (b->ndim == 2) oshape[on++] = fx_tensor_sym_size(b, 1);
        fx_symint fs[2] = {folded_dim, fx_tensor_sym_size(a, a->ndim - 1)};
        rc = op_tsl(ctx, FX_OP_RESHAPE, a, 2, fs, &folded);
    }
    if (!rc) rc = op_tt(ctx, b->ndim == 2 ? FX_OP_MM : FX_OP_MV, folded, b, &r);
    if (!rc) rc = chain(op_tsl(ctx, FX_OP__UNSAFE_VIEW, r, on, oshape, &tmp), &r, &tmp);
    if (!rc && transpose && b->ndim == 2) {
        rc = chain(op_tii(ctx, FX_OP_TRANSPOSE_INT, r, -2, -1, &tmp), &r, &tmp);
        if (!rc) rc = chain(op_t(ctx, FX_OP_CONTIGUOUS, r, &tmp), &r, &tmp);
    }
    fx_tensor_release(a);
    fx_tensor_release(b);
    fx_tensor_release(folded);
    if (rc) {
        fx_tensor_release(r);
        return rc;
    }
    *res = r;
    return FX_OK;
}

/* Batched: broadcast the batch dims, expand + reshape both to 3-D, one bmm, _unsafe_view to
 * the broadcast batch + matrix dims. */
static int matmul_batched(fx_opctx *ctx, fx_tensor *t1, fx_tensor *t2, fx_tensor **res) {
    int d1 = t1->ndim, d2 = t2->ndim;
    int64_t n = d1 > 1 ? t1->sizes[d1 - 2] : 1, m1 = t1->sizes[d1 - 1];
    int64_t m2 = d2 > 1 ? t2->sizes[d2 - 2] : t2->sizes[0], p = d2 > 1 ? t2->sizes[d2 - 1] : 1;
    int nb1 = d1 > 2 ? d1 - 2 : 0, nb2 = d2 > 2 ? d2 - 2 : 0;
    int rc;
    if (d1 == 3 && d2 == 3 && t1->sizes[0] != t2->sizes[0]) { /* the gradient-saving squeeze */
        fx_tensor *sq = NULL;
        if (t1->sizes[0] == 1 && fx_tensor_requires_grad(t1)) {
            if ((rc = op_ti(ctx, FX_OP_SQUEEZE_DIM, t1, 0, &sq))) return rc;
            rc = matmul_impl(ctx, sq, t2, res);
            fx_tensor_release(sq);
            return rc;
        }
        if (t2->sizes[0] == 1 && fx_tensor_requires_grad(t2)) {
            if ((rc = op_ti(ctx, FX_OP_SQUEEZE_DIM, t2, 0, &sq))) return rc;
            rc = matmul_impl(ctx, t1, sq, res);
            fx_tensor_release(sq);
            return rc;
        }
    }
    int64_t batch[FX_MAX_DIMS];
    int nb;
    if ((rc = fx_broadcast_shape(nb1, t1->sizes, nb2, t2->sizes, &nb, batch, ctx->err))) return rc;
    if (nb + 2 > FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, nb + 2);
    /* the same sizes as symbolic values: a broadcast batch dim is the operand's that is not a
     * plain 1 (expand guards the two equal when both are symbolic) */
    fx_symint sbatch[FX_MAX_DIMS], shape[FX_MAX_DIMS];
    for (int d = 0; d < nb; d++) {
        int i1 = nb1 - nb + d, i2 = nb2 - nb + d;
        fx_symint x = i1 >= 0 ? fx_tensor_sym_size(t1, i1) : FX_SI(1);
        fx_symint y = i2 >= 0 ? fx_tensor_sym_size(t2, i2) : FX_SI(1);
        sbatch[d] = (!x.expr && x.hint == 1) ? y : x;
    }
    fx_symint sn = d1 > 1 ? fx_tensor_sym_size(t1, d1 - 2) : FX_SI(1);
    fx_symint sm1 = fx_tensor_sym_size(t1, d1 - 1);
    fx_symint sm2 = d2 > 1 ? fx_tensor_sym_size(t2, d2 - 2) : fx_tensor_sym_size(t2, 0);
    fx_symint sp = d2 > 1 ? fx_tensor_sym_size(t2, d2 - 1) : FX_SI(1);
    (void)n, (void)m1, (void)m2, (void)p;
    fx_symint bp = FX_SI(1);
    for (int d = 0; d < nb; d++) bp = fx_si_mul(bp, sbatch[d]);
    fx_tensor *e1 = NULL, *e2 = NULL, *r = NULL, *tmp = NULL;
    memcpy(shape, sbatch, sizeof(fx_symint) * (size_t)nb);
    shape[nb] = sn, shape[nb + 1] = sm1;
    fx_symint s3[3] = {bp, sn, sm1};
    rc = op_tsl(ctx, FX_OP_EXPAND, t1, nb + 2, shape, &e1);
    if (!rc) rc = chain(op_tsl(ctx, FX_OP_RESHAPE, e1, 3, s3, &tmp), &e1, &tmp);
    if (!rc && d2 == 1) {
        shape[nb] = sm2;
        fx_symint s2[2] = {bp, sm2};
        rc = op_tsl(ctx, FX_OP_EXPAND, t2, nb + 1, shape, &e2);
        if (!rc) rc = chain(op_tsl(ctx, FX_OP_RESHAPE, e2, 2, s2, &tmp), &e2, &tmp);
        if (!rc) rc = chain(op_ti(ctx, FX_OP_UNSQUEEZE, e2, 2, &tmp), &e2, &tmp);
    } else if (!rc) {
        shape[nb] = sm2, shape[nb + 1] = sp;
        fx_symint t3[3] = {bp, sm2, sp};
        rc = op_tsl(ctx, FX_OP_EXPAND, t2, nb + 2, shape, &e2);
        if (!rc) rc = chain(op_tsl(ctx, FX_OP_RESHAPE, e2, 3, t3, &tmp), &e2, &tmp);
    }
    int on = nb;
    memcpy(shape, sbatch, sizeof(fx_symint) * (size_t)nb);
    if (d1 > 1) shape[on++] = sn;
    if (d2 > 1) shape[on++] = sp;
    if (!rc) rc = op_tt(ctx, FX_OP_BMM, e1, e2, &r);
    if (!rc && d2 == 1) rc = chain(op_ti(ctx, FX_OP_SQUEEZE_DIM, r, -1, &tmp), &r, &tmp);
    if (!rc) rc = chain(op_tsl(ctx, FX_OP__UNSAFE_VIEW, r, on, shape, &tmp), &r, &tmp);
    fx_tensor_release(e1);
    fx_tensor_release(e2);
    if (rc) {
        fx_tensor_release(r);
        return rc;
    }
    *res = r;
    return FX_OK;
}

static int matmul_impl(fx_opctx *ctx, fx_tensor *t1, fx_tensor *t2, fx_tensor **res) {
    int d1 = t1->ndim, d2 = t2->ndim, rc;
    if (d1 == 0 || d2 == 0)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "both arguments to matmul need to be at least 1D, but they are %dD "
                           "and %dD",
                           d1, d2);
    if (d1 == 1 && d2 == 1) return op_tt(ctx, FX_OP_DOT, t1, t2, res);
    if (d1 == 2 && d2 == 1) return op_tt(ctx, FX_OP_MV, t1, t2, res);
    if (d1 == 2 && d2 == 2) return op_tt(ctx, FX_OP_MM, t1, t2, res);
    if (d1 == 1 && d2 == 2) {
        fx_tensor *r = NULL, *tmp = NULL;
        rc = op_ti(ctx, FX_OP_UNSQUEEZE, t1, 0, &r);
        if (!rc) rc = chain(op_tt(ctx, FX_OP_MM, r, t2, &tmp), &r, &tmp);
        if (!rc) rc = chain(op_ti(ctx, FX_OP_SQUEEZE_DIM, r, 0, &tmp), &r, &tmp);
        if (!rc) *res = r;
        return rc;
    }
    if (should_fold(t1, t2)) return matmul_fold(ctx, t1, t2, res);
    return matmul_batched(ctx, t1, t2, res);
}

/* matmul(Tensor self, Tensor other) -> Tensor: the cases of _matmul_impl — dot (1-D·1-D),
 * mv (2-D·1-D), unsqueeze + mm + squeeze (1-D·2-D), mm (2-D·2-D), a folded mm / mv for
 * N-D·(1|2)-D when no copy is needed, else expand + reshape + bmm + _unsafe_view. */
int fx_c_matmul(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *t1, *t2, *r;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &t1)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &t2)))
        return rc;
    if ((rc = matmul_impl(ctx, t1, t2, &r))) return rc;
    out[0] = fx_iv_tensor_steal(r);
    return FX_OK;
}

/* ====================================================================================== */
/* softmax / log_softmax                                                                   */
/* ====================================================================================== */

/* softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor and
 * log_softmax.int(...): as aten's softmax(input, dim, dtype) on the CPU — self converted with
 * _to_copy(self, dtype=dtype) when a different dtype is asked for (self.toType, which records
 * nothing when the dtype already matches), then _softmax(converted, dim, False) (or
 * _log_softmax). */
int fx_c_softmax(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *conv = NULL;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    bool log = ctx->op->id == FX_OP_LOG_SOFTMAX_INT;
    if (a[2].tag == FX_IV_DTYPE && a[2].u.dtype != self->dtype) {
        const fx_opdef *tc = fx_op_get(FX_OP__TO_COPY);
        fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS];
        args[0] = borrow(self);
        args[fx_schema_arg_index(&tc->schema, "dtype")] = a[2];
        if ((rc = fx_dispatch(ctx->ctx, tc, args, outs, ctx->err))) return rc;
        conv = outs[0].u.t;
    } else {
        conv = fx_tensor_retain(self);
    }
    fx_ivalue cv = borrow(conv), dv = fx_iv_int(a[1].u.i), hv = fx_iv_bool(false);
    rc = fx_call(ctx->ctx, log ? FX_OP__LOG_SOFTMAX : FX_OP__SOFTMAX, &out[0], ctx->err, 3, &cv,
                 &dv, &hv);
    fx_tensor_release(conv);
    return rc;
}

/* ====================================================================================== */
/* Shape composites: narrow, flatten, unflatten, expand_as, chunk, split.sizes, stack      */
/* ====================================================================================== */

/* narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a): aten's
 * narrow_symint — slice(self, dim, start, start + length) with its checks ("narrow() cannot be
 * applied to a 0-dim tensor.", "start out of range (expected to be in range of [-3, 3], but
 * got 4)", "start (2) + length (2) exceeds dimension size (3)."). */
int fx_c_narrow(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (self->ndim == 0)
        return fx_err_setf(ctx->err, FX_EINDEX, "narrow() cannot be applied to a 0-dim tensor.");
    fx_symint sstart, slength;
    if (!fx_ivalue_symint(&a[2], &sstart) || !fx_ivalue_symint(&a[3], &slength))
        return fx_err_setf(ctx->err, FX_EARG, "narrow(): start and length must be integers");
    int64_t start = sstart.hint, length = slength.hint;
    if (length < 0) return fx_err_setf(ctx->err, FX_EARG, "narrow(): length must be non-negative.");
    if ((rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err))) return rc;
    int64_t size = self->sizes[d];
    if (start < -size || start > size)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "start out of range (expected to be in range of [%lld, %lld], but got "
                           "%lld)",
                           (long long)-size, (long long)size, (long long)start);
    if (start < 0) start += size;
    if (start > size - length)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                           (long long)start, (long long)length, (long long)size);
    if (sstart.hint < 0) sstart = fx_si_add(sstart, fx_tensor_sym_size(self, d));
    fx_ivalue sv = borrow(self), dv = fx_iv_int(a[1].u.i), bv = fx_iv_symint(sstart),
              ev = fx_iv_symint(fx_si_add(sstart, slength));
    rc = fx_call(ctx->ctx, FX_OP_SLICE_TENSOR, &out[0], ctx->err, 4, &sv, &dv, &bv, &ev);
    fx_ivalue_clear(&bv);
    fx_ivalue_clear(&ev);
    return rc;
}

/* flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a): aten's
 * flatten — reshape to (sizes before start_dim, their product, sizes after end_dim); a 0-dim
 * self is reshape([1]); start_dim == end_dim is self itself (nothing recorded). */
int fx_c_flatten(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc, s, e;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) ||
        (rc = fx_wrap_dim(a[1].u.i, self->ndim, &s, ctx->err)) ||
        (rc = fx_wrap_dim(a[2].u.i, self->ndim, &e, ctx->err)))
        return rc;
    if (s > e)
        return fx_err_setf(ctx->err, FX_EARG,
                           "flatten() has invalid args: start_dim cannot come after end_dim");
    fx_symint shape[FX_MAX_DIMS];
    int n = 0;
    if (self->ndim == 0) {
        shape[n++] = FX_SI(1);
    } else {
        if (s == e) {
            out[0] = fx_iv_tensor(self);
            return FX_OK;
        }
        fx_symint prod = FX_SI(1);
        for (int d = 0; d < s; d++) shape[n++] = fx_tensor_sym_size(self, d);
        for (int d = s; d <= e; d++) prod = fx_si_mul(prod, fx_tensor_sym_size(self, d));
        shape[n++] = prod;
        for (int d = e + 1; d < self->ndim; d++) shape[n++] = fx_tensor_sym_size(self, d);
    }
    fx_tensor *r;
    if ((rc = op_tsl(ctx, FX_OP_RESHAPE, self, n, shape, &r))) return rc;
    out[0] = fx_iv_tensor_steal(r);
    return FX_OK;
}

/* unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a): view(self, shape with dim
 * replaced by sizes, one -1 inferred). "unflatten: sizes must be non-empty", "unflatten:
 * Provided sizes [2, 2] don't multiply up to the size of dim 1 (5) in the input tensor". */
int fx_c_unflatten(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int64_t sz[FX_MAX_DIMS], inferred[FX_MAX_DIMS], shape[FX_MAX_DIMS];
    int rc, d, n;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) ||
        (rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err)) ||
        (rc = fx_kb_ints_arg(ctx, a, 2, sz, &n)))
        return rc;
    if (n == 0) return fx_err_setf(ctx->err, FX_EARG, "unflatten: sizes must be non-empty");
    int64_t dsize = self->ndim ? self->sizes[d] : 1;
    fx_err tmp;
    fx_err_clear(&tmp);
    if (fx_infer_view_shape(n, sz, dsize, inferred, &tmp)) {
        if (!strstr(tmp.msg, "is invalid for input of size"))
            return fx_err_setf(ctx->err, FX_ESHAPE, "unflatten got an unexpected error:\n%s",
                               tmp.msg);
        char b[160];
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "unflatten: Provided sizes %s don't multiply up to the size of dim %d "
                           "(%lld) in the input tensor",
                           fx_shape_str(n, sz, b, sizeof b), d, (long long)dsize);
    }
    int nd = 0;
    if (self->ndim - 1 + n > FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, self->ndim - 1 + n);
    for (int e = 0; e < self->ndim; e++) {
        if (e != d) {
            shape[nd++] = self->sizes[e];
            continue;
        }
        for (int k = 0; k < n; k++) shape[nd++] = inferred[k];
    }
    if (self->ndim == 0)
        for (int k = 0; k < n; k++) shape[nd++] = inferred[k];
    fx_tensor *r;
    if ((rc = op_tl(ctx, FX_OP_VIEW, self, nd, shape, &r))) return rc;
    out[0] = fx_iv_tensor_steal(r);
    return FX_OK;
}

/* expand_as(Tensor(a) self, Tensor other) -> Tensor(a): expand(self, other.sizes). */
int fx_c_expand_as(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *other, *r;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &other)))
        return rc;
    fx_symint sz[FX_MAX_DIMS];
    sym_sizes(other, sz);
    if ((rc = op_tsl(ctx, FX_OP_EXPAND, self, other->ndim, sz, &r))) return rc;
    out[0] = fx_iv_tensor_steal(r);
    return FX_OK;
}

/* chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]: split(self, ceil(size /
 * chunks), dim), or split_with_sizes([0] * chunks, dim) for an empty dim (aten's chunk). */
int fx_c_chunk(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (self->ndim == 0)
        return fx_err_setf(ctx->err, FX_ESHAPE, "chunk expects at least a 1-dimensional tensor");
    int64_t chunks = a[1].u.i;
    if (chunks <= 0)
        return fx_err_setf(ctx->err, FX_EARG,
                           "chunk expects `chunks` to be greater than 0, got: %lld",
                           (long long)chunks);
    if ((rc = fx_wrap_dim(a[2].u.i, self->ndim, &d, ctx->err))) return rc;
    int64_t size = self->sizes[d], split = (size + chunks - 1) / chunks;
    fx_ivalue sv = borrow(self), dv = fx_iv_int(a[2].u.i);
    if (split == 0 && size == 0) {
        if (chunks > FX_SCHEMA_MAX_ARGS * 64)
            return fx_err_setf(ctx->err, FX_ENOTIMPL, "chunk: too many chunks (%lld)",
                               (long long)chunks);
        fx_ivalue lv;
        if ((rc = fx_iv_list((int)chunks, &lv, ctx->err))) return rc;
        for (int64_t i = 0; i < chunks; i++) lv.u.list.items[i] = fx_iv_int(0);
        rc = fx_call(ctx->ctx, FX_OP_SPLIT_WITH_SIZES, &out[0], ctx->err, 3, &sv, &lv, &dv);
        fx_ivalue_clear(&lv);
        return rc;
    }
    fx_symint ssplit;
    if ((rc = fx_si_floordiv(fx_si_add(fx_tensor_sym_size(self, d), FX_SI(chunks - 1)),
                             FX_SI(chunks), &ssplit, ctx->err)))
        return rc;
    if (ssplit.hint != split) return fx_err_setf(ctx->err, FX_EINTERNAL, "chunk: split size");
    fx_ivalue nv = fx_iv_symint(ssplit);
    rc = fx_call(ctx->ctx, FX_OP_SPLIT_TENSOR, &out[0], ctx->err, 3, &sv, &nv, &dv);
    fx_ivalue_clear(&nv);
    return rc;
}

/* split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]: what
 * x.split([1, 2]) binds to; aten's split with a list is split_with_sizes. */
int fx_c_split_sizes(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    return fx_call(ctx->ctx, FX_OP_SPLIT_WITH_SIZES, &out[0], ctx->err, 3, &a[0], &a[1], &a[2]);
}

/* stack(Tensor[] tensors, int dim=0) -> Tensor: every tensor must have the first one's sizes
 * ("stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1"),
 * then cat([t.unsqueeze(dim) for t in tensors], dim) — the decomposition export records. */
int fx_c_stack(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    const fx_ivalue *l = &a[0];
    int n = l->tag == FX_IV_LIST ? l->u.list.n : 0, rc, d;
    if (n == 0) return fx_err_setf(ctx->err, FX_EARG, "stack expects a non-empty TensorList");
    const fx_tensor *t0 = l->u.list.items[0].u.t;
    if ((rc = fx_wrap_dim(a[1].u.i, t0->ndim + 1, &d, ctx->err))) return rc;
    for (int i = 1; i < n; i++) {
        const fx_tensor *t = l->u.list.items[i].u.t;
        if (t->ndim != t0->ndim ||
            memcmp(t->sizes, t0->sizes, sizeof(int64_t) * (size_t)t0->ndim)) {
            char b1[160], b2[160];
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "stack expects each tensor to be equal size, but got %s at entry 0 "
                               "and %s at entry %d",
                               fx_shape_str(t0->ndim, t0->sizes, b1, sizeof b1),
                               fx_shape_str(t->ndim, t->sizes, b2, sizeof b2), i);
        }
    }
    fx_ivalue lv;
    if ((rc = fx_iv_list(n, &lv, ctx->err))) return rc;
    for (int i = 0; i < n && !rc; i++) {
        fx_tensor *u;
        rc = op_ti(ctx, FX_OP_UNSQUEEZE, l->u.list.items[i].u.t, d, &u);
        if (!rc) lv.u.list.items[i] = fx_iv_tensor_steal(u);
    }
    fx_ivalue dv = fx_iv_int(d);
    if (!rc) rc = fx_call(ctx->ctx, FX_OP_CAT, &out[0], ctx->err, 2, &lv, &dv);
    fx_ivalue_clear(&lv);
    return rc;
}

/* outer(Tensor self, Tensor vec2) -> Tensor: aten's outer — both 1-D ("outer: Expected 1-D
 * argument self, but got 2-D"), then mul(reshape(self, [n, 1]), vec2). */
int fx_c_outer(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *vec, *col;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &vec)))
        return rc;
    if (self->ndim != 1)
        return fx_err_setf(ctx->err, FX_ESHAPE, "outer: Expected 1-D argument self, but got %d-D",
                           self->ndim);
    if (vec->ndim != 1)
        return fx_err_setf(ctx->err, FX_ESHAPE, "outer: Expected 1-D argument vec2, but got %d-D",
                           vec->ndim);
    fx_symint shape[2] = {fx_tensor_sym_size(self, 0), FX_SI(1)};
    if ((rc = op_tsl(ctx, FX_OP_RESHAPE, self, 2, shape, &col))) return rc;
    fx_tensor *r = NULL;
    rc = op_tt(ctx, FX_OP_MUL_TENSOR, col, vec, &r);
    fx_tensor_release(col);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(r);
    return FX_OK;
}
