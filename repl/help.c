/* repl/help.c — lookups in the embedded docs/API.md (see help.h for the entry format).
 * Layer: repl. The text is generated into build/repl/api_doc.c by the Makefile (xxd -i), so the
 * reference a reader sees in the repository and what `:help` prints are the same bytes; a test
 * (tests/docs) fails when a registered command or Lua function has no entry. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/fxlua.h"
#include "repl/help.h"

extern const char fxdb_api_doc[];   /* docs/API.md, NUL-terminated (build/repl/api_doc.c) */

/* The end of the line starting at s (its '\n' or the terminating NUL). */
static const char *line_end(const char *s) {
    const char *e = strchr(s, '\n');
    return e ? e : s + strlen(s);
}

/* True when the heading text [h, e) lists `name` as one of its ", "-separated names. */
static bool heading_lists(const char *h, const char *e, const char *name) {
    size_t n = strlen(name);
    while (h < e) {
        const char *comma = memchr(h, ',', (size_t)(e - h));
        const char *stop = comma ? comma : e;
        const char *t = stop;
        while (t > h && t[-1] == ' ')
            t--;
        if ((size_t)(t - h) == n && memcmp(h, name, n) == 0)
            return true;
        if (comma == NULL)
            break;
        h = comma + 1;
        while (h < e && *h == ' ')
            h++;
    }
    return false;
}

/* Fills *out from the entry whose body starts at s (just after its heading line). */
static void read_entry(const char *s, help_entry *out) {
    memset(out, 0, sizeof *out);
    while (*s == '\n')
        s++;
    const char *e = line_end(s);
    static const char dash[] = " \xe2\x80\x94 ";   /* " — " */
    if (*s == '`') {
        const char *close = memchr(s + 1, '`', (size_t)(e - s - 1));
        if (close != NULL) {
            out->usage = s + 1;
            out->usage_len = (size_t)(close - s - 1);
            const char *sum = close + 1;
            if ((size_t)(e - sum) >= sizeof dash - 1 && memcmp(sum, dash, sizeof dash - 1) == 0)
                sum += sizeof dash - 1;
            out->summary = sum;
            out->summary_len = (size_t)(e - sum);
        }
    }
    if (out->usage == NULL) {
        out->summary = s;
        out->summary_len = (size_t)(e - s);
    }
    /* the body: up to the next heading ("#" at a line start), trailing blank lines dropped */
    const char *b = *e ? e + 1 : e;
    while (*b == '\n')
        b++;
    const char *p = b;
    while (*p && !(p[0] == '#' && (p[1] == '#' || p[1] == ' '))) {
        const char *le = line_end(p);
        p = *le ? le + 1 : le;
    }
    while (p > b && p[-1] == '\n')
        p--;
    out->body = b;
    out->body_len = (size_t)(p - b);
}

/* See help.h. */
bool help_find(const char *name, help_entry *out) {
    for (const char *s = fxdb_api_doc; *s;) {
        const char *e = line_end(s);
        if (strncmp(s, "### ", 4) == 0 && heading_lists(s + 4, e, name)) {
            read_entry(*e ? e + 1 : e, out);
            return true;
        }
        s = *e ? e + 1 : e;
    }
    return false;
}

/* Appends span [s, s+len) to b without backticks, each line prefixed by `indent` blanks. */
static void add_text(luaL_Buffer *b, const char *s, size_t len, int indent) {
    bool at_start = true;
    for (size_t i = 0; i < len; i++) {
        if (at_start && s[i] != '\n')
            for (int k = 0; k < indent; k++)
                luaL_addchar(b, ' ');
        at_start = s[i] == '\n';
        if (s[i] != '`')
            luaL_addchar(b, s[i]);
    }
}

#define HELP_WIDTH 102  /* columns (2 of indent + the 100 of API.md lines): longer ones wrap */

/* Prints one line [s, s+len) (no newline inside) without backticks, indented, wrapped at blanks
 * to HELP_WIDTH columns. */
static void print_wrapped(const char *s, size_t len, int indent) {
    char buf[4096];
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < sizeof buf; i++)
        if (s[i] != '`')
            buf[n++] = s[i];
    size_t room = HELP_WIDTH > indent + 20 ? (size_t)(HELP_WIDTH - indent) : 20;
    size_t at = 0;
    while (at < n) {
        size_t take = n - at;
        if (take > room) {
            size_t cut = at + room;
            while (cut > at && buf[cut] != ' ')
                cut--;
            take = cut > at ? cut - at : room;
        }
        printf("%*s%.*s\n", indent, "", (int)take, buf + at);
        at += take;
        while (at < n && buf[at] == ' ')
            at++;
    }
}

/* See help.h. */
void help_print_text(const char *s, size_t len, int indent) {
    const char *end = s + len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        if (le > s)                                    /* blank lines: compact on a terminal */
            print_wrapped(s, (size_t)(le - s), indent);
        s = nl ? nl + 1 : end;
    }
}

/* fxdb.help(name) -> text | nil, message */
static int l_help(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    help_entry h;
    if (!help_find(name, &h)) {
        lua_pushnil(L);
        lua_pushfstring(L, "no entry for '%s' in docs/API.md", name);
        return 2;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (h.usage != NULL) {
        luaL_addlstring(&b, h.usage, h.usage_len);
        luaL_addchar(&b, '\n');
    }
    add_text(&b, h.summary, h.summary_len, h.usage ? 2 : 0);
    if (h.body_len > 0) {
        luaL_addchar(&b, '\n');
        add_text(&b, h.body, h.body_len, 2);
    }
    luaL_pushresult(&b);
    return 1;
}

/* See help.h. fxlua_register also applies fxdb.help's argument check (lua/check.lua). */
void help_open(lua_State *L) {
    fxlua_register(L, "help", l_help);
}
