/*
** lreduce.c — reductions and scans from Lua, each as gpu.f(x, ...) and x:f(...):
**   x:sum()  x:sum(1)  x:sum({1, 2})  x:sum(-1, {keepdims = true})  x:sum({keepdims = true})
**   x:mean(nil, {dtype = "float64"})  x:var(1, {ddof = 1})  x:norm(nil, {ord = 1})
**   x:argmax()  x:argmax(2)  x:cumsum()  x:cumsum(1, {dtype = "float64"})
** A full reduction is a 0-d array on x's device (no sync); :item() gives the number.
** Axes are 1-based (negatives from the end); argmax/argmin return 1-based positions.
*/
#include <math.h>
#include <string.h>
#include "lgpu.h"

enum { R_PLAIN, R_STD, R_NORM, R_SCAN };

typedef struct rfunc {
  const char *name;
  int op;              /* gl_redop */
  int kind;            /* R_* */
  bool one_axis;       /* argmax, argmin, cumsum, cumprod: a number, never a table */
  const char *opts;    /* the option names it takes, space-separated */
} rfunc;

static const rfunc rfuncs[] = {
  { "sum", GL_R_SUM, R_PLAIN, false, "keepdims dtype" },
  { "prod", GL_R_PROD, R_PLAIN, false, "keepdims dtype" },
  { "mean", GL_R_MEAN, R_PLAIN, false, "keepdims dtype" },
  { "var", GL_R_VAR, R_PLAIN, false, "keepdims dtype ddof" },
  { "std", GL_R_VAR, R_STD, false, "keepdims dtype ddof" },
  { "max", GL_R_MAX, R_PLAIN, false, "keepdims" },
  { "min", GL_R_MIN, R_PLAIN, false, "keepdims" },
  { "argmax", GL_R_ARGMAX, R_PLAIN, true, "keepdims" },
  { "argmin", GL_R_ARGMIN, R_PLAIN, true, "keepdims" },
  { "all", GL_R_ALL, R_PLAIN, false, "keepdims" },
  { "any", GL_R_ANY, R_PLAIN, false, "keepdims" },
  { "norm", GL_R_NORM, R_NORM, false, "keepdims ord" },
  { "logsumexp", GL_R_LOGSUMEXP, R_PLAIN, false, "keepdims" },
  { "cumsum", GL_R_SUM, R_SCAN, true, "dtype" },
  { "cumprod", GL_R_PROD, R_SCAN, true, "dtype" },
};

typedef struct ropts {
  bool keepdims;
  int dtype;           /* -1: NumPy's default */
  double ddof;
  double ord;          /* NaN: the default norm */
} ropts;

/* A table with a string key is an options table; any other table is a list of axes. */
static bool is_opts_table(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return false;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    bool str = lua_type(L, -2) == LUA_TSTRING;
    lua_pop(L, 1);
    if (str) { lua_pop(L, 1); return true; }
  }
  return false;
}

/* Is 'word' one of the space-separated words of 'list'? */
static bool listed(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; *p;) {
    size_t m = strcspn(p, " ");
    if (m == n && strncmp(p, word, n) == 0) return true;
    p += m;
    while (*p == ' ') p++;
  }
  return false;
}

static void read_opts(lua_State *L, int idx, const rfunc *f, ropts *o) {
  o->keepdims = false;
  o->dtype = -1;
  o->ddof = 0;
  o->ord = NAN;
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx))
    luaL_argerror(L, idx, lua_pushfstring(L, "options table expected, got %s", luaL_typename(L, idx)));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int v = lua_gettop(L);
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (k == NULL || !listed(f->opts, k)) {
      lua_pushvalue(L, -2);
      luaL_argerror(L, idx, lua_pushfstring(L, "unknown option '%s' (%s takes: %s)",
                                            luaL_tolstring(L, -1, NULL), f->name, f->opts));
    }
    if (strcmp(k, "keepdims") == 0) {
      if (!lua_isboolean(L, v))
        luaL_argerror(L, idx, lua_pushfstring(L, "option 'keepdims' must be a boolean, got %s", luaL_typename(L, v)));
      o->keepdims = lua_toboolean(L, v);
    } else if (strcmp(k, "dtype") == 0) {
      int t = lua_type(L, v) == LUA_TSTRING ? gl_dtype_from_name(lua_tostring(L, v)) : -2;
      if (t == -2)
        luaL_argerror(L, idx, lua_pushfstring(L, "option 'dtype' must be a dtype name, got %s", luaL_typename(L, v)));
      if (t < 0)
        luaL_argerror(L, idx, lua_pushfstring(L, "unknown dtype '%s' (expected one of %s)", lua_tostring(L, v),
                                              gl_dtype_names()));
      o->dtype = t;
    } else if (strcmp(k, "ddof") == 0) {
      if (lua_type(L, v) != LUA_TNUMBER || !(lua_tonumber(L, v) >= 0))
        luaL_argerror(L, idx, "option 'ddof' must be a non-negative number");
      o->ddof = lua_tonumber(L, v);
    } else {                                 /* ord */
      if (lua_type(L, v) == LUA_TSTRING && strcmp(lua_tostring(L, v), "fro") == 0) o->ord = NAN;
      else if (lua_type(L, v) == LUA_TNUMBER && !isnan(lua_tonumber(L, v))) o->ord = lua_tonumber(L, v);
      else luaL_argerror(L, idx, "option 'ord' must be a number (1, 2, math.huge, ...) or 'fro'");
    }
    lua_pop(L, 1);
  }
}

/* The axis argument: nil (all: returns -1), a number, or a table of numbers (0-based
** into axes, repeats refused). */
static int read_axes(lua_State *L, int idx, const rfunc *f, const gl_array *x, int *axes) {
  int t = lua_type(L, idx);
  if (t == LUA_TNONE || t == LUA_TNIL) return -1;
  if (t == LUA_TNUMBER) {
    gl_lua_check_status(L, gl_axis_norm(gl_lua_int(L, idx, "axis"), x->ndim, &axes[0]), idx);
    return 1;
  }
  if (t != LUA_TTABLE)
    luaL_argerror(L, idx, lua_pushfstring(L, "axis must be a number, a table of numbers or nil, got %s",
                                          luaL_typename(L, idx)));
  if (f->one_axis)
    luaL_argerror(L, idx, lua_pushfstring(L, "%s takes one axis (a number), not a table", f->name));
  lua_Integer len = luaL_len(L, idx);
  if (len > GL_MAXDIMS) luaL_argerror(L, idx, "too many axes");
  int n = 0;
  for (lua_Integer i = 1; i <= len; i++) {
    lua_geti(L, idx, i);
    int isnum;
    lua_Integer a = lua_tointegerx(L, -1, &isnum);
    if (!isnum)
      luaL_argerror(L, idx, lua_pushfstring(L, "axis %d must be an integer, got %s", (int)i, luaL_typename(L, -1)));
    lua_pop(L, 1);
    gl_lua_check_status(L, gl_axis_norm(a, x->ndim, &axes[n]), idx);
    for (int k = 0; k < n; k++)
      if (axes[k] == axes[n]) luaL_argerror(L, idx, lua_pushfstring(L, "repeated axis %d", axes[n] + 1));
    n++;
  }
  return n;
}

static gl_status run(const rfunc *f, gl_array *out, const gl_array *x, const int *axes, int naxes,
                     const ropts *o) {
  switch (f->kind) {
    case R_STD: return gl_op_std(out, x, axes, naxes, o->keepdims, o->dtype, o->ddof);
    case R_NORM: return gl_op_norm(out, x, axes, naxes, o->keepdims, o->ord);
    case R_SCAN: return gl_op_scan(out, (gl_redop)f->op, x, naxes < 0 ? -1 : axes[0], o->dtype);
    default:
      return gl_op_reduce(out, (gl_redop)f->op, x, axes, naxes, o->keepdims, o->dtype,
                          f->op == GL_R_VAR ? o->ddof : 0);
  }
}

/* upvalue 2: index into rfuncs */
static int l_reduce(lua_State *L) {
  const rfunc *f = &rfuncs[lua_tointeger(L, lua_upvalueindex(2))];
  gl_array *x = gl_lua_check(L, 1);
  int axes[GL_MAXDIMS], naxes = -1, optidx = 3;
  if (is_opts_table(L, 2)) {
    optidx = 2;
    if (!lua_isnoneornil(L, 3)) luaL_argerror(L, 3, "unexpected argument after the options table");
  } else {
    naxes = read_axes(L, 2, f, x, axes);
  }
  if (lua_gettop(L) > 3) luaL_argerror(L, 4, "unexpected argument (axis and options come first)");
  ropts o;
  read_opts(L, optidx, f, &o);
  gl_array *out = gl_lua_push(L);
  gl_status st = run(f, out, x, axes, naxes, &o);
  if (gl_lua_retry_oom(L, st, gl_array_device(x))) st = run(f, out, x, axes, naxes, &o);
  /* an invalid request is the array's fault (empty, dtype), named at argument 1 */
  gl_lua_check_status(L, st, st == GL_EINVAL ? 1 : 0);
  gl_lua_account_array(L, out);
  return 1;
}

void gl_open_reduce(lua_State *L, int module, int methods) {
  for (size_t i = 0; i < sizeof rfuncs / sizeof rfuncs[0]; i++) {
    GL_PUSH_CTX(L);
    lua_pushinteger(L, (lua_Integer)i);
    lua_pushcclosure(L, l_reduce, 2);
    lua_pushvalue(L, -1);
    lua_setfield(L, module, rfuncs[i].name);
    lua_setfield(L, methods, rfuncs[i].name);
  }
}
