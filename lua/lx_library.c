/* lua/lx_library.c — custom ops registered from Lua (torch.library), the C half.
 * Layer: lua. core/registry.c holds the op entries (fx_op_register); their meta function and
 * kernel are the trampolines below, which call the Lua functions that torch.library.impl /
 * register_fake stored in this state's registry table (keyed by the op's target,
 * "mylib.foo.default", then by dispatch key "CPU", "Meta", "CompositeImplicitAutograd"). Core
 * never sees Lua: it calls an fx_op_fn like any other. The Lua half (define, impl, register_fake,
 * custom_op, torch.ops.<ns>) is lua/library.lua.
 *
 * Which Lua thread runs a callback: the thread whose op call is being dispatched (lx_dispatch_at
 * records it), else the main thread of the state that opened this library (an interpreter run of
 * a program, started from C). lx_cb_thread itself lives with lx_dispatch_at in lx_udata.c. */
#include <string.h>

#include "lua/lx_impl.h"

#define IMPLS_KEY "fxdb.custom_impls"

static lua_State *g_main; /* the state's main thread; cleared when the state closes */

static lua_State *callback_thread(void) { return lx_cb_thread ? lx_cb_thread : g_main; }

/* Pushes the Lua function registered for op under `key`, or nothing (returns false). */
static bool push_impl(lua_State *L, const fx_opdef *op, const char *key) {
    int top = lua_gettop(L);
    if (lua_getfield(L, LUA_REGISTRYINDEX, IMPLS_KEY) != LUA_TTABLE || /* [impls] */
        lua_getfield(L, -1, op->target) != LUA_TTABLE ||               /* [impls, e] */
        lua_getfield(L, -1, key) != LUA_TFUNCTION) {                   /* [impls, e, fn] */
        lua_settop(L, top);
        return false;
    }
    lua_replace(L, top + 1); /* [fn, e] */
    lua_settop(L, top + 1);  /* [fn] */
    return true;
}

/* Reads the Lua result at idx as return r of op into *out (new reference). */
static int take_result(lua_State *L, int idx, const fx_opdef *op, int r, fx_ivalue *out,
                       fx_err *err) {
    const fx_ret_schema *rs = &op->schema.rets[r];
    fx_tensor *t;
    switch (rs->type) {
    case FX_TY_TENSOR:
        if (!(t = lx_to_tensor(L, idx))) break;
        *out = fx_iv_tensor(t); /* retains t */
        return FX_OK;
    case FX_TY_TENSOR_LIST: {
        if (!lua_istable(L, idx)) break;
        int n = (int)lua_rawlen(L, idx); /* no __len: nothing may raise here */
        if (fx_iv_list(n, out, err)) return err->code;
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, idx, i + 1);
            t = lx_to_tensor(L, -1);
            lua_pop(L, 1);
            if (!t) {
                fx_ivalue_clear(out);
                goto bad;
            }
            out->u.list.items[i] = fx_iv_tensor(t); /* retains t */
        }
        return FX_OK;
    }
    case FX_TY_INT:
        if (!lua_isinteger(L, idx)) break;
        *out = fx_iv_int((int64_t)lua_tointeger(L, idx));
        return FX_OK;
    case FX_TY_FLOAT:
    case FX_TY_SCALAR:
        if (!lua_isnumber(L, idx)) break;
        *out = lua_isinteger(L, idx) ? fx_iv_int((int64_t)lua_tointeger(L, idx))
                                     : fx_iv_float((double)lua_tonumber(L, idx));
        return FX_OK;
    case FX_TY_BOOL:
        if (!lua_isboolean(L, idx)) break;
        *out = fx_iv_bool(lua_toboolean(L, idx));
        return FX_OK;
    default: break;
    }
bad:
    return fx_err_setf(err, FX_EARG, "%s::%s: return %d of the %s impl is a %s, the schema says %s",
                       op->ns, op->schema.name, r + 1, "registered", luaL_typename(L, idx),
                       rs->type == FX_TY_TENSOR ? "Tensor" : rs->type == FX_TY_TENSOR_LIST ? "Tensor[]" : "a number");
}

/* call_lua's protected part: [call] -> the impl's results, or nothing when op has no impl for
 * the key. Finding the impl and pushing the arguments may run out of memory: core's frames below
 * call_lua must never be jumped over, so all of it runs inside lua_pcall. */
typedef struct impl_call {
    const fx_opdef *op;
    const char *key;
    const fx_ivalue *a;
    bool found;
} impl_call;

static int run_impl(lua_State *L) {
    impl_call *c = lua_touserdata(L, 1);
    lua_settop(L, 0);
    luaL_checkstack(L, c->op->schema.nargs + 4, "too many arguments");
    if (!(c->found = push_impl(L, c->op, c->key))) return 0;
    for (int i = 0; i < c->op->schema.nargs; i++) lx_push_ivalue(L, &c->a[i]);
    lua_call(L, c->op->schema.nargs, LUA_MULTRET);
    return lua_gettop(L);
}

/* __tostring of the value at 1 (an fxdb error object says what it is through it). */
static int to_text(lua_State *L) {
    luaL_tolstring(L, 1, NULL);
    return 1;
}

/* Calls op's Lua function for `key` on a[0..nargs) and stores its nrets results in out; 1 when
 * there is none. An error inside (the impl's own, or Lua out of memory) becomes err (FX_ENOMEM for
 * a memory error); nothing raises through core. */
static int call_lua(fx_opctx *oc, const char *key, const fx_ivalue *a, fx_ivalue *out) {
    const fx_opdef *op = oc->op;
    fx_err *err = oc->err;
    lua_State *L = callback_thread();
    if (!L) return fx_err_setf(err, FX_EINTERNAL, "%s: no Lua state to run its impl", op->target);
    int base = lua_gettop(L);
    if (!lua_checkstack(L, 8)) return fx_err_setf(err, FX_ENOMEM, "Lua stack overflow");
    impl_call c = {op, key, a, false};
    lua_pushcfunction(L, run_impl);
    lua_pushlightuserdata(L, &c);
    int status = lua_pcall(L, 1, LUA_MULTRET, 0);
    if (status != LUA_OK) {
        const char *m = lua_tostring(L, -1); /* a string (a memory error is one) needs no memory */
        if (!m) {
            lua_pushcfunction(L, to_text);
            lua_pushvalue(L, -2);
            m = lua_pcall(L, 1, 1, 0) == LUA_OK ? lua_tostring(L, -1) : NULL;
        }
        int code = status == LUA_ERRMEM ? FX_ENOMEM : FX_EARG;
        fx_err_setf(err, code, "%s", m ? m : "error in a custom op impl");
        lua_settop(L, base);
        return code;
    }
    if (!c.found) {
        lua_settop(L, base);
        return 1; /* the caller words the error */
    }
    int got = lua_gettop(L) - base, rc = FX_OK, n = 0;
    int want = op->schema.nrets;
    if (got < want)
        rc = fx_err_setf(err, FX_EARG, "%s::%s: its %s impl returned %d value%s, the schema has %d",
                         op->ns, op->schema.name, key, got, got == 1 ? "" : "s", want);
    for (; n < want && !rc; n++) rc = take_result(L, base + 1 + n, op, n, &out[n], err);
    if (rc)
        for (int i = 0; i < n; i++) fx_ivalue_clear(&out[i]);
    lua_settop(L, base);
    return rc;
}

/* The fake impl (meta function): on meta tensors only; with real values the kernel makes the
 * outputs. Ops it calls are not recorded (PyTorch runs it under FakeTensorMode). */
static int custom_meta(fx_opctx *oc, const fx_ivalue *a, fx_ivalue *out) {
    if (oc->device == FX_DEVICE_CPU) return FX_OK;
    oc->ctx->depth++;
    int rc = call_lua(oc, "Meta", a, out);
    oc->ctx->depth--;
    if (rc == 1)
        return fx_err_setf(oc->err, FX_ENOTIMPL,
                           "%s::%s: There was no fake impl registered for %s. This is necessary "
                           "for torch.compile/export/fx tracing to work. Please use "
                           "`torch.library.register_fake` to add a fake impl.",
                           oc->op->ns, oc->op->schema.name, oc->op->target);
    return rc;
}

/* Copies of the tensors op may not write (arguments without (a!)), for the check after. */
static int snapshot(fx_opctx *oc, const fx_ivalue *a, fx_tensor **snap) {
    const fx_schema *s = &oc->op->schema;
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    for (int i = 0; i < s->nargs; i++) {
        snap[i] = NULL;
        if (s->args[i].alias_write || a[i].tag != FX_IV_TENSOR || fx_tensor_is_meta(a[i].u.t))
            continue;
        int rc = fx_call_t(&eager, FX_OP_CLONE, &snap[i], oc->err, 1, &a[i]);
        if (rc) return rc;
    }
    return FX_OK;
}

/* PyTorch's schema check (torch.library.opcheck): an argument not marked (a!) must not change. */
static int check_unchanged(fx_opctx *oc, const fx_ivalue *a, fx_tensor **snap, int rc) {
    const fx_schema *s = &oc->op->schema;
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    for (int i = 0; i < s->nargs; i++) {
        if (!snap[i]) continue;
        fx_tensor *now = NULL;
        if (!rc) rc = fx_call_t(&eager, FX_OP_CLONE, &now, oc->err, 1, &a[i]);
        if (!rc) {
            size_t nb = (size_t)fx_tensor_numel(now) * fx_dtype_size(fx_tensor_dtype(now));
            if (nb && memcmp(fx_tensor_data(now), fx_tensor_data(snap[i]), nb))
                rc = fx_err_setf(oc->err, FX_EARG,
                                 "%s::%s: Argument %s is not defined as mutable but was mutated "
                                 "(mark it Tensor(a!) in the schema, or mutates_args)",
                                 oc->op->ns, s->name, s->args[i].name);
        }
        fx_tensor_release(now);
        fx_tensor_release(snap[i]);
    }
    return rc;
}

/* The kernel: the "CPU" impl, else "CompositeExplicitAutograd". In eager mode, checks that it
 * wrote only the arguments the schema lets it write. */
static int custom_kernel(fx_opctx *oc, const fx_ivalue *a, fx_ivalue *out) {
    const fx_schema *s = &oc->op->schema;
    fx_tensor *snap[FX_SCHEMA_MAX_ARGS] = {0};
    bool check = oc->ctx->mode == FX_MODE_EAGER;
    int rc = check ? snapshot(oc, a, snap) : FX_OK;
    if (!rc) {
        rc = call_lua(oc, "CPU", a, out);
        if (rc == 1) rc = call_lua(oc, "CompositeExplicitAutograd", a, out);
        if (rc == 1)
            rc = fx_err_setf(oc->err, FX_ENOTIMPL,
                             "%s::%s has no kernel for CPU: register one with "
                             "torch.library.impl(\"%s::%s\", \"cpu\", fn)",
                             oc->op->ns, s->name, oc->op->ns, s->name);
    }
    if (check) rc = check_unchanged(oc, a, snap, rc);
    else
        for (int i = 0; i < s->nargs; i++) fx_tensor_release(snap[i]);
    if (rc)
        for (int i = 0; i < s->nrets; i++) fx_ivalue_clear(&out[i]);
    return rc;
}

/* A CompositeImplicitAutograd impl: traced through (the ops it calls are recorded). */
static int custom_composite(fx_opctx *oc, const fx_ivalue *a, fx_ivalue *out) {
    int rc = call_lua(oc, "CompositeImplicitAutograd", a, out);
    if (rc == 1)
        rc = fx_err_setf(oc->err, FX_EINTERNAL, "%s lost its composite impl", oc->op->target);
    return rc;
}

static int clear_main(lua_State *L) {
    (void)L;
    g_main = NULL;
    lx_cb_thread = NULL;
    return 0;
}

/* torch.library._register(ns, schema) -> target: registers the op in core's table.
 * Errors: a schema that does not parse, a duplicate name.  [-0, +1, e] */
static int l_register(lua_State *L) {
    const char *ns = lx_checkstring(L, 1), *schema = lx_checkstring(L, 2);
    fx_opdef *op;
    fx_err err;
    fx_err_clear(&err);
    if (fx_op_register(ns, schema, custom_meta, custom_kernel, NULL, 0, &op, &err))
        return lx_error(L, &err);
    lua_pushstring(L, op->target);
    return 1;
}

/* torch.library._set_composite(target, on): makes the op CompositeImplicitAutograd (its Lua impl
 * is traced through) or not.  [-0, +0, e] */
static int l_set_composite(lua_State *L) {
    const fx_opdef *cop = fx_op_lookup(lx_checkstring(L, 1));
    if (!cop || !(cop->flags & FX_OPF_CUSTOM)) return luaL_argerror(L, 1, "not a custom op");
    fx_opdef *op = (fx_opdef *)cop; /* custom entries are the registry's heap copies */
    bool on = lua_toboolean(L, 2);
    op->flags = on ? op->flags | FX_OPF_COMPOSITE : op->flags & ~(unsigned)FX_OPF_COMPOSITE;
    op->kernel = on ? custom_composite : custom_kernel;
    op->meta = on ? NULL : custom_meta;
    return 0;
}

/* torch.library._set_effectful(target, on): marks the op (custom or ATen) as having an ordered
 * side effect, or not; FX_OPF_EFFECTFUL is process-wide, as PyTorch's SIDE_EFFECTS table.
 * [-0, +0, e] */
static int l_set_effectful(lua_State *L) {
    const fx_opdef *cop = fx_op_lookup(lx_checkstring(L, 1));
    if (!cop) return luaL_argerror(L, 1, "no such op");
    fx_opdef *op = (fx_opdef *)cop; /* the registry's own entry, alive until exit */
    bool on = lua_toboolean(L, 2);
    op->flags = on ? op->flags | FX_OPF_EFFECTFUL : op->flags & ~(unsigned)FX_OPF_EFFECTFUL;
    lua_pushstring(L, op->target);
    return 1;
}

void lx_open_library(lua_State *L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    g_main = lua_tothread(L, -1);
    lua_pop(L, 1);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, IMPLS_KEY);
    /* a sentinel whose __gc forgets the state when it closes */
    lua_newuserdatauv(L, 1, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, clear_main);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "fxdb.custom_ops_sentinel");
    fxlua_register(L, "_library_register", l_register);
    fxlua_register(L, "_library_set_composite", l_set_composite);
    fxlua_register(L, "_library_set_effectful", l_set_effectful);
    lua_getglobal(L, "fxdb");                      /* [fxdb] */
    lua_getfield(L, LUA_REGISTRYINDEX, IMPLS_KEY); /* [fxdb, impls] */
    lua_setfield(L, -2, "_library_impls");         /* [fxdb] */
    lua_pop(L, 1);
}
