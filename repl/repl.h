/* repl/repl.h — the read-eval-print loop (repl.c).
 * Layer: repl; private to the program (repl/ exports nothing to other layers).
 *
 * The files of the program, bottom to top (each includes only headers below it; main.c wires
 * them together):
 *   syntax.h      line classification (header only)
 *   term.c        tty and colour detection, error block layout
 *   sigint.c      Ctrl-C -> "interrupted!" inside Lua
 *   call.c        docall with traceback, error reporting, result printing
 *   complete.c    Tab completion (command names handed in by main.c)
 *   edit.c        line editing (libedit or fgets), history file
 *   commands.c    the colon-command table and its functions
 *   repl.c        read-eval-print loop, `_`
 *   render_bind.c fxdb.render (the one bridge between lua/ and viz/)
 *   main.c        argv (lua.c collectargs), the Lua state, -e / script / -i, exit codes */
#ifndef FXDB_REPL_REPL_H
#define FXDB_REPL_REPL_H

#include <stdbool.h>

#include <lua.h>

/* Runs the read-eval-print loop until end of input or :quit. `interactive` = stdin is a
 * terminal (prompts, banner, history, line editing). An error goes on to the next line; returns
 * whether any line failed (a Lua error or a failing ':' command), so that a session piped on
 * stdin can exit non-zero as `-e` does. Never raises.  [-0, +0, -] */
bool repl_loop(lua_State *L, bool interactive);

/* Runs one line of input as the REPL would, without reading more input: a ':' command or a Lua
 * chunk (statement; no result printing). Used by `fxdb -e`. Returns CMD_OK, CMD_ERROR or CMD_QUIT
 * of commands.h (the error, if any, is already printed).  [-0, +0, -] */
int repl_run_line(lua_State *L, const char *line, const char *chunkname);

#endif
