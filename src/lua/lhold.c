/*
** lhold.c — what an op holds while Lua code runs inside it.
**
** Lua code can run in the middle of an op: an allocation pays the collector's debt and a
** finalizer runs, a table argument's __index or __len runs, a proxy's metamethod runs while
** a shape or an option is read. That code may close an array the op has already checked
** and is about to read (x:close() in a __gc), or drop the last reference to an array the op
** found in a table and collect it. Neither may free bytes the op still uses, so:
**   - every op runs as a level (the dispatch, and outside it the array metamethods and the
**     collectives, through gl_lua_setfuncs_held): while a level is open, x:close() (and
**     __close) puts x in the context's closing list, and the close takes effect when the
**     outermost level ends; until then x still reads as it did, as the op sees it;
**   - an array an op reads out of a table is held (gl_lua_hold): the context's held list
**     keeps it from being collected until the outermost level ends;
**   - a finalizer (__gc) releases at once: a collected array is unreachable, so no op in
**     progress can be using it (the ops keep what they read on their stack or hold it).
** Async handles keep their own: they retain the storages they read and write until they
** complete (ldist.c), so a close while a collective flies frees nothing under it.
**
** An op that raises leaves its level behind: errors unwind with longjmp and no cleanup runs.
** Levels are keyed by the address of a local in the op's C frame instead. Ops cannot yield
** and all run on one C stack, so a level still in progress is an ancestor of the running C
** frame, at a higher address (the stack grows down on every target gpulua builds for); one
** whose marker is not above the running frame has ended. The next level entered, and every
** close, drop such levels first (lgrad.c's stash of tracked calls does the same).
*/
#include <limits.h>
#include "lbody.h"

/* The list at user value uv of the context (made on first use), pushed. */
static void push_list(lua_State *L, int uv) {
  GL_PUSH_CTX(L);
  if (lua_getiuservalue(L, -1, uv) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, -3, uv);
  }
  lua_remove(L, -2);
}

void gl_lua_hold(lua_State *L, int idx) {
  gl_lctx *c = gl_lua_ctx(L);
  if (c->op_depth == 0) return;          /* no op in progress: the caller's stack holds it */
  idx = lua_absindex(L, idx);
  push_list(L, GL_CTX_UV_HELD);
  lua_pushvalue(L, idx);
  lua_rawseti(L, -2, ++c->held_n);
  lua_pop(L, 1);
}

/* Runs the closes that waited and lets go of the held values (allocates nothing, so no Lua
** code runs here). */
void gl_lua_op_flush(lua_State *L, gl_lctx *c) {
  int n = c->closing_n, h = c->held_n;
  c->closing_n = c->held_n = 0;
  GL_PUSH_CTX(L);
  int ctx = lua_gettop(L);
  if (n > 0 && lua_getiuservalue(L, ctx, GL_CTX_UV_CLOSING) == LUA_TTABLE) {
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      gl_array *a = gl_lua_test_in(L, c, -1);
      if (a) gl_array_release(a);          /* idempotent: an array closed twice is closed once */
      lua_pop(L, 1);
      lua_pushnil(L);
      lua_rawseti(L, -2, i);
    }
  }
  lua_settop(L, ctx);
  if (h > 0 && lua_getiuservalue(L, ctx, GL_CTX_UV_HELD) == LUA_TTABLE) {
    for (int i = 1; i <= h; i++) {
      lua_pushnil(L);
      lua_rawseti(L, -2, i);
    }
  }
  lua_settop(L, ctx - 1);
}

bool gl_lua_closing(lua_State *L, int idx) {
  gl_lctx *c = gl_lua_ctx(L);
  if (c->closing_n == 0) return false;
  const void *p = lua_touserdata(L, idx);
  push_list(L, GL_CTX_UV_CLOSING);
  bool found = false;
  for (int i = 1; i <= c->closing_n && !found; i++) {
    lua_rawgeti(L, -1, i);
    found = lua_touserdata(L, -1) == p;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return found;
}

void gl_lua_close(lua_State *L, int idx) {
  char marker;
  gl_lctx *c = gl_lua_ctx(L);
  idx = lua_absindex(L, idx);
  gl_lua_op_prune(c, &marker);
  if (c->op_depth == 0) {
    if (c->held_n | c->closing_n) gl_lua_op_flush(L, c);   /* left behind by an error */
    gl_array_release(gl_lua_checkany(L, idx));
    return;
  }
  if (gl_lua_closing(L, idx)) return;
  push_list(L, GL_CTX_UV_CLOSING);
  lua_pushvalue(L, idx);
  lua_rawseti(L, -2, ++c->closing_n);
  lua_pop(L, 1);
}

/* Inlined into held_call, which runs on every call of a held function (#x, x:detach()). */
static inline int run_held(lua_State *L, gl_lctx *c, lua_CFunction f) {
  char marker;
  int level = gl_lua_op_enter(c, &marker);
  int n = f(L);
  gl_lua_op_leave(L, c, level);
  return n;
}

int gl_lua_run_held(lua_State *L, gl_lctx *c, lua_CFunction f) {
  return run_held(L, c, f);
}

/* A function of gl_lua_setfuncs_held: upvalue 1 the context, 2 the function, 3 its count. */
static int held_call(lua_State *L) {
  lua_Integer nargs = lua_tointeger(L, lua_upvalueindex(3));
  if (lua_gettop(L) > nargs) return gl_lua_too_many(L, (int)nargs);
  return run_held(L, lua_touserdata(L, lua_upvalueindex(1)), lua_tocfunction(L, lua_upvalueindex(2)));
}

void gl_lua_setfuncs_held(lua_State *L, int idx, const gl_reg *l) {
  idx = lua_absindex(L, idx);
  for (; l->name; l++) {
    bool meta = l->name[0] == '_' && l->name[1] == '_';   /* Lua passes the operands only */
    GL_PUSH_CTX(L);
    lua_pushcfunction(L, l->func);
    lua_pushinteger(L, meta || l->nargs == GL_VARARGS ? INT_MAX : l->nargs);
    lua_pushcclosure(L, held_call, 3);
    lua_setfield(L, idx, l->name);
  }
}

bool gl_lua_held_nargs(lua_State *L, int idx, int *nargs) {
  if (lua_tocfunction(L, idx) != held_call) return false;
  lua_getupvalue(L, idx, 3);
  *nargs = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return true;
}

/* ---- gpu._hold: for the specs ------------------------------------------------------------ */

/* collect_next(): the next array made runs a full collection first (its finalizers
** included), as an allocation that pays the collector's debt may: the specs put Lua code at
** that point of every op. */
static int h_collect_next(lua_State *L) {
  gl_lctx *c = gl_lua_ctx(L);
  c->gc_debt = (size_t)1 << 30;
  c->since_full = (size_t)1 << 40;
  return 0;
}

/* state() -> ops in progress, values held, closes waiting (after pruning from here) */
static int h_state(lua_State *L) {
  char marker;
  gl_lctx *c = gl_lua_ctx(L);
  gl_lua_op_prune(c, &marker);
  lua_pushinteger(L, c->op_depth);
  lua_pushinteger(L, c->held_n);
  lua_pushinteger(L, c->closing_n);
  return 3;
}

void gl_open_hold(lua_State *L, int module) {
  static const gl_reg funcs[] = { { "collect_next", h_collect_next, 0 }, { "state", h_state, 0 }, { NULL, NULL, 0 } };
  lua_newtable(L);
  gl_lua_setfuncs(L, lua_gettop(L), funcs);
  lua_setfield(L, module, "_hold");
}
