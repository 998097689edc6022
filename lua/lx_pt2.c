/* lua/lx_pt2.c — torch.export.save / torch.export.load over PT2 archives (pt2/pt2.h).
 * Layer: lua.
 *
 *   torch.export.save(ep, "model.pt2")     writes ep as PyTorch's PT2 archive (docs/PT2.md)
 *   torch.export.load("model.pt2") -> ep   reads a PT2 archive (torch >= 2.8) or the earlier
 *                                          torch.export.save zip (torch 2.5 - 2.7)
 *   fxdb._zip_write(path, {{name, bytes}, ...})   a plain stored zip, for tests building archives
 *                                          by hand
 *   fxdb._json_encode(value [, pretty]) -> string   a Lua value as JSON (cJSON; indented when
 *                                          pretty is true): tables with keys 1..n are
 *                                          arrays, other tables objects (keys sorted), nil/false/
 *                                          true/numbers/strings as themselves; used by --json
 * Errors are fxdb error objects (kind "io" for a file that cannot be read or is malformed,
 * "not_implemented" for what fxdb does not model), located at the caller's Lua line. */
#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lx_impl.h"
#include "lua/lx_open.h"
#include "pt2/pt2.h"

static int l_save(lua_State *L) {
    const fx_program *p = fxlua_to_program(L, 1);
    if (!p) lx_typeerror(L, 1, "ExportedProgram");
    const char *path = lx_checkstring(L, 2);
    fx_err err;
    fx_err_clear(&err);
    if (fx_pt2_save(p, path, &err)) return lx_error(L, &err);
    return 0;
}

static int l_load(lua_State *L) {
    const char *path = lx_checkstring(L, 1);
    fx_err err;
    fx_err_clear(&err);
    fx_program **slot = lx_push_program_slot(L);
    if (fx_pt2_load(path, slot, &err)) return lx_error(L, &err);
    return 1;
}

static int l_zip_write(lua_State *L) {
    const char *path = lx_checkstring(L, 1);
    lx_checktype(L, 2, LUA_TTABLE);
    int n = (int)lua_rawlen(L, 2);
    const char **names = lua_newuserdatauv(L, sizeof *names * (size_t)(n + 1), 0);
    const void **data = lua_newuserdatauv(L, sizeof *data * (size_t)(n + 1), 0);
    size_t *lens = lua_newuserdatauv(L, sizeof *lens * (size_t)(n + 1), 0);
    for (int i = 0; i < n; i++) { /* the strings stay referenced by the table at index 2 */
        lua_rawgeti(L, 2, i + 1);
        luaL_checktype(L, -1, LUA_TTABLE);
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        names[i] = luaL_checkstring(L, -2);
        data[i] = luaL_checklstring(L, -1, &lens[i]);
        lua_pop(L, 3);
    }
    fx_err err;
    fx_err_clear(&err);
    if (fx_pt2_write_zip(path, names, data, lens, n, &err)) return lx_error(L, &err);
    return 0;
}

/* The Lua value at idx as JSON; NULL on a value JSON cannot hold (the message in *why). */
static cJSON *to_json(lua_State *L, int idx, int depth, const char **why) {
    idx = lua_absindex(L, idx);
    if (depth > 64) {
        *why = "nested too deeply";
        return NULL;
    }
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return cJSON_CreateNull();
    case LUA_TBOOLEAN: return cJSON_CreateBool(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            char b[32];
            snprintf(b, sizeof b, "%lld", (long long)lua_tointeger(L, idx));
            return cJSON_CreateRaw(b);
        } else {
            double d = lua_tonumber(L, idx);
            if (d != d || d > 1.7976931348623157e308 || d < -1.7976931348623157e308)
                return cJSON_CreateString(d != d ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
            return cJSON_CreateNumber(d);
        }
    case LUA_TSTRING: return cJSON_CreateString(lua_tostring(L, idx));
    case LUA_TTABLE: break;
    default: {
        /* userdata (tensors, programs, ...) as their __tostring */
        const char *s = luaL_tolstring(L, idx, NULL);
        cJSON *j = cJSON_CreateString(s);
        lua_pop(L, 1);
        return j;
    }
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    int nkeys = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        nkeys++;
        lua_pop(L, 1);
    }
    if (n > 0 && nkeys == n) {
        cJSON *arr = cJSON_CreateArray();
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, idx, i);
            cJSON *e = to_json(L, -1, depth + 1, why);
            lua_pop(L, 1);
            if (!e) {
                cJSON_Delete(arr);
                return NULL;
            }
            cJSON_AddItemToArray(arr, e);
        }
        return arr;
    }
    if (nkeys == 0 && lua_getmetatable(L, idx)) { /* an empty table marked as an array */
        lua_getfield(L, -1, "__jsontype");
        bool arr = lua_isstring(L, -1) && !strcmp(lua_tostring(L, -1), "array");
        lua_pop(L, 2);
        if (arr) return cJSON_CreateArray();
    }
    /* an object, keys sorted so that output is stable */
    lua_createtable(L, nkeys, 0); /* [.., keys] key strings */
    lua_createtable(L, nkeys, 0); /* [.., keys, vals] */
    int kt = lua_gettop(L) - 1, vt = kt + 1, k = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* [.., key, value] */
        k++;
        lua_rawseti(L, vt, k);
        lua_pushvalue(L, -1);
        luaL_tolstring(L, -1, NULL); /* [.., key, keycopy, keystr] */
        lua_rawseti(L, kt, k);
        lua_pop(L, 1);
    }
    int *perm = lua_newuserdatauv(L, sizeof *perm * (size_t)(k + 1), 0);
    for (int i = 0; i < k; i++) perm[i] = i + 1;
    for (int i = 1; i < k; i++) { /* insertion sort of the key order */
        int p = perm[i], j = i;
        lua_rawgeti(L, kt, p);
        const char *ps = lua_tostring(L, -1);
        for (; j > 0; j--) {
            lua_rawgeti(L, kt, perm[j - 1]);
            int c = strcmp(lua_tostring(L, -1), ps);
            lua_pop(L, 1);
            if (c <= 0) break;
            perm[j] = perm[j - 1];
        }
        perm[j] = p;
        lua_pop(L, 1);
    }
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < k; i++) {
        lua_rawgeti(L, kt, perm[i]);
        lua_rawgeti(L, vt, perm[i]);
        cJSON *e = to_json(L, -1, depth + 1, why);
        if (!e) {
            cJSON_Delete(o);
            lua_pop(L, 5);
            return NULL;
        }
        cJSON_AddItemToObject(o, lua_tostring(L, -2), e);
        lua_pop(L, 2);
    }
    lua_pop(L, 3);
    return o;
}

static int l_json_encode(lua_State *L) {
    luaL_checkany(L, 1);
    const char *why = "not representable";
    cJSON *j = to_json(L, 1, 0, &why);
    if (!j) return luaL_error(L, "cannot encode as JSON: %s", why);
    char *s = lua_toboolean(L, 2) ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) return luaL_error(L, "not enough memory");
    lua_pushstring(L, s);
    free(s);
    return 1;
}

void lx_open_pt2(lua_State *L) {
    if (lua_getglobal(L, "torch") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setglobal(L, "torch");
    } /* [torch] */
    if (lua_getfield(L, -1, "export") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, "export");
    } /* [torch, export] */
    lua_pushcfunction(L, l_save);
    lua_setfield(L, -2, "save");
    lua_pushcfunction(L, l_load);
    lua_setfield(L, -2, "load");
    lua_pop(L, 2);
    fxlua_register(L, "_zip_write", l_zip_write);
    fxlua_register(L, "_json_encode", l_json_encode);
}
