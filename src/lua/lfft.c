/*
** lfft.c — the transforms under gpu.fft: gpu._fft.c2c, r2c and c2r (src/ops/fft.c),
** dispatched under the rules names "fft.c2c", "fft.r2c", "fft.c2r" so that autograd finds
** their rules (lua/gpu/autograd/rules_fft.lua). lua/gpu/fft.lua builds numpy.fft's
** functions from them (n and s, norm, hfft, the frequencies and shifts).
**
**   gpu._fft.c2c(x, axes, inverse, scale)   complex of x's shape
**   gpu._fft.r2c(x, axes, scale)            x real; n / 2 + 1 entries on the last axis
**   gpu._fft.c2r(x, axes, n, scale)         real, n entries on the last axis
**
** axes: an axis or a table of them, 1-based, negatives from the end, distinct; the last
** one is the halved axis of r2c and c2r. The result is scale times the unnormalised
** transform (forward: exp(-2 pi i jk / n); inverse and c2r: exp(+2 pi i jk / n)).
*/
#include "lgpu.h"

static int fft_axes(lua_State *L, const gl_array *x, int *axes) {
  if (lua_isnoneornil(L, 2)) luaL_argerror(L, 2, "axes expected, got nil");
  return gl_lua_axes(L, 2, x->ndim, axes, 0);
}

static double fft_scale(lua_State *L, int idx) {
  double s = luaL_checknumber(L, idx);
  if (!(s == s) || s - s != 0) luaL_argerror(L, idx, "the scale must be a finite number");
  return s;
}

static int l_c2c(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  int axes[GL_MAXDIMS];
  int n = fft_axes(L, x, axes);
  luaL_checktype(L, 3, LUA_TBOOLEAN);
  int sign = lua_toboolean(L, 3) ? 1 : -1;
  double scale = fft_scale(L, 4);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_fft(out, x, GL_FFT_C2C, n, axes, sign, 0, scale), out, 0);
}

static int l_r2c(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  int axes[GL_MAXDIMS];
  int n = fft_axes(L, x, axes);
  double scale = fft_scale(L, 3);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_fft(out, x, GL_FFT_R2C, n, axes, -1, 0, scale), out, 0);
}

static int l_c2r(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  int axes[GL_MAXDIMS];
  int n = fft_axes(L, x, axes);
  int64_t last_n = gl_lua_int(L, 3, "n");
  double scale = fft_scale(L, 4);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_fft(out, x, GL_FFT_C2R, n, axes, 1, last_n, scale), out, 0);
}

static const gl_reg fft_funcs[] = {
  { "c2c", l_c2c, 4 }, { "r2c", l_r2c, 3 }, { "c2r", l_c2r, 4 }, { NULL, NULL, 0 },
};

void gl_open_fft(lua_State *L, int module) {
  lua_newtable(L);
  gl_lua_setops(L, lua_gettop(L), "fft.", fft_funcs);
  gl_lua_setloaded(L, "gpu._fft");
  lua_setfield(L, module, "_fft");
}
