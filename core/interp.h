/* core/interp.h — running a graph node by node on the CPU kernels.
 * Layer: core. Like torch.fx.Interpreter: placeholders take the given inputs in order, get_attr
 * nodes read a resolver callback, call_function nodes dispatch eagerly, the output node gives the
 * results. Each value is dropped after its last use unless `keep_values` is set. Without
 * keep_values the interpreter plans the graph once (interp.c): kernels write into pooled buffers
 * sized from each node's meta["val"], views and in-place ops skip their meta functions, and
 * fx_interp_reset reruns with the same plan. A program with symbolic sizes is planned per set of
 * symbol values its inputs bind (sizes evaluated at them), from the second call at those sizes
 * on (the first runs through dispatch); the four most recently used plans are kept. */
#ifndef FX_INTERP_H
#define FX_INTERP_H

#include "core/dispatch.h"
#include "core/graph.h"

typedef struct fx_interp fx_interp;

/* Resolves a get_attr target ("state") to a tensor (borrowed; the interpreter retains it). */
typedef int (*fx_attr_fn)(void *ud, const char *target, fx_tensor **out, fx_err *err);
/* Called before (after == false) and after each node; non-zero stops the run with that status. */
typedef int (*fx_node_hook)(void *ud, fx_interp *it, fx_node *n, bool after, fx_err *err);

typedef struct fx_interp_opts {
    bool keep_values; /* keep every node's value (for :print and stepping); no plan */
    bool naive;       /* no plan: every node resolves its arguments and goes through
                         fx_dispatch (the reference the planned run is tested against) */
    fx_attr_fn attr;  /* for get_attr nodes; may be NULL when the graph has none */
    void *attr_ud;
    fx_node_hook hook; /* may be NULL */
    void *hook_ud;
} fx_interp_opts;

/* Prepares to run g (borrowed: must outlive the interpreter) on `inputs` (one per placeholder,
 * in order; values copied/retained). FX_EARG when the count or a tensor's shape/dtype does not
 * match the placeholder's val. */
int fx_interp_new(const fx_graph *g, const fx_ivalue *inputs, int ninputs,
                  const fx_interp_opts *opts, fx_interp **out, fx_err *err);
void fx_interp_free(fx_interp *it);
/* Runs the next node. Returns FX_OK and sets *done when the output node has run. */
int fx_interp_step(fx_interp *it, bool *done, fx_err *err);
/* Runs to the end. */
int fx_interp_run(fx_interp *it, fx_err *err);
/* The next node to run (NULL when done). */
fx_node *fx_interp_next_node(const fx_interp *it);
/* The value of node n if computed and kept (borrowed), else NULL. */
const fx_ivalue *fx_interp_value(const fx_interp *it, const fx_node *n);
/* Replaces node n's value (deep copy): the partial-evaluation `:set`. */
int fx_interp_set_value(fx_interp *it, const fx_node *n, const fx_ivalue *v, fx_err *err);
/* The outputs once done: the output node's list (borrowed). */
const fx_ivalue *fx_interp_outputs(const fx_interp *it, int *n);
/* Peak bytes held by node values during the run. */
int64_t fx_interp_peak_bytes(const fx_interp *it);

/* Rewinds it to the first node with new inputs (checked as fx_interp_new checks them), keeping
 * its plan and memory pool: a module that runs the same graph every step plans once and, in the
 * steady state, allocates only its outputs. Values of the previous run are dropped (outputs the
 * caller copied out stay valid: they are fresh tensors). FX_EARG when the graph changed size. */
int fx_interp_reset(fx_interp *it, const fx_ivalue *inputs, int ninputs, fx_err *err);
/* Copies the outputs of a finished run into a new list ivalue *out (tensors retained). */
int fx_interp_take_outputs(fx_interp *it, fx_ivalue *out, fx_err *err);

/* What the plan made of the graph (see interp.c): counts of call_function nodes by how they run,
 * and the memory pool. */
typedef struct fx_interp_stats {
    int nodes;             /* call_function nodes */
    int direct;            /* kernel called into a planned output buffer */
    int inplace;           /* in-place kernel called without its meta function */
    int views;             /* view ops whose result is cached between runs */
    int64_t view_hits;     /* views reused so far */
    int64_t noop_copies;   /* copy_(x, x) write-backs skipped so far */
    int buffers;           /* pool buffers */
    int64_t pool_bytes;    /* bytes in the pool */
    int64_t planned_bytes; /* bytes the planned outputs would take without sharing buffers */
} fx_interp_stats;
void fx_interp_get_stats(const fx_interp *it, fx_interp_stats *out);

/* One-call form: runs g on inputs and returns the outputs as a new list ivalue in *out. */
int fx_graph_run(const fx_graph *g, const fx_ivalue *inputs, int ninputs,
                 const fx_interp_opts *opts, fx_ivalue *out, fx_err *err);

#endif
