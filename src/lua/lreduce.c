/*
** lreduce.c — reductions and scans from Lua, each as gpu.f(x, ...) and x:f(...):
**   x:sum()  x:sum(1)  x:sum({1, 2})  x:sum(-1, {keepdims = true})  x:sum({keepdims = true})
**   x:mean(nil, {dtype = "float64"})  x:var(1, {ddof = 1})  x:norm(nil, {ord = 1})
**   x:argmax()  x:argmax(2)  x:cumsum()  x:cumsum(1, {dtype = "float64"})
** A full reduction is a 0-d array on x's device (no sync); :item() gives the number.
** Axes are 1-based (negatives from the end); argmax/argmin return 1-based positions.
** max/min over one axis given as a number also return the positions, as PyTorch's
** torch.max(x, dim):  local v, i = x:max(2)  (a table of axes, or none, gives the values).
*/
#include <math.h>
#include <string.h>
#include "lbody.h"

enum { REDUCE_PLAIN, REDUCE_STD, REDUCE_NORM, REDUCE_SCAN };

/* The options each reduction takes (gpu._options lists them under the function's name). */
#define KEEPDIMS GL_KEY_FLAG("keepdims")
#define DTYPE { "dtype", GL_OPT_DTYPE, 0, 0, 0, NULL }
#define DDOF { "ddof", GL_OPT_NUMBER, GL_RANGE_MIN, 0, 0, NULL }
static const gl_optkey keep_keys[] = { KEEPDIMS, { NULL } };
static const gl_optkey keep_dtype_keys[] = { KEEPDIMS, DTYPE, { NULL } };
static const gl_optkey var_keys[] = { KEEPDIMS, DTYPE, DDOF, { NULL } };
static const gl_optkey norm_keys[] = { KEEPDIMS, { "ord", GL_OPT_NUMSTR, 0, 0, 0, "fro nuc" }, { NULL } };
static const gl_optkey scan_keys[] = { DTYPE, { NULL } };
#undef KEEPDIMS
#undef DTYPE
#undef DDOF

typedef struct reduction {
  gl_optdecl decl;     /* its name and options */
  int op;              /* gl_redop */
  int kind;            /* R_* */
  bool one_axis;       /* argmax, argmin, cumsum, cumprod: a number, never a table */
} reduction;

#define X "gpu.ones(2, 3)"
static const reduction reductions[] = {
  { { "sum", "gpu.sum(" X ", 1, %s)", keep_dtype_keys }, GL_R_SUM, REDUCE_PLAIN, false },
  { { "prod", "gpu.prod(" X ", nil, %s)", keep_dtype_keys }, GL_R_PROD, REDUCE_PLAIN, false },
  { { "mean", "gpu.mean(" X ", 2, %s)", keep_dtype_keys }, GL_R_MEAN, REDUCE_PLAIN, false },
  { { "var", "gpu.var(" X ", 1, %s)", var_keys }, GL_R_VAR, REDUCE_PLAIN, false },
  { { "std", "gpu.std(" X ", 1, %s)", var_keys }, GL_R_VAR, REDUCE_STD, false },
  { { "max", "gpu.max(" X ", 1, %s)", keep_keys }, GL_R_MAX, REDUCE_PLAIN, false },
  { { "min", "gpu.min(" X ", 1, %s)", keep_keys }, GL_R_MIN, REDUCE_PLAIN, false },
  { { "argmax", "gpu.argmax(" X ", 1, %s)", keep_keys }, GL_R_ARGMAX, REDUCE_PLAIN, true },
  { { "argmin", "gpu.argmin(" X ", 1, %s)", keep_keys }, GL_R_ARGMIN, REDUCE_PLAIN, true },
  { { "all", "gpu.all(" X ", 1, %s)", keep_keys }, GL_R_ALL, REDUCE_PLAIN, false },
  { { "any", "gpu.any(" X ", 1, %s)", keep_keys }, GL_R_ANY, REDUCE_PLAIN, false },
  { { "norm", "gpu.norm(" X ", nil, %s)", norm_keys }, GL_R_NORM, REDUCE_NORM, false },
  { { "logsumexp", "gpu.logsumexp(" X ", 1, %s)", keep_keys }, GL_R_LOGSUMEXP, REDUCE_PLAIN, false },
  { { "cumsum", "gpu.cumsum(" X ", 1, %s)", scan_keys }, GL_R_SUM, REDUCE_SCAN, true },
  { { "cumprod", "gpu.cumprod(" X ", 1, %s)", scan_keys }, GL_R_PROD, REDUCE_SCAN, true },
};
#undef X

typedef struct reduction_opts {
  bool keepdims;
  int dtype;           /* -1: NumPy's default */
  double ddof;
  double ord;          /* NaN: the default norm */
} reduction_opts;

/* Reads the options at idx by name (each function declares a subset of these). */
static void read_opts(lua_State *L, int idx, const reduction *f, reduction_opts *o) {
  o->keepdims = false;
  o->dtype = -1;
  o->ddof = 0;
  o->ord = NAN;
  gl_optval v[4];
  gl_lua_readopts(L, idx, &f->decl, v);
  for (int i = 0; f->decl.keys[i].name; i++) {
    const char *k = f->decl.keys[i].name;
    if (!v[i].set) continue;
    if (strcmp(k, "keepdims") == 0) o->keepdims = v[i].b;
    else if (strcmp(k, "dtype") == 0) o->dtype = (int)v[i].dtype;
    else if (strcmp(k, "ddof") == 0) o->ddof = v[i].n;
    else if (strcmp(k, "ord") == 0)                  /* "fro": the default; "nuc": GL_NORM_NUC */
      o->ord = v[i].s ? (v[i].choice == 1 ? GL_NORM_NUC : (double)NAN) : v[i].n;
  }
}

static gl_status run(const reduction *f, gl_array *out, const gl_array *x, const int *axes, int naxes,
                     const reduction_opts *o) {
  switch (f->kind) {
    case REDUCE_STD: return gl_op_std(out, x, axes, naxes, o->keepdims, o->dtype, o->ddof);
    case REDUCE_NORM: return gl_op_norm(out, x, axes, naxes, o->keepdims, o->ord);
    case REDUCE_SCAN: return gl_op_scan(out, (gl_redop)f->op, x, naxes < 0 ? -1 : axes[0], o->dtype);
    default:
      return gl_op_reduce(out, (gl_redop)f->op, x, axes, naxes, o->keepdims, o->dtype,
                          f->op == GL_R_VAR ? o->ddof : 0);
  }
}

/* upvalue 2: index into reductions */
static int l_reduce(lua_State *L) {
  const reduction *f = &reductions[lua_tointeger(L, lua_upvalueindex(2))];
  gl_array *x = gl_lua_check(L, 1);
  int axes[GL_MAXDIMS], naxes = -1, optidx = 3;
  if (gl_lua_is_options(L, 2)) {
    optidx = 2;
    if (!lua_isnoneornil(L, 3)) luaL_argerror(L, 3, "unexpected argument after the options table");
  } else {
    naxes = gl_lua_axes(L, 2, x->ndim, axes, f->one_axis ? GL_AXES_ONE : 0);
  }
  reduction_opts o;
  read_opts(L, optidx, f, &o);
  if ((f->op == GL_R_MAX || f->op == GL_R_MIN) && naxes == 1 && lua_isnumber(L, 2)) {
    gl_array *r[2];                                   /* values, 1-based positions */
    gl_lua_push_results(L, lua_gettop(L), r, 2);
    gl_status st = gl_op_reduce(r[0], (gl_redop)f->op, x, axes, 1, o.keepdims, -1, 0);
    if (st == GL_OK)
      st = gl_op_reduce(r[1], f->op == GL_R_MAX ? GL_R_ARGMAX : GL_R_ARGMIN, x, axes, 1, o.keepdims, -1, 0);
    if (st == GL_EINVAL) gl_lua_check_status(L, st, 1);
    return gl_lua_results(L, st, r, 2);
  }
  gl_array *out = gl_lua_push(L);
  gl_status st = run(f, out, x, axes, naxes, &o);
  /* an invalid request is the array's fault (empty, dtype), named at argument 1 */
  return gl_lua_result(L, st, out, st == GL_EINVAL ? 1 : 0);
}

void gl_open_reduce(lua_State *L, int module, int methods) {
  for (size_t i = 0; i < sizeof reductions / sizeof reductions[0]; i++) {
    GL_PUSH_CTX(L);
    lua_pushinteger(L, (lua_Integer)i);
    gl_lua_pushop(L, reductions[i].decl.name, l_reduce, 3, 2);
    lua_pushvalue(L, -1);
    lua_setfield(L, module, reductions[i].decl.name);
    lua_setfield(L, methods, reductions[i].decl.name);
    gl_lua_declare(L, &reductions[i].decl);
  }
}
