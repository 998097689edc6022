/* core/hop.c — higher-order ops: output metadata and execution (scan).
 * Layer: core. The body runs on the interpreter; slices and stacking go through the eager
 * dispatcher (select + copy_), so every dtype and stride the kernels handle works here too. */
#include "core/hop.h"

#include <string.h>

#include "core/interp.h"
#include "core/shape.h"

static int list_len(const fx_ivalue *v) { return v && v->tag == FX_IV_LIST ? v->u.list.n : 0; }

/* The scanned length: xs[k].size(dim), equal for every k. */
static int scan_length(const fx_ivalue *xs, int64_t dim, int64_t *n, int *wdim, fx_err *err) {
    int nx = list_len(xs);
    if (nx == 0) return fx_err_setf(err, FX_EARG, "scan: xs must contain at least one tensor");
    for (int k = 0; k < nx; k++) {
        const fx_ivalue *x = &xs->u.list.items[k];
        if (x->tag != FX_IV_TENSOR) return fx_err_setf(err, FX_EARG, "scan: xs[%d] is not a tensor", k);
        int nd = fx_tensor_ndim(x->u.t), d;
        if (nd == 0) return fx_err_setf(err, FX_ESHAPE, "scan: xs[%d] is 0-dimensional", k);
        int rc = fx_wrap_dim(dim, nd, &d, err);
        if (rc) return rc;
        int64_t len = fx_tensor_size(x->u.t, d);
        if (k == 0) *n = len, *wdim = d;
        else if (len != *n)
            return fx_err_setf(err, FX_ESHAPE,
                               "scan: all xs must have the same size in the scanned dimension, got "
                               "%lld and %lld",
                               (long long)*n, (long long)len);
    }
    return FX_OK;
}

static const fx_ivalue *body_outputs(const fx_graph *body, int *n) {
    const fx_node *out = fx_graph_output_node(body);
    *n = 0;
    if (!out || out->args[0].tag != FX_IV_LIST) return NULL;
    *n = out->args[0].u.list.n;
    return out->args[0].u.list.items;
}

/* sizes of `t` with `n` inserted at dim (dim in [0, ndim]). */
static int stacked_empty(const fx_tensor *t, int64_t n, int dim, fx_device dev, fx_tensor **out,
                         fx_err *err) {
    int nd = fx_tensor_ndim(t);
    if (nd + 1 > FX_MAX_DIMS) return fx_err_setf(err, FX_ESHAPE, "scan: stacked output has too many dims");
    int64_t sizes[FX_MAX_DIMS];
    for (int d = 0, k = 0; d <= nd; d++) sizes[d] = d == dim ? n : fx_tensor_size(t, k++);
    return fx_tensor_empty(nd + 1, sizes, fx_tensor_dtype(t), dev, out, err);
}

int fx_hop_scan_meta(const fx_graph *body, const fx_ivalue *init, const fx_ivalue *xs, int64_t dim,
                     fx_ivalue *outs, int *nouts, int max_outs, fx_err *err) {
    int64_t n;
    int wdim, nbody;
    int rc = scan_length(xs, dim, &n, &wdim, err);
    if (rc) return rc;
    const fx_ivalue *bo = body_outputs(body, &nbody);
    int ninit = list_len(init);
    if (nbody < ninit || nbody > max_outs)
        return fx_err_setf(err, FX_ESHAPE,
                           "scan: combine_fn must return the %d carries followed by the outputs, "
                           "but it returned %d values",
                           ninit, nbody);
    for (int k = 0; k < nbody; k++) {
        const fx_tensor *v = bo[k].tag == FX_IV_NODE ? fx_node_tensor(bo[k].u.node) : NULL;
        if (!v) return fx_err_setf(err, FX_EARG, "scan: combine_fn output %d is not a tensor", k);
        fx_tensor *t;
        if (k < ninit) {
            const fx_tensor *c = init->u.list.items[k].u.t;
            rc = fx_tensor_empty(fx_tensor_ndim(c), fx_tensor_sizes(c), fx_tensor_dtype(c), FX_DEVICE_META, &t, err);
        } else {
            /* the output's dim is taken relative to the stacked rank */
            int sd = wdim <= fx_tensor_ndim(v) ? wdim : fx_tensor_ndim(v);
            rc = stacked_empty(v, n, sd, FX_DEVICE_META, &t, err);
        }
        if (rc) {
            for (int j = 0; j < k; j++) fx_ivalue_clear(&outs[j]);
            return rc;
        }
        outs[k] = fx_iv_tensor_steal(t);
    }
    *nouts = nbody;
    return FX_OK;
}

static int select_at(fx_ctx *ctx, fx_tensor *t, int dim, int64_t i, fx_ivalue *out, fx_err *err) {
    fx_ivalue a = fx_iv_tensor(t), d = fx_iv_int(dim), idx = fx_iv_int(i);
    int rc = fx_call(ctx, FX_OP_SELECT_INT, out, err, 3, &a, &d, &idx);
    fx_ivalue_clear(&a);
    return rc;
}

int fx_hop_scan_run(const fx_graph *body, const fx_ivalue *init, const fx_ivalue *xs, int64_t dim,
                    bool reverse, const fx_ivalue *additional, fx_ivalue *out, fx_err *err) {
    int64_t n;
    int wdim;
    int rc = scan_length(xs, dim, &n, &wdim, err);
    if (rc) return rc;
    int ninit = list_len(init), nx = list_len(xs), nadd = list_len(additional), nbody;
    body_outputs(body, &nbody);
    if (nbody < ninit)
        return fx_err_setf(err, FX_ESHAPE, "scan: combine_fn returned %d values for %d carries", nbody, ninit);
    int ny = nbody - ninit, nin = ninit + nx + nadd;
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    eager.no_grad = true;
    fx_ivalue res, step_in, carries;
    if ((rc = fx_iv_list(ninit + ny, &res, err))) return rc;
    if ((rc = fx_iv_list(nin, &step_in, err))) goto done_res;
    if ((rc = fx_iv_list(ninit, &carries, err))) goto done_in;
    for (int k = 0; k < ninit && !rc; k++) rc = fx_ivalue_copy(&carries.u.list.items[k], &init->u.list.items[k], err);
    for (int64_t t = 0; t < n && !rc; t++) {
        int64_t i = reverse ? n - 1 - t : t;
        for (int k = 0; k < ninit && !rc; k++) {
            fx_ivalue_clear(&step_in.u.list.items[k]);
            rc = fx_ivalue_copy(&step_in.u.list.items[k], &carries.u.list.items[k], err);
        }
        for (int k = 0; k < nx && !rc; k++) {
            fx_ivalue_clear(&step_in.u.list.items[ninit + k]);
            rc = select_at(&eager, xs->u.list.items[k].u.t, wdim, i, &step_in.u.list.items[ninit + k], err);
        }
        for (int k = 0; k < nadd && !rc; k++) {
            fx_ivalue_clear(&step_in.u.list.items[ninit + nx + k]);
            rc = fx_ivalue_copy(&step_in.u.list.items[ninit + nx + k], &additional->u.list.items[k], err);
        }
        fx_ivalue step_out = {0};
        if (!rc) rc = fx_graph_run(body, step_in.u.list.items, nin, NULL, &step_out, err);
        for (int k = 0; k < ninit && !rc; k++) {
            fx_ivalue_clear(&carries.u.list.items[k]);
            rc = fx_ivalue_copy(&carries.u.list.items[k], &step_out.u.list.items[k], err);
        }
        for (int k = 0; k < ny && !rc; k++) {
            const fx_ivalue *y = &step_out.u.list.items[ninit + k];
            if (y->tag != FX_IV_TENSOR) {
                rc = fx_err_setf(err, FX_EARG, "scan: combine_fn output %d is not a tensor", ninit + k);
                break;
            }
            fx_ivalue *slot = &res.u.list.items[ninit + k];
            int sd = wdim <= fx_tensor_ndim(y->u.t) ? wdim : fx_tensor_ndim(y->u.t);
            if (t == 0) {
                fx_tensor *st;
                rc = stacked_empty(y->u.t, n, sd, FX_DEVICE_CPU, &st, err);
                if (rc) break;
                *slot = fx_iv_tensor_steal(st);
            }
            fx_ivalue view, r;
            rc = select_at(&eager, slot->u.t, sd, i, &view, err);
            if (!rc) rc = fx_call(&eager, FX_OP_COPY_, &r, err, 2, &view, y);
            if (!rc) fx_ivalue_clear(&r);
            fx_ivalue_clear(&view);
        }
        fx_ivalue_clear(&step_out);
    }
    for (int k = 0; k < ninit && !rc; k++) rc = fx_ivalue_copy(&res.u.list.items[k], &carries.u.list.items[k], err);
    fx_ivalue_clear(&carries);
done_in:
    fx_ivalue_clear(&step_in);
done_res:
    if (rc) fx_ivalue_clear(&res);
    else *out = res;
    return rc;
}

int fx_hop_run(const fx_node *n, const fx_ivalue *args, fx_ivalue *out, fx_err *err) {
    if (!strcmp(n->target, "higher_order.scan")) {
        const fx_node *g = n->nargs > 0 && n->args[0].tag == FX_IV_NODE ? n->args[0].u.node : NULL;
        if (!g || !g->subgraph || n->nargs != 6)
            return fx_err_setf(err, FX_EARG, "malformed higher_order.scan node %s", n->name);
        return fx_hop_scan_run(g->subgraph, &args[1], &args[2], args[3].u.i, args[4].u.b, &args[5], out, err);
    }
    return fx_err_setf(err, FX_ENOTIMPL, "the interpreter cannot run %s yet", n->target);
}
