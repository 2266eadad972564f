/*
** lrnn.c — the fused recurrent layers in gpu.fused (what nn.LSTM, nn.GRU and nn.RNN run on
** for float32/float64):
**   fused.lstm(xp, w_hh, h0, c0 [, {reverse = false}]) -> hc (L, N, 2, H), gates (L, N, 4H)
**   fused.lstm_backward(ghc, gates, hc, w_hh, h0, c0 [, {reverse}]) -> dxp, dw_hh, dh0, dc0
**   fused.gru(xp, w_hh, b_hh | nil, h0 [, {reverse}]) -> hs (L, N, H), gates (L, N, 4H)
**   fused.gru_backward(ghs, gates, hs, w_hh, h0 [, {reverse}]) -> dxp, dw_hh, db_hh, dh0
**   fused.rnn(xp, w_hh, h0 [, {reverse, nonlinearity = "tanh"}]) -> hs (L, N, H)
**   fused.rnn_backward(ghs, hs, w_hh, h0 [, {reverse, nonlinearity}]) -> dxp, dw_hh, dh0
** xp is the input projection of every step: LSTM (L, N, 4H) x W_ih^T + b_ih + b_hh; GRU
** (L, N, 3H) x W_ih^T + b_ih (b_hh apart: b_hn sits inside r * (...)); RNN (L, N, H) x W_ih^T
** + b_ih + b_hh. hc[t] holds h_t (hc[{t, ":", 1}]) and c_t; gates are what the backward
** reads. The rules "fused.lstm", "fused.gru", "fused.rnn" (lua/gpu/autograd/rules_structure.lua)
** call the backward ops.
**   dnn.lstm(x, w_ih, w_hh, b, h0, c0 [, {reverse}]) -> y (L + 1, N, H), ws
**   dnn.gru(x, w_ih, w_hh, b, h0 [, {reverse}]) -> y (L, N, H), ws
**   dnn.lstm_backward(gy, y, ws, x, w_ih, w_hh, b, h0, c0 [, opts]) -> dx, dw_ih, dw_hh, db, dh0, dc0
**   dnn.gru_backward(gy, y, ws, x, w_ih, w_hh, b, h0 [, opts]) -> dx, dw_ih, dw_hh, db, dh0
** are a whole layer and direction through the device's library (oneDNN on the cpu, float32):
** src/ops/rnn.c says what the operands hold; nn.LSTM/GRU take them where they are faster.
*/
#include "lbody.h"

static const gl_optkey lstm_keys[] = { GL_KEY_FLAG("reverse"), { NULL } };
static const gl_optkey rnn_keys[] = { GL_KEY_FLAG("reverse"),
                                      { "nonlinearity", GL_OPT_STRING, 0, 0, 0, "tanh relu" }, { NULL } };
#define Z "gpu.zeros(2, 1)"
static const gl_optdecl lstm_decl = { "fused.lstm", "gpu.fused.lstm(gpu.zeros(3, 2, 4), gpu.zeros(4, 1), " Z ", " Z
                                      ", %s)", lstm_keys };
static const gl_optdecl lstm_bwd_decl = {
  "fused.lstm_backward", "gpu.fused.lstm_backward(gpu.zeros(3, 2, 2, 1), gpu.zeros(3, 2, 4), gpu.zeros(3, 2, 2, 1), "
  "gpu.zeros(4, 1), " Z ", " Z ", %s)", lstm_keys };
static const gl_optdecl gru_decl = { "fused.gru", "gpu.fused.gru(gpu.zeros(3, 2, 3), gpu.zeros(3, 1), gpu.zeros(3), "
                                     Z ", %s)", lstm_keys };
static const gl_optdecl gru_bwd_decl = {
  "fused.gru_backward", "gpu.fused.gru_backward(gpu.zeros(3, 2, 1), gpu.zeros(3, 2, 4), gpu.zeros(3, 2, 1), "
  "gpu.zeros(3, 1), " Z ", %s)", lstm_keys };
static const gl_optdecl rnn_decl = { "fused.rnn", "gpu.fused.rnn(gpu.zeros(3, 2, 1), gpu.zeros(1, 1), " Z ", %s)",
                                     rnn_keys };
static const gl_optdecl rnn_bwd_decl = {
  "fused.rnn_backward", "gpu.fused.rnn_backward(gpu.zeros(3, 2, 1), gpu.zeros(3, 2, 1), gpu.zeros(1, 1), " Z
  ", %s)", rnn_keys };
#define X3 "gpu.ones(3, 2, 1)"
static const gl_optdecl dnn_lstm_decl = { "dnn.lstm", "gpu.dnn.lstm(" X3 ", gpu.zeros(4, 1), gpu.zeros(4, 1), "
                                          "gpu.zeros(4), " Z ", " Z ", %s)", lstm_keys };
static const gl_optdecl dnn_gru_decl = { "dnn.gru", "gpu.dnn.gru(" X3 ", gpu.zeros(3, 1), gpu.zeros(3, 1), "
                                         "gpu.zeros(4), " Z ", %s)", lstm_keys };
static const gl_optdecl dnn_lstm_bwd_decl = {
  "dnn.lstm_backward", "gpu.dnn.lstm_backward(gpu.ones(4, 2, 1), gpu.ones(4, 2, 1), gpu.zeros(1, {dtype = 'uint8'}), "
  X3 ", gpu.zeros(4, 1), gpu.zeros(4, 1), gpu.zeros(4), " Z ", " Z ", %s)", lstm_keys };
static const gl_optdecl dnn_gru_bwd_decl = {
  "dnn.gru_backward", "gpu.dnn.gru_backward(" X3 ", " X3 ", gpu.zeros(1, {dtype = 'uint8'}), " X3
  ", gpu.zeros(3, 1), gpu.zeros(3, 1), gpu.zeros(4), " Z ", %s)", lstm_keys };
#undef X3
#undef Z
static const gl_optdecl *const rnn_decls[] = { &lstm_decl, &lstm_bwd_decl, &gru_decl, &gru_bwd_decl,
                                               &rnn_decl, &rnn_bwd_decl, &dnn_lstm_decl, &dnn_gru_decl,
                                               &dnn_lstm_bwd_decl, &dnn_gru_bwd_decl, NULL };

static bool reverse_opt(lua_State *L, int idx, const gl_optdecl *d) {
  gl_optval v[1];
  gl_lua_readopts(L, idx, d, v);
  return v[0].set && v[0].b;
}

/* {reverse, nonlinearity}: *relu set when nonlinearity is "relu" (default "tanh"). */
static bool rnn_opts(lua_State *L, int idx, const gl_optdecl *d, bool *relu) {
  gl_optval v[2];
  gl_lua_readopts(L, idx, d, v);
  *relu = v[1].set && v[1].choice == 1;
  return v[0].set && v[0].b;
}

/* fused.lstm(xp, w_hh, h0, c0 [, {reverse}]) -> hc, gates
** fused.gru(xp, w_hh, b_hh | nil, h0 [, {reverse}]) -> hs, gates */
static int fused_gated(lua_State *L, bool lstm) {
  gl_array *xp = gl_lua_check(L, 1), *w = gl_lua_check(L, 2);
  gl_array *b = lstm ? NULL : gl_lua_optarray(L, 3), *h0 = gl_lua_check(L, lstm ? 3 : 4);
  gl_array *c0 = lstm ? gl_lua_check(L, 4) : NULL;
  bool reverse = reverse_opt(L, 5, lstm ? &lstm_decl : &gru_decl);
  gl_array *r[2];                                     /* hc (LSTM) or hs (GRU), gates */
  gl_lua_push_results(L, 5, r, 2);
  gl_status st = lstm ? gl_op_lstm(r[0], r[1], xp, w, h0, c0, reverse) : gl_op_gru(r[0], r[1], xp, w, b, h0, reverse);
  return gl_lua_results(L, st, r, 2);
}

/* fused.lstm_backward(ghc, gates, hc, w_hh, h0, c0 [, {reverse}]) -> dxp, dw_hh, dh0, dc0
** fused.gru_backward(ghs, gates, hs, w_hh, h0 [, {reverse}]) -> dxp, dw_hh, db_hh, dh0 */
static int fused_gated_backward(lua_State *L, bool lstm) {
  gl_array *g = gl_lua_check(L, 1), *gates = gl_lua_check(L, 2), *h = gl_lua_check(L, 3);
  gl_array *w = gl_lua_check(L, 4), *h0 = gl_lua_check(L, 5), *c0 = lstm ? gl_lua_check(L, 6) : NULL;
  int o = lstm ? 7 : 6;
  bool reverse = reverse_opt(L, o, lstm ? &lstm_bwd_decl : &gru_bwd_decl);
  gl_array *r[4];
  gl_lua_push_results(L, o, r, 4);
  gl_status st = lstm ? gl_op_lstm_bwd(r[0], r[1], r[2], r[3], g, gates, h, w, h0, c0, reverse)
                      : gl_op_gru_bwd(r[0], r[1], r[2], r[3], g, gates, h, w, h0, reverse);
  return gl_lua_results(L, st, r, 4);
}

static int l_lstm(lua_State *L) { return fused_gated(L, true); }
static int l_gru(lua_State *L) { return fused_gated(L, false); }
static int l_lstm_backward(lua_State *L) { return fused_gated_backward(L, true); }
static int l_gru_backward(lua_State *L) { return fused_gated_backward(L, false); }

static int l_rnn(lua_State *L) {
  gl_array *xp = gl_lua_check(L, 1), *w = gl_lua_check(L, 2), *h0 = gl_lua_check(L, 3);
  bool relu;
  bool reverse = rnn_opts(L, 4, &rnn_decl, &relu);
  gl_array *hs;
  gl_lua_push_results(L, 4, &hs, 1);
  return gl_lua_results(L, gl_op_rnn(hs, xp, w, h0, reverse, relu), &hs, 1);
}

static int l_rnn_backward(lua_State *L) {
  gl_array *ghs = gl_lua_check(L, 1), *hs = gl_lua_check(L, 2), *w = gl_lua_check(L, 3), *h0 = gl_lua_check(L, 4);
  bool relu;
  bool reverse = rnn_opts(L, 5, &rnn_bwd_decl, &relu);
  gl_array *r[3];                                     /* dxp, dw, dh0 */
  gl_lua_push_results(L, 5, r, 3);
  return gl_lua_results(L, gl_op_rnn_bwd(r[0], r[1], r[2], ghs, hs, w, h0, reverse, relu), r, 3);
}

/* gpu.dnn.lstm(x, w_ih, w_hh, b, h0, c0 [, {reverse}]) -> y (L + 1, N, H), ws
** gpu.dnn.gru(x, w_ih, w_hh, b, h0 [, {reverse}]) -> y (L, N, H), ws */
static int dnn_rnn(lua_State *L, int kind, const gl_optdecl *d) {
  bool lstm = kind == GL_DNN_LSTM;
  gl_array *x = gl_lua_check(L, 1), *wi = gl_lua_check(L, 2), *wh = gl_lua_check(L, 3), *b = gl_lua_check(L, 4);
  gl_array *h0 = gl_lua_check(L, 5), *c0 = lstm ? gl_lua_check(L, 6) : NULL;
  int o = lstm ? 7 : 6;
  bool reverse = reverse_opt(L, o, d);
  gl_array *r[2];                                     /* y, ws */
  gl_lua_push_results(L, o, r, 2);
  return gl_lua_results(L, gl_op_dnn_rnn(r[0], r[1], kind, x, wi, wh, b, h0, c0, reverse), r, 2);
}

/* gpu.dnn.lstm_backward(gy, y, ws, x, w_ih, w_hh, b, h0, c0 [, opts]) -> dx, dw_ih, dw_hh, db, dh0, dc0
** gpu.dnn.gru_backward(gy, y, ws, x, w_ih, w_hh, b, h0 [, opts]) -> dx, dw_ih, dw_hh, db, dh0 */
static int dnn_rnn_backward(lua_State *L, int kind, const gl_optdecl *d) {
  bool lstm = kind == GL_DNN_LSTM;
  gl_array *gy = gl_lua_check(L, 1), *y = gl_lua_check(L, 2), *ws = gl_lua_check(L, 3), *x = gl_lua_check(L, 4);
  gl_array *wi = gl_lua_check(L, 5), *wh = gl_lua_check(L, 6), *b = gl_lua_check(L, 7), *h0 = gl_lua_check(L, 8);
  gl_array *c0 = lstm ? gl_lua_check(L, 9) : NULL;
  int o = lstm ? 10 : 9, n = lstm ? 6 : 5;
  bool reverse = reverse_opt(L, o, d);
  gl_array *r[6] = { NULL };                          /* dx, dw_ih, dw_hh, db, dh0 [, dc0] */
  gl_lua_push_results(L, o, r, n);
  return gl_lua_results(L, gl_op_dnn_rnn_bwd(r[0], r[1], r[2], r[3], r[4], r[5], kind, gy, y, ws, x, wi, wh, b, h0, c0,
                                             reverse), r, n);
}

static int l_dnn_lstm(lua_State *L) { return dnn_rnn(L, GL_DNN_LSTM, &dnn_lstm_decl); }
static int l_dnn_gru(lua_State *L) { return dnn_rnn(L, GL_DNN_GRU, &dnn_gru_decl); }
static int l_dnn_lstm_backward(lua_State *L) { return dnn_rnn_backward(L, GL_DNN_LSTM, &dnn_lstm_bwd_decl); }
static int l_dnn_gru_backward(lua_State *L) { return dnn_rnn_backward(L, GL_DNN_GRU, &dnn_gru_bwd_decl); }

static const gl_reg dnn_rnn_funcs[] = {
  { "lstm", l_dnn_lstm, 7 }, { "lstm_backward", l_dnn_lstm_backward, 10 }, { "gru", l_dnn_gru, 6 },
  { "gru_backward", l_dnn_gru_backward, 9 }, { NULL, NULL, 0 },
};

static const gl_reg rnn_funcs[] = {
  { "lstm", l_lstm, 5 }, { "lstm_backward", l_lstm_backward, 7 }, { "gru", l_gru, 5 },
  { "gru_backward", l_gru_backward, 6 }, { "rnn", l_rnn, 4 }, { "rnn_backward", l_rnn_backward, 5 },
  { NULL, NULL, 0 },
};

void gl_open_rnn(lua_State *L, int module, int methods) {
  (void)methods;
  lua_getfield(L, module, "fused");
  gl_lua_setops(L, lua_gettop(L), "fused.", rnn_funcs);
  lua_pop(L, 1);
  lua_getfield(L, module, "dnn");
  gl_lua_setops(L, lua_gettop(L), "dnn.", dnn_rnn_funcs);
  lua_pop(L, 1);
  gl_lua_declare_all(L, rnn_decls);
}
