/*
** ldtype.c — the dtypes seen from Lua: gpu._dtypes (the rows of kernels/dtypes.h, for the
** Lua parts, the specs and the tools), the dtype names as constants (gpu.float32,
** gpu.cfloat, ...), NumPy's gpu.iinfo and gpu.finfo, gpu.result_type and gpu.promote_types
** (src/core/dtype.c's promotion, NEP 50), and gpu._supports / gpu._families: whether a
** device's backend takes an op family in a dtype, the question every op asks before it
** allocates (and the message it raises when the answer is no).
*/
#include <math.h>
#include <string.h>
#include "lgpu.h"

/* gpu._dtypes: the dtype table (src/core/dtype.h) for the Lua parts, specs and tools, so
** no list of dtypes is written twice. Rows in dtype order, each
**   { name = "float32", size = 4, kind = "float", storage_only = false, aliases = {"float", "fp32"},
**     id = "float32", storage = "float", compute = "float", half = nil, prec = 24,
**     min = nil, max = nil, npy = "<f4", npc = "f", safetensors = "F32",
**     mpi = "float", nccl = "Float32", cuda = "R_32F", cudnn = "FLOAT", blas = "s", idx = 13 }
** (id, storage, compute: the row's id, S and CT columns of kernels/dtypes.h, the C names the
** run-time kernels are written with; half: "f16" or "bf16" for a storage-only float; min,
** max: an integer or bool dtype's range, uint64's max as a float; npy ... idx: the codes of
** the formats and libraries, absent where one has none) and every row also under its name
** and each of its aliases (gpu._dtypes.half is the float16 row): iterate with ipairs. */
static void push_dtypes(lua_State *L) {
  static const char *const kinds[] = { [GL_KIND_BOOL] = "bool", [GL_KIND_UINT] = "uint", [GL_KIND_INT] = "int",
                                       [GL_KIND_FLOAT] = "float", [GL_KIND_COMPLEX] = "complex" };
#define GL_DT_C_NAMES_(E, id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, nccl, cuda, \
                       cudnn, ...)                                                                                \
  [GL_##E] = { #id, #S, #CT, #half, #mpi, #nccl, #cuda, #cudnn, (double)(hi) },
  static const struct {
    const char *id, *storage, *compute, *half, *mpi, *nccl, *cuda, *cudnn;
    double hi;
  } c_names[GL_NDTYPE] = { GL_DTYPE_LIST(GL_DT_C_NAMES_) };
#undef GL_DT_C_NAMES_
  lua_createtable(L, GL_NDTYPE, 3 * GL_NDTYPE);         /* the names, about two aliases each */
  int t = lua_gettop(L);
  for (int d = 0; d < GL_NDTYPE; d++) {
    const gl_dtype_info *info = &gl_dtypes[d];
    lua_createtable(L, 0, 24);
    const struct { const char *key, *value; } strs[] = {
      { "name", info->name }, { "kind", kinds[info->kind] }, { "id", c_names[d].id },
      { "storage", c_names[d].storage }, { "compute", c_names[d].compute },
      { "half", info->storage_only ? c_names[d].half : NULL }, { "npy", info->npy }, { "npc", info->npc },
      { "safetensors", info->st }, { "mpi", c_names[d].mpi }, { "blas", info->blas },
      { "nccl", strcmp(c_names[d].nccl, "none") ? c_names[d].nccl : NULL },
      { "cuda", strcmp(c_names[d].cuda, "none") ? c_names[d].cuda : NULL },
      { "cudnn", strcmp(c_names[d].cudnn, "none") ? c_names[d].cudnn : NULL },
    };
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
      if (strs[i].value) { lua_pushstring(L, strs[i].value); lua_setfield(L, -2, strs[i].key); }
    lua_pushinteger(L, info->size);
    lua_setfield(L, -2, "size");
    lua_pushboolean(L, info->storage_only);
    lua_setfield(L, -2, "storage_only");
    lua_pushinteger(L, info->prec);
    lua_setfield(L, -2, "prec");
    if (info->idx) { lua_pushinteger(L, info->idx); lua_setfield(L, -2, "idx"); }
    int64_t lo, hi;
    if (gl_dtype_int_range((gl_dtype)d, &lo, &hi)) {
      lua_pushinteger(L, lo);
      lua_setfield(L, -2, "min");
      if (c_names[d].hi > (double)INT64_MAX) lua_pushnumber(L, c_names[d].hi);    /* uint64: 2^64 - 1 as a float */
      else lua_pushinteger(L, hi);
      lua_setfield(L, -2, "max");
    }
    lua_createtable(L, 2, 0);                              /* aliases */
    size_t len;
    for (int k = 0; gl_dtype_alias((gl_dtype)d, k, &len); k++) {
      lua_pushlstring(L, gl_dtype_alias((gl_dtype)d, k, &len), len);
      lua_pushvalue(L, -1);
      lua_rawseti(L, -3, k + 1);
      lua_pushvalue(L, -3);                                /* the row, under the alias */
      lua_rawset(L, t);
    }
    lua_setfield(L, -2, "aliases");
    lua_pushvalue(L, -1);
    lua_setfield(L, t, info->name);
    lua_rawseti(L, t, d + 1);
  }
}

/* gpu.float32 ... gpu.complex128 and every alias of a row (gpu.float, gpu.double, gpu.half,
** gpu.long, gpu.short, gpu.cfloat, ...): the dtype names, so gpu.array(t, {dtype = gpu.int32})
** and x.dtype == gpu.float32 read as in PyTorch. */
static void push_dtype_constants(lua_State *L, int module) {
  for (int t = 0; t < GL_NDTYPE; t++) {
    lua_pushstring(L, gl_dtypes[t].name);
    lua_setfield(L, module, gl_dtypes[t].name);
    size_t len;
    for (int k = 0; gl_dtype_alias((gl_dtype)t, k, &len); k++) {
      lua_pushlstring(L, gl_dtype_alias((gl_dtype)t, k, &len), len);
      lua_pushstring(L, gl_dtypes[t].name);
      lua_rawset(L, module);
    }
  }
}

/* ---- iinfo, finfo --------------------------------------------------------------------- */

/* A dtype argument: a name or alias, or an array (its dtype). */
static gl_dtype dtype_arg(lua_State *L, int idx) {
  gl_array *a = gl_lua_test(L, idx);
  return a ? (gl_dtype)a->dtype : gl_lua_dtype(L, idx);
}

static void set_number(lua_State *L, const char *key, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, key);
}

static void set_integer(lua_State *L, const char *key, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, key);
}

/* iinfo(dtype or array): {bits, min, max, dtype} of an integer dtype, as numpy.iinfo
** (uint64's max, past what a Lua integer holds, as the float 2^64). */
static int l_iinfo(lua_State *L) {
  gl_dtype t = dtype_arg(L, 1);
  if (!gl_dtype_is_int(t))
    return luaL_argerror(L, 1, lua_pushfstring(L, "%s is not an integer dtype (finfo describes float and complex "
                                                  "dtypes)", gl_dtypes[t].name));
  lua_createtable(L, 0, 5);
  lua_pushstring(L, gl_dtypes[t].kind == GL_KIND_UINT ? "u" : "i");
  lua_setfield(L, -2, "kind");
  set_integer(L, "bits", 8 * (lua_Integer)gl_dtypes[t].size);
  set_integer(L, "min", gl_dtypes[t].min);
  if (gl_dtypes[t].kind == GL_KIND_UINT && gl_dtypes[t].size == 8) set_number(L, "max", (double)UINT64_MAX);
  else set_integer(L, "max", gl_dtypes[t].max);
  lua_pushstring(L, gl_dtypes[t].name);
  lua_setfield(L, -2, "dtype");
  return 1;
}

/* finfo([dtype or array]): a float dtype's {bits, eps, max, min, tiny, smallest_normal,
** precision, resolution, dtype} and NumPy's {nmant, nexp, iexp, maxexp, minexp, machep,
** negep, epsneg, smallest_subnormal}, as numpy.finfo and torch.finfo (no argument: the
** default dtype's, as torch.finfo()); a complex dtype gives its
** parts' (dtype float32 for complex64, as NumPy). Derived from the row's significand bits:
** the exponent has the rest but the sign bit (IEEE binary16/32/64, bfloat16). */
static int l_finfo(lua_State *L) {
  gl_dtype t = lua_isnoneornil(L, 1) ? gl_default_dtype() : dtype_arg(L, 1);
  if (!gl_dtype_is_float(t) && !gl_dtype_is_complex(t))
    return luaL_argerror(L, 1, lua_pushfstring(L, "%s is not a float or complex dtype (iinfo describes integer "
                                                  "dtypes)", gl_dtypes[t].name));
  gl_dtype f = gl_real_for(t);
  int p = gl_dtypes[f].prec, bits = 8 * (int)gl_dtypes[f].size, emax = (1 << (bits - p - 1)) - 1;
  double eps = ldexp(1.0, 1 - p), max = ldexp(2.0 - eps, emax), tiny = ldexp(1.0, 1 - emax);
  int precision = (int)floor(-log10(eps));
  lua_createtable(L, 0, 16);
  set_integer(L, "nmant", p - 1);
  set_integer(L, "nexp", bits - p);
  set_integer(L, "iexp", bits - p);
  set_integer(L, "maxexp", emax + 1);
  set_integer(L, "minexp", 1 - emax);
  set_integer(L, "machep", 1 - p);
  set_integer(L, "negep", -p);
  set_number(L, "epsneg", ldexp(1.0, -p));
  set_number(L, "smallest_subnormal", ldexp(1.0, 2 - emax - p));
  set_integer(L, "bits", bits);
  set_number(L, "eps", eps);
  set_number(L, "max", max);
  set_number(L, "min", -max);
  set_number(L, "tiny", tiny);
  set_number(L, "smallest_normal", tiny);
  set_integer(L, "precision", precision);
  set_number(L, "resolution", pow(10.0, -precision));
  lua_pushstring(L, gl_dtypes[f].name);
  lua_setfield(L, -2, "dtype");
  return 1;
}

/* ---- promotion -------------------------------------------------------------------------- */

/* result_type(...): the dtype NumPy 2 gives an operation on arrays, dtypes and Lua scalars
** (np.result_type): arrays and dtype names are strong, promoted pairwise; Lua numbers,
** booleans and complex scalars are weak (NEP 50), taking the strong dtype's kind where
** they can, and their own defaults (int64, float64, complex128, bool) when alone. As
** NumPy's, it looks at kinds, not values: result_type("uint8", 300) is uint8, though
** adding 300 to a uint8 array is an error. */
static int l_result_type(lua_State *L) {
  int n = lua_gettop(L);
  if (n == 0) return luaL_error(L, "result_type: at least one array, dtype or number expected");
  int strong = -1;
  for (int i = 1; i <= n; i++) {
    int ty = lua_type(L, i);
    if (ty == LUA_TNUMBER || ty == LUA_TBOOLEAN) continue;
    gl_array *a = gl_lua_test(L, i);
    if (a == NULL && ty != LUA_TSTRING) {
      gl_scalar s = gl_lua_scalar(L, i, i);        /* a complex scalar, or an error naming the type */
      (void)s;
      continue;
    }
    gl_dtype t = a ? (gl_dtype)gl_lua_check(L, i)->dtype : gl_lua_dtype(L, i);
    strong = strong < 0 ? (int)t : (int)gl_promote((gl_dtype)strong, t);
  }
  for (int i = 1; i <= n; i++) {
    if (lua_type(L, i) == LUA_TSTRING || gl_lua_test(L, i)) continue;
    gl_scalar s = gl_lua_scalar(L, i, i);
    gl_dtype own = s.isbool ? GL_BOOL : s.iscomplex ? GL_COMPLEX128 : s.isint ? GL_INT64 : GL_FLOAT64;
    strong = strong < 0 ? (int)own : (int)gl_promote_weak((gl_dtype)strong, s);
  }
  lua_pushstring(L, gl_dtypes[strong].name);
  return 1;
}

/* promote_types(a, b): the dtype two dtypes promote to (np.promote_types, torch.promote_types). */
static int l_promote_types(lua_State *L) {
  lua_pushstring(L, gl_dtypes[gl_promote(gl_lua_dtype(L, 1), gl_lua_dtype(L, 2))].name);
  return 1;
}

/* can_cast(from, to [, casting = "safe"]): np.can_cast between dtypes (or arrays' dtypes):
** "no" and "equiv" the same dtype, "safe" when promotion keeps 'to' (every value of 'from'
** fits), "same_kind" also downcasts within a kind order bool < uint < int < float < complex
** (uint to int yes, int to uint no, as NumPy), "unsafe" always. torch.can_cast is
** "same_kind". */
static int l_can_cast(lua_State *L) {
  static const char *const modes[] = { "no", "equiv", "safe", "same_kind", "unsafe", NULL };
  if (lua_type(L, 1) == LUA_TNUMBER || lua_type(L, 1) == LUA_TBOOLEAN)
    return luaL_argerror(L, 1, "a dtype or an array expected, got a Lua scalar (NumPy 2 refuses scalars: "
                               "use result_type)");
  gl_dtype from = dtype_arg(L, 1), to = gl_lua_dtype(L, 2);
  int mode = luaL_checkoption(L, 3, "safe", modes);
  bool ok;
  switch (mode) {
    case 0: case 1: ok = from == to; break;
    case 2: ok = gl_promote(from, to) == to; break;
    case 3: ok = gl_promote(from, to) == to || gl_dtypes[from].kind <= gl_dtypes[to].kind; break;
    default: ok = true; break;
  }
  lua_pushboolean(L, ok);
  return 1;
}

/* ---- the default dtype ------------------------------------------------------------------ */

/* set_default_dtype(d): the dtype of floats made without one (torch.set_default_dtype):
** float32 (the start), float64, float16 or bfloat16; complex ones made without a dtype
** follow (complex128 with float64, else complex64). */
static int l_set_default_dtype(lua_State *L) {
  gl_dtype t = gl_lua_dtype(L, 1);
  if (!gl_dtype_is_float(t))
    return luaL_argerror(L, 1, lua_pushfstring(L, "only floating-point dtypes can be the default, got %s "
                                                  "(float32, float64, float16 or bfloat16)", gl_dtypes[t].name));
  gl_set_default_dtype(t);
  return 0;
}

static int l_get_default_dtype(lua_State *L) {
  lua_pushstring(L, gl_dtypes[gl_default_dtype()].name);
  return 1;
}

/* ---- what the backends take ---------------------------------------------------------- */

/* The op families (gl_op), by the names gpu._supports takes, in their order. */
static const char *const family_names[GL_NOP + 1] = {
  [GL_OP_FILL] = "fill", [GL_OP_COPY] = "copy", [GL_OP_ARANGE] = "arange", [GL_OP_UNARY] = "unary",
  [GL_OP_BINARY] = "binary", [GL_OP_REDUCE] = "reduce", [GL_OP_MATMUL] = "matmul", [GL_OP_INDEX] = "index",
  [GL_OP_SORT] = "sort", [GL_OP_RANDOM] = "random", [GL_OP_CONV] = "conv", [GL_OP_FUSED] = "fused",
  [GL_OP_LINALG] = "linalg", [GL_OP_SELECT] = "select", [GL_OP_HISTOGRAM] = "histogram", [GL_NOP] = NULL,
};

/* The op named at idx within family op (the families whose ops have names: unary, binary,
** reduce, random), or its 1-based number; -1 (any op of the family) for nil. *name: the
** op's name, NULL where it has none. */
static int which_arg(lua_State *L, int idx, gl_op op, const char **name) {
  const char *const *names = op == GL_OP_UNARY ? gl_unop_name : op == GL_OP_BINARY ? gl_binop_name
                           : op == GL_OP_REDUCE ? gl_redop_name : op == GL_OP_RANDOM ? gl_rand_dist_name : NULL;
  int n = op == GL_OP_UNARY ? GL_NUNOP : op == GL_OP_BINARY ? GL_NBINOP : op == GL_OP_REDUCE ? GL_NREDOP
        : op == GL_OP_RANDOM ? GL_NRAND : 0;
  *name = NULL;
  if (lua_isnoneornil(L, idx)) return -1;
  if (lua_isinteger(L, idx)) {
    lua_Integer w = lua_tointeger(L, idx) - 1;
    if (w < 0 || (names && w >= n))
      return luaL_argerror(L, idx, lua_pushfstring(L, "no op %I in family '%s'", w + 1, family_names[op]));
    if (names) *name = names[w];
    return (int)w;
  }
  const char *s = luaL_checkstring(L, idx);
  for (int w = 0; w < n; w++)
    if (strcmp(names[w], s) == 0) { *name = names[w]; return w; }
  return luaL_argerror(L, idx, lua_pushfstring(L, "no op '%s' in family '%s'", s, family_names[op]));
}

/* _supports(family, dtype [, op [, device]]): true, or false and the message the op raises
** ("sort is not supported for complex64 on cpu"), for family one of gpu._families, op an
** op's name (unary, binary, reduce, random) or number (nil: any op of the family), device
** the default one if not given. */
static int l_supports(lua_State *L) {
  gl_op op = (gl_op)luaL_checkoption(L, 1, NULL, family_names);
  gl_dtype dt = dtype_arg(L, 2);
  const char *name;
  int which = which_arg(L, 3, op, &name);
  gl_device dev = lua_isnoneornil(L, 4) ? gl_lua_default_device(L) : gl_lua_device(L, 4);
  const gl_backend *b;
  gl_status st = gl_backend_supporting(dev, op, which, dt, name, &b);
  lua_pushboolean(L, st == GL_OK);
  if (st == GL_OK) return 1;
  lua_pushstring(L, gl_errmsg());
  return 2;
}

void gl_open_dtypes(lua_State *L, int module) {
  static const gl_reg funcs[] = {
    { "iinfo", l_iinfo, 1 }, { "finfo", l_finfo, 1 }, { "result_type", l_result_type, GL_VARARGS },
    { "promote_types", l_promote_types, 2 }, { "can_cast", l_can_cast, 3 },
    { "set_default_dtype", l_set_default_dtype, 1 }, { "get_default_dtype", l_get_default_dtype, 0 },
    { "_supports", l_supports, 4 }, { NULL, NULL, 0 }
  };
  gl_lua_setfuncs(L, module, funcs);
  push_dtypes(L);
  lua_setfield(L, module, "_dtypes");
  lua_createtable(L, GL_NOP, 0);
  for (int op = 0; op < GL_NOP; op++) {
    lua_pushstring(L, family_names[op]);
    lua_rawseti(L, -2, op + 1);
  }
  lua_setfield(L, module, "_families");
  push_dtype_constants(L, module);
}
