/*
** lrun.c — what every op of the binding does around its call: errors that name the
** function (gl_lua_error, gl_lua_check_status), the out-of-memory ritual (retry after
** emptying the cache and a full collection), and telling Lua's collector about the
** bytes arrays hold outside its heap.
*/
#include <stdarg.h>
#include <string.h>
#include "lgpu.h"

/* ---- errors and accounting ---------------------------------------------------------- */

/* The name of the running C function as lauxlib's argument errors give it: the name at
** its call site, else the field of a loaded module that holds it ("gpu.arange", found
** for a call through pcall), else "?". Pushed on the stack. */
/* Whether the table at t holds fn (at fn) as a field, or as a field of one of its tables
** (gpu.linalg.eig under "gpu"): then pushes "<prefix>.<field>[.<field>]" and returns true. */
static bool find_field(lua_State *L, int t, int fn, const char *prefix, int depth) {
  lua_pushnil(L);
  while (lua_next(L, t)) {                          /* field, value */
    if (lua_type(L, -2) == LUA_TSTRING) {
      const char *field = lua_tostring(L, -2);
      if (lua_rawequal(L, -1, fn)) {
        if (prefix) lua_pushfstring(L, "%s.%s", prefix, field);
        else lua_pushstring(L, field);
        lua_replace(L, -3);                         /* the name over the key */
        lua_pop(L, 1);
        return true;
      }
      if (depth > 0 && lua_istable(L, -1)) {
        const char *sub = prefix ? lua_pushfstring(L, "%s.%s", prefix, field) : lua_pushstring(L, field);
        if (find_field(L, lua_gettop(L) - 1, fn, sub, depth - 1)) {
          lua_replace(L, -4);                       /* the name over the key */
          lua_pop(L, 2);
          return true;
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  return false;
}

/* The name of the running C function as lauxlib's argument errors give it: the name at
** its call site, else the field of a loaded module (or of a table in one: gpu.linalg.eig)
** that holds it ("gpu.arange", found for a call through pcall), else "?". Pushed on the
** stack. */
static const char *push_function_name(lua_State *L) {
  lua_Debug ar;
  if (!lua_getstack(L, 0, &ar)) return lua_pushliteral(L, "?");
  lua_getinfo(L, "nf", &ar);                        /* pushes the function */
  if (ar.name) { lua_pop(L, 1); return lua_pushstring(L, ar.name); }
  int fn = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  for (int depth = 0; depth < 2; depth++) {         /* modules' own fields first */
    lua_pushnil(L);
    while (lua_next(L, fn + 1)) {                   /* module name, module */
      if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1)) {
        const char *mod = lua_tostring(L, -2);
        if (find_field(L, lua_gettop(L), fn, strcmp(mod, "_G") == 0 ? NULL : mod, depth)) {
          lua_replace(L, fn);
          lua_settop(L, fn);
          return lua_tostring(L, fn);
        }
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, fn - 1);
  return lua_pushliteral(L, "?");
}

int gl_lua_error(lua_State *L, const char *fmt, ...) {
  const char *name = push_function_name(L);
  va_list ap;
  va_start(ap, fmt);
  luaL_where(L, 1);
  const char *msg = lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  /* a message that already starts with the function's name ("conv2d: ...") keeps one;
  ** "gpu.conv2d" counts as the same name as "conv2d" */
  const char *shortname = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
  size_t n = strlen(name), sn = strlen(shortname);
  if ((strncmp(msg, name, n) == 0 && msg[n] == ':') || (strncmp(msg, shortname, sn) == 0 && msg[sn] == ':')) {
    lua_concat(L, 2);
    return lua_error(L);
  }
  lua_pushfstring(L, "%s: ", name);
  lua_insert(L, -2);
  lua_concat(L, 3);
  return lua_error(L);
}

void gl_lua_check_status(lua_State *L, gl_status st, int arg) {
  if (st == GL_OK) return;
  /* too big: the result's fault; a stop (Ctrl-C): no argument's ("sum: interrupted") */
  if (arg > 0 && st != GL_ETOOBIG && st != GL_EINTR) luaL_argerror(L, arg, gl_errmsg());
  gl_lua_error(L, "%s", gl_errmsg());
}

/* Lua's collector only sees the few bytes of each userdata, not the megabytes an array
** may hold, so the bytes arrays take are reported to it here, as collector debt.
**
** When the step runs matters in generational mode (lua.c's default, and the best mode
** for the churn of small results). An object that survives two minor collections
** becomes old and is only freed by a major one. In `for ... do c = a + b end` the
** previous result still sits in c while the next op runs; a step taken after the new
** result exists would therefore age every result twice (once being made, once held)
** and large dropped arrays would pile up, landing each new result in cold memory. So
** the debt is only recorded here and paid in gl_lua_push (larray.c), before the next result is
** made: each result then meets one minor collection while alive and is freed by the
** next. A full collection also runs once arrays have taken as many bytes as were live
** after the last one (at least 64 MiB), as a backstop for arrays that did grow old. */
#define GC_MIN_FULL ((size_t)64 << 20)

void gl_lua_account(lua_State *L, size_t nbytes) {
  gl_lctx *ctx = gl_lua_ctx(L);
  if (ctx == NULL) return;
  ctx->since_full += nbytes;
  ctx->gc_debt += nbytes;
}

void gl_lua_account_array(lua_State *L, const gl_array *a) {
  /* a light array's bytes are in the Lua heap already */
  if (a->storage && a->size >= 256 && !a->storage->lua_owned) gl_lua_account(L, (size_t)a->size * gl_array_itemsize(a));
}

gl_array *gl_lua_optarray(lua_State *L, int idx) {
  return lua_isnoneornil(L, idx) ? NULL : gl_lua_check(L, idx);
}

/* Pays the recorded debt: a step, or a full collection past the threshold. Runs
** before a new array exists (see above). */
void gl_lua_pay_gc_debt(lua_State *L, gl_lctx *ctx) {
  if (ctx->since_full >= (ctx->full_threshold > GC_MIN_FULL ? ctx->full_threshold : GC_MIN_FULL)) {
    ctx->since_full = 0;
    ctx->gc_debt = 0;
    lua_gc(L, LUA_GCCOLLECT);
    gl_meminfo m;
    gl_backend_get(GL_CPU)->memory(gl_cpu(), &m);
    ctx->full_threshold = m.allocated;
    return;
  }
  int kb = ctx->gc_debt / 1024 > 0x3fffffff ? 0x3fffffff : (int)(ctx->gc_debt / 1024);
  ctx->gc_debt = 0;
  lua_gc(L, LUA_GCSTEP, kb);
}

/* The running thread of the last op on this thread of the host (set by gl_lua_push,
** which every op calls before its work), so that the reclaim hook collects on the
** thread that is running. Cleared when its state closes. */
static _Thread_local lua_State *current_state;

void gl_lua_set_current(lua_State *L) { current_state = L; }
void gl_lua_forget_current(lua_State *L) {
  if (current_state && lua_topointer(current_state, LUA_REGISTRYINDEX) == lua_topointer(L, LUA_REGISTRYINDEX))
    current_state = NULL;
}

/* gl_storage_new's hook: empty the device's cache, collect, and let it try again. */
static void reclaim(gl_device dev) {
  const gl_backend *b = gl_backend_get(dev.type);
  if (b) b->empty_cache(dev);
  if (current_state) lua_gc(current_state, LUA_GCCOLLECT);
}

void gl_lua_install_reclaim(void) { gl_set_reclaim(reclaim); }

int gl_lua_result(lua_State *L, gl_status st, const gl_array *out, int arg) {
  gl_lua_check_status(L, st, arg);
  gl_lua_account_array(L, out);
  return 1;
}

gl_array *gl_lua_alloc(lua_State *L, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev) {
  gl_array *a = gl_lua_push(L);
  gl_lua_check_status(L, gl_array_alloc(a, dt, ndim, shape, dev), 0);
  if (a->size >= 256) gl_lua_account(L, (size_t)a->size * gl_dtypes[dt].size);
  return a;
}

