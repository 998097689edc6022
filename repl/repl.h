/* repl/repl.h — declarations shared by the files of the fxdb program; private to repl/.
 * Layer: repl. Includes only lua.h and lua/fxlua.h. repl/ exports nothing to other layers: these
 * names are internal to the program (STYLE.md §2.1).
 *
 * Who does what:
 *   main.c        argv (lua.c collectargs), the Lua state, -e / script / -i, exit codes
 *   repl.c        read-eval-print loop, docall with traceback, result printing, `_`
 *   edit.c        line editing (libedit or fgets), history file
 *   complete.c    Tab completion
 *   commands.c    the colon-command table and its functions
 *   term.c        tty and colour detection, error block layout
 *   sigint.c      Ctrl-C -> "interrupted!" inside Lua
 *   render_bind.c fxdb.render (the one bridge between lua/ and viz/) */
#ifndef FXDB_REPL_H
#define FXDB_REPL_H

#include <stdbool.h>
#include <stdio.h>

#include <lua.h>

#define FXDB_PROGNAME "fxdb"
#define FXDB_CHUNKNAME "=stdin"      /* chunk name of REPL lines, as lua.c names them */

/* Return contract of every colon command (SQLite's dot commands). */
#define CMD_OK 0
#define CMD_ERROR 1
#define CMD_QUIT 2

/* ---- repl.c ---------------------------------------------------------------------------------- */

/* Calls the function below `narg` arguments on the stack under lua_pcall with the traceback
 * message handler and the Ctrl-C hook armed. Returns the lua_pcall status; on error the error
 * value (a string with traceback, or an fxdb error object) is left on the stack, as lua.c's
 * docall does.  [-(narg+1), +(nres|1), -] */
int repl_docall(lua_State *L, int narg, int nres);

/* When status is not LUA_OK, prints the error value at the top of the stack as an error block on
 * stderr (term.c) and pops it. Returns status.  [-(0|1), +0, -] */
int repl_report(lua_State *L, int status);

/* Prints the n values at the top of the stack with the global `print` (tostring of each value,
 * tab-separated) and pops them; a failing print is reported, never raised. n may be 0.
 * [-n, +0, -] */
void repl_print_values(lua_State *L, int n);

/* Runs the read-eval-print loop until end of input or :quit. `interactive` = stdin is a
 * terminal (prompts, banner, history, line editing). Never raises.  [-0, +0, -] */
void repl_loop(lua_State *L, bool interactive);

/* Runs one line of input as the REPL would, without reading more input: a ':' command or a Lua
 * chunk (statement; no result printing). Used by `fxdb -e`. Returns CMD_OK, CMD_ERROR or CMD_QUIT
 * (the error, if any, is already printed).  [-0, +0, -] */
int repl_run_line(lua_State *L, const char *line, const char *chunkname);

/* True when a line (after leading blanks) is a colon command rather than Lua (`::label::` is
 * Lua). */
bool repl_is_command(const char *line);

/* ---- commands.c ------------------------------------------------------------------------------ */

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

/* ---- term.c ---------------------------------------------------------------------------------- */

/* Decides, once, whether stdout / stderr get colours: only on a terminal and when $NO_COLOR is
 * unset. */
void term_init(void);
bool term_is_tty(int fd);
/* The escape sequence for a style ("bold", "red", "reset", ...) on f, or "" without colours. */
const char *term_sgr(FILE *f, const char *style);
/* Prints the error value at idx as the error block of API.md §8 on stderr (stdout is flushed
 * first). A string prints as "error: <string>"; an fxdb error object prints "error: <message>"
 * or "export error (<kind>): <message>" followed by its at / module / hint lines. Formatting runs
 * in protected mode, so a broken error object cannot raise.  [-0, +0, -] */
void term_print_error(lua_State *L, int idx);
/* Prints "error: <formatted>" (and "  hint: <hint>" when hint is not NULL) on stderr. */
void term_errorf(const char *hint, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- edit.c ---------------------------------------------------------------------------------- */

typedef enum edit_status {
    EDIT_LINE,         /* a line was read */
    EDIT_EOF,          /* end of input (Ctrl-D) */
    EDIT_INTERRUPTED   /* Ctrl-C while reading: discard what was typed */
} edit_status;

/* Sets up line editing for L (completion needs L) when interactive, and loads the history file
 * ~/.fxdb_history ($HOME; nothing when unset). Non-interactive: plain reads, no history. */
void edit_init(lua_State *L, bool interactive);
/* Reads one line without its newline. On EDIT_LINE, *out is a malloc'd string the caller frees
 * with free(); otherwise *out is NULL. `prompt` is shown only when interactive. */
edit_status edit_readline(const char *prompt, char **out);
/* Adds a non-empty line to the history and saves the history file; never fails visibly. */
void edit_add_history(const char *line);
/* Releases the line editor. */
void edit_shutdown(void);

/* ---- complete.c ------------------------------------------------------------------------------ */

/* The candidates for completing the word line[start, end) of `line`, in a NULL-terminated array
 * of malloc'd strings (sorted, unique), or NULL when there is none. Each candidate replaces the
 * whole word. Reads Lua state without calling Lua code except through protected calls.
 * [-0, +0, -] */
char **complete_candidates(lua_State *L, const char *line, int start, int end);
/* True when the cursor is in an argument of a command that takes a file name (:load, :render):
 * then the editor's own file-name completion applies. */
bool complete_wants_files(const char *line);
/* Frees an array returned by complete_candidates (NULL is fine). */
void complete_free(char **cands);
/* The characters that separate words for completion. */
extern const char complete_word_breaks[];

/* ---- sigint.c -------------------------------------------------------------------------------- */

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

/* ---- render_bind.c --------------------------------------------------------------------------- */

/* Registers fxdb.render in L (fxlua_register).  [-0, +0, e] */
void render_bind_open(lua_State *L);

#endif
