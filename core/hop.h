/* core/hop.h — higher-order ops: calls whose arguments include subgraphs (torch.ops.higher_order).
 * Layer: core. A higher-order op appears in a graph as get_attr nodes holding the body subgraphs
 * (fx_node.subgraph, named as PyTorch names them: scan_combine_graph_0, true_graph_0,
 * body_graph_0) and a call_function node with target "higher_order.<name>" whose arguments
 * reference those get_attr nodes, followed by getitem nodes for its outputs. Arguments below are
 * written without the bodies ("operands"); the node's full argument lists are:
 *
 *   scan(combine_graph, init: Tensor[], xs: Tensor[], dim: int, reverse: bool,
 *        additional_inputs: Tensor[]) -> (carry..., ys...)           torch/_higher_order_ops/scan.py
 *     combine_graph(carry..., x_t..., additional...) -> (next_carry..., y_t...), x_t =
 *     xs[k].select(dim, t), t = 0..n-1 (n-1..0 when reverse); ys stacked along dim in xs order.
 *   cond(pred: Tensor, true_graph, false_graph, operands: Tensor[]) -> outputs
 *     pred is a one-element bool/number tensor; runs one branch on the operands
 *     (torch/_higher_order_ops/cond.py).
 *   map_impl(body_graph, xs: Tensor[], args: Tensor[]) -> ys
 *     body_graph(x_t..., args...) per t over xs' dim 0; every output stacked along dim 0
 *     (torch/_higher_order_ops/map.py).
 *   auto_functionalized(op, **op's arguments by name) -> (op's returns..., new values...)
 *     a custom op that mutates arguments, made functional (torch/_higher_order_ops/
 *     auto_functionalize.py, v1): runs op on clones of its (a!) arguments and returns its
 *     returns (None for an op returning ()) followed by those clones, one per (a!) argument in schema order (None for an
 *     optional one given None). args[0] is the op's target as a string ("mylib.foo.default");
 *     args[1..] are all its schema arguments, defaults filled in, printed as keywords.
 *   auto_functionalized_v2(op, **kwargs) -> (op's returns... | None, new bases...)
 *     the export option auto_functionalized_v2 (torch.compile's form): the (a!) arguments are
 *     given as `_all_bases = [...]` plus, per argument x, `_x_base_index` and either nothing (x
 *     is the base), `_x_alias = True`, `_x_slice_dim/_start/_end` or `_x_size/_stride/
 *     _storage_offset` to regenerate it from the base; the other arguments by name. Runs op on
 *     clones of the bases (views regenerated on them) and returns its returns then the clones.
 *     args[0] is the op's target, args[1] the list of keyword names, args[2..] their values.
 *   with_effects(token, op, *op's arguments) -> (new token, op's returns... | None)
 *     an op with an ordered side effect (torch/_higher_order_ops/effects.py): runs op and returns
 *     a fresh token (an empty f32 tensor, as torch's new_token_tensor) before its returns, so
 *     the token's data dependence orders the effects. args[1] is the op's target as a string;
 *     args[2..] its schema arguments, printed positionally as an ATen call's are. */
#ifndef FX_HOP_H
#define FX_HOP_H

#include "core/graph.h"

#define FX_HOP_MAX_OUTS 16
#define FX_HOP_AUTO_FUNCTIONALIZED "higher_order.auto_functionalized"
#define FX_HOP_WITH_EFFECTS "higher_order.with_effects"
#define FX_HOP_AUTO_FUNCTIONALIZED_V2 "higher_order.auto_functionalized_v2"

/* The op an auto_functionalized, auto_functionalized_v2 or with_effects node n wraps (the string
 * argument naming it), with *first set to the index of the op's first argument in n->args (1 for
 * auto_functionalized, 2 for with_effects; for v2, 2 is where its keyword values start); NULL
 * when n is no such node or names an unknown op. */
const fx_opdef *fx_hop_wrapped_op(const fx_node *n, int *first);
/* A new effect token on `dev` (an empty f32 tensor of shape [0], as torch's new_token_tensor):
 * *out owns it. FX_ENOMEM. */
int fx_hop_new_token(fx_device dev, fx_ivalue *out, fx_err *err);

/* Which argument slots of `target` hold bodies: writes their indices into pos[] (ascending) and
 * returns how many; -1 for an unknown higher-order op. */
int fx_hop_body_slots(const char *target, int *pos);

/* Output metadata of a higher-order op without running it. bodies: the op's body graphs in slot
 * order; ops: its operands (the full argument list minus the bodies), nops of them. outs[]
 * receives *nouts new meta tensors. Errors: FX_ENOTIMPL for an unknown op, FX_ESHAPE / FX_ETYPE
 * when the bodies disagree (cond's branches must return the same metadata, as PyTorch checks). */
int fx_hop_meta(const char *target, fx_graph *const *bodies, const fx_ivalue *ops, int nops,
                fx_ivalue *outs, int *nouts, fx_err *err);

/* How a body graph is run: the interpreter's one-call form, fx_graph_run (core/interp.h), which
 * callers pass in. hop.c sits below the interpreter (the interpreter runs higher-order nodes
 * through fx_hop_run), so it takes the runner as an argument instead of calling it by name. */
struct fx_interp_opts;
typedef int (*fx_graph_runner)(const fx_graph *g, const fx_ivalue *inputs, int ninputs,
                               const struct fx_interp_opts *opts, fx_ivalue *out, fx_err *err);

/* Runs a higher-order op on real operands, its bodies through `run`; the result is a list
 * ivalue (new references). */
int fx_hop_eval(const char *target, fx_graph *const *bodies, const fx_ivalue *ops, int nops,
                fx_graph_runner run, fx_ivalue *out, fx_err *err);

/* Runs higher-order node n of a graph on its resolved arguments args[0..n->nargs) (body slots
 * are ignored: the bodies come from the get_attr nodes they reference), bodies through `run`. */
int fx_hop_run(const fx_node *n, const fx_ivalue *args, fx_graph_runner run, fx_ivalue *out,
               fx_err *err);

#endif
