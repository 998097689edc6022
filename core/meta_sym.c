/* core/meta_sym.c — symbolic shapes through the meta functions (dynamic export).
 * Layer: core. When an op's inputs carry symbolic sizes (or SymInt arguments), dispatch runs the
 * op's ordinary meta function on the hints (so every check and every concrete size stays what
 * the static path computes) and then the op family's symbolic rule here, which computes the
 * outputs' symbolic sizes / strides / offset with fx_symint and records a guard (through
 * fx_shape_env_evaluate) for every decision the shapes force: broadcasting two symbolic sizes
 * guards them equal, a view guards that numels agree, a slice bound guards on its sign, as
 * PyTorch's meta functions do under FakeTensor. Ops without a rule (and rules that meet a case
 * they do not handle) specialize instead: every symbolic input size is guarded equal to its hint
 * and the outputs are plain — always correct, and export later reports the specialized dims.
 *
 * Rules receive the symbolic arguments `a` (tensors with symbolic shapes, SymInt ivalues) and
 * the hint arguments `h` (the same with every SymInt replaced by its hint), and the outputs the
 * meta function made. They return FX_OK, an error, or SYM_SPECIALIZE. */
#include <string.h>

#include "core/fx_alloc.h"
#include "core/meta_common.h"
#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"
#include "core/sym_dispatch.h"

#define SYM_SPECIALIZE (-1)

typedef int (*sym_rule)(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out);
static int rule_none(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out);
static int need_eq(fx_opctx *ctx, fx_symint x, fx_symint y);

/* ---- reading symbolic values ------------------------------------------------------------------
 */

/* The current stand-in of a value: an unbacked one's follows its range (fx_si_from_expr), a
 * SymInt recorded before torch._check narrowed it may carry an older one. */
static int64_t hint_now(fx_symint v) {
    if (!v.expr || fx_sym_is_error(v.expr) || !fx_sym_has_unbacked(v.expr)) return v.hint;
    return fx_si_from_expr(v.expr).hint;
}

static fx_symint simp(fx_symint v) {
    if (!v.expr || fx_sym_is_error(v.expr)) return v;
    v.hint = hint_now(v);
    const fx_sym *e = fx_shape_env_simplify(fx_sym_env(v.expr), v.expr);
    if (e == v.expr) return v;
    fx_symint r = fx_si_from_expr(e);
    r.hint = v.hint; /* replacements hold under the example values */
    return r;
}

static fx_symint SZ(const fx_tensor *t, int d) { return simp(fx_tensor_sym_size(t, d)); }
static fx_symint ST(const fx_tensor *t, int d) { return simp(fx_tensor_sym_stride(t, d)); }
static fx_symint OFF(const fx_tensor *t) { return simp(fx_tensor_sym_offset(t)); }

static bool si_same(fx_symint a, fx_symint b) {
    return a.expr == b.expr && (a.expr || a.hint == b.hint);
}

/* An INT / SYMINT argument (None -> false). */
static bool arg_si(const fx_ivalue *v, fx_symint *out) {
    if (!fx_ivalue_symint(v, out)) return false;
    *out = simp(*out);
    return true;
}

/* An int list argument (a single int counts as a list of one). */
static int arg_sis(fx_opctx *ctx, const fx_ivalue *v, fx_symint *out, int *n) {
    if (v->tag == FX_IV_INT || v->tag == FX_IV_SYMINT) {
        arg_si(v, &out[0]);
        *n = 1;
        return FX_OK;
    }
    if (v->tag != FX_IV_LIST || v->u.list.n > FX_MAX_DIMS) return SYM_SPECIALIZE;
    for (int i = 0; i < v->u.list.n; i++)
        if (!arg_si(&v->u.list.items[i], &out[i])) return SYM_SPECIALIZE;
    *n = v->u.list.n;
    return FX_OK;
}

static int guard_eq(fx_opctx *ctx, fx_symint a, fx_symint b, bool *out) {
    return fx_si_cmp(FX_SYM_EQ, a, b, out, ctx->err);
}

/* ---- writing outputs ------------------------------------------------------------------------ */

/* Symbolic strides for a fresh (dense) output t of symbolic sizes: dims ordered by t's concrete
 * strides (innermost first), each stride the product of the sizes inside it. Falls back to
 * contiguous strides; SYM_SPECIALIZE when neither matches t's concrete strides. */
static int dense_strides(const fx_tensor *t, const fx_symint *sizes, fx_symint *st) {
    int nd = t->ndim, order[FX_MAX_DIMS];
    for (int i = 0; i < nd; i++) order[i] = i;
    for (int i = 1; i < nd; i++) /* by stride ascending, later dims first on ties */
        for (int j = i; j > 0; j--) {
            int x = order[j - 1], y = order[j];
            bool swap = t->strides[x] > t->strides[y] || (t->strides[x] == t->strides[y] && x < y);
            if (!swap) break;
            order[j - 1] = y;
            order[j] = x;
        }
    fx_symint p = FX_SI(1);
    bool ok = true;
    for (int i = 0; i < nd; i++) {
        int d = order[i];
        st[d] = p;
        if (t->sizes[d] > 1 && st[d].hint != t->strides[d]) ok = false;
        p = fx_si_mul(p, sizes[d].expr ? sizes[d] : FX_SI(sizes[d].hint ? sizes[d].hint : 1));
    }
    for (int d = 0; d < nd && ok; d++)
        if (st[d].hint != t->strides[d]) st[d] = FX_SI(t->strides[d]); /* size-1 dims */
    if (ok) return FX_OK;
    fx_sym_contiguous_strides(nd, sizes, st);
    for (int d = 0; d < nd; d++)
        if (st[d].hint != t->strides[d]) return SYM_SPECIALIZE;
    return FX_OK;
}

static int set_sym(fx_opctx *ctx, fx_tensor *t, const fx_symint *sizes, const fx_symint *strides,
                   fx_symint off) {
    fx_err e;
    fx_err_clear(&e);
    int rc = fx_tensor_set_sym(t, sizes, strides, off, &e);
    if (rc == FX_EINTERNAL) return SYM_SPECIALIZE; /* a rule that disagrees with the meta */
    if (rc) *ctx->err = e;
    return rc;
}

/* A fresh output of symbolic sizes (ndim must be t's). */
static int set_fresh(fx_opctx *ctx, fx_tensor *t, int nd, const fx_symint *sizes) {
    if (nd != t->ndim) return SYM_SPECIALIZE;
    fx_symint st[FX_MAX_DIMS];
    int rc = dense_strides(t, sizes, st);
    if (rc) return rc;
    return set_sym(ctx, t, sizes, st, FX_SI(t->offset));
}

static fx_tensor *out_t(const fx_ivalue *out, int i) {
    return out[i].tag == FX_IV_TENSOR ? out[i].u.t : NULL;
}

static fx_tensor *arg_t(const fx_ivalue *a, int i) {
    return a[i].tag == FX_IV_TENSOR ? a[i].u.t : NULL;
}

static bool is_input(const fx_opctx *ctx, const fx_ivalue *a, const fx_tensor *t) {
    for (int i = 0; i < ctx->op->schema.nargs; i++)
        if (a[i].tag == FX_IV_TENSOR && a[i].u.t == t) return true;
    return false;
}

/* ---- broadcasting ------------------------------------------------------------------------- */

/* infer_size over symbolic sizes: a size known to be 1 takes the other; otherwise the two are
 * guarded equal (PyTorch: guard_size_oblivious(size == 1), then a check that they agree). */
static int bcast(fx_opctx *ctx, int na, const fx_symint *a, int nb, const fx_symint *b, int *nout,
                 fx_symint *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        fx_symint x = ia >= 0 ? a[ia] : FX_SI(1), y = ib >= 0 ? b[ib] : FX_SI(1);
        if (fx_si_known_true(FX_SYM_EQ, x, FX_SI(1))) {
            out[i] = y;
        } else if (fx_si_known_true(FX_SYM_EQ, y, FX_SI(1)) || si_same(x, y)) {
            out[i] = x;
        } else {
            bool eq;
            int rc = guard_eq(ctx, x, y, &eq);
            if (rc) return rc;
            if (!eq) return SYM_SPECIALIZE; /* the meta accepted it under the hints */
            out[i] = x.expr ? x : y;
        }
    }
    *nout = n;
    return FX_OK;
}

static void sizes_of(const fx_tensor *t, fx_symint *s) {
    for (int d = 0; d < t->ndim; d++) s[d] = SZ(t, d);
}

/* Broadcast shape of every tensor argument (wrapped numbers and None skipped). */
static int bcast_args(fx_opctx *ctx, const fx_ivalue *a, int first, int last, int *nd,
                      fx_symint *sz) {
    *nd = 0;
    for (int i = first; i <= last && i < ctx->op->schema.nargs; i++) {
        const fx_tensor *t = arg_t(a, i);
        if (!t) continue;
        fx_symint ts[FX_MAX_DIMS], r[FX_MAX_DIMS];
        sizes_of(t, ts);
        int rn, rc = bcast(ctx, *nd, sz, t->ndim, ts, &rn, r);
        if (rc) return rc;
        memcpy(sz, r, sizeof(fx_symint) * (size_t)rn);
        *nd = rn;
    }
    return FX_OK;
}

/* An op writing into self (add_, masked_fill_, copy_): the broadcast shape of its operands must
 * be self's own, each dim guarded equal (TensorIterator's "output with shape [1] doesn't match
 * the broadcast shape [0]" when a symbolic operand dim could grow self's size-1 dim). */
static int keep_self_shape(fx_opctx *ctx, const fx_tensor *self, int nd, const fx_symint *sz) {
    if (nd != self->ndim) return SYM_SPECIALIZE;
    for (int d = 0; d < nd; d++) {
        int rc = need_eq(ctx, SZ(self, d), sz[d]);
        if (rc) return rc;
    }
    return FX_OK;
}

/* Elementwise ops (binary, where, clamp, masked_fill): the broadcast of the tensor operands;
 * an in-place op keeps self, guarded to be the broadcast shape. */
static int rule_bcast(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    fx_symint sz[FX_MAX_DIMS];
    int nd, rc = bcast_args(ctx, a, 0, 3, &nd, sz);
    if (rc) return rc;
    fx_tensor *o = out_t(out, 0);
    if (!o) return FX_OK;
    if (is_input(ctx, a, o)) return keep_self_shape(ctx, o, nd, sz);
    return set_fresh(ctx, o, nd, sz);
}

/* Outputs shaped like self (unary ops, clone, *_like, softmax, cumsum, tril, dropout, the
 * functional scatters, norms): each fresh tensor output takes self's sizes dim by dim, where a
 * dim of the output that is 1 while self's is not (layer_norm's statistics) stays 1. */
static int rule_same(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    if (!self) return SYM_SPECIALIZE;
    for (int i = 0; i < ctx->op->schema.nrets; i++) {
        fx_tensor *o = out_t(out, i);
        if (!o || is_input(ctx, a, o)) continue;
        if (o->ndim != self->ndim) return SYM_SPECIALIZE;
        fx_symint sz[FX_MAX_DIMS];
        for (int d = 0; d < o->ndim; d++) {
            if (o->sizes[d] == self->sizes[d])
                sz[d] = SZ(self, d);
            else if (o->sizes[d] == 1)
                sz[d] = FX_SI(1);
            else
                return SYM_SPECIALIZE;
        }
        int rc = set_fresh(ctx, o, o->ndim, sz);
        if (rc) return rc;
    }
    return FX_OK;
}

/* copy_ / copy: self's shape; src guarded to broadcast to it (expand_as). */
static int rule_copy(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0), *src = arg_t(a, 1);
    if (!self || !src) return SYM_SPECIALIZE;
    fx_symint s[FX_MAX_DIMS], t[FX_MAX_DIMS], r[FX_MAX_DIMS];
    sizes_of(self, s);
    sizes_of(src, t);
    int n, rc = bcast(ctx, self->ndim, s, src->ndim, t, &n, r);
    if (rc || (rc = keep_self_shape(ctx, self, n, r))) return rc;
    return rule_same(ctx, a, h, out);
}

/* A copy of ctx whose errors go to e (cleared): a rule re-runs the op's argument checks on the
 * hints, where a failure only means "specialize". */
static fx_opctx quiet(const fx_opctx *ctx, fx_err *e) {
    fx_err_clear(e);
    fx_opctx hc = *ctx;
    hc.err = e;
    return hc;
}

/* ---- reductions ---------------------------------------------------------------------------- */

/* The sizes left after reducing self over the dims marked in reduced: the kept dims, and a 1 for
 * each reduced dim under keepdim. Returns how many. */
static int kept_sizes(const fx_tensor *self, const bool *reduced, bool keepdim, fx_symint *sz) {
    int nd = 0;
    for (int d = 0; d < self->ndim; d++) {
        if (!reduced[d])
            sz[nd++] = SZ(self, d);
        else if (keepdim)
            sz[nd++] = FX_SI(1);
    }
    return nd;
}

static int rule_reduce(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    fx_reduce_plan p;
    fx_err e;
    fx_opctx hc = quiet(ctx, &e);
    if (fx_reduce_plan_make(&hc, h, &p)) return SYM_SPECIALIZE;
    const fx_tensor *self = arg_t(a, 0);
    fx_symint sz[FX_MAX_DIMS];
    int nd = kept_sizes(self, p.reduced, p.keepdim, sz);
    for (int i = 0; i < ctx->op->schema.nrets; i++) {
        fx_tensor *o = out_t(out, i);
        if (!o) continue;
        int rc = set_fresh(ctx, o, nd, sz);
        if (rc) return rc;
    }
    return FX_OK;
}

/* ---- views --------------------------------------------------------------------------------- */

static bool sym_contiguous(const fx_tensor *t) {
    fx_symint sz[FX_MAX_DIMS], cs[FX_MAX_DIMS];
    sizes_of(t, sz);
    fx_sym_contiguous_strides(t->ndim, sz, cs);
    for (int d = 0; d < t->ndim; d++) {
        if (fx_si_known_true(FX_SYM_EQ, sz[d], FX_SI(1))) continue;
        if (!si_same(simp(cs[d]), ST(t, d))) return false;
    }
    return true;
}

static fx_symint numel_of(int nd, const fx_symint *s) {
    fx_symint n = FX_SI(1);
    for (int d = 0; d < nd; d++) n = fx_si_mul(n, s[d]);
    return n;
}

/* view / _unsafe_view / reshape's view: at most one -1, inferred as numel // (product of the
 * others); the numels guarded equal (strides: contiguous, or sym_view_strides). */
static int view_sizes(fx_opctx *ctx, const fx_tensor *self, const fx_ivalue *shape, fx_symint *sz,
                      int *nd) {
    int rc = arg_sis(ctx, shape, sz, nd);
    if (rc) return rc;
    fx_symint self_sz[FX_MAX_DIMS];
    sizes_of(self, self_sz);
    fx_symint numel = numel_of(self->ndim, self_sz), known = FX_SI(1);
    int infer = -1;
    for (int d = 0; d < *nd; d++) {
        if (!sz[d].expr && sz[d].hint == -1)
            infer = d;
        else
            known = fx_si_mul(known, sz[d]);
    }
    if (infer >= 0) {
        if (fx_si_known_true(FX_SYM_EQ, known, FX_SI(0))) return SYM_SPECIALIZE;
        /* infer_size's check that the others divide numel: Eq(Mod(s0*s1, 8), 0) */
        fx_symint rem;
        bool divides;
        if ((rc = fx_si_mod(numel, known, &rem, ctx->err))) return rc;
        if ((rc = guard_eq(ctx, rem, FX_SI(0), &divides))) return rc;
        if (!divides) return SYM_SPECIALIZE;
        if ((rc = fx_si_floordiv(numel, known, &sz[infer], ctx->err))) return rc;
    } else {
        bool eq;
        if ((rc = guard_eq(ctx, numel, known, &eq))) return rc;
        if (!eq) return SYM_SPECIALIZE;
    }
    return FX_OK;
}

/* A size comparison decided as TORCH_GUARD_SIZE_OBLIVIOUS decides it: provable without a guard
 * (unbacked size-like symbols counting as >= 2), else an ordinary guard (a data-dependent error
 * for an unbacked symbol no range decides). */
static int decide_oblivious(fx_opctx *ctx, fx_sym_kind rel, fx_symint a, fx_symint b, bool *out) {
    static const fx_sym_kind neg[] = {[FX_SYM_EQ] = FX_SYM_NE, [FX_SYM_NE] = FX_SYM_EQ,
                                      [FX_SYM_LT] = FX_SYM_GE, [FX_SYM_LE] = FX_SYM_GT,
                                      [FX_SYM_GT] = FX_SYM_LE, [FX_SYM_GE] = FX_SYM_LT};
    if (fx_si_known_true(rel, a, b)) return *out = true, FX_OK;
    if (fx_si_known_true(neg[rel], a, b)) return *out = false, FX_OK;
    return fx_si_cmp(rel, a, b, out, ctx->err);
}

/* computeStride (aten/src/ATen/TensorUtils.cpp) over symbolic sizes and strides: self's dims fall
 * into chunks that are contiguous among themselves; the view's sizes sz[nd] must regroup into
 * chunks of the same numels, and each view dim takes its stride from its chunk. Gives the view's
 * strides in st, or SYM_SPECIALIZE when self cannot be viewed so (the meta function, on the
 * hints, saw otherwise) or has no elements. */
static int sym_view_strides(fx_opctx *ctx, const fx_tensor *self, int nd, const fx_symint *sz,
                            fx_symint *st) {
    int on = self->ndim, rc;
    if (on == 0) {
        for (int d = 0; d < nd; d++) st[d] = FX_SI(1);
        return FX_OK;
    }
    fx_symint os[FX_MAX_DIMS], ost[FX_MAX_DIMS];
    for (int d = 0; d < on; d++) {
        os[d] = SZ(self, d);
        ost[d] = ST(self, d);
    }
    bool b;
    if ((rc = decide_oblivious(ctx, FX_SYM_EQ, numel_of(on, os), FX_SI(0), &b))) return rc;
    if (b) return SYM_SPECIALIZE; /* PyTorch's numel == 0 special cases */
    int vd = nd - 1;
    fx_symint chunk = ost[on - 1], tnumel = FX_SI(1), vnumel = FX_SI(1);
    for (int td = on - 1; td >= 0; td--) {
        tnumel = fx_si_mul(tnumel, os[td]);
        bool end = td == 0;
        if (!end) {
            if ((rc = decide_oblivious(ctx, FX_SYM_NE, os[td - 1], FX_SI(1), &end))) return rc;
            if (end && (rc = decide_oblivious(ctx, FX_SYM_NE, ost[td - 1],
                                              fx_si_mul(tnumel, chunk), &end)))
                return rc;
        }
        if (!end) continue;
        while (vd >= 0) {
            bool more;
            if ((rc = decide_oblivious(ctx, FX_SYM_LT, vnumel, tnumel, &more))) return rc;
            if (!more && (rc = decide_oblivious(ctx, FX_SYM_EQ, sz[vd], FX_SI(1), &more)))
                return rc;
            if (!more) break;
            st[vd] = fx_si_mul(vnumel, chunk);
            vnumel = fx_si_mul(vnumel, sz[vd]);
            vd--;
        }
        if ((rc = decide_oblivious(ctx, FX_SYM_NE, vnumel, tnumel, &b))) return rc;
        if (b) return SYM_SPECIALIZE;
        if (td > 0) {
            chunk = ost[td - 1];
            tnumel = vnumel = FX_SI(1);
        }
    }
    return vd == -1 ? FX_OK : SYM_SPECIALIZE;
}

static int rule_view(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    fx_tensor *o = out_t(out, 0);
    if (!self || !o) return SYM_SPECIALIZE;
    fx_symint sz[FX_MAX_DIMS];
    int nd, rc = view_sizes(ctx, self, &a[1], sz, &nd);
    if (rc) return rc;
    if (nd != o->ndim) return SYM_SPECIALIZE;
    if (ctx->op->id == FX_OP__UNSAFE_VIEW) return set_fresh(ctx, o, nd, sz);
    if (sym_contiguous(self)) return set_sym(ctx, o, sz, NULL, OFF(self));
    fx_symint st[FX_MAX_DIMS];
    if ((rc = sym_view_strides(ctx, self, nd, sz, st))) return rc;
    return set_sym(ctx, o, sz, st, OFF(self));
}

static int wrap(int64_t d, int nd) { return (int)(d < 0 ? d + (nd ? nd : 1) : d); }

typedef struct sgeom {
    int nd;
    fx_symint sz[FX_MAX_DIMS], st[FX_MAX_DIMS], off;
} sgeom;

static void geom_of(const fx_tensor *t, sgeom *g) {
    g->nd = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        g->sz[d] = SZ(t, d);
        g->st[d] = ST(t, d);
    }
    g->off = OFF(t);
}

static int set_geom(fx_opctx *ctx, fx_tensor *o, const sgeom *g) {
    if (!o || o->ndim != g->nd) return SYM_SPECIALIZE;
    return set_sym(ctx, o, g->sz, g->st, g->off);
}

static void geom_drop(sgeom *g, int d) {
    for (int e = d; e + 1 < g->nd; e++) {
        g->sz[e] = g->sz[e + 1];
        g->st[e] = g->st[e + 1];
    }
    g->nd--;
}

static int sym_select(fx_opctx *ctx, sgeom *g, int d, fx_symint idx) {
    bool neg, in;
    int rc = fx_si_cmp(FX_SYM_LT, idx, FX_SI(0), &neg, ctx->err);
    if (rc) return rc;
    if (neg) idx = fx_si_add(idx, g->sz[d]);
    /* select's _check_index: -size <= index < size, as guards (x[3] needs s0 > 3) */
    if ((rc = fx_si_cmp(FX_SYM_GE, idx, FX_SI(0), &in, ctx->err))) return rc;
    if (in && (rc = fx_si_cmp(FX_SYM_LT, idx, g->sz[d], &in, ctx->err))) return rc;
    if (!in) return SYM_SPECIALIZE; /* the meta function accepted it under the hints */
    g->off = fx_si_add(g->off, fx_si_mul(idx, g->st[d]));
    geom_drop(g, d);
    return FX_OK;
}

static int rule_select(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    fx_symint idx;
    if (!self || h[1].tag != FX_IV_INT || !arg_si(&a[2], &idx)) return SYM_SPECIALIZE;
    sgeom g;
    geom_of(self, &g);
    int rc = sym_select(ctx, &g, wrap(h[1].u.i, self->ndim), idx);
    return rc ? rc : set_geom(ctx, out_t(out, 0), &g);
}

/* slice(dim, start, end, step) as PyTorch's slice meta: negative bounds count from the end,
 * both are clamped to [0, size] and end to >= start, each decision a guard. */
static int sym_slice(fx_opctx *ctx, sgeom *g, int d, const fx_ivalue *vs, const fx_ivalue *ve,
                     fx_symint step) {
    fx_symint size = g->sz[d], start = FX_SI(0), end = size;
    bool b;
    int rc;
#define CMP(rel, x, y)                                                                             \
    do {                                                                                           \
        if ((rc = fx_si_cmp(rel, x, y, &b, ctx->err))) return rc;                                  \
    } while (0)
    if (vs && vs->tag != FX_IV_NONE && vs->tag != FX_IV_UNSET) {
        if (!arg_si(vs, &start)) return SYM_SPECIALIZE;
        CMP(FX_SYM_LT, start, FX_SI(0));
        if (b) start = fx_si_add(start, size);
        CMP(FX_SYM_LT, start, FX_SI(0));
        if (b)
            start = FX_SI(0);
        else {
            CMP(FX_SYM_GT, start, size);
            if (b) start = size;
        }
    }
    if (ve && ve->tag != FX_IV_NONE && ve->tag != FX_IV_UNSET) {
        if (!arg_si(ve, &end)) return SYM_SPECIALIZE;
        /* a plain end past any size (INT64_MAX is Python's `x[a:]`) is the end itself: no guard,
         * and no expression built from a number near the int64 limit */
        if (!end.expr && end.hint >= ((int64_t)1 << 62)) goto end_done;
        CMP(FX_SYM_LT, end, FX_SI(0));
        if (b) end = fx_si_add(end, size);
        CMP(FX_SYM_LT, end, start);
        if (b)
            end = start;
        else {
            CMP(FX_SYM_GT, end, size);
            if (b) end = size;
        }
    }
    if (0) {
    end_done:
        end = size;
        /* end >= start holds: start is clamped to [0, size] */
    }
#undef CMP
    fx_symint len;
    rc = fx_si_floordiv(fx_si_sub(fx_si_add(fx_si_sub(end, start), step), FX_SI(1)), step, &len,
                        ctx->err);
    if (rc) return rc;
    g->off = fx_si_add(g->off, fx_si_mul(start, g->st[d]));
    g->sz[d] = len;
    g->st[d] = fx_si_mul(g->st[d], step);
    return FX_OK;
}

static int rule_slice(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    fx_symint step;
    if (!self || self->ndim == 0 || h[1].tag != FX_IV_INT || !arg_si(&a[4], &step))
        return SYM_SPECIALIZE;
    sgeom g;
    geom_of(self, &g);
    int rc = sym_slice(ctx, &g, wrap(h[1].u.i, self->ndim), &a[2], &a[3], step);
    return rc ? rc : set_geom(ctx, out_t(out, 0), &g);
}

static int rule_unsqueeze(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    if (!self || h[1].tag != FX_IV_INT) return SYM_SPECIALIZE;
    int d = (int)(h[1].u.i < 0 ? h[1].u.i + self->ndim + 1 : h[1].u.i);
    sgeom g;
    geom_of(self, &g);
    for (int e = g.nd; e > d; e--) {
        g.sz[e] = g.sz[e - 1];
        g.st[e] = g.st[e - 1];
    }
    g.sz[d] = FX_SI(1);
    g.st[d] = d < self->ndim ? fx_si_mul(SZ(self, d), ST(self, d)) : FX_SI(1);
    g.nd++;
    return set_geom(ctx, out_t(out, 0), &g);
}

/* squeeze: a dim goes when it is a plain 1; a symbolic size is >= 2 (size-oblivious). */
static int rule_squeeze(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    if (!self) return SYM_SPECIALIZE;
    bool pick[FX_MAX_DIMS] = {false};
    if (ctx->op->schema.nargs == 1) {
        for (int d = 0; d < self->ndim; d++) pick[d] = true;
    } else {
        int64_t dims[FX_MAX_DIMS];
        int n = 0;
        if (fx_arg_int_list(&h[1], dims, &n, ctx->err)) return SYM_SPECIALIZE;
        for (int i = 0; i < n; i++) pick[wrap(dims[i], self->ndim)] = true;
    }
    sgeom g;
    geom_of(self, &g);
    for (int d = self->ndim - 1; d >= 0; d--)
        if (pick[d] && !g.sz[d].expr && g.sz[d].hint == 1) geom_drop(&g, d);
    return set_geom(ctx, out_t(out, 0), &g);
}

static int permute_to(fx_opctx *ctx, const fx_tensor *self, const int *perm, fx_ivalue *out) {
    sgeom g, p;
    geom_of(self, &g);
    p = g;
    for (int d = 0; d < g.nd; d++) {
        p.sz[d] = g.sz[perm[d]];
        p.st[d] = g.st[perm[d]];
    }
    return set_geom(ctx, out_t(out, 0), &p);
}

static int rule_transpose(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    if (!self) return SYM_SPECIALIZE;
    int perm[FX_MAX_DIMS];
    for (int d = 0; d < self->ndim; d++) perm[d] = d;
    if (self->ndim >= 2) {
        int d0 = self->ndim - 2, d1 = self->ndim - 1; /* t() */
        if (ctx->op->schema.nargs >= 3) {
            d0 = wrap(h[1].u.i, self->ndim);
            d1 = wrap(h[2].u.i, self->ndim);
        }
        perm[d0] = d1;
        perm[d1] = d0;
    }
    return permute_to(ctx, self, perm, out);
}

static int rule_permute(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    int64_t dims[FX_MAX_DIMS];
    int n = 0, perm[FX_MAX_DIMS];
    if (!self || fx_arg_int_list(&h[1], dims, &n, ctx->err) || n != self->ndim)
        return SYM_SPECIALIZE;
    for (int d = 0; d < n; d++) perm[d] = wrap(dims[d], n);
    return permute_to(ctx, self, perm, out);
}

/* expand(size): -1 keeps a dim; a size-1 dim takes the target (stride 0); any other dim must
 * equal the target (a guard). */
static int rule_expand(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    fx_symint tg[FX_MAX_DIMS];
    int n, rc;
    if (!self || (rc = arg_sis(ctx, &a[1], tg, &n))) return self ? rc : SYM_SPECIALIZE;
    sgeom g;
    g.nd = n;
    g.off = OFF(self);
    for (int i = 0; i < n; i++) {
        int d = self->ndim - n + i;
        bool keep = !tg[i].expr && tg[i].hint == -1;
        if (d < 0) {
            g.sz[i] = tg[i];
            g.st[i] = FX_SI(0);
            continue;
        }
        fx_symint s = SZ(self, d);
        if (keep || si_same(s, tg[i])) {
            g.sz[i] = s;
            g.st[i] = ST(self, d);
        } else if (fx_si_known_true(FX_SYM_EQ, s, FX_SI(1))) {
            g.sz[i] = tg[i];
            g.st[i] = FX_SI(0);
        } else {
            bool eq;
            if ((rc = guard_eq(ctx, s, tg[i], &eq))) return rc;
            if (!eq) return SYM_SPECIALIZE;
            g.sz[i] = s;
            g.st[i] = ST(self, d);
        }
    }
    return set_geom(ctx, out_t(out, 0), &g);
}

static int rule_alias(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    if (!self) return SYM_SPECIALIZE;
    sgeom g;
    geom_of(self, &g);
    return set_geom(ctx, out_t(out, 0), &g);
}

/* view_as_real: sizes + [2], strides * 2 + [1], offset * 2 (in elements of the real dtype). */
static int rule_view_as_real(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h,
                             fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    if (!self) return SYM_SPECIALIZE;
    sgeom g;
    geom_of(self, &g);
    for (int d = 0; d < g.nd; d++) g.st[d] = fx_si_mul(g.st[d], FX_SI(2));
    g.sz[g.nd] = FX_SI(2);
    g.st[g.nd] = FX_SI(1);
    g.nd++;
    g.off = fx_si_mul(g.off, FX_SI(2));
    return set_geom(ctx, out_t(out, 0), &g);
}

/* view_as_complex: the last dim (2, stride 1) goes; other strides and the offset halve (the
 * meta function has checked on the hints that they are even). */
static int rule_view_as_complex(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h,
                                fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    if (!self) return SYM_SPECIALIZE;
    sgeom g;
    geom_of(self, &g);
    g.nd--;
    int rc;
    for (int d = 0; d < g.nd; d++)
        if ((rc = fx_si_floordiv(g.st[d], FX_SI(2), &g.st[d], ctx->err))) return rc;
    if ((rc = fx_si_floordiv(g.off, FX_SI(2), &g.off, ctx->err))) return rc;
    return set_geom(ctx, out_t(out, 0), &g);
}

/* The elements a geometry reaches: offset + sum((size - 1) * stride) + 1 (strides >= 0). */
static fx_symint geom_extent(const sgeom *g) {
    fx_symint e = fx_si_add(g->off, FX_SI(1));
    for (int d = 0; d < g->nd; d++)
        e = fx_si_add(e, fx_si_mul(fx_si_sub(g->sz[d], FX_SI(1)), g->st[d]));
    return e;
}

/* as_strided's storage check (setStorage: "... out of bounds for storage of size N") made a guard
 * when the sizes are symbolic: a view v of self must reach no further than self's storage. The
 * storage's symbolic size is known only when self spans its storage exactly (an input, a fresh
 * tensor): then v's extent <= self's extent is guarded, so the program refuses the sizes eager
 * refuses. A view with an empty dim reaches nothing and needs no guard. */
static int guard_in_storage(fx_opctx *ctx, const fx_tensor *self, const sgeom *v) {
    sgeom s;
    geom_of(self, &s);
    for (int d = 0; d < v->nd; d++)
        if (v->sz[d].hint <= 0 || v->st[d].hint < 0) return FX_OK;
    for (int d = 0; d < s.nd; d++)
        if (s.sz[d].hint <= 0 || s.st[d].hint < 0) return FX_OK;
    fx_symint have = geom_extent(&s), need = geom_extent(v);
    int64_t isz = (int64_t)fx_dtype_size(self->dtype);
    if (!self->storage || have.hint * isz != self->storage->size_bytes) return FX_OK;
    bool ok;
    int rc = fx_si_cmp(FX_SYM_LE, need, have, &ok, ctx->err);
    if (rc) return rc;
    return ok ? FX_OK : SYM_SPECIALIZE;
}

static int rule_as_strided(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    sgeom g;
    int n1, n2, rc;
    if (!self) return SYM_SPECIALIZE;
    if ((rc = arg_sis(ctx, &a[1], g.sz, &n1)) || (rc = arg_sis(ctx, &a[2], g.st, &n2))) return rc;
    if (n1 != n2) return SYM_SPECIALIZE;
    g.nd = n1;
    g.off = OFF(self);
    if (a[3].tag != FX_IV_NONE && a[3].tag != FX_IV_UNSET && !arg_si(&a[3], &g.off))
        return SYM_SPECIALIZE;
    if ((rc = guard_in_storage(ctx, self, &g))) return rc;
    return set_geom(ctx, out_t(out, 0), &g);
}

/* unfold(dim, size, step): the windows dim has (n - size) // step + 1 entries (n >= size guarded,
 * as the meta's "maximum size" check), stride * step; the window dim is the plain size at the old
 * stride. */
static int rule_unfold(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    if (!self || h[1].tag != FX_IV_INT || h[2].tag != FX_IV_INT || h[3].tag != FX_IV_INT)
        return SYM_SPECIALIZE;
    int64_t size = h[2].u.i, step = h[3].u.i;
    sgeom g;
    geom_of(self, &g);
    if (g.nd + 1 > FX_MAX_DIMS) return SYM_SPECIALIZE;
    if (self->ndim == 0) {
        g.sz[0] = FX_SI(size);
        g.st[0] = FX_SI(1);
        g.nd = 1;
        return set_geom(ctx, out_t(out, 0), &g);
    }
    int d = wrap(h[1].u.i, self->ndim), rc;
    bool fits;
    if ((rc = fx_si_cmp(FX_SYM_LE, FX_SI(size), g.sz[d], &fits, ctx->err))) return rc;
    if (!fits) return SYM_SPECIALIZE; /* the meta function accepted it under the hints */
    fx_symint n;
    if ((rc = fx_si_floordiv(fx_si_sub(g.sz[d], FX_SI(size)), FX_SI(step), &n, ctx->err))) return rc;
    g.sz[g.nd] = FX_SI(size);
    g.st[g.nd] = g.st[d];
    g.sz[d] = fx_si_add(n, FX_SI(1));
    g.st[d] = fx_si_mul(g.st[d], FX_SI(step));
    g.nd++;
    return set_geom(ctx, out_t(out, 0), &g);
}

/* unfold_backward(grad, input_sizes, ...): a fresh tensor of input_sizes. */
static int rule_unfold_backward(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    fx_symint sz[FX_MAX_DIMS];
    int n, rc = arg_sis(ctx, &a[1], sz, &n);
    if (rc) return rc;
    return set_fresh(ctx, out_t(out, 0), n, sz);
}

/* resize_: equal sizes (each guarded, as Resize.cpp compares SymInts) change nothing; otherwise
 * contiguous strides of the new sizes at self's offset. A memory format specializes. */
static int rule_resize_(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h, (void)out;
    fx_tensor *self = arg_t(a, 0);
    const fx_ivalue *mf = fx_arg(ctx, a, "memory_format");
    fx_symint sz[FX_MAX_DIMS], st[FX_MAX_DIMS];
    int n, rc;
    if (!self || (mf && mf->tag == FX_IV_STR)) return SYM_SPECIALIZE;
    if ((rc = arg_sis(ctx, &a[1], sz, &n))) return rc;
    bool same = n == self->ndim && self->sym;
    for (int d = 0; same && d < n; d++) {
        fx_symint cur = fx_tensor_sym_size(self, d);
        if (si_same(simp(cur), sz[d])) continue;
        if ((rc = guard_eq(ctx, cur, sz[d], &same))) return rc;
    }
    if (same) return FX_OK;
    fx_sym_contiguous_strides(n, sz, st);
    return set_sym(ctx, self, sz, st, OFF(self));
}

/* resize (functional): a fresh tensor of the new sizes, contiguous. */
static int rule_resize(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_ivalue *mf = fx_arg(ctx, a, "memory_format");
    fx_symint sz[FX_MAX_DIMS], st[FX_MAX_DIMS];
    int n, rc;
    if (mf && mf->tag == FX_IV_STR) return SYM_SPECIALIZE;
    if ((rc = arg_sis(ctx, &a[1], sz, &n))) return rc;
    fx_tensor *o = out_t(out, 0);
    if (!o || o->ndim != n) return SYM_SPECIALIZE;
    fx_sym_contiguous_strides(n, sz, st);
    return set_sym(ctx, o, sz, st, FX_SI(0));
}

/* set_: self takes the source's symbolic geometry, or the one given (contiguous strides for an
 * empty stride list); set_() leaves it plain. */
static int rule_set_(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h, (void)out;
    fx_tensor *self = arg_t(a, 0);
    const fx_tensor *src = arg_t(a, 1);
    fx_symint sz[FX_MAX_DIMS], st[FX_MAX_DIMS], off = FX_SI(0);
    int n = 0, ns = 0, rc;
    if (!self) return SYM_SPECIALIZE;
    if (ctx->op->id == FX_OP_SET_) {
        sz[0] = FX_SI(0), st[0] = FX_SI(1), n = 1;
    } else if (!src) {
        return SYM_SPECIALIZE;
    } else if (ctx->op->id == FX_OP_SET__SOURCE_TENSOR) {
        sgeom g;
        geom_of(src, &g);
        return set_geom(ctx, self, &g);
    } else {
        if (!arg_si(&a[2], &off)) return SYM_SPECIALIZE;
        if ((rc = arg_sis(ctx, &a[3], sz, &n))) return rc;
        if (a[4].tag == FX_IV_LIST && a[4].u.list.n == 0)
            fx_sym_contiguous_strides(n, sz, st), ns = n;
        else if ((rc = arg_sis(ctx, &a[4], st, &ns)))
            return rc;
        if (ns != n) return SYM_SPECIALIZE;
    }
    return set_sym(ctx, self, sz, st, off);
}

/* split.Tensor / split_with_sizes: item i is the slice [start_i, start_i + len_i) along dim. The
 * number of pieces must be a plain number: it is guarded to its value. */
static int rule_split(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    if (!self || out[0].tag != FX_IV_LIST || h[2].tag != FX_IV_INT) return SYM_SPECIALIZE;
    int d = wrap(h[2].u.i, self->ndim), n = out[0].u.list.n, rc;
    if (n > 64) return SYM_SPECIALIZE;
    fx_symint size = SZ(self, d), lens[64];
    if (ctx->op->id == FX_OP_SPLIT_WITH_SIZES) {
        if (a[1].tag != FX_IV_LIST || a[1].u.list.n != n) return SYM_SPECIALIZE;
        fx_symint total = FX_SI(0);
        for (int i = 0; i < n; i++) {
            if (!arg_si(&a[1].u.list.items[i], &lens[i])) return SYM_SPECIALIZE;
            total = fx_si_add(total, lens[i]);
        }
        bool eq;
        if ((rc = guard_eq(ctx, total, size, &eq))) return rc;
        if (!eq) return SYM_SPECIALIZE;
    } else {
        fx_symint ss, cnt;
        if (!arg_si(&a[1], &ss)) return SYM_SPECIALIZE;
        if (fx_si_known_true(FX_SYM_EQ, ss, FX_SI(0))) return SYM_SPECIALIZE;
        if ((rc = fx_si_floordiv(fx_si_sub(fx_si_add(size, ss), FX_SI(1)), ss, &cnt, ctx->err)))
            return rc;
        bool eq;
        if ((rc = guard_eq(ctx, fx_si_max(cnt, FX_SI(1)), FX_SI(n), &eq))) return rc;
        if (!eq) return SYM_SPECIALIZE;
        for (int i = 0; i < n; i++)
            lens[i] = i + 1 < n ? ss : fx_si_sub(size, fx_si_mul(ss, FX_SI(n - 1)));
    }
    fx_symint start = FX_SI(0);
    for (int i = 0; i < n; i++) {
        sgeom g;
        geom_of(self, &g);
        g.off = fx_si_add(g.off, fx_si_mul(start, g.st[d]));
        g.sz[d] = lens[i];
        start = fx_si_add(start, lens[i]);
        const fx_ivalue *it = &out[0].u.list.items[i];
        if (it->tag != FX_IV_TENSOR || (rc = set_geom(ctx, it->u.t, &g)))
            return rc ? rc : SYM_SPECIALIZE;
    }
    return FX_OK;
}

/* unbind(dim): item i is select(dim, i); the number of items is the size of dim, which must be
 * a plain number (a symbolic one is guarded to its value, as PyTorch does). */
static int rule_unbind(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0);
    if (!self || self->ndim == 0 || out[0].tag != FX_IV_LIST || h[1].tag != FX_IV_INT)
        return SYM_SPECIALIZE;
    int d = wrap(h[1].u.i, self->ndim), rc;
    if ((rc = need_eq(ctx, SZ(self, d), FX_SI(out[0].u.list.n)))) return rc;
    for (int i = 0; i < out[0].u.list.n; i++) {
        sgeom g;
        geom_of(self, &g);
        if ((rc = sym_select(ctx, &g, d, FX_SI(i)))) return rc;
        const fx_ivalue *it = &out[0].u.list.items[i];
        if (it->tag != FX_IV_TENSOR) return SYM_SPECIALIZE;
        if ((rc = set_geom(ctx, it->u.t, &g))) return rc;
    }
    return FX_OK;
}

/* ---- cat, repeat ---------------------------------------------------------------------------- */

static int rule_cat(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    fx_tensor *o = out_t(out, 0);
    if (!o || a[0].tag != FX_IV_LIST || h[1].tag != FX_IV_INT) return SYM_SPECIALIZE;
    int d = wrap(h[1].u.i, o->ndim), rc;
    fx_symint sz[FX_MAX_DIMS], total = FX_SI(0);
    bool have = false;
    for (int i = 0; i < a[0].u.list.n; i++) {
        const fx_ivalue *it = &a[0].u.list.items[i];
        if (it->tag != FX_IV_TENSOR) return SYM_SPECIALIZE;
        const fx_tensor *t = it->u.t;
        if (t->ndim == 1 && !t->sym && t->sizes[0] == 0) continue; /* legacy empty [0] */
        if (t->ndim != o->ndim) return SYM_SPECIALIZE;
        for (int e = 0; e < t->ndim; e++) {
            if (e == d) continue;
            fx_symint s = SZ(t, e);
            if (!have)
                sz[e] = s;
            else if (!si_same(sz[e], s)) {
                bool eq;
                if ((rc = guard_eq(ctx, sz[e], s, &eq))) return rc;
                if (!eq) return SYM_SPECIALIZE;
            }
        }
        total = fx_si_add(total, SZ(t, d));
        have = true;
    }
    if (!have) return FX_OK;
    sz[d] = total;
    return set_fresh(ctx, o, o->ndim, sz);
}

static int rule_repeat(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    fx_symint r[FX_MAX_DIMS], sz[FX_MAX_DIMS];
    int n, rc;
    if (!self) return SYM_SPECIALIZE;
    if ((rc = arg_sis(ctx, &a[1], r, &n))) return rc;
    for (int i = 0; i < n; i++) {
        int d = self->ndim - n + i;
        sz[i] = d >= 0 ? fx_si_mul(SZ(self, d), r[i]) : r[i];
    }
    return set_fresh(ctx, out_t(out, 0), n, sz);
}

/* ---- factories ------------------------------------------------------------------------------ */

static int rule_factory(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    int at = 0;
    if (ctx->op->id == FX_OP_RANDINT)
        at = 1;
    else if (ctx->op->id == FX_OP_RANDINT_LOW)
        at = 2;
    fx_symint sz[FX_MAX_DIMS];
    int n, rc;
    if ((rc = arg_sis(ctx, &a[at], sz, &n))) return rc;
    fx_tensor *o = out_t(out, 0);
    return o ? set_fresh(ctx, o, n, sz) : SYM_SPECIALIZE;
}

static int rule_eye(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    fx_symint sz[2];
    if (!arg_si(&a[0], &sz[0])) return SYM_SPECIALIZE;
    sz[1] = sz[0];
    if (ctx->op->id == FX_OP_EYE_M && !arg_si(&a[1], &sz[1])) return SYM_SPECIALIZE;
    fx_tensor *o = out_t(out, 0);
    if (!o) return SYM_SPECIALIZE;
    return set_fresh(ctx, o, ctx->op->id == FX_OP_RANDPERM ? 1 : 2, sz);
}

/* arange with integer bounds: ceil((end - start) / step) elements. */
static int rule_arange(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    fx_symint s = FX_SI(0), e, st = FX_SI(1), len;
    int k = 0;
    if (ctx->op->id != FX_OP_ARANGE && !arg_si(&a[k++], &s)) return SYM_SPECIALIZE;
    if (!arg_si(&a[k++], &e)) return SYM_SPECIALIZE;
    if (ctx->op->id == FX_OP_ARANGE_START_STEP && !arg_si(&a[k], &st)) return SYM_SPECIALIZE;
    if (st.expr || st.hint == 0) return SYM_SPECIALIZE;
    int rc;
    if (st.hint > 0)
        rc = fx_si_floordiv(fx_si_add(fx_si_sub(e, s), FX_SI(st.hint - 1)), st, &len, ctx->err);
    else
        rc = fx_si_floordiv(fx_si_sub(fx_si_sub(s, e), FX_SI(st.hint + 1)), FX_SI(-st.hint), &len,
                            ctx->err);
    if (rc) return rc;
    len = fx_si_max(len, FX_SI(0));
    fx_tensor *o = out_t(out, 0);
    return o ? set_fresh(ctx, o, 1, &len) : SYM_SPECIALIZE;
}

/* ---- linear algebra ------------------------------------------------------------------------- */

static int need_eq(fx_opctx *ctx, fx_symint x, fx_symint y) {
    if (si_same(x, y)) return FX_OK;
    bool eq;
    int rc = guard_eq(ctx, x, y, &eq);
    return rc ? rc : eq ? FX_OK : SYM_SPECIALIZE;
}

/* mm, bmm, addmm(_), baddbmm(_), mv, dot: the inner dims (and batch dims) guarded equal; an
 * added `self` broadcasts to the product. */
static int rule_mm(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    fx_op_id id = ctx->op->id;
    bool add =
        id == FX_OP_ADDMM || id == FX_OP_ADDMM_ || id == FX_OP_BADDBMM || id == FX_OP_BADDBMM_;
    const fx_tensor *x = arg_t(a, add ? 1 : 0), *y = arg_t(a, add ? 2 : 1);
    if (!x || !y) return SYM_SPECIALIZE;
    fx_symint sz[3];
    int nd = 0, rc;
    if (x->ndim == 1 && y->ndim == 1) { /* dot */
        if ((rc = need_eq(ctx, SZ(x, 0), SZ(y, 0)))) return rc;
    } else if (x->ndim == 2 && y->ndim == 1) { /* mv */
        if ((rc = need_eq(ctx, SZ(x, 1), SZ(y, 0)))) return rc;
        sz[nd++] = SZ(x, 0);
    } else if (x->ndim == 2 && y->ndim == 2) {
        if ((rc = need_eq(ctx, SZ(x, 1), SZ(y, 0)))) return rc;
        sz[nd++] = SZ(x, 0);
        sz[nd++] = SZ(y, 1);
    } else if (x->ndim == 3 && y->ndim == 3) {
        if ((rc = need_eq(ctx, SZ(x, 0), SZ(y, 0))) || (rc = need_eq(ctx, SZ(x, 2), SZ(y, 1))))
            return rc;
        sz[nd++] = SZ(x, 0);
        sz[nd++] = SZ(x, 1);
        sz[nd++] = SZ(y, 2);
    } else {
        return SYM_SPECIALIZE;
    }
    if (add) {
        const fx_tensor *self = arg_t(a, 0);
        fx_symint s[FX_MAX_DIMS], r[FX_MAX_DIMS];
        int rn;
        sizes_of(self, s);
        if ((rc = bcast(ctx, self->ndim, s, nd, sz, &rn, r))) return rc;
    }
    fx_tensor *o = out_t(out, 0);
    if (!o) return FX_OK;
    if (is_input(ctx, a, o)) return keep_self_shape(ctx, o, nd, sz); /* addmm_, baddbmm_ */
    return set_fresh(ctx, o, nd, sz);
}

static int rule_linear(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *x = arg_t(a, 0), *w = arg_t(a, 1);
    if (!x || !w || x->ndim == 0 || w->ndim == 0 || w->ndim > 2) return SYM_SPECIALIZE;
    int rc = need_eq(ctx, SZ(x, x->ndim - 1), SZ(w, w->ndim - 1));
    if (rc) return rc;
    fx_symint sz[FX_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d + 1 < x->ndim; d++) sz[nd++] = SZ(x, d);
    if (w->ndim == 2) sz[nd++] = SZ(w, 0);
    const fx_tensor *b = arg_t(a, 2);
    if (b) {
        fx_symint s[FX_MAX_DIMS], r[FX_MAX_DIMS];
        int rn;
        sizes_of(b, s);
        if ((rc = bcast(ctx, nd, sz, b->ndim, s, &rn, r))) return rc;
    }
    return set_fresh(ctx, out_t(out, 0), nd, sz);
}

/* scaled_dot_product_attention: q's sizes with the last one v's; q/k feature dims and k/v
 * sequence dims guarded equal. */
static int rule_sdpa(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *q = arg_t(a, 0), *k = arg_t(a, 1), *v = arg_t(a, 2);
    if (!q || !k || !v || q->ndim < 2 || k->ndim < 2 || v->ndim < 2) return SYM_SPECIALIZE;
    int rc;
    if ((rc = need_eq(ctx, SZ(q, q->ndim - 1), SZ(k, k->ndim - 1))) ||
        (rc = need_eq(ctx, SZ(k, k->ndim - 2), SZ(v, v->ndim - 2))))
        return rc;
    fx_symint sz[FX_MAX_DIMS];
    sizes_of(q, sz);
    sz[q->ndim - 1] = SZ(v, v->ndim - 1);
    return set_fresh(ctx, out_t(out, 0), q->ndim, sz);
}

static int rule_embedding(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *w = arg_t(a, 0), *idx = arg_t(a, 1);
    if (!w || !idx || w->ndim != 2) return SYM_SPECIALIZE;
    fx_symint sz[FX_MAX_DIMS];
    sizes_of(idx, sz);
    sz[idx->ndim] = SZ(w, 1);
    return set_fresh(ctx, out_t(out, 0), idx->ndim + 1, sz);
}

static int rule_index_select(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h,
                             fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0), *idx = arg_t(a, 2);
    fx_tensor *o = out_t(out, 0);
    if (!self || !idx || !o || h[1].tag != FX_IV_INT || o->ndim != self->ndim)
        return SYM_SPECIALIZE;
    fx_symint sz[FX_MAX_DIMS], n;
    sizes_of(self, sz);
    n = idx->ndim ? SZ(idx, 0) : FX_SI(1);
    if (self->ndim) sz[wrap(h[1].u.i, self->ndim)] = n;
    return set_fresh(ctx, o, o->ndim, sz);
}

static int rule_gather(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *idx = arg_t(a, 2);
    if (!idx) return SYM_SPECIALIZE;
    fx_symint sz[FX_MAX_DIMS];
    sizes_of(idx, sz);
    return set_fresh(ctx, out_t(out, 0), idx->ndim, sz);
}

/* ---- the table ------------------------------------------------------------------------------ */

/* topk: self's sizes with k (a SymInt or an int) along dim. */
static int rule_topk(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    fx_sort_plan p;
    fx_err e;
    fx_opctx hc = quiet(ctx, &e);
    if (fx_sort_plan_make(&hc, h, &p)) return SYM_SPECIALIZE;
    const fx_tensor *self = arg_t(a, 0);
    fx_symint sz[FX_MAX_DIMS], k;
    if (!self || !arg_si(&a[1], &k)) return SYM_SPECIALIZE;
    sizes_of(self, sz);
    if (self->ndim) sz[p.dim] = k;
    for (int i = 0; i < 2; i++) {
        int rc = set_fresh(ctx, out_t(out, i), self->ndim, sz);
        if (rc) return rc;
    }
    return FX_OK;
}

/* linalg_vector_norm: the kept dims of self (1 for reduced dims under keepdim). */
static int rule_vector_norm(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    fx_norm_plan p;
    fx_err e;
    fx_opctx hc = quiet(ctx, &e);
    if (fx_norm_plan_make(&hc, h, &p)) return SYM_SPECIALIZE;
    const fx_tensor *self = arg_t(a, 0);
    fx_symint sz[FX_MAX_DIMS];
    int nd = kept_sizes(self, p.reduced, p.keepdim, sz);
    return set_fresh(ctx, out_t(out, 0), nd, sz);
}

/* constant_pad_nd, reflection_pad*, replication_pad*: each padded dim grows by its (possibly
 * symbolic) before + after; the pad list names the last dim first. */
static int rule_pad(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    fx_symint pads[FX_MAX_DIMS], sz[FX_MAX_DIMS];
    int n, rc;
    if (!self || (rc = arg_sis(ctx, &a[1], pads, &n))) return SYM_SPECIALIZE;
    sizes_of(self, sz);
    for (int i = 0; i + 1 < n; i += 2) {
        int d = self->ndim - 1 - i / 2;
        if (d < 0) return SYM_SPECIALIZE;
        sz[d] = fx_si_add(sz[d], fx_si_add(pads[i], pads[i + 1]));
    }
    return set_fresh(ctx, out_t(out, 0), self->ndim, sz);
}

/* convolution: [N, OC, (in + 2 pad - dil (k - 1) - 1) // stride + 1 ...] over the symbolic input
 * and weight sizes (stride, padding, dilation are plain ints here). */
static int rule_conv(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    fx_conv_plan p;
    fx_err e;
    fx_opctx hc = quiet(ctx, &e);
    if (fx_conv_plan_make(&hc, h, &p)) return SYM_SPECIALIZE;
    const fx_tensor *in = arg_t(a, 0), *w = arg_t(a, 1);
    fx_symint sz[FX_MAX_DIMS];
    sz[0] = SZ(in, 0);
    sz[1] = SZ(w, 0);
    for (int d = 0; d < p.nsp; d++) {
        fx_symint num = fx_si_add(SZ(in, d + 2), FX_SI(2 * p.pad[d]));
        num =
            fx_si_sub(num, fx_si_add(fx_si_mul(FX_SI(p.dil[d]), fx_si_sub(SZ(w, d + 2), FX_SI(1))),
                                     FX_SI(1)));
        fx_symint q;
        int rc = fx_si_floordiv(num, FX_SI(p.stride[d]), &q, ctx->err);
        if (rc) return rc;
        sz[d + 2] = fx_si_add(q, FX_SI(1));
    }
    return set_fresh(ctx, out_t(out, 0), p.nsp + 2, sz);
}

/* The shape x[indices] has for int index tensors it[k] at dims idim[k] of self (advanced
 * indexing): the index tensors broadcast together (each pair of sizes guarded equal) into a block
 * that replaces the dims they index — in place when those dims are adjacent, else in front —
 * and self's other dims keep their sizes. */
static int index_result(fx_opctx *ctx, const fx_tensor *self, const fx_tensor *const *it,
                        const int *idim, int ni, fx_symint *r, int *rn) {
    fx_symint b[FX_MAX_DIMS];
    int bnd = 0, rc;
    for (int k = 0; k < ni; k++)
        if (it[k]->ndim > bnd) bnd = it[k]->ndim;
    for (int j = 0; j < bnd; j++) b[j] = FX_SI(1);
    for (int k = 0; k < ni; k++)
        for (int j = 0; j < it[k]->ndim; j++) {
            int bj = bnd - it[k]->ndim + j;
            fx_symint x = SZ(it[k], j);
            if (!x.expr && x.hint == 1) continue;
            if (!b[bj].expr && b[bj].hint == 1) {
                b[bj] = x;
            } else if ((rc = need_eq(ctx, b[bj], x))) {
                return rc;
            }
        }
    bool adjacent = true;
    for (int k = 1; k < ni; k++) adjacent = adjacent && idim[k] == idim[k - 1] + 1;
    *rn = 0;
    if (adjacent)
        for (int j = 0; j < idim[0]; j++) r[(*rn)++] = SZ(self, j);
    for (int j = 0; j < bnd; j++) r[(*rn)++] = b[j];
    for (int j = adjacent ? idim[ni - 1] + 1 : 0; j < self->ndim; j++) {
        bool indexed = false;
        for (int k = 0; k < ni; k++) indexed = indexed || idim[k] == j;
        if (!indexed) r[(*rn)++] = SZ(self, j);
    }
    return FX_OK;
}

/* The items of an indices list (Tensor?[]) of self: the int index tensors in it[] with the dims
 * they index in idim[] (*ni of them); a bool / uint8 mask covers as many dims as it has, each
 * guarded equal to self's (*mask set) — or, masks_ok false, makes the op specialize. */
static int index_items(fx_opctx *ctx, const fx_tensor *self, const fx_ivalue *list, bool masks_ok,
                       const fx_tensor **it, int *idim, int *ni, bool *mask) {
    int d = 0, rc;
    *ni = 0, *mask = false;
    if (list->tag != FX_IV_LIST) return SYM_SPECIALIZE;
    for (int k = 0; k < list->u.list.n; k++) {
        const fx_ivalue *x = &list->u.list.items[k];
        if (x->tag == FX_IV_NONE || x->tag == FX_IV_UNSET) {
            d++;
            continue;
        }
        if (x->tag != FX_IV_TENSOR) return SYM_SPECIALIZE;
        const fx_tensor *t = x->u.t;
        if (t->dtype == FX_DTYPE_BOOL || t->dtype == FX_DTYPE_U8) {
            if (!masks_ok || t->ndim == 0 || d + t->ndim > self->ndim) return SYM_SPECIALIZE;
            for (int j = 0; j < t->ndim; j++)
                if ((rc = need_eq(ctx, SZ(t, j), SZ(self, d + j)))) return rc;
            *mask = true;
            d += t->ndim;
        } else {
            if (d >= self->ndim || *ni == FX_MAX_DIMS) return SYM_SPECIALIZE;
            it[*ni] = t;
            idim[(*ni)++] = d++;
        }
    }
    return FX_OK;
}

/* index.Tensor(self, indices): the result of index_result, a fresh tensor; self's dims that are
 * not indexed keep their symbolic sizes, and an index tensor's symbolic sizes become the result's.
 * A bool mask's result length is data-dependent (nonzero): specialized. */
static int rule_index(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *self = arg_t(a, 0);
    fx_tensor *o = out_t(out, 0);
    if (!self || !o) return SYM_SPECIALIZE;
    const fx_tensor *it[FX_MAX_DIMS];
    int idim[FX_MAX_DIMS], ni, rc;
    bool mask;
    if ((rc = index_items(ctx, self, &a[1], false, it, idim, &ni, &mask))) return rc;
    if (ni == 0) return SYM_SPECIALIZE;
    fx_symint r[2 * FX_MAX_DIMS];
    int rn;
    if ((rc = index_result(ctx, self, it, idim, ni, r, &rn))) return rc;
    if (rn > FX_MAX_DIMS) return SYM_SPECIALIZE;
    return set_fresh(ctx, o, rn, r);
}

/* index_put(_): the shapes the meta function compared under the hints, as guards. A bool mask
 * covers as many dims of self as it has, each guarded equal; int index tensors broadcast
 * together (guarded) into the block that replaces the dims they index (in place when those
 * dims are adjacent, else in front), and values broadcast to that result (guarded). A mask's
 * result length is data-dependent: values' symbolic dims then become their example values.
 * The output is shaped like self. */
static int rule_index_put(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0), *v = arg_t(a, 2);
    if (!self) return SYM_SPECIALIZE;
    const fx_tensor *it[FX_MAX_DIMS];
    int idim[FX_MAX_DIMS], ni, rc;
    bool mask;
    if ((rc = index_items(ctx, self, &a[1], true, it, idim, &ni, &mask))) return rc;
    if (v && (mask && ni > 0)) return SYM_SPECIALIZE;
    if (v && mask) {
        for (int j = 0; j < v->ndim; j++)
            if ((rc = need_eq(ctx, SZ(v, j), FX_SI(v->sizes[j])))) return rc;
    } else if (v && ni > 0) {
        fx_symint r[2 * FX_MAX_DIMS];
        int rn;
        if ((rc = index_result(ctx, self, it, idim, ni, r, &rn))) return rc;
        if (v->ndim > rn) return SYM_SPECIALIZE;
        for (int j = 0; j < v->ndim; j++) {
            fx_symint x = SZ(v, v->ndim - 1 - j);
            if (!x.expr && x.hint == 1) continue;
            if ((rc = need_eq(ctx, x, r[rn - 1 - j]))) return rc;
        }
    } else if (v && ni == 0) {
        /* no index tensor (all None): values broadcast to self */
        if (v->ndim > self->ndim) return SYM_SPECIALIZE;
        for (int j = 0; j < v->ndim; j++) {
            fx_symint x = SZ(v, v->ndim - 1 - j);
            if (!x.expr && x.hint == 1) continue;
            if ((rc = need_eq(ctx, x, SZ(self, self->ndim - 1 - j)))) return rc;
        }
    }
    return rule_same(ctx, a, h, out);
}

/* scatter / scatter_add / scatter_reduce (and the in-place ones): scatter's shape checks as
 * guards — index.size(d) <= self.size(d) for d != dim and index.size(d) <= src.size(d) — then
 * the output is shaped like self. (The index values themselves are data, checked by the kernel.) */
static int rule_scatter(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0), *index = arg_t(a, 2), *src = arg_t(a, 3);
    if (!self || !index || h[1].tag != FX_IV_INT) return SYM_SPECIALIZE;
    if (index->ndim != self->ndim || (src && src->ndim != index->ndim)) return SYM_SPECIALIZE;
    int dim = wrap(h[1].u.i, self->ndim), rc;
    bool le;
    for (int j = 0; j < index->ndim; j++) {
        if (j != dim) {
            if ((rc = fx_si_cmp(FX_SYM_LE, SZ(index, j), SZ(self, j), &le, ctx->err))) return rc;
            if (!le) return SYM_SPECIALIZE;
        }
        if (src) {
            if ((rc = fx_si_cmp(FX_SYM_LE, SZ(index, j), SZ(src, j), &le, ctx->err))) return rc;
            if (!le) return SYM_SPECIALIZE;
        }
    }
    return rule_same(ctx, a, h, out);
}

/* index_copy(self, dim, index, source): index's length equals source.size(dim) and source's
 * other dims equal self's (index_copy_'s checks), guarded; the output is shaped like self. */
static int rule_index_copy(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    const fx_tensor *self = arg_t(a, 0), *index = arg_t(a, 2), *src = arg_t(a, 3);
    if (!self || !index || !src || h[1].tag != FX_IV_INT || index->ndim > 1) return SYM_SPECIALIZE;
    if (self->ndim == 0 || src->ndim != self->ndim) return SYM_SPECIALIZE;
    int dim = wrap(h[1].u.i, self->ndim), rc;
    fx_symint len = index->ndim == 0 ? FX_SI(1) : SZ(index, 0);
    if ((rc = need_eq(ctx, len, SZ(src, dim)))) return rc;
    for (int j = 0; j < self->ndim; j++)
        if (j != dim && (rc = need_eq(ctx, SZ(src, j), SZ(self, j)))) return rc;
    return rule_same(ctx, a, h, out);
}

/* _native_batch_norm_legit and its variants: the [C]-sized arguments guarded equal to input's
 * C; out like input; save_mean / save_rstd [C] when training, [0] in evaluation; the running
 * outputs of _functional like the running statistics. */
static int rule_batch_norm(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *x = arg_t(a, 0);
    if (!x || x->ndim < 2) return SYM_SPECIALIZE;
    fx_symint c = SZ(x, 1), sz[FX_MAX_DIMS];
    int np = ctx->op->id == FX_OP__NATIVE_BATCH_NORM_LEGIT_NO_STATS ? 3 : 5, rc = FX_OK;
    for (int i = 1; i < np && !rc; i++) {
        const fx_tensor *t = arg_t(a, i);
        if (t && t->ndim != 1) return SYM_SPECIALIZE;
        if (t) rc = need_eq(ctx, SZ(t, 0), c);
    }
    sizes_of(x, sz);
    if (!rc) rc = set_fresh(ctx, out_t(out, 0), x->ndim, sz);
    fx_symint s1 = out_t(out, 1)->sizes[0] == 0 ? FX_SI(0) : c;
    for (int i = 1; i < 3 && !rc; i++) rc = set_fresh(ctx, out_t(out, i), 1, &s1);
    for (int i = 3; i < ctx->op->schema.nrets && !rc; i++) {
        fx_symint r = SZ(arg_t(a, i), 0);
        rc = set_fresh(ctx, out_t(out, i), 1, &r);
    }
    return rc;
}

/* group_norm / native_group_norm: out like input; mean / rstd [N, group]. The N, C, HxW of
 * native_group_norm are plain ints here (a symbolic one specializes). */
static int rule_group_norm(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    const fx_tensor *x = arg_t(a, 0);
    if (!x || x->ndim < 2) return SYM_SPECIALIZE;
    fx_symint sz[FX_MAX_DIMS];
    sizes_of(x, sz);
    int rc = set_fresh(ctx, out_t(out, 0), x->ndim, sz);
    if (rc || ctx->op->id != FX_OP_NATIVE_GROUP_NORM) return rc;
    fx_symint ss[2] = {sz[0], FX_SI(out_t(out, 1)->sizes[1])};
    for (int i = 1; i < 3 && !rc; i++) rc = set_fresh(ctx, out_t(out, i), 2, ss);
    return rc;
}

/* repeat_interleave.Tensor: [output_size] (a SymInt when given so); without it the meta
 * function already refused (data-dependent). */
static int rule_repeat_interleave(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)h;
    fx_symint n;
    const fx_ivalue *o = fx_arg(ctx, a, "output_size");
    if (!o || !arg_si(o, &n)) return SYM_SPECIALIZE;
    return set_fresh(ctx, out_t(out, 0), 1, &n);
}

static const struct {
    fx_op_fn meta;
    sym_rule rule;
} k_rules[] = {
    {fx_meta_binary, rule_bcast},
    {fx_meta_binary_, rule_bcast},
    {fx_meta_where, rule_bcast},
    {fx_meta_clamp, rule_bcast},
    {fx_meta_lerp, rule_bcast},
    {fx_meta_masked_fill, rule_bcast},
    {fx_meta_polar, rule_bcast},
    {fx_meta_view_as_real, rule_view_as_real},
    {fx_meta_view_as_complex, rule_view_as_complex},
    {fx_meta_unary, rule_same},
    {fx_meta_unary_, rule_same},
    {fx_meta_unary_same, rule_same},
    {fx_meta_inplace_self, rule_same},
    {fx_meta_clone, rule_same},
    {fx_meta_to_copy, rule_same},
    {fx_meta_like, rule_same},
    {fx_meta_random_, rule_same},
    {fx_meta_softmax, rule_same},
    {fx_meta_cumsum, rule_same},
    {fx_meta_flip, rule_same},
    {fx_meta_roll, rule_same},
    {fx_meta_sort, rule_same},
    {fx_meta_topk, rule_topk},
    {fx_meta_convolution, rule_conv},
    {fx_meta_batch_norm, rule_batch_norm},
    {fx_meta_group_norm, rule_group_norm},
    {fx_meta_out, rule_same},
    {fx_meta_repeat_interleave, rule_repeat_interleave},
    {fx_meta_pad, rule_pad},
    {fx_meta_vector_norm, rule_vector_norm},
    {fx_meta_tril, rule_same},
    {fx_meta_dropout, rule_same},
    {fx_meta_layer_norm, rule_same},
    {fx_meta_rms_norm, rule_same},
    {fx_meta_scatter, rule_scatter},
    {fx_meta_index_copy, rule_index_copy},
    {fx_meta_index, rule_index},
    {fx_meta_index_put, rule_index_put},
    {fx_meta_index_put_, rule_index_put},
    {fx_meta_select_scatter, rule_same},
    {fx_meta_slice_scatter, rule_same},
    {fx_meta_diagonal_scatter, rule_same},
    {fx_meta_as_strided_scatter, rule_same},
    {fx_meta_copy, rule_copy},
    {fx_meta_copy_, rule_copy},
    {fx_meta_reduce, rule_reduce},
    {fx_meta_view, rule_view},
    {fx_meta_unsafe_view, rule_view},
    {fx_meta_select, rule_select},
    {fx_meta_slice, rule_slice},
    {fx_meta_unsqueeze, rule_unsqueeze},
    {fx_meta_squeeze, rule_squeeze},
    {fx_meta_transpose, rule_transpose},
    {fx_meta_t, rule_transpose},
    {fx_meta_permute, rule_permute},
    {fx_meta_expand, rule_expand},
    {fx_meta_alias, rule_alias},
    {fx_meta_as_strided, rule_as_strided},
    {fx_meta_unfold, rule_unfold},
    {fx_meta_resize_, rule_resize_},
    {fx_meta_resize, rule_resize},
    {fx_meta_set_, rule_set_},
    {fx_meta_unfold_backward, rule_unfold_backward},
    {fx_meta_split, rule_split},
    {fx_meta_unbind, rule_unbind},
    {fx_meta_cat, rule_cat},
    {fx_meta_repeat, rule_repeat},
    {fx_meta_factory, rule_factory},
    {fx_meta_randint, rule_factory},
    {fx_meta_eye, rule_eye},
    {fx_meta_randperm, rule_eye},
    {fx_meta_arange, rule_arange},
    {fx_meta_mm, rule_mm},
    {fx_meta_bmm, rule_mm},
    {fx_meta_mv, rule_mm},
    {fx_meta_dot, rule_mm},
    {fx_meta_addmm, rule_mm},
    {fx_meta_baddbmm, rule_mm},
    {fx_meta_linear, rule_linear},
    {fx_meta_sdpa, rule_sdpa},
    {fx_meta_embedding, rule_embedding},
    {fx_meta_index_select, rule_index_select},
    {fx_meta_gather, rule_gather},
    {fx_meta_sym_size, rule_none},
    {fx_meta_local_scalar_dense, rule_none},
    {fx_meta_assert_scalar, rule_none},
    {fx_meta_sym_constrain_range_for_size, rule_none},
};

/* A custom op (torch.library): its fake impl ran on the symbolic arguments themselves (dispatch
 * passes them, not their hints), so its results already have the shapes its ops' own rules gave
 * them, as PyTorch runs a fake impl on FakeTensors with SymInt sizes. */
static int rule_custom(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)ctx, (void)a, (void)h, (void)out;
    return FX_OK;
}

static sym_rule rule_of(const fx_opdef *op) {
    if (op->flags & FX_OPF_CUSTOM) return rule_custom;
    for (size_t i = 0; i < sizeof k_rules / sizeof k_rules[0]; i++)
        if (k_rules[i].meta == op->meta) return k_rules[i].rule;
    return NULL;
}

/* Composites that pass symbolic values through unchanged, or were written for them. */
static bool composite_symbolic(fx_op_id id) {
    switch (id) {
    case FX_OP_REAL:
    case FX_OP_IMAG:
    case FX_OP_CONJ:
    case FX_OP_CONTIGUOUS:
    case FX_OP_RESHAPE:
    case FX_OP_NARROW:
    case FX_OP_FLATTEN_USING_INTS:
    case FX_OP_EXPAND_AS:
    case FX_OP_STACK:
    case FX_OP_MAX_OTHER:
    case FX_OP_MIN_OTHER:
    case FX_OP_VAR:
    case FX_OP_VAR_DIM:
    case FX_OP_STD:
    case FX_OP_STD_DIM:
    case FX_OP_SOFTMAX_INT:
    case FX_OP_LOG_SOFTMAX_INT:
    case FX_OP_MATMUL:
    case FX_OP_OUTER:
    case FX_OP_CHUNK:
    case FX_OP_SPLIT_SIZES:
    case FX_OP_SQUARE:
    case FX_OP_SQUARE_:
    case FX_OP_TYPE_AS:
    case FX_OP_ARGSORT:
    case FX_OP_ARGSORT_STABLE:
    case FX_OP_PAD:
    case FX_OP_CONV1D:
    case FX_OP_CONV2D:
    case FX_OP_CONV1D_PADDING:
    case FX_OP_CONV2D_PADDING:
    case FX_OP_BATCH_NORM:
    case FX_OP_NATIVE_BATCH_NORM:
    case FX_OP_REPEAT_INTERLEAVE_SELF_INT:
    case FX_OP_REPEAT_INTERLEAVE_SELF_TENSOR:
    case FX_OP_EINSUM: return true;
    default: return false;
    }
}

/* ---- dispatch support ----------------------------------------------------------------------- */

static bool iv_symbolic(const fx_ivalue *v, fx_shape_env **env) {
    if (v->tag == FX_IV_TENSOR && v->u.t->sym) {
        if (!*env) *env = v->u.t->sym->env;
        return true;
    }
    if (v->tag == FX_IV_SYMINT) {
        if (!*env) *env = fx_sym_env(v->u.si.expr);
        return true;
    }
    if (v->tag == FX_IV_LIST) {
        bool any = false;
        for (int i = 0; i < v->u.list.n; i++) any |= iv_symbolic(&v->u.list.items[i], env);
        return any;
    }
    return false;
}

fx_shape_env *fx_sym_args_env(const fx_opdef *op, const fx_ivalue *a) {
    fx_shape_env *env = NULL;
    for (int i = 0; i < op->schema.nargs; i++) iv_symbolic(&a[i], &env);
    return env;
}

/* Guards every symbolic value in v equal to its hint. */
static int specialize_si(fx_symint v, fx_err *err) {
    if (!v.expr) return FX_OK;
    bool eq;
    int rc = fx_si_cmp(FX_SYM_EQ, v, FX_SI(v.hint), &eq, err);
    if (rc) return rc;
    return eq ? FX_OK
              : fx_err_setf(err, FX_EINTERNAL, "a symbolic size disagrees with its example value");
}

static int specialize_iv(const fx_ivalue *v, fx_err *err) {
    int rc = FX_OK;
    if (v->tag == FX_IV_TENSOR && v->u.t->sym) {
        const fx_tensor *t = v->u.t;
        for (int d = 0; d < t->ndim && !rc; d++) {
            rc = specialize_si(fx_tensor_sym_size(t, d), err);
            if (!rc) rc = specialize_si(fx_tensor_sym_stride(t, d), err);
        }
        if (!rc) rc = specialize_si(fx_tensor_sym_offset(t), err);
    } else if (v->tag == FX_IV_SYMINT) {
        rc = specialize_si(v->u.si, err);
    } else if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n && !rc; i++) rc = specialize_iv(&v->u.list.items[i], err);
    }
    return rc;
}

int fx_sym_specialize_args(const fx_opdef *op, const fx_ivalue *a, fx_err *err) {
    int rc = FX_OK;
    for (int i = 0; i < op->schema.nargs && !rc; i++) rc = specialize_iv(&a[i], err);
    return rc;
}

/* v with SymInts replaced by their hints: lists are copied (items shallow, owned by `keep`). */
static int hint_iv(const fx_ivalue *v, fx_ivalue *out, void **keep, int *nkeep, fx_err *err) {
    *out = *v;
    if (v->tag == FX_IV_SYMINT) {
        *out = fx_iv_int(hint_now(v->u.si));
    } else if (v->tag == FX_IV_LIST) {
        bool any = false;
        for (int i = 0; i < v->u.list.n; i++) any |= v->u.list.items[i].tag == FX_IV_SYMINT;
        if (!any) return FX_OK;
        if (*nkeep >= FX_SCHEMA_MAX_ARGS) return fx_err_setf(err, FX_EINTERNAL, "too many lists");
        fx_ivalue *items = fx_malloc(sizeof *items * (size_t)v->u.list.n);
        if (!items) return fx_err_setf(err, FX_ENOMEM, "out of memory");
        keep[(*nkeep)++] = items;
        for (int i = 0; i < v->u.list.n; i++) {
            const fx_ivalue *it = &v->u.list.items[i];
            items[i] = it->tag == FX_IV_SYMINT ? fx_iv_int(hint_now(it->u.si)) : *it;
        }
        out->u.list.items = items;
    }
    return FX_OK;
}

int fx_sym_hint_args(const fx_opdef *op, const fx_ivalue *a, fx_ivalue *h, fx_sym_hints *keep,
                     fx_err *err) {
    keep->n = 0;
    int rc = FX_OK;
    for (int i = 0; i < op->schema.nargs && !rc; i++)
        rc = hint_iv(&a[i], &h[i], keep->lists, &keep->n, err);
    return rc;
}

void fx_sym_hints_free(fx_sym_hints *keep) {
    for (int i = 0; i < keep->n; i++) fx_free(keep->lists[i]);
    keep->n = 0;
}

int fx_sym_plan(const fx_opdef *op, fx_shape_env *env, const fx_ivalue *a, bool *use_rule,
                fx_err *err) {
    fx_shape_env_set_op(env, op->qualname);
    /* a SymInt where the schema says int / int[] (not SymInt) is specialized, as PyTorch's int
     * args; as a Scalar (or a wrapped number) it is a value the graph computes at run time */
    for (int i = 0; i < op->schema.nargs; i++) {
        const fx_arg_schema *as = &op->schema.args[i];
        if ((as->type == FX_TY_INT || as->type == FX_TY_INT_LIST) && !as->symint) {
            int rc = specialize_iv(&a[i], err);
            if (rc) return rc;
        }
    }
    *use_rule = (op->flags & FX_OPF_CUSTOM) ||
                ((op->flags & FX_OPF_COMPOSITE) ? composite_symbolic(op->id) : rule_of(op) != NULL);
    return FX_OK;
}

int fx_sym_apply_rule(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    sym_rule r = rule_of(ctx->op);
    int rc = r ? r(ctx, a, h, out) : SYM_SPECIALIZE;
    if (rc == SYM_SPECIALIZE) {
        /* outputs stay plain; the inputs become their example values */
        for (int i = 0; i < ctx->op->schema.nrets; i++) {
            fx_tensor *o = out_t(out, i);
            if (o && !is_input(ctx, a, o)) fx_tensor_drop_sym(o);
        }
        rc = fx_sym_specialize_args(ctx->op, a, ctx->err);
    }
    return rc;
}

/* ---- sym_size.int ---------------------------------------------------------------------------- */

/* sym_size.int(self, dim): self's size at dim — a SymInt while tracing a symbolic self, a plain
 * int when the interpreter runs it on a real tensor. */
int fx_meta_sym_size(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc = fx_kb_tensor_arg(ctx, a, 0, &self);
    if (rc) return rc;
    int d;
    if ((rc = fx_wrap_dim(a[1].u.i, self->ndim, &d, ctx->err))) return rc;
    if (self->ndim == 0)
        return fx_err_setf(ctx->err, FX_EINDEX,
                           "Dimension specified as 0 but tensor has no dimensions");
    out[0] = fx_iv_symint(SZ(self, d));
    return FX_OK;
}

/* ---- data-dependent values ------------------------------------------------------------------ */

/* _local_scalar_dense(self) -> Scalar: Tensor.item() as the graph records it. On a real tensor
 * its one element (bool, int or float by dtype; PyTorch's "a Tensor with 6 elements cannot be
 * converted to Scalar" otherwise). A meta tensor has no value: FX_EDATADEP (a trace makes an
 * unbacked symbol instead, fx_tracer_item). */
int fx_meta_local_scalar_dense(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *self;
    int rc = fx_kb_tensor_arg(ctx, a, 0, &self);
    if (rc) return rc;
    if (fx_tensor_numel(self) != 1)
        return fx_err_setf(ctx->err, FX_EARG,
                           "a Tensor with %lld elements cannot be converted to Scalar",
                           (long long)fx_tensor_numel(self));
    if (fx_tensor_is_meta(self)) {
        fx_err_kind(ctx->err, "data_dependent");
        return fx_err_setf(ctx->err, FX_EDATADEP,
                           "_local_scalar_dense of a meta tensor has no value");
    }
    fx_dtype dt = fx_tensor_dtype(self);
    if (dt == FX_DTYPE_BOOL)
        out[0] = fx_iv_bool(fx_tensor_flat_i64(self, 0) != 0);
    else if (fx_dtype_is_int(dt))
        out[0] = fx_iv_int(fx_tensor_flat_i64(self, 0));
    else
        out[0] = fx_iv_float(fx_tensor_flat_f64(self, 0));
    return FX_OK;
}

/* A Scalar argument as a plain integer (bools as 0 / 1); false when symbolic or not an integer. */
static bool plain_int(const fx_ivalue *v, int64_t *out) {
    if (v->tag == FX_IV_BOOL) return *out = v->u.b, true;
    if (v->tag == FX_IV_INT) return *out = v->u.i, true;
    return false;
}

/* _assert_scalar(self, assert_msg): a runtime assert of an exported program. A false value
 * raises assert_msg (PyTorch's RuntimeError, kind "runtime_assert"); a symbolic one (while
 * tracing) passes. */
int fx_meta_assert_scalar(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)out;
    int64_t v;
    if (!plain_int(&a[0], &v)) {
        if (a[0].tag == FX_IV_SYMINT) return FX_OK;
        if (a[0].tag == FX_IV_FLOAT) v = a[0].u.f != 0;
        else return fx_err_setf(ctx->err, FX_EARG, "_assert_scalar: expected a bool or integer");
    }
    if (v) return FX_OK;
    fx_err_kind(ctx->err, "runtime_assert");
    return fx_err_setf(ctx->err, FX_EARG, "%s",
                       a[1].tag == FX_IV_STR ? a[1].u.s : "Runtime assertion failed");
}

/* sym_constrain_range_for_size(size, *, min=None, max=None): size must lie in [min (default 0),
 * max (default int64 max)] — PyTorch's "Invalid value range for 7 between [0, 5]." — and a max
 * of 2 or less is refused ("Max value to constrain_range_for_size must be greater than 2. got:
 * 2"). A symbolic size (while tracing) passes. */
int fx_meta_sym_constrain_range_for_size(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)out;
    int64_t lo = a[1].tag == FX_IV_INT ? a[1].u.i : 0;
    int64_t hi = a[2].tag == FX_IV_INT ? a[2].u.i : INT64_MAX;
    if (a[2].tag == FX_IV_INT && hi <= 2)
        return fx_err_setf(ctx->err, FX_EARG,
                           "Max value to constrain_range_for_size must be greater than 2. got: "
                           "%lld",
                           (long long)hi);
    if (hi < lo) return fx_err_setf(ctx->err, FX_EARG, "Max must be greater than or equal to min");
    int64_t v;
    if (!plain_int(&a[0], &v)) {
        if (a[0].tag == FX_IV_SYMINT) return FX_OK;
        return fx_err_setf(ctx->err, FX_EARG,
                           "sym_constrain_range_for_size: expected an integer size");
    }
    if (v < lo || v > hi) {
        fx_err_kind(ctx->err, "runtime_assert");
        return fx_err_setf(ctx->err, FX_EARG, "Invalid value range for %lld between [%lld, %lld].",
                           (long long)v, (long long)lo, (long long)hi);
    }
    return FX_OK;
}

static int rule_none(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out) {
    (void)ctx, (void)a, (void)h, (void)out;
    return FX_OK;
}

/* Moved from fx_dispatch (core/dispatch.c), which reaches it through fx_dispatch_set_sym_hook:
 * meta and kernel see the hints, the op's rule gives the outputs symbolic shapes, the recorder
 * sees the SymInts. */
int fx_sym_dispatch(fx_opctx *oc, const fx_ivalue *a, fx_ivalue *out) {
    const fx_opdef *op = oc->op;
    fx_err *err = oc->err;
    fx_shape_env *senv = fx_sym_args_env(op, a);
    if (!senv) return fx_dispatch_run_op(oc, a, a, out, NULL);
    bool use_rule;
    fx_ivalue h[FX_SCHEMA_MAX_ARGS];
    fx_sym_hints keep;
    int rc = fx_sym_plan(op, senv, a, &use_rule, err);
    if (!rc && !use_rule) rc = fx_sym_specialize_args(op, a, err);
    if (!rc) rc = fx_sym_hint_args(op, a, h, &keep, err);
    if (rc) return rc;
    /* composites and custom ops (whose Lua impls run torch ops) see the SymInts themselves */
    const fx_ivalue *m = (op->flags & (FX_OPF_COMPOSITE | FX_OPF_CUSTOM)) && use_rule ? a : h;
    rc = fx_dispatch_run_op(oc, m, a, out, use_rule ? fx_sym_apply_rule : NULL);
    fx_sym_hints_free(&keep);
    fx_shape_env_set_op(senv, NULL);
    return rc;
}
