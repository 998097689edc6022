/* viz/viz_build.c — core graph -> cgraph graph: nodes, edges, module clusters and boxes, folded
 * parameters, one output node per mutated state, highlight, legend.
 * Layer: viz. Reads fx_graph / fx_program / fx_provenance through core's public headers only.
 *
 * Invariants of the built graph:
 *  - every drawn fx_node of the top graph has the node id `name`; nodes of a higher-order op's
 *    body (a get_attr's subgraph) have `<get_attr name>/<name>` (nested bodies chain the
 *    prefix). FX names are identifiers, so they never contain '/' or '.', and ids cannot clash;
 *  - a module that is not open is one node with id `module.<path>`, holding a vz_boxrec until
 *    the end of the build;
 *  - a mutated state's output node is `<output name>.<kind>.<state>`
 *    ("output.buffer_mutation.layers.0.cache_k"), user outputs share `<output name>.user_output`;
 *    a bare graph has one node `output`;
 *  - module clusters are subgraphs named `cluster_<path>`, nested as nn_module_stack nests;
 *    a higher-order body is the cluster `cluster_<prefix><get_attr name>`.
 * Where a top-graph fx_node is drawn (its own node, a box, an external node, or nothing for a
 * folded parameter) is kept in a pointer map, filled before any user of the node is drawn. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/hop.h"
#include "viz/viz_impl.h"

#define VZ_MAX_LEVELS 64 /* nn_module_stack entries considered per node; deeper ones ignored */
#define VZ_BOXREC "fxviz_box"

/* The per-node record of a module box (agbindrec), dropped by agclean at the end. */
typedef struct vz_boxrec {
    Agrec_t h;        /* cgraph's record header; must come first */
    int nops;         /* call_function / get_attr nodes inside the box */
    int nmut;         /* of which carry a mutation record */
    int nwhy;         /* highlighted provenance steps inside the box */
    const char *path; /* module path, borrowed from an fx_node of the graph being drawn */
    const char *cls;  /* module class, same owner */
    char why[160];    /* "v1, v2 of cache_k": the highlighted versions made inside */
} vz_boxrec;

/* Where a top-graph fx_node is drawn: `node` (NULL when not drawn) inside subgraph `in`. */
typedef struct vz_slot {
    const fx_node *key;
    Agnode_t *node;
    Agraph_t *in;
    int shared; /* 0 unknown, 1 no, 2 yes: read in VZ_SHARED_MODULES or more top modules */
} vz_slot;

/* A value read inside this many top-level modules or more (the rotary tables of every layer of
 * a transformer) is drawn once where it is made and again, as a small "shared" copy, inside each
 * reader's cluster: dot lays out the long edges to every layer in time quadratic in the layers
 * (32 layers: 10 s of 10.1 s), the copies in no time. */
#define VZ_SHARED_MODULES 3

/* How many call_function / get_attr nodes a module's subtree holds. */
typedef struct vz_pcount {
    const char *path; /* borrowed from a node's nn_module_stack */
    int n;
} vz_pcount;

typedef struct vz_builder {
    Agraph_t *root;
    const fx_program *program; /* NULL for a bare graph */
    const fxviz_opts *o;
    const fx_graph *g; /* the top graph */
    fx_strbuf id;      /* scratch: node ids */
    fx_strbuf lab;     /* scratch: labels */
    fx_strbuf ty;      /* scratch: value types */
    Agnode_t **boxes;  /* (nboxes,) module boxes, in creation order */
    int nboxes, boxcap;
    vz_slot *map; /* (mapcap,) open addressing, key NULL = empty */
    size_t mapcap;
    vz_pcount *pc; /* (pccap,) ops per module path (subtree), key NULL = empty */
    size_t pccap;
    unsigned used; /* bit k: a node of vz_kind k was drawn (legend) */
    int ninside;   /* compute nodes inside o->root */
    fx_err *err;
} vz_builder;

/* Where a top-graph node goes: the chain of modules below the root (outermost first), how many
 * of them are open clusters, and whether chain[nopen] is the box holding it. */
typedef struct vz_place {
    const fx_module_entry *lv[VZ_MAX_LEVELS];
    int nlv;
    int nopen;
    int box;
    int inside; /* 0: outside opts->root */
} vz_place;

/* ---- the DOT writer discipline (agwrite into an fx_strbuf) ----------------------------------- */
static int vz_io_putstr(void *chan, const char *str) {
    fx_strbuf_append((fx_strbuf *)chan, str);
    return ((fx_strbuf *)chan)->oom ? EOF : 0;
}
static int vz_io_flush(void *chan) { return 0; }
static int vz_io_read(void *chan, char *buf, int bufsize) { return 0; }

static Agiodisc_t vz_iodisc = {vz_io_read, vz_io_putstr, vz_io_flush};
static Agdisc_t vz_disc = {&AgMemDisc, &AgIdDisc, &vz_iodisc};

/* ---- the node map ---------------------------------------------------------------------------- */
static size_t vz_hash(const fx_node *n, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)n;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

/* The slot of n: its own when present, else the empty one it would take. */
static vz_slot *vz_slot_of(vz_builder *b, const fx_node *n) {
    size_t i = vz_hash(n, b->mapcap);
    while (b->map[i].key && b->map[i].key != n) i = (i + 1) & (b->mapcap - 1);
    return &b->map[i];
}

static void vz_map_put(vz_builder *b, const fx_node *n, Agnode_t *an, Agraph_t *in) {
    vz_slot *s = vz_slot_of(b, n);
    s->key = n;
    s->node = an;
    s->in = in;
    s->shared = 0;
}

/* The slot of module `path` in the op counts: its own, or the empty one it would take. */
static vz_pcount *vz_pcount_of(const vz_builder *b, const char *path) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const char *c = path; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    size_t i = (size_t)h & (b->pccap - 1);
    while (b->pc[i].path && strcmp(b->pc[i].path, path) != 0) i = (i + 1) & (b->pccap - 1);
    return &b->pc[i];
}

/* Counts the ops of every module subtree of the top graph, into a table sized for one entry
 * per node and level. FX_ENOMEM when it cannot be allocated. */
static int vz_count_ops(vz_builder *b, const fx_graph *g) {
    size_t need = 16;
    for (const fx_node *n = fx_graph_first(g); n; n = n->next) need += (size_t)n->nmodules;
    b->pccap = 64;
    while (b->pccap < need * 2) b->pccap *= 2;
    b->pc = fx_calloc(b->pccap, sizeof *b->pc);
    if (!b->pc) return FX_ENOMEM;
    for (const fx_node *n = fx_graph_first(g); n; n = n->next) {
        if (n->op != FX_NODE_CALL_FUNCTION && n->op != FX_NODE_GET_ATTR) continue;
        for (int i = 0; i < n->nmodules; i++) {
            const char *p = n->modules[i].path;
            if (!p || !p[0]) continue;
            vz_pcount *c = vz_pcount_of(b, p);
            c->path = p;
            c->n++;
        }
    }
    return FX_OK;
}

/* ---- small helpers --------------------------------------------------------------------------- */
static void vz_sb_reset(fx_strbuf *sb) {
    sb->len = 0;
    if (sb->data) sb->data[0] = '\0';
}

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

/* The target a call node's label shows: for auto_functionalized (whose name says so) the custom
 * op it runs, "mylib.update_cache.default". */
static const char *vz_node_target(const fx_node *n) {
    int first;
    const fx_opdef *w = fx_hop_wrapped_op(n, &first);
    return w ? w->target : vz_short_target(n->target);
}

/* prefix + name in the id scratch buffer; NULL once that buffer ran out of memory (every
 * caller then fails with FX_ENOMEM: a NULL name must never reach agnode, which would make an
 * anonymous node). */
static const char *vz_node_id(vz_builder *b, const char *prefix, const char *name) {
    vz_sb_reset(&b->id);
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

static int vz_in_list(const char *path, const char *const *list, int n) {
    for (int i = 0; i < n; i++) {
        if (list[i] && strcmp(list[i], path) == 0) return 1;
    }
    return 0;
}

/* Whether module `path`, `level` levels below the root (1 = outermost), is drawn as a cluster. */
static int vz_open(const vz_builder *b, const char *path, int level) {
    const fxviz_opts *o = b->o;
    if (vz_in_list(path, o->collapse, o->ncollapse)) return 0;
    if (o->depth == FXVIZ_DEPTH_FULL || level <= o->depth) return 1;
    size_t len = strlen(path);
    for (int i = 0; i < o->nexpand; i++) {
        const char *e = o->expand[i];
        if (e && strncmp(e, path, len) == 0 && (e[len] == '\0' || e[len] == '.')) return 1;
    }
    return 0;
}

static int vz_has_root(const vz_builder *b) { return b->o->root && b->o->root[0]; }

static void vz_place_of(const vz_builder *b, const fx_node *n, vz_place *pl) {
    const fx_module_entry *all[VZ_MAX_LEVELS];
    int na = vz_levels(n, all), start = 0;
    pl->inside = 1;
    if (vz_has_root(b)) {
        start = -1;
        for (int i = 0; i < na; i++) {
            if (strcmp(all[i]->path, b->o->root) == 0) {
                start = i + 1;
                break;
            }
        }
        if (start < 0) {
            pl->inside = 0;
            start = na;
        }
    }
    pl->nlv = na - start;
    for (int i = 0; i < pl->nlv; i++) pl->lv[i] = all[start + i];
    pl->nopen = pl->nlv;
    pl->box = 0;
    for (int i = 0; i < pl->nlv; i++) {
        if (!vz_open(b, pl->lv[i]->path, i + 1)) {
            pl->nopen = i;
            pl->box = 1;
            break;
        }
    }
    /* an open module holding a single op inside another module (a Linear's linear in an
       attention block) is no cluster: the op sits in the enclosing one and names the module in
       its label; hundreds of one-node clusters cost dot more than anything else in a
       transformer layer. Top-level modules stay clusters, the outline of the program. */
    if (pl->box && pl->nopen > 0 && b->pc && vz_pcount_of(b, pl->lv[pl->nopen]->path)->n == 1)
        pl->box = 0; /* nor is such a module a box of "1 op": the op is drawn */
    while (!pl->box && pl->nopen > 1 && b->pc &&
           vz_pcount_of(b, pl->lv[pl->nopen - 1]->path)->n == 1)
        pl->nopen--;
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
            vz_sb_reset(&b->lab);
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

static int vz_is_box(Agnode_t *n) { return aggetrec(n, (char *)VZ_BOXREC, 0) != NULL; }

/* One edge t -> h per pair, labelled with src's dtype[shape] under opts->edge_shapes. */
static int vz_edge(vz_builder *b, Agnode_t *t, Agnode_t *h, const fx_node *src) {
    if (agedge(b->root, t, h, NULL, 0)) return FX_OK;
    Agedge_t *e = agedge(b->root, t, h, NULL, 1);
    if (!e) return vz_oom(b);
    if (b->o->edge_shapes && src) {
        vz_sb_reset(&b->ty);
        fx_node_format_type(&b->ty, src);
        vz_sb_reset(&b->lab);
        vz_label_escape(&b->lab, fx_strbuf_cstr(&b->ty));
        if (b->lab.oom || b->ty.oom) return vz_oom(b);
        vz_set(e, "label", fx_strbuf_cstr(&b->lab));
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

/* ---- drawing nodes --------------------------------------------------------------------------- */
/* Appends the mutation lines of m (and the Lua line of n's innermost frame) to the label. */
static void vz_mutation_lines(vz_builder *b, const fx_mutation *m, const fx_node *n) {
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
    if (n && n->nstack > 0 && n->stack[0].file) {
        fx_strbuf_append(&b->lab, "\\n");
        vz_label_escape(&b->lab, n->stack[0].file);
        fx_strbuf_appendf(&b->lab, ":%d", n->stack[0].line);
    }
}

/* Creates the node `id` inside `in` with kind k and label fields f; n (may be NULL) adds its
 * mutation lines. The label is left in b->lab for the caller to extend; vz_draw sets it. */
static Agnode_t *vz_draw(vz_builder *b, Agraph_t *in, const char *id, vz_kind k,
                         const vz_label_fields *f, const fx_node *n) {
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
    const fx_mutation *m = n ? n->mutation : NULL;
    vz_style_node(an, k, m != NULL);
    b->used |= 1u << k;
    if (m) b->used |= VZ_LEGEND_MUTATION;
    vz_sb_reset(&b->lab);
    vz_label_expand(&b->lab, vz_style_get(k)->label, f);
    if (m) vz_mutation_lines(b, m, n);
    if (b->lab.oom) {
        vz_oom(b);
        return NULL;
    }
    vz_set(an, "label", fx_strbuf_cstr(&b->lab));
    return an;
}

/* The box of module pl->lv[pl->nopen] (created inside the open clusters above it). */
static Agnode_t *vz_box(vz_builder *b, const vz_place *pl, Agraph_t **in) {
    const fx_module_entry *m = pl->lv[pl->nopen];
    *in = vz_container(b, pl->lv, pl->nopen);
    if (!*in) return NULL;
    Agnode_t *an = vz_node(b->root, vz_box_id(b, m->path), 0);
    if (an) return an;
    an = vz_node(*in, vz_box_id(b, m->path), 1);
    if (!an) return NULL;
    vz_boxrec *r = (vz_boxrec *)agbindrec(an, (char *)VZ_BOXREC, sizeof(vz_boxrec), 0);
    if (!r) return NULL;
    r->nops = r->nmut = r->nwhy = 0;
    r->path = m->path;
    r->cls = m->cls;
    r->why[0] = '\0';
    if (b->nboxes == b->boxcap) {
        int cap = b->boxcap ? b->boxcap * 2 : 16;
        Agnode_t **nb = fx_realloc(b->boxes, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        b->boxes = nb;
        b->boxcap = cap;
    }
    b->boxes[b->nboxes++] = an;
    vz_style_node(an, VZ_MODULE, 0);
    /* the boxes of one cluster form a group: dot keeps the chain of blocks a straight column
       instead of a staircase pushed sideways by their output nodes */
    vz_set(an, "group", agnameof(*in));
    vz_set(an, "margin", "0.16,0.06"); /* room for the 3-D edge of box3d */
    b->used |= 1u << VZ_MODULE;
    return an;
}

/* Final labels of the module boxes, once their op counts and highlighted versions are known. */
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
        if (r->nwhy) fx_strbuf_appendf(&name, "\nwhy: %s", r->why);
        vz_label_fields f = {fx_strbuf_cstr(&name), NULL, NULL, NULL, NULL};
        vz_sb_reset(&b->lab);
        vz_label_expand(&b->lab, vz_style_get(VZ_MODULE)->label, &f);
        int oom = name.oom || b->lab.oom;
        fx_strbuf_free(&name);
        if (oom) return vz_oom(b);
        vz_set(an, "label", fx_strbuf_cstr(&b->lab));
        if (r->nwhy) {
            vz_style_highlight_node(an);
        } else if (r->nmut) {
            b->used |= VZ_LEGEND_MUTATION;
            vz_set(an, "color", VZ_MUTATION_COLOR);
            vz_set(an, "penwidth", VZ_MUTATION_PENWIDTH);
        }
    }
    return FX_OK;
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

static vz_kind vz_placeholder_kind(const vz_builder *b, const fx_node *n,
                                   const fx_input_spec **spec) {
    *spec = vz_input_spec(b, n->name);
    return *spec ? vz_kind_of_input((*spec)->kind) : VZ_PLACEHOLDER;
}

/* Parameters and constants are folded into their users unless opts->params. */
static int vz_folds(const vz_builder *b, vz_kind k) {
    return !b->o->params && (k == VZ_IN_PARAMETER || k == VZ_IN_CONSTANT);
}

/* Draws placeholder n of the top graph in `in` with its signature colours. */
static Agnode_t *vz_draw_placeholder(vz_builder *b, const fx_node *n, Agraph_t *in) {
    const fx_input_spec *s;
    vz_kind k = vz_placeholder_kind(b, n, &s);
    vz_sb_reset(&b->ty);
    fx_node_format_type(&b->ty, n);
    vz_label_fields f = {n->name, NULL, fx_strbuf_cstr(&b->ty),
                         s ? fx_input_kind_name(s->kind) : NULL, s ? s->target : NULL};
    Agnode_t *an = vz_draw(b, in, vz_node_id(b, "", n->name), k, &f, n);
    if (an) vz_map_put(b, n, an, in);
    return an;
}

/* Where the placeholder n of the top graph goes: the innermost cluster holding all its users,
 * or (for a buffer, parameter or constant) the box holding all of them. */
static int vz_place_placeholder(vz_builder *b, const fx_node *n) {
    const fx_input_spec *s;
    vz_kind k = vz_placeholder_kind(b, n, &s);
    if (vz_folds(b, k)) {
        vz_map_put(b, n, NULL, NULL);
        return FX_OK;
    }
    vz_place common = {0}, pl;
    int ncommon = -1, samebox = 1;
    for (int i = 0; i < n->nusers; i++) {
        const fx_node *u = n->users[i];
        if (u->op == FX_NODE_OUTPUT) {
            ncommon = 0;
            samebox = 0;
            continue;
        }
        vz_place_of(b, u, &pl);
        if (ncommon < 0) {
            common = pl;
            ncommon = pl.nopen;
            continue;
        }
        int j = 0;
        while (j < ncommon && j < pl.nopen && strcmp(common.lv[j]->path, pl.lv[j]->path) == 0) j++;
        if (!(samebox && common.box && pl.box && j == ncommon && ncommon == pl.nopen &&
              strcmp(common.lv[j]->path, pl.lv[j]->path) == 0))
            samebox = 0;
        ncommon = j;
    }
    if (ncommon < 0) { /* unused */
        ncommon = 0;
        samebox = 0;
    }
    if (samebox && common.box && k != VZ_IN_USER && k != VZ_PLACEHOLDER) {
        Agraph_t *in;
        Agnode_t *box = vz_box(b, &common, &in);
        if (!box) return b->err->code ? b->err->code : vz_oom(b);
        vz_map_put(b, n, box, in);
        return FX_OK;
    }
    /* user inputs stay at the top, where a reader looks for the program's inputs */
    if (k == VZ_IN_USER || k == VZ_PLACEHOLDER || k == VZ_IN_TOKEN) ncommon = 0;
    Agraph_t *in = vz_container(b, common.lv, ncommon);
    if (!in) return vz_oom(b);
    return vz_draw_placeholder(b, n, in) ? FX_OK : b->err->code;
}

/* A value from outside opts->root: a placeholder in its own colours, anything else as a dashed
 * "external" node, both at the top of the picture. */
static Agnode_t *vz_external(vz_builder *b, const fx_node *n) {
    if (n->op == FX_NODE_PLACEHOLDER) {
        const fx_input_spec *s;
        if (vz_folds(b, vz_placeholder_kind(b, n, &s))) {
            vz_map_put(b, n, NULL, NULL);
            return NULL;
        }
        return vz_draw_placeholder(b, n, b->root);
    }
    vz_sb_reset(&b->ty);
    fx_node_format_type(&b->ty, n);
    vz_label_fields f = {n->name, vz_node_target(n), fx_strbuf_cstr(&b->ty), NULL, NULL};
    Agnode_t *an = vz_draw(b, b->root, vz_node_id(b, "", n->name), VZ_EXTERNAL, &f, NULL);
    if (an) vz_map_put(b, n, an, b->root);
    return an;
}

/* Where the top-graph node n is drawn (NULL: nowhere, or an error when b->err is set). */
static Agnode_t *vz_rep_top(vz_builder *b, const fx_node *n) {
    vz_slot *s = vz_slot_of(b, n);
    if (s->key) return s->node;
    if (vz_has_root(b)) return vz_external(b, n);
    return NULL;
}

static Agnode_t *vz_rep(vz_builder *b, const fx_node *n, const char *prefix, int top) {
    if (top) return vz_rep_top(b, n);
    return vz_node(b->root, vz_node_id(b, prefix, n->name), 0);
}

/* The top-level module of node n's place ("" for none). */
static const char *vz_top_module(const vz_builder *b, const fx_node *n) {
    vz_place pl;
    vz_place_of(b, n, &pl);
    return pl.nlv ? pl.lv[0]->path : "";
}

/* Whether n is read inside VZ_SHARED_MODULES or more top-level modules (cached in its slot). */
static int vz_shared(vz_builder *b, vz_slot *s) {
    if (s->shared) return s->shared == 2;
    const fx_node *n = s->key;
    const char *seen[VZ_SHARED_MODULES];
    int nseen = 0;
    for (int i = 0; i < n->nusers && nseen < VZ_SHARED_MODULES; i++) {
        if (n->users[i]->op == FX_NODE_OUTPUT) continue;
        const char *m = vz_top_module(b, n->users[i]);
        int j = 0;
        while (j < nseen && strcmp(seen[j], m) != 0) j++;
        if (j == nseen) seen[nseen++] = m;
    }
    s->shared = nseen >= VZ_SHARED_MODULES ? 2 : 1;
    return s->shared == 2;
}

/* The copy of shared value src for a reader drawn as `head` inside subgraph `in`:
 * "<name>@<cluster>", one per cluster, or "<name>@<head>" at the top of the picture. */
static Agnode_t *vz_shared_copy(vz_builder *b, const fx_node *src, Agraph_t *in, Agnode_t *head) {
    fx_strbuf cid = FX_STRBUF_INIT;
    fx_strbuf_appendf(&cid, "%s@%s", src->name,
                      agnameof(in == b->root ? (void *)head : (void *)in));
    if (cid.oom) {
        vz_oom(b);
        return NULL;
    }
    Agnode_t *an = vz_node(b->root, fx_strbuf_cstr(&cid), 0);
    if (!an) {
        vz_sb_reset(&b->ty);
        fx_node_format_type(&b->ty, src);
        vz_label_fields f = {src->name, "(shared)", fx_strbuf_cstr(&b->ty), NULL, NULL};
        an = vz_draw(b, in, fx_strbuf_cstr(&cid), VZ_SHARED, &f, NULL);
    }
    fx_strbuf_free(&cid);
    return an;
}

/* Edges from every node referenced in v (lists walked) to head, which user (a top-graph node,
 * or NULL in a body) is drawn as. */
static int vz_arg_edges(vz_builder *b, const fx_ivalue *v, Agnode_t *head, const fx_node *user,
                        const char *prefix, int top) {
    if (v->tag == FX_IV_NODE && v->u.node) {
        const fx_node *src = v->u.node;
        Agnode_t *t = vz_rep(b, src, prefix, top);
        if (b->err->code) return b->err->code;
        if (!t || t == head) return FX_OK;
        if (top && user) {
            vz_slot *s = vz_slot_of(b, src);
            vz_slot *us = vz_slot_of(b, user);
            if (s->key && us->key && vz_shared(b, s) &&
                strcmp(vz_top_module(b, src), vz_top_module(b, user)) != 0) {
                t = vz_shared_copy(b, src, us->in, head);
                if (!t) return b->err->code;
            }
        }
        return vz_edge(b, t, head, src);
    } else if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) {
            int rc = vz_arg_edges(b, &v->u.list.items[i], head, user, prefix, top);
            if (rc) return rc;
        }
    }
    return FX_OK;
}

/* The label lines of the folded parameters among v's nodes: "wq.weight f32[4096, 4096]", the
 * target relative to module `in_path` when it lies inside it. */
static void vz_param_lines(vz_builder *b, const fx_ivalue *v, const char *in_path) {
    if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) vz_param_lines(b, &v->u.list.items[i], in_path);
        return;
    }
    if (v->tag != FX_IV_NODE || !v->u.node || v->u.node->op != FX_NODE_PLACEHOLDER) return;
    const fx_node *p = v->u.node;
    vz_slot *s = vz_slot_of(b, p);
    if (!s->key || s->node) return;
    const fx_input_spec *spec = vz_input_spec(b, p->name);
    const char *t = spec && spec->target ? spec->target : p->name;
    size_t len = in_path ? strlen(in_path) : 0;
    if (len && strncmp(t, in_path, len) == 0 && t[len] == '.') t += len + 1;
    fx_strbuf_append(&b->lab, "\\n");
    vz_label_escape(&b->lab, t);
    vz_sb_reset(&b->ty);
    fx_node_format_type(&b->ty, p);
    if (b->ty.len) {
        fx_strbuf_append(&b->lab, " ");
        vz_label_escape(&b->lab, fx_strbuf_cstr(&b->ty));
    }
}

/* With opts->root, draws (or folds) the outside values among v's nodes before their reader,
 * so its label can name folded parameters and the label scratch is not reused mid-label. */
static void vz_resolve_outside(vz_builder *b, const fx_ivalue *v) {
    if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) vz_resolve_outside(b, &v->u.list.items[i]);
    } else if (v->tag == FX_IV_NODE && v->u.node) {
        vz_rep_top(b, v->u.node);
    }
}

static int vz_draw_graph(vz_builder *b, const fx_graph *g, Agraph_t *in, const char *prefix,
                         int top);

/* The body of a higher-order op as a cluster next to its get_attr node an. */
static int vz_draw_body(vz_builder *b, const fx_node *n, Agnode_t *an, Agraph_t *c,
                        const char *prefix) {
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
        vz_sb_reset(&b->lab);
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
    return rc;
}

/* A call_function or get_attr node (and a get_attr's body). */
static int vz_draw_compute(vz_builder *b, const fx_node *n, Agraph_t *in, const char *prefix,
                           int top) {
    vz_place pl;
    Agnode_t *an;
    if (top) {
        vz_place_of(b, n, &pl);
        if (!pl.inside) return FX_OK;
        b->ninside++;
        if (vz_has_root(b)) {
            for (int i = 0; i < n->nargs; i++) vz_resolve_outside(b, &n->args[i]);
            if (b->err->code) return b->err->code;
        }
    } else {
        pl.nlv = pl.nopen = pl.box = 0;
    }
    if (pl.box) {
        Agraph_t *bin;
        an = vz_box(b, &pl, &bin);
        if (!an) return b->err->code ? b->err->code : vz_oom(b);
        vz_boxrec *r = (vz_boxrec *)aggetrec(an, (char *)VZ_BOXREC, 0);
        r->nops++;
        if (n->mutation) r->nmut++;
        vz_map_put(b, n, an, bin);
    } else {
        Agraph_t *c = top ? vz_container(b, pl.lv, pl.nopen) : in;
        if (!c) return vz_oom(b);
        vz_kind k;
        if (n->op == FX_NODE_GET_ATTR) {
            k = n->subgraph ? VZ_SUBGRAPH : VZ_GET_ATTR;
        } else {
            k = vz_call_kind(n);
        }
        vz_sb_reset(&b->ty);
        fx_node_format_type(&b->ty, n);
        vz_label_fields f = {n->name, vz_node_target(n), fx_strbuf_cstr(&b->ty), NULL,
                             NULL};
        an = vz_draw(b, c, vz_node_id(b, prefix, n->name), k, &f, n);
        if (!an) return b->err->code;
        if (top) {
            vz_map_put(b, n, an, c);
            /* folded parameters: one label line each */
            size_t before = b->lab.len;
            const char *in_path = pl.nopen         ? pl.lv[pl.nopen - 1]->path
                                  : vz_has_root(b) ? b->o->root
                                                   : NULL;
            for (int i = 0; i < n->nargs; i++) vz_param_lines(b, &n->args[i], in_path);
            if (pl.nopen < pl.nlv) {
                /* the single-op module it stands for, relative to its cluster */
                const fx_module_entry *m = pl.lv[pl.nlv - 1];
                const char *rel = m->path;
                size_t len = in_path ? strlen(in_path) : 0;
                if (len && strncmp(rel, in_path, len) == 0 && rel[len] == '.') rel += len + 1;
                fx_strbuf_append(&b->lab, "\\n");
                vz_label_escape(&b->lab, rel);
                if (m->cls && m->cls[0]) {
                    fx_strbuf_append(&b->lab, ": ");
                    vz_label_escape(&b->lab, m->cls);
                }
            }
            if (b->lab.oom) return vz_oom(b);
            if (b->lab.len != before) vz_set(an, "label", fx_strbuf_cstr(&b->lab));
        }
        if (n->subgraph && fx_graph_first(n->subgraph)) {
            int rc = vz_draw_body(b, n, an, c, prefix);
            if (rc) return rc;
        }
    }
    for (int i = 0; i < n->nargs; i++) {
        int rc = vz_arg_edges(b, &n->args[i], an, top ? n : NULL, prefix, top);
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
    Agnode_t *t;
    Agraph_t *tin = w->in;
    if (w->top) {
        vz_slot *s = vz_slot_of(b, src);
        if (!s->key || !s->node) return FX_OK; /* outside opts->root, or folded */
        if (vz_has_root(b)) {
            /* a value made outside the module drawn (read inside as an external node) is not
               an output of this picture */
            vz_place pl;
            vz_place_of(b, src, &pl);
            if (src->op == FX_NODE_PLACEHOLDER || !pl.inside) return FX_OK;
        }
        t = s->node;
        tin = s->in;
    } else {
        t = vz_rep(b, src, w->prefix, 0);
        if (!t) return FX_OK;
    }
    const fx_output_spec *spec = NULL;
    if (w->top && b->program && i < b->program->sig.noutputs) {
        spec = &b->program->sig.outputs[i];
        if (!spec->arg || strcmp(spec->arg, src->name) != 0) spec = NULL;
    }
    vz_kind k = spec ? vz_kind_of_output(spec->kind) : VZ_OUTPUT;
    int per_state = spec && spec->kind != FX_OUTPUT_USER_OUTPUT && spec->target;
    /* a mutated state's own node next to its last version; one node for the other kinds */
    fx_strbuf oid = FX_STRBUF_INIT;
    fx_strbuf_appendf(&oid, "%s%s", w->prefix, w->out->name);
    if (k != VZ_OUTPUT) fx_strbuf_appendf(&oid, ".%s", vz_style_get(k)->kind);
    if (per_state) fx_strbuf_appendf(&oid, ".%s", spec->target);
    if (oid.oom) return vz_oom(b);
    Agnode_t *on = vz_node(b->root, fx_strbuf_cstr(&oid), 0);
    if (!on) {
        vz_label_fields f = {w->out->name, NULL, NULL,
                             spec ? fx_output_kind_name(spec->kind) : NULL,
                             per_state ? spec->target : NULL};
        on = vz_draw(b, per_state ? tin : w->in, fx_strbuf_cstr(&oid), k, &f, NULL);
    }
    fx_strbuf_free(&oid);
    if (!on) return b->err->code;
    Agedge_t *e = agedge(b->root, t, on, NULL, 1);
    if (!e) return vz_oom(b);
    vz_style_output_edge(e, k);
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
        case FX_NODE_PLACEHOLDER:
            if (top) {
                /* with a root, placeholders are drawn when something inside reads them */
                if (!vz_has_root(b)) rc = vz_place_placeholder(b, n);
            } else {
                b->ty.len = 0;
                vz_sb_reset(&b->ty);
                fx_node_format_type(&b->ty, n);
                vz_label_fields f = {n->name, NULL, fx_strbuf_cstr(&b->ty), NULL, NULL};
                if (!vz_draw(b, in, vz_node_id(b, prefix, n->name), VZ_PLACEHOLDER, &f, n))
                    rc = b->err->code;
            }
            break;
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
/* Adds "v<version>" of step s to the box's "why" line. */
static void vz_box_why(Agnode_t *box, const fx_prov_step *s, const char *state) {
    vz_boxrec *r = (vz_boxrec *)aggetrec(box, (char *)VZ_BOXREC, 0);
    size_t len = strlen(r->why);
    const char *of = strstr(r->why, " of ");
    if (of) len = (size_t)(of - r->why); /* the versions list, before " of <state>" */
    char head[sizeof r->why];
    snprintf(head, sizeof head, "%.*s%sv%d", (int)len, r->why, r->nwhy ? ", " : "", s->version);
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_strbuf_appendf(&sb, "%s of %s", head, state ? state : "?");
    if (!sb.oom) {
        size_t n = sb.len < sizeof r->why - 1 ? sb.len : sizeof r->why - 1;
        memcpy(r->why, sb.data, n);
        r->why[n] = '\0';
    }
    fx_strbuf_free(&sb);
    r->nwhy++;
}

static int vz_highlight(vz_builder *b, const fx_provenance *pv) {
    Agnode_t *prev = NULL;
    for (int i = 0; i < pv->nsteps; i++) {
        const fx_node *n = pv->steps[i].node;
        if (!n) continue;
        vz_slot *s = vz_slot_of(b, n);
        Agnode_t *an = s->key ? s->node : NULL;
        if (!an) continue;
        if (vz_is_box(an)) {
            vz_box_why(an, &pv->steps[i], pv->state);
        } else {
            vz_style_highlight_node(an);
        }
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
    /* the last version flowing into its mutation output "<output>.<kind>.<state>" */
    if (prev && pv->output && pv->state) {
        size_t ls = strlen(pv->state);
        for (Agedge_t *e = agfstout(b->root, prev); e; e = agnxtout(b->root, e)) {
            Agnode_t *h = aghead(e);
            const char *name = agnameof(h);
            size_t ln = strlen(name);
            if (!vz_is_box(h) && ln > ls && name[ln - ls - 1] == '.' &&
                strcmp(name + ln - ls, pv->state) == 0) {
                vz_style_highlight_edge(e);
                vz_style_highlight_node(h);
            }
        }
    }
    return FX_OK;
}

/* ---- entry ----------------------------------------------------------------------------------- */
int vz_build(const fx_graph *g, const fxviz_opts *opts, Agraph_t **out, fx_err *err) {
    *out = NULL;
    fx_err scratch;
    if (!err) err = &scratch;
    fx_err_clear(err);
    if (!g) return fx_err_setf(err, FX_EARG, "fxviz: no graph to draw");
    fxviz_opts full = {0};
    full.depth = FXVIZ_DEPTH_FULL;
    if (!opts) opts = &full;
    if (opts->depth < FXVIZ_DEPTH_FULL) {
        return fx_err_setf(err, FX_EARG,
                           "fxviz: depth must be >= 0 (or FXVIZ_DEPTH_FULL for every module "
                           "open), got %d",
                           opts->depth);
    }
    vz_builder b = {0};
    b.program = opts->program;
    b.o = opts;
    b.g = g;
    b.err = err;
    b.mapcap = 64;
    while (b.mapcap < (size_t)fx_graph_count(g) * 2 + 16) b.mapcap *= 2;
    b.map = fx_calloc(b.mapcap, sizeof *b.map);
    if (!b.map) return vz_oom(&b);
    b.root = agopen((char *)"fxdb", Agdirected, &vz_disc);
    if (!b.root) {
        fx_free(b.map);
        return vz_oom(&b);
    }
    vz_style_defaults(b.root);
    int rc = vz_count_ops(&b, g) == FX_OK ? vz_draw_graph(&b, g, b.root, "", 1) : vz_oom(&b);
    if (rc == FX_OK && vz_has_root(&b) && b.ninside == 0) {
        rc = fx_err_setf(err, FX_EARG, "fxviz: no node of the graph is inside module '%s'",
                         opts->root);
        fx_err_hintf(err, "give a module path as nn_module_stack names it, e.g. 'layers.0'");
    }
    if (rc == FX_OK && opts->highlight) rc = vz_highlight(&b, opts->highlight);
    if (rc == FX_OK) rc = vz_label_boxes(&b);
    if (rc == FX_OK) vz_style_size(b.root, agnnodes(b.root));
    if (rc == FX_OK) {
        unsigned used = b.used;
        if (opts->highlight) used |= VZ_LEGEND_HIGHLIGHT;
        vz_style_label(b.root, opts->title, opts->legend ? used : 0);
    }
    agclean(b.root, AGNODE, (char *)VZ_BOXREC);
    fx_free(b.boxes);
    fx_free(b.map);
    fx_free(b.pc);
    fx_strbuf_free(&b.id);
    fx_strbuf_free(&b.lab);
    fx_strbuf_free(&b.ty);
    if (rc != FX_OK) {
        if (err->code == FX_OK) fx_err_setf(err, rc, "fxviz: building the graph failed");
        agclose(b.root);
        return rc;
    }
    *out = b.root;
    return FX_OK;
}
