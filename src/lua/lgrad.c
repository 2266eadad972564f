/*
** lgrad.c — autograd in the dispatch: every op of the binding is registered through
** gl_lua_pushop, which wraps it in one C closure, dispatch(). When an input of a call is
** tracked (its tape node sits in the array's user value) and grad mode is on for the
** running coroutine, dispatch looks the op up in the rules table that gpu.autograd
** registered (lua/gpu/autograd/rules.lua):
**   - a rule: the op runs, and its node becomes the result's user value: a table with
**     an array part only (two allocations, no hashing), { rule, n, version of the result,
**     the n arguments' storage versions, the n arguments } (GL_NODE_* below; a rule with a
**     'record' function places nodes itself: split);
**   - false: not differentiable by nature (comparisons, argmax, floor...): the op runs
**     and its results are untracked, as PyTorch's are;
**   - no entry: "<op> is not differentiable" is raised before the op runs, so a new op
**     can never silently drop a gradient.
** An in-place op (a name ending in '_') goes to the engine's inplace instead, which runs
** it and records it as PyTorch does (the op's own rule, or its out-of-place form's).
** The op itself is called from dispatch's own frame (not through lua_call), so argument
** errors keep lauxlib's names and positions: the arguments the node needs are kept in a
** stash keyed by the address of a local variable while the op runs.
**
** Untracked calls cost one indirect call and a flag test: nothing is looked up until an
** array has required grad. Under gpu.autocast, ops flagged GL_OP_AUTOCAST (matmul, dot,
** fused.linear, dnn.conv2d) cast their float32/float64 operands to the half dtype
** through astype (recorded like any op), run, and cast the result back to float32.
**
** Grad mode and the autocast dtype are per coroutine (PyTorch keeps them per thread): a
** coroutine that never set them follows the main thread, and one abandoned inside
** no_grad or autocast takes its state with it instead of leaking it.
*/
#include <limits.h>
#include <string.h>
#include "lgpu.h"

static const char modes_key = 'm', rules_key = 'r', engine_key = 'e', astype_key = 'a', module_key = 'g';

enum { UPVALUE_ENTRY = GL_OP_UPVALUES + 1, UPVALUE_NAME = GL_OP_UPVALUES + 2 };

typedef struct gl_opentry {
  lua_CFunction fn;
  unsigned flags;
  int nargs;             /* the most arguments it takes (INT_MAX: any number) */
  const char *name;      /* the rules key (upvalue UPVALUE_NAME keeps the string alive) */
  unsigned rule_gen;     /* the rules' generation (ctx->rules_gen) in which this op had a rule */
  gl_lctx *ctx;          /* the context (also upvalue 1: this saves the dispatch a look-up) */
} gl_opentry;

/* ---- per-coroutine modes ------------------------------------------------------------------ */

/* Bit 0: grad disabled; bits 1..: the autocast dtype + 1 (0: no autocast). */
#define MODE_NOGRAD 1
#define MODE_CAST(m) (((m) >> 1) - 1)

static int thread_mode(lua_State *L, gl_lctx *ctx) {
  if (L == ctx->main_thread) return ctx->main_mode;
  if (lua_pushthread(L)) { lua_pop(L, 1); ctx->main_thread = L; return ctx->main_mode; }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &modes_key);
  lua_insert(L, -2);
  int m = lua_rawget(L, -2) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : ctx->main_mode;
  lua_pop(L, 2);
  return m;
}

static void set_thread_mode(lua_State *L, gl_lctx *ctx, int m) {
  if (lua_pushthread(L)) { lua_pop(L, 1); ctx->main_mode = m; return; }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &modes_key);
  lua_insert(L, -2);
  lua_pushinteger(L, m);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

bool gl_lua_grad_enabled(lua_State *L) { return !(thread_mode(L, gl_lua_ctx(L)) & MODE_NOGRAD); }

int gl_lua_autocast_dtype(lua_State *L) {
  gl_lctx *ctx = gl_lua_ctx(L);
  return ctx->autocast_live ? MODE_CAST(thread_mode(L, ctx)) : -1;
}

/* ---- tracked arrays ------------------------------------------------------------------------ */

/* A tape node is a table (leaves, the nodes Lua makes) or a userdata (the dispatch's). */
static bool is_node_type(int t) { return t == LUA_TTABLE || t == LUA_TUSERDATA; }

/* Only arrays hold a table as user value 1 (a userdata of another library that did would
** take the slow path, and then fail the op's own type check). */
static bool is_tracked(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA) return false;
  int k = lua_getiuservalue(L, idx, GL_UV_NODE);
  bool t = is_node_type(k) || (k == LUA_TBOOLEAN && lua_toboolean(L, -1));   /* a node, or one inline */
  lua_pop(L, 1);
  return t;
}

static bool any_tracked(lua_State *L, int nargs, unsigned flags) {
  for (int i = 1; i <= nargs; i++) {
    if (is_tracked(L, i)) return true;
    if ((flags & GL_OP_LIST) && i == 1 && lua_type(L, 1) == LUA_TTABLE) {
      lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
      for (lua_Integer k = 1; k <= n; k++) {
        lua_rawgeti(L, 1, k);
        bool t = is_tracked(L, -1);
        lua_pop(L, 1);
        if (t) return true;
      }
    }
  }
  return false;
}

/* ---- autocast ------------------------------------------------------------------------------- */

/* Replaces slot idx by astype(value, dtype name) through the dispatched astype. */
static void cast_slot(lua_State *L, int idx, const char *dtype) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &astype_key);
  lua_pushvalue(L, idx);
  lua_pushstring(L, dtype);
  lua_call(L, 2, 1);
  lua_replace(L, idx);
}

static bool is_wide(lua_State *L, int idx) {
  gl_array *a = lua_type(L, idx) == LUA_TUSERDATA ? gl_lua_test(L, idx) : NULL;
  return a && a->storage && (a->dtype == GL_FLOAT32 || a->dtype == GL_FLOAT64);
}

/* Casts the float32/float64 array arguments to the autocast dtype; true if any was. */
static bool autocast_args(lua_State *L, int nargs, int dt) {
  bool any = false;
  for (int i = 1; i <= nargs; i++)
    if (is_wide(L, i)) { cast_slot(L, i, gl_dtypes[dt].name); any = true; }
  return any;
}

static void autocast_results(lua_State *L, int nres, int dt) {
  int top = lua_gettop(L);
  for (int i = top - nres + 1; i <= top; i++) {
    gl_array *a = lua_type(L, i) == LUA_TUSERDATA ? gl_lua_test(L, i) : NULL;
    if (a && a->storage && a->dtype == dt) cast_slot(L, i, "float32");
  }
}

/* ---- recording ------------------------------------------------------------------------------ */

/* The layout of an op's node, shared with lua/gpu/autograd.lua: node[1] the rule, node[2]
** the argument count n, node[3] the version of the result's storage, node[3 + i] the
** version of argument i's (0 for a non-array), node[3 + n + i] argument i; string keys
** (extra, grad, retain, hooks, freed) are the engine's. The nodes the dispatch makes are
** userdata read through a metatable as if they were that table (one allocation, the
** versions as C integers: a tracked op costs a third less than with a table); the nodes
** Lua makes (leaves, custom functions, gpu.autograd.record_op) are plain tables. */
enum { GL_NODE_RULE = 1, GL_NODE_NARGS = 2, GL_NODE_RESULT_VERSION = 3, GL_NODE_HEAD = 3 };

/* The userdata's block; its user values: 1 the rule, 1 + i argument i, n + 2 the table
** of string-keyed fields (made on the first write). */
typedef struct gl_node {
  lua_Integer n;
  lua_Integer v[];            /* v[0] the result's version, v[i] argument i's */
} gl_node;

/* Pushes the nodes' metatable (from any function: the context's user value). */
static void push_nodemeta(lua_State *L) {
  GL_PUSH_CTX(L);
  lua_getiuservalue(L, -1, GL_CTX_UV_NODEMETA);
  lua_remove(L, -2);
}

/* Pushes the tape node of the array at idx and returns its type (nil: untracked). An
** inline node (user value 1 true: the rule, the arguments and the versions sit in the
** result itself, see dispatch_tracked) becomes a node userdata here, the first time
** anything asks for it. */
static void push_rules(lua_State *L);

static int push_node_of(lua_State *L, int idx) {
  int t = lua_getiuservalue(L, idx, GL_UV_NODE);
  if (t != LUA_TBOOLEAN || !lua_toboolean(L, -1)) return t;
  lua_pop(L, 1);
  idx = lua_absindex(L, idx);
  lua_Integer *tail = (lua_Integer *)((char *)lua_touserdata(L, idx) + lua_rawlen(L, idx)) - 1;
  int n = (int)*tail;
  const gl_opentry *e;
  memcpy(&e, &tail[-1], sizeof e);
  const lua_Integer *v = tail - 2 - n;
  gl_node *nd = lua_newuserdatauv(L, sizeof *nd + (size_t)(n + 1) * sizeof nd->v[0], n + 2);
  int node = lua_gettop(L);
  nd->n = n;
  memcpy(nd->v, v, (size_t)(n + 1) * sizeof *v);
  push_nodemeta(L);
  lua_setmetatable(L, node);
  for (int j = 0; j <= n; j++) {             /* the rule, then the arguments */
    if (lua_getiuservalue(L, idx, GL_UV_RULE + j) == LUA_TNIL && j == 0) {   /* the rule by the op's name */
      lua_pop(L, 1);
      push_rules(L);
      lua_getfield(L, -1, e->name);
      lua_remove(L, -2);
    }
    lua_setiuservalue(L, node, j + 1);
    lua_pushnil(L);
    lua_setiuservalue(L, idx, GL_UV_RULE + j);
  }
  lua_pushvalue(L, node);
  lua_setiuservalue(L, idx, GL_UV_NODE);
  return LUA_TUSERDATA;
}

static gl_node *check_node(lua_State *L) {
  gl_node *nd = lua_touserdata(L, 1);
  if (nd == NULL) luaL_error(L, "autograd: a tape node expected");
  return nd;
}

/* node[k]: the table layout above; string keys from the fields table */
static int node_index(lua_State *L) {
  gl_node *nd = check_node(L);
  lua_Integer n = nd->n;
  if (lua_isinteger(L, 2)) {
    lua_Integer k = lua_tointeger(L, 2);
    if (k == GL_NODE_RULE) lua_getiuservalue(L, 1, 1);
    else if (k == GL_NODE_NARGS) lua_pushinteger(L, n);
    else if (k >= GL_NODE_RESULT_VERSION && k <= GL_NODE_HEAD + n) lua_pushinteger(L, nd->v[k - GL_NODE_RESULT_VERSION]);
    else if (k > GL_NODE_HEAD + n && k <= GL_NODE_HEAD + 2 * n) lua_getiuservalue(L, 1, (int)(k - GL_NODE_HEAD - n) + 1);
    else lua_pushnil(L);
    return 1;
  }
  if (lua_getiuservalue(L, 1, (int)n + 2) != LUA_TTABLE) { lua_pushnil(L); return 1; }
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

/* node[k] = v: the versions, the rule and the arguments in place; any other key into the
** fields table */
static int node_newindex(lua_State *L) {
  gl_node *nd = check_node(L);
  lua_Integer n = nd->n;
  lua_settop(L, 3);
  if (lua_isinteger(L, 2)) {
    lua_Integer k = lua_tointeger(L, 2);
    if (k == GL_NODE_RULE) { lua_setiuservalue(L, 1, 1); return 0; }
    if (k >= GL_NODE_RESULT_VERSION && k <= GL_NODE_HEAD + n) {
      nd->v[k - GL_NODE_RESULT_VERSION] = luaL_checkinteger(L, 3);
      return 0;
    }
    if (k > GL_NODE_HEAD + n && k <= GL_NODE_HEAD + 2 * n) {
      lua_setiuservalue(L, 1, (int)(k - GL_NODE_HEAD - n) + 1);
      return 0;
    }
    if (k == GL_NODE_NARGS) return luaL_error(L, "autograd: a node's argument count cannot change");
  }
  if (lua_getiuservalue(L, 1, (int)n + 2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, 1, (int)n + 2);
  }
  lua_insert(L, 2);                                  /* 1 node, 2 fields, 3 k, 4 v */
  lua_rawset(L, 2);
  return 0;
}

static int node_len(lua_State *L) {
  lua_pushinteger(L, GL_NODE_HEAD + 2 * check_node(L)->n);
  return 1;
}

static int node_tostring(lua_State *L) {
  lua_pushfstring(L, "gpu autograd node (%d arguments): %p", (int)check_node(L)->n, lua_topointer(L, 1));
  return 1;
}

/* node_args(node) -> {arguments..., n = n, extra = node.extra} of a dispatch-made node
** (what the rules take; R._node_args does the same for a table node) */
static int g_node_args(lua_State *L) {
  gl_node *nd = check_node(L);
  int n = (int)nd->n;
  lua_createtable(L, n, 2);
  for (int i = 1; i <= n; i++) {
    lua_getiuservalue(L, 1, i + 1);
    lua_rawseti(L, -2, i);
  }
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  if (lua_getiuservalue(L, 1, n + 2) == LUA_TTABLE) {
    lua_getfield(L, -1, "extra");
    lua_setfield(L, -3, "extra");
  }
  lua_pop(L, 1);
  return 1;
}

static uint64_t version_of(lua_State *L, int idx) {
  gl_array *a = lua_type(L, idx) == LUA_TUSERDATA ? gl_lua_test(L, idx) : NULL;
  return a && a->storage ? a->storage->version : 0;
}

/* What the recorder keeps of each argument across the op: its userdata block (to tell a
** result that is an argument) and, for an array, where to read its storage's version
** after the op (the node anchors the userdata, so the pointer stays valid). */
#define GL_NODE_FASTARGS 8
typedef struct gl_argref {
  const void *ud;
  const gl_array *arr;
} gl_argref;

/* The node of a call with nargs arguments (in slots argbase..argbase + nargs - 1), pushed;
** the versions are written after the op (record_results). refs: nargs entries, or NULL
** past GL_NODE_FASTARGS arguments. */
static gl_node *push_node(lua_State *L, const gl_lctx *ctx, int nargs, int rule, int argbase, gl_argref *refs) {
  gl_node *nd = lua_newuserdatauv(L, sizeof *nd + (size_t)(nargs + 1) * sizeof nd->v[0], nargs + 2);
  int node = lua_gettop(L);
  nd->n = nargs;
  memset(nd->v, 0, (size_t)(nargs + 1) * sizeof nd->v[0]);
  push_nodemeta(L);
  lua_setmetatable(L, node);
  lua_pushvalue(L, rule);
  lua_setiuservalue(L, node, 1);
  for (int i = 1; i <= nargs; i++) {
    int a = argbase + i - 1;
    if (refs) {
      bool ud = lua_type(L, a) == LUA_TUSERDATA;
      refs[i - 1].ud = ud ? lua_touserdata(L, a) : NULL;
      refs[i - 1].arr = ud ? gl_lua_test_in(L, ctx, a) : NULL;
    }
    lua_pushvalue(L, a);
    lua_setiuservalue(L, node, i + 1);
  }
  return nd;
}

static lua_Integer version_at(const gl_array *a) { return a && a->storage ? (lua_Integer)a->storage->version : 0; }

/* The versions of the array arguments' storages, as the op left them (an op may update
** an input itself, as batch norm does its running statistics); 0 for an argument that is
** not an array. */
static void snapshot_versions(lua_State *L, int node, gl_node *nd, const gl_argref *refs) {
  for (int i = 1; i <= nd->n; i++) {
    if (refs) {
      nd->v[i] = version_at(refs[i - 1].arr);
    } else {
      lua_getiuservalue(L, node, i + 1);
      nd->v[i] = (lua_Integer)version_of(L, -1);
      lua_pop(L, 1);
    }
  }
}

/* Whether the value at idx is one of the node's arguments. */
static bool is_argument(lua_State *L, int node, const gl_node *nd, const gl_argref *refs, int idx) {
  const void *p = lua_touserdata(L, idx);
  for (int i = 1; i <= nd->n; i++) {
    if (refs) {
      if (refs[i - 1].ud == p) return true;
      continue;
    }
    lua_getiuservalue(L, node, i + 1);
    bool same = lua_rawequal(L, -1, idx);
    lua_pop(L, 1);
    if (same) return true;
  }
  return false;
}

/* Gives the results (the top nres slots) their node (at 'node'): the rule's own record
** function when it has one, else the first result, unless it is one of the arguments
** (an op that returned its input). Results after the first are kept as node.extra. */
static void record_results(lua_State *L, const gl_lctx *ctx, int node, gl_node *nd, int rule, int nres,
                           const gl_argref *refs) {
  int top = lua_gettop(L), first = top - nres + 1;
  snapshot_versions(L, node, nd, refs);
  /* a rule's record function places the nodes: for a result that is not an array (split's
  ** list), or for several arrays each with a gradient of its own (slogdet, qr, svd, eigh) */
  bool several = nres > 1 || lua_type(L, first) != LUA_TUSERDATA;
  if (several && lua_getfield(L, rule, "record") == LUA_TFUNCTION) {
    lua_pushvalue(L, node);
    for (int i = first; i <= top; i++) lua_pushvalue(L, i);
    lua_call(L, nres + 1, 0);
    lua_settop(L, top);
    return;
  }
  if (several) lua_settop(L, top);
  if (lua_type(L, first) != LUA_TUSERDATA) return;
  if (is_argument(L, node, nd, refs, first)) return;
  if (nres > 1) {
    lua_createtable(L, nres - 1, 0);
    for (int i = first + 1; i <= top; i++) {
      lua_pushvalue(L, i);
      lua_rawseti(L, -2, i - first);
    }
    lua_setfield(L, node, "extra");
  }
  nd->v[0] = version_at(gl_lua_test_in(L, ctx, first));
  lua_pushvalue(L, node);
  lua_setiuservalue(L, first, 1);
}

/* Pushes the rules table, loading gpu.autograd (which registers it) the first time. */
static void push_rules(lua_State *L) {
  if (lua_getiuservalue(L, lua_upvalueindex(1), GL_CTX_UV_RULES) == LUA_TTABLE) return;
  lua_pop(L, 1);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &rules_key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &module_key);
  lua_getfield(L, -1, "autograd");                  /* the module's lazy loader requires it */
  lua_pop(L, 2);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &rules_key) != LUA_TTABLE)
    luaL_error(L, "gpu.autograd is not available (its rules were not registered)");
}

static void push_engine(lua_State *L, const char *name);

static int not_differentiable(lua_State *L, const gl_opentry *e) {
  return luaL_error(L, "%s is not differentiable: an input requires grad (detach it, or call it in gpu.no_grad)",
                    e->name);
}

/* The stash: what each tracked call in progress keeps across its op, in the context's
** user values (STASH_W slots per depth: the rule and the arguments, or the node), with the
** address of a local of its C frame. A call that raised never took its entry back: it is
** stale, which shows as an address at or below the running frame's (the C stack grows
** down, and a live caller is above). */
#define STASH_W (GL_NODE_INLINE_MAX + 1)
#define STASH_SLOT(d, j) (GL_CTX_UV_STASH + (d) * STASH_W + (j))

static int stash_enter(lua_State *L, gl_lctx *ctx, const void *marker) {
  while (ctx->stash_depth > 0 && ctx->stash_marker[ctx->stash_depth - 1] <= marker) ctx->stash_depth--;
  if (ctx->stash_depth == GL_STASH_DEPTH) luaL_error(L, "autograd: tracked ops nested too deeply");
  int d = ctx->stash_depth++;
  ctx->stash_marker[d] = marker;
  return d;
}

/* slot j of depth d = the value on top (popped) */
static void stash_set(lua_State *L, int d, int j) { lua_setiuservalue(L, lua_upvalueindex(1), STASH_SLOT(d, j)); }
static void stash_get(lua_State *L, int d, int j) { lua_getiuservalue(L, lua_upvalueindex(1), STASH_SLOT(d, j)); }

/* Empties slots 0..n of depth d (they must not keep arrays alive) and leaves the depth. */
static void stash_leave(lua_State *L, gl_lctx *ctx, int d, int n) {
  for (int j = 0; j <= n; j++) {
    lua_pushnil(L);
    stash_set(L, d, j);
  }
  ctx->stash_depth = d;
}

/* Whether the userdata at idx is one of the arguments (refs: n entries). */
static bool is_argref(lua_State *L, const gl_argref *refs, int n, int idx) {
  const void *p = lua_touserdata(L, idx);
  for (int i = 0; i < n; i++) if (refs[i].ud == p) return true;
  return false;
}

/* The inline node: the result at 'res' took the node's slots when the op made it
** (larray.c's new_array_ud); the rule and the arguments come from stash depth d. */
static void record_inline(lua_State *L, const gl_lctx *ctx, int d, int nargs, int res, const gl_argref *refs) {
  for (int j = 0; j <= nargs; j++) {
    stash_get(L, d, j);
    lua_setiuservalue(L, res, GL_UV_RULE + j);
  }
  lua_Integer *v = ctx->node_tail - 2 - nargs;   /* (new_array_ud's record of the tail) */
  v[0] = version_at(lua_touserdata(L, res));     /* the op's new array */
  for (int i = 1; i <= nargs; i++) v[i] = version_at(refs[i - 1].arr);
  lua_pushboolean(L, 1);
  lua_setiuservalue(L, res, GL_UV_NODE);
}

/* A tracked call of an op that leaves its arguments in their slots (GL_OP_KEEPS_ARGS):
** nothing waits in the stash; the result takes the node inline, with the op's entry for
** its rule (looked up by name when the node is made: push_node_of), and the versions of
** the arrays the op reported reading (gl_lua_operand). */
static int tracked_keeps_args(lua_State *L, gl_lctx *ctx, const gl_opentry *e, int nargs) {
  if (lua_gettop(L) != nargs) lua_settop(L, nargs);   /* the op sees exactly its arguments */
  ctx->node_slots = nargs;
  ctx->node_ud = NULL;
  ctx->node_op = e;
  ctx->operand_seen = 0;
  int nres = e->fn(L);
  ctx->node_slots = 0;
  int first = lua_gettop(L);
  void *res = lua_touserdata(L, first);
  if (nres != 1 || first != nargs + 1 || res == NULL || res != ctx->node_ud)
    luaL_error(L, "internal error: %s is flagged as leaving its arguments, but did not", e->name);
  ctx->node_ud = NULL;
  lua_Integer *v = ctx->node_tail - 2 - nargs;
  v[0] = version_at(res);
  for (int i = 1; i <= nargs; i++) {
    if (i <= 2 && (ctx->operand_seen >> (i - 1) & 1)) v[i] = version_at(ctx->operand[i - 1]);
    else v[i] = lua_type(L, i) == LUA_TUSERDATA ? version_at(gl_lua_test_in(L, ctx, i)) : 0;
    lua_pushvalue(L, i);
    lua_setiuservalue(L, first, GL_UV_ARG0 + i);
  }
  lua_pushboolean(L, 1);
  lua_setiuservalue(L, first, GL_UV_NODE);
  return 1;
}

/* Pushes a copy of the list at idx with field _versions: its arrays' storage versions now
** (the engine tells by them which of an array's nodes an element of concat or stack was
** when the op ran, after an in-place op gave it a newer one). */
static void push_list_versions(lua_State *L, const gl_lctx *ctx, int idx) {
  idx = lua_absindex(L, idx);
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  lua_createtable(L, (int)n, 1);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, idx, k);
    lua_pushinteger(L, lua_type(L, -1) == LUA_TUSERDATA ? version_at(gl_lua_test_in(L, ctx, -1)) : 0);
    lua_rawseti(L, -3, k);
    lua_rawseti(L, -3, k);
  }
  lua_setfield(L, -2, "_versions");
}

/* An in-place op with a tracked input, grad on: the engine's inplace_begin(name, args...)
** checks the call (a leaf that requires grad, a view: refused before anything is written)
** and gives a token, which waits in the stash while the op runs in this frame (its
** argument errors keep their names); inplace_end(token) records it as PyTorch does. */
static int dispatch_inplace(lua_State *L, gl_lctx *ctx, gl_opentry *e, int nargs) {
  char marker;
  push_engine(L, "inplace_begin");
  lua_pushvalue(L, lua_upvalueindex(UPVALUE_NAME));
  for (int i = 1; i <= nargs; i++) lua_pushvalue(L, i);
  lua_call(L, nargs + 1, 1);
  if (lua_isnil(L, -1)) {
    lua_settop(L, nargs);
    return e->fn(L);
  }
  int d = stash_enter(L, ctx, &marker);
  stash_set(L, d, 0);
  lua_settop(L, nargs);                    /* the op sees exactly its arguments */
  int nres = e->fn(L);
  push_engine(L, "inplace_end");
  stash_get(L, d, 0);
  stash_leave(L, ctx, d, 0);
  lua_call(L, 1, 0);
  return nres;
}

static int dispatch_tracked(lua_State *L, gl_lctx *ctx, gl_opentry *e, int nargs) {
  char marker;                             /* its address tells a live stash entry */
  if (e->flags & GL_OP_INPLACE) return dispatch_inplace(L, ctx, e, nargs);
  /* an op known to have a rule that keeps its arguments: nothing to look up */
  bool keeps = (e->flags & GL_OP_KEEPS_ARGS) && nargs <= GL_NODE_INLINE_MAX;
  if (keeps && e->rule_gen == ctx->rules_gen && ctx->rules_gen != 0) return tracked_keeps_args(L, ctx, e, nargs);
  push_rules(L);
  lua_pushvalue(L, lua_upvalueindex(UPVALUE_NAME));   /* the name, already a Lua string */
  int kind = lua_rawget(L, -2);
  if (kind == LUA_TNIL) return not_differentiable(L, e);
  if (kind == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
    lua_settop(L, nargs);
    return e->fn(L);
  }
  int rule = lua_gettop(L);
  if (keeps) {
    e->rule_gen = ctx->rules_gen;
    return tracked_keeps_args(L, ctx, e, nargs);
  }
  int d = stash_enter(L, ctx, &marker);
  if (nargs > GL_NODE_INLINE_MAX) {
    /* many arguments: the node is made before the op and waits in the stash */
    gl_argref refs[GL_NODE_FASTARGS];
    gl_argref *r = nargs <= GL_NODE_FASTARGS ? refs : NULL;
    gl_node *nd = push_node(L, ctx, nargs, rule, 1, r);
    stash_set(L, d, 0);
    lua_settop(L, nargs);                  /* the op sees exactly its arguments */
    int nres = e->fn(L);
    int top = lua_gettop(L);
    stash_get(L, d, 0);
    stash_leave(L, ctx, d, 0);
    int node = lua_gettop(L);
    if (e->flags & GL_OP_LIST) {
      if (lua_getiuservalue(L, node, 2) == LUA_TTABLE) {
        push_list_versions(L, ctx, -1);
        lua_setiuservalue(L, node, 2);
      }
      lua_pop(L, 1);
    }
    lua_getiuservalue(L, node, 1);
    for (int i = top - nres + 1; i <= top; i++) lua_pushvalue(L, i);   /* results on top again */
    record_results(L, ctx, node, nd, node + 1, nres, r);
    lua_settop(L, top);
    return nres;
  }
  /* a few arguments: they wait in the stash, and the node goes into the result itself
  ** when the op's first new array is its result (one allocation less a call) */
  gl_argref refs[GL_NODE_INLINE_MAX];
  for (int i = 1; i <= nargs; i++) {
    bool ud = lua_type(L, i) == LUA_TUSERDATA;
    refs[i - 1].ud = ud ? lua_touserdata(L, i) : NULL;
    refs[i - 1].arr = ud ? gl_lua_test_in(L, ctx, i) : NULL;
  }
  lua_pushvalue(L, rule);
  stash_set(L, d, 0);
  for (int i = 1; i <= nargs; i++) {
    lua_pushvalue(L, i);
    stash_set(L, d, i);
  }
  lua_settop(L, nargs);                    /* the op sees exactly its arguments */
  ctx->node_slots = nargs;
  ctx->node_ud = NULL;
  ctx->node_op = e;
  int nres = e->fn(L);
  ctx->node_slots = 0;
  if ((e->flags & GL_OP_LIST) && nargs >= 1) {
    stash_get(L, d, 1);
    if (lua_type(L, -1) == LUA_TTABLE) {
      push_list_versions(L, ctx, -1);
      stash_set(L, d, 1);
    }
    lua_pop(L, 1);
  }
  int top = lua_gettop(L), first = top - nres + 1;
  if (nres == 1 && ctx->node_ud != NULL && lua_touserdata(L, first) == ctx->node_ud && !is_argref(L, refs, nargs, first)) {
    record_inline(L, ctx, d, nargs, first, refs);
  } else {
    /* another shape of call (several results, a result made after a temporary): a node */
    for (int j = 0; j <= nargs; j++) stash_get(L, d, j);     /* rule, arguments */
    gl_node *nd = push_node(L, ctx, nargs, top + 1, top + 2, NULL);
    int node = lua_gettop(L);
    lua_pushvalue(L, top + 1);
    for (int i = first; i <= top; i++) lua_pushvalue(L, i);
    record_results(L, ctx, node, nd, node + 1, nres, refs);
  }
  ctx->node_ud = NULL;
  stash_leave(L, ctx, d, nargs);
  lua_settop(L, top);
  return nres;
}

static int dispatch_slow(lua_State *L, gl_lctx *ctx, gl_opentry *e) {
  int nargs = lua_gettop(L);
  int cast = (e->flags & GL_OP_AUTOCAST) && ctx->autocast_live ? MODE_CAST(thread_mode(L, ctx)) : -1;
  bool casted = cast >= 0 && autocast_args(L, nargs, cast);
  int nres;
  /* the mode is asked only when an input is tracked: untracked calls pay the scan alone */
  if (ctx->grad_live && any_tracked(L, nargs, e->flags) && !(thread_mode(L, ctx) & MODE_NOGRAD))
    nres = dispatch_tracked(L, ctx, e, nargs);
  else nres = e->fn(L);
  if (casted) autocast_results(L, nres, cast);
  return nres;
}

/* The closure every op is registered as (upvalues: the op's own, then its entry and name). */
static int dispatch(lua_State *L) {
  char marker;                             /* its address keys the op's level (lhold.c) */
  gl_opentry *e = lua_touserdata(L, lua_upvalueindex(UPVALUE_ENTRY));
  gl_lctx *ctx = e->ctx;
  unsigned long retains = gl_lua_owned_retains;
  int nargs = lua_gettop(L), n;
  if (nargs > e->nargs) return gl_lua_too_many(L, e->nargs);
  int level = gl_lua_op_enter(ctx, &marker);
  if (!ctx->grad_live && !ctx->autocast_live) n = e->fn(L);
  else n = dispatch_slow(L, ctx, e);
  gl_lua_op_leave(L, ctx, level);
  /* a view of a light array among the results: it must keep the bytes' userdata alive */
  if (gl_lua_owned_retains != retains) gl_lua_anchor_views(L, nargs, lua_gettop(L) - n + 1, lua_gettop(L));
  if (e->flags & GL_OP_INPLACE) {
    /* the receiver's storage remembers the op that last wrote it, for the message of a
    ** backward that finds a saved array changed (its version says that it changed) */
    gl_array *x = lua_gettop(L) >= 1 ? gl_lua_test_in(L, ctx, 1) : NULL;
    if (x && x->storage) x->storage->writer = e->name;
  }
  return n;
}

/* ---- ops outside the dispatch: x[key] and x.T (larray.c's __index) ------------------------- */

bool gl_lua_tracked_call(lua_State *L, int idx) {
  gl_lctx *ctx = gl_lua_ctx(L);
  return ctx->grad_live && is_tracked(L, idx) && !(thread_mode(L, ctx) & MODE_NOGRAD);
}

void gl_lua_record_view(lua_State *L, const char *name, int x_idx, int key_idx, int res_idx) {
  if (!gl_lua_test(L, res_idx)) return;
  int top = lua_gettop(L);
  push_rules(L);
  if (lua_getfield(L, -1, name) != LUA_TTABLE) luaL_error(L, "gpu.autograd.rules has no rule '%s'", name);
  int rule = lua_gettop(L);
  lua_createtable(L, GL_NODE_HEAD + 4, 0);
  int node = lua_gettop(L);
  const int args[2] = { x_idx, key_idx };
  lua_pushvalue(L, rule);
  lua_rawseti(L, node, GL_NODE_RULE);
  lua_pushinteger(L, 2);
  lua_rawseti(L, node, GL_NODE_NARGS);
  lua_pushinteger(L, (lua_Integer)version_of(L, res_idx));
  lua_rawseti(L, node, GL_NODE_RESULT_VERSION);
  for (int i = 0; i < 2; i++) {
    lua_pushinteger(L, (lua_Integer)version_of(L, args[i]));
    lua_rawseti(L, node, GL_NODE_HEAD + 1 + i);
    lua_pushvalue(L, args[i]);
    lua_rawseti(L, node, GL_NODE_HEAD + 2 + 1 + i);
  }
  lua_setiuservalue(L, res_idx, 1);
  lua_settop(L, top);
}

int gl_lua_record_setindex(lua_State *L) {
  lua_settop(L, 3);
  push_engine(L, "setindex");
  lua_insert(L, 1);
  lua_call(L, 3, 0);
  return 0;
}

/* ---- registration ------------------------------------------------------------------------ */

/* Which ops take a list of arrays first, which autocast, which write their receiver. */
static unsigned op_flags(const char *name) {
  static const char *const lists[] = { "concat", "concatenate", "stack", NULL };
  static const char *const casts[] = { "matmul", "dot", "fused.linear", "dnn.conv2d", NULL };
  unsigned f = 0;
  for (int i = 0; lists[i]; i++) if (strcmp(name, lists[i]) == 0) f |= GL_OP_LIST;
  for (int i = 0; casts[i]; i++) if (strcmp(name, casts[i]) == 0) f |= GL_OP_AUTOCAST;
  size_t n = strlen(name);
  if (n > 1 && name[n - 1] == '_') f |= GL_OP_INPLACE;
  return f;
}

void gl_lua_pushop(lua_State *L, const char *name, lua_CFunction fn, int nargs, int nup) {
  gl_lua_pushop_flags(L, name, fn, nargs, nup, 0);
}

void gl_lua_pushop_flags(lua_State *L, const char *name, lua_CFunction fn, int nargs, int nup, unsigned flags) {
  if (nup > GL_OP_UPVALUES) luaL_error(L, "gl_lua_pushop: %s has %d upvalues (at most %d)", name, nup, GL_OP_UPVALUES);
  gl_lctx *c = nup >= 1 ? lua_touserdata(L, -nup) : NULL;
  if (c == NULL || lua_rawlen(L, -nup) != sizeof *c || c->magic != GL_CTX_MAGIC)
    luaL_error(L, "gl_lua_pushop: %s: upvalue 1 must be the context", name);
  for (int i = nup; i < GL_OP_UPVALUES; i++) lua_pushnil(L);
  gl_opentry *e = lua_newuserdatauv(L, sizeof *e, 0);
  e->fn = fn;
  e->flags = op_flags(name) | flags;
  e->nargs = nargs == GL_VARARGS ? INT_MAX : nargs;
  e->rule_gen = 0;
  e->ctx = c;
  e->name = lua_pushstring(L, name);                /* upvalue UPVALUE_NAME: keeps it alive */
  lua_pushcclosure(L, dispatch, UPVALUE_NAME);
}

bool gl_lua_op_nargs(lua_State *L, int idx, int *nargs) {
  if (lua_tocfunction(L, idx) != dispatch) return false;
  lua_getupvalue(L, idx, UPVALUE_ENTRY);
  *nargs = ((const gl_opentry *)lua_touserdata(L, -1))->nargs;
  lua_pop(L, 1);
  return true;
}

void gl_lua_setops(lua_State *L, int idx, const char *prefix, const gl_reg *l) {
  idx = lua_absindex(L, idx);
  for (; l->name; l++) {
    GL_PUSH_CTX(L);
    if (prefix && *prefix) {
      lua_pushfstring(L, "%s%s", prefix, l->name);
      const char *full = lua_tostring(L, -1);
      lua_insert(L, -2);
      gl_lua_pushop(L, full, l->func, l->nargs, 1);
      lua_remove(L, -2);
    } else {
      gl_lua_pushop(L, l->name, l->func, l->nargs, 1);
    }
    lua_setfield(L, idx, l->name);
  }
}

/* ---- the tape's C side: requires_grad, detach, .grad, backward ------------------------------- */

/* PyTorch's rule: float and complex arrays can require grad (a complex leaf's .grad is the
** conjugate Wirtinger gradient, lua/gpu/autograd/rules.lua's header). */
static bool is_differentiable_dtype(const gl_array *a) {
  return gl_dtype_is_float((gl_dtype)a->dtype) || gl_dtype_is_complex((gl_dtype)a->dtype);
}

/* x:requires_grad([flag = true]) -> x: x becomes a leaf of the tape (its node a table
** {leaf = true}); false takes a leaf off it. */
static int l_requires_grad(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  bool on = lua_isnoneornil(L, 2) ? true : (luaL_checktype(L, 2, LUA_TBOOLEAN), lua_toboolean(L, 2));
  int t = push_node_of(L, 1);
  if (!on) {
    if (is_node_type(t) && lua_getfield(L, -1, "leaf") != LUA_TBOOLEAN)
      return luaL_error(L, "requires_grad: only a leaf can stop requiring grad (use detach())");
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 1);
    lua_settop(L, 1);
    return 1;
  }
  if (!is_differentiable_dtype(x))
    return luaL_error(L, "requires_grad: only floating-point and complex arrays can require gradients, got %s",
                      gl_dtypes[x->dtype].name);
  if (!is_node_type(t)) {
    push_rules(L);                                  /* loads gpu.autograd: backward needs it */
    lua_createtable(L, 0, 2);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "leaf");
    lua_setiuservalue(L, 1, 1);
    gl_lua_ctx(L)->grad_live = true;
  }
  lua_settop(L, 1);
  return 1;
}

/* x:detach(): a view of x that is not on the tape. */
static int l_detach(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  gl_array *v = gl_lua_push(L);
  gl_array_view_of(v, x);
  if (v->storage->lua_owned) gl_lua_anchor_views(L, 1, lua_gettop(L), lua_gettop(L));   /* not dispatched */
  return 1;
}

static int l_is_leaf(lua_State *L) {
  gl_lua_check(L, 1);
  bool leaf = !is_node_type(push_node_of(L, 1)) || lua_getfield(L, -1, "leaf") == LUA_TBOOLEAN;
  lua_pushboolean(L, leaf);
  return 1;
}

static int l_is_tracked(lua_State *L) {
  gl_lua_check(L, 1);
  lua_pushboolean(L, is_tracked(L, 1));
  return 1;
}

/* x:retain_grad(): an op result keeps its gradient in .grad too (a leaf always does). */
static int l_retain_grad(lua_State *L) {
  gl_lua_check(L, 1);
  if (!is_node_type(push_node_of(L, 1)))
    return luaL_error(L, "retain_grad: the array does not require grad");
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "retain");
  lua_settop(L, 1);
  return 1;
}

int gl_lua_push_grad(lua_State *L, int idx) {
  if (!is_node_type(push_node_of(L, idx))) return 1;     /* nil */
  lua_getfield(L, -1, "grad");
  lua_remove(L, -2);
  return 1;
}

/* x.grad = g (or nil): g must have x's shape, a floating dtype (complex for a complex x) and x's device, so that an
** optimizer step cannot later update some parameters and not others. */
void gl_lua_set_grad(lua_State *L, int x_idx, int g_idx, const char *fname) {
  gl_array *x = gl_lua_check(L, x_idx);
  if (!is_node_type(push_node_of(L, x_idx)))
    luaL_error(L, "%s: the array does not require grad (call x:requires_grad() first)", fname);
  int node = lua_gettop(L);
  if (!lua_isnil(L, g_idx)) {
    gl_array *g = gl_lua_test(L, g_idx);
    if (g == NULL)
      luaL_error(L, "%s: a gradient must be a gpu.array or nil, got %s", fname, luaL_typename(L, g_idx));
    if (g->storage == NULL) luaL_error(L, "%s: the gradient is a closed array", fname);
    char bx[GL_SHAPE_BUFSZ], bg[GL_SHAPE_BUFSZ], dx[16], dg[16];
    bool same = g->ndim == x->ndim;
    for (int i = 0; same && i < x->ndim; i++) same = g->shape[i] == x->shape[i];
    if (!same)
      luaL_error(L, "%s: the gradient has shape %s, the array %s", fname, gl_shape_str(g->ndim, g->shape, bg),
                 gl_shape_str(x->ndim, x->shape, bx));
    bool cplx = gl_dtype_is_complex((gl_dtype)x->dtype);
    if (cplx ? !gl_dtype_is_complex((gl_dtype)g->dtype) : !gl_dtype_is_float((gl_dtype)g->dtype))
      luaL_error(L, "%s: the gradient must be %s, got %s", fname, cplx ? "complex" : "floating-point",
                 gl_dtypes[g->dtype].name);
    if (!gl_device_eq(gl_array_device(g), gl_array_device(x)))
      luaL_error(L, "%s: the gradient is on %s, the array on %s", fname, gl_device_name(gl_array_device(g), dg),
                 gl_device_name(gl_array_device(x), dx));
  }
  lua_pushvalue(L, g_idx);
  lua_setfield(L, node, "grad");
  lua_pop(L, 1);
}

/* x:set_grad(g) -> x: as x.grad = g */
static int l_set_grad(lua_State *L) {
  lua_settop(L, 2);
  gl_lua_set_grad(L, 1, 2, "set_grad");
  lua_settop(L, 1);
  return 1;
}

/* Pushes the engine's function 'name' (gpu.autograd registers the engine). */
static void push_engine(lua_State *L, const char *name) {
  push_rules(L);
  lua_pop(L, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &engine_key);
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
}

/* Calls the engine's function 'name' with the method's arguments (x first). */
static int call_engine(lua_State *L, const char *name, int nresults) {
  gl_lua_check(L, 1);
  int n = lua_gettop(L);
  push_engine(L, name);
  lua_insert(L, 1);
  lua_call(L, n, nresults);
  return nresults;
}

/* x:backward([grad] [, {retain_graph =, create_graph =, inputs =}]) */
static int l_backward(lua_State *L) { return call_engine(L, "backward", 0); }
/* x:register_hook(fn) -> handle */
static int l_register_hook(lua_State *L) { return call_engine(L, "register_hook", 1); }

static const gl_reg grad_methods[] = {
  { "requires_grad", l_requires_grad, 2 }, { "requires_grad_", l_requires_grad, 2 }, { "detach", l_detach, 1 },
  { "is_leaf", l_is_leaf, 1 }, { "retain_grad", l_retain_grad, 1 }, { "set_grad", l_set_grad, 2 },
  { "register_hook", l_register_hook, 2 }, { NULL, NULL, 0 },
};

/* backward runs the engine (Lua code, the user's hooks): not an op level, or every close
** inside it would wait for it to end */
static const gl_reg grad_engine_methods[] = {
  { "backward", l_backward, 3 },
  { NULL, NULL, 0 }
};

/* ---- gpu._grad: what lua/gpu/autograd.lua builds on ------------------------------------------ */

/* register(rules, engine): the rules table and the engine functions (backward, ...). */
static int g_register(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushvalue(L, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &rules_key);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, lua_upvalueindex(1), GL_CTX_UV_RULES);
  lua_pushvalue(L, 2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &engine_key);
  GL_CTX(L)->rules_gen++;                   /* the ops' cached "has a rule" lapse */
  return 0;
}

/* node(x) -> x's tape node or nil; set_node(x, node) */
static int g_node(lua_State *L) {
  if (!gl_lua_test(L, 1)) { lua_pushnil(L); return 1; }
  push_node_of(L, 1);
  return 1;
}

static int g_set_node(lua_State *L) {
  gl_lua_checkany(L, 1);
  if (!lua_isnil(L, 2) && !is_node_type(lua_type(L, 2))) luaL_typeerror(L, 2, "tape node");
  lua_settop(L, 2);
  lua_setiuservalue(L, 1, 1);
  if (!lua_isnil(L, 2)) gl_lua_ctx(L)->grad_live = true;
  return 0;
}

/* version(x) -> the version of x's storage, and the op that last wrote it (or nil) */
static int g_version(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  lua_pushinteger(L, (lua_Integer)x->storage->version);
  if (x->storage->writer) lua_pushstring(L, x->storage->writer);
  else lua_pushnil(L);
  return 2;
}

/* same_storage(a, b) -> whether a and b are views of the same bytes */
static int g_same_storage(lua_State *L) {
  lua_pushboolean(L, gl_lua_check(L, 1)->storage == gl_lua_check(L, 2)->storage);
  return 1;
}

/* set_version(x, v): x's storage counts v writes (the engine's snapshot of an array that
** an in-place op is about to change is, for the rules, that array at its version) */
static int g_set_version(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  x->storage->version = (uint64_t)luaL_checkinteger(L, 2);
  return 0;
}

/* grad_enabled() / set_grad_enabled(on) -> previous: for the running coroutine */
static int g_grad_enabled(lua_State *L) {
  lua_pushboolean(L, gl_lua_grad_enabled(L));
  return 1;
}

static int g_set_grad_enabled(lua_State *L) {
  gl_lctx *ctx = gl_lua_ctx(L);
  int m = thread_mode(L, ctx);
  lua_pushboolean(L, !(m & MODE_NOGRAD));
  m = lua_toboolean(L, 1) ? (m & ~MODE_NOGRAD) : (m | MODE_NOGRAD);
  set_thread_mode(L, ctx, m);
  return 1;
}

/* autocast_dtype() -> "float16" / "bfloat16" or nil; set_autocast(dtype name or nil) -> previous */
static int g_autocast_dtype(lua_State *L) {
  int d = gl_lua_autocast_dtype(L);
  if (d < 0) lua_pushnil(L);
  else lua_pushstring(L, gl_dtypes[d].name);
  return 1;
}

static int g_set_autocast(lua_State *L) {
  gl_lctx *ctx = gl_lua_ctx(L);
  g_autocast_dtype(L);
  int d = -1;
  if (!lua_isnoneornil(L, 1)) {
    d = (int)gl_lua_dtype(L, 1);
    if (d != GL_FLOAT16 && d != GL_BFLOAT16) return luaL_argerror(L, 1, "autocast computes in float16 or bfloat16");
    ctx->autocast_live = true;
  }
  int m = thread_mode(L, ctx);
  set_thread_mode(L, ctx, (m & MODE_NOGRAD) | ((d + 1) << 1));
  return 1;
}

/* opname(f) -> the name function f dispatches under (its rules key), or nil */
static int g_opname(lua_State *L) {
  if (lua_tocfunction(L, 1) != dispatch) { lua_pushnil(L); return 1; }
  lua_getupvalue(L, 1, UPVALUE_NAME);
  return 1;
}

static const gl_reg grad_funcs[] = {
  { "opname", g_opname, 1 }, { "node_args", g_node_args, 1 }, { "register", g_register, 2 },
  { "node", g_node, 1 }, { "set_node", g_set_node, 2 }, { "version", g_version, 1 },
  { "same_storage", g_same_storage, 2 }, { "set_version", g_set_version, 2 },
  { "grad_enabled", g_grad_enabled, 0 }, { "set_grad_enabled", g_set_grad_enabled, 1 },
  { "autocast_dtype", g_autocast_dtype, 0 }, { "set_autocast", g_set_autocast, 1 },
  { "is_tracked", l_is_tracked, 1 }, { NULL, NULL, 0 },
};

void gl_open_grad(lua_State *L, int module, int methods) {
  lua_createtable(L, 0, 1);                         /* per-coroutine modes, weak keys */
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &modes_key);
  lua_pushvalue(L, module);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &module_key);
  lua_getfield(L, methods, "astype");               /* autocast casts through it */
  lua_rawsetp(L, LUA_REGISTRYINDEX, &astype_key);
  gl_lua_setfuncs_held(L, methods, grad_methods);   /* they read arrays: op levels (lhold.c) */
  gl_lua_setfuncs(L, methods, grad_engine_methods);
  GL_PUSH_CTX(L);                                   /* the tape nodes' metatable */
  lua_newtable(L);
  lua_pushcfunction(L, node_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, node_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, node_len);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, node_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "gpu.autograd.node");
  lua_setfield(L, -2, "__name");
  lua_setiuservalue(L, -2, GL_CTX_UV_NODEMETA);
  lua_pop(L, 1);
  lua_newtable(L);
  gl_lua_setfuncs_held(L, lua_gettop(L), grad_funcs);
  lua_setfield(L, module, "_grad");
}
