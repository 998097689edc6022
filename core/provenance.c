/* core/provenance.c — every version of a buffer or input, from its placeholder to its output.
 * Layer: core. Reads the mutation records functionalization left on nodes; fxdb's own feature
 * (PyTorch keeps no such record). */
#include "core/provenance.h"

#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"

void fx_provenance_free(fx_provenance *pv) {
    if (!pv) return;
    for (int i = 0; i < pv->nsteps; i++) {
        fx_prov_step *s = &pv->steps[i];
        fx_free(s->target);
        fx_free(s->from_op);
        fx_free(s->view_path);
        fx_free(s->location);
        fx_free(s->source);
    }
    fx_free(pv->steps);
    fx_free(pv->state);
    fx_free(pv->kind);
    fx_free(pv->output);
    fx_free(pv);
}

static int add_step(fx_provenance *pv, int version, fx_node *n, const char *target,
                    const char *from_op, const char *view_path, fx_err *err) {
    fx_prov_step *ns = fx_realloc(pv->steps, sizeof *ns * (size_t)(pv->nsteps + 1));
    if (!ns) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    pv->steps = ns;
    fx_prov_step *s = &ns[pv->nsteps++];
    memset(s, 0, sizeof *s);
    s->version = version;
    s->node = n;
    s->target = fx_strdup(target);
    s->from_op = from_op ? fx_strdup(from_op) : NULL;
    s->view_path = view_path ? fx_strdup(view_path) : NULL;
    if (n->nstack > 0) {
        char loc[300];
        snprintf(loc, sizeof loc, "%s:%d", n->stack[0].file, n->stack[0].line);
        s->location = fx_strdup(loc);
        s->source = fx_strdup(n->stack[0].code);
    }
    if (!s->target) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    return FX_OK;
}

static bool uses_tag(const fx_ivalue *v, int tag) {
    if (v->tag == FX_IV_NODE) return v->u.node->tag == tag;
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++)
            if (uses_tag(&v->u.list.items[i], tag)) return true;
    return false;
}

static void tag_args(const fx_ivalue *v, int tag) {
    if (v->tag == FX_IV_NODE && v->u.node->tag == 1) v->u.node->tag = tag;
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++) tag_args(&v->u.list.items[i], tag);
}

/* Without mutation records: the nodes that both depend on the placeholder and feed the mutation
 * output — the walk back from a BUFFER_MUTATION output that the ExecuTorch maintainers describe
 * (executorch#4042). Tags: 0 unrelated, 1 reached from the placeholder, 2 also feeds the output. */
static int walk_data_flow(const fx_program *p, fx_provenance *pv, fx_node *ph, fx_err *err) {
    fx_node *outn = fx_graph_find(p->graph, pv->output);
    if (!outn) return FX_OK;
    for (fx_node *n = fx_graph_first(p->graph); n; n = n->next) {
        n->tag = 0;
        if (n == ph) n->tag = 1;
        for (int a = 0; a < n->nargs && !n->tag && n->op != FX_NODE_OUTPUT; a++)
            if (uses_tag(&n->args[a], 1)) n->tag = 1;
    }
    if (outn->tag != 1) return FX_OK;
    outn->tag = 2;
    for (fx_node *n = fx_graph_last(p->graph); n; n = n->prev)
        if (n->tag == 2)
            for (int a = 0; a < n->nargs; a++) tag_args(&n->args[a], 2);
    pv->walked = true;
    int k = 0, rc = FX_OK;
    for (fx_node *n = fx_graph_first(p->graph); n && !rc; n = n->next)
        if (n->tag == 2 && n != ph)
            rc = add_step(pv, ++k, n, n->target, n->nfrom ? n->from_node[0] : NULL, NULL, err);
    for (fx_node *n = fx_graph_first(p->graph); n; n = n->next) n->tag = 0;
    return rc;
}

int fx_provenance_walk(const fx_program *p, const char *target, fx_provenance **out, fx_err *err) {
    *out = NULL;
    const fx_input_spec *in = NULL;
    for (int i = 0; i < p->sig.ninputs && !in; i++) {
        const fx_input_spec *s = &p->sig.inputs[i];
        if ((s->target && !strcmp(s->target, target)) || !strcmp(s->arg, target)) in = s;
    }
    if (!in) {
        fx_strbuf names = FX_STRBUF_INIT;
        for (int i = 0; i < p->sig.ninputs; i++) {
            const fx_input_spec *s = &p->sig.inputs[i];
            if (s->kind == FX_INPUT_CONSTANT_TENSOR) continue;
            fx_strbuf_appendf(&names, "%s%s", names.len ? ", " : "", s->target ? s->target : s->arg);
        }
        fx_err_setf(err, FX_EARG, "'%s' is not a parameter, buffer or input of this program (it has: %s)",
                    target, fx_strbuf_cstr(&names));
        fx_strbuf_free(&names);
        return FX_EARG;
    }
    const char *state = in->target ? in->target : in->arg;
    fx_provenance *pv = fx_calloc(1, sizeof *pv);
    if (!pv) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    pv->state = fx_strdup(state);
    pv->kind = fx_strdup(fx_input_kind_name(in->kind));
    for (int i = 0; i < p->sig.noutputs; i++)
        if (p->sig.outputs[i].target && p->sig.outputs[i].kind != FX_OUTPUT_USER_OUTPUT &&
            !strcmp(p->sig.outputs[i].target, state))
            pv->output = fx_strdup(p->sig.outputs[i].arg);
    int rc = (!pv->state || !pv->kind) ? fx_err_setf(err, FX_ENOMEM, "out of memory") : FX_OK;
    fx_node *ph = fx_graph_find(p->graph, in->arg);
    if (!rc && ph) rc = add_step(pv, 0, ph, "placeholder", NULL, NULL, err);
    /* Versions in graph order are in version order: each is made from the previous one. */
    for (fx_node *n = fx_graph_first(p->graph); n && !rc; n = n->next) {
        if (!n->mutation || strcmp(n->mutation->state, state)) continue;
        rc = add_step(pv, n->mutation->version, n, n->target, n->mutation->from_op,
                      n->mutation->view_path, err);
    }
    if (!rc && ph && pv->nsteps == 1 && pv->output) rc = walk_data_flow(p, pv, ph, err);
    if (rc) {
        fx_provenance_free(pv);
        return rc;
    }
    *out = pv;
    return FX_OK;
}

void fx_provenance_format(fx_strbuf *sb, const fx_provenance *pv) {
    fx_strbuf_appendf(sb, "%s  (%s, ", pv->state, pv->kind);
    if (pv->output && pv->walked)
        fx_strbuf_appendf(sb, "output %s; no mutation records: the ops between placeholder and output)\n",
                          pv->output);
    else if (pv->output) fx_strbuf_appendf(sb, "output %s)\n", pv->output);
    else fx_strbuf_append(sb, "never mutated)\n");
    /* Columns: "name = target" | "from op" | location | source. */
    int w1 = 0, w2 = 0, w3 = 0;
    char buf[256];
    for (int i = 0; i < pv->nsteps; i++) {
        const fx_prov_step *s = &pv->steps[i];
        int l1 = s->version ? snprintf(buf, sizeof buf, "%s = %s", s->node->name, s->target)
                            : (int)strlen(s->node->name);
        int l2 = s->from_op ? (int)strlen(s->from_op) + 5 : (s->version ? 0 : 11);
        int l3 = s->location ? (int)strlen(s->location) : 0;
        if (l1 > w1) w1 = l1;
        if (l2 > w2) w2 = l2;
        if (l3 > w3) w3 = l3;
    }
    for (int i = 0; i < pv->nsteps; i++) {
        const fx_prov_step *s = &pv->steps[i];
        if (s->version) snprintf(buf, sizeof buf, "%s = %s", s->node->name, s->target);
        else snprintf(buf, sizeof buf, "%s", s->node->name);
        fx_strbuf_appendf(sb, "  v%-2d %-*s  ", s->version, w1, buf);
        if (s->from_op) snprintf(buf, sizeof buf, "from %s", s->from_op);
        else snprintf(buf, sizeof buf, "%s", s->version ? "" : "placeholder");
        fx_strbuf_appendf(sb, "%-*s", w2, buf);
        if (s->location) fx_strbuf_appendf(sb, "  %-*s", w3, s->location);
        if (s->source && s->source[0]) fx_strbuf_appendf(sb, "  %s", s->source);
        /* no trailing spaces */
        while (sb->len && sb->data[sb->len - 1] == ' ') sb->data[--sb->len] = 0;
        fx_strbuf_putc(sb, '\n');
        if (s->view_path) fx_strbuf_appendf(sb, "       through %s of %s\n", s->view_path, pv->state);
    }
}
