/*
** largs.c — the one options reader, for the C binding and the Lua parts alike.
**
** A function that takes an options table declares its keys once, as a gl_optdecl
** (name, the kinds of value each takes, range or choices), and reads the table with
** gl_lua_readopts. An unknown key is an error naming the nearest declared one; a value of
** the wrong type, NaN, or outside its range names the option:
**   bad argument #2 to 'sum' (unknown option 'keepdim'; did you mean 'keepdims'?)
** Declarations are listed in gpu._options (name -> {keys =, example =}) when the module
** opens (gl_lua_declare), where spec/options_spec.lua finds them: every declared
** function is called with an unknown key through its example.
**
** lua/gpu/options.lua's declarations are made of the same gl_optkeys: options.declare
** hands its key table to gpu._declare_options once, and decl:check reads with
** gpu._read_options; what only a Lua key has (a default, a check function, 'what',
** 'unsupported') is kept beside the keys. options.value reads one argument against one
** such key (gpu._check_value). So every type, range, choice and unknown-key message, and
** the nearest-name rule (gpu._nearest, gpu._word_distance), is this file's.
**
** The other argument readers of the binding live here too: shapes, axes, dtypes and
** devices, so that each is read (and refused) one way everywhere.
*/
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
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

/* The nearest of the candidates, compared without regard to case; on a tie the first in
** sorted order, whatever order they are given in. */
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
    if (dd < bestd || (dd == bestd && strcmp(candidates[i], best) < 0)) { best = candidates[i]; bestd = dd; }
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
** nearest of them when close, else all of them; pushed. */
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

/* What only options.lua's declarations give a key (a C declaration gives none of it). */
typedef struct key_extra {
  const char *what;          /* the values it takes as errors name them ("a list of epochs"), or NULL */
  const char *unsupported;   /* non-NULL: the key is refused, with this hint ("": none) */
  bool check;                /* a check function (v -> ok [, why]) runs after the rest */
} key_extra;

/* Each kind of value a key may take: its name in options.lua's type strings ("integer|table")
** and in errors. */
static const struct { unsigned bit; const char *name, *words; } opt_kinds[] = {
  { GL_OPT_BOOL, "boolean", "a boolean" }, { GL_OPT_INT, "integer", "an integer" },
  { GL_OPT_NUMBER, "number", "a number" }, { GL_OPT_STRING, "string", "a string" },
  { GL_OPT_DTYPE, "dtype", "a dtype name" }, { GL_OPT_DEVICE, "device", "a device name" },
  { GL_OPT_PAIR, NULL, "an integer or a pair {h, w} of integers" }, { GL_OPT_TABLE, "table", "a table" },
  { GL_OPT_ARRAY, "array", "a gpu.array" }, { GL_OPT_FUNCTION, "function", "a function" },
  { GL_OPT_CALLABLE, "callable", "a callable" }, { GL_OPT_ANY, "any", "a value" },
};
enum { NKINDS = sizeof opt_kinds / sizeof opt_kinds[0] };

/* What key k takes, as errors say it ("a string or a function"), pushed. */
static const char *push_kind_words(lua_State *L, const gl_optkey *k, const key_extra *x) {
  if (x && x->what) return lua_pushstring(L, x->what);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  bool first = true;
  for (int i = 0; i < NKINDS; i++)
    if (k->type & opt_kinds[i].bit) {
      if (!first) luaL_addstring(&b, " or ");
      luaL_addstring(&b, opt_kinds[i].words);
      first = false;
    }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
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

/* gpu._describe(v): the same form, for the Lua parts' messages. */
static int l_describe(lua_State *L) {
  lua_settop(L, 1);
  push_value_desc(L, 1);
  return 1;
}

/* Why the value is refused, pushed as "option 'name'<rest>" for a key of an options table
** or "name<rest>" for an argument read alone (options.value). */
static const char *fail(lua_State *L, const char *name, bool option, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const char *rest = lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return lua_pushfstring(L, option ? "option '%s'%s" : "%s%s", name, rest);
}

static bool callable(lua_State *L, int v) {
  if (lua_type(L, v) == LUA_TFUNCTION) return true;
  if (luaL_getmetafield(L, v, "__call") == LUA_TNIL) return false;
  lua_pop(L, 1);
  return true;
}

/* Does a key of these kinds take the value at v? */
static bool takes(lua_State *L, unsigned type, int v) {
  if (type & GL_OPT_ANY) return true;
  if ((type & GL_OPT_CALLABLE) && callable(L, v)) return true;
  switch (lua_type(L, v)) {
    case LUA_TBOOLEAN: return type & GL_OPT_BOOL;
    case LUA_TNUMBER: return (type & GL_OPT_NUMBER) || ((type & (GL_OPT_INT | GL_OPT_PAIR)) && lua_isinteger(L, v));
    case LUA_TSTRING: return type & (GL_OPT_STRING | GL_OPT_DTYPE | GL_OPT_DEVICE);
    case LUA_TTABLE: return type & (GL_OPT_TABLE | GL_OPT_PAIR);
    case LUA_TFUNCTION: return type & GL_OPT_FUNCTION;
    case LUA_TUSERDATA: return (type & GL_OPT_ARRAY) && gl_lua_test(L, v);
    default: return false;
  }
}

/* A number against the key's range (NaN is always out); NULL or why not, pushed. */
static const char *check_range(lua_State *L, const gl_optkey *k, bool option, int v) {
  double x = lua_tonumber(L, v);
  if (isnan(x)) return fail(L, k->name, option, " must not be NaN");
  bool low = (k->range & GL_RANGE_MIN) && (x < k->min || ((k->range & GL_RANGE_MIN_OPEN) && x == k->min));
  bool high = !low && (k->range & GL_RANGE_MAX) && (x > k->max || ((k->range & GL_RANGE_MAX_OPEN) && x == k->max));
  if (!low && !high) return NULL;
  char bound[64];
  snprintf(bound, sizeof bound, "%s %.14g", low ? ((k->range & GL_RANGE_MIN_OPEN) ? ">" : ">=")
                                                : ((k->range & GL_RANGE_MAX_OPEN) ? "<" : "<="), low ? k->min : k->max);
  return fail(L, k->name, option, " must be %s, got %s", bound, push_value_desc(L, v));
}

enum { CHOICES_MAX = 32, CHOICES_LEN = 512 };   /* the most choices a key has, and their length */

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

/* A string: a dtype or device name for such a key, else one of the choices where given. */
static const char *read_string(lua_State *L, const gl_optkey *k, bool option, int v, gl_optval *out) {
  const char *s = lua_tostring(L, v);
  if (k->type & GL_OPT_DTYPE) {
    int dt = gl_dtype_from_name(s);
    if (dt < 0) return fail(L, k->name, option, ": unknown dtype '%s' (expected one of %s)", s, gl_dtype_names());
    out->dtype = (gl_dtype)dt;
    return NULL;
  }
  if (k->type & GL_OPT_DEVICE) {
    const gl_backend *b;
    if (gl_device_parse(s, &out->device) != GL_OK || gl_backend_for(out->device, &b) != GL_OK)   /* names the device */
      return option ? fail(L, k->name, true, ": %s", gl_errmsg()) : lua_pushstring(L, gl_errmsg());
    return NULL;
  }
  out->s = s;
  out->choice = -1;
  if (k->choices == NULL) return NULL;
  out->choice = choice_index(k->choices, s);
  if (out->choice >= 0) return NULL;
  /* the nearest choice, for the message */
  const char *words[CHOICES_MAX];
  char buf[CHOICES_LEN];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", k->choices);
  for (char *p = strtok(buf, " "); p && n < CHOICES_MAX; p = strtok(NULL, " ")) words[n++] = p;
  const char *near = gl_lua_nearest(s, words, n);
  const char *listed = luaL_gsub(L, k->choices, " ", ", ");
  return fail(L, k->name, option, " must be one of %s, got '%s'%s%s%s", listed, s, near ? "; did you mean '" : "",
              near ? near : "", near ? "'?" : "");
}

static int clamp32(lua_Integer x) { return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int)x; }

/* A table {a, b} of two integers for a PAIR key. */
static const char *read_pair_table(lua_State *L, const gl_optkey *k, const key_extra *x, bool option, int v,
                                   gl_optval *out) {
  if (luaL_len(L, v) != 2) return fail(L, k->name, option, " must be %s", push_kind_words(L, k, x));
  for (int j = 0; j < 2; j++) {
    lua_geti(L, v, j + 1);
    if (!lua_isinteger(L, -1)) return fail(L, k->name, option, " must be %s", push_kind_words(L, k, x));
    const char *why = check_range(L, k, option, lua_gettop(L));
    if (why) return why;
    out->pair[j] = clamp32(lua_tointeger(L, -1));
    lua_pop(L, 1);
  }
  return NULL;
}

/* One value at slot v for key k into *out; NULL, or why not (pushed). */
static const char *read_value(lua_State *L, const gl_optkey *k, const key_extra *x, int v, bool option,
                              gl_optval *out) {
  if (x && x->unsupported)
    return fail(L, k->name, option, " is not supported%s%s%s", *x->unsupported ? " (" : "", x->unsupported,
                *x->unsupported ? ")" : "");
  if (!takes(L, k->type, v)) {
    const char *got = push_value_desc(L, v);
    return fail(L, k->name, option, " must be %s, got %s", push_kind_words(L, k, x), got);
  }
  out->set = true;
  switch (lua_type(L, v)) {
    case LUA_TBOOLEAN: out->b = lua_toboolean(L, v); return NULL;
    case LUA_TNUMBER:
      out->n = lua_tonumber(L, v);
      if (lua_isinteger(L, v)) {
        out->i = lua_tointeger(L, v);
        out->pair[0] = out->pair[1] = clamp32(out->i);
      }
      return check_range(L, k, option, v);
    case LUA_TSTRING: return read_string(L, k, option, v, out);
    case LUA_TTABLE: return (k->type & GL_OPT_PAIR) ? read_pair_table(L, k, x, option, v, out) : NULL;
    default: return NULL;
  }
}

/* The check function on top of the stack (popped) called with the value at v; NULL when
** it answers true, else its reason (or "has a bad value"), pushed. */
static const char *run_check(lua_State *L, const char *name, bool option, int v) {
  lua_pushvalue(L, v);
  lua_call(L, 1, 2);
  if (lua_toboolean(L, -2)) {
    lua_pop(L, 2);
    return NULL;
  }
  const char *why = lua_isnil(L, -1) ? "has a bad value" : luaL_tolstring(L, -1, NULL);
  return fail(L, name, option, " %s", why);
}

/* Reads the options table at idx (absolute; none or nil: nothing) against d into vals[]
** (NULL: not kept) and, where out is a table's slot, into that table (a dtype under its
** canonical name). extra and checks (the slot of a table of check functions by key number)
** are a Lua declaration's, NULL and 0 for C's. Returns NULL, or why not (pushed). */
static const char *read_options(lua_State *L, int idx, const gl_optdecl *d, const char *fname, const key_extra *extra,
                                int checks, gl_optval *vals, int out) {
  int n = nkeys(d);
  if (vals) memset(vals, 0, (size_t)n * sizeof *vals);
  if (lua_isnoneornil(L, idx)) return NULL;
  if (!lua_istable(L, idx)) return lua_pushfstring(L, "options table expected, got %s", push_value_desc(L, idx));
  luaL_checkstack(L, 12, "options");
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
      return push_unknown_key(L, v - 1, fname, names, m);
    }
    const gl_optkey *k = &d->keys[found];
    const key_extra *x = extra ? &extra[found] : NULL;
    gl_optval scratch = { 0 }, *val = vals ? &vals[found] : &scratch;
    const char *why = read_value(L, k, x, v, true, val);
    if (why == NULL && x && x->check) {
      lua_rawgeti(L, checks, found + 1);
      why = run_check(L, k->name, true, v);
    }
    if (why) return why;
    if (out) {
      lua_pushvalue(L, v - 1);
      if ((k->type & GL_OPT_DTYPE) && lua_type(L, v) == LUA_TSTRING) lua_pushstring(L, gl_dtypes[val->dtype].name);
      else lua_pushvalue(L, v);
      lua_rawset(L, out);
    }
    lua_settop(L, v - 1);
  }
  return NULL;
}

void gl_lua_readopts(lua_State *L, int idx, const gl_optdecl *d, gl_optval *vals) {
  idx = lua_absindex(L, idx);
  const char *why = read_options(L, idx, d, d->name, NULL, 0, vals, 0);
  if (why) luaL_argerror(L, idx, why);
}

/* ---- options.lua's declarations ------------------------------------------------------------ */

/* A key as options.lua declares it, from the value at slot s: a type string ("number",
** "string|function") or a table {type =, min =, max =, min_open =, max_open =, choices =,
** what =, unsupported =, check =, ...}. Its strings stay the spec's, but for the choices,
** joined by spaces and pushed (nil when there are none). Raises on a malformed spec. */
static void parse_key(lua_State *L, int s, const char *name, gl_optkey *k, key_extra *x) {
  memset(k, 0, sizeof *k);
  memset(x, 0, sizeof *x);
  k->name = name;
  const char *type = NULL;
  bool table = lua_type(L, s) == LUA_TTABLE;
  if (lua_type(L, s) == LUA_TSTRING) type = lua_tostring(L, s);
  else if (!table) luaL_error(L, "options.declare: key '%s': a type name or a table expected", name);
  int joined = lua_gettop(L) + 1;
  lua_pushnil(L);                                        /* the choices, joined */
  if (table) {
    if (lua_getfield(L, s, "choices") == LUA_TTABLE) {
      int c = lua_gettop(L);
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (lua_Integer i = 1; lua_rawgeti(L, c, i) != LUA_TNIL; i++) {
        const char *w = lua_tostring(L, -1);
        bool word = lua_type(L, -1) == LUA_TSTRING && *w != '\0' && strchr(w, ' ') == NULL;
        lua_pop(L, 1);                                   /* the list keeps the string */
        if (!word) luaL_error(L, "options.declare: key '%s': the choices must be words", name);
        if (i > 1) luaL_addchar(&b, ' ');
        luaL_addstring(&b, w);
      }
      lua_pop(L, 1);
      luaL_pushresult(&b);
      if (lua_rawlen(L, -1) >= CHOICES_LEN || lua_rawlen(L, c) > CHOICES_MAX)
        luaL_error(L, "options.declare: key '%s': too many choices", name);
      lua_replace(L, joined);
      k->choices = lua_tostring(L, joined);
    }
    lua_pop(L, 1);
    if (lua_getfield(L, s, "type") == LUA_TSTRING) type = lua_tostring(L, -1);
    else if (k->choices) type = "string";
    lua_pop(L, 1);                                       /* the spec keeps the string */
    static const char *const bounds[] = { "min", "max", "min_open", "max_open" };
    for (int i = 0; i < 4; i++) {
      int t = lua_getfield(L, s, bounds[i]);
      if (i < 2 && t == LUA_TNUMBER) {
        k->range |= i == 0 ? GL_RANGE_MIN : GL_RANGE_MAX;
        *(i == 0 ? &k->min : &k->max) = lua_tonumber(L, -1);
      } else if (i >= 2 && lua_toboolean(L, -1)) k->range |= i == 2 ? GL_RANGE_MIN_OPEN : GL_RANGE_MAX_OPEN;
      lua_pop(L, 1);
    }
    if (lua_getfield(L, s, "what") == LUA_TSTRING) x->what = lua_tostring(L, -1);
    lua_pop(L, 1);
    int t = lua_getfield(L, s, "unsupported");
    if (t == LUA_TSTRING) x->unsupported = lua_tostring(L, -1);
    else if (lua_toboolean(L, -1)) x->unsupported = "";
    lua_pop(L, 1);
    t = lua_getfield(L, s, "check");
    if (t != LUA_TNIL && t != LUA_TFUNCTION) luaL_error(L, "options.declare: key '%s': check must be a function", name);
    x->check = t == LUA_TFUNCTION;
    lua_pop(L, 1);
  }
  for (const char *p = type ? type : "any"; *p; ) {
    size_t m = strcspn(p, "|");
    int i = 0;
    while (i < NKINDS && !(opt_kinds[i].name && strncmp(opt_kinds[i].name, p, m) == 0 && opt_kinds[i].name[m] == '\0'))
      i++;
    if (i == NKINDS) luaL_error(L, "options.declare: key '%s': unknown type '%s'", name, lua_pushlstring(L, p, m));
    k->type |= opt_kinds[i].bit;
    p += m + (p[m] == '|');
  }
}

/* A declaration made by options.declare: its keys in sorted order, with their Lua parts.
** User values: 1 the strings it points to (and the keys table), 2 the defaults by key name,
** 3 the check functions by key number. */
typedef struct lua_decl {
  gl_optdecl d;
  key_extra *extra;
  gl_optkey keys[];       /* n + 1, then the n key_extra */
} lua_decl;

static const char *const decl_meta = "gpulua.options";

static int by_name(const void *a, const void *b) {
  return strcmp(((const gl_optkey *)a)->name, ((const gl_optkey *)b)->name);
}

/* gpu._declare_options(name, keys [, example]) -> a declaration for gpu._read_options, listed
** in gpu._options; keys as options.lua's declare takes them (name -> spec). */
static int l_declare_options(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *example = luaL_optstring(L, 3, NULL);
  lua_settop(L, 3);
  int n = 0;
  for (lua_pushnil(L); lua_next(L, 2); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "options.declare: %s: a key name expected", name);
    n++;
  }
  luaL_argcheck(L, n <= 255, 2, "too many keys");
  lua_decl *D = lua_newuserdatauv(L, sizeof *D + (size_t)(n + 1) * sizeof(gl_optkey) + (size_t)n * sizeof(key_extra),
                                  3);                  /* 4 */
  luaL_setmetatable(L, decl_meta);
  D->extra = (key_extra *)(D->keys + n + 1);
  D->d = (gl_optdecl){ name, example, D->keys };
  lua_createtable(L, 4 * n + 3, 0);                    /* 5: what the pointers point into */
  for (int i = 1; i <= 3; i++) {
    lua_pushvalue(L, i);
    lua_rawseti(L, 5, i);
  }
  lua_createtable(L, 0, n);                            /* 6: defaults */
  lua_createtable(L, n, 0);                            /* 7: checks */
  int i = 0, anchored = 3;
  for (lua_pushnil(L); lua_next(L, 2); lua_pop(L, 1)) D->keys[i++].name = lua_tostring(L, -2);
  qsort(D->keys, (size_t)n, sizeof D->keys[0], by_name);
  D->keys[n] = (gl_optkey){ 0 };
  for (i = 0; i < n; i++) {
    const char *key = D->keys[i].name;
    lua_getfield(L, 2, key);                           /* 8: the spec */
    parse_key(L, 8, key, &D->keys[i], &D->extra[i]);   /* 9: the choices */
    lua_rawseti(L, 5, ++anchored);
    lua_pushstring(L, key);
    D->keys[i].name = lua_tostring(L, -1);
    lua_rawseti(L, 5, ++anchored);
    if (lua_istable(L, 8)) {                           /* the strings of what and unsupported */
      lua_getfield(L, 8, "what");
      lua_rawseti(L, 5, ++anchored);
      lua_getfield(L, 8, "unsupported");
      lua_rawseti(L, 5, ++anchored);
    }
    if (lua_istable(L, 8)) {
      if (lua_getfield(L, 8, "default") != LUA_TNIL) lua_setfield(L, 6, key);
      else lua_pop(L, 1);
      if (lua_getfield(L, 8, "check") == LUA_TFUNCTION) lua_rawseti(L, 7, i + 1);
      else lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  for (i = 3; i >= 1; i--) lua_setiuservalue(L, 4, i);
  gl_lua_declare(L, &D->d);
  return 1;
}

/* gpu._read_options(decl, opts [, fname]) -> a new table of every declared key (the value
** given, else its default), or nil and why opts is refused (fname names the function in
** the list of keys; the declaration's name by default). */
static int l_read_options(lua_State *L) {
  lua_decl *D = luaL_checkudata(L, 1, decl_meta);
  const char *fname = luaL_optstring(L, 3, D->d.name);
  lua_settop(L, 3);
  lua_getiuservalue(L, 1, 2);                          /* 4: defaults */
  lua_getiuservalue(L, 1, 3);                          /* 5: checks */
  lua_createtable(L, 0, 8);                            /* 6: the result */
  for (lua_pushnil(L); lua_next(L, 4); ) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, 6);
  }
  const char *why = read_options(L, 2, &D->d, fname, D->extra, 5, NULL, 6);
  if (why == NULL) {
    lua_settop(L, 6);
    return 1;
  }
  lua_pushnil(L);
  lua_pushstring(L, why);
  return 2;
}

/* gpu._check_value(v, spec [, what]) -> true and v (its default when nil), or false and why
** not: one argument read against a key as options.lua declares it, named 'what' ("value")
** in messages. A nil without a default is refused unless the spec says optional = true. */
static int l_check_value(lua_State *L) {
  const char *what = luaL_optstring(L, 3, NULL);
  lua_settop(L, 3);
  gl_optkey k;
  key_extra x;
  parse_key(L, 2, what ? what : "value", &k, &x);    /* 4: the choices */
  if (lua_isnil(L, 1)) {
    bool table = lua_istable(L, 2);
    if (table && lua_getfield(L, 2, "default") != LUA_TNIL) {
      lua_pushboolean(L, 1);
      lua_insert(L, -2);
      return 2;
    }
    if (table && lua_getfield(L, 2, "optional") && lua_toboolean(L, -1)) {
      lua_pushboolean(L, 1);
      lua_pushnil(L);
      return 2;
    }
    lua_pushboolean(L, 0);
    lua_pushfstring(L, "%s expected, got no value", what ? what : push_kind_words(L, &k, &x));
    return 2;
  }
  gl_optval val = { 0 };
  const char *why = read_value(L, &k, &x, 1, false, &val);
  if (why == NULL && x.check) {
    lua_getfield(L, 2, "check");
    why = run_check(L, k.name, false, 1);
  }
  lua_pushboolean(L, why == NULL);
  if (why) lua_pushstring(L, why);
  else lua_pushvalue(L, 1);
  return 2;
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

void gl_open_args(lua_State *L, int module) {
  static const gl_reg funcs[] = { { "_word_distance", l_word_distance, 2 }, { "_nearest", l_nearest, 2 },
                                  { "_describe", l_describe, 1 }, { "_declare_options", l_declare_options, 3 },
                                  { "_read_options", l_read_options, 3 }, { "_check_value", l_check_value, 3 },
                                  { NULL, NULL, 0 } };
  gl_lua_setfuncs(L, module, funcs);
  luaL_newmetatable(L, decl_meta);
  lua_pop(L, 1);
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

int64_t gl_lua_integer(lua_State *L, int idx, int arg, const char *what, const char *fraction_fmt,
                       const char *type_fmt) {
  int isnum;
  lua_Integer n = lua_tointegerx(L, idx, &isnum);
  if (!isnum) {
    if (lua_type(L, idx) == LUA_TNUMBER)
      luaL_argerror(L, arg, lua_pushfstring(L, fraction_fmt, what, lua_tonumber(L, idx)));
    luaL_argerror(L, arg, lua_pushfstring(L, type_fmt, what, luaL_typename(L, idx)));
  }
  return n;
}

int64_t gl_lua_dim(lua_State *L, int idx, int arg) {
  int64_t n = gl_lua_integer(L, idx, arg, "dimension", "%s %f is not an integer", "%s expected, got %s");
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
