/*
** lrandom.c — gpu.random: seed, rand, randn, uniform, normal, randint, permutation,
** shuffle, bernoulli, choice, get_state/set_state, and gpu.random.Generator(seed) objects
** with the same methods. Shortcuts gpu.rand, gpu.randn; array methods x:shuffle(),
** x:permutation(), x:bernoulli(), x:choice(k).
**
** A generator is (seed, offset) (src/ops/ops.h gl_rng). Each device has a default one
** (all seeded alike by seed(n)), kept in a userdata that is upvalue 2 of every function
** here (lmathlib's pattern: per-state context in an upvalue, never a C global). Upvalue
** 3 says whether the function is a Generator method (argument 1 is the generator).
*/
#include <math.h>
#include <string.h>
#include <time.h>
#include "lgpu.h"
#include "../../kernels/random_dist.h"

#define GENERATOR "gpu.Generator"

/* One default generator per device the registry can name (gl_device_slot). */
typedef struct gl_rdefaults { int n; gl_rng gen[]; } gl_rdefaults;

static gl_rng *default_for(lua_State *L, gl_device dev) {
  gl_rdefaults *d = lua_touserdata(L, lua_upvalueindex(2));
  return &d->gen[gl_device_slot(dev)];
}

static void seed_defaults(gl_rdefaults *d, uint64_t s) {
  for (int i = 0; i < d->n; i++) { d->gen[i].seed = s; d->gen[i].offset = 0; }
}

/* The generator of this call: argument 1 for Generator methods (and *first = 2), else
** NULL (the caller takes the default of the device it settles on). */
static gl_rng *call_generator(lua_State *L, int *first) {
  if (lua_toboolean(L, lua_upvalueindex(3))) {
    *first = 2;
    return luaL_checkudata(L, 1, GENERATOR);
  }
  *first = 1;
  return NULL;
}

static gl_rng *pick(lua_State *L, gl_rng *g, gl_device dev) { return g ? g : default_for(L, dev); }

/* A seed from the clock and addresses, as Lua 5.4's math.random does. */
static uint64_t fresh_seed(lua_State *L) {
  uint64_t s = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20) ^ (uint64_t)(uintptr_t)L;
  s ^= (uint64_t)(uintptr_t)&s << 7;
  s *= 0x9E3779B97F4A7C15ull;
  return s ^ (s >> 29);
}

static uint64_t check_seed(lua_State *L, int idx) { return (uint64_t)gl_lua_int(L, idx, "seed"); }

/* ---- options ------------------------------------------------------------------------------- */

static const gl_optkey choice_keys[] = { GL_KEYS_DTYPE_DEVICE, { "replace", GL_OPT_BOOL, 0, 0, 0, NULL }, { NULL } };
#define DECL(fn, example) static const gl_optdecl fn##_decl = { "random." #fn, example, gl_create_keys };
DECL(rand, "gpu.random.rand(2, %s)")
DECL(randn, "gpu.random.randn(2, %s)")
DECL(uniform, "gpu.random.uniform(0, 1, 2, %s)")
DECL(normal, "gpu.random.normal(0, 1, 2, %s)")
DECL(randint, "gpu.random.randint(1, 6, 2, %s)")
DECL(bernoulli, "gpu.random.bernoulli(0.5, 2, %s)")
DECL(permutation, "gpu.random.permutation(4, %s)")
#undef DECL
static const gl_optdecl choice_decl = { "random.choice", "gpu.random.choice(5, 2, %s)", choice_keys };
static const gl_optdecl *const random_decls[] = {
  &rand_decl, &randn_decl, &uniform_decl, &normal_decl, &randint_decl, &bernoulli_decl, &permutation_decl,
  &choice_decl, NULL
};

/* The shape at 'first' (varargs or a table) and the options after it. */
static void shape_opts(lua_State *L, int first, int *ndim, int64_t *shape, gl_dtype *dt, gl_device *dev,
                       const gl_optdecl *d) {
  int next = gl_lua_shape(L, first, ndim, shape);
  next = gl_lua_optsarg(L, next, lua_gettop(L), "dimension or options table");
  dev->type = 255;
  dev->index = 0;
  gl_lua_opts(L, next, d, dt, dev, NULL);
}

/* Pushes nothing: checks the status of a fill into 'out' (already pushed) and accounts. */
static int done(lua_State *L, gl_status st, int arg, gl_array *out) {
  return gl_lua_result(L, st, out, arg);
}

/* ---- float distributions ------------------------------------------------------------ */

static int float_dist(lua_State *L, gl_rand_dist dist, bool params, double a, double b, const gl_optdecl *d) {
  int first;
  gl_rng *g = call_generator(L, &first);
  int params_at = first;
  if (params) {
    a = luaL_checknumber(L, first);
    b = luaL_checknumber(L, first + 1);
    first += 2;
  }
  int ndim;
  int64_t shape[GL_MAXDIMS];
  gl_dtype dt = GL_DEFAULT_DTYPE;
  gl_device dev;
  shape_opts(L, first, &ndim, shape, &dt, &dev, d);
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_random(out, pick(L, g, dev), dist, a, b, dt, ndim, shape, dev);
  return done(L, st, st == GL_EINVAL && params && gl_dtype_is_float(dt) ? params_at : 0, out);
}

static int l_rand(lua_State *L) { return float_dist(L, GL_RAND_UNIFORM, false, 0.0, 1.0, &rand_decl); }
static int l_randn(lua_State *L) { return float_dist(L, GL_RAND_NORMAL, false, 0.0, 1.0, &randn_decl); }
static int l_uniform(lua_State *L) { return float_dist(L, GL_RAND_UNIFORM, true, 0, 0, &uniform_decl); }
static int l_normal(lua_State *L) { return float_dist(L, GL_RAND_NORMAL, true, 0, 0, &normal_decl); }

/* A bound of randint into dt: an integer, or for uint64 (whose values past 2^63 - 1 Lua
** integers cannot hold) a float in [2^63, 2^64) taken exactly, 2^64 (how 2^64 - 1, the
** largest uint64, rounds as a float) standing for 2^64 - 1; returned as uint64 bits. */
static int64_t int_bound(lua_State *L, int idx, gl_dtype dt, const char *what, bool *negative) {
  if (gl_dtypes[dt].kind != GL_KIND_UINT || gl_dtypes[dt].size != 8) return gl_lua_int(L, idx, what);
  if (!lua_isinteger(L, idx) && lua_type(L, idx) == LUA_TNUMBER) {
    double f = lua_tonumber(L, idx);
    if (f == (double)UINT64_MAX) return (int64_t)UINT64_MAX;
    if (f >= 0x1p63 && f < 0x1p64) return (int64_t)(uint64_t)f;    /* exact: an integer this large */
  }
  int64_t v = gl_lua_int(L, idx, what);
  *negative = *negative || v < 0;
  return v;
}

/* randint(lo, hi, shape... [, opts]): lo..hi inclusive, like math.random(lo, hi). */
static int l_randint(lua_State *L) {
  int first;
  gl_rng *g = call_generator(L, &first);
  int ndim;
  int64_t shape[GL_MAXDIMS];
  gl_dtype dt = GL_INT64;
  gl_device dev;
  shape_opts(L, first + 2, &ndim, shape, &dt, &dev, &randint_decl);
  bool negative = false;
  int64_t lo = int_bound(L, first, dt, "lo", &negative), hi = int_bound(L, first + 1, dt, "hi", &negative);
  gl_array *out = gl_lua_push(L);
  if (negative)                             /* as gl_op_randint says it of the other dtypes */
    return done(L, gl_fail(GL_EINVAL, "bounds %lld..%lld do not fit uint64", (long long)lo, (long long)hi), 0, out);
  return done(L, gl_op_randint(out, pick(L, g, dev), lo, hi, dt, ndim, shape, dev), 0, out);
}

/* bernoulli(p, shape... [, opts]): p a number in [0, 1] or an array (then the shape
** defaults to p's and the device is p's). dtype float32 by default. */
static int l_bernoulli(lua_State *L) {
  int first;
  gl_rng *g = call_generator(L, &first);
  gl_array *parr = gl_lua_test(L, first);
  double p = 0;
  if (parr) gl_lua_check(L, first);
  else p = luaL_checknumber(L, first);
  int ndim;
  int64_t shape[GL_MAXDIMS];
  gl_dtype dt = GL_DEFAULT_DTYPE;
  gl_device dev;
  bool has_shape = lua_type(L, first + 1) == LUA_TNUMBER ||
                   (lua_istable(L, first + 1) && lua_rawlen(L, first + 1) > 0);
  shape_opts(L, first + 1, &ndim, shape, &dt, &dev, &bernoulli_decl);
  if (parr) {
    bool dev_given = false;
    if (lua_istable(L, lua_gettop(L))) {
      dev_given = lua_getfield(L, lua_gettop(L), "device") != LUA_TNIL;
      lua_pop(L, 1);
    }
    if (!dev_given) dev = gl_array_device(parr);
    if (!has_shape) { ndim = parr->ndim; memcpy(shape, parr->shape, sizeof shape); }
  }
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_bernoulli(out, pick(L, g, dev), p, parr, dt, ndim, shape, dev);
  return done(L, st, st == GL_EINVAL && gl_dtypes[dt].kind != GL_KIND_BOOL ? first : 0, out);
}

/* ---- permutations --------------------------------------------------------------------- */

/* permutation(n [, opts]): 1..n shuffled (int64); permutation(x): a copy of x shuffled
** along its first axis. */
static int l_permutation(lua_State *L) {
  int first;
  gl_rng *g = call_generator(L, &first);
  gl_array *x = gl_lua_test(L, first);
  if (x) {
    gl_lua_check(L, first);
    if (x->ndim == 0) return luaL_argerror(L, first, "cannot shuffle a 0-d array");
    gl_device dev = gl_array_device(x);
    gl_array *out = gl_lua_push(L);
    gl_lua_check_status(L, gl_op_copy(out, x, (gl_dtype)x->dtype, dev), 0);
    return done(L, gl_op_shuffle(out, pick(L, g, dev)), 0, out);
  }
  int64_t n = gl_lua_int(L, first, "n");
  if (n < 0) return luaL_argerror(L, first, lua_pushfstring(L, "n must be >= 0 (got %I)", (lua_Integer)n));
  gl_dtype dt = GL_INT64;
  gl_device dev = { 255, 0 };
  gl_lua_opts(L, first + 1, &permutation_decl, &dt, &dev, NULL);
  if (dt != GL_INT64 && dt != GL_INT32)
    return luaL_argerror(L, first + 1, lua_pushfstring(L, "dtype %s is not supported by permutation (expected int64 or int32)", gl_dtypes[dt].name));
  gl_rng *rng = pick(L, g, dev);
  gl_rng before = *rng;
  gl_array *out = gl_lua_push(L);
  done(L, gl_op_permutation(out, rng, n, n, dev), 0, out);
  if (dt != GL_INT64) {
    gl_array *c = gl_lua_push(L);
    gl_status st = gl_op_copy(c, out, dt, dev);
    if (st != GL_OK) *rng = before;                /* a call that fails draws nothing */
    gl_lua_check_status(L, st, 0);
  }
  return 1;
}

/* shuffle(x): in place along the first axis; returns x. */
static int l_shuffle(lua_State *L) {
  int first;
  gl_rng *g = call_generator(L, &first);
  gl_array *x = gl_lua_check(L, first);
  gl_lua_check_status(L, gl_op_shuffle(x, pick(L, g, gl_array_device(x))), first);
  lua_pushvalue(L, first);
  return 1;
}

/* choice(n or x, k [, {replace = true, device =}]): k draws from 1..n (int64), or k rows
** of x along its first axis. Without replacement: the first k of permutation(n). */
static int forward(lua_State *L, const char *name);

static int l_choice(lua_State *L) {
  int first;
  gl_rng *g = call_generator(L, &first);
  for (int i = first + 1; i <= lua_gettop(L) && i <= first + 2; i++)   /* p: lua/gpu/random_more.lua */
    if (lua_istable(L, i) && gl_lua_is_options(L, i)) {
      bool has_p = lua_getfield(L, i, "p") != LUA_TNIL;
      lua_pop(L, 1);
      if (has_p) return forward(L, "choice");
    }
  gl_array *x = gl_lua_test(L, first);
  int64_t n;
  if (x) {
    gl_lua_check(L, first);
    if (x->ndim == 0) return luaL_argerror(L, first, "cannot choose from a 0-d array");
    n = x->shape[0];
  } else {
    n = gl_lua_int(L, first, "n");
    if (n < 0) return luaL_argerror(L, first, lua_pushfstring(L, "n must be >= 0 (got %I)", (lua_Integer)n));
  }
  int o = first + 1;
  int64_t k = 1;
  if (lua_type(L, o) == LUA_TNUMBER) {
    k = gl_lua_int(L, o, "sample size");
    if (k < 0) return luaL_argerror(L, o, lua_pushfstring(L, "sample size must be >= 0 (got %I)", (lua_Integer)k));
    o++;
  }
  o = gl_lua_optsarg(L, o, first + 2, "sample size or options table");
  gl_dtype dt = GL_INT64;
  gl_device dev = { 255, 0 };
  if (x) dev = gl_array_device(x);
  gl_optval ov[3];
  gl_lua_opts(L, o, &choice_decl, &dt, &dev, ov);
  bool replace = ov[2].set ? ov[2].b : true;
  if (x && !gl_device_eq(dev, gl_array_device(x)))
    return luaL_argerror(L, o, "option 'device' must be x's device");
  if (dt != GL_INT64) return luaL_argerror(L, o, "choice gives int64 positions (dtype must be int64)");
  if (n == 0 && k > 0) return gl_lua_error(L, "cannot choose from an empty population");
  gl_rng *rng = pick(L, g, dev);
  gl_rng before = *rng;
  gl_array *idx = gl_lua_push(L);
  /* k = 0 draws nothing, from an empty population too (NumPy's empty result) */
  if (replace) done(L, gl_op_randint(idx, rng, 1, n > 0 ? n : 1, GL_INT64, 1, &k, dev), 0, idx);
  else done(L, gl_op_permutation(idx, rng, n, k, dev), first + 1, idx);
  if (!x) return 1;
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_take(out, x, 0, idx);
  if (st != GL_OK) *rng = before;                  /* a call that fails draws nothing */
  return done(L, st, 0, out);
}

/* ---- NumPy's distributions (kernels/random_dist.h) -------------------------------------- */

/* A Generator method as NumPy names it: sampler 'kind' (ops.h gl_op_sample) with its first
** 'np' parameters from the caller (NAN in def: required), the rest fixed. */
typedef struct gl_rexposed {
  const char *name;
  int kind, np;
  double def[3];
} gl_rexposed;

#define REQ NAN
#define GL_RSAMPLERS(X)                                                                        \
  X(gamma, GL_RD_GAMMA, 2, REQ, 1, 0, "gpu.random.gamma(2, 1, 5, %s)")                          \
  X(standard_gamma, GL_RD_GAMMA, 1, REQ, 1, 0, "gpu.random.standard_gamma(2, 5, %s)")           \
  X(beta, GL_RD_BETA, 2, REQ, REQ, 0, "gpu.random.beta(2, 3, 5, %s)")                           \
  X(poisson, GL_RD_POISSON, 1, 1, 0, 0, "gpu.random.poisson(4, 5, %s)")                         \
  X(binomial, GL_RD_BINOMIAL, 2, REQ, REQ, 0, "gpu.random.binomial(10, 0.5, 5, %s)")            \
  X(exponential, GL_RD_EXPONENTIAL, 1, 1, 0, 0, "gpu.random.exponential(1, 5, %s)")             \
  X(standard_exponential, GL_RD_EXPONENTIAL, 0, 1, 0, 0, "gpu.random.standard_exponential(5, %s)") \
  X(chisquare, GL_RD_CHISQUARE, 1, REQ, 0, 0, "gpu.random.chisquare(3, 5, %s)")                 \
  X(noncentral_chisquare, GL_RD_NONCENTRAL_CHISQUARE, 2, REQ, REQ, 0,                           \
    "gpu.random.noncentral_chisquare(3, 2, 5, %s)")                                             \
  X(f, GL_RD_F, 2, REQ, REQ, 0, "gpu.random.f(3, 5, 5, %s)")                                    \
  X(geometric, GL_RD_GEOMETRIC, 1, REQ, 0, 0, "gpu.random.geometric(0.3, 5, %s)")               \
  X(gumbel, GL_RD_GUMBEL, 2, 0, 1, 0, "gpu.random.gumbel(0, 1, 5, %s)")                         \
  X(hypergeometric, GL_RD_HYPERGEOMETRIC, 3, REQ, REQ, REQ, "gpu.random.hypergeometric(5, 7, 4, 5, %s)") \
  X(laplace, GL_RD_LAPLACE, 2, 0, 1, 0, "gpu.random.laplace(0, 1, 5, %s)")                      \
  X(logistic, GL_RD_LOGISTIC, 2, 0, 1, 0, "gpu.random.logistic(0, 1, 5, %s)")                   \
  X(lognormal, GL_RD_LOGNORMAL, 2, 0, 1, 0, "gpu.random.lognormal(0, 1, 5, %s)")                \
  X(logseries, GL_RD_LOGSERIES, 1, REQ, 0, 0, "gpu.random.logseries(0.6, 5, %s)")               \
  X(negative_binomial, GL_RD_NEGATIVE_BINOMIAL, 2, REQ, REQ, 0, "gpu.random.negative_binomial(3, 0.4, 5, %s)") \
  X(pareto, GL_RD_PARETO, 1, REQ, 0, 0, "gpu.random.pareto(3, 5, %s)")                          \
  X(power, GL_RD_POWER, 1, REQ, 0, 0, "gpu.random.power(3, 5, %s)")                             \
  X(rayleigh, GL_RD_RAYLEIGH, 1, 1, 0, 0, "gpu.random.rayleigh(1, 5, %s)")                      \
  X(standard_cauchy, GL_RD_STANDARD_CAUCHY, 0, 0, 0, 0, "gpu.random.standard_cauchy(5, %s)")    \
  X(standard_t, GL_RD_STANDARD_T, 1, REQ, 0, 0, "gpu.random.standard_t(4, 5, %s)")              \
  X(triangular, GL_RD_TRIANGULAR, 3, REQ, REQ, REQ, "gpu.random.triangular(0, 1, 3, 5, %s)")    \
  X(vonmises, GL_RD_VONMISES, 2, REQ, REQ, 0, "gpu.random.vonmises(0, 2, 5, %s)")               \
  X(wald, GL_RD_WALD, 2, REQ, REQ, 0, "gpu.random.wald(1, 2, 5, %s)")                           \
  X(weibull, GL_RD_WEIBULL, 1, REQ, 0, 0, "gpu.random.weibull(2, 5, %s)")                       \
  X(zipf, GL_RD_ZIPF, 1, REQ, 0, 0, "gpu.random.zipf(2, 5, %s)")

#define X(nm, kind, np, d0, d1, d2, ex) { #nm, kind, np, { d0, d1, d2 } },
static const gl_rexposed rexposed[] = { GL_RSAMPLERS(X) };
#undef X
enum {
#define X(nm, ...) RS_##nm,
  GL_RSAMPLERS(X)
#undef X
};
#define X(nm, kind, np, d0, d1, d2, ex) static const gl_optdecl nm##_sdecl = { "random." #nm, ex, gl_create_keys };
GL_RSAMPLERS(X)
#undef X
static const gl_optdecl *const sampler_decls[] = {
#define X(nm, ...) &nm##_sdecl,
  GL_RSAMPLERS(X)
#undef X
  NULL
};
static const gl_optdecl *const sampler_decl_of[] = {
#define X(nm, ...) [RS_##nm] = &nm##_sdecl,
  GL_RSAMPLERS(X)
#undef X
};

/* name(params... [, size...] [, opts]): each parameter a number or an array (nil: its
** default); without a size, the parameters' broadcast shape; the device is the arrays'
** unless opts names one; dtype: integer samplers int64, the others the first float array
** parameter's dtype or float32. */
static int sample(lua_State *L, int which) {
  const gl_rexposed *e = &rexposed[which];
  int first;
  gl_rng *g = call_generator(L, &first);
  int kind = e->kind;
  bool discrete = gl_sampler_discrete(kind);
  double par[3] = { e->def[0], e->def[1], e->def[2] };
  const gl_array *parr[3] = { NULL, NULL, NULL };
  int bnd = 0;
  int64_t bshape[GL_MAXDIMS];
  gl_device pdev = { 255, 0 };
  gl_dtype pdt = GL_DEFAULT_DTYPE;
  bool any = false, pfloat = false;
  for (int k = 0; k < e->np; k++) {
    int idx = first + k;
    const char *pn = gl_sampler_param(kind, k);
    gl_array *a = gl_lua_test(L, idx);
    if (a) {
      gl_lua_check(L, idx);
      parr[k] = a;
      int nn;
      int64_t ns[GL_MAXDIMS];
      gl_status st = gl_broadcast_shapes(bnd, bshape, a->ndim, a->shape, &nn, ns);
      if (st != GL_OK) gl_lua_check_status(L, st, idx);
      bnd = nn;
      memcpy(bshape, ns, sizeof ns);
      if (!any) pdev = gl_array_device(a);
      if (!pfloat && gl_dtype_is_float((gl_dtype)a->dtype)) { pfloat = true; pdt = (gl_dtype)a->dtype; }
      any = true;
    } else if (lua_isnoneornil(L, idx)) {
      if (isnan(e->def[k]))
        return luaL_argerror(L, idx, lua_pushfstring(L, "%s (a number or an array) is required", pn));
    } else if (lua_type(L, idx) == LUA_TNUMBER) {
      par[k] = lua_tonumber(L, idx);
    } else {
      return luaL_argerror(L, idx, lua_pushfstring(L, "%s must be a number or an array, got %s", pn, luaL_typename(L, idx)));
    }
  }
  int sfirst = first + e->np, ndim;
  int64_t shape[GL_MAXDIMS];
  int next = gl_lua_shape(L, sfirst, &ndim, shape);
  bool has_shape = next > sfirst;
  next = gl_lua_optsarg(L, next, lua_gettop(L), "dimension or options table");
  gl_dtype dt = discrete ? GL_INT64 : pdt;
  gl_device dev = { 255, 0 };
  gl_lua_opts(L, next, sampler_decl_of[which], &dt, &dev, NULL);
  if (any) {
    bool dev_given = false;
    if (lua_istable(L, next)) {
      dev_given = lua_getfield(L, next, "device") != LUA_TNIL;
      lua_pop(L, 1);
    }
    if (!dev_given) dev = pdev;
  }
  if (!has_shape) { ndim = bnd; memcpy(shape, bshape, sizeof shape); }
  gl_array *out = gl_lua_push(L);
  return done(L, gl_op_sample(out, pick(L, g, dev), kind, par, parr, dt, ndim, shape, dev), 0, out);
}

#define X(nm, ...) static int l_s_##nm(lua_State *L) { return sample(L, RS_##nm); }
GL_RSAMPLERS(X)
#undef X

/* The parts written in Lua (lua/gpu/random_more.lua): name(generator or nil, args...). */
static int forward(lua_State *L, const char *name) {
  int first;
  gl_rng *g = call_generator(L, &first);
  int top = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "gpu.random_more");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
  if (g) lua_pushvalue(L, 1);
  else lua_pushnil(L);
  for (int i = first; i <= top; i++) lua_pushvalue(L, i);
  lua_call(L, top - first + 2, LUA_MULTRET);
  return lua_gettop(L) - top;
}

static int l_dirichlet(lua_State *L) { return forward(L, "dirichlet"); }
static int l_multinomial(lua_State *L) { return forward(L, "multinomial"); }
static int l_multivariate_normal(lua_State *L) { return forward(L, "multivariate_normal"); }
static int l_permuted(lua_State *L) { return forward(L, "permuted"); }
static int l_torch_multinomial(lua_State *L) { return forward(L, "torch_multinomial"); }
static int l_torch_poisson(lua_State *L) { return forward(L, "torch_poisson"); }

/* ---- state ------------------------------------------------------------------------------ */

static void push_state(lua_State *L, const gl_rng *g) {
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)g->seed);
  lua_setfield(L, -2, "seed");
  lua_pushinteger(L, (lua_Integer)g->offset);
  lua_setfield(L, -2, "offset");
}

static gl_rng read_state(lua_State *L, int idx) {
  luaL_checktype(L, idx, LUA_TTABLE);
  gl_rng r;
  int isnum;
  lua_getfield(L, idx, "seed");
  r.seed = (uint64_t)lua_tointegerx(L, -1, &isnum);
  if (!isnum) luaL_argerror(L, idx, "state.seed must be an integer");
  lua_getfield(L, idx, "offset");
  r.offset = (uint64_t)lua_tointegerx(L, -1, &isnum);
  if (!isnum) luaL_argerror(L, idx, "state.offset must be an integer");
  lua_pop(L, 2);
  return r;
}

/* The device named at idx (a name or an array), or the default device. */
static gl_device device_arg(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return gl_lua_default_device(L);
  gl_array *a = gl_lua_test(L, idx);
  if (a) return gl_array_device(gl_lua_check(L, idx));
  return gl_lua_device(L, idx);
}

/* seed([n]): seeds the default generator of every device (offset 0), or a Generator;
** without n, a fresh seed from the clock. Returns the seed. */
static int l_seed(lua_State *L) {
  int first;
  gl_rng *g = call_generator(L, &first);
  uint64_t s = lua_isnoneornil(L, first) ? fresh_seed(L) : check_seed(L, first);
  if (g) { g->seed = s; g->offset = 0; }
  else {
    seed_defaults(lua_touserdata(L, lua_upvalueindex(2)), s);
  }
  lua_pushinteger(L, (lua_Integer)s);
  return 1;
}

/* get_state([device]) -> {seed =, offset =}; on a Generator: its own. */
static int l_get_state(lua_State *L) {
  int first;
  gl_rng *g = call_generator(L, &first);
  push_state(L, g ? g : default_for(L, device_arg(L, first)));
  return 1;
}

/* set_state(state [, device]) */
static int l_set_state(lua_State *L) {
  int first;
  gl_rng *g = call_generator(L, &first);
  gl_rng r = read_state(L, first);
  *(g ? g : default_for(L, device_arg(L, first + 1))) = r;
  return 0;
}

/* Generator([seed]) */
static int l_generator(lua_State *L) {
  uint64_t s = lua_isnoneornil(L, 1) ? fresh_seed(L) : check_seed(L, 1);
  gl_rng *g = lua_newuserdatauv(L, sizeof *g, 0);
  g->seed = s;
  g->offset = 0;
  luaL_setmetatable(L, GENERATOR);
  return 1;
}

static int gen_tostring(lua_State *L) {
  gl_rng *g = luaL_checkudata(L, 1, GENERATOR);
  lua_pushfstring(L, "gpu.Generator(seed=%I, offset=%I)", (lua_Integer)g->seed, (lua_Integer)g->offset);
  return 1;
}

/* ---- registration ------------------------------------------------------------------------ */

/* The counts leave out a Generator method's receiver. */
static const gl_reg random_funcs[] = {
  { "rand", l_rand, GL_SHAPE_ARGS }, { "randn", l_randn, GL_SHAPE_ARGS },
  { "uniform", l_uniform, 2 + GL_SHAPE_ARGS }, { "normal", l_normal, 2 + GL_SHAPE_ARGS },
  { "randint", l_randint, 2 + GL_SHAPE_ARGS }, { "bernoulli", l_bernoulli, 1 + GL_SHAPE_ARGS },
  { "permutation", l_permutation, 2 }, { "shuffle", l_shuffle, 1 }, { "choice", l_choice, 3 },
  { "seed", l_seed, 1 }, { "get_state", l_get_state, 1 }, { "set_state", l_set_state, 2 },
#define X(nm, kind, np, ...) { #nm, l_s_##nm, np + GL_SHAPE_ARGS },
  GL_RSAMPLERS(X)
#undef X
  { "dirichlet", l_dirichlet, 1 + GL_SHAPE_ARGS }, { "multinomial", l_multinomial, 2 + GL_SHAPE_ARGS },
  { "multivariate_normal", l_multivariate_normal, 2 + GL_SHAPE_ARGS }, { "permuted", l_permuted, 2 },
  { NULL, NULL, 0 },
};

static const gl_reg array_methods[] = {
  { "shuffle", l_shuffle, 1 }, { "permutation", l_permutation, 2 },
  { "bernoulli", l_bernoulli, 1 + GL_SHAPE_ARGS }, { "choice", l_choice, 3 }, { NULL, NULL, 0 },
};

static const gl_reg generator_funcs[] = { { "Generator", l_generator, 1 }, { NULL, NULL, 0 } };

/* Registers l into the table at idx as ops "random.f" with upvalues (context, defaults,
** is_method). */
static void setfuncs3(lua_State *L, int idx, const gl_reg *l, int defaults, bool method) {
  idx = lua_absindex(L, idx);
  for (; l->name; l++) {
    const char *name = lua_pushfstring(L, "random.%s", l->name);
    GL_PUSH_CTX(L);
    lua_pushvalue(L, defaults);
    lua_pushboolean(L, method);
    gl_lua_pushop(L, name, l->func, method ? l->nargs + 1 : l->nargs, 3);
    lua_setfield(L, idx, l->name);
    lua_pop(L, 1);
  }
}

void gl_open_random(lua_State *L, int module, int methods) {
  int n = gl_device_slots();
  gl_rdefaults *d = lua_newuserdatauv(L, sizeof *d + (size_t)n * sizeof d->gen[0], 0);
  int defaults = lua_gettop(L);
  d->n = n;
  seed_defaults(d, fresh_seed(L));

  lua_newtable(L);                                    /* gpu.random */
  int random = lua_gettop(L);
  setfuncs3(L, random, random_funcs, defaults, false);
  setfuncs3(L, methods, array_methods, defaults, false);
  lua_getfield(L, random, "rand");
  lua_setfield(L, module, "rand");
  lua_getfield(L, random, "randn");
  lua_setfield(L, module, "randn");
  static const gl_reg torch_funcs[] = {                /* PyTorch's, at gpu.* (multinomial a method too) */
    { "multinomial", l_torch_multinomial, 4 }, { "poisson", l_torch_poisson, 2 }, { NULL, NULL, 0 },
  };
  for (const gl_reg *r = torch_funcs; r->name; r++) {
    GL_PUSH_CTX(L);
    lua_pushvalue(L, defaults);
    lua_pushboolean(L, false);
    gl_lua_pushop(L, r->name, r->func, r->nargs, 3);
    lua_pushvalue(L, -1);
    lua_setfield(L, module, r->name);
    if (r->func == l_torch_multinomial) lua_setfield(L, methods, r->name);
    else lua_pop(L, 1);
  }
  lua_getfield(L, random, "seed");                   /* PyTorch's name for it */
  lua_setfield(L, module, "manual_seed");

  if (luaL_newmetatable(L, GENERATOR)) {              /* Generator objects */
    int meta = lua_gettop(L);
    lua_newtable(L);
    setfuncs3(L, lua_gettop(L), random_funcs, defaults, true);
    lua_setfield(L, meta, "__index");
    lua_pushcfunction(L, gen_tostring);
    lua_setfield(L, meta, "__tostring");
  }
  lua_pop(L, 1);
  gl_lua_setfuncs(L, random, generator_funcs);

  gl_lua_setloaded(L, "gpu.random");
  lua_setfield(L, module, "random");
  lua_pop(L, 1);                                      /* defaults */
  gl_lua_declare_all(L, random_decls);
  gl_lua_declare_all(L, sampler_decls);
}
