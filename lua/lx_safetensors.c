/* lua/lx_safetensors.c — torch.load_safetensors, torch.save_safetensors, torch.safe_open.
 * Layer: lua. Thin bindings of core/safetensors.h, in the shape of the Python `safetensors`
 * package: load_file / save_file become torch.load_safetensors(path) -> OrderedDict (header order)
 * plus the metadata table, and torch.save_safetensors(tensors, path [, metadata]); safe_open(path)
 * gives a handle that reads one tensor at a time (keys, metadata, shape, dtype, get_tensor), which
 * is what nn.Module:load_state_dict uses to check shapes before reading any data. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/safetensors.h"
#include "lua/lx_impl.h"
#include "lua/lx_open.h"

#define LX_SAFE_OPEN "fxdb.SafeOpen"

/* The userdata of safe_open: the open file, or NULL once closed. */
typedef struct lx_safe {
    fx_st_file *f;
} lx_safe;

static lx_safe *check_safe(lua_State *L, int idx) {
    lx_safe *s = lx_checkudata(L, idx, LX_SAFE_OPEN);
    if (!s->f) lx_errorf(L, FX_EARG, NULL, "attempt to use a closed safetensors file");
    return s;
}

/* __gc / __close / :close(): closes once.  [-0, +0, -] */
static int safe_close(lua_State *L) {
    lx_safe *s = lx_checkudata(L, 1, LX_SAFE_OPEN);
    fx_safetensors_close(s->f);
    s->f = NULL;
    return 0;
}

/* Opens path into a new handle userdata.  [-0, +1, e] */
static lx_safe *push_open(lua_State *L, const char *path) {
    lx_safe *s = lua_newuserdatauv(L, sizeof *s, 0); /* [h] */
    s->f = NULL;
    luaL_setmetatable(L, LX_SAFE_OPEN);
    fx_err err;
    fx_err_clear(&err);
    if (fx_safetensors_open(path, &s->f, &err) != FX_OK) lx_error(L, &err);
    return s;
}

/* torch.safe_open(path) -> handle.  [-0, +1, e] */
static int l_safe_open(lua_State *L) {
    push_open(L, lx_checkstring(L, 1));
    return 1;
}

/* Index of the tensor named by argument 2 of a handle method, or a KeyError-like error. */
static int check_name(lua_State *L, lx_safe *s) {
    const char *name = lx_checkstring(L, 2);
    int i = fx_safetensors_find(s->f, name);
    if (i < 0) return lx_errorf(L, FX_EARG, "key_error", "File does not contain tensor %s", name);
    return i;
}

/* h:keys() -> {names in header order}.  [-0, +1, e] */
static int safe_keys(lua_State *L) {
    lx_safe *s = check_safe(L, 1);
    int n = fx_safetensors_count(s->f);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushstring(L, fx_safetensors_info(s->f, i)->name);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* h:metadata() -> {key = value} (empty when the file has none).  [-0, +1, e] */
static int safe_metadata(lua_State *L) {
    lx_safe *s = check_safe(L, 1);
    int n = fx_safetensors_metadata_count(s->f);
    lua_createtable(L, 0, n);
    for (int i = 0; i < n; i++) {
        lua_pushstring(L, fx_safetensors_metadata_value(s->f, i));
        lua_setfield(L, -2, fx_safetensors_metadata_key(s->f, i));
    }
    return 1;
}

/* h:shape(name) -> torch.Size.  [-0, +1, e] */
static int safe_shape(lua_State *L) {
    lx_safe *s = check_safe(L, 1);
    const fx_st_info *info = fx_safetensors_info(s->f, check_name(L, s));
    lx_push_size(L, info->ndim, info->sizes);
    return 1;
}

/* h:dtype(name) -> torch dtype.  [-0, +1, e] */
static int safe_dtype(lua_State *L) {
    lx_safe *s = check_safe(L, 1);
    lx_push_dtype(L, fx_safetensors_info(s->f, check_name(L, s))->dtype);
    return 1;
}

/* Reads tensor i of s and pushes it (a new cpu tensor of the stored dtype).  [-0, +1, e] */
static void push_read(lua_State *L, lx_safe *s, int i) {
    fx_ivalue *box = lx_ivbox_new(L, 1); /* [box] */
    fx_err err;
    fx_err_clear(&err);
    fx_tensor *t = NULL;
    if (fx_safetensors_read(s->f, i, &t, &err) != FX_OK) lx_error(L, &err);
    box[0] = fx_iv_tensor_steal(t);
    lx_push_tensor(L, t); /* [box, t] */
    fx_ivalue_clear(&box[0]);
    lua_remove(L, -2); /* [t] */
}

/* h:get_tensor(name) -> Tensor.  [-0, +1, e] */
static int safe_get_tensor(lua_State *L) {
    lx_safe *s = check_safe(L, 1);
    push_read(L, s, check_name(L, s));
    return 1;
}

static int safe_tostring(lua_State *L) {
    lx_safe *s = lx_checkudata(L, 1, LX_SAFE_OPEN);
    if (!s->f)
        lua_pushliteral(L, "safe_open (closed)");
    else
        lua_pushfstring(L, "safe_open (%d tensors)", fx_safetensors_count(s->f));
    return 1;
}

/* Pushes an empty OrderedDict (nn._ordered_dict) or, before nn is loaded, a plain table. Returns
 * true for an OrderedDict.  [-0, +1, e] */
static bool push_ordered(lua_State *L) {
    int top = lua_gettop(L);
    if (lua_getglobal(L, "nn") == LUA_TTABLE &&                  /* [nn] */
        lua_getfield(L, -1, "_ordered_dict") == LUA_TFUNCTION) { /* [nn, f] */
        lua_call(L, 0, 1);                                       /* [nn, sd] */
        lua_remove(L, -2);                                       /* [sd] */
        return true;
    }
    lua_settop(L, top);
    lua_newtable(L);
    return false;
}

/* sd[k] = value on top (popped), keeping the OrderedDict's key list.  [-1, +0, e] */
static void ordered_put(lua_State *L, int sd, bool ordered, const char *k) {
    sd = lua_absindex(L, sd);
    lua_setfield(L, sd, k); /* plain rawset semantics: the OrderedDict has no __newindex */
    if (!ordered) return;
    lua_getmetatable(L, sd);     /* [mt] */
    lua_getfield(L, -1, "keys"); /* [mt, keys] */
    lua_pushstring(L, k);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 2);
}

/* torch.load_safetensors(path) -> OrderedDict {name = tensor} in header order, metadata table.
 * [-0, +2, e] */
static int l_load(lua_State *L) {
    const char *path = lx_checkstring(L, 1);
    lua_settop(L, 1);
    lx_safe *s = push_open(L, path); /* [path, h] */
    bool ordered = push_ordered(L);  /* [path, h, sd] */
    int n = fx_safetensors_count(s->f);
    for (int i = 0; i < n; i++) {
        push_read(L, s, i); /* [path, h, sd, t] */
        ordered_put(L, 3, ordered, fx_safetensors_info(s->f, i)->name);
    }
    lua_pushcfunction(L, safe_metadata);
    lua_pushvalue(L, 2);
    lua_call(L, 1, 1); /* [path, h, sd, meta] */
    fx_safetensors_close(s->f);
    s->f = NULL;
    return 2;
}

/* Collects the names of the state dict at idx: an OrderedDict's key order, else sorted keys.
 * Pushes the list.  [-0, +1, e] */
static int push_names(lua_State *L, int idx) {
    idx = lua_absindex(L, idx);
    if (lua_getmetatable(L, idx)) {                      /* [mt] */
        if (lua_getfield(L, -1, "keys") == LUA_TTABLE) { /* [mt, keys] */
            lua_remove(L, -2);
            return (int)lua_rawlen(L, -1);
        }
        lua_pop(L, 2);
    }
    lua_getglobal(L, "table");   /* [table] */
    lua_getfield(L, -1, "sort"); /* [table, sort] */
    lua_remove(L, -2);           /* [sort] */
    lua_newtable(L);             /* [sort, names] */
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* [sort, names, k, v] */
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            lx_errorf(L, FX_EARG, NULL, "bad argument #1 to 'save_safetensors' (keys must be strings, got %s)",
                       luaL_typename(L, -1));
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, ++n);
    }
    lua_pushvalue(L, -1); /* [sort, names, names] */
    lua_insert(L, -3);    /* [names, sort, names] */
    lua_call(L, 1, 0);    /* [names] */
    return n;
}

/* torch.save_safetensors(tensors, path [, metadata]): tensors is a state dict (OrderedDict order
 * kept) or a plain {name = tensor} table (names sorted); metadata a {string = string} table.
 * Non-contiguous tensors are written in their logical order. Returns nothing.  [-0, +0, e] */
static int l_save(lua_State *L) {
    lx_checktype(L, 1, LUA_TTABLE);
    const char *path = lx_checkstring(L, 2);
    if (!lua_isnoneornil(L, 3)) lx_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    int n = push_names(L, 1); /* [sd, path, meta, names] */
    /* scratch arrays live in userdata so an error leaves nothing behind */
    const char **names = lua_newuserdatauv(L, sizeof *names * (size_t)(n + 1), 0);
    fx_tensor **ts = lua_newuserdatauv(L, sizeof *ts * (size_t)(n + 1), 0);
    for (int i = 0; i < n; i++) { /* [sd, path, meta, names, nbuf, tbuf] */
        lua_rawgeti(L, 4, i + 1); /* [.., name] */
        names[i] = lua_tostring(L, -1);
        lua_gettable(L, 1); /* [.., value]  (the name stays alive in the names list) */
        ts[i] = lx_to_tensor(L, -1);
        if (!ts[i])
            return lx_errorf(L, FX_EARG, NULL,
                              "bad argument #1 to 'save_safetensors' (value of '%s' is a %s, "
                              "Tensor expected)",
                              names[i], luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    int nmeta = 0;
    const char **meta = NULL;
    if (lua_istable(L, 3)) {
        lua_pushnil(L);
        while (lua_next(L, 3)) {
            nmeta++;
            lua_pop(L, 1);
        }
        meta = lua_newuserdatauv(L, sizeof *meta * (size_t)(2 * nmeta + 1), 0);
        int k = 0;
        lua_pushnil(L);
        while (lua_next(L, 3)) { /* [.., mbuf, key, value] */
            if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
                return lx_errorf(L, FX_EARG, NULL, "bad argument #3 to 'save_safetensors' (metadata must map "
                                     "strings to strings)");
            meta[k++] = lua_tostring(L, -2);
            meta[k++] = lua_tostring(L, -1); /* both stay alive in the metadata table */
            lua_pop(L, 1);
        }
    }
    fx_err err;
    fx_err_clear(&err);
    if (fx_safetensors_save(path, n, names, ts, nmeta, meta, &err) != FX_OK) lx_error(L, &err);
    return 0;
}

static const luaL_Reg safe_methods[] = {
    {"keys", safe_keys},   {"metadata", safe_metadata},     {"shape", safe_shape},
    {"dtype", safe_dtype}, {"get_tensor", safe_get_tensor}, {"close", safe_close},
    {NULL, NULL},
};

static const luaL_Reg torch_funcs[] = {
    {"load_safetensors", l_load},
    {"save_safetensors", l_save},
    {"safe_open", l_safe_open},
    {NULL, NULL},
};

void lx_open_safetensors(lua_State *L) {
    luaL_newmetatable(L, LX_SAFE_OPEN); /* [mt] */
    lua_pushliteral(L, "safe_open");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, safe_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, safe_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, safe_tostring);
    lua_setfield(L, -2, "__tostring");
    luaL_newlib(L, safe_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    if (lua_getglobal(L, "torch") != LUA_TTABLE) { /* [torch?] */
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setglobal(L, "torch");
    } /* [torch] */
    luaL_setfuncs(L, torch_funcs, 0);
    lua_pop(L, 1);
}
