/*
** lkernel.c — the C half of gpu.ElementwiseKernel, gpu.ReductionKernel and gpu.fuse
** (lua/gpu/kernel.lua makes the source and binds the types): gpu._jit.compile and
** gpu._jit.launch, and the stubs gpu.ElementwiseKernel & co. that load the Lua part on
** first use (so `gpulua -e ''` compiles nothing of it).
**
**   _jit.compile(src) -> module, origin ("compiled" | "disk" | "memory"), ms, on_disk
**                     | nil, message (a compile error: the compiler's log, the numbered
**                       source; no compiler: "no C compiler: ...")
**   _jit.launch(module, name, roles, args [, reduced])
**     roles: one letter per argument: i/o an input/output array of the loop's shape
**     (elementwise) or, for a reduction, inputs of the full shape and outputs of the full
**     shape with extent 1 on the reduced axes; r/w a raw input/output (contiguous, a
**     pointer only); s a scalar ({value, dtype}). reduced: a string of '0'/'1' per axis of
**     the full shape, for a reduction.
*/
#include <stdlib.h>
#include <string.h>
#include "lgpu.h"
#include "../ops/jit.h"

/* nil and the failure's message (with the compiler's log and the numbered source) */
static int push_failure(lua_State *L, gl_jit_result *res) {
  lua_pushnil(L);
  if (res->log) {
    lua_pushfstring(L, "%s:\n%s", gl_errmsg(), res->log);
    free(res->log);
  } else lua_pushstring(L, gl_errmsg());
  return 2;
}

static int jit_compile(lua_State *L) {
  const char *src = luaL_checkstring(L, 1);
  gl_jit_module *m;
  gl_jit_result res;
  gl_status st = gl_jit_c_module(src, &m, &res);
  if (st != GL_OK) return push_failure(L, &res);
  lua_pushlightuserdata(L, m);
  static const char *const origin[] = { "compiled", "disk", "memory" };
  lua_pushstring(L, origin[res.origin]);
  lua_pushnumber(L, res.ms);
  lua_pushboolean(L, res.cached_on_disk);
  return 4;
}

static void *symbol(lua_State *L, gl_jit_module *m, const char *name, const char *suffix) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s%s", name, suffix);
  void *f = gl_jit_symbol(m, buf);
  if (!f) luaL_error(L, "gpu._jit.launch: the module has no '%s'", buf);
  return f;
}

/* Drops extent-1 loop axes and merges neighbours that every parameter walks as one
** (the flat index of each element stays the same: no axis moves). */
static void merge_axes(gl_jit_geom *g, int nargs) {
  int nd = 0;
  for (int d = 0; d < g->nd; d++) {
    if (g->shape[d] == 1) continue;
    if (nd > 0) {
      bool joins = true;
      for (int k = 0; k < nargs && joins; k++) joins = g->str[k][nd - 1] == g->str[k][d] * g->shape[d];
      if (joins) {
        g->shape[nd - 1] *= g->shape[d];
        for (int k = 0; k < nargs; k++) g->str[k][nd - 1] = g->str[k][d];
        continue;
      }
    }
    g->shape[nd] = g->shape[d];
    for (int k = 0; k < nargs; k++) g->str[k][nd] = g->str[k][d];
    nd++;
  }
  if (nd == 0) {
    g->shape[0] = 1;
    for (int k = 0; k < nargs; k++) g->str[k][0] = 0;
    nd = 1;
  }
  g->nd = nd;
}

/* What _jit.launch and _jit.cuda_launch read: the launch, its device, the scalars' values */
typedef struct launch_args {
  gl_jit_launch l;
  gl_device dev;
  uint64_t scalars[GL_JIT_MAXARGS];
} launch_args;

/* Reads (module, name, roles, args [, reduced]) at 1..5 into a: the pointers and the
** geometry; raises on a misuse (cuda: the arrays must be on a cuda device). Returns
** whether it is a reduction. */
static bool read_launch(lua_State *L, launch_args *a, bool cuda) {
  size_t nargs;
  const char *roles = luaL_checklstring(L, 3, &nargs);
  luaL_checktype(L, 4, LUA_TTABLE);
  const char *reduced = luaL_optstring(L, 5, NULL);
  if (nargs > GL_JIT_MAXARGS) luaL_error(L, "too many kernel parameters (at most %d)", GL_JIT_MAXARGS);

  gl_jit_launch *lp = &a->l;
  memset(a, 0, sizeof *a);
  lp->nargs = (int)nargs;
  const gl_array *shape_of = NULL;    /* the array that gives the loop's (or full) shape */
  a->dev = gl_cpu();
  bool have_dev = false;
  const gl_array *arrays[GL_JIT_MAXARGS] = { 0 };
  for (int k = 0; k < (int)nargs; k++) {
    lua_rawgeti(L, 4, k + 1);
    char r = roles[k];
    if (r == 's') {
      luaL_checktype(L, -1, LUA_TTABLE);
      lua_rawgeti(L, -1, 1);
      lua_rawgeti(L, -2, 2);
      gl_dtype dt = gl_lua_dtype(L, -1);
      gl_scalar v = gl_lua_scalar(L, -2, 0);
      a->scalars[k] = 0;
      gl_scalar_store(dt, &a->scalars[k], v);
      lp->ptr[k] = (char *)&a->scalars[k];
      lua_pop(L, 3);
      continue;
    }
    const gl_array *x = gl_lua_check(L, -1);
    /* a user kernel has no backward: a tracked input is refused, never cut from the graph */
    if (gl_lua_tracked_call(L, lua_gettop(L)))
      luaL_error(L, "the kernel is not differentiable (an input requires grad; run it in gpu.no_grad or detach the input)");
    gl_lua_hold(L, -1);                       /* args may drop it while the call runs (lhold.c) */
    lua_pop(L, 1);
    arrays[k] = x;
    if (have_dev && !gl_device_eq(a->dev, gl_array_device(x))) {
      char d1[16], d2[16];
      luaL_error(L, "arrays on %s and %s (use :to() to move one)", gl_device_name(a->dev, d1),
                 gl_device_name(gl_array_device(x), d2));
    }
    a->dev = gl_array_device(x);
    have_dev = true;
    lp->ptr[k] = gl_array_data(x);
    if ((r == 'i' || r == 'o') && (shape_of == NULL || (reduced && r == 'i'))) shape_of = x;
    if ((r == 'r' || r == 'w') && !gl_array_is_contiguous(x))
      luaL_error(L, "gpu._jit.launch: raw parameter %d is not contiguous", k + 1);
    if (r == 'o' || r == 'w') gl_lua_check_status(L, gl_array_writable(x, "an output"), 0);
  }
  if (!shape_of) luaL_error(L, "gpu._jit.launch: no array gives the loop's shape");
  if (cuda && a->dev.type == GL_CPU) luaL_error(L, "gpu._jit.cuda_launch: the arrays are on the cpu");

  gl_jit_geom *g = &lp->geom;
  int nd = shape_of->ndim;
  if (reduced && (int)strlen(reduced) != nd) luaL_error(L, "gpu._jit.launch: bad reduced axes");
  g->size = 1;
  for (int d = 0; d < nd; d++) {
    bool red = reduced && reduced[d] == '1';
    int at = red ? g->nr++ : g->nd++;
    (red ? g->rshape : g->shape)[at] = shape_of->shape[d];
    if (!red) g->size *= shape_of->shape[d];
    for (int k = 0; k < (int)nargs; k++) {
      const gl_array *x = arrays[k];
      int64_t st = 0;
      if (x && (roles[k] == 'i' || roles[k] == 'o')) {
        if (x->ndim != nd || (x->shape[d] != shape_of->shape[d] && !(red && x->shape[d] == 1 && roles[k] == 'o')))
          luaL_error(L, "gpu._jit.launch: parameter %d has the wrong shape", k + 1);
        st = x->shape[d] == 1 ? 0 : x->strides[d];
      }
      (red ? g->rstr : g->str)[k][at] = st;
    }
  }
  if (!reduced) {
    merge_axes(g, (int)nargs);
    lp->contiguous = true;
    for (int k = 0; k < (int)nargs; k++)
      if (roles[k] == 'i' || roles[k] == 'o')
        lp->contiguous = lp->contiguous && g->nd == 1 && g->str[k][0] == 1;
  } else {
    if (g->nd == 0) { g->nd = 1; g->shape[0] = 1; }
    if (g->nr == 0) { g->nr = 1; g->rshape[0] = 1; }
  }
  for (int k = 0; k < (int)nargs; k++)
    if (roles[k] == 'o' || roles[k] == 'w') gl_lua_check_status(L, gl_array_begin_write(arrays[k]), 0);
  return reduced != NULL;
}

static int jit_launch(lua_State *L) {
  luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
  gl_jit_module *m = lua_touserdata(L, 1);
  const char *name = luaL_checkstring(L, 2);
  launch_args a;
  gl_jit_launch *l = &a.l;
  if (!read_launch(L, &a, false)) {
    l->contig = (gl_jit_contig_fn)symbol(L, m, name, "_contig");
    l->strided = (gl_jit_strided_fn)symbol(L, m, name, "_strided");
  } else {
    l->init = (gl_jit_init_fn)symbol(L, m, name, "_init");
    l->part = (gl_jit_part_fn)symbol(L, m, name, "_part");
    l->post = (gl_jit_post_fn)symbol(L, m, name, "_post");
  }
  gl_lua_check_status(L, gl_op_jit_run(a.dev, l), 0);
  return 0;
}

/* _jit.nvrtc_version() -> "major.minor" | nil, why (NVRTC cannot be loaded, no CUDA) */
static int jit_nvrtc_version(lua_State *L) {
  int major, minor;
  if (gl_jit_nvrtc_version(&major, &minor) != GL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, gl_errmsg());
    return 2;
  }
  lua_pushfstring(L, "%d.%d", major, minor);
  return 1;
}

/* _jit.cuda_compile(src, target [, raw]) -> module, origin, ms, on_disk, bytes, key, ptx
**                                        | nil, message
** target: "sm_XY" (compile only: works without a GPU) or a device ("cuda:0": its own
** architecture). raw: true for RawKernel's source (no prelude). */
static int jit_cuda_compile(lua_State *L) {
  const char *src = luaL_checkstring(L, 1);
  const char *target = luaL_checkstring(L, 2);
  bool raw = lua_toboolean(L, 3);
  int arch = 0;
  if (strncmp(target, "sm_", 3) == 0) {
    char *end;
    long v = strtol(target + 3, &end, 10);
    if (*end != 0 || v < 10 || v > 10000) return luaL_error(L, "gpu._jit.cuda_compile: bad architecture '%s'", target);
    arch = (int)v;
  } else {
    gl_device dev = gl_lua_device(L, 2);
    gl_lua_check_status(L, gl_jit_cuda_arch(dev, &arch), 0);
  }
  gl_jit_cuda_module *m;
  gl_jit_result res;
  gl_status st = gl_jit_cuda_module_get(src, !raw, arch, &m, &res);
  if (st != GL_OK) return push_failure(L, &res);
  bool ptx;
  const char *key;
  size_t bytes = gl_jit_cuda_image(m, &ptx, &key);
  lua_pushlightuserdata(L, m);
  static const char *const origin[] = { "compiled", "disk", "memory" };
  lua_pushstring(L, origin[res.origin]);
  lua_pushnumber(L, res.ms);
  lua_pushboolean(L, res.cached_on_disk);
  lua_pushinteger(L, (lua_Integer)bytes);
  lua_pushstring(L, key);
  lua_pushboolean(L, ptx);
  return 7;
}

/* The threads of a block of the generated CUDA kernels (a power of two: the reductions
** halve it; kernel.lua's reduction source sizes its shared array with it). */
#define CUDA_BLOCK 256
#define CUDA_MAX_GRID (1u << 20)    /* grid-stride loops cover the rest */

/* _jit.cuda_launch(module, name, roles, args [, reduced]): as _jit.launch, with a module
** of _jit.cuda_compile. Elementwise: name_contig(n, params...) when every array is
** contiguous, else name_strided(geom, params...); reduction: name_reduce(geom, params...),
** one block per output. Arrays are passed as device pointers, scalars by value. */
static int jit_cuda_launch(lua_State *L) {
  luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
  gl_jit_cuda_module *m = lua_touserdata(L, 1);
  const char *name = luaL_checkstring(L, 2);
  launch_args a;
  bool reduction = read_launch(L, &a, true);
  gl_jit_launch *l = &a.l;
  const char *roles = lua_tostring(L, 3);
  void *ptrs[GL_JIT_MAXARGS];
  void *args[GL_JIT_MAXARGS + 1];
  int64_t n = l->geom.size;
  args[0] = reduction || !l->contiguous ? (void *)&l->geom : (void *)&n;
  for (int k = 0; k < l->nargs; k++) {
    if (roles[k] == 's') args[k + 1] = l->ptr[k];
    else {
      ptrs[k] = l->ptr[k];
      args[k + 1] = &ptrs[k];
    }
  }
  if (n == 0) return 0;
  char fn[256];
  snprintf(fn, sizeof fn, "%s%s", name, reduction ? "_reduce" : l->contiguous ? "_contig" : "_strided");
  int64_t blocks = reduction ? n : (n + CUDA_BLOCK - 1) / CUDA_BLOCK;
  unsigned grid[3] = { blocks > (int64_t)CUDA_MAX_GRID ? CUDA_MAX_GRID : (unsigned)blocks, 1, 1 };
  unsigned block[3] = { CUDA_BLOCK, 1, 1 };
  gl_lua_check_status(L, gl_jit_cuda_launch(a.dev, m, fn, grid, block, 0, args), 0);
  return 0;
}

/* Up to three positive extents from the table at idx ({x [, y [, z]]}), the rest 1. */
static void read_dim3(lua_State *L, int idx, const char *what, unsigned *out) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = luaL_len(L, idx);
  if (n < 1 || n > 3) luaL_error(L, "%s: 1 to 3 extents expected, got %d", what, (int)n);
  for (int d = 0; d < 3; d++) {
    out[d] = 1;
    if (d < n) {
      lua_rawgeti(L, idx, d + 1);
      int isint;
      lua_Integer v = lua_tointegerx(L, -1, &isint);
      if (!isint || v < 1 || v > 0x7fffffff) luaL_error(L, "%s: extent %d must be an integer in 1..2^31-1", what, d + 1);
      out[d] = (unsigned)v;
      lua_pop(L, 1);
    }
  }
}

/* _jit.raw(code, name, grid, block, args [, shared_mem]): args hold arrays (their device
** pointers) and {value, dtype} scalars. */
static int jit_raw(lua_State *L) {
  gl_raw_launch l;
  memset(&l, 0, sizeof l);
  l.source = luaL_checkstring(L, 1);
  l.name = luaL_checkstring(L, 2);
  read_dim3(L, 3, "grid", l.grid);
  read_dim3(L, 4, "block", l.block);
  luaL_checktype(L, 5, LUA_TTABLE);
  lua_Integer shmem = luaL_optinteger(L, 6, 0);
  if (shmem < 0 || shmem > 0x7fffffff) return luaL_error(L, "shared_mem must be in 0..2^31-1");
  l.shared_mem = (unsigned)shmem;
  lua_Integer n = luaL_len(L, 5);
  if (n > GL_JIT_MAXARGS) return luaL_error(L, "too many kernel arguments (at most %d)", GL_JIT_MAXARGS);
  l.nargs = (int)n;
  void *ptrs[GL_JIT_MAXARGS];
  uint64_t scalars[GL_JIT_MAXARGS];
  gl_device dev = gl_cpu();
  bool have_dev = false;
  for (int k = 0; k < l.nargs; k++) {
    lua_rawgeti(L, 5, k + 1);
    gl_array *a = gl_lua_test(L, -1);
    if (a) {
      a = gl_lua_check(L, -1);
      if (gl_lua_tracked_call(L, lua_gettop(L)))
        return luaL_error(L, "the kernel is not differentiable (an input requires grad; run it in gpu.no_grad or detach the input)");
      if (have_dev && !gl_device_eq(dev, gl_array_device(a))) return luaL_error(L, "argument %d is on another device", k + 1);
      dev = gl_array_device(a);
      have_dev = true;
      gl_lua_hold(L, -1);
      ptrs[k] = gl_array_data(a);
      l.args[k] = &ptrs[k];
    } else {
      luaL_checktype(L, -1, LUA_TTABLE);
      lua_rawgeti(L, -1, 1);
      lua_rawgeti(L, -2, 2);
      gl_dtype dt = gl_lua_dtype(L, -1);
      scalars[k] = 0;
      gl_scalar_store(dt, &scalars[k], gl_lua_scalar(L, -2, 0));
      l.args[k] = &scalars[k];
      lua_pop(L, 2);
    }
    lua_pop(L, 1);
  }
  if (!have_dev) dev = gl_lua_default_device(L);
  gl_status st = gl_op_raw_launch(dev, &l);
  if (st != GL_OK && l.log) {
    lua_pushfstring(L, "%s:\n%s", gl_errmsg(), l.log);
    free(l.log);
    return lua_error(L);
  }
  gl_lua_check_status(L, st, 0);
  return 0;
}

void gl_open_kernel(lua_State *L, int module) {
  static const char *const names[] = { "ElementwiseKernel", "ReductionKernel", "RawKernel", "RawModule", "fuse", NULL };
  for (int i = 0; names[i]; i++) {          /* until gpu.kernel is loaded: stubs that load it */
    gl_lua_push_part_stub(L, "gpu.kernel", names[i]);
    lua_setfield(L, module, names[i]);
  }
  static const gl_reg jit[] = { { "compile", jit_compile, 1 }, { "launch", jit_launch, 5 }, { "raw", jit_raw, 6 },
                                  { "cuda_compile", jit_cuda_compile, 3 }, { "cuda_launch", jit_cuda_launch, 5 },
                                  { "nvrtc_version", jit_nvrtc_version, 0 }, { NULL, NULL, 0 } };
  lua_newtable(L);
  int t = lua_gettop(L);
  gl_lua_setfuncs_held(L, t, jit);           /* they read arrays: op levels (lhold.c) */
  /* _jit.unary / _jit.binary: op name -> kind (elem_ops.h), what gpu.fuse can generate */
  lua_newtable(L);
#define GL_X(name, kind, ...) lua_pushliteral(L, #kind); lua_setfield(L, -2, #name);
  GL_UNARY_OPS(GL_X)
  lua_setfield(L, t, "unary");
  lua_newtable(L);
  GL_BINARY_OPS(GL_X)
#undef GL_X
  lua_setfield(L, t, "binary");
  lua_pushinteger(L, GL_JIT_MAXARGS);      /* a kernel's parameters, arrays and scalars together */
  lua_setfield(L, t, "max_args");
  lua_setfield(L, module, "_jit");
}
