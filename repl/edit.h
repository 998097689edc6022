/* repl/edit.h — line editing (libedit or plain reads) and the history file (edit.c).
 * Layer: repl; private to the program. Above complete.h and sigint.h. */
#ifndef FXDB_REPL_EDIT_H
#define FXDB_REPL_EDIT_H

#include <stdbool.h>

#include <lua.h>

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

#endif
