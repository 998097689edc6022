/* lua/lx_open.h — the openers of the binding files, one per file, called only by fxlua_openlibs
 * (lua/lx_open.c). Layer: lua. Each registers its metatables and globals.  [-0, +0, e] */
#ifndef LX_OPEN_H
#define LX_OPEN_H

#include <lua.h>

void lx_open_udata(lua_State *L);    /* lx_udata.c: SymInt metatable */
void lx_open_tensor(lua_State *L);   /* lx_tensor.c + lx_index.c: Tensor metatable */
void lx_open_torch(lua_State *L);    /* lx_torch.c: global torch, torch.ops.aten */
void lx_open_graph(lua_State *L);    /* lx_graph.c: Graph and Node metatables */
void lx_open_export(lua_State *L);   /* lx_export.c: torch.export, ExportedProgram */
void lx_open_debug(lua_State *L);    /* lx_debug.c: global fxdb */
void lx_open_session(lua_State *L);  /* lx_session.c: session hooks, fxdb._partial_functional */
void lx_open_safetensors(lua_State *L); /* lx_safetensors.c: torch.load/save_safetensors */
void lx_open_pt2(lua_State *L);      /* lx_pt2.c: torch.export.save / load (.pt2 archives) */

#endif
