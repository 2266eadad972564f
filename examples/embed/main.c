/*
** A minimal C host: links libgpulua.a, opens the gpu module, hands Lua an array made
** in C, runs a chunk on it and reads the result back.
*/
#include <stdio.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "gpulua.h"

int main(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "gpu", luaopen_gpu, 1);
  lua_pop(L, 1);

  /* a 2x3 float32 array from C */
  float data[6] = { 1, 2, 3, 4, 5, 6 };
  int64_t shape[2] = { 2, 3 };
  gpulua_push_array(L, "float32", 2, shape, data);
  lua_setglobal(L, "x");

  const char *chunk = "local t = x.T:contiguous()\n"
                      "print(t)\n"
                      "return t";
  if (luaL_dostring(L, chunk) != LUA_OK) {
    fprintf(stderr, "embed: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  int ndim;
  int64_t tshape[8];
  const char *dtype = gpulua_check_array(L, -1, &ndim, tshape);
  float out[6];
  gpulua_read_array(L, -1, out);
  int ok = ndim == 2 && tshape[0] == 3 && tshape[1] == 2 && out[1] == 4 && out[5] == 6;
  printf("embed: %s (%s, %lldx%lld)\n", ok ? "ok" : "FAILED", dtype, (long long)tshape[0], (long long)tshape[1]);
  lua_close(L);
  return ok ? 0 : 1;
}
