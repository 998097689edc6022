/* core/provenance.h — the walk back from a mutated output to every op that changed its state.
 * Layer: core. fxdb's own: PyTorch records no such thing. Uses the mutation records that
 * functionalization leaves on nodes (graph.h fx_mutation) and each node's stack_trace. */
#ifndef FX_PROVENANCE_H
#define FX_PROVENANCE_H

#include <stdbool.h>

#include "core/export.h"

typedef struct fx_prov_step {
    int version;          /* 0 for the placeholder */
    fx_node *node;        /* the functional node (borrowed from the program's graph) */
    char *target;         /* its op, "aten.mul.Tensor"; "placeholder" for v0 */
    char *from_op;        /* the original op, "aten.mul_.Tensor"; NULL for v0 */
    char *view_path;      /* "select(1, 0) of slice(0, 2, 4)" or NULL */
    char *location;       /* "model.lua:9" or NULL */
    char *source;         /* the Lua source line or NULL */
} fx_prov_step;

typedef struct fx_provenance {
    char *state;          /* the buffer target or user input name asked about */
    char *kind;           /* "BUFFER", "USER_INPUT", "PARAMETER" */
    char *output;         /* the mutation output's name, or NULL if never mutated */
    fx_prov_step *steps;  /* (nsteps,) oldest first; owned */
    int nsteps;
    bool walked;          /* no mutation records (a program loaded from a file fxdb did not
                             write): steps are every op on the data flow from the placeholder
                             to the mutation output, in graph order, each `from_op` naming the
                             node's first from_node entry when it has one */
} fx_provenance;

/* Finds `target` by buffer/parameter target, placeholder name or user input name. FX_EARG
 * listing the mutable state when unknown. The result is owned by the caller. */
int fx_provenance_walk(const fx_program *p, const char *target, fx_provenance **out, fx_err *err);
void fx_provenance_free(fx_provenance *pv);
/* The text fxdb.provenance prints (docs/API.md §7):
 *   "state  (BUFFER, output add)\n  v0  b_state  placeholder\n ..." */
void fx_provenance_format(fx_strbuf *sb, const fx_provenance *pv);

#endif
