/* core/meta_shape.c — meta functions of the view ops (view, select, slice, unsqueeze, squeeze,
 * transpose, permute, t, expand, alias, as_strided, diagonal, and the list-returning split,
 * split_with_sizes, unbind) and of _unsafe_view, cat and repeat.
 * Layer: core. A view op has no kernel: its meta function creates the result with
 * fx_tensor_as_strided, sharing self's storage (so it works the same on cpu and meta tensors),
 * and checks its arguments with aten/src/ATen/native/TensorShape.cpp's messages.
 *
 * Invariant of every view built here: each element it reaches lies inside self's storage
 * (fx_tensor_as_strided re-checks it), and self's version counter is shared. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* ====================================================================================== */
/* Argument helpers (declared in ops_shape.h)                                              */
/* ====================================================================================== */

static const char *iv_type_name(const fx_ivalue *v) {
    switch (v->tag) {
    case FX_IV_INT: return "int";
    case FX_IV_FLOAT: return "float";
    case FX_IV_BOOL: return "bool";
    case FX_IV_NONE:
    case FX_IV_UNSET: return "NoneType";
    case FX_IV_LIST: return "list";
    case FX_IV_STR: return "str";
    default: return "object";
    }
}

int fx_kb_tensor_arg(fx_opctx *ctx, const fx_ivalue *a, int i, fx_tensor **out) {
    *out = NULL;
    if (a[i].tag == FX_IV_TENSOR) {
        *out = a[i].u.t;
        return FX_OK;
    }
    const fx_schema *s = &ctx->op->schema;
    return fx_err_setf(ctx->err, FX_EARG,
                       "%s(): argument '%s' (position %d) must be Tensor, not %s", s->name,
                       i < s->nargs ? s->args[i].name : "?", i + 1, iv_type_name(&a[i]));
}

int fx_kb_ints_arg(fx_opctx *ctx, const fx_ivalue *a, int i, int64_t *v, int *n) {
    if (a[i].tag == FX_IV_INT) { /* tolerated for direct callers that bypass dispatch */
        v[0] = a[i].u.i;
        *n = 1;
        return FX_OK;
    }
    if (a[i].tag != FX_IV_LIST)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument '%s' must be tuple of ints, not %s",
                           ctx->op->schema.name, ctx->op->schema.args[i].name, iv_type_name(&a[i]));
    if (a[i].u.list.n > FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, a[i].u.list.n);
    for (int k = 0; k < a[i].u.list.n; k++) {
        if (a[i].u.list.items[k].tag != FX_IV_INT)
            return fx_err_setf(ctx->err, FX_EARG,
                               "%s(): argument '%s' must be tuple of ints, but found element of "
                               "type %s at pos %d",
                               ctx->op->schema.name, ctx->op->schema.args[i].name,
                               iv_type_name(&a[i].u.list.items[k]), k);
        v[k] = a[i].u.list.items[k].u.i;
    }
    *n = a[i].u.list.n;
    return FX_OK;
}

int fx_kb_view(fx_opctx *ctx, fx_tensor *self, int ndim, const int64_t *sizes,
               const int64_t *strides, int64_t offset, fx_ivalue *out) {
    fx_tensor *v;
    int rc = fx_tensor_as_strided(self, ndim, sizes, strides, offset, &v, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(v);
    return FX_OK;
}

void fx_kb_dense_strides(const fx_tensor *t, int64_t *strides) {
    /* Non-overlapping and dense: the strides are a permutation of contiguous strides, i.e. the
     * dims sorted by stride tile [0, numel) exactly. */
    int64_t numel = fx_tensor_numel(t);
    bool dense = numel > 0 && !fx_tensor_has_internal_overlap(t);
    if (dense) {
        int64_t span = 1;
        for (int d = 0; d < t->ndim; d++)
            if (t->sizes[d] > 1) span += (t->sizes[d] - 1) * t->strides[d];
        dense = span == numel;
        for (int d = 0; d < t->ndim && dense; d++)
            if (t->strides[d] < 0) dense = false;
    }
    if (dense) {
        memcpy(strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
        return;
    }
    fx_contiguous_strides(t->ndim, t->sizes, strides);
}

const char *fx_kb_scalar_name(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F32: return "Float";
    case FX_DTYPE_F64: return "Double";
    case FX_DTYPE_F16: return "Half";
    case FX_DTYPE_BF16: return "BFloat16";
    case FX_DTYPE_I64: return "Long";
    case FX_DTYPE_I32: return "Int";
    case FX_DTYPE_I16: return "Short";
    case FX_DTYPE_I8: return "Char";
    case FX_DTYPE_U8: return "Byte";
    case FX_DTYPE_BOOL: return "Bool";
    case FX_DTYPE_C64: return "ComplexFloat";
    case FX_DTYPE_C128: return "ComplexDouble";
    default: return "Undefined";
    }
}

/* A fresh contiguous tensor on ctx->device into out[0]. */
static int fresh_tensor(fx_opctx *ctx, int ndim, const int64_t *sizes, fx_dtype dt,
                        fx_ivalue *out) {
    fx_tensor *t;
    int rc = fx_tensor_empty(ndim, sizes, dt, ctx->device, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* ====================================================================================== */
/* View geometry                                                                           */
/* ====================================================================================== */

static void geom_of(const fx_tensor *t, fx_view_geom *g) {
    g->ndim = t->ndim;
    memcpy(g->sizes, t->sizes, sizeof g->sizes);
    memcpy(g->strides, t->strides, sizeof g->strides);
    g->offset = t->offset;
}

static void geom_drop_dim(fx_view_geom *g, int d) {
    for (int e = d; e + 1 < g->ndim; e++) {
        g->sizes[e] = g->sizes[e + 1];
        g->strides[e] = g->strides[e + 1];
    }
    g->ndim--;
}

int fx_select_geom(const fx_tensor *t, int64_t dim, int64_t index, fx_view_geom *g, fx_err *err) {
    if (t->ndim == 0)
        return fx_err_setf(err, FX_EINDEX, "select() cannot be applied to a 0-dim tensor.");
    int d;
    int rc = fx_wrap_dim(dim, t->ndim, &d, err);
    if (rc) return rc;
    int64_t size = t->sizes[d];
    if (index < -size || index >= size) {
        char b[160];
        return fx_err_setf(err, FX_EINDEX,
                           "select(): index %lld out of range for tensor of size %s at "
                           "dimension %d",
                           (long long)index, fx_shape_str(t->ndim, t->sizes, b, sizeof b), d);
    }
    if (index < 0) index += size;
    geom_of(t, g);
    g->offset += index * t->strides[d];
    geom_drop_dim(g, d);
    return FX_OK;
}

int fx_slice_geom(const fx_tensor *t, int64_t dim, const fx_ivalue *start, const fx_ivalue *end,
                  int64_t step, fx_view_geom *g, fx_err *err) {
    if (t->ndim == 0)
        return fx_err_setf(err, FX_EINDEX, "slice() cannot be applied to a 0-dim tensor.");
    int d;
    int rc = fx_wrap_dim(dim, t->ndim, &d, err);
    if (rc) return rc;
    if (step <= 0) return fx_err_setf(err, FX_EARG, "slice step must be positive");
    int64_t size = t->sizes[d];
    int64_t s = start && start->tag == FX_IV_INT ? start->u.i : 0;
    int64_t e = end && end->tag == FX_IV_INT ? end->u.i : INT64_MAX;
    if (s < 0) s += size;
    if (e < 0) e += size;
    if (s < 0)
        s = 0;
    else if (s >= size)
        s = size;
    if (e < s)
        e = s;
    else if (e >= size)
        e = size;
    geom_of(t, g);
    g->offset += s * t->strides[d];
    g->sizes[d] = (e - s + step - 1) / step;
    g->strides[d] = t->strides[d] * step;
    return FX_OK;
}

/* ====================================================================================== */
/* Meta functions                                                                          */
/* ====================================================================================== */

/* view(Tensor(a) self, SymInt[] size) -> Tensor(a): -1 inference, then computeStride's
 * legality; an impossible view is view's RuntimeError pointing to reshape. */
int fx_meta_view(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int64_t shape[FX_MAX_DIMS], sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    int n, rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_ints_arg(ctx, a, 1, shape, &n)))
        return rc;
    if ((rc = fx_infer_view_shape(n, shape, fx_tensor_numel(self), sizes, ctx->err))) return rc;
    if (!fx_view_strides(self->ndim, self->sizes, self->strides, n, sizes, strides))
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.");
    return fx_kb_view(ctx, self, n, sizes, strides, self->offset, out);
}

/* _unsafe_view(Tensor self, SymInt[] size) -> Tensor: a fresh contiguous tensor of the new
 * shape (its kernel copies self's elements in row-major order). No alias annotation, as in
 * ATen, so functionalization treats it as a fresh value. */
int fx_meta_unsafe_view(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *t;
    int64_t shape[FX_MAX_DIMS], sizes[FX_MAX_DIMS];
    int n, rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_ints_arg(ctx, a, 1, shape, &n)))
        return rc;
    if ((rc = fx_infer_view_shape(n, shape, fx_tensor_numel(self), sizes, ctx->err))) return rc;
    if ((rc = fx_tensor_empty(n, sizes, self->dtype, ctx->device, &t, ctx->err))) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a) */
int fx_meta_select(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if ((rc = fx_select_geom(self, a[1].u.i, a[2].u.i, &g, ctx->err))) return rc;
    return fx_kb_view(ctx, self, g.ndim, g.sizes, g.strides, g.offset, out);
}

/* slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None,
 * SymInt step=1) -> Tensor(a) */
int fx_meta_slice(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if ((rc = fx_slice_geom(self, a[1].u.i, &a[2], &a[3], a[4].u.i, &g, ctx->err))) return rc;
    return fx_kb_view(ctx, self, g.ndim, g.sizes, g.strides, g.offset, out);
}

/* unsqueeze(Tensor(a) self, int dim) -> Tensor(a): dim wraps over ndim + 1; the new dim's
 * stride is sizes[dim] * strides[dim] (1 at the end), as inferUnsqueezeGeometry. */
int fx_meta_unsqueeze(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if ((rc = fx_wrap_dim(a[1].u.i, self->ndim + 1, &d, ctx->err))) return rc;
    if (self->ndim + 1 > FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, self->ndim + 1);
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    for (int e = 0, k = 0; e <= self->ndim; e++) {
        if (e == d) {
            sizes[e] = 1;
            strides[e] = d >= self->ndim ? 1 : self->sizes[d] * self->strides[d];
        } else {
            sizes[e] = self->sizes[k];
            strides[e] = self->strides[k];
            k++;
        }
    }
    return fx_kb_view(ctx, self, self->ndim + 1, sizes, strides, self->offset, out);
}

/* squeeze.dim / squeeze.dims / squeeze: drops the named (or every) dim of size 1; a named dim
 * of another size stays, and the result is still a view (alias) of self. */
int fx_meta_squeeze(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    bool drop[FX_MAX_DIMS] = {false};
    fx_op_id id = ctx->op->id;
    if (id == FX_OP_SQUEEZE) {
        for (int d = 0; d < self->ndim; d++) drop[d] = self->sizes[d] == 1;
    } else {
        int64_t dims[FX_MAX_DIMS];
        int n;
        if (id == FX_OP_SQUEEZE_DIM) {
            dims[0] = a[1].u.i;
            n = 1;
        } else if ((rc = fx_kb_ints_arg(ctx, a, 1, dims, &n))) {
            return rc;
        }
        bool seen[FX_MAX_DIMS] = {false};
        for (int k = 0; k < n; k++) {
            int d;
            if ((rc = fx_wrap_dim(dims[k], self->ndim, &d, ctx->err))) return rc;
            if (seen[d])
                return fx_err_setf(ctx->err, FX_EARG,
                                   "dim %d appears multiple times in the list of dims", d);
            seen[d] = true;
            if (self->ndim > 0 && self->sizes[d] == 1) drop[d] = true;
        }
    }
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < self->ndim; d++)
        if (!drop[d]) {
            sizes[nd] = self->sizes[d];
            strides[nd] = self->strides[d];
            nd++;
        }
    return fx_kb_view(ctx, self, nd, sizes, strides, self->offset, out);
}

static int transpose_view(fx_opctx *ctx, fx_tensor *self, int64_t d0, int64_t d1, fx_ivalue *out) {
    int a0, a1, rc;
    if ((rc = fx_wrap_dim(d0, self->ndim, &a0, ctx->err)) ||
        (rc = fx_wrap_dim(d1, self->ndim, &a1, ctx->err)))
        return rc;
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    memcpy(sizes, self->sizes, sizeof sizes);
    memcpy(strides, self->strides, sizeof strides);
    if (self->ndim > 0) {
        sizes[a0] = self->sizes[a1];
        sizes[a1] = self->sizes[a0];
        strides[a0] = self->strides[a1];
        strides[a1] = self->strides[a0];
    }
    return fx_kb_view(ctx, self, self->ndim, sizes, strides, self->offset, out);
}

/* transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a) */
int fx_meta_transpose(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    return transpose_view(ctx, self, a[1].u.i, a[2].u.i, out);
}

/* t(Tensor(a) self) -> Tensor(a): transpose(0, 1) for 2-D, an alias for 0-D and 1-D. */
int fx_meta_t(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (self->ndim > 2)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "t() expects a tensor with <= 2 dimensions, but self is %dD",
                           self->ndim);
    if (self->ndim < 2)
        return fx_kb_view(ctx, self, self->ndim, self->sizes, self->strides, self->offset, out);
    return transpose_view(ctx, self, 0, 1, out);
}

/* permute(Tensor(a) self, int[] dims) -> Tensor(a) */
int fx_meta_permute(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int64_t dims[FX_MAX_DIMS];
    int n, rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (a[1].tag == FX_IV_LIST && a[1].u.list.n != self->ndim)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "permute(sparse_coo): number of dimensions in the tensor input does "
                           "not match the length of the desired ordering of dimensions i.e. "
                           "input.dim() = %d is not equal to len(dims) = %d",
                           self->ndim, a[1].u.list.n);
    if ((rc = fx_kb_ints_arg(ctx, a, 1, dims, &n))) return rc;
    if (n != self->ndim)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "permute(sparse_coo): number of dimensions in the tensor input does "
                           "not match the length of the desired ordering of dimensions i.e. "
                           "input.dim() = %d is not equal to len(dims) = %d",
                           self->ndim, n);
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    bool seen[FX_MAX_DIMS] = {false};
    for (int k = 0; k < n; k++) {
        int d;
        if ((rc = fx_wrap_dim(dims[k], self->ndim, &d, ctx->err))) return rc;
        if (seen[d])
            return fx_err_setf(ctx->err, FX_EARG, "permute(): duplicate dims are not allowed.");
        seen[d] = true;
        sizes[k] = self->sizes[d];
        strides[k] = self->strides[d];
    }
    return fx_kb_view(ctx, self, n, sizes, strides, self->offset, out);
}

/* expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a): broadcast dims get
 * stride 0; -1 keeps a size. */
int fx_meta_expand(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    int n, rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_ints_arg(ctx, a, 1, sizes, &n)))
        return rc;
    if ((rc = fx_expand_strides(self, n, sizes, strides, ctx->err))) return rc;
    return fx_kb_view(ctx, self, n, sizes, strides, self->offset, out);
}

/* alias(Tensor(a) self) -> Tensor(a): same geometry, new tensor object. */
int fx_meta_alias(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    return fx_kb_view(ctx, self, self->ndim, self->sizes, self->strides, self->offset, out);
}

/* The geometry of as_strided(self, a[first], a[first + 1], a[first + 2]) with as_strided's
 * checks (lengths, negative strides / sizes, offset, checkInBoundsForStorage's message). */
int fx_as_strided_geom(fx_opctx *ctx, const fx_tensor *self, const fx_ivalue *a, int first,
                       fx_view_geom *g) {
    int64_t *sizes = g->sizes, *strides = g->strides;
    int n, ns, rc;
    if (a[first].tag == FX_IV_LIST && a[first + 1].tag == FX_IV_LIST &&
        a[first].u.list.n != a[first + 1].u.list.n)
        return fx_err_setf(ctx->err, FX_EARG, "mismatch in length of strides and shape");
    if ((rc = fx_kb_ints_arg(ctx, a, first, sizes, &n)) ||
        (rc = fx_kb_ints_arg(ctx, a, first + 1, strides, &ns)))
        return rc;
    if (n != ns) return fx_err_setf(ctx->err, FX_EARG, "mismatch in length of strides and shape");
    char b1[160], b2[160];
    for (int d = 0; d < n; d++)
        if (strides[d] < 0)
            return fx_err_setf(ctx->err, FX_EARG,
                               "as_strided: Negative strides are not supported at the moment, "
                               "got strides: %s",
                               fx_shape_str(n, strides, b1, sizeof b1));
    for (int d = 0; d < n; d++)
        if (sizes[d] < 0)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Trying to create tensor with negative dimension %lld: %s",
                               (long long)sizes[d], fx_shape_str(n, sizes, b1, sizeof b1));
    int64_t offset = a[first + 2].tag == FX_IV_INT ? a[first + 2].u.i : self->offset;
    if (offset < 0)
        return fx_err_setf(ctx->err, FX_EARG, "Tensor: invalid storage offset %lld",
                           (long long)offset);
    /* checkInBoundsForStorage, with its wording; the size arithmetic is checked for overflow as
     * computeStorageNbytes does (c10), with its message */
    int64_t item = (int64_t)fx_dtype_size(self->dtype), span = 1, need = 0;
    bool overflow = false;
    for (int d = 0; d < n; d++) {
        if (sizes[d] == 0) {
            span = 0;
            break;
        }
        int64_t extent;
        overflow |= __builtin_mul_overflow(sizes[d] - 1, strides[d], &extent);
        overflow |= __builtin_add_overflow(span, extent, &span);
    }
    if (span > 0) {
        overflow |= __builtin_add_overflow(span, offset, &need);
        overflow |= __builtin_mul_overflow(need, item, &need);
    }
    if (overflow)   /* out of any storage: the same kind as the bounds error below */
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "Storage size calculation overflowed with sizes=%s and strides=%s",
                           fx_shape_str(n, sizes, b1, sizeof b1),
                           fx_shape_str(n, strides, b2, sizeof b2));
    if (span > 0 && need > self->storage->size_bytes)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "setStorage: sizes %s, strides %s, storage offset %lld, and itemsize "
                           "%lld requiring a storage size of %lld are out of bounds for storage "
                           "of size %lld",
                           fx_shape_str(n, sizes, b1, sizeof b1),
                           fx_shape_str(n, strides, b2, sizeof b2), (long long)offset,
                           (long long)item, (long long)need,
                           (long long)self->storage->size_bytes);
    g->ndim = n;
    g->offset = offset;
    return FX_OK;
}

/* as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None)
 * -> Tensor(a): any geometry inside self's storage; the offset is absolute (default: self's). */
int fx_meta_as_strided(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_as_strided_geom(ctx, self, a, 1, &g)))
        return rc;
    return fx_kb_view(ctx, self, g.ndim, g.sizes, g.strides, g.offset, out);
}

int fx_diagonal_geom(const fx_tensor *t, int64_t offset, int64_t dim1, int64_t dim2,
                     fx_view_geom *g, fx_err *err) {
    int d1, d2, rc;
    if ((rc = fx_wrap_dim(dim1, t->ndim, &d1, err)) || (rc = fx_wrap_dim(dim2, t->ndim, &d2, err)))
        return rc;
    if (d1 == d2)
        return fx_err_setf(err, FX_EARG, "diagonal dimensions cannot be identical %lld, %lld",
                           (long long)dim1, (long long)dim2);
    int64_t n = offset >= 0 ? t->sizes[d2] - offset : t->sizes[d1] + offset;
    int64_t m = offset >= 0 ? t->sizes[d1] : t->sizes[d2];
    int64_t diag = n < m ? n : m;
    if (diag < 0) diag = 0;
    geom_of(t, g);
    if (diag > 0) g->offset += offset >= 0 ? offset * t->strides[d2] : -offset * t->strides[d1];
    int64_t st = t->strides[d1] + t->strides[d2];
    geom_drop_dim(g, d1 > d2 ? d1 : d2);
    geom_drop_dim(g, d1 > d2 ? d2 : d1);
    g->sizes[g->ndim] = diag;
    g->strides[g->ndim] = st;
    g->ndim++;
    return FX_OK;
}

/* diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a): dims dim1 and dim2
 * dropped, a last dim walking their diagonal (stride stride1 + stride2); offset > 0 is above
 * the main diagonal. "diagonal dimensions cannot be identical 0, 0". */
int fx_meta_diagonal(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) ||
        (rc = fx_diagonal_geom(self, a[1].u.i, a[2].u.i, a[3].u.i, &g, ctx->err)))
        return rc;
    return fx_kb_view(ctx, self, g.ndim, g.sizes, g.strides, g.offset, out);
}

int fx_unfold_geom(int ndim, const int64_t *sizes, const int64_t *strides, int64_t offset,
                   int64_t dim, int64_t size, int64_t step, fx_view_geom *g, fx_err *err) {
    int d, rc;
    if ((rc = fx_wrap_dim(dim, ndim, &d, err))) return rc;
    int64_t max_size = ndim == 0 ? 1 : sizes[d];
    if (size > max_size)
        return fx_err_setf(err, FX_EARG, "maximum size for tensor at dimension %d is %lld but size is %lld",
                           d, (long long)max_size, (long long)size);
    if (size < 0) return fx_err_setf(err, FX_EARG, "size is %lld but must be >= 0", (long long)size);
    if (step <= 0) return fx_err_setf(err, FX_EARG, "step is %lld but must be > 0", (long long)step);
    if (ndim + 1 > FX_MAX_DIMS)
        return fx_err_setf(err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d", FX_MAX_DIMS,
                           ndim + 1);
    g->ndim = ndim + 1;
    memcpy(g->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    memcpy(g->strides, strides, sizeof(int64_t) * (size_t)ndim);
    g->offset = offset;
    g->sizes[ndim] = size;
    g->strides[ndim] = ndim == 0 ? 1 : strides[d];
    if (ndim > 0) {
        g->sizes[d] = (sizes[d] - size) / step + 1;
        g->strides[d] = strides[d] * step;
    }
    return FX_OK;
}

/* unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a): every window of `size`
 * elements along `dimension`, `step` apart, as a new last dim of that size; `dimension` keeps
 * (n - size) / step + 1 windows (stride * step). A 0-dim self is one window of size 0 or 1.
 * Messages of TensorShape.cpp's unfold. */
int fx_meta_unfold(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    fx_view_geom g;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) ||
        (rc = fx_unfold_geom(self->ndim, self->sizes, self->strides, self->offset, a[1].u.i,
                             a[2].u.i, a[3].u.i, &g, ctx->err)))
        return rc;
    return fx_kb_view(ctx, self, g.ndim, g.sizes, g.strides, g.offset, out);
}

/* unfold_backward(Tensor grad_in, SymInt[] input_sizes, int dim, int size, int step) -> Tensor:
 * a fresh contiguous tensor of input_sizes (grad_in's dtype); grad_in must have the shape
 * unfold(dim, size, step) gives a tensor of input_sizes. */
int fx_meta_unfold_backward(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *grad;
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    int n, rc;
    fx_view_geom g;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &grad)) || (rc = fx_kb_ints_arg(ctx, a, 1, sizes, &n)))
        return rc;
    for (int d = 0; d < n; d++)
        if (sizes[d] < 0)
            return fx_err_setf(ctx->err, FX_EARG, "unfold_backward: input_sizes has a negative size %lld",
                               (long long)sizes[d]);
    fx_contiguous_strides(n, sizes, strides);
    if ((rc = fx_unfold_geom(n, sizes, strides, 0, a[2].u.i, a[3].u.i, a[4].u.i, &g, ctx->err)))
        return rc;
    bool same = grad->ndim == g.ndim;
    for (int d = 0; same && d < g.ndim; d++) same = grad->sizes[d] == g.sizes[d];
    if (!same) {
        char want[160], have[160], in[160];
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "unfold_backward: grad_in has shape %s but unfold(%lld, %lld, %lld) of a "
                           "tensor of sizes %s has shape %s",
                           fx_shape_str(grad->ndim, grad->sizes, have, sizeof have),
                           (long long)a[2].u.i, (long long)a[3].u.i, (long long)a[4].u.i,
                           fx_shape_str(n, sizes, in, sizeof in),
                           fx_shape_str(g.ndim, g.sizes, want, sizeof want));
    }
    return fresh_tensor(ctx, n, sizes, grad->dtype, out);
}

/* ====================================================================================== */
/* List-returning views: split, split_with_sizes, unbind                                   */
/* ====================================================================================== */

/* out[0] = a list of n views of self; geometry i comes from geom(i). On error nothing is left
 * in out. */
static int view_list(fx_opctx *ctx, fx_tensor *self, int64_t n, const fx_view_geom *geoms,
                     fx_ivalue *out) {
    if (n > INT32_MAX)
        return fx_err_setf(ctx->err, FX_ENOMEM, "too many views (%lld)", (long long)n);
    fx_ivalue list;
    int rc = fx_iv_list((int)n, &list, ctx->err);
    for (int64_t i = 0; i < n && !rc; i++)
        rc = fx_kb_view(ctx, self, geoms[i].ndim, geoms[i].sizes, geoms[i].strides, geoms[i].offset,
                        &list.u.list.items[i]);
    if (rc) {
        fx_ivalue_clear(&list);
        return rc;
    }
    out[0] = list;
    return FX_OK;
}

/* Geometries of self.narrow(dim, start_i, len_i) for the n pieces given by lens (fx_malloc'd
 * array in *out, n entries; free with fx_free). */
static int narrow_geoms(fx_opctx *ctx, const fx_tensor *self, int d, int64_t n, const int64_t *lens,
                        fx_view_geom **out) {
    fx_view_geom *g = fx_malloc(sizeof *g * (size_t)(n > 0 ? n : 1));
    if (!g) return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory splitting a tensor");
    int64_t start = 0;
    for (int64_t i = 0; i < n; i++) {
        geom_of(self, &g[i]);
        g[i].offset += start * self->strides[d];
        g[i].sizes[d] = lens[i];
        start += lens[i];
    }
    *out = g;
    return FX_OK;
}

/* split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[] and
 * split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]: views
 * of consecutive pieces along dim (aten's split: ceil(size / split_size) pieces, the last one
 * shorter, at least one piece). Messages of TensorShape.cpp. */
int fx_meta_split(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (self->ndim == 0)
        return fx_err_setf(ctx->err, FX_ESHAPE, "split expects at least a 1-dimensional tensor");
    bool with_sizes = ctx->op->id == FX_OP_SPLIT_WITH_SIZES;
    int64_t dim = a[2].u.i;
    int64_t *lens = NULL, n;
    if (!with_sizes) {
        int64_t split = a[1].u.i;
        if (split < 0)
            return fx_err_setf(ctx->err, FX_EARG,
                               "split expects split_size be non-negative, but got split_size=%lld",
                               (long long)split);
        if ((rc = fx_wrap_dim(dim, self->ndim, &d, ctx->err))) return rc;
        int64_t size = self->sizes[d];
        if (split == 0 && size != 0)
            return fx_err_setf(ctx->err, FX_EARG,
                               "split_size can only be 0 if dimension size is 0, but got "
                               "dimension size of %lld",
                               (long long)size);
        n = split ? (size + split - 1) / split : 1;
        if (n < 1) n = 1;
        if (!(lens = fx_malloc(sizeof(int64_t) * (size_t)n)))
            return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory splitting a tensor");
        for (int64_t i = 0; i < n; i++) lens[i] = i < n - 1 ? split : size - split * (n - 1);
    } else {
        if ((rc = fx_wrap_dim(dim, self->ndim, &d, ctx->err))) return rc;
        const fx_ivalue *l = &a[1];
        n = l->tag == FX_IV_LIST ? l->u.list.n : 1;
        if (!(lens = fx_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1))))
            return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory splitting a tensor");
        int64_t sum = 0;
        bool neg = false;
        for (int64_t i = 0; i < n; i++) {
            lens[i] = l->tag == FX_IV_LIST ? l->u.list.items[i].u.i : l->u.i;
            neg |= lens[i] < 0;
            sum += lens[i];
        }
        if (neg || sum != self->sizes[d]) {
            fx_strbuf sb = FX_STRBUF_INIT;
            fx_strbuf_append(&sb, "[");
            for (int64_t i = 0; i < n; i++)
                fx_strbuf_appendf(&sb, "%s%lld", i ? ", " : "", (long long)lens[i]);
            fx_strbuf_append(&sb, "]");
            if (fx_strbuf_status(&sb, ctx->err))
                rc = FX_ENOMEM;
            else if (neg)
                rc = fx_err_setf(ctx->err, FX_EARG,
                                 "split_with_sizes expects split_sizes have only non-negative "
                                 "entries, but got split_sizes=%s",
                                 fx_strbuf_cstr(&sb));
            else
                rc = fx_err_setf(ctx->err, FX_EARG,
                                 "split_with_sizes expects split_sizes to sum exactly to %lld "
                                 "(input tensor's size at dimension %lld), but got "
                                 "split_sizes=%s",
                                 (long long)self->sizes[d], (long long)dim, fx_strbuf_cstr(&sb));
            fx_strbuf_free(&sb);
            fx_free(lens);
            return rc;
        }
    }
    fx_view_geom *g = NULL;
    rc = narrow_geoms(ctx, self, d, n, lens, &g);
    if (!rc) rc = view_list(ctx, self, n, g, out);
    fx_free(g);
    fx_free(lens);
    return rc;
}

/* unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]: self.select(dim, i) for every i. */
int fx_meta_unbind(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if (self->ndim == 0)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "Dimension specified as %lld but tensor has no dimensions",
                           (long long)a[1].u.i);
    if ((rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err))) return rc;
    int64_t n = self->sizes[d];
    fx_view_geom *g = fx_malloc(sizeof *g * (size_t)(n > 0 ? n : 1));
    if (!g) return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory unbinding a tensor");
    for (int64_t i = 0; i < n && !rc; i++) rc = fx_select_geom(self, d, i, &g[i], ctx->err);
    if (!rc) rc = view_list(ctx, self, n, g, out);
    fx_free(g);
    return rc;
}

/* ====================================================================================== */
/* cat, repeat                                                                             */
/* ====================================================================================== */

/* cat(Tensor[] tensors, int dim=0) -> Tensor: TORCH_META_FUNC(cat)'s checks in order — a
 * non-empty list, no 0-dim tensor, dim wrapped by the first tensor that is not a legacy empty
 * [0] tensor (those are skipped everywhere), equal rank and equal sizes except along dim — and
 * a fresh contiguous result of torch.result_type(tensors). */
int fx_meta_cat(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    const fx_ivalue *l = &a[0];
    int n = l->tag == FX_IV_LIST ? l->u.list.n : 0, rc;
    if (n == 0)
        return fx_err_setf(ctx->err, FX_EARG, "torch.cat(): expected a non-empty list of Tensors");
    for (int i = 0; i < n; i++)
        if (l->u.list.items[i].u.t->ndim == 0)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "zero-dimensional tensor (at position %d) cannot be concatenated",
                               i);
    int valid = -1, d = 0;
    fx_result_type_state rt;
    fx_result_type_init(&rt);
    for (int i = 0; i < n; i++) {
        const fx_tensor *t = l->u.list.items[i].u.t;
        fx_result_type_tensor(&rt, t->dtype, t->ndim);
        if (valid < 0 && !(t->ndim == 1 && t->sizes[0] == 0)) valid = i;
    }
    fx_dtype dt = fx_result_type_get(&rt);
    if (valid < 0) { /* every input is a legacy empty tensor: an empty [0] result */
        int64_t zero = 0;
        return fresh_tensor(ctx, 1, &zero, dt, out);
    }
    const fx_tensor *ref = l->u.list.items[valid].u.t;
    if ((rc = fx_wrap_dim(a[1].u.i, ref->ndim, &d, ctx->err))) return rc;
    int64_t sizes[FX_MAX_DIMS];
    memcpy(sizes, ref->sizes, sizeof sizes);
    sizes[d] = 0;
    for (int i = 0; i < n; i++) {
        const fx_tensor *t = l->u.list.items[i].u.t;
        if (t->ndim == 1 && t->sizes[0] == 0) continue;
        if (t->ndim != ref->ndim)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Tensors must have same number of dimensions: got %d and %d",
                               ref->ndim, t->ndim);
        for (int e = 0; e < ref->ndim; e++)
            if (e != d && t->sizes[e] != ref->sizes[e])
                return fx_err_setf(ctx->err, FX_ESHAPE,
                                   "Sizes of tensors must match except in dimension %d. Expected "
                                   "size %lld but got size %lld for tensor number %d in the list.",
                                   d, (long long)ref->sizes[e], (long long)t->sizes[e], i);
        sizes[d] += t->sizes[d];
    }
    return fresh_tensor(ctx, ref->ndim, sizes, dt, out);
}

/* repeat(Tensor self, SymInt[] repeats) -> Tensor: self padded with leading size-1 dims to
 * len(repeats) dims, each dim's size multiplied by its repeat; a fresh contiguous result. */
int fx_meta_repeat(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int64_t rep[FX_MAX_DIMS], sizes[FX_MAX_DIMS];
    int n, rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_ints_arg(ctx, a, 1, rep, &n)))
        return rc;
    if (n < self->ndim)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor");
    int pad = n - self->ndim;
    for (int d = 0; d < n; d++) sizes[d] = (d < pad ? 1 : self->sizes[d - pad]) * rep[d];
    for (int d = 0; d < n; d++)
        if (sizes[d] < 0) {
            char b[160];
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Trying to create tensor with negative dimension %lld: %s",
                               (long long)sizes[d], fx_shape_str(n, sizes, b, sizeof b));
        }
    return fresh_tensor(ctx, n, sizes, self->dtype, out);
}
