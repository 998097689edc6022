/* repl/syntax.h — how an input line is classified: a ':' command or Lua.
 * Layer: repl; private to the program. Header only, includes only libc: the bottom of the repl/
 * include graph (complete.c and repl.c both classify lines). */
#ifndef FXDB_REPL_SYNTAX_H
#define FXDB_REPL_SYNTAX_H

#include <stdbool.h>

/* True when a line (after leading blanks) is a colon command rather than Lua (`::label::` is
 * Lua). */
static inline bool syntax_is_command(const char *line) {
    while (*line == ' ' || *line == '\t')
        line++;
    return line[0] == ':' && line[1] != ':';
}

#endif
