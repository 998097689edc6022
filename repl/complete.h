/* repl/complete.h — Tab completion (complete.c).
 * Layer: repl; private to the program. complete.c knows the colon commands only through the
 * vocabulary main.c hands it (complete_set_commands), so the command table (commands.c, whose
 * :complete prints candidates) sits above completion and the include graph stays acyclic. */
#ifndef FXDB_REPL_COMPLETE_H
#define FXDB_REPL_COMPLETE_H

#include <stdbool.h>

#include <lua.h>

/* The colon-command names completion offers: count() rows, name_at(i) the i-th name (NULL past
 * the end), resolve(word) the name a typed word or unique abbreviation selects (NULL when none
 * or several). */
typedef struct complete_commands {
    int (*count)(void);
    const char *(*name_at)(int i);
    const char *(*resolve)(const char *word);
} complete_commands;

/* Sets the command vocabulary (copied); until then no command name completes. */
void complete_set_commands(const complete_commands *cmds);

/* The candidates for completing the word line[start, end) of `line`, in a NULL-terminated array
 * of malloc'd strings (sorted, unique), or NULL when there is none. Each candidate replaces the
 * whole word. Reads Lua state without calling Lua code except through protected calls.
 * [-0, +0, -] */
char **complete_candidates(lua_State *L, const char *line, int start, int end);
/* Frees an array returned by complete_candidates (NULL is fine). */
void complete_free(char **cands);
/* The characters that separate words for completion. */
extern const char complete_word_breaks[];

#endif
