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

/* gpu._load_records(path, record_bytes) -> uint8 array (N, record_bytes) of a file of
** fixed-size records, or nil and the fault ("'path': ..."): gpu.data's CIFAR-10 loader
** names the data set and the folder around it. */
static int l_load_records(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer record = luaL_checkinteger(L, 2);
  luaL_argcheck(L, record >= 1 && record <= (1 << 30), 2, "record size out of 1..2^30");
  int64_t shape[2] = { 0, record };
  if (gl_records_count(path, (size_t)record, &shape[0]) != GL_OK) {
    luaL_pushfail(L);
    lua_pushfstring(L, "'%s': %s", path, gl_errmsg());
    return 2;
  }
  gl_array *a = gl_lua_alloc(L, GL_UINT8, 2, shape, gl_cpu());
  if (gl_records_read(path, (size_t)(shape[0] * record), gl_array_data(a)) != GL_OK) {
    luaL_pushfail(L);
    lua_pushfstring(L, "'%s': %s", path, gl_errmsg());
    return 2;
  }
  return 1;
}

static const gl_reg data_funcs[] = {
  { "load_idx", l_load_idx, 1 },
  { "_load_records", l_load_records, 2 },
  { NULL, NULL, 0 }
};

void gl_open_data(lua_State *L, int module, int methods) {
  (void)methods;
  gl_lua_setops(L, module, "", data_funcs);
}
