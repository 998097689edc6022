/* core/trace.h — recording dispatched ops into a raw graph ("Torch IR" with in-place ops).
 * Layer: core. The Lua layer runs the model's forward in a coroutine whose dispatch context is
 * fx_tracer_ctx(tr); every op dispatched there becomes a node, with the stack trace and module
 * stack the location callback reports. Like make_fx's proxy tracking, each traced tensor is tagged
 * with the node that last produced it (an in-place op re-tags its `self`), so later uses refer to
 * the newest node. Tensors the trace has not seen (created before it, captured by a closure) are
 * lifted as constants: a placeholder `c_lifted_tensor_N`.
 *
 * Placeholder naming follows torch.export: p_<path> parameters, b_<path> buffers, c_<name>
 * constants ('.' -> '_'), user inputs by their Lua parameter names. */
#ifndef FX_TRACE_H
#define FX_TRACE_H

#include "core/dispatch.h"
#include "core/graph.h"

typedef struct fx_tracer fx_tracer;

typedef enum fx_input_kind {
    FX_INPUT_PARAMETER = 0,
    FX_INPUT_BUFFER,
    FX_INPUT_CONSTANT_TENSOR,
    FX_INPUT_USER_INPUT,
    FX_INPUT_TOKEN,
    FX_INPUT_KIND_COUNT
} fx_input_kind;

/* Asks the embedding layer where the trace is now. Fills up to max_frames model frames
 * (innermost first) and up to max_mods module entries (outermost first), returning their counts
 * in *nframes / *nmods. Strings are copied by the tracer before the next call. */
typedef void (*fx_where_fn)(void *ud, fx_frame *frames, int max_frames, int *nframes,
                            fx_module_entry *mods, int max_mods, int *nmods);
/* Called after every recorded node; a non-zero return is passed back to the dispatch as an error
 * (the debugger uses it to stop). */
typedef int (*fx_step_fn)(void *ud, fx_node *n, fx_err *err);

typedef struct fx_trace_opts {
    bool real;            /* trace with real values (cpu) instead of meta tensors */
    fx_where_fn where;    /* may be NULL: nodes then carry no stack_trace / nn_module_stack */
    void *where_ud;
    fx_step_fn step;      /* may be NULL */
    void *step_ud;
} fx_trace_opts;

/* A new tracer with an empty raw graph. NULL on out-of-memory (err set). */
fx_tracer *fx_tracer_new(const fx_trace_opts *opts, fx_err *err);
void fx_tracer_free(fx_tracer *tr);
/* The dispatch context in trace mode; borrowed, valid until fx_tracer_free. */
fx_ctx *fx_tracer_ctx(fx_tracer *tr);
/* The raw graph being recorded; borrowed (owned by the tracer until fx_tracer_take_graph). */
fx_graph *fx_tracer_graph(fx_tracer *tr);

/* fx_trace_env_of and fx_trace_keep_val (core/dispatch.h) reach this file's implementations
 * through the hooks fx_tracer_new installs. */

/* Adds a placeholder for a model input and returns the tracing tensor that stands for it (a meta
 * twin of `example`, or a real copy when tracing real values; new reference in *out).
 * kind/target/persistent are remembered for the signature (fx_tracer_input_info). `name` is the
 * placeholder name before uniquing (e.g. "b_state"). */
int fx_tracer_input(fx_tracer *tr, fx_input_kind kind, const char *name, const char *target,
                    bool persistent, const fx_tensor *example, fx_tensor **out, fx_err *err);
/* A tensor created from data inside forward (torch.tensor(...)): lifted as constant
 * `c_lifted_tensor_N` (target lifted_tensor_N) and read through lift_fresh_copy, as
 * torch.export does. Returns the tracing tensor (new reference). The tracer keeps `value`. */
int fx_tracer_constant(fx_tracer *tr, fx_tensor *value, fx_tensor **out, fx_err *err);
/* Records `self.<target> = value` on a registered buffer (strict: at the assignment; non-strict:
 * after the call). `buffer_tensor` is the buffer's tracing tensor. */
int fx_tracer_assign_buffer(fx_tracer *tr, const char *target, fx_tensor *buffer_tensor,
                            fx_tensor *value, fx_err *err);
/* Records a higher-order op (core/hop.h): one get_attr node "<bases[i]>_<k>" per body (ownership
 * of every body taken, whatever happens), a call_function node `target` whose arguments are the
 * operands `ops` with the get_attr nodes in the op's body slots (fx_hop_body_slots; tensors in
 * ops become node references, lists recursively), and one getitem per output; outs[] (nouts
 * tracing tensors) are tagged with their getitem nodes. */
int fx_tracer_hop(fx_tracer *tr, const char *target, fx_graph **bodies, const char *const *bases,
                  int nbodies, const fx_ivalue *ops, int nops, const fx_ivalue *outs, int nouts,
                  fx_err *err);
/* Makes tr the body tracer of a higher-order op called inside `parent`'s trace: a tensor tr has
 * not seen but `parent` has (a closure over a traced value) becomes a new placeholder of tr,
 * named after the parent's node, instead of a lifted constant — Dynamo's lifting of free
 * variables into operands. */
void fx_tracer_set_parent(fx_tracer *tr, fx_tracer *parent);
/* The parent tensors captured so far, in placeholder order (borrowed; valid until the next
 * fx_tracer_* call on tr). Returns their count. */
int fx_tracer_captures(fx_tracer *tr, fx_tensor *const **out);
/* Makes tr's captured placeholders exactly `want` (n parent tensors), in that order, after the
 * other placeholders: missing ones are added (unused), all are moved into place. */
int fx_tracer_align_captures(fx_tracer *tr, fx_tensor *const *want, int n, fx_err *err);
/* The node a tracing tensor currently stands for, or NULL if unseen. */
fx_node *fx_tracer_node_of(fx_tracer *tr, const fx_tensor *t);
/* Ends the trace: appends the output node over `outs` (tensors, numbers, lists; a tensor unseen
 * by the trace is lifted as a constant), after the runtime asserts of unbacked symbols
 * (fx_tracer_item). A comparison still pending (fx_shape_env_add_pending) fails here with its
 * data-dependent error. */
int fx_tracer_finish(fx_tracer *tr, const fx_ivalue *outs, int nouts, fx_err *err);

/* ---- dynamic shapes ---------------------------------------------------------------------------
 */
/* The trace's shape environment, made on first use (a body tracer shares its parent's); borrowed,
 * lives as long as the tracer (tensors and SymInts keep their own references). NULL with
 * FX_ENOMEM. Guards recorded in it carry the location from the trace's where callback. */
fx_shape_env *fx_tracer_shape_env(fx_tracer *tr, fx_err *err);
/* Makes env (one more reference) the trace's shape environment, before anything made one: a
 * retrace of a program (run_decompositions) keeps its symbols, ranges and guards, and new guards
 * carry this trace's locations. FX_EARG when the trace has an environment already. */
int fx_tracer_use_shape_env(fx_tracer *tr, fx_shape_env *env, fx_err *err);
/* As fx_tracer_input for a user input whose sizes are `sizes` (ndim of example; NULL = all
 * plain; borrowed): the tracing tensor carries them (symbols made by the caller with
 * fx_shape_env_create_symbol), with strides dense in the example's layout (a stride the example
 * does not have densely stays concrete). New reference in *out. Errors: those of
 * fx_tracer_input; FX_EINTERNAL when a size's hint differs from the example's size; FX_ENOMEM
 * (then *out is NULL; the placeholder stays in the graph). */
int fx_tracer_input_sym(fx_tracer *tr, fx_input_kind kind, const char *name,
                        const fx_tensor *example, const fx_symint *sizes, fx_tensor **out,
                        fx_err *err);
/* Makes n the node standing for expression e in the graph (e.g. the _local_scalar_dense node of
 * an unbacked symbol). Later SymInt arguments equal to e refer to n. e is compared by address
 * (simplified, interned expressions) and must live as long as the tracer's shape environment; n
 * is a node of the tracer's graph. FX_ENOMEM on failure. */
int fx_tracer_bind_symbol(fx_tracer *tr, const fx_sym *e, fx_node *n, fx_err *err);

/* SymInt arithmetic as the user wrote it: records `r = a OP b` (op "add", "sub", "mul",
 * "floordiv", "mod" as operator.<op>; "sym_max" / "sym_min" as torch.sym_max / sym_min; "neg"
 * as operator.neg of a alone) with the operands in the user's order, as torch.export records
 * SymInt operations when they run (`n * 4` is `operator.mul(sym_size_int, 4)`, `4 * n` keeps 4
 * first), at the current Lua location; later SymInt arguments equal to r refer to that node. A
 * plain or constant r, one the graph already has a node for, or one over a symbol the graph
 * cannot name (a higher-order op body), records nothing. Unused nodes are dead code for export's
 * DCE. FX_ENOMEM. */
int fx_tracer_sym_op(fx_tracer *tr, const char *op, fx_symint a, fx_symint b, fx_symint r,
                     fx_err *err);

/* Tensor.item() of tracing tensor t (one element, an integer dtype) during a dynamic export:
 * records `_local_scalar_dense = torch.ops.aten._local_scalar_dense.default(t)` whose value is a
 * new unbacked symbol u<N> (source "<node>.item()"), and returns that SymInt in *out (the
 * expression lives in the tracer's shape environment). At the end of the trace
 * (fx_tracer_finish) the symbol's runtime asserts follow that node, as torch.export's
 * insert_deferred_runtime_asserts places them: sym_constrain_range_for_size when it was marked
 * size-like, `ge` / `le` nodes with _assert_scalar for the finite ends of its range; torch._check
 * relations over several symbols are asserted once all their symbols are bound. Errors: FX_EARG "a Tensor with
 * 6 elements cannot be converted to Scalar"; FX_EDATADEP (kind "data_dependent") for a float or
 * bool tensor (fxdb has no SymFloat / SymBool inputs) or when an undecided comparison is still
 * pending (fx_shape_env_add_pending); FX_ENOMEM. */
int fx_tracer_item(fx_tracer *tr, fx_tensor *t, fx_symint *out, fx_err *err);

/* Whether the trace made a symbol (a dynamic dim or an item()), i.e. has a shape environment
 * that the program must keep. */
bool fx_tracer_has_symbols(const fx_tracer *tr);

/* Signature info remembered per placeholder, in placeholder order. */
typedef struct fx_input_info {
    fx_node *node;        /* the placeholder */
    fx_input_kind kind;
    char *target;         /* state_dict key / constant name; NULL for user inputs */
    bool persistent;      /* buffers only */
    fx_tensor *value;     /* the real value for lifted constants (one ref), else NULL */
    bool requires_grad;   /* parameters: whether the parameter requires grad */
} fx_input_info;
/* The inputs recorded so far; borrowed, valid until the next fx_tracer_* call. */
const fx_input_info *fx_tracer_inputs(const fx_tracer *tr, int *n);

/* Hands the raw graph and the input infos to the caller. The tracer keeps nothing. Free the
 * infos with fx_input_infos_free. On failure (FX_ENOMEM) nothing is handed over: the tracer
 * still owns them. */
int fx_tracer_take(fx_tracer *tr, fx_graph **graph, fx_input_info **infos, int *ninfos,
                   fx_err *err);
void fx_input_infos_free(fx_input_info *infos, int n);

#endif
