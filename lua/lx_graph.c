/* lua/lx_graph.c — Graph and Node userdata: node lists, lookups, search, printing, node meta.
 * Layer: lua. A Graph userdata holds an fx_graph pointer and either owns it (freed by __gc) or
 * keeps its owner alive through user value 1 (an ExportedProgram, a tracer). A Node userdata
 * holds an fx_node pointer and keeps its Graph userdata alive through user value 1
 * (docs/CONTRIBUTING.md, Conventions). Nodes go through a weak-valued identity cache keyed by the
 * fx_node address, so one node is one Lua value: n1 == n2 works and nodes can key tables. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/lx_impl.h"
#include "lua/lx_open.h"

#define LX_NODE_CACHE "fxdb.nodecache"

typedef struct lx_graph_ud {
    fx_graph *g; /* NULL once freed */
    bool owned;  /* __gc frees g */
} lx_graph_ud;

typedef struct lx_node_ud {
    fx_node *n; /* borrowed from the graph in user value 1 */
} lx_node_ud;

/* ==== push / check ============================================================================ */

void lx_push_graph(lua_State *L, fx_graph *g, int owner_idx) {
    if (owner_idx) owner_idx = lua_absindex(L, owner_idx);
    lx_graph_ud *u = lua_newuserdatauv(L, sizeof *u, 1); /* [g] */
    u->g = NULL;
    u->owned = false;
    luaL_setmetatable(L, LX_GRAPH);
    if (owner_idx) {
        lua_pushvalue(L, owner_idx); /* [g, owner] */
        lua_setiuservalue(L, -2, 1); /* [g] */
    }
    u->g = g;
    u->owned = owner_idx == 0;
}

fx_graph *lx_check_graph(lua_State *L, int idx) {
    lx_graph_ud *u = luaL_testudata(L, idx, LX_GRAPH);
    if (!u) lx_typeerror(L, idx, "Graph");
    if (!u->g) lx_argerror(L, idx, "attempt to use a freed graph");
    return u->g;
}

const fx_graph *fxlua_check_graph(lua_State *L, int idx) {
    idx = lua_absindex(L, idx);
    lx_graph_ud *u = luaL_testudata(L, idx, LX_GRAPH);
    if (u) return lx_check_graph(L, idx);
    /* an ExportedProgram / GraphModule: take its `graph` field (kept alive by the value) */
    int t = lua_type(L, idx);
    if (t == LUA_TUSERDATA || t == LUA_TTABLE) {
        lua_getfield(L, idx, "graph"); /* [.., g?] */
        u = luaL_testudata(L, -1, LX_GRAPH);
        const fx_graph *g = u ? u->g : NULL;
        lua_pop(L, 1);
        if (g) return g;
    }
    lx_typeerror(L, idx, "Graph or ExportedProgram");
    return NULL;
}

void lx_push_node(lua_State *L, fx_node *n, int graph_idx) {
    if (!n) {
        lua_pushnil(L);
        return;
    }
    graph_idx = lua_absindex(L, graph_idx);
    lua_getfield(L, LUA_REGISTRYINDEX, LX_NODE_CACHE); /* [cache] */
    lua_rawgetp(L, -1, n);                             /* [cache, ud?] */
    lx_node_ud *u = lua_touserdata(L, -1);
    if (u && u->n == n) {
        lua_remove(L, -2); /* [ud] */
        return;
    }
    lua_pop(L, 1);                          /* [cache] */
    u = lua_newuserdatauv(L, sizeof *u, 1); /* [cache, ud] */
    u->n = n;
    luaL_setmetatable(L, LX_NODE);
    lua_pushvalue(L, graph_idx);
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, -1);  /* [cache, ud, ud] */
    lua_rawsetp(L, -3, n); /* [cache, ud] */
    lua_remove(L, -2);     /* [ud] */
}

fx_node *lx_check_node(lua_State *L, int idx) {
    lx_node_ud *u = luaL_testudata(L, idx, LX_NODE);
    if (!u) lx_typeerror(L, idx, "Node");
    if (!u->n) lx_argerror(L, idx, "attempt to use a freed node");
    return u->n;
}

/* ==== graph methods ========================================================================== */

static int graph_gc(lua_State *L) {
    lx_graph_ud *u = lx_checkudata(L, 1, LX_GRAPH);
    if (u->g && u->owned) fx_graph_free(u->g);
    u->g = NULL;
    return 0;
}

/* Pushes a Lua list of every node in order.  [-0, +1, e] */
static void push_nodes(lua_State *L, int gidx, const fx_graph *g) {
    lua_createtable(L, fx_graph_count(g), 0); /* [list] */
    int i = 1;
    for (fx_node *n = fx_graph_first(g); n; n = n->next) {
        lx_push_node(L, n, gidx);
        lua_rawseti(L, -2, i++);
    }
}

static int push_strbuf(lua_State *L, fx_strbuf *sb) {
    fx_err e;
    fx_err_clear(&e);
    if (fx_strbuf_status(sb, &e) != FX_OK) {
        fx_strbuf_free(sb);
        return lx_error(L, &e);
    }
    lx_push_strbuf(L, sb);
    return 1;
}

/* g:node("mul") / g:node("%mul") -> Node or nil.  [-0, +1, e] */
static int graph_node(lua_State *L) {
    fx_graph *g = lx_check_graph(L, 1);
    const char *name = lx_checkstring(L, 2);
    lx_push_node(L, fx_graph_find(g, name), 1);
    return 1;
}

/* Copies s without spaces into out (cap bytes). */
static void squeeze_spaces(const char *s, char *out, size_t cap) {
    size_t k = 0;
    for (; *s && k + 1 < cap; s++)
        if (*s != ' ') out[k++] = *s;
    out[k] = 0;
}

/* Is q a type string like "f32[3]" or "i64[]"? */
static bool is_shape_query(const char *q) {
    const char *p = q;
    if (!(*p >= 'a' && *p <= 'z')) return false;
    while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) p++;
    if (*p != '[') return false;
    size_t n = strlen(p);
    return n >= 2 && p[n - 1] == ']';
}

/* Does target t ("aten.add_.Tensor") match the op query q ("aten.add_", "add", "aten.add_.Tensor")?
 */
static bool target_matches(const char *t, const char *q) {
    if (!t) return false;
    if (!strncmp(q, "torch.ops.", 10)) q += 10;
    char buf[128];
    const char *cc = strstr(q, "::");
    if (cc) { /* "aten::add", "mylib::foo" */
        snprintf(buf, sizeof buf, "%.*s.%s", (int)(cc - q), q, cc + 2);
        q = buf;
    } else if (!strchr(q, '.')) {
        if (!strcmp(t, q)) return true; /* getitem, output, ... */
        if (!strncmp(t, "higher_order.", 13) && !strcmp(t + 13, q)) return true;
        snprintf(buf, sizeof buf, "aten.%s", q);
        q = buf;
    }
    size_t n = strlen(q);
    return !strncmp(t, q, n) && (t[n] == 0 || t[n] == '.');
}

/* Calls string.find(name, pattern) under pcall; false on a bad pattern.  [-0, +0, -] */
static bool name_matches(lua_State *L, int find_idx, const char *name, const char *pat) {
    lua_pushvalue(L, find_idx);
    lua_pushstring(L, name);
    lua_pushstring(L, pat);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
        lua_pop(L, 1);
        return strstr(name, pat) != NULL;
    }
    bool ok = !lua_isnil(L, -1);
    lua_pop(L, 1);
    return ok;
}

/* g:find(q) -> list of nodes: q is "%name" (exact), a type "f32[3]", an op ("aten.add_", "add",
 * "aten.add.Tensor"), or a Lua pattern on node names.  [-0, +1, e] */
static int graph_find(lua_State *L) {
    fx_graph *g = lx_check_graph(L, 1);
    const char *q = lx_checkstring(L, 2);
    lua_settop(L, 2);
    lua_getglobal(L, "string");  /* [g, q, string] */
    lua_getfield(L, -1, "find"); /* [g, q, string, find] */
    int find_idx = lua_gettop(L);
    lua_newtable(L); /* [.., list] */
    int k = 1;
    char want[128], have[128];
    bool shape = is_shape_query(q);
    if (shape) squeeze_spaces(q, want, sizeof want);
    for (fx_node *n = fx_graph_first(g); n; n = n->next) {
        bool hit;
        if (q[0] == '%') {
            hit = !strcmp(n->name, q + 1);
        } else if (shape) {
            fx_strbuf sb = FX_STRBUF_INIT;
            fx_node_format_type(&sb, n);
            squeeze_spaces(fx_strbuf_cstr(&sb), have, sizeof have);
            fx_strbuf_free(&sb);
            hit = !strcmp(want, have);
        } else {
            hit = (n->op == FX_NODE_CALL_FUNCTION && target_matches(n->target, q)) ||
                  (!strchr(q, '.') && name_matches(L, find_idx, n->name, q));
        }
        if (hit) {
            lx_push_node(L, n, 1);
            lua_rawseti(L, -2, k++);
        }
    }
    return 1;
}

static int graph_tostring(lua_State *L) {
    fx_graph *g = lx_check_graph(L, 1);
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_graph_format_listing(&sb, g);
    return push_strbuf(L, &sb);
}

static int graph_len(lua_State *L) {
    lua_pushinteger(L, fx_graph_count(lx_check_graph(L, 1)));
    return 1;
}

static const luaL_Reg graph_methods[] = {
    {"node", graph_node},
    {"find", graph_find},
    {NULL, NULL},
};

/* g.nodes, g.code, methods.  [-0, +1, e] */
static int graph_index(lua_State *L) {
    fx_graph *g = lx_check_graph(L, 1);
    const char *k = lx_checkstring(L, 2);
    if (!strcmp(k, "nodes")) {
        push_nodes(L, 1, g);
        return 1;
    }
    if (!strcmp(k, "code")) {
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_graph_format_forward(&sb, g, 0, false);
        return push_strbuf(L, &sb);
    }
    if (!strcmp(k, "typed_code")) {
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_graph_format_forward(&sb, g, 0, true);
        return push_strbuf(L, &sb);
    }
    if (!strcmp(k, "output")) {
        lx_push_node(L, fx_graph_output_node(g), 1);
        return 1;
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

/* ==== node fields ============================================================================ */

/* "f16[3]" for a tensor; into sb. */
static void format_tensor_type(fx_strbuf *sb, const fx_tensor *t) {
    fx_strbuf_appendf(sb, "%s[", fx_dtype_short(fx_tensor_dtype(t)));
    for (int i = 0; i < fx_tensor_ndim(t); i++)
        fx_strbuf_appendf(sb, "%s%lld", i ? ", " : "", (long long)fx_tensor_size(t, i));
    fx_strbuf_putc(sb, ']');
}

/* Pushes a node argument: node references as Node userdata, the rest as ivalues. */
static void push_arg(lua_State *L, const fx_ivalue *v, int gidx) {
    if (v->tag == FX_IV_NODE) {
        lx_push_node(L, v->u.node, gidx);
        return;
    }
    if (v->tag == FX_IV_LIST) {
        lua_createtable(L, v->u.list.n, 0);
        for (int i = 0; i < v->u.list.n; i++) {
            push_arg(L, &v->u.list.items[i], gidx);
            lua_rawseti(L, -2, i + 1);
        }
        /* None items (index_put's Tensor?[] indices) are holes; `n` then keeps the length, as
         * table.pack does and the op binding reads it */
        for (int i = 0; i < v->u.list.n; i++)
            if (v->u.list.items[i].tag == FX_IV_NONE) {
                lua_pushinteger(L, v->u.list.n);
                lua_setfield(L, -2, "n");
                break;
            }
        return;
    }
    lx_push_ivalue(L, v);
}

/* The stack trace as one string, innermost frame first:
 * "File: model.lua:9 in forward, code: self.state:mul_(x)". */
static void format_stack(fx_strbuf *sb, const fx_node *n) {
    for (int i = 0; i < n->nstack; i++) {
        const fx_frame *f = &n->stack[i];
        fx_strbuf_appendf(sb, "%sFile: %s:%d in %s, code: %s", i ? "\n" : "",
                          f->file ? f->file : "?", f->line, f->func ? f->func : "?",
                          f->code ? f->code : "");
    }
}

/* The raw graph whose node names a node's from_node lists: the program's raw graph when the
 * graph at gidx belongs to an ExportedProgram, else NULL. */
static const fx_graph *raw_graph_of(lua_State *L, int gidx) {
    const fx_graph *raw = NULL;
    if (lua_getiuservalue(L, gidx, 1) == LUA_TUSERDATA) { /* [owner] */
        const fx_program *p = fxlua_to_program(L, -1);
        if (p) raw = p->raw;
    }
    lua_pop(L, 1);
    return raw;
}

/* Pushes the meta table of node n (of the graph at gidx).  [-0, +1, e]
 * As FX's node.meta: `val` is the tensor itself (a meta tensor, PyTorch's FakeTensor; a list
 * of them for multi-output ops; a number for scalars), `type` its printed type "f32[2, 4]";
 * `nn_module_stack` is ordered: entries 1..n are {path, cls} (also [1] / [2], PyTorch's
 * (path, class) pair) and pairs() walks them by Dynamo's keys ("L__self__", "L__self___lin");
 * `from_node` entries are {name, target} (tostring gives the name). */
static int nms_pairs_next(lua_State *L) {
    lua_Integer i = lx_checkinteger(L, lua_upvalueindex(1)) + 1;
    lua_pushinteger(L, i);
    lua_replace(L, lua_upvalueindex(1));
    if (lua_rawgeti(L, 1, i) != LUA_TTABLE) return 0; /* [entry] */
    lua_getfield(L, -1, "key");
    lua_insert(L, -2);
    return 2;
}

static int nms_pairs(lua_State *L) {
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, nms_pairs_next, 1);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static int name_tostring(lua_State *L) {
    lua_getfield(L, 1, "name");
    return 1;
}

static void push_meta(lua_State *L, const fx_node *n, int gidx) {
    lua_createtable(L, 0, 8); /* [meta] */
    if (n->val.tag == FX_IV_TENSOR) {
        fx_strbuf sb = FX_STRBUF_INIT;
        format_tensor_type(&sb, n->val.u.t);
        lx_push_strbuf(L, &sb);
        lua_setfield(L, -2, "type");
        lx_push_tensor(L, n->val.u.t);
        lua_setfield(L, -2, "val");
        lx_push_tensor(L, n->val.u.t);
        lua_setfield(L, -2, "tensor");
        if (!fx_tensor_is_meta(n->val.u.t)) {
            lx_push_tensor(L, n->val.u.t);
            lua_setfield(L, -2, "value");
        }
    } else if (n->val.tag == FX_IV_LIST) {
        for (int which = 0; which < 2; which++) {
            lua_createtable(L, n->val.u.list.n, 0); /* [meta, vals] */
            for (int i = 0; i < n->val.u.list.n; i++) {
                const fx_ivalue *e = &n->val.u.list.items[i];
                if (e->tag == FX_IV_TENSOR && which == 1) {
                    fx_strbuf sb = FX_STRBUF_INIT;
                    format_tensor_type(&sb, e->u.t);
                    lx_push_strbuf(L, &sb);
                } else {
                    lx_push_ivalue(L, e);
                }
                lua_rawseti(L, -2, i + 1);
            }
            lua_setfield(L, -2, which ? "type" : "val");
        }
    } else if (n->val.tag != FX_IV_UNSET && n->val.tag != FX_IV_NONE) {
        lx_push_ivalue(L, &n->val);
        lua_setfield(L, -2, "val");
    }
    if (n->nstack > 0) {
        fx_strbuf sb = FX_STRBUF_INIT;
        format_stack(&sb, n);
        lx_push_strbuf(L, &sb);
        lua_setfield(L, -2, "stack_trace");
    }
    lua_createtable(L, n->nmodules, 0); /* [meta, mods] */
    for (int i = 0; i < n->nmodules; i++) {
        const char *path = n->modules[i].path ? n->modules[i].path : "";
        lua_createtable(L, 2, 3);
        lua_pushstring(L, path);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, "path");
        lua_rawseti(L, -2, 1);
        lua_pushstring(L, n->modules[i].cls ? n->modules[i].cls : "");
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, "cls");
        lua_rawseti(L, -2, 2);
        /* Dynamo's key: L__self__ for the root, L__self___<path with . as _> below it */
        fx_strbuf key = FX_STRBUF_INIT;
        fx_strbuf_append(&key, "L__self__");
        if (*path) fx_strbuf_append(&key, "_");
        for (const char *c = path; *c; c++) fx_strbuf_appendf(&key, "%c", *c == '.' ? '_' : *c);
        lx_push_strbuf(L, &key);
        lua_setfield(L, -2, "key");
        lua_rawseti(L, -2, i + 1);
    }
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, nms_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "nn_module_stack");
    const fx_graph *raw = n->nfrom ? raw_graph_of(L, gidx) : NULL;
    lua_createtable(L, n->nfrom, 0); /* [meta, from] */
    for (int i = 0; i < n->nfrom; i++) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, n->from_node[i]);
        lua_setfield(L, -2, "name");
        const fx_node *src = raw ? fx_graph_find(raw, n->from_node[i]) : NULL;
        if (src && src->target) {
            lua_pushstring(L, src->target);
            lua_setfield(L, -2, "target");
        }
        lua_createtable(L, 0, 1);
        lua_pushcfunction(L, name_tostring);
        lua_setfield(L, -2, "__tostring");
        lua_setmetatable(L, -2);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "from_node");
    if (n->mutation) {
        const fx_mutation *m = n->mutation;
        lua_createtable(L, 0, 5);
        if (m->state) lua_pushstring(L, m->state), lua_setfield(L, -2, "state");
        lua_pushinteger(L, m->version);
        lua_setfield(L, -2, "version");
        if (m->from_op) lua_pushstring(L, m->from_op), lua_setfield(L, -2, "from_op");
        if (m->view_path) lua_pushstring(L, m->view_path), lua_setfield(L, -2, "view_path");
        if (m->raw_node) lua_pushstring(L, m->raw_node), lua_setfield(L, -2, "raw_node");
        lua_setfield(L, -2, "mutation");
    }
}

static int node_index(lua_State *L) {
    fx_node *n = lx_check_node(L, 1);
    const char *k = lx_checkstring(L, 2);
    lua_getiuservalue(L, 1, 1); /* [node, k, graph] */
    int gidx = lua_gettop(L);
    if (!strcmp(k, "name"))
        lua_pushstring(L, n->name);
    else if (!strcmp(k, "op"))
        lua_pushstring(L, fx_node_op_name(n->op));
    else if (!strcmp(k, "target"))
        lua_pushstring(L, n->target ? n->target : "");
    else if (!strcmp(k, "args")) {
        lua_createtable(L, n->nargs, 0);
        for (int i = 0; i < n->nargs; i++) {
            push_arg(L, &n->args[i], gidx);
            lua_rawseti(L, -2, i + 1);
        }
    } else if (!strcmp(k, "users")) {
        lua_createtable(L, n->nusers, 0);
        for (int i = 0; i < n->nusers; i++) {
            lx_push_node(L, n->users[i], gidx);
            lua_rawseti(L, -2, i + 1);
        }
    } else if (!strcmp(k, "meta"))
        push_meta(L, n, gidx);
    else if (!strcmp(k, "graph"))
        lua_pushvalue(L, gidx);
    else if (!strcmp(k, "subgraph")) {
        /* the body graph a higher-order op's get_attr node holds (owned by the node's graph,
         * which the returned Graph keeps alive), or nil */
        if (n->subgraph) lx_push_graph(L, n->subgraph, gidx);
        else lua_pushnil(L);
    } else if (!strcmp(k, "next"))
        lx_push_node(L, n->next, gidx);
    else if (!strcmp(k, "prev"))
        lx_push_node(L, n->prev, gidx);
    else if (!strcmp(k, "type")) {
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_node_format_type(&sb, n);
        push_strbuf(L, &sb);
    } else if (!strcmp(k, "is_view"))
        lua_pushboolean(L, n->aten && fx_op_is_view(n->aten));
    else if (!strcmp(k, "is_inplace"))
        lua_pushboolean(L, n->aten && fx_op_is_inplace(n->aten));
    else
        lua_pushnil(L);
    return 1;
}

/* tostring(node): the multi-line description behind `:node %N`.  [-0, +1, e] */
static int node_tostring(lua_State *L) {
    fx_node *n = lx_check_node(L, 1);
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_strbuf_appendf(&sb, "%%%s : %s", n->name, fx_node_op_name(n->op));
    if (n->op == FX_NODE_CALL_FUNCTION || n->op == FX_NODE_GET_ATTR)
        fx_strbuf_appendf(&sb, "[target=%s]", n->target ? n->target : "?");
    fx_strbuf_append(&sb, "\n  args: (");
    for (int i = 0; i < n->nargs; i++) {
        if (i) fx_strbuf_append(&sb, ", ");
        if (n->aten && i < n->aten->schema.nargs)
            fx_strbuf_appendf(&sb, "%s=", n->aten->schema.args[i].name);
        fx_ivalue_format(&sb, &n->args[i], true);
    }
    fx_strbuf_append(&sb, ")\n  users: [");
    for (int i = 0; i < n->nusers; i++)
        fx_strbuf_appendf(&sb, "%s%%%s", i ? ", " : "", n->users[i]->name);
    fx_strbuf_append(&sb, "]");
    fx_strbuf tsb = FX_STRBUF_INIT;
    fx_node_format_type(&tsb, n);
    if (fx_strbuf_cstr(&tsb)[0]) fx_strbuf_appendf(&sb, "\n  val: %s", fx_strbuf_cstr(&tsb));
    fx_strbuf_free(&tsb);
    if (n->nstack > 0) {
        fx_strbuf_append(&sb, "\n  stack_trace: ");
        format_stack(&sb, n);
    }
    if (n->nmodules > 0) {
        fx_strbuf_append(&sb, "\n  nn_module_stack:");
        for (int i = 0; i < n->nmodules; i++)
            fx_strbuf_appendf(
                &sb, " %s (%s)%s",
                n->modules[i].path && n->modules[i].path[0] ? n->modules[i].path : "<root>",
                n->modules[i].cls ? n->modules[i].cls : "?", i + 1 < n->nmodules ? "," : "");
    }
    if (n->nfrom > 0) {
        fx_strbuf_append(&sb, "\n  from_node: ");
        for (int i = 0; i < n->nfrom; i++)
            fx_strbuf_appendf(&sb, "%s%%%s", i ? ", " : "", n->from_node[i]);
    }
    if (n->mutation) {
        const fx_mutation *m = n->mutation;
        fx_strbuf_appendf(&sb, "\n  mutation: %s v%d from %s", m->state ? m->state : "?",
                          m->version, m->from_op ? m->from_op : "?");
        if (m->view_path) fx_strbuf_appendf(&sb, " through %s", m->view_path);
        if (m->raw_node) fx_strbuf_appendf(&sb, " (raw %%%s)", m->raw_node);
    }
    return push_strbuf(L, &sb);
}

/* ==== opening ================================================================================ */

void lx_open_graph(lua_State *L) {
    lua_newtable(L); /* [cache] */
    lua_createtable(L, 0, 1);
    lua_pushstring(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, LX_NODE_CACHE); /* [] */

    luaL_newmetatable(L, LX_GRAPH); /* [mt] */
    lua_pushstring(L, "Graph");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, graph_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, graph_gc);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, graph_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, graph_len);
    lua_setfield(L, -2, "__len");
    luaL_newlib(L, graph_methods); /* [mt, methods] */
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__methods");
    lua_pushcclosure(L, graph_index, 1); /* [mt, __index] */
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1); /* [] */

    luaL_newmetatable(L, LX_NODE); /* [mt] */
    lua_pushstring(L, "Node");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, node_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, node_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
}
