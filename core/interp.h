/* core/interp.h — running a graph node by node on the CPU kernels.
 * Layer: core. Like torch.fx.Interpreter: placeholders take the given inputs in order, get_attr
 * nodes read a resolver callback, call_function nodes dispatch eagerly, the output node gives the
 * results. Each value is dropped after its last use unless `keep_values` is set. */
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
    bool keep_values;   /* keep every node's value (for :print and stepping) */
    fx_attr_fn attr;    /* for get_attr nodes; may be NULL when the graph has none */
    void *attr_ud;
    fx_node_hook hook;  /* may be NULL */
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

/* One-call form: runs g on inputs and returns the outputs as a new list ivalue in *out. */
int fx_graph_run(const fx_graph *g, const fx_ivalue *inputs, int ninputs,
                 const fx_interp_opts *opts, fx_ivalue *out, fx_err *err);

#endif
