/*
** lcreate.c — making arrays: gpu.array from nested tables, zeros/ones/full/empty,
** arange/linspace/eye, the *_like forms (their argument readers are in largs.c).
*/
#include <math.h>
#include <string.h>
#include "lbody.h"

/* ---- options ---------------------------------------------------------------------------- */

static const gl_optkey eye_keys[] = { GL_KEYS_DTYPE_DEVICE, { "k", GL_OPT_INT, 0, 0, 0, NULL }, { NULL } };
#define DECL(fn, example) static const gl_optdecl fn##_decl = { #fn, example, gl_create_keys };
DECL(empty, "gpu.empty(2, %s)")
DECL(zeros, "gpu.zeros(2, %s)")
DECL(ones, "gpu.ones({2, 3}, %s)")
DECL(full, "gpu.full(2, 7, %s)")
DECL(empty_like, "gpu.empty_like(gpu.ones(2), %s)")
DECL(zeros_like, "gpu.zeros_like(gpu.ones(2), %s)")
DECL(ones_like, "gpu.ones_like(gpu.ones(2), %s)")
DECL(full_like, "gpu.full_like(gpu.ones(2), 3, %s)")
DECL(arange, "gpu.arange(4, %s)")
DECL(linspace, "gpu.linspace(0, 1, 5, %s)")
DECL(array, "gpu.array({1, 2}, %s)")
#undef DECL
static const gl_optdecl eye_decl = { "eye", "gpu.eye(3, %s)", eye_keys };
static const gl_optdecl *const create_decls[] = {
  &empty_decl, &zeros_decl, &ones_decl, &full_decl, &empty_like_decl, &zeros_like_decl, &ones_like_decl,
  &full_like_decl, &arange_decl, &linspace_decl, &array_decl, &eye_decl, NULL
};

/* ---- zeros, ones, empty, full -------------------------------------------------------- */

/* The dtype a value makes when none is given: bool for a boolean, the default float
** dtype for a number and its complex dtype for a complex scalar (float32 and complex64,
** as PyTorch's defaults; NumPy's are float64 and complex128). */
static gl_dtype scalar_dtype(gl_scalar v) {
  if (v.isbool) return GL_BOOL;
  return v.iscomplex ? gl_complex_for(GL_DEFAULT_DTYPE) : GL_DEFAULT_DTYPE;
}

static int make_filled(lua_State *L, int kind) {   /* 0 empty, 1 zeros, 2 ones */
  static const gl_optdecl *const decl[] = { &empty_decl, &zeros_decl, &ones_decl };
  int ndim;
  int64_t shape[GL_MAXDIMS];
  int next = gl_lua_shape(L, 1, &ndim, shape);
  next = gl_lua_optsarg(L, next, lua_gettop(L), "dimension or options table");
  gl_dtype dt;
  gl_device dev;
  gl_lua_create_opts(L, next, decl[kind], GL_DEFAULT_DTYPE, &dt, &dev, NULL);
  gl_array *a = gl_lua_alloc(L, dt, ndim, shape, dev);
  if (kind > 0) gl_lua_check_status(L, gl_op_fill(a, gl_scalar_int(kind == 2)), 0);
  return 1;
}

static int l_empty(lua_State *L) { return make_filled(L, 0); }
static int l_zeros(lua_State *L) { return make_filled(L, 1); }
static int l_ones(lua_State *L) { return make_filled(L, 2); }

/* gpu.full(shape, value [, opts]): shape a number or a table */
static int l_full(lua_State *L) {
  int ndim;
  int64_t shape[GL_MAXDIMS];
  if (!lua_istable(L, 1) && lua_type(L, 1) != LUA_TNUMBER)
    luaL_argerror(L, 1, lua_pushfstring(L, "shape (number or table) expected, got %s", luaL_typename(L, 1)));
  lua_settop(L, 3);
  lua_pushvalue(L, 1);                     /* read the shape from a lone copy */
  lua_replace(L, 1);
  if (lua_istable(L, 1)) gl_lua_shape(L, 1, &ndim, shape);
  else { ndim = 1; shape[0] = gl_lua_dim(L, 1, 1); }
  gl_scalar v = gl_lua_scalar(L, 2, 2);
  gl_dtype dt;
  gl_device dev;
  gl_lua_create_opts(L, 3, &full_decl, scalar_dtype(v), &dt, &dev, NULL);
  gl_lua_check_status(L, gl_scalar_check(dt, v), 2);
  gl_array *a = gl_lua_alloc(L, dt, ndim, shape, dev);
  gl_lua_check_status(L, gl_op_fill(a, v), 0);
  return 1;
}

/* zeros_like(x [, opts]), ones_like, empty_like, full_like(x, v [, opts]) */
static int make_like(lua_State *L, int kind) {
  static const gl_optdecl *const decl[] = { &empty_like_decl, &zeros_like_decl, &ones_like_decl, &full_like_decl };
  gl_array *x = gl_lua_check(L, 1);
  int opts = kind == 3 ? 3 : 2;
  gl_dtype dt = (gl_dtype)x->dtype;
  gl_device dev = gl_array_device(x);
  gl_scalar v = gl_scalar_int(kind == 2);
  if (kind == 3) v = gl_lua_scalar(L, 2, 2);
  gl_lua_opts(L, opts, decl[kind], &dt, &dev, NULL);
  if (kind == 3) gl_lua_check_status(L, gl_scalar_check(dt, v), 2);
  int64_t shape[GL_MAXDIMS];
  memcpy(shape, x->shape, sizeof shape);
  gl_array *a = gl_lua_alloc(L, dt, x->ndim, shape, dev);
  if (kind > 0) gl_lua_check_status(L, gl_op_fill(a, v), 0);
  return 1;
}

static int l_empty_like(lua_State *L) { return make_like(L, 0); }
static int l_zeros_like(lua_State *L) { return make_like(L, 1); }
static int l_ones_like(lua_State *L) { return make_like(L, 2); }
static int l_full_like(lua_State *L) { return make_like(L, 3); }

/* ---- ranges ------------------------------------------------------------------------------- */

/* Integer arguments whose values pass 2^53 cannot go through the backend's double
** arithmetic exactly: count and write them with integers on the host, then upload.
** Returns false (nothing pushed) when the double path is exact. */
static bool int_arange(lua_State *L, int n, gl_dtype dt, gl_device dev) {
  lua_Integer start = n >= 2 ? lua_tointeger(L, 1) : 0, stop = n >= 2 ? lua_tointeger(L, 2) : lua_tointeger(L, 1);
  lua_Integer step = n == 3 ? lua_tointeger(L, 3) : 1;
  uint64_t diff = step > 0 ? (uint64_t)stop - (uint64_t)start : (uint64_t)start - (uint64_t)stop;
  uint64_t mag = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
  bool empty = step > 0 ? stop <= start : stop >= start;
  uint64_t count = empty ? 0 : diff / mag + (diff % mag != 0);
  const lua_Integer lim = (lua_Integer)1 << 53;
  if (count == 0 || (start > -lim && start < lim && stop > -lim && stop < lim)) return false;
  size_t isz = gl_dtypes[dt].size, nbytes;
  if (count > (uint64_t)GL_MAXSIZE) gl_lua_check_status(L, gl_too_big((long double)count, dt), 0);
  int64_t len = (int64_t)count;
  /* the values lie between the first and the last: a dtype that holds both holds all */
  int64_t last = (int64_t)((uint64_t)start + (count - 1) * (uint64_t)step);
  gl_status st = gl_scalar_check(dt, gl_scalar_int(start));
  if (st == GL_OK) st = gl_scalar_check(dt, gl_scalar_int(last));
  gl_lua_check_status(L, st, 0);
  gl_lua_check_status(L, gl_nbytes(len, dt, &nbytes), 0);
  char *buf = lua_newuserdatauv(L, nbytes, 0);    /* owned by Lua: no leak on error */
  uint64_t v = (uint64_t)start;
  for (int64_t i = 0; i < len; i++, v += (uint64_t)step)
    gl_scalar_store(dt, buf + i * (int64_t)isz, gl_scalar_int((int64_t)v));
  gl_array *a = gl_lua_push(L);
  gl_lua_check_status(L, gl_op_from_host(a, buf, dt, 1, &len, dev), 0);
  gl_lua_account(L, nbytes);
  return true;
}

/* gpu.arange([start,] stop [, step] [, opts]): NumPy's half-open range; positionals left
** out may be given as nil before the options (arange(0, 5, nil, opts)). Integer
** arguments give int64 (as NumPy and PyTorch do); any float gives float32. */
static int l_arange(lua_State *L) {
  int n = 0;
  double v[3];
  bool all_int = true;
  while (n < 3 && lua_type(L, n + 1) == LUA_TNUMBER) {
    v[n] = lua_tonumber(L, n + 1);
    all_int = all_int && lua_isinteger(L, n + 1);
    n++;
  }
  if (n == 0) luaL_argerror(L, 1, lua_pushfstring(L, "number expected, got %s", luaL_typename(L, 1)));
  int o = gl_lua_optsarg(L, n + 1, 4, "number or options table");
  double start = n >= 2 ? v[0] : 0, stop = n >= 2 ? v[1] : v[0], step = n == 3 ? v[2] : 1;
  if (step == 0) luaL_argerror(L, 3, "step must not be zero");
  gl_dtype dt;
  gl_device dev;
  gl_lua_create_opts(L, o, &arange_decl, all_int ? GL_INT64 : GL_DEFAULT_DTYPE, &dt, &dev, NULL);
  if (all_int && int_arange(L, n, dt, dev)) return 1;
  gl_array *a = gl_lua_push(L);
  return gl_lua_result(L, gl_op_arange(a, start, stop, step, dt, dev), a, 0);
}

/* gpu.linspace(start, stop [, num=50] [, opts]); num may be nil before the options */
static int l_linspace(lua_State *L) {
  double start = luaL_checknumber(L, 1), stop = luaL_checknumber(L, 2);
  int o = 3;
  int64_t num = 50;
  if (lua_type(L, 3) == LUA_TNUMBER) { num = gl_lua_int(L, 3, "number of samples"); o = 4; }
  if (num < 0) luaL_argerror(L, 3, "number of samples must be non-negative");
  o = gl_lua_optsarg(L, o, 4, "number of samples or options table");
  gl_dtype dt;
  gl_device dev;
  gl_lua_create_opts(L, o, &linspace_decl, GL_DEFAULT_DTYPE, &dt, &dev, NULL);
  gl_array *a = gl_lua_push(L);
  return gl_lua_result(L, gl_op_linspace(a, start, stop, num, dt, dev), a, 0);
}

/* gpu.eye(n [, m] [, {k=, dtype=, device=}]); m may be nil before the options, as NumPy's
** eye(N, M=None, k=0) */
static int l_eye(lua_State *L) {
  int64_t n = gl_lua_int(L, 1, "n"), m = n, k = 0;
  int o = 2;
  if (lua_type(L, 2) == LUA_TNUMBER) { m = gl_lua_int(L, 2, "m"); o = 3; }
  if (n < 0) luaL_argerror(L, 1, "negative dimension");
  if (m < 0) luaL_argerror(L, 2, "negative dimension");
  o = gl_lua_optsarg(L, o, 3, "number of columns or options table");
  gl_dtype dt;
  gl_device dev;
  gl_optval ov[3];
  gl_lua_create_opts(L, o, &eye_decl, GL_DEFAULT_DTYPE, &dt, &dev, ov);
  if (ov[2].set) k = ov[2].i;
  gl_array *a = gl_lua_push(L);
  return gl_lua_result(L, gl_op_eye(a, n, m, k, dt, dev), a, 0);
}

/* ---- gpu.array ------------------------------------------------------------------------- */

/* Walks the first elements down to find the shape of a nested table. */
static int nested_shape(lua_State *L, int idx, int64_t *shape) {
  int ndim = 0;
  lua_pushvalue(L, idx);
  while (lua_istable(L, -1)) {
    if (ndim == GL_MAXDIMS)
      luaL_argerror(L, 1, lua_pushfstring(L, "nesting deeper than %d levels", GL_MAXDIMS));
    shape[ndim++] = (int64_t)luaL_len(L, -1);
    if (shape[ndim - 1] == 0) break;
    lua_geti(L, -1, 1);
    lua_remove(L, -2);
  }
  lua_pop(L, 1);
  return ndim;
}

typedef struct fill_state {
  gl_dtype dt;
  char *out;
  int64_t pos;
  bool inferred;          /* dt was not given: a complex element asks for a complex dtype */
  bool need_complex;      /* ... and one was met: fill again with gl_complex_for(dt) */
} fill_state;

static void path_str(luaL_Buffer *b, const int64_t *path, int depth) {
  for (int i = 0; i < depth; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "[%lld]", (long long)path[i]);
    luaL_addstring(b, buf);
  }
}

static int bad_element(lua_State *L, const int64_t *path, int depth, const char *what) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "element ");
  path_str(&b, path, depth);
  luaL_addstring(&b, " ");
  luaL_addstring(&b, what);
  luaL_pushresult(&b);
  return luaL_argerror(L, 1, lua_tostring(L, -1));
}

/* Copies the nested table at the top of the stack into fs->out, checking it is not
** ragged and holds only numbers and booleans. */
static void fill_nested(lua_State *L, fill_state *fs, int depth, int ndim, const int64_t *shape,
                        int64_t *path) {
  int t = lua_gettop(L);
  if (depth == ndim) {
    int ty = lua_type(L, t);
    double re, im;
    bool cx = ty == LUA_TUSERDATA && gl_lua_tocomplex(L, t, &re, &im);
    if (ty == LUA_TTABLE) bad_element(L, path, depth, "is a table but the array is ragged (deeper here)");
    if (ty != LUA_TNUMBER && ty != LUA_TBOOLEAN && !cx)
      bad_element(L, path, depth, lua_pushfstring(L, "is a %s (numbers or booleans expected)", luaL_typename(L, t)));
    gl_scalar v = cx ? gl_scalar_complex(re, im) : ty == LUA_TBOOLEAN ? gl_scalar_int(lua_toboolean(L, t))
                : lua_isinteger(L, t) ? gl_scalar_int(lua_tointeger(L, t)) : gl_scalar_float(lua_tonumber(L, t));
    if (cx && fs->inferred && !gl_dtype_is_complex(fs->dt)) { fs->need_complex = true; return; }
    if (gl_scalar_check(fs->dt, v) != GL_OK) {
      if (depth == 0) luaL_argerror(L, 1, gl_errmsg());        /* gpu.array(300, ...) */
      bad_element(L, path, depth, lua_pushfstring(L, "does not fit: %s", gl_errmsg()));
    }
    gl_scalar_store(fs->dt, fs->out + fs->pos * (int64_t)gl_dtypes[fs->dt].size, v);
    fs->pos++;
    return;
  }
  if (!lua_istable(L, t)) bad_element(L, path, depth, "is not a table but the array is ragged (shallower here)");
  if ((int64_t)luaL_len(L, t) != shape[depth])
    bad_element(L, path, depth, lua_pushfstring(L, "has length %I but its siblings have %I (ragged table)",
                                                (lua_Integer)luaL_len(L, t), (lua_Integer)shape[depth]));
  luaL_checkstack(L, 4, "array nesting");
  for (int64_t i = 1; i <= shape[depth] && !fs->need_complex; i++) {
    lua_geti(L, t, i);
    path[depth] = i;
    fill_nested(L, fs, depth + 1, ndim, shape, path);
    lua_settop(L, t);
  }
}

/* Default dtype of a table's contents: bool if it holds only booleans, else float32 (a
** complex element met while filling makes it complex64: fill_nested). */
static gl_dtype infer_dtype(lua_State *L, int idx) {
  lua_pushvalue(L, idx);
  while (lua_istable(L, -1) && luaL_len(L, -1) > 0) {
    lua_geti(L, -1, 1);
    lua_remove(L, -2);
  }
  gl_dtype dt = lua_isboolean(L, -1) ? GL_BOOL : GL_DEFAULT_DTYPE;
  lua_pop(L, 1);
  return dt;
}

/* Fills a new array of dtype fs->dt with the nested table at 1 and leaves it at slot 3
** (slot 2 the options). False, with nothing pushed, when a complex element asks for a
** complex dtype instead. */
static bool fill_array(lua_State *L, fill_state *fs, int ndim, const int64_t *shape, gl_device dev) {
  int64_t path[GL_MAXDIMS];
  size_t nbytes;
  gl_lua_check_status(L, gl_shape_nbytes(ndim, shape, fs->dt, &nbytes), 1);
  lua_settop(L, 2);
  fs->pos = 0;
  if (dev.type == GL_CPU) {                     /* fill the new array in place */
    gl_array *a = gl_lua_alloc(L, fs->dt, ndim, shape, dev);
    fs->out = a->storage->data;
    lua_pushvalue(L, 1);
    fill_nested(L, fs, 0, ndim, shape, path);
    lua_settop(L, 3);
    return !fs->need_complex;
  }
  /* elsewhere: fill a host buffer owned by Lua (an error cannot leak it), then upload */
  fs->out = lua_newuserdatauv(L, nbytes + 1, 0);
  lua_pushvalue(L, 1);
  fill_nested(L, fs, 0, ndim, shape, path);
  lua_settop(L, 3);
  if (fs->need_complex) return false;
  gl_array *a = gl_lua_push(L);
  gl_lua_check_status(L, gl_op_from_host(a, fs->out, fs->dt, ndim, shape, dev), 0);
  gl_lua_account(L, nbytes);
  lua_replace(L, 3);
  return true;
}

static int l_array(lua_State *L) {
  gl_dtype dt;
  gl_device dev;
  gl_array *src = gl_lua_test(L, 1);
  if (src) {                                    /* gpu.array(x): a copy, like np.array */
    gl_lua_check(L, 1);
    dt = (gl_dtype)src->dtype;
    dev = gl_array_device(src);
    gl_lua_opts(L, 2, &array_decl, &dt, &dev, NULL);
    gl_array *a = gl_lua_push(L);
    return gl_lua_result(L, gl_op_copy(a, src, dt, dev), a, 0);
  }
  int ty = lua_type(L, 1);
  double re, im;
  bool cx = ty == LUA_TUSERDATA && gl_lua_tocomplex(L, 1, &re, &im);
  if (ty != LUA_TTABLE && ty != LUA_TNUMBER && ty != LUA_TBOOLEAN && !cx)
    luaL_argerror(L, 1, lua_pushfstring(L, "table, number or array expected, got %s", luaL_typename(L, 1)));
  int64_t shape[GL_MAXDIMS];
  int ndim = ty == LUA_TTABLE ? nested_shape(L, 1, shape) : 0;
  gl_dtype inferred = ty == LUA_TBOOLEAN ? GL_BOOL : ty == LUA_TTABLE ? infer_dtype(L, 1)
                    : cx ? gl_complex_for(GL_DEFAULT_DTYPE) : GL_DEFAULT_DTYPE;
  gl_lua_create_opts(L, 2, &array_decl, inferred, &dt, &dev, NULL);
  lua_settop(L, 2);
  bool given = lua_istable(L, 2) && lua_getfield(L, 2, "dtype") != LUA_TNIL;
  fill_state fs = { dt, NULL, 0, !given, false };
  if (fill_array(L, &fs, ndim, shape, dev)) return 1;
  fs.dt = gl_complex_for(fs.dt);
  fs.need_complex = false;
  fill_array(L, &fs, ndim, shape, dev);
  return 1;
}

static const gl_reg create_funcs[] = {
  { "array", l_array, 2 }, { "empty", l_empty, GL_SHAPE_ARGS }, { "zeros", l_zeros, GL_SHAPE_ARGS },
  { "ones", l_ones, GL_SHAPE_ARGS }, { "full", l_full, 3 }, { "empty_like", l_empty_like, 2 },
  { "zeros_like", l_zeros_like, 2 }, { "ones_like", l_ones_like, 2 }, { "full_like", l_full_like, 3 },
  { "arange", l_arange, 4 }, { "linspace", l_linspace, 4 }, { "eye", l_eye, 3 }, { NULL, NULL, 0 },
};

void gl_open_create(lua_State *L, int module, int methods) {
  (void)methods;
  gl_lua_setops(L, module, "", create_funcs);
  gl_lua_declare_all(L, create_decls);
}
