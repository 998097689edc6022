/* core/pass_dce.c — dead-code elimination.
 * Layer: core. Removes call_function nodes with no users whose op has no side effect: not
 * in-place, not random, not effectful, not a runtime assert (torch.fx's Node.is_impure), not a
 * buffer assignment, nor a call of anything but getitem and SymInt arithmetic; repeats to a fixed
 * point by walking backwards once (users always come after their inputs). */
#include <string.h>

#include "core/passes.h"

static bool impure(const fx_node *n) {
    if (n->op != FX_NODE_CALL_FUNCTION) return true;
    if (n->aten) return fx_op_is_inplace(n->aten) || (n->aten->flags & (FX_OPF_RANDOM | FX_OPF_EFFECTFUL | FX_OPF_ASSERT));
    /* getitem, and SymInt arithmetic (operator.add ..., torch.sym_max / sym_min): pure */
    return strcmp(n->target, "getitem") != 0 && strncmp(n->target, "operator.", 9) != 0 &&
           strcmp(n->target, "torch.sym_max") != 0 && strcmp(n->target, "torch.sym_min") != 0;
}

int fx_pass_dce(fx_graph *g, int *removed, fx_err *err) {
    int count = 0;
    for (fx_node *n = fx_graph_last(g), *prev; n; n = prev) {
        prev = n->prev;
        if (n->nusers == 0 && !impure(n)) {
            int rc = fx_graph_erase(g, n, err);
            if (rc) return rc;
            count++;
        }
    }
    if (removed) *removed = count;
    return FX_OK;
}
