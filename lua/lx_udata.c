/* lua/lx_udata.c — the userdata basics every binding file uses: Tensor userdata (push, to, check;
 * its identity cache and memory pressure), torch.Size tables, SymInt, ivalue <-> Lua conversion
 * and lx_dispatch, and the ExportedProgram userdata (push, to, check).
 * Layer: lua. Second in the lua/ file order (docs/ARCHITECTURE.md §2): it calls only lx_aux.c;
 * every other binding file may call it. The Tensor metatable's methods (lx_tensor.c) and the
 * ExportedProgram's (lx_export.c) sit above; they share the userdata structs through
 * lua/lx_impl.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/shape.h"
#include "lua/lx_impl.h"
#include "lua/lx_open.h"

/* ==== Tensor userdata ========================================================================= */

/* Registry key (light userdata) of the Tensor metatable (also under its name, for
 * lx_checkudata); lx_open_tensor stores it. */
const char lx_tensor_mt_key = 0;

/* ---- the identity cache --------------------------------------------------------------------
 * One Lua value per tensor: a weak-valued table (registry reference lx_state.cache_ref) maps a
 * slot, an index in its array part, to the tensor's userdata; the slot is written in the tensor
 * (fx_tensor_binding_slot) and in the userdata. Slots freed by __gc / __close wait in lx_slots
 * (a C array in a userdata the registry holds) for reuse, so the array stays dense. A lookup
 * checks that the entry holds the tensor (u->t == t): an entry left by a closed userdata, or a slot
 * written by another Lua state, only costs a new userdata. */
typedef struct lx_slots {
    uint32_t *free;       /* (nfree,) freed slots; malloc'd, freed by slots_gc */
    uint32_t nfree, cap;
    uint32_t top;         /* slots 1..top have been handed out */
    bool dead;            /* slots_gc ran (lua_close): nothing is kept any more */
} lx_slots;

static int slots_gc(lua_State *L) {
    lx_slots *s = lua_touserdata(L, 1);
    free(s->free);
    s->free = NULL;
    s->nfree = s->cap = 0;
    s->dead = true;
    return 0;
}

/* Keeps slot k for reuse; dropped (never reused) when the list cannot grow. */
static void slot_free(lx_slots *s, uint32_t k) {
    if (s->dead) return;
    if (s->nfree == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 256;
        uint32_t *p = realloc(s->free, cap * sizeof *p);
        if (!p) return;
        s->free = p;
        s->cap = cap;
    }
    s->free[s->nfree++] = k;
}

static uint32_t slot_take(lx_slots *s) {
    if (s->nfree) return s->free[--s->nfree];
    return s->top < UINT32_MAX ? ++s->top : 0; /* 0: the tensor stays out of the cache */
}

/* Builds the cache and its slot list and puts them in the eager state.  [-0, +0, e] */
static void open_tensor_cache(lua_State *L) {
    lx_state *st = lx_current(L);
    lua_newtable(L);          /* [cache] */
    lua_createtable(L, 0, 1); /* [cache, mt] */
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    st->cache_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* [] */
    lx_slots *s = lua_newuserdatauv(L, sizeof *s, 0); /* [slots] */
    memset(s, 0, sizeof *s);
    lua_createtable(L, 0, 1); /* [slots, mt] */
    lua_pushcfunction(L, slots_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    luaL_ref(L, LUA_REGISTRYINDEX); /* [] */
    st->slots = s;
}

/* ==== memory pressure ======================================================================= */

/* Lua sees an 8-byte userdata per tensor, so its collector cannot tell that dead tensors hold
 * megabytes. Each new userdata of a cpu tensor of 64 KB or more counts its bytes as a GC step
 * (LUA_GCSTEP: "as if that many KB were allocated"), which is enough in incremental mode; and
 * when the bytes core holds (fx_alloc live bytes) pass a mark — twice what was live after the
 * last full collection, plus 64 MB — a full collection runs, which also covers generational
 * mode (lua.c's default), where dead tensors that survived two minor collections otherwise wait
 * for a major one. The mark lives in the registry. */
#define LX_GCMARK "fxdb.gcmark"

static void gc_pressure(lua_State *L, const fx_tensor *t) {
    if (fx_tensor_is_meta(t)) return;
    int64_t bytes = fx_tensor_numel(t) * (int64_t)fx_dtype_size(fx_tensor_dtype(t));
    if (bytes < (64 << 10)) return;
    lua_gc(L, LUA_GCSTEP, (int)((bytes >> 10) < (1 << 30) ? (bytes >> 10) : (1 << 30)));
    int64_t live = fx_alloc_get_stats().live_bytes;
    lua_getfield(L, LUA_REGISTRYINDEX, LX_GCMARK); /* [mark] */
    int64_t mark = (int64_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (live <= mark) return;
    lua_gc(L, LUA_GCCOLLECT);
    live = fx_alloc_get_stats().live_bytes;
    lua_pushinteger(L, (lua_Integer)(live * 2 + (64 << 20)));
    lua_setfield(L, LUA_REGISTRYINDEX, LX_GCMARK);
}

/* ==== push / check ============================================================================ */

/* Pushes the Tensor metatable: by the integer registry reference kept in the thread's state (the
 * registry's array part) once lx_open_tensor made it, else by its light-userdata key.
 * [-0, +1, -] */
static void push_mt(lua_State *L, const lx_state *st) {
    if (st->mt_ref)
        lua_rawgeti(L, LUA_REGISTRYINDEX, st->mt_ref);
    else
        lua_rawgetp(L, LUA_REGISTRYINDEX, &lx_tensor_mt_key);
}

/* Pushes a new Tensor userdata holding no tensor yet (closed until filled), metatable set.
 * [-0, +1, m] */
static lx_tensor_ud *push_empty_ud(lua_State *L, const lx_state *st) {
    lx_tensor_ud *u = lua_newuserdatauv(L, sizeof *u, 0); /* [ud] */
    u->t = NULL;
    u->slot = 0;
    push_mt(L, st);
    lua_setmetatable(L, -2);
    return u;
}

/* The empty userdata u on top of the stack takes over the caller's reference to t and becomes
 * t's entry in the identity cache. When the cache cannot grow (out of memory) the error is
 * raised with t owned by u, so nothing is lost.  [-0, +0, m] */
static void adopt_tensor(lua_State *L, const lx_state *st, lx_tensor_ud *u, fx_tensor *t) {
    u->t = t;
    uint32_t k = slot_take(st->slots);
    if (k) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, st->cache_ref); /* [ud, cache] */
        lua_pushvalue(L, -2);                             /* [ud, cache, ud] */
        lua_rawseti(L, -2, k);                            /* [ud, cache] */
        lua_pop(L, 1);                                    /* [ud] */
        u->slot = k;
        fx_tensor_set_binding_slot(t, k);
    }
    gc_pressure(L, t);
}

void lx_push_tensor(lua_State *L, fx_tensor *t) {
    if (!t) {
        lua_pushnil(L);
        return;
    }
    const lx_state *st = lx_current(L);
    uint32_t k = fx_tensor_binding_slot(t);
    if (k) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, st->cache_ref); /* [cache] */
        lua_rawgeti(L, -1, k);                            /* [cache, ud|?] */
        lua_remove(L, -2);                                /* [ud|?] */
        lx_tensor_ud *u = lua_touserdata(L, -1);
        if (u && u->t == t) return; /* entries are Tensor userdata or nil */
        lua_pop(L, 1);
    }
    lx_tensor_ud *u = push_empty_ud(L, st); /* [ud] */
    adopt_tensor(L, st, u, fx_tensor_retain(t));
}

void lx_forget_tensor(lua_State *L, lx_tensor_ud *u) {
    fx_tensor *t = u->t;
    uint32_t k = u->slot;
    u->t = NULL;
    u->slot = 0;
    if (k) {
        /* The entry itself may stay (after __close, or a __gc called by hand): it is a closed
         * userdata now, which no lookup accepts (u->t != t), and the next owner of the slot
         * overwrites it. The collector has cleared it already when it calls __gc. */
        slot_free(lx_current(L)->slots, k);
        if (t && fx_tensor_binding_slot(t) == k) fx_tensor_set_binding_slot(t, 0);
    }
    fx_tensor_release(t);
}

/* luaL_testudata with the metatable compared by address (cached in the thread's lx_state)
 * instead of looked up by name in the registry. */
lx_tensor_ud *lx_test_tensor(lua_State *L, int idx) {
    const void *mt = lx_current(L)->tensor_mt;
    if (!mt) return luaL_testudata(L, idx, LX_TENSOR);
    void *p = lua_touserdata(L, idx);
    if (!p || !lua_getmetatable(L, idx)) return NULL;
    bool ok = lua_topointer(L, -1) == mt;
    lua_pop(L, 1);
    return ok ? p : NULL;
}

fx_tensor *lx_to_open_tensor(lua_State *L, int idx) {
    lx_tensor_ud *u = lx_test_tensor(L, idx);
    if (u && !u->t) lx_argerror(L, idx, "attempt to use a closed tensor");
    return u ? u->t : NULL;
}

fx_tensor *lx_to_tensor(lua_State *L, int idx) {
    lx_tensor_ud *u = lx_test_tensor(L, idx);
    return u ? u->t : NULL;
}

fx_tensor *lx_check_tensor(lua_State *L, int idx) {
    lx_tensor_ud *u = lx_test_tensor(L, idx);
    if (!u) lx_typeerror(L, idx, "Tensor");
    if (!u->t) lx_argerror(L, idx, "attempt to use a closed tensor");
    return u->t;
}

void fxlua_push_tensor(lua_State *L, fx_tensor *t) { lx_push_tensor(L, t); }
fx_tensor *fxlua_check_tensor(lua_State *L, int idx) { return lx_check_tensor(L, idx); }

void lx_push_size(lua_State *L, int n, const int64_t *sizes) {
    lua_createtable(L, n, 0); /* [size] */
    for (int i = 0; i < n; i++) {
        lua_pushinteger(L, (lua_Integer)sizes[i]);
        lua_rawseti(L, -2, i + 1);
    }
    luaL_setmetatable(L, LX_SIZE);
}

/* ==== SymInt ================================================================================== */

/* A symbolic integer of a dynamic export (torch.SymInt): the size value plus one reference to
 * its shape environment. Plain integers are pushed as Lua integers, so a static dim is a number
 * and only a symbolic one is this userdata. */
typedef struct lx_symint_ud {
    fx_symint v; /* v.expr != NULL; NULL after __gc */
} lx_symint_ud;

void lx_push_symint(lua_State *L, fx_symint v) {
    if (!v.expr) {
        lua_pushinteger(L, (lua_Integer)v.hint);
        return;
    }
    lx_symint_ud *u = lua_newuserdatauv(L, sizeof *u, 0); /* [ud] */
    u->v.expr = NULL;
    luaL_setmetatable(L, LX_SYMINT);
    fx_shape_env_retain(fx_sym_env(v.expr));
    u->v = v;
}

bool lx_to_symint(lua_State *L, int idx, fx_symint *out) {
    if (lua_isinteger(L, idx)) {
        *out = FX_SI(lua_tointeger(L, idx));
        return true;
    }
    if (lua_type(L, idx) == LUA_TNUMBER) {
        lua_Integer i;
        if (lua_numbertointeger(lua_tonumber(L, idx), &i)) {
            *out = FX_SI(i);
            return true;
        }
        return false;
    }
    lx_symint_ud *u = luaL_testudata(L, idx, LX_SYMINT);
    if (!u || !u->v.expr) return false;
    *out = u->v;
    /* an unbacked value's stand-in follows its range as torch._check narrows it */
    if (fx_sym_has_unbacked(u->v.expr)) *out = fx_si_from_expr(u->v.expr);
    return true;
}

bool lx_is_symint(lua_State *L, int idx) { return luaL_testudata(L, idx, LX_SYMINT) != NULL; }

static fx_symint check_si(lua_State *L, int idx, const char *op) {
    fx_symint v;
    if (!lx_to_symint(L, idx, &v))
        luaL_error(L, "unsupported operand for %s: SymInt and %s", op, luaL_typename(L, idx));
    return v;
}

static int symint_gc(lua_State *L) {
    lx_symint_ud *u = luaL_checkudata(L, 1, LX_SYMINT);
    if (u->v.expr) fx_shape_env_release(fx_sym_env(u->v.expr));
    u->v.expr = NULL;
    return 0;
}

static int symint_tostring(lua_State *L) {
    fx_symint v = check_si(L, 1, "tostring");
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_si_format(&sb, v);
    lx_push_strbuf(L, &sb);
    return 1;
}

static int symint_result(lua_State *L, fx_symint r) {
    if (r.expr && fx_sym_is_error(r.expr))
        return lx_errorf(L, FX_ENOMEM, NULL, "out of memory in a symbolic size expression");
    lx_push_symint(L, r);
    return 1;
}

/* r = a OP b of the user's code: while tracing, recorded with the operands in the order written
 * (fx_tracer_sym_op), then pushed.  [-0, +1, e] */
static int symint_op_result(lua_State *L, const char *op, fx_symint a, fx_symint b, fx_symint r) {
    fx_tracer *tr = lx_current(L)->tracer;
    if (tr && r.expr && !fx_sym_is_error(r.expr)) {
        fx_err e;
        fx_err_clear(&e);
        lx_dispatch_serial += 2; /* the node records this line, not the last op's */
        if (fx_tracer_sym_op(tr, op, a, b, r, &e)) return lx_error(L, &e);
    }
    return symint_result(L, r);
}

/* A float operand makes the result a float of the hint, which would bake a symbolic value into
 * the program: refused loudly (torch.sym_float is the explicit way). */
static void no_float(lua_State *L, const char *op) {
    for (int i = 1; i <= 2; i++)
        if (lua_type(L, i) == LUA_TNUMBER && !lua_isinteger(L, i)) {
            lua_Integer k;
            if (!lua_numbertointeger(lua_tonumber(L, i), &k))
                luaL_error(L,
                           "SymInt %s float is not supported during export: use torch.sym_float "
                           "explicitly, or keep the arithmetic in integers",
                           op);
        }
}

/* A SymInt with a tensor (s + x): the tensor's own metamethod handles it (a wrapped number). */
static bool to_tensor_op(lua_State *L, const char *event, int *nret) {
    if (!lx_to_tensor(L, 1) && !lx_to_tensor(L, 2)) return false;
    luaL_getmetafield(L, lx_to_tensor(L, 1) ? 1 : 2, event); /* [a, b, f] */
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 1);
    *nret = 1;
    return true;
}
#define TENSOR_FIRST(ev)                                                                           \
    do {                                                                                           \
        int nret_;                                                                                 \
        if (to_tensor_op(L, ev, &nret_)) return nret_;                                             \
    } while (0)

static int symint_add(lua_State *L) {
    TENSOR_FIRST("__add");
    no_float(L, "+");
    fx_symint a = check_si(L, 1, "+"), b = check_si(L, 2, "+");
    return symint_op_result(L, "add", a, b, fx_si_add(a, b));
}
static int symint_sub(lua_State *L) {
    TENSOR_FIRST("__sub");
    no_float(L, "-");
    fx_symint a = check_si(L, 1, "-"), b = check_si(L, 2, "-");
    return symint_op_result(L, "sub", a, b, fx_si_sub(a, b));
}
static int symint_mul(lua_State *L) {
    TENSOR_FIRST("__mul");
    no_float(L, "*");
    fx_symint a = check_si(L, 1, "*"), b = check_si(L, 2, "*");
    return symint_op_result(L, "mul", a, b, fx_si_mul(a, b));
}
static int symint_unm(lua_State *L) {
    fx_symint a = check_si(L, 1, "-");
    return symint_op_result(L, "neg", a, a, fx_si_sub(FX_SI(0), a));
}

static int symint_divmod(lua_State *L, bool mod) {
    TENSOR_FIRST(mod ? "__mod" : "__idiv");
    no_float(L, mod ? "%" : "//");
    fx_symint r;
    fx_err e;
    fx_err_clear(&e);
    fx_symint a = check_si(L, 1, mod ? "%" : "//"), b = check_si(L, 2, mod ? "%" : "//");
    int rc = (mod ? fx_si_mod : fx_si_floordiv)(a, b, &r, &e);
    if (rc) return lx_error(L, &e);
    return symint_op_result(L, mod ? "mod" : "floordiv", a, b, r);
}
static int symint_idiv(lua_State *L) { return symint_divmod(L, false); }
static int symint_mod(lua_State *L) { return symint_divmod(L, true); }
static int symint_div(lua_State *L) {
    TENSOR_FIRST("__div");
    return luaL_error(L, "true division of a SymInt gives a float and is not supported during "
                         "export: use // for sizes");
}

bool lx_line_has_word(const char *line, const char *word) {
    size_t k = strlen(word);
    for (const char *p = strstr(line, word); p; p = strstr(p + 1, word)) {
        bool start = p == line || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        if (start && !(isalnum((unsigned char)p[k]) || p[k] == '_')) return true;
    }
    return false;
}

/* ---- torch.cond predicates written on their own line -----------------------------------------
 * `local p = n > 2` followed by `torch.cond(p, ...)`: Lua turns the comparison into a boolean at
 * once, so it can reach torch.cond as a SymBool only when nothing can come between or after.
 * These read the source to tell: the comparison's line is one plain `local` assignment, the next
 * statement line (blank and comment lines skipped) calls cond with that name first, and the name
 * is read nowhere after that in the function. */

static bool is_ident_char(int c) { return isalnum(c) || c == '_'; }

/* The name assigned by a plain `local NAME = ...` line (no and / or, no block keyword, one
 * statement), copied into name. */
static bool line_assigns_local(const char *line, char *name, size_t cap) {
    /* the first 16 may not occur after the `=`; none of them is a name */
    static const char *const words[] = {"and", "or", "then", "do", "end", "else", "elseif",
                                        "function", "return", "local", "for", "while", "if",
                                        "repeat", "until", "goto", "not", "nil", "true", "false",
                                        "break", "in"};
    if (strncmp(line, "local ", 6)) return false;
    const char *p = line + 6;
    while (isspace((unsigned char)*p)) p++;
    const char *s = p;
    if (!isalpha((unsigned char)*p) && *p != '_') return false;
    while (is_ident_char((unsigned char)*p)) p++;
    size_t n = (size_t)(p - s);
    while (isspace((unsigned char)*p)) p++;
    if (*p != '=' || p[1] == '=' || n >= cap || strchr(p, ';')) return false;
    for (size_t k = 0; k < 16; k++)
        if (lx_line_has_word(p, words[k])) return false;
    memcpy(name, s, n);
    name[n] = 0;
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (!strcmp(name, words[k])) return false;
    return true;
}

/* Whether line calls cond with `name` as its first argument and mentions name nowhere else. */
static bool line_cond_of(const char *line, const char *name) {
    size_t k = strlen(name);
    int uses = 0;
    bool first = false;
    for (const char *p = strstr(line, name); p; p = strstr(p + 1, name))
        if ((p == line || !is_ident_char((unsigned char)p[-1])) &&
            !is_ident_char((unsigned char)p[k]))
            uses++;
    for (const char *p = strstr(line, "cond("); p && !first; p = strstr(p + 1, "cond(")) {
        if (p > line && is_ident_char((unsigned char)p[-1])) continue; /* "second(" */
        const char *q = p + 5;
        while (isspace((unsigned char)*q)) q++;
        if (strncmp(q, name, k) || is_ident_char((unsigned char)q[k])) continue;
        q += k;
        while (isspace((unsigned char)*q)) q++;
        first = *q == ',' || *q == ')';
    }
    return first && uses == 1;
}

/* Whether the innermost user statement (the one comparing now) is `local p = <comparison>`
 * whose next statement line calls cond(p, ...), p read nowhere after that in the function: the
 * boolean cannot be used for anything but torch.cond's predicate. */
static bool feeds_next_cond(lua_State *L) {
    lua_Debug ar;
    if (!lx_user_frame(L, &ar) || ar.source[0] != '@' || ar.currentline < 1) return false;
    const char *file = ar.source + 1;
    char line[512], name[64];
    if (!lx_source_line(L, file, ar.currentline, line, sizeof line) ||
        !line_assigns_local(line, name, sizeof name))
        return false;
    int at = ar.currentline + 1;
    for (;; at++) { /* the next statement line */
        if (at > ar.currentline + 64 || !lx_source_line(L, file, at, line, sizeof line))
            return false;
        if (line[0] && strncmp(line, "--", 2)) break;
    }
    if (!line_cond_of(line, name)) return false;
    for (int k = at + 1; k <= ar.lastlinedefined; k++) {
        if (!lx_source_line(L, file, k, line, sizeof line)) return false;
        if (lx_line_has_word(line, name)) return false;
    }
    return true;
}

/* The location ("file:line") of the last unbacked comparison parked on a line that feeds the
 * next torch.cond call (feeds_next_cond); the data-dependent error saved with it has the same. */
static char g_feeds_loc[FX_ERR_SHORT];

bool lx_pending_feeds_cond(const char *loc) { return loc[0] && !strcmp(loc, g_feeds_loc); }

/* A comparison of backed sizes that no range decides, made on a line that calls torch.cond
 * (`torch.cond(x.shape[1] > 2, ...)`, no `and` / `or` on it) or on `local p = x.shape[1] > 2`
 * right before `torch.cond(p, ...)` (feeds_next_cond): parked (fx_shape_env_add_pending_backed)
 * with its value under the example inputs in *r, so that torch.cond can keep it as a symbolic
 * predicate; anything else makes it an ordinary guard. False (nothing done) otherwise. */
static bool backed_on_cond_line(lua_State *L, fx_sym_kind rel, fx_symint a, fx_symint b, bool *r) {
    fx_shape_env *env = fx_sym_env(a.expr ? a.expr : b.expr);
    const fx_sym *c = fx_sym_rel(rel, fx_si_expr(env, a), fx_si_expr(env, b));
    if (fx_sym_is_error(c) || fx_sym_has_unbacked(c)) return false;
    bool known, v;
    fx_shape_env_statically_known(c, &known, &v);
    if (known) return false;
    fx_frame fr[1];
    /* `and` / `or` on the line could combine it with other values before torch.cond sees it */
    if (lx_where(L, fr, 1) != 1 || !fr[0].code || lx_line_has_word(fr[0].code, "and") ||
        lx_line_has_word(fr[0].code, "or"))
        return false;
    if (!strstr(fr[0].code, "cond(") && !feeds_next_cond(L)) return false;
    int64_t h;
    fx_err e;
    fx_err_clear(&e);
    if (fx_shape_env_hint(env, fx_shape_env_simplify(env, c), &h, &e)) return false;
    if (fx_shape_env_add_pending_backed(env, c, &e)) return false;
    *r = h != 0;
    return true;
}

int lx_symint_compare(lua_State *L, fx_sym_kind rel, int i1, int i2) {
    fx_symint a = check_si(L, i1, "comparison"), b = check_si(L, i2, "comparison");
    bool r;
    fx_err e;
    fx_err_clear(&e);
    lx_dispatch_serial += 2; /* a guard records this line, not the last op's */
    if (lx_current(L)->tracer && (a.expr || b.expr) && backed_on_cond_line(L, rel, a, b, &r))
        return lua_pushboolean(L, r), 1;
    int rc = fx_si_cmp(rel, a, b, &r, &e);
    if (rc == FX_EDATADEP && lx_current(L)->tracer) {
        /* an unbacked value no range decides: parked for torch._check (fx_shape_env_add_pending);
         * anything else that comes first raises this very error */
        fx_shape_env *env = fx_sym_env(a.expr ? a.expr : b.expr);
        const fx_sym *c = fx_sym_rel(rel, fx_si_expr(env, a), fx_si_expr(env, b));
        fx_err e2;
        fx_err_clear(&e2);
        if (fx_sym_is_error(c)) return lx_errorf(L, FX_ENOMEM, NULL, "out of memory");
        if (feeds_next_cond(L)) snprintf(g_feeds_loc, sizeof g_feeds_loc, "%s", e.loc);
        if (fx_shape_env_add_pending(env, c, &e, &e2)) return lx_error(L, &e2);
        lua_pushboolean(L, 1);
        return 1;
    }
    if (rc) return lx_error(L, &e);
    lua_pushboolean(L, r);
    return 1;
}
/* Lua turns `n > 32` into __lt(32, n): with a plain number on the left the relation is built as
 * Python builds it (int.__lt__ gives way to SymInt.__gt__), so the guard reads `s0 <= 32` as
 * torch prints it, not `32 >= s0`. */
static int symint_lt(lua_State *L) {
    return lua_type(L, 1) == LUA_TNUMBER ? lx_symint_compare(L, FX_SYM_GT, 2, 1)
                                         : lx_symint_compare(L, FX_SYM_LT, 1, 2);
}
static int symint_le(lua_State *L) {
    return lua_type(L, 1) == LUA_TNUMBER ? lx_symint_compare(L, FX_SYM_GE, 2, 1)
                                         : lx_symint_compare(L, FX_SYM_LE, 1, 2);
}
/* Lua calls __eq only between two SymInts (never between a SymInt and a number: use
 * torch.sym_eq(s, 4) or s:eq(4) for that, see docs/CHOICES.md). */
static int symint_eq(lua_State *L) { return lx_symint_compare(L, FX_SYM_EQ, 1, 2); }

static int symint_method_eq(lua_State *L) { return lx_symint_compare(L, FX_SYM_EQ, 1, 2); }
static int symint_method_ne(lua_State *L) { return lx_symint_compare(L, FX_SYM_NE, 1, 2); }
static int symint_hint(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)check_si(L, 1, "hint").hint);
    return 1;
}
static int symint_max(lua_State *L) {
    fx_symint a = check_si(L, 1, "sym_max"), b = check_si(L, 2, "sym_max");
    return symint_op_result(L, "sym_max", a, b, fx_si_max(a, b));
}
static int symint_min(lua_State *L) {
    fx_symint a = check_si(L, 1, "sym_min"), b = check_si(L, 2, "sym_min");
    return symint_op_result(L, "sym_min", a, b, fx_si_min(a, b));
}
static int symint_concat(lua_State *L) {
    luaL_tolstring(L, 1, NULL);
    luaL_tolstring(L, 2, NULL);
    lua_concat(L, 2);
    return 1;
}

static const luaL_Reg symint_meta[] = {{"__gc", symint_gc},         {"__tostring", symint_tostring},
                                       {"__add", symint_add},       {"__sub", symint_sub},
                                       {"__mul", symint_mul},       {"__unm", symint_unm},
                                       {"__idiv", symint_idiv},     {"__mod", symint_mod},
                                       {"__div", symint_div},       {"__lt", symint_lt},
                                       {"__le", symint_le},         {"__eq", symint_eq},
                                       {"__concat", symint_concat}, {NULL, NULL}};
/* s:_assume(rel, other): torch._check's assumption `s <rel> other` (rel "ge", "le", "gt", "lt",
 * "eq", "ne"), a runtime assert from now on (fx_shape_env_assume; "... is always False" when the
 * ranges refute it). */
static int symint_assume(lua_State *L) {
    static const char *const rels[] = {"eq", "ne", "lt", "le", "gt", "ge", NULL};
    static const fx_sym_kind kinds[] = {FX_SYM_EQ, FX_SYM_NE, FX_SYM_LT,
                                        FX_SYM_LE, FX_SYM_GT, FX_SYM_GE};
    fx_symint a = check_si(L, 1, "_assume");
    int k = lx_checkoption(L, 2, NULL, rels);
    fx_symint b = check_si(L, 3, "_assume");
    if (!a.expr) return luaL_error(L, "_assume expects a SymInt");
    fx_shape_env *env = fx_sym_env(a.expr);
    fx_err e;
    fx_err_clear(&e);
    lx_dispatch_serial += 2; /* the assert records this line */
    if (fx_shape_env_assume(fx_sym_rel(kinds[k], fx_si_expr(env, a), fx_si_expr(env, b)), &e))
        return lx_error(L, &e);
    return 0;
}
/* s:_mark_size_like() -> bool: torch._check_is_size of an unbacked symbol (range >= 0,
 * size-like); false, doing nothing, when s is not a bare unbacked symbol (u0 + 1). */
static int symint_mark_size_like(lua_State *L) {
    fx_symint a = check_si(L, 1, "_mark_size_like");
    fx_err e;
    fx_err_clear(&e);
    const fx_symbol_info *si = a.expr ? fx_shape_env_symbol(fx_sym_env(a.expr), a.expr) : NULL;
    if (!si || !si->unbacked) {
        lua_pushboolean(L, 0);
        return 1;
    }
    if (fx_shape_env_mark_size_like(a.expr, &e)) return lx_error(L, &e);
    lua_pushboolean(L, 1);
    return 1;
}
/* s:_unbacked(): whether s depends on a value read from data (an unbacked symbol u<N>). */
static int symint_unbacked(lua_State *L) {
    fx_symint a = check_si(L, 1, "_unbacked");
    lua_pushboolean(L, a.expr && fx_sym_has_unbacked(a.expr));
    return 1;
}

/* s:_unbacked_symbol() -> "u<N>" | nil: the unbacked symbol s is, as created (a replacement a
 * later torch._check made, u0 -> s0, not applied), for a retrace to bind it again; nil for
 * anything else.  [-0, +1, m] */
static int symint_unbacked_symbol(lua_State *L) {
    fx_symint a = check_si(L, 1, "_unbacked_symbol");
    if (!a.expr || fx_sym_kind_of(a.expr) != FX_SYM_SYMBOL || !fx_sym_has_unbacked(a.expr)) {
        lua_pushnil(L);
        return 1;
    }
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_sym_format(&sb, a.expr);
    lx_push_strbuf(L, &sb);
    return 1;
}

static const luaL_Reg symint_methods[] = {{"eq", symint_method_eq}, {"ne", symint_method_ne},
                                          {"_unbacked_symbol", symint_unbacked_symbol},
                                          {"_assume", symint_assume},
                                          {"_mark_size_like", symint_mark_size_like},
                                          {"_unbacked", symint_unbacked},
                                          {"hint", symint_hint},    {"_max", symint_max},
                                          {"_min", symint_min},     {NULL, NULL}};

/* ==== ivalue <-> Lua ========================================================================= */

/* Converts the Lua value at idx as described in lx_impl.h. Tables become lists; on an error the
 * partly built value already sits in *out (valid, owned by the caller), so a caller that keeps
 * *out in an ivalue box leaks nothing. */
void lx_to_ivalue(lua_State *L, int idx, fx_ivalue *out) {
    idx = lua_absindex(L, idx);
    out->tag = FX_IV_UNSET;
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
    case LUA_TNONE: *out = fx_iv_none(); return;
    case LUA_TBOOLEAN: *out = fx_iv_bool(lua_toboolean(L, idx)); return;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            *out = fx_iv_int(lua_tointeger(L, idx));
        else
            *out = fx_iv_float(lua_tonumber(L, idx));
        return;
    case LUA_TSTRING:
        *out = fx_iv_str(lua_tostring(L, idx));
        if (out->tag != FX_IV_STR) lx_errorf(L, FX_ENOMEM, NULL, "not enough memory");
        return;
    case LUA_TUSERDATA: {
        fx_tensor *t = lx_to_tensor(L, idx);
        if (t) {
            *out = fx_iv_tensor(t);
            return;
        }
        fx_symint si;
        if (lx_is_symint(L, idx) && lx_to_symint(L, idx, &si)) {
            *out = fx_iv_symint(si);
            return;
        }
        fx_dtype dt = lx_to_dtype(L, idx);
        if (dt != FX_DTYPE_UNDEFINED) {
            *out = fx_iv_dtype(dt);
            return;
        }
        break;
    }
    case LUA_TTABLE: {
        lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
        if ((lua_pushliteral(L, "n"), lua_rawget(L, idx)) == LUA_TNUMBER && lua_isinteger(L, -1))
            n = lua_tointeger(L, -1); /* table.pack style length, allows trailing nils */
        lua_pop(L, 1);
        if (n > 1 << 24) lx_errorf(L, FX_EARG, NULL, "list too long (%lld elements)", (long long)n);
        fx_err e;
        fx_err_clear(&e);
        if (fx_iv_list((int)n, out, &e)) lx_errorf(L, FX_ENOMEM, NULL, "not enough memory");
        for (int i = 0; i < (int)n; i++) {
            lua_rawgeti(L, idx, i + 1);
            lx_to_ivalue(L, -1, &out->u.list.items[i]);
            lua_pop(L, 1);
        }
        return;
    }
    default: break;
    }
    *out = fx_iv_none();
    lx_errorf(L, FX_EARG, NULL, "cannot pass a %s as an op argument", luaL_typename(L, idx));
}

void lx_push_ivalue(lua_State *L, const fx_ivalue *v) {
    switch (v->tag) {
    case FX_IV_UNSET:
    case FX_IV_NONE: lua_pushnil(L); return;
    case FX_IV_TENSOR: lx_push_tensor(L, v->u.t); return;
    case FX_IV_INT: lua_pushinteger(L, (lua_Integer)v->u.i); return;
    case FX_IV_FLOAT: lua_pushnumber(L, v->u.f); return;
    case FX_IV_BOOL: lua_pushboolean(L, v->u.b); return;
    case FX_IV_DTYPE: lx_push_dtype(L, v->u.dtype); return;
    case FX_IV_DEVICE: lua_pushstring(L, v->u.device == FX_DEVICE_META ? "meta" : "cpu"); return;
    case FX_IV_STR: lua_pushstring(L, v->u.s); return;
    case FX_IV_NODE: lua_pushstring(L, v->u.node ? v->u.node->name : "?"); return;
    case FX_IV_SYMINT: lx_push_symint(L, v->u.si); return;
    case FX_IV_LIST:
        lua_createtable(L, v->u.list.n, 0); /* [list] */
        for (int i = 0; i < v->u.list.n; i++) {
            lx_push_ivalue(L, &v->u.list.items[i]); /* [list, item] */
            lua_rawseti(L, -2, i + 1);              /* [list] */
        }
        return;
    }
    lua_pushnil(L);
}

/* lx_push_owned's protected part: [job] -> the job's values. */
typedef struct push_job {
    fx_ivalue *v;
    int n;
} push_job;

static int push_values(lua_State *L) {
    const push_job *j = lua_touserdata(L, 1);
    lua_pop(L, 1);
    for (int i = 0; i < j->n; i++) lx_push_ivalue(L, &j->v[i]);
    return j->n;
}

void lx_push_owned(lua_State *L, fx_ivalue *v, int n) {
    push_job j = {v, n};
    /* neither pushing a C function nor a light userdata allocates; the call's own frame and every
     * userdata or table the values need are made inside the protected call */
    lua_pushcfunction(L, push_values);
    lua_pushlightuserdata(L, &j);
    int rc = lua_pcall(L, 1, n, 0);
    for (int i = 0; i < n; i++) fx_ivalue_clear(&v[i]); /* the pushed ones hold their own */
    if (rc != LUA_OK) lua_error(L);
}

void lx_push_tensor_owned(lua_State *L, fx_tensor *t) {
    fx_ivalue v = fx_iv_tensor_steal(t);
    lx_push_owned(L, &v, 1);
}

int lx_dispatch(lua_State *L, const fx_opdef *op, fx_ivalue *args) {
    return lx_dispatch_at(L, op, args, NULL);
}

lua_State *lx_cb_thread; /* the thread dispatching an op right now (lx_dispatch_at) */
unsigned long lx_dispatch_serial = 1;

/* Pushes the nrets results of a dispatch (outs, released): a result that is a tensor argument
 * held at a known stack index (stack_of; an in-place op's self) is taken from there; the others
 * are pushed by lx_push_owned, which releases them even if Lua runs out of memory making their
 * userdata.  [-0, +nrets, m] */
static void push_results(lua_State *L, const fx_opdef *op, const fx_ivalue *args,
                         const int *stack_of, fx_ivalue *outs, int nrets) {
    int from[FX_SCHEMA_MAX_RETS] = {0};
    for (int i = 0; i < nrets; i++)
        for (int k = 0; stack_of && outs[i].tag == FX_IV_TENSOR && k < op->schema.nargs; k++)
            if (stack_of[k] > 0 && args[k].tag == FX_IV_TENSOR && args[k].u.t == outs[i].u.t) {
                from[i] = stack_of[k];
                fx_ivalue_clear(&outs[i]); /* UNSET: pushed as nil, replaced below */
                break;
            }
    int base = lua_gettop(L);
    lx_push_owned(L, outs, nrets);
    for (int i = 0; i < nrets; i++)
        if (from[i]) {
            lua_pushvalue(L, from[i]);
            lua_replace(L, base + 1 + i);
        }
}

int lx_dispatch_at(lua_State *L, const fx_opdef *op, fx_ivalue *args, const int *stack_of) {
    lx_state *st = lx_current(L);
    int nrets = op->schema.nrets;
    if ((op->flags & FX_OPF_CREATION) && lx_default_device(L) == FX_DEVICE_META)
        for (int i = 0; i < op->schema.nargs; i++) /* torch.set_default_device("meta") */
            if (op->schema.args[i].type == FX_TY_DEVICE &&
                (args[i].tag == FX_IV_UNSET || args[i].tag == FX_IV_NONE))
                args[i] = fx_iv_device(FX_DEVICE_META);
    /* The results live on the C stack, not in an ivalue box: lx_push_owned releases them even
     * when Lua runs out of memory pushing them. */
    fx_ivalue outs[FX_SCHEMA_MAX_RETS];
    memset(outs, 0, sizeof outs);
    luaL_checkstack(L, nrets + 2, "too many results");
    /* One fresh Tensor result (a return without alias annotation: add.Tensor, not add_.Tensor):
     * its userdata is made before the call, while nothing is owned yet, so afterwards the result
     * goes into it without the protected call of lx_push_owned. Not while tracing, where the
     * trace holds the results too (they go the general way). */
    const fx_ret_schema *r0 = &op->schema.rets[0];
    lx_tensor_ud *pre = nrets == 1 && r0->type == FX_TY_TENSOR && !r0->alias && !st->tracer
                            ? push_empty_ud(L, st) /* [.., ud] */
                            : NULL;
    if (st->tracer && lx_where_need_arm) lx_where_arm(L); /* allocates: before anything is owned */
    fx_err err;
    fx_err_clear(&err);
    lua_State *prev_cb = lx_cb_thread;
    lx_cb_thread = L; /* a custom op's Lua impl runs on this thread */
    /* an out= argument with elements that the op resizes: resize_output's UserWarning */
    int m = op->schema.mutated_arg;
    const fx_tensor *out_t = m >= 0 && op->schema.args[m].kwarg_only && !strcmp(op->schema.args[m].name, "out") &&
                                     args[m].tag == FX_IV_TENSOR
                                 ? args[m].u.t
                                 : NULL;
    int out_nd = out_t ? fx_tensor_ndim(out_t) : 0;
    int64_t out_sizes[FX_MAX_DIMS];
    if (out_t && out_nd) memcpy(out_sizes, fx_tensor_sizes(out_t), sizeof(int64_t) * (size_t)out_nd);
    bool out_had = out_t && fx_tensor_numel(out_t) > 0;
    lx_dispatch_serial += 2; /* never 0: 0 means "no cached location" */
    int drc = fx_dispatch(st->ctx, op, args, outs, &err);
    lx_dispatch_serial += 2;
    lx_cb_thread = prev_cb;
    if (drc != FX_OK) {
        for (int i = 0; i < nrets; i++) fx_ivalue_clear(&outs[i]);
        return lx_error(L, &err);
    }
    /* copy_ / _to_copy from complex into a real dtype drops the imaginary parts: PyTorch's
     * UserWarning (Copy.cpp), through the warning channel (torch._export.warn) */
    const fx_ivalue *src = op->id == FX_OP__TO_COPY                          ? &args[0]
                           : op->id == FX_OP_COPY_ || op->id == FX_OP_COPY ? &args[1]
                                                                            : NULL;
    bool discard = src && src->tag == FX_IV_TENSOR && fx_dtype_is_complex(fx_tensor_dtype(src->u.t)) &&
                   outs[0].tag == FX_IV_TENSOR && !fx_dtype_is_complex(fx_tensor_dtype(outs[0].u.t));
    if (pre && outs[0].tag == FX_IV_TENSOR && fx_tensor_refcount(outs[0].u.t) == 1) {
        /* only this call holds it: no userdata can exist for it yet */
        fx_tensor *t = outs[0].u.t;
        outs[0] = (fx_ivalue){0};
        adopt_tensor(L, st, pre, t);
    } else {
        if (pre) lua_pop(L, 1); /* an existing tensor after all (or no tensor) */
        push_results(L, op, args, stack_of, outs, nrets);
    }
    char resized[512] = "";
    if (out_had) {
        bool same = fx_tensor_ndim(out_t) == out_nd;
        for (int d = 0; same && d < out_nd; d++) same = fx_tensor_size(out_t, d) == out_sizes[d];
        if (!same) {
            char was[160], now[160];
            snprintf(resized, sizeof resized,
                     "An output with one or more elements was resized since it had shape %s, which "
                     "does not match the required output shape %s. This behavior is deprecated, and "
                     "in a future PyTorch release outputs will not be resized unless they have zero "
                     "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to "
                     "zero elements with t.resize_(0).",
                     fx_shape_str(out_nd, out_sizes, was, sizeof was),
                     fx_shape_str(fx_tensor_ndim(out_t), fx_tensor_sizes(out_t), now, sizeof now));
        }
    }
    if (resized[0]) {
        int top = lua_gettop(L);
        if (lua_getglobal(L, "torch") == LUA_TTABLE && lua_getfield(L, -1, "_export") == LUA_TTABLE &&
            lua_getfield(L, -1, "warn") == LUA_TFUNCTION) {
            lua_pushliteral(L, "UserWarning");
            lua_pushstring(L, resized);
            lua_call(L, 2, 0); /* may raise under fxdb.simplefilter("error") */
        }
        lua_settop(L, top);
    }
    if (discard) {
        int top = lua_gettop(L);
        if (lua_getglobal(L, "torch") == LUA_TTABLE && lua_getfield(L, -1, "_export") == LUA_TTABLE &&
            lua_getfield(L, -1, "warn") == LUA_TFUNCTION) {
            lua_pushliteral(L, "UserWarning");
            lua_pushliteral(L, "Casting complex values to real discards the imaginary part");
            lua_call(L, 2, 0); /* may raise under fxdb.simplefilter("error") */
        }
        lua_settop(L, top);
    }
    return nrets;
}

/* ==== ExportedProgram userdata =============================================================== */

static lx_program *to_program_box(lua_State *L, int idx) {
    return luaL_testudata(L, idx, LX_PROGRAM);
}

const fx_program *fxlua_to_program(lua_State *L, int idx) {
    lx_program *b = to_program_box(L, idx);
    return b ? b->p : NULL;
}

const fx_program *fxlua_check_program(lua_State *L, int idx) {
    lx_program *b = lx_checkudata(L, idx, LX_PROGRAM);
    if (!b->p) lx_errorf(L, FX_EARG, NULL, "attempt to use a freed ExportedProgram");
    return b->p;
}

fx_program **lx_push_program_slot(lua_State *L) {
    lx_program *b = lua_newuserdatauv(L, sizeof *b, 1); /* [ep] */
    b->p = NULL;
    luaL_setmetatable(L, LX_PROGRAM);
    lua_newtable(L);                                    /* [ep, cache] */
    lua_setiuservalue(L, -2, 1);                        /* [ep] */
    return &b->p;
}

/* ==== opening ================================================================================ */

void lx_open_udata(lua_State *L) {
    open_tensor_cache(L);
    /* SymInt */
    luaL_newmetatable(L, LX_SYMINT); /* [mt] */
    luaL_setfuncs(L, symint_meta, 0);
    lua_pushstring(L, "SymInt");
    lua_setfield(L, -2, "__name");
    luaL_newlib(L, symint_methods); /* [mt, methods] */
    lua_setfield(L, -2, "__index"); /* [mt] */
    lua_pop(L, 1);
}
