/* core/meta_inplace_view.c — metadata-mutating in-place ops (transpose_, t_, unsqueeze_, squeeze_).
 * Layer: core. Each takes the geometry its view twin (ops.def TWIN column) would give and writes
 * it into `self`'s own sizes, strides and offset, as PyTorch's in-place view ops change the
 * TensorImpl's metadata without touching the data. Other views of the same storage keep theirs. */
#include <string.h>

#include "core/fx_alloc.h"
#include "core/meta_common.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

int fx_meta_inplace_view(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    const fx_opdef *view = fx_op_get(ctx->op->twin);
    if (!view || !view->meta)
        return fx_err_setf(ctx->err, FX_EINTERNAL, "%s has no view twin", fx_op_qualname(ctx->op));
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "%s(): argument 'self' (position 1) must be Tensor",
                           ctx->op->schema.name);
    fx_tensor *self = a[0].u.t;
    fx_opctx vc = *ctx;
    vc.op = view;
    fx_ivalue res[FX_SCHEMA_MAX_RETS] = {0};
    int rc = view->meta(&vc, a, res);
    if (rc) return rc;
    const fx_tensor *v = res[0].u.t;
    self->ndim = v->ndim;
    memcpy(self->sizes, v->sizes, sizeof self->sizes);
    memcpy(self->strides, v->strides, sizeof self->strides);
    self->offset = v->offset;
    fx_ivalue_clear(&res[0]);
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}

/* ---- resize_ and set_: a new geometry, and a storage grown to hold it ---------------------- */

/* Grows t's storage to hold `bytes` (never shrinks it), as maybe_resize_storage_cpu: the old
 * bytes stay, the new ones are zero (PyTorch leaves them uninitialized). Every tensor viewing the
 * storage sees the new memory. Meta storages only change their size. */
static int grow_storage(fx_tensor *t, int64_t bytes, fx_err *err) {
    fx_storage *s = t->storage;
    if (bytes <= s->size_bytes) return FX_OK;
    if (s->device == FX_DEVICE_CPU) {
        bool inl = s->data == fx_storage_inline_data(s); /* data in the storage's block */
        void *p = inl ? fx_malloc((size_t)bytes) : fx_realloc(s->data, (size_t)bytes);
        if (p && inl) memcpy(p, s->data, (size_t)s->size_bytes);
        if (!p)
            return fx_err_setf(err, FX_ENOMEM,
                               "[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: can't allocate "
                               "memory: you tried to allocate %lld bytes.",
                               (long long)bytes);
        memset((char *)p + s->size_bytes, 0, (size_t)(bytes - s->size_bytes));
        s->data = p;
    }
    s->size_bytes = bytes;
    return FX_OK;
}

/* Gives t the geometry (n, sizes, strides, offset) and grows its storage to the bytes it needs:
 * the span of the new geometry (nothing for an empty one). Checks for overflow. */
static int set_geometry(fx_tensor *t, int n, const int64_t *sizes, const int64_t *strides,
                        int64_t offset, fx_err *err) {
    int64_t numel = 1, span = 1, bytes;
    for (int d = 0; d < n; d++) {
        if (sizes[d] < 0 || __builtin_mul_overflow(numel, sizes[d], &numel))
            return fx_err_setf(err, FX_ESHAPE, "numel: integer multiplication overflow");
    }
    for (int d = 0; d < n && numel > 0; d++) {
        int64_t m;
        if (strides[d] < 0) {
            char b[FX_MAX_DIMS * 22 + 4];
            return fx_err_setf(err, FX_EARG,
                               "as_strided: Negative strides are not supported at the moment, got "
                               "strides: %s",
                               fx_shape_str(n, strides, b, (int)sizeof b));
        }
        if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &m) || __builtin_add_overflow(span, m, &span))
            return fx_err_setf(err, FX_ESHAPE, "numel: integer multiplication overflow");
    }
    if (numel > 0) {
        if (__builtin_add_overflow(span, offset, &span) ||
            __builtin_mul_overflow(span, (int64_t)fx_dtype_size(t->dtype), &bytes))
            return fx_err_setf(err, FX_ESHAPE, "numel: integer multiplication overflow");
        int rc = grow_storage(t, bytes, err);
        if (rc) return rc;
    }
    t->ndim = n;
    for (int d = 0; d < n; d++) {
        t->sizes[d] = sizes[d];
        t->strides[d] = strides[d];
    }
    t->offset = offset;
    return FX_OK;
}

/* resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!):
 * Resize.cpp's resize_: the same sizes without a memory format change nothing (strides kept);
 * otherwise contiguous strides (channels_last ones for a 4-d size with that format) at the same
 * storage offset, the storage grown when it is too small. Messages: "numel: integer
 * multiplication overflow" (a negative size), "Unsupported memory formatPreserve", "required
 * rank 4 tensor to use channels_last format". */
int fx_meta_resize_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "resize_(): argument 'self' (position 1) must be Tensor");
    fx_tensor *self = a[0].u.t;
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    int n, rc;
    if ((rc = fx_arg_int_list(&a[1], sizes, &n, ctx->err))) return rc;
    const fx_ivalue *mf = fx_arg(ctx, a, "memory_format");
    bool has_mf = mf && mf->tag == FX_IV_STR;
    fx_memfmt f = fx_arg_memfmt(mf, FX_MEMFMT_CONTIGUOUS);
    for (int d = 0; d < n; d++)
        if (sizes[d] < 0) return fx_err_setf(ctx->err, FX_ESHAPE, "numel: integer multiplication overflow");
    bool same = n == self->ndim && !has_mf;
    for (int d = 0; same && d < n; d++) same = sizes[d] == self->sizes[d];
    if (!same) {
        if ((rc = fx_trace_keep_val(ctx->ctx, self, ctx->err))) return rc;
        if (has_mf && f == FX_MEMFMT_PRESERVE)
            return fx_err_setf(ctx->err, FX_EARG, "Unsupported memory formatPreserve");
        if (f == FX_MEMFMT_CHANNELS_LAST && n != 4)
            return fx_err_setf(ctx->err, FX_ESHAPE, "required rank 4 tensor to use channels_last format");
        fx_tensor shape = {.ndim = n};
        memcpy(shape.sizes, sizes, sizeof(int64_t) * (size_t)n);
        fx_memfmt_strides(&shape, f, strides);
        if ((rc = set_geometry(self, n, sizes, strides, self->offset, ctx->err))) return rc;
    }
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}

/* set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!): self takes source's storage,
 * sizes, strides and offset (the two share memory from then on); source must have self's dtype
 * ("Could not set tensor of type long int to a tensor of type float", PyTorch's binding).
 * set_.source_Tensor_storage_offset(self, source, storage_offset, size, stride=[]): source's
 * storage (read as self's dtype) at the given geometry (contiguous strides when stride is []),
 * grown when too small ("Tensor: invalid storage offset -1", "unequal size length (2) and stride
 * length (1)"). set_(self): a fresh empty storage, sizes [0]. */
int fx_meta_set_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "set_(): argument 'self' (position 1) must be Tensor");
    fx_tensor *self = a[0].u.t, *src = NULL;
    int rc;
    if ((rc = fx_trace_keep_val(ctx->ctx, self, ctx->err))) return rc;
    if (ctx->op->id == FX_OP_SET_) {
        fx_tensor *e;
        if ((rc = fx_tensor_empty(1, (int64_t[]){0}, self->dtype, self->device, &e, ctx->err))) return rc;
        fx_tensor_set_storage(self, e->storage);
        fx_tensor_release(e);
        self->ndim = 1;
        self->sizes[0] = 0;
        self->strides[0] = 1;
        self->offset = 0;
        out[0] = fx_iv_tensor(self);
        return FX_OK;
    }
    if (a[1].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "set_(): argument 'source' (position 2) must be Tensor");
    src = a[1].u.t;
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS], offset;
    int n = src->ndim, ns = 0;
    if (ctx->op->id == FX_OP_SET__SOURCE_TENSOR) {
        if (src->dtype != self->dtype)
            return fx_err_setf(ctx->err, FX_ETYPE, "Could not set tensor of type %s to a tensor of type %s",
                               fx_typemeta_name(src->dtype), fx_typemeta_name(self->dtype));
        memcpy(sizes, src->sizes, sizeof sizes);
        memcpy(strides, src->strides, sizeof strides);
        offset = src->offset;
    } else {
        offset = a[2].u.i;
        if ((rc = fx_arg_int_list(&a[3], sizes, &n, ctx->err)) ||
            (rc = fx_arg_int_list(&a[4], strides, &ns, ctx->err)))
            return rc;
        if (offset < 0) return fx_err_setf(ctx->err, FX_EARG, "Tensor: invalid storage offset %lld", (long long)offset);
        if (ns == 0) {
            fx_contiguous_strides(n, sizes, strides);
        } else if (ns != n) {
            return fx_err_setf(ctx->err, FX_ESHAPE, "unequal size length (%d) and stride length (%d)", n, ns);
        }
        for (int d = 0; d < n; d++)
            if (sizes[d] < 0) return fx_err_setf(ctx->err, FX_ESHAPE, "numel: integer multiplication overflow");
    }
    if (self->device != src->device)
        return fx_err_setf(ctx->err, FX_EARG,
                           "Attempted to set the storage of a tensor on device \"%s\" to a storage on "
                           "different device \"%s\".  This is no longer allowed; the devices must match.",
                           self->device == FX_DEVICE_META ? "meta" : "cpu",
                           src->device == FX_DEVICE_META ? "meta" : "cpu");
    fx_tensor_set_storage(self, src->storage);
    if ((rc = set_geometry(self, n, sizes, strides, offset, ctx->err))) return rc;
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}

/* resize(Tensor self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor: the
 * functional twin functionalization records for a resize_ that grows a tensor's storage
 * (FunctionalizeFallbackKernel.cpp), as aten's composite: a clone of self (its layout kept when
 * dense) resized in place. A fresh tensor of the new geometry whose storage starts with the
 * clone's elements in storage order, zeros after them. */
int fx_meta_resize(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    if (a[0].tag != FX_IV_TENSOR)
        return fx_err_setf(ctx->err, FX_EARG, "resize(): argument 'self' (position 1) must be Tensor");
    const fx_tensor *self = a[0].u.t;
    fx_tensor *t;
    int64_t strides[FX_MAX_DIMS];
    fx_kb_dense_strides(self, strides);
    int rc = fx_tensor_empty_strided(self->ndim, self->sizes, strides, self->dtype, ctx->device, &t, ctx->err);
    if (rc) return rc;
    fx_opctx c = *ctx;
    fx_ivalue args[3] = {{.tag = FX_IV_TENSOR, .u.t = t}, a[1], a[2]}, r[1]; /* t borrowed */
    c.op = fx_op_get(FX_OP_RESIZE_);
    rc = fx_meta_resize_(&c, args, r);
    if (!rc) fx_ivalue_clear(&r[0]);
    if (rc) {
        fx_tensor_release(t);
        return rc;
    }
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}
