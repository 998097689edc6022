/* lua/lx_torch.c — the global `torch`: tensor construction from Lua data, dtypes, every op as
 * torch.<name>, torch.ops.aten.<name>.<overload>, manual_seed.
 * Layer: lua. Creation functions other than torch.tensor are ATen ops (zeros, ones, full,
 * empty.memory_format, arange.start_step, rand, randn, ...) reached through torch.<name>, so they
 * go through the dispatcher and are recorded while tracing. torch.tensor builds its value in C and,
 * while tracing, hands it to fx_tracer_constant, so it becomes a lifted constant read through
 * lift_fresh_copy, as torch.export records a tensor made inside forward. Lua-side sugar (arange
 * with one argument, eye, randint, ...) lives in lua/torch.lua. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/lx_impl.h"
#include "lua/lx_open.h"

#if defined(__has_include)
#if __has_include("core/random.h")
#include "core/random.h"
#define LX_HAVE_RANDOM 1
#endif
#endif

#define LX_PACKET "fxdb.OpOverloadPacket"
#define LX_OVERLOAD "fxdb.OpOverload"

/* ==== torch.tensor ============================================================================ */

/* Leaf kinds in promotion order: bool < int < float (PyTorch's inference for Python lists). */
enum { LEAF_NONE = -1, LEAF_BOOL = 0, LEAF_INT = 1, LEAF_FLOAT = 2, LEAF_COMPLEX = 3 };

/* Shape of nested data at idx, following first elements.  [-0, +0, e] */
static int data_shape(lua_State *L, int idx, int64_t *sizes) {
    int nd = 0;
    lua_pushvalue(L, idx); /* [v] */
    while (lua_type(L, -1) == LUA_TTABLE && !lx_to_tensor(L, -1)) {
        if (nd == FX_MAX_DIMS)
            lx_errorf(L, FX_EARG, NULL, "torch.tensor: data nested deeper than %d", FX_MAX_DIMS);
        lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
        sizes[nd++] = (int64_t)n;
        if (n == 0) break;
        lua_rawgeti(L, -1, 1); /* [v, v[1]] */
        lua_remove(L, -2);
    }
    lua_pop(L, 1);
    return nd;
}

/* Checks that the data at idx has the shape at dim d and returns the widest leaf kind. */
static int data_check(lua_State *L, int idx, int d, int nd, const int64_t *sizes) {
    idx = lua_absindex(L, idx);
    if (d == nd) {
        int lt = lua_type(L, idx);
        if (lt == LUA_TBOOLEAN) return LEAF_BOOL;
        if (lt == LUA_TNUMBER) return lua_isinteger(L, idx) ? LEAF_INT : LEAF_FLOAT;
        fx_tensor *t = lx_to_tensor(L, idx);
        if (t && fx_tensor_numel(t) == 1 && !fx_tensor_is_meta(t)) {
            fx_dtype dt = fx_tensor_dtype(t);
            return dt == FX_DTYPE_BOOL         ? LEAF_BOOL
                   : fx_dtype_is_complex(dt) ? LEAF_COMPLEX
                   : fx_dtype_is_float(dt)   ? LEAF_FLOAT
                                             : LEAF_INT;
        }
        if (lt == LUA_TTABLE && !t)
            lx_errorf(L, FX_EARG, NULL, "expected sequence of length %d at dim %d (got a sequence)", 0, d);
        return lx_errorf(L, FX_ETYPE, NULL, "Could not infer dtype of %s", t ? "Tensor" : luaL_typename(L, idx));
    }
    if (lua_type(L, idx) != LUA_TTABLE || lx_to_tensor(L, idx))
        return lx_errorf(L, FX_EARG, NULL, "expected sequence of length %lld at dim %d (got %s)",
                          (long long)sizes[d], d, luaL_typename(L, idx));
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    if (n != sizes[d])
        return lx_errorf(L, FX_EARG, NULL, "expected sequence of length %lld at dim %d (got %lld)",
                          (long long)sizes[d], d, (long long)n);
    int kind = LEAF_NONE;
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        int k = data_check(L, -1, d + 1, nd, sizes);
        lua_pop(L, 1);
        if (k > kind) kind = k;
    }
    return kind;
}

/* Writes the leaves of the data at idx into buf (row-major), from element *pos on. */
static void data_fill(lua_State *L, int idx, int d, int nd, fx_dtype dt, void *buf, int64_t *pos) {
    idx = lua_absindex(L, idx);
    if (d == nd) {
        int64_t i = (*pos)++;
        fx_tensor *t = lx_to_tensor(L, idx);
        if (t) {
            if (fx_dtype_is_complex(fx_tensor_dtype(t))) {
                double re, im;
                fx_tensor_flat_c(t, 0, &re, &im);
                fx_dtype_store_c(dt, buf, i, re, im);
            } else if (fx_dtype_is_float(fx_tensor_dtype(t)))
                fx_dtype_store_f64(dt, buf, i, fx_tensor_flat_f64(t, 0));
            else
                fx_dtype_store_i64(dt, buf, i, fx_tensor_flat_i64(t, 0));
        } else if (lua_type(L, idx) == LUA_TBOOLEAN) {
            fx_dtype_store_i64(dt, buf, i, lua_toboolean(L, idx));
        } else if (lua_isinteger(L, idx)) {
            fx_dtype_store_i64(dt, buf, i, (int64_t)lua_tointeger(L, idx));
        } else {
            fx_dtype_store_f64(dt, buf, i, lua_tonumber(L, idx));
        }
        return;
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        data_fill(L, -1, d + 1, nd, dt, buf, pos);
        lua_pop(L, 1);
    }
}

void lx_tensor_from_lua(lua_State *L, int idx, fx_dtype dt) {
    idx = lua_absindex(L, idx);
    int64_t sizes[FX_MAX_DIMS];
    int nd = data_shape(L, idx, sizes);
    int kind = data_check(L, idx, 0, nd, sizes);
    if (dt == FX_DTYPE_UNDEFINED)
        dt = kind == LEAF_BOOL      ? FX_DTYPE_BOOL
             : kind == LEAF_INT     ? FX_DTYPE_I64
             : kind == LEAF_COMPLEX ? FX_DTYPE_C64
                                    : FX_DTYPE_F32;
    int64_t numel = 1;
    for (int i = 0; i < nd; i++) {
        if (sizes[i] && numel > INT64_MAX / 8 / sizes[i])
            lx_errorf(L, FX_EARG, NULL, "torch.tensor: data too large");
        numel *= sizes[i];
    }
    size_t nbytes = (size_t)numel * fx_dtype_size(dt);
    void *buf = lua_newuserdatauv(L, nbytes ? nbytes : 1, 0); /* [.., buf] (scratch) */
    int64_t pos = 0;
    data_fill(L, idx, 0, nd, dt, buf, &pos);
    fx_ivalue *box = lx_ivbox_new(L, 2); /* [.., buf, box] */
    fx_err err;
    fx_err_clear(&err);
    fx_tensor *t = NULL;
    if (fx_tensor_from_data(nd, sizes, dt, buf, &t, &err) != FX_OK) lx_error(L, &err);
    box[0] = fx_iv_tensor_steal(t);
    lx_state *st = lx_current(L);
    if (st->tracer) {
        fx_tensor *traced = NULL;
        if (fx_tracer_constant(st->tracer, t, &traced, &err) != FX_OK) lx_error(L, &err);
        box[1] = fx_iv_tensor_steal(traced);
        t = traced;
    }
    lx_push_tensor(L, t); /* [.., buf, box, t] */
    fx_ivalue_clear(&box[0]);
    fx_ivalue_clear(&box[1]);
    lua_replace(L, -3);   /* [.., t, box] */
    lua_pop(L, 1);        /* [.., t] */
}

/* torch.tensor(data [, dtype | {dtype = ..., requires_grad = ...}]).  [-0, +1, e] */
static int l_tensor(lua_State *L) {
    if (lua_isnone(L, 1)) return lx_argerror(L, 1, "data expected");
    fx_dtype dt = FX_DTYPE_UNDEFINED;
    int requires_grad = -1;
    if (!lua_isnoneornil(L, 2)) {
        dt = lx_to_dtype(L, 2);
        if (dt == FX_DTYPE_UNDEFINED && lua_istable(L, 2)) {
            lua_getfield(L, 2, "dtype");
            if (!lua_isnil(L, -1)) {
                dt = lx_to_dtype(L, -1);
                if (dt == FX_DTYPE_UNDEFINED)
                    return lx_argerror(L, 2, "dtype expected in 'dtype'");
            }
            lua_getfield(L, 2, "requires_grad");
            if (!lua_isnil(L, -1)) requires_grad = lua_toboolean(L, -1);
            lua_pop(L, 2);
        } else if (dt == FX_DTYPE_UNDEFINED) {
            return lx_typeerror(L, 2, "dtype or options table");
        }
    }
    fx_tensor *src = lx_to_tensor(L, 1);
    if (src && fx_tensor_numel(src) != 1) {
        /* torch.tensor(t): a copy (PyTorch warns and recommends clone) */
        lua_settop(L, 1);
        lx_call_opname(L, "clone", 1, true);
        if (dt != FX_DTYPE_UNDEFINED && fx_tensor_dtype(lx_check_tensor(L, -1)) != dt) {
            lua_getfield(L, -1, "to");
            lua_insert(L, -2);
            lx_push_dtype(L, dt);
            lua_call(L, 2, 1);
        }
    } else {
        lx_tensor_from_lua(L, 1, dt);
    }
    if (requires_grad >= 0) fx_tensor_set_requires_grad(lx_check_tensor(L, -1), requires_grad);
    return 1;
}

/* torch.is_tensor(v) -> boolean.  [-0, +1, -] */
static int l_is_tensor(lua_State *L) {
    lua_pushboolean(L, lx_to_tensor(L, 1) != NULL);
    return 1;
}

/* torch.Size{2, 3}: a shape table comparable with x.shape.  [-0, +1, e] */
static int l_size(lua_State *L) {
    int64_t s[FX_MAX_DIMS];
    int n = 0;
    if (lua_istable(L, 1)) {
        lua_Integer len = (lua_Integer)lua_rawlen(L, 1);
        lx_argcheck(L, len <= FX_MAX_DIMS, 1, "too many dims");
        for (lua_Integer i = 1; i <= len; i++) {
            lua_rawgeti(L, 1, i);
            s[n++] = (int64_t)lx_checkinteger(L, -1);
            lua_pop(L, 1);
        }
    } else {
        int top = lua_gettop(L);
        lx_argcheck(L, top <= FX_MAX_DIMS, 1, "too many dims");
        for (int i = 1; i <= top; i++) s[n++] = (int64_t)lx_checkinteger(L, i);
    }
    lx_push_size(L, n, s);
    return 1;
}

/* torch.manual_seed(seed): seeds the global generator (core/random.h). Returns nothing.
 * [-0, +0, e] */
static int l_manual_seed(lua_State *L) {
    lua_Integer s = lx_checkinteger(L, 1);
#ifdef LX_HAVE_RANDOM
    fx_manual_seed((uint64_t)s);
    return 0;
#else
    (void)s;
    return lx_errorf(L, FX_ENOTIMPL, "not_implemented", "torch.manual_seed is not available yet");
#endif
}

static int l_initial_seed(lua_State *L) {
#ifdef LX_HAVE_RANDOM
    lua_pushinteger(L, (lua_Integer)fx_initial_seed());
    return 1;
#else
    return lx_errorf(L, FX_ENOTIMPL, "not_implemented", "torch.initial_seed is not available yet");
#endif
}

/* torch._memory_stats() -> {live_bytes, live_blocks, peak_bytes, total_calls, cached_bytes,
 * cached_blocks, cache_hits, cache_misses}: core's allocator counters (fx_alloc_get_stats) and
 * its cache of freed large blocks (fx_alloc_cache_get_stats, core/alloc_cache.h; cached blocks
 * are not live), for tests and the debugger.  [-0, +1, e] */
static int l_memory_stats(lua_State *L) {
    fx_alloc_stats st = fx_alloc_get_stats();
    fx_alloc_cache_stats cs = fx_alloc_cache_get_stats();
    const struct {
        const char *name;
        int64_t value;
    } fields[] = {{"live_bytes", st.live_bytes},     {"live_blocks", st.live_blocks},
                  {"peak_bytes", st.peak_bytes},     {"total_calls", st.total_calls},
                  {"cached_bytes", cs.cached_bytes}, {"cached_blocks", cs.cached_blocks},
                  {"cache_hits", cs.hits},           {"cache_misses", cs.misses}};
    lua_createtable(L, 0, (int)(sizeof fields / sizeof fields[0]));
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        lua_pushinteger(L, (lua_Integer)fields[i].value);
        lua_setfield(L, -2, fields[i].name);
    }
    return 1;
}

/* torch._fail_alloc_at(n): makes core's n-th allocation from now fail, and every one after it
 * (fx_alloc_fail_at, sticky); n <= 0 turns failing off. For the allocation-failure sweeps of the
 * tests (tests/lua/test_oom_sweep.lua); single-threaded use only (torch.set_num_threads(1)).
 * [-0, +0, e] */
static int l_fail_alloc_at(lua_State *L) {
    lua_Integer n = lx_checkinteger(L, 1);
    fx_alloc_fail_at((int64_t)n, 1);
    return 0;
}

/* The Lua allocator torch._fail_lua_alloc_at installs: the state's own allocator, except that
 * from the countdown's n-th growing request on (a new block, or a block made larger) every one
 * fails until the sweep turns it off. Freeing and shrinking always succeed (Lua assumes they
 * do). */
static struct {
    lua_Alloc f;      /* the allocator the state had */
    void *ud;         /* its user data */
    lua_Integer left; /* growing requests before the failing one (> 0) */
    int failing;      /* 1 from the failing request on */
} g_lua_fail;

static void *failing_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    (void)ud;
    /* when ptr is NULL, osize holds the kind of object, not a size */
    bool grows = nsize > 0 && (ptr == NULL || nsize > osize);
    if (grows && (g_lua_fail.failing || --g_lua_fail.left == 0)) {
        g_lua_fail.failing = 1;
        return NULL;
    }
    return g_lua_fail.f(g_lua_fail.ud, ptr, osize, nsize);
}

/* torch._fail_lua_alloc_at(n): makes the n-th growing request to this Lua state's allocator from
 * now fail, and every one after it (Lua raises its "not enough memory" error, after an emergency
 * collection); n <= 0 puts the state's own allocator back. Returns whether an allocation failed
 * since the previous call. For the Lua allocation-failure sweep (tests/lua/test_lua_oom_sweep.lua);
 * one state per process at a time, single-threaded use only.  [-0, +1, e] */
static int l_fail_lua_alloc_at(lua_State *L) {
    lua_Integer n = lx_checkinteger(L, 1);
    int failed = g_lua_fail.failing;
    if (g_lua_fail.f) { /* the state's own allocator back first */
        lua_setallocf(L, g_lua_fail.f, g_lua_fail.ud);
        g_lua_fail.f = NULL;
    }
    g_lua_fail.failing = 0;
    if (n > 0) {
        g_lua_fail.f = lua_getallocf(L, &g_lua_fail.ud);
        g_lua_fail.left = n;
        lua_setallocf(L, failing_lua_alloc, NULL);
    }
    lua_pushboolean(L, failed); /* a boolean needs no allocation */
    return 1;
}

/* torch.set_num_threads(n): the threads large kernels use (n >= 1), as PyTorch's intra-op
 * setting; torch.set_num_threads(0) returns to fxdb's automatic count, which uses idle CPUs only
 * (core/parallel.h).  [-0, +0, e] */
static int l_set_num_threads(lua_State *L) {
    lua_Integer n = lx_checkinteger(L, 1);
    lx_argcheck(L, n >= 0 && n <= 1024, 1,
                "expected a positive number of threads, or 0 for automatic");
    fx_set_num_threads((int)n);
    return 0;
}

/* torch.get_num_threads() -> the fixed count, or in automatic mode the CPUs fxdb may use.
 * [-0, +1, -] */
static int l_get_num_threads(lua_State *L) {
    lua_pushinteger(L, fx_get_num_threads());
    return 1;
}

/* torch._perf_counter() -> seconds (float) of a monotonic wall clock, as Python's
 * time.perf_counter: for timing decode loops (os.clock counts CPU time of every thread).
 * [-0, +1, -] */
static int l_perf_counter(lua_State *L) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* ==== default device ========================================================================= */


/* torch.set_default_device("meta" | "cpu" | nil): the device creation ops (zeros, ones, full,
 * empty, arange, rand, randn) use when none is given, as torch.set_default_device does; building
 * a module under "meta" allocates no weights. Returns nothing.  [-0, +0, e] */
static int l_set_default_device(lua_State *L) {
    const char *d = lx_optstring(L, 1, "cpu");
    if (strcmp(d, "cpu") && strcmp(d, "meta"))
        return lx_argerror(L, 1, lua_pushfstring(L, "unsupported device '%s' (cpu or meta)", d));
    lua_pushboolean(L, !strcmp(d, "meta"));
    lua_setfield(L, LUA_REGISTRYINDEX, LX_DEFAULT_DEVICE);
    return 0;
}

/* torch.get_default_device() -> "cpu" | "meta".  [-0, +1, -] */
static int l_get_default_device(lua_State *L) {
    lua_pushstring(L, lx_default_device(L) == FX_DEVICE_META ? "meta" : "cpu");
    return 1;
}

/* torch._has_op("arange.default") -> boolean: lets torch.lua pick between ops.  [-0, +1, e] */
static int l_has_op(lua_State *L) {
    lua_pushboolean(L, fx_op_lookup(lx_checkstring(L, 1)) != NULL);
    return 1;
}

/* How torch.<name> fills the factory keywords PyTorch's Python binding passes explicitly. */
enum { FACTORY_NONE, FACTORY_NEW, FACTORY_LIKE };

/* The factory kind of an op name: an overload with a pin_memory argument is a factory; with a
 * Tensor first argument it is a *_like function. */
static int factory_kind(const char *name) {
    const fx_opdef *ops[16];
    int n = fx_op_overloads(name, ops, 16);
    for (int i = 0; i < n; i++)
        if (fx_schema_arg_index(&ops[i]->schema, "pin_memory") >= 0)
            return ops[i]->schema.args[0].type == FX_TY_TENSOR ? FACTORY_LIKE : FACTORY_NEW;
    return FACTORY_NONE;
}

/* A trailing keyword table: no metatable, no array part, a string first key. */
static bool is_kw_table(lua_State *L, int idx) {
    if (lua_type(L, idx) != LUA_TTABLE || lua_getmetatable(L, idx)) {
        if (lua_type(L, idx) == LUA_TTABLE) lua_pop(L, 1);
        return false;
    }
    if (lua_rawlen(L, idx) > 0) return false;
    lua_pushnil(L);
    if (!lua_next(L, idx)) return false;
    bool str = lua_type(L, -2) == LUA_TSTRING;
    lua_pop(L, 2);
    return str;
}

/* PyTorch's Python binding calls factories with device and pin_memory given (torch.zeros(3)
 * records zeros.default([3], device = device(type='cpu'), pin_memory = False)) and *_like
 * functions with pin_memory = False: adds those keywords (the default device; the caller's
 * own values win) in a fresh keyword table at the top of the stack.  [-0, +(0|1), e] */
static void add_factory_keywords(lua_State *L, int kind) {
    int top = lua_gettop(L);
    lua_createtable(L, 0, 4); /* [.., kw] */
    if (top >= 1 && is_kw_table(L, top)) {
        lua_pushnil(L);
        while (lua_next(L, top)) { /* [.., kw, k, v] */
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, -4); /* [.., kw, k] */
        }
        lua_replace(L, top); /* the copy replaces the caller's table */
    }
    if (kind == FACTORY_NEW && lua_getfield(L, -1, "device") == LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushstring(L, lx_default_device(L) == FX_DEVICE_META ? "meta" : "cpu");
        lua_setfield(L, -2, "device");
    } else if (kind == FACTORY_NEW) {
        lua_pop(L, 1);
    }
    if (lua_getfield(L, -1, "pin_memory") == LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "pin_memory");
    } else {
        lua_pop(L, 1);
    }
}

/* torch.<name>(...): upvalue 1 is the op name, upvalue 2 its factory kind, upvalue 3 its overload
 * set (resolved once).  [-0, +r, e] */
static int l_op_function(lua_State *L) {
    int kind = (int)lua_tointeger(L, lua_upvalueindex(2));
    if (kind != FACTORY_NONE) add_factory_keywords(L, kind);
    return lx_call_overloads(L, lua_touserdata(L, lua_upvalueindex(3)),
                             lua_tostring(L, lua_upvalueindex(1)), 1, false);
}

/* ==== torch.ops.aten ========================================================================= */

/* An OpOverload userdata holds its op's definition (registered ops live as long as the process). */
static const fx_opdef *check_overload(lua_State *L, int idx) {
    return *(const fx_opdef *const *)lx_checkudata(L, idx, LX_OVERLOAD);
}

/* OpOverload __call: torch.ops.aten.add.Tensor(x, y, {alpha = 2}). Upvalue 1 is the OpOverload
 * metatable, compared by identity (no registry lookup by name).  [-0, +r, e] */
static int overload_call(lua_State *L) {
    const fx_opdef *const *p = lua_touserdata(L, 1);
    if (p && lua_getmetatable(L, 1)) {
        bool ok = lua_rawequal(L, -1, lua_upvalueindex(1));
        lua_pop(L, 1);
        if (ok) return lx_call_overload(L, *p, 2);
    }
    return lx_call_overload(L, check_overload(L, 1), 2);
}

static int overload_tostring(lua_State *L) {
    const fx_opdef *op = check_overload(L, 1);
    lua_pushstring(L, op->target);
    return 1;
}

/* Fields: name ("aten::add"), overload ("Tensor"), qualname ("aten.add.Tensor"), schema.  */
static int overload_index(lua_State *L) {
    const fx_opdef *op = check_overload(L, 1);
    const char *k = lx_checkstring(L, 2);
    if (!strcmp(k, "name"))
        lua_pushfstring(L, "%s::%s", op->ns, op->schema.name);
    else if (!strcmp(k, "overload"))
        lua_pushstring(L, op->schema.overload);
    else if (!strcmp(k, "qualname"))
        lua_pushstring(L, op->target);
    else if (!strcmp(k, "schema") || !strcmp(k, "_schema")) {
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_strbuf_appendf(&sb, "%s::", op->ns);
        fx_schema_format(&sb, &op->schema);
        lua_pushstring(L, fx_strbuf_cstr(&sb));
        fx_strbuf_free(&sb);
    } else if (!strcmp(k, "is_inplace"))
        lua_pushboolean(L, fx_op_is_inplace(op));
    else if (!strcmp(k, "is_view"))
        lua_pushboolean(L, fx_op_is_view(op));
    else
        lua_pushnil(L);
    return 1;
}

/* Pushes the OpOverload object of op (a userdata holding the op's pointer).  [-0,+1,e] */
static void push_overload(lua_State *L, const fx_opdef *op) {
    const fx_opdef **p = lua_newuserdatauv(L, sizeof *p, 0); /* [ov] */
    *p = op;
    luaL_setmetatable(L, LX_OVERLOAD);
}

/* fxdb._op_overload(target) -> the OpOverload of any registered op ("mylib.foo.default"), or
 * nil when unknown (torch.library builds torch.ops.<ns> with it).  [-0, +1, e] */
static int l_op_overload(lua_State *L) {
    const fx_opdef *op = fx_op_lookup(lx_checkstring(L, 1));
    if (!op) lua_pushnil(L);
    else push_overload(L, op);
    return 1;
}

/* Packet __call: torch.ops.aten.add(x, 2) resolves the overload like a method call. */
static int packet_call(lua_State *L) {
    lx_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "_name"); /* [p, args.., name] */
    const char *name = lx_checkstring(L, -1);
    lua_pop(L, 1);
    return lx_call_opname(L, name, 2, false);
}

static int packet_tostring(lua_State *L) {
    lx_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "_name");
    lua_pushfstring(L, "aten.%s", lua_tostring(L, -1));
    return 1;
}

/* Pushes the packet table for op name: {_name = name, <overload> = OpOverload, ...}. */
static void push_packet(lua_State *L, const char *name) {
    const fx_opdef *ops[64];
    int n = fx_op_overloads(name, ops, 64);
    lua_createtable(L, 0, n + 1); /* [p] */
    lua_pushstring(L, name);
    lua_setfield(L, -2, "_name");
    for (int i = 0; i < n; i++) {
        push_overload(L, ops[i]);                     /* [p, ov] */
        lua_setfield(L, -2, ops[i]->schema.overload); /* [p] */
    }
    luaL_setmetatable(L, LX_PACKET);
}

/* torch.ops.aten.<name> for names not pre-built (none today; kept so an unknown name reads
 * nil instead of raising).  [-0, +1, -] */
static int aten_index(lua_State *L) {
    const char *name = lx_checkstring(L, 2);
    const fx_opdef *ops[1];
    if (fx_op_overloads(name, ops, 1) == 0) {
        lua_pushnil(L);
        return 1;
    }
    push_packet(L, name); /* [aten, name, p] */
    lua_pushvalue(L, 2);
    lua_pushvalue(L, -2);
    lua_rawset(L, 1);
    return 1;
}

/* ==== opening ================================================================================ */

static const luaL_Reg torch_funcs[] = {
    {"tensor", l_tensor},
    {"is_tensor", l_is_tensor},
    {"Size", l_size},
    {"manual_seed", l_manual_seed},
    {"initial_seed", l_initial_seed},
    {"_has_op", l_has_op},
    {"_memory_stats", l_memory_stats},
    {"_fail_alloc_at", l_fail_alloc_at},
    {"_fail_lua_alloc_at", l_fail_lua_alloc_at},
    {"set_default_device", l_set_default_device},
    {"_perf_counter", l_perf_counter},
    {"set_num_threads", l_set_num_threads},
    {"get_num_threads", l_get_num_threads},
    {"get_default_device", l_get_default_device},
    {NULL, NULL},
};

static const struct {
    const char *name;
    fx_dtype dt;
} k_dtype_names[] = {
    {"float32", FX_DTYPE_F32},   {"float", FX_DTYPE_F32},   {"float64", FX_DTYPE_F64},
    {"double", FX_DTYPE_F64},    {"float16", FX_DTYPE_F16}, {"half", FX_DTYPE_F16},
    {"bfloat16", FX_DTYPE_BF16}, {"int64", FX_DTYPE_I64},   {"long", FX_DTYPE_I64},
    {"int32", FX_DTYPE_I32},     {"int", FX_DTYPE_I32},     {"int16", FX_DTYPE_I16},
    {"short", FX_DTYPE_I16},     {"int8", FX_DTYPE_I8},     {"uint8", FX_DTYPE_U8},
    {"bool", FX_DTYPE_BOOL},     {"complex64", FX_DTYPE_C64}, {"cfloat", FX_DTYPE_C64},
    {"complex128", FX_DTYPE_C128}, {"cdouble", FX_DTYPE_C128},
};

void lx_open_torch(lua_State *L) {
    /* OpOverload and packet metatables */
    luaL_newmetatable(L, LX_OVERLOAD); /* [mt] */
    lua_pushstring(L, "OpOverload");
    lua_setfield(L, -2, "__name");
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, overload_call, 1);
    lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, overload_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, overload_index);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_newmetatable(L, LX_PACKET);
    lua_pushstring(L, "OpOverloadPacket");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, packet_call);
    lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, packet_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);

    if (lua_getglobal(L, "torch") != LUA_TTABLE) { /* [torch?] */
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setglobal(L, "torch");
    } /* [torch] */
    luaL_setfuncs(L, torch_funcs, 0);
    for (size_t i = 0; i < sizeof k_dtype_names / sizeof k_dtype_names[0]; i++) {
        lx_push_dtype(L, k_dtype_names[i].dt);
        lua_setfield(L, -2, k_dtype_names[i].name);
    }
    lua_pushstring(L, "contiguous_format");
    lua_setfield(L, -2, "contiguous_format");
    lua_pushstring(L, "preserve_format");
    lua_setfield(L, -2, "preserve_format");
    lx_push_dtype(L, FX_DTYPE_DEFAULT);
    lua_setfield(L, -2, "_default_dtype");

    /* torch.ops.aten, every packet pre-built (Tab completion sees them) */
    lua_newtable(L); /* [torch, ops] */
    lua_newtable(L); /* [torch, ops, aten] */
    /* every op by base name: torch.<name> and torch.ops.aten.<name> */
    for (int i = 0; i < FX_OP_COUNT; i++) {
        const fx_opdef *op = fx_op_get((fx_op_id)i);
        if (!op) continue;
        const char *name = op->schema.name;
        if (lua_getfield(L, -1, name) == LUA_TNIL) { /* [torch, ops, aten, p?] */
            lua_pop(L, 1);
            push_packet(L, name);
            lua_setfield(L, -2, name);
        } else {
            lua_pop(L, 1);
        }
        if (lua_getfield(L, -3, name) == LUA_TNIL) { /* [torch, ops, aten, f?] */
            lua_pop(L, 1);
            lua_pushstring(L, name);
            lua_pushinteger(L, factory_kind(name));
            lua_pushlightuserdata(L, (void *)lx_overloads_of(name));
            lua_pushcclosure(L, l_op_function, 3);
            lua_setfield(L, -4, name);
        } else {
            lua_pop(L, 1);
        }
    }
    lua_createtable(L, 0, 1); /* [torch, ops, aten, mt] */
    lua_pushcfunction(L, aten_index);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);     /* [torch, ops, aten] */
    lua_setfield(L, -2, "aten"); /* [torch, ops] */
    lua_setfield(L, -2, "ops");  /* [torch] */

    fxlua_register(L, "_op_overload", l_op_overload);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE); /* [torch, loaded] */
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "torch");
    lua_pop(L, 2); /* [] */
}
