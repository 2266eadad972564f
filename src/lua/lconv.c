/*
** lconv.c — gpu.im2col(x, {kernel =, stride =, padding =, dilation =, pad_value =}) and
** gpu.col2im(cols, output_shape, {kernel =, stride =, padding =, dilation =}): the window
** helpers under nn's Conv2d and pooling layers (lua/gpu/conv.lua). Sizes are a number or
** a pair {h, w}.
*/
#include <string.h>
#include "lgpu.h"

typedef struct conv_opts { int k[2], stride[2], pad[2], dil[2]; double padval; } conv_opts;

/* Sizes past 65536 are errors here (the ops layer rejects the negatives and zeros), so
** products like C * kh * kw stay far from overflow. */
static int checked_size(lua_State *L, int t, const char *key, lua_Integer v) {
  if (v > 65536 || v < -65536) luaL_argerror(L, t, lua_pushfstring(L, "option '%s' is out of range (%I)", key, v));
  return (int)v;
}

/* A size option: a number or {h, w} of integers; 'def' when absent. */
static void read_pair(lua_State *L, int t, const char *key, int *out, int def, bool required) {
  int ty = lua_getfield(L, t, key);
  if (ty == LUA_TNIL) {
    if (required) luaL_argerror(L, t, lua_pushfstring(L, "option '%s' is required", key));
    out[0] = out[1] = def;
  } else if (ty == LUA_TNUMBER) {
    if (!lua_isinteger(L, -1)) luaL_argerror(L, t, lua_pushfstring(L, "option '%s' must be an integer", key));
    out[0] = out[1] = checked_size(L, t, key, lua_tointeger(L, -1));
  } else if (ty == LUA_TTABLE && luaL_len(L, -1) == 2) {
    for (int i = 0; i < 2; i++) {
      lua_geti(L, -1, i + 1);
      if (!lua_isinteger(L, -1))
        luaL_argerror(L, t, lua_pushfstring(L, "option '%s' must hold two integers", key));
      out[i] = checked_size(L, t, key, lua_tointeger(L, -1));
      lua_pop(L, 1);
    }
  } else {
    luaL_argerror(L, t, lua_pushfstring(L, "option '%s' must be an integer or a pair {h, w}, got %s", key,
                                        luaL_typename(L, -1)));
  }
  lua_pop(L, 1);
}

static void read_opts(lua_State *L, int t, conv_opts *o, bool im2col) {
  luaL_checktype(L, t, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (k == NULL || !(strcmp(k, "kernel") == 0 || strcmp(k, "stride") == 0 || strcmp(k, "padding") == 0 ||
                       strcmp(k, "dilation") == 0 || (im2col && strcmp(k, "pad_value") == 0)))
      luaL_argerror(L, t, lua_pushfstring(L, "unknown option '%s' (expected kernel, stride, padding, dilation%s)",
                                          luaL_tolstring(L, -2, NULL), im2col ? ", pad_value" : ""));
    lua_pop(L, 1);
  }
  read_pair(L, t, "kernel", o->k, 1, true);
  read_pair(L, t, "stride", o->stride, 1, false);
  read_pair(L, t, "padding", o->pad, 0, false);
  read_pair(L, t, "dilation", o->dil, 1, false);
  o->padval = 0;
  if (im2col && lua_getfield(L, t, "pad_value") != LUA_TNIL) {
    if (!lua_isnumber(L, -1)) luaL_argerror(L, t, "option 'pad_value' must be a number");
    o->padval = lua_tonumber(L, -1);
  }
  if (im2col) lua_pop(L, 1);
}

static int l_im2col(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  conv_opts o;
  read_opts(L, 2, &o, true);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_im2col(out, x, o.k, o.stride, o.pad, o.dil, o.padval);
  if (gl_lua_retry_oom(L, st, gl_array_device(x))) st = gl_op_im2col(out, x, o.k, o.stride, o.pad, o.dil, o.padval);
  gl_lua_check_status(L, st, 0);
  if (out->size >= 256) gl_lua_account(L, (size_t)out->size * gl_array_itemsize(out));
  return 1;
}

static int l_col2im(lua_State *L) {
  gl_array *c = gl_lua_check(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  if (luaL_len(L, 2) != 4) luaL_argerror(L, 2, "output_shape must be {N, C, H, W}");
  int64_t shape[4];
  for (int i = 0; i < 4; i++) {
    lua_geti(L, 2, i + 1);
    if (!lua_isinteger(L, -1)) luaL_argerror(L, 2, "output_shape must hold 4 integers");
    shape[i] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  conv_opts o;
  read_opts(L, 3, &o, false);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_col2im(out, c, shape, o.k, o.stride, o.pad, o.dil);
  if (gl_lua_retry_oom(L, st, gl_array_device(c))) st = gl_op_col2im(out, c, shape, o.k, o.stride, o.pad, o.dil);
  gl_lua_check_status(L, st, 0);
  if (out->size >= 256) gl_lua_account(L, (size_t)out->size * gl_array_itemsize(out));
  return 1;
}

static const luaL_Reg conv_funcs[] = {
  { "im2col", l_im2col },
  { "col2im", l_col2im },
  { NULL, NULL }
};

void gl_open_conv(lua_State *L, int module, int methods) {
  gl_lua_setboth(L, module, methods, conv_funcs);
}
