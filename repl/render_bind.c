/* repl/render_bind.c — fxdb.render(g_or_ep, file, opts): Graphviz rendering callable from Lua.
 * Layer: repl. The single file that joins lua/ (fxlua.h) and viz/ (fxviz.h): lua/ never
 * includes viz/, and viz/ never includes Lua (docs/ARCHITECTURE.md §2). */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/fxlua.h"
#include "repl/render_bind.h"
#include "viz/fxviz.h"

#define RENDER_DEFAULT_FILE "graph.svg"

/* opts[field]: nil, a string or a list of strings -> a Lua-owned array of C strings kept in
 * a userdata on the stack (so nothing leaks when a later check raises). Returns the count. */
static int render_paths(lua_State *L, const char *field, const char *const **out) {
    *out = NULL;
    lua_getfield(L, 3, field); /* [.., v] */
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return 0;
    }
    int n;
    if (lua_type(L, -1) == LUA_TSTRING) {
        n = 1;
        lua_createtable(L, 1, 0); /* [.., s, t] */
        lua_pushvalue(L, -2);
        lua_rawseti(L, -2, 1);
        lua_remove(L, -2); /* [.., t] */
    } else if (lua_type(L, -1) == LUA_TTABLE) {
        n = (int)luaL_len(L, -1);
    } else {
        return luaL_argerror(L, 3, lua_pushfstring(L, "opts.%s must be a module path or a list "
                                                      "of them", field));
    }
    const char **arr = lua_newuserdatauv(L, sizeof *arr * (size_t)(n ? n : 1), 1); /* [.., t, u] */
    lua_pushvalue(L, -2);
    lua_setiuservalue(L, -2, 1); /* the strings stay alive with the userdata */
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, -2, i + 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            return luaL_argerror(L, 3, lua_pushfstring(L, "opts.%s[%d] must be a module path",
                                                       field, i + 1));
        arr[i] = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    lua_remove(L, -2); /* [.., u] stays on the stack */
    *out = arr;
    return n;
}

/* Refuses a key of the opts table that fxdb.render does not know (a typo must not be ignored). */
static void render_check_keys(lua_State *L) {
    static const char *const known[] = {"why",    "depth",       "expand", "collapse", "module",
                                        "params", "edge_shapes", "legend", "progress", "title"};
    lua_pushnil(L);
    while (lua_next(L, 3) != 0) { /* [.., key, value] */
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        size_t i = 0;
        while (k && i < sizeof known / sizeof known[0] && strcmp(k, known[i]) != 0) i++;
        if (!k || i == sizeof known / sizeof known[0]) {
            luaL_argerror(L, 3, lua_pushfstring(L, "unknown option '%s' (options: why, depth, "
                                                   "expand, collapse, module, params, "
                                                   "edge_shapes, legend, progress, title)",
                                                luaL_tolstring(L, -1, NULL)));
        }
    }
}

static bool render_flag(lua_State *L, const char *field, bool dflt) {
    lua_getfield(L, 3, field);
    bool v = lua_isnil(L, -1) ? dflt : lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

/* fxdb.render(g_or_ep, [file], [opts]) -> file
 *   g_or_ep  a Graph, GraphModule or ExportedProgram (a program also colours placeholders and
 *            outputs by their signature kind)
 *   file     output path; the extension picks the format (.svg .png .pdf .dot .gv, and .html
 *            for the interactive viewer); default "graph.svg"
 *   opts     table, all optional:
 *              why   = "state"  highlight the provenance walk of buffer / input `state`
 *                                (calls fxdb.provenance(ep, why); needs an ExportedProgram)
 *              depth = N        module levels drawn open: 0 = every top-level module one box,
 *                                N = modules N+1 levels deep are boxes; nil = all open
 *              expand = P | {P, ..}    module paths drawn open whatever the depth
 *              collapse = P | {P, ..}  module paths drawn as one box
 *              module = P       draw only module P (levels of depth count from it)
 *              params = true    draw parameters as nodes (default: folded into their users)
 *              edge_shapes = true      dtype[shape] on every edge
 *              legend = false   no legend (default: a legend of the kinds drawn)
 *              progress = false no progress lines on stderr (default: on for long layouts)
 *              title = "..."    graph label
 * Raises "bad argument" errors for wrong argument types, and an fxdb error object (kind "io",
 * "argument", "internal" for a cancelled layout) when Graphviz cannot render. Everything Lua may
 * raise is checked before the C call; the only C state is an fx_err on the stack.  [-0, +1, e] */
static int l_render(lua_State *L) {
    const fx_graph *g = fxlua_check_graph(L, 1);
    const fx_program *prog = fxlua_to_program(L, 1);
    const char *file = luaL_optstring(L, 2, RENDER_DEFAULT_FILE);
    fxviz_opts o;
    memset(&o, 0, sizeof o);
    o.program = prog;
    o.depth = FXVIZ_DEPTH_FULL;
    o.legend = true;
    o.progress = true;
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        render_check_keys(L);
        lua_getfield(L, 3, "depth");                          /* [.., depth] */
        if (!lua_isnil(L, -1)) {
            int isnum;
            lua_Integer d = lua_tointegerx(L, -1, &isnum);
            if (!isnum || d < 0)
                return luaL_argerror(L, 3, "opts.depth must be a non-negative integer");
            o.depth = d > 1000 ? 1000 : (int)d;
        }
        lua_pop(L, 1);
        o.nexpand = render_paths(L, "expand", &o.expand);     /* [.., u?] */
        o.ncollapse = render_paths(L, "collapse", &o.collapse);
        lua_getfield(L, 3, "module");                         /* [.., module] */
        if (!lua_isnil(L, -1)) {
            if (lua_type(L, -1) != LUA_TSTRING)
                return luaL_argerror(L, 3, "opts.module must be a module path");
            o.root = lua_tostring(L, -1);                     /* kept alive on the stack */
        } else {
            lua_pop(L, 1);
        }
        o.params = render_flag(L, "params", false);
        o.edge_shapes = render_flag(L, "edge_shapes", false);
        o.legend = render_flag(L, "legend", true);
        o.progress = render_flag(L, "progress", true);
        lua_getfield(L, 3, "title");                          /* [.., title] */
        if (!lua_isnil(L, -1))
            o.title = luaL_checkstring(L, -1);                /* kept alive on the stack */
        else
            lua_pop(L, 1);
        lua_getfield(L, 3, "why");                            /* [.., why] */
        if (!lua_isnil(L, -1)) {
            if (lua_type(L, -1) != LUA_TSTRING)
                return luaL_argerror(L, 3, "opts.why must be a buffer or input name");
            if (prog == NULL)
                return luaL_argerror(L, 3, "opts.why needs an ExportedProgram, not a bare graph");
            if (lua_getglobal(L, "fxdb") != LUA_TTABLE)       /* [.., why, fxdb] */
                return luaL_error(L, "fxdb.provenance is not available");
            lua_getfield(L, -1, "provenance");                /* [.., why, fxdb, prov] */
            if (lua_isnil(L, -1))
                return luaL_error(L, "fxdb.provenance is not available");
            lua_pushvalue(L, 1);                              /* [.., why, fxdb, prov, ep] */
            lua_pushvalue(L, -4);                             /* [.., prov, ep, why] */
            lua_call(L, 2, 1);                                /* [.., why, fxdb, pv] */
            o.highlight = fxlua_to_provenance(L, -1);         /* pv stays on the stack */
            if (o.highlight == NULL)
                return luaL_error(L, "fxdb.provenance did not return a provenance walk");
        } else {
            lua_pop(L, 1);
        }
    }
    fx_err err;
    fx_err_clear(&err);
    if (fxviz_render(g, file, &o, &err) != FX_OK)
        return fxlua_error(L, &err);
    lua_pushstring(L, file);
    return 1;
}

/* See repl.h. */
void render_bind_open(lua_State *L) {
    fxlua_register(L, "render", l_render);
}
