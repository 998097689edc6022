/* core/shape_env.c — the shape environment: symbols and their value ranges, replacements,
 * guards, deferred runtime asserts, and the one function that decides symbolic control flow.
 * Layer: core. Follows ShapeEnv of torch/fx/experimental/symbolic_shapes.py: evaluate_expr
 * (static evaluation from ranges and earlier guards first, then a guard under the example
 * values), _maybe_guard_rel (equalities become replacements, one-symbol inequalities narrow
 * ranges), GuardOnDataDependentSymNode for unbacked symbols, and the fx_symint slow paths. */
#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/symint_impl.h"

/* The example value fxdb gives an unbacked symbol for the concrete sizes of meta tensors
 * (torch's unbacked_symint_fallback); never used to decide anything. */
#define UNBACKED_FALLBACK 8192

/* ---- lifetime ------------------------------------------------------------------------------- */

int fx_shape_env_live;

fx_shape_env *fx_shape_env_new(fx_err *err) {
    fx_shape_env *env = fx_calloc(1, sizeof *env);
    if (!env) {
        fx_err_setf(err, FX_ENOMEM, "out of memory creating a shape environment");
        return NULL;
    }
    env->refcount = 1;
    fx_shape_env_live++;
    return env;
}

fx_shape_env *fx_shape_env_retain(fx_shape_env *env) {
    if (env) env->refcount++;
    return env;
}

static void free_guards(fx_guard *g, int n) {
    for (int i = 0; i < n; i++) {
        fx_free(g[i].loc);
        fx_free(g[i].line);
        fx_free(g[i].op);
    }
    fx_free(g);
}

void fx_shape_env_release(fx_shape_env *env) {
    if (!env || --env->refcount > 0) return;
    for (int i = 0; i < env->nsyms; i++) {
        fx_free(env->syms[i].source);
        fx_free(env->syms[i].loc);
    }
    fx_free(env->syms);
    fx_free(env->priv);
    free_guards(env->guards, env->nguards);
    free_guards(env->asserts, env->nasserts);
    fx_free(env->facts);
    fx_free(env->refs);
    fx_sym_free_all(env);
    fx_free(env);
    fx_shape_env_live--;
}

void fx_shape_env_set_where(fx_shape_env *env, fx_sym_where_fn fn, void *ud) {
    env->where = fn;
    env->where_ud = ud;
}

void fx_shape_env_unset_where(fx_shape_env *env, void *ud) {
    if (env && env->where_ud == ud) {
        env->where = NULL;
        env->where_ud = NULL;
    }
}

void fx_shape_env_set_on_guard(fx_shape_env *env, fx_guard_fn fn, void *ud) {
    env->on_guard = fn;
    env->on_guard_ud = ud;
}

void fx_shape_env_set_op(fx_shape_env *env, const char *op) {
    if (env) env->op = op;
}

/* ---- symbols -------------------------------------------------------------------------------- */

static fx_vr vr_meet(fx_vr a, fx_vr b) {
    fx_vr r = {a.lo > b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
    return r;
}

static void fmt_bound(char *buf, size_t cap, int64_t v) {
    if (v >= FX_INT_OO)
        snprintf(buf, cap, "int_oo");
    else if (v <= -FX_INT_OO)
        snprintf(buf, cap, "-int_oo");
    else
        snprintf(buf, cap, "%lld", (long long)v);
}

static int add_symbol(fx_shape_env *env, bool unbacked, int64_t hint, fx_vr vr, const char *source,
                      const fx_sym **out, fx_err *err) {
    if (env->nsyms == env->capsyms) {
        int cap = env->capsyms ? env->capsyms * 2 : 16;
        fx_symbol_info *s = fx_realloc(env->syms, sizeof *s * (size_t)cap);
        if (!s) return fx_err_setf(err, FX_ENOMEM, "out of memory creating a symbol");
        env->syms = s;
        fx_symbol_priv *p = fx_realloc(env->priv, sizeof *p * (size_t)cap);
        if (!p) return fx_err_setf(err, FX_ENOMEM, "out of memory creating a symbol");
        env->priv = p;
        env->capsyms = cap;
    }
    int64_t num = unbacked ? env->nunbacked : env->nbacked;
    const fx_sym *s = fx_sym_new_symbol(env, env->nsyms, num, unbacked);
    if (fx_sym_is_error(s)) return fx_err_setf(err, FX_ENOMEM, "out of memory creating a symbol");
    fx_symbol_info *info = &env->syms[env->nsyms];
    memset(info, 0, sizeof *info);
    info->sym = s;
    info->unbacked = unbacked;
    info->hint = hint;
    info->vr = vr;
    info->declared = vr;
    info->source = fx_strdup(source ? source : "");
    char loc[FX_ERR_SHORT] = "", line[FX_ERR_SHORT] = "";
    if (env->where) env->where(env->where_ud, loc, sizeof loc, line, sizeof line);
    info->loc = fx_strdup(loc);
    if (!info->source || !info->loc) {
        fx_free(info->source);
        fx_free(info->loc);
        return fx_err_setf(err, FX_ENOMEM, "out of memory creating a symbol");
    }
    env->priv[env->nsyms].size_like = false;
    env->priv[env->nsyms].hint_vr = (fx_vr){-FX_INT_OO, FX_INT_OO};
    env->nsyms++;
    if (unbacked)
        env->nunbacked++;
    else
        env->nbacked++;
    *out = s;
    return FX_OK;
}

int fx_shape_env_create_symbol(fx_shape_env *env, int64_t hint, fx_vr vr, bool is_size,
                               const char *source, const fx_sym **out, fx_err *err) {
    fx_vr declared = vr;
    if (is_size) vr = vr_meet(vr, (fx_vr){2, FX_INT_OO});
    if (hint < vr.lo || hint > vr.hi) {
        char lo[32], hi[32];
        fmt_bound(lo, sizeof lo, vr.lo);
        fmt_bound(hi, sizeof hi, vr.hi);
        fx_err_kind(err, "constraint_violation");
        return fx_err_setf(err, FX_EARG, "%lld not in range [%s, %s]", (long long)hint, lo, hi);
    }
    int rc = add_symbol(env, false, hint, vr, source, out, err);
    if (!rc) env->syms[env->nsyms - 1].declared = declared;
    return rc;
}

int fx_shape_env_create_unbacked(fx_shape_env *env, const char *source, const fx_sym **out,
                                 fx_err *err) {
    if (env->reuse_at < env->nreuse) {
        *out = env->reuse[env->reuse_at++];
        return FX_OK;
    }
    return add_symbol(env, true, UNBACKED_FALLBACK, (fx_vr){-FX_INT_OO, FX_INT_OO}, source, out,
                      err);
}

int fx_shape_env_reuse_unbacked(fx_shape_env *env, const fx_sym *const *syms, int n, fx_err *err) {
    env->nreuse = env->reuse_at = 0;
    if (n < 0 || n > FX_REUSE_CAP)
        return fx_err_setf(err, FX_EARG, "%d unbacked symbols to reuse (at most %d)", n,
                           FX_REUSE_CAP);
    for (int i = 0; i < n; i++) {
        const fx_symbol_info *si = fx_shape_env_symbol(env, syms[i]);
        if (!si || !si->unbacked)
            return fx_err_setf(err, FX_EARG, "reuse: not an unbacked symbol of this environment");
    }
    for (int i = 0; i < n; i++) env->reuse[i] = syms[i];
    env->nreuse = n;
    return FX_OK;
}

/* ---- restoring a saved program's environment (pt2/) ------------------------------------------- */

static int push_guard(fx_guard **arr, int *n, int *cap, const fx_sym *expr, fx_shape_env *env,
                      fx_err *err);
static int add_fact(fx_shape_env *env, const fx_sym *c, fx_err *err);

static void mark_if_same(void *ud, const fx_sym *s) {
    const void **pair = ud;
    if (s == pair[0]) *(bool *)pair[1] = true;
}

int fx_shape_env_restore_symbol(fx_shape_env *env, const fx_symbol_restore *r, const fx_sym **out,
                                fx_err *err) {
    if (r->num < 0 || r->num > INT32_MAX)
        return fx_err_setf(err, FX_EARG, "symbol number %lld out of range", (long long)r->num);
    for (int i = 0; i < env->nsyms; i++)
        if (env->syms[i].unbacked == r->unbacked && env->syms[i].sym->num == r->num)
            return fx_err_setf(err, FX_EARG, "symbol %c%lld is defined twice",
                               r->unbacked ? 'u' : 's', (long long)r->num);
    if (r->vr.lo > r->vr.hi)
        return fx_err_setf(err, FX_EARG, "symbol %c%lld has the empty range [%lld, %lld]",
                           r->unbacked ? 'u' : 's', (long long)r->num, (long long)r->vr.lo,
                           (long long)r->vr.hi);
    /* add_symbol numbers from the counter: point it at the wanted number, then move it past
     * every number used so far */
    int *ctr = r->unbacked ? &env->nunbacked : &env->nbacked;
    int saved = *ctr;
    *ctr = (int)r->num;
    const fx_sym *where_sym = NULL;
    fx_sym_where_fn where = env->where;
    env->where = NULL;
    int rc = add_symbol(env, r->unbacked, r->hint, r->vr, r->source, &where_sym, err);
    env->where = where;
    *ctr = saved > (int)r->num + 1 ? saved : (int)r->num + 1;
    if (rc) return rc;
    fx_symbol_info *info = &env->syms[env->nsyms - 1];
    info->declared = r->declared;
    if (r->loc && *r->loc) {
        char *l = fx_strdup(r->loc);
        if (!l) return fx_err_setf(err, FX_ENOMEM, "out of memory creating a symbol");
        fx_free(info->loc);
        info->loc = l;
    }
    env->priv[env->nsyms - 1].size_like = r->size_like;
    env->priv[env->nsyms - 1].hint_vr = (fx_vr){-FX_INT_OO, FX_INT_OO};
    *out = where_sym;
    return FX_OK;
}

int fx_shape_env_restore_replacement(const fx_sym *s, const fx_sym *repl, fx_err *err) {
    if (fx_sym_is_error(s) || s->kind != FX_SYM_SYMBOL || fx_sym_is_error(repl) ||
        repl->env != s->env)
        return fx_err_setf(err, FX_EARG, "a replacement needs a symbol and an expression of its "
                                         "environment");
    /* a replacement must not lead back to its symbol (simplify applies them transitively) */
    const fx_sym *r = fx_shape_env_simplify(s->env, repl);
    bool cyc = false;
    fx_sym_foreach_symbol(r, mark_if_same, &(const void *[2]){s, &cyc});
    if (cyc) {
        char a[64];
        return fx_err_setf(err, FX_EARG, "the replacement of %s refers back to it",
                           fx_sym_str(s, a, sizeof a));
    }
    s->env->syms[s->v].replacement = repl;
    return FX_OK;
}

int fx_shape_env_restore_guard(fx_shape_env *env, bool runtime_assert, const fx_sym *expr,
                               const char *loc, const char *line, const char *op, fx_err *err) {
    if (fx_sym_is_error(expr) || expr->env != env || expr->kind < FX_SYM_BOOL ||
        (expr->kind > FX_SYM_BOOL && expr->kind < FX_SYM_EQ))
        return fx_err_setf(err, FX_EARG, "a guard must be a relation of its environment");
    fx_guard **arr = runtime_assert ? &env->asserts : &env->guards;
    int *n = runtime_assert ? &env->nasserts : &env->nguards;
    int *cap = runtime_assert ? &env->capasserts : &env->capguards;
    fx_sym_where_fn where = env->where;
    const char *cur = env->op;
    env->where = NULL;
    env->op = NULL;
    int rc = push_guard(arr, n, cap, expr, env, err);
    env->where = where;
    env->op = cur;
    if (rc) return rc;
    fx_guard *g = &(*arr)[*n - 1];
    const char *src[3] = {loc, line, op};
    char **dst[3] = {&g->loc, &g->line, &g->op};
    for (int i = 0; i < 3; i++) {
        if (!src[i] || !*src[i]) continue;
        char *c = fx_strdup(src[i]);
        if (!c) return fx_err_setf(err, FX_ENOMEM, "out of memory recording a guard");
        fx_free(*dst[i]);
        *dst[i] = c;
    }
    return add_fact(env, expr, err);
}

int fx_shape_env_restore_refinement(fx_shape_env *env, const fx_sym_refinement *r, fx_err *err) {
    int nrec = r->is_assert ? env->nasserts : env->nguards;
    if (fx_sym_is_error(r->sym) || r->sym->env != env || r->sym->kind != FX_SYM_SYMBOL ||
        r->index < 0 || r->index >= nrec ||
        (r->replacement && (fx_sym_is_error(r->replacement) || r->replacement->env != env)))
        return fx_err_setf(err, FX_EARG, "a refinement needs a symbol of the environment and the "
                                         "number of a recorded guard or assert");
    if (env->nrefs == env->caprefs) {
        int cap = env->caprefs ? env->caprefs * 2 : 16;
        fx_sym_refinement *v = fx_realloc(env->refs, sizeof *v * (size_t)cap);
        if (!v) return fx_err_setf(err, FX_ENOMEM, "out of memory recording a guard");
        env->refs = v;
        env->caprefs = cap;
    }
    env->refs[env->nrefs++] = *r;
    return FX_OK;
}

const fx_symbol_info *fx_shape_env_symbols(const fx_shape_env *env, int *n) {
    *n = env->nsyms;
    return env->syms;
}

const fx_symbol_info *fx_shape_env_symbol(const fx_shape_env *env, const fx_sym *s) {
    if (fx_sym_is_error(s) || s->env != env || s->kind != FX_SYM_SYMBOL) return NULL;
    return &env->syms[s->v];
}

const fx_guard *fx_shape_env_guards(const fx_shape_env *env, int *n) {
    *n = env->nguards;
    return env->guards;
}

const fx_guard *fx_shape_env_runtime_asserts(const fx_shape_env *env, int *n) {
    *n = env->nasserts;
    return env->asserts;
}

const fx_sym_refinement *fx_shape_env_refinements(const fx_shape_env *env, int *n) {
    *n = env->nrefs;
    return env->refs;
}

bool fx_shape_env_is_size_like(const fx_shape_env *env, const fx_sym *s) {
    const fx_symbol_info *i = fx_shape_env_symbol(env, s);
    return i && env->priv[s->v].size_like;
}

/* ---- pending comparisons (torch._check's argument) -------------------------------------------- */

int fx_shape_env_add_pending(fx_shape_env *env, const fx_sym *cond, const fx_err *why,
                             fx_err *err) {
    if (env->npending == FX_PENDING_CAP) {
        if (err && why) *err = *why;
        return why ? why->code : FX_EDATADEP;
    }
    bool first_unbacked = true;
    for (int i = 0; i < env->npending; i++) first_unbacked &= env->pending_backed[i];
    if (first_unbacked && why) env->pending_err = *why;
    env->pending_backed[env->npending] = false;
    env->pending[env->npending++] = cond;
    (void)err;
    return FX_OK;
}

int fx_shape_env_add_pending_backed(fx_shape_env *env, const fx_sym *cond, fx_err *err) {
    int rc = env->npending == FX_PENDING_CAP ? fx_shape_env_check_pending(env, err) : FX_OK;
    if (rc) return rc;
    env->pending_backed[env->npending] = true;
    env->pending[env->npending++] = cond;
    return FX_OK;
}

int fx_shape_env_check_pending(fx_shape_env *env, fx_err *err) {
    if (!env || env->npending == 0) return FX_OK;
    int n = env->npending, rc = FX_OK;
    bool unbacked = false;
    env->npending = 0;
    for (int i = 0; i < n && !rc; i++) {
        bool v;
        if (env->pending_backed[i]) rc = fx_shape_env_evaluate(env->pending[i], &v, err);
        else unbacked = true;
    }
    if (rc || !unbacked) return rc;
    if (err) *err = env->pending_err;
    return env->pending_err.code ? env->pending_err.code : FX_EDATADEP;
}

int fx_shape_env_pending_count(const fx_shape_env *env) { return env ? env->npending : 0; }

const fx_err *fx_shape_env_pending_why(const fx_shape_env *env) { return &env->pending_err; }

int fx_shape_env_take_pending(fx_shape_env *env, const fx_sym **out, bool *backed, int max) {
    if (!env) return 0;
    int n = env->npending < max ? env->npending : max;
    for (int i = 0; i < n; i++) {
        out[i] = env->pending[i];
        if (backed) backed[i] = env->pending_backed[i];
    }
    env->npending = 0;
    return n;
}

/* ---- replacements and ranges ---------------------------------------------------------------- */

static const fx_sym *repl_fn(void *ud, const fx_sym *s) {
    fx_shape_env *env = ud;
    return env->syms[s->v].replacement;
}

static bool has_replaced(const fx_shape_env *env, const fx_sym *e) {
    if (e->kind == FX_SYM_SYMBOL) return env->syms[e->v].replacement != NULL;
    for (int i = 0; i < e->n; i++)
        if (has_replaced(env, e->args[i])) return true;
    return false;
}

const fx_sym *fx_shape_env_simplify(fx_shape_env *env, const fx_sym *e) {
    /* replacements never point back at a replaced symbol (set_replacement substitutes first),
     * so one pass suffices; the loop guards against a chain anyway */
    for (int i = 0; i < 8 && !fx_sym_is_error(e) && has_replaced(env, e); i++)
        e = fx_sym_subst(e, repl_fn, env);
    return e;
}

static int64_t sat_add(int64_t a, int64_t b) {
    if (a >= FX_INT_OO || b >= FX_INT_OO) return FX_INT_OO;
    if (a <= -FX_INT_OO || b <= -FX_INT_OO) return -FX_INT_OO;
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return a > 0 ? FX_INT_OO : -FX_INT_OO;
    if (r >= FX_INT_OO) return FX_INT_OO;
    if (r <= -FX_INT_OO) return -FX_INT_OO;
    return r;
}

static int64_t sat_mul(int64_t a, int64_t b) {
    if (a == 0 || b == 0) return 0;
    bool neg = (a < 0) != (b < 0);
    bool inf = a >= FX_INT_OO || a <= -FX_INT_OO || b >= FX_INT_OO || b <= -FX_INT_OO;
    int64_t r;
    if (inf || __builtin_mul_overflow(a, b, &r) || r >= FX_INT_OO || r <= -FX_INT_OO)
        return neg ? -FX_INT_OO : FX_INT_OO;
    return r;
}

static fx_vr vr_mul(fx_vr a, fx_vr b) {
    int64_t p[4] = {sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo),
                    sat_mul(a.hi, b.hi)};
    fx_vr r = {p[0], p[0]};
    for (int i = 1; i < 4; i++) {
        if (p[i] < r.lo) r.lo = p[i];
        if (p[i] > r.hi) r.hi = p[i];
    }
    return r;
}

static int64_t floordiv_sat(int64_t a, int64_t d) { /* d != 0, finite */
    if (a >= FX_INT_OO) return d > 0 ? FX_INT_OO : -FX_INT_OO;
    if (a <= -FX_INT_OO) return d > 0 ? -FX_INT_OO : FX_INT_OO;
    int64_t q = a / d;
    if ((a % d != 0) && ((a < 0) != (d < 0))) q--;
    return q;
}

static const fx_vr VR_ALL = {-FX_INT_OO, FX_INT_OO};

static fx_vr bound(fx_shape_env *env, const fx_sym *e) {
    switch (e->kind) {
    case FX_SYM_CONST:
    case FX_SYM_BOOL: return (fx_vr){e->v, e->v};
    case FX_SYM_SYMBOL: return env->syms[e->v].vr;
    case FX_SYM_ADD: {
        fx_vr r = {e->v, e->v};
        for (int i = 0; i < e->n; i++) {
            fx_vr t = bound(env, e->args[i]);
            r.lo = sat_add(r.lo, t.lo);
            r.hi = sat_add(r.hi, t.hi);
        }
        return r;
    }
    case FX_SYM_MUL: {
        fx_vr r = {e->v, e->v};
        for (int i = 0; i < e->n; i++) {
            fx_vr f = bound(env, e->args[i]);
            fx_vr p = f;
            for (int64_t k = 1; k < e->exps[i]; k++) p = vr_mul(p, f);
            if (e->exps[i] % 2 == 0 && p.lo < 0) p.lo = 0; /* even powers are >= 0 */
            r = vr_mul(r, p);
        }
        return r;
    }
    case FX_SYM_FLOORDIV: {
        fx_vr a = bound(env, e->args[0]), b = bound(env, e->args[1]);
        if (b.lo == b.hi && b.lo != 0 && b.lo > -FX_INT_OO && b.lo < FX_INT_OO) {
            int64_t x = floordiv_sat(a.lo, b.lo), y = floordiv_sat(a.hi, b.lo);
            return b.lo > 0 ? (fx_vr){x, y} : (fx_vr){y, x};
        }
        if (b.lo > 0 && a.lo >= 0) {
            int64_t hi = b.lo >= FX_INT_OO ? 0 : floordiv_sat(a.hi, b.lo);
            int64_t lo = b.hi >= FX_INT_OO ? 0 : floordiv_sat(a.lo, b.hi);
            return (fx_vr){lo, hi};
        }
        return VR_ALL;
    }
    case FX_SYM_MOD: {
        fx_vr a = bound(env, e->args[0]), b = bound(env, e->args[1]);
        if (b.lo > 0) {
            if (a.lo >= 0 && a.hi < b.lo) return a;
            return (fx_vr){0, b.hi >= FX_INT_OO ? FX_INT_OO : b.hi - 1};
        }
        return VR_ALL;
    }
    case FX_SYM_MAX:
    case FX_SYM_MIN: {
        fx_vr r = bound(env, e->args[0]);
        for (int i = 1; i < e->n; i++) {
            fx_vr t = bound(env, e->args[i]);
            if (e->kind == FX_SYM_MAX) {
                if (t.lo > r.lo) r.lo = t.lo;
                if (t.hi > r.hi) r.hi = t.hi;
            } else {
                if (t.lo < r.lo) r.lo = t.lo;
                if (t.hi < r.hi) r.hi = t.hi;
            }
        }
        return r;
    }
    default: return (fx_vr){0, 1};
    }
}

fx_vr fx_shape_env_bound(fx_shape_env *env, const fx_sym *e) {
    if (fx_sym_is_error(e)) return VR_ALL;
    return bound(env, fx_shape_env_simplify(env, e));
}

static int hint_of(void *ud, const fx_sym *s, int64_t *v, fx_err *err) {
    fx_shape_env *env = ud;
    const fx_symbol_info *i = &env->syms[s->v];
    if (i->unbacked) {
        char name[32];
        fx_err_kind(err, "data_dependent");
        return fx_err_setf(err, FX_EDATADEP, "%s has no example value (it is data-dependent)",
                           fx_sym_str(s, name, sizeof name));
    }
    *v = i->hint;
    return FX_OK;
}

/* The value meta tensors take for a symbol: a backed one's example value; for an unbacked one
 * the fallback 8192 moved into its current range (u0 in [0, 5] is 5), and into what the
 * relations assumed over it and backed symbols leave at their example values (hint_vr), so that
 * the concrete checks of meta functions agree with what torch._check told export. */
static int fallback_of(void *ud, const fx_sym *s, int64_t *v, fx_err *err) {
    (void)err;
    fx_shape_env *env = ud;
    const fx_symbol_info *i = &env->syms[s->v];
    *v = i->hint;
    if (i->unbacked) {
        fx_vr r = vr_meet(i->vr, env->priv[s->v].hint_vr);
        if (r.lo > r.hi) r = i->vr;
        if (*v > r.hi) *v = r.hi;
        if (*v < r.lo) *v = r.lo;
    }
    return FX_OK;
}

int fx_shape_env_hint(fx_shape_env *env, const fx_sym *e, int64_t *out, fx_err *err) {
    return fx_sym_eval(e, hint_of, env, out, err);
}

/* ---- deciding relations --------------------------------------------------------------------- */

static bool is_fact(const fx_shape_env *env, const fx_sym *c) {
    for (int i = 0; i < env->nfacts; i++)
        if (env->facts[i] == c) return true;
    return false;
}

/* The answer to relation c from facts and ranges: 1 true, 0 false, -1 unknown. With
 * `oblivious`, unbacked size-like symbols count as >= 2 (guard_size_oblivious). */
static int static_eval(fx_shape_env *env, const fx_sym *c, bool oblivious) {
    if (c->kind == FX_SYM_BOOL) return (int)c->v;
    if (c->kind < FX_SYM_EQ) return -1;
    if (is_fact(env, c)) return 1;
    const fx_sym *nc = fx_sym_not(c);
    if (!fx_sym_is_error(nc) && nc->kind == FX_SYM_BOOL) return !nc->v;
    if (!fx_sym_is_error(nc) && is_fact(env, nc)) return 0;
    const fx_sym *d = fx_sym_sub(c->args[0], c->args[1]);
    if (fx_sym_is_error(d)) return -1;
    fx_vr saved[64];
    int nsaved = 0;
    if (oblivious) {
        for (int i = 0; i < env->nsyms && nsaved < 64; i++) {
            saved[nsaved++] = env->syms[i].vr;
            if (env->priv[i].size_like && env->syms[i].vr.lo < 2) env->syms[i].vr.lo = 2;
        }
    }
    fx_vr r = bound(env, d);
    for (int i = 0; i < nsaved; i++) env->syms[i].vr = saved[i];
    switch (c->kind) {
    case FX_SYM_EQ:
        if (r.lo == 0 && r.hi == 0) return 1;
        return (r.lo > 0 || r.hi < 0) ? 0 : -1;
    case FX_SYM_NE:
        if (r.lo == 0 && r.hi == 0) return 0;
        return (r.lo > 0 || r.hi < 0) ? 1 : -1;
    case FX_SYM_LT: return r.hi < 0 ? 1 : r.lo >= 0 ? 0 : -1;
    case FX_SYM_LE: return r.hi <= 0 ? 1 : r.lo > 0 ? 0 : -1;
    case FX_SYM_GT: return r.lo > 0 ? 1 : r.hi <= 0 ? 0 : -1;
    default: return r.lo >= 0 ? 1 : r.hi < 0 ? 0 : -1;
    }
}

void fx_shape_env_statically_known(const fx_sym *cond, bool *known, bool *out) {
    *known = false;
    *out = false;
    if (fx_sym_is_error(cond)) return;
    fx_shape_env *env = cond->env;
    int r = static_eval(env, fx_shape_env_simplify(env, cond), false);
    if (r >= 0) {
        *known = true;
        *out = r == 1;
    }
}

static int push_guard(fx_guard **arr, int *n, int *cap, const fx_sym *expr, fx_shape_env *env,
                      fx_err *err) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        fx_guard *g = fx_realloc(*arr, sizeof *g * (size_t)nc);
        if (!g) return fx_err_setf(err, FX_ENOMEM, "out of memory recording a guard");
        *arr = g;
        *cap = nc;
    }
    char loc[FX_ERR_SHORT] = "", line[FX_ERR_SHORT] = "";
    if (env->where) env->where(env->where_ud, loc, sizeof loc, line, sizeof line);
    fx_guard *g = &(*arr)[*n];
    g->expr = expr;
    g->loc = fx_strdup(loc);
    g->line = fx_strdup(line);
    g->op = fx_strdup(env->op ? env->op : "");
    if (!g->loc || !g->line || !g->op) {
        fx_free(g->loc);
        fx_free(g->line);
        fx_free(g->op);
        return fx_err_setf(err, FX_ENOMEM, "out of memory recording a guard");
    }
    (*n)++;
    return FX_OK;
}

static int add_fact(fx_shape_env *env, const fx_sym *c, fx_err *err) {
    if (is_fact(env, c)) return FX_OK;
    if (env->nfacts == env->capfacts) {
        int nc = env->capfacts ? env->capfacts * 2 : 16;
        const fx_sym **f = fx_realloc(env->facts, sizeof *f * (size_t)nc);
        if (!f) return fx_err_setf(err, FX_ENOMEM, "out of memory recording a guard");
        env->facts = f;
        env->capfacts = nc;
    }
    env->facts[env->nfacts++] = c;
    return FX_OK;
}

/* Where in d (a canonical expression) symbol s occurs: returns its coefficient when d is
 * linear in s (s only as a bare term c*s), 0 when s occurs otherwise or not at all. */
static int64_t linear_coeff(const fx_sym *d, const fx_sym *s) {
    const fx_sym *terms[1] = {d};
    int n = 1;
    const fx_sym *const *t = terms;
    if (d->kind == FX_SYM_ADD) {
        t = d->args;
        n = d->n;
    }
    int64_t c = 0;
    for (int i = 0; i < n; i++) {
        const fx_sym *x = t[i];
        if (x == s) {
            c = 1;
        } else if (x->kind == FX_SYM_MUL && x->n == 1 && x->args[0] == s && x->exps[0] == 1) {
            c = x->v;
        } else {
            /* any other occurrence of s makes it non-linear */
            const fx_sym *stack[64];
            int sp = 0;
            stack[sp++] = x;
            while (sp) {
                const fx_sym *y = stack[--sp];
                if (y == s) return 0;
                for (int k = 0; k < y->n && sp < 64; k++) stack[sp++] = y->args[k];
            }
        }
    }
    return c;
}

static int64_t ceildiv(int64_t a, int64_t b) { return -floordiv_sat(-a, b); }

/* vr narrowed by a * s <= b (a != 0); an unbounded b narrows nothing. */
static void narrow(fx_vr *vr, int64_t a, int64_t b) {
    if (b >= FX_INT_OO) return;
    if (a > 0) {
        int64_t hi = floordiv_sat(b, a);
        if (hi < vr->hi) vr->hi = hi;
    } else {
        int64_t lo = ceildiv(b, a);
        if (lo > vr->lo) vr->lo = lo;
    }
}

/* bound(env, e) over the sizes a program accepts at run time: a backed size symbol whose lower
 * bound only the 0/1 specialization raised to 2 counts from its declared lower bound (the
 * range constraint the input checks use). */
static fx_vr bound_accepted(fx_shape_env *env, const fx_sym *e) {
    enum { SAVED = 64 };
    int idx[SAVED];
    int64_t lo[SAVED];
    int n = 0;
    for (int i = 0; i < env->nsyms && n < SAVED; i++) {
        fx_symbol_info *info = &env->syms[i];
        if (info->unbacked || info->vr.lo != 2 || info->declared.lo >= 2) continue;
        idx[n] = i;
        lo[n++] = info->vr.lo;
        info->vr.lo = info->declared.lo < 0 ? 0 : info->declared.lo;
    }
    fx_vr r = bound(env, e);
    for (int i = 0; i < n; i++) env->syms[idx[i]].vr.lo = lo[i];
    return r;
}

/* What a relation that now holds teaches: Eq gives a replacement, an inequality over one
 * symbol narrows its range (ShapeEnv._maybe_guard_rel / _refine_ranges). */
static void learn(fx_shape_env *env, const fx_sym *c) {
    if (c->kind < FX_SYM_EQ) return;
    const fx_sym *d = fx_sym_sub(c->args[0], c->args[1]);
    if (fx_sym_is_error(d) || d->kind == FX_SYM_CONST) return;
    /* candidate symbols, newest first */
    const fx_sym *cand[64];
    int nc = 0;
    for (int i = env->nsyms - 1; i >= 0 && nc < 64; i--) {
        const fx_sym *s = env->syms[i].sym;
        if (env->syms[i].replacement) continue;
        if (linear_coeff(d, s) != 0) cand[nc++] = s;
    }
    if (c->kind == FX_SYM_EQ) {
        /* prefer replacing an unbacked symbol, then the newest; coefficient must be +-1 */
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < nc; i++) {
                const fx_sym *s = cand[i];
                if (pass == 0 && !s->unbacked) continue;
                int64_t k = linear_coeff(d, s);
                if (k != 1 && k != -1) continue;
                /* d = k*s + rest = 0  =>  s = -rest / k */
                const fx_sym *rest = fx_sym_sub(d, k == 1 ? s : fx_sym_neg(s));
                const fx_sym *val = k == 1 ? fx_sym_neg(rest) : rest;
                if (fx_sym_is_error(val)) return;
                fx_symbol_info *info = &env->syms[s->v];
                fx_vr vr = info->vr;
                if (val->kind == FX_SYM_SYMBOL) {
                    fx_symbol_info *o = &env->syms[val->v];
                    o->vr = vr_meet(o->vr, vr);
                    if (env->priv[s->v].size_like) env->priv[val->v].size_like = true;
                } else if (val->kind == FX_SYM_CONST) {
                    info->vr = (fx_vr){val->v, val->v};
                }
                info->replacement = val;
                /* earlier replacements that mention s now point through val */
                for (int j = 0; j < env->nsyms; j++)
                    if (env->syms[j].replacement && j != (int)s->v)
                        env->syms[j].replacement =
                            fx_shape_env_simplify(env, env->syms[j].replacement);
                return;
            }
        }
        /* k*s + c == 0 over one symbol: s is the constant -c/k */
        if (nc == 1) {
            const fx_sym *s = cand[0];
            int64_t k = linear_coeff(d, s);
            const fx_sym *rest = fx_sym_sub(d, fx_sym_mul(fx_sym_int(env, k), s));
            if (!fx_sym_is_error(rest) && rest->kind == FX_SYM_CONST && k != 0 &&
                rest->v % k == 0) {
                int64_t v = -rest->v / k;
                fx_symbol_info *info = &env->syms[s->v];
                info->replacement = fx_sym_int(env, v);
                info->vr = (fx_vr){v, v};
                for (int j = 0; j < env->nsyms; j++)
                    if (env->syms[j].replacement && j != (int)s->v)
                        env->syms[j].replacement =
                            fx_shape_env_simplify(env, env->syms[j].replacement);
            }
        }
        return;
    }
    /* every relation as e <= 0 with e = sign * d + adj */
    int64_t sg = 1, adj = 0;
    switch (c->kind) {
    case FX_SYM_LT: adj = 1; break;          /* d < 0  ->  d + 1 <= 0 */
    case FX_SYM_LE: break;                   /* d <= 0 */
    case FX_SYM_GT: sg = -1, adj = 1; break; /* d > 0  -> -d + 1 <= 0 */
    case FX_SYM_GE: sg = -1; break;          /* d >= 0 -> -d <= 0 */
    case FX_SYM_NE: break;
    default: return;
    }
    for (int i = 0; i < nc; i++) {
        const fx_sym *s = cand[i];
        /* over several symbols only the unbacked ones are narrowed (torch._check(u0 + s0 <= 16)
         * gives u0 <= 14): a backed size keeps the range its Dim declared */
        if (nc > 1 && (!s->unbacked || c->kind == FX_SYM_NE)) continue;
        int64_t k = linear_coeff(d, s);
        const fx_sym *rest = fx_sym_sub(d, fx_sym_mul(fx_sym_int(env, k), s));
        if (fx_sym_is_error(rest)) return;
        fx_vr *vr = &env->syms[s->v].vr;
        if (c->kind == FX_SYM_NE) {
            if (rest->kind != FX_SYM_CONST || (k != 1 && k != -1)) return;
            int64_t v = k == 1 ? -rest->v : rest->v;
            if (v == vr->lo)
                vr->lo++;
            else if (v == vr->hi)
                vr->hi--;
            return;
        }
        /* (sg*k) * s <= -(sg*rest + adj) <= -(min(sg*rest) + adj) (ShapeEnv._refine_ranges:
         * the bound that holds for every value of the other symbols) — every value the program
         * accepts, so a backed size counts from its Dim's declared minimum, not from the 2 of
         * the 0/1 specialization: u0 + s0 <= 32 gives u0 <= 32, not 30, and the program keeps
         * running at s0 = 1, u0 = 31 (PyTorch's ranges would refuse that call) */
        fx_vr rb = bound_accepted(env, rest);
        int64_t rmin = sg > 0 ? rb.lo : (rb.hi == FX_INT_OO ? -FX_INT_OO : -rb.hi);
        int64_t a = sg * k;
        narrow(vr, a, -sat_add(rmin, adj));
        /* at the other symbols' example values (and stand-ins) the bound is tighter */
        int64_t rv;
        fx_err e;
        fx_err_clear(&e);
        if (nc > 1 && fx_sym_eval(rest, fallback_of, env, &rv, &e) == FX_OK)
            narrow(&env->priv[s->v].hint_vr, a, -sat_add(sg * rv, adj));
    }
}

/* learn(env, c) for guard or assert `index`, keeping a refinement record for every symbol whose
 * range or replacement it changed. FX_ENOMEM when a record cannot be kept. */
static int learn_recorded(fx_shape_env *env, const fx_sym *c, int index, bool is_assert,
                          fx_err *err) {
    enum { SMALL = 16 };
    fx_vr vr_small[SMALL];
    const fx_sym *rp_small[SMALL];
    int n = env->nsyms;
    fx_vr *vr = vr_small;
    const fx_sym **rp = rp_small;
    if (n > SMALL) {
        vr = fx_malloc(sizeof *vr * (size_t)n);
        rp = fx_malloc(sizeof *rp * (size_t)n);
        if (!vr || !rp) {
            fx_free(vr);
            fx_free(rp);
            return fx_err_setf(err, FX_ENOMEM, "out of memory recording a guard");
        }
    }
    for (int i = 0; i < n; i++) {
        vr[i] = env->syms[i].vr;
        rp[i] = env->syms[i].replacement;
    }
    learn(env, c);
    int rc = FX_OK;
    for (int i = 0; i < n && rc == FX_OK; i++) {
        const fx_symbol_info *info = &env->syms[i];
        bool new_repl = rp[i] == NULL && info->replacement != NULL;
        if (!new_repl && info->vr.lo == vr[i].lo && info->vr.hi == vr[i].hi) continue;
        if (env->nrefs == env->caprefs) {
            int cap = env->caprefs ? env->caprefs * 2 : 16;
            fx_sym_refinement *r = fx_realloc(env->refs, sizeof *r * (size_t)cap);
            if (!r) {
                rc = fx_err_setf(err, FX_ENOMEM, "out of memory recording a guard");
                break;
            }
            env->refs = r;
            env->caprefs = cap;
        }
        env->refs[env->nrefs++] = (fx_sym_refinement){info->sym, index, is_assert, vr[i],
                                                      info->vr,
                                                      new_repl ? info->replacement : NULL};
    }
    if (vr != vr_small) {
        fx_free(vr);
        fx_free(rp);
    }
    return rc;
}

static void size_like_list(fx_shape_env *env, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < env->nsyms; i++) {
        if (!env->priv[i].size_like) continue;
        char n[32];
        fx_sym_str(env->syms[i].sym, n, sizeof n);
        len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s", len ? ", " : "", n);
    }
    if (!buf[0]) snprintf(buf, cap, "none");
}

int fx_shape_env_evaluate(const fx_sym *cond, bool *out, fx_err *err) {
    if (fx_sym_is_error(cond))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    fx_shape_env *env = cond->env;
    const fx_sym *c = fx_shape_env_simplify(env, cond);
    if (fx_sym_is_error(c))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    int r = static_eval(env, c, false);
    if (r >= 0) {
        *out = r == 1;
        return FX_OK;
    }
    if (c->has_unbacked) {
        char e1[256], e2[256], sl[256];
        fx_sym_str(c, e1, sizeof e1);
        fx_sym_str(cond, e2, sizeof e2);
        size_like_list(env, sl, sizeof sl);
        char loc[FX_ERR_SHORT] = "", line[FX_ERR_SHORT] = "";
        if (env->where) env->where(env->where_ud, loc, sizeof loc, line, sizeof line);
        fx_err_setf(err, FX_EDATADEP,
                    "Could not guard on data-dependent expression %s (unhinted: %s).  "
                    "(Size-like symbols: %s)",
                    e1, e2, sl);
        fx_err_kind(err, "data_dependent");
        fx_err_hintf(err, "tell export what it cannot infer with torch._check(...) / "
                          "torch._check_is_size(...) before this line, or branch with "
                          "torch.cond");
        if (loc[0] && err) {
            snprintf(err->loc, sizeof err->loc, "%s", loc);
            snprintf(err->source, sizeof err->source, "%s", line);
        }
        return FX_EDATADEP;
    }
    int64_t v;
    int rc = fx_sym_eval(c, hint_of, env, &v, err);
    if (rc) return rc;
    const fx_sym *g = v ? c : fx_sym_not(c);
    if (fx_sym_is_error(g))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    if ((rc = push_guard(&env->guards, &env->nguards, &env->capguards, g, env, err))) return rc;
    if ((rc = add_fact(env, g, err))) return rc;
    if ((rc = learn_recorded(env, g, env->nguards - 1, false, err))) return rc;
    if (env->on_guard) env->on_guard(env->on_guard_ud, env->nguards - 1, false);
    *out = v != 0;
    return FX_OK;
}

int fx_shape_env_assume(const fx_sym *cond, fx_err *err) {
    if (fx_sym_is_error(cond))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    fx_shape_env *env = cond->env;
    const fx_sym *c = fx_shape_env_simplify(env, cond);
    int r = static_eval(env, c, false);
    if (r == 1) return FX_OK;
    if (r == 0) {
        char e[256];
        fx_sym_str(cond, e, sizeof e);
        fx_err_kind(err, "constraint_violation");
        return fx_err_setf(err, FX_EARG, "%s is always False", e);
    }
    int rc = push_guard(&env->asserts, &env->nasserts, &env->capasserts, c, env, err);
    if (rc) return rc;
    if ((rc = add_fact(env, c, err))) return rc;
    if ((rc = learn_recorded(env, c, env->nasserts - 1, true, err))) return rc;
    if (env->on_guard) env->on_guard(env->on_guard_ud, env->nasserts - 1, true);
    return FX_OK;
}

int fx_shape_env_mark_size_like(const fx_sym *u, fx_err *err) {
    if (fx_sym_is_error(u) || u->kind != FX_SYM_SYMBOL)
        return fx_err_setf(err, FX_EARG, "torch._check_is_size expects a symbolic integer");
    fx_shape_env *env = u->env;
    env->priv[u->v].size_like = true;
    fx_vr *vr = &env->syms[u->v].vr;
    if (vr->lo < 0) vr->lo = 0;
    if (vr->hi < vr->lo) {
        char e[64];
        fx_err_kind(err, "constraint_violation");
        return fx_err_setf(err, FX_EARG, "%s >= 0 is always False", fx_sym_str(u, e, sizeof e));
    }
    return FX_OK;
}

/* ---- the size type -------------------------------------------------------------------------- */

const fx_sym *fx_si_expr(fx_shape_env *env, fx_symint a) {
    return a.expr ? a.expr : fx_sym_int(env, a.hint);
}

fx_symint fx_si_from_expr(const fx_sym *e) {
    if (!fx_sym_is_error(e) && e->kind == FX_SYM_CONST) return FX_SI(e->v);
    fx_symint r = {0, e};
    if (fx_sym_is_error(e)) return r;
    int64_t v = 0;
    fx_err err;
    fx_err_clear(&err);
    if (fx_sym_eval(e, fallback_of, e->env, &v, &err) == FX_OK) r.hint = v;
    return r;
}

static fx_shape_env *si_env(fx_symint a, fx_symint b) { return a.expr ? a.expr->env : b.expr->env; }

typedef const fx_sym *(*binop_fn)(const fx_sym *, const fx_sym *);

static fx_symint si_binop(binop_fn f, fx_symint a, fx_symint b) {
    fx_shape_env *env = si_env(a, b);
    if (!env) return (fx_symint){0, fx_sym_error()};
    return fx_si_from_expr(f(fx_si_expr(env, a), fx_si_expr(env, b)));
}

fx_symint fx_si_add_slow(fx_symint a, fx_symint b) { return si_binop(fx_sym_add, a, b); }
fx_symint fx_si_sub_slow(fx_symint a, fx_symint b) { return si_binop(fx_sym_sub, a, b); }
fx_symint fx_si_mul_slow(fx_symint a, fx_symint b) { return si_binop(fx_sym_mul, a, b); }
fx_symint fx_si_max_slow(fx_symint a, fx_symint b) { return si_binop(fx_sym_max, a, b); }
fx_symint fx_si_min_slow(fx_symint a, fx_symint b) { return si_binop(fx_sym_min, a, b); }

static int si_divmod(bool mod, fx_symint a, fx_symint b, fx_symint *out, fx_err *err) {
    bool zero;
    int rc = fx_si_cmp(FX_SYM_EQ, b, FX_SI(0), &zero, err);
    if (rc) return rc;
    if (zero) return fx_err_setf(err, FX_EARG, "integer division or modulo by zero");
    if (!a.expr && !b.expr) {
        if (a.hint == INT64_MIN && b.hint == -1)
            return fx_err_setf(err, FX_EARG, "integer overflow in //");
        int64_t q = a.hint / b.hint, r = a.hint % b.hint;
        if (r != 0 && ((r < 0) != (b.hint < 0))) {
            q--;
            r += b.hint;
        }
        *out = FX_SI(mod ? r : q);
        return FX_OK;
    }
    *out = si_binop(mod ? fx_sym_mod : fx_sym_floordiv, a, b);
    if (out->expr && fx_sym_is_error(out->expr))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    return FX_OK;
}

int fx_si_floordiv(fx_symint a, fx_symint b, fx_symint *out, fx_err *err) {
    return si_divmod(false, a, b, out, err);
}
int fx_si_mod(fx_symint a, fx_symint b, fx_symint *out, fx_err *err) {
    return si_divmod(true, a, b, out, err);
}

int fx_si_cmp_slow(fx_sym_kind rel, fx_symint a, fx_symint b, bool *out, fx_err *err) {
    fx_shape_env *env = si_env(a, b);
    if (!env) return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    return fx_shape_env_evaluate(fx_sym_rel(rel, fx_si_expr(env, a), fx_si_expr(env, b)), out, err);
}

bool fx_si_known_true(fx_sym_kind rel, fx_symint a, fx_symint b) {
    if (!a.expr && !b.expr) {
        bool r = false;
        fx_si_cmp(rel, a, b, &r, NULL);
        return r;
    }
    fx_shape_env *env = si_env(a, b);
    if (!env) return false;
    const fx_sym *c = fx_sym_rel(rel, fx_si_expr(env, a), fx_si_expr(env, b));
    if (fx_sym_is_error(c)) return false;
    return static_eval(env, fx_shape_env_simplify(env, c), true) == 1;
}

void fx_si_format(fx_strbuf *sb, fx_symint a) {
    /* as SymNode.expr: with the replacements the guards made (s1 -> s0, s2 -> 4) */
    if (a.expr)
        fx_sym_format(sb, fx_shape_env_simplify(a.expr->env, a.expr));
    else
        fx_strbuf_appendf(sb, "%lld", (long long)a.hint);
}
