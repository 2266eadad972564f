/*
** larray.c — arrays as Lua userdata: lifetime, properties, element access and views
** through x[i], x[{i, j}], x[{ {1, 3}, ":" }] and assignment through the same forms.
**
** Indices are 1-based, negatives count from the end, ranges {a, b, step} are inclusive
** (string.sub's convention); ":" keeps a whole axis. An index that selects one element
** of every axis reads as a Lua number (a complex scalar for a complex array); anything
** else is a view sharing storage.
*/
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lbody.h"

/* ---- userdata --------------------------------------------------------------------- */

#define GC_STEP_BYTES ((size_t)1 << 20)     /* debt paid in steps of at least this */

/* The context for a new array: the running function's upvalue when it is ours (*fast),
** else the registry's; pays the collector's debt first. */
static gl_lctx *push_ctx(lua_State *L, bool *fast) {
  gl_lctx *c = lua_touserdata(L, lua_upvalueindex(1));
  *fast = c && lua_rawlen(L, lua_upvalueindex(1)) == sizeof *c && c->magic == GL_CTX_MAGIC;
  if (!*fast) c = gl_lua_ctx(L);
  if (c && c->gc_debt >= GC_STEP_BYTES) gl_lua_pay_gc_debt(L, c);
  return c;
}

/* A new array userdata of 'size' bytes under the array metatable or the light one. While
** the dispatch records a tracked call (c->node_slots > 0), the first array the op makes
** takes the node's slots: user values for the rule and the arguments, and a tail of
** versions (lgrad.c, GL_UV_RULE; the result is almost always that array). */
static void *new_array_ud(lua_State *L, gl_lctx *c, bool fast, size_t size, bool light) {
  int k = c ? c->node_slots : 0;
  void *ud;
  if (k > 0) {
    size = (size + 7) & ~(size_t)7;
    ud = lua_newuserdatauv(L, size + GL_NODE_TAIL(k), GL_UV_ARG0 + k);
    lua_Integer *tail = (lua_Integer *)((char *)ud + size + GL_NODE_TAIL(k)) - 1;
    tail[0] = k;
    memcpy(&tail[-1], &c->node_op, sizeof c->node_op);
    c->node_slots = 0;
    c->node_ud = ud;
    c->node_tail = tail;
  } else {
    ud = lua_newuserdatauv(L, size, GL_ARRAY_UVALUES);
  }
  int uv = light ? GL_CTX_UV_LIGHTMETA : 1;
  if (fast) {
    lua_getiuservalue(L, lua_upvalueindex(1), uv);        /* fast: the context holds it */
  } else {
    GL_PUSH_CTX(L);
    lua_getiuservalue(L, -1, uv);
    lua_remove(L, -2);
  }
  lua_setmetatable(L, -2);
  return ud;
}

gl_array *gl_lua_push(lua_State *L) {
  bool fast;
  gl_lctx *c = push_ctx(L, &fast);
  gl_lua_set_current(L);
  gl_array *a = new_array_ud(L, c, fast, sizeof(gl_array), false);
  memset(a, 0, offsetof(gl_array, shape));   /* storage NULL: closed until filled */
  a->lua_ref = 0;
  return a;
}

gl_array *gl_lua_push_view(lua_State *L, const gl_array *v) {
  gl_array *r = gl_lua_push(L);
  *r = *v;
  gl_storage_retain(r->storage);
  return r;
}

/* ---- light arrays ---------------------------------------------------------------------
**
** A small cpu result (GL_LIGHT_MAX bytes at most) is one Lua allocation: the descriptor,
** the storage header and the bytes inside the userdata, under a metatable without __gc.
** Creating and collecting it then costs what any small userdata does: no finalizer to
** queue and call, no allocator block, no header malloc (a finalizer alone costs more than
** NumPy's whole a + b on 100 floats). Lua frees the bytes with the userdata, so the
** storage is lua_owned, and every descriptor of it (the array's and its views', copied from
** it) says so (lua_ref): releasing one never touches the storage, so a temporary view an op
** dropped may be finalised after the bytes are gone. Whatever still uses those bytes must
** keep the userdata alive: a view holds it as its anchor (user value GL_UV_ANCHOR), set by
** gl_lua_anchor_views after every op that retained such a storage. The C side never keeps
** an array past a call (the tape, loaders and async collectives hold Lua references).
*/

typedef struct gl_light {
  gl_array a;
  gl_storage s;
} gl_light;

/* The bytes start at the first 16-byte boundary past the header: Lua aligns a userdata's
** block to 8 bytes only (LUAI_MAXALIGN), and a complex128 element is 16-byte aligned (as
** cuDoubleComplex; the compiler loads it with aligned instructions). */
#define LIGHT_ALIGN 16
#define LIGHT_HEAD (sizeof(gl_light) + LIGHT_ALIGN - 1)      /* the header and the most padding */

static bool is_light_owner(const void *ud, const gl_array *a) {
  return a->storage == &((const gl_light *)ud)->s;
}

/* A new light array's userdata, its storage header made; the caller fills the descriptor
** (shape, strides, size, dtype; offset 0) and then calls light_open. */
static gl_light *push_light(lua_State *L, gl_lctx *c, size_t nbytes, gl_device dev) {
  if (c->gc_debt >= GC_STEP_BYTES) gl_lua_pay_gc_debt(L, c);
  gl_light *l = new_array_ud(L, c, true, LIGHT_HEAD + nbytes, true);
  l->s.refcount = 1;
  l->s.data = (void *)(((uintptr_t)l + sizeof(gl_light) + LIGHT_ALIGN - 1) & ~(uintptr_t)(LIGHT_ALIGN - 1));
  l->s.nbytes = nbytes;
  l->s.device = dev;
  l->s.inline_data = false;
  l->s.lua_owned = true;
  l->s.version = 0;
  l->s.writer = NULL;
  return l;
}

static gl_array *light_open(gl_light *l) {
  l->a.lua_ref = 1;
  l->a.storage = &l->s;
  return &l->a;
}

gl_array *gl_lua_push_result(lua_State *L, gl_lctx *c, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev) {
  gl_array d;
  gl_lua_check_status(L, gl_array_init(&d, dt, ndim, shape), 0);   /* within the limits: no overflow */
  size_t nbytes = (size_t)d.size * gl_dtypes[dt].size;
  if (dev.type != GL_CPU || nbytes > GL_LIGHT_MAX) return gl_lua_alloc(L, dt, ndim, shape, dev);
  gl_light *l = push_light(L, c, nbytes, dev);
  l->a = d;
  return light_open(l);
}

gl_array *gl_lua_push_planned(lua_State *L, gl_lctx *c, const gl_plan *p) {
  if (p->like == NULL) return gl_lua_push_result(L, c, p->dtype, p->ndim, p->shape, p->device);
  /* a flat plan: the result has an operand's shape, and a dtype no wider */
  size_t nbytes = (size_t)p->like->size * gl_dtypes[p->dtype].size;
  if (p->device.type != GL_CPU || nbytes > GL_LIGHT_MAX) return gl_lua_alloc(L, p->dtype, p->ndim, p->shape, p->device);
  gl_light *l = push_light(L, c, nbytes, p->device);
  gl_array_init_like(&l->a, p->dtype, p->like);
  return light_open(l);
}

/* The anchor for a view of the array at 'arg' (its own anchor, or itself when it holds
** the bytes), pushed; false (nothing pushed) when arg is not an array on storage s. */
static bool push_anchor_of(lua_State *L, const gl_lctx *c, int arg, const gl_storage *s) {
  const gl_array *b = gl_lua_test_in(L, c, arg);
  if (b == NULL || b->storage != s) return false;
  if (is_light_owner(lua_touserdata(L, arg), b)) { lua_pushvalue(L, arg); return true; }
  if (lua_getiuservalue(L, arg, GL_UV_ANCHOR) == LUA_TUSERDATA) return true;
  lua_pop(L, 1);
  return false;
}

static void anchor_one(lua_State *L, const gl_lctx *c, int nargs, int r) {
  gl_array *a = gl_lua_test_in(L, c, r);
  if (a == NULL || a->storage == NULL || !a->storage->lua_owned) return;
  void *ud = lua_touserdata(L, r);
  if (is_light_owner(ud, a)) return;
  if (lua_getiuservalue(L, r, GL_UV_ANCHOR) != LUA_TNIL) { lua_pop(L, 1); return; }
  lua_pop(L, 1);
  for (int i = 1; i <= nargs; i++) {
    if (lua_rawequal(L, i, r)) continue;
    if (push_anchor_of(L, c, i, a->storage)) { lua_setiuservalue(L, r, GL_UV_ANCHOR); return; }
  }
  /* no argument holds the bytes: drop the view now, while they still exist */
  gl_array_release(a);
  luaL_error(L, "internal error: a view of a small array lost its base (please report)");
}

void gl_lua_anchor_views(lua_State *L, int nargs, int first, int last) {
  const gl_lctx *c = gl_lua_ctx(L);
  if (nargs > first - 1) nargs = first - 1;     /* the slots below the results (an op may pop) */
  for (int r = first; r <= last; r++) {
    int t = lua_type(L, r);
    if (t == LUA_TUSERDATA) {
      anchor_one(L, c, nargs, r);
    } else if (t == LUA_TTABLE) {                       /* split, unbind: a list of views */
      lua_Integer n = (lua_Integer)lua_rawlen(L, r);
      for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, r, i) == LUA_TUSERDATA) anchor_one(L, c, nargs, lua_gettop(L));
        lua_pop(L, 1);
      }
    }
  }
}

/* The light arrays' metatable: the array metatable's fields but __gc, made once every
** part has added its metamethods (luaopen_gpu's end). */
void gl_lua_make_light_meta(lua_State *L, int meta) {
  meta = lua_absindex(L, meta);
  /* one per state, as the array metatable is (luaL_newmetatable's): a module opened again
  ** in the same state (a host's fresh require) takes the arrays of the first one */
  if (lua_getfield(L, LUA_REGISTRYINDEX, GPULUA_ARRAY ".light") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, GPULUA_ARRAY ".light");
  }
  lua_pushnil(L);
  while (lua_next(L, meta)) {
    if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "__gc") == 0) { lua_pop(L, 1); continue; }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  gl_lctx *c = gl_lua_ctx(L);
  c->meta_light = lua_topointer(L, -1);
  GL_PUSH_CTX(L);
  lua_insert(L, -2);
  lua_setiuservalue(L, -2, GL_CTX_UV_LIGHTMETA);
  lua_pop(L, 1);
}

gl_lctx *gl_lua_ctx(lua_State *L) {
  gl_lctx *c = lua_touserdata(L, lua_upvalueindex(1));
  if (c && lua_rawlen(L, lua_upvalueindex(1)) == sizeof *c && c->magic == GL_CTX_MAGIC) return c;
  GL_PUSH_CTX(L);
  c = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return c;
}

gl_array *gl_lua_test(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA) return NULL;
  gl_lctx *c = gl_lua_ctx(L);
  return c ? gl_lua_test_in(L, c, idx) : NULL;
}

gl_array *gl_lua_checkany(lua_State *L, int idx) {
  gl_array *a = gl_lua_test(L, idx);
  if (a == NULL) luaL_typeerror(L, idx, GPULUA_ARRAY);
  return a;
}

gl_array *gl_lua_check(lua_State *L, int idx) {
  gl_array *a = gl_lua_checkany(L, idx);
  if (a->storage == NULL) luaL_argerror(L, idx, "array is closed");
  return a;
}

/* __gc: an idempotent release (liolib's pattern). A collected array is unreachable, so no
** op in progress reads it (lhold.c): it goes at once. */
static int array_release(lua_State *L) {
  gl_array *a = gl_lua_checkany(L, 1);
  gl_array_release(a);
  return 0;
}

/* __close, and x:close(): frees now, or when the ops in progress end when Lua code inside
** one closes it (lhold.c); the array is unusable afterwards. */
static int array_close_tbc(lua_State *L) {
  gl_lua_checkany(L, 1);
  gl_lua_close(L, 1);
  return 0;
}

static int array_close(lua_State *L) {
  gl_lua_check(L, 1);
  if (gl_lua_closing(L, 1)) return luaL_argerror(L, 1, "array is closed");
  gl_lua_close(L, 1);
  return 0;
}

static int array_is_closed(lua_State *L) {
  gl_array *a = gl_lua_checkany(L, 1);
  lua_pushboolean(L, a->storage == NULL || gl_lua_closing(L, 1));
  return 1;
}

/* ---- elements -------------------------------------------------------------------------- */

void gl_lua_push_element(lua_State *L, const gl_array *a, int64_t offset) {
  gl_scalar s;
  gl_lua_check_status(L, gl_op_get(a, offset, &s), 0);
  switch (gl_dtypes[a->dtype].kind) {
    case GL_KIND_BOOL: lua_pushboolean(L, s.i != 0); break;
    case GL_KIND_FLOAT: lua_pushnumber(L, s.f); break;
    case GL_KIND_COMPLEX: gl_lua_push_complex(L, s.f, s.im); break;
    default: if (s.isint) lua_pushinteger(L, s.i); else lua_pushnumber(L, s.f); break;
  }
}

gl_scalar gl_lua_scalar(lua_State *L, int idx, int arg) {
  double re, im;
  switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN: return gl_scalar_bool(lua_toboolean(L, idx));
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) return gl_scalar_int(lua_tointeger(L, idx));
      return gl_scalar_float(lua_tonumber(L, idx));
    case LUA_TUSERDATA:
      if (gl_lua_tocomplex(L, idx, &re, &im)) return gl_scalar_complex(re, im);
      /* fall through */
    default:
      luaL_argerror(L, arg, lua_pushfstring(L, "number or boolean expected, got %s", luaL_typename(L, idx)));
      return gl_scalar_int(0);
  }
}

gl_scalar gl_lua_scalar_for(lua_State *L, int idx, int arg, gl_dtype t) {
  gl_scalar s = gl_lua_scalar(L, idx, arg);
  gl_lua_check_status(L, gl_scalar_check(t, s), arg);
  return s;
}

int64_t gl_lua_int(lua_State *L, int idx, const char *what) {
  return gl_lua_integer(L, idx, idx, what, "%s must be an integer, got %f", "%s must be an integer, got %s");
}

/* ---- index keys ------------------------------------------------------------------------- */

/* One 1-based index (negatives from the end) into 0..n-1. */
static int64_t norm_index(lua_State *L, int idx, int arg, int64_t n, int axis) {
  int64_t i = gl_lua_integer(L, idx, arg, "index", "%s %f is not an integer", "invalid %s of type %s");
  if (i == 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "index 0 is out of range for axis %d (indices are 1-based)", axis + 1));
  if (i > n || i < -n)
    luaL_argerror(L, arg, lua_pushfstring(L, "index %I is out of range for axis %d with size %I",
                                          (lua_Integer)i, axis + 1, (lua_Integer)n));
  return i > 0 ? i - 1 : i + n;
}

/* A range {a, b, step} (any part may be nil) applied to 'axis' of v. The range table is
** at the top of the stack. */
static void apply_range(lua_State *L, gl_array *v, int axis, int arg) {
  int t = lua_gettop(L);
  int64_t n = v->shape[axis], step = 1, a, b;
  if (lua_geti(L, t, 3) != LUA_TNIL) step = gl_lua_int(L, -1, "range step");
  if (step == 0) luaL_argerror(L, arg, "range step must not be zero");
  bool has_a = lua_geti(L, t, 1) != LUA_TNIL, has_b = lua_geti(L, t, 2) != LUA_TNIL;
  for (int k = 0; k < 2; k++) {
    int i = t + 2 + k;
    bool has = k == 0 ? has_a : has_b;
    if (!has) continue;
    int isnum;
    lua_Integer x = lua_tointegerx(L, i, &isnum);
    if (!isnum) luaL_argerror(L, arg, lua_pushfstring(L, "range bounds must be integers, got %s",
                                                      luaL_typename(L, i)));
    if (x == 0) luaL_argerror(L, arg, "range bound 0 is out of range (indices are 1-based)");
  }
  /* inclusive 1-based bounds to 0-based, clamped like string.sub */
  if (step > 0) {
    a = has_a ? lua_tointeger(L, t + 2) : 1;
    b = has_b ? lua_tointeger(L, t + 3) : n;
    if (a < 0) a += n + 1;
    if (b < 0) b += n + 1;
    if (a < 1) a = 1;
    if (b > n) b = n;
    int64_t count = b >= a ? (b - a) / step + 1 : 0;
    gl_view_slice(v, axis, count ? a - 1 : 0, step, count);
  } else {
    a = has_a ? lua_tointeger(L, t + 2) : n;
    b = has_b ? lua_tointeger(L, t + 3) : 1;
    if (a < 0) a += n + 1;
    if (b < 0) b += n + 1;
    if (a > n) a = n;
    if (b < 1) b = 1;
    uint64_t mag = 0 - (uint64_t)step;           /* |step|: -step overflows at math.mininteger */
    int64_t count = a >= b ? (int64_t)((uint64_t)(a - b) / mag) + 1 : 0;
    gl_view_slice(v, axis, count ? a - 1 : 0, step, count);
  }
  lua_settop(L, t);
}

/* Applies the key at 'k' to view v. Returns true when every axis was picked by an
** integer, so the result is one element. */
static bool apply_key(lua_State *L, gl_array *v, int k, int arg) {
  int ndim0 = v->ndim;
  if (lua_type(L, k) == LUA_TNUMBER) {
    if (v->ndim == 0) luaL_argerror(L, arg, "cannot index a 0-d array with a number (use item())");
    gl_view_select(v, 0, norm_index(L, k, arg, v->shape[0], 0));
    return ndim0 == 1;
  }
  if (lua_type(L, k) == LUA_TSTRING) {
    const char *s = lua_tostring(L, k);
    if (strcmp(s, ":") == 0) return false;
    luaL_argerror(L, arg, lua_pushfstring(L, "invalid index '%s' (use \":\" for a whole axis)", s));
  }
  if (!lua_istable(L, k))
    luaL_argerror(L, arg, lua_pushfstring(L, "invalid index of type %s", luaL_typename(L, k)));
  lua_Integer n = luaL_len(L, k);
  int axis = 0, picked = 0;
  luaL_checkstack(L, 8, "index");
  for (lua_Integer e = 1; e <= n; e++) {
    int ty = lua_geti(L, k, e);
    if (axis >= v->ndim)
      luaL_argerror(L, arg, lua_pushfstring(L, "too many indices for a %d-d array (%I given)",
                                            ndim0, (lua_Integer)n));
    if (ty == LUA_TNUMBER) {
      gl_view_select(v, axis, norm_index(L, -1, arg, v->shape[axis], axis + picked));
      picked++;
    } else if (ty == LUA_TSTRING && strcmp(lua_tostring(L, -1), ":") == 0) {
      axis++;
    } else if (ty == LUA_TTABLE) {
      apply_range(L, v, axis, arg);
      axis++;
    } else {
      luaL_argerror(L, arg, lua_pushfstring(L, "invalid index entry #%I of type %s",
                                            (lua_Integer)e, luaL_typename(L, -1)));
    }
    lua_pop(L, 1);
  }
  return picked == ndim0 && ndim0 > 0;
}

/* ---- properties ------------------------------------------------------------------------ */

static void push_shape(lua_State *L, const gl_array *a) {
  lua_createtable(L, a->ndim, 0);
  for (int i = 0; i < a->ndim; i++) {
    lua_pushinteger(L, a->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* x.nbytes = x.size * x.itemsize, what the elements would take contiguous (NumPy's
** meaning, views included). A broadcast view may pass int64 there (2^62 elements of
** int64): then the true number as a float, as NumPy gives it (a Python int). */
static void push_nbytes(lua_State *L, const gl_array *a) {
  int64_t n;
  if (gl_mul_overflow(a->size, (int64_t)gl_array_itemsize(a), &n))
    lua_pushnumber(L, (lua_Number)a->size * (lua_Number)gl_array_itemsize(a));
  else
    lua_pushinteger(L, n);
}

/* x.T, x.mT, x.H, x.mH: a view with the axes reversed (T) or the last two swapped (mT,
** and mH / H before their conjugate, which array_index_in adds for complex arrays). PyTorch's
** rules: mT and mH take a 0-d array or at least 2 axes, H a 0-d or a 2-D array. */
static void push_transposed(lua_State *L, const gl_array *a, const char *k) {
  bool last_two = k[0] == 'm' || k[0] == 'H';
  if (k[0] == 'H' && a->ndim != 0 && a->ndim != 2)
    luaL_error(L, "x.H is only for 0-d and 2-D arrays, got %d axes (x.mH swaps the last two of a batch)", a->ndim);
  if (last_two && a->ndim == 1)
    luaL_error(L, "x.%s needs a 0-d array or at least 2 axes (a batch of matrices), got 1 axis", k);
  gl_array *t = gl_lua_push(L);
  gl_array_view_of(t, a);
  int perm[GL_MAXDIMS];
  for (int i = 0; i < a->ndim; i++) perm[i] = last_two ? i : a->ndim - 1 - i;
  if (last_two && a->ndim >= 2) { perm[a->ndim - 2] = a->ndim - 1; perm[a->ndim - 1] = a->ndim - 2; }
  gl_view_permute(t, perm);
  if (a->storage->lua_owned) gl_lua_anchor_views(L, 1, lua_gettop(L), lua_gettop(L));
}

static bool is_transpose_key(const char *k) {
  return strcmp(k, "T") == 0 || strcmp(k, "mT") == 0 || strcmp(k, "H") == 0 || strcmp(k, "mH") == 0;
}

static bool push_property(lua_State *L, const gl_array *a, const char *k) {
  char buf[16];
  switch (k[0]) {
    case 's':
      if (strcmp(k, "shape") == 0) { push_shape(L, a); return true; }
      if (strcmp(k, "size") == 0) { lua_pushinteger(L, a->size); return true; }
      break;
    case 'n':
      if (strcmp(k, "ndim") == 0) { lua_pushinteger(L, a->ndim); return true; }
      if (strcmp(k, "nbytes") == 0) { push_nbytes(L, a); return true; }
      break;
    case 'd':
      if (strcmp(k, "dtype") == 0) { lua_pushstring(L, gl_dtypes[a->dtype].name); return true; }
      if (strcmp(k, "device") == 0) { lua_pushstring(L, gl_device_name(gl_array_device(a), buf)); return true; }
      break;
    case 'g':
      if (strcmp(k, "grad") == 0) { gl_lua_push_grad(L, 1); return true; }
      break;
    case 'i':
      if (strcmp(k, "itemsize") == 0) { lua_pushinteger(L, (lua_Integer)gl_array_itemsize(a)); return true; }
      if (strcmp(k, "imag") == 0) { gl_lua_push_part(L, 1, 1); return true; }
      break;
    case 'r':
      if (strcmp(k, "real") == 0) { gl_lua_push_part(L, 1, 0); return true; }
      break;
    case '_':       /* the storage's write counter (PyTorch's name): views share it */
      if (strcmp(k, "_version") == 0) { lua_pushinteger(L, (lua_Integer)a->storage->version); return true; }
      break;
    case 'T': case 'H': case 'm':
      if (is_transpose_key(k)) { push_transposed(L, a, k); return true; }
      break;
  }
  return false;
}

/* ---- __index / __newindex --------------------------------------------------------------- */

/* upvalue 2: the methods table */
static int array_index_in(lua_State *L) {
  gl_array *a = gl_lua_checkany(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING && strcmp(lua_tostring(L, 2), ":") != 0) {   /* x[":"]: a key */
    if (a->storage == NULL) return luaL_argerror(L, 1, "array is closed");
    const char *k = lua_tostring(L, 2);
    if (push_property(L, a, k)) {
      if (is_transpose_key(k)) {
        if (gl_lua_tracked_call(L, 1)) gl_lua_record_view(L, "getindex", 1, 2, lua_gettop(L));
        if (strchr(k, 'H') && gl_dtype_is_complex((gl_dtype)a->dtype)) {   /* x.H, x.mH: then the conjugate */
          lua_getfield(L, lua_upvalueindex(2), "conj");
          lua_insert(L, -2);
          lua_call(L, 1, 1);
        }
      }
      return 1;
    }
    lua_pushnil(L);
    return 1;
  }
  if (a->storage == NULL) return luaL_argerror(L, 1, "array is closed");
  if (gl_lua_test(L, 2)) {                               /* x[mask], x[idx] */
    gl_lua_index_array(L, a, 2);
  } else {
    gl_array v = *a;
    if (apply_key(L, &v, 2, 2)) {
      gl_lua_push_element(L, &v, 0);
      return 1;
    }
    gl_array *r = gl_lua_push_view(L, &v);
    if (r->storage->lua_owned) gl_lua_anchor_views(L, 1, lua_gettop(L), lua_gettop(L));
  }
  if (gl_lua_tracked_call(L, 1)) gl_lua_record_view(L, "getindex", 1, 2, lua_gettop(L));
  return 1;
}

/* x:method, x.property and x[i] of a vector read the array before anything that could run
** Lua code; any other x[key] (x.T included) runs as an op level (lhold.c): an allocation or
** a key table's metamethods may run Lua code in the middle. x.real and x.imag are the ops
** gpu.real and gpu.imag, levels of their own. */
static int array_index(lua_State *L) {
  int kt = lua_type(L, 2);
  if (kt == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNIL) {   /* a method */
      gl_lua_checkany(L, 1);
      return 1;
    }
    lua_pop(L, 1);
    /* a property reads the descriptor before it allocates anything; x.T (mT, H, mH) and
    ** x[":"] make a view, so they run as an op level like the other keys */
    const char *k = lua_tostring(L, 2);
    if (!is_transpose_key(k) && strcmp(k, ":") != 0) return array_index_in(L);
  } else if (kt == LUA_TNUMBER && lua_isinteger(L, 2)) {
    gl_array *a = gl_lua_checkany(L, 1);
    if (a->storage != NULL && a->ndim == 1) {
      int64_t i = norm_index(L, 2, 2, a->shape[0], 0);
      gl_lua_push_element(L, a, i * a->strides[0]);
      return 1;
    }
  }
  return gl_lua_run_held(L, lua_touserdata(L, lua_upvalueindex(1)), array_index_in);
}

static int array_newindex_in(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  bool part = false;                                  /* x.real = v, x.imag = v */
  if (lua_type(L, 2) == LUA_TSTRING && strcmp(lua_tostring(L, 2), ":") == 0) {
    /* x[":"] = v: falls through to the whole-axis key below */
  } else if (lua_type(L, 2) == LUA_TSTRING && strcmp(lua_tostring(L, 2), "grad") == 0) {
    gl_lua_set_grad(L, 1, 3, "grad");                 /* x.grad = g (or nil), as in PyTorch */
    return 0;
  } else if (lua_type(L, 2) == LUA_TSTRING && (strcmp(lua_tostring(L, 2), "real") == 0 ||
                                               strcmp(lua_tostring(L, 2), "imag") == 0)) {
    /* x.real = v, x.imag = v: writes into the parts, as NumPy's; a real array has no
    ** imaginary part to write (NumPy: TypeError) and is its own real part */
    bool imag = lua_tostring(L, 2)[0] == 'i';
    part = true;
    if (!gl_dtype_is_complex((gl_dtype)a->dtype) && imag)
      return luaL_error(L, "cannot assign x.imag: a %s array has no imaginary part", gl_dtypes[a->dtype].name);
    lua_pushliteral(L, ":");
    lua_replace(L, 2);
    if (gl_dtype_is_complex((gl_dtype)a->dtype)) {
      gl_lua_push_part(L, 1, imag);
      lua_replace(L, 1);
      a = gl_lua_check(L, 1);
    }
  } else if (lua_type(L, 2) == LUA_TSTRING) {
    return luaL_error(L, "cannot assign field '%s' of an array", lua_tostring(L, 2));
  }
  /* writing into an array on the tape, or a tracked value into one: recorded by the
  ** autograd engine, as an in-place op (a complex array's part: refused) */
  if (gl_lua_tracked_call(L, 1) || gl_lua_tracked_call(L, 3)) {
    if (part)
      return luaL_error(L, "assigning x.real or x.imag is not differentiable: the array or the value requires grad "
                        "(assign to a copy, or run it in gpu.no_grad)");
    return gl_lua_record_setindex(L);
  }
  a->storage->writer = "index assignment";
  /* refused here, where the fault is named as the array's (not the key's or the value's) */
  gl_lua_check_status(L, gl_array_writable(a, NULL), 0);
  if (gl_lua_test(L, 2)) { gl_lua_newindex_array(L, a, 2, 3); return 0; }
  gl_array v = *a;
  apply_key(L, &v, 2, 2);
  gl_array *src = gl_lua_test(L, 3);
  if (src) {
    gl_lua_check(L, 3);
    gl_lua_check_status(L, gl_op_assign(&v, src), 3);
  } else {
    gl_lua_check_status(L, gl_op_fill(&v, gl_lua_scalar_for(L, 3, 3, (gl_dtype)v.dtype)), 3);
  }
  return 0;
}

/* x[i] = number on a vector runs no Lua code while it writes; any other assignment runs as
** an op level (lhold.c). */
static int array_newindex(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  if (lua_isinteger(L, 2) && a->ndim == 1 && lua_type(L, 3) == LUA_TNUMBER && !gl_lua_ctx(L)->grad_live) {
    a->storage->writer = "index assignment";        /* the general path's steps, in its order */
    gl_lua_check_status(L, gl_array_writable(a, NULL), 0);
    gl_array v = *a;
    gl_view_select(&v, 0, norm_index(L, 2, 2, a->shape[0], 0));
    gl_lua_check_status(L, gl_op_fill(&v, gl_lua_scalar_for(L, 3, 3, (gl_dtype)v.dtype)), 3);
    return 0;
  }
  return gl_lua_run_held(L, gl_lua_ctx(L), array_newindex_in);
}

static int array_len(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  if (a->ndim == 0) return luaL_argerror(L, 1, "a 0-d array has no length");
  lua_pushinteger(L, a->shape[0]);
  return 1;
}

/* 0-d arrays compare with Lua numbers through < and <= (Lua does not call __eq for
** mixed types, so == stays identity). Lua runs a > b as b < a and a >= b as b <= a, so
** the hint names both methods of the metamethod. */
static double compare_operand(lua_State *L, int idx, bool le) {
  if (lua_type(L, idx) == LUA_TNUMBER) return lua_tonumber(L, idx);
  gl_array *a = gl_lua_check(L, idx);
  if (a->size != 1)
    luaL_argerror(L, idx, lua_pushfstring(L, "only a one-element array compares with %s; got %I elements (use %s)",
                                          le ? "<= or >=" : "< or >", (lua_Integer)a->size,
                                          le ? ":le() or :ge()" : ":lt() or :gt()"));
  gl_scalar s;
  gl_lua_check_status(L, gl_op_get(a, 0, &s), 0);
  if (s.iscomplex)
    luaL_argerror(L, idx, lua_pushfstring(L, "%s values have no ordering (compare x.real or gpu.abs(x))", gl_dtypes[a->dtype].name));
  return s.isint ? (double)s.i : s.f;
}

static int array_lt(lua_State *L) {
  lua_pushboolean(L, compare_operand(L, 1, false) < compare_operand(L, 2, false));
  return 1;
}

static int array_le(lua_State *L) {
  lua_pushboolean(L, compare_operand(L, 1, true) <= compare_operand(L, 2, true));
  return 1;
}

static const gl_reg array_meta[] = {
  { "__gc", array_release, 1 }, { "__close", array_close_tbc, 2 }, { "__newindex", array_newindex, 3 },
  { NULL, NULL, 0 },
};

/* the metamethods that read an array run as op levels (lhold.c) */
static const gl_reg array_meta_held[] = {
  { "__len", array_len, 2 }, { "__lt", array_lt, 2 }, { "__le", array_le, 2 },
  { "__tostring", gl_lua_tostring, 1 }, { NULL, NULL, 0 },
};

static const gl_reg array_methods[] = {
  { "close", array_close, 1 },
  { "is_closed", array_is_closed, 1 },
  { NULL, NULL, 0 }
};

void gl_open_array(lua_State *L, int module, int methods, int meta) {
  gl_lua_setfuncs(L, meta, array_meta);
  gl_lua_setfuncs_held(L, meta, array_meta_held);
  gl_lua_setfuncs(L, methods, array_methods);
  (void)module;
  /* __index needs the methods table as its second upvalue */
  GL_PUSH_CTX(L);
  lua_pushvalue(L, methods);
  lua_pushcclosure(L, array_index, 2);
  lua_setfield(L, meta, "__index");
}
