/* pt2/pt2_sym.c — symbolic sizes of a loaded program: SymExpr texts back into expressions of one
 * shape environment, the symbols they name created with the file's range constraints.
 * Layer: pt2. The text is what serialize.py writes as a SymExpr's expr_str: sympy's srepr since
 * torch 2.7 ("Add(Symbol('s0', integer=True, positive=True), Integer(1))"), sympy's str before
 * ("s0 + 1", "2*s0", "(s0//2)", "Mod(s0, 3)", "Max(s0, s1)", "s0**2", "Eq(s0, s1)"). Both are
 * read by one small parser over the functions torch's deserializer lets sympify see
 * (GraphModuleDeserializer.sympy_functions) that fxdb's expressions can hold; anything else is
 * refused by name. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt2/pt2_impl.h"

struct pt2_symname {
    char name[24];
    const fx_sym *sym;
};

void pt2_syms_free(pt2_syms *s) {
    fx_shape_env_release(s->env);
    fx_free(s->v);
    memset(s, 0, sizeof *s);
}

static int ensure_env(pt2_syms *s, fx_err *err) {
    if (s->env) return FX_OK;
    s->env = fx_shape_env_new(err);
    return s->env ? FX_OK : err->code;
}

const fx_sym *pt2_sym_lookup(const pt2_syms *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].name, name)) return s->v[i].sym;
    return NULL;
}

/* "s12" -> (false, 12), "u3" -> (true, 3); false for any other name. */
static bool symbol_name(const char *name, bool *unbacked, int64_t *num) {
    if ((name[0] != 's' && name[0] != 'u') || !isdigit((unsigned char)name[1])) return false;
    if (name[1] == '0' && name[2]) return false;
    char *end;
    errno = 0;
    long long v = strtoll(name + 1, &end, 10);
    if (*end || errno || v > 1000000000) return false;
    *unbacked = name[0] == 'u';
    *num = v;
    return true;
}

int pt2_sym_define(pt2_syms *s, const char *name, fx_symbol_restore *r, const fx_sym **out,
                   fx_err *err) {
    *out = NULL;
    if (!symbol_name(name, &r->unbacked, &r->num))
        return fx_err_setf(err, FX_ENOTIMPL,
                           "symbol '%.40s' is not one fxdb has (integer sizes s<N> and unbacked "
                           "integers u<N> only)",
                           name);
    if (pt2_sym_lookup(s, name))
        return fx_err_setf(err, FX_EIO, "symbol %s is defined twice", name);
    if (s->n >= 4096) return fx_err_setf(err, FX_ENOTIMPL, "more than 4096 symbols");
    int rc = ensure_env(s, err);
    if (rc) return rc;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        struct pt2_symname *v = fx_realloc(s->v, sizeof *v * (size_t)cap);
        if (!v) return fx_err_setf(err, FX_ENOMEM, "out of memory");
        s->v = v;
        s->cap = cap;
    }
    if ((rc = fx_shape_env_restore_symbol(s->env, r, out, err))) return rc;
    snprintf(s->v[s->n].name, sizeof s->v[s->n].name, "%s", name);
    s->v[s->n++].sym = *out;
    return FX_OK;
}

/* A bound of a RangeConstraint: an int, or null / "Infinity" for an infinite one. */
static int bound_of(const cJSON *v, bool upper, int64_t *out, fx_err *err) {
    *out = upper ? FX_INT_OO : -FX_INT_OO;
    if (!v || cJSON_IsNull(v)) return FX_OK;
    if (cJSON_IsString(v)) {
        const char *t = v->valuestring;
        if (!strcmp(t, "Infinity") || !strcmp(t, "-Infinity")) {
            *out = t[0] == '-' ? -FX_INT_OO : FX_INT_OO;
            return FX_OK;
        }
        if (!strncmp(t, "#i", 2)) { /* an integer past 2^53, kept exact (pt2_read.c's prep_json) */
            char *end;
            errno = 0;
            long long x = strtoll(t + 2, &end, 10);
            if (!*end && !errno) {
                *out = x >= FX_INT_OO ? FX_INT_OO : x <= -FX_INT_OO ? -FX_INT_OO : x;
                return FX_OK;
            }
            *out = t[2] == '-' ? -FX_INT_OO : FX_INT_OO; /* beyond int64: int_oo */
            return FX_OK;
        }
    }
    if (cJSON_IsNumber(v) && pt2_int64_of(v->valuedouble, out)) return FX_OK;
    return fx_err_setf(err, FX_EIO, "%s is not an integer or null", upper ? "max_val" : "min_val");
}

int pt2_sym_range(const cJSON *ranges, const char *name, bool *found, fx_vr *out, fx_err *err) {
    *found = false;
    *out = (fx_vr){-FX_INT_OO, FX_INT_OO};
    const cJSON *rc =
        cJSON_IsObject(ranges) ? cJSON_GetObjectItemCaseSensitive(ranges, name) : NULL;
    if (!rc) return FX_OK;
    if (!cJSON_IsObject(rc)) return fx_err_setf(err, FX_EIO, "expected an object");
    int e = bound_of(cJSON_GetObjectItemCaseSensitive(rc, "min_val"), false, &out->lo, err);
    if (!e) e = bound_of(cJSON_GetObjectItemCaseSensitive(rc, "max_val"), true, &out->hi, err);
    if (!e && out->lo > out->hi)
        e = fx_err_setf(err, FX_EIO, "the empty range [%lld, %lld]", (long long)out->lo,
                        (long long)out->hi);
    *found = !e;
    return e;
}

int pt2_sym_create(pt2_syms *s, const char *name, int64_t hint, bool has_hint, const char *source,
                   const fx_sym **out, fx_err *err) {
    fx_symbol_restore r = {0};
    if (!symbol_name(name, &r.unbacked, &r.num)) return pt2_sym_define(s, name, &r, out, err);
    bool found;
    fx_vr vr;
    int rc = pt2_sym_range(s->ranges, name, &found, &vr, err);
    if (rc) return fx_err_setf(err, rc, "range_constraints.%s: %s", name, err->msg);
    if (r.unbacked) {
        r.declared = r.vr = vr;
    } else {
        /* a size symbol as ShapeEnv.create_symbol makes it: the declared range (Dim's min and
         * max, [0, int_oo] when the file gives none) narrowed to [2, int_oo] */
        r.declared = found ? vr : (fx_vr){0, FX_INT_OO};
        r.vr = r.declared;
        if (r.vr.hi >= 2 && r.vr.lo < 2) r.vr.lo = 2;
    }
    if (!has_hint) { /* no example value in the file: the lowest the range allows, at least 2 */
        hint = r.unbacked ? 8192 : 2;
        if (hint < r.vr.lo) hint = r.vr.lo;
        if (hint > r.vr.hi) hint = r.vr.hi;
    }
    r.hint = hint;
    r.source = source;
    return pt2_sym_define(s, name, &r, out, err);
}

/* ---- the parser ---------------------------------------------------------------------------------
 */

typedef struct parser {
    pt2_syms *s;
    const char *p, *text;
    fx_err *err;
    int rc;
    int depth;
} parser;

static const fx_sym *perr(parser *ps, int code, const char *fmt, const char *a) {
    if (!ps->rc) {
        char m[200];
        snprintf(m, sizeof m, fmt, a);
        ps->rc = fx_err_setf(ps->err, code, "%s (at offset %d of \"%.80s\")", m,
                             (int)(ps->p - ps->text), ps->text);
    }
    return NULL;
}

static void skip(parser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n') ps->p++;
}
static bool eat(parser *ps, const char *tok) {
    skip(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n)) return false;
    ps->p += n;
    return true;
}

static const fx_sym *expr(parser *ps);

/* An expression that must be an integer constant (Integer(n), an exponent). */
static bool const_of(const fx_sym *e, int64_t *v) {
    if (!e || fx_sym_kind_of(e) != FX_SYM_CONST) return false;
    *v = fx_sym_const_value(e);
    return true;
}

static const fx_sym *checked(parser *ps, const fx_sym *e) {
    if (e && fx_sym_is_error(e))
        return perr(ps, FX_EIO, "%s",
                    "an expression fxdb cannot hold (too large, or a division by zero)");
    return e;
}

static const fx_sym *rel_of(parser *ps, fx_sym_kind k, const fx_sym *a, const fx_sym *b) {
    if (!a || !b) return NULL;
    if (fx_sym_kind_of(a) >= FX_SYM_EQ || fx_sym_kind_of(b) >= FX_SYM_EQ ||
        fx_sym_kind_of(a) == FX_SYM_BOOL || fx_sym_kind_of(b) == FX_SYM_BOOL)
        return perr(ps, FX_ENOTIMPL, "%s", "a relation between relations");
    return checked(ps, fx_sym_rel(k, a, b));
}

static bool is_rel(const fx_sym *e) {
    fx_sym_kind k = fx_sym_kind_of(e);
    return k == FX_SYM_BOOL || k >= FX_SYM_EQ;
}

/* Arithmetic on two integer expressions (a relation is no operand). */
static const fx_sym *arith(parser *ps, char op, const fx_sym *a, const fx_sym *b) {
    if (!a || !b) return NULL;
    if (is_rel(a) || is_rel(b)) return perr(ps, FX_ENOTIMPL, "%s", "arithmetic on a relation");
    int64_t c;
    switch (op) {
    case '+': return checked(ps, fx_sym_add(a, b));
    case '-': return checked(ps, fx_sym_sub(a, b));
    case '*': return checked(ps, fx_sym_mul(a, b));
    case '/':
    case '%':
        if (const_of(b, &c) && c == 0)
            return perr(ps, FX_EIO, "%s", "integer division or modulo by zero");
        return checked(ps, op == '/' ? fx_sym_floordiv(a, b) : fx_sym_mod(a, b));
    case 'M': return checked(ps, fx_sym_max(a, b));
    case 'm': return checked(ps, fx_sym_min(a, b));
    case '^': {
        if (!const_of(b, &c) || c < 0 || c > 64)
            return perr(ps, FX_ENOTIMPL, "%s",
                        "a power whose exponent is not a constant from 0 to 64");
        const fx_sym *r = fx_sym_int(fx_sym_env(a), 1);
        for (int64_t i = 0; i < c && r; i++) r = checked(ps, fx_sym_mul(r, a));
        return r;
    }
    }
    return NULL;
}

static const fx_sym *integer(parser *ps, int64_t v) {
    if (ensure_env(ps->s, ps->err)) {
        ps->rc = ps->err->code;
        return NULL;
    }
    return checked(ps, fx_sym_int(ps->s->env, v));
}

/* The symbol called `name` (created on first use, with the file's range for it). */
static const fx_sym *symbol(parser *ps, const char *name) {
    const fx_sym *e = pt2_sym_lookup(ps->s, name);
    if (e) return e;
    if (pt2_sym_create(ps->s, name, 0, false, "", &e, ps->err)) {
        ps->rc = ps->err->code;
        return NULL;
    }
    return e;
}

static bool ident(parser *ps, char *buf, size_t cap) {
    skip(ps);
    size_t n = 0;
    if (!isalpha((unsigned char)*ps->p) && *ps->p != '_') return false;
    while (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_') n++;
    if (n >= cap) return false;
    memcpy(buf, ps->p, n);
    buf[n] = 0;
    ps->p += n;
    return true;
}

/* The arguments of NAME(...) after the '(' (keyword arguments such as integer=True are
 * skipped; a quoted string is allowed as Symbol's first argument). */
static int call_args(parser *ps, const char *fn, const fx_sym **args, int max, char *str,
                     size_t strcap) {
    int n = 0;
    if (eat(ps, ")")) return 0;
    for (;;) {
        skip(ps);
        const char *save = ps->p;
        char kw[32];
        if (ident(ps, kw, sizeof kw) && eat(ps, "=")) { /* keyword: its value is skipped */
            char val[32];
            if (!ident(ps, val, sizeof val))
                return perr(ps, FX_EIO, "a bad keyword argument of %s", fn), -1;
        } else if (ps->p = save, *ps->p == '\'' || *ps->p == '"') {
            char q = *ps->p++;
            const char *b = ps->p;
            while (*ps->p && *ps->p != q) ps->p++;
            if (!*ps->p) return perr(ps, FX_EIO, "%s", "an unterminated string"), -1;
            size_t l = (size_t)(ps->p - b);
            ps->p++;
            if (n != 0 || !str || l >= strcap)
                return perr(ps, FX_EIO, "an unexpected string in %s", fn), -1;
            memcpy(str, b, l);
            str[l] = 0;
            args[n++] = NULL;
        } else {
            if (n >= max) return perr(ps, FX_ENOTIMPL, "%s with this many arguments", fn), -1;
            args[n] = expr(ps);
            if (!args[n]) return -1;
            n++;
        }
        if (eat(ps, ")")) return n;
        if (!eat(ps, ",")) return perr(ps, FX_EIO, "expected ',' or ')' in %s", fn), -1;
    }
}

static const fx_sym *call(parser *ps, const char *fn) {
    const fx_sym *a[16] = {0};
    char str[64] = "";
    int n = call_args(ps, fn, a, 16, str, sizeof str);
    if (n < 0) return NULL;
    if (!strcmp(fn, "Symbol")) {
        if (n < 1 || !str[0]) return perr(ps, FX_EIO, "%s", "Symbol without a name");
        return symbol(ps, str);
    }
    for (int i = 0; i < n; i++)
        if (!a[i]) return perr(ps, FX_EIO, "an unexpected string in %s", fn);
    static const struct {
        const char *name;
        char op;
    } folds[] = {{"Add", '+'}, {"Mul", '*'}, {"Max", 'M'}, {"Min", 'm'}};
    for (size_t k = 0; k < sizeof folds / sizeof folds[0]; k++)
        if (!strcmp(fn, folds[k].name)) {
            if (n < 1) return perr(ps, FX_EIO, "%s without arguments", fn);
            const fx_sym *r = a[0];
            for (int i = 1; i < n && r; i++) r = arith(ps, folds[k].op, r, a[i]);
            return r;
        }
    static const struct {
        const char *name;
        char op;
    } bins[] = {{"FloorDiv", '/'},  {"CleanDiv", '/'}, {"Mod", '%'},
                {"PythonMod", '%'}, {"Pow", '^'},      {"PowByNatural", '^'}};
    for (size_t k = 0; k < sizeof bins / sizeof bins[0]; k++)
        if (!strcmp(fn, bins[k].name)) {
            if (n != 2) return perr(ps, FX_EIO, "%s takes 2 arguments", fn);
            return arith(ps, bins[k].op, a[0], a[1]);
        }
    static const struct {
        const char *name;
        fx_sym_kind k;
    } rels[] = {{"Eq", FX_SYM_EQ},
                {"Ne", FX_SYM_NE},
                {"StrictLessThan", FX_SYM_LT},
                {"Lt", FX_SYM_LT},
                {"LessThan", FX_SYM_LE},
                {"Le", FX_SYM_LE},
                {"StrictGreaterThan", FX_SYM_GT},
                {"Gt", FX_SYM_GT},
                {"GreaterThan", FX_SYM_GE},
                {"Ge", FX_SYM_GE}};
    for (size_t k = 0; k < sizeof rels / sizeof rels[0]; k++)
        if (!strcmp(fn, rels[k].name)) {
            if (n != 2) return perr(ps, FX_EIO, "%s takes 2 arguments", fn);
            return rel_of(ps, rels[k].k, a[0], a[1]);
        }
    if (!strcmp(fn, "Integer")) {
        int64_t v;
        if (n != 1 || !const_of(a[0], &v))
            return perr(ps, FX_EIO, "%s", "Integer takes one integer");
        return a[0];
    }
    if (!strcmp(fn, "Not")) {
        if (n != 1 || !is_rel(a[0])) return perr(ps, FX_EIO, "%s", "Not takes one relation");
        return checked(ps, fx_sym_not(a[0]));
    }
    return perr(ps, FX_ENOTIMPL, "the sympy function '%s' is not supported by fxdb", fn);
}

static const fx_sym *atom(parser *ps) {
    skip(ps);
    if (++ps->depth > 64)
        return perr(ps, FX_ENOTIMPL, "%s", "an expression nested more than 64 deep");
    const fx_sym *r = NULL;
    char name[64];
    if (eat(ps, "(")) {
        r = expr(ps);
        if (r && !eat(ps, ")")) r = perr(ps, FX_EIO, "%s", "expected ')'");
    } else if (isdigit((unsigned char)*ps->p)) {
        char *end;
        errno = 0;
        long long v = strtoll(ps->p, &end, 10);
        if (errno) return perr(ps, FX_ENOTIMPL, "%s", "an integer beyond int64");
        ps->p = end;
        if (*end == '.') return perr(ps, FX_ENOTIMPL, "%s", "a float in a size expression");
        r = integer(ps, v);
    } else if (ident(ps, name, sizeof name)) {
        if (eat(ps, "("))
            r = call(ps, name);
        else if (!strcmp(name, "True") || !strcmp(name, "true") || !strcmp(name, "False") ||
                 !strcmp(name, "false")) {
            if (ensure_env(ps->s, ps->err)) return ps->rc = ps->err->code, NULL;
            r = fx_sym_bool(ps->s->env, name[0] == 'T' || name[0] == 't');
        } else
            r = symbol(ps, name);
    } else {
        r = perr(ps, FX_EIO, "%s", *ps->p ? "unexpected character" : "unexpected end");
    }
    ps->depth--;
    return r;
}

static const fx_sym *unary(parser *ps);

static const fx_sym *power(parser *ps) {
    const fx_sym *a = atom(ps);
    if (a && eat(ps, "**")) { /* right-associative: a ** b ** c nests */
        if (++ps->depth > 64)
            return perr(ps, FX_ENOTIMPL, "%s", "an expression nested more than 64 deep");
        const fx_sym *b = unary(ps);
        ps->depth--;
        return b ? arith(ps, '^', a, b) : NULL;
    }
    return a;
}

static const fx_sym *unary(parser *ps) {
    if (eat(ps, "-")) {
        if (++ps->depth > 64)
            return perr(ps, FX_ENOTIMPL, "%s", "an expression nested more than 64 deep");
        const fx_sym *a = unary(ps);
        ps->depth--;
        return a ? arith(ps, '-', integer(ps, 0), a) : NULL;
    }
    return power(ps);
}

static const fx_sym *term(parser *ps) {
    const fx_sym *a = unary(ps);
    while (a) {
        skip(ps);
        if (ps->p[0] == '*' && ps->p[1] != '*') {
            ps->p++;
            a = arith(ps, '*', a, unary(ps));
        } else if (eat(ps, "//")) {
            a = arith(ps, '/', a, unary(ps));
        } else if (eat(ps, "%")) {
            a = arith(ps, '%', a, unary(ps));
        } else if (*ps->p == '/') {
            return perr(ps, FX_ENOTIMPL, "%s", "true division in a size expression");
        } else {
            break;
        }
    }
    return a;
}

static const fx_sym *sum(parser *ps) {
    const fx_sym *a = term(ps);
    while (a) {
        if (eat(ps, "+"))
            a = arith(ps, '+', a, term(ps));
        else if (eat(ps, "-"))
            a = arith(ps, '-', a, term(ps));
        else
            break;
    }
    return a;
}

static const fx_sym *expr(parser *ps) {
    const fx_sym *a = sum(ps);
    if (!a) return NULL;
    static const struct {
        const char *tok;
        fx_sym_kind k;
    } rels[] = {{"<=", FX_SYM_LE}, {">=", FX_SYM_GE}, {"==", FX_SYM_EQ},
                {"!=", FX_SYM_NE}, {"<", FX_SYM_LT},  {">", FX_SYM_GT}};
    for (size_t k = 0; k < sizeof rels / sizeof rels[0]; k++)
        if (eat(ps, rels[k].tok)) return rel_of(ps, rels[k].k, a, sum(ps));
    return a;
}

int pt2_sym_parse(pt2_syms *s, const char *text, const fx_sym **out, fx_err *err) {
    parser ps = {s, text, text, err, FX_OK, 0};
    *out = NULL;
    const fx_sym *e = expr(&ps);
    if (e && (skip(&ps), *ps.p))
        e = perr(&ps, FX_EIO, "%s", "unexpected text after the expression");
    if (!e) return ps.rc ? ps.rc : fx_err_setf(err, FX_EIO, "cannot read \"%.80s\"", text);
    *out = e;
    return FX_OK;
}

bool pt2_sym_bare_name(const char *text, char *name, int cap) {
    const char *p = text;
    while (*p == ' ') p++;
    if (!strncmp(p, "Symbol(", 7)) {
        p += 7;
        while (*p == ' ') p++;
        if (*p != '\'' && *p != '"') return false;
        char q = *p++;
        const char *e = strchr(p, q);
        if (!e || e - p >= cap) return false;
        memcpy(name, p, (size_t)(e - p));
        name[e - p] = 0;
        e++;
        while (*e && *e != ')') {
            if (*e == '(') return false;
            e++;
        }
        if (*e != ')') return false;
        for (e++; *e == ' '; e++) {
        }
        return *e == 0;
    }
    int n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_') n++;
    if (!n || n >= cap) return false;
    for (int i = n; p[i]; i++)
        if (p[i] != ' ') return false;
    memcpy(name, p, (size_t)n);
    name[n] = 0;
    return !isdigit((unsigned char)name[0]);
}
