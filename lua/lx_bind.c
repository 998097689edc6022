/* lua/lx_bind.c — binding Lua call arguments to ATen schemas: overload resolution, keyword
 * options, size varargs, conversion to ivalues.
 * Layer: lua. Plays the part of PyTorch's python_arg_parser.cpp, driven only by the schemas of
 * core/ops.def (no per-op code):
 *   - positional Lua values fill the schema's positional (non keyword-only) arguments in order;
 *   - a trailing table with string keys holds keyword arguments ({keepdim = true});
 *   - a trailing dtype fills the keyword argument `dtype` (torch.ones({2}, torch.int64));
 *   - when the only positional argument after self is an int list, loose integers are packed
 *     into it (x:view(2, 3), torch.zeros(2, 3)), as PyTorch's allow_varargs_intlist;
 *   - a Lua number where the schema says Tensor is a wrapped number (x + 2 -> add.Tensor(x, 2)).
 * Among the overloads of a name every one that fits is scored (2 per exact argument, 1 per
 * wrapped number) and the best wins, earliest in ops.def on ties: x:eq(0) picks eq.Scalar over
 * eq.Tensor, x:sum() picks sum.default, x:sum(1) sum.dim_IntList, x:div(y, {rounding_mode =
 * "floor"}) div.Tensor_mode; `{out = y}` makes the op's out overloads (sin.out, add.out,
 * sum.IntList_out) the candidates, which are never candidates otherwise. Overloads PyTorch's Python binding does not expose (add.Scalar,
 * mul.Scalar, ...) never take part, so x + 2 records add.Tensor as PyTorch does. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/lx_impl.h"

#define MAX_OVERLOADS 32

/* Overloads hidden from resolution: PyTorch's Python binding has only the Tensor form of these,
 * so `x + 2` records add.Tensor with a wrapped number. Still callable via torch.ops.aten. */
static const char *const k_hidden[] = {
    "add.Scalar",           "add_.Scalar", "sub.Scalar",
    "sub_.Scalar",          "mul.Scalar",  "mul_.Scalar",
    "div.Scalar",           "div_.Scalar", "div.Scalar_mode",
    "div_.Scalar_mode",     "rsub.Tensor", "floor_divide.Scalar",
    "floor_divide_.Scalar", NULL,
};

static bool is_hidden(const fx_opdef *op) {
    for (int i = 0; k_hidden[i]; i++)
        if (!strcmp(op->qualname, k_hidden[i])) return true;
    return false;
}

/* ==== overload sets ============================================================================ */

struct lx_overloads {
    const char *name;
    int n;                              /* visible overloads (0: all hidden) */
    const fx_opdef *ops[MAX_OVERLOADS];
    int nout;                           /* the out= overloads (sin.out), chosen by {out = y} */
    const fx_opdef *outs[MAX_OVERLOADS];
};

/* An out= overload: its (a!) argument is the keyword-only `out`. PyTorch's binding folds it
 * into the functional signature; here it is only a candidate when the call passes `out`, so
 * the calls and messages without it stay as they were. */
static bool is_out_overload(const fx_opdef *op) {
    int m = op->schema.mutated_arg;
    return m >= 0 && op->schema.args[m].kwarg_only && !strcmp(op->schema.args[m].name, "out");
}

/* What bind() needs of a schema, computed once per op. */
typedef struct op_info {
    int npos;                    /* positional (not keyword-only) parameters */
    int pos[FX_SCHEMA_MAX_ARGS]; /* their argument indices */
    int dtype_arg;               /* index of the argument `dtype`, or -1 */
} op_info;

static lx_overloads g_sets[FX_OP_COUNT]; /* sorted by name; at most one per op */
static int g_nsets;
static op_info g_info[FX_OP_COUNT];
static pthread_once_t g_sets_once = PTHREAD_ONCE_INIT;

static int cmp_name_id(const void *a, const void *b) {
    const fx_opdef *x = *(const fx_opdef *const *)a, *y = *(const fx_opdef *const *)b;
    int c = strcmp(x->schema.name, y->schema.name);
    return c ? c : (int)x->id - (int)y->id;
}

static void fill_info(const fx_schema *s, op_info *in) {
    in->npos = 0;
    for (int a = 0; a < s->nargs; a++)
        if (!s->args[a].kwarg_only) in->pos[in->npos++] = a;
    in->dtype_arg = fx_schema_arg_index(s, "dtype");
}

static void build_sets(void) {
    static const fx_opdef *all[FX_OP_COUNT];
    int n = 0;
    for (int i = 0; i < FX_OP_COUNT; i++) {
        const fx_opdef *op = fx_op_get((fx_op_id)i);
        if (!op) continue;
        all[n++] = op;
        fill_info(&op->schema, &g_info[i]);
    }
    qsort(all, (size_t)n, sizeof all[0], cmp_name_id);
    for (int i = 0; i < n; i++) {
        if (!g_nsets || strcmp(g_sets[g_nsets - 1].name, all[i]->schema.name))
            g_sets[g_nsets++].name = all[i]->schema.name;
        lx_overloads *s = &g_sets[g_nsets - 1];
        if (is_out_overload(all[i])) {
            if (s->nout < MAX_OVERLOADS) s->outs[s->nout++] = all[i];
        } else if (!is_hidden(all[i]) && s->n < MAX_OVERLOADS) {
            s->ops[s->n++] = all[i];
        }
    }
}

static int cmp_set(const void *key, const void *elem) {
    return strcmp(key, ((const lx_overloads *)elem)->name);
}

/* The set of name: a memo keyed by the name's address (op closures and the metamethods pass the
 * same string every time), checked with one strcmp, in front of a binary search. Threads may
 * race on the memo: a torn entry fails the strcmp and falls through to the search. */
const lx_overloads *lx_overloads_of(const char *name) {
    static struct {
        const char *key;
        const lx_overloads *set;
    } memo[64];
    size_t h = (size_t)(((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ull >> 58);
    const lx_overloads *set = memo[h].set;
    if (memo[h].key == name && set && !strcmp(set->name, name)) return set;
    pthread_once(&g_sets_once, build_sets);
    set = bsearch(name, g_sets, (size_t)g_nsets, sizeof g_sets[0], cmp_set);
    if (set) {
        memo[h].key = name;
        memo[h].set = set;
    }
    return set;
}

/* The Lua call being bound: positional values at stack [first, first + npos). */
typedef struct callsite {
    int first;
    int npos;
    int opts;    /* stack index of the keyword table, or 0 */
    bool method; /* the first value is self */
} callsite;

/* Where each schema argument's value comes from. */
typedef struct binding {
    int src[FX_SCHEMA_MAX_ARGS];        /* stack index, 0 = not given */
    bool from_opts[FX_SCHEMA_MAX_ARGS]; /* value is opts[name] rather than a stack slot */
    int pack_arg;                       /* int-list argument receiving packed varargs, or -1 */
    int pack_first, pack_n;             /* their stack range */
    fx_tensor *tensor[FX_SCHEMA_MAX_ARGS]; /* the tensor given for each argument, if any */
    int requires_grad;                  /* -1 not given, else 0/1 (applied to the result) */
    int score;
    /* why it did not fit, for the error message */
    int bad_idx;              /* stack index of a value of the wrong type, or 0 */
    const char *bad_expected; /* what that argument wanted */
    char why[160];            /* or a sentence */
} binding;

/* ==== value checks =========================================================================== */

static bool is_integral(lua_State *L, int idx) {
    if (lua_type(L, idx) == LUA_TUSERDATA) return lx_is_symint(L, idx); /* a SymInt */
    if (lua_type(L, idx) != LUA_TNUMBER) return false;
    if (lua_isinteger(L, idx)) return true;
    lua_Number d = lua_tonumber(L, idx);
    return d == floor(d) && fabs(d) < 9.2e18;
}

static int64_t to_int(lua_State *L, int idx) {
    if (lua_isinteger(L, idx)) return (int64_t)lua_tointeger(L, idx);
    return (int64_t)lua_tonumber(L, idx);
}

/* An integer argument: a SymInt stays symbolic (FX_IV_SYMINT), a number is an int. */
static fx_ivalue to_iv_int(lua_State *L, int idx) {
    fx_symint v;
    if (lua_type(L, idx) == LUA_TUSERDATA && lx_to_symint(L, idx, &v)) return fx_iv_symint(v);
    return fx_iv_int(to_int(L, idx));
}

/* An options table: a table (not a shape/list) whose first key is a string. */
static bool is_options(lua_State *L, int idx) {
    if (lua_type(L, idx) != LUA_TTABLE || lua_getmetatable(L, idx)) {
        if (lua_type(L, idx) == LUA_TTABLE) lua_pop(L, 1);
        return false;
    }
    if (lua_rawlen(L, idx) > 0) return false;
    lua_pushnil(L);
    if (!lua_next(L, idx)) return false; /* empty: a size list {} */
    bool str = lua_type(L, -2) == LUA_TSTRING;
    lua_pop(L, 2);
    return str;
}

/* Length of a list table: its `n` field (table.pack) or its raw length. */
static lua_Integer list_len(lua_State *L, int idx) {
    idx = lua_absindex(L, idx);
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    if ((lua_pushliteral(L, "n"), lua_rawget(L, idx)) == LUA_TNUMBER && lua_isinteger(L, -1))
        n = lua_tointeger(L, -1);
    lua_pop(L, 1);
    return n;
}

/* How well the value at idx fits argument a: 0 no, 1 as a wrapped number, 2 exactly. Sets *t
 * to the value when it is a tensor (raising when it is a closed one). */
static int fits(lua_State *L, int idx, const fx_arg_schema *a, fx_tensor **t) {
    idx = lua_absindex(L, idx);
    int lt = lua_type(L, idx);
    bool tensor = lt == LUA_TUSERDATA && (*t = lx_to_open_tensor(L, idx)) != NULL;
    if (lt == LUA_TNIL || lt == LUA_TNONE) return (a->optional || a->has_default) ? 2 : 0;
    switch (a->type) {
    case FX_TY_TENSOR:
        if (tensor) return 2;
        return (lt == LUA_TNUMBER || lt == LUA_TBOOLEAN || lx_is_symint(L, idx)) ? 1 : 0;
    case FX_TY_TENSOR_LIST: {
        if (lt != LUA_TTABLE || is_options(L, idx)) return 0;
        lua_Integer n = list_len(L, idx);
        int ok = 2;
        for (lua_Integer i = 1; ok && i <= n; i++) {
            lua_rawgeti(L, idx, i);
            if (!lx_to_tensor(L, -1) && !(lua_isnil(L, -1) && a->elem_optional)) ok = 0;
            lua_pop(L, 1);
        }
        return ok;
    }
    case FX_TY_INT: return is_integral(L, idx) ? 2 : 0;
    case FX_TY_INT_LIST: {
        if (is_integral(L, idx)) return 2;
        if (lt != LUA_TTABLE) return 0;
        lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
        if (n == 0 && is_options(L, idx)) return 0;
        int ok = 2;
        for (lua_Integer i = 1; ok && i <= n; i++) {
            lua_rawgeti(L, idx, i);
            if (!is_integral(L, -1)) ok = 0;
            lua_pop(L, 1);
        }
        return ok;
    }
    case FX_TY_FLOAT: return lt == LUA_TNUMBER ? 2 : 0;
    case FX_TY_SCALAR:
        return (lt == LUA_TNUMBER || lt == LUA_TBOOLEAN || lx_is_symint(L, idx)) ? 2 : 0;
    case FX_TY_BOOL: return lt == LUA_TBOOLEAN ? 2 : 0;
    case FX_TY_DTYPE: return lx_to_dtype(L, idx) != FX_DTYPE_UNDEFINED ? 2 : 0;
    case FX_TY_STR:
    case FX_TY_MEMFORMAT: return lt == LUA_TSTRING ? 2 : 0;
    case FX_TY_DEVICE: return lt == LUA_TSTRING ? 2 : 0;
    case FX_TY_FLOAT_LIST:
    case FX_TY_BOOL_LIST: return (lt == LUA_TTABLE && !is_options(L, idx)) ? 2 : 0;
    default: return 2;
    }
}

static const char *expected_name(const fx_arg_schema *a) {
    switch (a->type) {
    case FX_TY_TENSOR: return "Tensor";
    case FX_TY_TENSOR_LIST: return "list of Tensors";
    case FX_TY_INT: return "integer";
    case FX_TY_INT_LIST: return "list of integers";
    case FX_TY_FLOAT: return "number";
    case FX_TY_SCALAR: return "number";
    case FX_TY_BOOL: return "boolean";
    case FX_TY_DTYPE: return "dtype";
    case FX_TY_STR: return "string";
    case FX_TY_DEVICE: return "device string";
    case FX_TY_MEMFORMAT: return "memory format";
    default: return "list";
    }
}

/* ==== binding one schema ===================================================================== */

/* Binds the call to op's schema. Returns the score (>= 0) or -1 with the reason in b. Leaves the
 * Lua stack as it found it. */
static int bind(lua_State *L, const fx_opdef *op, const callsite *cs, binding *b) {
    const fx_schema *s = &op->schema;
    pthread_once(&g_sets_once, build_sets);
    op_info custom; /* a runtime-registered op (torch.library): computed per call */
    const op_info *in = &g_info[0];
    if (op->id < FX_OP_COUNT) in = &g_info[op->id];
    else {
        fill_info(s, &custom);
        in = &custom;
    }
    memset(b, 0, offsetof(binding, why));
    b->why[0] = 0;
    b->pack_arg = -1;
    b->requires_grad = -1;
    const int *pos = in->pos, npos_params = in->npos;

    int n = cs->npos;
    /* a trailing dtype fills keyword `dtype` when no positional dtype argument is there */
    int dtype_src = 0, dtype_arg = in->dtype_arg;
    if (n > 0 && dtype_arg >= 0 && lx_to_dtype(L, cs->first + n - 1) != FX_DTYPE_UNDEFINED &&
        (n > npos_params || s->args[pos[n - 1]].type != FX_TY_DTYPE)) {
        dtype_src = cs->first + n - 1;
        n--;
    }
    /* size varargs: x:view(2, 3), torch.zeros(2, 3) */
    int base = cs->method ? 1 : 0;
    int nbound = n;
    if (npos_params - base == 1 && n - base >= 2 && s->args[pos[base]].type == FX_TY_INT_LIST) {
        bool all = true;
        for (int k = base; k < n && all; k++) all = is_integral(L, cs->first + k);
        if (all) {
            b->pack_arg = pos[base];
            b->pack_first = cs->first + base;
            b->pack_n = n - base;
            nbound = base;
        }
    }
    if (nbound > npos_params) {
        snprintf(b->why, sizeof b->why, "%s() takes %d positional argument%s but %d were given",
                 s->name, npos_params, npos_params == 1 ? "" : "s", n);
        return -1;
    }
    for (int k = 0; k < nbound; k++) b->src[pos[k]] = cs->first + k;
    if (dtype_src) b->src[dtype_arg] = dtype_src;

    /* keyword arguments */
    if (cs->opts) {
        lua_pushnil(L);                 /* [.., nil] */
        while (lua_next(L, cs->opts)) { /* [.., key, value] */
            if (lua_type(L, -2) != LUA_TSTRING) {
                lua_pop(L, 2);
                snprintf(b->why, sizeof b->why, "%s(): keyword names must be strings", s->name);
                return -1;
            }
            const char *key = lua_tostring(L, -2);
            int ai = fx_schema_arg_index(s, key);
            if (ai < 0 && !strcmp(key, "requires_grad")) {
                b->requires_grad = lua_toboolean(L, -1);
                lua_pop(L, 1);
                continue;
            }
            if (ai < 0) {
                snprintf(b->why, sizeof b->why, "%s() got an unexpected keyword argument '%s'",
                         s->name, key);
                lua_pop(L, 2);
                return -1;
            }
            if (b->src[ai] || b->pack_arg == ai) {
                snprintf(b->why, sizeof b->why, "%s() got multiple values for argument '%s'",
                         s->name, key);
                lua_pop(L, 2);
                return -1;
            }
            b->src[ai] = cs->opts;
            b->from_opts[ai] = true;
            lua_pop(L, 1); /* [.., key] */
        }
    }

    /* types and required arguments */
    for (int i = 0; i < s->nargs; i++) {
        const fx_arg_schema *a = &s->args[i];
        if (i == b->pack_arg) {
            b->score += 2;
            continue;
        }
        if (!b->src[i]) {
            if (!a->has_default && !a->optional) {
                snprintf(b->why, sizeof b->why,
                         "%s() missing 1 required positional argument: \"%s\"", s->name, a->name);
                return -1;
            }
            continue;
        }
        int idx = b->src[i];
        if (b->from_opts[i]) {
            lua_getfield(L, cs->opts, a->name); /* [.., value] */
            idx = lua_gettop(L);
        }
        int f = fits(L, idx, a, &b->tensor[i]);
        if (b->from_opts[i]) lua_pop(L, 1);
        if (!f) {
            b->bad_idx = b->from_opts[i] ? 0 : idx;
            b->bad_expected = expected_name(a);
            snprintf(b->why, sizeof b->why, "%s(): argument '%s' must be %s, not %s", s->name,
                     a->name, expected_name(a),
                     b->from_opts[i] ? "that value" : luaL_typename(L, idx));
            return -1;
        }
        b->score += f;
    }
    return b->score;
}

/* ==== conversion ============================================================================= */

/* Converts the value at idx for argument a into *out (which lives in an ivalue box). */
static void convert(lua_State *L, int idx, const fx_arg_schema *a, fx_ivalue *out) {
    idx = lua_absindex(L, idx);
    int lt = lua_type(L, idx);
    if (lt == LUA_TNIL || lt == LUA_TNONE) {
        *out = a->optional && !(a->has_default && a->def.tag != FX_IV_NONE) ? fx_iv_none()
                                                                            : (fx_ivalue){0};
        return;
    }
    switch (a->type) {
    case FX_TY_INT: *out = to_iv_int(L, idx); return;
    case FX_TY_INT_LIST: {
        if (lt == LUA_TNUMBER || lt == LUA_TUSERDATA) {
            fx_err e;
            fx_err_clear(&e);
            if (fx_iv_list(1, out, &e)) lx_error(L, &e);
            out->u.list.items[0] = to_iv_int(L, idx);
            return;
        }
        lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
        fx_err e;
        fx_err_clear(&e);
        if (fx_iv_list((int)n, out, &e)) lx_error(L, &e);
        for (lua_Integer i = 0; i < n; i++) {
            lua_rawgeti(L, idx, i + 1);
            out->u.list.items[i] = to_iv_int(L, -1);
            lua_pop(L, 1);
        }
        return;
    }
    case FX_TY_TENSOR_LIST: {
        lua_Integer n = list_len(L, idx);
        fx_err e;
        fx_err_clear(&e);
        if (fx_iv_list((int)n, out, &e)) lx_error(L, &e);
        for (lua_Integer i = 0; i < n; i++) {
            lua_rawgeti(L, idx, i + 1);
            fx_tensor *t = lx_to_tensor(L, -1);
            out->u.list.items[i] = t ? fx_iv_tensor(t) : fx_iv_none();
            lua_pop(L, 1);
        }
        return;
    }
    case FX_TY_DEVICE: /* "cpu" / "meta" -> a device, printed device(type='cpu') */
        if (lt == LUA_TSTRING && !strncmp(lua_tostring(L, idx), "meta", 4)) {
            *out = fx_iv_device(FX_DEVICE_META);
            return;
        }
        if (lt == LUA_TSTRING && !strncmp(lua_tostring(L, idx), "cpu", 3)) {
            *out = fx_iv_device(FX_DEVICE_CPU);
            return;
        }
        lx_to_ivalue(L, idx, out);
        return;
    default: lx_to_ivalue(L, idx, out); return;
    }
}

/* Fills a box with the bound arguments, dispatches, applies requires_grad, and leaves only the
 * results on the stack.  [-0, +r, e] */
/* Converts the bound arguments into args without allocating anything: tensors borrowed (the Lua
 * stack keeps them alive for the call), int lists in `items` (room for FAST_ITEMS). False when
 * some argument needs an owned copy (keyword table values, strings, tensor lists, long lists),
 * with nothing to undo. */
#define FAST_ITEMS 64
static bool convert_borrowed(lua_State *L, const fx_schema *s, const binding *b, fx_ivalue *args,
                             fx_ivalue *items) {
    int used = 0;
    for (int i = 0; i < s->nargs; i++) {
        const fx_arg_schema *a = &s->args[i];
        args[i] = (fx_ivalue){0}; /* UNSET: schema default */
        if (i == b->pack_arg) {
            if (used + b->pack_n > FAST_ITEMS) return false;
            for (int k = 0; k < b->pack_n; k++) {
                if (lx_is_symint(L, b->pack_first + k)) return false; /* owns an env reference */
                items[used + k] = fx_iv_int(to_int(L, b->pack_first + k));
            }
            args[i].tag = FX_IV_LIST;
            args[i].u.list.items = &items[used];
            args[i].u.list.n = b->pack_n;
            used += b->pack_n;
            continue;
        }
        if (!b->src[i]) continue;
        if (b->from_opts[i]) return false;
        int idx = b->src[i], lt = lua_type(L, idx);
        if (lt == LUA_TNIL) {
            args[i] = a->optional && !(a->has_default && a->def.tag != FX_IV_NONE) ? fx_iv_none()
                                                                                  : (fx_ivalue){0};
            continue;
        }
        switch (a->type) {
        case FX_TY_TENSOR:
        case FX_TY_SCALAR:
        case FX_TY_FLOAT:
        case FX_TY_BOOL:
        case FX_TY_DTYPE:
            if (lt == LUA_TNUMBER)
                args[i] = lua_isinteger(L, idx) ? fx_iv_int(lua_tointeger(L, idx))
                                                : fx_iv_float(lua_tonumber(L, idx));
            else if (lt == LUA_TBOOLEAN)
                args[i] = fx_iv_bool(lua_toboolean(L, idx));
            else if (b->tensor[i])
                args[i] = fx_iv_tensor_steal(b->tensor[i]); /* borrowed */
            else if (lt == LUA_TUSERDATA && lx_to_dtype(L, idx) != FX_DTYPE_UNDEFINED)
                args[i] = fx_iv_dtype(lx_to_dtype(L, idx));
            else
                return false;
            break;
        case FX_TY_INT:
            if (lt != LUA_TNUMBER) return false; /* a SymInt */
            args[i] = fx_iv_int(to_int(L, idx));
            break;
        case FX_TY_INT_LIST: {
            if (lt == LUA_TUSERDATA) return false;
            if (lt == LUA_TNUMBER) {
                if (used + 1 > FAST_ITEMS) return false;
                items[used] = fx_iv_int(to_int(L, idx));
                args[i].tag = FX_IV_LIST;
                args[i].u.list.items = &items[used++];
                args[i].u.list.n = 1;
                break;
            }
            lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
            if (used + n > FAST_ITEMS) return false;
            for (lua_Integer k = 0; k < n; k++) {
                lua_rawgeti(L, idx, k + 1);
                bool sym = lua_type(L, -1) != LUA_TNUMBER;
                if (!sym) items[used + k] = fx_iv_int(to_int(L, -1));
                lua_pop(L, 1);
                if (sym) return false; /* a SymInt: the owned path */
            }
            args[i].tag = FX_IV_LIST;
            args[i].u.list.items = &items[used];
            args[i].u.list.n = (int)n;
            used += (int)n;
            break;
        }
        default: return false;
        }
    }
    return true;
}

static int call_bound(lua_State *L, const fx_opdef *op, const callsite *cs, const binding *b) {
    const fx_schema *s = &op->schema;
    {
        fx_ivalue args[FX_SCHEMA_MAX_ARGS], items[FAST_ITEMS];
        if (convert_borrowed(L, s, b, args, items)) {
            /* nothing to release: the args own nothing */
            int stack_of[FX_SCHEMA_MAX_ARGS];
            for (int i = 0; i < s->nargs; i++)
                stack_of[i] = b->tensor[i] && !b->from_opts[i] ? b->src[i] : 0;
            int nr = lx_dispatch_at(L, op, args, stack_of);
            if (b->requires_grad >= 0 && nr > 0) {
                fx_tensor *t = lx_to_tensor(L, -nr);
                if (t) fx_tensor_set_requires_grad(t, b->requires_grad);
            }
            return nr;
        }
    }
    fx_ivalue *args = lx_ivbox_new(L, s->nargs); /* [.., box] */
    int box = lua_gettop(L);
    for (int i = 0; i < s->nargs; i++) {
        if (i == b->pack_arg) {
            fx_err e;
            fx_err_clear(&e);
            if (fx_iv_list(b->pack_n, &args[i], &e)) lx_error(L, &e);
            for (int k = 0; k < b->pack_n; k++)
                args[i].u.list.items[k] = to_iv_int(L, b->pack_first + k);
            continue;
        }
        if (!b->src[i]) continue; /* UNSET: schema default */
        if (b->from_opts[i]) {
            lua_getfield(L, cs->opts, s->args[i].name); /* [.., box, v] */
            convert(L, -1, &s->args[i], &args[i]);
            lua_pop(L, 1);
        } else {
            convert(L, b->src[i], &s->args[i], &args[i]);
        }
    }
    int nr = lx_dispatch(L, op, args); /* [.., box, r1..rn] */
    for (int i = 0; i < s->nargs; i++)
        fx_ivalue_clear(&args[i]); /* release inputs now, not at GC */
    if (b->requires_grad >= 0 && nr > 0) {
        fx_tensor *t = lx_to_tensor(L, -nr);
        if (t) fx_tensor_set_requires_grad(t, b->requires_grad);
    }
    lua_remove(L, box); /* [.., r1..rn] */
    return nr;
}

/* Fills cs from the stack: values first..top, minus a trailing options table. */
static void make_callsite(lua_State *L, int first, bool method, callsite *cs) {
    int top = lua_gettop(L);
    cs->first = first;
    cs->method = method;
    cs->opts = 0;
    if (top >= first && is_options(L, top)) {
        cs->opts = top;
        top--;
    }
    while (top >= first && lua_isnil(L, top)) top--; /* trailing nils = arguments not given */
    if (top >= first && !cs->opts && is_options(L, top)) {
        cs->opts = top;
        top--;
    }
    cs->npos = top - first + 1;
    if (cs->npos < 0) cs->npos = 0;
}

/* "(Tensor, int, keepdim=boolean)": the Lua types of the call, for PyTorch's invalid-combination
 * message. Appends to sb; leaves the stack as it was. */
static void describe_call(lua_State *L, const callsite *cs, fx_strbuf *sb) {
    fx_strbuf_putc(sb, '(');
    int k = 0;
    for (; k < cs->npos; k++) {
        int idx = cs->first + k;
        const char *tn = lx_to_tensor(L, idx)                                       ? "Tensor"
                         : lx_to_dtype(L, idx) != FX_DTYPE_UNDEFINED                ? "dtype"
                         : lua_type(L, idx) == LUA_TNUMBER && lua_isinteger(L, idx) ? "int"
                         : lua_type(L, idx) == LUA_TNUMBER                          ? "float"
                                                           : luaL_typename(L, idx);
        fx_strbuf_appendf(sb, "%s%s", k ? ", " : "", tn);
    }
    if (cs->opts) {
        lua_pushnil(L);                 /* [.., nil] */
        while (lua_next(L, cs->opts)) { /* [.., key, value] */
            fx_strbuf_appendf(sb, "%s%s=%s", k++ ? ", " : "",
                              lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?",
                              lx_to_tensor(L, -1) ? "Tensor" : luaL_typename(L, -1));
            lua_pop(L, 1); /* [.., key] */
        }
    }
    fx_strbuf_putc(sb, ')');
}

/* Raises the error of a failed binding: lauxlib's "bad argument #2 to 'add' (Tensor expected,
 * got nil)" for a wrongly typed positional value, else PyTorch's sentence.  [-0, +0, e] */
static int bind_error(lua_State *L, const binding *b, const char *fname, const callsite *cs) {
    if (b->bad_idx) {
        /* numbered as the caller sees the arguments: x:add(v) -> v is #1 (self is not counted,
         * as lauxlib does for methods); torch.add(x, v) and torch.ops.aten.add.Tensor(x, v) ->
         * v is #2 */
        int arg = b->bad_idx - cs->first + (cs->method ? 0 : 1);
        const char *got = lx_to_tensor(L, b->bad_idx) ? "Tensor" : luaL_typename(L, b->bad_idx);
        char num[64] = "";
        if (lua_type(L, b->bad_idx) == LUA_TNUMBER && !lua_isinteger(L, b->bad_idx)) {
            double v = lua_tonumber(L, b->bad_idx);
            bool integral = v == floor(v) && isfinite(v);
            snprintf(num, sizeof num, " %.17g%s", v,
                     integral ? ", which does not fit in int64" : ", not an integer");
        }
        return lx_errorf(L, FX_EARG, NULL, "bad argument #%d to '%s' (%s expected, got %s%s)", arg,
                         fname, b->bad_expected, got, num);
    }
    return lx_errorf(L, FX_EARG, NULL, "%s", b->why);
}

/* ==== entry points =========================================================================== */

const fx_opdef *lx_op(lua_State *L, const char *qualname) {
    const fx_opdef *op = fx_op_lookup(qualname);
    if (!op)
        lx_errorf(L, FX_ENOTIMPL, "not_implemented", "aten.%s is not yet supported by fxdb",
                  qualname);
    return op;
}

int lx_call_overload(lua_State *L, const fx_opdef *op, int first) {
    callsite cs;
    make_callsite(L, first, false, &cs);
    binding b;
    if (bind(L, op, &cs, &b) < 0) return bind_error(L, &b, op->qualname, &cs);
    return call_bound(L, op, &cs, &b);
}

int lx_call_opname(lua_State *L, const char *name, int first, bool method) {
    return lx_call_overloads(L, lx_overloads_of(name), name, first, method);
}

int lx_call_overloads(lua_State *L, const lx_overloads *set, const char *name, int first,
                      bool method) {
    const fx_opdef *const *ops = set ? set->ops : NULL;
    int ncand = set ? set->n : 0;
    if (ncand == 0 && !(set && set->nout))
        return lx_errorf(L, FX_ENOTIMPL, "not_implemented",
                         "%s is not yet supported by fxdb (no aten.%s overload is registered)",
                         name, name);
    callsite cs;
    make_callsite(L, first, method, &cs);
    if (cs.opts && set->nout) { /* {out = y}: the out overloads are the candidates */
        bool has_out = lua_getfield(L, cs.opts, "out") != LUA_TNIL;
        lua_pop(L, 1);
        if (has_out) ops = set->outs, ncand = set->nout;
    }
    if (ncand == 0)
        return lx_errorf(L, FX_ENOTIMPL, "not_implemented",
                         "%s is not yet supported by fxdb (no aten.%s overload is registered)",
                         name, name);
    binding b, best, first_fail;
    int best_i = -1, best_score = -1;
    if (ncand == 1) { /* one candidate: no copies */
        if (bind(L, ops[0], &cs, &b) < 0) return bind_error(L, &b, name, &cs);
        return call_bound(L, ops[0], &cs, &b);
    }
    for (int i = 0; i < ncand; i++) {
        int sc = bind(L, ops[i], &cs, &b);
        if (sc < 0) {
            if (i == 0) first_fail = b;
            continue;
        }
        if (sc > best_score) {
            best_score = sc;
            best_i = i;
            best = b;
        }
    }
    if (best_i >= 0) return call_bound(L, ops[best_i], &cs, &best);
    if (ncand == 1) return bind_error(L, &first_fail, name, &cs);
    /* PyTorch: "add() received an invalid combination of arguments - got (Tensor, str), but
     * expected one of:\n * (Tensor input, Tensor other, *, Number alpha)" */
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_strbuf_appendf(&sb, "%s() received an invalid combination of arguments - got ", name);
    describe_call(L, &cs, &sb);
    fx_strbuf_append(&sb, ", but expected one of:");
    for (int i = 0; i < ncand; i++) {
        fx_strbuf one = FX_STRBUF_INIT;
        fx_schema_format(&one, &ops[i]->schema);
        const char *text = fx_strbuf_cstr(&one);
        const char *open = strchr(text, '(');
        const char *arrow = strstr(text, " -> ");
        fx_strbuf_append(&sb, "\n * ");
        if (open && arrow)
            fx_strbuf_appendn(&sb, open, (size_t)(arrow - open));
        else
            fx_strbuf_append(&sb, text);
        fx_strbuf_free(&one);
    }
    lx_push_strbuf(L, &sb); /* [.., msg] */
    return lx_errorf(L, FX_EARG, NULL, "%s", lua_tostring(L, -1));
}
