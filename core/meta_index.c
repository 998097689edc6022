/* core/meta_index.c — meta functions of index.Tensor, index_put(_), select_scatter and
 * slice_scatter.
 * Layer: core. Shapes and argument checks follow torch/_meta_registrations.py (meta_index_Tensor,
 * index_put) and TensorAdvancedIndexing.cpp / TensorShape.cpp for the messages. The advanced-
 * index plan itself lives in kernels/k_index.c (fx_index_plan_build), shared with the kernels. */
#include <string.h>

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
    fx_tensor *self, *t;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    fx_index_plan p;
    if ((rc = fx_index_plan_build(self, &a[1], &p, ctx->err))) goto done;
    if (p.data_dependent) {
        rc = data_dependent(ctx);
        goto done;
    }
    if ((rc = fx_tensor_empty(p.out_ndim, p.out_sizes, self->dtype, ctx->device, &t, ctx->err)))
        goto done;
    out[0] = fx_iv_tensor_steal(t);
done:
    fx_index_plan_free(&p);
    return rc;
}

/* Checks of index_put(_): the plan, then values' dtype (a wrapped number is cast to self's) and
 * that values broadcast to the indexed shape (make_index_put_iterator's messages). */
static int check_index_put(fx_opctx *ctx, const fx_ivalue *a, fx_tensor **self_out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    *self_out = self;
    fx_index_plan p;
    if ((rc = fx_index_plan_build(self, &a[1], &p, ctx->err))) goto done;
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
