/*
** lshape.c — views (reshape, view, transpose, permute, squeeze, unsqueeze, expand,
** flatten), copies (contiguous, copy, astype, to/cpu/cuda), and the way back to Lua
** (totable, item, fill_). Also the public C API of gpulua.h.
*/
#include <string.h>
#include "lgpu.h"

/* Pushes a new view of a (same storage), the result of x:permute(...) and the like: the
** stack is first set to x alone. */
static gl_array *push_view(lua_State *L, const gl_array *a) {
  lua_settop(L, 1);
  gl_array *v = gl_lua_push(L);
  gl_array_view_of(v, a);
  return v;
}

/* The end of a view op: st is what reshaping the view gave, an error of argument 2. */
static int view_result(lua_State *L, gl_status st) {
  gl_lua_check_status(L, st, 2);
  return 1;
}

/* Pushes v, a descriptor made from another array's, as a view of that array's storage. */
static int push_descriptor(lua_State *L, const gl_array *v) {
  gl_lua_push_view(L, v);
  return 1;
}

/* ---- views ------------------------------------------------------------------------------ */

/* x:reshape(shape...): a view when the strides allow it, else a copy. One entry may be
** -1. */
static int l_reshape(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int64_t shape[GL_MAXDIMS];
  int n = gl_lua_dims(L, 2, shape);
  lua_settop(L, 1);
  gl_array v = *a;
  gl_status st = gl_view_reshape(&v, n, shape);
  if (st == GL_OK) return push_descriptor(L, &v);
  if (st != GL_ENOTSUP) gl_lua_check_status(L, st, 2);
  /* needs a copy: contiguous first, then view that */
  gl_array *c = gl_lua_alloc(L, (gl_dtype)a->dtype, a->ndim, a->shape, gl_array_device(a));
  gl_lua_check_status(L, gl_op_assign(c, a), 0);
  gl_lua_check_status(L, gl_view_reshape(c, n, shape), 2);
  return 1;
}

/* x:view(shape...): like reshape but never copies. */
static int l_view(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int64_t shape[GL_MAXDIMS];
  int n = gl_lua_dims(L, 2, shape);
  gl_array v = *a;
  gl_lua_check_status(L, gl_view_reshape(&v, n, shape), 2);
  return push_descriptor(L, &v);
}

/* gpu.view_as_real(x) / gpu.view_as_complex(x): the parts of a complex array as a float
** array with a last axis of 2, and back; views of the same storage. */
static int l_view_as_real(lua_State *L) {
  gl_array v = *gl_lua_check(L, 1);
  lua_settop(L, 1);
  gl_lua_check_status(L, gl_view_as_real(&v), 1);
  return push_descriptor(L, &v);
}

static int l_view_as_complex(lua_State *L) {
  gl_array v = *gl_lua_check(L, 1);
  lua_settop(L, 1);
  gl_lua_check_status(L, gl_view_as_complex(&v), 1);
  return push_descriptor(L, &v);
}

/* x:transpose(): all axes reversed; x:transpose(a, b): swap two axes; a table: permute */
static int l_transpose(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int top = lua_gettop(L);
  int perm[GL_MAXDIMS];
  if (top == 1) {
    for (int i = 0; i < a->ndim; i++) perm[i] = a->ndim - 1 - i;
  } else if (lua_istable(L, 2)) {
    int n = gl_lua_axes(L, 2, a->ndim, perm, GL_AXES_VARARGS);
    if (n != a->ndim) luaL_argerror(L, 2, lua_pushfstring(L, "%d axes given for a %d-d array", n, a->ndim));
  } else {
    if (top != 3) luaL_argerror(L, top > 3 ? 4 : 3, "two axes expected (or a table of all axes)");
    int ax[GL_MAXDIMS];
    if (gl_lua_axes(L, 2, a->ndim, ax, GL_AXES_VARARGS) != 2) luaL_argerror(L, 2, "two axes expected (or a table of all axes)");
    for (int i = 0; i < a->ndim; i++) perm[i] = i;
    perm[ax[0]] = ax[1];
    perm[ax[1]] = ax[0];
  }
  return view_result(L, gl_view_permute(push_view(L, a), perm));
}

static int l_permute(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int perm[GL_MAXDIMS];
  int n = gl_lua_axes(L, 2, a->ndim, perm, GL_AXES_VARARGS);
  if (n != a->ndim) luaL_argerror(L, 2, lua_pushfstring(L, "%d axes given for a %d-d array", n, a->ndim));
  return view_result(L, gl_view_permute(push_view(L, a), perm));
}

static int l_squeeze(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int axis = -1;
  if (!lua_isnoneornil(L, 2)) gl_lua_check_status(L, gl_axis_norm(gl_lua_int(L, 2, "axis"), a->ndim, &axis), 2);
  return view_result(L, gl_view_squeeze(push_view(L, a), axis));
}

/* x:unsqueeze(axis): the new axis lands at position 'axis' of the result (1..ndim+1,
** negatives count from the end of the result, as in PyTorch). */
static int l_unsqueeze(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int axis;
  gl_lua_check_status(L, gl_axis_norm(gl_lua_int(L, 2, "axis"), a->ndim + 1, &axis), 2);
  return view_result(L, gl_view_unsqueeze(push_view(L, a), axis));
}

static int l_expand(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int64_t shape[GL_MAXDIMS];
  int n = gl_lua_dims(L, 2, shape);
  return view_result(L, gl_view_expand(push_view(L, a), n, shape));
}

/* x:unfold(dim, size, step): PyTorch's Tensor.unfold, a view: dim (1-based, negatives
** from the end) holds the windows of size elements every step, a new last axis each
** window's elements. Overlapping windows (step < size) are read-only, as expand's repeats
** are. A 0-d array unfolds as one of shape (1). */
static int l_unfold(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int64_t size = gl_lua_int(L, 3, "size"), step = gl_lua_int(L, 4, "step");
  if (size < 0) luaL_argerror(L, 3, lua_pushfstring(L, "size must be >= 0, got %I", (lua_Integer)size));
  if (step < 1) luaL_argerror(L, 4, lua_pushfstring(L, "step must be >= 1, got %I", (lua_Integer)step));
  int axis;
  gl_array v = *a;
  if (a->ndim == 0) {
    int64_t one = 1;
    gl_lua_check_status(L, gl_view_reshape(&v, 1, &one), 1);
  }
  gl_lua_axes(L, 2, v.ndim, &axis, GL_AXES_ONE);
  if (size > v.shape[axis])
    luaL_argerror(L, 3, lua_pushfstring(L, "size %I is larger than dim %d's size %I", (lua_Integer)size, axis + 1,
                                        (lua_Integer)v.shape[axis]));
  gl_lua_check_status(L, gl_view_unfold(&v, axis, size, step), 2);
  if (a->ndim == 0) {                      /* PyTorch: shape (size), the windows' axis dropped */
    v.ndim = 1;
    v.shape[0] = size;
    v.strides[0] = v.strides[1];
  }
  lua_settop(L, 1);
  return push_descriptor(L, &v);
}

/* x:flatten([start_dim [, end_dim]]): axes start_dim..end_dim (1-based, inclusive,
** negatives from the end; every axis by default) merged into one, a view when possible
** (as reshape): PyTorch's flatten(x, start_dim - 1, end_dim - 1). A 0-d array gives 1-D. */
static int l_flatten(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  int nd = a->ndim > 0 ? a->ndim : 1, first = 0, last = nd - 1;
  if (!lua_isnoneornil(L, 2)) gl_lua_check_status(L, gl_axis_norm(gl_lua_int(L, 2, "start_dim"), nd, &first), 2);
  if (!lua_isnoneornil(L, 3)) gl_lua_check_status(L, gl_axis_norm(gl_lua_int(L, 3, "end_dim"), nd, &last), 3);
  if (first > last)
    luaL_argerror(L, 3, lua_pushfstring(L, "end_dim (axis %d) comes before start_dim (axis %d)", last + 1, first + 1));
  lua_settop(L, 1);
  int64_t merged = 1;             /* no overflow: every array's nonzero extents multiply within 2^63 */
  for (int i = first; i <= last && a->ndim > 0; i++) merged *= a->shape[i];
  for (int i = 0; i < first; i++) lua_pushinteger(L, a->shape[i]);
  lua_pushinteger(L, merged);
  for (int i = last + 1; i < a->ndim; i++) lua_pushinteger(L, a->shape[i]);
  return l_reshape(L);
}

/* ---- copies ----------------------------------------------------------------------------- */

static int push_copy(lua_State *L, const gl_array *a, gl_dtype dt, gl_device dev) {
  gl_array *c = gl_lua_push(L);
  gl_status st = gl_op_copy(c, a, dt, dev);
  gl_lua_check_status(L, st, 0);
  gl_lua_account(L, (size_t)c->size * gl_dtypes[dt].size);
  return 1;
}

static int l_contiguous(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  if (gl_array_is_contiguous(a)) { lua_settop(L, 1); return 1; }
  return push_copy(L, a, (gl_dtype)a->dtype, gl_array_device(a));
}

static int l_copy(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  return push_copy(L, a, (gl_dtype)a->dtype, gl_array_device(a));
}

/* x:astype(dtype): always a new array (NumPy's default copy=True). */
static int l_astype(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  return push_copy(L, a, gl_lua_dtype(L, 2), gl_array_device(a));
}

/* PyTorch's cast shorthands, x:half() for x:astype("float16") ...: each its own op (so
** autograd and the profiler name it), always a new array as astype. */
static int cast_to(lua_State *L, gl_dtype dt) {
  gl_array *a = gl_lua_check(L, 1);
  return push_copy(L, a, dt, gl_array_device(a));
}
static int l_half(lua_State *L) { return cast_to(L, GL_FLOAT16); }
static int l_bfloat16(lua_State *L) { return cast_to(L, GL_BFLOAT16); }
static int l_float(lua_State *L) { return cast_to(L, GL_FLOAT32); }
static int l_double(lua_State *L) { return cast_to(L, GL_FLOAT64); }
static int l_int(lua_State *L) { return cast_to(L, GL_INT32); }
static int l_long(lua_State *L) { return cast_to(L, GL_INT64); }
static int l_bool(lua_State *L) { return cast_to(L, GL_BOOL); }

static const gl_optdecl to_decl = { "to", "gpu.ones(2):to(%s)", gl_create_keys };

/* x:to(device) / x:to({device=, dtype=}): returns x itself when nothing changes. */
static int l_to(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  gl_dtype dt = (gl_dtype)a->dtype;
  gl_device dev = gl_array_device(a);
  if (lua_type(L, 2) == LUA_TSTRING) dev = gl_lua_device(L, 2);
  else if (lua_istable(L, 2)) gl_lua_opts(L, 2, &to_decl, &dt, &dev, NULL);
  else luaL_argerror(L, 2, lua_pushfstring(L, "device name or options table expected, got %s", luaL_typename(L, 2)));
  if (dt == a->dtype && gl_device_eq(dev, gl_array_device(a))) { lua_settop(L, 1); return 1; }
  return push_copy(L, a, dt, dev);
}

static int l_cpu(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  if (gl_array_device(a).type == GL_CPU) { lua_settop(L, 1); return 1; }
  return push_copy(L, a, (gl_dtype)a->dtype, gl_cpu());
}

static int l_cuda(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  lua_settop(L, 2);
  if (lua_isnil(L, 2)) { lua_pushliteral(L, "cuda"); lua_replace(L, 2); }
  else if (lua_type(L, 2) == LUA_TNUMBER) {
    lua_pushfstring(L, "cuda:%d", (int)gl_lua_int(L, 2, "device index"));
    lua_replace(L, 2);
  }
  gl_device dev = gl_lua_device(L, 2);
  if (gl_device_eq(dev, gl_array_device(a))) { lua_settop(L, 1); return 1; }
  return push_copy(L, a, (gl_dtype)a->dtype, dev);
}

/* x:fill_(v): in place; returns x. */
static int l_fill_(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  gl_lua_check_status(L, gl_array_writable(a, NULL), 0);   /* the array's fault, not the value's */
  gl_lua_check_status(L, gl_op_fill(a, gl_lua_scalar_for(L, 2, 2, (gl_dtype)a->dtype)), 2);
  lua_settop(L, 1);
  return 1;
}

static int l_is_contiguous(lua_State *L) {
  lua_pushboolean(L, gl_array_is_contiguous(gl_lua_check(L, 1)));
  return 1;
}

/* x:stride([dim]): PyTorch's strides, in elements (0 on a broadcast axis): a table of one
** per axis, or the one of dim (1-based, negatives from the end). */
static int l_stride(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  if (lua_isnoneornil(L, 2)) {
    lua_createtable(L, a->ndim, 0);
    for (int i = 0; i < a->ndim; i++) {
      lua_pushinteger(L, (lua_Integer)a->strides[i]);
      lua_rawseti(L, -2, i + 1);
    }
    return 1;
  }
  if (a->ndim == 0) return luaL_argerror(L, 2, "a 0-d array has no axis to ask the stride of");
  int axis;
  gl_lua_axes(L, 2, a->ndim, &axis, GL_AXES_ONE);
  lua_pushinteger(L, (lua_Integer)a->strides[axis]);
  return 1;
}

/* ---- back to Lua -------------------------------------------------------------------------- */

/* Host copy of a's elements in C order, owned by a Lua userdata at the top of the stack
** (so an error while building tables cannot leak it). */
static const char *host_elements(lua_State *L, const gl_array *a) {
  if (a->storage->device.type == GL_CPU && gl_array_is_contiguous(a)) {
    lua_pushnil(L);                   /* keep the stack shape the same */
    return gl_array_data(a);
  }
  size_t nbytes;                      /* a broadcast view may be too big to hold */
  gl_lua_check_status(L, gl_nbytes(a->size, (gl_dtype)a->dtype, &nbytes), 0);
  char *buf = lua_newuserdatauv(L, nbytes + 1, 0);
  gl_lua_check_status(L, gl_op_to_host(buf, a), 0);
  return buf;
}

static void push_host_value(lua_State *L, gl_dtype dt, const char *p) {
  gl_scalar s = gl_scalar_load(dt, p);
  switch (gl_dtypes[dt].kind) {
    case GL_KIND_BOOL: lua_pushboolean(L, s.i != 0); break;
    case GL_KIND_FLOAT: lua_pushnumber(L, s.f); break;
    case GL_KIND_COMPLEX: gl_lua_push_complex(L, s.f, s.im); break;
    default: if (s.isint) lua_pushinteger(L, s.i); else lua_pushnumber(L, s.f); break;   /* uint64 past 2^63 */
  }
}

static void build_table(lua_State *L, const gl_array *a, const char **p, int depth) {
  int64_t n = a->shape[depth];
  luaL_checkstack(L, 4, "totable");
  lua_createtable(L, n > 0x7fffffff ? 0x7fffffff : (int)n, 0);
  size_t sz = gl_array_itemsize(a);
  for (int64_t i = 0; i < n; i++) {
    if (depth == a->ndim - 1) { push_host_value(L, (gl_dtype)a->dtype, *p); *p += sz; }
    else build_table(L, a, p, depth + 1);
    lua_rawseti(L, -2, i + 1);
  }
}

/* The count of tables totable makes for an empty array: one per index prefix, down to the
** first zero extent (saturating). Elements bound it for any other array; an empty one of
** shape (2^62, 0) would make 2^62 empty tables, until memory ran out. */
static int64_t empty_tables(const gl_array *a) {
  int64_t tables = 0, rows = 1;
  for (int d = 0; d < a->ndim; d++) {
    if (gl_add_overflow(tables, rows, &tables)) return INT64_MAX;
    if (a->shape[d] == 0) break;
    if (gl_mul_overflow(rows, a->shape[d], &rows)) return INT64_MAX;
  }
  return tables;
}

/* x:totable(): nested Lua tables (a 0-d array gives its number). */
static int l_totable(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  enum { MAX_EMPTY_TABLES = 1 << 24 };
  if (a->size == 0 && empty_tables(a) > MAX_EMPTY_TABLES) {
    char sb[GL_SHAPE_BUFSZ];
    return luaL_argerror(L, 1, lua_pushfstring(L, "an empty array of shape %s would make %I empty tables (at most %d)",
                         gl_shape_str(a->ndim, a->shape, sb), (lua_Integer)empty_tables(a), (int)MAX_EMPTY_TABLES));
  }
  const char *p = host_elements(L, a);
  if (a->ndim == 0) { push_host_value(L, (gl_dtype)a->dtype, p); return 1; }
  build_table(L, a, &p, 0);
  return 1;
}

static int l_item(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  if (a->size != 1)
    luaL_argerror(L, 1, lua_pushfstring(L, "item() needs an array of one element, got %I elements", (lua_Integer)a->size));
  gl_lua_push_element(L, a, 0);
  return 1;
}

static const gl_reg shape_funcs[] = {
  { "reshape", l_reshape, 1 + GL_MAXDIMS }, { "view", l_view, 1 + GL_MAXDIMS },
  { "transpose", l_transpose, 3 }, { "permute", l_permute, 1 + GL_MAXDIMS }, { "squeeze", l_squeeze, 2 },
  { "unsqueeze", l_unsqueeze, 2 }, { "expand", l_expand, 1 + GL_MAXDIMS }, { "flatten", l_flatten, 3 },
  { "unfold", l_unfold, 4 },
  { "contiguous", l_contiguous, 1 }, { "copy", l_copy, 1 }, { "clone", l_copy, 1 }, { "astype", l_astype, 2 },
  { "to", l_to, 2 }, { "cpu", l_cpu, 1 }, { "cuda", l_cuda, 2 }, { "fill_", l_fill_, 2 },
  { "is_contiguous", l_is_contiguous, 1 }, { "totable", l_totable, 1 }, { "item", l_item, 1 },
  { "view_as_real", l_view_as_real, 1 }, { "view_as_complex", l_view_as_complex, 1 }, { NULL, NULL, 0 },
};

/* gpu._writable(x) -> true, or false and the message an in-place write into x would raise
** (a broadcast view whose elements overlap): the Lua parts' in-place routines ask before
** they draw random numbers or compute anything. */
static int l_writable(lua_State *L) {
  gl_status st = gl_array_writable(gl_lua_check(L, 1), NULL);
  lua_pushboolean(L, st == GL_OK);
  if (st == GL_OK) return 1;
  lua_pushstring(L, gl_errmsg());
  return 2;
}

/* Methods only, not ops (PyTorch has no torch.stride). */
static const gl_reg info_methods[] = { { "stride", l_stride, 2 }, { NULL, NULL, 0 } };
static const gl_reg private_funcs[] = { { "_writable", l_writable, 1 }, { NULL, NULL, 0 } };

/* Methods only: gpu.float, gpu.half ... are the dtype names (lgpu.c). */
static const gl_reg cast_methods[] = {
  { "half", l_half, 1 }, { "bfloat16", l_bfloat16, 1 }, { "float", l_float, 1 }, { "double", l_double, 1 },
  { "int", l_int, 1 }, { "long", l_long, 1 }, { "bool", l_bool, 1 }, { NULL, NULL, 0 },
};

void gl_open_shape(lua_State *L, int module, int methods) {
  gl_lua_setboth(L, module, methods, shape_funcs);
  gl_lua_setops(L, methods, "", cast_methods);
  gl_lua_setfuncs(L, methods, info_methods);
  gl_lua_setfuncs(L, module, private_funcs);
  gl_lua_declare(L, &to_decl);
}

/* ---- the public C API (gpulua.h) --------------------------------------------------------- */

void gpulua_push_array(lua_State *L, const char *dtype, int ndim, const int64_t *shape,
                       const void *data) {
  int t = gl_dtype_from_name(dtype);
  if (t < 0) luaL_error(L, "gpulua_push_array: unknown dtype '%s'", dtype);
  gl_array *a = gl_lua_push(L);        /* the shape and its size are checked on allocation */
  gl_status st = gl_op_from_host(a, data, (gl_dtype)t, ndim, shape, gl_cpu());
  if (st != GL_OK) luaL_error(L, "gpulua_push_array: %s", gl_errmsg());
}

const char *gpulua_check_array(lua_State *L, int arg, int *ndim, int64_t *shape) {
  gl_array *a = gl_lua_check(L, arg);
  *ndim = a->ndim;
  memcpy(shape, a->shape, (size_t)a->ndim * sizeof *shape);
  return gl_dtypes[a->dtype].name;
}

int64_t gpulua_read_array(lua_State *L, int arg, void *out) {
  gl_array *a = gl_lua_check(L, arg);
  gl_status st = gl_op_to_host(out, a);
  if (st != GL_OK) luaL_error(L, "gpulua_read_array: %s", gl_errmsg());
  return a->size;
}
