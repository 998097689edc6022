/* core/pass_unlift.c — ExportedProgram.module(): state placeholders back to attributes.
 * Layer: core. Follows torch/export/_unlift.py: each parameter / buffer / constant placeholder
 * becomes a get_attr of its target; each BUFFER_MUTATION (and USER_INPUT_MUTATION) output becomes
 * an in-place copy_ into the buffer (or input) just before the output, which then returns only
 * the user outputs — what ExecuTorch's to_executorch does to make the program stateful again. */
#include <string.h>

#include "core/export.h"
#include "core/fx_alloc.h"
#include "core/hop.h"
#include "core/shape.h"

/* The node a view chain starts from: follows view ops and getitem (of list-returning views). */
static const fx_node *view_root(const fx_node *n) {
    while (n && n->op == FX_NODE_CALL_FUNCTION && n->nargs > 0 && n->args[0].tag == FX_IV_NODE &&
           ((n->aten && fx_op_is_view(n->aten)) || (!n->aten && !strcmp(n->target, "getitem"))))
        n = n->args[0].u.node;
    return n;
}

/* The copy_ destination of mutation output spec `os`: the buffer's get_attr or the user input's
 * placeholder; NULL when absent. */
static fx_node *mutation_dst(fx_graph *g, const fx_output_spec *os) {
    for (fx_node *n = fx_graph_first(g); n; n = n->next) {
        if (os->kind == FX_OUTPUT_USER_INPUT_MUTATION && n->op == FX_NODE_PLACEHOLDER &&
            !strcmp(n->name, os->target))
            return n;
        if (os->kind != FX_OUTPUT_USER_INPUT_MUTATION && n->op == FX_NODE_GET_ATTR &&
            !strcmp(n->target, os->target))
            return n;
    }
    return NULL;
}

/* The write-back copy_(dst, src) of a mutation stores the whole new value: src must have dst's
 * shape and dtype (export refuses a buffer that changes them; a program built otherwise is
 * refused here rather than truncated or converted). */
static int check_writeback(const fx_output_spec *os, const fx_node *dst, const fx_node *src,
                           fx_err *err) {
    const fx_tensor *d = fx_node_tensor(dst), *v = fx_node_tensor(src);
    if (!d || !v) return FX_OK;
    bool same = fx_tensor_ndim(d) == fx_tensor_ndim(v) && fx_tensor_dtype(d) == fx_tensor_dtype(v);
    for (int i = 0; same && i < fx_tensor_ndim(d); i++)
        same = fx_tensor_size(d, i) == fx_tensor_size(v, i);
    if (same) return FX_OK;
    char a[160], b[160];
    return fx_err_setf(err, FX_EARG,
                       "unlift: the new value of '%s' is %s %s but '%s' is %s %s: a mutation "
                       "output must keep the shape and dtype of what it mutates",
                       os->target, fx_dtype_name(fx_tensor_dtype(v)),
                       fx_shape_str(fx_tensor_ndim(v), fx_tensor_sizes(v), a, sizeof a), os->target,
                       fx_dtype_name(fx_tensor_dtype(d)),
                       fx_shape_str(fx_tensor_ndim(d), fx_tensor_sizes(d), b, sizeof b));
}

/* Values the trailing copy_ nodes would change under the program's feet are cloned before the
 * first copy_: a returned value, or the source of another copy_, that is (a view of) the old
 * value of a state the copies overwrite. That happens only when forward rebound a buffer
 * (`local v = self.a[0]; self.a = self.b; self.b = self.b * 2; return v`): eager PyTorch's `v`
 * and the new `a` keep the old tensors' values, while the unlifted module has one tensor per
 * buffer. A copy_ whose source is its own destination is left alone (a no-op). */
static int protect_old_values(fx_graph *g, const fx_program *p, fx_node *outn, fx_err *err) {
    fx_ivalue *items = outn->args[0].u.list.items;
    int n = outn->args[0].u.list.n;
    for (int k = 0; k < n; k++) {
        if (items[k].tag != FX_IV_NODE) continue;
        const fx_node *root = view_root(items[k].u.node);
        fx_node *own = NULL;
        if (k < p->sig.noutputs && p->sig.outputs[k].kind != FX_OUTPUT_USER_OUTPUT &&
            p->sig.outputs[k].kind != FX_OUTPUT_TOKEN)
            own = mutation_dst(g, &p->sig.outputs[k]);
        if (own && items[k].u.node == own) continue;
        bool overwritten = false;
        for (int j = 0; j < p->sig.noutputs && j < n && !overwritten; j++) {
            const fx_output_spec *os = &p->sig.outputs[j];
            if (os->kind == FX_OUTPUT_USER_OUTPUT || os->kind == FX_OUTPUT_TOKEN) continue;
            fx_node *dst = mutation_dst(g, os);
            /* a mutation output that is exactly its old value writes nothing */
            if (dst && dst == root && !(items[j].tag == FX_IV_NODE && items[j].u.node == dst))
                overwritten = true;
        }
        if (!overwritten) continue;
        fx_graph_set_insert_point(g, outn);
        fx_ivalue a[FX_SCHEMA_MAX_ARGS] = {items[k]};
        fx_node *c = fx_graph_call(g, fx_op_get(FX_OP_CLONE), a, NULL, err);
        fx_graph_set_insert_point(g, NULL);
        if (!c) return err->code;
        int rc = fx_node_set_val(c, &items[k].u.node->val, err);
        if (!rc) rc = fx_node_copy_meta(c, items[k].u.node, err);
        fx_ivalue list = {0};
        if (!rc) rc = fx_ivalue_copy(&list, &outn->args[0], err);
        if (!rc) {
            fx_ivalue_clear(&list.u.list.items[k]);
            list.u.list.items[k] = fx_iv_node(c);
            rc = fx_node_set_arg(outn, 0, &list, err);
        }
        fx_ivalue_clear(&list);
        if (rc) return rc;
        items = outn->args[0].u.list.items;
    }
    return FX_OK;
}

/* Effect tokens go away (torch/export/_remove_effect_tokens_pass.py): each
 * with_effects(token, op, *args) becomes op(*args) in place, its getitems read the op's results
 * directly, and the token placeholders (now unread; the token outputs were dropped with the
 * mutation outputs) are erased. The calls stay in program order, which DCE respects for
 * effectful ops. */
static int remove_effect_tokens(fx_graph *g, const fx_program *p, fx_err *err) {
    int rc = FX_OK;
    for (fx_node *w = fx_graph_first(g), *next; w && !rc; w = next) {
        next = w->next;
        int k0;
        const fx_opdef *op = fx_hop_wrapped_op(w, &k0);
        if (!op || strcmp(w->target, FX_HOP_WITH_EFFECTS)) continue;
        const fx_schema *s = &op->schema;
        if (w->nargs - k0 != s->nargs)
            return fx_err_setf(err, FX_EARG, "unlift: malformed %s node %s", w->target, w->name);
        fx_graph_set_insert_point(g, w);
        fx_node *c = fx_graph_call(g, op, w->args + k0, NULL, err);
        fx_graph_set_insert_point(g, NULL);
        if (!c) return err->code;
        const fx_ivalue *wv = &w->val;
        if (wv->tag == FX_IV_LIST && wv->u.list.n >= 2) {
            if (s->nrets == 1) {
                rc = fx_node_set_val(c, &wv->u.list.items[1], err);
            } else {
                fx_ivalue rest;
                rc = fx_iv_list(wv->u.list.n - 1, &rest, err);
                for (int j = 1; !rc && j < wv->u.list.n; j++) rc = fx_ivalue_copy(&rest.u.list.items[j - 1], &wv->u.list.items[j], err);
                if (!rc) rc = fx_node_set_val(c, &rest, err);
                fx_ivalue_clear(&rest);
            }
        }
        if (!rc) rc = fx_node_copy_meta(c, w, err);
        fx_node *token = w->args[0].tag == FX_IV_NODE ? w->args[0].u.node : NULL;
        while (!rc && w->nusers > 0) {
            fx_node *u = w->users[0];
            if (strcmp(u->target, "getitem") || u->args[1].tag != FX_IV_INT) {
                rc = fx_err_setf(err, FX_EARG, "unlift: %s is read by %s, not a getitem", w->name, u->name);
                break;
            }
            int64_t j = u->args[1].u.i;
            if (j == 0 || s->nrets <= 1) { /* the token, or the single result */
                if (j == 0 && token) fx_node_replace_all_uses(u, token);
                else if (j != 0) fx_node_replace_all_uses(u, c);
                if (u->nusers == 0) rc = fx_graph_erase(g, u, err);
                else rc = fx_err_setf(err, FX_EARG, "unlift: the token %s is still read", u->name);
            } else {
                fx_ivalue a0 = fx_iv_node(c), a1 = fx_iv_int(j - 1);
                rc = fx_node_set_arg(u, 0, &a0, err);
                if (!rc) rc = fx_node_set_arg(u, 1, &a1, err);
            }
        }
        if (!rc) rc = fx_graph_erase(g, w, err);
        next = c->next; /* w and its token getitem are gone */
    }
    for (int i = 0; i < p->sig.ninputs && !rc; i++) {
        if (p->sig.inputs[i].kind != FX_INPUT_TOKEN) continue;
        fx_node *ph = fx_graph_find(g, p->sig.inputs[i].arg);
        if (ph && ph->nusers == 0) rc = fx_graph_erase(g, ph, err);
        else if (ph) rc = fx_err_setf(err, FX_EARG, "unlift: the token %s is read by %s", ph->name, ph->users[0]->name);
    }
    return rc;
}

int fx_program_unlift(const fx_program *p, fx_graph **out, fx_err *err) {
    *out = NULL;
    fx_graph *g = fx_graph_clone(p->graph, err);
    if (!g) return err->code ? err->code : FX_ENOMEM;
    int rc = FX_OK;
    fx_node *first_op = fx_graph_first(g);
    while (first_op && first_op->op == FX_NODE_PLACEHOLDER) first_op = first_op->next;
    /* Placeholders of state -> get_attr, in signature order. */
    for (int i = 0; i < p->sig.ninputs && !rc; i++) {
        const fx_input_spec *s = &p->sig.inputs[i];
        if (s->kind == FX_INPUT_USER_INPUT || s->kind == FX_INPUT_TOKEN) continue;
        fx_node *ph = fx_graph_find(g, s->arg);
        if (!ph) continue; /* removed as unused */
        fx_graph_set_insert_point(g, first_op);
        fx_node *ga = fx_graph_get_attr(g, s->target, err);
        fx_graph_set_insert_point(g, NULL);
        if (!ga) {
            rc = err->code;
            break;
        }
        rc = fx_node_set_val(ga, &ph->val, err);
        if (rc) break;
        fx_node_replace_all_uses(ph, ga);
        rc = fx_graph_erase(g, ph, err);
    }
    fx_node *outn = fx_graph_output_node(g);
    if (!rc && outn && outn->args[0].tag == FX_IV_LIST) rc = protect_old_values(g, p, outn, err);
    if (!rc && outn && outn->args[0].tag == FX_IV_LIST) {
        const fx_ivalue *res = &outn->args[0];
        int nmut = 0;
        /* (value, copy_) of each write-back: a user output that is the very value written back
         * returns the copy_ (whose result is the destination itself), as torch/export/_unlift.py
         * does, so `x:mul_(2); return x` hands back the caller's own x */
        fx_node **wb_src = fx_calloc((size_t)res->u.list.n + 1, sizeof *wb_src);
        fx_node **wb_copy = fx_calloc((size_t)res->u.list.n + 1, sizeof *wb_copy);
        if (!wb_src || !wb_copy) rc = fx_err_setf(err, FX_ENOMEM, "out of memory unlifting");
        for (int k = 0; !rc && k < p->sig.noutputs && k < res->u.list.n; k++) {
            const fx_output_spec *os = &p->sig.outputs[k];
            if (os->kind == FX_OUTPUT_USER_OUTPUT || os->kind == FX_OUTPUT_TOKEN) continue;
            nmut++;
            /* The destination: the get_attr of the buffer, or the user input placeholder. */
            fx_node *dst = mutation_dst(g, os);
            if (!dst || res->u.list.items[k].tag != FX_IV_NODE) {
                rc = fx_err_setf(err, FX_EINTERNAL, "unlift: no destination for %s", os->target);
                break;
            }
            if ((rc = check_writeback(os, dst, res->u.list.items[k].u.node, err))) break;
            fx_graph_set_insert_point(g, outn);
            fx_ivalue a[FX_SCHEMA_MAX_ARGS] = {fx_iv_node(dst), res->u.list.items[k]};
            fx_node *c = fx_graph_call(g, fx_op_get(FX_OP_COPY_), a, NULL, err);
            fx_graph_set_insert_point(g, NULL);
            if (!c) {
                rc = err->code;
                break;
            }
            if ((rc = fx_node_set_val(c, &dst->val, err))) break;
            if ((rc = fx_node_copy_meta(c, res->u.list.items[k].u.node, err))) break;
            wb_src[nmut - 1] = res->u.list.items[k].u.node;
            wb_copy[nmut - 1] = c;
        }
        int ntok = 0;
        for (int k = 0; k < p->sig.noutputs && k < res->u.list.n; k++) ntok += p->sig.outputs[k].kind == FX_OUTPUT_TOKEN;
        if (!rc && (nmut || ntok)) { /* the user outputs only: no mutation, no token */
            fx_ivalue user;
            rc = fx_iv_list(res->u.list.n - nmut - ntok, &user, err);
            for (int k = 0, u = 0; !rc && k < res->u.list.n; k++) {
                if (k < p->sig.noutputs && p->sig.outputs[k].kind != FX_OUTPUT_USER_OUTPUT) continue;
                const fx_ivalue *item = &res->u.list.items[k];
                fx_node *copy = NULL;
                for (int j = 0; item->tag == FX_IV_NODE && j < nmut && !copy; j++)
                    if (wb_src[j] == item->u.node) copy = wb_copy[j];
                if (copy) user.u.list.items[u++] = fx_iv_node(copy);
                else rc = fx_ivalue_copy(&user.u.list.items[u++], item, err);
            }
            if (!rc) rc = fx_node_set_arg(outn, 0, &user, err);
            fx_ivalue_clear(&user);
        }
        fx_free(wb_src);
        fx_free(wb_copy);
    }
    if (!rc) rc = remove_effect_tokens(g, p, err);
    if (rc) {
        fx_graph_free(g);
        return rc;
    }
    *out = g;
    return FX_OK;
}
