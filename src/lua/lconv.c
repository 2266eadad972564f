/*
** lconv.c — gpu.im2col(x, {kernel =, stride =, padding =, dilation =, pad_value =}) and
** gpu.col2im(cols, output_shape, {kernel =, stride =, padding =, dilation =}): the window
** helpers under nn's Conv2d and pooling layers (lua/gpu/conv.lua). Sizes are a number or
** a pair {h, w}. And gpu.dnn: cuDNN's convolution, pooling and batch norm, which
** lua/gpu/conv.lua prefers on devices that have them.
*/
#include <string.h>
#include "lbody.h"

typedef struct conv_opts { int k[2], stride[2], pad[2], dil[2]; double padval; } conv_opts;

/* ---- options ------------------------------------------------------------------------------ */

/* Sizes past 65536 are errors here (the ops layer rejects the negatives and zeros), so
** products like C * kh * kw stay far from overflow. */
#define SIZE_KEY(name) { name, GL_OPT_PAIR, GL_RANGE_MIN | GL_RANGE_MAX, -65536, 65536, NULL }
static const gl_optkey im2col_keys[] = {
  SIZE_KEY("kernel"), SIZE_KEY("stride"), SIZE_KEY("padding"), SIZE_KEY("dilation"),
  { "pad_value", GL_OPT_NUMBER, 0, 0, 0, NULL }, { NULL }
};
static const gl_optkey col2im_keys[] = {
  SIZE_KEY("kernel"), SIZE_KEY("stride"), SIZE_KEY("padding"), SIZE_KEY("dilation"), { NULL }
};
static const gl_optkey conv_keys[] = {
  SIZE_KEY("stride"), SIZE_KEY("padding"), SIZE_KEY("dilation"),
  { "groups", GL_OPT_INT, GL_RANGE_MIN | GL_RANGE_MAX, 1, 65536, NULL }, { NULL }
};
static const gl_optkey pool_keys[] = { SIZE_KEY("kernel"), SIZE_KEY("stride"), SIZE_KEY("padding"), { NULL } };
static const gl_optkey batch_norm_keys[] = {
  GL_KEY_FLAG("training"), { "momentum", GL_OPT_NUMBER, GL_RANGE_MIN | GL_RANGE_MAX, 0, 1, NULL },
  { "eps", GL_OPT_NUMBER, GL_RANGE_MIN, 0, 0, NULL }, { NULL }
};
static const gl_optkey eps_keys[] = { { "eps", GL_OPT_NUMBER, GL_RANGE_MIN, 0, 0, NULL }, { NULL } };
static const gl_optkey softmax_keys[] = { GL_KEY_FLAG("log"), { NULL } };
/* cuDNN's RNN: mode as choices in gl_rnn_mode's order */
static const gl_optkey rnn_keys[] = {
  { "mode", GL_OPT_STRING, 0, 0, 0, "rnn_tanh rnn_relu lstm gru" },
  { "num_layers", GL_OPT_INT, GL_RANGE_MIN | GL_RANGE_MAX, 1, 65536, NULL },
  GL_KEY_FLAG("bidirectional"), GL_KEY_FLAG("bias"), GL_KEY_FLAG("training"), { NULL }
};
#undef SIZE_KEY

#define X4 "gpu.ones(1, 1, 4, 4)"
static const gl_optdecl im2col_decl = { "im2col", "gpu.im2col(" X4 ", (function(o) o.kernel = o.kernel or 2 return o end)(%s))",
                                        im2col_keys };
static const gl_optdecl col2im_decl = {
  "col2im", "gpu.col2im(gpu.ones(1, 4, 9), {1, 1, 4, 4}, (function(o) o.kernel = o.kernel or 2 return o end)(%s))",
  col2im_keys };
static const gl_optdecl conv2d_decl = { "dnn.conv2d", "gpu.dnn.conv2d(" X4 ", gpu.ones(1, 1, 3, 3), %s)", conv_keys };
static const gl_optdecl conv2d_bwd_data_decl = {
  "dnn.conv2d_backward_data", "gpu.dnn.conv2d_backward_data(gpu.ones(1, 1, 2, 2), gpu.ones(1, 1, 3, 3), {1, 1, 4, 4}, %s)",
  conv_keys };
static const gl_optdecl conv2d_bwd_filter_decl = {
  "dnn.conv2d_backward_filter", "gpu.dnn.conv2d_backward_filter(" X4 ", gpu.ones(1, 1, 2, 2), {1, 1, 3, 3}, %s)",
  conv_keys };
#define KERNEL2 "(function(o) o.kernel = o.kernel or 2 return o end)(%s)"
static const gl_optdecl max_pool_decl = { "dnn.max_pool2d", "gpu.dnn.max_pool2d(" X4 ", " KERNEL2 ")", pool_keys };
static const gl_optdecl avg_pool_decl = { "dnn.avg_pool2d", "gpu.dnn.avg_pool2d(" X4 ", " KERNEL2 ")", pool_keys };
static const gl_optdecl max_pool_bwd_decl = {
  "dnn.max_pool2d_backward", "gpu.dnn.max_pool2d_backward(" X4 ", gpu.ones(1, 1, 2, 2), gpu.ones(1, 1, 2, 2), " KERNEL2 ")",
  pool_keys };
static const gl_optdecl avg_pool_bwd_decl = {
  "dnn.avg_pool2d_backward", "gpu.dnn.avg_pool2d_backward(" X4 ", gpu.ones(1, 1, 2, 2), gpu.ones(1, 1, 2, 2), " KERNEL2 ")",
  pool_keys };
static const gl_optdecl batch_norm_decl = {
  "dnn.batch_norm", "gpu.dnn.batch_norm(" X4 ", gpu.ones(1), gpu.zeros(1), gpu.zeros(1), gpu.ones(1), %s)",
  batch_norm_keys };
static const gl_optdecl batch_norm_bwd_decl = {
  "dnn.batch_norm_backward", "gpu.dnn.batch_norm_backward(" X4 ", " X4 ", gpu.ones(1), gpu.zeros(1), gpu.ones(1), %s)",
  eps_keys };
static const gl_optdecl softmax_decl = { "dnn.softmax", "gpu.dnn.softmax(gpu.ones(2, 3), %s)", softmax_keys };
static const gl_optdecl softmax_bwd_decl = {
  "dnn.softmax_backward", "gpu.dnn.softmax_backward(gpu.ones(2, 3), gpu.ones(2, 3), %s)", softmax_keys };
static const gl_optdecl layer_norm_decl = {
  "dnn.layer_norm", "gpu.dnn.layer_norm(gpu.ones(2, 3), gpu.ones(3), gpu.zeros(3), %s)", eps_keys };
static const gl_optdecl layer_norm_bwd_decl = {
  "dnn.layer_norm_backward",
  "gpu.dnn.layer_norm_backward(gpu.ones(2, 3), gpu.ones(2, 3), gpu.ones(3), gpu.zeros(2), gpu.ones(2), %s)", eps_keys };
static const gl_optdecl rnn_decl = {
  "dnn.rnn", "gpu.dnn.rnn(gpu.ones(1, 1, 2), gpu.ones(12), gpu.zeros(1, 1, 2), nil, %s)", rnn_keys };
static const gl_optdecl rnn_bwd_decl = {
  "dnn.rnn_backward",
  "gpu.dnn.rnn_backward(gpu.ones(4), gpu.ones(4), gpu.zeros(0, {dtype = 'uint8'}), gpu.ones(1, 1, 2), "
  "gpu.ones(12), gpu.zeros(1, 1, 2), nil, %s)", rnn_keys };
#undef X4
#undef KERNEL2
static const gl_optdecl *const conv_decls[] = {
  &im2col_decl, &col2im_decl, &conv2d_decl, &conv2d_bwd_data_decl, &conv2d_bwd_filter_decl, &max_pool_decl, &avg_pool_decl,
  &max_pool_bwd_decl, &avg_pool_bwd_decl, &batch_norm_decl, &batch_norm_bwd_decl, &softmax_decl, &softmax_bwd_decl,
  &layer_norm_decl, &layer_norm_bwd_decl, &rnn_decl, &rnn_bwd_decl, NULL
};

/* A size option (vals[i]): its pair, or 'def' when absent. */
static void size_opt(const gl_optval *v, int *out, int def) {
  out[0] = v->set ? v->pair[0] : def;
  out[1] = v->set ? v->pair[1] : def;
}

/* The window options {kernel (required), stride, padding, dilation [, pad_value]} at t. */
static void read_opts(lua_State *L, int t, conv_opts *o, bool im2col) {
  luaL_checktype(L, t, LUA_TTABLE);
  gl_optval v[5];
  gl_lua_readopts(L, t, im2col ? &im2col_decl : &col2im_decl, v);
  if (!v[0].set) luaL_argerror(L, t, "option 'kernel' is required");
  size_opt(&v[0], o->k, 1);
  size_opt(&v[1], o->stride, 1);
  size_opt(&v[2], o->pad, 0);
  size_opt(&v[3], o->dil, 1);
  o->padval = im2col && v[4].set ? v[4].n : 0;
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

static int l_im2col(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  conv_opts o;
  read_opts(L, 2, &o, true);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_im2col(out, x, o.k, o.stride, o.pad, o.dil, o.padval);
  return gl_lua_result(L, st, out, 0);
}

static int l_col2im(lua_State *L) {
  gl_array *c = gl_lua_check(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  if (luaL_len(L, 2) != 4) luaL_argerror(L, 2, "output_shape must be {N, C, H, W}");
  int64_t shape[4];
  shape4(L, 2, "output_shape", shape);
  conv_opts o;
  read_opts(L, 3, &o, false);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_col2im(out, c, shape, o.k, o.stride, o.pad, o.dil);
  return gl_lua_result(L, st, out, 0);
}

/* ---- gpu.dnn: the library kernels (cuDNN) under nn's layers on cuda ---------------------------
** Plain functions, no autograd (lua/gpu/conv.lua records them): every one checks its
** operands, then raises "... is not supported on <device>" where the device has no library for it. */

/* {stride =, padding =, dilation =, groups =} at t (or none), for declaration d. */
static void conv_geom(lua_State *L, int t, const gl_optdecl *d, gl_dnn_conv *c) {
  gl_optval v[4];
  gl_lua_readopts(L, t, d, v);
  size_opt(&v[0], c->stride, 1);
  size_opt(&v[1], c->pad, 0);
  size_opt(&v[2], c->dil, 1);
  c->groups = v[3].set ? (int)v[3].i : 1;
}


/* gpu.dnn.available([device [, dtype [, family]]]) -> true | false, reason (a device that
** is not there is an answer, not an error; a malformed name is an error). With a dtype:
** whether the library takes data of it for family "conv" (default), "pool", "batch_norm"
** "softmax", "layer_norm", "rnn" (oneDNN on the cpu: float32, no softmax, rnn: LSTM and
** GRU layer by layer; cuDNN on cuda: rnn is the whole network) or "rnn_net" (the whole
** network in one call, gpu.dnn.rnn). */
static int l_dnn_available(lua_State *L) {
  static const char *const families[] = { "conv", "pool", "batch_norm", "softmax", "layer_norm", "rnn", "rnn_net",
                                          NULL };
  int dt = lua_isnoneornil(L, 2) ? -1 : (int)gl_lua_dtype(L, 2);
  int family = luaL_checkoption(L, 3, "conv", families);
  if (family == GL_DNN_RNN + 1) family = GL_DNN_WHOLE_RNN;
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
  const char *why = gl_op_dnn_unavailable(d, dt, family);
  lua_pushboolean(L, why == NULL);
  if (why == NULL) return 1;
  lua_pushstring(L, why);
  return 2;
}


/* gpu.dnn.conv2d(x, w [, {stride, padding, dilation, groups}]) */
static int l_dnn_conv2d(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *w = gl_lua_check(L, 2);
  gl_dnn_conv c;
  conv_geom(L, 3, &conv2d_decl, &c);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_dnn_conv2d(out, x, w, &c), out, 0);
}

/* gpu.dnn.conv2d_backward_data(dy, w, input_shape [, opts]) -> dx
** gpu.dnn.conv2d_backward_filter(x, dy, weight_shape [, opts]) -> dw */
static int conv2d_bwd(lua_State *L, bool data) {
  gl_array *a = gl_lua_check(L, 1), *b = gl_lua_check(L, 2);
  int64_t shape[4];
  shape4(L, 3, data ? "input_shape" : "weight_shape", shape);
  gl_dnn_conv c;
  conv_geom(L, 4, data ? &conv2d_bwd_data_decl : &conv2d_bwd_filter_decl, &c);
  gl_array *out = gl_lua_push(L);
  gl_status st = data ? gl_op_dnn_conv2d_bwd_data(out, a, b, shape, &c) : gl_op_dnn_conv2d_bwd_filter(out, a, b, shape, &c);
  return gl_lua_result(L, st, out, 0);
}
static int l_dnn_conv2d_bwd_data(lua_State *L) { return conv2d_bwd(L, true); }
static int l_dnn_conv2d_bwd_filter(lua_State *L) { return conv2d_bwd(L, false); }

/* {kernel =, stride = kernel, padding = 0} of a pooling call at t. */
static void pool_geom(lua_State *L, int t, const gl_optdecl *d, int *k, int *stride, int *pad) {
  luaL_checktype(L, t, LUA_TTABLE);
  gl_optval v[3];
  gl_lua_readopts(L, t, d, v);
  if (!v[0].set) luaL_argerror(L, t, "option 'kernel' is required");
  size_opt(&v[0], k, 1);
  size_opt(&v[1], stride, 0);
  if (!v[1].set) { stride[0] = k[0]; stride[1] = k[1]; }
  size_opt(&v[2], pad, 0);
}

/* gpu.dnn.max_pool2d(x, opts) / avg_pool2d(x, opts) */
static int pool(lua_State *L, bool max) {
  gl_array *x = gl_lua_check(L, 1);
  int k[2], s[2], p[2];
  pool_geom(L, 2, max ? &max_pool_decl : &avg_pool_decl, k, s, p);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_dnn_pool2d(out, max, x, k, s, p), out, 0);
}
static int l_dnn_max_pool2d(lua_State *L) { return pool(L, true); }
static int l_dnn_avg_pool2d(lua_State *L) { return pool(L, false); }

/* gpu.dnn.max_pool2d_backward(x, y, dy, opts) / avg_pool2d_backward */
static int pool_bwd(lua_State *L, bool max) {
  gl_array *x = gl_lua_check(L, 1), *y = gl_lua_check(L, 2), *dy = gl_lua_check(L, 3);
  int k[2], s[2], p[2];
  pool_geom(L, 4, max ? &max_pool_bwd_decl : &avg_pool_bwd_decl, k, s, p);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_dnn_pool2d_bwd(out, max, x, y, dy, k, s, p), out, 0);
}
static int l_dnn_max_pool2d_bwd(lua_State *L) { return pool_bwd(L, true); }
static int l_dnn_avg_pool2d_bwd(lua_State *L) { return pool_bwd(L, false); }


/* The option eps (default 1e-5) of the normalizations, in the options table at t. */
static double eps_opt(lua_State *L, int t, const gl_optdecl *d) {
  gl_optval v[1];
  gl_lua_readopts(L, t, d, v);
  return v[0].set ? v[0].n : 1e-5;
}

/* gpu.dnn.batch_norm(x, weight, bias, running_mean, running_var [, {training, momentum, eps}])
** -> y, save_mean, save_invstd (training) or y */
static int l_dnn_batch_norm(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *w = gl_lua_check(L, 2), *b = gl_lua_check(L, 3);
  gl_array *running_mean = gl_lua_optarray(L, 4), *running_var = gl_lua_optarray(L, 5);
  gl_optval v[3];
  gl_lua_readopts(L, 6, &batch_norm_decl, v);
  bool training = v[0].set ? v[0].b : true;
  double momentum = v[1].set ? v[1].n : 0.1, eps = v[2].set ? v[2].n : 1e-5;
  gl_array *r[3];                                     /* y, save_mean, save_invstd */
  gl_lua_push_results(L, 6, r, 3);
  gl_lua_results(L, gl_op_dnn_batch_norm(r[0], r[1], r[2], x, w, b, running_mean, running_var, training, momentum, eps),
                 r, 3);
  if (!training) { lua_settop(L, 7); return 1; }
  return 3;
}

/* gpu.dnn.layer_norm(x, weight | nil, bias | nil [, {eps = 1e-5}]) -> y, mean, rstd over the
** last axis (gpu.fused.layer_norm's results, through oneDNN on the cpu) */
static int l_dnn_layer_norm(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *w = gl_lua_optarray(L, 2), *b = gl_lua_optarray(L, 3);
  double eps = eps_opt(L, 4, &layer_norm_decl);
  gl_array *r[3];                                     /* y, mean, rstd */
  gl_lua_push_results(L, 4, r, 3);
  return gl_lua_results(L, gl_op_dnn_layer_norm(r[0], r[1], r[2], x, w, b, eps), r, 3);
}

/* gpu.dnn.batch_norm_backward(x, dy, weight, save_mean, save_invstd [, {eps}]) -> dx, dweight, dbias
** gpu.dnn.layer_norm_backward(x, dy, weight | nil, mean, rstd [, {eps}]) -> dx, dweight, dbias */
static int norm_bwd(lua_State *L, bool batch) {
  gl_array *x = gl_lua_check(L, 1), *dy = gl_lua_check(L, 2), *w = batch ? gl_lua_check(L, 3) : gl_lua_optarray(L, 3);
  gl_array *mean = gl_lua_check(L, 4), *invstd = gl_lua_check(L, 5);
  double eps = eps_opt(L, 6, batch ? &batch_norm_bwd_decl : &layer_norm_bwd_decl);
  gl_array *r[3];                                     /* dx, dweight, dbias */
  gl_lua_push_results(L, 6, r, 3);
  gl_status st = batch ? gl_op_dnn_batch_norm_bwd(r[0], r[1], r[2], x, dy, w, mean, invstd, eps)
                       : gl_op_dnn_layer_norm_bwd(r[0], r[1], r[2], x, dy, w, mean, invstd, eps);
  return gl_lua_results(L, st, r, 3);
}
static int l_dnn_batch_norm_bwd(lua_State *L) { return norm_bwd(L, true); }
static int l_dnn_layer_norm_bwd(lua_State *L) { return norm_bwd(L, false); }

/* The RNN of an options table at t (mode default "lstm", 1 layer, one direction, biases);
** *training: the forward keeps a reserve for the backward (default true). */
static void rnn_opts(lua_State *L, int t, const gl_optdecl *d, gl_dnn_rnn_net *r, bool *training) {
  gl_optval v[5];
  gl_lua_readopts(L, t, d, v);
  memset(r, 0, sizeof *r);
  r->mode = v[0].set ? (gl_rnn_mode)v[0].choice : GL_RNN_LSTM;
  r->layers = v[1].set ? (int)v[1].i : 1;
  r->dirs = v[2].set && v[2].b ? 2 : 1;
  r->bias = v[3].set ? v[3].b : true;
  if (training) *training = v[4].set ? v[4].b : true;
}

/* gpu.dnn.rnn(x (L, N, I), w (flat, PyTorch's order), h0 (layers * D, N, H), c0 | nil
** [, {mode = "lstm", num_layers = 1, bidirectional = false, bias = true, training = true}])
** -> out (flat: y, h_n [, c_n]), reserve (uint8, for the backward) */
static int l_dnn_rnn(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *w = gl_lua_check(L, 2), *hx = gl_lua_check(L, 3), *cx = gl_lua_optarray(L, 4);
  gl_dnn_rnn_net net;
  bool training;
  rnn_opts(L, 5, &rnn_decl, &net, &training);
  gl_array *r[2];                                     /* out, reserve */
  gl_lua_push_results(L, 5, r, 2);
  return gl_lua_results(L, gl_op_dnn_rnn_net(r[0], r[1], x, w, hx, cx, &net, training), r, 2);
}

/* gpu.dnn.rnn_backward(g, out, reserve, x, w, h0, c0 | nil [, opts]) -> dx, dw, dh0 [, dc0] */
static int l_dnn_rnn_bwd(lua_State *L) {
  gl_array *g = gl_lua_check(L, 1), *out = gl_lua_check(L, 2), *reserve = gl_lua_check(L, 3);
  gl_array *x = gl_lua_check(L, 4), *w = gl_lua_check(L, 5), *hx = gl_lua_check(L, 6), *cx = gl_lua_optarray(L, 7);
  gl_dnn_rnn_net net;
  rnn_opts(L, 8, &rnn_bwd_decl, &net, NULL);
  gl_array *r[4];                                     /* dx, dw, dhx, dcx */
  gl_lua_push_results(L, 8, r, 4);
  gl_lua_results(L, gl_op_dnn_rnn_net_bwd(r[0], r[1], r[2], r[3], g, out, reserve, x, w, hx, cx, &net), r, 4);
  if (cx == NULL) { lua_settop(L, 11); return 3; }
  return 4;
}

/* gpu.dnn.softmax(x [, {log = false}]) over the last axis; softmax_backward(y, dy [, {log}]) */
static bool softmax_log(lua_State *L, int t, const gl_optdecl *d) {
  gl_optval v[1];
  gl_lua_readopts(L, t, d, v);
  return v[0].set && v[0].b;
}

static int l_dnn_softmax(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  bool log = softmax_log(L, 2, &softmax_decl);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_dnn_softmax(out, log, x), out, 0);
}

static int l_dnn_softmax_bwd(lua_State *L) {
  gl_array *y = gl_lua_check(L, 1), *dy = gl_lua_check(L, 2);
  bool log = softmax_log(L, 3, &softmax_bwd_decl);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_dnn_softmax_bwd(out, log, y, dy), out, 0);
}

static const gl_reg conv_funcs[] = {
  { "im2col", l_im2col, 2 },
  { "col2im", l_col2im, 3 },
  { NULL, NULL, 0 }
};

static const gl_reg dnn_funcs[] = {
  { "available", l_dnn_available, 3 }, { "conv2d", l_dnn_conv2d, 3 },
  { "conv2d_backward_data", l_dnn_conv2d_bwd_data, 4 },
  { "conv2d_backward_filter", l_dnn_conv2d_bwd_filter, 4 }, { "max_pool2d", l_dnn_max_pool2d, 2 },
  { "avg_pool2d", l_dnn_avg_pool2d, 2 }, { "max_pool2d_backward", l_dnn_max_pool2d_bwd, 4 },
  { "avg_pool2d_backward", l_dnn_avg_pool2d_bwd, 4 }, { "batch_norm", l_dnn_batch_norm, 6 },
  { "batch_norm_backward", l_dnn_batch_norm_bwd, 6 }, { "softmax", l_dnn_softmax, 2 },
  { "softmax_backward", l_dnn_softmax_bwd, 3 }, { "layer_norm", l_dnn_layer_norm, 4 },
  { "layer_norm_backward", l_dnn_layer_norm_bwd, 6 }, { "rnn", l_dnn_rnn, 5 },
  { "rnn_backward", l_dnn_rnn_bwd, 8 }, { NULL, NULL, 0 },
};

void gl_open_conv(lua_State *L, int module, int methods) {
  gl_lua_setboth(L, module, methods, conv_funcs);
  lua_newtable(L);                                    /* gpu.dnn */
  gl_lua_setops(L, lua_gettop(L), "dnn.", dnn_funcs);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "enabled");                     /* nn's layers use it where available */
  gl_lua_setloaded(L, "gpu.dnn");
  lua_setfield(L, module, "dnn");
  gl_lua_declare_all(L, conv_decls);
}
