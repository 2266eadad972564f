/*
** lindexing.c — indexing by arrays (x[mask], x[idx], take, index, index_put_), joining
** and splitting (concat, stack, split), tile, repeat, flip, roll, and sorting (sort,
** argsort, topk) from Lua. Indices and axes are 1-based, negatives from the end.
*/
#include <limits.h>
#include <string.h>
#include "lbody.h"

/* ---- arguments ------------------------------------------------------------------------------ */

/* An optional axis argument (nil: 'def'); 0-based result. */
static int opt_axis(lua_State *L, int idx, int ndim, int64_t def) {
  int ax = 0;
  int64_t a = lua_isnoneornil(L, idx) ? def : gl_lua_int(L, idx, "axis");
  gl_lua_check_status(L, gl_axis_norm(a, ndim, &ax), idx);
  return ax;
}

/* The axis at idx of an op along one axis of x (default the first); a 0-d array has none. */
static int axis_of(lua_State *L, int idx, const gl_array *x) {
  if (x->ndim == 0) luaL_argerror(L, idx, "a 0-d array has no axes");
  return opt_axis(L, idx, x->ndim, 1);
}

/* ---- options ------------------------------------------------------------------------------ */

static const gl_optkey put_keys[] = { GL_KEY_FLAG("accumulate"), { NULL } };
static const gl_optkey sort_keys[] = { GL_KEY_FLAG("descending"), { NULL } };
static const gl_optkey topk_keys[] = { GL_KEY_FLAG("largest"), GL_KEY_FLAG("sorted"), { NULL } };
static const gl_optdecl put_decl = {
  "index_put_", "gpu.zeros(3):index_put_(1, gpu.array({1, 1}, {dtype = 'int64'}), 1, %s)", put_keys };
static const gl_optdecl sort_decl = { "sort", "gpu.sort(gpu.array({3, 1, 2}), %s)", sort_keys };
static const gl_optdecl argsort_decl = { "argsort", "gpu.argsort(gpu.array({3, 1, 2}), -1, %s)", sort_keys };
static const gl_optdecl topk_decl = { "topk", "gpu.topk(gpu.array({3, 1, 2}), 2, %s)", topk_keys };
static const gl_optkey take_keys[] = { { "mode", GL_OPT_STRING, 0, 0, 0, "raise wrap clip" }, { NULL } };
static const gl_optdecl take_decl = {
  "take", "gpu.take(gpu.arange(3), gpu.array({4}, {dtype = 'int64'}), nil, %s)", take_keys };
static const gl_optdecl *const index_decls[] = { &put_decl, &sort_decl, &argsort_decl, &topk_decl, &take_decl, NULL };

/* Boolean options of a trailing table at idx against d; vals hold the defaults on entry. */
static void read_flags(lua_State *L, int idx, const gl_optdecl *d, bool *vals) {
  gl_optval v[4];
  gl_lua_readopts(L, idx, d, v);
  for (int i = 0; d->keys[i].name; i++)
    if (v[i].set) vals[i] = v[i].b;
}

/* The arrays of the list at idx, in a scratch userdata left on the stack. */
static const gl_array **check_list(lua_State *L, int idx, int *n) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer len = luaL_len(L, idx);
  if (len < 1) luaL_argerror(L, idx, "need a non-empty list of arrays");
  if (len > 1 << 20) luaL_argerror(L, idx, "too many arrays");
  const gl_array **xs = lua_newuserdatauv(L, (size_t)len * sizeof *xs, 0);
  for (lua_Integer i = 1; i <= len; i++) {
    lua_geti(L, idx, i);
    gl_array *a = gl_lua_test(L, -1);
    if (a == NULL)
      luaL_argerror(L, idx, lua_pushfstring(L, "element #%I is a %s, expected gpu.array", i, luaL_typename(L, -1)));
    if (a->storage == NULL) luaL_argerror(L, idx, lua_pushfstring(L, "element #%I is a closed array", i));
    xs[i - 1] = a;
    gl_lua_hold(L, -1);  /* Lua code inside the op may empty the list (lhold.c) */
    lua_pop(L, 1);
  }
  *n = (int)len;
  return xs;
}


/* Values written into x: an array, or a number that must fit x's dtype. */
static gl_operand value_operand(lua_State *L, int idx, const gl_array *x) {
  gl_operand o = { NULL, gl_scalar_int(0) };
  if (gl_lua_test(L, idx)) o.arr = gl_lua_check(L, idx);
  else o.s = gl_lua_scalar_for(L, idx, idx, (gl_dtype)x->dtype);
  return o;
}

/* x flattened to 1-D: a view when possible, else a copy (pushed either way). */
static gl_array *push_flat(lua_State *L, const gl_array *x) {
  int64_t n = x->size;
  gl_array *f = gl_lua_push(L);
  gl_array_view_of(f, x);
  if (gl_view_reshape(f, 1, &n) == GL_OK) return f;
  gl_array_release(f);
  gl_lua_check_status(L, gl_op_copy(f, x, (gl_dtype)x->dtype, gl_array_device(x)), 0);
  gl_lua_check_status(L, gl_view_reshape(f, 1, &n), 0);
  return f;
}

/* take and repeat: along the axis at argument 3, or with none over x flattened (*x becomes
** that, pushed above the arguments). */
static int axis_or_flat(lua_State *L, const gl_array **x) {
  lua_settop(L, 3);
  if (!lua_isnil(L, 3)) return axis_of(L, 3, *x);
  *x = push_flat(L, *x);
  return 0;
}

/* ---- x[array] and x[array] = v (called from larray.c) ----------------------------------------- */

static void check_key_dtype(lua_State *L, const gl_array *k, int arg) {
  if (k->dtype != GL_BOOL && k->dtype != GL_INT32 && k->dtype != GL_INT64)
    luaL_argerror(L, arg, lua_pushfstring(L, "an array index must be a bool mask or an int32/int64 array, got %s",
                                          gl_dtypes[k->dtype].name));
}

int gl_lua_index_array(lua_State *L, const gl_array *x, int key) {
  gl_array *k = gl_lua_check(L, key);
  check_key_dtype(L, k, key);
  gl_array *out = gl_lua_push(L);
  if (k->dtype == GL_BOOL) gl_lua_check_status(L, gl_op_mask_select(out, x, k), key);
  else {
    if (x->ndim == 0) luaL_argerror(L, key, "cannot index a 0-d array with an integer array");
    gl_lua_check_status(L, gl_op_take(out, x, 0, k), key);
  }
  gl_lua_account_array(L, out);
  return 1;
}

void gl_lua_newindex_array(lua_State *L, const gl_array *x, int key, int val) {
  gl_array *k = gl_lua_check(L, key);
  check_key_dtype(L, k, key);
  gl_operand v = value_operand(L, val, x);
  if (k->dtype == GL_BOOL) gl_lua_check_status(L, gl_op_mask_assign(x, k, v), key);
  else {
    if (x->ndim == 0) luaL_argerror(L, key, "cannot index a 0-d array with an integer array");
    gl_lua_check_status(L, gl_op_index_put(x, 0, k, v, false), key);
  }
}

/* ---- take, index, index_put_, masked_select ------------------------------------------------------ */

/* One binary op of take's position arithmetic, its result pushed. */
static gl_array *push_binary_of(lua_State *L, gl_binop op, const gl_array *a, gl_operand b) {
  gl_array *t = gl_lua_push(L);
  gl_operand oa = { a, gl_scalar_int(0) };
  gl_lua_check_status(L, gl_op_binary(t, op, oa, b), 2);
  return t;
}

/* NumPy's take modes on 1-based positions into an axis of n elements, the positions the
** take reads pushed: "wrap" (mode 1) takes them modulo n (NumPy's i + 1 as i, negatives
** from the end: (p - (p > 0)) mod n, plus 1), "clip" (mode 2) moves those below 1 to 1 and
** those above n to n. The gradient rule (rules_structure.lua's take) remaps the same way. */
static gl_array *take_positions(lua_State *L, const gl_array *idx, int64_t n, int mode) {
  gl_operand none = { NULL, gl_scalar_int(0) };
  if (n == 0 && idx->size > 0)
    luaL_argerror(L, 2, "cannot take from an empty axis (modes 'wrap' and 'clip' need an element)");
  if (n == 0) return (gl_array *)idx;
  if (mode == 1) {
    gl_operand zero = none, one = { NULL, gl_scalar_int(1) }, size = { NULL, gl_scalar_int(n) };
    gl_operand pos = { push_binary_of(L, GL_B_gt, idx, zero), gl_scalar_int(0) };
    gl_array *z = push_binary_of(L, GL_B_sub, idx, pos);
    gl_array *m = push_binary_of(L, GL_B_mod, z, size);
    return push_binary_of(L, GL_B_add, m, one);
  }
  gl_operand lo = { NULL, gl_scalar_int(1) }, hi = { NULL, gl_scalar_int(n) };
  return push_binary_of(L, GL_B_minimum, push_binary_of(L, GL_B_maximum, idx, lo), hi);
}

/* gpu.take(x, idx [, axis] [, {mode = "raise"}]): NumPy's take; no axis: over x flattened.
** mode "wrap" / "clip" as NumPy's (take_positions). */
static int l_take(lua_State *L) {
  const gl_array *x = gl_lua_check(L, 1);
  gl_array *idx = gl_lua_check(L, 2);
  int o = 4;
  if (gl_lua_is_options(L, 3)) {
    if (!lua_isnone(L, 4)) luaL_argerror(L, 4, "nothing may follow the options table");
    o = 3;
  }
  gl_optval mode[1];
  gl_lua_readopts(L, o, &take_decl, mode);
  if (o == 3) lua_pushnil(L), lua_replace(L, 3);
  int axis = axis_or_flat(L, &x);
  if (mode[0].set && mode[0].choice > 0) idx = take_positions(L, idx, x->shape[axis], mode[0].choice);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_take(out, x, axis, idx), out, 2);
}

/* x:index(axis, idx): take along an axis. */
static int l_index(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  gl_array *idx = gl_lua_check(L, 3);
  int axis = axis_of(L, 2, x);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_take(out, x, axis, idx), out, 3);
}

/* x:index_put_(axis, idx, values [, {accumulate = true}]): scatter in place; returns x. */
static int l_index_put_(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  int axis = axis_of(L, 2, x);
  gl_array *idx = gl_lua_check(L, 3);
  gl_operand v = value_operand(L, 4, x);
  bool acc = false;
  read_flags(L, 5, &put_decl, &acc);
  gl_lua_check_status(L, gl_array_writable(x, NULL), 0);
  gl_lua_check_status(L, gl_op_index_put(x, axis, idx, v, acc), 3);
  lua_settop(L, 1);
  return 1;
}

/* gpu._scatter_extreme(n, index, src, max): the largest (max true) or smallest of the src
** elements index sends to each of n positions, and which positions got any (bool), both
** (n); for gpu.scatter_reduce's amax and amin. */
static int l_scatter_extreme(lua_State *L) {
  int64_t n = gl_lua_int(L, 1, "n");
  gl_array *idx = gl_lua_check(L, 2);
  gl_array *src = gl_lua_check(L, 3);
  bool max = lua_toboolean(L, 4);
  gl_array *res[2];
  gl_lua_push_results(L, 4, res, 2);
  gl_lua_check_status(L, gl_op_scatter_extreme(res[0], res[1], n, idx, src, max), 2);
  return gl_lua_results(L, GL_OK, res, 2);
}

/* gpu.masked_select(x, mask) = x[mask]. */
static int l_masked_select(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  gl_array *m = gl_lua_check(L, 2);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_mask_select(out, x, m), out, 2);
}

/* ---- concat, stack, split -------------------------------------------------------------------- */

static int join(lua_State *L, bool stack) {
  int n;
  lua_settop(L, 2);                  /* the scratch list goes above the arguments */
  const gl_array **xs = check_list(L, 1, &n);
  int ndim = xs[0]->ndim + (stack ? 1 : 0), axis = 0;
  if (ndim == 0) luaL_argerror(L, 1, "array #1 is 0-d; 0-d arrays cannot be concatenated");
  axis = opt_axis(L, 2, ndim, 1);
  gl_array *out = gl_lua_push(L);
  gl_lua_check_status(L, stack ? gl_op_stack(out, n, xs, axis) : gl_op_concat(out, n, xs, axis), 1);
  gl_lua_account_array(L, out);
  return 1;
}
static int l_concat(lua_State *L) { return join(L, false); }
static int l_stack(lua_State *L) { return join(L, true); }

/* gpu.split(x, n_or_sizes [, axis=1]) -> list of views. */
static int l_split(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  if (x->ndim == 0) luaL_argerror(L, 1, "cannot split a 0-d array");
  int axis = opt_axis(L, 3, x->ndim, 1);
  int64_t len = x->shape[axis];
  int64_t nparts, part = 0;
  if (lua_istable(L, 2)) {
    nparts = (int64_t)luaL_len(L, 2);
    int64_t sum = 0;
    for (int64_t i = 1; i <= nparts; i++) {
      lua_geti(L, 2, i);
      int64_t s = gl_lua_int(L, -1, "section size");
      if (s < 0) luaL_argerror(L, 2, lua_pushfstring(L, "section size %I is negative", (lua_Integer)s));
      if (gl_add_overflow(sum, s, &sum))
        luaL_argerror(L, 2, lua_pushfstring(L, "section sizes add up to more than 2^63 but axis %d has size %I",
                                            axis + 1, (lua_Integer)len));
      lua_pop(L, 1);
    }
    if (sum != len)
      luaL_argerror(L, 2, lua_pushfstring(L, "section sizes add up to %I but axis %d has size %I",
                                          (lua_Integer)sum, axis + 1, (lua_Integer)len));
  } else {
    nparts = gl_lua_int(L, 2, "number of parts");
    if (nparts < 1) luaL_argerror(L, 2, lua_pushfstring(L, "number of parts must be at least 1, got %I", (lua_Integer)nparts));
    if (nparts > INT_MAX)           /* more than a Lua table can hold (an empty axis splits any way) */
      luaL_argerror(L, 2, lua_pushfstring(L, "number of parts %I is more than a list can hold", (lua_Integer)nparts));
    if (len % nparts != 0)
      luaL_argerror(L, 2, lua_pushfstring(L, "axis %d of size %I does not split into %I equal parts",
                                          axis + 1, (lua_Integer)len, (lua_Integer)nparts));
    part = len / nparts;
  }
  lua_createtable(L, (int)nparts, 0);
  int64_t at = 0;
  for (int64_t i = 1; i <= nparts; i++) {
    int64_t s = part;
    if (lua_istable(L, 2)) { lua_geti(L, 2, i); s = lua_tointeger(L, -1); lua_pop(L, 1); }
    gl_array *v = gl_lua_push(L);
    gl_array_view_of(v, x);
    gl_view_slice(v, axis, at, 1, s);
    at += s;
    lua_rawseti(L, -2, i);
  }
  return 1;
}

/* ---- tile, repeat, flip, roll ----------------------------------------------------------------- */

static int l_tile(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  int64_t reps[GL_MAXDIMS];
  int n = 0;
  if (lua_istable(L, 2)) {
    lua_Integer len = luaL_len(L, 2);
    if (len > GL_MAXDIMS) luaL_argerror(L, 2, "too many repetitions");
    for (lua_Integer i = 1; i <= len; i++) {
      lua_geti(L, 2, i);
      reps[n++] = gl_lua_int(L, -1, "repetition");
      lua_pop(L, 1);
    }
  } else {                                     /* x:tile(2, 3) as x:tile({2, 3}) (PyTorch) */
    int top = lua_gettop(L);
    if (top < 2) luaL_argerror(L, 2, "repetitions expected (a number, several, or a table)");
    if (top - 1 > GL_MAXDIMS) luaL_argerror(L, 2, "too many repetitions");
    for (int i = 2; i <= top; i++) reps[n++] = gl_lua_int(L, i, "repetition");
  }
  lua_settop(L, 2);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_tile(out, x, n, reps), out, 2);
}

/* x:repeat(n_or_counts [, axis]): NumPy's repeat (each element n times); no axis:
** flattened. 'repeat' is a Lua keyword, hence also repeat_interleave (torch's name). */
static int l_repeat(lua_State *L) {
  const gl_array *x = gl_lua_check(L, 1);
  int axis = axis_or_flat(L, &x);
  gl_array *counts = gl_lua_test(L, 2);
  gl_array *out = gl_lua_push(L);
  if (counts) return gl_lua_result(L, gl_op_repeat_counts(out, x, gl_lua_check(L, 2), axis), out, 2);
  return gl_lua_result(L, gl_op_repeat(out, x, gl_lua_int(L, 2, "repeat count"), axis), out, 2);
}

/* x:flip([axis or {axes}]): a view with negative strides; no axis: every axis. */
static int l_flip(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  bool flip[GL_MAXDIMS] = { false };
  if (lua_isnoneornil(L, 2)) {
    for (int i = 0; i < x->ndim; i++) flip[i] = true;
  } else {
    int ax;
    lua_Integer len = lua_istable(L, 2) ? luaL_len(L, 2) : 1;
    for (lua_Integer i = 1; i <= len; i++) {
      int t = 2;
      if (lua_istable(L, 2)) { lua_geti(L, 2, i); t = lua_gettop(L); }
      gl_lua_check_status(L, gl_axis_norm(gl_lua_int(L, t, "axis"), x->ndim, &ax), 2);
      if (flip[ax]) luaL_argerror(L, 2, lua_pushfstring(L, "axis %d is repeated", ax + 1));
      flip[ax] = true;
      if (t != 2) lua_pop(L, 1);
    }
  }
  gl_array *v = gl_lua_push(L);
  gl_array_view_of(v, x);
  for (int i = 0; i < x->ndim; i++)
    if (flip[i] && v->shape[i] > 0) gl_view_slice(v, i, v->shape[i] - 1, -1, v->shape[i]);
  return 1;
}

/* x:roll(shift [, axis]): shift and axis numbers or equal-length tables; no axis: the
** flattened array is rolled and the shape kept. */
static int l_roll(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  lua_settop(L, 3);
  if (lua_isnil(L, 3)) {
    int64_t shift = gl_lua_int(L, 2, "shift");
    gl_array *f = push_flat(L, x);
    gl_array *out = gl_lua_push(L);
    gl_lua_check_status(L, gl_op_roll(out, f, shift, 0), 2);
    gl_lua_check_status(L, gl_view_reshape(out, x->ndim, x->shape), 0);
    gl_lua_account_array(L, out);
    return 1;
  }
  bool tab = lua_istable(L, 2);
  if (tab != lua_istable(L, 3)) luaL_argerror(L, 3, "shift and axis must both be numbers or both be tables");
  lua_Integer n = tab ? luaL_len(L, 2) : 1;
  if (tab && luaL_len(L, 3) != n)
    luaL_argerror(L, 3, lua_pushfstring(L, "%I shifts for %I axes", n, luaL_len(L, 3)));
  const gl_array *cur = x;
  if (n == 0) {                      /* nothing to roll: a copy, like NumPy */
    gl_array *out = gl_lua_push(L);
    gl_lua_check_status(L, gl_op_copy(out, x, (gl_dtype)x->dtype, gl_array_device(x)), 0);
    return 1;
  }
  for (lua_Integer i = 1; i <= n; i++) {
    if (tab) { lua_geti(L, 2, i); lua_geti(L, 3, i); } else { lua_pushvalue(L, 2); lua_pushvalue(L, 3); }
    int64_t shift = gl_lua_int(L, -2, "shift");
    int ax;
    if (x->ndim == 0) luaL_argerror(L, 3, "a 0-d array has no axes");
    gl_lua_check_status(L, gl_axis_norm(gl_lua_int(L, -1, "axis"), x->ndim, &ax), 3);
    lua_pop(L, 2);
    gl_array *out = gl_lua_push(L);
    gl_lua_check_status(L, gl_op_roll(out, cur, shift, ax), 2);
    cur = out;
  }
  gl_lua_account_array(L, cur);
  return 1;
}

/* ---- sort, argsort, topk --------------------------------------------------------------------- */

/* Reads (axis = -1, {descending}) for sort/argsort; the options may come second. */
static int sort_args(lua_State *L, const gl_array *x, const gl_optdecl *d, bool *desc) {
  int opts = 3, axis = x->ndim > 0 ? x->ndim - 1 : 0;
  if (lua_istable(L, 2)) opts = 2;
  else if (x->ndim > 0) axis = opt_axis(L, 2, x->ndim, -1);
  else if (!lua_isnoneornil(L, 2)) luaL_argerror(L, 2, "a 0-d array has no axes");
  *desc = false;
  read_flags(L, opts, d, desc);
  return axis;
}

/* argsort returns the 1-based positions; sort the values and, with an axis given as a
** number, the positions too, as PyTorch's torch.sort(x, dim) (one sort gives both:
** local v, i = x:sort(2)). Without the axis, values only: a sort that carries no positions
** is about twice as fast. */
static int l_argsort(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  bool desc;
  int axis = sort_args(L, x, &argsort_decl, &desc);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_sort(NULL, out, x, axis, desc), out, 0);
}

static int l_sort(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  bool desc;
  int axis = sort_args(L, x, &sort_decl, &desc);
  if (!lua_isnumber(L, 2)) {
    gl_array *out = gl_lua_push(L);
    return gl_lua_result(L, gl_op_sort(out, NULL, x, axis, desc), out, 0);
  }
  gl_array *r[2];                                     /* values, positions */
  gl_lua_push_results(L, lua_gettop(L), r, 2);
  return gl_lua_results(L, gl_op_sort(r[0], r[1], x, axis, desc), r, 2);
}

/* x:topk(k [, axis=-1] [, {largest = true, sorted = true}]) -> values, indices. */
static int l_topk(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  int64_t k = gl_lua_int(L, 2, "k");
  if (x->ndim == 0) luaL_argerror(L, 1, "topk needs an array of at least 1 dimension");
  int opts = 4, axis;
  if (lua_istable(L, 3)) { opts = 3; axis = x->ndim - 1; }
  else axis = opt_axis(L, 3, x->ndim, -1);
  bool flags[2] = { true, true };
  read_flags(L, opts, &topk_decl, flags);
  if (k < 0 || k > x->shape[axis])
    luaL_argerror(L, 2, lua_pushfstring(L, "k = %I is out of range for axis %d of size %I",
                                        (lua_Integer)k, axis + 1, (lua_Integer)x->shape[axis]));
  gl_array *r[2];                                     /* values, indices */
  gl_lua_push_results(L, lua_gettop(L), r, 2);
  return gl_lua_results(L, gl_op_topk(r[0], r[1], x, k, axis, flags[0]), r, 2);
}

/* ---- registration ------------------------------------------------------------------------------ */

static const gl_reg index_funcs[] = {      /* gpu.f only: the first argument is a list */
  { "concat", l_concat, 2 },
  { "concatenate", l_concat, 2 },
  { "stack", l_stack, 2 },
  { "_scatter_extreme", l_scatter_extreme, 4 },
  { NULL, NULL, 0 }
};

static const gl_reg index_both[] = {
  { "take", l_take, 4 }, { "index", l_index, 3 }, { "index_put_", l_index_put_, 5 },
  { "masked_select", l_masked_select, 2 }, { "split", l_split, 3 }, { "tile", l_tile, 1 + GL_MAXDIMS },
  { "repeat", l_repeat, 3 }, { "repeat_interleave", l_repeat, 3 }, { "flip", l_flip, 2 },
  { "roll", l_roll, 3 }, { "sort", l_sort, 3 }, { "argsort", l_argsort, 3 }, { "topk", l_topk, 4 },
  { NULL, NULL, 0 },
};

void gl_open_indexing(lua_State *L, int module, int methods) {
  gl_lua_setops(L, module, "", index_funcs);
  gl_lua_setboth(L, module, methods, index_both);
  gl_lua_declare_all(L, index_decls);
}
