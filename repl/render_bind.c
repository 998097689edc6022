/* repl/render_bind.c — fxdb.render(g_or_ep, file, opts): Graphviz rendering callable from Lua.
 * Layer: repl. The single file that joins lua/ (fxlua.h) and viz/ (fxviz.h): lua/ never
 * includes viz/, and viz/ never includes Lua (STYLE.md §4). */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/fxlua.h"
#include "repl/render_bind.h"
#include "viz/fxviz.h"

#define RENDER_DEFAULT_FILE "graph.svg"

/* fxdb.render(g_or_ep, [file], [opts]) -> file
 *   g_or_ep  a Graph, GraphModule or ExportedProgram (a program also colours placeholders and
 *            outputs by their signature kind)
 *   file     output path; the extension picks the format (.svg .png .pdf .dot .gv);
 *            default "graph.svg"
 *   opts     table, all optional:
 *              why   = "state"  highlight the provenance walk of buffer / input `state`
 *                                (calls fxdb.provenance(ep, why); needs an ExportedProgram)
 *              depth = N        collapse module clusters deeper than N (0 = none)
 *              title = "..."    graph label
 * Raises "bad argument" errors for wrong argument types, and an fxdb error object (kind "io",
 * "argument") when Graphviz cannot render. Everything Lua may raise is checked before the C call;
 * the only C state is an fx_err on the stack.  [-0, +1, e] */
static int l_render(lua_State *L) {
    const fx_graph *g = fxlua_check_graph(L, 1);
    const fx_program *prog = fxlua_to_program(L, 1);
    const char *file = luaL_optstring(L, 2, RENDER_DEFAULT_FILE);
    fxviz_opts o;
    memset(&o, 0, sizeof o);
    o.program = prog;
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        lua_getfield(L, 3, "depth");                          /* [.., depth] */
        if (!lua_isnil(L, -1)) {
            int isnum;
            lua_Integer d = lua_tointegerx(L, -1, &isnum);
            if (!isnum || d < 0)
                return luaL_argerror(L, 3, "opts.depth must be a non-negative integer");
            o.depth = d > 1000 ? 1000 : (int)d;
        }
        lua_pop(L, 1);
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
