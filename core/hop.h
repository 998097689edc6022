/* core/hop.h — higher-order ops: calls whose argument is a subgraph (torch.ops.higher_order.*).
 * Layer: core. A higher-order op appears in a graph as a get_attr node holding the body subgraph
 * (fx_node.subgraph, named like PyTorch names it: scan_combine_graph_0) and a call_function node
 * with target "higher_order.<name>" whose first argument references that get_attr node, followed
 * by getitem nodes for its outputs. Supported: scan (torch/_higher_order_ops/scan.py):
 *
 *   scan(combine_graph, init: Tensor[], xs: Tensor[], dim: int, reverse: bool,
 *        additional_inputs: Tensor[]) -> (carry..., ys...)
 *
 * combine_graph(carry..., x_t..., additional...) returns (next_carry..., y_t...); x_t is
 * xs[k].select(dim, t) for t = 0..n-1 (n-1..0 when reverse); the result is the final carry
 * followed by every y stacked along `dim` (in step order, reversed back when reverse). */
#ifndef FX_HOP_H
#define FX_HOP_H

#include "core/graph.h"

/* Output metadata of scan, computed without running it: carries take init's sizes and dtype, ys
 * the body's output sizes with n inserted at dim. `body` outputs must number len(init) + ny.
 * outs[] receives len(init) + ny new meta tensors (new references). */
int fx_hop_scan_meta(const fx_graph *body, const fx_ivalue *init, const fx_ivalue *xs, int64_t dim,
                     fx_ivalue *outs, int *nouts, int max_outs, fx_err *err);

/* Runs higher-order node n (its target names the op) on resolved arguments `args` (n->nargs
 * values; args[0] is ignored: the body is n->args[0]'s get_attr subgraph). Result: a list ivalue
 * in *out (new references). Errors: FX_ENOTIMPL for an unknown higher-order op, FX_ESHAPE when
 * xs disagree on the scanned size or the body's outputs do not match the carries. */
int fx_hop_run(const fx_node *n, const fx_ivalue *args, fx_ivalue *out, fx_err *err);

/* The same for a body graph given directly (eager torch.ops.higher_order.scan on real tensors
 * traced by fxdb). */
int fx_hop_scan_run(const fx_graph *body, const fx_ivalue *init, const fx_ivalue *xs, int64_t dim,
                    bool reverse, const fx_ivalue *additional, fx_ivalue *out, fx_err *err);

#endif
