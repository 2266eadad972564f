/*
** llinalg.c — linear algebra from Lua: gpu.matmul(a, b) / a:matmul(b), dot, outer, and
** the precision float32 matmuls run at.
**
** Shapes follow NumPy (see src/ops/linalg.c). Choices where NumPy leaves room:
** - bool @ bool is NumPy's logical matmul (any(a & b)), a bool array;
** - dot of N-D arrays is NumPy's dot (sums over a's last axis and b's second-to-last,
**   no broadcasting), not matmul; dot with a number or a 0-d array multiplies;
** - outer takes arrays (any shape, flattened).
*/
#include "lgpu.h"

/* Runs op(out, a, b) into a new userdata with the failed-allocation ritual (release
** the caches, collect, try once more). Argument errors are reported at 'arg'. */
static int push_result(lua_State *L, gl_status (*op)(gl_array *, const gl_array *, const gl_array *),
                       const gl_array *a, const gl_array *b, int arg) {
  gl_array *out = gl_lua_push(L);
  gl_status st = op(out, a, b);
  return gl_lua_result(L, st, out, st == GL_EINVAL ? arg : 0);
}

/* gpu.matmul(a, b): a @ b */
static int l_matmul(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *b = gl_lua_check(L, 2);
  for (int i = 1; i <= 2; i++)
    if ((i == 1 ? a : b)->ndim == 0)
      return luaL_argerror(L, i, "matmul needs arrays of at least 1 dimension, got a 0-d array "
                                 "(multiply by a scalar with *)");
  return push_result(L, gl_op_matmul, a, b, 2);
}

/* gpu.dot(a, b): NumPy's dot; a number on either side multiplies. */
static int l_dot(lua_State *L) {
  gl_array *a = gl_lua_test(L, 1), *b = gl_lua_test(L, 2);
  if (a == NULL || b == NULL) {
    for (int i = 1; i <= 2; i++) {
      int t = lua_type(L, i);
      if (gl_lua_test(L, i) == NULL && t != LUA_TNUMBER)
        return luaL_argerror(L, i, lua_pushfstring(L, "array or number expected, got %s", luaL_typename(L, i)));
    }
    if (a == NULL && b == NULL) return luaL_argerror(L, 1, "at least one operand must be an array");
    gl_operand oa = { NULL, gl_scalar_int(0) }, ob = { NULL, gl_scalar_int(0) };
    if (a) oa.arr = gl_lua_check(L, 1); else oa.s = gl_lua_scalar(L, 1, 1);
    if (b) ob.arr = gl_lua_check(L, 2); else ob.s = gl_lua_scalar(L, 2, 2);
    gl_array *out = gl_lua_push(L);
    return gl_lua_result(L, gl_op_binary(out, GL_B_mul, oa, ob), out, 0);
  }
  a = gl_lua_check(L, 1);
  b = gl_lua_check(L, 2);
  return push_result(L, gl_op_dot, a, b, 2);
}

/* gpu.outer(a, b): (a.size, b.size) products of the flattened operands. */
static int l_outer(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *b = gl_lua_check(L, 2);
  return push_result(L, gl_op_outer, a, b, 2);
}

/* ---- matmul precision ---------------------------------------------------------------------
**   gpu.set_matmul_precision("tf32")     -- float32 matmuls may use TF32 tensor cores
**   gpu.set_matmul_precision("highest")  -- IEEE float32 (the default)
**   gpu.get_matmul_precision()           -- "highest" or "tf32"
** ("high" is accepted as PyTorch's name for "tf32".) The setting is the process's, as in
** PyTorch: every backend that has the switch gets it; the cpu has none and ignores it. */

static bool tf32_on;

static int l_set_matmul_precision(lua_State *L) {
  static const char *const names[] = { "highest", "high", "tf32", NULL };
  int which = luaL_checkoption(L, 1, NULL, names);
  bool tf32 = which != 0;
  for (int t = GL_CPU; t <= GL_CUDA; t++) {
    const gl_backend *b = gl_backend_get((gl_devtype)t);
    if (b && b->matmul_precision) b->matmul_precision(tf32);
  }
  tf32_on = tf32;
  return 0;
}

static int l_get_matmul_precision(lua_State *L) {
  lua_pushstring(L, tf32_on ? "tf32" : "highest");
  return 1;
}

static const luaL_Reg precision_funcs[] = {
  { "set_matmul_precision", l_set_matmul_precision },
  { "get_matmul_precision", l_get_matmul_precision },
  { NULL, NULL }
};

static const luaL_Reg linalg_funcs[] = {
  { "matmul", l_matmul },
  { "dot", l_dot },
  { "outer", l_outer },
  { NULL, NULL }
};

void gl_open_linalg(lua_State *L, int module, int methods) {
  gl_lua_setboth(L, module, methods, linalg_funcs);
  gl_lua_setfuncs(L, module, precision_funcs);
}
