/*
** lfused.c — gpu.fused: the fused kernels that gpu.nn and gpu.optim are built on, usable
** directly:
**   fused.linear(x, w [, b])                      x @ w^T + b in one call
**   fused.cross_entropy(z, labels|target [, {label_smoothing =}])  -> loss (N), probs (N, C)
**   fused.cross_entropy_backward(probs, labels|target, gout [, {label_smoothing =, scale =}])
**   fused.sgd_(p, g, buf, {lr =, momentum =, ...})  one optimizer step in place (returns p)
**   fused.adam_(p, g, m, v, vmax, {lr =, beta1 =, beta2 =, eps =, step =, ...})
**   fused.rmsprop_(p, g, sq, buf, gavg, {lr =, alpha =, eps =, ...})
** Labels are int64 class numbers 1..C; state arrays not used by the options may be nil.
*/
#include <math.h>
#include <string.h>
#include "lgpu.h"

/* ---- options ------------------------------------------------------------------------------ */

typedef struct opt_key { const char *name; bool is_bool; double def; } opt_key;

/* Reads the options table at 'idx' (nil: all defaults) into vals[]: numbers, or 0/1 for
** booleans; unknown keys and wrong types are argument errors listing what is expected. */
static void read_opts(lua_State *L, int idx, const opt_key *keys, double *vals) {
  int n = 0;
  for (; keys[n].name; n++) vals[n] = keys[n].def;
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int k = -1;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int i = 0; i < n; i++) if (strcmp(lua_tostring(L, -2), keys[i].name) == 0) k = i;
    if (k < 0) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (int i = 0; i < n; i++) {
        if (i) luaL_addstring(&b, ", ");
        luaL_addstring(&b, keys[i].name);
      }
      luaL_pushresult(&b);                                    /* key, value, expected */
      const char *expected = lua_tostring(L, -1);
      const char *key = luaL_tolstring(L, -3, NULL);
      luaL_argerror(L, idx, lua_pushfstring(L, "unknown option '%s' (expected %s)", key, expected));
    }
    if (keys[k].is_bool) {
      if (!lua_isboolean(L, -1))
        luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be a boolean, got %s", keys[k].name,
                                              luaL_typename(L, -1)));
      vals[k] = lua_toboolean(L, -1);
    } else {
      if (lua_type(L, -1) != LUA_TNUMBER)
        luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be a number, got %s", keys[k].name,
                                              luaL_typename(L, -1)));
      vals[k] = lua_tonumber(L, -1);
      if (!isfinite(vals[k]))
        luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be finite", keys[k].name));
    }
    lua_pop(L, 1);
  }
}



/* ---- linear ------------------------------------------------------------------------------- */

static int l_linear(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *w = gl_lua_check(L, 2);
  const gl_array *b = gl_lua_optarray(L, 3);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_linear(out, x, w, b);
  if (gl_lua_retry_oom(L, st, gl_array_device(x))) st = gl_op_linear(out, x, w, b);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, out);
  return 1;
}

/* ---- cross-entropy -------------------------------------------------------------------------- */

/* Argument idx: int64 labels (1-D) or a target distribution (2-D). */
static void labels_or_target(lua_State *L, int idx, const gl_array **labels, const gl_array **target) {
  gl_array *a = gl_lua_check(L, idx);
  *labels = *target = NULL;
  if (a->ndim == 1) {
    if (a->dtype != GL_INT64)
      luaL_argerror(L, idx, lua_pushfstring(L, "labels must be int64 class numbers 1..C, got %s (use astype)",
                                            gl_dtypes[a->dtype].name));
    *labels = a;
  } else {
    *target = a;
  }
}

static const opt_key xent_keys[] = { { "label_smoothing", false, 0 }, { NULL, false, 0 } };
static const opt_key xent_bwd_keys[] = { { "label_smoothing", false, 0 }, { "scale", false, 1 }, { NULL, false, 0 } };

static int l_cross_entropy(lua_State *L) {
  gl_array *z = gl_lua_check(L, 1);
  const gl_array *labels, *target;
  labels_or_target(L, 2, &labels, &target);
  double o[1];
  read_opts(L, 3, xent_keys, o);
  gl_array *loss = gl_lua_push(L), *probs = gl_lua_push(L);
  gl_status st = gl_op_xent(loss, probs, z, labels, target, o[0]);
  if (gl_lua_retry_oom(L, st, gl_array_device(z))) st = gl_op_xent(loss, probs, z, labels, target, o[0]);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, probs);
  return 2;
}

static int l_cross_entropy_backward(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1);
  const gl_array *labels, *target;
  labels_or_target(L, 2, &labels, &target);
  gl_array *g = gl_lua_check(L, 3);
  double o[2];
  read_opts(L, 4, xent_bwd_keys, o);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_xent_bwd(out, p, labels, target, o[0], g, o[1]);
  if (gl_lua_retry_oom(L, st, gl_array_device(p))) st = gl_op_xent_bwd(out, p, labels, target, o[0], g, o[1]);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, out);
  return 1;
}

/* ---- optimizer steps ------------------------------------------------------------------------ */

enum { SGD_LR, SGD_MOM, SGD_DAMP, SGD_WD, SGD_NEST, SGD_MAX, SGD_FIRST };
static const opt_key sgd_keys[] = {
  { "lr", false, 0.01 }, { "momentum", false, 0 }, { "dampening", false, 0 }, { "weight_decay", false, 0 },
  { "nesterov", true, 0 }, { "maximize", true, 0 }, { "first", true, 0 }, { NULL, false, 0 }
};
enum { AD_LR, AD_B1, AD_B2, AD_EPS, AD_WD, AD_STEP, AD_DEC, AD_AMS, AD_MAX };
static const opt_key adam_keys[] = {
  { "lr", false, 1e-3 }, { "beta1", false, 0.9 }, { "beta2", false, 0.999 }, { "eps", false, 1e-8 },
  { "weight_decay", false, 0 }, { "step", false, 1 }, { "decoupled", true, 0 }, { "amsgrad", true, 0 },
  { "maximize", true, 0 }, { NULL, false, 0 }
};
enum { RMS_LR, RMS_ALPHA, RMS_EPS, RMS_WD, RMS_MOM, RMS_CENT };
static const opt_key rms_keys[] = {
  { "lr", false, 0.01 }, { "alpha", false, 0.99 }, { "eps", false, 1e-8 }, { "weight_decay", false, 0 },
  { "momentum", false, 0 }, { "centered", true, 0 }, { NULL, false, 0 }
};

static int step_result(lua_State *L, gl_status st) {
  gl_lua_check_status(L, st, 0);
  lua_settop(L, 1);
  return 1;
}

static int l_sgd_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_optarray(L, 3), NULL, NULL };
  double o[7];
  read_opts(L, 4, sgd_keys, o);
  gl_optim_hp hp = { 0 };
  hp.lr = o[SGD_LR]; hp.momentum = o[SGD_MOM]; hp.dampening = o[SGD_DAMP]; hp.weight_decay = o[SGD_WD];
  hp.nesterov = o[SGD_NEST] != 0; hp.maximize = o[SGD_MAX] != 0; hp.first = o[SGD_FIRST] != 0;
  return step_result(L, gl_op_optim_step(GL_OPTIM_SGD, p, g, st, &hp));
}

static int l_adam_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), gl_lua_check(L, 4), gl_lua_optarray(L, 5) };
  double o[9];
  read_opts(L, 6, adam_keys, o);
  double t = o[AD_STEP];
  if (t < 1 || t != floor(t)) luaL_argerror(L, 6, "option 'step' must be a positive integer (the step number, from 1)");
  gl_optim_hp hp = { 0 };
  hp.lr = o[AD_LR]; hp.beta1 = o[AD_B1]; hp.beta2 = o[AD_B2]; hp.eps = o[AD_EPS]; hp.weight_decay = o[AD_WD];
  hp.decoupled = o[AD_DEC] != 0; hp.amsgrad = o[AD_AMS] != 0; hp.maximize = o[AD_MAX] != 0;
  if (!(hp.beta1 >= 0 && hp.beta1 < 1) || !(hp.beta2 >= 0 && hp.beta2 < 1))
    luaL_argerror(L, 6, "options 'beta1' and 'beta2' must be in [0, 1)");
  hp.bc1 = 1 - pow(hp.beta1, t);
  hp.bc2 = 1 - pow(hp.beta2, t);
  return step_result(L, gl_op_optim_step(GL_OPTIM_ADAM, p, g, st, &hp));
}

static int l_rmsprop_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), gl_lua_optarray(L, 4), gl_lua_optarray(L, 5) };
  double o[6];
  read_opts(L, 6, rms_keys, o);
  gl_optim_hp hp = { 0 };
  hp.lr = o[RMS_LR]; hp.alpha = o[RMS_ALPHA]; hp.eps = o[RMS_EPS]; hp.weight_decay = o[RMS_WD];
  hp.momentum = o[RMS_MOM]; hp.centered = o[RMS_CENT] != 0;
  return step_result(L, gl_op_optim_step(GL_OPTIM_RMSPROP, p, g, st, &hp));
}

static const luaL_Reg fused_funcs[] = {
  { "linear", l_linear },
  { "cross_entropy", l_cross_entropy },
  { "cross_entropy_backward", l_cross_entropy_backward },
  { "sgd_", l_sgd_ },
  { "adam_", l_adam_ },
  { "rmsprop_", l_rmsprop_ },
  { NULL, NULL }
};

void gl_open_fused(lua_State *L, int module, int methods) {
  (void)methods;
  lua_newtable(L);
  gl_lua_setfuncs(L, lua_gettop(L), fused_funcs);
  lua_setfield(L, module, "fused");
}
