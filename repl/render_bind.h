/* repl/render_bind.h — fxdb.render, the one bridge between lua/ and viz/ (render_bind.c).
 * Layer: repl; private to the program. */
#ifndef FXDB_REPL_RENDER_BIND_H
#define FXDB_REPL_RENDER_BIND_H

#include <lua.h>

/* Registers fxdb.render in L (fxlua_register).  [-0, +0, e] */
void render_bind_open(lua_State *L);

#endif
