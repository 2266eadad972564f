/*
** lbody.c — the shared endings of the module's functions and the metatables of its
** userdata types (lbody.h).
*/
#include "lbody.h"

void gl_lua_push_results(lua_State *L, int top, gl_array **res, int n) {
  lua_settop(L, top);
  for (int i = 0; i < n; i++) res[i] = gl_lua_push(L);
}

int gl_lua_results(lua_State *L, gl_status st, gl_array *const *res, int n) {
  gl_lua_check_status(L, st, 0);
  for (int i = 0; i < n; i++) gl_lua_account_array(L, res[i]);
  return n;
}

void gl_lua_newclass(lua_State *L, const char *tname, const gl_reg *meta, const gl_reg *methods, bool held) {
  luaL_newmetatable(L, tname);
  gl_lua_setfuncs(L, -1, meta);
  lua_newtable(L);
  if (held) gl_lua_setfuncs_held(L, -1, methods);
  else gl_lua_setfuncs(L, -1, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}
