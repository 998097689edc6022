/* repl/call.c — calling Lua as lua.c does: the message handler that appends a traceback, the
 * Ctrl-C hook armed around the call, errors printed as error blocks, results printed with the
 * global `print`.
 * Layer: repl. Includes call.h, term.h, sigint.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "repl/call.h"
#include "repl/sigint.h"
#include "repl/term.h"

#define EMBEDDED_PREFIX "=[fxdb "   /* chunk names of the Lua library lua/ embeds */

/* ======================================================================================== */
/* calling Lua                                                                                */
/* ======================================================================================== */

/* True when some frame of L's stack from `level` up runs the user's Lua code: not a C function
 * and not fxdb's embedded Lua library (chunks named EMBEDDED_PREFIX "name]" by lua/). */
static bool has_user_frame(lua_State *L, int level) {
    lua_Debug ar;
    for (; lua_getstack(L, level, &ar); level++) {
        if (lua_getinfo(L, "S", &ar) && ar.what[0] != 'C'
            && strncmp(ar.source, EMBEDDED_PREFIX, sizeof(EMBEDDED_PREFIX) - 1) != 0)
            return true;
    }
    return false;
}

/* Message handler of every call: appends a traceback to a string error (lua.c's msghandler),
 * unless no frame runs the user's code (a colon command calling fxdb.* directly: a traceback of
 * "[C]: in ?" and library lines tells nothing); an error object (table or userdata) is returned
 * unchanged so its fields can be printed.
 * [-0, +1, m] */
static int msghandler(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        int t = lua_type(L, 1);
        if (t == LUA_TTABLE || t == LUA_TUSERDATA)
            return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    if (!has_user_frame(L, 1))
        return 1;
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* See call.h. */
int call_docall(lua_State *L, int narg, int nres) {
    int base = lua_gettop(L) - narg;                  /* function index */
    lua_pushcfunction(L, msghandler);                 /* [.., f, args.., h] */
    lua_insert(L, base);                              /* [.., h, f, args..] */
    sig_running(true);
    int status = lua_pcall(L, narg, nres, base);
    sig_running(false);
    lua_remove(L, base);                              /* [.., results | err] */
    return status;
}

/* See call.h. */
int call_report(lua_State *L, int status) {
    /* the terminal echoed "^C" mid-line: start the error on a line of its own */
    if (sig_take_run_interrupt() && status != LUA_OK && term_is_tty(STDERR_FILENO))
        fputc('\n', stderr);
    if (status != LUA_OK) {
        term_print_error(L, -1);
        lua_pop(L, 1);
    }
    return status;
}

/* See call.h. */
void call_print_values(lua_State *L, int n) {
    if (n <= 0)
        return;
    if (!lua_checkstack(L, 2)) {
        lua_pop(L, n);
        term_errorf(NULL, "too many results to print");
        return;
    }
    lua_getglobal(L, "print");                        /* [vals.., print] */
    lua_insert(L, -(n + 1));                          /* [print, vals..] */
    int status = call_docall(L, n, 0);
    if (status != LUA_OK) {
        fflush(stdout);
        fprintf(stderr, "error calling 'print':\n");
        call_report(L, status);
    }
}
