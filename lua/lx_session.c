/* lua/lx_session.c — the C side of debugger trace sessions: pausing the traced coroutine.
 * Layer: lua. lua/session.lua drives a session (breakpoints, stepping, banners); this file gives it
 * the pieces that must run inside the coroutine, where Lua code cannot:
 *
 *   fxdb._session_hook()        -> SessionHook h (one per trace session; the tracer holds it, see
 *                                  tr:attach in lx_export.c)
 *   h:take(raw_graph)           -> {Node | integer...} recorded since the last take, in order: a
 *                                  node, or the 1-based number of a guard the shape environment
 *                                  recorded (core/symint.h; `:break guard`) before the next node
 *   h:status()                  -> {interrupted, datadep, returned = {n = k, ...}} since the last
 *                                  status (each field only when it happened), then cleared
 *   h:finish_at(depth)          -> pause when a module call returns and nn._module_stack is shorter
 *                                  than depth (0: off)
 *   fxdb._partial_functional(tracer[, lift_mutated_constants])
 *                               -> Graph: the functional graph of the trace so far (a clone of the
 *                                  raw graph with an output node over its leaves, functionalized)
 *   fxdb._node_frames(node)     -> {{file, line, func, code}...} innermost first
 *   fxdb._node_schema(node)     -> {mutated = i, view = i, qualname = s} (1-based arg indices)
 *   fxdb._storage_id(t)         -> integer id of t's storage (aliasing shows as equal ids)
 *   fxdb._graph_clone(g)        -> Graph (owned deep copy: outlives the tracer or program of g)
 *   fxdb._interp(ep_or_graph, {inputs}) -> Interp it (run sessions: every value kept)
 *   it:step() -> node, done     it:next_node() -> node|nil     it:value(node) -> value|nil
 *   it:set(node, value)         it:outputs() -> {values}       it:count() -> nodes run
 *
 * How a pause works. A C function may only yield as its return, and an op can be dispatched deep
 * inside one (x[{0, 1}] = v dispatches three ops from one __newindex). So nothing yields where
 * the op is recorded: the tracer's step callback (lx_session_on_node) appends the node to the
 * session's queue and arms a count hook on the coroutine; the hook runs at the next Lua
 * instruction the coroutine executes, which is after the C function (or metamethod) returned,
 * and yields there with no values (Lua 5.4 lets count hooks yield). The driver resumes and
 * yields back with the whole queue, and decides in Lua which queued node is a stop. The same hook,
 * with a return mask, notices the end of a module call for :finish (nn.lua's module_call,
 * registry "fxdb.module_call", returning below a depth), copying its returned values. Ctrl-C in a
 * session coroutine pauses it the same way (lx_session_interrupt, called by lx_open.c's interrupt
 * hook) instead of raising "interrupted!".
 *
 * Where a pause lands. A hook yield leaves the frame reporting the instruction executed last, so
 * a yield at the first instruction after the op's call would show the frame before the statement
 * finished: `local h = x:mean(0)` would not have `h` yet, `x = x:type(...)` the old x. So the
 * hook waits for the op's statement to end: it yields once the op's frame has run an instruction
 * of another line, or has returned, or as soon as another node is recorded (a statement that
 * records several ops, a one-line loop) or a module call returns for :finish. The stop itself
 * is the recorded node; the frame just shows the state right after its statement.
 *
 * File order (lua/lx_impl.h): above lx_export.c and lx_tensor.c, which call the session's entry
 * points (the tracer's step / guard / bind callbacks, item()'s data-dependent pause) through
 * lx_session_hook; lx_open_session fills that table. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/lx_impl.h"
#include "lua/lx_open.h"

#define LX_SESSHOOK "fxdb.SessionHook"
#define LX_SESSRET "fxdb.sessret" /* registry: {[lightuserdata sess] = returned values} */

/* One queued event: a node (owned by the graph), or guard number `guard` when n is NULL. */
typedef struct lx_step {
    fx_node *n;
    int guard;      /* 0-based index in the shape environment's guards ... */
    bool is_assert; /* ... or in its runtime asserts (torch._check) */
} lx_step;

struct lx_sess {
    lua_State *co;      /* the traced coroutine while it runs bound (borrowed), else NULL */
    lx_step *steps;     /* (nsteps,) nodes and guards recorded since the last take */
    int nsteps, cap;    /* used / allocated entries of steps */
    bool want_stop;     /* a pause is wanted (see "Where a pause lands" below) */
    bool urgent;        /* pause at the next instruction (a second node while waiting, :finish) */
    int op_depth;       /* stack depth of the Lua frame that recorded the first waiting node */
    int op_line;        /* its current line then; -1 when unknown */
    int seen_line;      /* line about to run at the previous count event, when that event was in
                           the op's frame; -1 otherwise */
    int finish_depth;   /* > 0: a module call that returns below this depth pauses */
    bool call_returned; /* a module call returned below finish_depth since the last status */
    bool interrupted;   /* Ctrl-C paused the coroutine since the last status */
    char datadep[64];   /* the data-dependent read that paused it ("item()"), or "" */
};

/* ==== the hook ==================================================================================
 */

static void sess_hook(lua_State *L, lua_Debug *ar);

/* Sets the running coroutine's hook from the session's wishes: a count hook every instruction
 * when a pause is wanted, else every SESS_IDLE_COUNT instructions (idle); return events always
 * (sess_hook ignores them unless :finish watches module calls). Leaves another hook alone (the
 * interrupt hook must not be lost). Never raises.
 *
 * Two rules keep Lua 5.4.4's hook yields sound. A coroutine suspended in a hook yield must not get
 * lua_sethook before it runs again, and its hook must never be removed: either makes later hook
 * yields save a wrong pc (currentline becomes the function's first line, locals vanish from
 * debug.getlocal). So the hook is only changed while the coroutine runs (from the step callback
 * or from the hook itself, before yielding) and is never removed, only made idle; the return
 * mask is always on because it could not be added at a resume. */
#define SESS_IDLE_COUNT (1 << 30)
static void sess_arm(lx_sess *s) {
    if (!s->co || lua_status(s->co) == LUA_YIELD) return;
    lua_Hook cur = lua_gethook(s->co);
    if (cur != NULL && cur != sess_hook) return;
    lua_sethook(s->co, sess_hook, LUA_MASKCOUNT | LUA_MASKRET, s->want_stop ? 1 : SESS_IDLE_COUNT);
}

/* Length of nn._module_stack, read raw (cannot raise); -1 when absent. */
static int module_depth(lua_State *L) {
    int top = lua_gettop(L), depth = -1;
    lua_pushglobaltable(L); /* [G] */
    lua_pushliteral(L, "nn");
    if (lua_rawget(L, -2) == LUA_TTABLE) { /* [G, nn] */
        lua_pushliteral(L, "_module_stack");
        if (lua_rawget(L, -2) == LUA_TTABLE) depth = (int)lua_rawlen(L, -1); /* [G, nn, st] */
    }
    lua_settop(L, top);
    return depth;
}

/* A return event: when the function returning is nn.lua's module call and the module stack fell
 * below finish_depth, copies the returned values to registry[LX_SESSRET][s] and asks to pause. */
/* Number of active frames of L (lua_getstack levels). */
static int stack_depth(lua_State *L) {
    lua_Debug ar;
    int d = 0;
    while (lua_getstack(L, d, &ar)) d++;
    return d;
}

static void check_return(lua_State *L, lua_Debug *ar, lx_sess *s) {
    if (!lua_checkstack(L, 8)) return;
    int top = lua_gettop(L);
    if (!lua_getinfo(L, "fr", ar)) return;                  /* [f] */
    lua_getfield(L, LUA_REGISTRYINDEX, "fxdb.module_call"); /* [f, callfn] */
    bool is_call = lua_rawequal(L, -1, -2);
    lua_settop(L, top);
    if (!is_call) return;
    int depth = module_depth(L);
    if (depth < 0 || depth >= s->finish_depth) return;
    lua_getfield(L, LUA_REGISTRYINDEX, LX_SESSRET); /* [ret] */
    lua_createtable(L, ar->ntransfer, 1);           /* [ret, vals] */
    for (int i = 0; i < ar->ntransfer; i++) {
        if (!lua_getlocal(L, ar, ar->ftransfer + i)) lua_pushnil(L);
        lua_rawseti(L, -2, i + 1);
    }
    lua_pushinteger(L, ar->ntransfer);
    lua_setfield(L, -2, "n");
    lua_rawsetp(L, -2, s); /* [ret] */
    lua_settop(L, top);
    s->finish_depth = 0;
    s->call_returned = true;
    s->want_stop = true;
    s->urgent = true;
    sess_arm(s);
}

static void sess_hook(lua_State *L, lua_Debug *ar) {
    lx_sess *s = lx_current(L)->sess;
    if (!s) {
        lua_sethook(L, NULL, 0, 0);
        return;
    }
    if (ar->event == LUA_HOOKRET) {
        if (s->finish_depth > 0) check_return(L, ar, s);
        return;
    }
    if (ar->event != LUA_HOOKCOUNT || !s->want_stop) return;
    int depth = stack_depth(L);
    if (!lua_getinfo(L, "l", ar)) return;
    bool go = s->urgent || s->op_line < 0 || depth < s->op_depth ||
              (s->seen_line >= 0 && s->seen_line != s->op_line);
    s->seen_line = depth == s->op_depth ? ar->currentline : -1;
    if (go && lua_isyieldable(L)) {
        s->want_stop = s->urgent = false;
        sess_arm(s);
        lua_yield(L, 0); /* a hook yields by ending with lua_yield(L, 0) */
        return;
    }
}

/* ==== entry points for the other lua/ files (lx_session_hook, lx_open.c) ===================== */

static lx_sess *lx_session_check(lua_State *L, int idx) {
    return lx_checkudata(L, idx, LX_SESSHOOK);
}

static void lx_session_bound(lx_sess *s, lua_State *co) {
    s->co = co; /* an unbound coroutine keeps its idle hook (see sess_arm) */
    sess_arm(s);
}

/* Remembers the Lua frame of the running coroutine that is recording a node (the innermost Lua
 * function: the C binding that dispatched is above it), for "Where a pause lands". */
static void note_op_frame(lx_sess *s) {
    lua_State *co = s->co;
    s->op_line = -1;
    s->seen_line = -1;
    if (!co) return;
    int total = stack_depth(co);
    lua_Debug ar;
    for (int level = 0; lua_getstack(co, level, &ar); level++) {
        if (!lua_getinfo(co, "Sl", &ar)) break;
        if (ar.what[0] != 'C') {
            s->op_depth = total - level;
            s->op_line = ar.currentline;
            return;
        }
    }
}

/* A node (or a data-dependent read) asks for a pause: the first one notes where it happened, a
 * later one while still waiting makes the pause urgent. */
static void want_pause(lx_sess *s) {
    if (s->want_stop) {
        s->urgent = true;
    } else {
        s->want_stop = true;
        s->urgent = false;
        note_op_frame(s);
    }
    sess_arm(s);
}

static bool push_step(lx_sess *s, fx_node *n, int guard, bool is_assert) {
    if (s->nsteps == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        lx_step *ns = fx_realloc(s->steps, sizeof *ns * (size_t)cap);
        if (!ns) return false;
        s->steps = ns;
        s->cap = cap;
    }
    s->steps[s->nsteps++] = (lx_step){n, guard, is_assert};
    want_pause(s);
    return true;
}

static int lx_session_on_node(lx_sess *s, fx_node *n, fx_err *err) {
    if (!push_step(s, n, 0, false))
        return fx_err_setf(err, FX_ENOMEM, "out of memory recording a debugger step");
    return FX_OK;
}

static void lx_session_on_guard(lx_sess *s, int index, bool is_assert) {
    /* out of memory only loses the stop at this guard; :guards still lists it */
    (void)push_step(s, NULL, index, is_assert);
}

static void lx_session_datadep(lua_State *L, const char *what) {
    lx_sess *s = lx_current(L)->sess;
    if (!s) return;
    snprintf(s->datadep, sizeof s->datadep, "%s", what);
    want_pause(s);
}

int lx_session_interrupt(lua_State *L, lua_Debug *ar) {
    lx_sess *s = lx_current(L)->sess;
    if (!s) return LX_INTR_RAISE;
    if (ar->event != LUA_HOOKCOUNT || !lua_isyieldable(L)) return LX_INTR_LATER;
    s->interrupted = true;
    s->want_stop = s->urgent = false;
    sess_arm(s); /* the interrupt hook removed itself: the idle session hook goes back first */
    /* the signal armed the main thread too: this pause is the interruption, so disarm it */
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    lua_State *main = lua_tothread(L, -1);
    lua_pop(L, 1);
    if (main && main != L) lua_sethook(main, NULL, 0, 0);
    return LX_INTR_PAUSE;
}

/* ==== SessionHook methods =======================================================================
 */

static int sess_gc(lua_State *L) {
    lx_sess *s = lx_checkudata(L, 1, LX_SESSHOOK);
    fx_free(s->steps);
    s->steps = NULL;
    s->nsteps = s->cap = 0;
    if (lua_getfield(L, LUA_REGISTRYINDEX, LX_SESSRET) == LUA_TTABLE) { /* [h, ret] */
        lua_pushnil(L);
        lua_rawsetp(L, -2, s);
    }
    lua_pop(L, 1);
    return 0;
}

/* fxdb._session_hook() -> SessionHook.  [-0, +1, e] */
static int l_session_hook(lua_State *L) {
    lx_sess *s = lua_newuserdatauv(L, sizeof *s, 0); /* [h] */
    memset(s, 0, sizeof *s);
    luaL_setmetatable(L, LX_SESSHOOK);
    return 1;
}

/* h:take(graph) -> list of the nodes recorded since the last take (Node userdata owned by the
 * Graph at index 2, which must be the graph they were recorded into), with the 1-based number of
 * each guard recorded in between (an integer) where it happened, negated for a runtime assert
 * (torch._check).  [-0, +1, e] */
static int sess_take(lua_State *L) {
    lx_sess *s = lx_session_check(L, 1);
    lx_check_graph(L, 2);
    lua_createtable(L, s->nsteps, 0); /* [h, g, list] */
    for (int i = 0; i < s->nsteps; i++) {
        if (s->steps[i].n)
            lx_push_node(L, s->steps[i].n, 2);
        else
            lua_pushinteger(L, s->steps[i].is_assert ? -(s->steps[i].guard + 1)
                                                     : s->steps[i].guard + 1);
        lua_rawseti(L, -2, i + 1);
    }
    s->nsteps = 0;
    return 1;
}

/* h:status() -> {interrupted = true, datadep = "item()", returned = {n = k, ...}}, each field only
 * when it happened since the last call; clears them.  [-0, +1, e] */
static int sess_status(lua_State *L) {
    lx_sess *s = lx_session_check(L, 1);
    lua_createtable(L, 0, 3); /* [h, st] */
    if (s->interrupted) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "interrupted");
    }
    if (s->datadep[0]) {
        lua_pushstring(L, s->datadep);
        lua_setfield(L, -2, "datadep");
    }
    if (s->call_returned) {
        lua_getfield(L, LUA_REGISTRYINDEX, LX_SESSRET); /* [h, st, ret] */
        lua_rawgetp(L, -1, s);                          /* [h, st, ret, vals] */
        lua_setfield(L, -3, "returned");
        lua_pushnil(L);
        lua_rawsetp(L, -2, s);
        lua_pop(L, 1);
    }
    s->interrupted = false;
    s->datadep[0] = 0;
    s->call_returned = false;
    return 1;
}

/* h:clear(): forgets the queued nodes (their graph may be gone).  [-0, +0, e] */
static int sess_clear(lua_State *L) {
    lx_session_check(L, 1)->nsteps = 0;
    return 0;
}

/* h:finish_at(depth): pause when a module call returns with nn._module_stack shorter than depth;
 * 0 turns it off.  [-0, +0, e] */
static int sess_finish_at(lua_State *L) {
    lx_sess *s = lx_session_check(L, 1);
    lua_Integer d = lx_checkinteger(L, 2);
    s->finish_depth = d > 0 ? (int)d : 0;
    sess_arm(s);
    return 0;
}

/* ==== partial functionalization =================================================================
 */

/* A value the trace has produced and not consumed yet: a tensor-valued call_function node without
 * users that is not a write (writes show up as mutation outputs of their base). */
static bool is_leaf(const fx_node *x) {
    return x->op == FX_NODE_CALL_FUNCTION && x->nusers == 0 && x->val.tag == FX_IV_TENSOR &&
           !(x->aten && fx_op_is_inplace(x->aten)) && strcmp(x->target, "fxdb.assign_buffer") != 0;
}

/* Fills list (made here) with a node reference for every leaf of g, in order. */
static int leaf_outputs(fx_graph *g, fx_ivalue *list, fx_err *err) {
    int n = 0;
    for (fx_node *x = fx_graph_first(g); x; x = x->next)
        if (is_leaf(x)) n++;
    int rc = fx_iv_list(n, list, err);
    int k = 0;
    for (fx_node *x = fx_graph_first(g); !rc && x; x = x->next)
        if (is_leaf(x)) list->u.list.items[k++] = fx_iv_node(x);
    return rc;
}

/* fxdb._partial_functional(tracer[, lift]) -> Graph (owned): the raw graph recorded so far,
 * cloned, given an output node over its leaves (when it has none yet), functionalized and cleaned
 * by dce — "functional up to here". Errors of functionalization are raised as export errors.
 * [-0, +1, e] */
static int l_partial_functional(lua_State *L) {
    fx_tracer *tr = lx_check_tracer(L, 1);
    bool lift = lua_toboolean(L, 2);
    fx_err err;
    fx_err_clear(&err);
    fx_graph *g = fx_graph_clone(fx_tracer_graph(tr), &err);
    if (!g) return lx_error(L, &err);
    lx_push_graph(L, g, 0); /* [.., clone] owns g */
    if (!fx_graph_output_node(g)) {
        fx_ivalue *outs = lx_ivbox_new(L, 1); /* [.., clone, box] */
        if (leaf_outputs(g, &outs[0], &err)) return lx_error(L, &err);
        if (!fx_graph_output(g, &outs[0], &err)) return lx_error(L, &err);
        lua_pop(L, 1);
    }
    int ninfos = 0;
    const fx_input_info *in = fx_tracer_inputs(tr, &ninfos);
    fx_input_info *map = lua_newuserdatauv(L, sizeof *map * (size_t)(ninfos + 1), 0);
    for (int i = 0; i < ninfos; i++) {
        map[i] = in[i];
        map[i].node = in[i].node ? fx_graph_find(g, in[i].node->name) : NULL;
    }
    fx_functionalize_result res = {0};
    if (fx_functionalize(g, map, ninfos, lift, &res, &err)) return lx_error(L, &err);
    fx_free(res.mutated);
    int removed = 0;
    if (fx_pass_dce(res.graph, &removed, &err)) {
        fx_graph_free(res.graph);
        return lx_error(L, &err);
    }
    lx_push_graph(L, res.graph, 0);
    return 1;
}

/* ==== node and tensor helpers ===================================================================
 */

/* fxdb._node_frames(node) -> {{file =, line =, func =, code =}...}, innermost first. */
static int l_node_frames(lua_State *L) {
    fx_node *n = lx_check_node(L, 1);
    lua_createtable(L, n->nstack, 0);
    for (int i = 0; i < n->nstack; i++) {
        const fx_frame *f = &n->stack[i];
        lua_createtable(L, 0, 4);
        lua_pushstring(L, f->file ? f->file : "?");
        lua_setfield(L, -2, "file");
        lua_pushinteger(L, f->line);
        lua_setfield(L, -2, "line");
        lua_pushstring(L, f->func ? f->func : "?");
        lua_setfield(L, -2, "func");
        lua_pushstring(L, f->code ? f->code : "");
        lua_setfield(L, -2, "code");
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* fxdb._node_schema(node) -> {mutated = i, view = i, qualname = "add_.Tensor"} for ATen nodes
 * (argument indices 1-based, absent when the op neither writes nor views), {} otherwise. */
static int l_node_schema(lua_State *L) {
    fx_node *n = lx_check_node(L, 1);
    lua_createtable(L, 0, 3);
    if (!n->aten) return 1;
    const fx_schema *s = &n->aten->schema;
    if (s->mutated_arg >= 0) {
        lua_pushinteger(L, s->mutated_arg + 1);
        lua_setfield(L, -2, "mutated");
    }
    if (s->view_arg >= 0 && fx_op_is_view(n->aten)) {
        lua_pushinteger(L, s->view_arg + 1);
        lua_setfield(L, -2, "view");
    }
    lua_pushstring(L, fx_op_qualname(n->aten));
    lua_setfield(L, -2, "qualname");
    return 1;
}

/* fxdb._storage_id(t) -> integer. */
static int l_storage_id(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    lua_pushinteger(L, (lua_Integer)fx_storage_id(fx_tensor_storage(t)));
    return 1;
}

/* fxdb._graph_clone(g) -> Graph owning a deep copy of g.  [-0, +1, e] */
static int l_graph_clone(lua_State *L) {
    const fx_graph *g = fxlua_check_graph(L, 1);
    fx_err err;
    fx_err_clear(&err);
    fx_graph *c = fx_graph_clone(g, &err);
    if (!c) return lx_error(L, &err);
    lx_push_graph(L, c, 0);
    return 1;
}

/* ==== Interp: a graph run node by node (run sessions) ============================================
 */

#define LX_INTERP "fxdb.Interp"

/* User value 1: the Graph userdata the nodes belong to (keeps the graph and its owner alive). */
typedef struct lx_interp {
    fx_interp *it; /* owned; NULL after __gc */
    int count;     /* nodes run so far */
} lx_interp;

static lx_interp *check_interp(lua_State *L, int idx) {
    lx_interp *b = lx_checkudata(L, idx, LX_INTERP);
    if (!b->it) lx_errorf(L, FX_EARG, NULL, "attempt to use a freed Interp");
    return b;
}

static int interp_gc(lua_State *L) {
    lx_interp *b = lx_checkudata(L, 1, LX_INTERP);
    fx_interp_free(b->it);
    b->it = NULL;
    return 0;
}

/* fxdb._interp(ep_or_graph, inputs) -> Interp. For an ExportedProgram, `inputs` are the user
 * inputs and the state comes from the program (as fxdb._run); for a Graph, one per placeholder.
 * Values are kept (keep_values) so every node can be printed afterwards.  [-0, +1, e] */
static int l_interp(lua_State *L) {
    const fx_program *p = fxlua_to_program(L, 1);
    lx_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    lua_getfield(L, 1, "graph"); /* [ep|g, inputs, g?] */
    if (!luaL_testudata(L, 3, LX_GRAPH)) {
        lua_settop(L, 2);
        lua_pushvalue(L, 1); /* a Graph itself */
    }
    const fx_graph *g = lx_check_graph(L, 3);
    int k;
    fx_ivalue *in = lx_program_inputs(L, p, 2, &k); /* [.., g, box] */
    lx_interp *b = lua_newuserdatauv(L, sizeof *b, 1); /* [.., g, box, it] */
    b->it = NULL;
    b->count = 0;
    luaL_setmetatable(L, LX_INTERP);
    lua_pushvalue(L, 3);
    lua_setiuservalue(L, -2, 1);
    fx_interp_opts o = {0};
    o.keep_values = true;
    fx_err err;
    fx_err_clear(&err);
    if (fx_interp_new(g, in, k, &o, &b->it, &err)) return lx_error(L, &err);
    return 1;
}

/* The node n of the interp's graph as a Node userdata.  [-0, +1, e] */
static void push_interp_node(lua_State *L, int it_idx, fx_node *n) {
    lua_getiuservalue(L, it_idx, 1); /* [.., g] */
    lx_push_node(L, n, -1);          /* [.., g, node] */
    lua_remove(L, -2);
}

/* it:step() -> node just run, done. Raises the node's error (err.node names it).  [-0, +2, e] */
static int interp_step(lua_State *L) {
    lx_interp *b = check_interp(L, 1);
    fx_node *n = fx_interp_next_node(b->it);
    bool done = false;
    fx_err err;
    fx_err_clear(&err);
    if (n && fx_interp_step(b->it, &done, &err)) return lx_error(L, &err);
    if (n) b->count++;
    if (n)
        push_interp_node(L, 1, n);
    else
        lua_pushnil(L);
    lua_pushboolean(L, fx_interp_next_node(b->it) == NULL);
    return 2;
}

static int interp_next_node(lua_State *L) {
    lx_interp *b = check_interp(L, 1);
    fx_node *n = fx_interp_next_node(b->it);
    if (!n) return 0;
    push_interp_node(L, 1, n);
    return 1;
}

/* it:value(node) -> the node's value (kept), or nothing when not computed.  [-0, +(0|1), e] */
static int interp_value(lua_State *L) {
    lx_interp *b = check_interp(L, 1);
    const fx_ivalue *v = fx_interp_value(b->it, lx_check_node(L, 2));
    if (!v) return 0;
    lx_push_ivalue(L, v);
    return 1;
}

/* it:set(node, value): replaces the node's value (partial evaluation).  [-0, +0, e] */
static int interp_set(lua_State *L) {
    lx_interp *b = check_interp(L, 1);
    fx_node *n = lx_check_node(L, 2);
    fx_ivalue *v = lx_ivbox_new(L, 1);
    lx_to_ivalue(L, 3, &v[0]);
    fx_err err;
    fx_err_clear(&err);
    if (fx_interp_set_value(b->it, n, &v[0], &err)) return lx_error(L, &err);
    return 0;
}

/* it:outputs() -> {values} once the output node has run, else nil.  [-0, +1, e] */
static int interp_outputs(lua_State *L) {
    lx_interp *b = check_interp(L, 1);
    int n = 0;
    const fx_ivalue *v = fx_interp_outputs(b->it, &n);
    if (!v) return 0;
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lx_push_ivalue(L, &v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int interp_count(lua_State *L) {
    lua_pushinteger(L, check_interp(L, 1)->count);
    return 1;
}

static const luaL_Reg interp_methods[] = {
    {"step", interp_step}, {"next_node", interp_next_node}, {"value", interp_value},
    {"set", interp_set},   {"outputs", interp_outputs},     {"count", interp_count},
    {NULL, NULL},
};

/* ==== opening ===================================================================================
 */

static const luaL_Reg sess_methods[] = {
    {"take", sess_take},
    {"status", sess_status},
    {"finish_at", sess_finish_at},
    {"clear", sess_clear},
    {NULL, NULL},
};

static const luaL_Reg session_funcs[] = {
    {"_session_hook", l_session_hook},
    {"_partial_functional", l_partial_functional},
    {"_node_frames", l_node_frames},
    {"_node_schema", l_node_schema},
    {"_storage_id", l_storage_id},
    {"_graph_clone", l_graph_clone},
    {"_interp", l_interp},
    {NULL, NULL},
};

static void set_hooks(void) {
    lx_session_hook = (lx_session_hooks){
        .check = lx_session_check,
        .bound = lx_session_bound,
        .on_node = lx_session_on_node,
        .on_guard = lx_session_on_guard,
        .datadep = lx_session_datadep,
    };
}

void lx_open_session(lua_State *L) {
    static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
    pthread_once(&hooks_once, set_hooks); /* lx_session_hook: see lua/lx_impl.h */
    luaL_newmetatable(L, LX_SESSHOOK);    /* [mt] */
    lua_pushliteral(L, "SessionHook");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, sess_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, sess_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_newmetatable(L, LX_INTERP); /* [mt] */
    lua_pushliteral(L, "Interp");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, interp_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, interp_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LX_SESSRET);
    if (lua_getglobal(L, "fxdb") != LUA_TTABLE) { /* [fxdb?] */
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setglobal(L, "fxdb");
    }
    luaL_setfuncs(L, session_funcs, 0);
    lua_pop(L, 1);
}
