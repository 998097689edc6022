/* core/dispatch.c — argument normalization, device choice, meta + kernel, trace recording.
 * Layer: core. */
#include "core/dispatch.h"

#include <stdarg.h>
#include <string.h>

#include "core/meta_common.h"
#include "core/ops_impl.h"
#include "core/sym_dispatch.h"

void fx_debug_break(const struct fx_node *n) {
    (void)n;
    __asm__ volatile("" ::: "memory"); /* keep the call: a place for gdb to stop */
}

/* The hooks installed from above: the symbolic path (core/meta_sym.c, by fx_ops_install) and
 * the trace's answers to meta functions (core/trace.c, by fx_tracer_new). */
static fx_sym_dispatch_fn g_sym_dispatch;
static fx_trace_env_fn g_trace_env_of;
static fx_trace_keep_fn g_trace_keep_val;

void fx_dispatch_set_sym_hook(fx_sym_dispatch_fn fn) {
    __atomic_store_n(&g_sym_dispatch, fn, __ATOMIC_RELEASE);
}

void fx_dispatch_set_trace_hooks(fx_trace_env_fn env_of, fx_trace_keep_fn keep_val) {
    __atomic_store_n(&g_trace_env_of, env_of, __ATOMIC_RELEASE);
    __atomic_store_n(&g_trace_keep_val, keep_val, __ATOMIC_RELEASE);
}

fx_shape_env *fx_trace_env_of(fx_ctx *ctx, fx_err *err) {
    fx_trace_env_fn f = __atomic_load_n(&g_trace_env_of, __ATOMIC_ACQUIRE);
    return f ? f(ctx, err) : NULL;
}

int fx_trace_keep_val(fx_ctx *ctx, fx_tensor *t, fx_err *err) {
    fx_trace_keep_fn f = __atomic_load_n(&g_trace_keep_val, __ATOMIC_ACQUIRE);
    return f ? f(ctx, t, err) : FX_OK;
}

static const char *iv_kind(const fx_ivalue *v) {
    switch (v->tag) {
    case FX_IV_UNSET: case FX_IV_NONE: return "NoneType";
    case FX_IV_TENSOR: return "Tensor";
    case FX_IV_INT: return "int";
    case FX_IV_FLOAT: return "float";
    case FX_IV_BOOL: return "bool";
    case FX_IV_DTYPE: return "dtype";
    case FX_IV_DEVICE: return "device";
    case FX_IV_STR: return "str";
    case FX_IV_LIST: return "list";
    case FX_IV_NODE: return "Node";
    case FX_IV_SYMINT: return "SymInt";
    }
    return "?";
}

/* Is v acceptable for argument a? Wrapped numbers are accepted for Tensor, as PyTorch's Python
 * binding does for `x + 2`. */
static bool arg_ok(const fx_arg_schema *a, const fx_ivalue *v) {
    if (v->tag == FX_IV_NONE) return a->optional;
    switch (a->type) {
    case FX_TY_TENSOR:
        return v->tag == FX_IV_TENSOR || fx_ivalue_is_scalar(v) || v->tag == FX_IV_SYMINT;
    case FX_TY_INT: return v->tag == FX_IV_INT || v->tag == FX_IV_SYMINT;
    case FX_TY_FLOAT: return v->tag == FX_IV_FLOAT || v->tag == FX_IV_INT;
    case FX_TY_SCALAR: return fx_ivalue_is_scalar(v) || v->tag == FX_IV_SYMINT;
    case FX_TY_BOOL: return v->tag == FX_IV_BOOL;
    case FX_TY_DTYPE: return v->tag == FX_IV_DTYPE;
    case FX_TY_DEVICE: return v->tag == FX_IV_DEVICE || v->tag == FX_IV_STR;
    case FX_TY_STR: return v->tag == FX_IV_STR;
    case FX_TY_INT_LIST:
        if (v->tag == FX_IV_INT || v->tag == FX_IV_SYMINT) return true; /* int[1]: one int */
        if (v->tag != FX_IV_LIST) return false;
        for (int i = 0; i < v->u.list.n; i++)
            if (v->u.list.items[i].tag != FX_IV_INT && v->u.list.items[i].tag != FX_IV_SYMINT)
                return false;
        return true;
    case FX_TY_TENSOR_LIST:
        if (v->tag != FX_IV_LIST) return false;
        for (int i = 0; i < v->u.list.n; i++) {
            const fx_ivalue *e = &v->u.list.items[i];
            if (e->tag == FX_IV_TENSOR) continue;
            if (e->tag == FX_IV_NONE && a->elem_optional) continue;
            return false;
        }
        return true;
    case FX_TY_FLOAT_LIST:
    case FX_TY_BOOL_LIST: return v->tag == FX_IV_LIST;
    default: return true;
    }
}

static bool any_meta(const fx_ivalue *v) {
    if (v->tag == FX_IV_TENSOR) return fx_tensor_is_meta(v->u.t);
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++)
            if (any_meta(&v->u.list.items[i])) return true;
    return false;
}

/* The first complex dtype among the tensors and dtype arguments of v (lists too), or
 * FX_DTYPE_UNDEFINED. */
static fx_dtype complex_in(const fx_ivalue *v) {
    if (v->tag == FX_IV_TENSOR && fx_dtype_is_complex(fx_tensor_dtype(v->u.t)))
        return fx_tensor_dtype(v->u.t);
    if (v->tag == FX_IV_DTYPE && fx_dtype_is_complex(v->u.dtype)) return v->u.dtype;
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++) {
            fx_dtype dt = complex_in(&v->u.list.items[i]);
            if (dt != FX_DTYPE_UNDEFINED) return dt;
        }
    return FX_DTYPE_UNDEFINED;
}

/* An op that computes (not a view, composite or custom op) without FX_OPF_COMPLEX refuses
 * complex arguments and results, with the message of ATen's dtype dispatch macros
 * ("\"sin\" not implemented for 'ComplexFloat'"), before any kernel reads a complex element
 * as something else. */
static int complex_check(const fx_opctx *oc, const fx_ivalue *v, int n) {
    const fx_opdef *op = oc->op;
    if (op->flags & (FX_OPF_COMPLEX | FX_OPF_VIEW | FX_OPF_COMPOSITE | FX_OPF_CUSTOM))
        return FX_OK;
    for (int i = 0; i < n; i++) {
        fx_dtype dt = complex_in(&v[i]);
        if (dt != FX_DTYPE_UNDEFINED)
            return fx_err_setf(oc->err, FX_ETYPE, "\"%s\" not implemented for '%s'",
                               op->schema.name, fx_dtype_c10_name(dt));
    }
    return FX_OK;
}

/* Runs meta (+ kernel) on args `m` and records `a` (the same, or with SymInts where `m` has
 * their hints); with a `rule` (core/meta_sym.c's fx_sym_apply_rule), it gives the outputs their
 * symbolic shapes. */
int fx_dispatch_run_op(fx_opctx *oc, const fx_ivalue *m, const fx_ivalue *a, fx_ivalue *out,
                       fx_sym_rule_fn rule) {
    fx_ctx *ctx = oc->ctx;
    const fx_opdef *op = oc->op;
    const fx_schema *s = &op->schema;
    fx_err *err = oc->err;
    if (op->flags & FX_OPF_COMPOSITE) return op->kernel(oc, m, out);

    /* Autograd's check on in-place writes into leaves that require grad (eager only: export
     * reports these itself, as aot_autograd does, naming the parameter). */
    for (int i = s->mutated_arg; ctx->mode == FX_MODE_EAGER && !ctx->no_grad && i >= 0 && i < s->nargs; i++) {
        if (!s->args[i].alias_write || m[i].tag != FX_IV_TENSOR) continue;
        const fx_tensor *t = m[i].u.t;
        const fx_tensor *leaf = fx_tensor_base(t) ? fx_tensor_base(t) : t;
        if (fx_tensor_requires_grad(leaf))
            return fx_err_setf(
                err, FX_EARG,
                fx_tensor_base(t) ? "a view of a leaf Variable that requires grad is being used in "
                                    "an in-place operation."
                                  : "a leaf Variable that requires grad is being used in an "
                                    "in-place operation.");
    }

    int rc = complex_check(oc, m, s->nargs);
    if (rc) return rc;
    rc = op->meta ? op->meta(oc, m, out)
                  : fx_err_setf(err, FX_ENOTIMPL, "%s has no meta function", op->qualname);
    if (rc == FX_OK) rc = complex_check(oc, out, s->nrets);
    if (rc == FX_OK && rule) rc = rule(oc, a, m, out);
    if (rc == FX_OK && oc->device == FX_DEVICE_CPU && op->kernel) {
        ctx->depth++;
        rc = op->kernel(oc, m, out);
        ctx->depth--;
        if (rc == FX_OK) rc = fx_interrupt_check(err); /* a kernel stopped early by Ctrl-C */
    }
    for (int i = s->mutated_arg; rc == FX_OK && i >= 0 && i < s->nargs; i++) /* each (a!) arg */
        if (s->args[i].alias_write && m[i].tag == FX_IV_TENSOR) fx_tensor_bump_version(m[i].u.t);
    if (rc == FX_OK && ctx->mode == FX_MODE_TRACE && ctx->depth == 0 && ctx->record)
        rc = ctx->record(ctx->record_ud, op, a, out, err);
    if (rc != FX_OK)
        for (int i = 0; i < s->nrets; i++) fx_ivalue_clear(&out[i]);
    return rc;
}

int fx_dispatch(fx_ctx *ctx, const fx_opdef *op, const fx_ivalue *args, fx_ivalue *out,
                fx_err *err) {
    if (!fx_registry_impls_installed())
        return fx_err_setf(err, FX_EINTERNAL,
                           "%s: the op table is not installed: initialize the dispatch "
                           "context with fx_ctx_init",
                           op->qualname);
    const fx_schema *s = &op->schema;
    fx_ivalue a[FX_SCHEMA_MAX_ARGS];
    fx_ivalue single[FX_SCHEMA_MAX_ARGS]; /* int -> [int] for int[N] arguments */
    for (int i = 0; i < s->nargs; i++) {
        const fx_arg_schema *as = &s->args[i];
        a[i] = args[i];
        if (a[i].tag == FX_IV_UNSET) {
            if (!as->has_default) {
                if (as->optional) a[i] = fx_iv_none();
                else
                    return fx_err_setf(err, FX_EARG, "%s() missing required argument '%s'",
                                       s->name, as->name);
            } else {
                a[i] = as->def;
            }
        }
        if (!arg_ok(as, &a[i]))
            return fx_err_setf(err, FX_EARG,
                               "%s(): argument '%s' (position %d) must be %s%s, not %s",
                               s->name, as->name, i + 1,
                               as->type == FX_TY_TENSOR_LIST ? "tuple of Tensors"
                               : as->type == FX_TY_INT_LIST  ? "tuple of ints"
                               : as->type == FX_TY_TENSOR    ? "Tensor"
                               : as->type == FX_TY_INT       ? "int"
                               : as->type == FX_TY_FLOAT     ? "float"
                               : as->type == FX_TY_SCALAR    ? "Number"
                               : as->type == FX_TY_BOOL      ? "bool"
                               : as->type == FX_TY_DTYPE     ? "torch.dtype"
                               : as->type == FX_TY_STR       ? "str"
                                                             : "a valid value",
                               as->optional ? " or None" : "", iv_kind(&a[i]));
        if (as->type == FX_TY_INT_LIST && (a[i].tag == FX_IV_INT || a[i].tag == FX_IV_SYMINT)) {
            single[i] = a[i];
            a[i].tag = FX_IV_LIST;
            a[i].u.list.items = &single[i];
            a[i].u.list.n = 1;
        }
    }
    fx_opctx oc = {ctx, op, FX_DEVICE_CPU, err};
    if (ctx->mode == FX_MODE_META || (ctx->mode == FX_MODE_TRACE && !ctx->real))
        oc.device = FX_DEVICE_META;
    for (int i = 0; i < s->nargs && oc.device == FX_DEVICE_CPU; i++)
        if (any_meta(&a[i])) oc.device = FX_DEVICE_META;
    for (int i = 0; i < s->nrets; i++) out[i].tag = FX_IV_UNSET;

    /* Symbolic inputs (dynamic shapes) take core/meta_sym.c's path (fx_sym_dispatch). */
    if (!fx_shape_env_live) return fx_dispatch_run_op(&oc, a, a, out, NULL);
    return __atomic_load_n(&g_sym_dispatch, __ATOMIC_ACQUIRE)(&oc, a, out);
}

static int vcall(fx_ctx *ctx, fx_op_id id, fx_ivalue *out, fx_err *err, int nargs, va_list ap) {
    const fx_opdef *op = fx_op_get(id);
    if (!op) return fx_err_setf(err, FX_EINTERNAL, "unknown op id %d", (int)id);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS];
    if (nargs > op->schema.nargs)
        return fx_err_setf(err, FX_EARG, "%s takes at most %d arguments", op->qualname,
                           op->schema.nargs);
    for (int i = 0; i < nargs; i++) {
        const fx_ivalue *v = va_arg(ap, const fx_ivalue *);
        if (v) args[i] = *v;
    }
    int rc = fx_dispatch(ctx, op, args, outs, err);
    if (rc) return rc;
    *out = outs[0];
    for (int i = 1; i < op->schema.nrets; i++) fx_ivalue_clear(&outs[i]);
    return FX_OK;
}

int fx_call(fx_ctx *ctx, fx_op_id id, fx_ivalue *out, fx_err *err, int nargs, ...) {
    va_list ap;
    va_start(ap, nargs);
    int rc = vcall(ctx, id, out, err, nargs, ap);
    va_end(ap);
    return rc;
}

int fx_call_t(fx_ctx *ctx, fx_op_id id, fx_tensor **out, fx_err *err, int nargs, ...) {
    va_list ap;
    va_start(ap, nargs);
    fx_ivalue v;
    int rc = vcall(ctx, id, &v, err, nargs, ap);
    va_end(ap);
    if (rc) return rc;
    if (v.tag != FX_IV_TENSOR) {
        fx_ivalue_clear(&v);
        return fx_err_setf(err, FX_EINTERNAL, "expected a tensor result");
    }
    *out = v.u.t;
    return FX_OK;
}
