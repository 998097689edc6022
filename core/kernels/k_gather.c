/* core/kernels/k_gather.c — index_select, gather, scatter / scatter_add (src, value, reduce),
 * index_copy and masked_fill on the CPU.
 * Layer: core (kernels). Semantics of aten/src/ATen/native/TensorAdvancedIndexing.cpp and
 * cpu/ScatterGatherKernel.cpp / IndexKernel.cpp:
 *   gather:      out[p] = self[p with p[dim] := index[p]]
 *   scatter:     out[p with p[dim] := index[p]] = src[p] (or value), in index order, so the last
 *                write to a repeated position wins; scatter_add / reduce="add" add,
 *                reduce="multiply" multiplies
 *   index_select out[..., i, ...] = self[..., index[i], ...]
 *   index_copy:  out[..., index[i], ...] = source[..., i, ...]
 *   masked_fill: out[p] = mask[p] ? value : self[p] (mask broadcast)
 * Every loop walks its tensors with kb_walk (any strides, offsets, zero strides). Index values
 * are bounds-checked with PyTorch's messages before anything is written. No allocation happens
 * inside the element loops. */
#include <string.h>

#include "core/fx_alloc.h"
#include "core/kernels/k_iter.h"
#include "core/meta_common.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

typedef enum { RED_NONE, RED_ADD, RED_MUL } reduce_op;

/* d (op)= s for one element of dtype dt (half types in float32, rounded once; integers wrap;
 * bool: add is OR, multiply is AND). */
static inline void reduce_elem(fx_dtype dt, reduce_op r, char *d, const char *s) {
    if (r == RED_NONE) {
        memcpy(d, s, fx_dtype_size(dt));
        return;
    }
    bool add = r == RED_ADD;
    switch (dt) {
    case FX_DTYPE_F32: {
        float *x = (float *)d, y = *(const float *)s;
        *x = add ? *x + y : *x * y;
        break;
    }
    case FX_DTYPE_F64: {
        double *x = (double *)d, y = *(const double *)s;
        *x = add ? *x + y : *x * y;
        break;
    }
    case FX_DTYPE_F16: {
        float x = fx_f16_to_f32(*(uint16_t *)d), y = fx_f16_to_f32(*(const uint16_t *)s);
        *(uint16_t *)d = fx_f32_to_f16(add ? x + y : x * y);
        break;
    }
    case FX_DTYPE_BF16: {
        float x = fx_bf16_to_f32(*(uint16_t *)d), y = fx_bf16_to_f32(*(const uint16_t *)s);
        *(uint16_t *)d = fx_f32_to_bf16(add ? x + y : x * y);
        break;
    }
    case FX_DTYPE_BOOL: {
        uint8_t x = *(uint8_t *)d != 0, y = *(const uint8_t *)s != 0;
        *(uint8_t *)d = add ? (x || y) : (x && y);
        break;
    }
    default: {
        int64_t x = fx_dtype_load_i64(dt, d, 0), y = fx_dtype_load_i64(dt, s, 0);
        uint64_t v = add ? (uint64_t)x + (uint64_t)y : (uint64_t)x * (uint64_t)y;
        fx_dtype_store_i64(dt, d, 0, (int64_t)v);
        break;
    }
    }
}

static int64_t index_at(const fx_tensor *idx, const char *p, int64_t off) {
    return idx->dtype == FX_DTYPE_I64 ? ((const int64_t *)p)[off] : ((const int32_t *)p)[off];
}

/* Stride of dim d of t, or 0 for a 0-dim tensor. */
static int64_t stride_or0(const fx_tensor *t, int d) { return t->ndim ? t->strides[d] : 0; }

/* ====================================================================================== */
/* gather / scatter                                                                        */
/* ====================================================================================== */

/* Checks every index value against [0, size) with cpu_scatter_gather_base_kernel's message. */
static int check_indices(fx_opctx *ctx, const fx_tensor *index, int d, int64_t size) {
    int64_t n = fx_tensor_numel(index);
    if (n == 0) return FX_OK;
    const char *ip = fx_tensor_data(index);
    kb_walk w;
    walk_init(&w, index->ndim, index->sizes, 1);
    memcpy(w.st[0], index->strides, sizeof(int64_t) * (size_t)index->ndim);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        int64_t v = index_at(index, ip, w.off[0]);
        if (v < 0 || v >= size)
            return fx_err_setf(ctx->err, FX_EINDEX,
                               "index %lld is out of bounds for dimension %d with size %lld",
                               (long long)v, d, (long long)size);
    }
    return FX_OK;
}

/* gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor: out[0] is
 * fresh, shaped like index. */
int fx_k_gather(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *index = a[2].u.t, *res = out[0].u.t;
    int d, rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err);
    if (rc) return rc;
    int64_t n = fx_tensor_numel(index), size = self->ndim ? self->sizes[d] : 1;
    if (n == 0) return FX_OK;
    if ((rc = check_indices(ctx, index, d, size))) return rc;
    size_t item = fx_dtype_size(self->dtype);
    const char *sp = fx_tensor_data(self), *ip = fx_tensor_data(index);
    char *op = fx_tensor_data(res);
    kb_walk w; /* over index's shape: 0 index, 1 self (dim stride 0), 2 out */
    walk_init(&w, index->ndim, index->sizes, 3);
    for (int e = 0; e < index->ndim; e++) {
        w.st[0][e] = index->strides[e];
        w.st[1][e] = e == d ? 0 : self->strides[e];
        w.st[2][e] = res->strides[e];
    }
    int64_t sd = stride_or0(self, d);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        int64_t v = index_at(index, ip, w.off[0]);
        memcpy(op + w.off[2] * (int64_t)item, sp + (w.off[1] + v * sd) * (int64_t)item, item);
    }
    return FX_OK;
}

/* scatter.src / .value / .reduce / .value_reduce, scatter_add and their in-place forms: out[0]
 * is self (in place) or a fresh tensor that first receives a copy of self. */
int fx_k_scatter(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *index = a[2].u.t, *res = out[0].u.t;
    int d, rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err);
    if (rc) return rc;
    const fx_ivalue *reduce = fx_arg(ctx, a, "reduce");
    fx_op_id id = ctx->op->id;
    reduce_op r = RED_NONE;
    if (id == FX_OP_SCATTER_ADD || id == FX_OP_SCATTER_ADD_) r = RED_ADD;
    if (reduce && reduce->tag == FX_IV_STR) r = strcmp(reduce->u.s, "add") ? RED_MUL : RED_ADD;
    int64_t n = fx_tensor_numel(index), size = res->ndim ? res->sizes[d] : 1;
    if (res != self) fx_kb_copy(res, self);
    if (n == 0) return FX_OK;
    if ((rc = check_indices(ctx, index, d, size))) return rc;
    size_t item = fx_dtype_size(res->dtype);
    fx_tensor *src = a[3].tag == FX_IV_TENSOR ? a[3].u.t : NULL;
    char value[8];
    if (!src) fx_k_scalar_store(res->dtype, &a[3], value);
    const char *ip = fx_tensor_data(index), *srcp = src ? fx_tensor_data(src) : value;
    char *op = fx_tensor_data(res);
    kb_walk w; /* over index's shape: 0 index, 1 out (dim stride 0), 2 src */
    walk_init(&w, index->ndim, index->sizes, 3);
    for (int e = 0; e < index->ndim; e++) {
        w.st[0][e] = index->strides[e];
        w.st[1][e] = e == d ? 0 : res->strides[e];
        w.st[2][e] = src ? src->strides[e] : 0;
    }
    int64_t od = stride_or0(res, d);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        int64_t v = index_at(index, ip, w.off[0]);
        reduce_elem(res->dtype, r, op + (w.off[1] + v * od) * (int64_t)item,
                    srcp + w.off[2] * (int64_t)item);
    }
    return FX_OK;
}

/* ====================================================================================== */
/* index_select / index_copy                                                               */
/* ====================================================================================== */

/* The offsets idx[i] * stride along dim for every entry of the 0/1-dim index, checked against
 * [0, size) ("index out of range in self" for index_select, index_copy_'s own message). */
static int index_table(fx_opctx *ctx, const fx_tensor *index, int64_t size, int64_t stride,
                       bool copy, int d, int64_t **out) {
    int64_t n = fx_tensor_numel(index);
    int64_t *t = fx_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!t) return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory in %s", fx_op_qualname(ctx->op));
    const char *ip = fx_tensor_data(index);
    int64_t st = index->ndim ? index->strides[0] : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = index_at(index, ip, i * st);
        if (v < 0 || v >= size) {
            fx_free(t);
            if (copy)
                return fx_err_setf(ctx->err, FX_EINDEX,
                                   "index_copy_(): index %lld is out of bounds for dimension %d "
                                   "with size %lld",
                                   (long long)v, d, (long long)size);
            return fx_err_setf(ctx->err, FX_EINDEX, "index out of range in self");
        }
        t[i] = v * stride;
    }
    *out = t;
    return FX_OK;
}

/* Copies the tensor `from` (shape `shape`, strides fst) into `to` (strides tst), where along dim
 * d one side goes through the offset table tab (position i on the table side maps to offset
 * tab[i] on the other side). table_on_to: the table applies to `to` (index_copy) rather than
 * to `from` (index_select). */
static void copy_through_table(int nd, const int64_t *shape, int d, char *to, const int64_t *tst,
                               const char *from, const int64_t *fst, const int64_t *tab,
                               bool table_on_to, size_t item) {
    int64_t n = 1;
    for (int e = 0; e < nd; e++) n *= shape[e];
    if (n == 0) return;
    kb_walk w; /* 0 to, 1 from, 2 position along d */
    walk_init(&w, nd, shape, 3);
    for (int e = 0; e < nd; e++) {
        w.st[0][e] = (table_on_to && e == d) ? 0 : tst[e];
        w.st[1][e] = (!table_on_to && e == d) ? 0 : fst[e];
        w.st[2][e] = e == d ? 1 : 0;
    }
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        int64_t t = nd ? tab[w.off[2]] : tab[0];
        char *dp = to + (w.off[0] + (table_on_to ? t : 0)) * (int64_t)item;
        const char *sp = from + (w.off[1] + (table_on_to ? 0 : t)) * (int64_t)item;
        memcpy(dp, sp, item);
    }
}

/* index_select(Tensor self, int dim, Tensor index) -> Tensor: out[0] fresh contiguous. */
int fx_k_index_select(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *index = a[2].u.t, *res = out[0].u.t;
    int d, rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err);
    if (rc) return rc;
    int64_t *tab = NULL;
    if ((rc = index_table(ctx, index, self->ndim ? self->sizes[d] : 1, stride_or0(self, d), false,
                          d, &tab)))
        return rc;
    copy_through_table(res->ndim, res->sizes, d, fx_tensor_data(res), res->strides,
                       fx_tensor_data(self), self->strides, tab, false, fx_dtype_size(self->dtype));
    fx_free(tab);
    return FX_OK;
}

/* index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor and index_copy_: out[0]
 * (self, or a fresh copy of it) receives source's slices at the indexed positions; repeated
 * indices: the last one wins. */
int fx_k_index_copy(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *index = a[2].u.t, *src = a[3].u.t, *res = out[0].u.t;
    int d, rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err);
    if (rc) return rc;
    int64_t *tab = NULL;
    if ((rc = index_table(ctx, index, res->ndim ? res->sizes[d] : 1, stride_or0(res, d), true, d,
                          &tab)))
        return rc;
    if (res != self) fx_kb_copy(res, self);
    if (src->ndim == 0) { /* one index, a scalar source: res.select(d, index[0]) = source */
        int64_t sst[FX_MAX_DIMS] = {0}, shape[FX_MAX_DIMS];
        memcpy(shape, res->sizes, sizeof shape);
        if (res->ndim) shape[d] = 1;
        copy_through_table(res->ndim, shape, d, fx_tensor_data(res), res->strides,
                           fx_tensor_data(src), sst, tab, true, fx_dtype_size(res->dtype));
    } else {
        copy_through_table(src->ndim, src->sizes, d, fx_tensor_data(res), res->strides,
                           fx_tensor_data(src), src->strides, tab, true, fx_dtype_size(res->dtype));
    }
    fx_free(tab);
    return FX_OK;
}

/* ====================================================================================== */
/* masked_fill                                                                             */
/* ====================================================================================== */

/* masked_fill.Scalar / .Tensor (out[0] fresh: the broadcast of self and mask) and
 * masked_fill_.Scalar / .Tensor (out[0] is self): value converted to the result's dtype once,
 * then written wherever the broadcast mask is true. */
int fx_k_masked_fill(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *mask = a[1].u.t, *res = out[0].u.t;
    int rc = FX_OK;
    if (res != self) { /* broadcast self into the fresh result */
        int64_t sizes[FX_MAX_DIMS], st[FX_MAX_DIMS];
        fx_tensor *se = NULL;
        memcpy(sizes, res->sizes, sizeof sizes);
        rc = fx_expand_strides(self, res->ndim, sizes, st, ctx->err);
        if (!rc) rc = fx_tensor_as_strided(self, res->ndim, sizes, st, self->offset, &se, ctx->err);
        if (!rc) fx_kb_copy(res, se);
        fx_tensor_release(se);
        if (rc) return rc;
    }
    char value[8];
    if (a[2].tag == FX_IV_TENSOR) {
        fx_ivalue v = fx_iv_float(fx_tensor_flat_f64(a[2].u.t, 0));
        if (!fx_dtype_is_float(a[2].u.t->dtype)) v = fx_iv_int(fx_tensor_flat_i64(a[2].u.t, 0));
        fx_k_scalar_store(res->dtype, &v, value);
    } else {
        fx_k_scalar_store(res->dtype, &a[2], value);
    }
    int64_t n = fx_tensor_numel(res);
    if (n == 0) return FX_OK;
    int64_t sizes[FX_MAX_DIMS], mst[FX_MAX_DIMS];
    memcpy(sizes, res->sizes, sizeof sizes);
    if ((rc = fx_expand_strides(mask, res->ndim, sizes, mst, ctx->err))) return rc;
    size_t item = fx_dtype_size(res->dtype);
    char *op = fx_tensor_data(res);
    const uint8_t *mp = fx_tensor_data(mask);
    kb_walk w;
    walk_init(&w, res->ndim, res->sizes, 2);
    memcpy(w.st[0], res->strides, sizeof(int64_t) * (size_t)res->ndim);
    memcpy(w.st[1], mst, sizeof(int64_t) * (size_t)res->ndim);
    int64_t in[KB_MAX_STREAMS], len = walk_rows(&w, in), rows = n / len;
    for (int64_t r = 0; r < rows; r++, walk_next(&w))
        for (int64_t j = 0; j < len; j++)
            if (mp[w.off[1] + j * in[1]])
                memcpy(op + (w.off[0] + j * in[0]) * (int64_t)item, value, item);
    return FX_OK;
}
