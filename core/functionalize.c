/* core/functionalize.c — raw graph -> functional graph (docs/ARCHITECTURE.md §5).
 * Layer: core. The semantics of PyTorch's FunctionalTensorWrapper / FunctionalStorageImpl
 * (aten/src/ATen/FunctionalTensorWrapper.cpp, torch/_subclasses/functional_tensor.py), done as a
 * pass over the recorded graph:
 *
 *   - Every raw tensor value has a base (a placeholder or a fresh op result) and a view chain from
 *     it, read from the schemas' alias annotations: a view op's result has its input as parent;
 *     an in-place op's result *is* its mutated input (canon[] maps it there).
 *   - Each base has a current value in the new graph and a generation number. Reading a view
 *     replays its view op on its parent's current value, only when the base's generation changed
 *     since the view was last materialized.
 *   - A mutating op emits its functional twin on the current values. If it wrote a view, the new
 *     value is scattered back through the chain innermost first (select -> select_scatter,
 *     slice -> slice_scatter, the reshaping views -> their inverse view); the base's generation
 *     goes up, so every other view of it sees the write when next read.
 *   - fxdb.assign_buffer rebinds a buffer to another value.
 *   - At the end every input whose value changed gets an output before the user outputs.
 *
 * Each emitted node gets the raw node's stack trace and module stack, `from_node` naming the raw
 * node, and — when it makes a new version of an input — a mutation record. Values (meta["val"])
 * are recomputed by running each op's meta function. The raw graph's nodes' `tag` fields are
 * used as scratch (their index). */
#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/hop.h"
#include "core/meta_common.h"
#include "core/passes.h"
#include "core/registry.h"
#include "core/shape.h"

typedef struct fstate {
    const fx_graph *raw;
    const fx_input_info *infos;
    int ninfos;
    bool lift_constants;
    bool af_v2;           /* mutating custom ops as auto_functionalized_v2 */
    fx_graph *g;          /* the functional graph being built */
    int n;                /* raw node count */
    fx_node **raw_nodes;  /* (n,) */
    int *canon;           /* (n,) raw index whose value this node is (in-place results alias) */
    int *parent;          /* (n,) view parent (canonical) or -1 for a base */
    int *base;            /* (n,) base of the value */
    fx_node **fn;         /* (n,) materialized functional value */
    uint64_t *fn_gen;     /* (n,) base generation when fn was made */
    fx_node **cur;        /* (n,) for bases: current functional value */
    uint64_t *gen;        /* (n,) for bases: generation */
    int *ph_index;        /* (n,) placeholder ordinal for placeholder nodes, else -1 */
    int *bound;           /* (ninfos,) raw index the input is bound to now */
    int *version;         /* (ninfos,) versions made so far */
    struct af_out **af;   /* (n,) for a raw mutating custom op: its auto_functionalized outputs;
                             for an effectful op, its with_effects outputs after the token */
    fx_node *token;       /* the current effect token (with_effects), or NULL */
    fx_ctx meta;          /* meta-mode dispatch for recomputing values */
    fx_err *err;
} fstate;

/* ---- helpers --------------------------------------------------------------------------------- */

static int fail_at(fstate *s, const fx_node *raw, int code, const char *kind) {
    fx_err *e = s->err;
    e->code = code;
    if (kind) fx_err_kind(e, kind);
    if (raw) {
        snprintf(e->node, sizeof e->node, "%s", raw->name);
        if (raw->nstack > 0) {
            snprintf(e->loc, sizeof e->loc, "%s:%d", raw->stack[0].file, raw->stack[0].line);
            snprintf(e->source, sizeof e->source, "%s", raw->stack[0].code);
        }
        if (raw->nmodules > 0) {
            const fx_module_entry *m = &raw->modules[raw->nmodules - 1];
            snprintf(e->module, sizeof e->module, "%s (%s)", m->path, m->cls);
        }
    }
    return code;
}

static int functionalize_body(fstate *s, const fx_node *r, fx_graph **out);
static int do_hop(fstate *s, int i);

/* Replaces node refs by their vals (for meta dispatch). Result owned. */
static int vals_of(const fx_ivalue *v, fx_ivalue *out, fx_err *err) {
    if (v->tag == FX_IV_NODE) return fx_ivalue_copy(out, &v->u.node->val, err);
    if (v->tag == FX_IV_LIST) {
        int rc = fx_iv_list(v->u.list.n, out, err);
        for (int i = 0; !rc && i < v->u.list.n; i++) rc = vals_of(&v->u.list.items[i], &out->u.list.items[i], err);
        if (rc) fx_ivalue_clear(out);
        return rc;
    }
    return fx_ivalue_copy(out, v, err);
}

/* Emits op(args) into the functional graph with meta copied from `raw`; its val is computed by
 * the op's meta function. Returns NULL on error (s->err set). */
static fx_node *emit(fstate *s, fx_op_id id, const fx_ivalue *args, int nargs, const fx_node *raw) {
    const fx_opdef *op = fx_op_get(id);
    fx_ivalue full[FX_SCHEMA_MAX_ARGS], vals[FX_SCHEMA_MAX_ARGS], outs[FX_SCHEMA_MAX_RETS];
    int na = op->schema.nargs, made = 0, rc = FX_OK;
    for (int i = 0; i < na; i++) full[i] = i < nargs ? args[i] : (fx_ivalue){.tag = FX_IV_UNSET};
    for (; made < na && !rc; made++) rc = vals_of(&full[made], &vals[made], s->err);
    if (!rc) rc = fx_dispatch(&s->meta, op, vals, outs, s->err);
    for (int i = 0; i < made; i++) fx_ivalue_clear(&vals[i]);
    if (rc) {
        fail_at(s, raw, rc, NULL);
        return NULL;
    }
    fx_node *n = fx_graph_call(s->g, op, full, NULL, s->err);
    if (n) {
        if (op->schema.nrets == 1) {
            rc = fx_node_set_val(n, &outs[0], s->err);
        } else { /* a tuple: its getitems take their vals from the list, as in the trace */
            fx_ivalue all;
            rc = fx_iv_list(op->schema.nrets, &all, s->err);
            for (int i = 0; !rc && i < op->schema.nrets; i++) rc = fx_ivalue_copy(&all.u.list.items[i], &outs[i], s->err);
            if (!rc) rc = fx_node_set_val(n, &all, s->err);
            fx_ivalue_clear(&all);
        }
        if (!rc && raw) rc = fx_node_copy_meta(n, raw, s->err);
        if (!rc && raw) rc = fx_node_add_from(n, raw->name, s->err);
        if (rc) n = NULL;
    }
    for (int i = 0; i < op->schema.nrets; i++) fx_ivalue_clear(&outs[i]);
    return n;
}

static int canon_of(fstate *s, const fx_node *n) { return s->canon[n->tag]; }

static fx_node *read_value(fstate *s, int i);
static bool is_list_view_item(fstate *s, int i);
static int strided_args_of(fstate *s, const fx_node *r, fx_ivalue *a);
static int input_metadata_error(fstate *s, const fx_node *r, int b);
static fx_node *emit_mapped(fstate *s, fx_op_id id, fx_ivalue *a, int from, int na,
                            const fx_node *cause);

/* Maps a raw argument to the functional graph: node refs become current values. */
static int map_arg(fstate *s, const fx_ivalue *v, fx_ivalue *out) {
    if (v->tag == FX_IV_NODE) {
        fx_node *f = read_value(s, canon_of(s, v->u.node));
        if (!f) return s->err->code ? s->err->code : FX_EINTERNAL;
        *out = fx_iv_node(f);
        return FX_OK;
    }
    if (v->tag == FX_IV_LIST) {
        int rc = fx_iv_list(v->u.list.n, out, s->err);
        for (int i = 0; !rc && i < v->u.list.n; i++) rc = map_arg(s, &v->u.list.items[i], &out->u.list.items[i]);
        if (rc) fx_ivalue_clear(out);
        return rc;
    }
    return fx_ivalue_copy(out, v, s->err);
}

/* A metadata mutation (transpose_, t_, ...): in-place by its schema, and its twin is a view. */
static bool is_metadata_mutation(const fx_opdef *op) {
    return fx_op_is_inplace(op) && op->twin != FX_OP_NONE && fx_op_is_view(fx_op_get(op->twin));
}

/* The view op a raw view node stands for (the twin of a metadata mutation). */
static const fx_opdef *view_op_of(const fx_node *r) {
    return is_metadata_mutation(r->aten) ? fx_op_get(r->aten->twin) : r->aten;
}

/* `on` itself when aten.view can give it the shape (ndim, sizes); else a contiguous clone of it.
 * A functional value can have other strides than eager's storage (a write through a transpose
 * scattered back by transposing the result of an op that returns a contiguous tensor): view a
 * contiguous copy then, which holds the same values, where PyTorch's replayed view would fail
 * although eager's view succeeded. NULL on error. */
static fx_node *viewable(fstate *s, fx_node *on, int ndim, const int64_t *sizes, const fx_node *raw) {
    const fx_tensor *src = fx_node_tensor(on);
    int64_t st[FX_MAX_DIMS];
    if (!src || fx_view_strides(fx_tensor_ndim(src), fx_tensor_sizes(src), fx_tensor_strides(src),
                                ndim, sizes, st))
        return on;
    fx_ivalue ca[2] = {fx_iv_node(on), fx_iv_str("torch.contiguous_format")};
    fx_node *c = emit(s, FX_OP_CLONE, ca, 2, raw);
    fx_ivalue_clear(&ca[1]);
    return c;
}

/* Replays raw view node i (a view op) on functional value `on`. */
static fx_node *replay_view(fstate *s, int i, fx_node *on) {
    const fx_node *r = s->raw_nodes[i];
    const fx_opdef *vop = view_op_of(r);
    const fx_tensor *want = fx_node_tensor(r);
    if (vop->id == FX_OP_RESIZE_ || vop->id == FX_OP_SET__SOURCE_TENSOR_STORAGE_OFFSET) {
        fx_ivalue a[4] = {fx_iv_node(on)};
        if (strided_args_of(s, r, a)) return NULL;
        fx_ivalue st = a[2];
        fx_node *n = emit_mapped(s, FX_OP_AS_STRIDED, a, 1, 4, r);
        fx_ivalue_clear(&st);
        return n;
    }
    if (vop->id == FX_OP_VIEW && want) {
        on = viewable(s, on, fx_tensor_ndim(want), fx_tensor_sizes(want), r);
        if (!on) return NULL;
    }
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0};
    int na = r->nargs, rc = FX_OK, made = 0;
    for (; made < na && !rc; made++) {
        if (made == vop->schema.view_arg) args[made] = fx_iv_node(on);
        else rc = map_arg(s, &r->args[made], &args[made]); /* SymInt nodes: their current node */
    }
    fx_node *n = rc ? NULL : emit(s, vop->id, args, na, r);
    for (int k = 0; k < made; k++) fx_ivalue_clear(&args[k]);
    return n;
}

/* The current functional value of raw value i (canonical index). */
static fx_node *read_value(fstate *s, int i) {
    int b = s->base[i];
    if (i == b) return s->cur[b];
    if (s->fn[i] && s->fn_gen[i] == s->gen[b]) return s->fn[i];
    fx_node *p = read_value(s, s->parent[i]);
    if (!p) return NULL;
    fx_node *n;
    if (is_list_view_item(s, i)) { /* getitem(split(...), k) on the list's current value */
        fx_ivalue a[2] = {fx_iv_node(p), s->raw_nodes[i]->args[1]};
        n = fx_graph_call_target(s->g, "getitem", a, 2, "getitem", s->err);
        if (n && (fx_node_set_val(n, &s->raw_nodes[i]->val, s->err) ||
                  fx_node_copy_meta(n, s->raw_nodes[i], s->err) ||
                  fx_node_add_from(n, s->raw_nodes[i]->name, s->err)))
            n = NULL;
    } else {
        n = replay_view(s, i, p);
    }
    if (!n) return NULL;
    s->fn[i] = n;
    s->fn_gen[i] = s->gen[b];
    return n;
}

/* "select(1, 0)" for raw view node r: its non-self arguments as printed. */
static void view_desc(fx_strbuf *sb, const fx_node *r) {
    if (!r->aten) { /* getitem of a split/unbind: "split(2)[1]" */
        view_desc(sb, r->args[0].u.node);
        fx_strbuf_appendf(sb, "[%lld]", (long long)r->args[1].u.i);
        return;
    }
    const fx_schema *sc = &view_op_of(r)->schema;
    fx_strbuf_appendf(sb, "%s(", sc->name);
    bool first = true;
    for (int k = 0; k < r->nargs; k++) {
        if (k == sc->view_arg) continue;
        if (sc->args[k].kwarg_only) break;
        if (!first) fx_strbuf_append(sb, ", ");
        fx_ivalue_format(sb, &r->args[k], false);
        first = false;
    }
    fx_strbuf_putc(sb, ')');
}

/* Is raw node i a getitem of a list-returning view op (split, split_with_sizes, unbind)? Then
 * it is a view of that op's input: parent[i] is the list node, and writes go to the grandparent. */
static bool is_list_view_item(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    if (r->aten || strcmp(r->target, "getitem") || r->args[0].tag != FX_IV_NODE) return false;
    const fx_node *src = r->args[0].u.node;
    return src->aten && fx_op_is_view(src->aten) && src->aten->schema.rets[0].type == FX_TY_TENSOR_LIST;
}

/* The SymInt `x op y` (op "add" or "mul") of two bounds that are ints or functional nodes whose
 * values are SymInts: an int when both are plain (or the operation is trivial), else an
 * operator.<op> node with that value. New reference in *out. */
static int sym_bound(fstate *s, const char *op, fx_ivalue x, fx_ivalue y, const fx_node *cause,
                     fx_ivalue *out) {
    fx_symint a, b;
    const fx_ivalue *xv = x.tag == FX_IV_NODE ? &x.u.node->val : &x;
    const fx_ivalue *yv = y.tag == FX_IV_NODE ? &y.u.node->val : &y;
    if (!fx_ivalue_symint(xv, &a) || !fx_ivalue_symint(yv, &b))
        return fx_err_setf(s->err, FX_EINTERNAL, "a split bound is not an integer");
    bool add = !strcmp(op, "add");
    fx_symint r = add ? fx_si_add(a, b) : fx_si_mul(a, b);
    if (r.expr && fx_sym_is_error(r.expr))
        return fx_err_setf(s->err, FX_ENOMEM, "out of memory in a symbolic size expression");
    /* 0 + y, x * 1, 0 * y: no node */
    const fx_ivalue *same = NULL;
    if (!r.expr) return *out = fx_iv_int(r.hint), FX_OK;
    if (x.tag == FX_IV_INT && x.u.i == (add ? 0 : 1)) same = &y;
    if (y.tag == FX_IV_INT && y.u.i == (add ? 0 : 1)) same = &x;
    if (same) return fx_ivalue_copy(out, same, s->err);
    char target[24];
    snprintf(target, sizeof target, "operator.%s", op);
    fx_ivalue args[2] = {x, y};
    fx_node *n = fx_graph_call_target(s->g, target, args, 2, op, s->err);
    if (!n) return s->err->code;
    fx_ivalue v = fx_iv_symint(r);
    int rc = fx_node_set_val(n, &v, s->err);
    fx_ivalue_clear(&v);
    if (!rc && cause) rc = fx_node_copy_meta(n, cause, s->err);
    if (rc) return rc;
    *out = fx_iv_node(n);
    return FX_OK;
}

/* Writes `val` (new value of piece j of a split/unbind) into the list op's input; *skip is set so
 * the caller continues from that input rather than the list node. */
static fx_node *scatter_list_item(fstate *s, int j, fx_node *val, const fx_node *cause) {
    const fx_node *item = s->raw_nodes[j];
    int l = s->parent[j];
    const fx_node *list = s->raw_nodes[l];
    fx_node *p = read_value(s, s->parent[l]);
    if (!p) return NULL;
    const fx_tensor *pt = fx_node_tensor(p);
    int64_t idx = item->args[1].u.i;
    fx_ivalue a[6];
    int d;
    switch (list->aten->id) {
    case FX_OP_UNBIND_INT:
        if (fx_wrap_dim(list->args[1].u.i, fx_tensor_ndim(pt), &d, s->err)) return NULL;
        a[0] = fx_iv_node(p), a[1] = fx_iv_node(val), a[2] = fx_iv_int(d), a[3] = fx_iv_int(idx);
        return emit(s, FX_OP_SELECT_SCATTER, a, 4, cause);
    case FX_OP_SPLIT_TENSOR:
    case FX_OP_SPLIT_WITH_SIZES: {
        /* piece idx is the slice [start, end) along d: start = idx * split_size (the sum of the
         * sizes before it), end = start + its size, the last piece's end the size of d
         * (split_Tensor_inverse's clamp) — sym_size.int / operator nodes when those are
         * symbolic (chunk of a dynamic dim: split_size is a SymInt) */
        if (list->args[2].tag != FX_IV_INT) {
            fx_err_setf(s->err, FX_EINTERNAL, "%s with a symbolic dim", fx_op_qualname(list->aten));
            return NULL;
        }
        if (fx_wrap_dim(list->args[2].u.i, fx_tensor_ndim(pt), &d, s->err)) return NULL;
        int npieces = list->val.tag == FX_IV_LIST ? list->val.u.list.n : 0;
        fx_ivalue start = fx_iv_int(0), len = {.tag = FX_IV_UNSET}, end;
        int rc = FX_OK;
        if (list->aten->id == FX_OP_SPLIT_TENSOR) {
            fx_ivalue size;
            if ((rc = map_arg(s, &list->args[1], &size))) return NULL;
            rc = sym_bound(s, "mul", fx_iv_int(idx), size, cause, &start);
            len = size;
        } else {
            const fx_ivalue *sz = &list->args[1];
            if (sz->tag != FX_IV_LIST || idx >= sz->u.list.n) rc = FX_EINTERNAL;
            for (int64_t k = 0; k < idx && !rc; k++) {
                fx_ivalue piece, sum;
                if ((rc = map_arg(s, &sz->u.list.items[k], &piece))) break;
                rc = sym_bound(s, "add", start, piece, cause, &sum);
                fx_ivalue_clear(&piece);
                if (rc) break;
                fx_ivalue_clear(&start);
                start = sum;
            }
            if (!rc) rc = map_arg(s, &sz->u.list.items[idx], &len);
        }
        if (!rc && idx == npieces - 1) {
            fx_symint n = fx_tensor_sym_size(pt, d);
            if (!fx_si_is_sym(n)) {
                end = fx_iv_int(n.hint);
            } else {
                fx_ivalue sa[2] = {fx_iv_node(p), fx_iv_int(d)};
                fx_node *sn = emit(s, FX_OP_SYM_SIZE_INT, sa, 2, cause);
                if (sn) end = fx_iv_node(sn);
                else rc = s->err->code ? s->err->code : FX_EINTERNAL;
            }
        } else if (!rc) {
            rc = sym_bound(s, "add", start, len, cause, &end);
        }
        fx_ivalue_clear(&len);
        if (rc) {
            fx_ivalue_clear(&start);
            if (rc == FX_EINTERNAL && !s->err->code)
                fx_err_setf(s->err, FX_EINTERNAL, "malformed %s node", fx_op_qualname(list->aten));
            return NULL;
        }
        a[0] = fx_iv_node(p), a[1] = fx_iv_node(val), a[2] = fx_iv_int(d), a[3] = start;
        a[4] = end, a[5] = fx_iv_int(1);
        fx_node *r = emit(s, FX_OP_SLICE_SCATTER, a, 6, cause);
        fx_ivalue_clear(&a[3]);
        fx_ivalue_clear(&a[4]);
        return r;
    }
    default: break;
    }
    fx_err_setf(s->err, FX_ENOTIMPL, "fxdb cannot yet write back through a piece of %s",
                fx_op_qualname(list->aten));
    fail_at(s, cause, FX_ENOTIMPL, "not_implemented");
    return NULL;
}

/* emit(id, a) where a[from..na) are raw arguments of r (mapped to the functional graph first:
 * a SymInt argument is a node of the raw graph, e.g. the sym_size.int of a dynamic slice's end). */
static fx_node *emit_mapped(fstate *s, fx_op_id id, fx_ivalue *a, int from, int na,
                            const fx_node *cause) {
    int made = from, rc = FX_OK;
    for (; made < na && !rc; made++) {
        fx_ivalue raw = a[made];
        rc = map_arg(s, &raw, &a[made]);
    }
    fx_node *n = rc ? NULL : emit(s, id, a, na, cause);
    for (int k = from; k < made - (rc ? 1 : 0); k++) fx_ivalue_clear(&a[k]);
    return n;
}

/* The sizes of functional value p as view() arguments: an int per static dim, a sym_size.int node
 * of p per symbolic one (the inverse of a view of a dynamic base). Owned list in *out. */
static int size_args(fstate *s, fx_node *p, const fx_node *cause, fx_ivalue *out) {
    const fx_tensor *t = fx_node_tensor(p);
    int nd = fx_tensor_ndim(t);
    int rc = fx_iv_list(nd, out, s->err);
    for (int d = 0; d < nd && !rc; d++) {
        fx_symint sd = fx_tensor_sym_size(t, d);
        if (!fx_si_is_sym(sd)) {
            out->u.list.items[d] = fx_iv_int(sd.hint);
            continue;
        }
        fx_ivalue a[2] = {fx_iv_node(p), fx_iv_int(d)};
        fx_node *n = emit(s, FX_OP_SYM_SIZE_INT, a, 2, cause);
        if (!n) rc = s->err->code ? s->err->code : FX_EINTERNAL;
        else out->u.list.items[d] = fx_iv_node(n);
    }
    if (rc) fx_ivalue_clear(out);
    return rc;
}

/* The inverse of unfold(dim, size, step) view r of p, for new window values val: PyTorch's
 * unfold_backward(val, p's sizes, dim, size, step) (FunctionalInverses.cpp), which refuses
 * overlapping windows (size > step) with its "internal overlap" error. unfold_backward leaves 0
 * where no window reaches (step > size, or a tail shorter than a window), so unless the windows
 * tile the dim exactly fxdb keeps p there: where(unfold_backward(ones_like(val, bool)), ..., p)
 * (docs/CHOICES.md). */
static fx_node *unfold_inverse(fstate *s, const fx_node *r, fx_node *p, fx_node *val,
                               const fx_node *cause) {
    const fx_tensor *pt = fx_node_tensor(p);
    int64_t size = r->args[2].u.i, step = r->args[3].u.i;
    if (!pt) return NULL;
    if (size > step) {
        fx_err_setf(s->err, FX_EEXPORT,
                    "While executing unfold, functionalization encountered a tensor being mutated "
                    "that has internal overlap. When using torch.compile (or running "
                    "functionalization directly), this is banned as the behavior is not well "
                    "defined. Consider cloning the tensor before mutating it, or removing the "
                    "mutation from your model.");
        fx_err_hintf(s->err, "windows of %lld elements %lld apart share elements: write into "
                             "x:unfold(...):clone() or into the base tensor instead",
                     (long long)size, (long long)step);
        fail_at(s, cause, FX_EEXPORT, "unsupported_view_write");
        return NULL;
    }
    int d = 0, nd = fx_tensor_ndim(pt);
    if (fx_wrap_dim(r->args[1].u.i, nd, &d, s->err)) return NULL;
    fx_symint n = nd ? fx_tensor_sym_size(pt, d) : FX_SI(1);
    bool tiles = size == step && size > 0 && !fx_si_is_sym(n) && n.hint % size == 0;
    fx_ivalue l;
    if (size_args(s, p, cause, &l)) return NULL;
    fx_ivalue a[5] = {fx_iv_node(val), l, r->args[1], r->args[2], r->args[3]};
    fx_node *back = emit(s, FX_OP_UNFOLD_BACKWARD, a, 5, cause), *res = back;
    if (back && !tiles) {
        fx_ivalue o[2] = {fx_iv_node(val), fx_iv_dtype(FX_DTYPE_BOOL)};
        fx_node *ones = emit(s, FX_OP_ONES_LIKE, o, 2, cause), *mask = NULL;
        if (ones) {
            a[0] = fx_iv_node(ones);
            mask = emit(s, FX_OP_UNFOLD_BACKWARD, a, 5, cause);
        }
        fx_ivalue w[3] = {fx_iv_node(mask), fx_iv_node(back), fx_iv_node(p)};
        res = mask ? emit(s, FX_OP_WHERE_SELF, w, 3, cause) : NULL;
    }
    fx_ivalue_clear(&l);
    return res;
}

/* Writes `val` (new value of view i) back into view i's parent; returns the parent's new value. */
static fx_node *scatter_one(fstate *s, int i, fx_node *val, const fx_node *cause) {
    const fx_node *r = s->raw_nodes[i];
    const fx_opdef *op = view_op_of(r);
    fx_node *p = read_value(s, s->parent[i]);
    if (!p) return NULL;
    fx_tensor *pt = fx_node_tensor(p);
    fx_ivalue a[6];
    int na = 0;
    switch (op->id) {
    case FX_OP_SELECT_INT: /* select_scatter(self, src, dim, index) */
        a[0] = fx_iv_node(p), a[1] = fx_iv_node(val), a[2] = r->args[1], a[3] = r->args[2];
        return emit_mapped(s, FX_OP_SELECT_SCATTER, a, 2, 4, cause);
    case FX_OP_SLICE_TENSOR: /* slice_scatter(self, src, dim, start, end, step) */
        a[0] = fx_iv_node(p), a[1] = fx_iv_node(val);
        for (int k = 1; k <= 4; k++) a[k + 1] = r->args[k];
        return emit_mapped(s, FX_OP_SLICE_SCATTER, a, 2, 6, cause);
    case FX_OP_UNSQUEEZE:
        a[0] = fx_iv_node(val), a[1] = r->args[1];
        return emit(s, FX_OP_SQUEEZE_DIM, a, 2, cause);
    case FX_OP_TRANSPOSE_INT:
        a[0] = fx_iv_node(val), a[1] = r->args[1], a[2] = r->args[2];
        return emit(s, FX_OP_TRANSPOSE_INT, a, 3, cause);
    case FX_OP_T:
        a[0] = fx_iv_node(val);
        return emit(s, FX_OP_T, a, 1, cause);
    case FX_OP_ALIAS: return val;
    case FX_OP_VIEW_AS_REAL: /* the inverse views of each other */
        a[0] = fx_iv_node(val);
        return emit(s, FX_OP_VIEW_AS_COMPLEX, a, 1, cause);
    case FX_OP_VIEW_AS_COMPLEX:
        a[0] = fx_iv_node(val);
        return emit(s, FX_OP_VIEW_AS_REAL, a, 1, cause);
    case FX_OP_PERMUTE: {
        const fx_ivalue *dims = &r->args[1];
        int64_t inv[FX_MAX_DIMS];
        int nd = dims->u.list.n;
        for (int k = 0; k < nd; k++) {
            int d;
            if (fx_wrap_dim(dims->u.list.items[k].u.i, nd, &d, s->err)) return NULL;
            inv[d] = k;
        }
        fx_ivalue l;
        if (fx_iv_int_list(nd, inv, &l, s->err)) return NULL;
        a[0] = fx_iv_node(val), a[1] = l;
        fx_node *n = emit(s, FX_OP_PERMUTE, a, 2, cause);
        fx_ivalue_clear(&l);
        return n;
    }
    case FX_OP_VIEW:
    case FX_OP_SQUEEZE:
    case FX_OP_SQUEEZE_DIM:
    case FX_OP_SQUEEZE_DIMS: {
        if (!pt) break;
        val = viewable(s, val, fx_tensor_ndim(pt), fx_tensor_sizes(pt), cause);
        if (!val) return NULL;
        fx_ivalue l;
        if (size_args(s, p, cause, &l)) return NULL;
        a[0] = fx_iv_node(val), a[1] = l;
        fx_node *n = emit(s, FX_OP_VIEW, a, 2, cause);
        fx_ivalue_clear(&l);
        return n;
    }
    case FX_OP_DIAGONAL: /* diagonal_scatter(self, src, offset, dim1, dim2) */
        a[0] = fx_iv_node(p), a[1] = fx_iv_node(val);
        for (int k = 1; k <= 3; k++) a[k + 1] = r->args[k];
        return emit_mapped(s, FX_OP_DIAGONAL_SCATTER, a, 2, 5, cause);
    case FX_OP_AS_STRIDED: /* as_strided_scatter(self, src, size, stride, storage_offset) */
        a[0] = fx_iv_node(p), a[1] = fx_iv_node(val);
        for (int k = 1; k <= 3; k++) a[k + 1] = r->args[k];
        return emit_mapped(s, FX_OP_AS_STRIDED_SCATTER, a, 2, 5, cause);
    case FX_OP_UNFOLD: return unfold_inverse(s, r, p, val, cause);
    case FX_OP_RESIZE_: /* as resize__functionalization's view meta */
    case FX_OP_SET__SOURCE_TENSOR_STORAGE_OFFSET: {
        fx_ivalue b[4];
        if (strided_args_of(s, r, b)) return NULL;
        a[0] = fx_iv_node(p), a[1] = fx_iv_node(val), a[2] = b[1], a[3] = b[2], a[4] = b[3];
        fx_node *n = emit_mapped(s, FX_OP_AS_STRIDED_SCATTER, a, 2, 5, cause);
        fx_ivalue_clear(&b[2]);
        return n;
    }
    case FX_OP_EXPAND:
        fx_err_setf(s->err, FX_EEXPORT,
                    "unsupported operation: more than one element of the written-to tensor refers "
                    "to a single memory location (a write into an expand()ed view). Please clone() "
                    "the tensor before performing the operation.");
        fx_err_hintf(s->err, "write into x:clone() or into the base tensor instead of the expanded view");
        fail_at(s, cause, FX_EEXPORT, "unsupported_view_write");
        return NULL;
    default: break;
    }
    (void)na;
    fx_err_setf(s->err, FX_ENOTIMPL, "fxdb cannot yet write back through a %s view",
                fx_op_qualname(op));
    fail_at(s, cause, FX_ENOTIMPL, "not_implemented");
    return NULL;
}

/* Name under which provenance and signatures know input k. */
static const char *state_name(fstate *s, int k) {
    return s->infos[k].target ? s->infos[k].target : s->infos[k].node->name;
}

/* Checks that input k may be mutated by raw node `cause`. */
static int check_mutable(fstate *s, int k, const fx_node *cause) {
    const fx_input_info *in = &s->infos[k];
    if (in->kind == FX_INPUT_PARAMETER && in->requires_grad && !(cause->flags & FX_NODEF_NO_GRAD)) {
        fx_err_setf(s->err, FX_EEXPORT,
                    "Found a graph input that requires gradients, and received a mutation. This is "
                    "currently banned in the aot_export workflow. (parameter '%s' is mutated by %s)",
                    in->target, cause->aten ? cause->aten->target : cause->target);
        fx_err_hintf(s->err,
                     "update it under torch.no_grad(), or register '%s' with register_buffer if it "
                     "is state rather than a trained weight",
                     in->target);
        return fail_at(s, cause, FX_EEXPORT, "mutation_of_parameter");
    }
    if (in->kind == FX_INPUT_CONSTANT_TENSOR && !s->lift_constants) {
        fx_err_setf(s->err, FX_EEXPORT,
                    "Mutating the constant tensor '%s' (a plain tensor attribute lifted as constant "
                    "%s) is not supported during export.",
                    in->target, in->node->name);
        fx_err_hintf(s->err,
                     "register it with self:register_buffer(\"%s\", ...) (persistent = false if it "
                     "is not part of the state_dict), or export with {lift_mutated_constants = true}",
                     in->target);
        return fail_at(s, cause, FX_EEXPORT, "constant_mutation");
    }
    return FX_OK;
}

/* Records a new version of every input bound to base b, on node n. */
static int record_versions(fstate *s, int b, fx_node *n, const fx_node *cause, const char *from,
                           const char *view_path) {
    for (int k = 0; k < s->ninfos; k++) {
        if (s->base[s->bound[k]] != b) continue;
        int rc = check_mutable(s, k, cause);
        if (rc) return rc;
        s->version[k]++;
        if (n->mutation) continue; /* two inputs sharing a base: the first names the version */
        fx_mutation m = {(char *)state_name(s, k), s->version[k], (char *)from, (char *)view_path,
                         (char *)cause->name};
        if ((rc = fx_node_set_mutation(n, &m, s->err))) return rc;
    }
    return FX_OK;
}

static int write_back(fstate *s, const fx_node *r, int t, fx_node *val, const char *from);

/* An out= op r whose result (of shape val_t) does not fit `out` (raw value t): resize_output
 * resizes it. On an input (or a view of one) that is aot_autograd's metadata-mutation error; a
 * view cannot grow ("Attempted to resize a view tensor to a larger size"); an intermediate base
 * simply takes the new value (the caller goes on). Returns 0 when the shapes agree. */
static int out_resized(fstate *s, const fx_node *r, int t, const fx_tensor *val_t) {
    fx_node *p = read_value(s, t);
    if (!p) return s->err->code ? s->err->code : FX_EINTERNAL;
    const fx_tensor *pt = fx_node_tensor(p);
    bool same = pt && fx_tensor_ndim(pt) == fx_tensor_ndim(val_t);
    for (int d = 0; same && d < fx_tensor_ndim(pt); d++) same = fx_tensor_size(pt, d) == fx_tensor_size(val_t, d);
    if (same) return 0;
    int b = s->base[t];
    if (s->ph_index[b] >= 0) return input_metadata_error(s, r, b);
    if (t != b) {
        fx_err_setf(s->err, FX_EEXPORT,
                    "Attempted to resize a view tensor to a larger size. This is not allowed in the "
                    "functionalization pass");
        fx_err_hintf(s->err, "pass an out tensor of the result's shape, or use the result: y = torch.%s(...)",
                     fx_op_get(r->aten->twin)->schema.name);
        return fail_at(s, r, FX_EEXPORT, "unsupported_view_write");
    }
    return 0;
}

/* An in-place op at raw index i mutating raw value t (canonical). */
static int do_inplace(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    const fx_opdef *op = r->aten;
    int m = op->schema.mutated_arg;
    if (r->args[m].tag != FX_IV_NODE) return fx_err_setf(s->err, FX_EINTERNAL, "in-place op on a non-node");
    int t = canon_of(s, r->args[m].u.node);
    s->canon[i] = t;
    if (op->twin == FX_OP_NONE) {
        fx_err_setf(s->err, FX_ENOTIMPL, "%s has no functional counterpart in fxdb yet",
                    (op->flags & FX_OPF_CUSTOM) ? op->target : fx_op_qualname(op));
        return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
    }
    const fx_opdef *twin = fx_op_get(op->twin);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS];
    int na = r->nargs < twin->schema.nargs ? r->nargs : twin->schema.nargs, made = 0, rc = FX_OK;
    for (; made < na && !rc; made++) rc = map_arg(s, &r->args[made], &args[made]);
    fx_node *val = rc ? NULL : emit(s, twin->id, args, na, r);
    for (int k = 0; k < made; k++) fx_ivalue_clear(&args[k]);
    if (!val) return s->err->code ? s->err->code : FX_EINTERNAL;
    /* The twin may promote where the in-place op keeps self's dtype (f16 add_ f32, ge_ -> bool):
     * cast back as FunctionalTensorWrapper::replace_ does, with
     * _to_copy(val, dtype = self's dtype, layout = torch.strided). Shapes agree (an in-place op
     * cannot broadcast self; dispatch checked that). */
    const fx_tensor *self_t = fx_node_tensor(r), *val_t = fx_node_tensor(val);
    if (op->meta == fx_meta_out && val_t) { /* out= of another shape: resize_output */
        int rc2 = out_resized(s, r, t, val_t);
        if (rc2) return rc2;
    }
    if (self_t && val_t && fx_tensor_dtype(self_t) != fx_tensor_dtype(val_t)) {
        fx_ivalue ca[3] = {fx_iv_node(val), fx_iv_dtype(fx_tensor_dtype(self_t)), fx_iv_str("strided")};
        val = emit(s, FX_OP__TO_COPY, ca, 3, r);
        fx_ivalue_clear(&ca[2]);
        if (!val) return s->err->code ? s->err->code : FX_EINTERNAL;
    }
    return write_back(s, r, t, val, op->target);
}

/* Makes `val` the new value of raw value t (canonical), written by raw node r: scattered back
 * through t's view chain to its base (innermost view first), whose generation goes up so every
 * other view of it sees the write when next read; each input bound to that base gets a new
 * version naming `from` (the writing op's target, "aten.add_.Tensor", "mylib.foo.default") and
 * the view path. */
static int write_back(fstate *s, const fx_node *r, int t, fx_node *val, const char *from) {
    int rc;
    fx_strbuf path = FX_STRBUF_INIT;
    int b = s->base[t];
    for (int v = t; v != b; v = s->parent[v]) {
        if (path.len) fx_strbuf_append(&path, " of ");
        view_desc(&path, s->raw_nodes[v]);
        if (is_list_view_item(s, v)) {
            val = scatter_list_item(s, v, val, r);
            v = s->parent[v]; /* continue from the list op's input */
        } else {
            val = scatter_one(s, v, val, r);
        }
        if (!val) {
            fx_strbuf_free(&path);
            return s->err->code ? s->err->code : FX_EINTERNAL;
        }
    }
    /* Views of the base are replayed on its new value, and as_strided / view depend on its
     * layout: a write scattered back through a transpose of an op that returns a contiguous
     * result (scatter_, masked_fill_, ...) leaves a transposed value where eager's storage is
     * still contiguous. Keep a contiguous base contiguous. */
    const fx_tensor *bt = fx_node_tensor(s->raw_nodes[b]), *vt = fx_node_tensor(val);
    if (bt && vt && fx_tensor_is_contiguous(bt) && !fx_tensor_is_contiguous(vt)) {
        fx_ivalue ca[2] = {fx_iv_node(val), fx_iv_str("torch.contiguous_format")};
        val = emit(s, FX_OP_CLONE, ca, 2, r);
        fx_ivalue_clear(&ca[1]);
        if (!val) {
            fx_strbuf_free(&path);
            return s->err->code ? s->err->code : FX_EINTERNAL;
        }
    }
    s->cur[b] = val;
    s->gen[b]++;
    rc = fx_strbuf_status(&path, s->err);
    if (!rc) rc = record_versions(s, b, val, r, from, path.len ? fx_strbuf_cstr(&path) : NULL);
    fx_strbuf_free(&path);
    return rc;
}

/* Emits a higher-order call `target(args)` for raw node r with value `all` (a list), then one
 * getitem per element of it, in order, as make_fx makes them (DCE drops the unread ones); the
 * getitems go to items[]. All carry r's stack and module stack and name r as their source. */
static int emit_hop_items(fstate *s, const fx_node *r, const char *target, const fx_ivalue *args,
                          int nargs, const char *hint, const fx_ivalue *all, fx_node **items) {
    fx_node *n = fx_graph_call_target(s->g, target, args, nargs, hint, s->err);
    int rc = n ? FX_OK : s->err->code;
    if (!rc) rc = fx_node_set_val(n, all, s->err);
    if (!rc) rc = fx_node_copy_meta(n, r, s->err);
    if (!rc) rc = fx_node_add_from(n, r->name, s->err);
    for (int j = 0; j < all->u.list.n && !rc; j++) {
        fx_ivalue ga[2] = {fx_iv_node(n), fx_iv_int(j)};
        fx_node *g = fx_graph_call_target(s->g, "getitem", ga, 2, "getitem", s->err);
        if (!g || fx_node_set_val(g, &all->u.list.items[j], s->err) || fx_node_copy_meta(g, r, s->err) ||
            fx_node_add_from(g, r->name, s->err))
            rc = s->err->code ? s->err->code : FX_EINTERNAL;
        items[j] = g;
    }
    return rc;
}

/* The outputs of one auto_functionalized node: a getitem per output (the op's returns, then
 * the new value of each mutable argument), and for each return the canonical raw value it
 * aliases (a fake impl that returns a mutated argument itself) or -1. */
typedef struct af_out {
    int n;
    fx_node *items[FX_HOP_MAX_OUTS];
    int alias[FX_HOP_MAX_OUTS];
} af_out;

/* A custom op whose schema marks arguments (a!), at raw index i (torch/_higher_order_ops/
 * auto_functionalize.py, v1 as torch 2.5 emits it): one node
 * auto_functionalized(op, **all schema arguments by name) whose outputs are the op's returns
 * followed by one fresh tensor per mutable argument (the op run on clones of them), a getitem
 * per output, then each new value is written back as an in-place op's result is (through the
 * argument's view chain; a version of every input on that base, naming the custom op). A return
 * the fake impl gives back as a mutable argument itself aliases that argument, as the same fake
 * tensor does under make_fx: later reads of it read the argument's new value. */
static int do_auto_functionalized(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    const fx_opdef *op = r->aten;
    const fx_schema *sc = &op->schema;
    int na = r->nargs < sc->nargs ? r->nargs : sc->nargs, nr = sc->nrets, mut[FX_SCHEMA_MAX_ARGS], nmut = 0;
    int no = nr ? nr : 1; /* an op returning () has a None there, as the op's None result */
    for (int k = 0; k < na; k++)
        if (sc->args[k].alias_write) mut[nmut++] = k;
    if (no + nmut > FX_HOP_MAX_OUTS || na + 1 > FX_SCHEMA_MAX_ARGS) {
        fx_err_setf(s->err, FX_ENOTIMPL, "%s: too many returns and mutable arguments to "
                    "auto-functionalize (fxdb takes up to %d)", op->target, FX_HOP_MAX_OUTS);
        return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
    }
    af_out *o = fx_calloc(1, sizeof *o);
    if (!o) return fx_err_setf(s->err, FX_ENOMEM, "out of memory");
    s->af[i] = o;
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, vals[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS] = {0}, all = {0};
    args[0] = fx_iv_str(op->target);
    int rc = args[0].tag == FX_IV_STR ? FX_OK : fx_err_setf(s->err, FX_ENOMEM, "out of memory");
    for (int k = 0; k < na && !rc; k++) rc = map_arg(s, &r->args[k], &args[k + 1]);
    for (int k = 0; k < na && !rc; k++) rc = vals_of(&args[k + 1], &vals[k], s->err);
    bool ran = false;
    if (!rc) {
        rc = fx_dispatch(&s->meta, op, vals, outs, s->err);
        ran = !rc;
        if (rc) fail_at(s, r, rc, NULL);
    }
    if (!rc) rc = fx_iv_list(no + nmut, &all, s->err);
    for (int j = 0; j < nr && !rc; j++) {
        o->alias[j] = -1;
        for (int m = 0; m < nmut; m++)
            if (outs[j].tag == FX_IV_TENSOR && vals[mut[m]].tag == FX_IV_TENSOR && outs[j].u.t == vals[mut[m]].u.t)
                o->alias[j] = no + m;
        rc = fx_ivalue_copy(&all.u.list.items[j], &outs[j], s->err);
    }
    for (int m = 0; m < nmut && !rc; m++) { /* the mutated argument's new value: a clone of it */
        const fx_ivalue *v = &vals[mut[m]];
        if (v->tag != FX_IV_TENSOR) continue; /* an optional mutable argument given None */
        fx_tensor *c = NULL;
        rc = fx_call_t(&s->meta, FX_OP_CLONE, &c, s->err, 1, (fx_ivalue *)v);
        if (!rc) all.u.list.items[no + m] = fx_iv_tensor_steal(c);
    }
    if (!rc) rc = emit_hop_items(s, r, FX_HOP_AUTO_FUNCTIONALIZED, args, na + 1, "auto_functionalized", &all, o->items);
    o->n = no + nmut;
    for (int k = 0; k < na + 1; k++) fx_ivalue_clear(&args[k]);
    for (int k = 0; k < na; k++) fx_ivalue_clear(&vals[k]);
    if (ran)
        for (int j = 0; j < nr; j++) fx_ivalue_clear(&outs[j]);
    fx_ivalue_clear(&all);
    if (rc) return rc;
    /* write the new values back into the arguments (and their bases) */
    for (int m = 0; m < nmut && !rc; m++) {
        const fx_ivalue *a = &r->args[mut[m]];
        if (a->tag != FX_IV_NODE || !o->items[no + m]) continue;
        rc = write_back(s, r, canon_of(s, a->u.node), o->items[no + m], op->target);
    }
    /* the op's value: its single return, or its returns through the raw getitems (do_getitem) */
    if (!rc && nr == 1 && sc->rets[0].type == FX_TY_TENSOR) {
        if (o->alias[0] >= 0) s->canon[i] = canon_of(s, r->args[mut[o->alias[0] - no]].u.node);
        else s->cur[i] = o->items[0];
    }
    for (int j = 0; j < nr; j++) /* alias: the argument's raw value, canonical */
        if (o->alias[j] >= 0) o->alias[j] = canon_of(s, r->args[mut[o->alias[j] - no]].u.node);
    return rc;
}

/* Appends name = value to the parallel lists of an auto_functionalized_v2 call. */
static int v2_kw(fx_ivalue *names, fx_ivalue *vals, int *n, const char *name, fx_ivalue v, fx_err *err) {
    if (*n >= FX_SCHEMA_MAX_ARGS - 2) {
        fx_ivalue_clear(&v);
        return fx_err_setf(err, FX_ENOTIMPL, "auto_functionalized_v2: too many arguments");
    }
    names[*n] = fx_iv_str(name);
    vals[*n] = v;
    (*n)++;
    return names[*n - 1].tag == FX_IV_STR ? FX_OK : fx_err_setf(err, FX_ENOMEM, "out of memory");
}

/* The view information of (a!) argument view `vt` of base `bt` (torch's
 * write_view_information_to_args): nothing when it is the base, `_x_alias = True` when it has the
 * base's geometry, `_x_slice_dim/start/end` when it is one slice of it, else `_x_size /
 * _x_stride / _x_storage_offset` (offsets relative to the base's). */
static int v2_view_info(const char *arg, const fx_tensor *vt, const fx_tensor *bt, bool is_base,
                        fx_ivalue *names, fx_ivalue *vals, int *n, fx_err *err) {
    char key[64];
    if (is_base || !vt || !bt) return FX_OK;
    if (fx_tensor_is_symbolic(vt) || fx_tensor_is_symbolic(bt))
        return fx_err_setf(err, FX_ENOTIMPL, "auto_functionalized_v2: the argument '%s' is a view "
                           "with symbolic sizes; export without auto_functionalized_v2 (v1 writes it "
                           "back through its view chain)", arg);
    int nd = fx_tensor_ndim(vt);
    int64_t off = fx_tensor_offset(vt) - fx_tensor_offset(bt);
    bool same_rank = nd == fx_tensor_ndim(bt), same_strides = same_rank;
    int differ = 0, dim = -1;
    for (int d = 0; same_rank && d < nd; d++) {
        if (fx_tensor_stride(vt, d) != fx_tensor_stride(bt, d)) same_strides = false;
        if (fx_tensor_size(vt, d) != fx_tensor_size(bt, d)) differ++, dim = d;
    }
    if (same_strides && differ == 0 && off == 0) {
        snprintf(key, sizeof key, "_%s_alias", arg);
        return v2_kw(names, vals, n, key, fx_iv_bool(true), err);
    }
    if (same_strides && differ == 1 && fx_tensor_stride(vt, dim) != 0 && off % fx_tensor_stride(vt, dim) == 0) {
        int64_t start = off / fx_tensor_stride(vt, dim);
        snprintf(key, sizeof key, "_%s_slice_dim", arg);
        int rc = v2_kw(names, vals, n, key, fx_iv_int(dim), err);
        snprintf(key, sizeof key, "_%s_slice_start", arg);
        if (!rc) rc = v2_kw(names, vals, n, key, fx_iv_int(start), err);
        snprintf(key, sizeof key, "_%s_slice_end", arg);
        if (!rc) rc = v2_kw(names, vals, n, key, fx_iv_int(start + fx_tensor_size(vt, dim)), err);
        return rc;
    }
    fx_ivalue l;
    snprintf(key, sizeof key, "_%s_size", arg);
    int rc = fx_iv_int_list(nd, fx_tensor_sizes(vt), &l, err);
    if (!rc) rc = v2_kw(names, vals, n, key, l, err);
    snprintf(key, sizeof key, "_%s_stride", arg);
    if (!rc) rc = fx_iv_int_list(nd, fx_tensor_strides(vt), &l, err);
    if (!rc) rc = v2_kw(names, vals, n, key, l, err);
    snprintf(key, sizeof key, "_%s_storage_offset", arg);
    if (!rc) rc = v2_kw(names, vals, n, key, fx_iv_int(off), err);
    return rc;
}

/* auto_functionalized_v2 (torch/_higher_order_ops/auto_functionalize.py, behind the export
 * option auto_functionalized_v2): the (a!) arguments are passed as their bases, `_all_bases =
 * [...]` (each base once), plus per argument `_x_base_index` and how to regenerate the view from
 * the base; the other arguments by name. Outputs: the op's returns (None for ()) then the new
 * value of each base, which becomes the base's value directly (no scatter back). */
static int do_auto_functionalized_v2(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    const fx_opdef *op = r->aten;
    const fx_schema *sc = &op->schema;
    int na = r->nargs < sc->nargs ? r->nargs : sc->nargs, nr = sc->nrets, no = nr ? nr : 1;
    int bases[FX_SCHEMA_MAX_ARGS], nb = 0, argbase[FX_SCHEMA_MAX_ARGS];
    for (int k = 0; k < na; k++) {
        argbase[k] = -1;
        if (!sc->args[k].alias_write || r->args[k].tag != FX_IV_NODE) continue;
        int b = s->base[canon_of(s, r->args[k].u.node)], j = 0;
        while (j < nb && bases[j] != b) j++;
        if (j == nb) bases[nb++] = b;
        argbase[k] = j;
    }
    if (no + nb > FX_HOP_MAX_OUTS) {
        fx_err_setf(s->err, FX_ENOTIMPL, "%s: too many returns and bases to auto-functionalize", op->target);
        return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
    }
    af_out *o = fx_calloc(1, sizeof *o);
    if (!o) return fx_err_setf(s->err, FX_ENOMEM, "out of memory");
    s->af[i] = o;
    fx_ivalue names[FX_SCHEMA_MAX_ARGS] = {0}, kv[FX_SCHEMA_MAX_ARGS] = {0}, vals[FX_SCHEMA_MAX_ARGS] = {0};
    fx_ivalue outs[FX_SCHEMA_MAX_RETS] = {0}, all = {0}, args[FX_SCHEMA_MAX_ARGS] = {0}, blist = {0};
    int nk = 0, rc = FX_OK;
    for (int k = 0; k < na && !rc; k++) { /* the other arguments, in schema order */
        if (sc->args[k].alias_write) continue;
        fx_ivalue v;
        if (!(rc = map_arg(s, &r->args[k], &v))) rc = v2_kw(names, kv, &nk, sc->args[k].name, v, s->err);
    }
    for (int k = 0; k < na && !rc; k++) { /* each (a!) argument: its base and view */
        if (!sc->args[k].alias_write) continue;
        char key[64];
        snprintf(key, sizeof key, "_%s_base_index", sc->args[k].name);
        rc = v2_kw(names, kv, &nk, key, argbase[k] < 0 ? fx_iv_none() : fx_iv_int(argbase[k]), s->err);
        if (!rc && argbase[k] >= 0) {
            int t = canon_of(s, r->args[k].u.node), b = bases[argbase[k]];
            rc = v2_view_info(sc->args[k].name, fx_node_tensor(s->raw_nodes[t]), fx_node_tensor(s->raw_nodes[b]),
                              t == b, names, kv, &nk, s->err);
        }
    }
    if (!rc) rc = fx_iv_list(nb, &blist, s->err);
    for (int j = 0; j < nb && !rc; j++) {
        fx_node *bv = read_value(s, bases[j]);
        if (!bv) rc = s->err->code ? s->err->code : FX_EINTERNAL;
        else blist.u.list.items[j] = fx_iv_node(bv);
    }
    if (!rc) rc = v2_kw(names, kv, &nk, "_all_bases", blist, s->err);
    else fx_ivalue_clear(&blist);
    if (rc) return fail_at(s, r, rc, NULL);
    /* the values: the op's meta on the arguments as they are now */
    for (int k = 0; k < na && !rc; k++) {
        fx_ivalue a;
        if (!(rc = map_arg(s, &r->args[k], &a))) rc = vals_of(&a, &vals[k], s->err);
        fx_ivalue_clear(&a);
    }
    bool ran = false;
    if (!rc) {
        rc = fx_dispatch(&s->meta, op, vals, outs, s->err);
        ran = !rc;
        if (rc) fail_at(s, r, rc, NULL);
    }
    if (!rc) rc = fx_iv_list(no + nb, &all, s->err);
    for (int j = 0; j < nr && !rc; j++) {
        o->alias[j] = -1;
        for (int k = 0; k < na; k++)
            if (argbase[k] >= 0 && outs[j].tag == FX_IV_TENSOR && vals[k].tag == FX_IV_TENSOR && outs[j].u.t == vals[k].u.t)
                o->alias[j] = canon_of(s, r->args[k].u.node);
        rc = fx_ivalue_copy(&all.u.list.items[j], &outs[j], s->err);
    }
    for (int j = 0; j < nb && !rc; j++) {
        fx_tensor *c = NULL;
        fx_ivalue bv = {0};
        rc = vals_of(&blist.u.list.items[j], &bv, s->err);
        if (!rc) rc = fx_call_t(&s->meta, FX_OP_CLONE, &c, s->err, 1, &bv);
        fx_ivalue_clear(&bv);
        if (!rc) all.u.list.items[no + j] = fx_iv_tensor_steal(c);
    }
    /* node args: the op, the keyword names, their values */
    if (!rc) {
        args[0] = fx_iv_str(op->target);
        rc = fx_iv_list(nk, &args[1], s->err);
        for (int k = 0; k < nk && !rc; k++) {
            args[1].u.list.items[k] = names[k];
            names[k] = (fx_ivalue){0};
            args[k + 2] = kv[k];
            kv[k] = (fx_ivalue){0};
        }
    }
    fx_node *items[FX_HOP_MAX_OUTS] = {0};
    if (!rc) rc = emit_hop_items(s, r, FX_HOP_AUTO_FUNCTIONALIZED_V2, args, nk + 2, "auto_functionalized_v2", &all, items);
    for (int j = 0; j < no; j++) o->items[j] = items[j];
    o->n = no;
    for (int k = 0; k < FX_SCHEMA_MAX_ARGS; k++) {
        fx_ivalue_clear(&names[k]);
        fx_ivalue_clear(&kv[k]);
        fx_ivalue_clear(&vals[k]);
        fx_ivalue_clear(&args[k]);
    }
    if (ran)
        for (int j = 0; j < nr; j++) fx_ivalue_clear(&outs[j]);
    fx_ivalue_clear(&all);
    /* each base's new value is the base's value from here on */
    for (int j = 0; j < nb && !rc; j++) {
        int b = bases[j];
        s->cur[b] = items[no + j];
        s->gen[b]++;
        rc = record_versions(s, b, items[no + j], r, op->target, NULL);
    }
    for (int j = 0; j < nr && !rc; j++)
        if (o->alias[j] >= 0 && nr == 1 && sc->rets[0].type == FX_TY_TENSOR) s->canon[i] = o->alias[j];
    if (!rc && nr == 1 && sc->rets[0].type == FX_TY_TENSOR && o->alias[0] < 0) s->cur[i] = o->items[0];
    return rc;
}

/* An op registered as effectful (FX_OPF_EFFECTFUL) at raw index i, threaded through the effect
 * token as torch/_higher_order_ops/effects.py does: with_effects(token, op, *args) whose outputs
 * are a new token and the op's returns (None for ()); getitem 0 becomes the current token, so
 * every effectful op reads the token the one before it made and their order survives any pass
 * that respects data dependences. */
static int do_with_effects(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    const fx_opdef *op = r->aten;
    const fx_schema *sc = &op->schema;
    if (fx_op_is_inplace(op)) {
        fx_err_setf(s->err, FX_ENOTIMPL, "%s is registered as effectful and also mutates an "
                    "argument; fxdb does not functionalize such an op yet", op->target);
        return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
    }
    int na = r->nargs < sc->nargs ? r->nargs : sc->nargs, nr = sc->nrets, no = nr ? nr : 1;
    if (no + 1 > FX_HOP_MAX_OUTS || na + 2 > FX_SCHEMA_MAX_ARGS) {
        fx_err_setf(s->err, FX_ENOTIMPL, "%s: too many arguments or returns for with_effects",
                    op->target);
        return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
    }
    af_out *o = fx_calloc(1, sizeof *o);
    if (!o) return fx_err_setf(s->err, FX_ENOMEM, "out of memory");
    s->af[i] = o;
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, vals[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS] = {0}, all = {0};
    args[0] = fx_iv_node(s->token);
    args[1] = fx_iv_str(op->target);
    int rc = args[1].tag == FX_IV_STR ? FX_OK : fx_err_setf(s->err, FX_ENOMEM, "out of memory");
    for (int k = 0; k < na && !rc; k++) rc = map_arg(s, &r->args[k], &args[k + 2]);
    for (int k = 0; k < na && !rc; k++) rc = vals_of(&args[k + 2], &vals[k], s->err);
    bool ran = false;
    if (!rc) {
        rc = fx_dispatch(&s->meta, op, vals, outs, s->err);
        ran = !rc;
        if (rc) fail_at(s, r, rc, NULL);
    }
    if (!rc) rc = fx_iv_list(1 + no, &all, s->err);
    if (!rc) rc = fx_hop_new_token(FX_DEVICE_META, &all.u.list.items[0], s->err);
    for (int j = 0; j < nr && !rc; j++) rc = fx_ivalue_copy(&all.u.list.items[1 + j], &outs[j], s->err);
    fx_node *items[FX_HOP_MAX_OUTS] = {0};
    if (!rc) rc = emit_hop_items(s, r, FX_HOP_WITH_EFFECTS, args, na + 2, "with_effects", &all, items);
    if (!rc) s->token = items[0];
    for (int j = 0; j < no; j++) o->items[j] = items[1 + j], o->alias[j] = -1;
    o->n = no;
    for (int k = 0; k < na + 2; k++) fx_ivalue_clear(&args[k]);
    for (int k = 0; k < na; k++) fx_ivalue_clear(&vals[k]);
    if (ran)
        for (int j = 0; j < nr; j++) fx_ivalue_clear(&outs[j]);
    fx_ivalue_clear(&all);
    if (!rc && nr == 1 && sc->rets[0].type == FX_TY_TENSOR) s->cur[i] = o->items[0];
    return rc;
}

/* The input token, as the graph's first placeholder, when the raw graph calls effectful ops. */
static int make_token(fstate *s) {
    bool any = false;
    for (int i = 0; i < s->n && !any; i++) {
        const fx_node *r = s->raw_nodes[i];
        any = r->op == FX_NODE_CALL_FUNCTION && r->aten && (r->aten->flags & FX_OPF_EFFECTFUL);
    }
    if (!any) return FX_OK;
    char name[32] = "token";
    for (int k = 1; fx_graph_find(s->raw, name); k++) snprintf(name, sizeof name, "token_%d", k);
    fx_node *p = fx_graph_placeholder(s->g, name, s->err);
    if (!p) return s->err->code;
    fx_ivalue v = {0};
    int rc = fx_hop_new_token(FX_DEVICE_META, &v, s->err);
    if (!rc) rc = fx_node_set_val(p, &v, s->err);
    fx_ivalue_clear(&v);
    s->token = p;
    return rc;
}

/* Does op return fresh values while writing into some of its arguments
 * (_native_batch_norm_legit's running_mean / running_var)? */
static bool mutates_beside_returns(const fx_opdef *op) {
    return fx_op_is_inplace(op) && op->schema.nrets > 0 && !op->schema.rets[0].alias_write;
}

/* Raw node i of an ATen op that writes into several arguments and returns fresh values. Its
 * functional twin (torchgen's `_functional` variant) returns the op's results followed by the new
 * value of each (a!) argument in order: one getitem per item, made at once in order as make_fx
 * makes them (the raw getitems read the first ones through s->af, as auto_functionalized's), and
 * each new value written back as an in-place op's result is. */
static int do_multi_mutation(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    const fx_opdef *op = r->aten;
    if (op->twin == FX_OP_NONE) {
        fx_err_setf(s->err, FX_ENOTIMPL, "%s has no functional counterpart in fxdb yet", op->target);
        return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
    }
    const fx_opdef *twin = fx_op_get(op->twin);
    af_out *o = fx_calloc(1, sizeof *o);
    if (!o) return fx_err_setf(s->err, FX_ENOMEM, "out of memory");
    s->af[i] = o;
    fx_ivalue args[FX_SCHEMA_MAX_ARGS];
    int na = r->nargs < twin->schema.nargs ? r->nargs : twin->schema.nargs, made = 0, rc = FX_OK;
    for (; made < na && !rc; made++) rc = map_arg(s, &r->args[made], &args[made]);
    fx_node *f = rc ? NULL : emit(s, twin->id, args, na, r);
    for (int k = 0; k < made; k++) fx_ivalue_clear(&args[k]);
    if (!f) return s->err->code ? s->err->code : FX_EINTERNAL;
    for (int k = 0; k < twin->schema.nrets && k < FX_HOP_MAX_OUTS; k++) {
        fx_ivalue ga[2] = {fx_iv_node(f), fx_iv_int(k)};
        fx_node *g = fx_graph_call_target(s->g, "getitem", ga, 2, "getitem", s->err);
        if (!g || fx_node_set_val(g, &f->val.u.list.items[k], s->err) || fx_node_copy_meta(g, r, s->err) ||
            fx_node_add_from(g, r->name, s->err))
            return s->err->code ? s->err->code : FX_EINTERNAL;
        o->items[k] = g;
        o->alias[k] = -1;
        o->n = k + 1;
    }
    const fx_schema *sc = &op->schema;
    for (int k = sc->mutated_arg, j = sc->nrets; k >= 0 && k < r->nargs && !rc; k++) {
        if (!sc->args[k].alias_write || r->args[k].tag != FX_IV_NODE) continue;
        if (j >= o->n) return fx_err_setf(s->err, FX_EINTERNAL, "%s: too few results", twin->target);
        rc = write_back(s, r, canon_of(s, r->args[k].u.node), o->items[j++], op->target);
    }
    return rc;
}

/* aot_autograd's refusal of an input (raw base b) whose metadata raw node r changes. */
static int input_metadata_error(fstate *s, const fx_node *r, int b) {
    const fx_input_info *in = &s->infos[s->ph_index[b]];
    fx_err_setf(s->err, FX_EEXPORT,
                "Found an input that received a metadata mutation, through e.g. a call to "
                "`.resize_()` or `.transpose_()`. This is currently banned in the aot_export "
                "workflow. (%s '%s' is changed by %s)",
                in->kind == FX_INPUT_USER_INPUT ? "input" : "state",
                in->target ? in->target : in->node->name, r->aten->target);
    if (is_metadata_mutation(r->aten))
        fx_err_hintf(s->err, "use the out-of-place view instead (x = x:%s(...)), which leaves the "
                             "input's metadata alone",
                     fx_op_get(r->aten->twin)->schema.name);
    else
        fx_err_hintf(s->err, "compute into a new tensor instead of changing the input's shape or "
                             "storage in place");
    return fail_at(s, r, FX_EEXPORT, "metadata_mutation");
}

/* The geometry resize_ node r gives a tensor whose sizes are not `old`: contiguous strides (or
 * channels_last ones) of its size argument. False when a size is symbolic (a node). */
static bool resize_geometry(const fx_node *r, int *n, int64_t *sizes, int64_t *strides) {
    const fx_ivalue *l = &r->args[1];
    if (l->tag != FX_IV_LIST || l->u.list.n > FX_MAX_DIMS) return false;
    *n = l->u.list.n;
    for (int d = 0; d < *n; d++) {
        if (l->u.list.items[d].tag != FX_IV_INT) return false;
        sizes[d] = l->u.list.items[d].u.i;
    }
    fx_memfmt f = fx_arg_memfmt(r->nargs > 2 ? &r->args[2] : NULL, FX_MEMFMT_CONTIGUOUS);
    fx_tensor shape = {.ndim = *n};
    memcpy(shape.sizes, sizes, sizeof(int64_t) * (size_t)*n);
    fx_memfmt_strides(&shape, f, strides);
    return true;
}

/* resize_ and set_, as FunctionalizeFallbackKernel.cpp functionalizes them. On a graph input (or
 * a view of one) a change of sizes or storage is aot_autograd's metadata-mutation error; resize_
 * to the same sizes is nothing. Otherwise resize_ that needs a larger storage replaces the
 * base's value by aten.resize (refused on a view: "Attempted to resize a view tensor to a larger
 * size"), and one that fits is a view: as_strided(self, size, contiguous strides), written back
 * with as_strided_scatter. set_(source) makes self the source's value from then on (an alias);
 * set_(source, offset, size, stride) is as_strided(source, ...); set_() is not supported. */
static int do_resize_set(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    fx_op_id id = r->aten->id;
    if (r->args[0].tag != FX_IV_NODE) return fx_err_setf(s->err, FX_EINTERNAL, "%s of a non-node", r->aten->target);
    int t = canon_of(s, r->args[0].u.node), b = s->base[t];
    fx_node *p = read_value(s, t);
    if (!p) return s->err->code ? s->err->code : FX_EINTERNAL;
    const fx_tensor *pt = fx_node_tensor(p);
    if (id == FX_OP_RESIZE_) {
        int n;
        int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
        if (!pt || !resize_geometry(r, &n, sizes, strides)) {
            fx_err_setf(s->err, FX_ENOTIMPL, "fxdb cannot yet export resize_ to symbolic sizes");
            return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
        }
        bool same = n == fx_tensor_ndim(pt) && !(r->nargs > 2 && r->args[2].tag == FX_IV_STR);
        for (int d = 0; same && d < n; d++) same = sizes[d] == fx_tensor_size(pt, d);
        if (same) {
            s->canon[i] = t;
            return FX_OK;
        }
        if (s->ph_index[b] >= 0) return input_metadata_error(s, r, b);
        if (fx_tensor_is_symbolic(pt)) { /* whether it grows depends on the sizes */
            fx_err_setf(s->err, FX_ENOTIMPL,
                        "fxdb cannot yet export resize_ of a tensor with symbolic sizes");
            return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
        }
        int64_t numel = 1, isz = (int64_t)fx_dtype_size(fx_tensor_dtype(pt));
        for (int d = 0; d < n; d++) numel *= sizes[d];
        const fx_storage *st = fx_tensor_storage(pt);
        bool grows = numel > 0 && (fx_tensor_offset(pt) + numel) * isz > fx_storage_nbytes(st);
        if (grows && t != b) {
            fx_err_setf(s->err, FX_EEXPORT,
                        "Attempted to resize a view tensor to a larger size. This is not allowed "
                        "in the functionalization pass");
            fx_err_hintf(s->err, "resize the base tensor, or make a new tensor of the size instead");
            return fail_at(s, r, FX_EEXPORT, "unsupported_view_write");
        }
        if (grows) {
            fx_ivalue a[3];
            int rc = map_arg(s, &r->args[0], &a[0]), na = 2;
            if (rc) return rc;
            a[1] = r->args[1];
            if (r->nargs > 2 && r->args[2].tag == FX_IV_STR) a[2] = r->args[2], na = 3;
            fx_node *v = emit(s, FX_OP_RESIZE, a, na, r);
            fx_ivalue_clear(&a[0]);
            if (!v) return s->err->code ? s->err->code : FX_EINTERNAL;
            s->cur[b] = v;
            s->gen[b]++;
            s->canon[i] = b;
            return FX_OK;
        }
    } else {
        if (id == FX_OP_SET__SOURCE_TENSOR && r->args[1].tag == FX_IV_NODE &&
            canon_of(s, r->args[1].u.node) == t) { /* x:set_(x) */
            s->canon[i] = t;
            return FX_OK;
        }
        if (s->ph_index[b] >= 0) return input_metadata_error(s, r, b);
        if (id == FX_OP_SET_ || r->args[1].tag != FX_IV_NODE) {
            fx_err_setf(s->err, FX_ENOTIMPL, "fxdb cannot yet export %s", r->aten->target);
            return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
        }
        int u = canon_of(s, r->args[1].u.node);
        if (id == FX_OP_SET__SOURCE_TENSOR) {
            s->canon[i] = u;
            return FX_OK;
        }
        t = u, b = s->base[u]; /* set_(source, offset, size, stride): a view of source */
    }
    s->parent[i] = t;
    s->base[i] = b;
    return read_value(s, i) ? FX_OK : (s->err->code ? s->err->code : FX_EINTERNAL);
}

/* The as_strided arguments (size, stride, storage_offset) that resize_ / set_ raw node r stands
 * for as a view: a[1..3] (owned: clear a[2] after). */
static int strided_args_of(fstate *s, const fx_node *r, fx_ivalue *a) {
    int n;
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    if (r->aten->id == FX_OP_RESIZE_) {
        resize_geometry(r, &n, sizes, strides);
        a[1] = r->args[1], a[3] = fx_iv_none();
        return fx_iv_int_list(n, strides, &a[2], s->err);
    }
    a[1] = r->args[3], a[3] = r->args[2];
    if (r->args[4].tag == FX_IV_LIST && r->args[4].u.list.n > 0) return fx_ivalue_copy(&a[2], &r->args[4], s->err);
    const fx_ivalue *l = &r->args[3];
    n = l->tag == FX_IV_LIST ? l->u.list.n : 0;
    for (int d = 0; d < n; d++) {
        if (l->u.list.items[d].tag != FX_IV_INT) {
            fx_err_setf(s->err, FX_ENOTIMPL, "fxdb cannot yet export set_ to symbolic sizes");
            return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
        }
        sizes[d] = l->u.list.items[d].u.i;
    }
    fx_contiguous_strides(n, sizes, strides);
    return fx_iv_int_list(n, strides, &a[2], s->err);
}

/* transpose_(x) and friends. On a graph input (or a view of one) this is aot_autograd's error;
 * on an intermediate it is a new view of x, which later uses of x (re-tagged by the tracer to
 * this node) read. */
static int do_metadata_mutation(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    int m = r->aten->schema.mutated_arg;
    if (r->args[m].tag != FX_IV_NODE) return fx_err_setf(s->err, FX_EINTERNAL, "metadata mutation of a non-node");
    int p = canon_of(s, r->args[m].u.node);
    int b = s->base[p];
    if (s->ph_index[b] >= 0) return input_metadata_error(s, r, b);
    s->parent[i] = p;
    s->base[i] = b;
    return read_value(s, i) ? FX_OK : (s->err->code ? s->err->code : FX_EINTERNAL);
}

static int do_assign(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    if (r->nargs < 2 || r->args[0].tag != FX_IV_NODE || r->args[1].tag != FX_IV_NODE)
        return fx_err_setf(s->err, FX_EINTERNAL, "malformed fxdb.assign_buffer node");
    const fx_node *ph = r->args[0].u.node;
    int k = s->ph_index[ph->tag];
    if (k < 0) return fx_err_setf(s->err, FX_EINTERNAL, "assign_buffer target is not an input");
    int v = canon_of(s, r->args[1].u.node);
    s->canon[i] = v;
    s->bound[k] = v;
    fx_node *val = read_value(s, v);
    if (!val) return s->err->code;
    int rc = check_mutable(s, k, r);
    if (rc) return rc;
    s->version[k]++;
    if (!val->mutation) {
        fx_mutation mu = {(char *)state_name(s, k), s->version[k], (char *)"buffer assignment", NULL,
                          (char *)r->name};
        rc = fx_node_set_mutation(val, &mu, s->err);
    }
    return rc;
}

static int do_getitem(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    const af_out *o = r->args[0].tag == FX_IV_NODE ? s->af[r->args[0].u.node->tag] : NULL;
    if (o) { /* a return of an auto-functionalized custom op: its getitem, or the argument it is */
        int64_t j = r->args[1].u.i;
        if (j < 0 || j >= o->n) return fx_err_setf(s->err, FX_EINTERNAL, "getitem out of range");
        if (o->alias[j] >= 0) {
            s->canon[i] = o->alias[j];
            return FX_OK;
        }
        s->cur[i] = o->items[j];
        return FX_OK;
    }
    fx_ivalue a[2];
    int rc = map_arg(s, &r->args[0], &a[0]);
    if (rc) return rc;
    a[1] = r->args[1];
    fx_node *n = fx_graph_call_target(s->g, "getitem", a, 2, "getitem", s->err);
    fx_ivalue_clear(&a[0]);
    if (!n) return s->err->code;
    if ((rc = fx_node_set_val(n, &r->val, s->err))) return rc;
    if ((rc = fx_node_copy_meta(n, r, s->err))) return rc;
    s->cur[i] = n;
    return fx_node_add_from(n, r->name, s->err);
}

/* A higher-order op: its operands read as current values; the body was functionalized with its
 * get_attr node. Outputs are fresh values (read through getitem nodes). */
static int do_hop(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    /* SymInt arithmetic (operator.add, torch.sym_max ...) is copied the same way, named after
     * its operation as the tracer named it */
    const char *dot = strrchr(r->target, '.');
    const char *hint = strncmp(r->target, "higher_order.", 13) && dot ? dot + 1 : NULL;
    fx_ivalue args[16] = {0};
    if (r->nargs > 16) return fx_err_setf(s->err, FX_EINTERNAL, "too many arguments");
    int rc = FX_OK, made = 0;
    for (; made < r->nargs && !rc; made++) rc = map_arg(s, &r->args[made], &args[made]);
    fx_node *n = NULL;
    if (!rc && !(n = fx_graph_call_target(s->g, r->target, args, r->nargs, hint, s->err))) rc = s->err->code;
    for (int k = 0; k < made; k++) fx_ivalue_clear(&args[k]);
    if (rc) return rc;
    if ((rc = fx_node_set_val(n, &r->val, s->err)) || (rc = fx_node_copy_meta(n, r, s->err))) return rc;
    s->cur[i] = n;
    return fx_node_add_from(n, r->name, s->err);
}

/* Tensor.item() (_local_scalar_dense) and the runtime asserts: copied with their arguments read
 * as current values and their symbolic value kept (re-running the meta function could not make
 * the same unbacked symbol). Named as the raw node was, without its _N suffix. */
static int do_copy(fstate *s, int i) {
    const fx_node *r = s->raw_nodes[i];
    char hint[64];
    snprintf(hint, sizeof hint, "%s", r->name);
    char *us = strrchr(hint, '_');
    if (us && us[1] && strspn(us + 1, "0123456789") == strlen(us + 1)) *us = 0;
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0};
    int rc = FX_OK, made = 0;
    for (; made < r->nargs && !rc; made++) rc = map_arg(s, &r->args[made], &args[made]);
    fx_node *n = NULL;
    if (!rc && !(n = fx_graph_call(s->g, r->aten, args, hint, s->err))) rc = s->err->code;
    for (int k = 0; k < made; k++) fx_ivalue_clear(&args[k]);
    if (rc) return rc;
    if ((rc = fx_node_set_val(n, &r->val, s->err)) || (rc = fx_node_copy_meta(n, r, s->err))) return rc;
    s->cur[i] = n;
    return fx_node_add_from(n, r->name, s->err);
}

/* The body of a higher-order op, functionalized on its own: its placeholders are its inputs,
 * which it may not mutate (PyTorch's check for scan / cond / map bodies). */
static int functionalize_body(fstate *s, const fx_node *r, fx_graph **out) {
    const fx_graph *body = r->subgraph;
    int n = 0;
    for (fx_node *p = fx_graph_first(body); p; p = p->next)
        if (p->op == FX_NODE_PLACEHOLDER) n++;
    fx_input_info *infos = fx_calloc((size_t)n + 1, sizeof *infos);
    if (!infos) return fx_err_setf(s->err, FX_ENOMEM, "out of memory");
    int k = 0;
    for (fx_node *p = fx_graph_first(body); p; p = p->next)
        if (p->op == FX_NODE_PLACEHOLDER) infos[k++] = (fx_input_info){.node = p, .kind = FX_INPUT_USER_INPUT};
    fx_functionalize_result fr;
    int rc = fx_functionalize(body, infos, n, false, &fr, s->err);
    fx_free(infos);
    if (rc) return rc;
    if (fr.ntokens > 0) {
        fx_free(fr.mutated);
        fx_graph_free(fr.graph);
        fx_err_setf(s->err, FX_ENOTIMPL, "The body of %s calls an effectful op; fxdb threads effect "
                    "tokens through the top-level graph only.", r->target);
        return fail_at(s, r, FX_ENOTIMPL, "not_implemented");
    }
    if (fr.nmutated > 0) {
        fx_free(fr.mutated);
        fx_graph_free(fr.graph);
        fx_err_setf(s->err, FX_EEXPORT,
                    "The body of %s mutates one of its inputs; higher-order op bodies must be "
                    "functional.",
                    r->target);
        fx_err_hintf(s->err, "compute a new value (x = x + y) instead of updating in place");
        return fail_at(s, r, FX_EEXPORT, "hop_body_mutation");
    }
    fx_free(fr.mutated);
    rc = fx_pass_dce(fr.graph, NULL, s->err);
    if (rc) {
        fx_graph_free(fr.graph);
        return rc;
    }
    *out = fr.graph;
    return FX_OK;
}

/* ---- the pass -------------------------------------------------------------------------------- */

int fx_functionalize(const fx_graph *raw, const fx_input_info *infos, int ninfos,
                     bool lift_mutated_constants, fx_functionalize_result *out, fx_err *err) {
    fx_functionalize_opts o = {.lift_mutated_constants = lift_mutated_constants};
    return fx_functionalize_ex(raw, infos, ninfos, &o, out, err);
}

int fx_functionalize_ex(const fx_graph *raw, const fx_input_info *infos, int ninfos,
                        const fx_functionalize_opts *opts, fx_functionalize_result *out, fx_err *err) {
    memset(out, 0, sizeof *out);
    fstate s = {0};
    s.raw = raw;
    s.infos = infos;
    s.ninfos = ninfos;
    s.lift_constants = opts && opts->lift_mutated_constants;
    s.af_v2 = opts && opts->auto_functionalized_v2;
    s.err = err;
    s.n = fx_graph_count(raw);
    fx_ctx_init(&s.meta, FX_MODE_META);
    int n = s.n + 1, rc = FX_OK;
    s.g = fx_graph_new();
    s.raw_nodes = fx_calloc((size_t)n, sizeof *s.raw_nodes);
    s.canon = fx_calloc((size_t)n, sizeof *s.canon);
    s.parent = fx_calloc((size_t)n, sizeof *s.parent);
    s.base = fx_calloc((size_t)n, sizeof *s.base);
    s.fn = fx_calloc((size_t)n, sizeof *s.fn);
    s.fn_gen = fx_calloc((size_t)n, sizeof *s.fn_gen);
    s.cur = fx_calloc((size_t)n, sizeof *s.cur);
    s.gen = fx_calloc((size_t)n, sizeof *s.gen);
    s.ph_index = fx_calloc((size_t)n, sizeof *s.ph_index);
    s.bound = fx_calloc((size_t)ninfos + 1, sizeof *s.bound);
    s.version = fx_calloc((size_t)ninfos + 1, sizeof *s.version);
    s.af = fx_calloc((size_t)n, sizeof *s.af);
    if (!s.g || !s.raw_nodes || !s.canon || !s.parent || !s.base || !s.fn || !s.fn_gen || !s.cur ||
        !s.gen || !s.ph_index || !s.bound || !s.version || !s.af) {
        rc = fx_err_setf(err, FX_ENOMEM, "out of memory functionalizing");
        goto done;
    }
    int idx = 0, nph = 0;
    for (fx_node *r = fx_graph_first(raw); r; r = r->next) {
        r->tag = idx;
        s.raw_nodes[idx] = r;
        s.canon[idx] = s.base[idx] = idx;
        s.parent[idx] = -1;
        s.ph_index[idx] = -1;
        idx++;
    }
    rc = make_token(&s);
    for (int i = 0; i < s.n && !rc; i++) {
        fx_node *r = s.raw_nodes[i];
        switch (r->op) {
        case FX_NODE_PLACEHOLDER: {
            fx_node *p = fx_graph_placeholder(s.g, r->name, err);
            if (!p) { rc = err->code; break; }
            rc = fx_node_set_val(p, &r->val, err);
            if (!rc) rc = fx_node_copy_meta(p, r, err);
            s.cur[i] = p;
            if (nph < ninfos && infos[nph].node == r) {
                s.ph_index[i] = nph;
                s.bound[nph] = i;
            }
            nph++;
            break;
        }
        case FX_NODE_GET_ATTR: {
            fx_node *p = fx_graph_get_attr(s.g, r->target, err);
            if (!p) { rc = err->code; break; }
            rc = fx_node_set_val(p, &r->val, err);
            if (!rc) rc = fx_node_copy_meta(p, r, err);
            if (!rc && r->subgraph) {
                fx_graph *sub = NULL;
                rc = functionalize_body(&s, r, &sub);
                if (!rc) fx_node_set_subgraph(p, sub);
            }
            s.cur[i] = p;
            break;
        }
        case FX_NODE_CALL_FUNCTION:
            if (!r->aten) {
                if (!strcmp(r->target, "fxdb.assign_buffer")) rc = do_assign(&s, i);
                else if (is_list_view_item(&s, i)) {
                    int l = canon_of(&s, r->args[0].u.node);
                    s.parent[i] = l;
                    s.base[i] = s.base[l];
                    if (!read_value(&s, i)) rc = err->code ? err->code : FX_EINTERNAL;
                } else if (!strcmp(r->target, "getitem")) rc = do_getitem(&s, i);
                else if (!strncmp(r->target, "higher_order.", 13) ||
                         !strncmp(r->target, "operator.", 9) || !strncmp(r->target, "torch.sym_", 10))
                    rc = do_hop(&s, i);
                else {
                    fx_err_setf(err, FX_ENOTIMPL, "functionalization of %s is not supported yet",
                                r->target);
                    rc = fail_at(&s, r, FX_ENOTIMPL, "not_implemented");
                }
            } else if (r->aten->flags & FX_OPF_EFFECTFUL) {
                rc = do_with_effects(&s, i);
            } else if ((r->aten->flags & FX_OPF_CUSTOM) && fx_op_is_inplace(r->aten)) {
                rc = s.af_v2 ? do_auto_functionalized_v2(&s, i) : do_auto_functionalized(&s, i);
            } else if ((r->aten->flags & FX_OPF_ASSERT) ||
                       r->aten->id == FX_OP__LOCAL_SCALAR_DENSE ||
                       (r->aten->id == FX_OP_REPEAT_INTERLEAVE_TENSOR && r->nargs > 0 &&
                        fx_node_tensor(r) && fx_tensor_is_symbolic(fx_node_tensor(r)))) {
                /* values that define an unbacked symbol keep the raw node's value */
                rc = do_copy(&s, i);
            } else if (r->aten->id == FX_OP_RESIZE_ || r->aten->id == FX_OP_SET_ ||
                       r->aten->id == FX_OP_SET__SOURCE_TENSOR ||
                       r->aten->id == FX_OP_SET__SOURCE_TENSOR_STORAGE_OFFSET) {
                rc = do_resize_set(&s, i);
            } else if (is_metadata_mutation(r->aten)) {
                rc = do_metadata_mutation(&s, i);
            } else if (mutates_beside_returns(r->aten)) {
                rc = do_multi_mutation(&s, i);
            } else if (fx_op_is_inplace(r->aten)) {
                rc = do_inplace(&s, i);
            } else if (fx_op_is_view(r->aten)) {
                int vi = r->aten->schema.view_arg;
                if (r->args[vi].tag != FX_IV_NODE) {
                    rc = fx_err_setf(err, FX_EINTERNAL, "view of a non-node");
                    break;
                }
                int p = canon_of(&s, r->args[vi].u.node);
                s.parent[i] = p;
                s.base[i] = s.base[p];
                /* Materialize now, as PyTorch emits the view where it was taken (DCE drops it if
                 * it is never read). */
                if (!read_value(&s, i)) rc = err->code ? err->code : FX_EINTERNAL;
            } else {
                fx_ivalue args[FX_SCHEMA_MAX_ARGS];
                int made = 0;
                for (; made < r->nargs && !rc; made++) rc = map_arg(&s, &r->args[made], &args[made]);
                if (!rc) {
                    fx_node *f = emit(&s, r->aten->id, args, r->nargs, r);
                    if (!f) rc = err->code ? err->code : FX_EINTERNAL;
                    s.cur[i] = f;
                }
                for (int k = 0; k < made; k++) fx_ivalue_clear(&args[k]);
            }
            break;
        case FX_NODE_OUTPUT: {
            /* The final token, mutated inputs (placeholder order), then the user outputs. */
            int nmut = 0, ntok = s.token ? 1 : 0;
            out->mutated = fx_calloc((size_t)ninfos + 1, sizeof *out->mutated);
            if (!out->mutated) { rc = fx_err_setf(err, FX_ENOMEM, "out of memory"); break; }
            for (int k = 0; k < ninfos; k++)
                if (s.version[k] > 0) out->mutated[nmut++] = k;
            out->nmutated = nmut;
            const fx_ivalue *uo = &r->args[0];
            int nuser = uo->tag == FX_IV_LIST ? uo->u.list.n : 0;
            fx_ivalue res;
            if ((rc = fx_iv_list(ntok + nmut + nuser, &res, err))) break;
            if (ntok) res.u.list.items[0] = fx_iv_node(s.token);
            out->ntokens = ntok;
            for (int k = 0; k < nmut && !rc; k++) {
                fx_node *f = read_value(&s, s.bound[out->mutated[k]]);
                if (!f) rc = err->code ? err->code : FX_EINTERNAL;
                else res.u.list.items[ntok + k] = fx_iv_node(f);
            }
            for (int k = 0; k < nuser && !rc; k++)
                rc = map_arg(&s, &uo->u.list.items[k], &res.u.list.items[ntok + nmut + k]);
            if (!rc && !fx_graph_output(s.g, &res, err)) rc = err->code;
            fx_ivalue_clear(&res);
            break;
        }
        }
    }
done:
    if (rc == FX_OK) {
        out->graph = s.g;
        s.g = NULL;
    } else {
        fx_free(out->mutated);
        out->mutated = NULL;
        out->nmutated = 0;
    }
    fx_graph_free(s.g);
    fx_free(s.raw_nodes);
    fx_free(s.canon);
    fx_free(s.parent);
    fx_free(s.base);
    fx_free(s.fn);
    fx_free(s.fn_gen);
    fx_free(s.cur);
    fx_free(s.gen);
    fx_free(s.ph_index);
    fx_free(s.bound);
    fx_free(s.version);
    for (int k = 0; s.af && k < n; k++) fx_free(s.af[k]);
    fx_free(s.af);
    return rc;
}
