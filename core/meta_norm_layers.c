/* core/meta_norm_layers.c — batch norm and group norm: the meta function of
 * _native_batch_norm_legit and its variants, the composites batch_norm / native_batch_norm, and
 * the meta function of group_norm / native_group_norm (group_norm.cpp's check_group_norm_inputs;
 * recorded as itself, as layer_norm is: docs/CHOICES.md).
 * Layer: core. Follows aten/src/ATen/native/Normalization.cpp (_batch_norm_impl_index's checks,
 * batch_norm_cpu's dtype dispatch and mixed-type rule) and torch 2.5's Python decomposition of
 * native_batch_norm (torch/_decomp/decompositions.py, registered for CompositeImplicitAutograd
 * and Autograd), which is what torch.export records: training with running statistics is
 * _native_batch_norm_legit (writing running_mean / running_var, functionalized into
 * _native_batch_norm_legit_functional), training without them is
 * _native_batch_norm_legit.no_stats, evaluation is _native_batch_norm_legit_no_training.
 *
 * Ownership: composites return new references in out[]; intermediates are released. */
#include <string.h>

#include "core/meta_common.h"
#include "core/ops_shape.h"
#include "core/shape.h"

/* An optional Tensor argument: NULL for None, else the tensor (borrowed). */
static int opt_tensor(fx_opctx *ctx, const fx_ivalue *a, int i, fx_tensor **out) {
    *out = NULL;
    if (a[i].tag == FX_IV_NONE || a[i].tag == FX_IV_UNSET) return FX_OK;
    return fx_kb_tensor_arg(ctx, a, i, out);
}

int fx_batch_norm_args(fx_opctx *ctx, const fx_ivalue *a, fx_batch_norm_args_t *p) {
    memset(p, 0, sizeof *p);
    fx_op_id id = ctx->op->id;
    int rc;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &p->input)) || (rc = opt_tensor(ctx, a, 1, &p->weight)) ||
        (rc = opt_tensor(ctx, a, 2, &p->bias)))
        return rc;
    int at = 3; /* index of running_mean, or of `training` for no_stats */
    if (id != FX_OP__NATIVE_BATCH_NORM_LEGIT_NO_STATS) {
        if ((rc = opt_tensor(ctx, a, 3, &p->running_mean)) ||
            (rc = opt_tensor(ctx, a, 4, &p->running_var)))
            return rc;
        at = 5;
    }
    if (id == FX_OP__NATIVE_BATCH_NORM_LEGIT_NO_TRAINING) {
        p->training = false;
        p->momentum = fx_ivalue_to_f64(&a[5]);
        p->eps = fx_ivalue_to_f64(&a[6]);
    } else {
        p->training = a[at].tag == FX_IV_BOOL && a[at].u.b;
        p->momentum = fx_ivalue_to_f64(&a[at + 1]);
        p->eps = fx_ivalue_to_f64(&a[at + 2]);
    }
    return FX_OK;
}

/* check_dims_match_num_input_features: "running_mean should contain 3 elements not 4". */
static int check_features(fx_opctx *ctx, const char *name, int64_t want, const fx_tensor *t) {
    if (!t || fx_tensor_numel(t) == want) return FX_OK;
    return fx_err_setf(ctx->err, FX_ESHAPE, "%s should contain %lld elements not %lld", name,
                       (long long)want, (long long)fx_tensor_numel(t));
}

/* The dtype rules of the CPU batch / group norm kernels: a floating input ("<kernel>" not
 * implemented for 'Long'); the n parameters (NULL for None) of the input's dtype, or all float32
 * for a float16 / bfloat16 input (then *mixed, the kernels' "mixed type"). */
static int check_norm_dtypes(fx_opctx *ctx, const char *kernel, const fx_tensor *x,
                             const fx_tensor *const *ps, int n, bool *mixed) {
    if (!fx_dtype_is_float(x->dtype))
        return fx_err_setf(ctx->err, FX_ETYPE, "\"%s\" not implemented for '%s'", kernel,
                           fx_kb_scalar_name(x->dtype));
    *mixed = false;
    for (int i = 0; i < n; i++)
        if (ps[i] && ps[i]->dtype != x->dtype) *mixed = true;
    if (!*mixed) return FX_OK;
    for (int i = 0; i < n; i++)
        if (ps[i] && ps[i]->dtype != FX_DTYPE_F32)
            return fx_err_setf(ctx->err, FX_ETYPE,
                               "mixed dtype (CPU): expect parameter to have scalar type of Float");
    if (x->dtype != FX_DTYPE_F16 && x->dtype != FX_DTYPE_BF16)
        return fx_err_setf(ctx->err, FX_ETYPE, "mixed dtype (CPU): all inputs must share same datatype.");
    return FX_OK;
}

static int fresh(fx_opctx *ctx, int ndim, const int64_t *sizes, const int64_t *strides,
                 fx_dtype dt, fx_ivalue *out) {
    fx_tensor *t;
    int rc = strides ? fx_tensor_empty_strided(ndim, sizes, strides, dt, ctx->device, &t, ctx->err)
                     : fx_tensor_empty(ndim, sizes, dt, ctx->device, &t, ctx->err);
    if (rc) return rc;
    out[0] = fx_iv_tensor_steal(t);
    return FX_OK;
}

/* _native_batch_norm_legit(input, weight, bias, running_mean!, running_var!, training, momentum,
 * eps) -> (out, save_mean, save_rstd) and its .no_stats, _functional and _no_training variants.
 * input [N, C, *] (at least 2-d), floating; weight / bias / running stats [C]. out is shaped and
 * laid out like input (dense strides kept) in input's dtype. Training: save_mean / save_rstd are
 * [C], the batch mean and 1 / sqrt(biased var + eps), in input's dtype (float32 when mixed).
 * Evaluation: both are [0] (the CPU decomposition's new_zeros((0,))). _functional also returns
 * the new running_mean / running_var, shaped and typed like the old. */
int fx_meta_batch_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_batch_norm_args_t p;
    int rc = fx_batch_norm_args(ctx, a, &p);
    if (rc) return rc;
    const fx_tensor *x = p.input;
    if (x->ndim < 2)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "Dimension out of range (expected to be in range of [%d, %d], but got 1)",
                           x->ndim ? -x->ndim : -1, x->ndim ? x->ndim - 1 : 0);
    int64_t c = x->sizes[1];
    if ((rc = check_features(ctx, "running_mean", c, p.running_mean)) ||
        (rc = check_features(ctx, "running_var", c, p.running_var)) ||
        (rc = check_features(ctx, "weight", c, p.weight)) ||
        (rc = check_features(ctx, "bias", c, p.bias)))
        return rc;
    bool mixed;
    const fx_tensor *ps[4] = {p.weight, p.bias, p.running_mean, p.running_var};
    if ((rc = check_norm_dtypes(ctx, "batch_norm", x, ps, 4, &mixed))) return rc;
    int64_t st[FX_MAX_DIMS];
    fx_kb_dense_strides(x, st);
    int n = ctx->op->schema.nrets;
    if ((rc = fresh(ctx, x->ndim, x->sizes, st, x->dtype, &out[0]))) return rc;
    fx_dtype sdt = mixed ? FX_DTYPE_F32 : x->dtype;
    int64_t ssz = p.training ? c : 0;
    for (int i = 1; i < 3 && !rc; i++) rc = fresh(ctx, 1, &ssz, NULL, sdt, &out[i]);
    for (int i = 3; i < n && !rc; i++) {
        const fx_tensor *r = i == 3 ? p.running_mean : p.running_var;
        rc = fresh(ctx, r->ndim, r->sizes, NULL, r->dtype, &out[i]);
    }
    if (rc)
        for (int i = 0; i < n; i++) fx_ivalue_clear(&out[i]);
    return rc;
}

/* ---- group norm ------------------------------------------------------------------------- */

int fx_group_norm_args(fx_opctx *ctx, const fx_ivalue *a, fx_group_norm_args_t *p) {
    memset(p, 0, sizeof *p);
    int rc;
    bool native = ctx->op->id == FX_OP_NATIVE_GROUP_NORM;
    if ((rc = fx_kb_tensor_arg(ctx, a, 0, &p->input)) ||
        (rc = opt_tensor(ctx, a, native ? 1 : 2, &p->weight)) ||
        (rc = opt_tensor(ctx, a, native ? 2 : 3, &p->bias)))
        return rc;
    const fx_tensor *x = p->input;
    p->groups = native ? a[6].u.i : a[1].u.i;
    p->eps = fx_ivalue_to_f64(&a[native ? 7 : 4]);
    char b1[160], b2[160];
    if (x->ndim < 2)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "Dimension out of range (expected to be in range of [%d, %d], but got 1)",
                           x->ndim ? -x->ndim : -1, x->ndim ? x->ndim - 1 : 0);
    p->n = x->sizes[0];
    p->c = x->sizes[1];
    p->hxw = 1;
    for (int d = 2; d < x->ndim; d++) p->hxw *= x->sizes[d];
    if (native && (a[3].u.i != p->n || a[4].u.i != p->c || a[5].u.i != p->hxw))
        return fx_err_setf(ctx->err, FX_ESHAPE,
                           "Expected input of %s to have N=%lld, C=%lld and HxW=%lld elements",
                           fx_shape_str(x->ndim, x->sizes, b1, sizeof b1), (long long)a[3].u.i,
                           (long long)a[4].u.i, (long long)a[5].u.i);
    if (p->groups <= 0)
        return fx_err_setf(ctx->err, FX_EARG, "Expected num groups to be greater than 0, got %lld",
                           (long long)p->groups);
    if (p->c % p->groups != 0)
        return fx_err_setf(ctx->err, FX_EARG,
                           "Expected number of channels in input to be divisible by num_groups, "
                           "but got input of shape %s and num_groups=%lld",
                           fx_shape_str(x->ndim, x->sizes, b1, sizeof b1), (long long)p->groups);
    const fx_tensor *ps[2] = {p->weight, p->bias};
    for (int i = 0; i < 2; i++)
        if (ps[i] && (ps[i]->ndim != 1 || ps[i]->sizes[0] != p->c))
            return fx_err_setf(ctx->err, FX_ESHAPE,
                               "Expected %s to be a vector of size equal to the number of channels "
                               "in input, but got %s of shape %s and input of shape %s",
                               i ? "bias" : "weight", i ? "bias" : "weight",
                               fx_shape_str(ps[i]->ndim, ps[i]->sizes, b1, sizeof b1),
                               fx_shape_str(x->ndim, x->sizes, b2, sizeof b2));
    return check_norm_dtypes(ctx, "GroupNormKernelImpl", x, ps, 2, &p->mixed);
}

/* group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None,
 * float eps=1e-05, bool cudnn_enabled=True) -> Tensor and native_group_norm(Tensor input,
 * Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) ->
 * (Tensor, Tensor, Tensor): input [N, C, *] floating, C divisible by the groups, weight / bias
 * [C]; out like input (dense strides kept); native_group_norm's mean / rstd are [N, group], in
 * input's dtype (float32 for a float16 / bfloat16 input with float32 parameters). */
int fx_meta_group_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_group_norm_args_t p;
    int rc = fx_group_norm_args(ctx, a, &p);
    if (rc) return rc;
    const fx_tensor *x = p.input;
    int64_t st[FX_MAX_DIMS];
    fx_kb_dense_strides(x, st);
    fx_tensor *t;
    if ((rc = fx_tensor_empty_strided(x->ndim, x->sizes, st, x->dtype, ctx->device, &t, ctx->err)))
        return rc;
    out[0] = fx_iv_tensor_steal(t);
    if (ctx->op->id != FX_OP_NATIVE_GROUP_NORM) return FX_OK;
    int64_t ss[2] = {p.n, p.groups};
    fx_dtype sdt = p.mixed ? FX_DTYPE_F32 : x->dtype;
    for (int i = 1; i < 3 && !rc; i++) {
        rc = fx_tensor_empty(2, ss, sdt, ctx->device, &t, ctx->err);
        if (!rc) out[i] = fx_iv_tensor_steal(t);
    }
    if (rc)
        for (int i = 0; i < 3; i++) fx_ivalue_clear(&out[i]);
    return rc;
}

/* ---- composites ---------------------------------------------------------------------------- */

static fx_ivalue borrow(fx_tensor *t) {
    return t ? (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t} : fx_iv_none();
}

/* native_batch_norm as torch 2.5's decomposition: no running statistics -> .no_stats; training
 * -> _native_batch_norm_legit (writes them); else _native_batch_norm_legit_no_training. */
static int native_bn(fx_opctx *ctx, const fx_batch_norm_args_t *p, fx_ivalue *out) {
    if (!p->running_mean && p->running_var)
        return fx_err_setf(ctx->err, FX_EARG,
                           "running_mean is None, but running_var is provided. They should both "
                           "be None or both be provided.");
    if (p->running_mean && !p->running_var)
        return fx_err_setf(ctx->err, FX_EARG,
                           "running_var is None, but running_mean is provided. They should both "
                           "be None or both be provided.");
    fx_ivalue a[FX_SCHEMA_MAX_ARGS];
    int n = 0;
    fx_op_id id;
    a[n++] = borrow(p->input), a[n++] = borrow(p->weight), a[n++] = borrow(p->bias);
    if (!p->running_mean) {
        id = FX_OP__NATIVE_BATCH_NORM_LEGIT_NO_STATS;
        a[n++] = fx_iv_bool(p->training);
    } else {
        a[n++] = borrow(p->running_mean), a[n++] = borrow(p->running_var);
        id = p->training ? FX_OP__NATIVE_BATCH_NORM_LEGIT : FX_OP__NATIVE_BATCH_NORM_LEGIT_NO_TRAINING;
        if (p->training) a[n++] = fx_iv_bool(true);
    }
    a[n++] = fx_iv_float(p->momentum), a[n++] = fx_iv_float(p->eps);
    return fx_dispatch(ctx->ctx, fx_op_get(id), a, out, ctx->err);
}

/* batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
 * cudnn_enabled) -> Tensor: _batch_norm_impl_index's checks (input at least 2-d, statistics
 * required in evaluation, [C] sizes), then native_batch_norm's decomposition, result item 0.
 * native_batch_norm(...) -> (Tensor, Tensor, Tensor): the decomposition alone. */
int fx_c_batch_norm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_batch_norm_args_t p;
    int rc = fx_batch_norm_args(ctx, a, &p);
    if (rc) return rc;
    if (ctx->op->id == FX_OP_NATIVE_BATCH_NORM) return native_bn(ctx, &p, out);
    if (p.input->ndim < 2)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "Dimension out of range (expected to be in range of [%d, %d], but got 1)",
                           p.input->ndim ? -p.input->ndim : -1, p.input->ndim ? p.input->ndim - 1 : 0);
    int64_t c = p.input->sizes[1];
    if (p.running_mean) rc = check_features(ctx, "running_mean", c, p.running_mean);
    else if (!p.training) rc = fx_err_setf(ctx->err, FX_EARG, "running_mean must be defined in evaluation mode");
    if (rc) return rc;
    if (p.running_var) rc = check_features(ctx, "running_var", c, p.running_var);
    else if (!p.training) rc = fx_err_setf(ctx->err, FX_EARG, "running_var must be defined in evaluation mode");
    if (!rc) rc = check_features(ctx, "weight", c, p.weight);
    if (!rc) rc = check_features(ctx, "bias", c, p.bias);
    if (rc) return rc;
    if (fx_tensor_numel(p.input) == 0) { /* input.clone() * weight[0] + bias[0], as aten */
        fx_ivalue x = borrow(p.input);
        fx_tensor *o = NULL;
        if ((rc = fx_call_t(ctx->ctx, FX_OP_CLONE, &o, ctx->err, 1, &x))) return rc;
        fx_tensor *ps[2] = {p.weight, p.bias};
        fx_op_id ops[2] = {FX_OP_MUL_TENSOR, FX_OP_ADD_TENSOR};
        for (int i = 0; i < 2 && !rc; i++) {
            if (!ps[i]) continue;
            fx_ivalue pv = borrow(ps[i]), z = fx_iv_int(0), ov, ev;
            fx_tensor *e = NULL, *next = NULL;
            rc = fx_call_t(ctx->ctx, FX_OP_SELECT_INT, &e, ctx->err, 3, &pv, &z, &z);
            ov = borrow(o), ev = borrow(e);
            if (!rc) rc = fx_call_t(ctx->ctx, ops[i], &next, ctx->err, 2, &ov, &ev);
            fx_tensor_release(e);
            fx_tensor_release(o);
            o = next;
        }
        if (rc) return rc;
        out[0] = fx_iv_tensor_steal(o);
        return FX_OK;
    }
    fx_ivalue res[FX_SCHEMA_MAX_RETS] = {0};
    if ((rc = native_bn(ctx, &p, res))) return rc;
    out[0] = res[0];
    fx_ivalue_clear(&res[1]);
    fx_ivalue_clear(&res[2]);
    return FX_OK;
}
