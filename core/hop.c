/* core/hop.c — higher-order ops: output metadata and execution (scan, cond, map_impl).
 * Layer: core. Bodies run on the interpreter; slices and stacking go through the eager
 * dispatcher (select + copy_), so every dtype and stride the kernels handle works here too. */
#include "core/hop.h"

#include <stdio.h>
#include <string.h>

#include "core/dispatch.h"
#include "core/shape.h"

static int list_len(const fx_ivalue *v) { return v && v->tag == FX_IV_LIST ? v->u.list.n : 0; }

int fx_hop_body_slots(const char *target, int *pos) {
    if (!strcmp(target, "higher_order.scan") || !strcmp(target, "higher_order.map_impl")) {
        pos[0] = 0;
        return 1;
    }
    if (!strcmp(target, "higher_order.cond")) {
        pos[0] = 1;
        pos[1] = 2;
        return 2;
    }
    return -1;
}

/* The scanned / mapped length: xs[k].size(dim), equal for every k; *nsym (when not NULL) is
 * that size as xs[0] has it (symbolic in a dynamic export). */
static int scan_length_sym(const char *what, const fx_ivalue *xs, int64_t dim, int64_t *n,
                           fx_symint *nsym, int *wdim, fx_err *err);
static int scan_length(const char *what, const fx_ivalue *xs, int64_t dim, int64_t *n, int *wdim,
                       fx_err *err) {
    return scan_length_sym(what, xs, dim, n, NULL, wdim, err);
}
static int scan_length_sym(const char *what, const fx_ivalue *xs, int64_t dim, int64_t *n,
                           fx_symint *nsym, int *wdim, fx_err *err) {
    int nx = list_len(xs);
    if (nx == 0) return fx_err_setf(err, FX_EARG, "%s: xs must contain at least one tensor", what);
    for (int k = 0; k < nx; k++) {
        const fx_ivalue *x = &xs->u.list.items[k];
        if (x->tag != FX_IV_TENSOR) return fx_err_setf(err, FX_EARG, "%s: xs[%d] is not a tensor", what, k);
        int nd = fx_tensor_ndim(x->u.t), d;
        if (nd == 0) return fx_err_setf(err, FX_ESHAPE, "%s: xs[%d] is 0-dimensional", what, k);
        int rc = fx_wrap_dim(dim, nd, &d, err);
        if (rc) return rc;
        int64_t len = fx_tensor_size(x->u.t, d);
        if (k == 0 && nsym) *nsym = fx_tensor_sym_size(x->u.t, d);
        if (k == 0) *n = len, *wdim = d;
        else if (len != *n)
            return fx_err_setf(err, FX_ESHAPE,
                               "%s: all xs must have the same size in the scanned dimension, got "
                               "%lld and %lld",
                               what, (long long)*n, (long long)len);
    }
    return FX_OK;
}

static const fx_ivalue *body_outputs(const fx_graph *body, int *n) {
    const fx_node *out = fx_graph_output_node(body);
    *n = 0;
    if (!out || out->args[0].tag != FX_IV_LIST) return NULL;
    *n = out->args[0].u.list.n;
    return out->args[0].u.list.items;
}

static const fx_tensor *body_output_tensor(const fx_graph *body, int k) {
    int n;
    const fx_ivalue *o = body_outputs(body, &n);
    return (k < n && o[k].tag == FX_IV_NODE) ? fx_node_tensor(o[k].u.node) : NULL;
}

/* sizes of `t` with `n` inserted at dim (dim in [0, ndim]). */
static int stacked_empty(const fx_tensor *t, int64_t n, int dim, fx_device dev, fx_tensor **out,
                         fx_err *err) {
    int nd = fx_tensor_ndim(t);
    if (nd + 1 > FX_MAX_DIMS) return fx_err_setf(err, FX_ESHAPE, "stacked output has too many dims");
    int64_t sizes[FX_MAX_DIMS];
    for (int d = 0, k = 0; d <= nd; d++) sizes[d] = d == dim ? n : fx_tensor_size(t, k++);
    return fx_tensor_empty(nd + 1, sizes, fx_tensor_dtype(t), dev, out, err);
}

/* Gives meta tensor t (contiguous, with the concrete sizes) the symbolic sizes of `like` with
 * `n` inserted at dim (dim < 0: nothing inserted), when any of them is symbolic: a higher-order
 * op's output keeps the operands' symbols in a dynamic export. */
static int sym_like(fx_tensor *t, const fx_tensor *like, fx_symint n, int dim, fx_err *err) {
    int nd = fx_tensor_ndim(like);
    bool any = dim >= 0 && fx_si_is_sym(n);
    for (int d = 0; d < nd && !any; d++) any = fx_si_is_sym(fx_tensor_sym_size(like, d));
    if (!any) return FX_OK;
    fx_symint sizes[FX_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if (d == dim) sizes[k++] = n;
        sizes[k++] = fx_tensor_sym_size(like, d);
    }
    if (dim >= nd) sizes[k++] = n;
    return fx_tensor_set_sym(t, sizes, NULL, FX_SI(0), err);
}

static int meta_like(const fx_tensor *t, fx_ivalue *out, fx_err *err) {
    fx_tensor *m;
    int rc = fx_tensor_empty(fx_tensor_ndim(t), fx_tensor_sizes(t), fx_tensor_dtype(t), FX_DEVICE_META, &m, err);
    if (!rc) rc = sym_like(m, t, FX_SI(0), -1, err);
    if (!rc) *out = fx_iv_tensor_steal(m);
    else fx_tensor_release(m);
    return rc;
}

static bool same_meta(const fx_tensor *a, const fx_tensor *b) {
    if (fx_tensor_dtype(a) != fx_tensor_dtype(b) || fx_tensor_ndim(a) != fx_tensor_ndim(b)) return false;
    for (int d = 0; d < fx_tensor_ndim(a); d++)
        if (fx_tensor_size(a, d) != fx_tensor_size(b, d)) return false;
    return true;
}

static void clear_outs(fx_ivalue *outs, int n) {
    for (int j = 0; j < n; j++) fx_ivalue_clear(&outs[j]);
}

/* ---- metadata ------------------------------------------------------------------------------ */

static int scan_meta(fx_graph *body, const fx_ivalue *ops, fx_ivalue *outs, int *nouts, fx_err *err) {
    const fx_ivalue *init = &ops[0], *xs = &ops[1];
    int64_t n;
    fx_symint nsym;
    int wdim, nbody, rc = scan_length_sym("scan", xs, ops[2].u.i, &n, &nsym, &wdim, err);
    if (rc) return rc;
    body_outputs(body, &nbody);
    int ninit = list_len(init);
    if (nbody < ninit || nbody > FX_HOP_MAX_OUTS)
        return fx_err_setf(err, FX_ESHAPE,
                           "scan: combine_fn must return the %d carries followed by the outputs, "
                           "but it returned %d values",
                           ninit, nbody);
    for (int k = 0; k < nbody; k++) {
        const fx_tensor *v = body_output_tensor(body, k);
        if (!v) {
            clear_outs(outs, k);
            return fx_err_setf(err, FX_EARG, "scan: combine_fn output %d is not a tensor", k);
        }
        if (k < ninit) {
            rc = meta_like(init->u.list.items[k].u.t, &outs[k], err);
        } else {
            fx_tensor *t;
            int sd = wdim <= fx_tensor_ndim(v) ? wdim : fx_tensor_ndim(v);
            rc = stacked_empty(v, n, sd, FX_DEVICE_META, &t, err);
            if (!rc && (rc = sym_like(t, v, nsym, sd, err))) fx_tensor_release(t);
            if (!rc) outs[k] = fx_iv_tensor_steal(t);
        }
        if (rc) {
            clear_outs(outs, k);
            return rc;
        }
    }
    *nouts = nbody;
    return FX_OK;
}

static int cond_meta(fx_graph *tb, fx_graph *fb, fx_ivalue *outs, int *nouts, fx_err *err) {
    int nt, nf;
    body_outputs(tb, &nt);
    body_outputs(fb, &nf);
    if (nt != nf || nt > FX_HOP_MAX_OUTS)
        return fx_err_setf(err, FX_ESHAPE,
                           "cond: true_fn and false_fn must return the same number of outputs, got "
                           "%d and %d",
                           nt, nf);
    for (int k = 0; k < nt; k++) {
        const fx_tensor *a = body_output_tensor(tb, k), *b = body_output_tensor(fb, k);
        int rc = (!a || !b) ? fx_err_setf(err, FX_EARG, "cond: output %d of a branch is not a tensor", k)
                 : !same_meta(a, b)
                     ? fx_err_setf(err, FX_ESHAPE,
                                   "cond: Expected each tensor to have same metadata but got: output "
                                   "%d is %s in true_fn and %s in false_fn (shapes or dtypes differ)",
                                   k, fx_dtype_name(fx_tensor_dtype(a)), fx_dtype_name(fx_tensor_dtype(b)))
                     : meta_like(a, &outs[k], err);
        if (rc) {
            clear_outs(outs, k);
            return rc;
        }
    }
    *nouts = nt;
    return FX_OK;
}

static int map_meta(fx_graph *body, const fx_ivalue *ops, fx_ivalue *outs, int *nouts, fx_err *err) {
    int64_t n;
    fx_symint nsym;
    int wdim, nb, rc = scan_length_sym("map", &ops[0], 0, &n, &nsym, &wdim, err);
    if (rc) return rc;
    body_outputs(body, &nb);
    if (nb > FX_HOP_MAX_OUTS) return fx_err_setf(err, FX_ESHAPE, "map: too many outputs");
    for (int k = 0; k < nb; k++) {
        const fx_tensor *v = body_output_tensor(body, k);
        fx_tensor *t = NULL;
        rc = v ? stacked_empty(v, n, 0, FX_DEVICE_META, &t, err)
               : fx_err_setf(err, FX_EARG, "map: body output %d is not a tensor", k);
        if (!rc && (rc = sym_like(t, v, nsym, 0, err))) fx_tensor_release(t);
        if (rc) {
            clear_outs(outs, k);
            return rc;
        }
        outs[k] = fx_iv_tensor_steal(t);
    }
    *nouts = nb;
    return FX_OK;
}

int fx_hop_meta(const char *target, fx_graph *const *bodies, const fx_ivalue *ops, int nops,
                fx_ivalue *outs, int *nouts, fx_err *err) {
    if (!strcmp(target, "higher_order.scan") && nops == 5) return scan_meta(bodies[0], ops, outs, nouts, err);
    if (!strcmp(target, "higher_order.cond") && nops == 2) return cond_meta(bodies[0], bodies[1], outs, nouts, err);
    if (!strcmp(target, "higher_order.map_impl") && nops == 2) return map_meta(bodies[0], ops, outs, nouts, err);
    return fx_err_setf(err, FX_ENOTIMPL, "%s is not supported by fxdb yet", target);
}

/* ---- execution ----------------------------------------------------------------------------- */

static int select_at(fx_ctx *ctx, fx_tensor *t, int dim, int64_t i, fx_ivalue *out, fx_err *err) {
    fx_ivalue a = fx_iv_tensor(t), d = fx_iv_int(dim), idx = fx_iv_int(i);
    int rc = fx_call(ctx, FX_OP_SELECT_INT, out, err, 3, &a, &d, &idx);
    fx_ivalue_clear(&a);
    return rc;
}

/* Writes y into slot[dim = sd, index i], allocating slot (n along sd) on first use. */
static int stack_into(fx_ctx *ctx, fx_ivalue *slot, const fx_tensor *y, int64_t n, int sd, int64_t i,
                      fx_err *err) {
    if (slot->tag != FX_IV_TENSOR) {
        fx_tensor *st;
        int rc = stacked_empty(y, n, sd, FX_DEVICE_CPU, &st, err);
        if (rc) return rc;
        fx_ivalue_clear(slot);
        *slot = fx_iv_tensor_steal(st);
    }
    fx_ivalue view, r, yv = fx_iv_tensor((fx_tensor *)y);
    int rc = select_at(ctx, slot->u.t, sd, i, &view, err);
    if (!rc) rc = fx_call(ctx, FX_OP_COPY_, &r, err, 2, &view, &yv);
    if (!rc) fx_ivalue_clear(&r);
    fx_ivalue_clear(&view);
    fx_ivalue_clear(&yv);
    return rc;
}

/* scan and map_impl: a loop over slices; `carries` leading body outputs are fed back. */
static int loop_eval(const char *what, fx_graph *body, const fx_ivalue *init, const fx_ivalue *xs,
                     int64_t dim, bool reverse, const fx_ivalue *extra, fx_graph_runner run,
                     fx_ivalue *out, fx_err *err) {
    int64_t n;
    int wdim, nbody;
    int rc = scan_length(what, xs, dim, &n, &wdim, err);
    if (rc) return rc;
    int ninit = list_len(init), nx = list_len(xs), nextra = list_len(extra);
    body_outputs(body, &nbody);
    if (nbody < ninit)
        return fx_err_setf(err, FX_ESHAPE, "%s: the body returned %d values for %d carries", what, nbody, ninit);
    int ny = nbody - ninit, nin = ninit + nx + nextra;
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    eager.no_grad = true;
    fx_ivalue res, step_in;
    if ((rc = fx_iv_list(nbody, &res, err))) return rc;
    if ((rc = fx_iv_list(nin, &step_in, err))) {
        fx_ivalue_clear(&res);
        return rc;
    }
    for (int k = 0; k < ninit && !rc; k++) rc = fx_ivalue_copy(&step_in.u.list.items[k], &init->u.list.items[k], err);
    for (int k = 0; k < nextra && !rc; k++)
        rc = fx_ivalue_copy(&step_in.u.list.items[ninit + nx + k], &extra->u.list.items[k], err);
    for (int64_t t = 0; t < n && !rc; t++) {
        int64_t i = reverse ? n - 1 - t : t;
        for (int k = 0; k < nx && !rc; k++) {
            fx_ivalue_clear(&step_in.u.list.items[ninit + k]);
            rc = select_at(&eager, xs->u.list.items[k].u.t, wdim, i, &step_in.u.list.items[ninit + k], err);
        }
        fx_ivalue step_out = {0};
        if (!rc) rc = run(body, step_in.u.list.items, nin, NULL, &step_out, err);
        for (int k = 0; k < ninit && !rc; k++) { /* next carry */
            fx_ivalue_clear(&step_in.u.list.items[k]);
            rc = fx_ivalue_copy(&step_in.u.list.items[k], &step_out.u.list.items[k], err);
        }
        for (int k = 0; k < ny && !rc; k++) {
            const fx_ivalue *y = &step_out.u.list.items[ninit + k];
            if (y->tag != FX_IV_TENSOR) {
                rc = fx_err_setf(err, FX_EARG, "%s: body output %d is not a tensor", what, ninit + k);
                break;
            }
            int sd = wdim <= fx_tensor_ndim(y->u.t) ? wdim : fx_tensor_ndim(y->u.t);
            rc = stack_into(&eager, &res.u.list.items[ninit + k], y->u.t, n, sd, i, err);
        }
        fx_ivalue_clear(&step_out);
    }
    /* no step ran (xs empty along dim): each y is empty along dim, shaped as the body's output
     * (its traced value), as PyTorch's scan returns for empty xs */
    for (int k = 0; n == 0 && k < ny && !rc; k++) {
        const fx_tensor *v = body_output_tensor(body, ninit + k);
        if (!v) {
            rc = fx_err_setf(err, FX_EARG, "%s: body output %d is not a tensor", what, ninit + k);
            break;
        }
        fx_tensor *t;
        int sd = wdim <= fx_tensor_ndim(v) ? wdim : fx_tensor_ndim(v);
        rc = stacked_empty(v, 0, sd, FX_DEVICE_CPU, &t, err);
        if (!rc) res.u.list.items[ninit + k] = fx_iv_tensor_steal(t);
    }
    for (int k = 0; k < ninit && !rc; k++) rc = fx_ivalue_copy(&res.u.list.items[k], &step_in.u.list.items[k], err);
    fx_ivalue_clear(&step_in);
    if (rc) fx_ivalue_clear(&res);
    else *out = res;
    return rc;
}

static int cond_eval(fx_graph *tb, fx_graph *fb, const fx_ivalue *ops, fx_graph_runner run,
                     fx_ivalue *out, fx_err *err) {
    const fx_ivalue *pred = &ops[0];
    bool take;
    if (pred->tag == FX_IV_BOOL) take = pred->u.b;
    else if (pred->tag == FX_IV_TENSOR && fx_tensor_numel(pred->u.t) == 1 && !fx_tensor_is_meta(pred->u.t))
        take = fx_tensor_flat_f64(pred->u.t, 0) != 0;
    else
        return fx_err_setf(err, FX_EARG,
                           "cond: the predicate must be a boolean or a tensor with one element");
    const fx_ivalue *o = &ops[1];
    return run(take ? tb : fb, o->u.list.items, list_len(o), NULL, out, err);
}

int fx_hop_eval(const char *target, fx_graph *const *bodies, const fx_ivalue *ops, int nops,
                fx_graph_runner run, fx_ivalue *out, fx_err *err) {
    if (!strcmp(target, "higher_order.scan") && nops == 5)
        return loop_eval("scan", bodies[0], &ops[0], &ops[1], ops[2].u.i, ops[3].u.b, &ops[4], run,
                         out, err);
    if (!strcmp(target, "higher_order.cond") && nops == 2)
        return cond_eval(bodies[0], bodies[1], ops, run, out, err);
    if (!strcmp(target, "higher_order.map_impl") && nops == 2)
        return loop_eval("map", bodies[0], NULL, &ops[0], 0, false, &ops[1], run, out, err);
    return fx_err_setf(err, FX_ENOTIMPL, "%s is not supported by fxdb yet", target);
}

const fx_opdef *fx_hop_wrapped_op(const fx_node *n, int *first) {
    if (!n || n->op != FX_NODE_CALL_FUNCTION || n->aten || !n->target) return NULL;
    bool v2 = !strcmp(n->target, FX_HOP_AUTO_FUNCTIONALIZED_V2);
    int k = !strcmp(n->target, FX_HOP_AUTO_FUNCTIONALIZED) || v2 ? 0 : !strcmp(n->target, FX_HOP_WITH_EFFECTS) ? 1 : -1;
    if (k < 0 || n->nargs <= k || n->args[k].tag != FX_IV_STR) return NULL;
    if (v2 && (n->nargs < 2 || n->args[1].tag != FX_IV_LIST || n->args[1].u.list.n != n->nargs - 2)) return NULL;
    *first = v2 ? 2 : k + 1;
    return fx_op_lookup(n->args[k].u.s);
}

int fx_hop_new_token(fx_device dev, fx_ivalue *out, fx_err *err) {
    int64_t zero = 0;
    fx_tensor *t;
    int rc = fx_tensor_empty(1, &zero, FX_DTYPE_F32, dev, &t, err);
    if (!rc) *out = fx_iv_tensor_steal(t);
    return rc;
}

/* with_effects: the op, then a fresh token before its returns (effects.py's with_effects_dense). */
static int with_effects_run(const fx_node *n, const fx_opdef *op, int first, const fx_ivalue *args,
                            fx_ivalue *out, fx_err *err) {
    const fx_schema *s = &op->schema;
    if (n->nargs - first != s->nargs)
        return fx_err_setf(err, FX_EARG, "%s: %s takes %d arguments, the node has %d", n->name,
                           op->target, s->nargs, n->nargs - first);
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    eager.no_grad = true;
    fx_ivalue outs[FX_SCHEMA_MAX_RETS] = {0}, res = {0};
    int rc = fx_dispatch(&eager, op, args + first, outs, err);
    if (rc) return rc;
    int no = s->nrets ? s->nrets : 1;
    rc = fx_iv_list(1 + no, &res, err);
    if (!rc) rc = fx_hop_new_token(FX_DEVICE_CPU, &res.u.list.items[0], err);
    for (int j = 0; j < s->nrets && !rc; j++) rc = fx_ivalue_copy(&res.u.list.items[1 + j], &outs[j], err);
    for (int j = 0; j < s->nrets; j++) fx_ivalue_clear(&outs[j]);
    if (rc) fx_ivalue_clear(&res);
    else *out = res;
    return rc;
}

/* auto_functionalized: the op on clones of its (a!) arguments; the result is its returns, then
 * the clones (torch/_higher_order_ops/auto_functionalize.py's auto_functionalized_dense). */
static int auto_functionalized_run(const fx_node *n, const fx_opdef *op, int first,
                                   const fx_ivalue *args, fx_ivalue *out, fx_err *err) {
    const fx_schema *s = &op->schema;
    int na = n->nargs - first;
    if (na != s->nargs)
        return fx_err_setf(err, FX_EARG, "%s: %s takes %d arguments, the node has %d", n->name,
                           op->target, s->nargs, na);
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    eager.no_grad = true;
    fx_ivalue a[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS] = {0}, res = {0};
    int rc = FX_OK, nmut = 0, mut[FX_SCHEMA_MAX_ARGS];
    for (int k = 0; k < na && !rc; k++) {
        if (s->args[k].alias_write) mut[nmut++] = k;
        if (s->args[k].alias_write && args[first + k].tag == FX_IV_TENSOR) {
            fx_tensor *c = NULL;
            rc = fx_call_t(&eager, FX_OP_CLONE, &c, err, 1, (fx_ivalue *)&args[first + k]);
            if (!rc) a[k] = fx_iv_tensor_steal(c);
        } else {
            rc = fx_ivalue_copy(&a[k], &args[first + k], err);
        }
    }
    bool ran = false;
    if (!rc) ran = !(rc = fx_dispatch(&eager, op, a, outs, err));
    int no = s->nrets ? s->nrets : 1; /* () returns: one None */
    if (!rc) rc = fx_iv_list(no + nmut, &res, err);
    for (int j = 0; j < s->nrets && !rc; j++) rc = fx_ivalue_copy(&res.u.list.items[j], &outs[j], err);
    for (int m = 0; m < nmut && !rc; m++) rc = fx_ivalue_copy(&res.u.list.items[no + m], &a[mut[m]], err);
    if (ran)
        for (int j = 0; j < s->nrets; j++) fx_ivalue_clear(&outs[j]);
    for (int k = 0; k < na; k++) fx_ivalue_clear(&a[k]);
    if (rc) fx_ivalue_clear(&res);
    else *out = res;
    return rc;
}

/* The value of keyword `name` of an auto_functionalized_v2 node (args resolved), or NULL. */
static const fx_ivalue *v2_arg(const fx_node *n, const fx_ivalue *args, const char *fmt, const char *arg) {
    char key[80];
    snprintf(key, sizeof key, fmt, arg);
    const fx_ivalue *names = &n->args[1];
    for (int k = 0; k < names->u.list.n; k++)
        if (names->u.list.items[k].tag == FX_IV_STR && !strcmp(names->u.list.items[k].u.s, key)) return &args[2 + k];
    return NULL;
}

/* auto_functionalized_v2: the bases cloned, each (a!) argument regenerated on its base's clone,
 * the op run; its returns then the clones (auto_functionalized_v2_dense). */
static int auto_functionalized_v2_run(const fx_node *n, const fx_opdef *op, const fx_ivalue *args,
                                      fx_ivalue *out, fx_err *err) {
    const fx_schema *s = &op->schema;
    const fx_ivalue *bases = v2_arg(n, args, "%s", "_all_bases");
    if (!bases || bases->tag != FX_IV_LIST)
        return fx_err_setf(err, FX_EARG, "%s: auto_functionalized_v2 without _all_bases", n->name);
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    eager.no_grad = true;
    int nb = bases->u.list.n, rc = FX_OK, no = s->nrets ? s->nrets : 1;
    fx_ivalue clones = {0}, a[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS] = {0}, res = {0};
    rc = fx_iv_list(nb, &clones, err);
    for (int j = 0; j < nb && !rc; j++) {
        fx_tensor *c = NULL;
        if (bases->u.list.items[j].tag != FX_IV_TENSOR) {
            rc = fx_err_setf(err, FX_EARG, "%s: base %d is not a tensor", n->name, j);
            break;
        }
        rc = fx_call_t(&eager, FX_OP_CLONE, &c, err, 1, (fx_ivalue *)&bases->u.list.items[j]);
        if (!rc) clones.u.list.items[j] = fx_iv_tensor_steal(c);
    }
    for (int k = 0; k < s->nargs && !rc; k++) {
        const char *name = s->args[k].name;
        if (!s->args[k].alias_write) {
            const fx_ivalue *v = v2_arg(n, args, "%s", name);
            if (v) rc = fx_ivalue_copy(&a[k], v, err);
            continue;
        }
        const fx_ivalue *bi = v2_arg(n, args, "_%s_base_index", name);
        if (!bi || bi->tag == FX_IV_NONE) {
            a[k] = fx_iv_none();
            continue;
        }
        if (bi->tag != FX_IV_INT || bi->u.i < 0 || bi->u.i >= nb) {
            rc = fx_err_setf(err, FX_EARG, "%s: bad _%s_base_index", n->name, name);
            break;
        }
        fx_ivalue *base = &clones.u.list.items[bi->u.i];
        const fx_ivalue *dim = v2_arg(n, args, "_%s_slice_dim", name), *size = v2_arg(n, args, "_%s_size", name);
        if (dim) {
            fx_ivalue st = *v2_arg(n, args, "_%s_slice_start", name), en = *v2_arg(n, args, "_%s_slice_end", name);
            rc = fx_call(&eager, FX_OP_SLICE_TENSOR, &a[k], err, 4, base, (fx_ivalue *)dim, &st, &en);
        } else if (size) {
            const fx_ivalue *stride = v2_arg(n, args, "_%s_stride", name),
                            *off = v2_arg(n, args, "_%s_storage_offset", name);
            rc = !stride || !off ? fx_err_setf(err, FX_EARG, "%s: incomplete view of %s", n->name, name)
                                 : fx_call(&eager, FX_OP_AS_STRIDED, &a[k], err, 4, base, (fx_ivalue *)size,
                                           (fx_ivalue *)stride, (fx_ivalue *)off);
        } else { /* the base itself, or an alias of it */
            rc = fx_ivalue_copy(&a[k], base, err);
        }
    }
    bool ran = false;
    if (!rc) ran = !(rc = fx_dispatch(&eager, op, a, outs, err));
    if (!rc) rc = fx_iv_list(no + nb, &res, err);
    for (int j = 0; j < s->nrets && !rc; j++) rc = fx_ivalue_copy(&res.u.list.items[j], &outs[j], err);
    for (int j = 0; j < nb && !rc; j++) rc = fx_ivalue_copy(&res.u.list.items[no + j], &clones.u.list.items[j], err);
    if (ran)
        for (int j = 0; j < s->nrets; j++) fx_ivalue_clear(&outs[j]);
    for (int k = 0; k < s->nargs; k++) fx_ivalue_clear(&a[k]);
    fx_ivalue_clear(&clones);
    if (rc) fx_ivalue_clear(&res);
    else *out = res;
    return rc;
}

int fx_hop_run(const fx_node *n, const fx_ivalue *args, fx_graph_runner run, fx_ivalue *out,
               fx_err *err) {
    int first;
    const fx_opdef *wrapped = fx_hop_wrapped_op(n, &first);
    bool wraps = !strcmp(n->target, FX_HOP_AUTO_FUNCTIONALIZED) || !strcmp(n->target, FX_HOP_AUTO_FUNCTIONALIZED_V2) ||
                 !strcmp(n->target, FX_HOP_WITH_EFFECTS);
    if (!wrapped && wraps) { /* its op is not registered in this process (a loaded program) */
        int k = !strcmp(n->target, FX_HOP_WITH_EFFECTS) ? 1 : 0;
        return fx_err_setf(err, FX_EARG, "%s: %s calls %s, which is not defined here: define it with "
                           "torch.library.define (and impl) before running the program", n->name, n->target,
                           n->nargs > k && n->args[k].tag == FX_IV_STR ? n->args[k].u.s : "an unknown op");
    }
    if (wrapped && !strcmp(n->target, FX_HOP_AUTO_FUNCTIONALIZED_V2))
        return auto_functionalized_v2_run(n, wrapped, args, out, err);
    if (wrapped && first == 2) return with_effects_run(n, wrapped, first, args, out, err);
    if (wrapped) return auto_functionalized_run(n, wrapped, first, args, out, err);
    int pos[4], nb = fx_hop_body_slots(n->target, pos);
    if (nb < 0) return fx_err_setf(err, FX_ENOTIMPL, "the interpreter cannot run %s yet", n->target);
    fx_graph *bodies[4];
    fx_ivalue ops[16];
    int nops = 0;
    for (int i = 0, b = 0; i < n->nargs && nops < 16; i++) {
        if (b < nb && pos[b] == i) {
            const fx_node *g = n->args[i].tag == FX_IV_NODE ? n->args[i].u.node : NULL;
            if (!g || !g->subgraph) return fx_err_setf(err, FX_EARG, "malformed %s node %s", n->target, n->name);
            bodies[b++] = g->subgraph;
        } else {
            ops[nops++] = args[i];
        }
    }
    return fx_hop_eval(n->target, bodies, ops, nops, run, out, err);
}
