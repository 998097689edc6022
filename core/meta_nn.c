/* core/meta_nn.c — meta functions of the linear-algebra ops: mm, bmm, dot, mv, linear.
 * Layer: core. Output shapes and messages follow aten/src/ATen/native/LinearAlgebra.cpp
 * (TORCH_META_FUNC(mm), common_checks_baddbmm_bmm, addmv, addmm_impl_cpu_) and Blas.cpp
 * (dot_check). Outputs are fresh contiguous tensors of the operands' dtype. */
#include <string.h>

#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* The caffe2::TypeMeta name PyTorch prints for a dtype in addmm's dtype check (the C++ type
 * name, as gcc spells it). */
static const char *typemeta_name(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F32: return "float";
    case FX_DTYPE_F64: return "double";
    case FX_DTYPE_F16: return "c10::Half";
    case FX_DTYPE_BF16: return "c10::BFloat16";
    case FX_DTYPE_I64: return "long int";
    case FX_DTYPE_I32: return "int";
    case FX_DTYPE_I16: return "short int";
    case FX_DTYPE_I8: return "signed char";
    case FX_DTYPE_U8: return "unsigned char";
    case FX_DTYPE_BOOL: return "bool";
    default: return "?";
    }
}

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
                       typemeta_name(m1->dtype), typemeta_name(m2->dtype));
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
 * weight [n, k], bias broadcastable to [..., n]; result [..., n] = input @ weight.T + bias.
 * Messages are those of the ops aten's linear decomposes into (mm / addmm / matmul). */
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
    if (w->ndim != 2)
        return fx_err_setf(ctx->err, FX_ENOTIMPL,
                           "linear(): fxdb supports only a 2-D weight, got %dD", w->ndim);
    int64_t m = 1, k = x->sizes[x->ndim - 1], n = w->sizes[0];
    for (int d = 0; d + 1 < x->ndim; d++) m *= x->sizes[d];
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
    int64_t sizes[FX_MAX_DIMS];
    int nd = x->ndim;
    memcpy(sizes, x->sizes, sizeof sizes);
    sizes[nd - 1] = n;
    if (b) { /* bias must broadcast to the result without changing its shape */
        int64_t bs[FX_MAX_DIMS], st[FX_MAX_DIMS];
        memcpy(bs, sizes, sizeof bs);
        if ((rc = fx_expand_strides(b, nd, bs, st, ctx->err))) return rc;
    }
    return fresh(ctx, nd, sizes, x->dtype, out);
}
