/*
** largs.c — the one options reader of the C binding (its Lua twin is lua/gpu/options.lua).
**
** A function that takes an options table declares its keys once, as a gl_optdecl
** (name, type, range or choices), and reads the table with gl_lua_readopts. An unknown
** key is an error naming the nearest declared one; a value of the wrong type, NaN, or
** outside its range names the option:
**   bad argument #2 to 'sum' (unknown option 'keepdim'; did you mean 'keepdims'?)
** Declarations are listed in gpu._options (name -> {keys =, example =}) when the module
** opens (gl_lua_declare), where spec/options_spec.lua finds them: every declared
** function is called with an unknown key through its example.
**
** options.lua's reader, for the Lua parts, refuses an unknown key with the same message
** and the same nearest-name rule: gpu._unknown_option, gpu._nearest and gpu._word_distance
** are this file's.
**
** The other argument readers of the binding live here too: shapes, axes, dtypes and
** devices, so that each is read (and refused) one way everywhere; and gpu._dtypes, the
** dtype table for the Lua parts and the tools.
*/
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include "lgpu.h"

const char gl_options_key = 'o';

/* ---- nearest key ------------------------------------------------------------------------ */

/* Damerau-Levenshtein distance of two short words (adjacent swaps count one); words of
** 64 bytes or more count as far apart. */
static int word_distance(const char *a, const char *b) {
  enum { N = 64 };   /* the longest names compared (keras's loss names reach 33 bytes) */
  size_t la = strlen(a), lb = strlen(b);
  if (la >= N || lb >= N) return 1000;
  int d[N + 1][N + 1];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int cost = a[i - 1] != b[j - 1];
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb];
}

/* gpu._word_distance(a, b): the same distance for the Lua parts (options.lua's reader,
** help's nearest names), so every "did you mean" measures alike. */
static int l_word_distance(lua_State *L) {
  lua_pushinteger(L, word_distance(luaL_checkstring(L, 1), luaL_checkstring(L, 2)));
  return 1;
}

/* The nearest of the candidates, compared without regard to case; the first of the
** nearest on a tie. */
const char *gl_lua_nearest(const char *word, const char *const *candidates, int n) {
  enum { N = 64 };   /* as word_distance: longer words are far from everything */
  char lw[N], lc[N];
  size_t len = strlen(word);
  if (len >= N) return NULL;
  for (size_t i = 0; i <= len; i++) lw[i] = (char)tolower((unsigned char)word[i]);
  const char *best = NULL;
  int bestd = 1000;
  for (int i = 0; i < n; i++) {
    size_t m = strlen(candidates[i]);
    if (m >= N) continue;
    for (size_t j = 0; j <= m; j++) lc[j] = (char)tolower((unsigned char)candidates[i][j]);
    int dd = word_distance(lw, lc);
    if (dd < bestd) { best = candidates[i]; bestd = dd; }
  }
  int limit = (int)len / 3 > 2 ? (int)len / 3 : 2;
  return best && bestd <= limit && bestd < (int)len ? best : NULL;
}

/* gpu._nearest(word, candidates) -> the candidate gl_lua_nearest picks, or nil: the Lua
** parts' "did you mean" (options.nearest) is the C reader's. */
static int l_nearest(lua_State *L) {
  const char *word = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Unsigned n = lua_rawlen(L, 2);
  luaL_argcheck(L, n < INT_MAX / sizeof(char *), 2, "too many candidates");
  const char **names = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *names, 0);
  for (lua_Unsigned i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 2, (lua_Integer)i) != LUA_TSTRING) luaL_argerror(L, 2, "a list of strings expected");
    names[i - 1] = lua_tostring(L, -1);        /* the table keeps the string */
    lua_pop(L, 1);
  }
  const char *near = gl_lua_nearest(word, names, (int)n);
  if (near) lua_pushstring(L, near);
  else lua_pushnil(L);
  return 1;
}

/* ---- declarations ------------------------------------------------------------------------ */

static int nkeys(const gl_optdecl *d) {
  int n = 0;
  while (d->keys[n].name) n++;
  return n;
}

/* Why the key at slot k is refused by a declaration of fname with these names: the
** nearest of them when close, else all of them; pushed. One message for both readers
** (options.lua's through gpu._unknown_option). */
static const char *push_unknown_key(lua_State *L, int k, const char *fname, const char *const *names, int n) {
  luaL_Buffer b;
  const char *key = NULL;
  if (lua_type(L, k) == LUA_TSTRING) {
    key = lua_tostring(L, k);
    const char *near = gl_lua_nearest(key, names, n);
    if (near) return lua_pushfstring(L, "unknown option '%s'; did you mean '%s'?", key, near);
  }
  luaL_buffinit(L, &b);
  for (int i = 0; i < n; i++) {
    if (i) luaL_addstring(&b, ", ");
    luaL_addstring(&b, names[i]);
  }
  if (n == 0) luaL_addstring(&b, "no options");
  luaL_pushresult(&b);
  const char *list = lua_tostring(L, -1);
  if (key) return lua_pushfstring(L, "unknown option '%s' (%s takes: %s)", key, fname, list);
  lua_pushvalue(L, k);
  return lua_pushfstring(L, "unexpected entry [%s] in the options table (%s takes: %s)", luaL_tolstring(L, -1, NULL),
                         fname, list);
}

/* gpu._unknown_option(fname, key, names) -> the message push_unknown_key makes. */
static int l_unknown_option(lua_State *L) {
  const char *fname = luaL_checkstring(L, 1);
  luaL_checkany(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  int n = (int)lua_rawlen(L, 3);
  luaL_argcheck(L, n <= 256, 3, "too many names");
  const char *names[256];
  for (int i = 0; i < n; i++) {
    if (lua_rawgeti(L, 3, i + 1) != LUA_TSTRING) luaL_argerror(L, 3, "a list of strings expected");
    names[i] = lua_tostring(L, -1);          /* the table keeps the string */
    lua_pop(L, 1);
  }
  push_unknown_key(L, 2, fname, names, n);
  return 1;
}

void gl_lua_declare(lua_State *L, const gl_optdecl *d) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &gl_options_key);
  if (!lua_istable(L, -1)) { lua_pop(L, 1); return; }
  lua_createtable(L, 0, 2);
  int n = nkeys(d);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, d->keys[i].name);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "keys");
  if (d->example) {
    lua_pushstring(L, d->example);
    lua_setfield(L, -2, "example");
  }
  lua_setfield(L, -2, d->name);
  lua_pop(L, 1);
}

void gl_lua_declare_all(lua_State *L, const gl_optdecl *const *list) {
  for (int i = 0; list[i]; i++) gl_lua_declare(L, list[i]);
}

/* ---- reading -------------------------------------------------------------------------------- */

static const char *type_word(gl_opttype t) {
  switch (t) {
    case GL_OPT_BOOL: return "a boolean";
    case GL_OPT_INT: return "an integer";
    case GL_OPT_NUMBER: return "a number";
    case GL_OPT_STRING: return "a string";
    case GL_OPT_DTYPE: return "a dtype name";
    case GL_OPT_DEVICE: return "a device name";
    case GL_OPT_PAIR: return "an integer or a pair {h, w} of integers";
    case GL_OPT_NUMSTR: return "a number or a string";
    case GL_OPT_TABLE: return "a table";
    case GL_OPT_ARRAY: return "a gpu.array";
    case GL_OPT_ANY: return "a value";
  }
  return "a value";
}

/* A readable form of the value at v, pushed: "integer 3", "'relu'", "table". */
static const char *push_value_desc(lua_State *L, int v) {
  switch (lua_type(L, v)) {
    case LUA_TNUMBER:
      return lua_isinteger(L, v) ? lua_pushfstring(L, "integer %I", (lua_Integer)lua_tointeger(L, v))
                                 : lua_pushfstring(L, "number %f", lua_tonumber(L, v));
    case LUA_TSTRING: return lua_pushfstring(L, "'%s'", lua_tostring(L, v));
    default: return lua_pushstring(L, gl_lua_test(L, v) ? "gpu.array" : luaL_typename(L, v));
  }
}

/* A number against the key's range: NaN is always out. */
static void check_range(lua_State *L, int idx, const gl_optkey *k, double x, int v) {
  const char *why = NULL;
  char bound[64];
  if (isnan(x)) why = "must not be NaN";
  else if ((k->range & GL_RANGE_MIN) && (x < k->min || ((k->range & GL_RANGE_MIN_OPEN) && x == k->min))) {
    snprintf(bound, sizeof bound, "must be %s %.17g", (k->range & GL_RANGE_MIN_OPEN) ? ">" : ">=", k->min);
    why = bound;
  } else if ((k->range & GL_RANGE_MAX) && (x > k->max || ((k->range & GL_RANGE_MAX_OPEN) && x == k->max))) {
    snprintf(bound, sizeof bound, "must be %s %.17g", (k->range & GL_RANGE_MAX_OPEN) ? "<" : "<=", k->max);
    why = bound;
  }
  if (why) {
    const char *got = push_value_desc(L, v);
    luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' %s, got %s", k->name, why, got));
  }
}

/* Is 'word' one of the space-separated 'choices'? Returns its position or -1. */
static int choice_index(const char *choices, const char *word) {
  size_t n = strlen(word);
  int i = 0;
  for (const char *p = choices; *p; i++) {
    size_t m = strcspn(p, " ");
    if (m == n && strncmp(p, word, n) == 0) return i;
    p += m;
    while (*p == ' ') p++;
  }
  return -1;
}

static void read_string(lua_State *L, int idx, const gl_optkey *k, int v, gl_optval *out) {
  out->s = lua_tostring(L, v);
  out->choice = -1;
  if (k->choices == NULL) return;
  out->choice = choice_index(k->choices, out->s);
  if (out->choice >= 0) return;
  /* the nearest choice, for the message */
  const char *words[32];
  char buf[512];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", k->choices);
  for (char *p = strtok(buf, " "); p && n < 32; p = strtok(NULL, " ")) words[n++] = p;
  const char *near = gl_lua_nearest(out->s, words, n);
  luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be one of %s, got '%s'%s%s%s", k->name, k->choices,
                                        out->s, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : ""));
}

static void read_pair_value(lua_State *L, int idx, const gl_optkey *k, int v, gl_optval *out) {
  if (lua_type(L, v) == LUA_TTABLE) {
    if (luaL_len(L, v) != 2)
      luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be %s", k->name, type_word(k->type)));
    for (int j = 0; j < 2; j++) {
      lua_geti(L, v, j + 1);
      if (!lua_isinteger(L, -1))
        luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be %s", k->name, type_word(k->type)));
      lua_Integer x = lua_tointeger(L, -1);
      check_range(L, idx, k, (double)x, lua_gettop(L));
      out->pair[j] = x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int)x;
      lua_pop(L, 1);
    }
    return;
  }
  if (!lua_isinteger(L, v))
    luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be %s, got %s", k->name, type_word(k->type),
                                          push_value_desc(L, v)));
  lua_Integer x = lua_tointeger(L, v);
  check_range(L, idx, k, (double)x, v);
  out->pair[0] = out->pair[1] = x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int)x;
}

/* One value at stack slot v for key k. */
static void read_value(lua_State *L, int idx, const gl_optkey *k, int v, gl_optval *out) {
  int t = lua_type(L, v);
  bool ok;
  switch (k->type) {
    case GL_OPT_BOOL: ok = t == LUA_TBOOLEAN; break;
    case GL_OPT_INT: ok = lua_isinteger(L, v); break;
    case GL_OPT_NUMBER: ok = t == LUA_TNUMBER; break;
    case GL_OPT_STRING: case GL_OPT_DTYPE: case GL_OPT_DEVICE: ok = t == LUA_TSTRING; break;
    case GL_OPT_NUMSTR: ok = t == LUA_TNUMBER || t == LUA_TSTRING; break;
    case GL_OPT_TABLE: ok = t == LUA_TTABLE; break;
    case GL_OPT_ARRAY: ok = gl_lua_test(L, v) != NULL; break;
    case GL_OPT_PAIR: read_pair_value(L, idx, k, v, out); out->set = true; return;
    default: ok = true; break;
  }
  if (!ok) {
    const char *got = push_value_desc(L, v);
    luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be %s, got %s", k->name, type_word(k->type), got));
  }
  out->set = true;
  switch (k->type) {
    case GL_OPT_BOOL: out->b = lua_toboolean(L, v); break;
    case GL_OPT_INT: out->i = lua_tointeger(L, v); check_range(L, idx, k, (double)out->i, v); out->n = (double)out->i; break;
    case GL_OPT_NUMBER: out->n = lua_tonumber(L, v); check_range(L, idx, k, out->n, v); break;
    case GL_OPT_STRING: read_string(L, idx, k, v, out); break;
    case GL_OPT_NUMSTR:
      if (t == LUA_TNUMBER) { out->s = NULL; out->n = lua_tonumber(L, v); check_range(L, idx, k, out->n, v); }
      else read_string(L, idx, k, v, out);
      break;
    case GL_OPT_DTYPE: {
      int dt = gl_dtype_from_name(lua_tostring(L, v));
      if (dt < 0)
        luaL_argerror(L, idx, lua_pushfstring(L, "option '%s': unknown dtype '%s' (expected one of %s)", k->name,
                                              lua_tostring(L, v), gl_dtype_names()));
      out->dtype = (gl_dtype)dt;
      break;
    }
    case GL_OPT_DEVICE: {
      const gl_backend *b;
      gl_lua_check_status(L, gl_device_parse(lua_tostring(L, v), &out->device), idx);
      gl_lua_check_status(L, gl_backend_for(out->device, &b), idx);
      break;
    }
    default: break;
  }
}

void gl_lua_readopts(lua_State *L, int idx, const gl_optdecl *d, gl_optval *vals) {
  int n = nkeys(d);
  memset(vals, 0, (size_t)n * sizeof *vals);
  if (lua_isnoneornil(L, idx)) return;
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx))
    luaL_argerror(L, idx, lua_pushfstring(L, "options table expected, got %s", push_value_desc(L, idx)));
  luaL_checkstack(L, 8, "options");
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int v = lua_gettop(L);
    int found = -1;
    if (lua_type(L, v - 1) == LUA_TSTRING) {
      const char *key = lua_tostring(L, v - 1);
      for (int i = 0; i < n; i++)
        if (strcmp(d->keys[i].name, key) == 0) { found = i; break; }
    }
    if (found < 0) {
      const char *names[64];
      int m = n < 64 ? n : 64;
      for (int i = 0; i < m; i++) names[i] = d->keys[i].name;
      luaL_argerror(L, idx, push_unknown_key(L, v - 1, d->name, names, m));
    }
    read_value(L, idx, &d->keys[found], v, &vals[found]);
    lua_settop(L, v - 1);
  }
}

bool gl_lua_is_options(lua_State *L, int idx) {
  if (!lua_istable(L, idx) || gl_lua_test(L, idx)) return false;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    bool str = lua_type(L, -2) == LUA_TSTRING;
    lua_pop(L, 1);
    if (str) { lua_pop(L, 1); return true; }
  }
  return false;
}

/* ---- creation options ------------------------------------------------------------------------ */

const gl_optkey gl_create_keys[] = { GL_KEYS_DTYPE_DEVICE, { NULL } };

void gl_lua_opts(lua_State *L, int idx, const gl_optdecl *d, gl_dtype *dt, gl_device *dev, gl_optval *vals) {
  gl_optval own[2 + 16];
  if (vals == NULL) vals = own;
  gl_lua_readopts(L, idx, d, vals);
  if (vals[0].set) *dt = vals[0].dtype;
  if (vals[1].set) *dev = vals[1].device;
  else if (dev->type == 255) *dev = gl_lua_default_device(L);
}

gl_dtype gl_lua_dtype(lua_State *L, int idx) {
  const char *name = luaL_checkstring(L, idx);
  int t = gl_dtype_from_name(name);
  if (t < 0)
    luaL_argerror(L, idx, lua_pushfstring(L, "unknown dtype '%s' (expected one of %s)", name, gl_dtype_names()));
  return (gl_dtype)t;
}

/* ---- dtypes and devices ------------------------------------------------------------------- */

gl_device gl_lua_device(lua_State *L, int idx) {
  gl_device d;
  const char *name = luaL_checkstring(L, idx);
  gl_lua_check_status(L, gl_device_parse(name, &d), idx);
  const gl_backend *b;
  gl_lua_check_status(L, gl_backend_for(d, &b), idx);
  return d;
}

gl_device gl_lua_optdevice(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return gl_lua_default_device(L);
  gl_array *a = gl_lua_test(L, idx);
  if (a) return gl_array_device(gl_lua_check(L, idx));
  return gl_lua_device(L, idx);
}

/* gpu._dtypes: the dtype table (src/core/dtype.h) for the Lua parts, specs and tools, so
** no list of dtypes is written twice. Rows in dtype order, each
**   { name = "float32", size = 4, kind = "float", storage_only = false, aliases = {"float", "fp32"} }
** and every row also under its name and each of its aliases (gpu._dtypes.half is the
** float16 row): iterate with ipairs. */
static void push_dtypes(lua_State *L) {
  static const char *const kinds[] = { [GL_KIND_BOOL] = "bool", [GL_KIND_UINT] = "uint", [GL_KIND_INT] = "int",
                                       [GL_KIND_FLOAT] = "float" };
  lua_createtable(L, GL_NDTYPE, 3 * GL_NDTYPE);         /* the names, about two aliases each */
  int t = lua_gettop(L);
  for (int d = 0; d < GL_NDTYPE; d++) {
    const gl_dtype_info *info = &gl_dtypes[d];
    lua_createtable(L, 0, 5);
    lua_pushstring(L, info->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, info->size);
    lua_setfield(L, -2, "size");
    lua_pushstring(L, kinds[info->kind]);
    lua_setfield(L, -2, "kind");
    lua_pushboolean(L, info->storage_only);
    lua_setfield(L, -2, "storage_only");
    lua_createtable(L, 2, 0);                              /* aliases, split at spaces */
    int k = 0;
    for (const char *p = info->aliases; *p; ) {
      size_t w = strcspn(p, " ");
      if (w > 0) {
        lua_pushlstring(L, p, w);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, ++k);
        lua_pushvalue(L, -3);                              /* the row, under the alias */
        lua_rawset(L, t);
      }
      p += w;
      p += strspn(p, " ");
    }
    lua_setfield(L, -2, "aliases");
    lua_pushvalue(L, -1);
    lua_setfield(L, t, info->name);
    lua_rawseti(L, t, d + 1);
  }
}

void gl_open_args(lua_State *L, int module) {
  static const gl_reg funcs[] = { { "_word_distance", l_word_distance, 2 }, { "_nearest", l_nearest, 2 },
                                  { "_unknown_option", l_unknown_option, 3 }, { NULL, NULL, 0 } };
  gl_lua_setfuncs(L, module, funcs);
  push_dtypes(L);
  lua_setfield(L, module, "_dtypes");
}

/* ---- shapes --------------------------------------------------------------------------------- */

/* An options table: a table whose [1] is nil (a shape table has numbers). */
static bool is_opts(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return false;
  bool opts = lua_geti(L, idx, 1) == LUA_TNIL;
  lua_pop(L, 1);
  if (!opts) return false;
  lua_pushnil(L);                    /* {} is an empty shape, not options */
  bool any = lua_next(L, idx) != 0;
  if (any) lua_pop(L, 2);
  return any;
}

int64_t gl_lua_dim(lua_State *L, int idx, int arg) {
  int isnum;
  lua_Integer n = lua_tointegerx(L, idx, &isnum);
  if (!isnum) {
    if (lua_type(L, idx) == LUA_TNUMBER)
      luaL_argerror(L, arg, lua_pushfstring(L, "dimension %f is not an integer", lua_tonumber(L, idx)));
    luaL_argerror(L, arg, lua_pushfstring(L, "dimension expected, got %s", luaL_typename(L, idx)));
  }
  if (n < 0) luaL_argerror(L, arg, lua_pushfstring(L, "negative dimension %I", (lua_Integer)n));
  return n;
}

int gl_lua_shape(lua_State *L, int first, int *ndim, int64_t *shape) {
  int top = lua_gettop(L), n = 0;
  if (first <= top && lua_istable(L, first) && !is_opts(L, first)) {
    lua_Integer len = luaL_len(L, first);
    if (len > GL_MAXDIMS)
      luaL_argerror(L, first, lua_pushfstring(L, "%I dimensions (at most %d)", (lua_Integer)len, GL_MAXDIMS));
    for (lua_Integer i = 1; i <= len; i++) {
      lua_geti(L, first, i);
      shape[n++] = gl_lua_dim(L, -1, first);
      lua_pop(L, 1);
    }
    first++;
  } else {
    while (first <= top && lua_type(L, first) == LUA_TNUMBER) {
      if (n == GL_MAXDIMS) luaL_argerror(L, first, lua_pushfstring(L, "too many dimensions (at most %d)", GL_MAXDIMS));
      shape[n++] = gl_lua_dim(L, first, first);
      first++;
    }
  }
  *ndim = n;                /* its size is checked with the dtype, once the options are read */
  return first;
}

int gl_lua_dims(lua_State *L, int first, int64_t *shape) {
  int n = 0, top = lua_gettop(L);
  bool table = lua_istable(L, first);
  int count = table ? (int)(luaL_len(L, first) > GL_MAXDIMS + 1 ? GL_MAXDIMS + 1 : luaL_len(L, first)) : top - first + 1;
  if (count > GL_MAXDIMS) luaL_argerror(L, first, "too many dimensions");
  for (int i = 0; i < count; i++) {
    if (table) lua_geti(L, first, i + 1);
    int slot = table ? lua_gettop(L) : first + i;
    lua_Integer d = gl_lua_int(L, slot, "dimension");
    if (d < -1) luaL_argerror(L, table ? first : slot, lua_pushfstring(L, "negative dimension %I", d));
    shape[n++] = d;
    if (table) lua_pop(L, 1);
  }
  return n;
}

/* ---- axes ----------------------------------------------------------------------------------- */

/* One 1-based axis at slot 'slot' (reported at argument 'arg') into axes[n]. */
static void read_axis(lua_State *L, int slot, int arg, int ndim, int *axes, int n, const char *what) {
  int isnum;
  lua_Integer a = lua_tointegerx(L, slot, &isnum);
  if (!isnum)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s must be an integer, got %s", what, luaL_typename(L, slot)));
  gl_lua_check_status(L, gl_axis_norm(a, ndim, &axes[n]), arg);
  for (int k = 0; k < n; k++)
    if (axes[k] == axes[n]) luaL_argerror(L, arg, lua_pushfstring(L, "repeated axis %d", axes[n] + 1));
}

int gl_lua_axes(lua_State *L, int idx, int ndim, int *axes, unsigned flags) {
  int t = lua_type(L, idx);
  if (t == LUA_TNONE || t == LUA_TNIL) return (flags & GL_AXES_VARARGS) ? 0 : -1;
  if (t == LUA_TTABLE && !gl_lua_test(L, idx)) {
    if (flags & GL_AXES_ONE) luaL_argerror(L, idx, "one axis (a number) expected, not a table");
    lua_Integer len = luaL_len(L, idx);
    if (len > GL_MAXDIMS) luaL_argerror(L, idx, "too many axes");
    for (lua_Integer i = 1; i <= len; i++) {
      lua_geti(L, idx, i);
      char what[24];
      snprintf(what, sizeof what, "axis %d", (int)i);
      read_axis(L, lua_gettop(L), idx, ndim, axes, (int)i - 1, what);
      lua_pop(L, 1);
    }
    return (int)len;
  }
  if (t != LUA_TNUMBER)
    luaL_argerror(L, idx, lua_pushfstring(L, "axis must be an integer, a table of integers or nil, got %s",
                                          luaL_typename(L, idx)));
  if (!(flags & GL_AXES_VARARGS)) {
    read_axis(L, idx, idx, ndim, axes, 0, "axis");
    return 1;
  }
  int n = 0, top = lua_gettop(L);
  for (int i = idx; i <= top; i++) {
    if (n == GL_MAXDIMS) luaL_argerror(L, i, "too many axes");
    read_axis(L, i, i, ndim, axes, n, "axis");
    n++;
  }
  return n;
}

/* ---- argument counts ----------------------------------------------------------------------- */

int gl_lua_too_many(lua_State *L, int nargs) {
  int got = lua_gettop(L), shown = nargs;
  lua_Debug ar;
  /* x:f(a) counts x as argument 1, as luaL_argerror does: say what the method takes */
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && strcmp(ar.namewhat, "method") == 0 && nargs > 0) {
    shown--;
    got--;
  }
  return luaL_argerror(L, nargs + 1, lua_pushfstring(L, "at most %d argument%s expected, got %d", shown,
                                                     shown == 1 ? "" : "s", got));
}

int gl_lua_optsarg(lua_State *L, int first, int last, const char *what) {
  int top = lua_gettop(L), o = first;
  while (o < last && o < top && lua_isnil(L, o)) o++;
  if (!lua_isnoneornil(L, o) && !lua_istable(L, o))
    luaL_argerror(L, o, lua_pushfstring(L, "%s expected, got %s", what, luaL_typename(L, o)));
  if (top > o) luaL_argerror(L, o + 1, "no argument expected after the options table");
  return o;
}
