/*
** lrnn.c — the fused LSTM layer in gpu.fused (what nn.LSTM runs on for float32/float64):
**   fused.lstm(xp, w_hh, h0, c0 [, {reverse = false}]) -> hc (L, N, 2, H), gates (L, N, 4H)
**   fused.lstm_backward(ghc, gates, hc, w_hh, h0, c0 [, {reverse}]) -> dxp, dw_hh, dh0, dc0
** xp (L, N, 4H) is the input projection of every step (x W_ih^T + b_ih + b_hh), hc[t] holds
** h_t (hc[{t, ":", 1}]) and c_t; gates are the activations the backward reads. The rule
** "fused.lstm" (lua/gpu/autograd/rules_structure.lua) calls lstm_backward.
*/
#include "lgpu.h"

static const gl_optkey lstm_keys[] = { { "reverse", GL_OPT_BOOL, 0, 0, 0, NULL }, { NULL } };
#define Z "gpu.zeros(2, 1)"
static const gl_optdecl lstm_decl = { "fused.lstm", "gpu.fused.lstm(gpu.zeros(3, 2, 4), gpu.zeros(4, 1), " Z ", " Z
                                      ", %s)", lstm_keys };
static const gl_optdecl lstm_bwd_decl = {
  "fused.lstm_backward", "gpu.fused.lstm_backward(gpu.zeros(3, 2, 2, 1), gpu.zeros(3, 2, 4), gpu.zeros(3, 2, 2, 1), "
  "gpu.zeros(4, 1), " Z ", " Z ", %s)", lstm_keys };
#undef Z
static const gl_optdecl *const rnn_decls[] = { &lstm_decl, &lstm_bwd_decl, NULL };

static bool reverse_opt(lua_State *L, int idx, const gl_optdecl *d) {
  gl_optval v[1];
  gl_lua_readopts(L, idx, d, v);
  return v[0].set && v[0].b;
}

static int l_lstm(lua_State *L) {
  gl_array *xp = gl_lua_check(L, 1), *w = gl_lua_check(L, 2), *h0 = gl_lua_check(L, 3), *c0 = gl_lua_check(L, 4);
  bool reverse = reverse_opt(L, 5, &lstm_decl);
  lua_settop(L, 5);
  gl_array *hc = gl_lua_push(L), *gates = gl_lua_push(L);
  gl_lua_check_status(L, gl_op_lstm(hc, gates, xp, w, h0, c0, reverse), 0);
  gl_lua_account_array(L, hc);
  gl_lua_account_array(L, gates);
  return 2;
}

static int l_lstm_backward(lua_State *L) {
  gl_array *ghc = gl_lua_check(L, 1), *gates = gl_lua_check(L, 2), *hc = gl_lua_check(L, 3);
  gl_array *w = gl_lua_check(L, 4), *h0 = gl_lua_check(L, 5), *c0 = gl_lua_check(L, 6);
  bool reverse = reverse_opt(L, 7, &lstm_bwd_decl);
  lua_settop(L, 7);
  gl_array *dxp = gl_lua_push(L), *dw = gl_lua_push(L), *dh0 = gl_lua_push(L), *dc0 = gl_lua_push(L);
  gl_lua_check_status(L, gl_op_lstm_bwd(dxp, dw, dh0, dc0, ghc, gates, hc, w, h0, c0, reverse), 0);
  gl_lua_account_array(L, dxp);
  return 4;
}

static const luaL_Reg rnn_funcs[] = {
  { "lstm", l_lstm },
  { "lstm_backward", l_lstm_backward },
  { NULL, NULL }
};

void gl_open_rnn(lua_State *L, int module, int methods) {
  (void)methods;
  lua_getfield(L, module, "fused");
  gl_lua_setops(L, lua_gettop(L), "fused.", rnn_funcs);
  lua_pop(L, 1);
  gl_lua_declare_all(L, rnn_decls);
}
