/*
** ldist.c — gpu.distributed: torch.distributed's functions over src/dist (a world of one,
** or Open MPI opened at init). Ranks and roots are 1-based, as everything in Lua.
**
** The collectives are plain functions, not dispatched ops: they exchange bytes between
** processes and write in place, so no rule could differentiate them (torch's are not
** differentiable either), and a plain function cannot be recorded by mistake. DDP calls
** all_reduce on gradients, outside the tape.
**
** Arrays: contiguous cpu arrays are handed to the engine as they are; any other (a view
** with gaps, a cuda array) is staged through a contiguous cpu copy, copied back when the
** collective completes (cuda staging shows in gpu.stats()'s copies, and in
** gpu.distributed.stats()). With NCCL started at init (backend "auto" or "nccl" and a GPU
** as every rank's default device), arrays of that device go to NCCL instead, queued on
** its stream; gather and scatter (which NCCL lacks) stay on MPI, staged.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lgpu.h"
#include "../dist/dist.h"

#define GL_WORK "gpu.distributed.Work"

/* entering: the guard of the call guarded() is about to make (taken by that call) */
typedef struct gl_guard gl_guard;
static struct { gl_guard *entering; bool uncompared; uint64_t collectives, staged, staged_bytes; } D;

/* ---- the handle of an operation in flight -------------------------------------------- */

/* user value 1: a table of the arrays the operation uses (kept alive while it flies) and
** 'back', pairs {dst, tmp} to copy back at completion; 'mean': an array to divide by
** the world's size at completion; 'storages': their storages (light userdata), retained
** until the engine is done with them, so that closing an array while the operation flies
** frees nothing the engine still reads or writes (lhold.c). nccl_group: an async NCCL send
** or recv that may still wait in the open group of point-to-point calls (queued by the
** wait, is_completed or collection, before the storages are let go) */
typedef struct gl_work { gl_dist_req *req; const char *what; bool done, nccl_group; } gl_work;

static gl_work *check_work(lua_State *L, int idx) { return luaL_checkudata(L, idx, GL_WORK); }

static const gl_dist_info *world(lua_State *L) {
  static gl_dist_info info;
  if (!gl_dist_initialized()) luaL_error(L, "gpu.distributed is not initialized (call gpu.distributed.init() first)");
  gl_dist_init(0, &info);
  return &info;
}

/* Lets go of the storages the engine used (once: the list goes with it). */
static void let_go(lua_State *L, int work) {
  if (lua_getiuservalue(L, work, 1) != LUA_TTABLE) { lua_pop(L, 1); return; }
  if (lua_getfield(L, -1, "storages") == LUA_TTABLE) {
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TLIGHTUSERDATA; i++) {
      gl_storage_release(lua_touserdata(L, -1));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_pushnil(L);
    lua_setfield(L, -3, "storages");
  }
  lua_pop(L, 2);
}

/* Finishes a completed operation: copies staged results back, divides a mean. A
** destination closed while the operation flew is an error here, at completion. */
static void finish(lua_State *L, int work) {
  gl_work *w = check_work(L, work);
  w->done = true;
  let_go(L, work);
  lua_getiuservalue(L, work, 1);
  int t = lua_gettop(L);
  if (lua_getfield(L, t, "back") == LUA_TTABLE) {
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i += 2) {
      lua_rawgeti(L, -2, i + 1);
      gl_array *dst = gl_lua_test(L, -2), *tmp = gl_lua_test(L, -1);
      if (dst == NULL || dst->storage == NULL || tmp == NULL || tmp->storage == NULL)
        gl_lua_error(L, "%s: an array it writes was closed while it ran (array is closed)", w->what);
      gl_lua_check_status(L, gl_op_assign(dst, tmp), 0);
      lua_pop(L, 2);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, t, "mean") != LUA_TNIL) {
    gl_array *x = gl_lua_test(L, -1);
    if (x == NULL || x->storage == NULL)
      gl_lua_error(L, "%s: an array it writes was closed while it ran (array is closed)", w->what);
    gl_operand n = { NULL, gl_scalar_int(world(L)->size) };
    gl_lua_check_status(L, gl_op_binary_(x, GL_B_div, n), 0);
  }
  lua_settop(L, t - 1);
}

static int work_wait(lua_State *L) {
  gl_work *w = check_work(L, 1);
  if (w->nccl_group) {
    w->nccl_group = false;
    gl_lua_check_status(L, gl_dist_nccl_flush(), 0);
  }
  if (w->req) {
    gl_dist_req *r = w->req;
    w->req = NULL;
    gl_lua_check_status(L, gl_dist_wait(r, w->what), 0);
  }
  /* NCCL's operations have no request: queued on the stream, they are done in its order,
  ** and what is left is the copy back of a staged result (a view's) */
  if (!w->done) finish(L, 1);
  lua_pushboolean(L, 1);
  return 1;
}

static int work_is_completed(lua_State *L) {
  gl_work *w = check_work(L, 1);
  if (!w->req && !w->done) return work_wait(L);     /* NCCL's: done in the stream's order */
  if (w->req) {
    bool done = false;
    gl_lua_check_status(L, gl_dist_test(w->req, &done), 0);
    if (done) return work_wait(L);
  }
  lua_pushboolean(L, w->done);
  return 1;
}

/* An unwaited handle that is collected: wait for it (a buffer must not be freed under
** MPI), quietly; the failure, if any, surfaces in the next collective. */
static int work_gc(lua_State *L) {
  gl_work *w = check_work(L, 1);
  if (w->req) { gl_dist_req *r = w->req; w->req = NULL; (void)gl_dist_wait(r, w->what); }
  if (w->nccl_group) { w->nccl_group = false; (void)gl_dist_nccl_flush(); }
  let_go(L, 1);
  return 0;
}

static int work_tostring(lua_State *L) {
  gl_work *w = check_work(L, 1);
  lua_pushfstring(L, "gpu.distributed.Work(%s, %s)", w->what, w->req ? "in flight" : "completed");
  return 1;
}

/* ---- arguments ------------------------------------------------------------------------ */

typedef struct gl_call {
  const char *what;
  int work;       /* stack index of the work userdata */
  int keep;       /* its table of arrays */
} gl_call;

/* The work userdata and its table, made before anything starts (liolib's safe state). */
static void call_begin(lua_State *L, gl_call *c, const char *what) {
  c->what = what;
  gl_work *w = lua_newuserdatauv(L, sizeof *w, 1);
  memset(w, 0, sizeof *w);
  w->what = what;
  luaL_setmetatable(L, GL_WORK);
  c->work = lua_gettop(L);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, c->work, 1);
  c->keep = lua_gettop(L);
  D.collectives++;
}

/* Pushes the list the call's table keeps under name (made by the first use); returns its length. */
static lua_Integer kept_list(lua_State *L, gl_call *c, const char *name) {
  if (lua_getfield(L, c->keep, name) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, c->keep, name);
  }
  return (lua_Integer)lua_rawlen(L, -1);
}

static void keep(lua_State *L, gl_call *c, int idx) {
  lua_pushvalue(L, idx);
  lua_rawseti(L, c->keep, (lua_Integer)lua_rawlen(L, c->keep) + 1);
  gl_array *x = gl_lua_test(L, idx);
  if (x == NULL || x->storage == NULL || x->storage->lua_owned) return;   /* light: the userdata kept is enough */
  lua_Integer n = kept_list(L, c, "storages");
  lua_pushlightuserdata(L, x->storage);
  lua_rawseti(L, -2, n + 1);
  gl_storage_retain(x->storage);         /* after the table grew: an allocation error leaks nothing */
  lua_pop(L, 1);
}

/* Whether the collective on x goes through NCCL (x on the device NCCL was started on). */
static bool use_nccl(const gl_array *x) { return gl_dist_nccl_on(gl_array_device(x)); }

/* The bytes the engine reads or writes for the array at idx: its own when it is contiguous
** and where the engine works (cpu memory for MPI, the device's for NCCL), else a
** contiguous copy there (copied back at completion if 'write'). */
static void *buffer(lua_State *L, gl_call *c, int idx, bool write, bool nccl) {
  gl_array *x = gl_lua_check(L, idx);
  keep(L, c, idx);
  if (write) gl_lua_check_status(L, gl_array_writable(x, NULL), idx);
  gl_device where = nccl ? gl_array_device(x) : gl_cpu();
  if (gl_device_eq(gl_array_device(x), where) && gl_array_is_contiguous(x)) return gl_array_data(x);
  gl_array *tmp = gl_lua_alloc(L, x->dtype, x->ndim, x->shape, where);
  gl_lua_check_status(L, gl_op_assign(tmp, x), 0);
  D.staged++;
  D.staged_bytes += (uint64_t)tmp->size * gl_dtypes[x->dtype].size;
  int t = lua_gettop(L);
  keep(L, c, t);
  if (write) {
    lua_Integer n = kept_list(L, c, "back");
    lua_pushvalue(L, idx);
    lua_rawseti(L, -2, n + 1);
    lua_pushvalue(L, t);
    lua_rawseti(L, -2, n + 2);
    lua_pop(L, 1);
  }
  void *p = gl_array_data(tmp);
  lua_pop(L, 1);   /* tmp stays alive in the keep table */
  return p;
}

/* Starts (st, req) and either returns the handle (async) or waits and finishes. Returns
** the number of results pushed: the handle, or none. */
static int call_end(lua_State *L, gl_call *c, gl_status st, gl_dist_req *req, bool async) {
  gl_lua_check_status(L, st, 0);
  gl_work *w = check_work(L, c->work);
  w->req = req;
  if (async) { lua_pushvalue(L, c->work); return 1; }
  w->req = NULL;
  gl_lua_check_status(L, gl_dist_wait(req, c->what), 0);
  finish(L, c->work);
  return 0;
}

/* A root, source or destination rank at idx (1-based) -> 0-based, checked against the world. */
static int rank_arg(lua_State *L, const gl_dist_info *wd, int idx, const char *what, bool not_self) {
  lua_Integer r = gl_lua_int(L, idx, what);
  if (r < 1 || r > wd->size)
    return luaL_argerror(L, idx, lua_pushfstring(L, "%s %I out of range 1..%d", what, r, wd->size));
  if (not_self && r == wd->rank + 1)
    return luaL_argerror(L, idx, lua_pushfstring(L, "%s %I is this rank itself", what, r));
  return (int)r - 1;
}

static const char *const op_names[] = { "sum", "prod", "max", "min", "mean", NULL };

/* The reduction of option 'op': mean is a sum divided at completion (a float or complex
** dtype, whose division the device has); complex numbers have no max or min. */
static gl_dist_op op_arg(lua_State *L, gl_optval *v, const gl_array *x, int optidx, bool *mean) {
  *mean = false;
  if (!v->set) return GL_DIST_SUM;
  const char *name = gl_dtypes[x->dtype].name;
  bool cx = gl_dtype_is_complex((gl_dtype)x->dtype);
  if (v->choice == 4) {
    if (gl_dtypes[x->dtype].kind != GL_KIND_FLOAT && !cx)
      luaL_argerror(L, optidx, lua_pushfstring(L, "op 'mean' needs a float or complex dtype, got %s", name));
    const gl_backend *b;
    gl_lua_check_status(L, gl_backend_supporting(gl_array_device(x), GL_OP_BINARY, GL_B_div, (gl_dtype)x->dtype,
                                                 "mean", &b), optidx);
    *mean = true;
    return GL_DIST_SUM;
  }
  if (cx && (v->choice == GL_DIST_MAX || v->choice == GL_DIST_MIN))
    luaL_argerror(L, optidx, lua_pushfstring(L, "op '%s' is not defined for %s (complex numbers are not ordered)",
                                             op_names[v->choice], name));
  return (gl_dist_op)v->choice;
}

/* ---- every rank's call, compared before the data moves ------------------------------------ */

/* Ranks that disagree on a collective (which one, its dtype, shape, root or op, or whether
** it goes through NCCL) would leave a receiver half written, hand back local values, read
** garbage or hang. So every collective, once its arguments are checked and its buffers
** staged, and before anything is written, describes itself (gl_dist_call), and the ranks
** compare their descriptions (gl_dist_compare: one small all-reduce, always on); on a
** difference every rank raises the same fault, its arrays as they were.
**
** An error raised on one rank before that point (a bad root, a closed array, a scatter's
** parts) must reach the others too, or they would wait for that rank in the comparison. So
** each collective runs under lua_pcall: guarded() calls the running function again (so
** lauxlib's messages still name it), and an error its body raises before the comparison
** goes into the comparison as this rank's failure, which every other rank then raises. */
struct gl_guard { bool compared; };

/* The guard of this call when guarded() made it, else NULL: the caller then returns
** guarded(L, its kind), which calls it again with one. Lua code can run between the two (a
** call hook, a finalizer the call's stack growth runs) and make a collective call of its
** own: only a call whose caller is the same function (guarded's, through lua_pcall) takes
** the guard. */
static gl_guard *guard_take(lua_State *L) {
  static gl_guard unguarded;
  if (D.uncompared) return &unguarded;
  if (!D.entering) return NULL;
  lua_Debug ar;
  if (!lua_getstack(L, 1, &ar)) return NULL;
  lua_getinfo(L, "f", &ar);
  lua_getstack(L, 0, &ar);
  lua_getinfo(L, "f", &ar);
  bool again = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  if (!again) return NULL;
  gl_guard *g = D.entering;
  D.entering = NULL;
  return g;
}

static int guarded(lua_State *L, gl_dist_kind kind) {
  int n = lua_gettop(L);
  lua_Debug ar;
  if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "f", &ar))
    return luaL_error(L, "%s: no running function", gl_dist_kind_names[kind]);
  lua_insert(L, 1);
  gl_guard g = { false }, *outer = D.entering;      /* outer: a guard not yet taken */
  D.entering = &g;
  int rc = lua_pcall(L, n, LUA_MULTRET, 0);
  D.entering = outer;
  if (rc == LUA_OK) return lua_gettop(L);
  if (!g.compared && gl_dist_initialized()) {
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(an error object that is not a string)";
    gl_dist_call call;
    memset(&call, 0, sizeof call);
    call.kind = kind;
    gl_dist_verdict v;
    /* a timeout here (no other rank makes the call) names the error, which is then not raised */
    static char what[GL_DIST_MSG + 64];
    snprintf(what, sizeof what, "%s (after this rank's error: %s)", gl_dist_kind_names[kind], msg);
    (void)gl_dist_compare(&call, msg, what, &v);   /* this rank's own error wins */
  }
  /* the body's level 1 was this function, so its message has no place yet: the caller's */
  if (lua_type(L, -1) == LUA_TSTRING) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

/* Compares this rank's call with every rank's, and raises the same fault on every rank when
** they differ, naming the argument at xarg (the array), rootarg or optarg (0: none). */
static void compare(lua_State *L, gl_guard *g, const gl_dist_call *call, int xarg, int rootarg, int optarg) {
  gl_dist_verdict v;
  g->compared = true;
  if (D.uncompared) return;
  gl_lua_check_status(L, gl_dist_compare(call, NULL, gl_dist_kind_names[call->kind], &v), 0);
  if (v.rank < 0) return;
  const gl_dist_call *a = &v.theirs, *b = &v.first;
  int r = v.rank + 1;
  char sa[GL_SHAPE_BUFSZ], sb[GL_SHAPE_BUFSZ];
  if (v.failed) gl_lua_error(L, "rank %d raised in this call: %s", r, v.msg);
  for (int i = 0; i < 2; i++) {
    const gl_dist_call *c = i ? b : a;
    if (c->kind < 0 || c->kind > GL_DIST_BARRIER || c->dtype < 0 || c->dtype >= GL_NDTYPE || c->ndim < 0 ||
        c->ndim > GL_MAXDIMS || c->op < 0 || c->op > 4)
      gl_lua_error(L, "rank %d describes its call in a way this build does not know (another gpulua version?)",
                   i ? 1 : r);
  }
  if (a->kind != b->kind)
    gl_lua_error(L, "rank %d calls %s, rank 1 calls %s", r, gl_dist_kind_names[a->kind],
                 gl_dist_kind_names[b->kind]);
  if (a->nccl != b->nccl)
    luaL_argerror(L, xarg, lua_pushfstring(L, "rank %d's array goes through %s, rank 1's through %s (arrays on the "
                  "device NCCL was started on go through NCCL)", r, a->nccl ? "NCCL" : "MPI", b->nccl ? "NCCL" : "MPI"));
  if (a->dtype != b->dtype)
    luaL_argerror(L, xarg, lua_pushfstring(L, "rank %d has %s, rank 1 has %s", r, gl_dtypes[a->dtype].name,
                                           gl_dtypes[b->dtype].name));
  if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof a->shape) != 0)
    luaL_argerror(L, xarg, lua_pushfstring(L, "rank %d has shape %s, rank 1 has %s", r,
                                           gl_shape_str((int)a->ndim, a->shape, sa), gl_shape_str((int)b->ndim, b->shape, sb)));
  if (a->root != b->root)
    luaL_argerror(L, rootarg, lua_pushfstring(L, "rank %d has root %d, rank 1 has root %d", r, (int)a->root + 1,
                                              (int)b->root + 1));
  if (a->op != b->op)
    luaL_argerror(L, optarg, lua_pushfstring(L, "rank %d has op '%s', rank 1 has op '%s'", r, op_names[a->op],
                                             op_names[b->op]));
  if (a->async != b->async)
    luaL_argerror(L, optarg, lua_pushfstring(L, "rank %d's call is %s, rank 1's is %s (every rank must make the "
                  "same kind of call)", r, a->async ? "async" : "synchronous", b->async ? "async" : "synchronous"));
  gl_lua_error(L, "rank %d's call differs from rank 1's", r);
}

#define ASYNC_KEY { "async", GL_OPT_BOOL, 0, 0, 0, NULL }
#define OP_KEY { "op", GL_OPT_STRING, 0, 0, 0, "sum prod max min mean" }

/* ---- init and the world ------------------------------------------------------------------ */

static const gl_optkey init_keys[] = {
  { "backend", GL_OPT_STRING, 0, 0, 0, "auto mpi nccl" },
  { "timeout", GL_OPT_NUMBER, GL_RANGE_MIN | GL_RANGE_MIN_OPEN, 0, 0, NULL },
  { NULL }
};
static const gl_optdecl init_decl = { "distributed.init", "gpu.distributed.init(%s)", init_keys };

/* init([{backend = "auto" | "mpi" | "nccl", timeout = seconds}]) -> rank, world_size */
static int l_init(lua_State *L) {
  gl_optval v[2];
  gl_lua_readopts(L, 1, &init_decl, v);
  int backend = v[0].set ? v[0].choice : 0;           /* auto mpi nccl */
  bool first = !gl_dist_initialized();
  double timeout = 0;
  const char *env = getenv("GPULUA_DIST_TIMEOUT");
  if (v[1].set) timeout = v[1].n;
  else if (env && *env) {
    char *end;
    timeout = strtod(env, &end);
    if (*end || !(timeout > 0)) return luaL_error(L, "GPULUA_DIST_TIMEOUT: '%s' is not a number of seconds > 0", env);
  }
  gl_dist_info info;
  gl_lua_check_status(L, gl_dist_init(timeout, &info), 0);
  if (timeout > 0) gl_dist_set_timeout(timeout);
  /* each rank's default device: GPU number local_rank (of those there are) when the default
  ** is a GPU (GPULUA_DEVICE wins) */
  gl_device d = gl_lua_default_device(L);
  const char *denv = getenv("GPULUA_DEVICE");
  const gl_backend *b = gl_backend_get(d.type);
  if (d.type != GL_CPU && b->numbered && !(denv && *denv)) {
    int n = gl_backend_devices(b, NULL);
    if (n > 0) {
      gl_lctx *ctx = gl_lua_ctx(L);
      ctx->device.index = (uint8_t)(info.local_rank % n);
    }
  }
  /* NCCL for cuda arrays: decided once, by every rank together, at the first init */
  d = gl_lua_default_device(L);
  if (first && backend != 1) gl_lua_check_status(L, gl_dist_nccl_start(d, backend == 2), 1);
  if (backend == 2 && !gl_dist_nccl_on(d))
    return luaL_argerror(L, 1, "backend 'nccl' is not available (NCCL was not started by the first init: "
                         "its default device was not a GPU, or this build has no CUDA)");
  lua_pushinteger(L, info.rank + 1);
  lua_pushinteger(L, info.size);
  return 2;
}

static int l_is_initialized(lua_State *L) { lua_pushboolean(L, gl_dist_initialized()); return 1; }
static int l_rank(lua_State *L) { lua_pushinteger(L, world(L)->rank + 1); return 1; }
static int l_world_size(lua_State *L) { lua_pushinteger(L, world(L)->size); return 1; }
static int l_local_rank(lua_State *L) { lua_pushinteger(L, world(L)->local_rank + 1); return 1; }
static int l_local_world_size(lua_State *L) { lua_pushinteger(L, world(L)->local_size); return 1; }

/* get_backend() -> "mpi" (started by a launcher) or "local" (a world of 1), and the library */
static int l_get_backend(lua_State *L) {
  const gl_dist_info *wd = world(L);
  lua_pushstring(L, wd->engine);
  lua_pushstring(L, wd->library);
  return 2;
}

static int l_finalize(lua_State *L) {
  gl_lua_check_status(L, gl_dist_finalize(), 0);
  return 0;
}

/* stats() -> {collectives, staged, staged_bytes, library_loaded} */
static int l_stats(lua_State *L) {
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, (lua_Integer)D.collectives); lua_setfield(L, -2, "collectives");
  lua_pushboolean(L, gl_dist_watched()); lua_setfield(L, -2, "watchdog");
  lua_pushinteger(L, (lua_Integer)D.staged); lua_setfield(L, -2, "staged");
  lua_pushinteger(L, (lua_Integer)D.staged_bytes); lua_setfield(L, -2, "staged_bytes");
  lua_pushboolean(L, gl_dist_library_loaded()); lua_setfield(L, -2, "library_loaded");
  return 1;
}

/* ---- collectives --------------------------------------------------------------------------- */

static const gl_optkey reduce_keys[] = { OP_KEY, ASYNC_KEY, { NULL } };
static const gl_optkey async_keys[] = { ASYNC_KEY, { NULL } };
static const gl_optkey p2p_keys[] = { { "tag", GL_OPT_INT, GL_RANGE_MIN | GL_RANGE_MAX, 0, 32767, NULL }, ASYNC_KEY, { NULL } };
static const gl_optdecl all_reduce_decl = { "distributed.all_reduce", "gpu.distributed.all_reduce(gpu.zeros(2), %s)", reduce_keys };
static const gl_optdecl reduce_scatter_decl = { "distributed.reduce_scatter", "gpu.distributed.reduce_scatter(gpu.zeros(1, 2), %s)", reduce_keys };
static const gl_optdecl broadcast_decl = { "distributed.broadcast", "gpu.distributed.broadcast(gpu.zeros(2), 1, %s)", async_keys };
static const gl_optdecl all_gather_decl = { "distributed.all_gather", "gpu.distributed.all_gather(gpu.zeros(2), %s)", async_keys };
static const gl_optdecl gather_decl = { "distributed.gather", "gpu.distributed.gather(gpu.zeros(2), 1, %s)", async_keys };
static const gl_optdecl scatter_decl = { "distributed.scatter", "gpu.distributed.scatter(gpu.zeros(2), gpu.zeros(1, 2), 1, %s)", async_keys };
static const gl_optdecl send_decl = { "distributed.send", "gpu.distributed.send(gpu.zeros(2), 2, %s)", p2p_keys };
static const gl_optdecl recv_decl = { "distributed.recv", "gpu.distributed.recv(gpu.zeros(2), 2, %s)", p2p_keys };
static const gl_optdecl barrier_decl = { "distributed.barrier", "gpu.distributed.barrier(%s)", async_keys };
static const gl_optdecl *const dist_decls[] = {
  &init_decl, &all_reduce_decl, &reduce_scatter_decl, &broadcast_decl, &all_gather_decl, &gather_decl,
  &scatter_decl, &send_decl, &recv_decl, &barrier_decl, NULL
};

/* A new array on x's device of shape (lead, x.shape...) (lead < 0: x.shape less its first axis). */
static gl_array *new_like(lua_State *L, const gl_array *x, int64_t lead, int idx) {
  int64_t shape[GL_MAXDIMS];
  int nd = 0;
  if (lead >= 0) {
    if (x->ndim >= GL_MAXDIMS) luaL_argerror(L, idx, "array has the most axes already: no room for the ranks' axis");
    shape[nd++] = lead;
    for (int i = 0; i < x->ndim; i++) shape[nd++] = x->shape[i];
  } else {
    for (int i = 1; i < x->ndim; i++) shape[nd++] = x->shape[i];
  }
  return gl_lua_alloc(L, x->dtype, nd, shape, gl_array_device(x));
}

/* One call as the driver (collective()) goes through it. */
typedef struct gl_args {
  gl_array *x;                 /* the array at 1, whose dtype and shape the ranks compare (NULL: barrier) */
  const gl_dist_info *world;
  int root;                    /* the root, or send's and recv's other rank (0-based; 0: none) */
  int send, recv;              /* stack indices of the array it reads and of the one it writes (0: none;
                               ** the same: in place; MADE: the result it makes, until made) */
  int64_t count;               /* elements of one rank's part */
} gl_args;

#define MADE (-1)

/* What a collective is: its arguments, the arrays it reads and writes, its own checks. */
typedef struct gl_collective {
  const gl_optdecl *decl;
  int optarg;                  /* where its options table is */
  int rootarg;                 /* where its root (send, recv: the other rank) is; 0: none */
  const char *rootname;
  bool p2p;                    /* send, recv: between two ranks, so not compared (nor guarded for
                               ** it); the other rank is not this one; options {tag, async} */
  bool reduces;                /* options {op, async} */
  bool nccl;                   /* NCCL has it (gather and scatter stay on MPI, staged) */
  int send, recv;              /* gl_args' */
  bool drops_axis;             /* the result it makes is x less its first axis, else x with the
                               ** ranks' axis in front */
  void (*check)(lua_State *L, gl_args *a);   /* its own checks and choices, before anything is made */
} gl_collective;

/* reduce_scatter's x holds one part per rank along its first axis. */
static void one_part_per_rank(lua_State *L, gl_args *a) {
  const gl_array *x = a->x;
  if (x->ndim < 1 || x->shape[0] != a->world->size)
    luaL_argerror(L, 1, lua_pushfstring(L, "the first axis must hold one part per rank (%d), got shape %s",
                                        a->world->size, gl_shape_str(x->ndim, x->shape, (char[GL_SHAPE_BUFSZ]){0})));
  a->count = x->size / a->world->size;
}

/* gather's result is the root's alone. */
static void made_on_root(lua_State *L, gl_args *a) {
  (void)L;
  if (a->world->rank != a->root) a->recv = 0;
}

/* scatter's parts, at 2, are read on the root, which checks them against out (x). */
static void parts_on_root(lua_State *L, gl_args *a) {
  const gl_array *out = a->x;
  int size = a->world->size;
  if (a->world->rank != a->root) {
    if (!lua_isnoneornil(L, 2)) gl_lua_check(L, 2);      /* an array is accepted and ignored, as torch's scatter_list */
    a->send = 0;
    return;
  }
  gl_array *parts = gl_lua_check(L, 2);
  bool ok = parts->ndim == out->ndim + 1 && parts->shape[0] == size && parts->dtype == out->dtype;
  for (int i = 0; ok && i < out->ndim; i++) ok = parts->shape[i + 1] == out->shape[i];
  if (ok) return;
  if (out->ndim >= GL_MAXDIMS) luaL_argerror(L, 1, "array has the most axes already: no room for the ranks' axis");
  char sa[GL_SHAPE_BUFSZ], sb[GL_SHAPE_BUFSZ];
  int64_t want[GL_MAXDIMS];
  want[0] = size;
  for (int i = 0; i < out->ndim; i++) want[i + 1] = out->shape[i];
  luaL_argerror(L, 2, lua_pushfstring(L, "parts must be %s %s, got %s %s", gl_dtypes[out->dtype].name,
                                      gl_shape_str(out->ndim + 1, want, sa), gl_dtypes[parts->dtype].name,
                                      gl_shape_str(parts->ndim, parts->shape, sb)));
}

static const gl_collective collectives[GL_DIST_BARRIER + 1] = {
  /* all_reduce(x [, {op = "sum" | "mean" | "max" | "min" | "prod", async}]): in place;
  ** returns x, or the handle when async */
  [GL_DIST_ALLREDUCE] = { .decl = &all_reduce_decl, .optarg = 2, .reduces = true, .nccl = true, .send = 1, .recv = 1 },
  /* broadcast(x, root [, {async}]): x of rank root into every rank's x */
  [GL_DIST_BCAST] = { .decl = &broadcast_decl, .optarg = 3, .rootarg = 2, .rootname = "root", .nccl = true,
                      .send = 1, .recv = 1 },
  /* all_gather(x [, {async}]) -> (world, x.shape...) in rank order [, handle] */
  [GL_DIST_ALLGATHER] = { .decl = &all_gather_decl, .optarg = 2, .nccl = true, .send = 1, .recv = MADE },
  /* reduce_scatter(x [, {op, async}]): x is (world, ...); rank r gets the reduction of every
  ** rank's x[r] -> (...) [, handle] */
  [GL_DIST_REDUCE_SCATTER] = { .decl = &reduce_scatter_decl, .optarg = 2, .reduces = true, .nccl = true, .send = 1,
                               .recv = MADE, .drops_axis = true, .check = one_part_per_rank },
  /* gather(x, root [, {async}]) -> on root (world, x.shape...) in rank order, elsewhere nil */
  [GL_DIST_GATHER] = { .decl = &gather_decl, .optarg = 3, .rootarg = 2, .rootname = "root", .send = 1, .recv = MADE,
                       .check = made_on_root },
  /* scatter(out, parts, root [, {async}]): parts (world, out.shape...) on root (nil
  ** elsewhere); rank r receives parts[r] into out */
  [GL_DIST_SCATTER] = { .decl = &scatter_decl, .optarg = 4, .rootarg = 3, .rootname = "root", .send = 2, .recv = 1,
                        .check = parts_on_root },
  /* send(x, dst [, {tag, async}]), recv(x, src [, {tag, async}]) (recv fills x in place) */
  [GL_DIST_SEND] = { .decl = &send_decl, .optarg = 3, .rootarg = 2, .rootname = "dst", .p2p = true, .nccl = true,
                     .send = 1 },
  [GL_DIST_RECV] = { .decl = &recv_decl, .optarg = 3, .rootarg = 2, .rootname = "src", .p2p = true, .nccl = true,
                     .recv = 1 },
  /* barrier([{async}]) [-> handle] */
  [GL_DIST_BARRIER] = { .decl = &barrier_decl, .optarg = 1 },
};

/* Every collective: its arguments checked, its buffers staged, its call compared with every
** rank's (send and recv excepted), then started; returns what the collective returns. */
static int collective(lua_State *L, gl_dist_kind kind) {
  const gl_collective *d = &collectives[kind];
  gl_guard *g = NULL;
  if (!d->p2p && !(g = guard_take(L))) return guarded(L, kind);
  gl_args a = { .send = d->send, .recv = d->recv };
  if (a.send || a.recv) a.x = gl_lua_check(L, 1);      /* every collective but barrier has an array at 1 */
  gl_optval v[2];
  gl_lua_readopts(L, d->optarg, d->decl, v);
  a.world = world(L);
  if (d->rootarg) a.root = rank_arg(L, a.world, d->rootarg, d->rootname, d->p2p);
  a.count = a.x ? a.x->size : 0;
  if (d->check) d->check(L, &a);
  bool mean = false;
  gl_dist_op op = d->reduces ? op_arg(L, &v[0], a.x, d->optarg, &mean) : GL_DIST_SUM;
  const gl_optval *async_opt = &v[d->reduces || d->p2p];      /* op and tag come before async */
  bool async = async_opt->set && async_opt->b;
  gl_call c;
  call_begin(L, &c, gl_dist_kind_names[kind]);
  if (a.recv == MADE) {
    new_like(L, a.x, d->drops_axis ? -1 : a.world->size, 1);
    a.recv = lua_gettop(L);
  }
  bool nc = d->nccl && use_nccl(a.x) && (!d->reduces || gl_dist_nccl_reduces(a.x->dtype, mean ? 4 : (int)op));
  if (mean && !nc) { lua_pushvalue(L, a.recv); lua_setfield(L, c.keep, "mean"); }
  gl_dist_args run = { .kind = kind, .count = a.count, .dtype = a.x ? a.x->dtype : GL_FLOAT32,
                       .op = mean && nc ? 4 : (int)op, .peer = a.root, .tag = d->p2p && v[0].set ? (int)v[0].i : 0,
                       .nccl = nc, .dev = a.x ? gl_array_device(a.x) : gl_cpu() };
  if (a.send && a.send != a.recv) run.send = buffer(L, &c, a.send, false, nc);
  if (a.recv) run.recv = buffer(L, &c, a.recv, true, nc);
  if (!d->p2p) {
    gl_dist_call call;
    memset(&call, 0, sizeof call);
    call.kind = kind;
    call.nccl = nc;
    call.root = a.root;
    call.op = d->reduces && v[0].set ? v[0].choice : 0;
    call.async = async;
    if (a.x) {
      call.dtype = a.x->dtype;
      call.ndim = a.x->ndim;
      for (int i = 0; i < a.x->ndim; i++) call.shape[i] = a.x->shape[i];
    }
    compare(L, g, &call, a.x ? 1 : 0, d->rootarg, d->optarg);
  }
  if (a.recv == 1) gl_lua_check_status(L, gl_array_begin_write(a.x), 1);
  gl_dist_req *req = NULL;
  gl_status st = gl_dist_start(&run, async ? &req : NULL);
  if (nc && d->p2p) check_work(L, c.work)->nccl_group = st == GL_OK && async;
  int n = call_end(L, &c, st, req, async);
  if (d->recv == MADE) {                           /* the result [, the handle] */
    if (a.recv) lua_pushvalue(L, a.recv); else lua_pushnil(L);
    if (n) lua_pushvalue(L, -2);
    return 1 + n;
  }
  if (n || !a.x) return n;                         /* the handle; barrier's nothing */
  lua_settop(L, 1);                                /* in place: x */
  return 1;
}

static int l_all_reduce(lua_State *L) { return collective(L, GL_DIST_ALLREDUCE); }
static int l_broadcast(lua_State *L) { return collective(L, GL_DIST_BCAST); }
static int l_all_gather(lua_State *L) { return collective(L, GL_DIST_ALLGATHER); }
static int l_reduce_scatter(lua_State *L) { return collective(L, GL_DIST_REDUCE_SCATTER); }
static int l_gather(lua_State *L) { return collective(L, GL_DIST_GATHER); }
static int l_scatter(lua_State *L) { return collective(L, GL_DIST_SCATTER); }
static int l_send(lua_State *L) { return collective(L, GL_DIST_SEND); }
static int l_recv(lua_State *L) { return collective(L, GL_DIST_RECV); }
static int l_barrier(lua_State *L) { return collective(L, GL_DIST_BARRIER); }

/* ---- faults -------------------------------------------------------------------------------- */

/* The host's end of a failed script (gpulua.c; other hosts: the job's timeout). */
void gpulua_dist_fail(const char *msg) { gl_dist_fail(msg); }

/* _fail(msg): for the specs and for hosts that catch errors themselves: tells the other
** ranks and aborts the job (returns in a world of 1). */
static int l_fail(lua_State *L) {
  gl_dist_fail(luaL_checkstring(L, 1));
  return 0;
}

/* _compare(on) -> whether it was on: for bench/dist/check.lua, which measures what the
** comparison costs; every rank must make the same calls. */
static int l_compare(lua_State *L) {
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  lua_pushboolean(L, !D.uncompared);
  D.uncompared = !lua_toboolean(L, 1);
  return 1;
}

static const gl_reg dist_funcs[] = {
  { "init", l_init, 1 }, { "is_initialized", l_is_initialized, 0 }, { "finalize", l_finalize, 0 },
  { "rank", l_rank, 0 }, { "world_size", l_world_size, 0 }, { "local_rank", l_local_rank, 0 },
  { "local_world_size", l_local_world_size, 0 }, { "get_backend", l_get_backend, 0 }, { "stats", l_stats, 0 },
  { "all_reduce", l_all_reduce, 2 }, { "broadcast", l_broadcast, 3 }, { "all_gather", l_all_gather, 2 },
  { "reduce_scatter", l_reduce_scatter, 2 }, { "gather", l_gather, 3 }, { "scatter", l_scatter, 4 },
  { "send", l_send, 3 }, { "recv", l_recv, 3 }, { "barrier", l_barrier, 1 }, { "_fail", l_fail, 1 },
  { "_compare", l_compare, 1 },
  { NULL, NULL, 0 }
};

static const gl_reg work_methods[] = { { "wait", work_wait, 1 }, { "is_completed", work_is_completed, 1 }, { NULL, NULL, 0 } };
static const gl_reg work_meta[] = { { "__gc", work_gc, 1 }, { "__tostring", work_tostring, 1 }, { NULL, NULL, 0 } };

void gl_open_dist(lua_State *L, int module) {
  luaL_newmetatable(L, GL_WORK);
  gl_lua_setfuncs(L, -1, work_meta);
  lua_newtable(L);
  gl_lua_setfuncs_held(L, -1, work_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_newtable(L);
  gl_lua_setfuncs_held(L, lua_gettop(L), dist_funcs);   /* collectives read arrays: op levels */
  gl_lua_setloaded(L, "gpu.distributed");
  lua_setfield(L, module, "distributed");
  gl_lua_declare_all(L, dist_decls);
}
