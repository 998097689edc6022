/* core/kernels/k_join.c — cat and repeat on the CPU.
 * Layer: core (kernels). Both write a fresh contiguous result made by their meta function
 * (fx_meta_cat / fx_meta_repeat in meta_shape.c) through strided views of it: each input of cat
 * is copied into the slice of the result it occupies, and repeat copies self, expanded, into a
 * view of the result that splits every repeated dim into (repeat, size). The copies convert
 * dtypes (cat's inputs may differ from the promoted result dtype) and take any strides. */
#include <string.h>

#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* cat(Tensor[] tensors, int dim=0) -> Tensor: out[0] fresh contiguous; legacy empty [0] inputs
 * are skipped, as the meta function skipped them. */
int fx_k_cat(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *res = out[0].u.t;
    const fx_ivalue *l = &a[0];
    if (fx_tensor_numel(res) == 0) return FX_OK;
    int d = 0, rc = fx_wrap_dim(a[1].u.i, res->ndim, &d, ctx->err);
    if (rc) return rc;
    int64_t at = 0;
    for (int i = 0; i < l->u.list.n; i++) {
        fx_tensor *t = l->u.list.items[i].u.t, *slot = NULL;
        if (t->ndim == 1 && t->sizes[0] == 0 && res->ndim != 1) continue;
        int64_t sizes[FX_MAX_DIMS];
        memcpy(sizes, res->sizes, sizeof sizes);
        sizes[d] = t->sizes[d];
        if (sizes[d] == 0) continue;
        rc = fx_tensor_as_strided(res, res->ndim, sizes, res->strides,
                                  res->offset + at * res->strides[d], &slot, ctx->err);
        if (rc) return rc;
        fx_kb_copy(slot, t);
        fx_tensor_release(slot);
        at += sizes[d];
    }
    return FX_OK;
}

/* repeat(Tensor self, SymInt[] repeats) -> Tensor: out[0] fresh contiguous. The result is viewed
 * with every repeated dim split into (repeat, size) — the repeat index with stride size *
 * stride — and self, padded with leading size-1 dims, is expanded over the repeat dims and copied
 * in. When the split view would need more than FX_MAX_DIMS dims, the repeats are done one dim at
 * a time through the same copies. */
int fx_k_repeat(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self = a[0].u.t, *res = out[0].u.t;
    if (fx_tensor_numel(res) == 0) return FX_OK;
    int n = res->ndim, pad = n - self->ndim, vn = 0;
    int64_t rep[FX_MAX_DIMS], src_sz[FX_MAX_DIMS];
    for (int d = 0; d < n; d++) {
        src_sz[d] = d < pad ? 1 : self->sizes[d - pad];
        rep[d] = src_sz[d] ? res->sizes[d] / src_sz[d] : 0;
        vn += (rep[d] != 1 && src_sz[d] != 1) ? 2 : 1;
    }
    int64_t vs[FX_MAX_DIMS], vst[FX_MAX_DIMS], ss[FX_MAX_DIMS], sst[FX_MAX_DIMS];
    if (vn <= FX_MAX_DIMS) {
        int k = 0;
        for (int d = 0; d < n; d++) {
            int64_t sstride = d < pad ? 0 : self->strides[d - pad];
            if (rep[d] != 1 && src_sz[d] != 1) { /* (repeat, size) */
                vs[k] = rep[d], vst[k] = src_sz[d] * res->strides[d], ss[k] = rep[d], sst[k] = 0;
                k++;
                vs[k] = src_sz[d], vst[k] = res->strides[d], ss[k] = src_sz[d], sst[k] = sstride;
                k++;
            } else if (src_sz[d] == 1) { /* a size-1 source dim simply broadcasts */
                vs[k] = res->sizes[d], vst[k] = res->strides[d], ss[k] = res->sizes[d], sst[k] = 0;
                k++;
            } else {
                vs[k] = src_sz[d], vst[k] = res->strides[d], ss[k] = src_sz[d], sst[k] = sstride;
                k++;
            }
        }
        fx_tensor *dv = NULL, *sv = NULL;
        int rc = fx_tensor_as_strided(res, k, vs, vst, res->offset, &dv, ctx->err);
        if (!rc) rc = fx_tensor_as_strided(self, k, ss, sst, self->offset, &sv, ctx->err);
        if (!rc) fx_kb_copy(dv, sv);
        fx_tensor_release(dv);
        fx_tensor_release(sv);
        return rc;
    }
    /* Too many dims for one view: copy self into the leading block, then for each repeated
     * dim (innermost first) replicate the filled block along it. */
    int64_t bs[FX_MAX_DIMS];
    for (int d = 0; d < n; d++) bs[d] = src_sz[d];
    fx_tensor *blk = NULL, *sv = NULL;
    for (int d = 0; d < n; d++) sst[d] = d < pad ? 0 : self->strides[d - pad];
    int rc = fx_tensor_as_strided(res, n, bs, res->strides, res->offset, &blk, ctx->err);
    if (!rc) rc = fx_tensor_as_strided(self, n, bs, sst, self->offset, &sv, ctx->err);
    if (!rc) fx_kb_copy(blk, sv);
    fx_tensor_release(blk);
    fx_tensor_release(sv);
    for (int d = n - 1; d >= 0 && !rc; d--) {
        for (int64_t r = 1; r < rep[d] && !rc; r++) {
            fx_tensor *src = NULL, *dst = NULL;
            rc = fx_tensor_as_strided(res, n, bs, res->strides, res->offset, &src, ctx->err);
            if (!rc)
                rc = fx_tensor_as_strided(res, n, bs, res->strides,
                                          res->offset + r * src_sz[d] * res->strides[d], &dst,
                                          ctx->err);
            if (!rc) fx_kb_copy(dst, src);
            fx_tensor_release(src);
            fx_tensor_release(dst);
        }
        bs[d] = res->sizes[d];
    }
    return rc;
}
