/* repl/term.h — tty and colour detection, the layout of error blocks (term.c).
 * Layer: repl; private to the program (repl/ exports nothing to other layers). Includes only
 * libc and lua.h: the bottom of the repl/ include graph. */
#ifndef FXDB_REPL_TERM_H
#define FXDB_REPL_TERM_H

#include <stdbool.h>
#include <stdio.h>

#include <lua.h>

#define FXDB_PROGNAME "fxdb"   /* the program's name in messages and in ~/.editrc */


/* Decides, once, whether stdout / stderr get colours: only on a terminal and when $NO_COLOR is
 * unset. */
void term_init(void);
bool term_is_tty(int fd);
/* The escape sequence for a style ("bold", "red", "reset", ...) on f, or "" without colours. */
const char *term_sgr(FILE *f, const char *style);
/* Prints the error value at idx as the error block of docs/API.md §8 on stderr (stdout is flushed
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

#endif
