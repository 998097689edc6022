/* core/trace.c — trace-mode recording of dispatched ops into a raw graph.
 * Layer: core. The dispatcher calls record() after each op in trace mode; we map tensor
 * arguments to the nodes that produced them (tensor tags), lift unseen tensors as constants,
 * append the node with its value and location, split multi-output results into getitem nodes,
 * and re-tag outputs (an in-place op re-tags its self, as make_fx's proxy tracking does). */
#include "core/trace.h"

#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/hop.h"
#include "core/shape.h"
#include "core/tensor_impl.h"

#define MAX_FRAMES 16
#define MAX_MODS 32

struct fx_tracer {
    fx_ctx ctx;               /* trace-mode dispatch context; record_ud = this */
    uint32_t id;              /* tag id for tensors seen by this trace */
    fx_graph *g;              /* raw graph; owned until taken */
    fx_trace_opts opts;
    fx_input_info *infos;     /* (ninfos,) in placeholder creation order */
    int ninfos, cap;
    int nconst;               /* lifted_tensor_N counter */
    fx_tracer *parent;        /* for bodies of higher-order ops: where captured tensors live */
    fx_tensor **captured;     /* (ncaptured,) parent tensors lifted into placeholders; one ref */
    fx_node **captured_node;  /* (ncaptured,) their placeholders */
    int ncaptured, captured_cap;
    fx_shape_env *senv;      /* dynamic shapes: the environment (one ref), or NULL */
    bool owns_where;         /* senv's location callback points at this tracer */
    const fx_sym **sym_expr; /* (nsym,) expressions that have a node in the graph ... */
    fx_node **sym_node;      /* (nsym,) ... and that node (sym_size.int, operator.add, ...) */
    int nsym, sym_cap;
    bool no_location;        /* nodes made now get no stack (the runtime asserts at the end) */
    bool raw_syms;           /* sym_node_of names each symbol by its own binder, without the
                              * shape env's replacements: a torch._check relation is asserted
                              * over the values it was stated on (Eq(u0, s0) reads u0's
                              * _local_scalar_dense, not s0 that replaced it) */
};

static uint32_t g_trace_ids;

/* The dispatcher's record hook (fx_record_fn) and the meta functions' hooks, defined below. */
static int trace_record(void *ud, const fx_opdef *op, const fx_ivalue *args, const fx_ivalue *outs,
                        fx_err *err);
static fx_shape_env *tracer_env_of(fx_ctx *ctx, fx_err *err);
static int tracer_keep_val(fx_ctx *ctx, fx_tensor *t, fx_err *err);

fx_tracer *fx_tracer_new(const fx_trace_opts *opts, fx_err *err) {
    fx_tracer *tr = fx_calloc(1, sizeof *tr);
    if (!tr || !(tr->g = fx_graph_new())) {
        fx_free(tr);
        fx_err_setf(err, FX_ENOMEM, "out of memory starting a trace");
        return NULL;
    }
    fx_ctx_init(&tr->ctx, FX_MODE_TRACE);
    fx_dispatch_set_trace_hooks(tracer_env_of, tracer_keep_val);
    if (opts) tr->opts = *opts;
    tr->ctx.real = tr->opts.real;
    tr->id = ++g_trace_ids;
    if (!tr->id) tr->id = ++g_trace_ids;
    tr->ctx.record = trace_record;
    tr->ctx.record_ud = tr;
    return tr;
}

void fx_input_infos_free(fx_input_info *infos, int n) {
    for (int i = 0; i < n; i++) {
        fx_free(infos[i].target);
        fx_tensor_release(infos[i].value);
    }
    fx_free(infos);
}

void fx_tracer_free(fx_tracer *tr) {
    if (!tr) return;
    fx_free(tr->sym_expr);
    fx_free(tr->sym_node);
    /* the environment may outlive the tracer (a program keeps it): no callback into freed memory */
    if (tr->owns_where) fx_shape_env_unset_where(tr->senv, tr);
    fx_shape_env_release(tr->senv);
    for (int i = 0; i < tr->ncaptured; i++) fx_tensor_release(tr->captured[i]);
    fx_free(tr->captured);
    fx_free(tr->captured_node);
    fx_graph_free(tr->g);
    fx_input_infos_free(tr->infos, tr->ninfos);
    fx_free(tr);
}

fx_ctx *fx_tracer_ctx(fx_tracer *tr) { return &tr->ctx; }
fx_graph *fx_tracer_graph(fx_tracer *tr) { return tr->g; }

fx_node *fx_tracer_node_of(fx_tracer *tr, const fx_tensor *t) {
    return fx_tensor_trace_node(t, tr->id);
}

const fx_input_info *fx_tracer_inputs(const fx_tracer *tr, int *n) {
    *n = tr->ninfos;
    return tr->infos;
}

/* Fills the node's stack_trace and nn_module_stack from the embedding's where callback. */
static int set_location(fx_tracer *tr, fx_node *n, fx_err *err) {
    if (!tr->opts.where || tr->no_location) return FX_OK;
    fx_frame frames[MAX_FRAMES];
    fx_module_entry mods[MAX_MODS];
    int nf = 0, nm = 0;
    tr->opts.where(tr->opts.where_ud, frames, MAX_FRAMES, &nf, mods, MAX_MODS, &nm);
    int rc = fx_node_set_stack(n, frames, nf, err);
    if (!rc) rc = fx_node_set_modules(n, mods, nm, err);
    return rc;
}

static int add_info(fx_tracer *tr, fx_node *n, fx_input_kind kind, const char *target,
                    bool persistent, fx_tensor *value, bool requires_grad, fx_err *err) {
    if (tr->ninfos == tr->cap) {
        int cap = tr->cap ? tr->cap * 2 : 16;
        fx_input_info *ni = fx_realloc(tr->infos, sizeof *ni * (size_t)cap);
        if (!ni) return fx_err_setf(err, FX_ENOMEM, "out of memory");
        tr->infos = ni;
        tr->cap = cap;
    }
    fx_input_info *in = &tr->infos[tr->ninfos];
    memset(in, 0, sizeof *in);
    in->node = n;
    in->kind = kind;
    in->persistent = persistent;
    in->requires_grad = requires_grad;
    if (target && !(in->target = fx_strdup(target)))
        return fx_err_setf(err, FX_ENOMEM, "out of memory");
    in->value = fx_tensor_retain(value);
    tr->ninfos++;
    return FX_OK;
}

/* The tracing tensor standing for `example`: a meta twin, or a real copy when tracing values. */
static int make_tracing_tensor(fx_tracer *tr, const fx_tensor *example, fx_tensor **out,
                               fx_err *err) {
    fx_device dev = (tr->opts.real && !fx_tensor_is_meta(example)) ? FX_DEVICE_CPU : FX_DEVICE_META;
    int rc = fx_tensor_empty_strided_like(example, dev, out, err);
    if (rc) return rc;
    if (dev == FX_DEVICE_CPU) {
        fx_ctx eager;
        fx_ctx_init(&eager, FX_MODE_EAGER);
        fx_ivalue dst = fx_iv_tensor(*out), src = fx_iv_tensor((fx_tensor *)example), res;
        rc = fx_call(&eager, FX_OP_COPY_, &res, err, 2, &dst, &src);
        fx_ivalue_clear(&dst);
        fx_ivalue_clear(&src);
        fx_ivalue_clear(&res);
        if (rc) {
            fx_tensor_release(*out);
            *out = NULL;
            return rc;
        }
    }
    (*out)->requires_grad = example->requires_grad;
    return rc;
}

int fx_tracer_input(fx_tracer *tr, fx_input_kind kind, const char *name, const char *target,
                    bool persistent, const fx_tensor *example, fx_tensor **out, fx_err *err) {
    fx_node *n = fx_graph_placeholder(tr->g, name, err);
    if (!n) return err->code;
    fx_tensor *t;
    int rc = make_tracing_tensor(tr, example, &t, err);
    if (rc) return rc;
    fx_ivalue v = fx_iv_tensor(t);
    rc = fx_node_set_val(n, &v, err);
    fx_ivalue_clear(&v);
    if (!rc)
        rc = add_info(tr, n, kind, target, persistent,
                      kind == FX_INPUT_CONSTANT_TENSOR ? (fx_tensor *)example : NULL,
                      example->requires_grad, err);
    if (rc) {
        fx_tensor_release(t);
        return rc;
    }
    fx_tensor_set_trace_node(t, tr->id, n);
    *out = t;
    return FX_OK;
}

/* Lifts an unseen tensor as a constant placeholder and returns its node. */
static fx_node *lift_constant(fx_tracer *tr, fx_tensor *value, fx_tensor **tracing, fx_err *err) {
    char name[80], target[64];
    snprintf(target, sizeof target, "lifted_tensor_%d", tr->nconst++);
    snprintf(name, sizeof name, "c_%s", target);
    fx_tensor *t = NULL;
    if (fx_tracer_input(tr, FX_INPUT_CONSTANT_TENSOR, name, target, false, value, &t, err))
        return NULL;
    fx_node *n = fx_tensor_trace_node(t, tr->id);
    if (tracing) *tracing = t;
    else fx_tensor_release(t);
    return n;
}

int fx_tracer_constant(fx_tracer *tr, fx_tensor *value, fx_tensor **out, fx_err *err) {
    fx_tensor *t;
    if (!lift_constant(tr, value, &t, err)) return err->code;
    fx_ivalue a = fx_iv_tensor_steal(t);
    int rc = fx_call_t(&tr->ctx, FX_OP_LIFT_FRESH_COPY, out, err, 1, &a);
    fx_ivalue_clear(&a);
    return rc;
}

void fx_tracer_set_parent(fx_tracer *tr, fx_tracer *parent) { tr->parent = parent; }

int fx_tracer_captures(fx_tracer *tr, fx_tensor *const **out) {
    *out = tr->captured;
    return tr->ncaptured;
}

/* The placeholder standing for parent tensor t in body tracer tr, made on first use. */
static fx_node *capture(fx_tracer *tr, fx_tensor *t, const fx_node *pnode, fx_err *err) {
    for (int i = 0; i < tr->ncaptured; i++)
        if (tr->captured[i] == t) return tr->captured_node[i];
    if (tr->ncaptured == tr->captured_cap) {
        int cap = tr->captured_cap ? tr->captured_cap * 2 : 8;
        fx_tensor **nt = fx_realloc(tr->captured, sizeof *nt * (size_t)cap);
        if (nt) tr->captured = nt;
        fx_node **nn = fx_realloc(tr->captured_node, sizeof *nn * (size_t)cap);
        if (nn) tr->captured_node = nn;
        if (!nt || !nn) {
            fx_err_setf(err, FX_ENOMEM, "out of memory");
            return NULL;
        }
        tr->captured_cap = cap;
    }
    fx_tensor *ph_t;
    if (fx_tracer_input(tr, FX_INPUT_USER_INPUT, pnode->name, NULL, false, t, &ph_t, err)) return NULL;
    fx_node *ph = fx_tensor_trace_node(ph_t, tr->id);
    fx_tensor_release(ph_t); /* the placeholder's val keeps it */
    tr->captured[tr->ncaptured] = fx_tensor_retain(t);
    tr->captured_node[tr->ncaptured++] = ph;
    return ph;
}

int fx_tracer_align_captures(fx_tracer *tr, fx_tensor *const *want, int n, fx_err *err) {
    for (int i = 0; i < n; i++) {
        const fx_node *pn = tr->parent ? fx_tensor_trace_node(want[i], tr->parent->id) : NULL;
        if (!pn) return fx_err_setf(err, FX_EARG, "align_captures: not a tensor of the parent trace");
        if (!capture(tr, want[i], pn, err)) return err->code;
    }
    /* move them, in `want` order, to the end of the placeholder block */
    for (int i = 0; i < n; i++) {
        fx_node *ph = NULL;
        for (int k = 0; k < tr->ncaptured; k++)
            if (tr->captured[k] == want[i]) ph = tr->captured_node[k];
        fx_node *first_op = fx_graph_first(tr->g);
        while (first_op && first_op->op == FX_NODE_PLACEHOLDER) first_op = first_op->next;
        fx_graph_move_before(tr->g, ph, first_op);
        /* keep captured[] in the same order */
        for (int k = 0; k < tr->ncaptured; k++)
            if (tr->captured[k] == want[i] && k != i) {
                fx_tensor *t = tr->captured[k];
                fx_node *nd = tr->captured_node[k];
                tr->captured[k] = tr->captured[i], tr->captured_node[k] = tr->captured_node[i];
                tr->captured[i] = t, tr->captured_node[i] = nd;
            }
    }
    return FX_OK;
}

static int sym_node_of(fx_tracer *tr, const fx_sym *e, fx_ivalue *out, fx_err *err);
static int sym_cache(fx_tracer *tr, const fx_sym *e, fx_node *n, fx_err *err);
static fx_node *rel_node(fx_tracer *tr, fx_sym_kind k, const fx_sym *lhs, const fx_sym *rhs,
                         fx_err *err);

/* Tensor -> node reference (lifting unseen tensors); SymInt -> the node computing it; lists
 * recursively; the rest copied. */
static int to_node_arg(fx_tracer *tr, const fx_ivalue *v, fx_ivalue *out, fx_err *err) {
    if (v->tag == FX_IV_TENSOR) {
        fx_node *n = fx_tensor_trace_node(v->u.t, tr->id);
        const fx_node *pn = (!n && tr->parent) ? fx_tensor_trace_node(v->u.t, tr->parent->id) : NULL;
        if (!n && pn && !(n = capture(tr, v->u.t, pn, err))) return err->code;
        if (!n && !(n = lift_constant(tr, v->u.t, NULL, err))) return err->code;
        *out = fx_iv_node(n);
        return FX_OK;
    }
    if (v->tag == FX_IV_SYMINT) return sym_node_of(tr, v->u.si.expr, out, err);
    if (v->tag == FX_IV_LIST) {
        int rc = fx_iv_list(v->u.list.n, out, err);
        for (int i = 0; !rc && i < v->u.list.n; i++)
            rc = to_node_arg(tr, &v->u.list.items[i], &out->u.list.items[i], err);
        if (rc) fx_ivalue_clear(out);
        return rc;
    }
    return fx_ivalue_copy(out, v, err);
}

static int step(fx_tracer *tr, fx_node *n, fx_err *err) {
    fx_debug_break(n);
    return tr->opts.step ? tr->opts.step(tr->opts.step_ud, n, err) : FX_OK;
}

static int add_getitem(fx_tracer *tr, fx_node *of, int i, const fx_ivalue *val, fx_err *err) {
    fx_ivalue args[2] = {fx_iv_node(of), fx_iv_int(i)};
    fx_node *g = fx_graph_call_target(tr->g, "getitem", args, 2, "getitem", err);
    if (!g) return err->code;
    int rc = fx_node_set_val(g, val, err);
    if (!rc) rc = fx_node_copy_meta(g, of, err);
    if (!rc && val->tag == FX_IV_TENSOR) fx_tensor_set_trace_node(val->u.t, tr->id, g);
    return rc;
}

/* fx_trace_env_of (core/dispatch.h) */
static fx_shape_env *tracer_env_of(fx_ctx *ctx, fx_err *err) {
    if (!ctx || ctx->record != trace_record || ctx->depth != 0) return NULL;
    return fx_tracer_shape_env(ctx->record_ud, err);
}

/* An op's output whose size is a bare unbacked symbol no node stands for yet (the length of
 * repeat_interleave.Tensor without output_size): `sym_size_int = sym_size.int(n, d)` right after
 * n binds it, so its runtime asserts follow there, as insert_deferred_runtime_asserts places them
 * after the node that defines an unbacked size. */
/* The node that already computes symbolic expression e (e is interned: compared by address), or
 * NULL. */
static fx_node *sym_cached(const fx_tracer *tr, const fx_sym *e) {
    for (int i = 0; i < tr->nsym; i++)
        if (tr->sym_expr[i] == e) return tr->sym_node[i];
    return NULL;
}

static int bind_unbacked_sizes(fx_tracer *tr, fx_node *n, const fx_tensor *t, fx_err *err) {
    for (int d = 0; t && t->sym && d < t->ndim; d++) {
        const fx_sym *e = t->sym->size[d];
        if (!e || fx_sym_kind_of(e) != FX_SYM_SYMBOL || !fx_sym_has_unbacked(e)) continue;
        if (sym_cached(tr, e)) continue;
        fx_ivalue args[2] = {fx_iv_node(n), fx_iv_int(d)};
        fx_node *s = fx_graph_call(tr->g, fx_op_get(FX_OP_SYM_SIZE_INT), args, "sym_size_int", err);
        if (!s) return err->code;
        fx_ivalue v = fx_iv_symint(fx_si_from_expr(e));
        int rc = fx_node_set_val(s, &v, err);
        fx_ivalue_clear(&v);
        if (!rc) rc = fx_node_copy_meta(s, n, err);
        if (!rc) rc = sym_cache(tr, e, s, err);
        if (rc) return rc;
    }
    return FX_OK;
}

/* fx_trace_keep_val (core/dispatch.h) */
static int tracer_keep_val(fx_ctx *ctx, fx_tensor *t, fx_err *err) {
    if (!ctx || ctx->record != trace_record) return FX_OK;
    fx_tracer *tr = ctx->record_ud;
    fx_node *n = fx_tensor_trace_node(t, tr->id);
    if (!n || n->val.tag != FX_IV_TENSOR || n->val.u.t != t) return FX_OK;
    fx_tensor *c;
    int rc = fx_tensor_shallow_copy(t, &c, err);
    if (rc) return rc;
    fx_ivalue v = fx_iv_tensor_steal(c);
    rc = fx_node_set_val(n, &v, err);
    fx_ivalue_clear(&v);
    return rc;
}

static int trace_record(void *ud, const fx_opdef *op, const fx_ivalue *args, const fx_ivalue *outs,
                        fx_err *err) {
    fx_tracer *tr = ud;
    const fx_schema *s = &op->schema;
    fx_ivalue nargs[FX_SCHEMA_MAX_ARGS] = {0};
    int rc = fx_shape_env_check_pending(tr->senv, err), made = 0;
    for (; made < s->nargs && !rc; made++) rc = to_node_arg(tr, &args[made], &nargs[made], err);
    fx_node *n = NULL;
    if (!rc) {
        n = fx_graph_call(tr->g, op, nargs, NULL, err);
        if (!n) rc = err->code;
    }
    for (int i = 0; i < made; i++) fx_ivalue_clear(&nargs[i]);
    if (rc) return rc;
    if ((rc = set_location(tr, n, err))) return rc;
    if (tr->ctx.no_grad) n->flags |= FX_NODEF_NO_GRAD;
    bool single = s->nrets == 1 && s->rets[0].type == FX_TY_TENSOR;
    if (single || s->nrets == 1) {
        rc = fx_node_set_val(n, &outs[0], err);
        if (rc) return rc;
        if (single && outs[0].tag == FX_IV_TENSOR) fx_tensor_set_trace_node(outs[0].u.t, tr->id, n);
    } else {
        fx_ivalue all;
        if ((rc = fx_iv_list(s->nrets, &all, err))) return rc;
        for (int i = 0; i < s->nrets && !rc; i++) rc = fx_ivalue_copy(&all.u.list.items[i], &outs[i], err);
        if (!rc) rc = fx_node_set_val(n, &all, err);
        fx_ivalue_clear(&all);
        if (rc) return rc;
    }
    if ((rc = step(tr, n, err))) return rc;
    if (single && outs[0].tag == FX_IV_TENSOR && (rc = bind_unbacked_sizes(tr, n, outs[0].u.t, err)))
        return rc;
    /* Lists (split) and tuples (max.dim) get one getitem per element, as make_fx does. */
    if (s->nrets == 1 && outs[0].tag == FX_IV_LIST) {
        for (int i = 0; i < outs[0].u.list.n && !rc; i++)
            rc = add_getitem(tr, n, i, &outs[0].u.list.items[i], err);
    } else if (s->nrets > 1) {
        for (int i = 0; i < s->nrets && !rc; i++) rc = add_getitem(tr, n, i, &outs[i], err);
    }
    return rc;
}

/* A buffer rebound to a value of another shape or dtype changes the buffer's metadata, which the
 * export workflow refuses (aot_export bans metadata mutations of its inputs; a write-back copy_
 * could not store the new value): FX_EEXPORT, kind "buffer_metadata_mutation". */
static int check_same_metadata(const char *target, const fx_tensor *buf, const fx_tensor *value,
                               fx_err *err) {
    if (!buf || !value) return FX_OK;
    int nb = fx_tensor_ndim(buf), nv = fx_tensor_ndim(value);
    bool same = nb == nv && fx_tensor_dtype(buf) == fx_tensor_dtype(value);
    for (int d = 0; same && d < nb; d++) same = fx_tensor_size(buf, d) == fx_tensor_size(value, d);
    /* a symbolic size of the value must keep the buffer's size: a guard (it specializes) */
    for (int d = 0; same && d < nb; d++) {
        int rc = fx_si_cmp(FX_SYM_EQ, fx_tensor_sym_size(value, d), fx_tensor_sym_size(buf, d),
                           &same, err);
        if (rc) return rc;
    }
    if (same) return FX_OK;
    char a[160], b[160];
    fx_err_setf(err, FX_EEXPORT,
                "Buffer '%s' was assigned a tensor of another shape or dtype (%s %s, the buffer is "
                "%s %s). A buffer whose metadata changes in forward is not supported in the export "
                "workflow.",
                target, fx_dtype_name(fx_tensor_dtype(value)),
                fx_shape_str(nv, fx_tensor_sizes(value), a, sizeof a),
                fx_dtype_name(fx_tensor_dtype(buf)), fx_shape_str(nb, fx_tensor_sizes(buf), b, sizeof b));
    fx_err_kind(err, "buffer_metadata_mutation");
    return fx_err_hintf(err,
                        "write into the buffer instead (self.%s:copy_(value) keeps its shape and "
                        "dtype), or register the buffer with the shape and dtype it ends with",
                        target);
}

int fx_tracer_assign_buffer(fx_tracer *tr, const char *target, fx_tensor *buffer_tensor,
                            fx_tensor *value, fx_err *err) {
    fx_node *buf = NULL;
    for (int i = 0; i < tr->ninfos; i++)
        if (tr->infos[i].kind == FX_INPUT_BUFFER && !strcmp(tr->infos[i].target, target))
            buf = tr->infos[i].node;
    if (!buf && buffer_tensor) buf = fx_tensor_trace_node(buffer_tensor, tr->id);
    if (!buf) return fx_err_setf(err, FX_EARG, "'%s' is not a buffer of the traced module", target);
    int rc = check_same_metadata(target, fx_node_tensor(buf), value, err);
    if (rc) return rc;
    fx_ivalue v = fx_iv_tensor(value), args[3];
    args[0] = fx_iv_node(buf);
    rc = to_node_arg(tr, &v, &args[1], err);
    fx_ivalue_clear(&v);
    if (rc) return rc;
    args[2] = fx_iv_str(target);
    fx_node *n = fx_graph_call_target(tr->g, "fxdb.assign_buffer", args, 3, "assign_buffer", err);
    fx_ivalue_clear(&args[1]);
    fx_ivalue_clear(&args[2]);
    if (!n) return err->code;
    fx_ivalue tv = fx_iv_tensor(value);
    rc = fx_node_set_val(n, &tv, err);
    fx_ivalue_clear(&tv);
    if (!rc) rc = set_location(tr, n, err);
    if (!rc) rc = step(tr, n, err);
    return rc;
}

int fx_tracer_hop(fx_tracer *tr, const char *target, fx_graph **bodies, const char *const *bases,
                  int nbodies, const fx_ivalue *ops, int nops, const fx_ivalue *outs, int nouts,
                  fx_err *err) {
    int pos[4], nslots = fx_hop_body_slots(target, pos), rc = fx_shape_env_check_pending(tr->senv, err);
    fx_node *attrs[4] = {0};
    fx_ivalue conv[16] = {0}; /* the operands as graph values, first: a symbolic predicate's
                                 sym_size / gt nodes come before the get_attr nodes, as in torch */
    if (rc) {
    } else if (nslots != nbodies || nops + nbodies > 16)
        rc = fx_err_setf(err, FX_EARG, "%s: expected %d bodies", target, nslots);
    for (int k = 0; k < nops && !rc; k++) rc = to_node_arg(tr, &ops[k], &conv[k], err);
    for (int b = 0; b < nbodies && !rc; b++) {
        char name[96];
        for (int k = 0;; k++) {
            snprintf(name, sizeof name, "%s_%d", bases[b], k);
            if (!fx_graph_find(tr->g, name)) break;
        }
        if (!(attrs[b] = fx_graph_get_attr(tr->g, name, err))) {
            rc = err->code;
            break;
        }
        fx_node_set_subgraph(attrs[b], bodies[b]);
        bodies[b] = NULL;
        rc = set_location(tr, attrs[b], err);
    }
    for (int b = 0; b < nbodies; b++) fx_graph_free(bodies[b]); /* those not handed over */
    if (rc) {
        for (int k = 0; k < 16; k++) fx_ivalue_clear(&conv[k]);
        return rc;
    }
    fx_ivalue a[16] = {0}; /* unfilled entries stay FX_IV_UNSET: clearing them is a no-op */
    int total = nops + nbodies;
    for (int i = 0, b = 0, k = 0; i < total; i++) {
        if (b < nbodies && pos[b] == i) a[i] = fx_iv_node(attrs[b++]);
        else a[i] = conv[k++]; /* moved */
    }
    fx_node *n = NULL;
    if (!rc && !(n = fx_graph_call_target(tr->g, target, a, total, NULL, err))) rc = err->code;
    for (int i = 0; i < total; i++) fx_ivalue_clear(&a[i]);
    if (rc) return rc;
    fx_ivalue all;
    if ((rc = fx_iv_list(nouts, &all, err))) return rc;
    for (int i = 0; i < nouts && !rc; i++) rc = fx_ivalue_copy(&all.u.list.items[i], &outs[i], err);
    if (!rc) rc = fx_node_set_val(n, &all, err);
    fx_ivalue_clear(&all);
    if (!rc) rc = set_location(tr, n, err);
    if (!rc) rc = step(tr, n, err);
    for (int i = 0; i < nouts && !rc; i++) rc = add_getitem(tr, n, i, &outs[i], err);
    return rc;
}

static int runtime_asserts(fx_tracer *tr, fx_err *err);

int fx_tracer_finish(fx_tracer *tr, const fx_ivalue *outs, int nouts, fx_err *err) {
    int rc = fx_shape_env_check_pending(tr->senv, err);
    if (!rc) rc = runtime_asserts(tr, err);
    if (rc) return rc;
    fx_ivalue list;
    rc = fx_iv_list(nouts, &list, err);
    for (int i = 0; i < nouts && !rc; i++) rc = to_node_arg(tr, &outs[i], &list.u.list.items[i], err);
    if (!rc && !fx_graph_output(tr->g, &list, err)) rc = err->code;
    fx_ivalue_clear(&list);
    return rc;
}

int fx_tracer_take(fx_tracer *tr, fx_graph **graph, fx_input_info **infos, int *ninfos,
                   fx_err *err) {
    /* the fresh graph first: on failure the tracer keeps everything and the caller owns nothing */
    fx_graph *fresh = fx_graph_new();
    if (!fresh) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    *graph = tr->g;
    *infos = tr->infos;
    *ninfos = tr->ninfos;
    tr->g = fresh;
    tr->infos = NULL;
    tr->ninfos = tr->cap = 0;
    return FX_OK;
}

/* ==== dynamic shapes ========================================================================== */

/* The shape environment's location callback: the innermost model frame. */
static void sym_where(void *ud, char *loc, int loc_cap, char *line, int line_cap) {
    fx_tracer *tr = ud;
    if (!tr->opts.where) return;
    fx_frame frames[1];
    fx_module_entry mods[1];
    int nf = 0, nm = 0;
    tr->opts.where(tr->opts.where_ud, frames, 1, &nf, mods, 0, &nm);
    if (nf < 1) return;
    snprintf(loc, (size_t)loc_cap, "%s:%d", frames[0].file, frames[0].line);
    snprintf(line, (size_t)line_cap, "%s", frames[0].code ? frames[0].code : "");
}

fx_shape_env *fx_tracer_shape_env(fx_tracer *tr, fx_err *err) {
    if (tr->senv) return tr->senv;
    if (tr->parent) {
        fx_shape_env *p = fx_tracer_shape_env(tr->parent, err);
        tr->senv = fx_shape_env_retain(p);
        return p;
    }
    tr->senv = fx_shape_env_new(err);
    if (tr->senv) {
        fx_shape_env_set_where(tr->senv, sym_where, tr);
        tr->owns_where = true;
    }
    return tr->senv;
}

int fx_tracer_use_shape_env(fx_tracer *tr, fx_shape_env *env, fx_err *err) {
    if (tr->senv || tr->parent)
        return fx_err_setf(err, FX_EARG, "the trace already has a shape environment");
    tr->senv = fx_shape_env_retain(env);
    fx_shape_env_set_where(env, sym_where, tr);
    tr->owns_where = true;
    return FX_OK;
}

int fx_tracer_input_sym(fx_tracer *tr, fx_input_kind kind, const char *name,
                        const fx_tensor *example, const fx_symint *sizes, fx_tensor **out,
                        fx_err *err) {
    int rc = fx_tracer_input(tr, kind, name, NULL, false, example, out, err);
    if (rc || !sizes) return rc;
    /* strides: dense in the example's stride order (contiguous for a contiguous example) */
    fx_tensor *t = *out;
    int nd = t->ndim, order[FX_MAX_DIMS];
    for (int i = 0; i < nd; i++) order[i] = i;
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0; j--) {
            int x = order[j - 1], y = order[j];
            if (!(t->strides[x] > t->strides[y] || (t->strides[x] == t->strides[y] && x < y)))
                break;
            order[j - 1] = y;
            order[j] = x;
        }
    fx_symint st[FX_MAX_DIMS], p = FX_SI(1);
    for (int i = 0; i < nd; i++) {
        int d = order[i];
        st[d] = p;
        p = fx_si_mul(p, sizes[d].expr ? sizes[d] : FX_SI(sizes[d].hint ? sizes[d].hint : 1));
    }
    for (int d = 0; d < nd; d++)
        if (st[d].hint != t->strides[d]) st[d] = FX_SI(t->strides[d]); /* not dense: keep */
    fx_node *n = fx_tensor_trace_node(t, tr->id);
    rc = fx_tensor_set_sym(t, sizes, st, FX_SI(t->offset), err);
    if (!rc && n) {
        fx_ivalue v = fx_iv_tensor(t); /* the placeholder's val is t itself */
        rc = fx_node_set_val(n, &v, err);
        fx_ivalue_clear(&v);
    }
    if (rc) {
        fx_tensor_release(t);
        *out = NULL;
    }
    return rc;
}

static int sym_cache(fx_tracer *tr, const fx_sym *e, fx_node *n, fx_err *err) {
    if (tr->nsym == tr->sym_cap) {
        int cap = tr->sym_cap ? tr->sym_cap * 2 : 16;
        const fx_sym **ne = fx_realloc(tr->sym_expr, sizeof *ne * (size_t)cap);
        if (ne) tr->sym_expr = ne;
        fx_node **nn = fx_realloc(tr->sym_node, sizeof *nn * (size_t)cap);
        if (nn) tr->sym_node = nn;
        if (!ne || !nn) return fx_err_setf(err, FX_ENOMEM, "out of memory");
        tr->sym_cap = cap;
    }
    tr->sym_expr[tr->nsym] = e;
    tr->sym_node[tr->nsym++] = n;
    return FX_OK;
}

bool fx_tracer_has_symbols(const fx_tracer *tr) {
    int n = 0;
    if (tr->senv) fx_shape_env_symbols(tr->senv, &n);
    return n > 0;
}

int fx_tracer_bind_symbol(fx_tracer *tr, const fx_sym *e, fx_node *n, fx_err *err) {
    return sym_cache(tr, e, n, err);
}

/* A node computing e (its value is e). */
static fx_node *sym_new(fx_tracer *tr, const char *target, const char *name, const fx_ivalue *args,
                        int nargs, const fx_sym *e, fx_err *err) {
    fx_node *n = fx_graph_call_target(tr->g, target, args, nargs, name, err);
    if (!n) return NULL;
    fx_ivalue v = fx_iv_symint(fx_si_from_expr(e));
    int rc = fx_node_set_val(n, &v, err);
    fx_ivalue_clear(&v);
    if (!rc) rc = set_location(tr, n, err);
    if (!rc) rc = sym_cache(tr, e, n, err);
    return rc ? NULL : n;
}

static fx_node *sym_binop(fx_tracer *tr, const char *op, const fx_ivalue *x, const fx_ivalue *y,
                          const fx_sym *e, fx_err *err) {
    char target[32];
    snprintf(target, sizeof target, "%s%s", strncmp(op, "sym_", 4) ? "operator." : "torch.", op);
    fx_ivalue args[2] = {*x, *y};
    return sym_new(tr, target, op, args, 2, e, err);
}

/* The graph value of expression e: an int for a constant, else a node reference (made on first
 * use: sym_size.int of the input that carries a symbol, operator.add / mul / floordiv ... over
 * those, torch.sym_max / sym_min). */
static int sym_node_of(fx_tracer *tr, const fx_sym *e, fx_ivalue *out, fx_err *err) {
    fx_shape_env *env = fx_sym_env(e);
    if (!env) return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    if (!tr->raw_syms) e = fx_shape_env_simplify(env, e);
    if (fx_sym_is_error(e))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    if (fx_sym_kind_of(e) == FX_SYM_CONST) {
        *out = fx_iv_int(fx_sym_const_value(e));
        return FX_OK;
    }
    fx_node *cached = sym_cached(tr, e);
    if (cached) {
        *out = fx_iv_node(cached);
        return FX_OK;
    }
    fx_node *n = NULL;
    fx_ivalue x, y;
    int rc = FX_OK;
    switch (fx_sym_kind_of(e)) {
    case FX_SYM_SYMBOL: {
        /* the first input whose size carries the symbol */
        for (int i = 0; i < tr->ninfos && !n; i++) {
            const fx_tensor *t = fx_node_tensor(tr->infos[i].node);
            for (int d = 0; t && t->sym && d < t->ndim && !n; d++) {
                const fx_sym *sd = t->sym->size[d];
                if (!sd || fx_shape_env_simplify(env, sd) != e) continue;
                const fx_opdef *op = fx_op_get(FX_OP_SYM_SIZE_INT);
                fx_ivalue args[2] = {fx_iv_node(tr->infos[i].node), fx_iv_int(d)};
                if (!(n = fx_graph_call(tr->g, op, args, "sym_size_int", err))) return err->code;
                fx_ivalue v = fx_iv_symint(fx_si_from_expr(e));
                rc = fx_node_set_val(n, &v, err);
                fx_ivalue_clear(&v);
                if (!rc) rc = set_location(tr, n, err);
                if (!rc) rc = sym_cache(tr, e, n, err);
                if (rc) return rc;
            }
        }
        if (!n && tr->parent) {
            /* a body of a higher-order op: the symbol comes from the parent's graph */
            char buf[64];
            return fx_err_setf(err, FX_ENOTIMPL,
                               "a symbolic size (%s) used inside a higher-order op body is not "
                               "supported yet",
                               fx_sym_str(e, buf, sizeof buf));
        }
        if (!n) {
            char buf[64];
            return fx_err_setf(err, FX_EINTERNAL, "no input of the trace carries %s",
                               fx_sym_str(e, buf, sizeof buf));
        }
        break;
    }
    case FX_SYM_ADD: {
        /* constant + terms: the positive terms added left to right, then the negative ones
         * subtracted, then the constant */
        fx_ivalue acc = {.tag = FX_IV_UNSET};
        const fx_sym *sofar = NULL;
        for (int pass = 0; pass < 2 && !rc; pass++)
            for (int i = 0; i < fx_sym_nargs(e) && !rc; i++) {
                const fx_sym *t = fx_sym_arg(e, i);
                bool neg = fx_sym_coeff(t) < 0;
                if ((pass == 1) != neg) continue;
                const fx_sym *mag = neg ? fx_sym_neg(t) : t;
                if ((rc = sym_node_of(tr, mag, &y, err))) break;
                if (acc.tag == FX_IV_UNSET && !neg) {
                    acc = y;
                    sofar = t;
                    continue;
                }
                if (acc.tag == FX_IV_UNSET) acc = fx_iv_int(0), sofar = fx_sym_int(env, 0);
                sofar = neg ? fx_sym_add(sofar, t) : fx_sym_add(sofar, t);
                if (!(n = sym_binop(tr, neg ? "sub" : "add", &acc, &y, sofar, err)))
                    rc = err->code;
                else
                    acc = fx_iv_node(n);
            }
        if (rc) return rc;
        int64_t c = fx_sym_coeff(e);
        if (c != 0) {
            y = fx_iv_int(c < 0 ? -c : c);
            if (!(n = sym_binop(tr, c < 0 ? "sub" : "add", &acc, &y, e, err))) return err->code;
        } else {
            n = acc.u.node;
        }
        break;
    }
    case FX_SYM_MUL: {
        /* coeff * f0**k0 * f1**k1 ...: the factors multiplied left to right, then the
         * coefficient */
        fx_ivalue acc = {.tag = FX_IV_UNSET};
        const fx_sym *sofar = NULL;
        for (int i = 0; i < fx_sym_nargs(e); i++) {
            const fx_sym *f = fx_sym_arg(e, i);
            if ((rc = sym_node_of(tr, f, &y, err))) return rc;
            for (int64_t k = 0; k < fx_sym_exp(e, i); k++) {
                if (acc.tag == FX_IV_UNSET) {
                    acc = y;
                    sofar = f;
                    continue;
                }
                sofar = fx_sym_mul(sofar, f);
                if (!(n = sym_binop(tr, "mul", &acc, &y, sofar, err))) return err->code;
                acc = fx_iv_node(n);
            }
        }
        int64_t c = fx_sym_coeff(e);
        if (c != 1) {
            x = fx_iv_int(c);
            if (!(n = sym_binop(tr, "mul", &x, &acc, e, err))) return err->code;
        } else {
            n = acc.u.node;
        }
        break;
    }
    case FX_SYM_FLOORDIV:
    case FX_SYM_MOD:
    case FX_SYM_MAX:
    case FX_SYM_MIN: {
        fx_sym_kind k = fx_sym_kind_of(e);
        const char *op = k == FX_SYM_FLOORDIV ? "floordiv"
                         : k == FX_SYM_MOD    ? "mod"
                         : k == FX_SYM_MAX    ? "sym_max"
                                              : "sym_min";
        if ((rc = sym_node_of(tr, fx_sym_arg(e, 0), &x, err))) return rc;
        const fx_sym *sofar = fx_sym_arg(e, 0);
        for (int i = 1; i < fx_sym_nargs(e); i++) {
            if ((rc = sym_node_of(tr, fx_sym_arg(e, i), &y, err))) return rc;
            sofar = k == FX_SYM_FLOORDIV ? fx_sym_floordiv(sofar, fx_sym_arg(e, i))
                    : k == FX_SYM_MOD    ? fx_sym_mod(sofar, fx_sym_arg(e, i))
                    : k == FX_SYM_MAX    ? fx_sym_max(sofar, fx_sym_arg(e, i))
                                         : fx_sym_min(sofar, fx_sym_arg(e, i));
            if (!(n = sym_binop(tr, op, &x, &y, i + 1 == fx_sym_nargs(e) ? e : sofar, err)))
                return err->code;
            x = fx_iv_node(n);
        }
        break;
    }
    case FX_SYM_EQ:
    case FX_SYM_NE:
    case FX_SYM_LT:
    case FX_SYM_LE:
    case FX_SYM_GT:
    case FX_SYM_GE: /* a SymBool (torch.cond's predicate): `gt = sym_size_int > 2` */
        if (!(n = rel_node(tr, fx_sym_kind_of(e), fx_sym_arg(e, 0), fx_sym_arg(e, 1), err)))
            return err->code;
        if ((rc = set_location(tr, n, err)) || (rc = sym_cache(tr, e, n, err))) return rc;
        break;
    default: {
        char buf[64];
        return fx_err_setf(err, FX_ENOTIMPL, "cannot pass %s as a graph argument",
                           fx_sym_str(e, buf, sizeof buf));
    }
    }
    *out = fx_iv_node(n);
    return FX_OK;
}

int fx_tracer_sym_op(fx_tracer *tr, const char *op, fx_symint a, fx_symint b, fx_symint r,
                     fx_err *err) {
    if (!r.expr || !tr->senv || fx_sym_env(r.expr) != tr->senv) return FX_OK;
    if (fx_sym_is_error(r.expr))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    const fx_sym *e = fx_shape_env_simplify(tr->senv, r.expr);
    if (fx_sym_is_error(e))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    if (fx_sym_kind_of(e) == FX_SYM_CONST) return FX_OK;
    if (sym_cached(tr, e)) return FX_OK;
    bool unary = !strcmp(op, "neg");
    fx_symint v[2] = {a, b};
    fx_ivalue args[2];
    for (int k = 0; k < (unary ? 1 : 2); k++) {
        if (!v[k].expr) {
            args[k] = fx_iv_int(v[k].hint);
            continue;
        }
        fx_err e2;
        fx_err_clear(&e2);
        int rc = sym_node_of(tr, v[k].expr, &args[k], &e2);
        if (rc == FX_ENOMEM) return fx_err_setf(err, FX_ENOMEM, "%s", e2.msg);
        /* an operand the graph cannot name (a size inside a higher-order op body): nothing is
         * recorded here; a use of r reports it */
        if (rc) return FX_OK;
    }
    char target[32];
    snprintf(target, sizeof target, "%s%s", strncmp(op, "sym_", 4) ? "operator." : "torch.", op);
    return sym_new(tr, target, op, args, unary ? 1 : 2, e, err) ? FX_OK : err->code;
}

/* ---- data-dependent values ------------------------------------------------------------------ */

int fx_tracer_item(fx_tracer *tr, fx_tensor *t, fx_symint *out, fx_err *err) {
    int rc = fx_shape_env_check_pending(tr->senv, err);
    if (rc) return rc;
    if (fx_tensor_numel(t) != 1)
        return fx_err_setf(err, FX_EARG, "a Tensor with %lld elements cannot be converted to Scalar",
                           (long long)fx_tensor_numel(t));
    fx_dtype dt = fx_tensor_dtype(t);
    if (!fx_dtype_is_int(dt) || dt == FX_DTYPE_BOOL) {
        fx_err_kind(err, "data_dependent");
        fx_err_hintf(err, "use torch.cond for data-dependent control flow");
        return fx_err_setf(err, FX_EDATADEP,
                           "Could not extract specialized integer from data-dependent expression "
                           "(item() of a %s tensor while exporting: fxdb has unbacked symbols "
                           "for integer values only, no SymFloat / SymBool)",
                           fx_dtype_name(dt));
    }
    fx_shape_env *env = fx_tracer_shape_env(tr, err);
    if (!env) return err->code;
    fx_ivalue a = {.tag = FX_IV_UNSET}, arg;
    if ((rc = to_node_arg(tr, &(fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t}, &arg, err))) return rc;
    char src[96];
    snprintf(src, sizeof src, "%s.item()", arg.u.node->name);
    const fx_sym *u;
    if ((rc = fx_shape_env_create_unbacked(env, src, &u, err))) {
        fx_ivalue_clear(&arg);
        return rc;
    }
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {arg};
    fx_node *n = fx_graph_call(tr->g, fx_op_get(FX_OP__LOCAL_SCALAR_DENSE), args,
                               "_local_scalar_dense", err);
    fx_ivalue_clear(&arg);
    if (!n) return err->code;
    *out = fx_si_from_expr(u);
    a = fx_iv_symint(*out);
    rc = fx_node_set_val(n, &a, err);
    fx_ivalue_clear(&a);
    if (!rc) rc = set_location(tr, n, err);
    if (!rc) rc = sym_cache(tr, u, n, err);
    if (!rc) rc = step(tr, n, err);
    return rc;
}

/* A node `lhs REL rhs` over graph values (operator.ge ...), its value the relation. */
static fx_node *rel_node(fx_tracer *tr, fx_sym_kind k, const fx_sym *lhs, const fx_sym *rhs,
                         fx_err *err) {
    static const char *const names[] = {[FX_SYM_EQ] = "eq", [FX_SYM_NE] = "ne", [FX_SYM_LT] = "lt",
                                        [FX_SYM_LE] = "le", [FX_SYM_GT] = "gt", [FX_SYM_GE] = "ge"};
    if (fx_sym_kind_of(lhs) == FX_SYM_CONST && fx_sym_kind_of(rhs) != FX_SYM_CONST) {
        /* 2 < s0 is written s0 > 2, as sympy prints it and torch records `x.shape[0] > 2` */
        static const fx_sym_kind mirror[] = {[FX_SYM_EQ] = FX_SYM_EQ, [FX_SYM_NE] = FX_SYM_NE,
                                             [FX_SYM_LT] = FX_SYM_GT, [FX_SYM_LE] = FX_SYM_GE,
                                             [FX_SYM_GT] = FX_SYM_LT, [FX_SYM_GE] = FX_SYM_LE};
        const fx_sym *t = lhs;
        lhs = rhs;
        rhs = t;
        k = mirror[k];
    }
    fx_ivalue x, y;
    if (sym_node_of(tr, lhs, &x, err) || sym_node_of(tr, rhs, &y, err)) return NULL;
    char target[32];
    snprintf(target, sizeof target, "operator.%s", names[k]);
    fx_ivalue args[2] = {x, y};
    fx_node *n = fx_graph_call_target(tr->g, target, args, 2, names[k], err);
    if (!n) return NULL;
    fx_ivalue v = fx_iv_symint(fx_si_from_expr(fx_sym_rel(k, lhs, rhs)));
    int rc = fx_node_set_val(n, &v, err);
    fx_ivalue_clear(&v);
    return rc ? NULL : n;
}

/* _assert_scalar(cond, "Runtime assertion failed for expression u0 >= 0 on node 'ge'"). */
static int assert_node(fx_tracer *tr, fx_node *cond, fx_err *err) {
    fx_strbuf msg = FX_STRBUF_INIT;
    fx_strbuf_append(&msg, "Runtime assertion failed for expression ");
    fx_sym_format(&msg, cond->val.u.si.expr);
    fx_strbuf_appendf(&msg, " on node '%s'", cond->name);
    if (msg.oom) {
        fx_strbuf_free(&msg);
        return fx_err_setf(err, FX_ENOMEM, "out of memory");
    }
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {fx_iv_node(cond), fx_iv_str(fx_strbuf_cstr(&msg))};
    fx_strbuf_free(&msg);
    fx_node *n = fx_graph_call(tr->g, fx_op_get(FX_OP__ASSERT_SCALAR), args,
                               "_assert_scalar_default", err);
    fx_ivalue_clear(&args[1]);
    return n ? FX_OK : err->code;
}

static void count_sym(void *ud, const fx_sym *s) {
    (void)s;
    ++*(int *)ud;
}

typedef struct last_bind {
    fx_tracer *tr;
    fx_node *last; /* the latest _local_scalar_dense binding a symbol of the expression */
} last_bind;

static void note_binder(void *ud, const fx_sym *s) {
    last_bind *lb = ud;
    for (int i = 0; i < lb->tr->nsym; i++) {
        fx_node *n = lb->tr->sym_node[i];
        if (lb->tr->sym_expr[i] != s || !n->aten || n->aten->id != FX_OP__LOCAL_SCALAR_DENSE)
            continue;
        if (!lb->last || lb->last->tag < n->tag) lb->last = n;
    }
}

/* Whether n is one of the range asserts emitted right after an item() (sym_constrain_range_for_size,
 * _assert_scalar, or the relation an _assert_scalar reads). */
static bool is_range_assert(const fx_node *n) {
    if (n->aten) return n->aten->id == FX_OP__ASSERT_SCALAR ||
                        n->aten->id == FX_OP_SYM_CONSTRAIN_RANGE_FOR_SIZE;
    if (n->op != FX_NODE_CALL_FUNCTION || strncmp(n->target, "operator.", 9)) return false;
    for (int i = 0; i < n->nusers; i++)
        if (!n->users[i]->aten || n->users[i]->aten->id != FX_OP__ASSERT_SCALAR) return false;
    return n->nusers > 0;
}

/* One torch._check relation e over several symbols (at least one unbacked), asserted where
 * insert_deferred_runtime_asserts puts it: once every symbol of it is bound — backed ones by the
 * placeholders, unbacked ones by their _local_scalar_dense — after the last binder's own range
 * asserts. The size and arithmetic nodes it needs are made there (nodes the trace made for the
 * same expressions further down cannot be used before they exist). */
static int multi_assert(fx_tracer *tr, const fx_sym *e, fx_err *err) {
    int pos = 0;
    for (fx_node *n = fx_graph_first(tr->g); n; n = n->next) n->tag = pos++;
    last_bind lb = {tr, NULL};
    fx_sym_foreach_symbol(e, note_binder, &lb);
    fx_node *at = lb.last ? lb.last->next : NULL;
    while (at && is_range_assert(at)) at = at->next;
    int cut = at ? at->tag : pos;
    /* hide the cached nodes from `at` on */
    const fx_sym **saved = fx_malloc(sizeof *saved * (size_t)(tr->nsym ? tr->nsym : 1));
    if (!saved) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    int n0 = tr->nsym;
    for (int i = 0; i < n0; i++) {
        saved[i] = tr->sym_expr[i];
        if (tr->sym_node[i]->tag >= cut) tr->sym_expr[i] = NULL;
    }
    fx_graph_set_insert_point(tr->g, at);
    tr->no_location = tr->raw_syms = true;
    fx_node *c = rel_node(tr, fx_sym_kind_of(e), fx_sym_arg(e, 0), fx_sym_arg(e, 1), err);
    int rc = c ? assert_node(tr, c, err) : err->code;
    tr->no_location = tr->raw_syms = false;
    for (int i = 0; i < n0; i++) tr->sym_expr[i] = saved[i];
    fx_free(saved);
    return rc;
}

/* The runtime asserts torch.export's insert_deferred_runtime_asserts emits, after the node that
 * binds each unbacked symbol (its _local_scalar_dense, or the sym_size.int of an output whose
 * length it is): sym_constrain_range_for_size for a
 * size-like symbol, then `ge` / `le` nodes with _assert_scalar for the finite ends of its range;
 * then every torch._check over several symbols, once all of them are bound. */
static int runtime_asserts(fx_tracer *tr, fx_err *err) {
    if (!tr->senv) return FX_OK;
    fx_shape_env *env = tr->senv;
    int nas;
    const fx_guard *as = fx_shape_env_runtime_asserts(env, &nas);
    int rc = FX_OK;
    for (int i = 0; i < tr->nsym && !rc; i++) {
        fx_node *bind = tr->sym_node[i];
        if (!bind->aten ||
            (bind->aten->id != FX_OP__LOCAL_SCALAR_DENSE && bind->aten->id != FX_OP_SYM_SIZE_INT))
            continue;
        const fx_sym *u = tr->sym_expr[i];
        const fx_symbol_info *si = fx_shape_env_symbol(env, u);
        /* an item(), or the sym_size.int of an op output's unbacked length */
        if (!si || (bind->aten->id == FX_OP_SYM_SIZE_INT && !si->unbacked)) continue;
        fx_graph_set_insert_point(tr->g, bind->next);
        if (fx_shape_env_is_size_like(env, u)) {
            fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {fx_iv_node(bind), {.tag = FX_IV_UNSET},
                                                  {.tag = FX_IV_UNSET}};
            if (!fx_graph_call(tr->g, fx_op_get(FX_OP_SYM_CONSTRAIN_RANGE_FOR_SIZE), args,
                               "sym_constrain_range_for_size_default", err))
                rc = err->code;
        }
        fx_vr r = si->vr;
        if (!rc && r.lo != -FX_INT_OO) {
            fx_node *c = rel_node(tr, FX_SYM_GE, u, fx_sym_int(env, r.lo), err);
            rc = c ? assert_node(tr, c, err) : err->code;
        }
        if (!rc && r.hi != FX_INT_OO) {
            fx_node *c = rel_node(tr, FX_SYM_LE, u, fx_sym_int(env, r.hi), err);
            rc = c ? assert_node(tr, c, err) : err->code;
        }
    }
    /* torch._check relations over several symbols (one symbol's are its range), as soon as all
     * of them are bound: after the last item() among them and that one's range asserts */
    for (int k = 0; k < nas && !rc; k++) {
        const fx_sym *e = as[k].expr;
        fx_sym_kind kind = fx_sym_kind_of(e);
        int nsy = 0;
        fx_sym_foreach_symbol(e, count_sym, &nsy);
        if (kind < FX_SYM_EQ || kind > FX_SYM_GE || nsy < 2 || !fx_sym_has_unbacked(e)) continue;
        rc = multi_assert(tr, e, err);
    }
    fx_graph_set_insert_point(tr->g, NULL);
    return rc;
}
