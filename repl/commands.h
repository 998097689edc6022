/* repl/commands.h — the colon commands: their table, parsing and :help (commands.c).
 * Layer: repl; private to the program. Above call.h, term.h, sigint.h and complete.h; repl.c
 * and main.c sit above it. */
#ifndef FXDB_REPL_COMMANDS_H
#define FXDB_REPL_COMMANDS_H

#include <lua.h>

/* Return contract of every colon command (SQLite's dot commands). */
#define CMD_OK 0
#define CMD_ERROR 1
#define CMD_QUIT 2

/* Runs the colon command `line` (starting with ':', leading blanks allowed). Returns CMD_OK,
 * CMD_ERROR or CMD_QUIT; errors are printed. Remembers stepping commands for repetition.
 * Never raises.  [-0, +0, -] */
int cmd_execute(lua_State *L, const char *line);
/* Re-runs the last stepping command (:step :next :continue :finish) when there was one; returns
 * -1 when there is none.  [-0, +0, -] */
int cmd_repeat_last(lua_State *L);
/* The canonical name of the command a typed word (without ':') selects by exact name or unique
 * abbreviation, or NULL when it selects none or several. */
const char *cmd_resolve(const char *word);
/* Name of the i-th command of the table ("export", "graph", ...), or NULL past the end. */
const char *cmd_name_at(int i);
/* Number of commands in the table. */
int cmd_count(void);

#endif
