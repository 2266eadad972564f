/*
** lgpu.c — luaopen_gpu: the module table, the array metatable, the per-state context,
** and the Lua parts (the files under lua/gpu) preloaded from the sources compiled in.
*/
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lgpu.h"

const char gl_ctx_key = 'c', gl_meta_key = 'm';

typedef struct gl_luasrc { const char *name, *chunkname, *src; size_t len; } gl_luasrc;
extern const gl_luasrc gl_luasrcs[];

static const char arity_key = 'n';

/* A plain function with its count (upvalues: 1 the context, as the function expects, 2 the
** function, 3 the count): it runs in this frame, so its errors keep their names. */
static int counted_call(lua_State *L) {
  lua_Integer nargs = lua_tointeger(L, lua_upvalueindex(3));
  if (lua_gettop(L) > nargs) return gl_lua_too_many(L, (int)nargs);
  return lua_tocfunction(L, lua_upvalueindex(2))(L);
}

void gl_lua_setfuncs(lua_State *L, int idx, const gl_reg *l) {
  idx = lua_absindex(L, idx);
  for (; l->name; l++) {
    GL_PUSH_CTX(L);
    if (l->name[0] == '_' && l->name[1] == '_') {
      lua_pushcclosure(L, l->func, 1);
    } else {
      lua_pushcfunction(L, l->func);
      lua_pushinteger(L, l->nargs == GL_VARARGS ? INT_MAX : l->nargs);
      lua_pushcclosure(L, counted_call, 3);
    }
    lua_setfield(L, idx, l->name);
  }
}

/* gpu._arity(f) -> the most arguments f takes (math.huge: any number), or nil when f
** declared none; gpu._arity(f, n) declares a Lua function (lua/gpu/options.lua's counted). */
static int l_arity(lua_State *L) {
  int nargs;
  luaL_checkany(L, 1);
  lua_settop(L, 2);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &arity_key);
  if (!lua_isnil(L, 2)) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_checknumber(L, 2);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_rawset(L, -3);
    return 0;
  }
  if (lua_tocfunction(L, 1) == counted_call) {
    lua_getupvalue(L, 1, 3);
    nargs = (int)lua_tointeger(L, -1);
  } else if (!gl_lua_op_nargs(L, 1, &nargs) && !gl_lua_held_nargs(L, 1, &nargs)) {
    lua_pushvalue(L, 1);
    lua_rawget(L, -2);
    return 1;
  }
  if (nargs == INT_MAX) lua_pushnumber(L, HUGE_VAL);
  else lua_pushinteger(L, nargs);
  return 1;
}

void gl_lua_setloaded(lua_State *L, const char *name) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

void gl_lua_setboth(lua_State *L, int module, int methods, const gl_reg *l) {
  gl_lua_setops(L, module, "", l);
  gl_lua_setops(L, methods, "", l);
}

/* package.preload loader for an embedded module: upvalue 1 is its index. */
static int load_embedded(lua_State *L) {
  const gl_luasrc *s = &gl_luasrcs[lua_tointeger(L, lua_upvalueindex(1))];
  if (luaL_loadbuffer(L, s->src, s->len, s->chunkname) != LUA_OK) return lua_error(L);
  lua_pushvalue(L, 1);    /* module name */
  lua_call(L, 1, 1);
  return 1;
}

static void preload_lua_parts(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  for (int i = 0; gl_luasrcs[i].name; i++) {
    lua_pushinteger(L, i);
    lua_pushcclosure(L, load_embedded, 1);
    lua_setfield(L, -2, gl_luasrcs[i].name);
  }
  lua_pop(L, 1);
}

/* gpu.<name> for a Lua part that is not loaded yet: gpu.nn, gpu.bench... are required on
** first use and then cached in the module table. */
static int module_index(lua_State *L) {
  const char *key = luaL_checkstring(L, 2);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushfstring(L, "gpu.%s", key);
  if (lua_rawget(L, -2) == LUA_TNIL) {
    /* gpu.no_grad, gpu.enable_grad, gpu.inference_mode...: set by the autograd part when it loads */
    if (strcmp(key, "no_grad") != 0 && strcmp(key, "enable_grad") != 0 && strcmp(key, "autocast") != 0 &&
        strcmp(key, "inference_mode") != 0 && strcmp(key, "is_inference_mode_enabled") != 0)
      return 1;                                       /* not a Lua part: nil */
    lua_getglobal(L, "require");
    if (lua_isnil(L, -1)) return 1;
    lua_pushliteral(L, "gpu.autograd");
    lua_call(L, 1, 0);
    lua_pushvalue(L, 2);
    lua_rawget(L, 1);
    return 1;
  }
  lua_getglobal(L, "require");
  if (lua_isnil(L, -1)) return luaL_error(L, "gpu.%s: 'require' is not available", key);
  lua_pushfstring(L, "gpu.%s", key);
  lua_call(L, 1, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, 1, key);
  return 1;
}

/* States with the module open: the backends are shut down (a GPU's streams, handles, the
** pool) when the last one closes, before a GPU runtime unloads at exit. States may live
** in different threads, so the count is atomic. */
static int open_states;

/* __gc of the context: created first, so Lua finalises it after every array. */
static int ctx_gc(lua_State *L) {
  gl_lua_forget_current(L);
  if (__atomic_sub_fetch(&open_states, 1, __ATOMIC_ACQ_REL) > 0) return 0;
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *b = gl_backend_get(t);
    if (b->shutdown) b->shutdown();
  }
  return 0;
}

int luaopen_gpu(lua_State *L) {
  /* the context: one per state, kept in the registry and as upvalue 1 */
  /* user values: the metatable, then lgrad.c's (the rules, the stash of tracked calls) */
  gl_lctx *ctx = lua_newuserdatauv(L, sizeof *ctx, GL_CTX_UVALUES);
  memset(ctx, 0, sizeof *ctx);
  ctx->magic = GL_CTX_MAGIC;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, ctx_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  __atomic_add_fetch(&open_states, 1, __ATOMIC_ACQ_REL);
  gl_lua_install_reclaim();
  ctx->device = gl_cpu();
  lua_rawsetp(L, LUA_REGISTRYINDEX, &gl_ctx_key);

  lua_newtable(L);                                   /* module */
  int module = lua_gettop(L);
  lua_newtable(L);                                   /* methods */
  int methods = lua_gettop(L);
  luaL_newmetatable(L, GPULUA_ARRAY);                /* sets __name */
  int meta = lua_gettop(L);
  lua_pushvalue(L, meta);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &gl_meta_key);
  ctx->meta = lua_topointer(L, meta);
  GL_PUSH_CTX(L);
  lua_pushvalue(L, meta);
  lua_setiuservalue(L, -2, 1);
  lua_pop(L, 1);

  lua_newtable(L);                    /* Lua functions' declared counts (gpu._arity), weak keys */
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &arity_key);
  static const gl_reg introspection[] = {
    { "_arity", l_arity, 2 }, { NULL, NULL, 0 }
  };
  gl_lua_setfuncs(L, module, introspection);
  gl_open_args(L, module);

  lua_newtable(L);                    /* gpu._options: every options declaration (largs.c, options.lua) */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &gl_options_key);
  lua_setfield(L, module, "_options");

  gl_open_array(L, module, methods, meta);
  gl_open_create(L, module, methods);
  gl_open_shape(L, module, methods);
  gl_open_grad(L, module, methods);
  gl_open_device(L, module, methods);
  gl_open_math(L, module, methods, meta);
  gl_open_complex(L, module, methods);      /* after math: its elementwise rows come first */
  gl_open_event(L, module, methods);
  gl_open_indexing(L, module, methods);
  gl_open_select(L, module, methods);
  gl_open_linalg(L, module, methods);
  gl_open_fft(L, module);
  gl_open_conv(L, module, methods);
  gl_open_fused(L, module, methods);
  gl_open_rnn(L, module, methods);          /* after fused: adds to gpu.fused */
  gl_open_reduce(L, module, methods);
  gl_open_io(L, module, methods);
  gl_open_random(L, module, methods);
  gl_open_data(L, module, methods);
  gl_open_nvtx(L, module, methods);
  gl_open_kernel(L, module);
  gl_open_dist(L, module);
  gl_open_hold(L, module);
  gl_open_worker(L, module);
  gl_lua_make_light_meta(L, meta);                   /* every metamethod is in place */
  lua_createtable(L, 2, 0);                          /* gpu._metatables: both kinds of array */
  lua_pushvalue(L, meta);
  lua_rawseti(L, -2, 1);
  GL_PUSH_CTX(L);
  lua_getiuservalue(L, -1, GL_CTX_UV_LIGHTMETA);
  lua_remove(L, -2);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, module, "_metatables");

  lua_pushinteger(L, GL_MAXDIMS);                    /* for the Lua parts' shape checks */
  lua_setfield(L, module, "_max_dims");
  lua_pushliteral(L, GPULUA_VERSION);
  lua_setfield(L, module, "version");
  gl_open_dtypes(L, module);
  lua_pushvalue(L, methods);
  lua_setfield(L, module, "methods");               /* for Lua parts that add methods */
  lua_settop(L, module);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, module_index);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, module);

  preload_lua_parts(L);
  gl_open_routines(L, module);                       /* reads a preloaded part */

  return 1;
}
