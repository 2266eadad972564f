/*
** lmath.c — elementwise math from Lua: the operators (+ - * / // % ^, unary -, & | ~ <<
** >>), every op of kernels/elem_ops.h as gpu.f(x, ...) and x:f(...), the in-place forms
** f_(...), and where, clip, lerp.
*/
#include <string.h>
#include "lgpu.h"

/* An argument error that names the function as Lua called it, or 'name' where Lua cannot
** tell: an operator reached through the string library's metamethods ("a" + x) runs
** from C, with no name to find. */
static int operand_error(lua_State *L, int idx, const char *name, const char *msg) {
  lua_Debug ar;
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name != NULL) return luaL_argerror(L, idx, msg);
  return luaL_error(L, "bad argument #%d to '%s' (%s)", idx, name, msg);
}

/* An operand: an open array, a number, a complex scalar or a boolean; 'name' is the op's,
** for errors. 'a': the argument as gl_lua_test_in found it (NULL: not an array). */
static gl_operand to_operand(lua_State *L, gl_lctx *c, int idx, gl_array *a, const char *name) {
  gl_operand o = { NULL, gl_scalar_int(0) };
  if (a) {
    if (a->storage == NULL) operand_error(L, idx, name, "array is closed");
    o.arr = a;
    gl_lua_operand(c, idx, a);               /* for the recorder of a tracked call */
    return o;
  }
  int t = lua_type(L, idx);
  double re, im;
  if (t != LUA_TNUMBER && t != LUA_TBOOLEAN && !gl_lua_tocomplex(L, idx, &re, &im))
    operand_error(L, idx, name, lua_pushfstring(L, "array or number expected, got %s", luaL_typename(L, idx)));
  o.s = gl_lua_scalar(L, idx, idx);
  return o;
}

/* How a planned op ends: a failed run leaves its result closed (a light one's bytes go
** with its userdata), and the error names the function. */
static int run_planned(lua_State *L, gl_array *out, gl_status st) {
  if (st != GL_OK) gl_array_release(out);
  return gl_lua_result(L, st, out, 0);
}

static int push_binary(lua_State *L, gl_binop op, int ia, int ib) {
  gl_lctx *c = GL_CTX(L);                     /* a dispatched op's body: upvalue 1 is the context */
  gl_array *x = gl_lua_test_in(L, c, ia), *y = gl_lua_test_in(L, c, ib);
  gl_operand a, b;
  if (x && y && x->storage && y->storage) {   /* two open arrays: the common case, inline */
    a.arr = x;
    b.arr = y;
    gl_lua_operand(c, ia, x);
    gl_lua_operand(c, ib, y);
  } else {
    a = to_operand(L, c, ia, x, gl_binop_name[op]);
    b = to_operand(L, c, ib, y, gl_binop_name[op]);
    if (!a.arr && !b.arr) return luaL_argerror(L, ia, "at least one operand must be an array");
  }
  gl_plan p;
  gl_lua_check_status(L, gl_op_binary_plan(&p, op, a, b), 0);      /* refused before any allocation */
  gl_array *out = gl_lua_push_planned(L, c, &p);
  return run_planned(L, out, gl_op_binary_run(out, &p, a, b));
}

/* upvalue 2: the op */
static int l_binary(lua_State *L) {
  return push_binary(L, (gl_binop)lua_tointeger(L, lua_upvalueindex(2)), 1, 2);
}

static int l_binary_(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  gl_binop op = (gl_binop)lua_tointeger(L, lua_upvalueindex(2));
  gl_lctx *c = gl_lua_ctx(L);
  gl_operand b = to_operand(L, c, 2, gl_lua_test_in(L, c, 2), gl_binop_name[op]);
  gl_lua_check_status(L, gl_op_binary_(x, op, b), 0);
  lua_settop(L, 1);
  return 1;
}

/* (only ever a dispatched op's body: upvalue 1 is the context) */
static int unary_op(lua_State *L, gl_unop op) {
  gl_lctx *c = GL_CTX(L);
  gl_array *x = gl_lua_check(L, 1);
  gl_lua_operand(c, 1, x);
  gl_plan p;
  gl_lua_check_status(L, gl_op_unary_plan(&p, op, x), 0);
  gl_array *out = gl_lua_push_planned(L, c, &p);
  return run_planned(L, out, gl_op_unary_run(out, &p, x));
}

static int l_unary(lua_State *L) { return unary_op(L, (gl_unop)lua_tointeger(L, lua_upvalueindex(2))); }

static int l_unary_(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  gl_lua_check_status(L, gl_op_unary_(x, (gl_unop)lua_tointeger(L, lua_upvalueindex(2))), 0);
  lua_settop(L, 1);
  return 1;
}

/* ---- operators ------------------------------------------------------------------------ */

static int mm_add(lua_State *L) { return push_binary(L, GL_B_add, 1, 2); }
static int mm_sub(lua_State *L) { return push_binary(L, GL_B_sub, 1, 2); }
static int mm_mul(lua_State *L) { return push_binary(L, GL_B_mul, 1, 2); }
static int mm_div(lua_State *L) { return push_binary(L, GL_B_div, 1, 2); }
static int mm_idiv(lua_State *L) { return push_binary(L, GL_B_floordiv, 1, 2); }
static int mm_mod(lua_State *L) { return push_binary(L, GL_B_mod, 1, 2); }
static int mm_pow(lua_State *L) { return push_binary(L, GL_B_pow, 1, 2); }
static int mm_band(lua_State *L) { return push_binary(L, GL_B_bitwise_and, 1, 2); }
static int mm_bor(lua_State *L) { return push_binary(L, GL_B_bitwise_or, 1, 2); }
static int mm_bxor(lua_State *L) { return push_binary(L, GL_B_bitwise_xor, 1, 2); }
static int mm_shl(lua_State *L) { return push_binary(L, GL_B_left_shift, 1, 2); }
static int mm_shr(lua_State *L) { return push_binary(L, GL_B_right_shift, 1, 2); }


static int mm_unm(lua_State *L) { return unary_op(L, GL_U_neg); }
static int mm_bnot(lua_State *L) { return unary_op(L, GL_U_bitwise_not); }

/* ---- where, clip, lerp -------------------------------------------------------------------- */

/* gpu.where(cond, a, b) */
static int l_where(lua_State *L) {
  gl_array *cond = gl_lua_check(L, 1);
  gl_lctx *c = gl_lua_ctx(L);
  gl_operand a = to_operand(L, c, 2, gl_lua_test_in(L, c, 2), "where");
  gl_operand b = to_operand(L, c, 3, gl_lua_test_in(L, c, 3), "where");
  gl_array *out = gl_lua_push(L);
  gl_status st = gl_op_where(out, cond, a, b);
  return gl_lua_result(L, st, out, 0);
}

/* x:clip(lo, hi): either bound may be nil; NaN stays NaN. */
static int l_clip(lua_State *L) {
  gl_lua_check(L, 1);
  bool has_lo = !lua_isnoneornil(L, 2), has_hi = !lua_isnoneornil(L, 3);
  if (!has_lo && !has_hi) return luaL_argerror(L, 2, "at least one of lo and hi is needed");
  lua_settop(L, 3);
  int cur = 1;
  if (has_lo) { push_binary(L, GL_B_maximum, cur, 2); cur = lua_gettop(L); }
  if (has_hi) push_binary(L, GL_B_minimum, cur, 3);
  else if (cur == 1) lua_pushvalue(L, 1);
  return 1;
}

/* gpu.lerp(a, b, w) = a + w * (b - a) */
static int l_lerp(lua_State *L) {
  lua_settop(L, 3);
  push_binary(L, GL_B_sub, 2, 1);        /* 4: b - a */
  push_binary(L, GL_B_mul, 3, 4);        /* 5: w * (b - a) */
  return push_binary(L, GL_B_add, 1, 5);
}

static const gl_reg math_meta[] = {
  { "__add", mm_add, 2 }, { "__sub", mm_sub, 2 }, { "__mul", mm_mul, 2 }, { "__div", mm_div, 2 },
  { "__idiv", mm_idiv, 2 }, { "__mod", mm_mod, 2 }, { "__pow", mm_pow, 2 }, { "__unm", mm_unm, 2 },
  { "__band", mm_band, 2 }, { "__bor", mm_bor, 2 }, { "__bxor", mm_bxor, 2 }, { "__shl", mm_shl, 2 },
  { "__shr", mm_shr, 2 }, { "__bnot", mm_bnot, 2 }, { NULL, NULL, 0 },
};

static const char *const math_meta_op[] = {
  "add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg", "bitwise_and", "bitwise_or", "bitwise_xor",
  "left_shift", "right_shift", "bitwise_not"
};

static const gl_reg math_funcs[] = {
  { "where", l_where, 3 }, { "clip", l_clip, 3 }, { "lerp", l_lerp, 3 }, { NULL, NULL, 0 },
};

/* Which ops have an in-place form: not those whose result is bool (predicates, comparisons,
** logic), which could not be stored back into most inputs. */
static bool unary_inplace(int op) {
  gl_opkind k = (gl_opkind)gl_unop_kind[op];
  return k == GL_K_US || k == GL_K_UF || k == GL_K_UB;
}

static bool binary_inplace(int op) {
  gl_opkind k = (gl_opkind)gl_binop_kind[op];
  return k != GL_K_BC && k != GL_K_BL;
}

/* Registers one closure per op under 'name' (and name_ for the in-place form) in both
** the module and the methods table. */
static void add_op(lua_State *L, int module, int methods, const char *name, int op, int nargs,
                   lua_CFunction f, lua_CFunction f_) {
  for (int k = 0; k < 2; k++) {
    lua_CFunction fn = k ? f_ : f;
    if (fn == NULL) continue;
    const char *key = k ? lua_pushfstring(L, "%s_", name) : lua_pushstring(L, name);
    GL_PUSH_CTX(L);
    lua_pushinteger(L, op);
    gl_lua_pushop_flags(L, key, fn, nargs, 2, k ? 0 : GL_OP_KEEPS_ARGS);
    lua_insert(L, -2);                                /* op, key */
    lua_pushvalue(L, -2);
    lua_setfield(L, module, key);
    lua_pushvalue(L, -2);
    lua_setfield(L, methods, key);
    lua_pop(L, 2);
  }
}

/* gpu._ops: the ops as C lists them, for the specs, tools and the generated tables of
** doc/API.md and README.md:
**   unary, binary   the elementwise ops, in kernels/elem_ops.h's order
**   inplace         name -> true for an elementwise op with an in-place form f_
**   aliases         NumPy's names in order, and each also as a key to the op it names
**   reductions      the reductions of the backend interface (gl_redop), in its order
** Called with the ops registered: a NumPy name takes its op's functions. */
static void open_ops_table(lua_State *L, int module, int methods) {
  static const char *const alias[][2] = {
    { "negative", "neg" }, { "subtract", "sub" }, { "multiply", "mul" }, { "divide", "div" },
    { "true_divide", "div" }, { "floor_divide", "floordiv" }, { "remainder", "mod" },
    { "power", "pow" }, { "less", "lt" }, { "less_equal", "le" }, { "greater", "gt" },
    { "greater_equal", "ge" }, { "equal", "eq" }, { "not_equal", "ne" }, { "arctan2", "atan2" },
    { "arcsin", "asin" }, { "arccos", "acos" }, { "arctan", "atan" }, { "arcsinh", "asinh" },
    { "arccosh", "acosh" }, { "arctanh", "atanh" }, { "conjugate", "conj" }, { "absolute", "abs" },
    /* NumPy's names of radians and degrees */
    { "deg2rad", "radians" }, { "rad2deg", "degrees" },
    { "gammaln", "lgamma" },                                              /* gpu.special */
  };
  int nalias = (int)(sizeof alias / sizeof alias[0]);
  lua_createtable(L, 0, 5);
  lua_createtable(L, GL_NUNOP, 0);
  for (int op = 0; op < GL_NUNOP; op++) {
    lua_pushstring(L, gl_unop_name[op]);
    lua_rawseti(L, -2, op + 1);
  }
  lua_setfield(L, -2, "unary");
  lua_createtable(L, GL_NBINOP, 0);
  for (int op = 0; op < GL_NBINOP; op++) {
    lua_pushstring(L, gl_binop_name[op]);
    lua_rawseti(L, -2, op + 1);
  }
  lua_setfield(L, -2, "binary");
  lua_createtable(L, GL_NREDOP, 0);
  for (int op = 0; op < GL_NREDOP; op++) {
    lua_pushstring(L, gl_redop_name[op]);
    lua_rawseti(L, -2, op + 1);
  }
  lua_setfield(L, -2, "reductions");
  lua_createtable(L, 0, GL_NUNOP + GL_NBINOP);
  for (int op = 0; op < GL_NUNOP; op++)
    if (unary_inplace(op)) { lua_pushboolean(L, 1); lua_setfield(L, -2, gl_unop_name[op]); }
  for (int op = 0; op < GL_NBINOP; op++)
    if (binary_inplace(op)) { lua_pushboolean(L, 1); lua_setfield(L, -2, gl_binop_name[op]); }
  lua_setfield(L, -2, "inplace");
  lua_createtable(L, nalias, nalias);
  for (int i = 0; i < nalias; i++) {
    lua_getfield(L, module, alias[i][1]);
    lua_setfield(L, module, alias[i][0]);
    lua_getfield(L, methods, alias[i][1]);
    lua_setfield(L, methods, alias[i][0]);
    lua_pushstring(L, alias[i][0]);
    lua_rawseti(L, -2, i + 1);
    lua_pushstring(L, alias[i][1]);
    lua_setfield(L, -2, alias[i][0]);
  }
  lua_setfield(L, -2, "aliases");
  lua_setfield(L, module, "_ops");
}

void gl_open_math(lua_State *L, int module, int methods, int meta) {
  /* the operators dispatch under the names of their functions (x + y is "add") */
  for (int i = 0; math_meta[i].name; i++) {
    GL_PUSH_CTX(L);
    gl_lua_pushop_flags(L, math_meta_op[i], math_meta[i].func, math_meta[i].nargs, 1, GL_OP_KEEPS_ARGS);
    lua_setfield(L, meta, math_meta[i].name);
  }
  gl_lua_setboth(L, module, methods, math_funcs);
  for (int op = 0; op < GL_NUNOP; op++)
    add_op(L, module, methods, gl_unop_name[op], op, 1, l_unary, unary_inplace(op) ? l_unary_ : NULL);
  for (int op = 0; op < GL_NBINOP; op++)
    add_op(L, module, methods, gl_binop_name[op], op, 2, l_binary, binary_inplace(op) ? l_binary_ : NULL);
  open_ops_table(L, module, methods);
}
