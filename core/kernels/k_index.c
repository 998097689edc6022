/* core/kernels/k_index.c — advanced indexing (index.Tensor, index_put, index_put_), the view
 * scatters (select_scatter, slice_scatter) and the strided copy they share.
 * Layer: core (kernels). Semantics of aten/src/ATen/native/TensorAdvancedIndexing.cpp and
 * IndexKernel.cpp: bool masks become nonzero() coordinates, index tensors broadcast together,
 * indexed dims that are adjacent keep their place in the result, otherwise the broadcast index
 * dims go in front; negative indices wrap; index_put with accumulate adds duplicates.
 *
 * Every loop here walks tensors of any strides and offsets with kb_walk (ops_shape.h). No
 * allocation happens inside the element loops. */
#include <string.h>

#include "core/fx_alloc.h"
#include "core/kernels/k_iter.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

static int64_t numel_of(int nd, const int64_t *sizes) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= sizes[d];
    return n;
}

/* ====================================================================================== */
/* Strided copy with dtype conversion                                                      */
/* ====================================================================================== */

/* d[j * sd] = s[j * ss] for j < n, elements of `item` bytes (fixed-size memcpy compiles to
 * plain moves). */
static void copy_run(char *d, int64_t sd, const char *s, int64_t ss, int64_t n, size_t item) {
    if (sd == 1 && ss == 1) {
        memcpy(d, s, (size_t)n * item);
        return;
    }
    int64_t bd = sd * (int64_t)item, bs = ss * (int64_t)item;
    switch (item) {
    case 1:
        for (int64_t j = 0; j < n; j++) d[j * bd] = s[j * bs];
        break;
    case 2:
        for (int64_t j = 0; j < n; j++) memcpy(d + j * bd, s + j * bs, 2);
        break;
    case 4:
        for (int64_t j = 0; j < n; j++) memcpy(d + j * bd, s + j * bs, 4);
        break;
    case 8:
        for (int64_t j = 0; j < n; j++) memcpy(d + j * bd, s + j * bs, 8);
        break;
    default: /* complex128 */
        for (int64_t j = 0; j < n; j++) memcpy(d + j * bd, s + j * bs, item);
        break;
    }
}

void fx_kb_copy(fx_tensor *dst, const fx_tensor *src) {
    int64_t numel = fx_tensor_numel(dst);
    if (numel == 0) return;
    char *d = fx_tensor_data(dst);
    const char *s = fx_tensor_data(src);
    kb_walk w;
    walk_init(&w, dst->ndim, dst->sizes, 2);
    memcpy(w.st[0], dst->strides, sizeof(int64_t) * (size_t)dst->ndim);
    memcpy(w.st[1], src->strides, sizeof(int64_t) * (size_t)src->ndim);
    if (dst->dtype == src->dtype) {
        size_t item = fx_dtype_size(dst->dtype);
        if (fx_tensor_is_contiguous(dst) && fx_tensor_is_contiguous(src)) {
            memcpy(d, s, (size_t)numel * item);
            return;
        }
        int64_t in[KB_MAX_STREAMS], n = walk_rows(&w, in), rows = numel / n;
        for (int64_t r = 0; r < rows; r++, walk_next(&w))
            copy_run(d + w.off[0] * (int64_t)item, in[0], s + w.off[1] * (int64_t)item, in[1], n,
                     item);
        return;
    }
    /* Integer-to-integer keeps all 64 bits; anything involving a float goes through double
     * (exact for every dtype fxdb has except int64 beyond 2^53, as PyTorch's own casts). */
    bool ints = fx_dtype_category(dst->dtype) != FX_CAT_FLOAT &&
                fx_dtype_category(src->dtype) != FX_CAT_FLOAT;
    bool cplx = fx_dtype_is_complex(dst->dtype) || fx_dtype_is_complex(src->dtype);
    for (int64_t i = 0; i < numel; i++, walk_next(&w)) {
        if (cplx) { /* both parts (a real source has imaginary part 0) */
            double re, im;
            fx_dtype_load_c(src->dtype, s, w.off[1], &re, &im);
            fx_dtype_store_c(dst->dtype, d, w.off[0], re, im);
        } else if (ints)
            fx_dtype_store_i64(dst->dtype, d, w.off[0], fx_dtype_load_i64(src->dtype, s, w.off[1]));
        else
            fx_dtype_store_f64(dst->dtype, d, w.off[0], fx_dtype_load_f64(src->dtype, s, w.off[1]));
    }
}

/* ====================================================================================== */
/* Index plans                                                                             */
/* ====================================================================================== */

void fx_index_plan_free(fx_index_plan *p) {
    for (int k = 0; k < p->nidx; k++) fx_tensor_release(p->idx[k]);
    p->nidx = 0;
}

/* mask.nonzero() split into one int64 tensor [nnz] per mask dim, in row-major order. */
static int mask_to_indices(const fx_tensor *mask, fx_tensor **outs, fx_err *err) {
    int64_t n = fx_tensor_numel(mask), nnz = 0;
    const uint8_t *m = fx_tensor_data(mask); /* bool and uint8 are one byte */
    kb_walk w;
    walk_init(&w, mask->ndim, mask->sizes, 1);
    memcpy(w.st[0], mask->strides, sizeof(int64_t) * (size_t)mask->ndim);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) nnz += m[w.off[0]] != 0;
    for (int k = 0; k < mask->ndim; k++) outs[k] = NULL;
    for (int k = 0; k < mask->ndim; k++) {
        int rc = fx_tensor_empty(1, &nnz, FX_DTYPE_I64, FX_DEVICE_CPU, &outs[k], err);
        if (rc) {
            for (int j = 0; j < k; j++) fx_tensor_release(outs[j]);
            return rc;
        }
    }
    walk_init(&w, mask->ndim, mask->sizes, 1);
    memcpy(w.st[0], mask->strides, sizeof(int64_t) * (size_t)mask->ndim);
    int64_t *col[FX_MAX_DIMS];
    for (int k = 0; k < mask->ndim; k++) col[k] = fx_tensor_data(outs[k]);
    for (int64_t i = 0, j = 0; i < n; i++, walk_next(&w)) {
        if (!m[w.off[0]]) continue;
        for (int k = 0; k < mask->ndim; k++) col[k][j] = w.pos[k];
        j++;
    }
    return FX_OK;
}

int fx_index_bool0(fx_tensor *self, const fx_ivalue *indices, fx_tensor **view, fx_ivalue *list,
                   fx_err *err) {
    *view = NULL;
    list->tag = FX_IV_UNSET;
    if (indices->tag != FX_IV_LIST) return FX_OK;
    int n = indices->u.list.n, found = 0;
    for (int i = 0; i < n; i++) {
        const fx_ivalue *e = &indices->u.list.items[i];
        if (e->tag == FX_IV_TENSOR && e->u.t->ndim == 0 && !fx_tensor_is_meta(e->u.t) &&
            (e->u.t->dtype == FX_DTYPE_BOOL || e->u.t->dtype == FX_DTYPE_U8))
            found++;
    }
    if (!found) return FX_OK;
    if (self->ndim + found > FX_MAX_DIMS)
        return fx_err_setf(err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, self->ndim + found);
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    int vd = 0, sd = 0; /* next dim of the view / of self */
    int rc = fx_iv_list(n, list, err);
    for (int i = 0; i < n && !rc; i++) {
        const fx_ivalue *e = &indices->u.list.items[i];
        const fx_tensor *t = e->tag == FX_IV_TENSOR ? e->u.t : NULL;
        bool bool0 = t && t->ndim == 0 && !fx_tensor_is_meta(t) &&
                     (t->dtype == FX_DTYPE_BOOL || t->dtype == FX_DTYPE_U8);
        if (bool0) { /* a new size-1 dim here, indexed by [0] or by nothing */
            sizes[vd] = 1, strides[vd] = 1, vd++;
            int64_t len = *(const uint8_t *)fx_tensor_data(t) != 0;
            fx_tensor *ix;
            rc = fx_tensor_zeros(1, &len, FX_DTYPE_I64, FX_DEVICE_CPU, &ix, err);
            if (!rc) list->u.list.items[i] = fx_iv_tensor_steal(ix);
            continue;
        }
        int used = !t ? 1 : (t->dtype == FX_DTYPE_BOOL || t->dtype == FX_DTYPE_U8) ? t->ndim : 1;
        for (int k = 0; k < used && sd < self->ndim; k++, sd++, vd++)
            sizes[vd] = self->sizes[sd], strides[vd] = self->strides[sd];
        rc = fx_ivalue_copy(&list->u.list.items[i], e, err);
    }
    for (; sd < self->ndim; sd++, vd++)
        sizes[vd] = self->sizes[sd], strides[vd] = self->strides[sd];
    if (!rc) rc = fx_tensor_as_strided(self, vd, sizes, strides, self->offset, view, err);
    if (rc) {
        fx_ivalue_clear(list);
        *view = NULL;
    }
    return rc;
}

static int too_many(const fx_tensor *self, int got, fx_err *err) {
    return fx_err_setf(err, FX_EINDEX, "too many indices for tensor of dimension %d (got %d)",
                       self->ndim, got);
}

int fx_index_plan_build(const fx_tensor *self, const fx_ivalue *indices, fx_index_plan *p,
                        fx_err *err) {
    memset(p, 0, sizeof *p);
    if (indices->tag != FX_IV_LIST)
        return fx_err_setf(err, FX_EARG, "index(): indices must be a list of Tensor or None");
    int n = indices->u.list.n, rc;
    if (n > self->ndim) return too_many(self, n, err);
    bool indexed[FX_MAX_DIMS] = {false};
    char b1[160], b2[160];
    int j = 0; /* the self dim the next entry indexes */
    for (int i = 0; i < n; i++) {
        const fx_ivalue *e = &indices->u.list.items[i];
        if (e->tag == FX_IV_NONE) {
            j++;
            continue;
        }
        if (e->tag != FX_IV_TENSOR)
            return fx_err_setf(err, FX_EARG, "index(): expected a Tensor or None at position %d",
                               i);
        fx_tensor *t = e->u.t;
        if (t->dtype == FX_DTYPE_BOOL || t->dtype == FX_DTYPE_U8) {
            if (t->ndim == 0) { /* cpu ones were rewritten by fx_index_bool0 */
                if (!fx_tensor_is_meta(t))
                    return fx_err_setf(err, FX_EINTERNAL,
                                       "a 0-dim boolean mask reached the index plan");
                p->data_dependent = true; /* a new dim of size 1 or 0: unknown on meta */
                continue;
            }
            if (j + t->ndim + (n - i - 1) > self->ndim)
                return too_many(self, j + t->ndim + (n - i - 1), err);
            for (int m = 0; m < t->ndim; m++)
                if (t->sizes[m] != self->sizes[j + m])
                    return fx_err_setf(err, FX_EINDEX,
                                       "The shape of the mask %s at index %d does not match the "
                                       "shape of the indexed tensor %s at index %d",
                                       fx_shape_str(t->ndim, t->sizes, b1, sizeof b1), m,
                                       fx_shape_str(self->ndim, self->sizes, b2, sizeof b2), j + m);
            for (int m = 0; m < t->ndim; m++) indexed[j + m] = true;
            if (fx_tensor_is_meta(t)) {
                p->data_dependent = true;
            } else {
                if ((rc = mask_to_indices(t, &p->idx[p->nidx], err))) return rc;
                for (int m = 0; m < t->ndim; m++) p->dim[p->nidx++] = j + m;
            }
            j += t->ndim;
        } else if (t->dtype == FX_DTYPE_I64 || t->dtype == FX_DTYPE_I32) {
            if (j >= self->ndim) return too_many(self, j + 1 + (n - i - 1), err);
            indexed[j] = true;
            p->idx[p->nidx] = fx_tensor_retain(t);
            p->dim[p->nidx++] = j++;
        } else {
            return fx_err_setf(err, FX_EINDEX,
                               "tensors used as indices must be long, int, byte or bool tensors");
        }
    }
    /* broadcast the index tensors together */
    if (!p->data_dependent) {
        for (int k = 0; k < p->nidx; k++) {
            int nd;
            int64_t tmp[FX_MAX_DIMS];
            if (p->idx[k]->ndim > FX_MAX_DIMS ||
                fx_broadcast_shape(p->bnd, p->bshape, p->idx[k]->ndim, p->idx[k]->sizes, &nd, tmp,
                                   NULL)) {
                fx_strbuf sb = FX_STRBUF_INIT;
                for (int q = 0; q < p->nidx; q++) {
                    if (q) fx_strbuf_append(&sb, ", ");
                    fx_strbuf_append(
                        &sb, fx_shape_str(p->idx[q]->ndim, p->idx[q]->sizes, b1, sizeof b1));
                }
                if (fx_strbuf_status(&sb, err)) {
                    fx_strbuf_free(&sb);
                    return FX_ENOMEM;
                }
                rc = fx_err_setf(err, FX_EINDEX,
                                 "shape mismatch: indexing tensors could not be broadcast "
                                 "together with shapes %s",
                                 fx_strbuf_cstr(&sb));
                fx_strbuf_free(&sb);
                return rc;
            }
            p->bnd = nd;
            memcpy(p->bshape, tmp, sizeof tmp);
        }
        for (int k = 0; k < p->nidx; k++) {
            int64_t sizes[FX_MAX_DIMS];
            memcpy(sizes, p->bshape, sizeof sizes);
            if ((rc = fx_expand_strides(p->idx[k], p->bnd, sizes, p->idx_strides[k], err)))
                return rc;
        }
    }
    /* where the broadcast block goes: in place when the indexed dims are adjacent */
    int first = -1, last = -1;
    for (int d = 0; d < self->ndim; d++)
        if (indexed[d]) {
            if (first < 0) first = d;
            last = d;
        } else {
            p->rest[p->nrest++] = d;
        }
    bool adjacent = true;
    for (int d = first; first >= 0 && d <= last; d++)
        if (!indexed[d]) adjacent = false;
    p->front = (first >= 0 && adjacent) ? first : 0;
    if (p->data_dependent) return FX_OK;
    p->out_ndim = p->nrest + p->bnd;
    if (p->out_ndim > FX_MAX_DIMS)
        return fx_err_setf(err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, p->out_ndim);
    int o = 0;
    for (int r = 0; r < p->front; r++) p->out_sizes[o++] = self->sizes[p->rest[r]];
    for (int b = 0; b < p->bnd; b++) p->out_sizes[o++] = p->bshape[b];
    for (int r = p->front; r < p->nrest; r++) p->out_sizes[o++] = self->sizes[p->rest[r]];
    return FX_OK;
}

/* ioff[b] = sum_k wrap(idx_k[b]) * strides[dim_k] for every b of bshape (row-major), with
 * IndexKernel's bounds message; `sizes` are the indexed tensor's sizes. The caller frees
 * *out (fx_free). "dimension k" counts index tensors, as PyTorch's Indexer does. */
static int index_offsets(const fx_index_plan *p, const int64_t *sizes, const int64_t *strides,
                         int64_t **out, fx_err *err) {
    int64_t nb = numel_of(p->bnd, p->bshape);
    int64_t *ioff = fx_malloc(sizeof(int64_t) * (size_t)(nb > 0 ? nb : 1));
    if (!ioff) return fx_err_setf(err, FX_ENOMEM, "out of memory computing index offsets");
    kb_walk w;
    walk_init(&w, p->bnd, p->bshape, p->nidx);
    for (int k = 0; k < p->nidx; k++)
        memcpy(w.st[k], p->idx_strides[k], sizeof(int64_t) * (size_t)p->bnd);
    const void *data[FX_MAX_DIMS];
    for (int k = 0; k < p->nidx; k++) data[k] = fx_tensor_data(p->idx[k]);
    for (int64_t b = 0; b < nb; b++, walk_next(&w)) {
        int64_t off = 0;
        for (int k = 0; k < p->nidx; k++) {
            int64_t v = p->idx[k]->dtype == FX_DTYPE_I64 ? ((const int64_t *)data[k])[w.off[k]]
                                                         : ((const int32_t *)data[k])[w.off[k]];
            int64_t size = sizes[p->dim[k]];
            if (v < -size || v >= size) {
                fx_free(ioff);
                return fx_err_setf(err, FX_EINDEX,
                                   "index %lld is out of bounds for dimension %d with size %lld",
                                   (long long)v, k, (long long)size);
            }
            off += (v < 0 ? v + size : v) * strides[p->dim[k]];
        }
        ioff[b] = off;
    }
    *out = ioff;
    return FX_OK;
}

/* The walk over the result shape of t[indices]: stream 0 = offset in t from the non-indexed
 * dims (t's strides), stream 1 = position in the ioff table (contiguous over bshape). */
static void result_walk(const fx_index_plan *p, const fx_tensor *t, kb_walk *w) {
    walk_init(w, p->out_ndim, p->out_sizes, 2);
    int64_t bstr[FX_MAX_DIMS];
    fx_contiguous_strides(p->bnd, p->bshape, bstr);
    int o = 0;
    for (int r = 0; r < p->front; r++, o++) w->st[0][o] = t->strides[p->rest[r]];
    for (int b = 0; b < p->bnd; b++, o++) w->st[1][o] = bstr[b];
    for (int r = p->front; r < p->nrest; r++, o++) w->st[0][o] = t->strides[p->rest[r]];
}

/* ====================================================================================== */
/* index.Tensor                                                                            */
/* ====================================================================================== */

/* index.Tensor(Tensor self, Tensor?[] indices) -> Tensor: out[0] is the fresh contiguous
 * result made by fx_meta_index. */
int fx_k_index(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *res = out[0].u.t, *view = NULL;
    fx_ivalue list;
    fx_index_plan p;
    int64_t *ioff = NULL;
    int rc = fx_index_bool0(self, &a[1], &view, &list, ctx->err);
    if (rc) return rc;
    if (view) self = view;
    rc = fx_index_plan_build(self, view ? &list : &a[1], &p, ctx->err);
    if (!rc) rc = index_offsets(&p, self->sizes, self->strides, &ioff, ctx->err);
    if (rc) {
        fx_index_plan_free(&p);
        fx_ivalue_clear(&list);
        fx_tensor_release(view);
        return rc;
    }
    kb_walk w;
    result_walk(&p, self, &w);
    w.ns = 3;
    memcpy(w.st[2], res->strides, sizeof(int64_t) * (size_t)res->ndim);
    int64_t item = (int64_t)fx_dtype_size(self->dtype);
    const char *src = fx_tensor_data(self);
    char *dst = fx_tensor_data(res);
    int64_t numel = numel_of(p.out_ndim, p.out_sizes);
    int64_t in[KB_MAX_STREAMS], n = numel ? walk_rows(&w, in) : 0, rows = n ? numel / n : 0;
    for (int64_t r = 0; r < rows; r++, walk_next(&w)) {
        char *d = dst + w.off[2] * item;
        if (in[1] == 0) { /* the innermost dim is not indexed: one strided run */
            copy_run(d, in[2], src + (w.off[0] + ioff[w.off[1]]) * item, in[0], n, (size_t)item);
            continue;
        }
        for (int64_t j = 0; j < n; j++)
            copy_run(d + j * in[2] * item, 1,
                     src + (w.off[0] + j * in[0] + ioff[w.off[1] + j * in[1]]) * item, 1, 1,
                     (size_t)item);
    }
    fx_free(ioff);
    fx_index_plan_free(&p);
    fx_ivalue_clear(&list);
    fx_tensor_release(view);
    return FX_OK;
}

/* ====================================================================================== */
/* index_put / index_put_                                                                  */
/* ====================================================================================== */

/* dst[i] += src[i] for one element of dtype dt (half types in float32, rounded once). */
static inline void acc_elem(fx_dtype dt, char *d, const char *s) {
    switch (dt) {
    case FX_DTYPE_F32: *(float *)d += *(const float *)s; break;
    case FX_DTYPE_F64: *(double *)d += *(const double *)s; break;
    case FX_DTYPE_F16:
        *(uint16_t *)d =
            fx_f32_to_f16(fx_f16_to_f32(*(uint16_t *)d) + fx_f16_to_f32(*(const uint16_t *)s));
        break;
    case FX_DTYPE_BF16:
        *(uint16_t *)d =
            fx_f32_to_bf16(fx_bf16_to_f32(*(uint16_t *)d) + fx_bf16_to_f32(*(const uint16_t *)s));
        break;
    case FX_DTYPE_I64:
        *(int64_t *)d = (int64_t)((uint64_t) * (int64_t *)d + (uint64_t) * (const int64_t *)s);
        break;
    case FX_DTYPE_I32:
        *(int32_t *)d = (int32_t)((uint32_t) * (int32_t *)d + (uint32_t) * (const int32_t *)s);
        break;
    case FX_DTYPE_I16: *(int16_t *)d = (int16_t)(*(int16_t *)d + *(const int16_t *)s); break;
    case FX_DTYPE_I8: *(int8_t *)d = (int8_t)(*(int8_t *)d + *(const int8_t *)s); break;
    case FX_DTYPE_U8: *(uint8_t *)d = (uint8_t)(*(uint8_t *)d + *(const uint8_t *)s); break;
    case FX_DTYPE_BOOL: *(uint8_t *)d = *(uint8_t *)d || *(const uint8_t *)s; break;
    case FX_DTYPE_C64: /* real and imaginary parts add separately */
        ((float *)d)[0] += ((const float *)s)[0];
        ((float *)d)[1] += ((const float *)s)[1];
        break;
    case FX_DTYPE_C128:
        ((double *)d)[0] += ((const double *)s)[0];
        ((double *)d)[1] += ((const double *)s)[1];
        break;
    default: break;
    }
}

/* Writes `values` (a tensor of dst's dtype, or a wrapped number) into dst[indices]. */
static int index_put_into(fx_opctx *ctx, fx_tensor *dst0, const fx_ivalue *indices0,
                          const fx_ivalue *values, bool accumulate) {
    fx_index_plan p;
    int64_t *ioff = NULL;
    fx_tensor *v = NULL; /* the values, in dst's dtype, not aliasing dst */
    fx_tensor *view = NULL;
    fx_ivalue list;
    int rc = fx_index_bool0(dst0, indices0, &view, &list, ctx->err);
    if (rc) return rc;
    fx_tensor *dst = view ? view : dst0;
    const fx_ivalue *indices = view ? &list : indices0;
    rc = fx_index_plan_build(dst, indices, &p, ctx->err);
    if (!rc) rc = index_offsets(&p, dst->sizes, dst->strides, &ioff, ctx->err);
    if (!rc) {
        if (values->tag == FX_IV_TENSOR && !fx_tensor_same_storage(values->u.t, dst)) {
            v = fx_tensor_retain(values->u.t);
        } else if (values->tag == FX_IV_TENSOR) { /* x[i] = x[j]: read the values first */
            rc = fx_tensor_empty(values->u.t->ndim, values->u.t->sizes, values->u.t->dtype,
                                 FX_DEVICE_CPU, &v, ctx->err);
            if (!rc) fx_kb_copy(v, values->u.t);
        } else {
            rc = fx_tensor_scalar(fx_ivalue_to_f64(values), dst->dtype, &v, ctx->err);
            if (!rc && values->tag == FX_IV_INT)
                fx_dtype_store_i64(dst->dtype, fx_tensor_data(v), 0, values->u.i);
        }
    }
    int64_t vstr[FX_MAX_DIMS], vsizes[FX_MAX_DIMS];
    if (!rc) {
        memcpy(vsizes, p.out_sizes, sizeof vsizes);
        rc = fx_expand_strides(v, p.out_ndim, vsizes, vstr, ctx->err);
    }
    if (!rc) {
        kb_walk w;
        result_walk(&p, dst, &w);
        w.ns = 3;
        memcpy(w.st[2], vstr, sizeof(int64_t) * (size_t)p.out_ndim);
        int64_t item = (int64_t)fx_dtype_size(dst->dtype);
        char *d = fx_tensor_data(dst);
        const char *s = fx_tensor_data(v);
        int64_t numel = numel_of(p.out_ndim, p.out_sizes);
        int64_t in[KB_MAX_STREAMS], n = numel ? walk_rows(&w, in) : 0, rows = n ? numel / n : 0;
        for (int64_t r = 0; r < rows; r++, walk_next(&w)) {
            if (!accumulate && in[1] == 0) { /* innermost dim not indexed: one strided run */
                copy_run(d + (w.off[0] + ioff[w.off[1]]) * item, in[0], s + w.off[2] * item, in[2],
                         n, (size_t)item);
                continue;
            }
            for (int64_t j = 0; j < n; j++) {
                char *de = d + (w.off[0] + j * in[0] + ioff[w.off[1] + j * in[1]]) * item;
                const char *se = s + (w.off[2] + j * in[2]) * item;
                if (accumulate)
                    acc_elem(dst->dtype, de, se);
                else
                    copy_run(de, 1, se, 1, 1, (size_t)item);
            }
        }
    }
    fx_tensor_release(v);
    fx_free(ioff);
    fx_index_plan_free(&p);
    fx_ivalue_clear(&list);
    fx_tensor_release(view);
    return rc;
}

/* index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor:
 * out[0] (fresh, self's sizes) = self, then the put. */
int fx_k_index_put(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    fx_kb_copy(res, a[0].u.t);
    return index_put_into(ctx, res, &a[1], &a[2], a[3].u.b);
}

/* index_put_(Tensor(a!) self, ...) -> Tensor(a!): the put, into self. */
int fx_k_index_put_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)out;
    return index_put_into(ctx, a[0].u.t, &a[1], &a[2], a[3].u.b);
}

/* ====================================================================================== */
/* select_scatter / slice_scatter                                                          */
/* ====================================================================================== */

/* select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor,
 * slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None,
 * SymInt step=1) -> Tensor, diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0,
 * int dim2=1) -> Tensor and as_strided_scatter(Tensor self, Tensor src, SymInt[] size,
 * SymInt[] stride, SymInt? storage_offset=None) -> Tensor: out[0] = self, then src copied (with
 * dtype conversion) into the select / slice / diagonal / as_strided view of out[0]. The metas
 * checked src's shape. as_strided_scatter's out[0] views a copy of self's whole storage
 * (clone_preserve_strides), so the storage is copied first. */
int fx_k_scatter_view(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *res = out[0].u.t, *src = a[1].u.t, *view = NULL;
    fx_view_geom g;
    int rc;
    switch (ctx->op->id) {
    case FX_OP_SELECT_SCATTER: rc = fx_select_geom(res, a[2].u.i, a[3].u.i, &g, ctx->err); break;
    case FX_OP_SLICE_SCATTER:
        rc = fx_slice_geom(res, a[2].u.i, &a[3], &a[4], a[5].u.i, &g, ctx->err);
        break;
    case FX_OP_DIAGONAL_SCATTER:
        rc = fx_diagonal_geom(res, a[2].u.i, a[3].u.i, a[4].u.i, &g, ctx->err);
        break;
    default: rc = fx_as_strided_geom(ctx, res, a, 2, &g); break;
    }
    if (!rc) rc = fx_tensor_as_strided(res, g.ndim, g.sizes, g.strides, g.offset, &view, ctx->err);
    if (rc) return rc;
    bool whole = ctx->op->id == FX_OP_AS_STRIDED_SCATTER && res->storage != self->storage &&
                 res->storage->size_bytes == self->storage->size_bytes;
    if (!whole)
        fx_kb_copy(res, self);
    else if (self->storage->size_bytes > 0) /* an empty storage may have no data pointer */
        memcpy(res->storage->data, self->storage->data, (size_t)self->storage->size_bytes);
    fx_kb_copy(view, src);
    fx_tensor_release(view);
    return FX_OK;
}

/* unfold_backward(Tensor grad_in, SymInt[] input_sizes, int dim, int size, int step) -> Tensor:
 * out[0] (fresh, contiguous, input_sizes) = zeros, then every element of grad_in added at the
 * place unfold(dim, size, step) of out reads it from: windows that overlap sum, places no window
 * covers stay 0 (UnfoldBackward.h; the gradient of unfold, and PyTorch's functional inverse of
 * the unfold view). Stops on Ctrl-C between chunks. */
int fx_k_unfold_backward(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *grad = a[0].u.t, *res = out[0].u.t;
    size_t item = fx_dtype_size(res->dtype);
    int64_t total = fx_tensor_numel(res);
    if (total > 0) memset(fx_tensor_data(res), 0, (size_t)total * item);
    fx_view_geom g;
    int rc = fx_unfold_geom(res->ndim, res->sizes, res->strides, res->offset, a[2].u.i, a[3].u.i,
                            a[4].u.i, &g, ctx->err);
    if (rc) return rc;
    int64_t numel = fx_tensor_numel(grad);
    if (numel == 0) return FX_OK;
    kb_walk w;
    walk_init(&w, g.ndim, g.sizes, 2);
    memcpy(w.st[0], g.strides, sizeof(int64_t) * (size_t)g.ndim);
    memcpy(w.st[1], grad->strides, sizeof(int64_t) * (size_t)grad->ndim);
    w.off[0] = g.offset;
    w.off[1] = grad->offset;
    char *d = res->storage->data; /* the walk's offsets are storage offsets */
    const char *s = grad->storage->data;
    for (int64_t i = 0; i < numel; i++, walk_next(&w)) {
        if (i > 0 && i % FX_ITER_CANCEL_CHUNK == 0 && fx_interrupt_pending()) {
            fx_interrupt_stopped();
            return FX_OK;
        }
        acc_elem(res->dtype, d + w.off[0] * (int64_t)item, s + w.off[1] * (int64_t)item);
    }
    return FX_OK;
}
