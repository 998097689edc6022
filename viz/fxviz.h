/* viz/fxviz.h — rendering core graphs with Graphviz (cgraph + gvc).
 * Layer: viz. Includes core public headers and Graphviz only; never Lua. Returns fx_err, never
 * prints. One GVC_t per process (created on first use, freed by fxviz_shutdown).
 *
 * What the picture shows (the look of each kind is one table, viz/viz_style.c):
 *  - placeholders coloured by input kind (parameter, buffer, constant, user input; found by
 *    placeholder name in opts->program->sig.inputs), plain when there is no program;
 *  - ops labelled "name / target without 'aten.' / dtype[shape]"; view ops, scatter ops
 *    (select_scatter, slice_scatter, index_put) and in-place ops each in their own style; a node
 *    with a mutation record gets a bold red pen and the line "v<version> of <state> (<op>)";
 *  - an edge from every argument node to its user;
 *  - with a program, one output node per output kind ("output.buffer_mutation",
 *    "output.user_output", ...), its edges labelled with the mutated state and drawn dashed for
 *    mutations, solid for user outputs; without one, a single "output" node;
 *  - nn_module_stack as nested clusters "cluster_<path>" labelled "<path>: <Class>" (the root
 *    module, path "", is the whole picture); a higher-order op's body (a get_attr holding a
 *    subgraph) as a cluster "cluster_<get_attr name>" whose nodes are "<get_attr name>/<name>".
 * Node ids are the FX node names, so DOT output can be searched by name. Graphs of more than
 * 1,000 drawn nodes get layout limits (see viz_impl.h) so they lay out in seconds.
 * Not thread-safe: Graphviz's error state and the GVC_t are process-wide. */
#ifndef FXVIZ_H
#define FXVIZ_H

#include "core/fx.h"

typedef struct fxviz_opts {
    const fx_program *program;      /* when set, placeholders/outputs are coloured by signature
                                       kind (parameter, buffer, constant, user input; buffer
                                       mutation, user output); may be NULL for a bare graph.
                                       Output values are matched to sig.outputs by position and
                                       name, so pass it with its own graph */
    const fx_provenance *highlight; /* nodes of this provenance walk (steps[i].node) drawn in a
                                       thick orange pen, with the edges between consecutive
                                       steps (a dashed non-ranking link when they are not
                                       adjacent) and the last step's mutation-output edge */
    int depth;                      /* 0 = full nesting, every module a cluster. N > 0: modules
                                       1..N levels deep stay clusters, and each module N+1
                                       levels deep collapses with everything inside it into
                                       one box "module.<path>" labelled "<path>: <Class>\n
                                       <k> ops[, <m> mutations]"; edges attach to the box.
                                       Negative: FX_EARG */
    const char *title;              /* graph label, or NULL */
} fxviz_opts;

/* Lays out g with dot and writes it to `path`; the format comes from the extension,
 * case-insensitive: .svg .png .pdf .dot (.gv is DOT too; DOT output carries the layout's
 * positions). FX_EARG for another or no extension (nothing is written), FX_EIO when Graphviz
 * cannot write the file (err->msg quotes Graphviz's own message), FX_ENOTIMPL when this
 * Graphviz lacks the renderer (no cairo plugin for png/pdf). g and opts are borrowed; err is
 * cleared first. */
int fxviz_render(const fx_graph *g, const char *path, const fxviz_opts *opts, fx_err *err);
/* The DOT source fxviz would lay out (before layout), appended to sb (the caller's buffer).
 * Same errors as fxviz_render's building step; FX_ENOMEM when sb runs out of memory. */
int fxviz_dot_source(const fx_graph *g, const fxviz_opts *opts, fx_strbuf *sb, fx_err *err);
/* Frees the process's GVC_t (gvFreeContext). Safe to call more than once; the next render
 * creates a new one. */
void fxviz_shutdown(void);

#endif
