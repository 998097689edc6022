/* core/symint.c — symbolic integer expressions: interning, canonical sum-of-products form,
 * FloorDiv / Mod / Max / Min simplification, sympy-style printing, evaluation, substitution.
 * Layer: core. The shape environment (symbols, ranges, guards) is core/shape_env.c.
 *
 * Arithmetic goes through a "poly": constant + terms, each term a coefficient times a monomial
 * (atoms with exponents, atoms sorted by id). add / mul work on polys and intern the result; an
 * overflowing coefficient or a poly past FX_SYM_MAXT terms / FX_SYM_MAXF factors gives the
 * error node, as does out of memory. */
#include "core/symint_impl.h"

#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"

#define FX_SYM_MAXT 48 /* terms of one sum */
#define FX_SYM_MAXF 8  /* atoms of one product */

static struct fx_sym error_node; /* kind FX_SYM_ERROR, env NULL */

const fx_sym *fx_sym_error(void) { return &error_node; }
bool fx_sym_is_error(const fx_sym *e) { return !e || e->kind == FX_SYM_ERROR; }
fx_sym_kind fx_sym_kind_of(const fx_sym *e) { return e ? (fx_sym_kind)e->kind : FX_SYM_ERROR; }
fx_shape_env *fx_sym_env(const fx_sym *e) { return e ? e->env : NULL; }
int64_t fx_sym_const_value(const fx_sym *e) {
    return (e->kind == FX_SYM_CONST || e->kind == FX_SYM_BOOL) ? e->v : 0;
}
int64_t fx_sym_coeff(const fx_sym *e) {
    switch (e->kind) {
    case FX_SYM_MUL:
    case FX_SYM_ADD:
    case FX_SYM_CONST: return e->v;
    default: return 1;
    }
}
int64_t fx_sym_exp(const fx_sym *e, int i) { return e->kind == FX_SYM_MUL ? e->exps[i] : 1; }
int fx_sym_nargs(const fx_sym *e) { return e->n; }
const fx_sym *fx_sym_arg(const fx_sym *e, int i) { return e->args[i]; }
bool fx_sym_is_constant(const fx_sym *e) {
    return e->kind == FX_SYM_CONST || e->kind == FX_SYM_BOOL;
}
bool fx_sym_has_unbacked(const fx_sym *e) { return e->has_unbacked; }

static bool is_rel(int k) { return k >= FX_SYM_EQ && k <= FX_SYM_GE; }

/* ---- interning ------------------------------------------------------------------------------ */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t node_hash(int kind, int64_t v, int n, const fx_sym *const *args,
                          const int64_t *exps) {
    uint64_t h = mix((uint64_t)kind, (uint64_t)v);
    for (int i = 0; i < n; i++) {
        h = mix(h, (uint64_t)(uintptr_t)args[i]);
        if (exps) h = mix(h, (uint64_t)exps[i]);
    }
    return h;
}

static bool grow_table(fx_shape_env *env) {
    size_t nb = env->nbuckets ? env->nbuckets * 2 : 256;
    fx_sym **b = fx_calloc(nb, sizeof *b);
    if (!b) return false;
    for (size_t i = 0; i < env->nbuckets; i++) {
        fx_sym *e = env->buckets[i];
        while (e) {
            fx_sym *nx = e->next;
            size_t k = e->hash & (nb - 1);
            e->next = b[k];
            b[k] = e;
            e = nx;
        }
    }
    fx_free(env->buckets);
    env->buckets = b;
    env->nbuckets = nb;
    return true;
}

/* The node (kind, v, args, exps) of env: the existing one or a new one; the error node on out of
 * memory. `num` / `unbacked` only matter for symbols (which callers create once). */
static const fx_sym *intern(fx_shape_env *env, int kind, int64_t v, int64_t num, bool unbacked,
                            int n, const fx_sym *const *args, const int64_t *exps) {
    if (!env) return &error_node;
    for (int i = 0; i < n; i++)
        if (fx_sym_is_error(args[i])) return &error_node;
    uint64_t h = node_hash(kind, v, n, args, exps);
    if (env->nbuckets) {
        for (fx_sym *e = env->buckets[h & (env->nbuckets - 1)]; e; e = e->next) {
            if (e->hash != h || e->kind != kind || e->v != v || e->n != n) continue;
            bool same = true;
            for (int i = 0; i < n && same; i++)
                same = e->args[i] == args[i] && (!exps || e->exps[i] == exps[i]);
            if (same) return e;
        }
    }
    if (env->count + 1 > env->nbuckets / 2 && !grow_table(env)) return &error_node;
    size_t sz =
        sizeof(fx_sym) + (size_t)n * sizeof(fx_sym *) + (exps ? (size_t)n * sizeof(int64_t) : 0);
    fx_sym *e = fx_calloc(1, sz);
    if (!e) return &error_node;
    e->env = env;
    e->hash = h;
    e->id = env->next_id++;
    e->kind = (uint8_t)kind;
    e->unbacked = unbacked;
    e->n = (uint16_t)n;
    e->v = v;
    e->num = num;
    bool hu = kind == FX_SYM_SYMBOL && unbacked;
    for (int i = 0; i < n; i++) {
        e->args[i] = args[i];
        hu = hu || args[i]->has_unbacked;
    }
    e->has_unbacked = hu;
    if (exps) {
        e->exps = (int64_t *)(void *)&e->args[n];
        memcpy(e->exps, exps, (size_t)n * sizeof(int64_t));
    }
    size_t k = h & (env->nbuckets - 1);
    e->next = env->buckets[k];
    env->buckets[k] = e;
    env->count++;
    return e;
}

const fx_sym *fx_sym_new_symbol(fx_shape_env *env, int64_t index, int64_t num, bool unbacked) {
    return intern(env, FX_SYM_SYMBOL, index, num, unbacked, 0, NULL, NULL);
}

void fx_sym_free_all(fx_shape_env *env) {
    for (size_t i = 0; i < env->nbuckets; i++) {
        fx_sym *e = env->buckets[i];
        while (e) {
            fx_sym *nx = e->next;
            fx_free(e);
            e = nx;
        }
    }
    fx_free(env->buckets);
    env->buckets = NULL;
    env->nbuckets = env->count = 0;
}

const fx_sym *fx_sym_int(fx_shape_env *env, int64_t v) {
    return intern(env, FX_SYM_CONST, v, 0, false, 0, NULL, NULL);
}
const fx_sym *fx_sym_bool(fx_shape_env *env, bool v) {
    return intern(env, FX_SYM_BOOL, v ? 1 : 0, 0, false, 0, NULL, NULL);
}

/* ---- Python integer helpers ------------------------------------------------------------------ */

static int64_t py_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static int64_t py_mod(int64_t a, int64_t b) {
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static int64_t gcd64(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ---- polys ---------------------------------------------------------------------------------- */

typedef struct term {
    int64_t c;                    /* coefficient, != 0 */
    int nf;                       /* atoms in the monomial (0 only transiently) */
    const fx_sym *f[FX_SYM_MAXF]; /* (nf,) atoms sorted by id */
    int64_t e[FX_SYM_MAXF];       /* (nf,) exponents >= 1 */
} term;

typedef struct poly {
    int64_t k; /* constant */
    int n;     /* terms */
    term t[FX_SYM_MAXT];
    bool bad; /* overflow / too many terms */
} poly;

static int mono_cmp(const term *a, const term *b) {
    if (a->nf != b->nf) return a->nf < b->nf ? -1 : 1;
    for (int i = 0; i < a->nf; i++) {
        if (a->f[i] != b->f[i]) return a->f[i]->id < b->f[i]->id ? -1 : 1;
        if (a->e[i] != b->e[i]) return a->e[i] < b->e[i] ? -1 : 1;
    }
    return 0;
}

static void term_of(const fx_sym *x, term *t) {
    if (x->kind == FX_SYM_MUL) {
        t->c = x->v;
        t->nf = x->n;
        for (int i = 0; i < x->n; i++) {
            t->f[i] = x->args[i];
            t->e[i] = x->exps[i];
        }
    } else {
        t->c = 1;
        t->nf = 1;
        t->f[0] = x;
        t->e[0] = 1;
    }
}

static void poly_of(const fx_sym *x, poly *p) {
    p->bad = false;
    p->n = 0;
    p->k = 0;
    if (x->kind == FX_SYM_CONST || x->kind == FX_SYM_BOOL) {
        p->k = x->v;
    } else if (x->kind == FX_SYM_ADD) {
        p->k = x->v;
        p->n = x->n;
        for (int i = 0; i < x->n; i++) term_of(x->args[i], &p->t[i]);
    } else {
        p->n = 1;
        term_of(x, &p->t[0]);
    }
}

/* Adds c * (monomial of m) into p, merging with an equal monomial. */
static void poly_add_term(poly *p, const term *m, int64_t c) {
    if (c == 0) return;
    if (m->nf == 0) {
        if (__builtin_add_overflow(p->k, c, &p->k)) p->bad = true;
        return;
    }
    int lo = 0, hi = p->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int r = mono_cmp(&p->t[mid], m);
        if (r == 0) {
            if (__builtin_add_overflow(p->t[mid].c, c, &p->t[mid].c)) p->bad = true;
            if (p->t[mid].c == 0) {
                memmove(&p->t[mid], &p->t[mid + 1], sizeof(term) * (size_t)(p->n - mid - 1));
                p->n--;
            }
            return;
        }
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (p->n >= FX_SYM_MAXT) {
        p->bad = true;
        return;
    }
    memmove(&p->t[lo + 1], &p->t[lo], sizeof(term) * (size_t)(p->n - lo));
    p->t[lo] = *m;
    p->t[lo].c = c;
    p->n++;
}

/* a * b of two monomials into out (coefficients multiplied). False on overflow / too large. */
static bool mono_mul(const term *a, const term *b, term *out) {
    if (__builtin_mul_overflow(a->c, b->c, &out->c)) return false;
    int i = 0, j = 0, n = 0;
    while (i < a->nf || j < b->nf) {
        if (n >= FX_SYM_MAXF) return false;
        if (j >= b->nf || (i < a->nf && a->f[i]->id < b->f[j]->id)) {
            out->f[n] = a->f[i];
            out->e[n++] = a->e[i++];
        } else if (i >= a->nf || b->f[j]->id < a->f[i]->id) {
            out->f[n] = b->f[j];
            out->e[n++] = b->e[j++];
        } else {
            out->f[n] = a->f[i];
            out->e[n++] = a->e[i++] + b->e[j++];
        }
    }
    out->nf = n;
    return true;
}

static void poly_mul(const poly *a, const poly *b, poly *out) {
    out->k = 0;
    out->n = 0;
    out->bad = a->bad || b->bad;
    if (__builtin_mul_overflow(a->k, b->k, &out->k)) out->bad = true;
    for (int i = 0; i < a->n && !out->bad; i++) {
        int64_t c;
        if (b->k) {
            if (__builtin_mul_overflow(a->t[i].c, b->k, &c))
                out->bad = true;
            else
                poly_add_term(out, &a->t[i], c);
        }
        for (int j = 0; j < b->n && !out->bad; j++) {
            term r;
            if (!mono_mul(&a->t[i], &b->t[j], &r))
                out->bad = true;
            else
                poly_add_term(out, &r, r.c);
        }
    }
    for (int j = 0; j < b->n && a->k && !out->bad; j++) {
        int64_t c;
        if (__builtin_mul_overflow(b->t[j].c, a->k, &c))
            out->bad = true;
        else
            poly_add_term(out, &b->t[j], c);
    }
}

static const fx_sym *term_expr(fx_shape_env *env, const term *t) {
    if (t->c == 1 && t->nf == 1 && t->e[0] == 1) return t->f[0];
    return intern(env, FX_SYM_MUL, t->c, 0, false, t->nf, t->f, t->e);
}

static const fx_sym *poly_expr(fx_shape_env *env, const poly *p) {
    if (p->bad) return &error_node;
    if (p->n == 0) return fx_sym_int(env, p->k);
    if (p->n == 1 && p->k == 0) return term_expr(env, &p->t[0]);
    const fx_sym *args[FX_SYM_MAXT];
    for (int i = 0; i < p->n; i++) {
        args[i] = term_expr(env, &p->t[i]);
        if (fx_sym_is_error(args[i])) return &error_node;
    }
    return intern(env, FX_SYM_ADD, p->k, 0, false, p->n, args, NULL);
}

int fx_sym_term_cmp(const fx_sym *a, const fx_sym *b) {
    term ta, tb;
    term_of(a, &ta);
    term_of(b, &tb);
    return mono_cmp(&ta, &tb);
}

/* ---- arithmetic ----------------------------------------------------------------------------- */

static fx_shape_env *env2(const fx_sym *a, const fx_sym *b) {
    if (fx_sym_is_error(a) || fx_sym_is_error(b)) return NULL;
    if (a->env != b->env) return NULL; /* mixing environments is a caller bug */
    return a->env;
}

static const fx_sym *add_scaled(const fx_sym *a, const fx_sym *b, int64_t sb) {
    fx_shape_env *env = env2(a, b);
    if (!env) return &error_node;
    poly *p = fx_malloc(sizeof *p * 2);
    if (!p) return &error_node;
    poly_of(a, &p[0]);
    poly_of(b, &p[1]);
    int64_t k;
    if (__builtin_mul_overflow(p[1].k, sb, &k)) p[0].bad = true;
    term m0;
    m0.nf = 0;
    poly_add_term(&p[0], &m0, k);
    for (int i = 0; i < p[1].n && !p[0].bad; i++) {
        int64_t c;
        if (__builtin_mul_overflow(p[1].t[i].c, sb, &c))
            p[0].bad = true;
        else
            poly_add_term(&p[0], &p[1].t[i], c);
    }
    const fx_sym *r = poly_expr(env, &p[0]);
    fx_free(p);
    return r;
}

const fx_sym *fx_sym_add(const fx_sym *a, const fx_sym *b) { return add_scaled(a, b, 1); }
const fx_sym *fx_sym_sub(const fx_sym *a, const fx_sym *b) { return add_scaled(a, b, -1); }
const fx_sym *fx_sym_neg(const fx_sym *a) {
    if (fx_sym_is_error(a)) return &error_node;
    return add_scaled(fx_sym_int(a->env, 0), a, -1);
}

const fx_sym *fx_sym_mul(const fx_sym *a, const fx_sym *b) {
    fx_shape_env *env = env2(a, b);
    if (!env) return &error_node;
    poly *p = fx_malloc(sizeof *p * 3);
    if (!p) return &error_node;
    poly_of(a, &p[0]);
    poly_of(b, &p[1]);
    poly_mul(&p[0], &p[1], &p[2]);
    const fx_sym *r = poly_expr(env, &p[2]);
    fx_free(p);
    return r;
}

/* sympy's assumptions as fxdb knows them: backed symbols are positive integers, unbacked ones
 * just integers. 1 = positive, 0 = nonnegative (may be 0), -1 = unknown. */
static int sign_of(const fx_sym *e) {
    switch (e->kind) {
    case FX_SYM_CONST: return e->v > 0 ? 1 : e->v == 0 ? 0 : -1;
    case FX_SYM_SYMBOL: return e->unbacked ? -1 : 1;
    case FX_SYM_ADD: {
        if (e->v < 0) return -1;
        int s = e->v > 0 ? 1 : 0;
        for (int i = 0; i < e->n; i++) {
            int t = sign_of(e->args[i]);
            if (t < 0) return -1;
            if (t == 1) s = 1;
        }
        return s;
    }
    case FX_SYM_MUL: {
        if (e->v < 0) return -1;
        int s = 1;
        for (int i = 0; i < e->n; i++) {
            int t = sign_of(e->args[i]);
            if (t < 0) return (e->exps[i] % 2 == 0) ? s : -1; /* even power: nonneg */
            if (t == 0) s = 0;
        }
        return s;
    }
    case FX_SYM_FLOORDIV: return (sign_of(e->args[0]) >= 0 && sign_of(e->args[1]) == 1) ? 0 : -1;
    case FX_SYM_MOD: return sign_of(e->args[1]) == 1 ? 0 : -1;
    case FX_SYM_MAX: {
        int s = -1;
        for (int i = 0; i < e->n; i++)
            if (sign_of(e->args[i]) > s) s = sign_of(e->args[i]);
        return s;
    }
    case FX_SYM_MIN: {
        int s = 1;
        for (int i = 0; i < e->n; i++)
            if (sign_of(e->args[i]) < s) s = sign_of(e->args[i]);
        return s;
    }
    default: return -1;
    }
}

/* Whether every term of poly p is divisible by monomial m (coefficient included); q = p / m. */
static bool poly_div_mono(const poly *p, const term *m, poly *q) {
    q->k = 0;
    q->n = 0;
    q->bad = false;
    if (m->c == 0) return false;
    if (p->k != 0) {
        if (m->nf != 0 || p->k % m->c != 0) return false;
        q->k = p->k / m->c;
    }
    for (int i = 0; i < p->n; i++) {
        const term *t = &p->t[i];
        if (t->c % m->c != 0) return false;
        term r;
        r.c = t->c / m->c;
        r.nf = 0;
        int j = 0;
        for (int a = 0; a < t->nf; a++) {
            int64_t e = t->e[a];
            if (j < m->nf && m->f[j] == t->f[a]) {
                e -= m->e[j++];
                if (e < 0) return false;
            }
            if (e > 0) {
                r.f[r.nf] = t->f[a];
                r.e[r.nf++] = e;
            }
        }
        if (j != m->nf) return false;
        poly_add_term(q, &r, r.c);
    }
    return !q->bad;
}

/* The single term of x as a monomial, when x is one term (a constant counts, with nf 0). */
static bool as_mono(const fx_sym *x, term *m) {
    if (x->kind == FX_SYM_CONST) {
        m->c = x->v;
        m->nf = 0;
        return true;
    }
    if (x->kind == FX_SYM_ADD || x->kind == FX_SYM_BOOL || is_rel(x->kind)) return false;
    term_of(x, m);
    return true;
}

const fx_sym *fx_sym_floordiv(const fx_sym *a, const fx_sym *b) {
    fx_shape_env *env = env2(a, b);
    if (!env) return &error_node;
    if (b->kind == FX_SYM_CONST) {
        int64_t d = b->v;
        if (d == 0) return &error_node;
        if (a->kind == FX_SYM_CONST) {
            if (a->v == INT64_MIN && d == -1) return &error_node;
            return fx_sym_int(env, py_floordiv(a->v, d));
        }
        if (d == 1) return a;
        if (d == -1) return fx_sym_neg(a);
        if (a->kind == FX_SYM_FLOORDIV && a->args[1]->kind == FX_SYM_CONST && d > 0 &&
            a->args[1]->v > 0) {
            int64_t dd;
            if (!__builtin_mul_overflow(a->args[1]->v, d, &dd))
                return fx_sym_floordiv(a->args[0], fx_sym_int(env, dd));
        }
    }
    if (a == b && sign_of(a) == 1) return fx_sym_int(env, 1);
    const fx_sym *res = NULL;
    poly *p = fx_malloc(sizeof *p * 3);
    if (!p) return &error_node;
    poly_of(a, &p[0]);
    term m;
    if (as_mono(b, &m) && poly_div_mono(&p[0], &m, &p[1])) {
        res = poly_expr(env, &p[1]); /* exact division */
    } else if (b->kind == FX_SYM_CONST) {
        /* (q*d + rest) // d == q + rest // d: pull out the terms d divides, then divide what is
         * left and d by their common factor. */
        int64_t d = b->v;
        poly *q = &p[1], *rest = &p[2];
        q->k = 0;
        q->n = 0;
        q->bad = false;
        rest->k = p[0].k;
        rest->n = 0;
        rest->bad = false;
        if (p[0].k % d == 0) {
            q->k = p[0].k / d;
            rest->k = 0;
        }
        for (int i = 0; i < p[0].n; i++) {
            if (p[0].t[i].c % d == 0)
                poly_add_term(q, &p[0].t[i], p[0].t[i].c / d);
            else
                poly_add_term(rest, &p[0].t[i], p[0].t[i].c);
        }
        int64_t g = d;
        g = gcd64(g, rest->k);
        for (int i = 0; i < rest->n; i++) g = gcd64(g, rest->t[i].c);
        if (d < 0) g = -g;
        if (g != 1 && g != 0) {
            rest->k /= g;
            for (int i = 0; i < rest->n; i++) rest->t[i].c /= g;
        }
        const fx_sym *re = poly_expr(env, rest);
        const fx_sym *args[2] = {re, fx_sym_int(env, d / (g ? g : 1))};
        const fx_sym *fd = (args[1]->kind == FX_SYM_CONST && args[1]->v == 1)
                               ? re
                               : (re->kind == FX_SYM_CONST
                                      ? fx_sym_int(env, py_floordiv(re->v, args[1]->v))
                                      : intern(env, FX_SYM_FLOORDIV, 0, 0, false, 2, args, NULL));
        res = (q->n == 0 && q->k == 0) ? fd : fx_sym_add(poly_expr(env, q), fd);
    } else {
        const fx_sym *args[2] = {a, b};
        res = intern(env, FX_SYM_FLOORDIV, 0, 0, false, 2, args, NULL);
    }
    fx_free(p);
    return res;
}

const fx_sym *fx_sym_mod(const fx_sym *a, const fx_sym *b) {
    fx_shape_env *env = env2(a, b);
    if (!env) return &error_node;
    if (b->kind == FX_SYM_CONST) {
        int64_t d = b->v;
        if (d == 0) return &error_node;
        if (a->kind == FX_SYM_CONST) return fx_sym_int(env, d == -1 ? 0 : py_mod(a->v, d));
        if (d == 1 || d == -1) return fx_sym_int(env, 0);
        if (a->kind == FX_SYM_MOD && a->args[1] == b) return a;
    }
    if (a == b) return fx_sym_int(env, 0);
    const fx_sym *res;
    poly *p = fx_malloc(sizeof *p * 2);
    if (!p) return &error_node;
    poly_of(a, &p[0]);
    term m;
    if (as_mono(b, &m) && poly_div_mono(&p[0], &m, &p[1])) {
        res = fx_sym_int(env, 0);
    } else if (b->kind == FX_SYM_CONST) {
        int64_t d = b->v;
        poly *rest = &p[1];
        rest->k = py_mod(p[0].k, d);
        rest->n = 0;
        rest->bad = false;
        for (int i = 0; i < p[0].n; i++)
            if (p[0].t[i].c % d != 0) poly_add_term(rest, &p[0].t[i], p[0].t[i].c);
        const fx_sym *re = poly_expr(env, rest);
        if (re->kind == FX_SYM_CONST) {
            res = fx_sym_int(env, py_mod(re->v, d));
        } else {
            const fx_sym *args[2] = {re, b};
            res = intern(env, FX_SYM_MOD, 0, 0, false, 2, args, NULL);
        }
    } else {
        const fx_sym *args[2] = {a, b};
        res = intern(env, FX_SYM_MOD, 0, 0, false, 2, args, NULL);
    }
    fx_free(p);
    return res;
}

/* Max / Min: flattened, constants folded, duplicates and arguments that another one bounds
 * (their difference is a constant, or a sign sympy's assumptions know) dropped. */
static const fx_sym *maxmin(int kind, const fx_sym *a, const fx_sym *b) {
    fx_shape_env *env = env2(a, b);
    if (!env) return &error_node;
    const fx_sym *v[2 * FX_SYM_MAXF];
    int n = 0;
    const fx_sym *in[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        const fx_sym *x = in[s];
        if (x->kind == kind) {
            for (int i = 0; i < x->n; i++) v[n++] = x->args[i];
        } else {
            v[n++] = x;
        }
        if (n > FX_SYM_MAXF) return &error_node;
    }
    bool drop[2 * FX_SYM_MAXF] = {false};
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n && !drop[i]; j++) {
            if (i == j || drop[j]) continue;
            if (v[i] == v[j]) {
                if (j < i) drop[i] = true;
                continue;
            }
            /* is v[i] dominated by v[j]? (Max: v[j] >= v[i]; Min: v[j] <= v[i]) */
            const fx_sym *d = fx_sym_sub(v[j], v[i]);
            if (fx_sym_is_error(d)) return &error_node;
            int sg = sign_of(d);
            if (kind == FX_SYM_MIN) {
                const fx_sym *nd = fx_sym_neg(d);
                sg = fx_sym_is_error(nd) ? -1 : sign_of(nd);
            }
            if (sg >= 0)
                drop[i] = true;
            else if (v[i]->kind == FX_SYM_CONST && v[j]->kind != FX_SYM_CONST) {
                /* sympy: a positive integer is >= 1, a nonnegative one >= 0 */
                int s = sign_of(v[j]);
                if (kind == FX_SYM_MAX && ((s == 1 && v[i]->v <= 1) || (s == 0 && v[i]->v <= 0)))
                    drop[i] = true;
            } else if (v[j]->kind == FX_SYM_CONST && kind == FX_SYM_MIN) {
                int s = sign_of(v[i]);
                if ((s == 1 && v[j]->v <= 1) || (s == 0 && v[j]->v <= 0)) drop[i] = true;
            }
        }
    }
    const fx_sym *keep[2 * FX_SYM_MAXF];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!drop[i]) keep[k++] = v[i];
    if (k == 1) return keep[0];
    for (int i = 1; i < k; i++) /* sort by id: canonical */
        for (int j = i; j > 0 && keep[j - 1]->id > keep[j]->id; j--) {
            const fx_sym *t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    return intern(env, kind, 0, 0, false, k, keep, NULL);
}

const fx_sym *fx_sym_max(const fx_sym *a, const fx_sym *b) { return maxmin(FX_SYM_MAX, a, b); }
const fx_sym *fx_sym_min(const fx_sym *a, const fx_sym *b) { return maxmin(FX_SYM_MIN, a, b); }

const fx_sym *fx_sym_rel(fx_sym_kind rel, const fx_sym *lhs, const fx_sym *rhs) {
    fx_shape_env *env = env2(lhs, rhs);
    if (!env || !is_rel(rel)) return &error_node;
    const fx_sym *d = fx_sym_sub(lhs, rhs);
    if (fx_sym_is_error(d)) return &error_node;
    int sg = 2; /* 2 unknown; else the sign of lhs - rhs: -1, 0, 1 */
    if (d->kind == FX_SYM_CONST) {
        sg = d->v > 0 ? 1 : d->v < 0 ? -1 : 0;
    } else if (sign_of(d) == 1) {
        sg = 1;
    } else {
        const fx_sym *nd = fx_sym_neg(d);
        if (!fx_sym_is_error(nd) && sign_of(nd) == 1) sg = -1;
    }
    if (sg != 2) {
        bool r = false;
        switch (rel) {
        case FX_SYM_EQ: r = sg == 0; break;
        case FX_SYM_NE: r = sg != 0; break;
        case FX_SYM_LT: r = sg < 0; break;
        case FX_SYM_LE: r = sg <= 0; break;
        case FX_SYM_GT: r = sg > 0; break;
        default: r = sg >= 0; break;
        }
        return fx_sym_bool(env, r);
    }
    const fx_sym *args[2] = {lhs, rhs};
    return intern(env, rel, 0, 0, false, 2, args, NULL);
}

const fx_sym *fx_sym_not(const fx_sym *r) {
    if (fx_sym_is_error(r)) return &error_node;
    if (r->kind == FX_SYM_BOOL) return fx_sym_bool(r->env, !r->v);
    static const int neg[] = {
        [FX_SYM_EQ] = FX_SYM_NE, [FX_SYM_NE] = FX_SYM_EQ, [FX_SYM_LT] = FX_SYM_GE,
        [FX_SYM_LE] = FX_SYM_GT, [FX_SYM_GT] = FX_SYM_LE, [FX_SYM_GE] = FX_SYM_LT};
    if (!is_rel(r->kind)) return &error_node;
    return fx_sym_rel((fx_sym_kind)neg[r->kind], r->args[0], r->args[1]);
}

/* ---- substitution and evaluation ------------------------------------------------------------ */

static const fx_sym *pow_sym(const fx_sym *b, int64_t e) {
    const fx_sym *r = fx_sym_int(b->env, 1);
    for (int64_t i = 0; i < e; i++) r = fx_sym_mul(r, b);
    return r;
}

const fx_sym *fx_sym_subst(const fx_sym *e, const fx_sym *(*fn)(void *ud, const fx_sym *s),
                           void *ud) {
    if (fx_sym_is_error(e)) return &error_node;
    fx_shape_env *env = e->env;
    switch (e->kind) {
    case FX_SYM_CONST:
    case FX_SYM_BOOL: return e;
    case FX_SYM_SYMBOL: {
        const fx_sym *r = fn(ud, e);
        return r ? r : e;
    }
    case FX_SYM_ADD: {
        const fx_sym *acc = fx_sym_int(env, e->v);
        for (int i = 0; i < e->n; i++) acc = fx_sym_add(acc, fx_sym_subst(e->args[i], fn, ud));
        return acc;
    }
    case FX_SYM_MUL: {
        const fx_sym *acc = fx_sym_int(env, e->v);
        for (int i = 0; i < e->n; i++)
            acc = fx_sym_mul(acc, pow_sym(fx_sym_subst(e->args[i], fn, ud), e->exps[i]));
        return acc;
    }
    case FX_SYM_FLOORDIV:
        return fx_sym_floordiv(fx_sym_subst(e->args[0], fn, ud), fx_sym_subst(e->args[1], fn, ud));
    case FX_SYM_MOD:
        return fx_sym_mod(fx_sym_subst(e->args[0], fn, ud), fx_sym_subst(e->args[1], fn, ud));
    case FX_SYM_MAX:
    case FX_SYM_MIN: {
        const fx_sym *acc = fx_sym_subst(e->args[0], fn, ud);
        for (int i = 1; i < e->n; i++) acc = maxmin(e->kind, acc, fx_sym_subst(e->args[i], fn, ud));
        return acc;
    }
    default:
        return fx_sym_rel((fx_sym_kind)e->kind, fx_sym_subst(e->args[0], fn, ud),
                          fx_sym_subst(e->args[1], fn, ud));
    }
}

typedef int (*valuer_fn)(void *ud, const fx_sym *s, int64_t *v, fx_err *err);

static int ovf(fx_err *err) {
    return fx_err_setf(err, FX_EARG, "integer overflow while evaluating a symbolic size");
}

int fx_sym_eval(const fx_sym *e, valuer_fn fn, void *ud, int64_t *out, fx_err *err) {
    if (fx_sym_is_error(e))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    int64_t a, b;
    int rc;
    switch (e->kind) {
    case FX_SYM_CONST:
    case FX_SYM_BOOL: *out = e->v; return FX_OK;
    case FX_SYM_SYMBOL: return fn(ud, e, out, err);
    case FX_SYM_ADD: {
        int64_t acc = e->v;
        for (int i = 0; i < e->n; i++) {
            if ((rc = fx_sym_eval(e->args[i], fn, ud, &a, err))) return rc;
            if (__builtin_add_overflow(acc, a, &acc)) return ovf(err);
        }
        *out = acc;
        return FX_OK;
    }
    case FX_SYM_MUL: {
        int64_t acc = e->v;
        for (int i = 0; i < e->n; i++) {
            if ((rc = fx_sym_eval(e->args[i], fn, ud, &a, err))) return rc;
            for (int64_t k = 0; k < e->exps[i]; k++)
                if (__builtin_mul_overflow(acc, a, &acc)) return ovf(err);
        }
        *out = acc;
        return FX_OK;
    }
    case FX_SYM_MAX:
    case FX_SYM_MIN: {
        int64_t acc = 0;
        for (int i = 0; i < e->n; i++) {
            if ((rc = fx_sym_eval(e->args[i], fn, ud, &a, err))) return rc;
            if (i == 0 || (e->kind == FX_SYM_MAX ? a > acc : a < acc)) acc = a;
        }
        *out = acc;
        return FX_OK;
    }
    default: break;
    }
    if ((rc = fx_sym_eval(e->args[0], fn, ud, &a, err))) return rc;
    if ((rc = fx_sym_eval(e->args[1], fn, ud, &b, err))) return rc;
    switch (e->kind) {
    case FX_SYM_FLOORDIV:
    case FX_SYM_MOD:
        if (b == 0) return fx_err_setf(err, FX_EARG, "integer division or modulo by zero");
        if (a == INT64_MIN && b == -1) return ovf(err);
        *out = e->kind == FX_SYM_FLOORDIV ? py_floordiv(a, b) : py_mod(a, b);
        return FX_OK;
    case FX_SYM_EQ: *out = a == b; return FX_OK;
    case FX_SYM_NE: *out = a != b; return FX_OK;
    case FX_SYM_LT: *out = a < b; return FX_OK;
    case FX_SYM_LE: *out = a <= b; return FX_OK;
    case FX_SYM_GT: *out = a > b; return FX_OK;
    default: *out = a >= b; return FX_OK;
    }
}

static void collect(const fx_sym *e, void (*fn)(void *, const fx_sym *), void *ud,
                    const fx_sym **seen, int *nseen, int cap) {
    if (fx_sym_is_error(e)) return;
    if (e->kind == FX_SYM_SYMBOL) {
        for (int i = 0; i < *nseen; i++)
            if (seen[i] == e) return;
        if (*nseen < cap) seen[(*nseen)++] = e;
        fn(ud, e);
        return;
    }
    for (int i = 0; i < e->n; i++) collect(e->args[i], fn, ud, seen, nseen, cap);
}

void fx_sym_foreach_symbol(const fx_sym *e, void (*fn)(void *ud, const fx_sym *s), void *ud) {
    const fx_sym *seen[64];
    int n = 0;
    collect(e, fn, ud, seen, &n, 64);
}

/* ---- printing (sympy's StrPrinter) ------------------------------------------------------------
 */

/* sympy's class_key of a node's class: (a, b, name). */
static void class_key(const fx_sym *e, int *a, int *b, const char **name) {
    switch (e->kind) {
    case FX_SYM_CONST: *a = 1, *b = 0, *name = "Number"; return;
    case FX_SYM_SYMBOL: *a = 2, *b = 0, *name = "Symbol"; return;
    case FX_SYM_MUL: *a = 3, *b = 0, *name = "Mul"; return;
    case FX_SYM_ADD: *a = 3, *b = 1, *name = "Add"; return;
    case FX_SYM_FLOORDIV: *a = 4, *b = 0, *name = "FloorDiv"; return;
    case FX_SYM_MOD: *a = 4, *b = 10000, *name = "Mod"; return;
    case FX_SYM_MAX: *a = 5, *b = 0, *name = "Max"; return;
    case FX_SYM_MIN: *a = 5, *b = 0, *name = "Min"; return;
    default: *a = 6, *b = 0, *name = "Rel"; return;
    }
}

static int sort_cmp(const fx_sym *a, int64_t ea, const fx_sym *b, int64_t eb);
static int ordered_factors(const fx_sym *m, const fx_sym **f, int64_t *e);
static int ordered_terms(const fx_sym *s, const fx_sym **out);
static int ordered_args(const fx_sym *m, const fx_sym **out);

/* Splits x into sympy's (coeff, base, exp) of Expr.sort_key: a MUL of one factor is that
 * factor raised; a MUL of several keeps the MUL (coefficient dropped). */
static const fx_sym *split_key(const fx_sym *x, int64_t *coeff, int64_t *exp, bool *mulcore) {
    *coeff = 1;
    *mulcore = false;
    if (x->kind == FX_SYM_MUL) {
        *coeff = x->v;
        if (x->n == 1) {
            *exp *= x->exps[0];
            return x->args[0];
        }
        *mulcore = true;
    }
    return x;
}

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

/* sympy's default_sort_key order of base a ** ea against base b ** eb. */
static int sort_cmp(const fx_sym *a, int64_t ea, const fx_sym *b, int64_t eb) {
    int64_t ca, cb;
    bool ma, mb;
    a = split_key(a, &ca, &ea, &ma);
    b = split_key(b, &cb, &eb, &mb);
    int a1, a2, b1, b2;
    const char *an, *bn;
    class_key(a, &a1, &a2, &an);
    class_key(b, &b1, &b2, &bn);
    if (a1 != b1) return cmp_i64(a1, b1);
    if (a2 != b2) return cmp_i64(a2, b2);
    int r = strcmp(an, bn);
    if (r) return r;
    if (a->kind == FX_SYM_CONST) {
        r = cmp_i64(ea, eb);
        return r ? r : cmp_i64(a->v, b->v);
    }
    if (a->kind == FX_SYM_SYMBOL) {
        char sa[32], sb[32];
        snprintf(sa, sizeof sa, "%c%lld", a->unbacked ? 'u' : 's', (long long)a->num);
        snprintf(sb, sizeof sb, "%c%lld", b->unbacked ? 'u' : 's', (long long)b->num);
        r = strcmp(sa, sb);
    } else {
        const fx_sym *xa[FX_SYM_MAXT], *xb[FX_SYM_MAXT];
        int64_t pa[FX_SYM_MAXT], pb[FX_SYM_MAXT];
        int na, nb;
        if (a->kind == FX_SYM_MUL) {
            na = ordered_factors(a, xa, pa);
            nb = ordered_factors(b, xb, pb);
        } else {
            na = a->kind == FX_SYM_ADD ? ordered_terms(a, xa) : ordered_args(a, xa);
            nb = b->kind == FX_SYM_ADD ? ordered_terms(b, xb) : ordered_args(b, xb);
            for (int i = 0; i < na; i++) pa[i] = 1;
            for (int i = 0; i < nb; i++) pb[i] = 1;
        }
        r = cmp_i64(na, nb);
        for (int i = 0; i < na && !r; i++) r = sort_cmp(xa[i], pa[i], xb[i], pb[i]);
    }
    if (r) return r;
    r = cmp_i64(ea, eb);
    return r ? r : cmp_i64(ca, cb);
}

/* Arguments as sympy orders them: Max/Min by sort key, others as they are. */
static int ordered_args(const fx_sym *m, const fx_sym **out) {
    int n = m->n;
    for (int i = 0; i < n; i++) out[i] = m->args[i];
    if (m->kind == FX_SYM_MAX || m->kind == FX_SYM_MIN) {
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && sort_cmp(out[j - 1], 1, out[j], 1) > 0; j--) {
                const fx_sym *t = out[j];
                out[j] = out[j - 1];
                out[j - 1] = t;
            }
    }
    return n;
}

/* Mul.as_ordered_factors: factors (base ** exp) by sort key. */
static int ordered_factors(const fx_sym *m, const fx_sym **f, int64_t *e) {
    int n = m->n;
    for (int i = 0; i < n; i++) {
        f[i] = m->args[i];
        e[i] = m->exps[i];
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && sort_cmp(f[j - 1], e[j - 1], f[j], e[j]) > 0; j--) {
            const fx_sym *t = f[j];
            f[j] = f[j - 1];
            f[j - 1] = t;
            int64_t te = e[j];
            e[j] = e[j - 1];
            e[j - 1] = te;
        }
    return n;
}

/* Add.as_ordered_terms: generators sorted by sort key; terms by their exponent vectors over
 * the generators, largest first (lex order); the constant last. Special case of sympy: a
 * positive constant plus one negative term c*x prints constant first ("1 - s0"). Returns the
 * count; out[] holds term nodes, with the constant (when nonzero) as a CONST node. */
static int ordered_terms(const fx_sym *s, const fx_sym **out) {
    fx_shape_env *env = s->env;
    int n = s->n;
    if (s->v > 0 && n == 1 && s->args[0]->kind == FX_SYM_MUL && s->args[0]->v < 0 &&
        s->args[0]->n == 1) {
        out[0] = fx_sym_int(env, s->v);
        out[1] = s->args[0];
        return 2;
    }
    const fx_sym *gens[FX_SYM_MAXT * 2];
    int ng = 0;
    for (int i = 0; i < n; i++) {
        term t;
        term_of(s->args[i], &t);
        for (int j = 0; j < t.nf; j++) {
            bool have = false;
            for (int g = 0; g < ng && !have; g++) have = gens[g] == t.f[j];
            if (!have && ng < FX_SYM_MAXT * 2) gens[ng++] = t.f[j];
        }
    }
    for (int i = 1; i < ng; i++)
        for (int j = i; j > 0 && sort_cmp(gens[j - 1], 1, gens[j], 1) > 0; j--) {
            const fx_sym *t = gens[j];
            gens[j] = gens[j - 1];
            gens[j - 1] = t;
        }
    for (int i = 0; i < n; i++) out[i] = s->args[i];
    /* insertion sort by exponent vector, descending */
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0; j--) {
            term ta, tb;
            term_of(out[j - 1], &ta);
            term_of(out[j], &tb);
            int r = 0;
            for (int g = 0; g < ng && !r; g++) {
                int64_t xa = 0, xb = 0;
                for (int k = 0; k < ta.nf; k++)
                    if (ta.f[k] == gens[g]) xa = ta.e[k];
                for (int k = 0; k < tb.nf; k++)
                    if (tb.f[k] == gens[g]) xb = tb.e[k];
                r = cmp_i64(xb, xa); /* larger exponent first */
            }
            if (r <= 0) break;
            const fx_sym *t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    }
    if (s->v != 0) out[n++] = fx_sym_int(env, s->v);
    return n;
}

enum {
    PREC_REL = 35,
    PREC_ADD = 40,
    PREC_MUL = 50,
    PREC_POW = 60,
    PREC_FUNC = 70,
    PREC_ATOM = 1000
};

static int prec_of(const fx_sym *e) {
    switch (e->kind) {
    case FX_SYM_CONST: return e->v < 0 ? PREC_ADD : PREC_ATOM;
    case FX_SYM_SYMBOL:
    case FX_SYM_BOOL: return PREC_ATOM;
    case FX_SYM_ADD: return PREC_ADD;
    case FX_SYM_MUL:
        if (e->v < 0) return PREC_ADD;
        if (e->v == 1 && e->n == 1) return PREC_POW;
        return PREC_MUL;
    case FX_SYM_FLOORDIV: return PREC_MUL;
    case FX_SYM_MOD:
    case FX_SYM_MAX:
    case FX_SYM_MIN: return PREC_FUNC;
    default: return PREC_REL;
    }
}

static void print_e(fx_strbuf *sb, const fx_sym *e);

/* sympy's parenthesize(item, level, strict=False): parentheses when prec <= level. */
static void paren(fx_strbuf *sb, const fx_sym *e, int level) {
    if (prec_of(e) <= level) {
        fx_strbuf_putc(sb, '(');
        print_e(sb, e);
        fx_strbuf_putc(sb, ')');
    } else {
        print_e(sb, e);
    }
}

static void print_factor(fx_strbuf *sb, const fx_sym *base, int64_t exp, int level) {
    if (exp == 1) {
        paren(sb, base, level);
        return;
    }
    /* a Pow factor: its own precedence (60) is above Mul's, so never parenthesized in a Mul */
    paren(sb, base, PREC_POW);
    fx_strbuf_appendf(sb, "**%lld", (long long)exp);
}

static void print_mul(fx_strbuf *sb, const fx_sym *e) {
    int64_t c = e->v;
    if (c < 0) {
        fx_strbuf_putc(sb, '-');
        c = -c;
    }
    const fx_sym *f[FX_SYM_MAXF];
    int64_t x[FX_SYM_MAXF];
    int n = ordered_factors(e, f, x);
    bool first = true;
    if (c != 1) {
        fx_strbuf_appendf(sb, "%lld", (long long)c);
        first = false;
    }
    if (first && n == 1) { /* a lone power or atom: Pow's / the atom's own printing */
        print_factor(sb, f[0], x[0], PREC_MUL);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!first) fx_strbuf_putc(sb, '*');
        first = false;
        print_factor(sb, f[i], x[i], PREC_MUL);
    }
}

static void print_e(fx_strbuf *sb, const fx_sym *e) {
    static const char *relop[] = {
        [FX_SYM_LT] = "<", [FX_SYM_LE] = "<=", [FX_SYM_GT] = ">", [FX_SYM_GE] = ">="};
    switch (e->kind) {
    case FX_SYM_ERROR: fx_strbuf_append(sb, "<error>"); return;
    case FX_SYM_CONST: fx_strbuf_appendf(sb, "%lld", (long long)e->v); return;
    case FX_SYM_BOOL: fx_strbuf_append(sb, e->v ? "True" : "False"); return;
    case FX_SYM_SYMBOL:
        fx_strbuf_appendf(sb, "%c%lld", e->unbacked ? 'u' : 's', (long long)e->num);
        return;
    case FX_SYM_MUL: print_mul(sb, e); return;
    case FX_SYM_ADD: {
        const fx_sym *t[FX_SYM_MAXT + 1];
        int n = ordered_terms(e, t);
        for (int i = 0; i < n; i++) {
            fx_strbuf tb = FX_STRBUF_INIT;
            print_e(&tb, t[i]);
            const char *s = fx_strbuf_cstr(&tb);
            bool neg = s[0] == '-';
            if (i == 0)
                fx_strbuf_append(sb, s);
            else
                fx_strbuf_append(sb, neg ? " - " : " + ");
            if (i > 0) fx_strbuf_append(sb, neg ? s + 1 : s);
            if (tb.oom) sb->oom = 1;
            fx_strbuf_free(&tb);
        }
        return;
    }
    case FX_SYM_FLOORDIV:
        fx_strbuf_putc(sb, '(');
        paren(sb, e->args[0], PREC_MUL);
        fx_strbuf_append(sb, "//");
        paren(sb, e->args[1], PREC_MUL);
        fx_strbuf_putc(sb, ')');
        return;
    case FX_SYM_MOD:
    case FX_SYM_MAX:
    case FX_SYM_MIN: {
        const fx_sym *a[2 * FX_SYM_MAXF];
        int n = ordered_args(e, a);
        fx_strbuf_append(sb, e->kind == FX_SYM_MOD   ? "Mod("
                             : e->kind == FX_SYM_MAX ? "Max("
                                                     : "Min(");
        for (int i = 0; i < n; i++) {
            if (i) fx_strbuf_append(sb, ", ");
            print_e(sb, a[i]);
        }
        fx_strbuf_putc(sb, ')');
        return;
    }
    case FX_SYM_EQ:
    case FX_SYM_NE:
        fx_strbuf_append(sb, e->kind == FX_SYM_EQ ? "Eq(" : "Ne(");
        print_e(sb, e->args[0]);
        fx_strbuf_append(sb, ", ");
        print_e(sb, e->args[1]);
        fx_strbuf_putc(sb, ')');
        return;
    default:
        paren(sb, e->args[0], PREC_REL);
        fx_strbuf_appendf(sb, " %s ", relop[e->kind]);
        paren(sb, e->args[1], PREC_REL);
        return;
    }
}

void fx_sym_format(fx_strbuf *sb, const fx_sym *e) { print_e(sb, e ? e : &error_node); }

const char *fx_sym_str(const fx_sym *e, char *buf, int cap) {
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_sym_format(&sb, e);
    snprintf(buf, (size_t)cap, "%s", sb.oom ? "<oom>" : fx_strbuf_cstr(&sb));
    fx_strbuf_free(&sb);
    return buf;
}

void fx_vr_format(fx_strbuf *sb, fx_vr r) {
    fx_strbuf_append(sb, "VR[");
    if (r.lo <= -FX_INT_OO)
        fx_strbuf_append(sb, "-int_oo");
    else
        fx_strbuf_appendf(sb, "%lld", (long long)r.lo);
    fx_strbuf_append(sb, ", ");
    if (r.hi >= FX_INT_OO)
        fx_strbuf_append(sb, "int_oo");
    else
        fx_strbuf_appendf(sb, "%lld", (long long)r.hi);
    fx_strbuf_putc(sb, ']');
}
