/* lua/lx_debug.c — the C side of the global `fxdb`: provenance, running exported programs,
 * comparing results. Layer: lua. The user-facing verbs (fxdb.export, fxdb.graph, fxdb.check, the
 * REPL's commands) are written in lua/fxdb.lua on top of these primitives:
 *
 *   fxdb.provenance(ep, target)        -> Provenance (fields state, kind, output, steps; tostring)
 *   fxdb._run(ep_or_graph, {inputs})   -> {values...} of the output node (mutations first)
 *   fxdb._max_abs_diff(a, b)           -> number (max |a - b| over elements, as float64; inf when
 *                                         shapes differ; nan compares equal to nan)
 */
#include <math.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/lx_impl.h"
#include "lua/lx_open.h"

/* ==== Provenance ================================================================================ */

typedef struct lx_prov {
    fx_provenance *pv; /* owned */
} lx_prov;

const fx_provenance *fxlua_to_provenance(lua_State *L, int idx) {
    lx_prov *b = luaL_testudata(L, idx, LX_PROVENANCE);
    return b ? b->pv : NULL;
}

static int prov_gc(lua_State *L) {
    lx_prov *b = lx_checkudata(L, 1, LX_PROVENANCE);
    fx_provenance_free(b->pv);
    b->pv = NULL;
    return 0;
}

static int prov_tostring(lua_State *L) {
    lx_prov *b = lx_checkudata(L, 1, LX_PROVENANCE);
    if (!b->pv) return lx_errorf(L, FX_EARG, NULL, "attempt to use a freed Provenance");
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_provenance_format(&sb, b->pv);
    if (sb.oom) {
        fx_strbuf_free(&sb);
        return lx_errorf(L, FX_ENOMEM, NULL, "not enough memory");
    }
    lx_push_strbuf(L, &sb);
    return 1;
}

static void set_opt_string(lua_State *L, const char *k, const char *v) {
    if (!v) return;
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

/* One step as a table {version, node, target, from_op, view_path, location, source}; the
 * graph userdata owning the nodes is at gidx.  [-0, +1, e] */
static void push_step(lua_State *L, const fx_prov_step *s, int gidx) {
    lua_createtable(L, 0, 7);
    lua_pushinteger(L, s->version);
    lua_setfield(L, -2, "version");
    lx_push_node(L, s->node, gidx);
    lua_setfield(L, -2, "node");
    set_opt_string(L, "target", s->target);
    set_opt_string(L, "from_op", s->from_op);
    set_opt_string(L, "view_path", s->view_path);
    set_opt_string(L, "location", s->location);
    set_opt_string(L, "source", s->source);
}

/* pv[i] (1-based, API.md's "list of steps"), pv.steps (the same list), pv.state, pv.kind,
 * pv.output, pv.n. */
static int prov_index(lua_State *L) {
    lx_prov *b = lx_checkudata(L, 1, LX_PROVENANCE);
    if (!b->pv) return lx_errorf(L, FX_EARG, NULL, "attempt to use a freed Provenance");
    const fx_provenance *pv = b->pv;
    if (lua_type(L, 2) == LUA_TNUMBER) {
        lua_Integer i = lua_isinteger(L, 2) ? lua_tointeger(L, 2) : 0;
        if (i < 1 || i > pv->nsteps) return 0;
        lua_getiuservalue(L, 1, 1);
        push_step(L, &pv->steps[i - 1], lua_gettop(L));
        return 1;
    }
    const char *k = lx_checkstring(L, 2);
    if (!strcmp(k, "state")) lua_pushstring(L, pv->state);
    else if (!strcmp(k, "kind")) lua_pushstring(L, pv->kind);
    else if (!strcmp(k, "output")) pv->output ? (void)lua_pushstring(L, pv->output) : lua_pushnil(L);
    else if (!strcmp(k, "steps")) {
        lua_getiuservalue(L, 1, 1);                 /* [.., graph] */
        int gidx = lua_gettop(L);
        lua_createtable(L, pv->nsteps, 0);          /* [.., graph, steps] */
        for (int i = 0; i < pv->nsteps; i++) {
            push_step(L, &pv->steps[i], gidx);
            lua_rawseti(L, -2, i + 1);
        }
    } else if (!strcmp(k, "n")) {
        lua_pushinteger(L, pv->nsteps);
    } else if (!strcmp(k, "walked")) { /* no mutation records: the data-flow walk */
        lua_pushboolean(L, pv->walked);
    } else {
        lua_pushnil(L);
    }
    return 1;
}

static int prov_len(lua_State *L) {
    lx_prov *b = lx_checkudata(L, 1, LX_PROVENANCE);
    lua_pushinteger(L, b->pv ? b->pv->nsteps : 0);
    return 1;
}

/* fxdb.provenance(ep, target) */
static int l_provenance(lua_State *L) {
    const fx_program *p = fxlua_check_program(L, 1);
    const char *target = lx_checkstring(L, 2);
    lx_prov *b = lua_newuserdatauv(L, sizeof *b, 1); /* [ep, target, prov] */
    b->pv = NULL;
    luaL_setmetatable(L, LX_PROVENANCE);
    lua_getfield(L, 1, "graph");                     /* [.., prov, graph] keeps ep alive */
    lua_setiuservalue(L, -2, 1);
    fx_err err;
    fx_err_clear(&err);
    if (fx_provenance_walk(p, target, &b->pv, &err)) return lx_error(L, &err);
    return 1;
}

/* ==== running ===================================================================================== */

/* fxdb._run(ep_or_graph, inputs[, keep]) -> outputs table. For an ExportedProgram the inputs are
 * the user inputs; state comes from the program. */
static int l_run(lua_State *L) {
    const fx_program *p = fxlua_to_program(L, 1);
    const fx_graph *g = p ? p->graph : fxlua_check_graph(L, 1);
    lx_checktype(L, 2, LUA_TTABLE);
    int k;
    fx_ivalue *in = lx_program_inputs(L, p, 2, &k); /* [.., box] */
    fx_ivalue *res = lx_ivbox_new(L, 1);
    fx_interp_opts o = {0};
    fx_err err;
    fx_err_clear(&err);
    if (fx_graph_run(g, in, k, &o, &res[0], &err)) return lx_error(L, &err);
    lx_push_ivalue(L, &res[0]);
    return 1;
}

/* fxdb._max_abs_diff(a, b) */
static int l_max_abs_diff(lua_State *L) {
    fx_tensor *a = lx_check_tensor(L, 1), *b = lx_check_tensor(L, 2);
    if (fx_tensor_is_meta(a) || fx_tensor_is_meta(b)) return lx_errorf(L, FX_EARG, NULL, "cannot compare meta tensors");
    int nd = fx_tensor_ndim(a);
    bool same = nd == fx_tensor_ndim(b);
    for (int d = 0; same && d < nd; d++) same = fx_tensor_size(a, d) == fx_tensor_size(b, d);
    if (!same) {
        lua_pushnumber(L, HUGE_VAL);
        return 1;
    }
    double m = 0;
    int64_t n = fx_tensor_numel(a);
    for (int64_t i = 0; i < n; i++) {
        double x = fx_tensor_flat_f64(a, i), y = fx_tensor_flat_f64(b, i);
        if (isnan(x) && isnan(y)) continue;
        double d = fabs(x - y);
        if (isnan(d)) d = HUGE_VAL;
        if (d > m) m = d;
    }
    lua_pushnumber(L, m);
    return 1;
}

/* fxdb._max_abs(t): max |t| over elements (0 for an empty tensor). */
static int l_max_abs(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    if (fx_tensor_is_meta(t)) return lx_errorf(L, FX_EARG, NULL, "cannot read a meta tensor");
    double m = 0;
    int64_t n = fx_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double a = fabs(fx_tensor_flat_f64(t, i));
        if (a > m) m = a;
    }
    lua_pushnumber(L, m);
    return 1;
}

/* fxdb._type_str(t): "f16[3]" as graphs print tensor metadata. */
static int l_type_str(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, fx_dtype_short(fx_tensor_dtype(t)));
    luaL_addchar(&b, '[');
    for (int d = 0; d < fx_tensor_ndim(t); d++) {
        if (d) luaL_addstring(&b, ", ");
        lua_pushinteger(L, fx_tensor_size(t, d));
        luaL_addvalue(&b);
    }
    luaL_addchar(&b, ']');
    luaL_pushresult(&b);
    return 1;
}

/* fxdb._readable(graph): GraphModule.print_readable text of a graph. */
static int l_readable(lua_State *L) {
    const fx_graph *g = fxlua_check_graph(L, 1);
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_graph_format_code(&sb, g, 0, "GraphModule");
    if (sb.oom) {
        fx_strbuf_free(&sb);
        return lx_errorf(L, FX_ENOMEM, NULL, "not enough memory");
    }
    lx_push_strbuf(L, &sb);
    return 1;
}

/* fxdb._same_storage(a, b): whether two tensors view one storage (aliasing check). */
static int l_same_storage(lua_State *L) {
    lua_pushboolean(L, fx_tensor_same_storage(lx_check_tensor(L, 1), lx_check_tensor(L, 2)));
    return 1;
}

static const luaL_Reg debug_funcs[] = {
    {"provenance", l_provenance},
    {"_run", l_run},
    {"_max_abs_diff", l_max_abs_diff},
    {"_max_abs", l_max_abs},
    {"_same_storage", l_same_storage},
    {"_type_str", l_type_str},
    {"_readable", l_readable},
    {NULL, NULL},
};

void lx_open_debug(lua_State *L) {
    luaL_newmetatable(L, LX_PROVENANCE);        /* [mt] */
    lua_pushliteral(L, "Provenance");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, prov_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, prov_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, prov_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, prov_len);
    lua_setfield(L, -2, "__len");
    lua_pop(L, 1);
    lua_getglobal(L, "fxdb");                   /* [fxdb?] */
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setglobal(L, "fxdb");
    }
    luaL_setfuncs(L, debug_funcs, 0);
    lua_pop(L, 1);
}
