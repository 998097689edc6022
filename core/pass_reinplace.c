/* core/pass_reinplace.c — functional ops back to in-place ops where no later reader exists.
 * Layer: core. The inverse of functionalization for the unlifted graph (state as get_attr, a
 * trailing copy_ per mutated buffer), in the spirit of torch/fx/passes/reinplace.py and of what
 * ExecuTorch users asked for (pytorch/executorch#4042): `add = add(state, x); copy_(state, add)`
 * becomes `add_(state, x)` and the copy_ goes away.
 *
 * A node n = f(a, ...) is rewritten to f_(a, ...) when
 *   - f has an in-place twin in ops.def (add.Tensor <- add_.Tensor), or is select_scatter /
 *     slice_scatter (rewritten to a view of `a` plus copy_ of the source into it);
 *   - `a` is a get_attr (module state) or an intermediate produced by a non-view op — never a
 *     graph input (that would change the caller's tensor) nor a view (its base may be read);
 *   - every other reader of `a` (and of any view taken from it) comes before n;
 *   - n's value has `a`'s dtype and shape (in-place ops cannot promote or broadcast self).
 * After the rewrite n's users read `a` itself. A trailing copy_(state, v) whose v is now `state`
 * is removed. Values are unchanged: tests run the graph before and after. */
#include <string.h>

#include "core/fx_alloc.h"
#include "core/hop.h"
#include "core/passes.h"

/* The in-place op whose functional twin is `id`, or NULL. */
static const fx_opdef *inplace_of(fx_op_id id) {
    for (int i = 0; i < FX_OP_COUNT; i++) {
        const fx_opdef *op = fx_op_get((fx_op_id)i);
        if (op->twin == id && fx_op_is_inplace(op) && op->schema.mutated_arg == 0 && /* not X.out */
            !fx_op_is_view(fx_op_get(op->twin)))
            return op;
    }
    return NULL;
}

static bool same_meta(const fx_node *a, const fx_node *b) {
    const fx_tensor *x = fx_node_tensor(a), *y = fx_node_tensor(b);
    if (!x || !y || fx_tensor_dtype(x) != fx_tensor_dtype(y) || fx_tensor_ndim(x) != fx_tensor_ndim(y))
        return false;
    for (int d = 0; d < fx_tensor_ndim(x); d++)
        if (fx_tensor_size(x, d) != fx_tensor_size(y, d)) return false;
    return true;
}

/* A node whose value aliases its first argument: an ATen view op, or getitem of a list-returning
 * view (split, chunk, unbind). */
static bool aliases_arg0(const fx_node *u) {
    return (u->aten && fx_op_is_view(u->aten)) ||
           (!u->aten && u->op == FX_NODE_CALL_FUNCTION && !strcmp(u->target, "getitem"));
}

/* u = copy_(v, src) with src != v only overwrites v: it does not read v's old value. */
static bool only_overwrites(const fx_node *u, const fx_node *v) {
    return u->aten && u->aten->id == FX_OP_COPY_ && u->args[0].tag == FX_IV_NODE &&
           u->args[0].u.node == v && !(u->args[1].tag == FX_IV_NODE && u->args[1].u.node == v);
}

/* Is every reader of v (and, through view ops, of its views) placed before `at` (or `at`)? */
static bool no_later_reader(const fx_node *v, const fx_node *at, int depth) {
    if (depth > 16) return false;
    for (int i = 0; i < v->nusers; i++) {
        const fx_node *u = v->users[i];
        if (u == at || only_overwrites(u, v)) continue;
        if (u->op == FX_NODE_OUTPUT) return false;
        if (u->tag > at->tag) return false;
        if (aliases_arg0(u) && !no_later_reader(u, at, depth + 1)) return false;
    }
    return true;
}

/* Module state may be reused in place only when a later copy_ overwrites it anyway (the buffer's
 * new version is written back at the end); a buffer that is only read must keep its value. */
static bool overwritten_after(const fx_node *a, const fx_node *at) {
    for (int i = 0; i < a->nusers; i++)
        if (a->users[i]->tag > at->tag && only_overwrites(a->users[i], a)) return true;
    return false;
}

/* Is some reader of v (or of its views) placed at or after `at`, or is v an output? */
static bool read_from(const fx_node *v, const fx_node *at, int depth) {
    if (depth > 16) return true;
    for (int i = 0; i < v->nusers; i++) {
        const fx_node *u = v->users[i];
        if (u->op == FX_NODE_OUTPUT || u->tag >= at->tag) return true;
        if (aliases_arg0(u) && read_from(u, at, depth + 1)) return true;
    }
    return false;
}

/* After the rewrite n's readers read `a` itself, so a later copy_ into `a` whose source is not n
 * (`neg = neg(b0); copy_(b0, x0); return neg`) must come after every use of n's value. */
static bool outlives_overwrite(const fx_node *a, const fx_node *n) {
    for (int i = 0; i < a->nusers; i++) {
        const fx_node *w = a->users[i];
        if (w->tag <= n->tag || !only_overwrites(w, a)) continue;
        if (w->args[1].tag == FX_IV_NODE && w->args[1].u.node == n) continue;
        if (read_from(n, w, 0)) return true;
    }
    return false;
}

/* Does v (a node argument, or a list of them) read a view of `a` other than `a` itself? An
 * in-place op cannot read memory it partially overwrites (`sub(add, select(add, 0, 1))`). */
static bool reads_view_of(const fx_ivalue *v, const fx_node *a) {
    if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++)
            if (reads_view_of(&v->u.list.items[i], a)) return true;
        return false;
    }
    if (v->tag != FX_IV_NODE || v->u.node == a) return false;
    const fx_node *n = v->u.node;
    while (n && n->nargs > 0 && n->args[0].tag == FX_IV_NODE && aliases_arg0(n)) {
        n = n->args[0].u.node;
        if (n == a) return true;
    }
    return false;
}

static bool rewritable_base(const fx_node *a, const fx_node *at) {
    if (a->op == FX_NODE_GET_ATTR) return overwritten_after(a, at);
    if (a->op != FX_NODE_CALL_FUNCTION || !a->aten) return false;
    return !fx_op_is_view(a->aten);
}

static void number(fx_graph *g) {
    int i = 0;
    for (fx_node *n = fx_graph_first(g); n; n = n->next) n->tag = i++;
}

/* Inserts op(args) before `at`, copying meta from `meta_from`. */
static fx_node *insert_call(fx_graph *g, fx_node *at, fx_op_id id, const fx_ivalue *args,
                            const fx_node *meta_from, const fx_ivalue *val, fx_err *err) {
    fx_graph_set_insert_point(g, at);
    fx_node *n = fx_graph_call(g, fx_op_get(id), args, NULL, err);
    fx_graph_set_insert_point(g, NULL);
    if (!n) return NULL;
    if (fx_node_copy_meta(n, meta_from, err) || (val && fx_node_set_val(n, val, err))) return NULL;
    return n;
}

/* select_scatter(a, src, dim, index) -> copy_(select(a, dim, index), src); likewise slice. */
static int rewrite_scatter(fx_graph *g, fx_node *n, fx_node *a, fx_err *err) {
    bool is_select = n->aten->id == FX_OP_SELECT_SCATTER;
    fx_ivalue va[FX_SCHEMA_MAX_ARGS] = {0};
    va[0] = fx_iv_node(a);
    if (is_select) {
        va[1] = n->args[2];
        va[2] = n->args[3];
    } else {
        for (int k = 0; k < 4; k++) va[k + 1] = n->args[k + 2];
    }
    fx_node *view = insert_call(g, n, is_select ? FX_OP_SELECT_INT : FX_OP_SLICE_TENSOR, va, n, NULL, err);
    if (!view) return err->code;
    /* the view's value: the source's shape with a's dtype */
    fx_node *src = n->args[1].tag == FX_IV_NODE ? n->args[1].u.node : NULL;
    if (src && fx_node_set_val(view, &src->val, err)) return err->code;
    /* copy(select(a), h) as the source is just h */
    fx_ivalue source = n->args[1];
    if (src && src->aten && src->aten->id == FX_OP_COPY && src->nusers == 1) source = src->args[1];
    fx_ivalue ca[FX_SCHEMA_MAX_ARGS] = {0};
    ca[0] = fx_iv_node(view);
    ca[1] = source;
    fx_node *c = insert_call(g, n, FX_OP_COPY_, ca, n, &view->val, err);
    if (!c) return err->code;
    fx_node_replace_all_uses(n, a);
    int rc = fx_graph_erase(g, n, err);
    if (!rc && src && src->nusers == 0 && src->aten && src->aten->id == FX_OP_COPY) rc = fx_graph_erase(g, src, err);
    return rc;
}

/* ---- auto_functionalized ------------------------------------------------------------------ */

/* The node a value's memory belongs to: follows view ops and getitem. */
static const fx_node *memory_root(const fx_node *n) {
    while (n && n->op == FX_NODE_CALL_FUNCTION && n->nargs > 0 && n->args[0].tag == FX_IV_NODE && aliases_arg0(n))
        n = n->args[0].u.node;
    return n;
}

/* Are x and y the same view of the same value (equal view ops with equal arguments all the way
 * down to one node)? */
static bool same_view(const fx_node *x, const fx_node *y) {
    if (x == y) return true;
    if (!x->aten || !y->aten || x->aten != y->aten || !fx_op_is_view(x->aten) || x->nargs != y->nargs ||
        x->nargs == 0 || x->args[0].tag != FX_IV_NODE || y->args[0].tag != FX_IV_NODE)
        return false;
    for (int k = 1; k < x->nargs; k++)
        if (!fx_ivalue_equal(&x->args[k], &y->args[k])) return false;
    return same_view(x->args[0].u.node, y->args[0].u.node);
}

/* scatter(b, view(b, args...), args...) is b: the write-back of a value into the very place it
 * was read from (what remains of an auto_functionalized write-back once the op writes in place). */
static bool identity_scatter(const fx_node *n) {
    if (!n->aten || n->nargs < 2 || n->args[0].tag != FX_IV_NODE || n->args[1].tag != FX_IV_NODE) return false;
    const fx_node *v = n->args[1].u.node;
    if (!v->aten || v->aten->scatter != n->aten->id || !fx_op_is_view(v->aten) || v->nargs + 1 != n->nargs ||
        v->args[0].tag != FX_IV_NODE)
        return false;
    for (int k = 1; k < v->nargs; k++)
        if (!fx_ivalue_equal(&v->args[k], &n->args[k + 1])) return false;
    return same_view(v->args[0].u.node, n->args[0].u.node);
}

/* Is v the new value an auto_functionalized wrote (`item`), or a scatter of it into a base? */
static bool derived_from(const fx_node *v, const fx_node *item, int depth) {
    if (!v || depth > 16) return false;
    if (v == item) return true;
    return v->aten && v->nargs >= 2 && v->args[1].tag == FX_IV_NODE && v->aten->id != FX_OP_COPY_ &&
           (v->aten->id == FX_OP_SELECT_SCATTER || v->aten->id == FX_OP_SLICE_SCATTER ||
            v->aten->id == FX_OP_DIAGONAL_SCATTER || v->aten->id == FX_OP_AS_STRIDED_SCATTER) &&
           derived_from(v->args[1].u.node, item, depth + 1);
}

/* Does some node after `at` read the memory of x (x = root or one of its views) other than to
 * write the op's new value back (a scatter of `item` into it, a copy_ of it into the state)?
 * Sets *who to that reader. */
static bool read_after(const fx_node *x, const fx_node *at, const fx_node *item, const fx_node **who,
                       int depth) {
    if (depth > 16) return (*who = x), true;
    for (int i = 0; i < x->nusers; i++) {
        const fx_node *u = x->users[i];
        if (u == at) continue;
        if (aliases_arg0(u)) {
            if (read_after(u, at, item, who, depth + 1)) return true;
            continue;
        }
        if (u->op == FX_NODE_OUTPUT) return (*who = u), true;
        if (u->tag < at->tag) continue;
        if (u->nargs >= 2 && u->args[0].tag == FX_IV_NODE && u->args[0].u.node == x &&
            u->args[1].tag == FX_IV_NODE && derived_from(u->args[1].u.node, item, 0))
            continue; /* scatter(x, new) or copy_(x, new): the write-back */
        return (*who = u), true;
    }
    return false;
}

/* Why the (a!) argument `a` of auto_functionalized node n (new value `item`) cannot be written
 * in place, into sb; false when it can. */
static bool inplace_refused(const fx_node *n, int first, const fx_opdef *op, int k, const fx_node *a,
                            const fx_node *item, fx_strbuf *sb) {
    const fx_node *root = memory_root(a), *who = NULL;
    const char *arg = op->schema.args[k].name;
    if (root->op == FX_NODE_PLACEHOLDER || root->op == FX_NODE_GET_ATTR) {
        bool written_back = false;
        for (int i = 0; i < root->nusers && !written_back; i++) {
            const fx_node *u = root->users[i];
            written_back = u->tag > n->tag && only_overwrites(u, root) && u->args[1].tag == FX_IV_NODE &&
                           derived_from(u->args[1].u.node, item, 0);
        }
        if (!written_back) {
            fx_strbuf_appendf(sb, "%s (%s): kept a clone of '%s' (%%%s): its new value is not written back into %s %%%s",
                              n->name, op->target, arg, a->name,
                              root->op == FX_NODE_GET_ATTR ? "the state" : "the input", root->name);
            return true;
        }
    } else if (root->op != FX_NODE_CALL_FUNCTION) {
        fx_strbuf_appendf(sb, "%s (%s): kept a clone of '%s' (%%%s): its memory is not an op's result",
                          n->name, op->target, arg, a->name);
        return true;
    }
    for (int j = first; j < n->nargs; j++) { /* another argument sharing the memory */
        if (j - first == k) continue;
        const fx_ivalue *v = &n->args[j];
        if (v->tag == FX_IV_NODE && memory_root(v->u.node) == root) {
            fx_strbuf_appendf(sb, "%s (%s): kept a clone of '%s' (%%%s): argument '%s' (%%%s) shares its memory",
                              n->name, op->target, arg, a->name, op->schema.args[j - first].name,
                              v->u.node->name);
            return true;
        }
    }
    if (read_after(root, n, item, &who, 0)) {
        if (who->op == FX_NODE_OUTPUT)
            fx_strbuf_appendf(sb, "%s (%s): kept a clone of '%s' (%%%s): the old value is returned",
                              n->name, op->target, arg, a->name);
        else
            fx_strbuf_appendf(sb, "%s (%s): kept a clone of '%s' (%%%s): %%%s reads the old value after the op",
                              n->name, op->target, arg, a->name, who->name);
        if (who->nstack > 0)
            fx_strbuf_appendf(sb, " (%s:%d)", who->stack[0].file, who->stack[0].line);
        return true;
    }
    return false;
}

/* auto_functionalized(op, **args) -> op(args) on the (a!) arguments themselves where that is
 * safe (no later node reads their old value: torch/_inductor/fx_passes/reinplace.py's check),
 * else on a clone of them, inserted before it (and a line in `why` saying what kept it). */
static int rewrite_auto_functionalized(fx_graph *g, fx_node *n, int *done, fx_strbuf *why, fx_err *err) {
    int first;
    const fx_opdef *op = fx_hop_wrapped_op(n, &first);
    const fx_schema *s = &op->schema;
    int na = n->nargs - first, no = s->nrets ? s->nrets : 1;
    if (na != s->nargs) return fx_err_setf(err, FX_EARG, "reinplace: malformed %s node %s", n->target, n->name);
    fx_node *items[FX_HOP_MAX_OUTS] = {0};
    for (int i = 0; i < n->nusers; i++) {
        fx_node *u = n->users[i];
        if (strcmp(u->target, "getitem") || u->args[1].tag != FX_IV_INT || u->args[1].u.i < 0 ||
            u->args[1].u.i >= FX_HOP_MAX_OUTS)
            return fx_err_setf(err, FX_EARG, "reinplace: %s is read by %s, not a getitem", n->name, u->name);
        items[u->args[1].u.i] = u;
    }
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0};
    fx_node *newval[FX_SCHEMA_MAX_ARGS] = {0};
    for (int k = 0; k < na; k++) args[k] = n->args[first + k];
    int m = 0, rc = FX_OK;
    for (int k = 0; k < na && !rc; k++) {
        if (!s->args[k].alias_write) continue;
        fx_node *item = no + m < FX_HOP_MAX_OUTS ? items[no + m] : NULL;
        m++;
        if (args[k].tag != FX_IV_NODE) continue;
        fx_node *a = args[k].u.node;
        fx_strbuf note = FX_STRBUF_INIT;
        if (!inplace_refused(n, first, op, k, a, item, &note)) {
            newval[k] = a;
            if (why) fx_strbuf_appendf(why, "%s (%s): '%s' written in place (%%%s)\n", n->name, op->target,
                                       s->args[k].name, a->name);
            (*done)++;
        } else {
            fx_ivalue ca[FX_SCHEMA_MAX_ARGS] = {fx_iv_node(a)};
            fx_node *c = insert_call(g, n, FX_OP_CLONE, ca, n, &a->val, err);
            if (!c) rc = err->code;
            newval[k] = c;
            args[k] = fx_iv_node(c);
            if (why) fx_strbuf_appendf(why, "%s\n", fx_strbuf_cstr(&note));
        }
        fx_strbuf_free(&note);
    }
    if (rc) return rc;
    fx_graph_set_insert_point(g, n);
    fx_node *call = fx_graph_call(g, op, args, NULL, err);
    fx_graph_set_insert_point(g, NULL);
    if (!call) return err->code;
    if ((rc = fx_node_copy_meta(call, n, err))) return rc;
    if (s->nrets >= 1 && n->val.tag == FX_IV_LIST && n->val.u.list.n >= s->nrets) { /* the returns' values */
        fx_ivalue rv = {0};
        if (s->nrets == 1) rc = fx_ivalue_copy(&rv, &n->val.u.list.items[0], err);
        else rc = fx_iv_list(s->nrets, &rv, err);
        for (int j = 0; s->nrets > 1 && j < s->nrets && !rc; j++)
            rc = fx_ivalue_copy(&rv.u.list.items[j], &n->val.u.list.items[j], err);
        if (!rc) rc = fx_node_set_val(call, &rv, err);
        fx_ivalue_clear(&rv);
        if (rc) return rc;
    }
    /* the returns read the call; the new values are the arguments (or their clones) */
    m = 0;
    for (int k = 0; k < na; k++)
        if (s->args[k].alias_write) {
            fx_node *item = no + m < FX_HOP_MAX_OUTS ? items[no + m] : NULL;
            m++;
            if (item && newval[k]) fx_node_replace_all_uses(item, newval[k]);
        }
    for (int j = 0; j < FX_HOP_MAX_OUTS && !rc; j++) {
        fx_node *it = items[j];
        if (!it) continue;
        if (j < s->nrets && s->nrets == 1) fx_node_replace_all_uses(it, call);
        if (j < s->nrets && s->nrets > 1) {
            fx_ivalue a0 = fx_iv_node(call);
            rc = fx_node_set_arg(it, 0, &a0, err);
            continue;
        }
        if (it->nusers == 0) rc = fx_graph_erase(g, it, err);
    }
    if (!rc && n->nusers == 0) rc = fx_graph_erase(g, n, err);
    return rc;
}

int fx_pass_reinplace(fx_graph *g, int *count, fx_err *err) {
    return fx_pass_reinplace_explain(g, count, NULL, err);
}

int fx_pass_reinplace_explain(fx_graph *g, int *count, fx_strbuf *why, fx_err *err) {
    int done = 0;
    number(g);
    /* custom ops first: each auto_functionalized, in program order */
    int naf = 0, first;
    for (fx_node *n = fx_graph_first(g); n; n = n->next) naf += fx_hop_wrapped_op(n, &first) && first == 1;
    fx_node **afs = naf ? fx_calloc((size_t)naf, sizeof *afs) : NULL;
    if (naf && !afs) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    naf = 0;
    for (fx_node *n = fx_graph_first(g); n; n = n->next) {
        const fx_opdef *w = fx_hop_wrapped_op(n, &first);
        if (w && first == 1) afs[naf++] = n;
        else if (w && why && !strcmp(n->target, FX_HOP_AUTO_FUNCTIONALIZED_V2))
            fx_strbuf_appendf(why, "auto_functionalized_v2 (%s): left as is (fxdb re-inplaces v1 nodes only; "
                              "v2 runs the op on clones of its bases)\n", w->target);
    }
    for (int i = 0; i < naf; i++) {
        int rc = rewrite_auto_functionalized(g, afs[i], &done, why, err);
        if (rc) {
            fx_free(afs);
            return rc;
        }
        number(g);
    }
    fx_free(afs);
    /* the write-backs that are now identities */
    for (fx_node *n = fx_graph_first(g), *next; n; n = next) {
        next = n->next;
        if (!identity_scatter(n)) continue;
        fx_node_replace_all_uses(n, n->args[0].u.node);
        int rc = fx_graph_erase(g, n, err);
        if (rc) return rc;
    }
    number(g);
    for (fx_node *n = fx_graph_first(g), *next; n; n = next) {
        next = n->next;
        if (n->op != FX_NODE_CALL_FUNCTION || !n->aten || n->nargs == 0 || n->args[0].tag != FX_IV_NODE)
            continue;
        if (fx_op_is_inplace(n->aten) || fx_op_is_view(n->aten)) continue;
        fx_node *a = n->args[0].u.node;
        if (!rewritable_base(a, n) || !same_meta(a, n) || !no_later_reader(a, n, 0) ||
            outlives_overwrite(a, n))
            continue;
        bool overlap = false;
        for (int k = 1; k < n->nargs && !overlap; k++) overlap = reads_view_of(&n->args[k], a);
        if (overlap) continue;
        int rc;
        if (n->aten->id == FX_OP_SELECT_SCATTER || n->aten->id == FX_OP_SLICE_SCATTER) {
            rc = rewrite_scatter(g, n, a, err);
        } else {
            const fx_opdef *ip = inplace_of(n->aten->id);
            if (!ip || ip->schema.nargs < n->nargs) continue;
            fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0};
            for (int k = 0; k < n->nargs; k++) args[k] = n->args[k];
            fx_node *r = insert_call(g, n, ip->id, args, n, &n->val, err);
            if (!r) return err->code;
            fx_node_replace_all_uses(n, a);
            rc = fx_graph_erase(g, n, err);
        }
        if (rc) return rc;
        number(g);
        done++;
    }
    /* copy_(state, state) left at the end is a no-op */
    for (fx_node *n = fx_graph_first(g), *next; n; n = next) {
        next = n->next;
        if (n->aten && n->aten->id == FX_OP_COPY_ && n->nusers == 0 && n->args[0].tag == FX_IV_NODE &&
            n->args[1].tag == FX_IV_NODE && n->args[0].u.node == n->args[1].u.node) {
            int rc = fx_graph_erase(g, n, err);
            if (rc) return rc;
        }
    }
    if (count) *count = done;
    return fx_pass_dce(g, NULL, err); /* the functional views the rewrites no longer read */
}
