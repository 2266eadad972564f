/*
** lroutines.c — the names of the NumPy routines written in Lua (lua/gpu/routines.lua and
** its parts: einsum, tensordot, trace, isclose, nansum ...), as gpu.f and, where NumPy has
** the method, x:f. Until the part is loaded each name is a stub that requires it (the
** part then puts its own functions in the module and methods tables) and passes the call
** on, so `gpulua -e ''` does not compile the routines.
*/
#include <string.h>
#include "lgpu.h"

/* method: 1 when NumPy (or PyTorch) has x:f too */
static const struct { const char *name; int method; } routines[] = {
  { "einsum", 0 }, { "tensordot", 0 }, { "kron", 0 }, { "inner", 0 }, { "vdot", 0 },
  { "isclose", 1 }, { "allclose", 1 }, { "array_equal", 0 },
  { "diagonal", 1 }, { "trace", 1 }, { "diag", 0 }, { "triu", 1 }, { "tril", 1 },
  { "nansum", 1 }, { "nanmean", 1 }, { "nanmax", 0 }, { "nanmin", 0 }, { "nanvar", 0 },
  { "nanstd", 0 }, { "nanargmax", 0 }, { "nanargmin", 0 },
  { "unique", 1 }, { "nonzero", 1 }, { "argwhere", 1 }, { "count_nonzero", 1 }, { "flatnonzero", 0 },
  { "searchsorted", 1 }, { "digitize", 0 }, { "bincount", 0 }, { "histogram", 0 },
  { "pad", 0 }, { "meshgrid", 0 }, { "take_along_axis", 0 }, { "put_along_axis", 0 }, { "gather", 1 },
  { "scatter", 1 }, { "scatter_add", 1 }, { "atleast_1d", 0 }, { "atleast_2d", 0 }, { "atleast_3d", 0 },
  { "broadcast_to", 1 }, { "broadcast_arrays", 0 }, { "swapaxes", 1 }, { "moveaxis", 1 }, { "rot90", 1 },
  { "nan_to_num", 1 },
  { "quantile", 0 }, { "percentile", 0 }, { "median", 0 }, { "nanmedian", 0 }, { "nanquantile", 0 }, { "nanpercentile", 0 }, { "cov", 0 }, { "corrcoef", 0 },
  { "diff", 1 }, { "gradient", 0 }, { "convolve", 0 }, { "correlate", 0 }, { "interp", 0 }, { "trapz", 0 },
  { NULL, 0 }
};

/* upvalue 1: the routine's name */
static int routine_stub(lua_State *L) {
  const char *name = lua_tostring(L, lua_upvalueindex(1));
  int nargs = lua_gettop(L);
  lua_getglobal(L, "require");
  if (lua_isnil(L, -1)) return luaL_error(L, "gpu.%s: 'require' is not available", name);
  lua_pushliteral(L, "gpu.routines");
  lua_call(L, 1, 1);
  if (lua_type(L, -1) != LUA_TTABLE || lua_getfield(L, -1, name) != LUA_TFUNCTION)
    return luaL_error(L, "gpu.%s: gpu.routines does not define it", name);
  lua_remove(L, -2);
  lua_insert(L, 1);
  lua_call(L, nargs, LUA_MULTRET);
  return lua_gettop(L);
}

void gl_open_routines(lua_State *L, int module, int methods) {
  for (int i = 0; routines[i].name; i++) {
    lua_pushstring(L, routines[i].name);
    lua_pushcclosure(L, routine_stub, 1);
    if (routines[i].method) {
      lua_pushvalue(L, -1);
      lua_setfield(L, methods, routines[i].name);
    }
    lua_setfield(L, module, routines[i].name);
  }
  /* gpu._routines: the names and whether each is a method, for the part to check */
  lua_createtable(L, 0, (int)(sizeof routines / sizeof routines[0]));
  for (int i = 0; routines[i].name; i++) {
    lua_pushboolean(L, routines[i].method);
    lua_setfield(L, -2, routines[i].name);
  }
  lua_setfield(L, module, "_routines");
}
