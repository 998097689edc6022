/* core/dispatch.h — one entry point for running an op, in eager, meta or trace mode.
 * Layer: core. Modes follow PyTorch's dispatch keys as export uses them: eager runs the CPU
 * kernel; meta runs only the meta function (FakeTensor-like shape propagation); trace runs meta
 * (or meta + kernel when tracing with real values) and then hands the call to a recorder hook
 * (core/trace.c) which appends a node. A context belongs to one Lua coroutine: ops run by the REPL
 * while a trace is paused use another context and are not recorded. */
#ifndef FX_DISPATCH_H
#define FX_DISPATCH_H

#include "core/registry.h"

typedef enum fx_mode {
    FX_MODE_EAGER = 0, /* run kernels on cpu tensors */
    FX_MODE_META,      /* shapes only; fresh outputs are meta tensors */
    FX_MODE_TRACE,     /* as meta (or eager when ctx->real), then ctx->record */
} fx_mode;

typedef struct fx_ctx fx_ctx;

/* The recorder hook of trace mode. Called after the op ran, with the normalized args and the
 * outputs; returns FX_OK or an error (which the dispatch returns). */
typedef int (*fx_record_fn)(void *ud, const fx_opdef *op, const fx_ivalue *args,
                            const fx_ivalue *outs, fx_err *err);

struct fx_ctx {
    fx_mode mode;
    bool real;            /* trace mode: also compute values (fresh outputs on cpu) */
    fx_record_fn record;  /* trace mode: recorder, with its user data */
    void *record_ud;
    int depth;            /* nesting of composite calls; only depth 0 is recorded */
    bool no_grad;         /* grad mode off (torch.no_grad): recorded on traced nodes; in eager
                             mode it allows in-place ops on leaves that require grad */
};

/* Per-op call state handed to meta functions, kernels and composites. */
struct fx_opctx {
    fx_ctx *ctx;          /* the dispatch context (composites dispatch through it) */
    const fx_opdef *op;
    fx_device device;     /* device of fresh outputs: meta if the mode is meta / a meta trace,
                             or if any tensor argument is meta; else cpu */
    fx_err *err;
};

/* A fresh context in `mode` (no allocation). The first call installs the op table's
 * implementations (fx_ops_install): call it before dispatching. Defined in core/ops_table.c. */
void fx_ctx_init(fx_ctx *ctx, fx_mode mode);

/* Runs `op` on `args` (schema->nargs entries; FX_IV_UNSET entries take the schema default;
 * borrowed) and writes schema->nrets results to `out` (new references, owned by the caller; on
 * error nothing is left in `out`). Errors: FX_EARG for a missing required argument or a wrong
 * kind ("expected Tensor for argument 'other' but got str"), then whatever the meta function or
 * kernel reports. In-place ops bump the version counter of their mutated argument. */
int fx_dispatch(fx_ctx *ctx, const fx_opdef *op, const fx_ivalue *args, fx_ivalue *out,
                fx_err *err);

/* Convenience for C callers (composites, tests, passes): calls op with `nargs` positional
 * arguments given as fx_ivalue* (borrowed) — remaining arguments take their defaults — and
 * returns the single (first) result in *out. */
int fx_call(fx_ctx *ctx, fx_op_id op, fx_ivalue *out, fx_err *err, int nargs, ...);
/* As fx_call, returning the first result as a tensor (new reference). */
int fx_call_t(fx_ctx *ctx, fx_op_id op, fx_tensor **out, fx_err *err, int nargs, ...);

/* What a meta function may ask of the trace that records through ctx. core/trace.c implements
 * both and installs them with its first tracer (fx_dispatch_set_trace_hooks); the dispatcher only
 * forwards, so the meta functions, below the tracer, do not call it by name. Before any tracer
 * exists no context records, and they answer as for a context that is not a trace's.
 *
 * fx_trace_env_of: the shape environment of the trace whose dispatch context is ctx (made on
 * first use), for a meta function that must create an unbacked symbol (repeat_interleave.Tensor
 * without output_size); NULL when ctx is not a trace's top-level context (or on FX_ENOMEM, err
 * set). The op's output sizes that are bare unbacked symbols get a sym_size.int node right after
 * the op.
 *
 * fx_trace_keep_val: for an op that changes t's sizes, strides or storage in place (resize_,
 * set_): when ctx is a trace's dispatch context and t is the value of one of its nodes, that
 * node's value becomes a copy of t as it is now, so the graph keeps the geometry the node
 * produced (a placeholder its input's). Call before changing t. FX_ENOMEM only. */
fx_shape_env *fx_trace_env_of(fx_ctx *ctx, fx_err *err);
int fx_trace_keep_val(fx_ctx *ctx, fx_tensor *t, fx_err *err);
typedef fx_shape_env *(*fx_trace_env_fn)(fx_ctx *ctx, fx_err *err);
typedef int (*fx_trace_keep_fn)(fx_ctx *ctx, fx_tensor *t, fx_err *err);
void fx_dispatch_set_trace_hooks(fx_trace_env_fn env_of, fx_trace_keep_fn keep_val);

/* Called by trace and interpreter at every step; a named no-op so that
 * `gdb -ex 'break fx_debug_break'` stops there (SQLite's test_trace_breakpoint). */
struct fx_node;
void fx_debug_break(const struct fx_node *n);

#endif
