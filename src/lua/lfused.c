/*
** lfused.c — gpu.fused: the fused kernels that gpu.nn and gpu.optim are built on, usable
** directly:
**   fused.linear(x, w [, b])                      x @ w^T + b in one call
**   fused.cross_entropy(z, labels|target [, {label_smoothing =}])  -> loss (N), probs (N, C)
**   fused.cross_entropy_backward(probs, labels|target, gout [, {label_smoothing =, scale =}])
**   fused.layer_norm(x, w, b [, {eps = 1e-5}])   -> y, mean, rstd over the last axis of x
**   fused.layer_norm_backward(g, x, mean, rstd, w) -> gx, gw (D), gb (D)
**   fused.attention(q, k, v [, {scale, is_causal}]) -> out, lse (softmax(q k^T scale) v, no (L, S) scores)
**   fused.attention_backward(g, q, k, v, out, lse [, {scale, is_causal}]) -> gq, gk, gv (FlashAttention-2's)
**   fused.sgd_(p, g, buf, {lr =, momentum =, ...})  one optimizer step in place (returns p)
**   fused.adam_(p, g, m, v, vmax, {lr =, beta1 =, beta2 =, eps =, step =, ...})
**   fused.rmsprop_(p, g, sq, buf, gavg, {lr =, alpha =, eps =, ...})
**   fused.adagrad_(p, g, sum, {lr =, lr_decay =, eps =, step =, ...})
**   fused.adadelta_(p, g, square_avg, acc_delta, {lr =, rho =, eps =, ...})
**   fused.adamax_(p, g, exp_avg, exp_inf, {lr =, beta1 =, beta2 =, eps =, step =, ...})
**   fused.nadam_(p, g, exp_avg, exp_avg_sq, {lr =, beta1 =, beta2 =, momentum_decay =, step =, mu_product =, ...})
**   fused.radam_(p, g, exp_avg, exp_avg_sq, {lr =, beta1 =, beta2 =, eps =, step =, ...})
** Labels are int64 class numbers 1..C; state arrays not used by the options may be nil.
*/
#include <math.h>
#include <string.h>
#include "lgpu.h"

/* ---- options ------------------------------------------------------------------------------ */

/* Reads the options table at 'idx' (nil: all defaults) against d into vals[]: numbers,
** or 0/1 for booleans, def[i] where a key is absent. Numbers must be finite. */
static void read_opts(lua_State *L, int idx, const gl_optdecl *d, const double *def, double *vals) {
  gl_optval v[12];
  gl_lua_readopts(L, idx, d, v);
  for (int i = 0; d->keys[i].name; i++) {
    if (!v[i].set) { vals[i] = def[i]; continue; }
    vals[i] = d->keys[i].type == GL_OPT_BOOL ? v[i].b : v[i].n;
    if (!isfinite(vals[i]))
      luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be finite", d->keys[i].name));
  }
}

#define NONNEG(name) { name, GL_OPT_NUMBER, GL_RANGE_MIN, 0, 0, NULL }
#define UNIT(name) { name, GL_OPT_NUMBER, GL_RANGE_MIN | GL_RANGE_MAX | GL_RANGE_MAX_OPEN, 0, 1, NULL }
#define FLAG(name) { name, GL_OPT_BOOL, 0, 0, 0, NULL }
static const gl_optkey xent_keys[] = { { "label_smoothing", GL_OPT_NUMBER, GL_RANGE_MIN | GL_RANGE_MAX, 0, 1, NULL }, { NULL } };
static const gl_optkey xent_bwd_keys[] = {
  { "label_smoothing", GL_OPT_NUMBER, GL_RANGE_MIN | GL_RANGE_MAX, 0, 1, NULL }, { "scale", GL_OPT_NUMBER, 0, 0, 0, NULL },
  { NULL }
};
static const double xent_def[] = { 0 }, xent_bwd_def[] = { 0, 1 };
static const gl_optkey ln_keys[] = { { "eps", GL_OPT_NUMBER, GL_RANGE_MIN, 0, 0, NULL }, { NULL } };
static const double ln_def[] = { 1e-5 };
static const gl_optkey att_keys[] = { { "scale", GL_OPT_NUMBER, 0, 0, 0, NULL }, { "is_causal", GL_OPT_BOOL, 0, 0, 0, NULL },
                                      { NULL } };
enum { SGD_LR, SGD_MOM, SGD_DAMP, SGD_WD, SGD_NEST, SGD_MAX, SGD_FIRST };
static const gl_optkey sgd_keys[] = {
  NONNEG("lr"), NONNEG("momentum"), NONNEG("dampening"), NONNEG("weight_decay"), FLAG("nesterov"), FLAG("maximize"),
  FLAG("first"), { NULL }
};
static const double sgd_def[] = { 0.01, 0, 0, 0, 0, 0, 0 };
enum { AD_LR, AD_B1, AD_B2, AD_EPS, AD_WD, AD_STEP, AD_DEC, AD_AMS, AD_MAX };
static const gl_optkey adam_keys[] = {
  NONNEG("lr"), UNIT("beta1"), UNIT("beta2"), NONNEG("eps"), NONNEG("weight_decay"),
  { "step", GL_OPT_INT, GL_RANGE_MIN, 1, 0, NULL }, FLAG("decoupled"), FLAG("amsgrad"), FLAG("maximize"), { NULL }
};
static const double adam_def[] = { 1e-3, 0.9, 0.999, 1e-8, 0, 1, 0, 0, 0 };
enum { RMS_LR, RMS_ALPHA, RMS_EPS, RMS_WD, RMS_MOM, RMS_CENT };
static const gl_optkey rms_keys[] = {
  NONNEG("lr"), NONNEG("alpha"), NONNEG("eps"), NONNEG("weight_decay"), NONNEG("momentum"), FLAG("centered"), { NULL }
};
static const double rms_def[] = { 0.01, 0.99, 1e-8, 0, 0, 0 };
#define STEP { "step", GL_OPT_INT, GL_RANGE_MIN, 1, 0, NULL }
enum { AG_LR, AG_DECAY, AG_WD, AG_EPS, AG_STEP, AG_MAX };
static const gl_optkey adagrad_keys[] = {
  NONNEG("lr"), NONNEG("lr_decay"), NONNEG("weight_decay"), NONNEG("eps"), STEP, FLAG("maximize"), { NULL }
};
static const double adagrad_def[] = { 0.01, 0, 0, 1e-10, 1, 0 };
enum { AD2_LR, AD2_RHO, AD2_EPS, AD2_WD, AD2_MAX };
static const gl_optkey adadelta_keys[] = {
  NONNEG("lr"), { "rho", GL_OPT_NUMBER, GL_RANGE_MIN | GL_RANGE_MAX, 0, 1, NULL }, NONNEG("eps"), NONNEG("weight_decay"),
  FLAG("maximize"), { NULL }
};
static const double adadelta_def[] = { 1.0, 0.9, 1e-6, 0, 0 };
enum { AX_LR, AX_B1, AX_B2, AX_EPS, AX_WD, AX_STEP, AX_MAX };
static const gl_optkey adamax_keys[] = {
  NONNEG("lr"), UNIT("beta1"), UNIT("beta2"), NONNEG("eps"), NONNEG("weight_decay"), STEP, FLAG("maximize"), { NULL }
};
static const double adamax_def[] = { 2e-3, 0.9, 0.999, 1e-8, 0, 1, 0 };
enum { NA_LR, NA_B1, NA_B2, NA_EPS, NA_WD, NA_MD, NA_STEP, NA_MUP };
static const gl_optkey nadam_keys[] = {
  NONNEG("lr"), UNIT("beta1"), UNIT("beta2"), NONNEG("eps"), NONNEG("weight_decay"), NONNEG("momentum_decay"), STEP,
  UNIT("mu_product"), { NULL }
};
static const double nadam_def[] = { 2e-3, 0.9, 0.999, 1e-8, 0, 4e-3, 1, -1 };   /* mu_product: -1 = from step */
enum { RA_LR, RA_B1, RA_B2, RA_EPS, RA_WD, RA_STEP };
static const gl_optkey radam_keys[] = {
  NONNEG("lr"), UNIT("beta1"), UNIT("beta2"), NONNEG("eps"), NONNEG("weight_decay"), STEP, { NULL }
};
static const double radam_def[] = { 1e-3, 0.9, 0.999, 1e-8, 0, 1 };
#undef STEP
#undef NONNEG
#undef UNIT
#undef FLAG

#define P "gpu.ones(3)"
static const gl_optdecl xent_decl = { "fused.cross_entropy", "gpu.fused.cross_entropy(gpu.ones(2, 3), gpu.array({1, 2}, {dtype = 'int64'}), %s)",
                                      xent_keys };
static const gl_optdecl xent_bwd_decl = {
  "fused.cross_entropy_backward",
  "gpu.fused.cross_entropy_backward(gpu.ones(2, 3), gpu.array({1, 2}, {dtype = 'int64'}), gpu.ones(2), %s)", xent_bwd_keys };
static const gl_optdecl ln_decl = { "fused.layer_norm", "gpu.fused.layer_norm(gpu.ones(2, 3), gpu.ones(3), nil, %s)",
                                    ln_keys };
static const gl_optdecl att_decl = { "fused.attention",
                                     "gpu.fused.attention(gpu.ones(2, 3), gpu.ones(4, 3), gpu.ones(4, 5), %s)", att_keys };
static const gl_optdecl att_bwd_decl = {
  "fused.attention_backward",
  "local q, k, v = gpu.ones(2, 3), gpu.ones(4, 3), gpu.ones(4, 5); local o, lse = gpu.fused.attention(q, k, v); "
  "gpu.fused.attention_backward(gpu.ones(2, 5), q, k, v, o, lse, %s)", att_keys };
static const gl_optdecl sgd_decl = { "fused.sgd_", "gpu.fused.sgd_(" P ", " P ", nil, %s)", sgd_keys };
static const gl_optdecl adam_decl = { "fused.adam_", "gpu.fused.adam_(" P ", " P ", gpu.zeros(3), gpu.zeros(3), nil, %s)",
                                      adam_keys };
static const gl_optdecl rms_decl = { "fused.rmsprop_", "gpu.fused.rmsprop_(" P ", " P ", gpu.zeros(3), nil, nil, %s)",
                                     rms_keys };
#define Z "gpu.zeros(3)"
static const gl_optdecl adagrad_decl = { "fused.adagrad_", "gpu.fused.adagrad_(" P ", " P ", " Z ", %s)", adagrad_keys };
static const gl_optdecl adadelta_decl = { "fused.adadelta_", "gpu.fused.adadelta_(" P ", " P ", " Z ", " Z ", %s)",
                                          adadelta_keys };
static const gl_optdecl adamax_decl = { "fused.adamax_", "gpu.fused.adamax_(" P ", " P ", " Z ", " Z ", %s)", adamax_keys };
static const gl_optdecl nadam_decl = { "fused.nadam_", "gpu.fused.nadam_(" P ", " P ", " Z ", " Z ", %s)", nadam_keys };
static const gl_optdecl radam_decl = { "fused.radam_", "gpu.fused.radam_(" P ", " P ", " Z ", " Z ", %s)", radam_keys };
#undef Z
#undef P
static const gl_optdecl *const fused_decls[] = { &xent_decl, &xent_bwd_decl, &ln_decl, &att_decl, &att_bwd_decl,
                                                 &sgd_decl, &adam_decl, &rms_decl, &adagrad_decl, &adadelta_decl,
                                                 &adamax_decl, &nadam_decl, &radam_decl, NULL };

/* ---- linear ------------------------------------------------------------------------------- */

static int l_linear(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1), *w = gl_lua_check(L, 2);
  const gl_array *b = gl_lua_optarray(L, 3);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_linear(out, x, w, b);
  return gl_lua_result(L, st, out, 0);
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


static int l_cross_entropy(lua_State *L) {
  gl_array *z = gl_lua_check(L, 1);
  const gl_array *labels, *target;
  labels_or_target(L, 2, &labels, &target);
  double o[1];
  read_opts(L, 3, &xent_decl, xent_def, o);
  gl_array *loss = gl_lua_push(L), *probs = gl_lua_push(L);
  gl_status st = gl_op_xent(loss, probs, z, labels, target, o[0]);
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
  read_opts(L, 4, &xent_bwd_decl, xent_bwd_def, o);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_xent_bwd(out, p, labels, target, o[0], g, o[1]);
  return gl_lua_result(L, st, out, 0);
}

/* ---- layer norm ------------------------------------------------------------------------------ */

static int l_layer_norm(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  const gl_array *w = gl_lua_optarray(L, 2), *b = gl_lua_optarray(L, 3);
  double o[1];
  read_opts(L, 4, &ln_decl, ln_def, o);
  gl_array *y = gl_lua_push(L), *mean = gl_lua_push(L), *rstd = gl_lua_push(L);
  gl_status st = gl_op_layer_norm(y, mean, rstd, x, w, b, o[0]);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, y);
  return 3;
}

static int l_layer_norm_backward(lua_State *L) {
  gl_array *g = gl_lua_check(L, 1), *x = gl_lua_check(L, 2), *mean = gl_lua_check(L, 3), *rstd = gl_lua_check(L, 4);
  const gl_array *w = gl_lua_optarray(L, 5);
  gl_array *gx = gl_lua_push(L), *gw = gl_lua_push(L), *gb = gl_lua_push(L);
  gl_status st = gl_op_layer_norm_bwd(gx, gw, gb, g, x, mean, rstd, w, true);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, gx);
  return 3;
}

/* ---- attention ------------------------------------------------------------------------------ */

/* The options of both directions: scale (default 1 / sqrt(E), 1 when E = 0) and is_causal. */
static void attention_opts(lua_State *L, int idx, const gl_optdecl *d, const gl_array *q, double o[2]) {
  double def[2] = { q->ndim > 0 && q->shape[q->ndim - 1] > 0 ? 1 / sqrt((double)q->shape[q->ndim - 1]) : 1, 0 };
  read_opts(L, idx, d, def, o);
}

static int l_attention(lua_State *L) {
  gl_array *q = gl_lua_check(L, 1), *k = gl_lua_check(L, 2), *v = gl_lua_check(L, 3);
  double o[2];
  attention_opts(L, 4, &att_decl, q, o);
  gl_array *out = gl_lua_push(L), *lse = gl_lua_push(L);
  gl_status st = gl_op_attention(out, lse, q, k, v, o[0], o[1] != 0);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, out);
  return 2;
}

static int l_attention_backward(lua_State *L) {
  gl_array *g = gl_lua_check(L, 1), *q = gl_lua_check(L, 2), *k = gl_lua_check(L, 3), *v = gl_lua_check(L, 4);
  gl_array *out = gl_lua_check(L, 5), *lse = gl_lua_check(L, 6);
  double o[2];
  attention_opts(L, 7, &att_bwd_decl, q, o);
  gl_array *gq = gl_lua_push(L), *gk = gl_lua_push(L), *gv = gl_lua_push(L);
  gl_status st = gl_op_attention_bwd(gq, gk, gv, g, q, k, v, out, lse, o[0], o[1] != 0);
  gl_lua_check_status(L, st, 0);
  gl_lua_account_array(L, gq);
  gl_lua_account_array(L, gk);
  gl_lua_account_array(L, gv);
  return 3;
}

/* ---- optimizer steps ------------------------------------------------------------------------ */

static int step_result(lua_State *L, gl_status st) {
  gl_lua_check_status(L, st, 0);
  lua_settop(L, 1);
  return 1;
}

static int l_sgd_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_optarray(L, 3), NULL, NULL };
  double o[7];
  read_opts(L, 4, &sgd_decl, sgd_def, o);
  gl_optim_hp hp = { 0 };
  hp.lr = o[SGD_LR]; hp.momentum = o[SGD_MOM]; hp.dampening = o[SGD_DAMP]; hp.weight_decay = o[SGD_WD];
  hp.nesterov = o[SGD_NEST] != 0; hp.maximize = o[SGD_MAX] != 0; hp.first = o[SGD_FIRST] != 0;
  return step_result(L, gl_op_optim_step(GL_OPTIM_SGD, p, g, st, &hp));
}

static int l_adam_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), gl_lua_check(L, 4), gl_lua_optarray(L, 5) };
  double o[9];
  read_opts(L, 6, &adam_decl, adam_def, o);
  double t = o[AD_STEP];
  gl_optim_hp hp = { 0 };
  hp.lr = o[AD_LR]; hp.beta1 = o[AD_B1]; hp.beta2 = o[AD_B2]; hp.eps = o[AD_EPS]; hp.weight_decay = o[AD_WD];
  hp.decoupled = o[AD_DEC] != 0; hp.amsgrad = o[AD_AMS] != 0; hp.maximize = o[AD_MAX] != 0;
  hp.bc1 = 1 - pow(hp.beta1, t);
  hp.bc2 = 1 - pow(hp.beta2, t);
  return step_result(L, gl_op_optim_step(GL_OPTIM_ADAM, p, g, st, &hp));
}

static int l_rmsprop_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), gl_lua_optarray(L, 4), gl_lua_optarray(L, 5) };
  double o[6];
  read_opts(L, 6, &rms_decl, rms_def, o);
  gl_optim_hp hp = { 0 };
  hp.lr = o[RMS_LR]; hp.alpha = o[RMS_ALPHA]; hp.eps = o[RMS_EPS]; hp.weight_decay = o[RMS_WD];
  hp.momentum = o[RMS_MOM]; hp.centered = o[RMS_CENT] != 0;
  return step_result(L, gl_op_optim_step(GL_OPTIM_RMSPROP, p, g, st, &hp));
}

/* Adagrad: the step's rate decays as lr / (1 + (step - 1) lr_decay). The sum starts at
** PyTorch's initial_accumulator_value: the caller fills it (gpu.full_like). */
static int l_adagrad_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), NULL, NULL };
  double o[6];
  read_opts(L, 4, &adagrad_decl, adagrad_def, o);
  gl_optim_hp hp = { 0 };
  hp.lr = o[AG_LR] / (1 + (o[AG_STEP] - 1) * o[AG_DECAY]);
  hp.weight_decay = o[AG_WD]; hp.eps = o[AG_EPS]; hp.maximize = o[AG_MAX] != 0;
  return step_result(L, gl_op_optim_step(GL_OPTIM_ADAGRAD, p, g, st, &hp));
}

static int l_adadelta_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), gl_lua_check(L, 4), NULL };
  double o[5];
  read_opts(L, 5, &adadelta_decl, adadelta_def, o);
  gl_optim_hp hp = { 0 };
  hp.lr = o[AD2_LR]; hp.rho = o[AD2_RHO]; hp.eps = o[AD2_EPS]; hp.weight_decay = o[AD2_WD];
  hp.maximize = o[AD2_MAX] != 0;
  return step_result(L, gl_op_optim_step(GL_OPTIM_ADADELTA, p, g, st, &hp));
}

static int l_adamax_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), gl_lua_check(L, 4), NULL };
  double o[7];
  read_opts(L, 5, &adamax_decl, adamax_def, o);
  gl_optim_hp hp = { 0 };
  hp.lr = o[AX_LR]; hp.beta1 = o[AX_B1]; hp.beta2 = o[AX_B2]; hp.eps = o[AX_EPS]; hp.weight_decay = o[AX_WD];
  hp.maximize = o[AX_MAX] != 0;
  hp.bc1 = 1 - pow(hp.beta1, o[AX_STEP]);
  return step_result(L, gl_op_optim_step(GL_OPTIM_ADAMAX, p, g, st, &hp));
}

/* mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2), Dozat's momentum schedule. */
static double nadam_mu(double beta1, double momentum_decay, double t) {
  return beta1 * (1 - 0.5 * pow(0.96, t * momentum_decay));
}

/* NAdam as PyTorch 2 computes it. mu_product is the product of mu_1..mu_step (the
** optimizer's running state, this step's factor included); without it, it is multiplied
** out here, up to a million steps (a product past that is the caller's to keep). */
#define NADAM_MAX_STEPS 1000000
static int l_nadam_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), gl_lua_check(L, 4), NULL };
  double o[8];
  read_opts(L, 5, &nadam_decl, nadam_def, o);
  double t = o[NA_STEP], b1 = o[NA_B1], md = o[NA_MD], lr = o[NA_LR];
  double mu = nadam_mu(b1, md, t), mu_next = nadam_mu(b1, md, t + 1);
  double prod = o[NA_MUP];
  if (prod < 0) {
    if (t > NADAM_MAX_STEPS)
      luaL_argerror(L, 5, lua_pushfstring(L, "option 'mu_product' is needed past step %d (the optimizer keeps it)",
                                          NADAM_MAX_STEPS));
    prod = 1;
    for (double s = 1; s <= t && prod != 0; s++) prod *= nadam_mu(b1, md, s);
  }
  gl_optim_hp hp = { 0 };
  hp.beta1 = b1; hp.beta2 = o[NA_B2]; hp.eps = o[NA_EPS]; hp.weight_decay = o[NA_WD];
  hp.bc2 = 1 - pow(hp.beta2, t);
  hp.grad_step = lr * (1 - mu) / (1 - prod);          /* the optimizer's (array ops') order of operations */
  hp.avg_step = lr * mu_next / (1 - prod * mu_next);
  return step_result(L, gl_op_optim_step(GL_OPTIM_NADAM, p, g, st, &hp));
}

/* RAdam: rho_t, the length of the approximated SMA, decides between the rectified adaptive
** step (rho_t > 5) and plain momentum SGD. */
static int l_radam_(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *st[3] = { gl_lua_check(L, 3), gl_lua_check(L, 4), NULL };
  double o[6];
  read_opts(L, 5, &radam_decl, radam_def, o);
  double t = o[RA_STEP], lr = o[RA_LR];
  gl_optim_hp hp = { 0 };
  hp.lr = lr; hp.beta1 = o[RA_B1]; hp.beta2 = o[RA_B2]; hp.eps = o[RA_EPS]; hp.weight_decay = o[RA_WD];
  hp.bc1 = 1 - pow(hp.beta1, t);
  hp.bc2 = 1 - pow(hp.beta2, t);
  double rho_inf = 2 / (1 - hp.beta2) - 1;
  double rho_t = rho_inf - 2 * t * pow(hp.beta2, t) / hp.bc2;
  hp.rectify = rho_t > 5;
  if (hp.rectify) {
    double rect = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
    hp.avg_step = lr * rect * sqrt(hp.bc2) / hp.bc1;
  }
  return step_result(L, gl_op_optim_step(GL_OPTIM_RADAM, p, g, st, &hp));
}

static const gl_reg fused_funcs[] = {
  { "linear", l_linear, 3 },
  { "cross_entropy", l_cross_entropy, 3 },
  { "cross_entropy_backward", l_cross_entropy_backward, 4 },
  { "layer_norm", l_layer_norm, 4 },
  { "layer_norm_backward", l_layer_norm_backward, 5 },
  { "attention", l_attention, 4 },
  { "attention_backward", l_attention_backward, 7 },
  { "sgd_", l_sgd_, 4 },
  { "adam_", l_adam_, 6 },
  { "rmsprop_", l_rmsprop_, 6 },
  { "adagrad_", l_adagrad_, 4 },
  { "adadelta_", l_adadelta_, 5 },
  { "adamax_", l_adamax_, 5 },
  { "nadam_", l_nadam_, 5 },
  { "radam_", l_radam_, 5 },
  { NULL, NULL, 0 }
};

void gl_open_fused(lua_State *L, int module, int methods) {
  (void)methods;
  lua_newtable(L);
  gl_lua_setops(L, lua_gettop(L), "fused.", fused_funcs);
  gl_lua_setloaded(L, "gpu.fused");
  lua_setfield(L, module, "fused");
  gl_lua_declare_all(L, fused_decls);
}
