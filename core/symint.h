/* core/symint.h — symbolic integers: expressions over size symbols, value ranges, the shape
 * environment with its guards, and the size type meta functions compute with.
 * Layer: core. Semantics follow torch/fx/experimental/symbolic_shapes.py (ShapeEnv, guards,
 * replacements, unbacked symbols), torch/utils/_sympy/value_ranges.py (ValueRanges, int_oo) and
 * torch/utils/_sympy/functions.py (FloorDiv, Mod, Max, Min); printing is sympy's str() as
 * torch 2.5 shows it (`s0`, `s0 + 1`, `2*s0`, `s0*s1`, `s0**2`, `Max(s0, s1)`, `(s0//2)`,
 * `Mod(s0, 3)`, `Eq(s0, s1)`, `s0 < 64`).
 *
 * Expressions (fx_sym) are immutable and hash-consed inside the shape environment that made
 * them: two equal expressions of one environment are the same pointer, so `a == b` compares
 * them. The canonical form is a sum of products with integer coefficients; FloorDiv, Mod, Max
 * and Min are atoms whose arguments are themselves canonical; relations (Eq, Ne, <, <=, >, >=)
 * and True/False are expressions too. Expressions live as long as their environment
 * (refcounted): whoever keeps an expression keeps a reference to its environment.
 *
 * fx_symint is the size type of meta functions: the concrete value under the example inputs
 * (the "hint", what every kernel and the static path read) plus the expression, NULL when the
 * value is a plain integer. Arithmetic on two concrete values is the integer operation; only a
 * symbolic operand costs an expression build. Out of memory (or an expression past the size
 * limits) makes the result the error expression (fx_sym_is_error), which every later operation
 * propagates and every check reports as FX_ENOMEM. Not thread-safe: one environment belongs to
 * one trace. */
#ifndef FX_SYMINT_H
#define FX_SYMINT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fx_err.h"
#include "core/strbuf.h"

typedef struct fx_sym fx_sym;
typedef struct fx_shape_env fx_shape_env;

typedef enum fx_sym_kind {
    FX_SYM_ERROR = 0, /* out of memory / too large: propagates */
    FX_SYM_CONST,     /* an integer */
    FX_SYM_BOOL,      /* True / False (relations that decide themselves) */
    FX_SYM_SYMBOL,    /* s<N> (backed) or u<N> (unbacked) */
    FX_SYM_ADD,       /* constant + terms (>= 1 term, >= 2 parts) */
    FX_SYM_MUL,       /* coefficient * product of atom**exponent (not a bare atom) */
    FX_SYM_FLOORDIV,  /* FloorDiv(a, b): Python's a // b */
    FX_SYM_MOD,       /* Mod(a, b): Python's a % b */
    FX_SYM_MAX,       /* Max(a, b, ...) */
    FX_SYM_MIN,
    FX_SYM_EQ, /* relations: (lhs, rhs) */
    FX_SYM_NE,
    FX_SYM_LT,
    FX_SYM_LE,
    FX_SYM_GT,
    FX_SYM_GE,
} fx_sym_kind;

/* ---- value ranges --------------------------------------------------------------------------- */

/* torch's int_oo: INT64_MAX stands for +infinity, -INT64_MAX for -infinity. */
#define FX_INT_OO INT64_MAX

typedef struct fx_vr {
    int64_t lo; /* inclusive lower bound, -FX_INT_OO = unbounded */
    int64_t hi; /* inclusive upper bound, FX_INT_OO = unbounded */
} fx_vr;

/* "VR[2, int_oo]", "VR[-int_oo, 7]" (ValueRanges.__repr__ of torch 2.5). */
void fx_vr_format(fx_strbuf *sb, fx_vr r);

/* ---- the shape environment ------------------------------------------------------------------ */

/* Where a guard or a symbol came from: the Lua location ("model.lua:12") and the source line,
 * filled by the embedding layer's callback (fx_shape_env_set_where). */
typedef void (*fx_sym_where_fn)(void *ud, char *loc, int loc_cap, char *line, int line_cap);

typedef struct fx_guard {
    const fx_sym *expr; /* the relation that held under the example values (True when checked) */
    char *loc;          /* "file:line" of the Lua code, "" when unknown; owned by the env */
    char *line;         /* that Lua source line, trimmed, or "" */
    char *op;           /* ATen op (or API function) that asked, e.g. "aten.view.default", or "" */
} fx_guard;

typedef struct fx_symbol_info {
    const fx_sym *sym;         /* the symbol itself */
    bool unbacked;             /* u<N>: no example value */
    int64_t hint;              /* example value (backed); a fallback for unbacked ones */
    fx_vr vr;                  /* current value range (narrowed by guards / checks) */
    fx_vr declared;            /* the range asked for at creation (before 0/1 specialization) */
    const fx_sym *replacement; /* what guards proved it equal to (s1 -> s0, s0 -> 4), or NULL */
    char *source;              /* "x.size()[0]", "x.item()" ...; owned by the env */
    char *loc;                 /* Lua location that created it, "" when unknown */
} fx_symbol_info;

/* What one guard or runtime assert taught about one symbol (ShapeEnv's var_to_range and
 * replacements, with the cause kept): its range before and after, and the replacement it set.
 * A guard that narrows two symbols (s1 -> s0 meets both ranges) gives one record per symbol. */
typedef struct fx_sym_refinement {
    const fx_sym *sym;         /* the symbol that changed */
    int index;                 /* 0-based index into fx_shape_env_guards (or _runtime_asserts) */
    bool is_assert;            /* index is into the runtime asserts (torch._check) */
    fx_vr before, after;       /* its value range before and after */
    const fx_sym *replacement; /* the replacement this set (s1 -> s0, s0 -> 4), or NULL */
} fx_sym_refinement;

/* Called right after a guard is recorded (index: its 0-based index in fx_shape_env_guards), or,
 * is_assert, a deferred runtime assert (torch._check; index into fx_shape_env_runtime_asserts). */
typedef void (*fx_guard_fn)(void *ud, int index, bool is_assert);

/* How many environments are alive: 0 means no symbolic value can exist, which lets dispatch skip
 * looking for one (the static path's cost of dynamic shapes is this one load). */
extern int fx_shape_env_live;

/* A new environment (one reference), or NULL with FX_ENOMEM in err. */
fx_shape_env *fx_shape_env_new(fx_err *err);
fx_shape_env *fx_shape_env_retain(fx_shape_env *env); /* returns env; NULL-safe */
/* Drops a reference; at zero frees every expression, guard and symbol of env. NULL-safe. */
void fx_shape_env_release(fx_shape_env *env);

/* Sets the callback that says where the user's code is (called when a guard or symbol is
 * recorded). fn may be NULL. */
void fx_shape_env_set_where(fx_shape_env *env, fx_sym_where_fn fn, void *ud);
/* Removes the location callback if its ud is `ud` (a tracer that dies while another trace may
 * have taken the environment over). NULL-safe. */
void fx_shape_env_unset_where(fx_shape_env *env, void *ud);
/* Sets the callback told about every guard and runtime assert as it is recorded (the debugger's
 * `:break guard`); fn may be NULL (off). Whoever sets it clears it before ud dies. */
void fx_shape_env_set_on_guard(fx_shape_env *env, fx_guard_fn fn, void *ud);
/* Names the op now being computed, recorded with every guard until the next call ("" or NULL =
 * none). The string must outlive the call that uses it (op names are static). */
void fx_shape_env_set_op(fx_shape_env *env, const char *op);

/* A new backed symbol s<N> (N counts symbols of env from 0) with example value `hint` and range
 * `vr` intersected with the size range [2, int_oo] when `is_size` (0 and 1 are specialized
 * away, as ShapeEnv's specialize_zero_one). `source` names where it comes from ("x.size()[0]").
 * FX_EARG "<hint> not in range [lo, hi]" when the example value is outside; FX_ENOMEM. */
int fx_shape_env_create_symbol(fx_shape_env *env, int64_t hint, fx_vr vr, bool is_size,
                               const char *source, const fx_sym **out, fx_err *err);
/* A new unbacked symbol u<N> (range [-int_oo, int_oo]), e.g. for Tensor.item(); while a
 * fx_shape_env_reuse_unbacked list has entries left, its next symbol instead (kept as it is). */
int fx_shape_env_create_unbacked(fx_shape_env *env, const char *source, const fx_sym **out,
                                 fx_err *err);
/* The next n fx_shape_env_create_unbacked calls return syms[0..n) (existing unbacked symbols of
 * env, in the order their op created them) instead of new ones: a retrace of a program
 * (run_decompositions) binds the program's own u<N>, keeping its ranges and asserts, as
 * ShapeEnv's rebind_unbacked does. n = 0 clears the list. syms is copied. FX_EARG when n is
 * over FX_REUSE_CAP or a symbol is not an unbacked symbol of env. */
#define FX_REUSE_CAP 16
int fx_shape_env_reuse_unbacked(fx_shape_env *env, const fx_sym *const *syms, int n, fx_err *err);

/* A symbol as a saved program describes it (pt2/ loading): s<num> (backed) or u<num>
 * (unbacked), its example value, current and declared ranges, whether it was marked size-like,
 * where it came from ("x.size()[0]", "model.lua:12"; NULL or "" = unknown). */
typedef struct fx_symbol_restore {
    bool unbacked;
    int64_t num;
    int64_t hint;
    fx_vr vr, declared;
    bool size_like;
    const char *source, *loc;
} fx_symbol_restore;
/* Creates that symbol exactly (no 0/1 specialization, no range check against the hint); later
 * fx_shape_env_create_* symbols are numbered past it. FX_EARG when the name exists already or the
 * range is empty; FX_ENOMEM. */
int fx_shape_env_restore_symbol(fx_shape_env *env, const fx_symbol_restore *r, const fx_sym **out,
                                fx_err *err);
/* Makes `repl` (an expression of s's environment) the replacement of symbol s, as a guard had
 * proved it. FX_EARG when s is no symbol or repl leads back to s. */
int fx_shape_env_restore_replacement(const fx_sym *s, const fx_sym *repl, fx_err *err);
/* Records a guard (or, runtime_assert, a deferred runtime assert) of a saved program with its
 * Lua location, source line and op ("" / NULL = unknown), and takes it as known true. loc, line
 * and op are copied into env (the caller keeps and frees its own strings); expr is borrowed
 * (interned in env). The expression must be a relation (or bool) of env: FX_EARG otherwise;
 * FX_ENOMEM (the guard may then be recorded without some of its strings). The saved facts are
 * taken as given, not re-derived (torch's own format saves no guards: fxdb writes them in its
 * custom metadata). */
int fx_shape_env_restore_guard(fx_shape_env *env, bool runtime_assert, const fx_sym *expr,
                               const char *loc, const char *line, const char *op, fx_err *err);

/* Appends what a guard or assert of a saved program taught (after fx_shape_env_restore_guard
 * recorded it): r->sym a symbol of env, r->index a recorded guard (or assert) number. FX_EARG
 * otherwise; FX_ENOMEM. */
int fx_shape_env_restore_refinement(fx_shape_env *env, const fx_sym_refinement *r, fx_err *err);

/* Symbols of env in creation order (backed and unbacked interleaved); borrowed, valid until the
 * next symbol is created. */
const fx_symbol_info *fx_shape_env_symbols(const fx_shape_env *env, int *n);
/* The info of symbol `s` (a FX_SYM_SYMBOL of env), borrowed; NULL for anything else. */
const fx_symbol_info *fx_shape_env_symbol(const fx_shape_env *env, const fx_sym *s);
/* Guards recorded so far, in order; borrowed, valid until the next guard. */
const fx_guard *fx_shape_env_guards(const fx_shape_env *env, int *n);
/* Runtime asserts deferred so far (torch._check on unbacked values), same form as guards. */
const fx_guard *fx_shape_env_runtime_asserts(const fx_shape_env *env, int *n);
/* What each guard and runtime assert changed, in the order it happened (a guard that proved
 * nothing new about any symbol has none); borrowed, valid until the next guard or assert.
 * The debugger's `:why s0` reads the records of one symbol. */
const fx_sym_refinement *fx_shape_env_refinements(const fx_shape_env *env, int *n);

/* e with every replacement applied (transitively) and re-canonicalized. */
const fx_sym *fx_shape_env_simplify(fx_shape_env *env, const fx_sym *e);
/* The value range of e under the symbols' current ranges (interval arithmetic, after
 * replacements). Relations give [0, 1] or a singleton. */
fx_vr fx_shape_env_bound(fx_shape_env *env, const fx_sym *e);
/* The value of e under the example values. FX_EDATADEP (kind "data_dependent") when e involves
 * an unbacked symbol; FX_EARG for a division or modulo by zero. Relations give 0 / 1. */
int fx_shape_env_hint(fx_shape_env *env, const fx_sym *e, int64_t *out, fx_err *err);

/* THE decision point of control flow on symbolic values (ShapeEnv.evaluate_expr). `cond` is a
 * relation or bool expression of env. If the replacements, value ranges and earlier guards
 * prove it, *out is that answer and nothing is recorded. Otherwise, when every symbol in it is
 * backed, *out is its value under the example values and a guard (cond, or its negation when
 * false) is recorded with the Lua location and the current op; an equality that holds adds a
 * replacement (the newer symbol becomes the older one or a constant) and an inequality over one
 * symbol narrows that symbol's range. When an unbacked symbol is involved: FX_EDATADEP, kind
 * "data_dependent", "Could not guard on data-dependent expression u0 > 0 (unhinted: u0 > 0).
 * (Size-like symbols: none)". FX_ENOMEM when cond is the error expression. */
int fx_shape_env_evaluate(const fx_sym *cond, bool *out, fx_err *err);
/* Whether ranges, replacements and earlier guards decide cond without a guard: *known, and
 * then *out. Records nothing (size-oblivious queries of meta functions). */
void fx_shape_env_statically_known(const fx_sym *cond, bool *known, bool *out);
/* torch._check(cond) / a runtime assert: if cond is provably false, FX_EARG "... is always
 * False"; if provably true, nothing; else it is recorded as a deferred runtime assert and
 * assumed from now on (ranges narrowed, equalities replaced) — for unbacked symbols this is
 * how a program tells export what it cannot infer. */
int fx_shape_env_assume(const fx_sym *cond, fx_err *err);
/* torch._check_is_size(u): u's range becomes its intersection with [0, int_oo] and u is
 * marked size-like (data-dependent errors list it). */
int fx_shape_env_mark_size_like(const fx_sym *u, fx_err *err);
/* Undecided comparisons (torch._check's argument). Lua forces `a >= 0` to a boolean before
 * torch._check sees it, so a comparison that needs an unbacked symbol's value
 * (fx_shape_env_evaluate's FX_EDATADEP, in `why`) is parked here by the binding instead of
 * failing, and answers true. torch._check then takes the pending conditions
 * (fx_shape_env_take_pending) and assumes them (or the negation of a single one it got false
 * for). Anything else that happens first — an op, a higher-order op, the end of the trace —
 * calls fx_shape_env_check_pending, which fails with the saved data-dependent error of the
 * first one (its Lua line), so no branch ever silently takes the parked answer. At most
 * FX_PENDING_CAP (16) at once: one more fails at once with its own error. */
#define FX_PENDING_CAP 16
int fx_shape_env_add_pending(fx_shape_env *env, const fx_sym *cond, const fx_err *why,
                             fx_err *err);
/* A comparison over backed symbols on a torch.cond line (`torch.cond(x.shape[1] > 2, ...)`),
 * parked so that torch.cond can keep it as a symbolic predicate (its value under the example
 * values is what the caller answered). Taken by fx_shape_env_take_pending; anything else
 * commits it as an ordinary guard (fx_shape_env_evaluate) in fx_shape_env_check_pending. */
int fx_shape_env_add_pending_backed(fx_shape_env *env, const fx_sym *cond, fx_err *err);
/* Commits parked backed comparisons as guards; then FX_OK when nothing else was pending, else
 * the first pending unbacked comparison's FX_EDATADEP error. The list is cleared. env may be
 * NULL. */
int fx_shape_env_check_pending(fx_shape_env *env, fx_err *err);
/* The data-dependent error saved with the first pending comparison (its Lua line in ->source);
 * borrowed, meaningful while something is pending. */
const fx_err *fx_shape_env_pending_why(const fx_shape_env *env);
/* How many comparisons are pending. */
int fx_shape_env_pending_count(const fx_shape_env *env);
/* Moves up to max pending conditions into out (in order; backed[i] tells a parked backed one,
 * backed may be NULL) and clears the list; returns how many. env may be NULL (0). */
int fx_shape_env_take_pending(fx_shape_env *env, const fx_sym **out, bool *backed, int max);
/* Whether `s` was marked size-like. */
bool fx_shape_env_is_size_like(const fx_shape_env *env, const fx_sym *s);

/* ---- expressions ------------------------------------------------------------------------------
 */

/* The error expression (shared by every environment). */
const fx_sym *fx_sym_error(void);
bool fx_sym_is_error(const fx_sym *e);
fx_sym_kind fx_sym_kind_of(const fx_sym *e);
fx_shape_env *fx_sym_env(const fx_sym *e); /* NULL for the error expression */
/* The constant of a FX_SYM_CONST / FX_SYM_BOOL; else 0 (check the kind first). */
int64_t fx_sym_const_value(const fx_sym *e);
/* Arguments of a compound expression (ADD: terms; MUL: factors; others: operands). */
int fx_sym_nargs(const fx_sym *e);
const fx_sym *fx_sym_arg(const fx_sym *e, int i);
/* The numeric part: a MUL's coefficient, an ADD's constant, a CONST's value; 1 for anything
 * else. */
int64_t fx_sym_coeff(const fx_sym *e);
/* The exponent of factor i of a MUL (1 for other kinds). */
int64_t fx_sym_exp(const fx_sym *e, int i);
/* Whether the expression has no symbols (a constant or bool). */
bool fx_sym_is_constant(const fx_sym *e);
/* Whether e contains an unbacked symbol. */
bool fx_sym_has_unbacked(const fx_sym *e);
/* Calls fn for each distinct symbol of e (in first-occurrence order). */
void fx_sym_foreach_symbol(const fx_sym *e, void (*fn)(void *ud, const fx_sym *s), void *ud);

/* Constructors. All results are canonical, interned in env (of the symbolic operand). A NULL
 * env for fx_sym_int is not allowed. */
const fx_sym *fx_sym_int(fx_shape_env *env, int64_t v);
const fx_sym *fx_sym_bool(fx_shape_env *env, bool v);
const fx_sym *fx_sym_add(const fx_sym *a, const fx_sym *b);
const fx_sym *fx_sym_sub(const fx_sym *a, const fx_sym *b);
const fx_sym *fx_sym_mul(const fx_sym *a, const fx_sym *b);
const fx_sym *fx_sym_neg(const fx_sym *a);
/* Python's a // b and a % b (FloorDiv / Mod atoms, simplified: exact division, constant terms
 * divisible by b, nested FloorDiv, constants folded). A constant b == 0 gives the error
 * expression; callers check divisors first (fx_si_floordiv does, with Python's message). */
const fx_sym *fx_sym_floordiv(const fx_sym *a, const fx_sym *b);
const fx_sym *fx_sym_mod(const fx_sym *a, const fx_sym *b);
const fx_sym *fx_sym_max(const fx_sym *a, const fx_sym *b);
const fx_sym *fx_sym_min(const fx_sym *a, const fx_sym *b);
/* A relation (kind FX_SYM_EQ ... FX_SYM_GE); decided at once (a bool) when lhs - rhs is a
 * constant. */
const fx_sym *fx_sym_rel(fx_sym_kind rel, const fx_sym *lhs, const fx_sym *rhs);
/* Negation of a relation or bool (Not(a < b) is a >= b, Not(Eq) is Ne). */
const fx_sym *fx_sym_not(const fx_sym *rel);
/* e with the symbols replaced as fn says (fn returns the replacement, or NULL to keep one). */
const fx_sym *fx_sym_subst(const fx_sym *e, const fx_sym *(*fn)(void *ud, const fx_sym *s),
                           void *ud);
/* Evaluates e with symbol values from fn (returns FX_OK and *v, or an error). Python semantics
 * for // and % (FX_EARG "integer division or modulo by zero"); relations give 0 / 1. */
int fx_sym_eval(const fx_sym *e, int (*fn)(void *ud, const fx_sym *s, int64_t *v, fx_err *err),
                void *ud, int64_t *out, fx_err *err);

/* Appends e as sympy's str() prints it (see the file comment). */
void fx_sym_format(fx_strbuf *sb, const fx_sym *e);
/* e printed into buf (truncated to cap); returns buf. */
const char *fx_sym_str(const fx_sym *e, char *buf, int cap);

/* ---- the size type -------------------------------------------------------------------------- */

typedef struct fx_symint {
    int64_t hint;       /* the value under the example inputs (what kernels use) */
    const fx_sym *expr; /* NULL: the value is the plain integer `hint` */
} fx_symint;

#define FX_SI(v) ((fx_symint){(int64_t)(v), NULL})

static inline bool fx_si_is_sym(fx_symint a) { return a.expr != NULL; }
/* a's expression (a constant expression of env for a plain integer). */
const fx_sym *fx_si_expr(fx_shape_env *env, fx_symint a);
/* The size value of expression e: its hint (fx_shape_env_hint, or the fallback of unbacked
 * symbols) with e, or a plain integer when e is a constant. */
fx_symint fx_si_from_expr(const fx_sym *e);

fx_symint fx_si_add_slow(fx_symint a, fx_symint b);
fx_symint fx_si_sub_slow(fx_symint a, fx_symint b);
fx_symint fx_si_mul_slow(fx_symint a, fx_symint b);
fx_symint fx_si_max_slow(fx_symint a, fx_symint b);
fx_symint fx_si_min_slow(fx_symint a, fx_symint b);

static inline fx_symint fx_si_add(fx_symint a, fx_symint b) {
    if (!a.expr && !b.expr) return FX_SI(a.hint + b.hint);
    return fx_si_add_slow(a, b);
}
static inline fx_symint fx_si_sub(fx_symint a, fx_symint b) {
    if (!a.expr && !b.expr) return FX_SI(a.hint - b.hint);
    return fx_si_sub_slow(a, b);
}
static inline fx_symint fx_si_mul(fx_symint a, fx_symint b) {
    if (!a.expr && !b.expr) return FX_SI(a.hint * b.hint);
    return fx_si_mul_slow(a, b);
}
static inline fx_symint fx_si_max(fx_symint a, fx_symint b) {
    if (!a.expr && !b.expr) return FX_SI(a.hint > b.hint ? a.hint : b.hint);
    return fx_si_max_slow(a, b);
}
static inline fx_symint fx_si_min(fx_symint a, fx_symint b) {
    if (!a.expr && !b.expr) return FX_SI(a.hint < b.hint ? a.hint : b.hint);
    return fx_si_min_slow(a, b);
}
/* Python's a // b and a % b. A divisor that is (or guards to) zero is FX_EARG "integer division
 * or modulo by zero"; a symbolic divisor is guarded != 0 through fx_shape_env_evaluate. */
int fx_si_floordiv(fx_symint a, fx_symint b, fx_symint *out, fx_err *err);
int fx_si_mod(fx_symint a, fx_symint b, fx_symint *out, fx_err *err);

/* Comparisons that decide control flow: plain integers compare at once, anything symbolic goes
 * through fx_shape_env_evaluate (which may record a guard or fail as data-dependent). */
int fx_si_cmp_slow(fx_sym_kind rel, fx_symint a, fx_symint b, bool *out, fx_err *err);
static inline int fx_si_cmp(fx_sym_kind rel, fx_symint a, fx_symint b, bool *out, fx_err *err) {
    if (!a.expr && !b.expr) {
        switch (rel) {
        case FX_SYM_EQ: *out = a.hint == b.hint; return FX_OK;
        case FX_SYM_NE: *out = a.hint != b.hint; return FX_OK;
        case FX_SYM_LT: *out = a.hint < b.hint; return FX_OK;
        case FX_SYM_LE: *out = a.hint <= b.hint; return FX_OK;
        case FX_SYM_GT: *out = a.hint > b.hint; return FX_OK;
        case FX_SYM_GE: *out = a.hint >= b.hint; return FX_OK;
        default: break;
        }
    }
    return fx_si_cmp_slow(rel, a, b, out, err);
}
/* Size-oblivious test (guard_size_oblivious): true only when provably true without a guard,
 * treating unbacked size-like symbols as >= 2; a plain integer compares at once. Records
 * nothing. Used for the 0/1 checks of broadcasting and contiguity. */
bool fx_si_known_true(fx_sym_kind rel, fx_symint a, fx_symint b);

/* Appends a as torch prints a SymInt: the integer, or the expression with the replacements the
 * guards made applied (SymNode.expr: s1 -> s0, s2 -> 4). */
void fx_si_format(fx_strbuf *sb, fx_symint a);

#endif
