/* lua/lx_export.c — torch.export's C side: tracer, ExportedProgram, unlifted GraphModule.
 * Layer: lua. The export algorithm itself lives in core (trace.c, functionalize.c, export.c); the
 * Lua-side orchestration (swapping module state for tracing tensors, strict / non-strict attribute
 * rules, restoring state) lives in lua/export.lua, which calls the primitives registered here in
 * the private table `torch._export`:
 *
 *   _export.tracer{real = bool}                  -> Tracer
 *   tr:input(kind, name, target, persistent, t)  -> tracing tensor (kind "PARAMETER", ...)
 *   tr:constant(t)                               -> tracing tensor (a lifted constant)
 *   tr:bind(co, strict) / tr:unbind(co)          -> route coroutine co's ops into the trace
 *   tr:assign_buffer(target, old, new)           -> record `self.<target> = new`
 *   tr:finish({outputs...})                      -> append the output node
 *   tr:raw_graph()                               -> Graph (borrowed view of the raw graph so far)
 *   tr:build({{name, tensor}...}, opts)          -> ExportedProgram (consumes the trace)
 *   tr:attach(h)                                 -> a debugger session's SessionHook h gets every
 *                                                   recorded node and may pause co (lx_session.c)
 *   _export.call_site()                         -> {file, line, func} of the Lua code two levels
 *                                                   up (nn.lua's submodule reads), or nothing
 *   _export.tailcalled()                         -> whether the calling function was tail-called
 *   _export.snapshot_list()                      -> an empty list for snapshot_tables (sized as
 *                                                   the last one)
 *   _export.snapshot_tables(out, t, depth)       -> appends t, its key count and its key / value
 *                                                   pairs, and so for its plain tables, depth
 *                                                   levels down, to the list out
 *   _export.restore_tables(out, trees)           -> puts those tables back; whether a table in
 *                                                   the set `trees` had changed
 *
 * Userdata: "fxdb.Tracer" (box: fx_tracer*), "fxdb.ExportedProgram" (box: fx_program*; user value
 * 1 = a cache table for the Graph objects it hands out), "fxdb.GraphModule" (box: unlifted graph +
 * its own state tensors). Every box has an idempotent __gc.
 *
 * File order (lua/lx_impl.h): above lx_udata.c (which pushes and checks ExportedProgram boxes for
 * every file) and lx_graph.c, below lx_session.c, which it reaches only through lx_session_hook
 * (the step, guard and bind callbacks of an attached SessionHook). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/hop.h"
#include "core/shape.h"
#include "lua/lx_impl.h"
#include "lua/lx_open.h"

#define LX_TRACER "fxdb.Tracer"
#define LX_GRAPHMODULE "fxdb.GraphModule"

/* ==== Tracer ===================================================================================== */

typedef struct lx_tracer {
    fx_tracer *tr;       /* owned; NULL once built or collected */
    bool dynamic;        /* a symbol was made: the program keeps the shape environment */
    lua_State *co;       /* the coroutine running forward (for locations); borrowed */
    lua_State *L;        /* the state owning the tracer */
    lx_sess *sess;       /* the attached debugger session hook (kept alive by user value 2), or NULL */
    fx_shape_env *genv;  /* the environment whose guards the session hears of (one ref), or NULL */
    const fx_node *loc_from; /* when set (tr:set_location), nodes take this node's stack trace and
                                nn_module_stack instead of the coroutine's (a replayed program
                                keeps its original locations); kept alive by user value 4 */
    char pool[8192];     /* module-stack strings for the where callback */
    /* the last location tracer_where computed, for the next record of the same op call
     * (lx_dispatch_serial unchanged): frames with their strings copied into fpool, modules
     * (strings in pool, which only tracer_where writes) */
    unsigned long where_serial; /* 0: nothing cached */
    lua_State *where_co;
    int nframes, nmods;
    fx_frame frames[16];
    fx_module_entry mods[32];
    char fpool[4096];
    /* the nn._module_stack entries (tables, never changed once pushed) the module list in `pool`
     * was last read from: a registry reference to a list of them, kept alive there so an equal
     * address is the same entry (LUA_NOREF: none), and how many it holds (-1: nothing read) */
    int entries_ref, nentries;
    int entry_nmods[32];     /* (nentries,) how many of entry_mods the first i + 1 entries gave */
    size_t entry_used[32];   /* (nentries,) bytes of pool their strings take */
    fx_module_entry entry_mods[32];
} lx_tracer;

#define MAX_ENTRIES 32 /* entries tracer_where remembers (the list is made with room for them) */

static lx_tracer *check_tracer(lua_State *L, int idx) {
    lx_tracer *t = lx_checkudata(L, idx, LX_TRACER);
    if (!t->tr) lx_errorf(L, FX_EARG, NULL, "attempt to use a finished tracer");
    return t;
}

fx_tracer *lx_check_tracer(lua_State *L, int idx) {
    return check_tracer(L, idx)->tr;
}

/* fx_step_fn: hands each recorded node to the attached debugger session, if any. */
static int tracer_step(void *ud, fx_node *n, fx_err *err) {
    lx_tracer *t = ud;
    return t->sess ? lx_session_hook.on_node(t->sess, n, err) : FX_OK;
}

/* fx_guard_fn: a guard (or torch._check's runtime assert) recorded during a debugger session's
 * trace. */
static void tracer_on_guard(void *ud, int index, bool is_assert) {
    lx_tracer *t = ud;
    if (t->sess) lx_session_hook.on_guard(t->sess, index, is_assert);
}

/* The session stops hearing of guards (before the tracer dies or hands its environment on). */
static void tracer_unwatch_guards(lx_tracer *t) {
    if (!t->genv) return;
    fx_shape_env_set_on_guard(t->genv, NULL, NULL);
    fx_shape_env_release(t->genv);
    t->genv = NULL;
}

static int tracer_gc(lua_State *L) {
    lx_tracer *t = lx_checkudata(L, 1, LX_TRACER);
    tracer_unwatch_guards(t);
    if (t->co) lx_unbind_thread(L, t->co);
    if (t->sess) lx_session_hook.bound(t->sess, NULL);
    t->sess = NULL;
    fx_tracer_free(t->tr);
    t->tr = NULL;
    t->co = NULL;
    luaL_unref(L, LUA_REGISTRYINDEX, t->entries_ref);
    t->entries_ref = LUA_NOREF;
    return 0;
}

/* The {path, cls} of each entry of the module stack at the top of co's stack (outermost first) into
 * mods, strings in t->pool. The leading entries that are the same tables as last time (compared
 * by identity: the list at t->entries_ref keeps them alive) keep the strings read then; only the
 * others are read. Raw accesses only, which cannot raise (the list has room for MAX_ENTRIES). */
static void read_module_stack(lx_tracer *t, lua_State *co, fx_module_entry *mods, int max_mods,
                              int *nmods) {
    int stack = lua_gettop(co), n = (int)lua_rawlen(co, stack), same = 0;
    bool listed = t->entries_ref != LUA_NOREF && max_mods >= MAX_ENTRIES;
    if (listed) {
        lua_rawgeti(co, LUA_REGISTRYINDEX, t->entries_ref); /* [stack, list] */
        while (same < n && same < t->nentries) {
            lua_rawgeti(co, stack, same + 1);
            lua_rawgeti(co, stack + 1, same + 1);
            bool eq = lua_rawequal(co, -1, -2);
            lua_pop(co, 2);
            if (!eq) break;
            same++;
        }
    }
    /* entry i (0-based) of the list gave entry_mods[entry_mod[i] ..] and pool up to entry_used[i] */
    int k = same > 0 ? t->entry_nmods[same - 1] : 0;
    size_t used = same > 0 ? t->entry_used[same - 1] : 0;
    for (int i = 0; i < k; i++) mods[i] = t->entry_mods[i]; /* k <= MAX_ENTRIES <= max_mods */
    *nmods = k;
    for (int i = same + 1; i <= n; i++) {
        lua_rawgeti(co, stack, i);                     /* [stack, (list,) e] */
        if (lua_istable(co, -1) && *nmods < max_mods) {
            const char *f[2] = {"path", "cls"};
            char *out[2] = {NULL, NULL};
            for (int j = 0; j < 2; j++) {
                lua_pushstring(co, f[j]);
                lua_rawget(co, -2);                    /* [..., e, v] */
                size_t len = 0;
                const char *s = lua_type(co, -1) == LUA_TSTRING ? lua_tolstring(co, -1, &len) : "";
                if (used + len + 1 <= sizeof t->pool) {
                    memcpy(t->pool + used, s, len);
                    t->pool[used + len] = 0;
                    out[j] = t->pool + used;
                    used += len + 1;
                }
                lua_pop(co, 1);
            }
            if (out[0] && out[1]) mods[(*nmods)++] = (fx_module_entry){out[0], out[1]};
        }
        if (listed && i <= MAX_ENTRIES && *nmods <= MAX_ENTRIES) { /* remember the entry */
            lua_rawseti(co, stack + 1, i);
            t->entry_nmods[i - 1] = *nmods;
            t->entry_used[i - 1] = used;
            for (int j = 0; j < *nmods; j++) t->entry_mods[j] = mods[j];
            t->nentries = i;
        } else {
            lua_pop(co, 1);
            if (listed && t->nentries >= i) t->nentries = i - 1;
        }
    }
    if (listed) {
        if (t->nentries > n) t->nentries = n;
        lua_pop(co, 1);
    }
}

/* fx_where_fn: Lua frames of the traced coroutine and the global nn._module_stack. Runs inside a
 * dispatch called from that coroutine; uses only raw accesses that cannot raise. */
static void tracer_where(void *ud, fx_frame *frames, int max_frames, int *nframes,
                         fx_module_entry *mods, int max_mods, int *nmods) {
    lx_tracer *t = ud;
    if (t->loc_from) {
        const fx_node *src = t->loc_from;
        *nframes = src->nstack < max_frames ? src->nstack : max_frames;
        for (int i = 0; i < *nframes; i++) frames[i] = src->stack[i];
        *nmods = src->nmodules < max_mods ? src->nmodules : max_mods;
        for (int i = 0; i < *nmods; i++) mods[i] = src->modules[i];
        return;
    }
    lua_State *co = t->co ? t->co : t->L;
    int cache_f = max_frames < 16 ? max_frames : 16, cache_m = max_mods < 32 ? max_mods : 32;
    if (t->where_serial == lx_dispatch_serial && t->where_co == co) { /* same op call */
        *nframes = t->nframes < cache_f ? t->nframes : cache_f;
        for (int i = 0; i < *nframes; i++) frames[i] = t->frames[i];
        *nmods = t->nmods < cache_m ? t->nmods : cache_m;
        for (int i = 0; i < *nmods; i++) mods[i] = t->mods[i];
        return;
    }
    t->where_serial = 0;
    *nframes = lx_where(co, frames, max_frames);
    *nmods = 0;
    if (!lua_checkstack(co, 6)) return;
    lua_pushglobaltable(co);                           /* [G] */
    lua_pushliteral(co, "nn");
    lua_rawget(co, -2);                                /* [G, nn] */
    if (lua_istable(co, -1)) {
        lua_pushliteral(co, "_module_stack");
        lua_rawget(co, -2);                            /* [G, nn, stack] */
        if (lua_istable(co, -1)) read_module_stack(t, co, mods, max_mods, nmods);
        lua_pop(co, 1);
    }
    lua_pop(co, 2);
    /* keep this location for the op call's next record (the frames' strings live in lx_where's
     * buffer, which others overwrite: copied) */
    size_t fused = 0;
    bool fits = *nframes <= cache_f && *nmods <= cache_m;
    for (int i = 0; i < *nframes && fits; i++) {
        const char *src[3] = {frames[i].file, frames[i].func, frames[i].code};
        const char *dst[3];
        for (int k = 0; k < 3 && fits; k++) {
            size_t len = strlen(src[k]);
            fits = fused + len + 1 <= sizeof t->fpool;
            if (fits) {
                memcpy(t->fpool + fused, src[k], len + 1);
                dst[k] = t->fpool + fused;
                fused += len + 1;
            }
        }
        if (fits) t->frames[i] = (fx_frame){.file = dst[0], .func = dst[1], .code = dst[2],
                                            .line = frames[i].line};
    }
    if (!fits) return;
    for (int i = 0; i < *nmods; i++) t->mods[i] = mods[i];
    t->nframes = *nframes;
    t->nmods = *nmods;
    t->where_co = co;
    t->where_serial = lx_dispatch_serial;
}

static int l_tracer_new(lua_State *L) {
    bool real = false;
    if (lua_istable(L, 1)) {
        lua_getfield(L, 1, "real");
        real = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    /* user values: 1 the bound coroutine (kept alive so __gc can unbind it), 2 the debugger's
     * step hook, 3 the parent tracer of a higher-order op's body, 4 the tr:set_location node */
    lx_tracer *t = lua_newuserdatauv(L, sizeof *t, 4); /* [tracer] */
    memset(t, 0, sizeof *t);
    luaL_setmetatable(L, LX_TRACER);
    t->L = L;
    t->entries_ref = LUA_NOREF;
    lua_createtable(L, MAX_ENTRIES, 0);
    t->entries_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lx_where_reset(L);
    fx_trace_opts o = {real, tracer_where, t, tracer_step, t};
    fx_err err;
    fx_err_clear(&err);
    t->tr = fx_tracer_new(&o, &err);
    if (!t->tr) return lx_error(L, &err);
    return 1;
}

static fx_input_kind kind_from_string(lua_State *L, int idx) {
    static const char *const names[] = {"PARAMETER", "BUFFER", "CONSTANT_TENSOR", "USER_INPUT", "TOKEN", NULL};
    return (fx_input_kind)lx_checkoption(L, idx, NULL, names);
}

static int l_tracer_input(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    fx_input_kind kind = kind_from_string(L, 2);
    const char *name = lx_checkstring(L, 3);
    const char *target = lx_optstring(L, 4, NULL);
    bool persistent = lua_toboolean(L, 5);
    fx_tensor *ex = lx_check_tensor(L, 6);
    fx_err err;
    fx_err_clear(&err);
    fx_tensor *out;
    if (fx_tracer_input(t->tr, kind, name, target, persistent, ex, &out, &err)) return lx_error(L, &err);
    lx_push_tensor_owned(L, out);
    return 1;
}

/* ==== dynamic shapes ============================================================================
 */

static int64_t opt_bound(lua_State *L, int idx, int64_t def) {
    if (lua_isnoneornil(L, idx)) return def;
    if (lua_type(L, idx) == LUA_TNUMBER && !lua_isinteger(L, idx)) { /* +-math.huge: int_oo */
        lua_Number d = lua_tonumber(L, idx);
        if (d >= 9.2e18) return FX_INT_OO;
        if (d <= -9.2e18) return -FX_INT_OO;
    }
    lua_Integer v = luaL_checkinteger(L, idx);
    return v >= FX_INT_OO ? FX_INT_OO : v <= -FX_INT_OO ? -FX_INT_OO : (int64_t)v;
}

/* tr:symbol(hint, min, max, source) -> SymInt: a new backed size symbol s<N> with example value
 * hint and range [min, max] (nil = 0 / int_oo) met with [2, int_oo]; raises "3 not in range
 * [4, 64]" (kind constraint_violation) when hint is outside.  [-0, +1, e] */
static int l_tracer_symbol(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    int64_t hint = (int64_t)luaL_checkinteger(L, 2);
    fx_vr vr = {opt_bound(L, 3, 0), opt_bound(L, 4, FX_INT_OO)};
    const char *source = luaL_optstring(L, 5, "");
    fx_err err;
    fx_err_clear(&err);
    fx_shape_env *env = fx_tracer_shape_env(t->tr, &err);
    const fx_sym *s;
    if (!env || fx_shape_env_create_symbol(env, hint, vr, true, source, &s, &err))
        return lx_error(L, &err);
    t->dynamic = true;
    lx_push_symint(L, fx_si_from_expr(s));
    return 1;
}

/* tr:use_shape_env(ep): the trace continues ep's shape environment (symbols, ranges, guards), so
 * a retrace of ep (run_decompositions) builds a program with the same range constraints; nothing
 * for a static ep.  [-0, +0, e] */
static int l_tracer_use_shape_env(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    const fx_program *p = fxlua_check_program(L, 2);
    if (!p->shape_env) return 0;
    fx_err err;
    fx_err_clear(&err);
    if (fx_tracer_use_shape_env(t->tr, p->shape_env, &err)) return lx_error(L, &err);
    t->dynamic = true;
    return 0;
}

/* tr:reuse_unbacked([list]): the next unbacked symbols the trace creates are the SymInts of list
 * (bare unbacked symbols of the trace's environment, in creation order) instead of new ones;
 * no list (or {}) clears, allocating nothing (fx_shape_env_reuse_unbacked; tr:unbind clears
 * too). Nothing for a static trace.  [-0, +0, e] */
static int l_tracer_reuse_unbacked(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    int n = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        n = (int)luaL_len(L, 2);
    }
    if (n > FX_REUSE_CAP) n = FX_REUSE_CAP + 1; /* the core's error names the cap */
    const fx_sym *syms[FX_REUSE_CAP + 1];
    for (int i = 0; i < n && i < FX_REUSE_CAP; i++) {
        fx_symint v;
        lua_rawgeti(L, 2, i + 1);
        if (!lx_to_symint(L, -1, &v) || !v.expr)
            return luaL_error(L, "reuse_unbacked: entry %d is not a symbolic SymInt", i + 1);
        syms[i] = v.expr;
        lua_pop(L, 1);
    }
    if (!t->dynamic && n == 0) return 0;
    fx_err err;
    fx_err_clear(&err);
    fx_shape_env *env = fx_tracer_shape_env(t->tr, &err);
    if (!env || fx_shape_env_reuse_unbacked(env, syms, n, &err)) return lx_error(L, &err);
    return 0;
}

/* tr:input_sym(name, example, sizes) -> tensor: a user input whose sizes (a table of integers and
 * SymInts, one per dim) may be symbolic.  [-0, +1, e] */
static int l_tracer_input_sym(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    const char *name = luaL_checkstring(L, 2);
    fx_tensor *ex = lx_check_tensor(L, 3);
    luaL_checktype(L, 4, LUA_TTABLE);
    int nd = fx_tensor_ndim(ex);
    fx_symint sz[FX_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        lua_rawgeti(L, 4, d + 1);
        if (!lx_to_symint(L, -1, &sz[d]))
            return luaL_error(L, "input_sym: size %d is not an integer", d);
        lua_pop(L, 1);
    }
    fx_err err;
    fx_err_clear(&err);
    fx_tensor *out;
    if (fx_tracer_input_sym(t->tr, FX_INPUT_USER_INPUT, name, ex, sz, &out, &err))
        return lx_error(L, &err);
    lx_push_tensor_owned(L, out);
    return 1;
}

static void push_vr(lua_State *L, fx_vr r) {
    lua_createtable(L, 2, 0);
    if (r.lo <= -FX_INT_OO)
        lua_pushnumber(L, -HUGE_VAL);
    else
        lua_pushinteger(L, (lua_Integer)r.lo);
    lua_rawseti(L, -2, 1);
    if (r.hi >= FX_INT_OO)
        lua_pushnumber(L, HUGE_VAL);
    else
        lua_pushinteger(L, (lua_Integer)r.hi);
    lua_rawseti(L, -2, 2);
}

static void push_sym_string(lua_State *L, const fx_sym *e) {
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_sym_format(&sb, e);
    lx_push_strbuf(L, &sb);
}

/* Pushes {symbols = {{name, hint, range = {lo, hi}, declared = {lo, hi}, source, loc,
 * replacement = "s0" | nil, unbacked}...}, guards = {{expr, loc, line, op}...}, asserts = {...},
 * refinements = {{symbol, guard = i | assert = i, before = {lo, hi}, after = {lo, hi},
 * replacement = "s0" | nil}...}} of env (guard / assert numbers 1-based); ranges use
 * +-math.huge for int_oo.  [-0, +1, m] */
static void push_shape_info(lua_State *L, fx_shape_env *env) {
    lua_createtable(L, 0, 4); /* [info] */
    int n;
    const fx_symbol_info *syms = fx_shape_env_symbols(env, &n);
    lua_createtable(L, n, 0); /* [info, symbols] */
    for (int i = 0; i < n; i++) {
        const fx_symbol_info *s = &syms[i];
        lua_createtable(L, 0, 8);
        push_sym_string(L, s->sym);
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, (lua_Integer)s->hint);
        lua_setfield(L, -2, "hint");
        push_vr(L, s->vr);
        lua_setfield(L, -2, "range");
        push_vr(L, s->declared);
        lua_setfield(L, -2, "declared");
        lua_pushstring(L, s->source);
        lua_setfield(L, -2, "source");
        lua_pushstring(L, s->loc);
        lua_setfield(L, -2, "loc");
        lua_pushboolean(L, s->unbacked);
        lua_setfield(L, -2, "unbacked");
        if (s->replacement) {
            push_sym_string(L, fx_shape_env_simplify(env, s->replacement));
            lua_setfield(L, -2, "replacement");
        }
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "symbols"); /* [info] */
    for (int which = 0; which < 2; which++) {
        const fx_guard *g =
            which == 0 ? fx_shape_env_guards(env, &n) : fx_shape_env_runtime_asserts(env, &n);
        lua_createtable(L, n, 0);
        for (int i = 0; i < n; i++) {
            lua_createtable(L, 0, 4);
            push_sym_string(L, g[i].expr);
            lua_setfield(L, -2, "expr");
            lua_pushstring(L, g[i].loc);
            lua_setfield(L, -2, "loc");
            lua_pushstring(L, g[i].line);
            lua_setfield(L, -2, "line");
            lua_pushstring(L, g[i].op);
            lua_setfield(L, -2, "op");
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, which == 0 ? "guards" : "asserts");
    }
    const fx_sym_refinement *r = fx_shape_env_refinements(env, &n);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_createtable(L, 0, 5);
        push_sym_string(L, r[i].sym);
        lua_setfield(L, -2, "symbol");
        lua_pushinteger(L, r[i].index + 1);
        lua_setfield(L, -2, r[i].is_assert ? "assert" : "guard");
        push_vr(L, r[i].before);
        lua_setfield(L, -2, "before");
        push_vr(L, r[i].after);
        lua_setfield(L, -2, "after");
        if (r[i].replacement) {
            push_sym_string(L, r[i].replacement);
            lua_setfield(L, -2, "replacement");
        }
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "refinements");
}

/* tr:shape_info() -> push_shape_info's table of the trace's environment ({} for a static trace
 * outside a debugger session).  [-0, +1, e] */
static int l_tracer_shape_info(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    if (!t->dynamic && !t->genv) {
        lua_createtable(L, 0, 0);
        return 1;
    }
    fx_err err;
    fx_err_clear(&err);
    fx_shape_env *env = fx_tracer_shape_env(t->tr, &err);
    if (!env) return lx_error(L, &err);
    push_shape_info(L, env);
    return 1;
}

static int l_tracer_constant(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    fx_tensor *v = lx_check_tensor(L, 2);
    fx_err err;
    fx_err_clear(&err);
    fx_tensor *out;
    if (fx_tracer_constant(t->tr, v, &out, &err)) return lx_error(L, &err);
    lx_push_tensor_owned(L, out);
    return 1;
}

/* tr:set_location(node|nil): later nodes copy node's stack trace and nn_module_stack (used by
 * run_decompositions' replay); nil goes back to the running coroutine's. */
static int l_tracer_set_location(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    t->loc_from = lua_isnoneornil(L, 2) ? NULL : lx_check_node(L, 2);
    lua_settop(L, 2);
    lua_setiuservalue(L, 1, 4);
    return 0;
}

static int l_tracer_bind(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    lua_State *co = lua_tothread(L, 2);
    lx_argexpected(L, co != NULL, 2, "thread");
    lx_state st = {.ctx = fx_tracer_ctx(t->tr), .tracer = t->tr, .strict = lua_toboolean(L, 3),
                   .sess = t->sess};
    lx_bind_thread(L, co, &st);
    t->co = co;
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, 1, 1);
    if (t->sess) lx_session_hook.bound(t->sess, co);
    return 0;
}

static int l_tracer_unbind(lua_State *L) {
    lx_tracer *t = lx_checkudata(L, 1, LX_TRACER);
    lua_State *co = lua_tothread(L, 2);
    lx_argexpected(L, co != NULL, 2, "thread");
    if (t->dynamic && t->tr) { /* a replay that failed half way leaves no reuse list in ep's env */
        fx_err err;
        fx_err_clear(&err);
        fx_shape_env *env = fx_tracer_shape_env(t->tr, &err);
        if (env) fx_shape_env_reuse_unbacked(env, NULL, 0, &err);
    }
    lx_unbind_thread(L, co);
    if (t->co == co) {
        t->co = NULL;
        lua_pushnil(L);
        lua_setiuservalue(L, 1, 1);
    }
    if (t->sess) lx_session_hook.bound(t->sess, NULL);
    return 0;
}

/* tr:attach(h): the SessionHook h receives every node recorded from now on (and can pause the
 * bound coroutine); the tracer keeps h alive.  [-0, +0, e] */
static int l_tracer_attach(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    lx_sess *sess = lx_session_hook.check(L, 2);
    /* the session hears of every guard: the environment exists from now on (a static trace never
     * puts a symbol in it, so it stays empty) */
    fx_err err;
    fx_err_clear(&err);
    fx_shape_env *env = fx_tracer_shape_env(t->tr, &err);
    if (!env) return lx_error(L, &err);
    tracer_unwatch_guards(t);
    t->genv = fx_shape_env_retain(env);
    fx_shape_env_set_on_guard(env, tracer_on_guard, t);
    t->sess = sess;
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, 1, 2); /* user value 1 holds the bound coroutine */
    return 0;
}

static int l_tracer_assign_buffer(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    const char *target = lx_checkstring(L, 2);
    fx_tensor *old = lua_isnoneornil(L, 3) ? NULL : lx_check_tensor(L, 3);
    fx_tensor *nw = lx_check_tensor(L, 4);
    fx_err err;
    fx_err_clear(&err);
    if (fx_tracer_assign_buffer(t->tr, target, old, nw, &err)) return lx_error(L, &err);
    return 0;
}

static int l_tracer_finish(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    lx_checktype(L, 2, LUA_TTABLE);
    int n = (int)lua_rawlen(L, 2);
    fx_ivalue *outs = lx_ivbox_new(L, n); /* [.., box] */
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        lx_to_ivalue(L, -1, &outs[i]);
        lua_pop(L, 1);
    }
    fx_err err;
    fx_err_clear(&err);
    if (fx_tracer_finish(t->tr, outs, n, &err)) return lx_error(L, &err);
    return 0;
}

static int l_tracer_raw_graph(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    lx_push_graph(L, fx_tracer_graph(t->tr), 1);
    return 1;
}

static int l_tracer_node_of(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    fx_node *n = fx_tracer_node_of(t->tr, lx_check_tensor(L, 2));
    if (!n) return 0;
    lua_pushstring(L, n->name);
    return 1;
}

/* ==== ExportedProgram ============================================================================ */

static int program_gc(lua_State *L) {
    lx_program *b = lx_checkudata(L, 1, LX_PROGRAM);
    fx_program_free(b->p);
    b->p = NULL;
    return 0;
}

static int program_tostring(lua_State *L) {
    const fx_program *p = fxlua_check_program(L, 1);
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_program_format(&sb, p);
    fx_err err;
    fx_err_clear(&err);
    if (fx_strbuf_status(&sb, &err)) {
        fx_strbuf_free(&sb);
        return lx_error(L, &err);
    }
    lx_push_strbuf(L, &sb);
    return 1;
}

static void push_strbuf(lua_State *L, fx_strbuf *sb) {
    if (sb->oom) {
        fx_strbuf_free(sb);
        lx_errorf(L, FX_ENOMEM, NULL, "not enough memory");
    }
    lx_push_strbuf(L, sb);
}

static int signature_tostring(lua_State *L) {
    lua_getfield(L, 1, "_program"); /* [sig, ep] */
    const fx_program *p = fxlua_check_program(L, -1);
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_signature_format(&sb, &p->sig, 0);
    push_strbuf(L, &sb);
    return 1;
}

static int spec_tostring(lua_State *L) {
    lua_getfield(L, 1, "_text");
    return 1;
}

/* ep.graph_signature: {input_specs = {...}, output_specs = {...}} with __tostring. */
static void push_signature(lua_State *L, int ep_idx, const fx_program *p) {
    lua_createtable(L, 0, 4);                               /* [sig] */
    lua_pushvalue(L, ep_idx);
    lua_setfield(L, -2, "_program");
    const char *lists[2] = {"input_specs", "output_specs"};
    for (int which = 0; which < 2; which++) {
        int n = which ? p->sig.noutputs : p->sig.ninputs;
        lua_createtable(L, n, 0);                           /* [sig, list] */
        for (int i = 0; i < n; i++) {
            const char *kind, *arg, *target;
            bool has_persistent = false, persistent = false;
            if (which) {
                kind = fx_output_kind_name(p->sig.outputs[i].kind);
                arg = p->sig.outputs[i].arg;
                target = p->sig.outputs[i].target;
            } else {
                kind = fx_input_kind_name(p->sig.inputs[i].kind);
                arg = p->sig.inputs[i].arg;
                target = p->sig.inputs[i].target;
                has_persistent = p->sig.inputs[i].kind == FX_INPUT_BUFFER;
                persistent = p->sig.inputs[i].persistent;
            }
            lua_createtable(L, 0, 5);                       /* [sig, list, spec] */
            lua_pushstring(L, kind);
            lua_setfield(L, -2, "kind");
            lua_createtable(L, 0, 1);
            lua_pushstring(L, arg);
            lua_setfield(L, -2, "name");
            lua_setfield(L, -2, "arg");
            if (target) {
                lua_pushstring(L, target);
                lua_setfield(L, -2, "target");
            }
            if (has_persistent) {
                lua_pushboolean(L, persistent);
                lua_setfield(L, -2, "persistent");
            }
            char text[512];
            snprintf(text, sizeof text, "%s: %s%s%s%s%s", arg, kind, target ? " target='" : "",
                     target ? target : "", target ? "'" : "",
                     has_persistent ? (persistent ? " persistent=True" : " persistent=False") : "");
            lua_pushstring(L, text);
            lua_setfield(L, -2, "_text");
            if (luaL_newmetatable(L, "fxdb.ArgSpec")) { /* one metatable for every spec */
                lua_pushcfunction(L, spec_tostring);
                lua_setfield(L, -2, "__tostring");
            }
            lua_setmetatable(L, -2);
            lua_rawseti(L, -2, i + 1);                      /* [sig, list] */
        }
        lua_setfield(L, -2, lists[which]);                  /* [sig] */
    }
    lua_newtable(L);
    lua_pushcfunction(L, signature_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_setmetatable(L, -2);
    /* PyTorch's derived views (buffers_to_mutate, inputs_to_parameters, user_inputs, ...) are
     * added by export.lua's torch._export.decorate_signature(sig), when it is loaded. */
    int top = lua_gettop(L);
    if (lua_getglobal(L, "torch") == LUA_TTABLE && lua_getfield(L, -1, "_export") == LUA_TTABLE &&
        lua_getfield(L, -1, "decorate_signature") == LUA_TFUNCTION) {
        lua_pushvalue(L, top);
        lua_call(L, 1, 0);
    }
    lua_settop(L, top);
}

static void push_named_table(lua_State *L, const fx_named_tensor *v, int n) {
    lua_createtable(L, 0, n);
    for (int i = 0; i < n; i++) {
        lx_push_tensor(L, v[i].t);
        lua_setfield(L, -2, v[i].name);
    }
}

/* The Graph userdata for a graph owned by the program at ep_idx, cached in its user value so
 * that ep.graph == ep.graph. */
static void push_cached_graph(lua_State *L, int ep_idx, const char *key, fx_graph *g) {
    lua_getiuservalue(L, ep_idx, 1);      /* [cache] */
    lua_getfield(L, -1, key);             /* [cache, g?] */
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lx_push_graph(L, g, ep_idx);      /* [cache, g] */
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, key);
    }
    lua_remove(L, -2);                    /* [g] */
}

static int code_of_graph(lua_State *L, const fx_graph *g) {
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_strbuf_append(&sb, "\n\n\n");
    fx_graph_format_forward(&sb, g, 0, false);
    push_strbuf(L, &sb);
    return 1;
}

static int l_module(lua_State *L);

static int program_index(lua_State *L) {
    const fx_program *p = fxlua_check_program(L, 1);
    const char *k = lx_checkstring(L, 2);
    if (!strcmp(k, "graph")) {
        push_cached_graph(L, 1, "graph", p->graph);
    } else if (!strcmp(k, "raw_graph")) {
        push_cached_graph(L, 1, "raw", p->raw);
    } else if (!strcmp(k, "graph_signature")) { /* built once, then the same table, as in torch */
        lua_getiuservalue(L, 1, 1); /* [cache] */
        if (lua_getfield(L, -1, "graph_signature") == LUA_TNIL) {
            lua_pop(L, 1);
            push_signature(L, 1, p); /* [cache, sig] */
            lua_pushvalue(L, -1);
            lua_setfield(L, -3, "graph_signature");
        }
        lua_remove(L, -2); /* [sig] */
    } else if (!strcmp(k, "state_dict")) {
        push_named_table(L, p->state, p->nstate);
    } else if (!strcmp(k, "constants")) {
        push_named_table(L, p->constants, p->nconstants);
    } else if (!strcmp(k, "graph_module")) {
        lua_createtable(L, 0, 2);                /* [gm] */
        push_cached_graph(L, 1, "graph", p->graph);
        lua_setfield(L, -2, "graph");
        code_of_graph(L, p->graph);
        lua_setfield(L, -2, "code");
    } else if (!strcmp(k, "training_ir")) {
        lua_pushboolean(L, p->training_ir);
    } else if (!strcmp(k, "_shape_info")) {
        /* the shape environment's symbols, guards and refinements (fxdb.guards, :why s0); nil
         * for a static program */
        if (p->shape_env)
            push_shape_info(L, p->shape_env);
        else
            lua_pushnil(L);
    } else if (!strcmp(k, "_range_list")) {
        /* {{name, {lo, hi}}...}: the range constraints in order (export.lua builds
         * ep.range_constraints from it) */
        const fx_symbol_info *syms[64];
        int n = fx_program_range_symbols(p, syms, 64);
        lua_createtable(L, n, 0);
        for (int i = 0; i < n; i++) {
            lua_createtable(L, 2, 0);
            push_sym_string(L, syms[i]->sym);
            lua_rawseti(L, -2, 1);
            push_vr(L, fx_symbol_constraint_range(syms[i]));
            lua_rawseti(L, -2, 2);
            lua_rawseti(L, -2, i + 1);
        }
    } else if (!strcmp(k, "module")) {
        lua_pushcfunction(L, l_module);
    } else {
        /* Lua-side properties (export.lua's torch._export.program_properties: functions of the
         * program) and methods (torch._export.program_methods). */
        lua_getglobal(L, "torch");
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "_export");
            if (lua_istable(L, -1)) {
                lua_getfield(L, -1, "program_properties");
                if (lua_istable(L, -1) && lua_getfield(L, -1, k) == LUA_TFUNCTION) {
                    lua_pushvalue(L, 1);
                    lua_call(L, 1, 1);
                    return 1;
                }
                lua_settop(L, 4);
                lua_getfield(L, -1, "program_methods");
                if (lua_istable(L, -1)) {
                    lua_getfield(L, -1, k);
                    return 1;
                }
            }
        }
        lua_pushnil(L);
    }
    return 1;
}

/* tr:build(state, opts): state is a list of {name, tensor} for parameters and buffers. */
static int l_tracer_build(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    lx_checktype(L, 2, LUA_TTABLE);
    fx_export_opts o = {0};
    if (lua_istable(L, 3)) {
        lua_getfield(L, 3, "training_ir");
        o.training_ir = lua_toboolean(L, -1);
        lua_getfield(L, 3, "lift_mutated_constants");
        o.lift_mutated_constants = lua_toboolean(L, -1);
        lua_getfield(L, 3, "auto_functionalized_v2");
        o.auto_functionalized_v2 = lua_toboolean(L, -1);
        lua_pop(L, 3);
    }
    int n = (int)lua_rawlen(L, 2);
    fx_program **slot = lx_push_program_slot(L); /* [.., ep]: made before the program is */
    /* The names and tensors stay referenced by the table at index 2 during the build. */
    fx_named_tensor *st = lua_newuserdatauv(L, sizeof *st * (size_t)(n + 1), 0); /* [.., st] */
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);          /* [.., st, pair] */
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);             /* [.., st, pair, name, t] */
        st[i].name = (char *)lx_checkstring(L, -2);
        st[i].t = lx_check_tensor(L, -1);
        lua_pop(L, 3);
    }
    fx_err err;
    fx_err_clear(&err);
    fx_graph *raw;
    fx_input_info *infos;
    int ninfos;
    /* the shape environment before the take: from the take on, raw and infos are ours until
     * fx_export_build (which frees them on failure too) */
    if ((t->dynamic || fx_tracer_has_symbols(t->tr)) &&
        !(o.shape_env = fx_tracer_shape_env(t->tr, &err)))
        return lx_error(L, &err);
    if (fx_tracer_take(t->tr, &raw, &infos, &ninfos, &err)) return lx_error(L, &err);
    tracer_unwatch_guards(t); /* the program's later guards are not the session's */
    if (fx_export_build(raw, infos, ninfos, st, n, &o, slot, &err)) return lx_error(L, &err);
    lua_pop(L, 1); /* [.., ep] */
    return 1;
}


/* ==== a program's inputs ========================================================================= */

fx_ivalue *lx_program_inputs(lua_State *L, const fx_program *p, int tidx, int *n) {
    tidx = lua_absindex(L, tidx);
    int nuser = (int)lua_rawlen(L, tidx);
    if (!p) {
        fx_ivalue *in = lx_ivbox_new(L, nuser);
        for (int i = 0; i < nuser; i++) {
            lua_rawgeti(L, tidx, i + 1);
            lx_to_ivalue(L, -1, &in[i]);
            lua_pop(L, 1);
        }
        *n = nuser;
        return in;
    }
    int want = 0;
    for (int i = 0; i < p->sig.ninputs; i++)
        if (p->sig.inputs[i].kind == FX_INPUT_USER_INPUT) want++;
    if (want != nuser)
        lx_errorf(L, FX_EARG, NULL,
                  "the program takes %d tensor input%s but %d %s given (arguments that are not "
                  "tensors were specialized at export and are not inputs)",
                  want, want == 1 ? "" : "s", nuser, nuser == 1 ? "was" : "were");
    fx_ivalue *in = lx_ivbox_new(L, p->sig.ninputs);
    for (int i = 0, u = 0; i < p->sig.ninputs; i++) {
        if (p->sig.inputs[i].kind == FX_INPUT_USER_INPUT) {
            lua_rawgeti(L, tidx, ++u);
            lx_to_ivalue(L, -1, &in[i]);
            lua_pop(L, 1);
        } else if (p->sig.inputs[i].kind == FX_INPUT_TOKEN) { /* a fresh effect token */
            fx_err err;
            fx_err_clear(&err);
            if (fx_hop_new_token(FX_DEVICE_CPU, &in[i], &err)) lx_error(L, &err);
        } else {
            fx_tensor *t = fx_program_input_value(p, i);
            if (!t) lx_errorf(L, FX_EARG, NULL, "no value for %s", p->sig.inputs[i].arg);
            in[i] = fx_iv_tensor(t);
        }
    }
    *n = p->sig.ninputs;
    return in;
}

/* ==== the unlifted module (ep:module()) ========================================================= */

typedef struct lx_gm {
    fx_graph *g;            /* owned */
    fx_named_tensor *attrs; /* (nattrs,) owned: the module's own parameters / buffers */
    int nattrs;
    int nuser;              /* number of user inputs */
    fx_interp *it;          /* made by the first call, reset by the next: the graph is planned
                               once (core/interp.c), so steady-state calls allocate only outputs */
} lx_gm;

static lx_gm *check_gm(lua_State *L, int idx) {
    lx_gm *m = lx_checkudata(L, idx, LX_GRAPHMODULE);
    if (!m->g) lx_errorf(L, FX_EARG, NULL, "attempt to use a freed GraphModule");
    return m;
}

static int gm_gc(lua_State *L) {
    lx_gm *m = lx_checkudata(L, 1, LX_GRAPHMODULE);
    fx_interp_free(m->it);
    m->it = NULL;
    fx_graph_free(m->g);
    m->g = NULL;
    for (int i = 0; i < m->nattrs; i++) {
        fx_free(m->attrs[i].name);
        fx_tensor_release(m->attrs[i].t);
    }
    fx_free(m->attrs);
    m->attrs = NULL;
    m->nattrs = 0;
    return 0;
}

static int gm_attr(void *ud, const char *target, fx_tensor **out, fx_err *err) {
    lx_gm *m = ud;
    for (int i = 0; i < m->nattrs; i++)
        if (!strcmp(m->attrs[i].name, target)) {
            *out = m->attrs[i].t;
            return FX_OK;
        }
    return fx_err_setf(err, FX_EARG, "GraphModule has no attribute '%s'", target);
}

/* ep:module([{reinplace = bool, share_state = bool}]): the stateful unlifted module. Its state
 * starts as clones of the program's state_dict and constants, so calling it never changes the
 * ExportedProgram; with share_state it is the program's own tensors, as PyTorch's ep.module()
 * shares them (the exported module's buffers then are the traced module's). */
static int l_module(lua_State *L) {
    const fx_program *p = fxlua_check_program(L, 1);
    bool reinplace = false, share = false;
    static const char *const valid[] = {"reinplace", "share_state", NULL};
    lx_check_options(L, 2, "module", valid);
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "reinplace");
        reinplace = lua_toboolean(L, -1);
        lua_getfield(L, 2, "share_state"); /* attributes are the program's own tensors */
        share = lua_toboolean(L, -1);
        lua_pop(L, 2);
    }
    lx_gm *m = lua_newuserdatauv(L, sizeof *m, 1); /* [ep, opts?, gm] */
    memset(m, 0, sizeof *m);
    luaL_setmetatable(L, LX_GRAPHMODULE);
    fx_err err;
    fx_err_clear(&err);
    if (fx_program_unlift(p, &m->g, &err)) return lx_error(L, &err);
    fx_strbuf why = FX_STRBUF_INIT;
    if (reinplace && fx_pass_reinplace_explain(m->g, NULL, &why, &err)) {
        fx_strbuf_free(&why);
        return lx_error(L, &err);
    }
    lx_push_strbuf(L, &why); /* [ep, opts?, gm, why] */
    lua_insert(L, -2);                                      /* [ep, opts?, why, gm] */
    int n = p->nstate + p->nconstants;
    m->attrs = fx_calloc((size_t)n + 1, sizeof *m->attrs);
    if (!m->attrs) return lx_errorf(L, FX_ENOMEM, NULL, "not enough memory");
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    for (int i = 0; i < n; i++) {
        const fx_named_tensor *src = i < p->nstate ? &p->state[i] : &p->constants[i - p->nstate];
        fx_ivalue a = fx_iv_tensor(src->t);
        fx_tensor *c = NULL;
        int rc = share ? (c = fx_tensor_retain(src->t), FX_OK)
                       : fx_call_t(&eager, FX_OP_CLONE, &c, &err, 1, &a);
        fx_ivalue_clear(&a);
        if (rc) return lx_error(L, &err);
        /* parameters stay leaves that require grad, as ep.module()'s nn.Parameters do */
        if (!share) fx_tensor_set_requires_grad(c, fx_tensor_requires_grad(src->t));
        m->attrs[m->nattrs].t = c;
        m->attrs[m->nattrs].name = fx_strdup(src->name);
        m->nattrs++;
        if (!m->attrs[m->nattrs - 1].name) return lx_errorf(L, FX_ENOMEM, NULL, "not enough memory");
    }
    for (fx_node *nd = fx_graph_first(m->g); nd; nd = nd->next)
        if (nd->op == FX_NODE_PLACEHOLDER) m->nuser++;
    lua_newtable(L);          /* [.., why, gm, cache] */
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "reinplace_notes");
    lua_setiuservalue(L, -2, 1);
    return 1;
}

/* gm(...): takes the arguments the original forward took. Non-tensor arguments were specialized
 * into the graph at export, so only the tensors are graph inputs (torch.export checks the others
 * against the example values; fxdb simply drops them). */
static int gm_call(lua_State *L) {
    lx_gm *m = check_gm(L, 1);
    int top = lua_gettop(L);
    /* the graph's inputs: every tensor of the arguments, tables flattened as export flattened
     * them (torch._export.flatten_inputs in export.lua) */
    lua_getglobal(L, "torch");                          /* [gm, args..., torch] */
    lua_getfield(L, -1, "_export");
    lua_getfield(L, -1, "flatten_inputs");              /* [.., torch, E, f] */
    lua_createtable(L, top - 1, 0);
    for (int i = 2; i <= top; i++) {
        lua_pushvalue(L, i);
        lua_rawseti(L, -2, i - 1);
    }
    lua_pushinteger(L, top - 1);
    lua_call(L, 2, 1);                                  /* [.., torch, E, leaves] */
    int leaves = lua_gettop(L);
    int nargs = (int)lua_rawlen(L, leaves);
    fx_ivalue *in = lx_ivbox_new(L, nargs);             /* [.., leaves, box] */
    for (int k = 0; k < nargs; k++) {
        lua_rawgeti(L, leaves, k + 1);
        lx_to_ivalue(L, -1, &in[k]);
        lua_pop(L, 1);
    }
    /* Autograd's check on the write-backs, as the unlifted module's copy_ into a parameter
     * raises in PyTorch when called with grad enabled (the program mutated it under no_grad). */
    if (!lx_current(L)->ctx->no_grad) {
        for (const fx_node *nd = fx_graph_first(m->g); nd; nd = nd->next) {
            if (nd->aten != fx_op_get(FX_OP_COPY_) || nd->nargs < 1 || nd->args[0].tag != FX_IV_NODE ||
                nd->args[0].u.node->op != FX_NODE_GET_ATTR)
                continue;
            fx_tensor *dst = NULL;
            fx_err e2;
            fx_err_clear(&e2);
            if (!gm_attr(m, nd->args[0].u.node->target, &dst, &e2) && fx_tensor_requires_grad(dst))
                return lx_errorf(L, FX_EARG, NULL, "a leaf Variable that requires grad is being used in an "
                                     "in-place operation.");
        }
    }
    fx_interp_opts o = {0};
    o.attr = gm_attr;
    o.attr_ud = m;
    fx_ivalue *res = lx_ivbox_new(L, 1); /* [..., box, resbox] */
    fx_err err;
    fx_err_clear(&err);
    int rc = m->it ? fx_interp_reset(m->it, in, nargs, &err)
                   : fx_interp_new(m->g, in, nargs, &o, &m->it, &err);
    if (!rc) rc = fx_interp_run(m->it, &err);
    if (!rc) rc = fx_interp_take_outputs(m->it, &res[0], &err);
    if (rc) return lx_error(L, &err);
    int n = res[0].u.list.n;
    luaL_checkstack(L, n, "too many results");
    for (int i = 0; i < n; i++) lx_push_ivalue(L, &res[0].u.list.items[i]);
    return n;
}

/* gm:plan_stats() -> {nodes, direct, inplace, views, view_hits, noop_copies, buffers,
 * pool_bytes, planned_bytes} of the interpreter plan (core/interp.h), or nil before the first
 * call.  [-0, +1, e] */
static int gm_plan_stats(lua_State *L) {
    lx_gm *m = check_gm(L, 1);
    if (!m->it) return 0;
    fx_interp_stats st;
    fx_interp_get_stats(m->it, &st);
    lua_createtable(L, 0, 9);
    const struct {
        const char *k;
        int64_t v;
    } f[] = {{"nodes", st.nodes},
             {"direct", st.direct},
             {"inplace", st.inplace},
             {"views", st.views},
             {"view_hits", st.view_hits},
             {"noop_copies", st.noop_copies},
             {"buffers", st.buffers},
             {"pool_bytes", st.pool_bytes},
             {"planned_bytes", st.planned_bytes}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        lua_pushinteger(L, (lua_Integer)f[i].v);
        lua_setfield(L, -2, f[i].k);
    }
    return 1;
}

static int gm_index(lua_State *L) {
    lx_gm *m = check_gm(L, 1);
    const char *k = lx_checkstring(L, 2);
    if (!strcmp(k, "plan_stats")) {
        lua_pushcfunction(L, gm_plan_stats);
        return 1;
    }
    if (!strcmp(k, "graph")) {
        lua_getiuservalue(L, 1, 1);          /* [cache] */
        lua_getfield(L, -1, "graph");
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lx_push_graph(L, m->g, 1);
            lua_pushvalue(L, -1);
            lua_setfield(L, -3, "graph");
        }
        return 1;
    }
    if (!strcmp(k, "code")) return code_of_graph(L, m->g);
    if (!strcmp(k, "reinplace_notes")) { /* what fxdb.reinplace did with each custom op */
        lua_getiuservalue(L, 1, 1);
        lua_getfield(L, -1, "reinplace_notes");
        return 1;
    }
    if (!strcmp(k, "state_dict") || !strcmp(k, "buffers")) {
        push_named_table(L, m->attrs, m->nattrs);
        return 1;
    }
    for (int i = 0; i < m->nattrs; i++)
        if (!strcmp(m->attrs[i].name, k)) {
            lx_push_tensor(L, m->attrs[i].t);
            return 1;
        }
    return 0;
}

static int gm_tostring(lua_State *L) {
    lx_gm *m = check_gm(L, 1);
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_graph_format_code(&sb, m->g, 0, "GraphModule");
    push_strbuf(L, &sb);
    return 1;
}

/* ==== higher-order ops ============================================================================ */

/* _export.slice_meta(t, dim): a meta tensor shaped like t.select(dim, 0), recording nothing (the
 * example a scan body's x_t placeholder is traced with). */
static int l_slice_meta(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    int nd = fx_tensor_ndim(t), d;
    fx_err err;
    fx_err_clear(&err);
    if (nd == 0) return lx_errorf(L, FX_ESHAPE, NULL, "scan: xs must have at least one dimension");
    if (fx_wrap_dim(lx_checkinteger(L, 2), nd, &d, &err)) return lx_error(L, &err);
    int64_t sizes[FX_MAX_DIMS];
    for (int i = 0, k = 0; i < nd; i++)
        if (i != d) sizes[k++] = fx_tensor_size(t, i);
    fx_tensor *m;
    if (fx_tensor_empty(nd - 1, sizes, fx_tensor_dtype(t), FX_DEVICE_META, &m, &err)) return lx_error(L, &err);
    lx_push_tensor_owned(L, m);
    return 1;
}

/* tr:set_parent(parent): tr traces the body of a higher-order op called in parent's trace. */
static int l_tracer_set_parent(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    fx_tracer_set_parent(t->tr, check_tracer(L, 2)->tr);
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, 1, 3); /* keep the parent alive as long as the body tracer */
    return 0;
}

/* tr:captures() -> list of the parent tensors lifted into placeholders, in order. */
static int l_tracer_captures(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    fx_tensor *const *c;
    int n = fx_tracer_captures(t->tr, &c);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lx_push_tensor(L, c[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* tr:align_captures({tensors}) */
static int l_tracer_align_captures(lua_State *L) {
    lx_tracer *t = check_tracer(L, 1);
    lx_checktype(L, 2, LUA_TTABLE);
    int n = (int)lua_rawlen(L, 2);
    fx_tensor **want = lua_newuserdatauv(L, sizeof *want * (size_t)(n + 1), 0);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        want[i] = lx_check_tensor(L, -1);
        lua_pop(L, 1);
    }
    fx_err err;
    fx_err_clear(&err);
    if (fx_tracer_align_captures(t->tr, want, n, &err)) return lx_error(L, &err);
    return 0;
}

/* cond: operands no branch reads are dropped from both bodies and from the operand list, as
 * Dynamo prunes unused subgraph inputs. ops[1] is the operand list. */
static void prune_unused_operands(fx_graph **bodies, fx_ivalue *operands) {
    fx_node *ph[2][16];
    int n[2] = {0, 0};
    for (int b = 0; b < 2; b++)
        for (fx_node *p = fx_graph_first(bodies[b]); p && p->op == FX_NODE_PLACEHOLDER && n[b] < 16; p = p->next)
            ph[b][n[b]++] = p;
    if (n[0] != n[1] || n[0] != operands->u.list.n) return;
    int keep = 0;
    for (int k = 0; k < n[0]; k++) {
        if (ph[0][k]->nusers == 0 && ph[1][k]->nusers == 0) {
            fx_graph_erase(bodies[0], ph[0][k], NULL);
            fx_graph_erase(bodies[1], ph[1][k], NULL);
            fx_ivalue_clear(&operands->u.list.items[k]);
        } else {
            operands->u.list.items[keep++] = operands->u.list.items[k];
        }
    }
    for (int k = keep; k < operands->u.list.n; k++) operands->u.list.items[k].tag = FX_IV_UNSET;
    operands->u.list.n = keep;
}

/* _export.hop_record(parent|nil, target, {body tracers}, {attr bases}, {operands}) -> {outs}
 * Takes the finished body traces. With a parent tracer, records the op there (outputs are meta,
 * or computed when every operand is real); without one, runs it eagerly on the interpreter. */
static int l_hop_record(lua_State *L) {
    lx_tracer *parent = lua_isnil(L, 1) ? NULL : check_tracer(L, 1);
    const char *target = lx_checkstring(L, 2);
    lx_checktype(L, 3, LUA_TTABLE);
    lx_checktype(L, 4, LUA_TTABLE);
    lx_checktype(L, 5, LUA_TTABLE);
    int nb = (int)lua_rawlen(L, 3), nops = (int)lua_rawlen(L, 5);
    if (nb < 1 || nb > 4 || nops > 12) return lx_errorf(L, FX_EARG, NULL, "hop_record: bad arity");
    fx_ivalue *v = lx_ivbox_new(L, 12 + 1 + FX_HOP_MAX_OUTS); /* [.., box] ops | result | outs */
    for (int k = 0; k < nops; k++) {
        lua_rawgeti(L, 5, k + 1);
        lx_to_ivalue(L, -1, &v[k]);
        lua_pop(L, 1);
    }
    const char *bases[4];
    for (int b = 0; b < nb; b++) {
        lua_rawgeti(L, 4, b + 1);
        bases[b] = lx_checkstring(L, -1);
        lua_pop(L, 1); /* the string stays referenced by the table at index 4 */
    }
    fx_err err;
    fx_err_clear(&err);
    fx_graph *bodies[4] = {0};
    int rc = FX_OK;
    bool created = false;
    for (int b = 0; b < nb && !rc; b++) {
        lua_rawgeti(L, 3, b + 1);
        lx_tracer *bt = check_tracer(L, -1);
        lua_pop(L, 1);
        fx_input_info *infos;
        int ninfos;
        rc = fx_tracer_take(bt->tr, &bodies[b], &infos, &ninfos, &err);
        for (int i = 0; !rc && i < ninfos; i++) created |= infos[i].kind != FX_INPUT_USER_INPUT;
        if (!rc) fx_input_infos_free(infos, ninfos);
    }
    if (!rc && created)
        rc = fx_err_setf(&err, FX_ENOTIMPL,
                         "%s: the body creates a tensor from data (or uses one made before the "
                         "export); pass it in as an operand",
                         target + 13);
    if (!rc && !strcmp(target, "higher_order.cond") && nb == 2 && nops == 2 && v[1].tag == FX_IV_LIST)
        prune_unused_operands(bodies, &v[1]);
    bool real = true;
    for (int k = 0; k < nops; k++) {
        const fx_ivalue *x = &v[k];
        if (x->tag == FX_IV_TENSOR && fx_tensor_is_meta(x->u.t)) real = false;
        for (int j = 0; x->tag == FX_IV_LIST && j < x->u.list.n; j++)
            if (x->u.list.items[j].tag == FX_IV_TENSOR && fx_tensor_is_meta(x->u.list.items[j].u.t)) real = false;
    }
    int nouts = 0;
    fx_ivalue *outs = &v[13];
    if (!rc && real) {
        rc = fx_hop_eval(target, bodies, v, nops, fx_graph_run, &v[12], &err);
        if (!rc && v[12].u.list.n > FX_HOP_MAX_OUTS) rc = fx_err_setf(&err, FX_EARG, "too many outputs");
        for (int k = 0; !rc && k < v[12].u.list.n; k++) rc = fx_ivalue_copy(&outs[nouts++], &v[12].u.list.items[k], &err);
    } else if (!rc) {
        rc = fx_hop_meta(target, bodies, v, nops, outs, &nouts, &err);
    }
    if (!rc && parent) {
        rc = fx_tracer_hop(parent->tr, target, bodies, bases, nb, v, nops, outs, nouts, &err);
        for (int b = 0; b < nb; b++) bodies[b] = NULL; /* taken */
    }
    for (int b = 0; b < nb; b++) fx_graph_free(bodies[b]);
    if (rc) return lx_error(L, &err);
    lua_createtable(L, nouts, 0);
    for (int k = 0; k < nouts; k++) {
        lx_push_ivalue(L, &outs[k]);
        lua_rawseti(L, -2, k + 1);
    }
    return 1;
}

/* ==== grad mode =================================================================================== */

/* torch._set_grad_enabled(on) -> previous: grad mode of the running thread's dispatch context
 * (the tracer's while tracing, so a trace records which ops ran under torch.no_grad). */
static int l_set_grad_enabled(lua_State *L) {
    lx_state *st = lx_current(L);
    bool prev = !st->ctx->no_grad;
    if (!lua_isnone(L, 1)) st->ctx->no_grad = !lua_toboolean(L, 1);
    lua_pushboolean(L, prev);
    return 1;
}

/* ==== module state snapshot (export.lua's snapshot / restore) ==================================== */

/* Appends to the list at `out` (whose length is *len) the table at `t`, its number of keys n and
 * its n key / value pairs, then (depth > 0) does the same for every plain (metatable-less) table
 * among t's values, one level less deep. One flat list instead of a copy per table: a snapshot of
 * a large model makes no table per module table. Raw accesses only. [-0, +0, m] */
static void snapshot_table(lua_State *L, int out, lua_Integer *len, int t, int depth) {
    luaL_checkstack(L, 6, "snapshot");
    lua_Integer head = *len, count = 0;
    lua_pushvalue(L, t);
    lua_rawseti(L, out, head + 1);
    lua_pushinteger(L, 0);
    lua_rawseti(L, out, head + 2); /* the count, set below */
    *len = head + 2;
    lua_pushnil(L);
    while (lua_next(L, t)) { /* [k, v] */
        lua_pushvalue(L, -2);
        lua_rawseti(L, out, ++*len);
        lua_pushvalue(L, -1);
        lua_rawseti(L, out, ++*len);
        count++;
        lua_pop(L, 1); /* [k] */
    }
    lua_pushinteger(L, count);
    lua_rawseti(L, out, head + 2);
    if (depth <= 0 || count == 0) return;
    lua_pushnil(L);
    while (lua_next(L, t)) { /* [k, v] */
        if (lua_type(L, -1) == LUA_TTABLE && !lua_getmetatable(L, -1))
            snapshot_table(L, out, len, lua_gettop(L), depth - 1);
        else if (lua_type(L, -1) == LUA_TTABLE)
            lua_pop(L, 1); /* the metatable */
        lua_pop(L, 1);
    }
}

/* The length of the last snapshot list restored: the next one (usually of the same model) is made
 * at that size, so filling it does not grow it step by step. A hint only. */
static lua_Integer g_snapshot_len;

/* _export.snapshot_list() -> an empty list for snapshot_tables, with room for the last snapshot's
 * entries (at most 2^20). */
static int l_snapshot_list(lua_State *L) {
    lua_Integer n = __atomic_load_n(&g_snapshot_len, __ATOMIC_RELAXED);
    lua_createtable(L, (int)(n < (1 << 20) ? n : (1 << 20)), 4);
    return 1;
}

/* _export.snapshot_tables(out, t, depth): export.lua's snapshot of one module table. */
static int l_snapshot_tables(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    int depth = (int)luaL_checkinteger(L, 3);
    lua_Integer len = (lua_Integer)lua_rawlen(L, 1);
    snapshot_table(L, 1, &len, 2, depth);
    return 0;
}

/* saved_keys(snap, base, count) -> the set of the keys snap[base], snap[base + 2], ... (count
 * of them); run under lua_pcall by restore_tables, which scans them instead when memory is out. */
static int saved_keys(lua_State *L) {
    lua_Integer base = lua_tointeger(L, 2), count = lua_tointeger(L, 3);
    lua_createtable(L, 0, (int)count);
    for (lua_Integer j = 0; j < count; j++) {
        lua_rawgeti(L, 1, base + 2 * j);
        lua_pushboolean(L, 1);
        lua_rawset(L, -3);
    }
    return 1;
}

/* _export.restore_tables(snap, trees) -> changed: puts every table of a snapshot back as it was
 * (each saved key / value stored again where it differs, keys added since removed; raw accesses;
 * nothing it does can fail for want of memory).
 * `changed` says whether any table that is a key of `trees` (the modules' _modules tables) had
 * been changed. */
static int l_restore_tables(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checkstack(L, 8, "restore");
    bool changed = false;
    lua_Integer len = (lua_Integer)lua_rawlen(L, 1);
    __atomic_store_n(&g_snapshot_len, len, __ATOMIC_RELAXED);
    for (lua_Integer i = 1; i + 1 <= len;) {
        lua_rawgeti(L, 1, i); /* [t] */
        int t = lua_gettop(L);
        lua_Integer count = (lua_rawgeti(L, 1, i + 1), lua_tointeger(L, -1)), base = i + 2;
        lua_pop(L, 1);
        i = base + 2 * count;
        if (!lua_istable(L, t)) { /* not a snapshot list */
            lua_pop(L, 1);
            break;
        }
        lua_pushvalue(L, t);
        bool tree = lua_rawget(L, 2) != LUA_TNIL;
        lua_pop(L, 1);
        for (lua_Integer j = 0; j < count; j++) {
            lua_rawgeti(L, 1, base + 2 * j);     /* [t, k] */
            lua_rawgeti(L, 1, base + 2 * j + 1); /* [t, k, v] */
            lua_pushvalue(L, -2);
            lua_rawget(L, t);                    /* [t, k, v, t[k]] */
            if (!lua_rawequal(L, -1, -2)) {
                changed = changed || tree;
                lua_pop(L, 1);
                lua_rawset(L, t); /* [t] */
            } else {
                lua_pop(L, 3);
            }
        }
        /* t holds every saved key again: it has more keys only when some were added */
        lua_Integer now = 0;
        lua_pushnil(L);
        while (lua_next(L, t)) {
            now++;
            lua_pop(L, 1);
        }
        if (now != count) {
            changed = changed || tree;
            /* the saved keys as a set, when memory allows (restore itself must not fail) */
            lua_pushcfunction(L, saved_keys);
            lua_pushvalue(L, 1);
            lua_pushinteger(L, base);
            lua_pushinteger(L, count);
            bool set = lua_pcall(L, 3, 1, 0) == LUA_OK; /* [t, saved or error] */
            lua_pushnil(L);
            while (lua_next(L, t)) { /* [t, saved, k, v] */
                bool keep = false;
                if (set) {
                    lua_pushvalue(L, -2);
                    keep = lua_rawget(L, t + 1) != LUA_TNIL;
                    lua_pop(L, 1);
                } else { /* a scan of the saved keys */
                    for (lua_Integer j = 0; j < count && !keep; j++) {
                        lua_rawgeti(L, 1, base + 2 * j);
                        keep = lua_rawequal(L, -1, -3);
                        lua_pop(L, 1);
                    }
                }
                if (!keep) {
                    lua_pushvalue(L, -2);
                    lua_pushnil(L);
                    lua_rawset(L, t); /* clearing an existing field is allowed during next */
                }
                lua_pop(L, 1); /* [t, saved, k] */
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1); /* [] */
    }
    lua_pushboolean(L, changed);
    return 1;
}

/* ==== call sites (nn.lua) ========================================================================= */

static const char g_sites_key = 0;

/* _export.call_site() -> {file, line, func} or nothing: where the Lua function two levels up
 * (the code that read `self.lin` through nn.lua's __index) is now; nothing when that code is
 * fxdb's own embedded library. One table per (function, line, name), shared: nn.lua keeps it as
 * the submodule's call site and puts it into nn._module_stack entries, read-only. */
static int l_call_site(lua_State *L) {
    lua_Debug ar;
    if (!lua_getstack(L, 2, &ar) || !lua_getinfo(L, "Slnf", &ar)) return 0; /* [f] */
    if (!strncmp(ar.source, "=[fxdb ", 7)) return 0;
    int f = lua_gettop(L);
    luaL_checkstack(L, 8, "call_site");
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &g_sites_key) != LUA_TTABLE) { /* [f, sites] */
        lua_pop(L, 1);
        lua_newtable(L);
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &g_sites_key);
    }
    /* sites[f][line][name or true] */
    const char *keys[2] = {NULL, ar.name};
    for (int level = 0; level < 3; level++) {
        int parent = lua_gettop(L);
        if (level == 0)
            lua_pushvalue(L, f);
        else if (level == 1)
            lua_pushinteger(L, ar.currentline);
        else if (keys[1])
            lua_pushstring(L, keys[1]);
        else
            lua_pushboolean(L, 1);
        lua_pushvalue(L, -1);
        if (lua_rawget(L, parent) == LUA_TTABLE) { /* [.., parent, key, child] */
            lua_remove(L, -2);
            continue;
        }
        lua_pop(L, 1); /* [.., parent, key] */
        if (level < 2) {
            lua_newtable(L);
        } else {
            lua_createtable(L, 0, 3);
            const char *file = ar.source[0] == '@' ? ar.source + 1 : ar.short_src;
            lua_pushstring(L, file);
            lua_setfield(L, -2, "file");
            lua_pushinteger(L, ar.currentline);
            lua_setfield(L, -2, "line");
            if (ar.name) {
                lua_pushstring(L, ar.name);
                lua_setfield(L, -2, "func");
            }
        }
        lua_pushvalue(L, -1);   /* [.., parent, key, child, child] */
        lua_insert(L, -3);      /* [.., parent, child, key, child] */
        lua_rawset(L, parent);  /* [.., parent, child] */
    }
    return 1;
}

/* _export.tailcalled() -> whether the Lua function calling it was entered by a tail call. */
static int l_tailcalled(lua_State *L) {
    lua_Debug ar;
    lua_pushboolean(L, lua_getstack(L, 1, &ar) && lua_getinfo(L, "t", &ar) && ar.istailcall);
    return 1;
}

/* ==== opening ==================================================================================== */

/* _export.assume_pending(v) -> bool: torch._check's use of the comparisons parked while this
 * thread exports (fx_shape_env_add_pending). None parked: false. Else v == true assumes every
 * one (they are runtime asserts from now on), v == false the negation of a single one (`not (a
 * < 0)`); false from several is ambiguous and raises the data-dependent error. Returns true. */
static int l_assume_pending(lua_State *L) {
    fx_tracer *tr = lx_current(L)->tracer;
    fx_err err;
    fx_err_clear(&err);
    fx_shape_env *env = tr ? fx_tracer_shape_env(tr, &err) : NULL;
    const fx_sym *all[FX_PENDING_CAP], *c[FX_PENDING_CAP];
    bool backed[FX_PENDING_CAP];
    char line[FX_ERR_SHORT] = "";
    if (env) snprintf(line, sizeof line, "%s", fx_shape_env_pending_why(env)->source);
    int nall = fx_shape_env_take_pending(env, all, backed, FX_PENDING_CAP), n = 0;
    for (int i = 0; i < nall; i++) {
        bool r;
        if (!backed[i]) c[n++] = all[i]; /* a backed one is a guard: its value is the truth */
        else if (fx_shape_env_evaluate(all[i], &r, &err)) return lx_error(L, &err);
    }
    if (n == 0) {
        lua_pushboolean(L, 0);
        return 1;
    }
    bool v = lua_toboolean(L, 1);
    /* `not (a < 0 or a > 9)`: Lua never evaluated `a > 9`, so false says nothing about it */
    bool has_or = lx_line_has_word(line, "or");
    if (!v && (n > 1 || has_or)) {
        fx_err_setf(&err, FX_EDATADEP,
                    "torch._check got False from %s that depend%s on data: which one is false "
                    "cannot be known",
                    n > 1 ? "several comparisons" : "an `or` of comparisons", n > 1 ? "" : "s");
        fx_err_kind(&err, "data_dependent");
        fx_err_hintf(&err, "write one torch._check per condition");
        return lx_error(L, &err);
    }
    lx_dispatch_serial += 2; /* the asserts record this line */
    for (int i = 0; i < n; i++) {
        const fx_sym *cond = v ? c[i] : fx_sym_not(c[i]);
        if (fx_shape_env_assume(cond, &err)) return lx_error(L, &err);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* _export.cond_pred(pred) -> SymInt | nil: torch.cond's symbolic predicate. When the boolean
 * pred came from the one comparison parked on the torch.cond line or on the plain assignment
 * `local p = ...` right before it (backed sizes, fx_shape_env_add_pending_backed, or an unbacked
 * value; lx_pending_feeds_cond), that comparison — negated when pred
 * is its negation (`not (n > 2)`) — as a SymBool value (a SymInt userdata whose expression is
 * the relation; its hint is pred). A line with `and` / `or` could have combined it with other
 * values, so it is not used there. Otherwise nil, and what was parked becomes guards (or the
 * data-dependent error). */
static int l_cond_pred(lua_State *L) {
    fx_tracer *tr = lx_current(L)->tracer;
    fx_err err;
    fx_err_clear(&err);
    fx_shape_env *env = tr && fx_tracer_has_symbols(tr) ? fx_tracer_shape_env(tr, &err) : NULL;
    if (!env || lua_type(L, 1) != LUA_TBOOLEAN) {
        lua_pushnil(L);
        return 1;
    }
    bool pred = lua_toboolean(L, 1);
    const fx_sym *c[FX_PENDING_CAP];
    bool backed[FX_PENDING_CAP];
    /* an unbacked comparison is parked wherever it is: its line must be plain too */
    const char *uline = fx_shape_env_pending_why(env)->source;
    if (fx_shape_env_pending_count(env) == 1) {
        char uloc[FX_ERR_SHORT];
        snprintf(uloc, sizeof uloc, "%s", fx_shape_env_pending_why(env)->loc);
        bool own_line = strstr(uline, "cond(") && !lx_line_has_word(uline, "and") &&
                        !lx_line_has_word(uline, "or");
        /* `local p = u0 > 2` right before `torch.cond(p, ...)` */
        bool feeds = !own_line && lx_pending_feeds_cond(uloc);
        fx_shape_env_take_pending(env, c, backed, 1);
        if (!backed[0] && !own_line && !feeds) {
            fx_err e = *fx_shape_env_pending_why(env);
            return lx_error(L, &e);
        }
        int64_t h = 1; /* an unbacked comparison was parked answering true */
        if (backed[0] && fx_shape_env_hint(env, fx_shape_env_simplify(env, c[0]), &h, &err))
            return lx_error(L, &err);
        const fx_sym *rel = (h != 0) == pred ? c[0] : fx_sym_not(c[0]);
        if (fx_sym_is_error(rel)) return lx_errorf(L, FX_ENOMEM, NULL, "out of memory");
        lx_push_symint(L, (fx_symint){pred, rel});
        return 1;
    }
    if (fx_shape_env_check_pending(env, &err)) return lx_error(L, &err);
    lua_pushnil(L);
    return 1;
}

/* _export.tracing_tensor(t) -> bool: whether t is a tensor of the trace this thread runs (a meta
 * tensor while exporting), i.e. has no value. */
static int l_tracing_tensor(lua_State *L) {
    fx_tensor *t = lx_to_tensor(L, 1);
    lua_pushboolean(L, t && lx_current(L)->tracer && fx_tensor_is_meta(t));
    return 1;
}

static const luaL_Reg tracer_methods[] = {
    {"input", l_tracer_input},
    {"constant", l_tracer_constant},
    {"bind", l_tracer_bind},
    {"unbind", l_tracer_unbind},
    {"assign_buffer", l_tracer_assign_buffer},
    {"finish", l_tracer_finish},
    {"raw_graph", l_tracer_raw_graph},
    {"node_of", l_tracer_node_of},
    {"build", l_tracer_build},
    {"set_parent", l_tracer_set_parent},
    {"captures", l_tracer_captures},
    {"align_captures", l_tracer_align_captures},
    {"attach", l_tracer_attach},
    {"set_location", l_tracer_set_location},
    {"symbol", l_tracer_symbol},
    {"input_sym", l_tracer_input_sym},
    {"shape_info", l_tracer_shape_info},
    {"use_shape_env", l_tracer_use_shape_env},
    {"reuse_unbacked", l_tracer_reuse_unbacked},
    {NULL, NULL},
};

void lx_open_export(lua_State *L) {
    /* Tracer */
    luaL_newmetatable(L, LX_TRACER);           /* [mt] */
    lua_pushliteral(L, "Tracer");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, tracer_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, tracer_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    /* ExportedProgram */
    luaL_newmetatable(L, LX_PROGRAM);
    lua_pushliteral(L, "ExportedProgram");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, program_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, program_gc);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, program_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, program_index);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    /* GraphModule */
    luaL_newmetatable(L, LX_GRAPHMODULE);
    lua_pushliteral(L, "GraphModule");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, gm_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, gm_call);
    lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, gm_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, gm_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
    /* torch._export = {tracer = ...} (export.lua builds torch.export on top) */
    lua_getglobal(L, "torch");                 /* [torch] */
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setglobal(L, "torch");
    }
    lua_getfield(L, -1, "_export");            /* [torch, _export?] */
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, "_export");
    }
    lua_pushcfunction(L, l_tracer_new);
    lua_setfield(L, -2, "tracer");
    lua_pushcfunction(L, l_slice_meta);
    lua_setfield(L, -2, "slice_meta");
    lua_pushcfunction(L, l_call_site);
    lua_setfield(L, -2, "call_site");
    lua_pushcfunction(L, l_tailcalled);
    lua_setfield(L, -2, "tailcalled");
    lua_pushcfunction(L, l_snapshot_tables);
    lua_setfield(L, -2, "snapshot_tables");
    lua_pushcfunction(L, l_snapshot_list);
    lua_setfield(L, -2, "snapshot_list");
    lua_pushcfunction(L, l_restore_tables);
    lua_setfield(L, -2, "restore_tables");
    lua_pushcfunction(L, l_hop_record);
    lua_setfield(L, -2, "hop_record");
    lua_pushcfunction(L, l_assume_pending);
    lua_setfield(L, -2, "assume_pending");
    lua_pushcfunction(L, l_tracing_tensor);
    lua_setfield(L, -2, "tracing_tensor");
    lua_pushcfunction(L, l_cond_pred);
    lua_setfield(L, -2, "cond_pred");
    lua_pop(L, 1);                             /* [torch] */
    lua_pushcfunction(L, l_set_grad_enabled);
    lua_setfield(L, -2, "_set_grad_enabled");
    lua_pop(L, 1);
}
