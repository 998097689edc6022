/* core/export.h — ExportedProgram: functional graph, graph signature, state, constants.
 * Layer: core. Follows torch/export/exported_program.py and torch/export/graph_signature.py:
 * input specs in the order parameters, buffers, constants, user inputs; output specs with all
 * mutations first (in input-spec order), then user outputs. */
#ifndef FX_EXPORT_H
#define FX_EXPORT_H

#include "core/graph.h"
#include "core/trace.h"

typedef enum fx_output_kind {
    FX_OUTPUT_USER_OUTPUT = 0,
    FX_OUTPUT_BUFFER_MUTATION,
    FX_OUTPUT_PARAMETER_MUTATION,
    FX_OUTPUT_USER_INPUT_MUTATION,
    FX_OUTPUT_TOKEN,
    FX_OUTPUT_KIND_COUNT
} fx_output_kind;

const char *fx_input_kind_name(fx_input_kind k);   /* "PARAMETER", "BUFFER", ... */
const char *fx_output_kind_name(fx_output_kind k); /* "BUFFER_MUTATION", ... */

typedef struct fx_input_spec {
    fx_input_kind kind;
    char *arg;        /* placeholder name, "b_state" */
    char *target;     /* "state"; NULL for user inputs */
    bool persistent;  /* buffers */
} fx_input_spec;

typedef struct fx_output_spec {
    fx_output_kind kind;
    char *arg;        /* output node name, "add" */
    char *target;     /* mutated buffer / input, or NULL */
} fx_output_spec;

typedef struct fx_signature {
    fx_input_spec *inputs;   /* (ninputs,) owned */
    int ninputs;
    fx_output_spec *outputs; /* (noutputs,) owned */
    int noutputs;
} fx_signature;

typedef struct fx_named_tensor {
    char *name;       /* owned */
    fx_tensor *t;     /* one reference */
} fx_named_tensor;

typedef struct fx_program {
    fx_graph *graph;          /* the exported graph (functional, or training IR); owned */
    fx_graph *raw;            /* the raw traced graph, for :graph raw and provenance; owned */
    fx_signature sig;
    fx_named_tensor *state;   /* state_dict: parameters and persistent buffers; owned */
    int nstate;
    fx_named_tensor *constants; /* lifted constants and non-persistent buffers; owned */
    int nconstants;
    bool training_ir;         /* in-place ops kept, no mutation outputs */
    fx_shape_env *shape_env;  /* dynamic shapes: the trace's environment (one ref), or NULL */
} fx_program;

typedef struct fx_export_opts {
    bool training_ir;             /* {ir = "training"} */
    bool lift_mutated_constants;  /* mutated tensor constants become non-persistent buffers */
    bool auto_functionalized_v2;  /* mutating custom ops as auto_functionalized_v2, not v1 */
    fx_shape_env *shape_env;      /* the trace's shape environment (borrowed; the program keeps a
                                     reference), or NULL for a static export */
} fx_export_opts;

/* Builds a program from a finished trace: functionalizes the raw graph (unless training_ir),
 * removes dead code, orders the placeholders (parameters, buffers, constants, user inputs) and
 * builds the signature. Takes ownership of `raw` and `infos` whatever happens. `state` holds the
 * real tensors of parameters and buffers by target (borrowed; retained into the program).
 * Errors: FX_EEXPORT with err->kind set ("mutation_of_parameter", "constant_mutation", ...) and
 * err->node naming the raw node. */
int fx_export_build(fx_graph *raw, fx_input_info *infos, int ninfos, const fx_named_tensor *state,
                    int nstate, const fx_export_opts *opts, fx_program **out, fx_err *err);
void fx_program_free(fx_program *p);

/* The whole program as ExportedProgram.__str__ prints it (docs/API.md §6). */
void fx_program_format(fx_strbuf *sb, const fx_program *p);
/* The range constraints of p as torch 2.5 prints them: "{s0: VR[2, 64], s1: VR[2, int_oo]}" —
 * every symbol (not replaced by another) that sizes a user input, in symbol order, with its
 * range; "{}" for a static program. */
void fx_program_format_ranges(fx_strbuf *sb, const fx_program *p);
/* The symbols of those constraints, in that order (at most max; returns how many). Borrowed. */
int fx_program_range_symbols(const fx_program *p, const fx_symbol_info **out, int max);
/* The range printed for a symbol: its current range, except that a lower bound of 2 set only by
 * 0/1 specialization shows the declared one (Dim's min). */
fx_vr fx_symbol_constraint_range(const fx_symbol_info *s);
/* Just the "Graph signature:" block body ("    # inputs\n    b_state: BUFFER target=...") */
void fx_signature_format(fx_strbuf *sb, const fx_signature *sig, int indent);
/* The value of placeholder input i of the signature: the state or constant tensor for state
 * inputs, NULL for user inputs. Borrowed. */
fx_tensor *fx_program_input_value(const fx_program *p, int i);

/* ExportedProgram.module() (torch/export/_unlift.py): a graph whose state placeholders are
 * get_attr nodes of their targets, with each BUFFER_MUTATION / USER_INPUT_MUTATION output turned
 * into a trailing copy_ into the buffer or input; the output keeps only the user outputs. The new
 * graph is owned by the caller (fx_graph_free). Errors: FX_ENOMEM, FX_EINTERNAL for a mutation
 * output without its buffer (pass_unlift.c). */
int fx_program_unlift(const fx_program *p, fx_graph **out, fx_err *err);

#endif
