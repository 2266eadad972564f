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
#include "lbody.h"

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
#define STEP { "step", GL_OPT_INT, GL_RANGE_MIN, 1, 0, NULL }
#define LABEL_SMOOTHING { "label_smoothing", GL_OPT_NUMBER, GL_RANGE_MIN | GL_RANGE_MAX, 0, 1, NULL }
static const gl_optkey cross_entropy_keys[] = { LABEL_SMOOTHING, { NULL } };
static const gl_optkey cross_entropy_bwd_keys[] = { LABEL_SMOOTHING, { "scale", GL_OPT_NUMBER, 0, 0, 0, NULL }, { NULL } };
#undef LABEL_SMOOTHING
static const double cross_entropy_defaults[] = { 0 }, cross_entropy_bwd_defaults[] = { 0, 1 };
static const gl_optkey layer_norm_keys[] = { { "eps", GL_OPT_NUMBER, GL_RANGE_MIN, 0, 0, NULL }, { NULL } };
static const double layer_norm_defaults[] = { 1e-5 };
static const gl_optkey attention_keys[] = { { "scale", GL_OPT_NUMBER, 0, 0, 0, NULL }, GL_KEY_FLAG("is_causal"), { NULL } };
enum { SGD_LR, SGD_MOMENTUM, SGD_DAMPENING, SGD_WEIGHT_DECAY, SGD_NESTEROV, SGD_MAXIMIZE, SGD_FIRST };
static const gl_optkey sgd_keys[] = {
  NONNEG("lr"), NONNEG("momentum"), NONNEG("dampening"), NONNEG("weight_decay"), GL_KEY_FLAG("nesterov"),
  GL_KEY_FLAG("maximize"), GL_KEY_FLAG("first"), { NULL }
};
static const double sgd_defaults[] = { 0.01, 0, 0, 0, 0, 0, 0 };
enum {
  ADAM_LR, ADAM_BETA1, ADAM_BETA2, ADAM_EPS, ADAM_WEIGHT_DECAY, ADAM_STEP, ADAM_DECOUPLED, ADAM_AMSGRAD, ADAM_MAXIMIZE
};
static const gl_optkey adam_keys[] = {
  NONNEG("lr"), UNIT("beta1"), UNIT("beta2"), NONNEG("eps"), NONNEG("weight_decay"), STEP, GL_KEY_FLAG("decoupled"),
  GL_KEY_FLAG("amsgrad"), GL_KEY_FLAG("maximize"), { NULL }
};
static const double adam_defaults[] = { 1e-3, 0.9, 0.999, 1e-8, 0, 1, 0, 0, 0 };
enum { RMSPROP_LR, RMSPROP_ALPHA, RMSPROP_EPS, RMSPROP_WEIGHT_DECAY, RMSPROP_MOMENTUM, RMSPROP_CENTERED };
static const gl_optkey rmsprop_keys[] = {
  NONNEG("lr"), NONNEG("alpha"), NONNEG("eps"), NONNEG("weight_decay"), NONNEG("momentum"), GL_KEY_FLAG("centered"),
  { NULL }
};
static const double rmsprop_defaults[] = { 0.01, 0.99, 1e-8, 0, 0, 0 };
enum { ADAGRAD_LR, ADAGRAD_LR_DECAY, ADAGRAD_WEIGHT_DECAY, ADAGRAD_EPS, ADAGRAD_STEP, ADAGRAD_MAXIMIZE };
static const gl_optkey adagrad_keys[] = {
  NONNEG("lr"), NONNEG("lr_decay"), NONNEG("weight_decay"), NONNEG("eps"), STEP, GL_KEY_FLAG("maximize"), { NULL }
};
static const double adagrad_defaults[] = { 0.01, 0, 0, 1e-10, 1, 0 };
enum { ADADELTA_LR, ADADELTA_RHO, ADADELTA_EPS, ADADELTA_WEIGHT_DECAY, ADADELTA_MAXIMIZE };
static const gl_optkey adadelta_keys[] = {
  NONNEG("lr"), { "rho", GL_OPT_NUMBER, GL_RANGE_MIN | GL_RANGE_MAX, 0, 1, NULL }, NONNEG("eps"), NONNEG("weight_decay"),
  GL_KEY_FLAG("maximize"), { NULL }
};
static const double adadelta_defaults[] = { 1.0, 0.9, 1e-6, 0, 0 };
enum { ADAMAX_LR, ADAMAX_BETA1, ADAMAX_BETA2, ADAMAX_EPS, ADAMAX_WEIGHT_DECAY, ADAMAX_STEP, ADAMAX_MAXIMIZE };
static const gl_optkey adamax_keys[] = {
  NONNEG("lr"), UNIT("beta1"), UNIT("beta2"), NONNEG("eps"), NONNEG("weight_decay"), STEP, GL_KEY_FLAG("maximize"),
  { NULL }
};
static const double adamax_defaults[] = { 2e-3, 0.9, 0.999, 1e-8, 0, 1, 0 };
enum {
  NADAM_LR, NADAM_BETA1, NADAM_BETA2, NADAM_EPS, NADAM_WEIGHT_DECAY, NADAM_MOMENTUM_DECAY, NADAM_STEP, NADAM_MU_PRODUCT
};
static const gl_optkey nadam_keys[] = {
  NONNEG("lr"), UNIT("beta1"), UNIT("beta2"), NONNEG("eps"), NONNEG("weight_decay"), NONNEG("momentum_decay"), STEP,
  UNIT("mu_product"), { NULL }
};
static const double nadam_defaults[] = { 2e-3, 0.9, 0.999, 1e-8, 0, 4e-3, 1, -1 };   /* mu_product: -1 = from step */
enum { RADAM_LR, RADAM_BETA1, RADAM_BETA2, RADAM_EPS, RADAM_WEIGHT_DECAY, RADAM_STEP };
static const gl_optkey radam_keys[] = {
  NONNEG("lr"), UNIT("beta1"), UNIT("beta2"), NONNEG("eps"), NONNEG("weight_decay"), STEP, { NULL }
};
static const double radam_defaults[] = { 1e-3, 0.9, 0.999, 1e-8, 0, 1 };
#undef STEP
#undef NONNEG
#undef UNIT

#define P "gpu.ones(3)"
#define LABELS "gpu.array({1, 2}, {dtype = 'int64'})"
static const gl_optdecl cross_entropy_decl = {
  "fused.cross_entropy", "gpu.fused.cross_entropy(gpu.ones(2, 3), " LABELS ", %s)", cross_entropy_keys };
static const gl_optdecl cross_entropy_bwd_decl = {
  "fused.cross_entropy_backward", "gpu.fused.cross_entropy_backward(gpu.ones(2, 3), " LABELS ", gpu.ones(2), %s)",
  cross_entropy_bwd_keys };
#undef LABELS
static const gl_optdecl layer_norm_decl = {
  "fused.layer_norm", "gpu.fused.layer_norm(gpu.ones(2, 3), gpu.ones(3), nil, %s)", layer_norm_keys };
static const gl_optdecl attention_decl = {
  "fused.attention", "gpu.fused.attention(gpu.ones(2, 3), gpu.ones(4, 3), gpu.ones(4, 5), %s)", attention_keys };
static const gl_optdecl attention_bwd_decl = {
  "fused.attention_backward",
  "local q, k, v = gpu.ones(2, 3), gpu.ones(4, 3), gpu.ones(4, 5); local o, lse = gpu.fused.attention(q, k, v); "
  "gpu.fused.attention_backward(gpu.ones(2, 5), q, k, v, o, lse, %s)", attention_keys };
static const gl_optdecl sgd_decl = { "fused.sgd_", "gpu.fused.sgd_(" P ", " P ", nil, %s)", sgd_keys };
static const gl_optdecl adam_decl = { "fused.adam_", "gpu.fused.adam_(" P ", " P ", gpu.zeros(3), gpu.zeros(3), nil, %s)",
                                      adam_keys };
static const gl_optdecl rmsprop_decl = {
  "fused.rmsprop_", "gpu.fused.rmsprop_(" P ", " P ", gpu.zeros(3), nil, nil, %s)", rmsprop_keys };
#define Z "gpu.zeros(3)"
static const gl_optdecl adagrad_decl = { "fused.adagrad_", "gpu.fused.adagrad_(" P ", " P ", " Z ", %s)", adagrad_keys };
static const gl_optdecl adadelta_decl = { "fused.adadelta_", "gpu.fused.adadelta_(" P ", " P ", " Z ", " Z ", %s)",
                                          adadelta_keys };
static const gl_optdecl adamax_decl = { "fused.adamax_", "gpu.fused.adamax_(" P ", " P ", " Z ", " Z ", %s)", adamax_keys };
static const gl_optdecl nadam_decl = { "fused.nadam_", "gpu.fused.nadam_(" P ", " P ", " Z ", " Z ", %s)", nadam_keys };
static const gl_optdecl radam_decl = { "fused.radam_", "gpu.fused.radam_(" P ", " P ", " Z ", " Z ", %s)", radam_keys };
#undef Z
#undef P
static const gl_optdecl *const fused_decls[] = {
  &cross_entropy_decl, &cross_entropy_bwd_decl, &layer_norm_decl, &attention_decl, &attention_bwd_decl, &sgd_decl,
  &adam_decl, &rmsprop_decl, &adagrad_decl, &adadelta_decl, &adamax_decl, &nadam_decl, &radam_decl, NULL
};

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
  read_opts(L, 3, &cross_entropy_decl, cross_entropy_defaults, o);
  gl_array *r[2];                                     /* loss, probs */
  gl_lua_push_results(L, lua_gettop(L), r, 2);
  return gl_lua_results(L, gl_op_xent(r[0], r[1], z, labels, target, o[0]), r, 2);
}

static int l_cross_entropy_backward(lua_State *L) {
  gl_array *p = gl_lua_check(L, 1);
  const gl_array *labels, *target;
  labels_or_target(L, 2, &labels, &target);
  gl_array *g = gl_lua_check(L, 3);
  double o[2];
  read_opts(L, 4, &cross_entropy_bwd_decl, cross_entropy_bwd_defaults, o);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_xent_bwd(out, p, labels, target, o[0], g, o[1]);
  return gl_lua_result(L, st, out, 0);
}

/* ---- layer norm ------------------------------------------------------------------------------ */

static int l_layer_norm(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  const gl_array *w = gl_lua_optarray(L, 2), *b = gl_lua_optarray(L, 3);
  double o[1];
  read_opts(L, 4, &layer_norm_decl, layer_norm_defaults, o);
  gl_array *r[3];                                     /* y, mean, rstd */
  gl_lua_push_results(L, lua_gettop(L), r, 3);
  return gl_lua_results(L, gl_op_layer_norm(r[0], r[1], r[2], x, w, b, o[0]), r, 3);
}

static int l_layer_norm_backward(lua_State *L) {
  gl_array *g = gl_lua_check(L, 1), *x = gl_lua_check(L, 2), *mean = gl_lua_check(L, 3), *rstd = gl_lua_check(L, 4);
  const gl_array *w = gl_lua_optarray(L, 5);
  gl_array *r[3];                                     /* gx, gw, gb */
  gl_lua_push_results(L, lua_gettop(L), r, 3);
  return gl_lua_results(L, gl_op_layer_norm_bwd(r[0], r[1], r[2], g, x, mean, rstd, w, true), r, 3);
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
  attention_opts(L, 4, &attention_decl, q, o);
  gl_array *r[2];                                     /* out, lse */
  gl_lua_push_results(L, lua_gettop(L), r, 2);
  return gl_lua_results(L, gl_op_attention(r[0], r[1], q, k, v, o[0], o[1] != 0), r, 2);
}

static int l_attention_backward(lua_State *L) {
  gl_array *g = gl_lua_check(L, 1), *q = gl_lua_check(L, 2), *k = gl_lua_check(L, 3), *v = gl_lua_check(L, 4);
  gl_array *out = gl_lua_check(L, 5), *lse = gl_lua_check(L, 6);
  double o[2];
  attention_opts(L, 7, &attention_bwd_decl, q, o);
  gl_array *r[3];                                     /* gq, gk, gv */
  gl_lua_push_results(L, lua_gettop(L), r, 3);
  return gl_lua_results(L, gl_op_attention_bwd(r[0], r[1], r[2], g, q, k, v, out, lse, o[0], o[1] != 0), r, 3);
}

/* ---- optimizer steps ------------------------------------------------------------------------ */

/* An optimizer's step, fused.<name>_(p, g, state..., opts): its state arrays come from
** argument 3 on, 'required' of them, then 'optional' ones that may be nil; then its options
** table, from which 'hyper' computes the step's hyperparameters. */
typedef struct optim_def {
  gl_optim_kind kind;
  int required, optional;
  const gl_optdecl *decl;
  const double *defaults;   /* one per key of decl */
  void (*hyper)(lua_State *L, const double *o, gl_optim_hp *hp);
} optim_def;

/* Runs the step in place; returns p. */
static int optim_step(lua_State *L, const optim_def *d) {
  gl_array *p = gl_lua_check(L, 1), *g = gl_lua_check(L, 2);
  const gl_array *state[3] = { NULL, NULL, NULL };
  for (int i = 0; i < d->required + d->optional; i++)
    state[i] = i < d->required ? gl_lua_check(L, 3 + i) : gl_lua_optarray(L, 3 + i);
  double o[12];
  read_opts(L, 3 + d->required + d->optional, d->decl, d->defaults, o);
  gl_optim_hp hp = { 0 };
  d->hyper(L, o, &hp);
  gl_lua_check_status(L, gl_op_optim_step(d->kind, p, g, state, &hp), 0);
  lua_settop(L, 1);
  return 1;
}

static void sgd_hyper(lua_State *L, const double *o, gl_optim_hp *hp) {
  (void)L;
  hp->lr = o[SGD_LR]; hp->momentum = o[SGD_MOMENTUM]; hp->dampening = o[SGD_DAMPENING];
  hp->weight_decay = o[SGD_WEIGHT_DECAY];
  hp->nesterov = o[SGD_NESTEROV] != 0; hp->maximize = o[SGD_MAXIMIZE] != 0; hp->first = o[SGD_FIRST] != 0;
}

static void adam_hyper(lua_State *L, const double *o, gl_optim_hp *hp) {
  (void)L;
  double t = o[ADAM_STEP];
  hp->lr = o[ADAM_LR]; hp->beta1 = o[ADAM_BETA1]; hp->beta2 = o[ADAM_BETA2]; hp->eps = o[ADAM_EPS];
  hp->weight_decay = o[ADAM_WEIGHT_DECAY];
  hp->decoupled = o[ADAM_DECOUPLED] != 0; hp->amsgrad = o[ADAM_AMSGRAD] != 0; hp->maximize = o[ADAM_MAXIMIZE] != 0;
  hp->bc1 = 1 - pow(hp->beta1, t);
  hp->bc2 = 1 - pow(hp->beta2, t);
}

static void rmsprop_hyper(lua_State *L, const double *o, gl_optim_hp *hp) {
  (void)L;
  hp->lr = o[RMSPROP_LR]; hp->alpha = o[RMSPROP_ALPHA]; hp->eps = o[RMSPROP_EPS];
  hp->weight_decay = o[RMSPROP_WEIGHT_DECAY]; hp->momentum = o[RMSPROP_MOMENTUM]; hp->centered = o[RMSPROP_CENTERED] != 0;
}

/* Adagrad: the step's rate decays as lr / (1 + (step - 1) lr_decay). The sum starts at
** PyTorch's initial_accumulator_value: the caller fills it (gpu.full_like). */
static void adagrad_hyper(lua_State *L, const double *o, gl_optim_hp *hp) {
  (void)L;
  hp->lr = o[ADAGRAD_LR] / (1 + (o[ADAGRAD_STEP] - 1) * o[ADAGRAD_LR_DECAY]);
  hp->weight_decay = o[ADAGRAD_WEIGHT_DECAY]; hp->eps = o[ADAGRAD_EPS]; hp->maximize = o[ADAGRAD_MAXIMIZE] != 0;
}

static void adadelta_hyper(lua_State *L, const double *o, gl_optim_hp *hp) {
  (void)L;
  hp->lr = o[ADADELTA_LR]; hp->rho = o[ADADELTA_RHO]; hp->eps = o[ADADELTA_EPS];
  hp->weight_decay = o[ADADELTA_WEIGHT_DECAY]; hp->maximize = o[ADADELTA_MAXIMIZE] != 0;
}

static void adamax_hyper(lua_State *L, const double *o, gl_optim_hp *hp) {
  (void)L;
  hp->lr = o[ADAMAX_LR]; hp->beta1 = o[ADAMAX_BETA1]; hp->beta2 = o[ADAMAX_BETA2]; hp->eps = o[ADAMAX_EPS];
  hp->weight_decay = o[ADAMAX_WEIGHT_DECAY]; hp->maximize = o[ADAMAX_MAXIMIZE] != 0;
  hp->bc1 = 1 - pow(hp->beta1, o[ADAMAX_STEP]);
}

/* mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2), Dozat's momentum schedule. */
static double nadam_mu(double beta1, double momentum_decay, double t) {
  return beta1 * (1 - 0.5 * pow(0.96, t * momentum_decay));
}

/* NAdam as PyTorch 2 computes it. mu_product is the product of mu_1..mu_step (the
** optimizer's running state, this step's factor included); without it, it is multiplied
** out here, up to a million steps (a product past that is the caller's to keep). */
#define NADAM_MAX_STEPS 1000000
static void nadam_hyper(lua_State *L, const double *o, gl_optim_hp *hp) {
  double t = o[NADAM_STEP], b1 = o[NADAM_BETA1], md = o[NADAM_MOMENTUM_DECAY], lr = o[NADAM_LR];
  double mu = nadam_mu(b1, md, t), mu_next = nadam_mu(b1, md, t + 1);
  double prod = o[NADAM_MU_PRODUCT];
  if (prod < 0) {
    if (t > NADAM_MAX_STEPS)
      luaL_argerror(L, 5, lua_pushfstring(L, "option 'mu_product' is needed past step %d (the optimizer keeps it)",
                                          NADAM_MAX_STEPS));
    prod = 1;
    for (double s = 1; s <= t && prod != 0; s++) prod *= nadam_mu(b1, md, s);
  }
  hp->beta1 = b1; hp->beta2 = o[NADAM_BETA2]; hp->eps = o[NADAM_EPS]; hp->weight_decay = o[NADAM_WEIGHT_DECAY];
  hp->bc2 = 1 - pow(hp->beta2, t);
  hp->grad_step = lr * (1 - mu) / (1 - prod);          /* the optimizer's (array ops') order of operations */
  hp->avg_step = lr * mu_next / (1 - prod * mu_next);
}

/* RAdam: rho_t, the length of the approximated SMA, decides between the rectified adaptive
** step (rho_t > 5) and plain momentum SGD. */
static void radam_hyper(lua_State *L, const double *o, gl_optim_hp *hp) {
  (void)L;
  double t = o[RADAM_STEP], lr = o[RADAM_LR];
  hp->lr = lr; hp->beta1 = o[RADAM_BETA1]; hp->beta2 = o[RADAM_BETA2]; hp->eps = o[RADAM_EPS];
  hp->weight_decay = o[RADAM_WEIGHT_DECAY];
  hp->bc1 = 1 - pow(hp->beta1, t);
  hp->bc2 = 1 - pow(hp->beta2, t);
  double rho_inf = 2 / (1 - hp->beta2) - 1;
  double rho_t = rho_inf - 2 * t * pow(hp->beta2, t) / hp->bc2;
  hp->rectify = rho_t > 5;
  if (hp->rectify) {
    double rect = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
    hp->avg_step = lr * rect * sqrt(hp->bc2) / hp->bc1;
  }
}

static const optim_def sgd = { GL_OPTIM_SGD, 0, 1, &sgd_decl, sgd_defaults, sgd_hyper };
static const optim_def adam = { GL_OPTIM_ADAM, 2, 1, &adam_decl, adam_defaults, adam_hyper };
static const optim_def rmsprop = { GL_OPTIM_RMSPROP, 1, 2, &rmsprop_decl, rmsprop_defaults, rmsprop_hyper };
static const optim_def adagrad = { GL_OPTIM_ADAGRAD, 1, 0, &adagrad_decl, adagrad_defaults, adagrad_hyper };
static const optim_def adadelta = { GL_OPTIM_ADADELTA, 2, 0, &adadelta_decl, adadelta_defaults, adadelta_hyper };
static const optim_def adamax = { GL_OPTIM_ADAMAX, 2, 0, &adamax_decl, adamax_defaults, adamax_hyper };
static const optim_def nadam = { GL_OPTIM_NADAM, 2, 0, &nadam_decl, nadam_defaults, nadam_hyper };
static const optim_def radam = { GL_OPTIM_RADAM, 2, 0, &radam_decl, radam_defaults, radam_hyper };
static int l_sgd_(lua_State *L) { return optim_step(L, &sgd); }
static int l_adam_(lua_State *L) { return optim_step(L, &adam); }
static int l_rmsprop_(lua_State *L) { return optim_step(L, &rmsprop); }
static int l_adagrad_(lua_State *L) { return optim_step(L, &adagrad); }
static int l_adadelta_(lua_State *L) { return optim_step(L, &adadelta); }
static int l_adamax_(lua_State *L) { return optim_step(L, &adamax); }
static int l_nadam_(lua_State *L) { return optim_step(L, &nadam); }
static int l_radam_(lua_State *L) { return optim_step(L, &radam); }

static const gl_reg fused_funcs[] = {
  { "linear", l_linear, 3 }, { "cross_entropy", l_cross_entropy, 3 },
  { "cross_entropy_backward", l_cross_entropy_backward, 4 }, { "layer_norm", l_layer_norm, 4 },
  { "layer_norm_backward", l_layer_norm_backward, 5 }, { "attention", l_attention, 4 },
  { "attention_backward", l_attention_backward, 7 }, { "sgd_", l_sgd_, 4 }, { "adam_", l_adam_, 6 },
  { "rmsprop_", l_rmsprop_, 6 }, { "adagrad_", l_adagrad_, 4 }, { "adadelta_", l_adadelta_, 5 },
  { "adamax_", l_adamax_, 5 }, { "nadam_", l_nadam_, 5 }, { "radam_", l_radam_, 5 }, { NULL, NULL, 0 },
};

void gl_open_fused(lua_State *L, int module, int methods) {
  (void)methods;
  lua_newtable(L);
  gl_lua_setops(L, lua_gettop(L), "fused.", fused_funcs);
  gl_lua_setloaded(L, "gpu.fused");
  lua_setfield(L, module, "fused");
  gl_lua_declare_all(L, fused_decls);
}
