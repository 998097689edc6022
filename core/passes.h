/* core/passes.h — graph passes (each graph -> graph with fx_err).
 * Layer: core. */
#ifndef FX_PASSES_H
#define FX_PASSES_H

#include "core/graph.h"
#include "core/trace.h"

/* Removes nodes without users that have no side effect (not in-place, not output, not
 * placeholder). Returns the number removed in *removed (may be NULL). */
int fx_pass_dce(fx_graph *g, int *removed, fx_err *err);

/* reinplace (pass_reinplace.c): on an unlifted graph (fx_program_unlift), turns functional ops
 * on module state or intermediates back into in-place ops where no later reader of the old value
 * exists, select_scatter / slice_scatter into a view plus copy_, and drops the copy_ into a
 * buffer that became redundant. Never writes a graph input. `count` (may be NULL) receives the
 * number of ops rewritten. The graph computes the same values before and after. */
int fx_pass_reinplace(fx_graph *g, int *count, fx_err *err);
/* As fx_pass_reinplace, first turning each auto_functionalized(op, **args) back into op(args):
 * an (a!) argument is written in place when no later node reads its old value (the memory's
 * only later readers write the op's new value back: the scatters and the final copy_), else
 * the op writes a clone of it. `why` (may be NULL) gets one line per (a!) argument saying which
 * and, for a clone, the reason and the reading node ("auto_functionalized
 * (mylib.update_cache.default): kept a clone of 'cache' (%select): %sum_1 reads the old value
 * after the op (model.lua:12)"). The caller owns `why`. */
int fx_pass_reinplace_explain(fx_graph *g, int *count, fx_strbuf *why, fx_err *err);

/* Functionalization (functionalize.c): raw graph -> functional graph, docs/ARCHITECTURE.md §5.
 * `infos` describe the raw graph's placeholders (kind, target), in placeholder order.
 * The functional graph's output lists, first, one new value per mutated placeholder (in
 * placeholder order), then the user outputs; `mut_kinds`/`mut_targets` (owned by the caller,
 * fx_free each) receive, per mutation output, the placeholder index it updates.
 * Errors (FX_EEXPORT, err->kind set): writing into an expanded view ("unsupported_view_write"),
 * metadata mutation of an input, mutation of a parameter that requires grad
 * ("mutation_of_parameter"), mutation of a constant ("constant_mutation") unless
 * lift_mutated_constants. */
typedef struct fx_functionalize_result {
    fx_graph *graph;     /* owned by the caller */
    int *mutated;        /* (nmutated,) placeholder indices whose value changed, in order */
    int nmutated;
    int ntokens;         /* 1 when effectful ops thread a token: the graph's first placeholder is
                            the input token and its first output the final token; else 0 */
} fx_functionalize_result;
int fx_functionalize(const fx_graph *raw, const fx_input_info *infos, int ninfos,
                     bool lift_mutated_constants, fx_functionalize_result *out, fx_err *err);
/* As fx_functionalize with options: lift_mutated_constants as above; auto_functionalized_v2
 * wraps mutating custom ops in auto_functionalized_v2 (bases + view information, as
 * torch.compile does) instead of torch.export's v1. Errors as fx_functionalize, plus FX_ENOTIMPL
 * for a v2 argument that is a view with symbolic sizes. */
typedef struct fx_functionalize_opts {
    bool lift_mutated_constants;
    bool auto_functionalized_v2;
} fx_functionalize_opts;
int fx_functionalize_ex(const fx_graph *raw, const fx_input_info *infos, int ninfos,
                        const fx_functionalize_opts *opts, fx_functionalize_result *out, fx_err *err);

#endif
