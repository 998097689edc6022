/* core/meta_index.c — meta functions of index.Tensor, index_put(_), index_select, gather,
 * scatter(_) / scatter_add(_), index_copy(_), masked_fill(_) and the scatter inverses
 * select_scatter, slice_scatter, diagonal_scatter and as_strided_scatter.
 * Layer: core. Shapes and argument checks follow torch/_meta_registrations.py (meta_index_Tensor,
 * index_put) and TensorAdvancedIndexing.cpp / TensorShape.cpp for the messages. The advanced-
 * index plan itself lives in kernels/k_index.c (fx_index_plan_build), shared with the kernels. */
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* A fresh tensor with self's sizes and dtype, laid out like self when self is dense
 * (clone_preserve_strides / empty_like), on ctx->device. */
static int fresh_like(fx_opctx *ctx, const fx_tensor *self, fx_ivalue *out) {
    int64_t strides[FX_MAX_DIMS];
    fx_kb_dense_strides(self, strides);
    fx_tensor *t;
    int rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, self->dtype, ctx->device, &t,
                                     ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

static int data_dependent(fx_opctx *ctx) {
    fx_err_kind(ctx->err, "data_dependent");
    fx_err_setf(ctx->err, FX_EDATADEP,
                "%s: indexing with a boolean mask gives a data-dependent output shape, which a "
                "meta tensor cannot know",
                fx_op_qualname(ctx->op));
    return fx_err_hintf(ctx->err, "use torch.where(mask, x, y) or index with integer positions");
}

/* index.Tensor(Tensor self, Tensor?[] indices) -> Tensor: a fresh contiguous tensor of the
 * advanced-indexing result shape. A bool mask on a meta tensor is FX_EDATADEP. */
int fx_meta_index(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *t, *view = NULL;
    fx_ivalue list;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) ||
        (rc = fx_index_bool0(self, &a[1], &view, &list, ctx->err)))
        return rc;
    fx_index_plan p;
    if ((rc = fx_index_plan_build(view ? view : self, view ? &list : &a[1], &p, ctx->err)))
        goto done;
    if (p.data_dependent) {
        rc = data_dependent(ctx);
        goto done;
    }
    if ((rc = fx_tensor_empty(p.out_ndim, p.out_sizes, self->dtype, ctx->device, &t, ctx->err)))
        goto done;
    out[0] = fx_iv_tensor_steal(t);
done:
    fx_index_plan_free(&p);
    fx_ivalue_clear(&list);
    fx_tensor_release(view);
    return rc;
}

/* Checks of index_put(_): the plan, then values' dtype (a wrapped number is cast to self's) and
 * that values broadcast to the indexed shape (make_index_put_iterator's messages). */
static int check_index_put(fx_opctx *ctx, const fx_ivalue *a, fx_tensor **self_out) {
    fx_tensor *self, *view = NULL;
    fx_ivalue list;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    *self_out = self;
    if ((rc = fx_index_bool0(self, &a[1], &view, &list, ctx->err))) return rc;
    fx_index_plan p;
    if ((rc = fx_index_plan_build(view ? view : self, view ? &list : &a[1], &p, ctx->err)))
        goto done;
    if (a[2].tag != FX_IV_TENSOR) goto done; /* wrapped number: broadcasts anywhere */
    const fx_tensor *v = a[2].u.t;
    if (v->dtype != self->dtype) {
        rc = fx_err_setf(ctx->err, FX_ETYPE,
                         "Index put requires the source and destination dtypes match, got %s for "
                         "the destination and %s for the source.",
                         fx_kb_scalar_name(self->dtype), fx_kb_scalar_name(v->dtype));
        goto done;
    }
    if (p.data_dependent) goto done; /* the indexed shape is unknown on meta */
    bool ok = v->ndim <= p.out_ndim;
    for (int d = 0; ok && d < v->ndim; d++) {
        int64_t vs = v->sizes[v->ndim - 1 - d], ts = p.out_sizes[p.out_ndim - 1 - d];
        ok = vs == ts || vs == 1;
    }
    if (!ok) {
        char b1[160], b2[160];
        rc = fx_err_setf(ctx->err, FX_ESHAPE,
                         "shape mismatch: value tensor of shape %s cannot be broadcast to "
                         "indexing result of shape %s",
                         fx_shape_str(v->ndim, v->sizes, b1, sizeof b1),
                         fx_shape_str(p.out_ndim, p.out_sizes, b2, sizeof b2));
    }
done:
    fx_index_plan_free(&p);
    fx_ivalue_clear(&list);
    fx_tensor_release(view);
    return rc;
}

/* index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor:
 * a fresh tensor like self. */
int fx_meta_index_put(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc = check_index_put(ctx, a, &self);
    return rc ? rc : fresh_like(ctx, self, out);
}

/* index_put_(Tensor(a!) self, ...) -> Tensor(a!): self, retained. */
int fx_meta_index_put_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc = check_index_put(ctx, a, &self);
    if (rc) return rc;
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}

/* src must have exactly the view's sizes (TensorShape.cpp's *_scatter check). */
static int check_src(fx_opctx *ctx, const fx_tensor *src, const fx_view_geom *g) {
    bool same =
        src->ndim == g->ndim && !memcmp(src->sizes, g->sizes, sizeof(int64_t) * (size_t)g->ndim);
    if (same) return FX_OK;
    char b1[160], b2[160];
    return fx_err_setf(ctx->err, FX_ESHAPE,
                       "expected src to have a size equal to the slice of self. src size = %s, "
                       "slice size = %s",
                       fx_shape_str(src->ndim, src->sizes, b1, sizeof b1),
                       fx_shape_str(g->ndim, g->sizes, b2, sizeof b2));
}

/* select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor: a fresh tensor
 * like self; src must have the shape of self.select(dim, index). */
int fx_meta_select_scatter(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *src;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &src)) ||
        (rc = fx_select_geom(self, a[2].u.i, a[3].u.i, &g, ctx->err)) ||
        (rc = check_src(ctx, src, &g)))
        return rc;
    return fresh_like(ctx, self, out);
}

/* slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None,
 * SymInt step=1) -> Tensor: as select_scatter, for self.slice(dim, start, end, step). */
int fx_meta_slice_scatter(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *src;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &src)) ||
        (rc = fx_slice_geom(self, a[2].u.i, &a[3], &a[4], a[5].u.i, &g, ctx->err)) ||
        (rc = check_src(ctx, src, &g)))
        return rc;
    return fresh_like(ctx, self, out);
}

/* diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor:
 * a fresh tensor like self; src must have the shape of self.diagonal(offset, dim1, dim2). */
int fx_meta_diagonal_scatter(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *src;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &src)) ||
        (rc = fx_diagonal_geom(self, a[2].u.i, a[3].u.i, a[4].u.i, &g, ctx->err)) ||
        (rc = check_src(ctx, src, &g)))
        return rc;
    return fresh_like(ctx, self, out);
}

/* as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride,
 * SymInt? storage_offset=None) -> Tensor: aten's clone_preserve_strides(self) — a copy of self's
 * whole storage, viewed with self's sizes, strides and offset (so the as_strided geometry, which
 * is absolute in the storage, means the same thing in the copy) — with src written into the
 * as_strided view. A self with internal overlap is cloned densely instead, as aten does. */
int fx_meta_as_strided_scatter(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *src, *full = NULL, *res = NULL;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &src)) ||
        (rc = fx_as_strided_geom(ctx, self, a, 2, &g)) || (rc = check_src(ctx, src, &g)))
        return rc;
    if (fx_tensor_has_internal_overlap(self)) return fresh_like(ctx, self, out);
    int64_t numel = self->storage->size_bytes / (int64_t)fx_dtype_size(self->dtype);
    rc = fx_tensor_empty(1, &numel, self->dtype, ctx->device, &full, ctx->err);
    if (!rc)
        rc = fx_tensor_as_strided(full, self->ndim, self->sizes, self->strides, self->offset, &res,
                                  ctx->err);
    fx_tensor_release(full);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(res);
    return FX_OK;
}

/* ====================================================================================== */
/* index_select, gather, scatter, scatter_add, index_copy, masked_fill                     */
/* ====================================================================================== */

/* A fresh contiguous tensor on ctx->device into out[0]. */
static int fresh_contig(fx_opctx *ctx, int ndim, const int64_t *sizes, fx_dtype dt,
                        fx_ivalue *out) {
    fx_tensor *t;
    int rc = fx_tensor_empty(ndim, sizes, dt, ctx->device, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* The result of an in-place op: self, retained. */
static int self_out(fx_tensor *self, fx_ivalue *out) {
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}

/* index_select(Tensor self, int dim, Tensor index) -> Tensor: self's sizes with dim replaced by
 * index.numel() (a 0-dim self stays 0-dim), contiguous; index_select_out_cpu_'s checks. */
int fx_meta_index_select(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *index;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 2, &index)) ||
        (rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err)))
        return rc;
    int64_t n = fx_tensor_numel(index);
    if (index->ndim > 1)
        return fx_err_setf(ctx->err, FX_EINDEX, "index_select(): Index is supposed to be a vector");
    if (self->ndim == 0 && n != 1)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "index_select(): Index to scalar can have only 1 value, got %lld "
                           "value(s)",
                           (long long)n);
    if (index->dtype != FX_DTYPE_I64 && index->dtype != FX_DTYPE_I32)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "index_select(): Expected dtype int32 or int64 for index");
    int64_t sizes[FX_MAX_DIMS];
    memcpy(sizes, self->sizes, sizeof sizes);
    if (self->ndim) sizes[d] = n;
    return fresh_contig(ctx, self->ndim, sizes, self->dtype, out);
}

/* max(ndim, 1) and the size of dim d (1 for a 0-dim tensor), as ensure_nonempty_* do. */
static int ne_dim(const fx_tensor *t) { return t->ndim ? t->ndim : 1; }
static int64_t ne_size(const fx_tensor *t, int d) { return t->ndim ? t->sizes[d] : 1; }

/* gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor: index's shape,
 * self's dtype, contiguous. int64 index ("gather(): Expected dtype int64 for index"), same rank
 * as self, index.size(d) <= self.size(d) off dim (gather_shape_check's message). */
int fx_meta_gather(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *index;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 2, &index)) ||
        (rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err)))
        return rc;
    if (fx_tensor_numel(index) != 0) {
        if (index->dtype != FX_DTYPE_I64)
            return fx_err_setf(ctx->err, FX_ETYPE, "gather(): Expected dtype int64 for index");
        if (ne_dim(self) != ne_dim(index))
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Index tensor must have the same number of dimensions as input "
                               "tensor");
        for (int i = 0; i < ne_dim(self); i++)
            if (i != d && ne_size(index, i) > ne_size(self, i)) {
                char b1[160], b2[160];
                return fx_err_setf(ctx->err, FX_ESHAPE,
                                   "Size does not match at dimension %d expected index %s to be "
                                   "smaller than self %s apart from dimension %d",
                                   i, fx_shape_str(index->ndim, index->sizes, b1, sizeof b1),
                                   fx_shape_str(self->ndim, self->sizes, b2, sizeof b2), d);
            }
    }
    return fresh_contig(ctx, index->ndim, index->sizes, self->dtype, out);
}

/* The scatter family's checks (scatter_meta_impl): int64 index, src of self's dtype, the shape
 * rule of scatter_shape_check, a valid reduce string; the out-of-place forms return a fresh
 * contiguous tensor of self's sizes, the in-place ones self (without internal overlap). */
int fx_meta_scatter(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *index, *src = NULL;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 2, &index)) ||
        (rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err)))
        return rc;
    const fx_ivalue *reduce = fx_arg(ctx, a, "reduce");
    if (a[3].tag == FX_IV_TENSOR) {
        src = a[3].u.t;
    } else if (ctx->op->schema.args[3].type == FX_TY_TENSOR) {
        return fx_kb_tensor_arg(ctx, a, 3, &src); /* a wrapped number where src is a Tensor */
    }
    bool empty = fx_tensor_numel(index) == 0;
    if (!empty && index->dtype != FX_DTYPE_I64)
        return fx_err_setf(ctx->err, FX_ETYPE, "scatter(): Expected dtype int64 for index");
    if (src && src->dtype != self->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "scatter(): Expected self.dtype to be equal to src.dtype");
    if (!empty) {
        if (ne_dim(self) != ne_dim(index))
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Index tensor must have the same number of dimensions as self "
                               "tensor");
        bool wrong = false;
        for (int i = 0; i < ne_dim(self) && !wrong; i++)
            if (i != d && ne_size(index, i) > ne_size(self, i)) wrong = true;
        if (src && !wrong && ne_dim(src) >= ne_dim(self))
            for (int i = 0; i < ne_dim(self) && !wrong; i++)
                if (ne_size(index, i) > ne_size(src, i)) wrong = true;
        if (src && !wrong && ne_dim(src) < ne_dim(self)) wrong = true;
        if (wrong) {
            char b1[160], b2[160], b3[160];
            fx_shape_str(index->ndim, index->sizes, b1, sizeof b1);
            fx_shape_str(self->ndim, self->sizes, b2, sizeof b2);
            if (src)
                return fx_err_setf(ctx->err, FX_ESHAPE,
                                   "Expected index %s to be smaller than self %s apart from "
                                   "dimension %d and to be smaller size than src %s",
                                   b1, b2, d, fx_shape_str(src->ndim, src->sizes, b3, sizeof b3));
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Expected index %s to be smaller than self %s apart from "
                               "dimension %d",
                               b1, b2, d);
        }
    }
    if (reduce && reduce->tag == FX_IV_STR && strcmp(reduce->u.s, "add") &&
        strcmp(reduce->u.s, "multiply"))
        return fx_err_setf(ctx->err, FX_EARG, "reduce argument must be either add or multiply.");
    const fx_ivalue *value = fx_arg(ctx, a, "value");
    if (value && (rc = fx_scalar_check(self->dtype, value, ctx->err))) return rc;
    if (fx_op_is_inplace(ctx->op)) {
        if ((rc = fx_check_no_internal_overlap(self, ctx->err))) return rc;
        return self_out(self, out);
    }
    return fresh_contig(ctx, self->ndim, self->sizes, self->dtype, out);
}

/* index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor and index_copy_:
 * TORCH_PRECOMPUTE_META_FUNC(index_copy)'s checks and messages, in its order. */
int fx_meta_index_copy(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *index, *src;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 2, &index)) ||
        (rc = fx_kb_tensor_arg(ctx, a, 3, &src)) ||
        (rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err)))
        return rc;
    int64_t n = fx_tensor_numel(index);
    if (index->ndim >= 2)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "index_copy_(): Index should have dimension 1 or 0 (got %d)",
                           index->ndim);
    if (src->ndim == 0 && n != 1)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "index_copy_(): When source is scalar, index should have one element "
                           "(got %lld)",
                           (long long)n);
    if (src->ndim != self->ndim && src->ndim != 0 && self->ndim != 0)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "index_copy_(): When source and destination are not scalars, their "
                           "dimensionality must match. Source dimensionality (%d), destination "
                           "dimensionality (%d)",
                           src->ndim, self->ndim);
    if (index->dtype != FX_DTYPE_I64)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "index_copy_(): Expected a long tensor for index, but got %s",
                           fx_kb_scalar_name(index->dtype));
    if (self->dtype != src->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "index_copy_(): self and source expected to have the same dtype, but "
                           "got (self) %s and (source) %s",
                           fx_kb_scalar_name(self->dtype), fx_kb_scalar_name(src->dtype));
    int64_t ss[FX_MAX_DIMS], rs[FX_MAX_DIMS];
    int ns = 0, nr = 0;
    for (int e = 0; e < self->ndim; e++)
        if (e != d) ss[ns++] = self->sizes[e];
    for (int e = 0; e < src->ndim; e++)
        if (e != d) rs[nr++] = src->sizes[e];
    if (ns != nr || memcmp(ss, rs, sizeof(int64_t) * (size_t)ns)) {
        /* the slice shapes print as std::vector does through c10's operator<<: "3 4" */
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_strbuf_append(&sb, "index_copy_(): Source/destination tensor must have same slice "
                              "shapes. Destination slice shape: ");
        for (int e = 0; e < ns; e++)
            fx_strbuf_appendf(&sb, "%s%lld", e ? " " : "", (long long)ss[e]);
        fx_strbuf_appendf(&sb, " at dimension %d and source slice shape: ", d);
        for (int e = 0; e < nr; e++)
            fx_strbuf_appendf(&sb, "%s%lld", e ? " " : "", (long long)rs[e]);
        fx_strbuf_append(&sb, " at dimension 0.");
        if (fx_strbuf_status(&sb, ctx->err))
            rc = FX_ENOMEM;
        else
            rc = fx_err_setf(ctx->err, FX_ESHAPE, "%s", fx_strbuf_cstr(&sb));
        fx_strbuf_free(&sb);
        return rc;
    }
    if (src->ndim != 0 && n != src->sizes[d])
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "index_copy_(): Number of indices (%lld) should be equal to "
                           "source.size(dim) (%lld)",
                           (long long)n, (long long)src->sizes[d]);
    if (fx_op_is_inplace(ctx->op)) return self_out(self, out);
    return fresh_like(ctx, self, out);
}

/* masked_fill.Scalar / .Tensor and masked_fill_.Scalar / .Tensor: a bool mask ("masked_fill_
 * only supports boolean masks, but got mask with dtype unsigned char"), a 0-dim value tensor
 * for the .Tensor forms, a value that fits self's dtype. In place the mask must broadcast to
 * self's shape; out of place self and mask broadcast together (aten's masked_fill expands both
 * and clones) into a fresh contiguous result. */
int fx_meta_masked_fill(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *mask;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &mask)))
        return rc;
    bool inplace = fx_op_is_inplace(ctx->op);
    int64_t bs[FX_MAX_DIMS];
    int nb;
    if (!inplace && (rc = fx_broadcast_shape(mask->ndim, mask->sizes, self->ndim, self->sizes, &nb,
                                             bs, ctx->err)))
        return rc;
    if (a[2].tag == FX_IV_TENSOR) {
        const fx_tensor *v = a[2].u.t;
        if (v->ndim != 0)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "masked_fill_ only supports a 0-dimensional value tensor, but got "
                               "tensor with %d dimension(s).",
                               v->ndim);
    }
    if (mask->dtype != FX_DTYPE_BOOL)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                           fx_typemeta_name(mask->dtype));
    if (a[2].tag != FX_IV_TENSOR && (rc = fx_scalar_check(self->dtype, &a[2], ctx->err))) return rc;
    if (inplace) {
        if ((rc = fx_broadcast_shape(self->ndim, self->sizes, mask->ndim, mask->sizes, &nb, bs,
                                     ctx->err)))
            return rc;
        if ((rc = fx_check_inplace_shape(self->ndim, self->sizes, nb, bs, ctx->err))) return rc;
        if ((rc = fx_check_no_partial_overlap(self, mask, ctx->err))) return rc;
        return self_out(self, out);
    }
    return fresh_contig(ctx, nb, bs, self->dtype, out);
}
