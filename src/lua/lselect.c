/*
** lselect.c — partition, argpartition (kth order statistics) and histcounts (bin counts)
** from Lua: the kernels under the NumPy routines median/quantile, histogram and bincount.
** kth and axes are 1-based, negatives from the end.
*/
#include "lbody.h"
#include "../ops/ops.h"

#define KTH_MAX 4096          /* positions in one call (NumPy has no limit; a sort is cheaper) */

static const gl_optkey histcounts_keys[] = {
  { "weights", GL_OPT_ARRAY, 0, 0, 0, NULL },
  GL_KEY_FLAG("uniform"),
  { NULL }
};
static const gl_optdecl histcounts_decl = {
  "histcounts", "gpu.histcounts(gpu.ones(3), gpu.array({0, 1, 2}), %s)", histcounts_keys };

/* kth at idx (an integer or a non-empty list of integers, 1-based, negatives from the
** end) into 0-based positions along an axis of size n; returns how many. */
static int read_kth(lua_State *L, int idx, int64_t n, int64_t *kth) {
  int nk = 0;
  bool list = lua_istable(L, idx);
  if (!list && !lua_isinteger(L, idx) && !(lua_type(L, idx) == LUA_TNUMBER))
    luaL_typeerror(L, idx, "integer or list of integers");
  lua_Integer len = list ? luaL_len(L, idx) : 1;
  if (len < 1) luaL_argerror(L, idx, "kth is an empty list");
  if (len > KTH_MAX) luaL_argerror(L, idx, "kth lists more than 4096 positions");
  for (lua_Integer i = 1; i <= len; i++) {
    if (list) lua_geti(L, idx, i);
    else lua_pushvalue(L, idx);
    int64_t k = gl_lua_int(L, -1, "kth");
    lua_pop(L, 1);
    int64_t k0 = k < 0 ? n + k : k - 1;
    if (k == 0 || k0 < 0 || k0 >= n)
      luaL_argerror(L, idx, lua_pushfstring(L, "kth = %I is out of range for an axis of size %I",
                                            (lua_Integer)k, (lua_Integer)n));
    kth[nk++] = k0;
  }
  return nk;
}

/* partition / argpartition (x, kth [, axis = -1]) */
static int partition_or_arg(lua_State *L, bool positions) {
  gl_array *x = gl_lua_check(L, 1);
  if (x->ndim == 0) luaL_argerror(L, 1, "a 0-d array has no axis to partition");
  int axis = x->ndim - 1;
  if (!lua_isnoneornil(L, 3)) {
    int64_t a = gl_lua_int(L, 3, "axis");
    gl_lua_check_status(L, gl_axis_norm(a, x->ndim, &axis), 3);
  }
  int64_t *kth = lua_newuserdatauv(L, KTH_MAX * sizeof *kth, 0);
  int nk = read_kth(L, 2, x->shape[axis], kth);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_partition(positions ? NULL : out, positions ? out : NULL, x, axis, kth, nk),
                       out, 0);
}

static int l_partition(lua_State *L) { return partition_or_arg(L, false); }
static int l_argpartition(lua_State *L) { return partition_or_arg(L, true); }

/* histcounts(x, edges | nbins [, {weights, uniform = false}]) */
static int l_histcounts(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  const gl_array *edges = NULL;
  int64_t nbins = 0;
  if (lua_isnumber(L, 2)) {
    nbins = gl_lua_int(L, 2, "nbins");
    if (nbins < 0) luaL_argerror(L, 2, "the bin count must be >= 0");
  } else {
    if (gl_lua_test(L, 2) == NULL) luaL_typeerror(L, 2, "gpu.array (edges) or integer (bins)");
    edges = gl_lua_check(L, 2);                  /* open, or an error */
  }
  gl_optval v[2];
  gl_lua_readopts(L, 3, &histcounts_decl, v);
  const gl_array *w = NULL;
  if (v[0].set) {
    lua_getfield(L, 3, "weights");
    w = gl_lua_test(L, -1);
    gl_lua_hold(L, -1);          /* the options table may drop it while the op runs */
    lua_pop(L, 1);
    if (w == NULL || w->storage == NULL) luaL_argerror(L, 3, "option 'weights': the array is closed");
  }
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_histcounts(out, x, w, edges, v[1].set && v[1].b, nbins), out, 0);
}

/* gpu._searchsorted(a, v, right): how many elements of the sorted 1-D a are < each
** element of the 1-D v (right: <=), NaN last; for lua/gpu/routines/bins.lua. */
static int l_searchsorted(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  gl_array *v = gl_lua_check(L, 2);
  bool right = lua_toboolean(L, 3);
  gl_array *out = gl_lua_push(L);
  return gl_lua_result(L, gl_op_searchsorted(out, a, v, right), out, 0);
}

static const gl_reg select_both[] = {
  { "partition", l_partition, 3 },
  { "argpartition", l_argpartition, 3 },
  { NULL, NULL, 0 }
};

static const gl_reg select_funcs[] = {
  { "histcounts", l_histcounts, 3 },
  { "_searchsorted", l_searchsorted, 3 },
  { NULL, NULL, 0 }
};

void gl_open_select(lua_State *L, int module, int methods) {
  gl_lua_setops(L, module, "", select_funcs);
  gl_lua_setboth(L, module, methods, select_both);
  gl_lua_declare(L, &histcounts_decl);
}
