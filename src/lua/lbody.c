/*
** lbody.c — what the module's functions share (lbody.h): the options of those that make
** arrays, the ending of those with several results, the metatables of userdata types.
*/
#include "lbody.h"

void gl_lua_create_opts(lua_State *L, int idx, const gl_optdecl *d, gl_dtype dt_default, gl_dtype *dt, gl_device *dev,
                        gl_optval *vals) {
  *dt = dt_default;
  dev->type = 255;                       /* unset: gl_lua_opts gives the default device */
  dev->index = 0;
  gl_lua_opts(L, idx, d, dt, dev, vals);
}

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
