/*
** lcuda.c — settings of the GPU libraries that scripts may change:
**
**   gpu.set_matmul_precision("tf32")     -- float32 matmuls may use TF32 tensor cores
**   gpu.set_matmul_precision("highest")  -- IEEE float32 (the default)
**   gpu.get_matmul_precision()           -- "highest" or "tf32"
**
** ("high" is accepted as PyTorch's name for "tf32".) The setting is the process's, as in
** PyTorch: every backend that has the switch gets it; the cpu has none and ignores it.
*/
#include "lgpu.h"

static bool tf32_on;

static int l_set_matmul_precision(lua_State *L) {
  static const char *const names[] = { "highest", "high", "tf32", NULL };
  int which = luaL_checkoption(L, 1, NULL, names);
  bool tf32 = which != 0;
  for (int t = GL_CPU; t <= GL_CUDA; t++) {
    const gl_backend *b = gl_backend_get((gl_devtype)t);
    if (b && b->matmul_precision) b->matmul_precision(tf32);
  }
  tf32_on = tf32;
  return 0;
}

static int l_get_matmul_precision(lua_State *L) {
  lua_pushstring(L, tf32_on ? "tf32" : "highest");
  return 1;
}

static const luaL_Reg cuda_funcs[] = {
  { "set_matmul_precision", l_set_matmul_precision },
  { "get_matmul_precision", l_get_matmul_precision },
  { NULL, NULL }
};

void gl_open_cuda(lua_State *L, int module, int methods) {
  (void)methods;
  gl_lua_setfuncs(L, module, cuda_funcs);
}
