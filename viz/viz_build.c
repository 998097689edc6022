/* viz/viz_build.c — core graph -> cgraph graph: nodes, edges, module clusters, collapse, highlight.
 * Layer: viz. Reads fx_graph / fx_program / fx_provenance through core's public headers only.
 *
 * Invariants of the built graph:
 *  - every drawn fx_node of the top graph has the node id `name`; nodes of a higher-order op's
 *    body (a get_attr's subgraph) have `<get_attr name>/<name>` (nested bodies chain the
 *    prefix). FX names are identifiers, so they never contain '/' or '.', and ids cannot clash;
 *  - a collapsed module (opts->depth) is one node with id `module.<path>`, holding a vz_boxrec
 *    until the end of the build;
 *  - output values with a signature go to one node per output kind, id `<output name>.<kind>`
 *    ("output.buffer_mutation"); a bare graph has one node `output`;
 *  - module clusters are subgraphs named `cluster_<path>`, nested as nn_module_stack nests;
 *    a higher-order body is the cluster `cluster_<prefix><get_attr name>`.
 * The representative of an fx_node (where its edges attach) is its own node, or the module box it
 * collapsed into: both are found by id with agnode(root, id, 0), so no side table is needed. */
#include <stdio.h>
#include <string.h>

#include "viz/viz_impl.h"

#define VZ_MAX_LEVELS 64 /* nn_module_stack entries considered per node; deeper ones ignored */
#define VZ_BOXREC "fxviz_box"

/* The per-node record of a collapsed module box (agbindrec), dropped by agclean at the end. */
typedef struct vz_boxrec {
    Agrec_t h;        /* cgraph's record header; must come first */
    int nops;         /* call_function / get_attr nodes collapsed into the box */
    int nmut;         /* of which carry a mutation record */
    const char *path; /* module path, borrowed from an fx_node of the graph being drawn */
    const char *cls;  /* module class, same owner */
} vz_boxrec;

typedef struct vz_builder {
    Agraph_t *root;
    const fx_program *program; /* NULL for a bare graph */
    int depth;                 /* opts->depth; 0 = full nesting */
    fx_strbuf id;              /* scratch: node ids */
    fx_strbuf lab;             /* scratch: labels */
    fx_strbuf ty;              /* scratch: value types */
    Agnode_t **boxes;          /* (nboxes,) collapsed module nodes, in creation order */
    int nboxes, boxcap;
    fx_err *err;
} vz_builder;

/* ---- the DOT writer discipline (agwrite into an fx_strbuf) ----------------------------------- */
static int vz_io_putstr(void *chan, const char *str) {
    fx_strbuf_append((fx_strbuf *)chan, str);
    return ((fx_strbuf *)chan)->oom ? EOF : 0;
}
static int vz_io_flush(void *chan) { return 0; }
static int vz_io_read(void *chan, char *buf, int bufsize) { return 0; }

static Agiodisc_t vz_iodisc = {vz_io_read, vz_io_putstr, vz_io_flush};
static Agdisc_t vz_disc = {&AgMemDisc, &AgIdDisc, &vz_iodisc};

/* ---- small helpers --------------------------------------------------------------------------- */
/* The non-root entries of n's nn_module_stack, outermost first, into lv; returns how many. */
static int vz_levels(const fx_node *n, const fx_module_entry **lv) {
    int k = 0;
    for (int i = 0; i < n->nmodules && k < VZ_MAX_LEVELS; i++) {
        if (n->modules[i].path && n->modules[i].path[0]) lv[k++] = &n->modules[i];
    }
    return k;
}

/* "aten.mul.Tensor" -> "mul.Tensor"; other targets unchanged. */
static const char *vz_short_target(const char *t) {
    if (!t) return "";
    if (strncmp(t, "aten.", 5) == 0) return t + 5;
    return t;
}

/* prefix + name in the id scratch buffer; NULL once that buffer ran out of memory (every
 * caller then fails with FX_ENOMEM: a NULL name must never reach agnode, which would make an
 * anonymous node). */
static const char *vz_node_id(vz_builder *b, const char *prefix, const char *name) {
    b->id.len = 0;
    if (b->id.data) b->id.data[0] = '\0';
    fx_strbuf_append(&b->id, prefix);
    fx_strbuf_append(&b->id, name);
    return b->id.oom ? NULL : fx_strbuf_cstr(&b->id);
}

static const char *vz_box_id(vz_builder *b, const char *path) {
    return vz_node_id(b, "module.", path);
}

static int vz_oom(vz_builder *b) {
    return fx_err_setf(b->err, FX_ENOMEM, "out of memory while building the Graphviz graph");
}

/* The cluster chain of lv[0..n): creates the missing clusters; returns the innermost, or the
 * root when n == 0. NULL on out-of-memory. */
static Agraph_t *vz_container(vz_builder *b, const fx_module_entry *const *lv, int n) {
    Agraph_t *sub = b->root;
    for (int i = 0; i < n; i++) {
        const char *name = vz_node_id(b, "cluster_", lv[i]->path);
        Agraph_t *s = vz_subg(sub, name, 0);
        if (!s) {
            s = vz_subg(sub, name, 1);
            if (!s) return NULL;
            vz_style_cluster(s, i + 1);
            b->lab.len = 0;
            if (b->lab.data) b->lab.data[0] = '\0';
            vz_label_escape(&b->lab, lv[i]->path);
            if (lv[i]->cls && lv[i]->cls[0]) {
                fx_strbuf_append(&b->lab, ": ");
                vz_label_escape(&b->lab, lv[i]->cls);
            }
            vz_set(s, "label", fx_strbuf_cstr(&b->lab));
        }
        sub = s;
    }
    return sub;
}

/* Where n is drawn: its own node id, or the box it collapses into. For a collapsed node,
 * *box_level is the level (0-based) of the box's module, else -1. */
static const char *vz_rep_id(vz_builder *b, const fx_node *n, const char *prefix, int top,
                             int *box_level) {
    *box_level = -1;
    if (top && b->depth > 0 && n->op != FX_NODE_PLACEHOLDER && n->op != FX_NODE_OUTPUT) {
        const fx_module_entry *lv[VZ_MAX_LEVELS];
        int nl = vz_levels(n, lv);
        if (nl > b->depth) {
            *box_level = b->depth;
            return vz_box_id(b, lv[b->depth]->path);
        }
    }
    return vz_node_id(b, prefix, n->name);
}

static Agnode_t *vz_rep(vz_builder *b, const fx_node *n, const char *prefix, int top) {
    int lvl;
    return vz_node(b->root, vz_rep_id(b, n, prefix, top, &lvl), 0);
}

static int vz_is_box(Agnode_t *n) { return aggetrec(n, (char *)VZ_BOXREC, 0) != NULL; }

/* An edge t -> h; between boxes (or a node and a box) one edge stands for all of them. */
static Agedge_t *vz_edge(vz_builder *b, Agnode_t *t, Agnode_t *h) {
    if (vz_is_box(t) || vz_is_box(h)) {
        Agedge_t *e = agedge(b->root, t, h, NULL, 0);
        if (e) return e;
    }
    return agedge(b->root, t, h, NULL, 1);
}

/* Edges from every node referenced in v (lists walked) to head. */
static int vz_arg_edges(vz_builder *b, const fx_ivalue *v, Agnode_t *head, const char *prefix,
                        int top) {
    if (v->tag == FX_IV_NODE && v->u.node) {
        Agnode_t *t = vz_rep(b, v->u.node, prefix, top);
        if (t && t != head && !vz_edge(b, t, head)) return vz_oom(b);
    } else if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) {
            int rc = vz_arg_edges(b, &v->u.list.items[i], head, prefix, top);
            if (rc) return rc;
        }
    }
    return FX_OK;
}

/* ---- node kinds ------------------------------------------------------------------------------ */
static int vz_is_scatter(const fx_opdef *op) {
    switch (op->id) {
    case FX_OP_SELECT_SCATTER:
    case FX_OP_SLICE_SCATTER:
    case FX_OP_INDEX_PUT:
    case FX_OP_INDEX_PUT_: return 1;
    default: break;
    }
    /* any op that some view names as its scatter inverse and that is not itself a view */
    const char *q = op->qualname;
    return strstr(q, "_scatter") != NULL;
}

static vz_kind vz_call_kind(const fx_node *n) {
    if (!n->aten) return VZ_CALL;
    if (vz_is_scatter(n->aten)) return VZ_SCATTER;
    if (fx_op_is_view(n->aten)) return VZ_VIEW;
    if (fx_op_is_inplace(n->aten)) return VZ_OP_INPLACE;
    return VZ_OP;
}

/* The input spec of placeholder `name`, or NULL. */
static const fx_input_spec *vz_input_spec(const vz_builder *b, const char *name) {
    if (!b->program) return NULL;
    for (int i = 0; i < b->program->sig.ninputs; i++) {
        const fx_input_spec *s = &b->program->sig.inputs[i];
        if (s->arg && strcmp(s->arg, name) == 0) return s;
    }
    return NULL;
}

/* ---- drawing nodes --------------------------------------------------------------------------- */
/* Creates the node `id` inside `in` with kind k, label fields f and the mutation line of m. */
static Agnode_t *vz_draw(vz_builder *b, Agraph_t *in, const char *id, vz_kind k,
                         const vz_label_fields *f, const fx_mutation *m) {
    if (!id) {
        vz_oom(b);
        return NULL;
    }
    if (vz_node(b->root, id, 0)) {
        fx_err_setf(b->err, FX_EINTERNAL, "two graph nodes map to the Graphviz id '%s'", id);
        return NULL;
    }
    Agnode_t *an = vz_node(in, id, 1);
    if (!an) {
        vz_oom(b);
        return NULL;
    }
    vz_style_node(an, k, m != NULL);
    b->lab.len = 0;
    if (b->lab.data) b->lab.data[0] = '\0';
    vz_label_expand(&b->lab, vz_style_get(k)->label, f);
    if (m) {
        fx_strbuf_appendf(&b->lab, "\\nv%d of ", m->version);
        vz_label_escape(&b->lab, m->state);
        if (m->from_op && m->from_op[0]) {
            fx_strbuf_append(&b->lab, " (");
            vz_label_escape(&b->lab, vz_short_target(m->from_op));
            fx_strbuf_append(&b->lab, ")");
        }
        if (m->view_path && m->view_path[0]) {
            fx_strbuf_append(&b->lab, "\\nthrough ");
            vz_label_escape(&b->lab, m->view_path);
        }
    }
    if (b->lab.oom) {
        vz_oom(b);
        return NULL;
    }
    vz_set(an, "label", fx_strbuf_cstr(&b->lab));
    return an;
}

/* The box of module lv[level] (created inside the clusters of lv[0..level) when missing). */
static Agnode_t *vz_box(vz_builder *b, const fx_module_entry *const *lv, int level) {
    Agnode_t *an = vz_node(b->root, vz_box_id(b, lv[level]->path), 0);
    if (an) return an;
    Agraph_t *in = vz_container(b, lv, level);
    if (!in) return NULL;
    an = vz_node(in, vz_box_id(b, lv[level]->path), 1);
    if (!an) return NULL;
    vz_boxrec *r = (vz_boxrec *)agbindrec(an, (char *)VZ_BOXREC, sizeof(vz_boxrec), 0);
    if (!r) return NULL;
    r->nops = r->nmut = 0;
    r->path = lv[level]->path;
    r->cls = lv[level]->cls;
    if (b->nboxes == b->boxcap) {
        int cap = b->boxcap ? b->boxcap * 2 : 16;
        Agnode_t **nb = fx_realloc(b->boxes, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        b->boxes = nb;
        b->boxcap = cap;
    }
    b->boxes[b->nboxes++] = an;
    vz_style_node(an, VZ_MODULE, 0);
    return an;
}

/* Final labels of the module boxes, once their op counts are known. */
static int vz_label_boxes(vz_builder *b) {
    for (int i = 0; i < b->nboxes; i++) {
        Agnode_t *an = b->boxes[i];
        vz_boxrec *r = (vz_boxrec *)aggetrec(an, (char *)VZ_BOXREC, 0);
        if (!r) continue;
        fx_strbuf name = FX_STRBUF_INIT;
        fx_strbuf_append(&name, r->path);
        if (r->cls && r->cls[0]) fx_strbuf_appendf(&name, ": %s", r->cls);
        fx_strbuf_appendf(&name, "\n%d op%s", r->nops, r->nops == 1 ? "" : "s");
        if (r->nmut) fx_strbuf_appendf(&name, ", %d mutation%s", r->nmut, r->nmut == 1 ? "" : "s");
        vz_label_fields f = {fx_strbuf_cstr(&name), NULL, NULL, NULL, NULL};
        b->lab.len = 0;
        if (b->lab.data) b->lab.data[0] = '\0';
        vz_label_expand(&b->lab, vz_style_get(VZ_MODULE)->label, &f);
        int oom = name.oom || b->lab.oom;
        fx_strbuf_free(&name);
        if (oom) return vz_oom(b);
        vz_set(an, "label", fx_strbuf_cstr(&b->lab));
        if (r->nmut) {
            vz_set(an, "color", VZ_MUTATION_COLOR);
            vz_set(an, "penwidth", VZ_MUTATION_PENWIDTH);
        }
    }
    return FX_OK;
}

static int vz_draw_graph(vz_builder *b, const fx_graph *g, Agraph_t *in, const char *prefix,
                         int top);

/* A call_function or get_attr node (and a get_attr's body). */
static int vz_draw_compute(vz_builder *b, const fx_node *n, Agraph_t *in, const char *prefix,
                           int top) {
    const fx_module_entry *lv[VZ_MAX_LEVELS];
    int nl = top ? vz_levels(n, lv) : 0;
    Agnode_t *an;
    if (top && b->depth > 0 && nl > b->depth) {
        an = vz_box(b, lv, b->depth);
        if (!an) return b->err->code ? b->err->code : vz_oom(b);
        vz_boxrec *r = (vz_boxrec *)aggetrec(an, (char *)VZ_BOXREC, 0);
        r->nops++;
        if (n->mutation) r->nmut++;
    } else {
        Agraph_t *c = top ? vz_container(b, lv, nl) : in;
        if (!c) return vz_oom(b);
        vz_kind k;
        if (n->op == FX_NODE_GET_ATTR) {
            k = n->subgraph ? VZ_SUBGRAPH : VZ_GET_ATTR;
        } else {
            k = vz_call_kind(n);
        }
        b->ty.len = 0;
        if (b->ty.data) b->ty.data[0] = '\0';
        fx_node_format_type(&b->ty, n);
        vz_label_fields f = {n->name, vz_short_target(n->target), fx_strbuf_cstr(&b->ty), NULL,
                             NULL};
        an = vz_draw(b, c, vz_node_id(b, prefix, n->name), k, &f, n->mutation);
        if (!an) return b->err->code;
        if (n->subgraph && fx_graph_first(n->subgraph)) {
            /* the body as a cluster next to its get_attr node */
            fx_strbuf sp = FX_STRBUF_INIT, cn = FX_STRBUF_INIT;
            fx_strbuf_appendf(&sp, "%s%s/", prefix, n->name);
            fx_strbuf_appendf(&cn, "cluster_%s%s", prefix, n->name);
            int rc = FX_OK;
            Agraph_t *body = NULL;
            if (sp.oom || cn.oom || !(body = vz_subg(c, fx_strbuf_cstr(&cn), 1))) {
                rc = vz_oom(b);
            } else {
                vz_style_cluster(body, 1);
                vz_set(body, "style", "rounded,filled,dashed");
                vz_set(body, "fillcolor", "#f8f0fc");
                b->lab.len = 0;
                if (b->lab.data) b->lab.data[0] = '\0';
                vz_label_escape(&b->lab, n->name);
                vz_set(body, "label", fx_strbuf_cstr(&b->lab));
                rc = vz_draw_graph(b, n->subgraph, body, fx_strbuf_cstr(&sp), 0);
            }
            if (rc == FX_OK) {
                const fx_node *first = fx_graph_first(n->subgraph);
                Agnode_t *h = vz_node(b->root, vz_node_id(b, fx_strbuf_cstr(&sp), first->name), 0);
                Agedge_t *e = h ? agedge(b->root, an, h, NULL, 1) : NULL;
                if (e) {
                    vz_set(e, "lhead", fx_strbuf_cstr(&cn));
                    vz_set(e, "style", "dotted");
                    vz_set(e, "arrowhead", "odot");
                }
            }
            fx_strbuf_free(&sp);
            fx_strbuf_free(&cn);
            if (rc) return rc;
        }
    }
    /* re-find the representative: the id scratch was reused above */
    Agnode_t *head = vz_rep(b, n, prefix, top);
    for (int i = 0; i < n->nargs; i++) {
        int rc = vz_arg_edges(b, &n->args[i], head, prefix, top);
        if (rc) return rc;
    }
    return FX_OK;
}

/* State of the output walk: leaves of the output's args, in order, matched to sig.outputs. */
typedef struct vz_outwalk {
    const fx_node *out; /* the output node */
    Agraph_t *in;
    const char *prefix;
    int top;
    int index; /* leaves seen so far */
} vz_outwalk;

static int vz_output_leaf(vz_builder *b, vz_outwalk *w, const fx_ivalue *v) {
    int i = w->index++;
    if (v->tag != FX_IV_NODE || !v->u.node) return FX_OK;
    const fx_node *src = v->u.node;
    const fx_output_spec *spec = NULL;
    if (w->top && b->program && i < b->program->sig.noutputs) {
        spec = &b->program->sig.outputs[i];
        if (!spec->arg || strcmp(spec->arg, src->name) != 0) spec = NULL;
    }
    vz_kind k = spec ? vz_kind_of_output(spec->kind) : VZ_OUTPUT;
    /* the output node of this kind */
    fx_strbuf oid = FX_STRBUF_INIT;
    fx_strbuf_appendf(&oid, "%s%s", w->prefix, w->out->name);
    if (k != VZ_OUTPUT) fx_strbuf_appendf(&oid, ".%s", vz_style_get(k)->kind);
    if (oid.oom) return vz_oom(b);
    Agnode_t *on = vz_node(b->root, fx_strbuf_cstr(&oid), 0);
    if (!on) {
        vz_label_fields f = {w->out->name, NULL, NULL,
                             spec ? fx_output_kind_name(spec->kind) : NULL, NULL};
        on = vz_draw(b, w->in, fx_strbuf_cstr(&oid), k, &f, NULL);
    }
    fx_strbuf_free(&oid);
    if (!on) return b->err->code;
    Agnode_t *t = vz_rep(b, src, w->prefix, w->top);
    if (!t) return FX_OK;
    Agedge_t *e = agedge(b->root, t, on, NULL, 1);
    if (!e) return vz_oom(b);
    vz_style_output_edge(e, k);
    if (spec && spec->kind != FX_OUTPUT_USER_OUTPUT && spec->target) {
        b->lab.len = 0;
        if (b->lab.data) b->lab.data[0] = '\0';
        vz_label_escape(&b->lab, spec->target);
        if (b->lab.oom) return vz_oom(b);
        vz_set(e, "label", fx_strbuf_cstr(&b->lab));
    }
    return FX_OK;
}

static int vz_output_walk(vz_builder *b, vz_outwalk *w, const fx_ivalue *v) {
    if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) {
            int rc = vz_output_walk(b, w, &v->u.list.items[i]);
            if (rc) return rc;
        }
        return FX_OK;
    }
    return vz_output_leaf(b, w, v);
}

static int vz_draw_graph(vz_builder *b, const fx_graph *g, Agraph_t *in, const char *prefix,
                         int top) {
    for (const fx_node *n = fx_graph_first(g); n; n = n->next) {
        int rc = FX_OK;
        switch (n->op) {
        case FX_NODE_PLACEHOLDER: {
            const fx_input_spec *s = top ? vz_input_spec(b, n->name) : NULL;
            vz_kind k = s ? vz_kind_of_input(s->kind) : VZ_PLACEHOLDER;
            b->ty.len = 0;
            if (b->ty.data) b->ty.data[0] = '\0';
            fx_node_format_type(&b->ty, n);
            vz_label_fields f = {n->name, NULL, fx_strbuf_cstr(&b->ty),
                                 s ? fx_input_kind_name(s->kind) : NULL, s ? s->target : NULL};
            if (!vz_draw(b, in, vz_node_id(b, prefix, n->name), k, &f, n->mutation)) {
                rc = b->err->code;
            }
            break;
        }
        case FX_NODE_GET_ATTR:
        case FX_NODE_CALL_FUNCTION: rc = vz_draw_compute(b, n, in, prefix, top); break;
        case FX_NODE_OUTPUT: {
            vz_outwalk w = {n, in, prefix, top, 0};
            for (int i = 0; i < n->nargs && rc == FX_OK; i++) {
                rc = vz_output_walk(b, &w, &n->args[i]);
            }
            if (rc == FX_OK && w.index == 0) {
                /* nothing returned: still show the output node */
                vz_label_fields f = {n->name, NULL, NULL, NULL, NULL};
                if (!vz_draw(b, in, vz_node_id(b, prefix, n->name), VZ_OUTPUT, &f, NULL)) {
                    rc = b->err->code;
                }
            }
            break;
        }
        }
        if (rc) return rc;
        if (b->id.oom || b->lab.oom || b->ty.oom) return vz_oom(b);
    }
    return FX_OK;
}

/* ---- provenance highlight -------------------------------------------------------------------- */
static int vz_highlight(vz_builder *b, const fx_provenance *pv) {
    Agnode_t *prev = NULL;
    for (int i = 0; i < pv->nsteps; i++) {
        const fx_node *n = pv->steps[i].node;
        Agnode_t *an = n ? vz_rep(b, n, "", 1) : NULL;
        if (!an) continue;
        vz_style_highlight_node(an);
        if (prev && prev != an) {
            Agedge_t *e = agedge(b->root, prev, an, NULL, 0);
            if (!e) {
                /* versions not adjacent in the graph: a dashed link that does not move ranks */
                e = agedge(b->root, prev, an, NULL, 1);
                if (!e) return vz_oom(b);
                vz_set(e, "style", "dashed");
                vz_set(e, "constraint", "false");
            }
            vz_style_highlight_edge(e);
        }
        prev = an;
    }
    /* the last version flowing into its mutation output */
    if (prev && pv->output && pv->state) {
        for (Agedge_t *e = agfstout(b->root, prev); e; e = agnxtout(b->root, e)) {
            const char *lab = agget(e, (char *)"label");
            if (lab && strcmp(lab, pv->state) == 0) vz_style_highlight_edge(e);
        }
    }
    return FX_OK;
}

/* ---- entry ----------------------------------------------------------------------------------- */
int vz_build(const fx_graph *g, const fxviz_opts *opts, Agraph_t **out, fx_err *err) {
    *out = NULL;
    if (!g) return fx_err_setf(err, FX_EARG, "fxviz: no graph to draw");
    fxviz_opts none = {0};
    if (!opts) opts = &none;
    if (opts->depth < 0) {
        return fx_err_setf(err, FX_EARG, "fxviz: depth must be >= 0 (0 = no collapsing), got %d",
                           opts->depth);
    }
    vz_builder b = {0};
    fx_err scratch;
    if (!err) err = &scratch;
    fx_err_clear(err);
    b.program = opts->program;
    b.depth = opts->depth;
    b.err = err;
    b.root = agopen((char *)"fxdb", Agdirected, &vz_disc);
    if (!b.root) return vz_oom(&b);
    vz_style_defaults(b.root, opts->title);
    int rc = vz_draw_graph(&b, g, b.root, "", 1);
    if (rc == FX_OK) rc = vz_label_boxes(&b);
    if (rc == FX_OK && opts->highlight) rc = vz_highlight(&b, opts->highlight);
    if (rc == FX_OK) vz_style_size(b.root, agnnodes(b.root));
    agclean(b.root, AGNODE, (char *)VZ_BOXREC);
    fx_free(b.boxes);
    fx_strbuf_free(&b.id);
    fx_strbuf_free(&b.lab);
    fx_strbuf_free(&b.ty);
    if (rc != FX_OK) {
        if (err && err->code == FX_OK) fx_err_setf(err, rc, "fxviz: building the graph failed");
        agclose(b.root);
        return rc;
    }
    *out = b.root;
    return FX_OK;
}
