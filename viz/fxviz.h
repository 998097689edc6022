/* viz/fxviz.h — rendering core graphs with Graphviz (cgraph + gvc).
 * Layer: viz. Includes core public headers and Graphviz only; never Lua. Returns fx_err, never
 * prints. One GVC_t per process (created on first use, freed by fxviz_shutdown). */
#ifndef FXVIZ_H
#define FXVIZ_H

#include "core/fx.h"

typedef struct fxviz_opts {
    const fx_program *program;       /* when set, placeholders/outputs are coloured by signature
                                        kind (parameter, buffer, constant, user input; buffer
                                        mutation, user output); may be NULL for a bare graph */
    const fx_provenance *highlight;  /* nodes of this provenance walk drawn as a highlighted path */
    int depth;                       /* collapse nn_module_stack clusters deeper than this into
                                        one node each; 0 = no collapsing */
    const char *title;               /* graph label, or NULL */
} fxviz_opts;

/* Lays out g with dot and writes it to `path`; the format comes from the extension: .svg .png
 * .pdf .dot (.gv). FX_EARG for another extension, FX_EIO when Graphviz cannot write the file
 * (with Graphviz's own message). g is borrowed. */
int fxviz_render(const fx_graph *g, const char *path, const fxviz_opts *opts, fx_err *err);
/* The DOT source fxviz would lay out (before layout), into sb. */
int fxviz_dot_source(const fx_graph *g, const fxviz_opts *opts, fx_strbuf *sb, fx_err *err);
/* Frees the process's GVC_t. Safe to call more than once. */
void fxviz_shutdown(void);

#endif
