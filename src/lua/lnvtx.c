/*
** lnvtx.c — gpu.range(name, fn, ...): runs fn(...) inside an NVTX range named 'name',
** so the span shows up on Nsight Systems' timeline beside the kernels it launched.
**
**   gpu.range("forward", function() return model(x) end)
**   -- nsys profile --trace=cuda,nvtx ./gpulua train.lua
**
** NVTX v3 is header-only: its first call looks at NVTX_INJECTION64_PATH (which nsys
** sets) and dlopens that tool, else every later call is a no-op through a function
** pointer. Nothing is loaded at start-up, and without a profiler attached a range costs
** two indirect calls. Without CUDA built in, gpu.range is a plain call of fn.
**
** The range is closed on every path out of fn, errors included (the error is then
** raised again, unchanged), so a failing step does not leave Nsight's stack unbalanced.
*/
#include "lgpu.h"

#ifdef GL_WITH_CUDA
#include <nvtx3/nvToolsExt.h>
#define range_push(name) ((void)nvtxRangePushA(name))
#define range_pop() ((void)nvtxRangePop())
#else
#define range_push(name) ((void)(name))
#define range_pop() ((void)0)
#endif

static int l_range(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  if (lua_type(L, 2) != LUA_TFUNCTION && !luaL_getmetafield(L, 2, "__call"))
    return luaL_typeerror(L, 2, "function");
  if (lua_type(L, 2) != LUA_TFUNCTION) lua_pop(L, 1);   /* the __call field */
  int nargs = lua_gettop(L) - 2;
  range_push(name);
  int st = lua_pcall(L, nargs, LUA_MULTRET, 0);          /* fn and its arguments */
  range_pop();
  if (st != LUA_OK) return lua_error(L);                 /* the error object as it was */
  return lua_gettop(L) - 1;                              /* everything above the name */
}

static const gl_reg nvtx_funcs[] = {
  { "range", l_range, GL_VARARGS },
  { NULL, NULL, 0 }
};

void gl_open_nvtx(lua_State *L, int module, int methods) {
  (void)methods;
  gl_lua_setfuncs(L, module, nvtx_funcs);
}
