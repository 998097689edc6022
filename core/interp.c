/* core/interp.c — graph interpreter on the CPU kernels.
 * Layer: core. Like torch.fx.Interpreter: values live in a per-node table; each value is
 * released right after its last use (unless keep_values), so peak memory stays near the live
 * set. Hooks run before and after each node for stepping and breakpoints. */
#include "core/interp.h"

#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"

struct fx_interp {
    const fx_graph *g;
    fx_interp_opts opts;
    fx_ctx eager;
    int n;              /* node count */
    fx_node **nodes;    /* (n,) in order */
    fx_ivalue *vals;    /* (n,) values (FX_IV_UNSET when not computed or freed) */
    int *last_use;      /* (n,) position of the last user, -1 if none */
    fx_ivalue *inputs;  /* (ninputs,) owned copies */
    int ninputs;
    int pc;             /* next position to run */
    int ph_seen;
    bool done;
    int64_t live_bytes, peak_bytes;
};

static int64_t value_bytes(const fx_ivalue *v) {
    if (v->tag == FX_IV_TENSOR && !fx_tensor_is_meta(v->u.t))
        return fx_tensor_numel(v->u.t) * (int64_t)fx_dtype_size(fx_tensor_dtype(v->u.t));
    int64_t s = 0;
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++) s += value_bytes(&v->u.list.items[i]);
    return s;
}

static void mark_uses(fx_interp *it, const fx_ivalue *v, int pos) {
    if (v->tag == FX_IV_NODE) it->last_use[v->u.node->tag] = pos;
    else if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++) mark_uses(it, &v->u.list.items[i], pos);
}

void fx_interp_free(fx_interp *it) {
    if (!it) return;
    for (int i = 0; i < it->n; i++) fx_ivalue_clear(&it->vals[i]);
    for (int i = 0; i < it->ninputs; i++) fx_ivalue_clear(&it->inputs[i]);
    fx_free(it->inputs);
    fx_free(it->vals);
    fx_free(it->nodes);
    fx_free(it->last_use);
    fx_free(it);
}

static int check_input(const fx_node *ph, const fx_ivalue *v, int index, fx_err *err) {
    const fx_tensor *want = fx_node_tensor(ph);
    if (!want) return FX_OK;
    if (v->tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "Expected input at *args[%d] (%s) to be a tensor", index,
                           ph->name);
    const fx_tensor *t = v->u.t;
    if (fx_tensor_dtype(t) != fx_tensor_dtype(want))
        return fx_err_setf(err, FX_EARG,
                           "Expected input at *args[%d] (%s) to have dtype %s, but got %s", index,
                           ph->name, fx_dtype_name(fx_tensor_dtype(want)),
                           fx_dtype_name(fx_tensor_dtype(t)));
    if (fx_tensor_ndim(t) != fx_tensor_ndim(want))
        return fx_err_setf(err, FX_EARG,
                           "Unexpected number of dimensions in input at *args[%d] (%s): expected "
                           "%d, but got %d",
                           index, ph->name, fx_tensor_ndim(want), fx_tensor_ndim(t));
    for (int d = 0; d < fx_tensor_ndim(t); d++)
        if (fx_tensor_size(t, d) != fx_tensor_size(want, d))
            return fx_err_setf(err, FX_EARG,
                               "Expected input at *args[%d].shape[%d] (%s) to be equal to %lld, "
                               "but got %lld",
                               index, d, ph->name, (long long)fx_tensor_size(want, d),
                               (long long)fx_tensor_size(t, d));
    return FX_OK;
}

int fx_interp_new(const fx_graph *g, const fx_ivalue *inputs, int ninputs,
                  const fx_interp_opts *opts, fx_interp **out, fx_err *err) {
    *out = NULL;
    fx_interp *it = fx_calloc(1, sizeof *it);
    if (!it) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    it->g = g;
    if (opts) it->opts = *opts;
    fx_ctx_init(&it->eager, FX_MODE_EAGER);
    it->eager.no_grad = true; /* running an exported graph is inference: no autograd checks */
    it->n = fx_graph_count(g);
    it->nodes = fx_calloc((size_t)it->n + 1, sizeof *it->nodes);
    it->vals = fx_calloc((size_t)it->n + 1, sizeof *it->vals);
    it->last_use = fx_calloc((size_t)it->n + 1, sizeof *it->last_use);
    it->inputs = fx_calloc((size_t)ninputs + 1, sizeof *it->inputs);
    if (!it->nodes || !it->vals || !it->last_use || !it->inputs) {
        fx_interp_free(it);
        return fx_err_setf(err, FX_ENOMEM, "out of memory");
    }
    int i = 0, nph = 0;
    for (fx_node *n = fx_graph_first(g); n; n = n->next, i++) {
        n->tag = i;
        it->nodes[i] = n;
        it->last_use[i] = -1;
        if (n->op == FX_NODE_PLACEHOLDER) nph++;
    }
    for (i = 0; i < it->n; i++)
        for (int a = 0; a < it->nodes[i]->nargs; a++) mark_uses(it, &it->nodes[i]->args[a], i);
    if (ninputs != nph) {
        fx_interp_free(it);
        return fx_err_setf(err, FX_EARG, "the graph takes %d inputs but %d were given", nph, ninputs);
    }
    int k = 0;
    for (i = 0; i < it->n; i++) {
        if (it->nodes[i]->op != FX_NODE_PLACEHOLDER) continue;
        int rc = check_input(it->nodes[i], &inputs[k], k, err);
        if (!rc) rc = fx_ivalue_copy(&it->inputs[k], &inputs[k], err);
        if (rc) {
            fx_interp_free(it);
            return rc;
        }
        it->ninputs = ++k;
    }
    *out = it;
    return FX_OK;
}

/* Node refs -> values (borrowed tensors retained into the copy). */
static int resolve(fx_interp *it, const fx_ivalue *v, fx_ivalue *out, fx_err *err) {
    if (v->tag == FX_IV_NODE) {
        const fx_ivalue *x = &it->vals[v->u.node->tag];
        if (x->tag == FX_IV_UNSET)
            return fx_err_setf(err, FX_EINTERNAL, "value of %%%s is not available", v->u.node->name);
        return fx_ivalue_copy(out, x, err);
    }
    if (v->tag == FX_IV_LIST) {
        int rc = fx_iv_list(v->u.list.n, out, err);
        for (int i = 0; !rc && i < v->u.list.n; i++) rc = resolve(it, &v->u.list.items[i], &out->u.list.items[i], err);
        if (rc) fx_ivalue_clear(out);
        return rc;
    }
    return fx_ivalue_copy(out, v, err);
}

static int run_node(fx_interp *it, fx_node *n, fx_ivalue *res, fx_err *err) {
    switch (n->op) {
    case FX_NODE_PLACEHOLDER:
        return fx_ivalue_copy(res, &it->inputs[it->ph_seen++], err);
    case FX_NODE_GET_ATTR: {
        if (n->subgraph) {
            *res = fx_iv_none();
            return FX_OK;
        }
        if (!it->opts.attr)
            return fx_err_setf(err, FX_EARG, "get_attr %s: no attribute resolver", n->target);
        fx_tensor *t = NULL;
        int rc = it->opts.attr(it->opts.attr_ud, n->target, &t, err);
        if (!rc) *res = fx_iv_tensor(t);
        return rc;
    }
    case FX_NODE_OUTPUT: return resolve(it, &n->args[0], res, err);
    case FX_NODE_CALL_FUNCTION: break;
    }
    if (!n->aten) {
        if (!strcmp(n->target, "getitem")) {
            fx_ivalue src;
            int rc = resolve(it, &n->args[0], &src, err);
            if (rc) return rc;
            int64_t i = n->args[1].u.i;
            if (src.tag != FX_IV_LIST || i < 0 || i >= src.u.list.n) rc = fx_err_setf(err, FX_EINDEX, "getitem index out of range");
            else rc = fx_ivalue_copy(res, &src.u.list.items[i], err);
            fx_ivalue_clear(&src);
            return rc;
        }
        return fx_err_setf(err, FX_ENOTIMPL, "the interpreter cannot run %s yet", n->target);
    }
    const fx_schema *s = &n->aten->schema;
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS];
    int made = 0, rc = FX_OK;
    for (; made < n->nargs && !rc; made++) rc = resolve(it, &n->args[made], &args[made], err);
    if (!rc) rc = fx_dispatch(&it->eager, n->aten, args, outs, err);
    for (int i = 0; i < made; i++) fx_ivalue_clear(&args[i]);
    if (rc) return rc;
    if (s->nrets == 1) {
        *res = outs[0];
        return FX_OK;
    }
    rc = fx_iv_list(s->nrets, res, err);
    for (int i = 0; i < s->nrets; i++) {
        if (!rc) res->u.list.items[i] = outs[i];
        else fx_ivalue_clear(&outs[i]);
    }
    return rc;
}

static void release_dead(fx_interp *it, const fx_ivalue *v, int pos) {
    if (v->tag == FX_IV_NODE) {
        int d = v->u.node->tag;
        if (it->last_use[d] == pos && it->vals[d].tag != FX_IV_UNSET) {
            it->live_bytes -= value_bytes(&it->vals[d]);
            fx_ivalue_clear(&it->vals[d]);
        }
    } else if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) release_dead(it, &v->u.list.items[i], pos);
    }
}

int fx_interp_step(fx_interp *it, bool *done, fx_err *err) {
    *done = it->done;
    if (it->done) return FX_OK;
    fx_node *n = it->nodes[it->pc];
    int rc = FX_OK;
    fx_debug_break(n);
    if (it->opts.hook && (rc = it->opts.hook(it->opts.hook_ud, it, n, false, err))) return rc;
    fx_ivalue res = {0};
    if ((rc = run_node(it, n, &res, err))) {
        if (!err->node[0]) snprintf(err->node, sizeof err->node, "%s", n->name);
        return rc;
    }
    fx_ivalue_clear(&it->vals[it->pc]);
    it->vals[it->pc] = res;
    it->live_bytes += value_bytes(&res);
    if (it->live_bytes > it->peak_bytes) it->peak_bytes = it->live_bytes;
    if (!it->opts.keep_values && n->op != FX_NODE_OUTPUT) {
        for (int a = 0; a < n->nargs; a++) release_dead(it, &n->args[a], it->pc);
        if (n->nusers == 0 && it->last_use[it->pc] < 0) {
            it->live_bytes -= value_bytes(&it->vals[it->pc]);
            fx_ivalue_clear(&it->vals[it->pc]);
        }
    }
    if (it->opts.hook && (rc = it->opts.hook(it->opts.hook_ud, it, n, true, err))) {
        it->pc++;
        return rc;
    }
    it->pc++;
    if (n->op == FX_NODE_OUTPUT || it->pc >= it->n) it->done = true;
    *done = it->done;
    return FX_OK;
}

int fx_interp_run(fx_interp *it, fx_err *err) {
    bool done = false;
    while (!done) {
        int rc = fx_interp_step(it, &done, err);
        if (rc) return rc;
    }
    return FX_OK;
}

fx_node *fx_interp_next_node(const fx_interp *it) { return it->done ? NULL : it->nodes[it->pc]; }

const fx_ivalue *fx_interp_value(const fx_interp *it, const fx_node *n) {
    if (n->graph != it->g || n->tag < 0 || n->tag >= it->n || it->nodes[n->tag] != n) return NULL;
    const fx_ivalue *v = &it->vals[n->tag];
    return v->tag == FX_IV_UNSET ? NULL : v;
}

int fx_interp_set_value(fx_interp *it, const fx_node *n, const fx_ivalue *v, fx_err *err) {
    if (n->graph != it->g || it->nodes[n->tag] != n)
        return fx_err_setf(err, FX_EARG, "%%%s is not a node of the running graph", n->name);
    fx_ivalue c;
    int rc = fx_ivalue_copy(&c, v, err);
    if (rc) return rc;
    fx_ivalue_clear(&it->vals[n->tag]);
    it->vals[n->tag] = c;
    return FX_OK;
}

const fx_ivalue *fx_interp_outputs(const fx_interp *it, int *n) {
    *n = 0;
    if (!it->done) return NULL;
    for (int i = it->n - 1; i >= 0; i--)
        if (it->nodes[i]->op == FX_NODE_OUTPUT) {
            const fx_ivalue *v = &it->vals[i];
            if (v->tag == FX_IV_LIST) {
                *n = v->u.list.n;
                return v->u.list.items;
            }
            *n = 1;
            return v;
        }
    return NULL;
}

int64_t fx_interp_peak_bytes(const fx_interp *it) { return it->peak_bytes; }

int fx_graph_run(const fx_graph *g, const fx_ivalue *inputs, int ninputs,
                 const fx_interp_opts *opts, fx_ivalue *out, fx_err *err) {
    fx_interp *it;
    int rc = fx_interp_new(g, inputs, ninputs, opts, &it, err);
    if (rc) return rc;
    rc = fx_interp_run(it, err);
    if (!rc) {
        int n;
        const fx_ivalue *o = fx_interp_outputs(it, &n);
        rc = fx_iv_list(n, out, err);
        for (int i = 0; !rc && i < n; i++) rc = fx_ivalue_copy(&out->u.list.items[i], &o[i], err);
    }
    fx_interp_free(it);
    return rc;
}
