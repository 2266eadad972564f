/*
** ldata.c — data-set files from Lua: gpu.load_idx(path) reads an IDX file (MNIST,
** Fashion-MNIST; gzip or plain) into a cpu array of the file's dtype and shape. The
** parsing and its hostile-file checks are in src/core/idx.c; gpu.data (lua/gpu/data.lua)
** builds the data-set loaders on it.
*/
#include "lgpu.h"
#include "../core/idx.h"

/* "gpu.load_idx: 'x.idx': <the core's message>", as gpu.load's errors read */
static int idx_error(lua_State *L, const char *path) {
  return luaL_error(L, "gpu.load_idx: '%s': %s", path, gl_errmsg());
}

/* gpu.load_idx(path) -> array (uint8, int32, float32 or float64; on the cpu). The header
** is read and checked first, so a hostile size fails before anything is allocated; no
** file is held open while Lua may raise. */
static int l_load_idx(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  gl_idx_info info;
  if (gl_idx_header(path, &info) != GL_OK) return idx_error(L, path);
  gl_array *a = gl_lua_alloc(L, info.dtype, info.ndim, info.shape, gl_cpu());
  if (gl_idx_read(path, &info, gl_array_data(a)) != GL_OK) return idx_error(L, path);
  return 1;
}

static const gl_reg data_funcs[] = {
  { "load_idx", l_load_idx, 1 },
  { NULL, NULL, 0 }
};

void gl_open_data(lua_State *L, int module, int methods) {
  (void)methods;
  gl_lua_setops(L, module, "", data_funcs);
}
