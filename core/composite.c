/* core/composite.c — composite ops: contiguous, reshape, matmul.
 * Layer: core. Like CompositeImplicitAutograd kernels these never compute: they call other ops
 * through the dispatcher (fx_call on ctx->ctx), so a trace records the ATen ops they decompose
 * into — exactly those of aten/src/ATen/native/TensorShape.cpp (reshape) and
 * LinearAlgebra.cpp (_matmul_impl) — and never the composite itself.
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
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_ints_arg(ctx, a, 1, shape, &n)))
        return rc;
    if (fx_tensor_is_contiguous(self)) {
        rc = op_tl(ctx, FX_OP_VIEW, self, n, shape, &r);
    } else {
        if ((rc = fx_infer_view_shape(n, shape, fx_tensor_numel(self), sizes, ctx->err))) return rc;
        if (fx_view_strides(self->ndim, self->sizes, self->strides, n, sizes, strides)) {
            rc = op_tl(ctx, FX_OP_VIEW, self, n, sizes, &r);
        } else {
            fx_ivalue sv = borrow(self), mf = fx_iv_str("torch.contiguous_format");
            if (mf.tag != FX_IV_STR) return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory");
            rc = fx_call_t(ctx->ctx, FX_OP_CLONE, &r, ctx->err, 2, &sv, &mf);
            fx_ivalue_clear(&mf);
            fx_tensor *u = NULL;
            if (!rc) rc = chain(op_tl(ctx, FX_OP__UNSAFE_VIEW, r, n, sizes, &u), &r, &u);
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
    int64_t oshape[FX_MAX_DIMS], folded_dim = 1;
    int on = 0;
    if (!rc) {
        for (int d = 0; d + 1 < a->ndim; d++) folded_dim *= (oshape[on++] = a->sizes[d]);
        if (b->ndim == 2) oshape[on++] = b->sizes[1];
        int64_t fs[2] = {folded_dim, a->sizes[a->ndim - 1]};
        rc = op_tl(ctx, FX_OP_RESHAPE, a, 2, fs, &folded);
    }
    if (!rc) rc = op_tt(ctx, b->ndim == 2 ? FX_OP_MM : FX_OP_MV, folded, b, &r);
    if (!rc) rc = chain(op_tl(ctx, FX_OP__UNSAFE_VIEW, r, on, oshape, &tmp), &r, &tmp);
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
    int64_t batch[FX_MAX_DIMS], shape[FX_MAX_DIMS];
    int nb;
    if ((rc = fx_broadcast_shape(nb1, t1->sizes, nb2, t2->sizes, &nb, batch, ctx->err))) return rc;
    if (nb + 2 > FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, nb + 2);
    int64_t bp = 1;
    for (int d = 0; d < nb; d++) bp *= batch[d];
    fx_tensor *e1 = NULL, *e2 = NULL, *r = NULL, *tmp = NULL;
    memcpy(shape, batch, sizeof(int64_t) * (size_t)nb);
    shape[nb] = n, shape[nb + 1] = m1;
    int64_t s3[3] = {bp, n, m1};
    rc = op_tl(ctx, FX_OP_EXPAND, t1, nb + 2, shape, &e1);
    if (!rc) rc = chain(op_tl(ctx, FX_OP_RESHAPE, e1, 3, s3, &tmp), &e1, &tmp);
    if (!rc && d2 == 1) {
        shape[nb] = m2;
        int64_t s2[2] = {bp, m2};
        rc = op_tl(ctx, FX_OP_EXPAND, t2, nb + 1, shape, &e2);
        if (!rc) rc = chain(op_tl(ctx, FX_OP_RESHAPE, e2, 2, s2, &tmp), &e2, &tmp);
        if (!rc) rc = chain(op_ti(ctx, FX_OP_UNSQUEEZE, e2, 2, &tmp), &e2, &tmp);
    } else if (!rc) {
        shape[nb] = m2, shape[nb + 1] = p;
        int64_t t3[3] = {bp, m2, p};
        rc = op_tl(ctx, FX_OP_EXPAND, t2, nb + 2, shape, &e2);
        if (!rc) rc = chain(op_tl(ctx, FX_OP_RESHAPE, e2, 3, t3, &tmp), &e2, &tmp);
    }
    int on = nb;
    memcpy(shape, batch, sizeof(int64_t) * (size_t)nb);
    if (d1 > 1) shape[on++] = n;
    if (d2 > 1) shape[on++] = p;
    if (!rc) rc = op_tt(ctx, FX_OP_BMM, e1, e2, &r);
    if (!rc && d2 == 1) rc = chain(op_ti(ctx, FX_OP_SQUEEZE_DIM, r, -1, &tmp), &r, &tmp);
    if (!rc) rc = chain(op_tl(ctx, FX_OP__UNSAFE_VIEW, r, on, shape, &tmp), &r, &tmp);
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
