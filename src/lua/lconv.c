/*
** lconv.c — gpu.im2col(x, {kernel =, stride =, padding =, dilation =, pad_value =}) and
** gpu.col2im(cols, output_shape, {kernel =, stride =, padding =, dilation =}): the window
** helpers under nn's Conv2d and pooling layers (lua/gpu/conv.lua). Sizes are a number or
** a pair {h, w}. And gpu.dnn: cuDNN's convolution, pooling and batch norm, which
** lua/gpu/conv.lua prefers on devices that have them.
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
  gl_lua_account_array(L, out);
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
  gl_lua_account_array(L, out);
  return 1;
}

/* ---- gpu.dnn: the library kernels (cuDNN) under nn's layers on cuda ---------------------------
** Plain functions, no autograd (lua/gpu/conv.lua records them): every one checks its
** operands, then raises "... is not supported on cpu" where the device has no cuDNN. */

/* Raises at the options table t for a key not in 'allowed' (space-separated). */
static void check_keys(lua_State *L, int t, const char *allowed) {
  luaL_checktype(L, t, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    bool ok = false;
    if (k) {
      size_t n = strlen(k);
      for (const char *p = allowed; *p; ) {
        const char *e = strchr(p, ' ');
        size_t m = e ? (size_t)(e - p) : strlen(p);
        if (m == n && strncmp(p, k, n) == 0) { ok = true; break; }
        p += m + (e ? 1 : 0);
      }
    }
    if (!ok)
      luaL_argerror(L, t, lua_pushfstring(L, "unknown option '%s' (expected %s)", luaL_tolstring(L, -2, NULL), allowed));
    lua_pop(L, 1);
  }
}

/* An optional number option; 'def' when absent. */
static double opt_number(lua_State *L, int t, const char *key, double def) {
  double v = def;
  int ty = lua_getfield(L, t, key);
  if (ty != LUA_TNIL) {
    if (!lua_isnumber(L, -1)) luaL_argerror(L, t, lua_pushfstring(L, "option '%s' must be a number", key));
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* {stride =, padding =, dilation =, groups =} at t (or none). */
static void conv_geom(lua_State *L, int t, gl_dnn_conv *c) {
  if (lua_isnoneornil(L, t)) {
    c->stride[0] = c->stride[1] = 1;
    c->pad[0] = c->pad[1] = 0;
    c->dil[0] = c->dil[1] = 1;
    c->groups = 1;
    return;
  }
  check_keys(L, t, "stride padding dilation groups");
  read_pair(L, t, "stride", c->stride, 1, false);
  read_pair(L, t, "padding", c->pad, 0, false);
  read_pair(L, t, "dilation", c->dil, 1, false);
  lua_getfield(L, t, "groups");
  lua_Integer g = lua_isnil(L, -1) ? 1 : (lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0);
  lua_pop(L, 1);
  if (g < 1 || g > 65536) luaL_argerror(L, t, "option 'groups' must be a positive integer");
  c->groups = (int)g;
}

/* A 4-integer shape table at idx. */
static void shape4(lua_State *L, int idx, const char *what, int64_t *shape) {
  luaL_checktype(L, idx, LUA_TTABLE);
  if (luaL_len(L, idx) != 4) luaL_argerror(L, idx, lua_pushfstring(L, "%s must hold 4 integers", what));
  for (int i = 0; i < 4; i++) {
    lua_geti(L, idx, i + 1);
    if (!lua_isinteger(L, -1)) luaL_argerror(L, idx, lua_pushfstring(L, "%s must hold 4 integers", what));
    shape[i] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
}


/* gpu.dnn.available([device]) -> true | false, reason (a device that is not there is
** an answer, not an error; a malformed name is an error) */
static int l_dnn_available(lua_State *L) {
  gl_device d;
  if (lua_isnoneornil(L, 1)) d = gl_lua_default_device(L);
  else {
    gl_lua_check_status(L, gl_device_parse(luaL_checkstring(L, 1), &d), 1);
    const gl_backend *be;
    if (gl_backend_for(d, &be) != GL_OK) {
      lua_pushboolean(L, 0);
      lua_pushstring(L, gl_errmsg());
      return 2;
    }
  }
  const char *why = gl_op_dnn_unavailable(d);
  lua_pushboolean(L, why == NULL);
  if (why == NULL) return 1;
  lua_pushstring(L, why);
  return 2;
}

/* Runs an op that makes one array, with the out-of-memory ritual. */
#define GL_DNN_RUN1(L, out, dev, call)                                                        \
  do {                                                                                        \
    gl_status st_ = (call);                                                                   \
    if (gl_lua_retry_oom(L, st_, dev)) st_ = (call);                                          \
    gl_lua_check_status(L, st_, 0);                                                           \
    gl_lua_account_array(L, out);                                                                          \
  } while (0)

/* gpu.dnn.conv2d(x, w [, {stride, padding, dilation, groups}]) */
static int l_dnn_conv2d(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *w = gl_lua_check(L, 2);
  gl_dnn_conv c;
  conv_geom(L, 3, &c);
  gl_array *out = gl_lua_push(L);
  GL_DNN_RUN1(L, out, gl_array_device(x), gl_op_dnn_conv2d(out, x, w, &c));
  return 1;
}

/* gpu.dnn.conv2d_backward_data(dy, w, input_shape [, opts]) */
static int l_dnn_conv2d_bwd_data(lua_State *L) {
  gl_array *dy = gl_lua_check(L, 1), *w = gl_lua_check(L, 2);
  int64_t xs[4];
  shape4(L, 3, "input_shape", xs);
  gl_dnn_conv c;
  conv_geom(L, 4, &c);
  gl_array *out = gl_lua_push(L);
  GL_DNN_RUN1(L, out, gl_array_device(dy), gl_op_dnn_conv2d_bwd_data(out, dy, w, xs, &c));
  return 1;
}

/* gpu.dnn.conv2d_backward_filter(x, dy, weight_shape [, opts]) */
static int l_dnn_conv2d_bwd_filter(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *dy = gl_lua_check(L, 2);
  int64_t ws[4];
  shape4(L, 3, "weight_shape", ws);
  gl_dnn_conv c;
  conv_geom(L, 4, &c);
  gl_array *out = gl_lua_push(L);
  GL_DNN_RUN1(L, out, gl_array_device(x), gl_op_dnn_conv2d_bwd_filter(out, x, dy, ws, &c));
  return 1;
}

/* {kernel =, stride = kernel, padding = 0} of a pooling call at t. */
static void pool_geom(lua_State *L, int t, int *k, int *stride, int *pad) {
  check_keys(L, t, "kernel stride padding");
  read_pair(L, t, "kernel", k, 1, true);
  bool has_stride = lua_getfield(L, t, "stride") != LUA_TNIL;
  lua_pop(L, 1);
  if (has_stride) read_pair(L, t, "stride", stride, 1, false);
  else { stride[0] = k[0]; stride[1] = k[1]; }
  read_pair(L, t, "padding", pad, 0, false);
}

/* gpu.dnn.max_pool2d(x, opts) / avg_pool2d(x, opts) */
static int pool(lua_State *L, bool max) {
  gl_array *x = gl_lua_check(L, 1);
  int k[2], s[2], p[2];
  pool_geom(L, 2, k, s, p);
  gl_array *out = gl_lua_push(L);
  GL_DNN_RUN1(L, out, gl_array_device(x), gl_op_dnn_pool2d(out, max, x, k, s, p));
  return 1;
}
static int l_dnn_max_pool2d(lua_State *L) { return pool(L, true); }
static int l_dnn_avg_pool2d(lua_State *L) { return pool(L, false); }

/* gpu.dnn.max_pool2d_backward(x, y, dy, opts) / avg_pool2d_backward */
static int pool_bwd(lua_State *L, bool max) {
  gl_array *x = gl_lua_check(L, 1), *y = gl_lua_check(L, 2), *dy = gl_lua_check(L, 3);
  int k[2], s[2], p[2];
  pool_geom(L, 4, k, s, p);
  gl_array *out = gl_lua_push(L);
  GL_DNN_RUN1(L, out, gl_array_device(x), gl_op_dnn_pool2d_bwd(out, max, x, y, dy, k, s, p));
  return 1;
}
static int l_dnn_max_pool2d_bwd(lua_State *L) { return pool_bwd(L, true); }
static int l_dnn_avg_pool2d_bwd(lua_State *L) { return pool_bwd(L, false); }


/* gpu.dnn.batch_norm(x, weight, bias, running_mean, running_var [, {training, momentum, eps}])
** -> y, save_mean, save_invstd (training) or y */
static int l_dnn_batch_norm(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *w = gl_lua_check(L, 2), *b = gl_lua_check(L, 3);
  gl_array *rm = gl_lua_optarray(L, 4), *rv = gl_lua_optarray(L, 5);
  bool training = true;
  double momentum = 0.1, eps = 1e-5;
  if (!lua_isnoneornil(L, 6)) {
    check_keys(L, 6, "training momentum eps");
    if (lua_getfield(L, 6, "training") != LUA_TNIL) training = lua_toboolean(L, -1);
    lua_pop(L, 1);
    momentum = opt_number(L, 6, "momentum", momentum);
    eps = opt_number(L, 6, "eps", eps);
  }
  lua_settop(L, 6);
  gl_array *y = gl_lua_push(L);
  gl_array *sm = gl_lua_push(L);
  gl_array *si = gl_lua_push(L);
  gl_status st = gl_op_dnn_batch_norm(y, sm, si, x, w, b, rm, rv, training, momentum, eps);
  if (gl_lua_retry_oom(L, st, gl_array_device(x))) st = gl_op_dnn_batch_norm(y, sm, si, x, w, b, rm, rv, training, momentum, eps);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, y);
  if (!training) { lua_settop(L, 7); return 1; }
  return 3;
}

/* gpu.dnn.batch_norm_backward(x, dy, weight, save_mean, save_invstd [, {eps}]) -> dx, dweight, dbias */
static int l_dnn_batch_norm_bwd(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *dy = gl_lua_check(L, 2), *w = gl_lua_check(L, 3);
  gl_array *sm = gl_lua_check(L, 4), *si = gl_lua_check(L, 5);
  double eps = 1e-5;
  if (!lua_isnoneornil(L, 6)) {
    check_keys(L, 6, "eps");
    eps = opt_number(L, 6, "eps", eps);
  }
  lua_settop(L, 6);
  gl_array *dx = gl_lua_push(L);
  gl_array *dw = gl_lua_push(L);
  gl_array *db = gl_lua_push(L);
  gl_status st = gl_op_dnn_batch_norm_bwd(dx, dw, db, x, dy, w, sm, si, eps);
  if (gl_lua_retry_oom(L, st, gl_array_device(x))) st = gl_op_dnn_batch_norm_bwd(dx, dw, db, x, dy, w, sm, si, eps);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, dx);
  return 3;
}

/* gpu.dnn.softmax(x [, {log = false}]) over the last axis; softmax_backward(y, dy [, {log}]) */
static bool softmax_log(lua_State *L, int t) {
  if (lua_isnoneornil(L, t)) return false;
  check_keys(L, t, "log");
  bool log = lua_getfield(L, t, "log") != LUA_TNIL && lua_toboolean(L, -1);
  lua_pop(L, 1);
  return log;
}

static int l_dnn_softmax(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  bool log = softmax_log(L, 2);
  gl_array *out = gl_lua_push(L);
  GL_DNN_RUN1(L, out, gl_array_device(x), gl_op_dnn_softmax(out, log, x));
  return 1;
}

static int l_dnn_softmax_bwd(lua_State *L) {
  gl_array *y = gl_lua_check(L, 1), *dy = gl_lua_check(L, 2);
  bool log = softmax_log(L, 3);
  gl_array *out = gl_lua_push(L);
  GL_DNN_RUN1(L, out, gl_array_device(y), gl_op_dnn_softmax_bwd(out, log, y, dy));
  return 1;
}

static const luaL_Reg conv_funcs[] = {
  { "im2col", l_im2col },
  { "col2im", l_col2im },
  { NULL, NULL }
};

static const luaL_Reg dnn_funcs[] = {
  { "available", l_dnn_available },
  { "conv2d", l_dnn_conv2d },
  { "conv2d_backward_data", l_dnn_conv2d_bwd_data },
  { "conv2d_backward_filter", l_dnn_conv2d_bwd_filter },
  { "max_pool2d", l_dnn_max_pool2d },
  { "avg_pool2d", l_dnn_avg_pool2d },
  { "max_pool2d_backward", l_dnn_max_pool2d_bwd },
  { "avg_pool2d_backward", l_dnn_avg_pool2d_bwd },
  { "batch_norm", l_dnn_batch_norm },
  { "batch_norm_backward", l_dnn_batch_norm_bwd },
  { "softmax", l_dnn_softmax },
  { "softmax_backward", l_dnn_softmax_bwd },
  { NULL, NULL }
};

void gl_open_conv(lua_State *L, int module, int methods) {
  gl_lua_setboth(L, module, methods, conv_funcs);
  lua_newtable(L);                                    /* gpu.dnn */
  gl_lua_setfuncs(L, lua_gettop(L), dnn_funcs);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "enabled");                     /* nn's layers use it where available */
  lua_setfield(L, module, "dnn");
}
