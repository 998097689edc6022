/* repl/call.h — calling Lua as lua.c does: a traceback message handler, the Ctrl-C hook armed,
 * errors printed as error blocks, results printed with `print` (call.c).
 * Layer: repl; private to the program. Above term.h and sigint.h; below everything that runs
 * user code (commands.c, repl.c, main.c). */
#ifndef FXDB_REPL_CALL_H
#define FXDB_REPL_CALL_H

#include <lua.h>

#define FXDB_CHUNKNAME "=stdin"      /* chunk name of REPL lines, as lua.c names them */

/* Calls the function below `narg` arguments on the stack under lua_pcall with the traceback
 * message handler and the Ctrl-C hook armed. Returns the lua_pcall status; on error the error
 * value (a string with traceback, or an fxdb error object) is left on the stack, as lua.c's
 * docall does.  [-(narg+1), +(nres|1), -] */
int call_docall(lua_State *L, int narg, int nres);

/* When status is not LUA_OK, prints the error value at the top of the stack as an error block on
 * stderr (term.c) and pops it. Returns status.  [-(0|1), +0, -] */
int call_report(lua_State *L, int status);

/* Prints the n values at the top of the stack with the global `print` (tostring of each value,
 * tab-separated) and pops them; a failing print is reported, never raised. n may be 0.
 * [-n, +0, -] */
void call_print_values(lua_State *L, int n);

#endif
