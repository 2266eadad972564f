/*
** lroutines.c — the NumPy routines written in Lua (lua/gpu/routines.lua and its parts:
** einsum, tensordot, trace, isclose, nansum ...), as gpu.f and, where NumPy has the
** method, x:f, named by the part's own list (lua/gpu/routines/names.lua). Until the part
** is loaded each name is a stub that requires it (the part then puts its own functions in
** the module and methods tables) and passes the call on, so `gpulua -e ''` does not
** compile the routines. gpu.kernel's stubs (lkernel.c) are made here too.
*/
#include <string.h>
#include "lgpu.h"

/* A function of a Lua part not loaded yet: requires the part (upvalue 1), then calls the
** part's function of that name (upvalue 2) with the arguments. */
static int part_stub(lua_State *L) {
  const char *part = lua_tostring(L, lua_upvalueindex(1));
  const char *name = lua_tostring(L, lua_upvalueindex(2));
  int nargs = lua_gettop(L);
  lua_getglobal(L, "require");
  if (lua_isnil(L, -1)) return luaL_error(L, "gpu.%s: 'require' is not available", name);
  lua_pushstring(L, part);
  lua_call(L, 1, 1);
  if (lua_type(L, -1) != LUA_TTABLE || lua_getfield(L, -1, name) != LUA_TFUNCTION)
    return luaL_error(L, "gpu.%s: %s does not define it", name, part);
  lua_remove(L, -2);
  lua_insert(L, 1);
  lua_call(L, nargs, LUA_MULTRET);
  return lua_gettop(L);
}

void gl_lua_push_part_stub(lua_State *L, const char *part, const char *name) {
  lua_pushstring(L, part);
  lua_pushstring(L, name);
  lua_pushcclosure(L, part_stub, 2);
}

/* After the Lua parts are preloaded: runs lua/gpu/routines/names.lua's chunk. */
void gl_open_routines(lua_State *L, int module) {
  lua_getfield(L, module, "methods");
  int methods = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_getfield(L, -1, "gpu.routines.names");
  lua_pushliteral(L, "gpu.routines.names");
  lua_call(L, 1, 1);
  lua_remove(L, -2);
  int names = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, names)) {
    bool method = lua_toboolean(L, -1);
    lua_pop(L, 1);
    gl_lua_push_part_stub(L, "gpu.routines", lua_tostring(L, -1));
    if (method) {
      lua_pushvalue(L, -2);
      lua_pushvalue(L, -2);
      lua_rawset(L, methods);
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, module);
  }
  lua_setfield(L, module, "_routines");            /* the names, for the part to check */
  lua_pop(L, 1);
}
