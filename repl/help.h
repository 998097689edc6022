/* repl/help.h — the reference manual, docs/API.md, embedded in the program: the one source of
 * `:help`, of `fxdb.help(name)` and of the usage lines in command errors (help.c).
 * Layer: repl; private to the program. Includes only libc and lua.h (help.c uses lua/fxlua.h);
 * commands.c sits above it.
 *
 * An entry of API.md is a level-3 heading listing the names it documents, separated by ", "
 * (":why, :provenance" or "torch.add, torch.add_"), then a line "`USAGE` — summary" (or only a
 * summary), then free text up to the next heading. Backticks are markup and are dropped when an
 * entry is printed on the terminal. */
#ifndef FXDB_REPL_HELP_H
#define FXDB_REPL_HELP_H

#include <stdbool.h>
#include <stddef.h>

#include <lua.h>

/* One entry, as spans of the embedded text (not NUL-terminated; lengths in bytes). */
typedef struct help_entry {
    const char *usage;     /* the text inside the first line's backticks, or NULL */
    size_t usage_len;
    const char *summary;   /* the rest of the first line after " — " (or the whole line) */
    size_t summary_len;
    const char *body;      /* the lines after the first, up to the next heading, trimmed */
    size_t body_len;
} help_entry;

/* Finds the entry documenting `name` (":export", "torch.add", "fxdb.run", ...): true and *out
 * filled, or false when no heading lists the name exactly. */
bool help_find(const char *name, help_entry *out);

/* Prints span [s, s+len) on stdout with backticks and blank lines removed, each line indented by
 * `indent` blanks and wrapped at blanks to 102 columns. */
void help_print_text(const char *s, size_t len, int indent);

/* Registers fxdb.help(name) -> the entry as text (usage, summary, body; backticks removed), or
 * nil and a message when nothing documents `name`.  [-0, +0, e] */
void help_open(lua_State *L);

#endif
