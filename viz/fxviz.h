/* viz/fxviz.h — rendering core graphs with Graphviz (cgraph + gvc).
 * Layer: viz. Includes core public headers and Graphviz only; never Lua. Returns fx_err; prints
 * nothing but the progress lines of a long layout (opts->progress, stderr). The layout runs in
 * a forked child, which makes its own GVC_t; fxviz_shutdown frees one made in this process (when
 * fork is not available).
 *
 * What the picture shows (the look of each kind is one table, viz/viz_style.c):
 *  - placeholders coloured by input kind (parameter, buffer, constant, user input; found by
 *    placeholder name in opts->program->sig.inputs), plain when there is no program. Parameters
 *    and constant tensors are folded into the node that uses them (a line "wq.weight f32[..]" in
 *    its label) unless opts->params; a buffer or input placeholder sits in the innermost module
 *    cluster holding all its users, and a buffer whose users all collapsed into one box is
 *    folded into that box;
 *  - ops labelled "name / target without 'aten.' / dtype[shape]"; view ops, scatter ops
 *    (select_scatter, slice_scatter, index_put) and in-place ops each in their own style; a node
 *    with a mutation record gets a bold red pen, the line "v<version> of <state> (<op>)" and the
 *    Lua line that made the version ("model.lua:9");
 *  - an edge from every argument node to its user (one edge per pair), labelled with the
 *    argument's dtype[shape] when opts->edge_shapes;
 *  - with a program, one output node per mutated state, "<output>.<kind>.<state>"
 *    ("output.buffer_mutation.layers.0.cache_k"), in the cluster of the state's last version
 *    (or of the box holding it), and one "<output>.user_output" node for all user outputs;
 *    without a program, a single "output" node;
 *  - nn_module_stack as nested clusters "cluster_<path>" labelled "<path>: <Class>" (the root
 *    module, path "", is the whole picture); a module holding a single op inside another
 *    module is no cluster (nor box): the op names it in its label ("wq: Linear"); a module that is not open (see depth, expand,
 *    collapse) is one box "module.<path>" labelled "<path>: <Class>\n<k> ops[, <m> mutations]"
 *    holding everything inside it, edges attached to the box;
 *  - a higher-order op's body (a get_attr holding a subgraph) as a cluster
 *    "cluster_<get_attr name>" whose nodes are "<get_attr name>/<name>";
 *  - a legend of the node kinds present (opts->legend), as an HTML table in the graph label.
 * Node ids are the FX node names, so DOT output can be searched by name. Graphs of more than
 * 1,000 drawn nodes get layout limits (see viz_impl.h) so they lay out in seconds.
 * Layout runs in a child process (fork): layouts over a second print progress on stderr, and a
 * SIGINT (Ctrl-C) ends the child and the render returns FX_EINTERNAL "layout cancelled" while
 * the caller goes on.
 * Not thread-safe: Graphviz's error state and the GVC_t are process-wide. */
#ifndef FXVIZ_H
#define FXVIZ_H

#include <stdbool.h>

#include "core/fx.h"

/* fxviz_opts.depth: every module open, however deep. */
#define FXVIZ_DEPTH_FULL (-1)

typedef struct fxviz_opts {
    const fx_program *program;      /* when set, placeholders/outputs are coloured by signature
                                       kind (parameter, buffer, constant, user input; buffer
                                       mutation, user output); may be NULL for a bare graph.
                                       Output values are matched to sig.outputs by position and
                                       name, so pass it with its own graph */
    const fx_provenance *highlight; /* nodes of this provenance walk (steps[i].node) drawn in a
                                       thick orange pen, with the edges between consecutive
                                       steps (a dashed non-ranking link when they are not
                                       adjacent) and the last step's mutation-output edge; a box
                                       holding steps is drawn in that pen too and its label
                                       names the versions made inside ("why: v1, v2 of
                                       cache_k") */
    int depth;                      /* how many module levels are open (drawn as clusters):
                                       0 = every top-level module is one box (the whole
                                       program as module boxes); N = modules 1..N levels deep
                                       are clusters and those N+1 deep are boxes;
                                       FXVIZ_DEPTH_FULL = every module a cluster. Levels count
                                       from `root` when it is set. Below FXVIZ_DEPTH_FULL:
                                       FX_EARG */
    const char *const *expand;      /* (nexpand,) module paths drawn open whatever the depth,
                                       with every module above them */
    int nexpand;
    const char *const *collapse; /* (ncollapse,) module paths drawn as one box whatever the
                                    depth (collapse wins over expand) */
    int ncollapse;
    const char *root;  /* a module path: draw only the nodes inside that module,
                          the values they read from outside as dashed "external"
                          nodes; NULL or "" = the whole graph. FX_EARG when no node
                          is inside it */
    bool params;       /* draw parameter / constant placeholders as nodes */
    bool edge_shapes;  /* label each edge with the value's dtype[shape] */
    bool legend;       /* a legend of the node kinds drawn */
    bool progress;     /* fxviz_render: progress lines on stderr once the layout
                          has run for a second */
    const char *title; /* graph label, or NULL */
} fxviz_opts;

/* Lays out g with dot and writes it to `path`; the format comes from the extension,
 * case-insensitive: .svg .png .pdf .dot (.gv is DOT too; DOT output carries the layout's
 * positions), and .html / .htm for the interactive viewer (viz/viz_html.c: one self-contained
 * page with an SVG per module view; opts->depth, expand, collapse and root do not apply to
 * it; params, edge_shapes and title do, and highlight opens the page on that state's
 * provenance). FX_EARG for another or no extension (nothing is written), FX_EIO when Graphviz
 * cannot write the file (err->msg quotes Graphviz's own message), FX_ENOTIMPL when this
 * Graphviz lacks the renderer (no cairo plugin for png/pdf), FX_EINTERNAL "layout cancelled"
 * after a SIGINT during the layout. g and opts are borrowed (opts NULL: whole graph, every
 * module open); err is cleared first. */
int fxviz_render(const fx_graph *g, const char *path, const fxviz_opts *opts, fx_err *err);
/* The DOT source fxviz would lay out (before layout), appended to sb (the caller's buffer).
 * Same errors as fxviz_render's building step; FX_ENOMEM when sb runs out of memory. */
int fxviz_dot_source(const fx_graph *g, const fxviz_opts *opts, fx_strbuf *sb, fx_err *err);
/* Frees the process's GVC_t (gvFreeContext). Safe to call more than once; the next render
 * creates a new one. */
void fxviz_shutdown(void);

#endif
