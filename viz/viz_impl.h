/* viz/viz_impl.h — private to viz/: the style table, the graph builder and Graphviz error capture.
 * Layer: viz. Included only by the .c files of viz/. Graphviz 2.42's API takes `char *` where it
 * only reads, so every call with a string literal goes through the const-taking wrappers below. */
#ifndef FX_VIZ_IMPL_H
#define FX_VIZ_IMPL_H

#include <graphviz/cgraph.h>

#include "viz/fxviz.h"

/* ---- node kinds and the style table (viz_style.c) -------------------------------------------- */
/* Every drawn node is exactly one kind; the style table has one row per kind. */
typedef enum vz_kind {
    VZ_PLACEHOLDER = 0, /* placeholder of a bare graph (no signature) */
    VZ_IN_PARAMETER,    /* placeholder whose input spec is PARAMETER */
    VZ_IN_BUFFER,       /* ... BUFFER */
    VZ_IN_CONSTANT,     /* ... CONSTANT_TENSOR */
    VZ_IN_USER,         /* ... USER_INPUT */
    VZ_IN_TOKEN,        /* ... TOKEN */
    VZ_GET_ATTR,        /* get_attr of a tensor attribute */
    VZ_SUBGRAPH,        /* get_attr holding a higher-order op's body (drawn next to a cluster) */
    VZ_OP,              /* call_function of a functional ATen op */
    VZ_OP_INPLACE,      /* an ATen op that writes an argument (training IR keeps them) */
    VZ_VIEW,            /* an ATen view op (fx_op_is_view) */
    VZ_SCATTER,         /* select_scatter, slice_scatter, index_put: writing a view back */
    VZ_CALL,            /* call_function of a non-ATen target: getitem, higher_order.* */
    VZ_OUTPUT,          /* the output node of a bare graph */
    VZ_OUT_USER,        /* output values whose spec is USER_OUTPUT */
    VZ_OUT_BUFFER_MUT,  /* ... BUFFER_MUTATION */
    VZ_OUT_PARAM_MUT,   /* ... PARAMETER_MUTATION */
    VZ_OUT_INPUT_MUT,   /* ... USER_INPUT_MUTATION */
    VZ_OUT_TOKEN,       /* ... TOKEN */
    VZ_MODULE,          /* a module drawn as one box (opts->depth, expand, collapse) */
    VZ_EXTERNAL,        /* a value from outside opts->root */
    VZ_SHARED,          /* the copy of a value read in many modules, next to a reader */
    VZ_KIND_COUNT
} vz_kind;

typedef struct vz_style {
    const char *kind;  /* "op", "view", "buffer" ...: the row's name, for tests and comments */
    const char *shape; /* Graphviz shape */
    const char *style; /* Graphviz style list, always containing "filled" */
    const char *fill;  /* fillcolor, "#rrggbb" */
    const char *font;  /* fontcolor, "#rrggbb" */
    const char *label; /* template, see vz_label_expand */
} vz_style;

/* Pen of nodes carrying a mutation record, and of the provenance highlight. */
#define VZ_MUTATION_COLOR "#c92a2a"
#define VZ_MUTATION_PENWIDTH "2.5"
#define VZ_HIGHLIGHT_COLOR "#f08c00"
#define VZ_HIGHLIGHT_PENWIDTH "4"

/* The row of kind k (k < VZ_KIND_COUNT). */
const vz_style *vz_style_get(vz_kind k);
/* The kind of an output value with signature kind k. */
vz_kind vz_kind_of_output(fx_output_kind k);
/* The kind of a placeholder with signature kind k. */
vz_kind vz_kind_of_input(fx_input_kind k);
/* Declares the graph, node and edge attribute defaults once on the root graph g (agattr). */
void vz_style_defaults(Agraph_t *g);
/* The graph label: the title (may be NULL) and, when `legend` has bits set, a legend table of
 * the kinds whose bit (1 << vz_kind) is set, the mutation pen (VZ_LEGEND_MUTATION) and the
 * highlight pen (VZ_LEGEND_HIGHLIGHT). Nothing when both are empty. */
#define VZ_LEGEND_HIGHLIGHT (1u << VZ_KIND_COUNT)
#define VZ_LEGEND_MUTATION (1u << (VZ_KIND_COUNT + 1))
void vz_style_label(Agraph_t *g, const char *title, unsigned legend);
/* Layout limits by graph size: above VZ_BIG_GRAPH drawn nodes, dot's x-coordinate network
 * simplex is capped (nslimit) and edge labels become xlabels (a label makes dot double every
 * rank), which turns a minute into seconds on a 5,000-node graph at the price of slightly less
 * straight edges and freely placed edge labels. Call once, after every node and edge exists. */
#define VZ_BIG_GRAPH 1000
void vz_style_size(Agraph_t *g, int nnodes);
/* Sets shape, style, fillcolor and fontcolor of n from row k; `bold` adds the mutation pen. */
void vz_style_node(Agnode_t *n, vz_kind k, int bold);
/* The look of a module cluster `level` levels deep (1 = outermost). */
void vz_style_cluster(Agraph_t *sub, int level);
/* The look of an edge into an output node of kind k (mutation edges dashed and coloured). */
void vz_style_output_edge(Agedge_t *e, vz_kind k);
/* Draws n / e in the highlight pen. */
void vz_style_highlight_node(Agnode_t *n);
void vz_style_highlight_edge(Agedge_t *e);

/* The values a label template may use; NULL or "" fields make their whole line disappear. */
typedef struct vz_label_fields {
    const char *name;       /* %n: node name */
    const char *target;     /* %t: short target, "mul.Tensor" */
    const char *type;       /* %y: "f32[2, 3]" */
    const char *kind;       /* %k: signature kind, "BUFFER" */
    const char *sig_target; /* %g: signature target, "state" */
} vz_label_fields;

/* Expands template `tmpl` into sb as a DOT label string: '\n' in the template becomes the DOT
 * escape "\n", %n %t %y %k %g insert the fields with backslashes escaped (so user text never
 * forms a Graphviz escape such as \N or \G), %% is '%'. A template line whose every field is
 * empty is dropped. */
void vz_label_expand(fx_strbuf *sb, const char *tmpl, const vz_label_fields *f);
/* Appends s with the five XML specials (& < > " ') escaped, for HTML text and HTML-like labels. */
void vz_html_escape(fx_strbuf *sb, const char *s);
/* Appends s with backslashes doubled and newlines turned into the DOT "\n" escape. */
void vz_label_escape(fx_strbuf *sb, const char *s);

/* ---- Graphviz 2.42 takes char * where it only reads: const-correct wrappers ------------------ */
static inline int vz_set(void *obj, const char *name, const char *value) {
    return agsafeset(obj, (char *)name, (char *)value, (char *)"");
}
/* agnode / agsubg by name; a NULL name (an id that could not be built) finds and makes
 * nothing, where cgraph would make an anonymous object. */
static inline Agnode_t *vz_node(Agraph_t *g, const char *name, int create) {
    return name ? agnode(g, (char *)name, create) : NULL;
}
static inline Agraph_t *vz_subg(Agraph_t *g, const char *name, int create) {
    return name ? agsubg(g, (char *)name, create) : NULL;
}

/* ---- building (viz_build.c) ------------------------------------------------------------------ */
/* Builds the cgraph graph of g under opts (see fxviz.h) into *out; the caller closes it with
 * agclose. opts may be NULL (a bare graph, no highlight, full nesting). FX_EARG for a negative
 * depth, FX_ENOMEM when cgraph or a strbuf runs out of memory. Call between vz_err_begin and
 * vz_err_end so cgraph's messages are captured. */
int vz_build(const fx_graph *g, const fxviz_opts *opts, Agraph_t **out, fx_err *err);

/* ---- Graphviz error capture (viz_render.c) --------------------------------------------------- */
/* Routes cgraph/gvc messages into a private buffer instead of stderr and resets the error level.
 * Not reentrant: Graphviz's error state is process-wide, and so is this capture. */
void vz_err_begin(void);
/* Ends the capture started by vz_err_begin, restoring the previous handler. Returns the highest
 * level seen (AGWARN when nothing was reported at AGERR or above) and copies the captured text
 * (trimmed, "" when none) into msg[0..cap). */
int vz_err_end(char *msg, size_t cap);

/* ---- rendering (viz_render.c, viz_html.c; viz_api.c picks one) ---------------------------------------------------- */
/* The process's GVC_t, created on first use. NULL (err set) when Graphviz cannot start. */
struct GVC_s;
struct GVC_s *vz_context(fx_err *err);
/* A piece of work that may run long (a layout): fills err, returns its code. */
typedef int (*vz_job)(void *ctx, fx_err *err);
/* Runs fn(ctx, err) in a forked child and returns its fx_err; `what` names the work in the
 * progress lines printed on stderr once it has run for a second (when `progress`). A SIGINT
 * while it runs kills the child: FX_EINTERNAL "layout cancelled". Without fork (or a pipe) fn
 * runs in this process. Whatever fn changes in memory is lost: it must leave its result in
 * files. */
int vz_run_child(vz_job fn, void *ctx, const char *what, bool progress, fx_err *err);
/* Writes an image or DOT file of g (format from the extension of path; not .html) from a
 * layout made in a child process (viz_render.c). */
int vz_render_image(const fx_graph *g, const char *path, const fxviz_opts *opts, fx_err *err);
/* Whether path ends in .html / .htm (case-insensitive). */
bool vz_is_html(const char *path);
/* The interactive viewer: see fxviz.h. */
int vz_render_html(const fx_graph *g, const char *path, const fxviz_opts *opts, fx_err *err);

#endif
