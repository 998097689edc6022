/* core/interp.c — graph interpreter on the CPU kernels, with an execution plan and a memory pool.
 * Layer: core. Like torch.fx.Interpreter: values live in a per-node table; each value is
 * released right after its last use (unless keep_values), so peak memory stays near the live
 * set. Hooks run before and after each node for stepping and breakpoints.
 *
 * The plan (built once per interpreter, kept across fx_interp_reset, so a module that runs the same
 * graph every step plans once; a program with symbolic sizes gets one per set of symbol values,
 * see select_plan): unless keep_values or opts.naive is set, every call_function node is given
 * one of these ways to run —
 *   DIRECT   a functional op with one tensor result and a kernel: its output tensor is made once,
 *            at plan time, from the node's meta["val"] (sizes, strides, dtype) inside a pool
 *            buffer, and each run calls the kernel on it directly — no argument copies, no meta
 *            function (after the first run, whose meta call must agree with the val), no
 *            allocation. Pool buffers are shared by outputs of the same dtype and
 *            byte size whose lifetimes do not overlap (a value's lifetime runs from its node to
 *            the last use of any view or in-place result of it), so elementwise chains keep
 *            landing in the same few cache-hot buffers.
 *   INPLACE  an in-place op with a kernel: the kernel writes into the mutated argument, which is
 *            also the result; copy_(x, y) where y already is x's memory (a write-back made
 *            redundant by reinplacing) does nothing.
 *   VIEW     a view op: dispatched on the first run; later runs reuse that view while its input is
 *            the same tensor object (planned outputs and module attributes are).
 *   GENERIC  everything else (list arguments, several results, composites, getitem, values that
 *            leave the graph as outputs, which must be fresh tensors the caller may keep): resolve
 *            the arguments and fx_dispatch, as torch.fx.Interpreter.run_node does.
 * Values in the table are owned (GENERIC and outputs) or borrowed from the plan (DIRECT) or from
 * the inputs (placeholders); `owned` tells which. A run that meets a meta tensor as input or
 * attribute runs every node through GENERIC, so meta programs keep producing meta values. */
#include "core/interp.h"

#include <stdio.h>
#include <string.h>

#include "core/export.h"
#include "core/fx_alloc.h"
#include "core/hop.h"

typedef enum ex_kind { EX_GENERIC = 0, EX_DIRECT, EX_INPLACE, EX_VIEW } ex_kind;

/* One call_function node's plan. */
typedef struct ex_node {
    ex_kind kind;
    const fx_opdef *op;
    fx_ivalue *consts; /* (nargs,) normalized constant arguments, UNSET where slot >= 0; owned */
    int *slot;         /* (nargs,) position of the node an argument refers to, or -1 */
    int **lslot;       /* (nargs,) for a list argument holding node refs (cat's tensors): the
                          position per item or -1, else NULL; the list in consts[k] gets those
                          items borrowed for each call and reset to UNSET after it */
    int nargs;
    fx_tensor *out;      /* DIRECT: the planned output (a view of a pool buffer); one reference */
    int buf;             /* DIRECT: pool buffer index */
    fx_tensor *view_in;  /* VIEW: the input of the cached view (one reference), or NULL */
    fx_tensor *view_out; /* VIEW: the cached view (one reference), or NULL */
    bool checked;        /* DIRECT: the meta function agreed with the planned output once;
                            INPLACE: it accepted the arguments once */
} ex_node;

/* Symbol values bound by the inputs of one call (the placeholders' symbolic sizes). */
typedef struct sym_binding {
    const fx_sym *sym[64];
    int64_t val[64];
    int n;
} sym_binding;

/* A pool buffer: contiguous storage of one dtype, shared by DIRECT outputs. */
typedef struct ex_buf {
    fx_tensor *t; /* 1-d, `elems` elements; one reference */
    fx_dtype dtype;
    int64_t elems;
    int end; /* position of the last read of the value that holds it now */
} ex_buf;

/* A plan of a program with symbolic sizes, made for one set of symbol values (its key). */
#define PLAN_CACHE 4
typedef struct ex_plan {
    ex_node *plan;
    ex_buf *bufs;
    int nbufs;
    int64_t key[64];
    int nkey;
    fx_interp_stats stats; /* the plan's counts (nodes, direct, ..., planned_bytes) */
} ex_plan;

struct fx_interp {
    const fx_graph *g;
    fx_interp_opts opts;
    fx_ctx eager;
    int n;                /* node count */
    fx_node **nodes;      /* (n,) in order */
    fx_ivalue *vals;      /* (n,) values (FX_IV_UNSET when not computed or freed) */
    unsigned char *owned; /* (n,) 1 when vals[i] holds references of its own */
    int *last_use;        /* (n,) position of the last user, -1 if none */
    fx_ivalue *inputs;    /* (ninputs,) owned copies */
    int ninputs;
    int pc; /* next position to run */
    int ph_seen;
    bool done;
    bool meta_run; /* this run met a meta tensor: every node runs GENERIC */
    int64_t live_bytes, peak_bytes;
    ex_node *plan; /* (n,) or NULL when not planned (keep_values / naive) */
    ex_buf *bufs;  /* (nbufs,) pool */
    int nbufs;
    fx_interp_stats stats;
    /* symbolic sizes: the symbols this call's inputs bound, and the plans made so far, one per
     * set of symbol values, most recently used first (cache[0] is plan / bufs above) */
    bool symbolic;
    sym_binding bind;
    ex_plan cache[PLAN_CACHE];
    int ncache;
    int64_t seen[2 * PLAN_CACHE][64]; /* symbol values of recent unplanned calls (a ring) */
    int nseen[2 * PLAN_CACHE], seen_next;
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
    if (v->tag == FX_IV_NODE)
        it->last_use[v->u.node->tag] = pos;
    else if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++) mark_uses(it, &v->u.list.items[i], pos);
}

/* Drops value i (releasing it when owned). */
static void drop_value(fx_interp *it, int i) {
    if (it->owned[i])
        fx_ivalue_clear(&it->vals[i]);
    else
        it->vals[i].tag = FX_IV_UNSET;
    it->owned[i] = 0;
}

static void clear_values(fx_interp *it) {
    for (int i = 0; i < it->n; i++) drop_value(it, i);
    for (int i = 0; i < it->ninputs; i++) fx_ivalue_clear(&it->inputs[i]);
    it->ninputs = 0;
}

static void free_plan_parts(int n, ex_node *plan, ex_buf *bufs, int nbufs) {
    if (plan) {
        for (int i = 0; i < n; i++) {
            ex_node *e = &plan[i];
            for (int k = 0; k < e->nargs; k++) {
                fx_ivalue_clear(&e->consts[k]);
                if (e->lslot) fx_free(e->lslot[k]);
            }
            fx_free(e->consts);
            fx_free(e->slot);
            fx_free(e->lslot);
            fx_tensor_release(e->out);
            fx_tensor_release(e->view_in);
            fx_tensor_release(e->view_out);
        }
        fx_free(plan);
    }
    for (int b = 0; b < nbufs; b++) fx_tensor_release(bufs[b].t);
    fx_free(bufs);
}

/* Frees the plan (for a symbolic program, every cached one: the current plan is one of them). */
static void free_plan(fx_interp *it) {
    if (it->ncache > 0) {
        for (int c = 0; c < it->ncache; c++)
            free_plan_parts(it->n, it->cache[c].plan, it->cache[c].bufs, it->cache[c].nbufs);
        it->ncache = 0;
    } else {
        free_plan_parts(it->n, it->plan, it->bufs, it->nbufs);
    }
    it->plan = NULL;
    it->bufs = NULL;
    it->nbufs = 0;
}

void fx_interp_free(fx_interp *it) {
    if (!it) return;
    if (it->vals && it->owned) clear_values(it);
    free_plan(it);
    fx_free(it->inputs);
    fx_free(it->vals);
    fx_free(it->owned);
    fx_free(it->nodes);
    fx_free(it->last_use);
    fx_free(it);
}

static int bound_value(void *ud, const fx_sym *s, int64_t *v, fx_err *err) {
    const sym_binding *b = ud;
    for (int i = 0; i < b->n; i++)
        if (b->sym[i] == s) {
            *v = b->val[i];
            return FX_OK;
        }
    char name[32];
    return fx_err_setf(err, FX_EARG, "no input gives a value to %s", fx_sym_str(s, name, 32));
}

/* torch/_export/utils.py _check_input_constraints_for_graph: a symbolic size binds its symbol
 * (checked against the symbol's range), a size already bound must agree, a size that is an
 * expression of bound symbols must equal its value. `pass` 0 binds symbols, 1 checks the rest. */
static int check_sym_dim(const fx_node *ph, int d, fx_symint want, int64_t got, sym_binding *b,
                         int pass, fx_err *err) {
    fx_shape_env *env = fx_sym_env(want.expr);
    const fx_sym *e = fx_shape_env_simplify(env, want.expr);
    if (fx_sym_kind_of(e) == FX_SYM_CONST) {
        int64_t c = fx_sym_const_value(e);
        if (pass == 0 && got != c)
            return fx_err_setf(err, FX_EARG,
                               "Expected input at %s.shape[%d] to be equal to %lld, but got %lld",
                               ph->name, d, (long long)c, (long long)got);
        return FX_OK;
    }
    if (fx_sym_kind_of(e) == FX_SYM_SYMBOL) {
        if (pass != 0) return FX_OK;
        for (int i = 0; i < b->n; i++)
            if (b->sym[i] == e) {
                if (b->val[i] != got)
                    return fx_err_setf(err, FX_EARG,
                                       "Expected input at %s.shape[%d] to be equal to %lld, but "
                                       "got %lld",
                                       ph->name, d, (long long)b->val[i], (long long)got);
                return FX_OK;
            }
        const fx_symbol_info *info = fx_shape_env_symbol(env, e);
        fx_vr r = info ? fx_symbol_constraint_range(info) : (fx_vr){0, FX_INT_OO};
        if (got < r.lo)
            return fx_err_setf(err, FX_EARG,
                               "Expected input at %s.shape[%d] to be >= %lld, but got %lld",
                               ph->name, d, (long long)r.lo, (long long)got);
        if (got > r.hi)
            return fx_err_setf(err, FX_EARG,
                               "Expected input at %s.shape[%d] to be <= %lld, but got %lld",
                               ph->name, d, (long long)r.hi, (long long)got);
        if (b->n == 64) return fx_err_setf(err, FX_ENOTIMPL, "too many symbolic sizes");
        b->sym[b->n] = e;
        b->val[b->n++] = got;
        return FX_OK;
    }
    if (pass != 1) return FX_OK;
    int64_t v;
    int rc = fx_sym_eval(e, bound_value, b, &v, err);
    if (rc) return rc;
    if (v != got) {
        char buf[96];
        return fx_err_setf(
            err, FX_EARG, "Expected input at %s.shape[%d] to be equal to %lld (%s), but got %lld",
            ph->name, d, (long long)v, fx_sym_str(e, buf, sizeof buf), (long long)got);
    }
    return FX_OK;
}

static void note_unbound(void *ud, const fx_sym *s) {
    const sym_binding *b = ((const void *const *)ud)[0];
    bool *all = ((void *const *)ud)[1];
    for (int i = 0; i < b->n; i++)
        if (b->sym[i] == s) return;
    *all = false;
}

/* Every guard the trace recorded must hold for the sizes of this call: the range checks cover
 * those that narrowed a symbol, the equalities those that replaced one, and this the others
 * (Eq(s0*s1, 16) of a reshape, Ne(Mod(s0, 2), 0) of a branch), which torch.export defers to
 * runtime asserts. A guard over a symbol no input gives (an unbacked one) is left to the graph. */
static int check_guards(const sym_binding *b, fx_err *err) {
    if (b->n == 0) return FX_OK;
    fx_shape_env *env = fx_sym_env(b->sym[0]);
    int n;
    const fx_guard *g = fx_shape_env_guards(env, &n);
    for (int i = 0; i < n; i++) {
        const fx_sym *e = fx_shape_env_simplify(env, g[i].expr);
        if (fx_sym_is_constant(e)) continue;
        bool all = true;
        const void *ud[2] = {b, &all};
        fx_sym_foreach_symbol(e, note_unbound, (void *)ud);
        if (!all) continue;
        int64_t v;
        int rc = fx_sym_eval(e, bound_value, (void *)b, &v, err);
        if (rc) return rc;
        if (v) continue;
        char text[160], vals[160];
        size_t len = 0;
        vals[0] = 0;
        for (int k = 0; k < b->n && len < sizeof vals; k++) {
            char name[32];
            len += (size_t)snprintf(vals + len, sizeof vals - len, "%s%s = %lld", k ? ", " : "",
                                    fx_sym_str(b->sym[k], name, sizeof name),
                                    (long long)b->val[k]);
        }
        return fx_err_setf(err, FX_EARG,
                           "Expected the input sizes to satisfy the guard %s the program was "
                           "exported under (%s%s%s%s), but %s",
                           fx_sym_str(g[i].expr, text, sizeof text),
                           g[i].op[0] && !strstr(g[i].op, "::") ? "aten." : "",
                           g[i].op[0] ? g[i].op : "Lua code", g[i].loc[0] ? " at " : "",
                           g[i].loc, vals);
    }
    return FX_OK;
}

static int check_input(const fx_node *ph, const fx_ivalue *v, int index, sym_binding *b, int pass,
                       fx_err *err) {
    const fx_tensor *want = fx_node_tensor(ph);
    if (!want) return FX_OK;
    if (pass == 1) {
        for (int d = 0; fx_tensor_is_symbolic(want) && d < fx_tensor_ndim(want); d++) {
            fx_symint w = fx_tensor_sym_size(want, d);
            int rc = w.expr ? check_sym_dim(ph, d, w, fx_tensor_size(v->u.t, d), b, 1, err) : FX_OK;
            if (rc) return rc;
        }
        return FX_OK;
    }
    if (v->tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "Expected input at *args[%d] (%s) to be a tensor", index,
                           ph->name);
    const fx_tensor *t = v->u.t;
    if (fx_tensor_dtype(t) != fx_tensor_dtype(want))
        return fx_err_setf(
            err, FX_EARG, "Expected input at *args[%d] (%s) to have dtype %s, but got %s", index,
            ph->name, fx_dtype_name(fx_tensor_dtype(want)), fx_dtype_name(fx_tensor_dtype(t)));
    if (fx_tensor_ndim(t) != fx_tensor_ndim(want))
        return fx_err_setf(err, FX_EARG,
                           "Unexpected number of dimensions in input at *args[%d] (%s): expected "
                           "%d, but got %d",
                           index, ph->name, fx_tensor_ndim(want), fx_tensor_ndim(t));
    for (int d = 0; d < fx_tensor_ndim(t); d++) {
        fx_symint w = fx_tensor_sym_size(want, d);
        if (w.expr) {
            int rc = check_sym_dim(ph, d, w, fx_tensor_size(t, d), b, 0, err);
            if (rc) return rc;
            continue;
        }
        if (fx_tensor_size(t, d) != fx_tensor_size(want, d))
            return fx_err_setf(err, FX_EARG,
                               "Expected input at *args[%d].shape[%d] (%s) to be equal to %lld, "
                               "but got %lld",
                               index, d, ph->name, (long long)fx_tensor_size(want, d),
                               (long long)fx_tensor_size(t, d));
    }
    return FX_OK;
}

/* Numbers the nodes (n->tag = position); the plan and the value table index by it. */
static void stamp(fx_interp *it) {
    for (int i = 0; i < it->n; i++) it->nodes[i]->tag = i;
}

/* Copies the inputs in (checked against the placeholders) and rewinds to the first node. */
static int load_inputs(fx_interp *it, const fx_ivalue *inputs, int ninputs, fx_err *err) {
    int nph = 0;
    for (int i = 0; i < it->n; i++)
        if (it->nodes[i]->op == FX_NODE_PLACEHOLDER) nph++;
    if (ninputs != nph)
        return fx_err_setf(err, FX_EARG, "the graph takes %d inputs but %d were given", nph,
                           ninputs);
    int k = 0;
    sym_binding b = {.n = 0};
    it->bind.n = 0;
    for (int i = 0; i < it->n; i++) {
        if (it->nodes[i]->op != FX_NODE_PLACEHOLDER) continue;
        int rc = check_input(it->nodes[i], &inputs[k], k, &b, 0, err);
        if (!rc) rc = fx_ivalue_copy(&it->inputs[k], &inputs[k], err);
        if (rc) return rc;
        it->ninputs = ++k;
    }
    k = 0;
    for (int i = 0; i < it->n; i++) { /* sizes that are expressions of the bound symbols */
        if (it->nodes[i]->op != FX_NODE_PLACEHOLDER) continue;
        int rc = check_input(it->nodes[i], &inputs[k], k, &b, 1, err);
        if (rc) return rc;
        k++;
    }
    int rcg = check_guards(&b, err);
    if (rcg) return rcg;
    it->bind = b;
    it->pc = 0;
    it->ph_seen = 0;
    it->done = false;
    it->meta_run = false;
    it->live_bytes = 0;
    return FX_OK;
}

/* ==== planning ================================================================================ */

/* An argument as dispatch would normalize it: defaults for UNSET, None for optional, and a single
 * int given for an int[N] as a one-element list. */
static int normalize_const(const fx_arg_schema *as, const fx_ivalue *v, fx_ivalue *out,
                           fx_err *err) {
    const fx_ivalue *src = v;
    fx_ivalue none = fx_iv_none();
    if (v->tag == FX_IV_UNSET) src = as->has_default ? &as->def : &none;
    if (as->type == FX_TY_INT_LIST && src->tag == FX_IV_INT) {
        int64_t x = src->u.i;
        return fx_iv_int_list(1, &x, out, err);
    }
    return fx_ivalue_copy(out, src, err);
}

static bool has_node_ref(const fx_ivalue *v) {
    if (v->tag == FX_IV_NODE) return true;
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++)
            if (has_node_ref(&v->u.list.items[i])) return true;
    return false;
}

/* Does the val tensor t fit the op's own output rules closely enough to stand in for the meta
 * function's result (a real dtype, sizes >= 0)? */
static bool val_usable(const fx_tensor *t) {
    return t && fx_tensor_dtype(t) >= 0 && fx_tensor_dtype(t) < FX_DTYPE_COUNT;
}

/* Elements a tensor with these sizes and strides reaches from offset 0 (0 when empty). */
static int64_t span_of(int ndim, const int64_t *sizes, const int64_t *strides) {
    int64_t hi = 0;
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] == 0) return 0;
        hi += (sizes[d] - 1) * strides[d];
    }
    return hi + 1;
}

/* A node val's sizes and strides at this call's symbol values (it->bind); plain sizes as they
 * are. False when an expression has a symbol no input binds (a data-dependent size). */
static bool val_geometry(fx_interp *it, const fx_tensor *val, int64_t *sizes, int64_t *strides) {
    bool sym = fx_tensor_is_symbolic(val);
    for (int d = 0; d < fx_tensor_ndim(val); d++) {
        fx_symint v[2] = {fx_tensor_sym_size(val, d), fx_tensor_sym_stride(val, d)};
        int64_t *dst[2] = {&sizes[d], &strides[d]};
        for (int k = 0; k < 2; k++) {
            *dst[k] = v[k].hint;
            if (!sym || !v[k].expr) continue;
            fx_err e;
            fx_err_clear(&e);
            const fx_sym *x = fx_shape_env_simplify(fx_sym_env(v[k].expr), v[k].expr);
            if (fx_sym_eval(x, bound_value, &it->bind, dst[k], &e)) return false;
        }
    }
    return true;
}

/* root[i]: the position of the node whose storage value i may live in. */
static int root_of_arg(const int *root, const fx_ivalue *v) {
    return v->tag == FX_IV_NODE ? root[v->u.node->tag] : -1;
}

/* Marks every root a value refers to (through lists) as escaping. */
static void mark_escape(const fx_ivalue *v, const int *root, bool *escapes) {
    if (v->tag == FX_IV_NODE)
        escapes[root[v->u.node->tag]] = true;
    else if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++) mark_escape(&v->u.list.items[i], root, escapes);
}

static void extend_ends(const fx_ivalue *v, const int *root, int *end, int to) {
    if (v->tag == FX_IV_NODE) {
        int r = root[v->u.node->tag];
        if (end[r] < to) end[r] = to;
    } else if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) extend_ends(&v->u.list.items[i], root, end, to);
    }
}

/* Builds it->plan. Called once, after the nodes are stamped and last uses known. */
static int build_plan(fx_interp *it, fx_err *err) {
    int n = it->n, rc = FX_OK;
    it->plan = fx_calloc((size_t)n + 1, sizeof *it->plan);
    int *root = fx_malloc(sizeof(int) * ((size_t)n + 1));
    int *end = fx_malloc(sizeof(int) * ((size_t)n + 1));
    bool *escapes = fx_calloc((size_t)n + 1, sizeof(bool));
    it->bufs = fx_calloc((size_t)n + 1, sizeof *it->bufs);
    if (!it->plan || !root || !end || !escapes || !it->bufs) {
        rc = fx_err_setf(err, FX_ENOMEM, "out of memory planning the graph");
        goto done;
    }
    /* 1. kinds and alias roots */
    for (int i = 0; i < n; i++) {
        fx_node *nd = it->nodes[i];
        ex_node *e = &it->plan[i];
        root[i] = i;
        end[i] = it->last_use[i] > i ? it->last_use[i] : i;
        e->buf = -1;
        if (nd->op == FX_NODE_OUTPUT) {
            for (int a = 0; a < nd->nargs; a++) mark_escape(&nd->args[a], root, escapes);
            continue;
        }
        if (nd->op != FX_NODE_CALL_FUNCTION) continue;
        const fx_opdef *op = nd->aten;
        if (!op) { /* getitem aliases its list; other targets may alias anything they read */
            if (!strcmp(nd->target, "getitem") && nd->nargs > 0 && nd->args[0].tag == FX_IV_NODE)
                root[i] = root_of_arg(root, &nd->args[0]);
            else
                for (int a = 0; a < nd->nargs; a++) mark_escape(&nd->args[a], root, escapes);
            continue;
        }
        e->op = op;
        const fx_schema *s = &op->schema;
        /* contiguous, reshape, ... may return an input; a custom op (torch.library) makes its
         * outputs itself and may write any (a!) argument: both run through fx_dispatch */
        if (op->flags & (FX_OPF_COMPOSITE | FX_OPF_CUSTOM)) {
            for (int a = 0; a < nd->nargs; a++) mark_escape(&nd->args[a], root, escapes);
            continue;
        }
        if (s->mutated_arg >= 0 && s->mutated_arg < nd->nargs &&
            nd->args[s->mutated_arg].tag == FX_IV_NODE) {
            const fx_ivalue *self = &nd->args[s->mutated_arg];
            root[i] = root_of_arg(root, self);
            if (op->kernel && s->nrets == 1) e->kind = EX_INPLACE;
            if (!op->kernel) { /* transpose_ & co. change a tensor's geometry: never a planned one
                                */
                mark_escape(self, root, escapes);
                if (it->plan[self->u.node->tag].kind == EX_VIEW)
                    it->plan[self->u.node->tag].kind = EX_GENERIC;
            }
        } else if (fx_op_is_view(op)) {
            int va = s->view_arg >= 0 ? s->view_arg : 0;
            if (va < nd->nargs && nd->args[va].tag == FX_IV_NODE)
                root[i] = root_of_arg(root, &nd->args[va]);
            if (s->nrets == 1) e->kind = EX_VIEW;
            /* a cached view is reused while its input is the same tensor: with symbolic sizes
             * its other arguments may change from call to call (slice ends, view sizes) */
            for (int a = 0; it->symbolic && a < nd->nargs; a++)
                if (a != va && has_node_ref(&nd->args[a])) e->kind = EX_GENERIC;
        } else if (op->kernel && s->nrets == 1 && val_usable(fx_node_tensor(nd))) {
            e->kind = EX_DIRECT;
        }
        /* arguments: constants normalized once; node references by position */
        if (e->kind == EX_DIRECT || e->kind == EX_INPLACE) {
            for (int a = 0; a < nd->nargs; a++) /* lists of plain values and node refs only */
                if (nd->args[a].tag == FX_IV_LIST && has_node_ref(&nd->args[a]))
                    for (int j = 0; j < nd->args[a].u.list.n; j++)
                        if (nd->args[a].u.list.items[j].tag == FX_IV_LIST) e->kind = EX_GENERIC;
            if (nd->nargs > s->nargs) e->kind = EX_GENERIC;
        }
        if (e->kind == EX_DIRECT || e->kind == EX_INPLACE) {
            e->consts = fx_calloc((size_t)s->nargs + 1, sizeof *e->consts);
            e->slot = fx_malloc(sizeof(int) * ((size_t)s->nargs + 1));
            if (!e->consts || !e->slot) {
                rc = fx_err_setf(err, FX_ENOMEM, "out of memory planning the graph");
                goto done;
            }
            e->nargs = s->nargs; /* only once consts exists: free_plan walks it */
            for (int a = 0; a < s->nargs; a++) {
                e->slot[a] = -1;
                fx_ivalue unset = {0};
                const fx_ivalue *v = a < nd->nargs ? &nd->args[a] : &unset;
                if (v->tag == FX_IV_NODE) {
                    e->slot[a] = v->u.node->tag;
                } else if (v->tag == FX_IV_LIST && has_node_ref(v)) {
                    int nl = v->u.list.n;
                    if (!e->lslot &&
                        !(e->lslot = fx_calloc((size_t)s->nargs + 1, sizeof *e->lslot))) {
                        rc = fx_err_setf(err, FX_ENOMEM, "out of memory planning the graph");
                        goto done;
                    }
                    if ((rc = fx_iv_list(nl, &e->consts[a], err))) goto done;
                    if (!(e->lslot[a] = fx_malloc(sizeof(int) * ((size_t)nl + 1)))) {
                        rc = fx_err_setf(err, FX_ENOMEM, "out of memory planning the graph");
                        goto done;
                    }
                    for (int j = 0; j < nl; j++) {
                        const fx_ivalue *item = &v->u.list.items[j];
                        e->lslot[a][j] = item->tag == FX_IV_NODE ? item->u.node->tag : -1;
                        fx_ivalue_clear(&e->consts[a].u.list.items[j]);
                        if (item->tag != FX_IV_NODE &&
                            (rc = fx_ivalue_copy(&e->consts[a].u.list.items[j], item, err)))
                            goto done;
                    }
                } else if ((rc = normalize_const(&s->args[a], v, &e->consts[a], err))) {
                    goto done;
                }
            }
        }
    }
    /* 2. lifetimes: a root lives until the last read of anything that aliases it */
    for (int i = 0; i < n; i++) {
        int r = root[i];
        int last = it->last_use[i] > i ? it->last_use[i] : i;
        if (end[r] < last) end[r] = last;
    }
    /* values read by composites / unknown targets stay until the end of the run */
    for (int i = 0; i < n; i++) {
        fx_node *nd = it->nodes[i];
        if (nd->op != FX_NODE_CALL_FUNCTION) continue;
        bool opaque = !nd->aten ? strcmp(nd->target, "getitem") != 0
                                : (nd->aten->flags & FX_OPF_COMPOSITE) != 0;
        if (opaque)
            for (int a = 0; a < nd->nargs; a++) extend_ends(&nd->args[a], root, end, n);
    }
    /* 3. pool buffers for DIRECT outputs that do not escape */
    for (int i = 0; i < n; i++) {
        ex_node *e = &it->plan[i];
        if (e->kind != EX_DIRECT) continue;
        if (escapes[i]) {
            e->kind = EX_GENERIC; /* outputs are fresh tensors each run: the caller may keep them */
            continue;
        }
        const fx_tensor *val = fx_node_tensor(it->nodes[i]);
        fx_dtype dt = fx_tensor_dtype(val);
        int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
        int ndim = fx_tensor_ndim(val);
        if (!val_geometry(it, val, sizes, strides)) {
            e->kind = EX_GENERIC;
            continue;
        }
        int64_t elems = span_of(ndim, sizes, strides);
        int pick = -1;
        for (int b = 0; b < it->nbufs && pick < 0; b++)
            if (it->bufs[b].end < i && it->bufs[b].dtype == dt && it->bufs[b].elems == elems)
                pick = b;
        if (pick < 0) {
            pick = it->nbufs;
            ex_buf *nb = &it->bufs[pick];
            int64_t sz = elems > 0 ? elems : 1;
            if ((rc = fx_tensor_empty(1, &sz, dt, FX_DEVICE_CPU, &nb->t, err))) goto done;
            nb->dtype = dt;
            nb->elems = elems;
            it->nbufs++;
            it->stats.buffers++;
            it->stats.pool_bytes += sz * (int64_t)fx_dtype_size(dt);
        }
        it->bufs[pick].end = end[i];
        e->buf = pick;
        it->stats.planned_bytes += elems * (int64_t)fx_dtype_size(dt);
        rc = fx_tensor_as_strided(it->bufs[pick].t, ndim, sizes, strides, 0, &e->out, err);
        if (rc) goto done;
    }
    for (int i = 0; i < n; i++) {
        if (it->nodes[i]->op == FX_NODE_CALL_FUNCTION) it->stats.nodes++;
        switch (it->plan[i].kind) {
        case EX_DIRECT: it->stats.direct++; break;
        case EX_INPLACE: it->stats.inplace++; break;
        case EX_VIEW: it->stats.views++; break;
        default: break;
        }
    }
done:
    fx_free(root);
    fx_free(end);
    fx_free(escapes);
    if (rc) { /* only the plan being made: cached ones stay */
        free_plan_parts(it->n, it->plan, it->bufs, it->nbufs);
        it->plan = NULL, it->bufs = NULL, it->nbufs = 0;
    }
    return rc;
}

/* For a program with symbolic sizes: makes the plan of this call's symbol values current. Sizes
 * met for the first time run without a plan (a loop whose sizes never repeat, such as a decoder
 * whose cache grows by one each step, would otherwise plan on every call); the second time they
 * are planned, and the PLAN_CACHE most recently used plans are kept. Invariant: it->plan is
 * NULL or cache[0]'s. */
static int select_plan(fx_interp *it, fx_err *err) {
    const sym_binding *b = &it->bind;
    size_t kb = sizeof(int64_t) * (size_t)b->n;
    if (it->plan) it->cache[0].stats = it->stats; /* the current plan's counts go with it */
    fx_interp_stats runtime = it->stats;
    int hit = -1;
    for (int c = 0; c < it->ncache && hit < 0; c++)
        if (it->cache[c].nkey == b->n && !memcmp(it->cache[c].key, b->val, kb)) hit = c;
    ex_plan cur;
    if (hit >= 0) {
        cur = it->cache[hit];
        memmove(&it->cache[1], &it->cache[0], sizeof cur * (size_t)hit);
    } else {
        bool seen = false;
        for (int k = 0; k < 2 * PLAN_CACHE && !seen; k++)
            seen = it->nseen[k] == b->n && b->n > 0 && !memcmp(it->seen[k], b->val, kb);
        if (!seen) { /* the first call at these sizes: no plan */
            memcpy(it->seen[it->seen_next], b->val, kb);
            it->nseen[it->seen_next] = b->n;
            it->seen_next = (it->seen_next + 1) % (2 * PLAN_CACHE);
            it->plan = NULL, it->bufs = NULL, it->nbufs = 0;
            it->stats = (fx_interp_stats){.view_hits = runtime.view_hits,
                                          .noop_copies = runtime.noop_copies};
            return FX_OK;
        }
        if (it->ncache == PLAN_CACHE) { /* drop the least recently used */
            ex_plan *old = &it->cache[PLAN_CACHE - 1];
            free_plan_parts(it->n, old->plan, old->bufs, old->nbufs);
            it->ncache--;
        }
        it->plan = NULL, it->bufs = NULL, it->nbufs = 0;
        it->stats = (fx_interp_stats){.view_hits = runtime.view_hits,
                                      .noop_copies = runtime.noop_copies};
        int rc = build_plan(it, err);
        if (rc) return rc; /* out of memory: this call runs without a plan */
        cur = (ex_plan){it->plan, it->bufs, it->nbufs, {0}, b->n, it->stats};
        memcpy(cur.key, b->val, kb);
        memmove(&it->cache[1], &it->cache[0], sizeof cur * (size_t)it->ncache);
        it->ncache++;
    }
    it->cache[0] = cur;
    it->plan = cur.plan, it->bufs = cur.bufs, it->nbufs = cur.nbufs;
    it->stats = cur.stats;
    it->stats.view_hits = runtime.view_hits;
    it->stats.noop_copies = runtime.noop_copies;
    return FX_OK;
}

/* Appends to sb each ATen target of g (and its bodies) that has no op entry — a program loaded
 * from a file may call ops fxdb does not implement — once. */
/* The op node n calls that fxdb has no kernel for, or NULL: an ATen op without an entry, a
 * custom op (namespace.op.overload) not registered here, or the op auto_functionalized /
 * with_effects wraps when that one is not registered (programs loaded from a file keep such ops
 * by name). */
static const char *unknown_target(const fx_node *n) {
    if (n->op != FX_NODE_CALL_FUNCTION || n->aten) return NULL;
    const char *t = n->target;
    int first;
    int k = !strcmp(t, FX_HOP_AUTO_FUNCTIONALIZED) ? 0 : !strcmp(t, FX_HOP_WITH_EFFECTS) ? 1 : -1;
    if (k >= 0)
        return !fx_hop_wrapped_op(n, &first) && n->nargs > k && n->args[k].tag == FX_IV_STR ? n->args[k].u.s : NULL;
    if (!strcmp(t, "getitem") || !strncmp(t, "higher_order.", 13) || !strncmp(t, "operator.", 9) ||
        !strncmp(t, "torch.", 6) || !strncmp(t, "fxdb.", 5))
        return NULL;
    return t;
}

static void unknown_ops(fx_strbuf *sb, const fx_graph *g) {
    for (const fx_node *n = fx_graph_first(g); n; n = n->next) {
        if (n->subgraph) unknown_ops(sb, n->subgraph);
        const char *t = unknown_target(n);
        if (!t) continue;
        const char *have = fx_strbuf_cstr(sb);
        size_t tl = strlen(t);
        bool seen = false;
        for (const char *p = strstr(have, t); p && !seen; p = strstr(p + 1, t))
            seen = (p == have || p[-1] == ' ') && (p[tl] == ',' || p[tl] == 0);
        if (!seen) fx_strbuf_appendf(sb, "%s%s", sb->len ? ", " : "", t);
    }
}

int fx_interp_new(const fx_graph *g, const fx_ivalue *inputs, int ninputs,
                  const fx_interp_opts *opts, fx_interp **out, fx_err *err) {
    *out = NULL;
    /* A program with symbolic sizes runs at any sizes its constraints allow: inputs are checked
     * against the placeholders' expressions, and it is planned once per set of symbol values
     * the inputs give (the sizes evaluated at those values; select_plan keeps PLAN_CACHE). */
    bool symbolic = false;
    for (const fx_node *n = fx_graph_first(g); n && !symbolic; n = n->next) {
        const fx_tensor *t = fx_node_tensor(n);
        symbolic = n->val.tag == FX_IV_SYMINT || (t && fx_tensor_is_symbolic(t));
    }
    fx_strbuf unk = FX_STRBUF_INIT;
    unknown_ops(&unk, g);
    if (unk.len || unk.oom) {
        int rc = unk.oom ? fx_err_setf(err, FX_ENOMEM, "out of memory")
                         : fx_err_setf(err, FX_ENOTIMPL,
                                       "cannot run this program: fxdb has no kernel for %s",
                                       fx_strbuf_cstr(&unk));
        fx_strbuf_free(&unk);
        return rc;
    }
    fx_interp *it = fx_calloc(1, sizeof *it);
    if (!it) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    it->g = g;
    if (opts) it->opts = *opts;
    it->symbolic = symbolic;
    fx_ctx_init(&it->eager, FX_MODE_EAGER);
    it->eager.no_grad = true; /* running an exported graph is inference: no autograd checks */
    it->n = fx_graph_count(g);
    it->nodes = fx_calloc((size_t)it->n + 1, sizeof *it->nodes);
    it->vals = fx_calloc((size_t)it->n + 1, sizeof *it->vals);
    it->owned = fx_calloc((size_t)it->n + 1, 1);
    it->last_use = fx_calloc((size_t)it->n + 1, sizeof *it->last_use);
    it->inputs = fx_calloc((size_t)ninputs + 1, sizeof *it->inputs);
    if (!it->nodes || !it->vals || !it->owned || !it->last_use || !it->inputs) {
        fx_interp_free(it);
        return fx_err_setf(err, FX_ENOMEM, "out of memory");
    }
    int i = 0;
    for (fx_node *n = fx_graph_first(g); n; n = n->next, i++) {
        n->tag = i;
        it->nodes[i] = n;
        it->last_use[i] = -1;
    }
    for (i = 0; i < it->n; i++)
        for (int a = 0; a < it->nodes[i]->nargs; a++) mark_uses(it, &it->nodes[i]->args[a], i);
    int rc = load_inputs(it, inputs, ninputs, err);
    if (!rc && !it->opts.keep_values && !it->opts.naive)
        rc = symbolic ? select_plan(it, err) : build_plan(it, err);
    if (rc) {
        fx_interp_free(it);
        return rc;
    }
    *out = it;
    return FX_OK;
}

int fx_interp_reset(fx_interp *it, const fx_ivalue *inputs, int ninputs, fx_err *err) {
    if (fx_graph_count(it->g) != it->n)
        return fx_err_setf(err, FX_EARG, "the graph changed since the interpreter was made");
    clear_values(it);
    stamp(it);
    int rc = load_inputs(it, inputs, ninputs, err);
    if (!rc && it->symbolic && !it->opts.keep_values && !it->opts.naive) rc = select_plan(it, err);
    return rc;
}

/* ==== running ================================================================================= */

/* Node refs -> values (borrowed tensors retained into the copy). */
static int resolve(fx_interp *it, const fx_ivalue *v, fx_ivalue *out, fx_err *err) {
    if (v->tag == FX_IV_NODE) {
        const fx_ivalue *x = &it->vals[v->u.node->tag];
        if (x->tag == FX_IV_UNSET)
            return fx_err_setf(err, FX_EINTERNAL, "value of %%%s is not available",
                               v->u.node->name);
        return fx_ivalue_copy(out, x, err);
    }
    if (v->tag == FX_IV_LIST) {
        int rc = fx_iv_list(v->u.list.n, out, err);
        for (int i = 0; !rc && i < v->u.list.n; i++)
            rc = resolve(it, &v->u.list.items[i], &out->u.list.items[i], err);
        if (rc) fx_ivalue_clear(out);
        return rc;
    }
    return fx_ivalue_copy(out, v, err);
}

/* The generic way: resolve every argument and dispatch. *res is owned. */
static int run_generic(fx_interp *it, fx_node *n, fx_ivalue *res, fx_err *err) {
    if (!n->aten) {
        if (!strcmp(n->target, "getitem")) {
            fx_ivalue src;
            int rc = resolve(it, &n->args[0], &src, err);
            if (rc) return rc;
            int64_t i = n->args[1].u.i;
            if (src.tag != FX_IV_LIST || i < 0 || i >= src.u.list.n)
                rc = fx_err_setf(err, FX_EINDEX, "getitem index out of range");
            else
                rc = fx_ivalue_copy(res, &src.u.list.items[i], err);
            fx_ivalue_clear(&src);
            return rc;
        }
        if (!strncmp(n->target, "higher_order.", 13)) { /* core/hop.c */
            fx_ivalue args[16] = {0};
            if (n->nargs > 16) return fx_err_setf(err, FX_EARG, "%s: too many arguments", n->name);
            int made = 0, rc = FX_OK;
            /* body slots resolve to None (get_attr of a subgraph); fx_hop_run reads the bodies
             * from the nodes themselves */
            for (made = 0; made < n->nargs && !rc; made++)
                rc = resolve(it, &n->args[made], &args[made], err);
            if (!rc) rc = fx_hop_run(n, args, fx_graph_run, res, err);
            for (int i = 0; i < made; i++) fx_ivalue_clear(&args[i]);
            return rc;
        }
        if (!strcmp(n->target, "operator.neg") && n->nargs == 1) { /* -n of a SymInt */
            fx_ivalue x;
            int rc = resolve(it, &n->args[0], &x, err);
            if (rc) return rc;
            fx_symint a;
            if (!fx_ivalue_symint(&x, &a) || a.expr)
                rc = fx_err_setf(err, FX_EARG, "%s: expected an integer operand", n->name);
            fx_ivalue_clear(&x);
            if (!rc) *res = fx_iv_int(-a.hint);
            return rc;
        }
        if ((!strncmp(n->target, "operator.", 9) || !strncmp(n->target, "torch.sym_", 10)) &&
            n->nargs == 2) { /* SymInt arithmetic: plain integers at run time */
            fx_ivalue x, y;
            int rc = resolve(it, &n->args[0], &x, err);
            if (rc) return rc;
            if ((rc = resolve(it, &n->args[1], &y, err))) {
                fx_ivalue_clear(&x);
                return rc;
            }
            fx_symint a, b2, r = FX_SI(0);
            if (!fx_ivalue_symint(&x, &a) || !fx_ivalue_symint(&y, &b2) || a.expr || b2.expr)
                rc = fx_err_setf(err, FX_EARG, "%s: expected integer operands", n->name);
            const char *op = strchr(n->target, '.') + 1;
            if (!rc) {
                if (!strcmp(op, "add"))
                    r = FX_SI(a.hint + b2.hint);
                else if (!strcmp(op, "sub"))
                    r = FX_SI(a.hint - b2.hint);
                else if (!strcmp(op, "mul"))
                    r = FX_SI(a.hint * b2.hint);
                else if (!strcmp(op, "floordiv"))
                    rc = fx_si_floordiv(a, b2, &r, err);
                else if (!strcmp(op, "mod"))
                    rc = fx_si_mod(a, b2, &r, err);
                else if (!strcmp(op, "sym_max"))
                    r = fx_si_max(a, b2);
                else if (!strcmp(op, "sym_min"))
                    r = fx_si_min(a, b2);
                else if (!strcmp(op, "ge") || !strcmp(op, "gt") || !strcmp(op, "le") ||
                         !strcmp(op, "lt") || !strcmp(op, "eq") || !strcmp(op, "ne")) {
                    /* a relation (the condition of a runtime assert): a bool */
                    bool v = op[0] == 'g'   ? (op[1] == 'e' ? a.hint >= b2.hint : a.hint > b2.hint)
                             : op[0] == 'l' ? (op[1] == 'e' ? a.hint <= b2.hint : a.hint < b2.hint)
                             : op[0] == 'e' ? a.hint == b2.hint
                                            : a.hint != b2.hint;
                    fx_ivalue_clear(&x);
                    fx_ivalue_clear(&y);
                    *res = fx_iv_bool(v);
                    return FX_OK;
                } else
                    rc = fx_err_setf(err, FX_ENOTIMPL, "the interpreter cannot run %s yet",
                                     n->target);
            }
            fx_ivalue_clear(&x);
            fx_ivalue_clear(&y);
            if (!rc) *res = fx_iv_int(r.hint);
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
        if (!rc)
            res->u.list.items[i] = outs[i];
        else
            fx_ivalue_clear(&outs[i]);
    }
    return rc;
}

/* Fills a[] for a planned node: constants as planned, node values borrowed (no references). */
static int gather(fx_interp *it, const ex_node *e, const fx_node *n, fx_ivalue *a, fx_err *err) {
    for (int k = 0; k < e->nargs; k++) {
        if (e->lslot && e->lslot[k]) { /* a list with node refs: items borrowed for this call */
            fx_ivalue *items = e->consts[k].u.list.items;
            for (int j = 0; j < e->consts[k].u.list.n; j++) {
                int sl = e->lslot[k][j];
                if (sl < 0) continue;
                items[j] = it->vals[sl];
                if (items[j].tag == FX_IV_UNSET)
                    return fx_err_setf(err, FX_EINTERNAL,
                                       "%s: an argument's value is not available", n->name);
                if (items[j].tag == FX_IV_TENSOR && fx_tensor_is_meta(items[j].u.t)) return 1;
            }
            a[k] = e->consts[k];
            continue;
        }
        if (e->slot[k] < 0) {
            a[k] = e->consts[k];
            continue;
        }
        a[k] = it->vals[e->slot[k]];
        if (a[k].tag == FX_IV_UNSET)
            return fx_err_setf(err, FX_EINTERNAL, "%s: an argument's value is not available",
                               n->name);
        if (a[k].tag == FX_IV_TENSOR && fx_tensor_is_meta(a[k].u.t)) return 1; /* not for us */
    }
    return FX_OK;
}

static bool same_view(const fx_tensor *x, const fx_tensor *y) {
    if (!fx_tensor_same_storage(x, y) || fx_tensor_offset(x) != fx_tensor_offset(y) ||
        fx_tensor_ndim(x) != fx_tensor_ndim(y) || fx_tensor_dtype(x) != fx_tensor_dtype(y))
        return false;
    for (int d = 0; d < fx_tensor_ndim(x); d++)
        if (fx_tensor_size(x, d) != fx_tensor_size(y, d) ||
            (fx_tensor_size(x, d) > 1 && fx_tensor_stride(x, d) != fx_tensor_stride(y, d)))
            return false;
    return true;
}

/* Same dtype, sizes and strides (strides of size-1 dims aside). */
static bool same_geometry(const fx_tensor *x, const fx_tensor *y) {
    if (fx_tensor_ndim(x) != fx_tensor_ndim(y) || fx_tensor_dtype(x) != fx_tensor_dtype(y))
        return false;
    for (int d = 0; d < fx_tensor_ndim(x); d++)
        if (fx_tensor_size(x, d) != fx_tensor_size(y, d) ||
            (fx_tensor_size(x, d) > 1 && fx_tensor_stride(x, d) != fx_tensor_stride(y, d)))
            return false;
    return true;
}

static int run_kernel(fx_interp *it, ex_node *e, fx_node *n, fx_ivalue *a, fx_ivalue *res,
                      bool *owned, fx_err *err);

/* Runs a planned node. Sets *res (owned when *owned) and returns FX_OK; returns 1 (not an error)
 * when the node must run the generic way after all. */
static int run_planned(fx_interp *it, fx_node *n, fx_ivalue *res, bool *owned, fx_err *err) {
    ex_node *e = &it->plan[n->tag];
    const fx_opdef *op = e->op;
    if (e->kind == EX_VIEW) {
        const fx_schema *s = &op->schema;
        int va = s->view_arg >= 0 ? s->view_arg : 0;
        const fx_ivalue *in = va < n->nargs && n->args[va].tag == FX_IV_NODE
                                  ? &it->vals[n->args[va].u.node->tag]
                                  : NULL;
        if (!in || in->tag != FX_IV_TENSOR || fx_tensor_is_meta(in->u.t)) return 1;
        if (e->view_out && e->view_in == in->u.t) {
            *res = fx_iv_tensor(e->view_out);
            *owned = true;
            it->stats.view_hits++;
            return FX_OK;
        }
        int rc = run_generic(it, n, res, err);
        if (rc) return rc;
        *owned = true;
        if (res->tag == FX_IV_TENSOR) { /* cache it for the next run */
            fx_tensor_release(e->view_in);
            fx_tensor_release(e->view_out);
            e->view_in = fx_tensor_retain(in->u.t);
            e->view_out = fx_tensor_retain(res->u.t);
        }
        return FX_OK;
    }
    fx_ivalue a[FX_SCHEMA_MAX_ARGS];
    int rc = gather(it, e, n, a, err);
    if (!rc) rc = run_kernel(it, e, n, a, res, owned, err);
    if (e->lslot) /* give the borrowed list items back */
        for (int k = 0; k < e->nargs; k++)
            if (e->lslot[k])
                for (int j = 0; j < e->consts[k].u.list.n; j++)
                    if (e->lslot[k][j] >= 0) e->consts[k].u.list.items[j].tag = FX_IV_UNSET;
    return rc;
}

/* The INPLACE / DIRECT call of a planned node on gathered arguments a[]. */
static int run_kernel(fx_interp *it, ex_node *e, fx_node *n, fx_ivalue *a, fx_ivalue *res,
                      bool *owned, fx_err *err) {
    const fx_opdef *op = e->op;
    int rc = FX_OK;
    fx_ivalue out[FX_SCHEMA_MAX_RETS];
    fx_opctx oc = {&it->eager, op, FX_DEVICE_CPU, err};
    if (e->kind == EX_INPLACE) {
        const fx_ivalue *self = &a[op->schema.mutated_arg];
        if (self->tag != FX_IV_TENSOR) return 1;
        out[0] = *self; /* borrowed: in-place kernels write into self and return it */
        bool noop =
            op->id == FX_OP_COPY_ && a[1].tag == FX_IV_TENSOR && same_view(self->u.t, a[1].u.t);
        if (!e->checked) { /* the kernel trusts its arguments: the meta function checks them once
                              (a copy_ from a tensor that does not broadcast to self, say) */
            fx_opctx mc = {&it->eager, op, FX_DEVICE_META, err};
            fx_ivalue mo[FX_SCHEMA_MAX_RETS] = {0};
            rc = op->meta(&mc, a, mo);
            for (int i = 0; i < op->schema.nrets; i++) fx_ivalue_clear(&mo[i]);
            if (rc) return rc;
            e->checked = true;
        }
        if (!noop) {
            it->eager.depth++;
            rc = op->kernel(&oc, a, out);
            it->eager.depth--;
            if (rc) return rc;
        } else {
            it->stats.noop_copies++;
        }
        fx_tensor_bump_version(self->u.t);
        *res = fx_iv_tensor(self->u.t); /* its own reference: self's value may die here */
        *owned = true;
        return FX_OK;
    }
    /* EX_DIRECT. On its first run the meta function checks the arguments and says what the
     * output should be; a val that disagrees (a pass that set it wrong) demotes the node. */
    if (!e->checked) {
        fx_opctx mc = {&it->eager, op, FX_DEVICE_META, err};
        fx_ivalue mo[FX_SCHEMA_MAX_RETS] = {0};
        if ((rc = op->meta(&mc, a, mo))) return rc;
        bool ok = mo[0].tag == FX_IV_TENSOR && same_geometry(mo[0].u.t, e->out);
        for (int i = 0; i < op->schema.nrets; i++) fx_ivalue_clear(&mo[i]);
        if (!ok) {
            e->kind = EX_GENERIC;
            it->stats.direct--;
            return 1;
        }
        e->checked = true;
    }
    out[0] = fx_iv_tensor_steal(e->out); /* borrowed for the call; the plan keeps its reference */
    it->eager.depth++;
    rc = op->kernel(&oc, a, out);
    it->eager.depth--;
    if (rc) return rc;
    *res = out[0];
    *owned = false;
    return FX_OK;
}

static int run_node(fx_interp *it, fx_node *n, fx_ivalue *res, bool *owned, fx_err *err) {
    *owned = true;
    switch (n->op) {
    case FX_NODE_PLACEHOLDER: {
        const fx_ivalue *in = &it->inputs[it->ph_seen++];
        if (in->tag == FX_IV_TENSOR && fx_tensor_is_meta(in->u.t)) it->meta_run = true;
        *res = *in;
        *owned = false; /* the interpreter's copy of the inputs lives until the next reset */
        return FX_OK;
    }
    case FX_NODE_GET_ATTR: {
        if (n->subgraph) {
            *res = fx_iv_none();
            return FX_OK;
        }
        if (!it->opts.attr)
            return fx_err_setf(err, FX_EARG, "get_attr %s: no attribute resolver", n->target);
        fx_tensor *t = NULL;
        int rc = it->opts.attr(it->opts.attr_ud, n->target, &t, err);
        if (!rc) {
            *res = fx_iv_tensor(t);
            if (t && fx_tensor_is_meta(t)) it->meta_run = true;
        }
        return rc;
    }
    case FX_NODE_OUTPUT: return resolve(it, &n->args[0], res, err);
    case FX_NODE_CALL_FUNCTION: break;
    }
    if (it->plan && !it->meta_run && it->plan[n->tag].kind != EX_GENERIC) {
        int rc = run_planned(it, n, res, owned, err);
        if (rc != 1) return rc;
        *owned = true;
    }
    return run_generic(it, n, res, err);
}

static void release_dead(fx_interp *it, const fx_ivalue *v, int pos) {
    if (v->tag == FX_IV_NODE) {
        int d = v->u.node->tag;
        if (it->last_use[d] == pos && it->vals[d].tag != FX_IV_UNSET) {
            it->live_bytes -= value_bytes(&it->vals[d]);
            drop_value(it, d);
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
    bool owned = true;
    rc = run_node(it, n, &res, &owned, err);
    if (!rc && (rc = fx_interrupt_check(err))) { /* a kernel stopped early by Ctrl-C */
        if (owned) fx_ivalue_clear(&res);
    }
    if (rc) {
        if (!err->node[0]) snprintf(err->node, sizeof err->node, "%s", n->name);
        return rc;
    }
    drop_value(it, it->pc);
    it->vals[it->pc] = res;
    it->owned[it->pc] = owned;
    it->live_bytes += value_bytes(&res);
    if (it->live_bytes > it->peak_bytes) it->peak_bytes = it->live_bytes;
    if (!it->opts.keep_values && n->op != FX_NODE_OUTPUT) {
        for (int a = 0; a < n->nargs; a++) release_dead(it, &n->args[a], it->pc);
        if (n->nusers == 0 && it->last_use[it->pc] < 0) {
            it->live_bytes -= value_bytes(&it->vals[it->pc]);
            drop_value(it, it->pc);
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
    drop_value(it, n->tag);
    it->vals[n->tag] = c;
    it->owned[n->tag] = 1;
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

void fx_interp_get_stats(const fx_interp *it, fx_interp_stats *out) { *out = it->stats; }

int fx_graph_run(const fx_graph *g, const fx_ivalue *inputs, int ninputs,
                 const fx_interp_opts *opts, fx_ivalue *out, fx_err *err) {
    fx_interp *it;
    int rc = fx_interp_new(g, inputs, ninputs, opts, &it, err);
    if (rc) return rc;
    rc = fx_interp_run(it, err);
    if (!rc) rc = fx_interp_take_outputs(it, out, err);
    fx_interp_free(it);
    return rc;
}

int fx_interp_take_outputs(fx_interp *it, fx_ivalue *out, fx_err *err) {
    int n;
    const fx_ivalue *o = fx_interp_outputs(it, &n);
    if (!o && !it->done) return fx_err_setf(err, FX_EARG, "the graph has not finished running");
    int rc = fx_iv_list(n, out, err);
    for (int i = 0; !rc && i < n; i++) rc = fx_ivalue_copy(&out->u.list.items[i], &o[i], err);
    if (rc) fx_ivalue_clear(out);
    return rc;
}
