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
#include <math.h>
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

/* ---- gpu.linalg: numpy.linalg over LAPACK (src/ops/linalg_lapack.c) -----------------------
** The C ops register into gpu._linalg under the rules names "linalg.<f>"; lua/gpu/linalg.lua
** makes gpu.linalg of them and adds the functions written in array ops (pinv, norm, ...).
** Failures are NumPy's LinAlgError and shape errors, raised as "gpu.linalg.solve: matrix
** is singular (batch 3)". */

static int la_check(lua_State *L, gl_status st, const char *fn) {
  if (st != GL_OK) return luaL_error(L, "gpu.linalg.%s: %s", fn, gl_errmsg());
  return 0;
}

/* Accounts the n results on the top of the stack and returns n. */
static int la_results(lua_State *L, int n) {
  for (int i = n; i >= 1; i--) gl_lua_account_array(L, gl_lua_check(L, -i));
  return n;
}

static int l_la_solve(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *b = gl_lua_check(L, 2), *x = gl_lua_push(L);
  la_check(L, gl_op_la_solve(x, a, b), "solve");
  return la_results(L, 1);
}

static int l_la_inv(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *x = gl_lua_push(L);
  la_check(L, gl_op_la_inv(x, a), "inv");
  return la_results(L, 1);
}

static int l_la_det(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *x = gl_lua_push(L);
  la_check(L, gl_op_la_det(x, a), "det");
  return la_results(L, 1);
}

/* slogdet(a) -> sign, logabsdet */
static int l_la_slogdet(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *s = gl_lua_push(L), *l = gl_lua_push(L);
  la_check(L, gl_op_la_slogdet(s, l, a), "slogdet");
  return la_results(L, 2);
}

static const gl_optkey chol_keys[] = { { "upper", GL_OPT_BOOL, 0, 0, 0, NULL }, { NULL } };
static const gl_optdecl chol_decl = { "linalg.cholesky", "gpu.linalg.cholesky(gpu.eye(2), %s)", chol_keys };

static int l_la_cholesky(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  gl_optval v[1];
  gl_lua_readopts(L, 2, &chol_decl, v);
  gl_array *x = gl_lua_push(L);
  la_check(L, gl_op_la_cholesky(x, a, v[0].set && v[0].b), "cholesky");
  return la_results(L, 1);
}

static const gl_optkey qr_keys[] = { { "mode", GL_OPT_STRING, 0, 0, 0, "reduced complete r" }, { NULL } };
static const gl_optdecl qr_decl = { "linalg.qr", "gpu.linalg.qr(gpu.eye(2), %s)", qr_keys };

/* qr(a [, {mode = "reduced" | "complete" | "r"}]) -> q, r (mode "r": r) */
static int l_la_qr(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  gl_optval v[1];
  gl_lua_readopts(L, 2, &qr_decl, v);
  int mode = v[0].set ? v[0].choice : 0;
  gl_array *q = gl_lua_push(L), *r = gl_lua_push(L);
  la_check(L, gl_op_la_qr(mode == 2 ? NULL : q, r, a, mode == 1), "qr");
  if (mode == 2) { lua_remove(L, -2); return la_results(L, 1); }
  return la_results(L, 2);
}

static const gl_optkey svd_keys[] = {
  { "full_matrices", GL_OPT_BOOL, 0, 0, 0, NULL }, { "compute_uv", GL_OPT_BOOL, 0, 0, 0, NULL },
  { "hermitian", GL_OPT_BOOL, 0, 0, 0, NULL },    /* true: lua/gpu/linalg.lua's svd goes through eigh */
  { NULL }
};
static const gl_optdecl svd_decl = { "linalg.svd", "gpu.linalg.svd(gpu.eye(2), %s)", svd_keys };

/* svd(a [, {full_matrices = true, compute_uv = true}]) -> u, s, vh (compute_uv false: s) */
static int l_la_svd(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1);
  gl_optval v[3];
  gl_lua_readopts(L, 2, &svd_decl, v);
  bool full = !v[0].set || v[0].b, uv = !v[1].set || v[1].b;
  if (!uv) {
    gl_array *s = gl_lua_push(L);
    la_check(L, gl_op_la_svd(NULL, s, NULL, a, false), "svd");
    return la_results(L, 1);
  }
  gl_array *u = gl_lua_push(L), *s = gl_lua_push(L), *vh = gl_lua_push(L);
  la_check(L, gl_op_la_svd(u, s, vh, a, full), "svd");
  return la_results(L, 3);
}

static int l_la_svdvals(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *s = gl_lua_push(L);
  la_check(L, gl_op_la_svd(NULL, s, NULL, a, false), "svdvals");
  return la_results(L, 1);
}

static const gl_optkey eigh_keys[] = { { "UPLO", GL_OPT_STRING, 0, 0, 0, "L U" }, { NULL } };
static const gl_optdecl eigh_decl = { "linalg.eigh", "gpu.linalg.eigh(gpu.eye(2), %s)", eigh_keys };
static const gl_optdecl eigvalsh_decl = { "linalg.eigvalsh", "gpu.linalg.eigvalsh(gpu.eye(2), %s)", eigh_keys };

/* eigh(a [, {UPLO = "L"}]) -> w (ascending), v; eigvalsh: w */
static int eigh_common(lua_State *L, bool vectors) {
  gl_array *a = gl_lua_check(L, 1);
  gl_optval v[1];
  gl_lua_readopts(L, 2, vectors ? &eigh_decl : &eigvalsh_decl, v);
  bool upper = v[0].set && v[0].choice == 1;
  gl_array *w = gl_lua_push(L), *vec = vectors ? gl_lua_push(L) : NULL;
  la_check(L, gl_op_la_eigh(w, vec, a, upper), vectors ? "eigh" : "eigvalsh");
  return la_results(L, vectors ? 2 : 1);
}
static int l_la_eigh(lua_State *L) { return eigh_common(L, true); }
static int l_la_eigvalsh(lua_State *L) { return eigh_common(L, false); }

/* eig(a) -> w, v (complex, a v = v diag(w)); eigvals(a) -> w */
static int l_la_eig(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *w = gl_lua_push(L), *v = gl_lua_push(L);
  la_check(L, gl_op_la_eig(w, v, a), "eig");
  return la_results(L, 2);
}

static int l_la_eigvals(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *w = gl_lua_push(L);
  la_check(L, gl_op_la_eig(w, NULL, a), "eigvals");
  return la_results(L, 1);
}

/* the C part of lu_factor_ex(a) -> LU (getrf's packing), pivots (int32, 1-based); the
** info codes and lu_factor's error on a singular U are made in lua/gpu/linalg.lua */
static int l_la_lu(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *lu = gl_lua_push(L), *piv = gl_lua_push(L);
  la_check(L, gl_op_la_lu(lu, piv, a), "lu_factor");
  return la_results(L, 2);
}

/* the C part of lu_solve(LU, pivots, B [, adjoint]): getrs; the pivots' range, the other
** forms and the differentiable path are lua/gpu/linalg.lua's */
static int l_la_lu_solve(lua_State *L) {
  gl_array *lu = gl_lua_check(L, 1), *piv = gl_lua_check(L, 2), *b = gl_lua_check(L, 3);
  bool adjoint = lua_toboolean(L, 4);
  gl_array *x = gl_lua_push(L);
  la_check(L, gl_op_la_lu_solve(x, lu, piv, b, adjoint), "lu_solve");
  return la_results(L, 1);
}

static const gl_optkey lstsq_keys[] = { { "rcond", GL_OPT_NUMBER, 0, 0, 0, NULL }, { NULL } };
static const gl_optdecl lstsq_decl = { "linalg.lstsq", "gpu.linalg.lstsq(gpu.eye(2), gpu.ones(2), %s)", lstsq_keys };

/* lstsq(a, b [, {rcond =}]) -> x, residuals, rank (a Lua integer), s */
static int l_la_lstsq(lua_State *L) {
  gl_array *a = gl_lua_check(L, 1), *b = gl_lua_check(L, 2);
  gl_optval v[1];
  gl_lua_readopts(L, 3, &lstsq_decl, v);
  double rcond = v[0].set ? v[0].n : -1;
  if (v[0].set && !(rcond >= 0 && isfinite(rcond)))
    return luaL_argerror(L, 3, "option 'rcond' must be a finite number >= 0");
  gl_array *x = gl_lua_push(L), *res = gl_lua_push(L), *rank = gl_lua_push(L), *s = gl_lua_push(L);
  la_check(L, gl_op_la_lstsq(x, res, rank, s, a, b, rcond), "lstsq");
  int64_t r = 0;
  la_check(L, gl_op_to_host(&r, rank), "lstsq");
  lua_pushinteger(L, (lua_Integer)r);
  lua_replace(L, -3);
  gl_lua_account_array(L, x);
  gl_lua_account_array(L, res);
  gl_lua_account_array(L, s);
  return 4;
}

static const gl_reg la_funcs[] = {
  { "solve", l_la_solve, 2 }, { "inv", l_la_inv, 1 }, { "det", l_la_det, 1 }, { "slogdet", l_la_slogdet, 1 },
  { "cholesky", l_la_cholesky, 2 }, { "qr", l_la_qr, 2 }, { "svd", l_la_svd, 2 },
  { "svdvals", l_la_svdvals, 1 }, { "eigh", l_la_eigh, 2 }, { "eigvalsh", l_la_eigvalsh, 2 },
  { "eig", l_la_eig, 1 }, { "eigvals", l_la_eigvals, 1 }, { "lstsq", l_la_lstsq, 3 },
  { "lu_factor_ex", l_la_lu, 1 }, { "_lu_solve", l_la_lu_solve, 4 }, { NULL, NULL, 0 },
};
static const gl_optdecl *const la_decls[] = { &chol_decl, &qr_decl, &svd_decl, &eigh_decl, &eigvalsh_decl,
                                              &lstsq_decl, NULL };

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
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *b = gl_backend_get(t);
    if (b->matmul_precision) b->matmul_precision(tf32);
  }
  tf32_on = tf32;
  return 0;
}

static int l_get_matmul_precision(lua_State *L) {
  lua_pushstring(L, tf32_on ? "tf32" : "highest");
  return 1;
}

static const gl_reg precision_funcs[] = {
  { "set_matmul_precision", l_set_matmul_precision, 1 },
  { "get_matmul_precision", l_get_matmul_precision, 0 },
  { NULL, NULL, 0 }
};

static const gl_reg linalg_funcs[] = {
  { "matmul", l_matmul, 2 }, { "dot", l_dot, 2 }, { "outer", l_outer, 2 }, { NULL, NULL, 0 },
};

void gl_open_linalg(lua_State *L, int module, int methods) {
  gl_lua_setboth(L, module, methods, linalg_funcs);
  gl_lua_setfuncs(L, module, precision_funcs);
  lua_newtable(L);
  gl_lua_setops(L, lua_gettop(L), "linalg.", la_funcs);
  lua_setfield(L, module, "_linalg");
  gl_lua_declare_all(L, la_decls);
}
