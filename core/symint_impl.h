/* core/symint_impl.h — the expression node and the shape environment, private to symint.c and
 * shape_env.c. Layer: core (private).
 *
 * Invariants: every node but the error node belongs to exactly one environment and sits in its
 * hash table; structurally equal nodes of one environment are the same node. An ADD holds a
 * constant (v) and n >= 1 terms, each an atom or a MUL, sorted by fx_sym_term_cmp, with
 * (v != 0 or n >= 2). A MUL holds a coefficient (v != 0) and n >= 1 factors (atoms, sorted by
 * id) with exponents >= 1, and is never a bare atom (coefficient 1, one factor, exponent 1).
 * Atoms are SYMBOL, FLOORDIV, MOD, MAX and MIN; MAX / MIN args are sorted by id. */
#ifndef FX_SYMINT_IMPL_H
#define FX_SYMINT_IMPL_H

#include "core/symint.h"

struct fx_sym {
    fx_shape_env *env;   /* owner; NULL for the error node */
    struct fx_sym *next; /* hash chain */
    uint64_t hash;
    uint32_t id;                 /* creation order within env: the canonical order of atoms */
    uint8_t kind;                /* fx_sym_kind */
    uint8_t unbacked;            /* SYMBOL: u<N> */
    uint8_t has_unbacked;        /* some symbol below is unbacked */
    uint16_t n;                  /* number of args */
    int64_t v;                   /* CONST/BOOL: value; SYMBOL: index in env->syms; ADD: constant;
                                    MUL: coefficient */
    int64_t num;                 /* SYMBOL: N of s<N> / u<N> */
    int64_t *exps;               /* MUL: (n,) exponents, inside this allocation; else NULL */
    const struct fx_sym *args[]; /* (n,) */
};

typedef struct fx_symbol_priv {
    bool size_like; /* torch._check_is_size was applied */
    fx_vr hint_vr;  /* unbacked: where its stand-in value must lie for the relations assumed over
                       it and other symbols to hold at their example values (u0 + s0 <= 16 with
                       s0 = 3 gives u0 <= 13); [-int_oo, int_oo] otherwise */
} fx_symbol_priv;

struct fx_shape_env {
    int64_t refcount;
    struct fx_sym **buckets; /* (nbuckets,) hash chains of every node */
    size_t nbuckets;         /* power of two */
    size_t count;            /* nodes in the table */
    uint32_t next_id;
    fx_symbol_info *syms; /* (nsyms,) every symbol in creation order */
    fx_symbol_priv *priv; /* (nsyms,) */
    int nsyms, capsyms;
    int nbacked, nunbacked; /* next s<N> / u<N> */
    fx_guard *guards;
    int nguards, capguards;
    fx_guard *asserts; /* deferred runtime asserts */
    int nasserts, capasserts;
    const struct fx_sym **facts; /* relations known true (guards and assumptions) */
    int nfacts, capfacts;
    fx_sym_refinement *refs; /* what each guard / assert changed */
    int nrefs, caprefs;
    fx_sym_where_fn where;
    void *where_ud;
    fx_guard_fn on_guard;
    void *on_guard_ud;
    const char *op; /* op being computed (static string) or NULL */
    /* comparisons on unbacked symbols that no range decides, waiting for torch._check */
    const struct fx_sym *pending[FX_PENDING_CAP];
    bool pending_backed[FX_PENDING_CAP]; /* a backed comparison for torch.cond: a guard later */
    int npending;
    fx_err pending_err; /* the data-dependent error of pending[0] (with its Lua location) */
    /* existing unbacked symbols the next create_unbacked calls hand out (a retrace) */
    const struct fx_sym *reuse[FX_REUSE_CAP];
    int nreuse, reuse_at;
};

/* The symbol node of env->syms[index], named s<num> / u<num> (shape_env.c makes each once). */
const struct fx_sym *fx_sym_new_symbol(fx_shape_env *env, int64_t index, int64_t num,
                                       bool unbacked);
/* Frees every node of env (when env dies). */
void fx_sym_free_all(fx_shape_env *env);

/* Canonical order of ADD terms (monomials compared factor by factor, by id then exponent). */
int fx_sym_term_cmp(const struct fx_sym *a, const struct fx_sym *b);

#endif
