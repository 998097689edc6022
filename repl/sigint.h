/* repl/sigint.h — Ctrl-C: "interrupted!" inside running Lua, a discarded line at the prompt
 * (sigint.c).
 * Layer: repl; private to the program. Includes only libc and lua.h. */
#ifndef FXDB_REPL_SIGINT_H
#define FXDB_REPL_SIGINT_H

#include <stdbool.h>

#include <lua.h>


/* Installs the SIGINT handler for the process; L is the state whose code a Ctrl-C interrupts. */
void sig_init(lua_State *L);
/* Brackets a Lua call: while running, Ctrl-C raises "interrupted!" inside Lua (the first time;
 * a second Ctrl-C before the hook runs kills the process, as in lua.c); while idle, it only sets
 * a flag that the line editor reads. */
void sig_running(bool running);
/* Returns and clears the "Ctrl-C arrived while idle" flag. */
bool sig_take_idle_interrupt(void);
/* Returns and clears the "Ctrl-C arrived while Lua ran" flag. */
bool sig_take_run_interrupt(void);

#endif
