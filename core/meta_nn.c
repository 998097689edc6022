/* core/meta_nn.c — meta functions of the linear-algebra ops (mm, bmm, dot, mv, linear, addmm,
 * baddbmm) and of the nn ops (softmax, layer_norm, rms_norm, embedding, dropout, sdpa).
 * Layer: core. Output shapes and messages follow aten/src/ATen/native/LinearAlgebra.cpp
 * (TORCH_META_FUNC(mm), common_checks_baddbmm_bmm, addmv, addmm_impl_cpu_) and Blas.cpp
 * (dot_check), SoftMax.cpp, layer_norm.cpp (_check_layer_norm_inputs, rms_norm), Embedding.cpp
 * and transformers/attention.cpp (validate_sdpa_input, the math path). Outputs are fresh
 * contiguous tensors. */
#include <string.h>

#include "core/meta_common.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

static int fresh(fx_opctx *ctx, int ndim, const int64_t *sizes, fx_dtype dt, fx_ivalue *out) {
    fx_tensor *t;
    int rc = fx_tensor_empty(ndim, sizes, dt, ctx->device, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

static int same_dtype_mm(fx_opctx *ctx, const fx_tensor *m1, const fx_tensor *m2) {
    if (m1->dtype == m2->dtype) return FX_OK;
    return fx_err_setf(ctx->err, FX_ETYPE,
                       "expected m1 and m2 to have the same dtype, but got: %s != %s",
                       fx_typemeta_name(m1->dtype), fx_typemeta_name(m2->dtype));
}

static int mm_shapes(fx_opctx *ctx, int64_t m, int64_t k1, int64_t k2, int64_t n) {
    if (k1 == k2) return FX_OK;
    return fx_err_setf(ctx->err, FX_ESHAPE,
                       "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                       (long long)m, (long long)k1, (long long)k2, (long long)n);
}

/* mm(Tensor self, Tensor mat2) -> Tensor: [n, m] @ [m, p] -> [n, p]. */
int fx_meta_mm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s, *m;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &s)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &m))) return rc;
    if (s->ndim != 2) return fx_err_setf(ctx->err, FX_ESHAPE, "self must be a matrix");
    if (m->ndim != 2) return fx_err_setf(ctx->err, FX_ESHAPE, "mat2 must be a matrix");
    if ((rc = mm_shapes(ctx, s->sizes[0], s->sizes[1], m->sizes[0], m->sizes[1])) ||
        (rc = same_dtype_mm(ctx, s, m)))
        return rc;
    int64_t sizes[2] = {s->sizes[0], m->sizes[1]};
    return fresh(ctx, 2, sizes, s->dtype, out);
}

/* bmm(Tensor self, Tensor mat2) -> Tensor: [b, n, m] @ [b, m, p] -> [b, n, p]. */
int fx_meta_bmm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s, *m;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &s)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &m))) return rc;
    if (s->ndim != 3) return fx_err_setf(ctx->err, FX_ESHAPE, "batch1 must be a 3D tensor");
    if (m->ndim != 3) return fx_err_setf(ctx->err, FX_ESHAPE, "batch2 must be a 3D tensor");
    if (m->sizes[0] != s->sizes[0] || m->sizes[1] != s->sizes[2])
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected size for first two dimensions of batch2 tensor to be: "
                           "[%lld, %lld] but got: [%lld, %lld].",
                           (long long)s->sizes[0], (long long)s->sizes[2], (long long)m->sizes[0],
                           (long long)m->sizes[1]);
    if (s->dtype != m->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE, "expected scalar type %s but found %s",
                           fx_kb_scalar_name(s->dtype), fx_kb_scalar_name(m->dtype));
    int64_t sizes[3] = {s->sizes[0], s->sizes[1], m->sizes[2]};
    return fresh(ctx, 3, sizes, s->dtype, out);
}

/* dot(Tensor self, Tensor tensor) -> Tensor: [n] . [n] -> [] (dot_check's messages). */
int fx_meta_dot(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s, *o;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &s)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &o))) return rc;
    if (s->ndim != 1 || o->ndim != 1)
        return fx_err_setf(ctx->err, FX_ESHAPE, "1D tensors expected, but got %dD and %dD tensors",
                           s->ndim, o->ndim);
    if (s->dtype != o->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "dot : expected both vectors to have same dtype, but found %s and %s",
                           fx_kb_scalar_name(s->dtype), fx_kb_scalar_name(o->dtype));
    if (s->sizes[0] != o->sizes[0])
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "inconsistent tensor size, expected tensor [%lld] and src [%lld] to "
                           "have the same number of elements, but got %lld and %lld elements "
                           "respectively",
                           (long long)s->sizes[0], (long long)o->sizes[0], (long long)s->sizes[0],
                           (long long)o->sizes[0]);
    return fresh(ctx, 0, NULL, s->dtype, out);
}

/* mv(Tensor self, Tensor vec) -> Tensor: [n, m] @ [m] -> [n] (addmv's messages, with the
 * zero-filled result of size n as "input"). */
int fx_meta_mv(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *s, *v;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &s)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &v))) return rc;
    if (s->ndim != 2 || v->ndim != 1)
        return fx_err_setf(ctx->err, FX_ESHAPE, "vector + matrix @ vector expected, got 1, %d, %d",
                           s->ndim, v->ndim);
    if (s->sizes[1] != v->sizes[0])
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                           (long long)s->sizes[0], (long long)s->sizes[0], (long long)s->sizes[1],
                           (long long)v->sizes[0]);
    if (s->dtype != v->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE, "expected scalar type %s but found %s",
                           fx_kb_scalar_name(s->dtype), fx_kb_scalar_name(v->dtype));
    return fresh(ctx, 1, s->sizes, s->dtype, out);
}

/* linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor: input [..., k] (rank >= 1),
 * weight [n, k] or [k], bias broadcastable to the result; result [..., n] = input @ weight.T +
 * bias, or [...] = input @ weight for a 1-D weight (aten's linear is matmul(input, weight.t())
 * then, and t() of a vector is the vector). Messages are those of the ops aten's linear
 * decomposes into (mm / addmm / mv / dot). */
int fx_meta_linear(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *x, *w, *b = NULL;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &x)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &w))) return rc;
    if (a[2].tag != FX_IV_NONE && (rc = fx_kb_tensor_arg(ctx, a, 2, &b))) return rc;
    if (x->ndim == 0 || w->ndim == 0)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "both arguments to matmul need to be at least 1D, but they are %dD "
                           "and %dD",
                           x->ndim, w->ndim);
    if (w->ndim > 2)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "t() expects a tensor with <= 2 dimensions, but "
                           "self is %dD",
                           w->ndim);
    int64_t m = 1, k = x->sizes[x->ndim - 1], n = w->sizes[0];
    for (int d = 0; d + 1 < x->ndim; d++) m *= x->sizes[d];
    int64_t sizes[FX_MAX_DIMS];
    int nd = x->ndim;
    memcpy(sizes, x->sizes, sizeof sizes);
    if (w->ndim == 1) { /* matmul(input, weight): dot for 1-D input, else (folded) mv */
        if (x->ndim == 1 && x->sizes[0] != w->sizes[0])
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "inconsistent tensor size, expected tensor [%lld] and src [%lld] "
                               "to have the same number of elements, but got %lld and %lld "
                               "elements respectively",
                               (long long)k, (long long)n, (long long)k, (long long)n);
        if (x->ndim > 1 && k != n)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                               (long long)m, (long long)m, (long long)k, (long long)n);
        if (x->dtype != w->dtype)
            return fx_err_setf(ctx->err, FX_ETYPE, "expected scalar type %s but found %s",
                               fx_kb_scalar_name(x->dtype), fx_kb_scalar_name(w->dtype));
        nd--;
    } else {
        if (b && b->dtype != w->dtype)
            return fx_err_setf(ctx->err, FX_ETYPE,
                               "self and mat2 must have the same dtype, but got %s and %s",
                               fx_kb_scalar_name(b->dtype), fx_kb_scalar_name(w->dtype));
        if ((rc = mm_shapes(ctx, m, k, w->sizes[1], n))) return rc;
        if (x->dtype != w->dtype) {
            if (b)
                return fx_err_setf(ctx->err, FX_ETYPE,
                                   "mat1 and mat2 must have the same dtype, but got %s and %s",
                                   fx_kb_scalar_name(x->dtype), fx_kb_scalar_name(w->dtype));
            return same_dtype_mm(ctx, x, w);
        }
        sizes[nd - 1] = n;
    }
    if (b && w->ndim == 2) { /* addmm: bias expands to the result */
        int64_t bs[FX_MAX_DIMS], st[FX_MAX_DIMS];
        memcpy(bs, sizes, sizeof bs);
        if ((rc = fx_expand_strides(b, nd, bs, st, ctx->err))) return rc;
    } else if (b) { /* matmul, then output.add_(bias): an in-place broadcast */
        if (b->dtype != x->dtype)
            return fx_err_setf(ctx->err, FX_ETYPE,
                               "self and mat2 must have the same dtype, but got %s and %s",
                               fx_kb_scalar_name(b->dtype), fx_kb_scalar_name(w->dtype));
        int64_t bs[FX_MAX_DIMS];
        int nbs;
        if ((rc = fx_broadcast_shape(nd, sizes, b->ndim, b->sizes, &nbs, bs, ctx->err)) ||
            (rc = fx_check_inplace_shape(nd, sizes, nbs, bs, ctx->err)))
            return rc;
    }
    return fresh(ctx, nd, sizes, x->dtype, out);
}

/* The output of an in-place addmm_ / baddbmm_: self, which must already have the result's
 * shape (structured kernels' "Bad in-place call" check). */
static int inplace_out(fx_opctx *ctx, fx_tensor *self, int nd, const int64_t *sizes,
                       fx_ivalue *out) {
    bool same = self->ndim == nd && !memcmp(self->sizes, sizes, sizeof(int64_t) * (size_t)nd);
    if (!same) {
        char b1[160], b2[160];
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Bad in-place call: input tensor size %s and output tensor size %s "
                           "should match",
                           fx_shape_str(self->ndim, self->sizes, b1, sizeof b1),
                           fx_shape_str(nd, sizes, b2, sizeof b2));
    }
    out[0] = fx_iv_tensor(self);
    return FX_OK;
}

/* addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor and
 * addmm_: TORCH_META_FUNC(addmm)'s checks in its order (ranks, self/mat2 dtype, mat1/mat2 dtype,
 * shapes), then self must expand to [n, p] (expand_size's message). */
int fx_meta_addmm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *m1, *m2;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &m1)) ||
        (rc = fx_kb_tensor_arg(ctx, a, 2, &m2)))
        return rc;
    if (m1->ndim != 2)
        return fx_err_setf(ctx->err, FX_ESHAPE, "mat1 must be a matrix, got %d-D tensor", m1->ndim);
    if (m2->ndim != 2)
        return fx_err_setf(ctx->err, FX_ESHAPE, "mat2 must be a matrix, got %d-D tensor", m2->ndim);
    if (self->dtype != m2->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "self and mat2 must have the same dtype, but got %s and %s",
                           fx_kb_scalar_name(self->dtype), fx_kb_scalar_name(m2->dtype));
    if (m1->dtype != m2->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "mat1 and mat2 must have the same dtype, but got %s and %s",
                           fx_kb_scalar_name(m1->dtype), fx_kb_scalar_name(m2->dtype));
    if ((rc = mm_shapes(ctx, m1->sizes[0], m1->sizes[1], m2->sizes[0], m2->sizes[1]))) return rc;
    int64_t sizes[2] = {m1->sizes[0], m2->sizes[1]};
    if (fx_op_is_inplace(ctx->op)) return inplace_out(ctx, self, 2, sizes, out);
    int64_t es[2] = {sizes[0], sizes[1]}, st[2];
    if ((rc = fx_expand_strides(self, 2, es, st, ctx->err))) return rc;
    return fresh(ctx, 2, sizes, m1->dtype, out);
}

/* baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
 * and baddbmm_: in TORCH_META_FUNC(baddbmm)'s order — self expanded to [batch1.size(0),
 * batch1.size(1), batch2.size(2)] (out-of-place; in place self must be that shape), equal
 * dtypes ("Input dtypes must be the same, got: input float, batch1: double, batch2: float"),
 * then common_checks_baddbmm_bmm's rank and size checks. */
int fx_meta_baddbmm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self, *b1, *b2;
    int rc, dd;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &b1)) ||
        (rc = fx_kb_tensor_arg(ctx, a, 2, &b2)))
        return rc;
    /* batch1.size(0), batch1.size(1), batch2.size(2): dim errors as Tensor::size gives them */
    if ((rc = fx_wrap_dim(1, b1->ndim, &dd, ctx->err)) ||
        (rc = fx_wrap_dim(2, b2->ndim, &dd, ctx->err)))
        return rc;
    int64_t sizes[3] = {b1->sizes[0], b1->sizes[1], b2->sizes[2]};
    if (!fx_op_is_inplace(ctx->op)) {
        int64_t es[3] = {sizes[0], sizes[1], sizes[2]}, st[3];
        if ((rc = fx_expand_strides(self, 3, es, st, ctx->err))) return rc;
    }
    if (self->dtype != b1->dtype || self->dtype != b2->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "Input dtypes must be the same, got: input %s, batch1: %s, batch2: %s",
                           fx_typemeta_name(self->dtype), fx_typemeta_name(b1->dtype),
                           fx_typemeta_name(b2->dtype));
    if (b1->ndim != 3) return fx_err_setf(ctx->err, FX_ESHAPE, "batch1 must be a 3D tensor");
    if (b2->ndim != 3) return fx_err_setf(ctx->err, FX_ESHAPE, "batch2 must be a 3D tensor");
    if (b2->sizes[0] != b1->sizes[0] || b2->sizes[1] != b1->sizes[2])
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected size for first two dimensions of batch2 tensor to be: "
                           "[%lld, %lld] but got: [%lld, %lld].",
                           (long long)b1->sizes[0], (long long)b1->sizes[2],
                           (long long)b2->sizes[0], (long long)b2->sizes[1]);
    if (fx_op_is_inplace(ctx->op)) return inplace_out(ctx, self, 3, sizes, out);
    return fresh(ctx, 3, sizes, b1->dtype, out);
}

/* ====================================================================================== */
/* nn ops: softmax, layer_norm, rms_norm, embedding, dropout, scaled_dot_product_attention */
/* ====================================================================================== */

/* The message of an AT_DISPATCH_* macro that has no case for dt:
 * "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'". */
static int not_implemented_for(fx_opctx *ctx, const char *kernel, fx_dtype dt) {
    return fx_err_setf(ctx->err, FX_ETYPE, "\"%s\" not implemented for '%s'", kernel,
                       fx_kb_scalar_name(dt));
}

/* _softmax(Tensor self, int dim, bool half_to_float) -> Tensor and _log_softmax: a fresh
 * contiguous tensor of self's sizes (float32 when half_to_float, which only the meta function
 * accepts: the CPU kernel refuses it as PyTorch's does). Floating dtypes only, with the name of
 * the CPU kernel that would have been dispatched in the message. */
int fx_meta_softmax(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc, d;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &self))) return rc;
    if ((rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err))) return rc;
    bool log = ctx->op->id == FX_OP__LOG_SOFTMAX;
    if (!fx_dtype_is_float(self->dtype) && fx_tensor_numel(self) > 0) {
        bool last = self->ndim == 0 || d == self->ndim - 1;
        const char *k = log ? (last ? "log_softmax_lastdim_kernel_impl" : "log_softmax_kernel_impl")
                            : (last ? "softmax_lastdim_kernel_impl" : "softmax_kernel_impl");
        return not_implemented_for(ctx, k, self->dtype);
    }
    if (a[2].u.b && ctx->device == FX_DEVICE_CPU)
        return fx_err_setf(ctx->err, FX_ENOTIMPL,
                           "%s with half to float conversion is not "
                           "supported on CPU",
                           log ? "log_softmax" : "softmax");
    return fresh(ctx, self->ndim, self->sizes, a[2].u.b ? FX_DTYPE_F32 : self->dtype, out);
}

/* The checks of _check_layer_norm_inputs / _check_rms_norm_inputs: normalized_shape non-empty,
 * weight (and bias) of exactly that shape, input ending in it. *axis receives the first
 * normalized dim of input. */
static int check_norm_inputs(fx_opctx *ctx, const fx_tensor *x, const fx_ivalue *a,
                             const fx_tensor *w, const fx_tensor *b, int *axis) {
    int64_t ns[FX_MAX_DIMS];
    int nn, rc;
    char b1[160], b2[160];
    if ((rc = fx_kb_ints_arg(ctx, a, 1, ns, &nn))) return rc;
    fx_shape_str(nn, ns, b2, sizeof b2);
    if (nn < 1)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = %s",
                           b2);
    const fx_tensor *p[2] = {w, b};
    for (int i = 0; i < 2; i++)
        if (p[i] && (p[i]->ndim != nn || memcmp(p[i]->sizes, ns, sizeof(int64_t) * (size_t)nn)))
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Expected %s to be of same shape as normalized_shape, but got %s "
                               "of shape %s and normalized_shape = %s",
                               i ? "bias" : "weight", i ? "bias" : "weight",
                               fx_shape_str(p[i]->ndim, p[i]->sizes, b1, sizeof b1), b2);
    if (x->ndim < nn || memcmp(x->sizes + (x->ndim - nn), ns, sizeof(int64_t) * (size_t)nn)) {
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_strbuf_appendf(&sb, "Given normalized_shape=%s, expected input with shape [*", b2);
        for (int i = 0; i < nn; i++) fx_strbuf_appendf(&sb, ", %lld", (long long)ns[i]);
        fx_strbuf_appendf(&sb, "], but got input of size%s",
                          fx_shape_str(x->ndim, x->sizes, b1, sizeof b1));
        if (fx_strbuf_status(&sb, ctx->err)) {
            fx_strbuf_free(&sb);
            return FX_ENOMEM;
        }
        rc = fx_err_setf(ctx->err, FX_ESHAPE, "%s", fx_strbuf_cstr(&sb));
        fx_strbuf_free(&sb);
        return rc;
    }
    *axis = x->ndim - nn;
    return FX_OK;
}

/* An optional Tensor argument: NULL for None, else the tensor (borrowed). */
static int opt_tensor(fx_opctx *ctx, const fx_ivalue *a, int i, fx_tensor **out) {
    *out = NULL;
    if (a[i].tag == FX_IV_NONE || a[i].tag == FX_IV_UNSET) return FX_OK;
    return fx_kb_tensor_arg(ctx, a, i, out);
}

/* layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None,
 * float eps=1e-05, bool cudnn_enable=True) -> Tensor and
 * native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias,
 * float eps) -> (Tensor, Tensor, Tensor): out[0] contiguous like input; native_layer_norm adds
 * mean and rstd of shape input.shape[:axis] + [1] * len(normalized_shape), float32 when a
 * float16 / bfloat16 input has float32 parameters (PyTorch's "mixed type"), else input's
 * dtype. Floating inputs only ("LayerNormKernelImpl" not implemented for 'Long'); parameters
 * must have input's dtype, or float32 for a reduced-precision input. */
int fx_meta_layer_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *x, *w, *b;
    int rc, axis;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &x)) || (rc = opt_tensor(ctx, a, 2, &w)) ||
        (rc = opt_tensor(ctx, a, 3, &b)) || (rc = check_norm_inputs(ctx, x, a, w, b, &axis)))
        return rc;
    if (!fx_dtype_is_float(x->dtype))
        return not_implemented_for(ctx, "LayerNormKernelImpl", x->dtype);
    bool reduced = x->dtype == FX_DTYPE_F16 || x->dtype == FX_DTYPE_BF16;
    bool mixed = reduced && ((w && w->dtype == FX_DTYPE_F32) || (b && b->dtype == FX_DTYPE_F32));
    const fx_tensor *p[2] = {w, b};
    for (int i = 0; i < 2; i++) {
        if (!p[i]) continue;
        fx_dtype want = mixed ? FX_DTYPE_F32 : x->dtype;
        if (p[i]->dtype != want)
            return fx_err_setf(ctx->err, FX_ETYPE, "expected scalar type %s but found %s",
                               fx_kb_scalar_name(want), fx_kb_scalar_name(p[i]->dtype));
    }
    if ((rc = fresh(ctx, x->ndim, x->sizes, x->dtype, out))) return rc;
    if (ctx->op->id != FX_OP_NATIVE_LAYER_NORM) return FX_OK;
    int64_t ss[FX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) ss[d] = d < axis ? x->sizes[d] : 1;
    fx_dtype sdt = mixed ? FX_DTYPE_F32 : x->dtype;
    if ((rc = fresh(ctx, x->ndim, ss, sdt, &out[1])) ||
        (rc = fresh(ctx, x->ndim, ss, sdt, &out[2]))) {
        fx_ivalue_clear(&out[0]);
        fx_ivalue_clear(&out[1]);
        return rc;
    }
    return FX_OK;
}

/* rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None)
 * -> Tensor: checks as layer_norm's; floating inputs only ("rms_norm" not implemented for
 * 'Long'); the result has input's dtype promoted with weight's (the kernel multiplies by the
 * weight after rounding to input's dtype, as aten's composite rms_norm does). */
int fx_meta_rms_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *x, *w;
    int rc, axis;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &x)) || (rc = opt_tensor(ctx, a, 2, &w)) ||
        (rc = check_norm_inputs(ctx, x, a, w, NULL, &axis)))
        return rc;
    if (!fx_dtype_is_float(x->dtype)) return not_implemented_for(ctx, "rms_norm", x->dtype);
    fx_dtype dt = w ? fx_promote_types(x->dtype, w->dtype) : x->dtype;
    return fresh(ctx, x->ndim, x->sizes, dt, out);
}

/* The legacy tensor type name of checkScalarTypes' message: "torch.FloatTensor". */
static const char *legacy_type_name(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F32: return "torch.FloatTensor";
    case FX_DTYPE_F64: return "torch.DoubleTensor";
    case FX_DTYPE_F16: return "torch.HalfTensor";
    case FX_DTYPE_BF16: return "torch.BFloat16Tensor";
    case FX_DTYPE_I64: return "torch.LongTensor";
    case FX_DTYPE_I32: return "torch.IntTensor";
    case FX_DTYPE_I16: return "torch.ShortTensor";
    case FX_DTYPE_I8: return "torch.CharTensor";
    case FX_DTYPE_U8: return "torch.ByteTensor";
    case FX_DTYPE_BOOL: return "torch.BoolTensor";
    default: return "torch.Tensor";
    }
}

/* embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False,
 * bool sparse=False) -> Tensor: weight [n, d] (any dtype), int64 / int32 indices of any shape;
 * result indices.shape + [d], contiguous. padding_idx only matters for gradients. */
int fx_meta_embedding(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *w, *idx;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &w)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &idx)))
        return rc;
    if (w->ndim != 2) return fx_err_setf(ctx->err, FX_ESHAPE, "'weight' must be 2-D");
    if (idx->dtype != FX_DTYPE_I64 && idx->dtype != FX_DTYPE_I32)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got %s instead (while "
                           "checking arguments for embedding)",
                           legacy_type_name(idx->dtype));
    if (idx->ndim + 1 > FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, idx->ndim + 1);
    int64_t sizes[FX_MAX_DIMS];
    memcpy(sizes, idx->sizes, sizeof(int64_t) * (size_t)idx->ndim);
    sizes[idx->ndim] = w->sizes[1];
    return fresh(ctx, idx->ndim + 1, sizes, w->dtype, out);
}

/* dropout(Tensor input, float p, bool train) -> Tensor: a fresh tensor like input (dense
 * strides kept); p must lie in [0, 1]. dropout_(Tensor(a!) self, float p, bool train): self. */
int fx_meta_dropout(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *x, *t;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &x))) return rc;
    double p = fx_ivalue_to_f64(&a[1]);
    if (!(p >= 0 && p <= 1))
        return fx_err_setf(ctx->err, FX_EARG,
                           "dropout probability has to be between 0 and 1, but got %g", p);
    if (ctx->op->id == FX_OP_DROPOUT_) {
        out[0] = fx_iv_tensor(x);
        return FX_OK;
    }
    int64_t strides[FX_MAX_DIMS];
    fx_kb_dense_strides(x, strides);
    if ((rc = fx_tensor_empty_strided(x->ndim, x->sizes, strides, x->dtype, ctx->device, &t,
                                      ctx->err)))
        return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None,
 * float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False)
 * -> Tensor: query [..., L, E], key [..., S, E], value [..., S, Ev] with batch dims that
 * broadcast (as the math path's matmuls do); with enable_gqa the head dim (-3) of key / value
 * may divide query's. attn_mask (bool: True takes part; or float / query's dtype: added)
 * broadcasts to [..., L, S]. Result [batch..., L, Ev] in query's dtype, contiguous.
 * validate_sdpa_input's messages; dropout_p > 0 is not supported (it would draw from
 * PyTorch's generator). */
int fx_meta_sdpa(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *q, *k, *v, *m;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &q)) || (rc = fx_kb_tensor_arg(ctx, a, 1, &k)) ||
        (rc = fx_kb_tensor_arg(ctx, a, 2, &v)) || (rc = opt_tensor(ctx, a, 3, &m)))
        return rc;
    double dropout_p = fx_ivalue_to_f64(&a[4]);
    bool causal = a[5].u.b, gqa = a[7].tag == FX_IV_BOOL && a[7].u.b;
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "Expected query, key, and value to have the same dtype, but got "
                           "query.dtype: %s key.dtype: %s and value.dtype: %s instead.",
                           fx_typemeta_name(q->dtype), fx_typemeta_name(k->dtype),
                           fx_typemeta_name(v->dtype));
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected query, key, and value to all be  at least 2 dimensional, "
                           "but got query.dim: %d key.dim: %d and value.dim: %d instead.",
                           q->ndim, k->ndim, v->ndim);
    if (m && m->dtype != FX_DTYPE_BOOL && m->dtype != FX_DTYPE_F32 && m->dtype != q->dtype)
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "Expected attn_mask dtype to be bool or float or to match query "
                           "dtype, but got attn_mask.dtype: %s and  query.dtype: %s instead.",
                           fx_typemeta_name(m->dtype), fx_typemeta_name(q->dtype));
    if (causal && m)
        return fx_err_setf(ctx->err, FX_EARG,
                           "_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True");
    if (dropout_p != 0)
        return fx_err_setf(ctx->err, FX_ENOTIMPL,
                           "scaled_dot_product_attention: dropout_p=%g is not supported by fxdb "
                           "(only 0.0)",
                           dropout_p);
    int64_t L = q->sizes[q->ndim - 2], E = q->sizes[q->ndim - 1];
    int64_t S = k->sizes[k->ndim - 2], Ek = k->sizes[k->ndim - 1];
    int64_t Sv = v->sizes[v->ndim - 2], Ev = v->sizes[v->ndim - 1];
    /* batch dims: key / value heads may be fewer than query's under enable_gqa */
    int64_t kb[FX_MAX_DIMS], vb[FX_MAX_DIMS], bshape[FX_MAX_DIMS], tmp[FX_MAX_DIMS];
    int nkb = k->ndim - 2, nvb = v->ndim - 2, nb;
    memcpy(kb, k->sizes, sizeof(int64_t) * (size_t)nkb);
    memcpy(vb, v->sizes, sizeof(int64_t) * (size_t)nvb);
    if (gqa) {
        if (q->ndim < 3 || k->ndim < 3 || v->ndim < 3)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "scaled_dot_product_attention: enable_gqa needs query, key and "
                               "value with a head dimension (-3)");
        int64_t hq = q->sizes[q->ndim - 3], hk = kb[nkb - 1], hv = vb[nvb - 1];
        if (hk == 0 || hv == 0 || hq % hk || hq % hv)
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Number of heads in key and value must divide the number of "
                               "heads in query");
        kb[nkb - 1] = hq, vb[nvb - 1] = hq;
    }
    if ((rc = fx_broadcast_shape(q->ndim - 2, q->sizes, nkb, kb, &nb, tmp, ctx->err)) ||
        (rc = fx_broadcast_shape(nb, tmp, nvb, vb, &nb, bshape, ctx->err)))
        return rc;
    if (nb + 2 > FX_MAX_DIMS)
        return fx_err_setf(ctx->err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, nb + 2);
    int64_t batch = 1;
    for (int d = 0; d < nb; d++) batch *= bshape[d];
    if (E != Ek)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected size for first two dimensions of batch2 tensor to be: "
                           "[%lld, %lld] but got: [%lld, %lld].",
                           (long long)batch, (long long)E, (long long)batch, (long long)Ek);
    if (S != Sv)
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected size for first two dimensions of batch2 tensor to be: "
                           "[%lld, %lld] but got: [%lld, %lld].",
                           (long long)batch, (long long)S, (long long)batch, (long long)Sv);
    if (!fx_dtype_is_float(q->dtype)) /* the math path's last matmul: float attn @ value */
        return fx_err_setf(ctx->err, FX_ETYPE,
                           "expected m1 and m2 to have the same dtype, but got: float != %s",
                           fx_typemeta_name(v->dtype));
    int64_t osz[FX_MAX_DIMS];
    memcpy(osz, bshape, sizeof(int64_t) * (size_t)nb);
    osz[nb] = L, osz[nb + 1] = S;
    if (m) { /* attn.add_(mask): the mask broadcasts into [batch..., L, S] */
        int64_t es[FX_MAX_DIMS];
        int nm;
        if ((rc = fx_broadcast_shape(nb + 2, osz, m->ndim, m->sizes, &nm, es, ctx->err)) ||
            (rc = fx_check_inplace_shape(nb + 2, osz, nm, es, ctx->err)))
            return rc;
    }
    osz[nb + 1] = Ev;
    return fresh(ctx, nb + 2, osz, q->dtype, out);
}
