/*
** lbody.c — the shared endings of the module's functions (lbody.h).
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
