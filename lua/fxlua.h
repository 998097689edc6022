/* lua/fxlua.h — the Lua binding's public face: the only lua/ header repl/ includes.
 * Layer: lua. Everything else in lua/ is static. Stack effects are written as in the Lua manual:
 * [-o, +p, x] = pops o, pushes p, x = may raise ('-' no, 'e' yes). */
#ifndef FXLUA_H
#define FXLUA_H

#include <stdbool.h>

#include <lua.h>

#include "core/fx.h"

/* Opens the standard libraries' companions of fxdb: globals `torch`, `nn`, `fxdb`, metatables
 * of every fxdb userdata, and the embedded Lua library (nn.lua, torch.lua).  [-0, +0, e] */
int fxlua_openlibs(lua_State *L);

/* Pushes t as a Tensor userdata (retains t).  [-0, +1, e] */
void fxlua_push_tensor(lua_State *L, fx_tensor *t);
/* The tensor at idx, or raises "bad argument #idx to 'f' (Tensor expected, got X)". Borrowed.
 * [-0, +0, e] */
fx_tensor *fxlua_check_tensor(lua_State *L, int idx);
/* The graph at idx (a Graph userdata, or an ExportedProgram / GraphModule, whose graph is taken),
 * or raises. Borrowed: valid while the value at idx lives. [-0, +0, e] */
const fx_graph *fxlua_check_graph(lua_State *L, int idx);
/* The ExportedProgram at idx, or NULL when it is not one.  [-0, +0, -] */
const fx_program *fxlua_to_program(lua_State *L, int idx);
/* The ExportedProgram at idx, or raises.  [-0, +0, e] */
const fx_program *fxlua_check_program(lua_State *L, int idx);
/* The Provenance at idx (made by fxdb.provenance), or NULL when it is not one. Borrowed.
 * [-0, +0, -] */
const fx_provenance *fxlua_to_provenance(lua_State *L, int idx);
/* Raises err as an fxdb error object: fields kind, location, node, hint, message, and a
 * __tostring giving the message. Never returns.  [-0, +0, e] */
int fxlua_error(lua_State *L, const fx_err *err);
/* Registers a C function as fxdb.<name> (used by repl/render_bind.c for fxdb.render).
 * [-0, +0, e] */
void fxlua_register(lua_State *L, const char *name, lua_CFunction fn);

/* Interrupt support for the REPL's SIGINT hook: makes the running Lua code raise
 * "interrupted!" at its next instruction hook, whatever coroutine runs.  Signal-safe. */
void fxlua_interrupt(lua_State *L);
/* True while a debugger session (trace or run) is open: the REPL's second Ctrl-C then does not
 * end the process. Signal-safe (one volatile load). */
bool fxlua_session_open(void);

#endif
