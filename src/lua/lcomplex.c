/*
** lcomplex.c — complex numbers from Lua: the complex scalar, and the complex side of arrays.
**
** The scalar (gpu.complex(re, im) of two numbers; what x[k], x:item() and x:totable() give
** for a complex array) is a full userdata of two doubles under the metatable
** "gpu.complex": immutable as a Lua number is, told from an array by one metatable
** comparison in C (gl_lua_tocomplex), so every reader of numbers (gl_lua_scalar: fill
** values, x[k] = v, the operands of arithmetic, gpu.array's tables) takes it as one. Its
** arithmetic mixes with Lua numbers on either side and is the complex arrays' own
** (kernels/complex.h: NumPy's formulas); with an array on either side it is the array's
** operator.
**
** The arrays' side: gpu.complex(re, im) of arrays (torch.complex), gpu.real / gpu.imag
** (x.real, x.imag: views of the parts), polar, isreal, iscomplex, isrealobj,
** iscomplexobj, is_complex.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lbody.h"

#define COMPLEX_META "gpu.complex"

/* Registry keys (their addresses): the scalar's metatable, and the ops gpu.real and
** gpu.imag that x.real and x.imag call. */
static const char complex_meta_key = 0, real_key = 0, imag_key = 0;

/* The scalar's bytes (a userdata is only 8-byte aligned: no gl_complex128 there); its
** values are computed as gl_complex128 by kernels/complex.h (included below, under the
** options its products need), the elementwise ops' own math. */
typedef struct zbox {
  double re, im;
} zbox;
typedef gl_complex128 cnum;

/* ---- the scalar --------------------------------------------------------------------------- */

void gl_lua_push_complex(lua_State *L, double re, double im) {
  zbox *z = lua_newuserdatauv(L, sizeof *z, 0);
  z->re = re;
  z->im = im;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &complex_meta_key);
  lua_setmetatable(L, -2);
}

static const zbox *test_complex(lua_State *L, int idx) {
  const zbox *z = lua_touserdata(L, idx);
  if (z == NULL || !lua_getmetatable(L, idx)) return NULL;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &complex_meta_key);
  bool ours = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return ours ? z : NULL;
}

bool gl_lua_tocomplex(lua_State *L, int idx, double *re, double *im) {
  const zbox *z = test_complex(L, idx);
  if (z == NULL) return false;
  *re = z->re;
  *im = z->im;
  return true;
}

static void push_cnum(lua_State *L, cnum z) { gl_lua_push_complex(L, z.re, z.im); }

/* A Lua number or a complex scalar as a complex number. */
static bool to_cnum(lua_State *L, int idx, cnum *z) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    z->re = lua_tonumber(L, idx);
    z->im = 0;
    return true;
  }
  const zbox *p = test_complex(L, idx);
  if (p) *z = gl_make_complex128(p->re, p->im);
  return p != NULL;
}

static cnum check_cnum(lua_State *L, int idx) {
  const zbox *z = test_complex(L, idx);
  if (z == NULL) luaL_typeerror(L, idx, COMPLEX_META);
  return gl_make_complex128(z->re, z->im);
}

/* ---- arithmetic, as NumPy's complex128 scalars -------------------------------------------- */

/* Each product rounded before its sum, as NumPy's scalars compute: a fused multiply-add
** changes last digits ((0.1+0.3i) / (3-4i)). GCC contracts across statements
** (-ffp-contract=fast) and is told not to here, as cpu_copy.c's arange; its SLP vectorizer
** fuses a real and an imaginary part into one vfmsubadd even then (GCC 12), so it is off
** too. Clang obeys the standard pragma. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off", "no-tree-slp-vectorize")
#endif

#include "../../kernels/complex.h"

/* An operator whose operands are not both numbers or complex scalars: with an array, the
** module's op of that name (gpu.add for z + x: its errors then name it), else the other
** operand's own metamethod for the event, else Lua's error (a string is no number here). */
static int other_operand(lua_State *L, const char *event, const char *op) {
  for (int i = 1; i <= 2; i++) {
    cnum z;
    if (to_cnum(L, i, &z)) continue;
    bool found = false;
    if (gl_lua_test(L, i)) {
      lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
      found = lua_getfield(L, -1, "gpu") == LUA_TTABLE && lua_getfield(L, -1, op) == LUA_TFUNCTION;
    }
    if (!found && lua_type(L, i) != LUA_TSTRING) {   /* the string library's would call this back */
      lua_settop(L, 2);
      found = luaL_getmetafield(L, i, event) != LUA_TNIL;
    }
    if (!found) return luaL_error(L, "attempt to perform arithmetic on a %s value", luaL_typename(L, i));
    lua_pushvalue(L, -1);                     /* the function into slot 3 */
    lua_replace(L, 3);
    lua_settop(L, 3);
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
  }
  return luaL_error(L, "attempt to perform arithmetic on a %s value", COMPLEX_META);
}

static int arith(lua_State *L, const char *event, const char *opname, cnum (*op)(cnum, cnum)) {
  cnum a, b;
  if (!to_cnum(L, 1, &a) || !to_cnum(L, 2, &b)) return other_operand(L, event, opname);
  push_cnum(L, op(a, b));
  return 1;
}

static int z_add(lua_State *L) { return arith(L, "__add", "add", gl_complex128_add); }
static int z_sub(lua_State *L) { return arith(L, "__sub", "sub", gl_complex128_sub); }
static int z_mul(lua_State *L) { return arith(L, "__mul", "mul", gl_complex128_mul); }
static int z_div(lua_State *L) { return arith(L, "__div", "div", gl_complex128_div); }
static int z_pow(lua_State *L) { return arith(L, "__pow", "pow", gl_complex128_pow); }

static int z_unm(lua_State *L) {
  cnum z = check_cnum(L, 1);
  push_cnum(L, gl_complex128_neg(z));
  return 1;
}

/* Lua calls __eq only between two userdata: an array or another type is never equal. */
static int z_eq(lua_State *L) {
  const zbox *a = test_complex(L, 1), *b = test_complex(L, 2);
  lua_pushboolean(L, a && b && a->re == b->re && a->im == b->im);
  return 1;
}

#if defined(__clang__)
#pragma STDC FP_CONTRACT DEFAULT
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

/* ---- text ------------------------------------------------------------------------------------ */

/* A part as Python's repr writes a float inside a complex: the fewest digits that read
** back, positional from 1e-4 to 1e16, no ".0" on whole numbers ("1", "2.5", "1e+20"). */
static int format_part(char *out, double v) {
  if (isnan(v)) return sprintf(out, "nan");
  if (isinf(v)) return sprintf(out, v < 0 ? "-inf" : "inf");
  char buf[40];
  int p = 0;
  for (; p < 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p, v);
    if (strtod(buf, NULL) == v) break;
  }
  int e = atoi(strchr(buf, 'e') + 1);
  if (e < -4 || e >= 16) return sprintf(out, "%s", buf);
  return sprintf(out, "%.*f", p > e ? p - e : 0, v);
}

/* "1+2i", "1-2i", "-0+nani", "inf-infi": NumPy's str of a complex with "i" for "j" and the
** real part always written. */
static void push_text(lua_State *L, cnum z) {
  char re[48], im[48];
  format_part(re, z.re);
  bool minus = !isnan(z.im) && signbit(z.im);
  format_part(im, minus ? -z.im : z.im);
  lua_pushfstring(L, "%s%s%si", re, minus ? "-" : "+", im);
}

static int z_tostring(lua_State *L) {
  push_text(L, check_cnum(L, 1));
  return 1;
}

/* "z = " .. z: a string or a number with a complex scalar, as tostring writes it. */
static int z_concat(lua_State *L) {
  for (int i = 1; i <= 2; i++) {
    if (test_complex(L, i)) { push_text(L, check_cnum(L, i)); lua_replace(L, i); }
    else if (!lua_isstring(L, i)) return luaL_error(L, "attempt to concatenate a %s value", luaL_typename(L, i));
  }
  lua_concat(L, 2);
  return 1;
}

/* ---- fields and methods ----------------------------------------------------------------------- */

/* upvalue 1: the methods table */
static int z_index(lua_State *L) {
  cnum z = check_cnum(L, 1);
  const char *k = lua_tostring(L, 2);
  if (k && (strcmp(k, "re") == 0 || strcmp(k, "real") == 0)) { lua_pushnumber(L, z.re); return 1; }
  if (k && (strcmp(k, "im") == 0 || strcmp(k, "imag") == 0)) { lua_pushnumber(L, z.im); return 1; }
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  return 1;
}

static int z_abs(lua_State *L) {
  cnum z = check_cnum(L, 1);
  lua_pushnumber(L, gl_complex128_abs(z));
  return 1;
}

static int z_conj(lua_State *L) {
  cnum z = check_cnum(L, 1);
  push_cnum(L, gl_complex128_conj(z));
  return 1;
}

static int z_arg(lua_State *L) {
  cnum z = check_cnum(L, 1);
  lua_pushnumber(L, gl_complex128_angle(z));
  return 1;
}

static const gl_reg complex_meta[] = {
  { "__add", z_add, 2 }, { "__sub", z_sub, 2 }, { "__mul", z_mul, 2 }, { "__div", z_div, 2 },
  { "__pow", z_pow, 2 }, { "__unm", z_unm, 2 }, { "__eq", z_eq, 2 }, { "__tostring", z_tostring, 1 },
  { "__concat", z_concat, 2 }, { NULL, NULL, 0 },
};

static const gl_reg complex_methods[] = {
  { "abs", z_abs, 1 }, { "conj", z_conj, 1 }, { "arg", z_arg, 1 }, { NULL, NULL, 0 },
};

/* ---- arrays ------------------------------------------------------------------------------------- */

/* The part (0 real, 1 imaginary) of a complex array as a descriptor of its storage. */
static gl_array part_of(const gl_array *x, int part) {
  gl_array v = *x;
  gl_view_part(&v, part);          /* cannot fail on a complex array */
  return v;
}

/* A real part for gpu.complex or gpu.polar: an open real array, or a number. */
static gl_operand real_operand(lua_State *L, gl_lctx *c, int idx) {
  gl_operand o = { NULL, gl_scalar_int(0) };
  gl_array *a = gl_lua_test_in(L, c, idx);
  if (a) {
    gl_lua_check(L, idx);
    if (gl_dtype_is_complex((gl_dtype)a->dtype))
      luaL_argerror(L, idx, lua_pushfstring(L, "a real array expected, got %s", gl_dtypes[a->dtype].name));
    o.arr = a;
  } else if (lua_type(L, idx) == LUA_TNUMBER) {
    o.s = gl_lua_scalar(L, idx, idx);
  } else if (test_complex(L, idx)) {
    luaL_argerror(L, idx, "a real number expected, got a complex value");
  } else {
    luaL_argerror(L, idx, lua_pushfstring(L, "number or gpu.array expected, got %s", luaL_typename(L, idx)));
  }
  return o;
}

/* The float dtype a part brings (an integer or bool array: float64, as NumPy's re + 1j*im
** gives complex128 there; a number takes the other's) and the complex one both make. */
static gl_dtype part_float(const gl_operand *o) {
  if (!o->arr) return GL_NDTYPE;
  gl_dtype t = (gl_dtype)o->arr->dtype;
  return gl_dtype_is_float(t) ? t : GL_FLOAT64;
}

/* A new complex array of the parts' broadcast shape, pushed, and views of its two parts. */
static gl_array *push_complex_result(lua_State *L, gl_lctx *c, const gl_operand *a, const gl_operand *b,
                                     gl_array *re, gl_array *im) {
  gl_dtype fa = part_float(a), fb = part_float(b);
  gl_dtype part = fa == GL_NDTYPE ? fb : fb == GL_NDTYPE ? fa : gl_promote(fa, fb);
  int ndim;
  int64_t shape[GL_MAXDIMS];
  const gl_array *x = a->arr ? a->arr : b->arr;
  if (a->arr && b->arr) {
    gl_lua_check_status(L, gl_same_device(a->arr, b->arr), 0);
    gl_lua_check_status(L, gl_broadcast_shapes(a->arr->ndim, a->arr->shape, b->arr->ndim, b->arr->shape, &ndim, shape), 0);
  } else {
    ndim = x->ndim;
    memcpy(shape, x->shape, sizeof shape);
  }
  gl_array *out = gl_lua_push_result(L, c, gl_complex_for(part), ndim, shape, gl_array_device(x));
  *re = part_of(out, 0);
  *im = part_of(out, 1);
  return out;
}

static gl_status set_part(const gl_array *dst, gl_operand v) {
  return v.arr ? gl_op_assign(dst, v.arr) : gl_op_fill(dst, v.s);
}

/* The parts of gpu.polar(r, t): r cos t and r sin t. */
static gl_status polar_parts(const gl_array *re, const gl_array *im, gl_operand r, gl_operand t) {
  gl_status st = set_part(re, t);
  if (st == GL_OK) st = gl_op_unary_(re, GL_U_cos);
  if (st == GL_OK) st = gl_op_binary_(re, GL_B_mul, r);
  if (st == GL_OK) st = set_part(im, t);
  if (st == GL_OK) st = gl_op_unary_(im, GL_U_sin);
  if (st == GL_OK) st = gl_op_binary_(im, GL_B_mul, r);
  return st;
}

/* gpu.complex(re, im): a complex scalar from two numbers; from arrays (or an array and a
** number) a complex array of their broadcast shape, as torch.complex. gpu.polar(abs,
** angle) = abs * (cos(angle) + i sin(angle)), as torch.polar. */
static int complex_array(lua_State *L, bool polar) {
  gl_lctx *c = GL_CTX(L);
  lua_settop(L, 2);
  gl_operand a = real_operand(L, c, 1), b = real_operand(L, c, 2);
  if (!a.arr && !b.arr)
    return luaL_argerror(L, 1, polar ? "gpu.array expected (use gpu.complex for numbers)" : "number or gpu.array expected");
  gl_array re, im;
  gl_array *out = push_complex_result(L, c, &a, &b, &re, &im);
  gl_status st = polar ? polar_parts(&re, &im, a, b) : set_part(&re, a);
  if (st == GL_OK && !polar) st = set_part(&im, b);
  return gl_lua_result(L, st, out, 0);
}

static int l_complex(lua_State *L) {
  if (lua_type(L, 1) == LUA_TNUMBER && lua_type(L, 2) == LUA_TNUMBER) {
    gl_lua_push_complex(L, lua_tonumber(L, 1), lua_tonumber(L, 2));
    return 1;
  }
  return complex_array(L, false);
}

static int l_polar(lua_State *L) { return complex_array(L, true); }

/* gpu.real(x), x.real: a view of a complex array's real parts (writes reach x, as NumPy's);
** a real array itself. */
static int l_real(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  lua_settop(L, 1);
  if (!gl_dtype_is_complex((gl_dtype)x->dtype)) return 1;
  gl_array v = part_of(x, 0);
  gl_lua_push_view(L, &v);
  return 1;
}

/* gpu.imag(x), x.imag: a view of a complex array's imaginary parts; for a real array zeros
** of its shape and dtype: one zero broadcast (read-only where it has several elements, as
** NumPy's is). */
static int l_imag(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  lua_settop(L, 1);
  if (gl_dtype_is_complex((gl_dtype)x->dtype)) {
    gl_array v = part_of(x, 1);
    gl_lua_push_view(L, &v);
    return 1;
  }
  gl_array *z = gl_lua_alloc(L, (gl_dtype)x->dtype, 0, x->shape, gl_array_device(x));   /* 0-d */
  gl_status st = gl_op_fill(z, gl_scalar_int(0));
  if (st == GL_OK) st = gl_view_expand(z, x->ndim, x->shape);    /* x's shape: no failure */
  gl_lua_check_status(L, st, 0);
  return 1;                        /* one element's bytes, accounted by gl_lua_alloc */
}

/* out = a op b, an elementwise op of views of the argument's parts, pushed. */
static int push_binary(lua_State *L, gl_binop op, gl_operand a, gl_operand b) {
  gl_plan p;
  gl_lua_check_status(L, gl_op_binary_plan(&p, op, a, b), 0);
  gl_array *out = gl_lua_push_planned(L, GL_CTX(L), &p);
  gl_status st = gl_op_binary_run(out, &p, a, b);
  if (st != GL_OK) gl_array_release(out);
  return gl_lua_result(L, st, out, 0);
}

/* gpu.isreal(x) / gpu.iscomplex(x): per element, whether the imaginary part is zero
** (NumPy's; a real array gives all true / all false). */
static int imag_test(lua_State *L, gl_binop op) {
  gl_array *x = gl_lua_check(L, 1);
  lua_settop(L, 1);
  if (gl_dtype_is_complex((gl_dtype)x->dtype)) {
    gl_array im = part_of(x, 1);
    gl_operand a = { &im, gl_scalar_int(0) }, zero = { NULL, gl_scalar_int(0) };
    return push_binary(L, op, a, zero);
  }
  gl_array *out = gl_lua_push_result(L, GL_CTX(L), GL_BOOL, x->ndim, x->shape, gl_array_device(x));
  return gl_lua_result(L, gl_op_fill(out, gl_scalar_bool(op == GL_B_eq)), out, 0);
}

static int l_isreal(lua_State *L) { return imag_test(L, GL_B_eq); }
static int l_iscomplex(lua_State *L) { return imag_test(L, GL_B_ne); }

/* x:is_complex() (PyTorch), gpu.iscomplexobj(v) / gpu.isrealobj(v) (NumPy: by the dtype, for
** arrays, and for scalars: a complex scalar is complex, a number or boolean real). */
static int l_is_complex(lua_State *L) {
  gl_array *x = gl_lua_check(L, 1);
  lua_pushboolean(L, gl_dtype_is_complex((gl_dtype)x->dtype));
  return 1;
}

static bool complex_obj(lua_State *L) {
  gl_array *x = gl_lua_test(L, 1);
  if (x) return gl_dtype_is_complex((gl_dtype)gl_lua_check(L, 1)->dtype);
  if (test_complex(L, 1)) return true;
  int t = lua_type(L, 1);
  if (t != LUA_TNUMBER && t != LUA_TBOOLEAN)
    luaL_argerror(L, 1, lua_pushfstring(L, "gpu.array or number expected, got %s", luaL_typename(L, 1)));
  return false;
}

static int l_iscomplexobj(lua_State *L) { lua_pushboolean(L, complex_obj(L)); return 1; }
static int l_isrealobj(lua_State *L) { lua_pushboolean(L, !complex_obj(L)); return 1; }

void gl_lua_push_part(lua_State *L, int idx, int part) {
  idx = lua_absindex(L, idx);
  lua_rawgetp(L, LUA_REGISTRYINDEX, part ? &imag_key : &real_key);
  lua_pushvalue(L, idx);
  lua_call(L, 1, 1);
}

/* ---- registration ---------------------------------------------------------------------------- */

static const gl_reg complex_funcs[] = {
  { "complex", l_complex, 2 }, { "polar", l_polar, 2 }, { "iscomplex", l_iscomplex, 1 },
  { "iscomplexobj", l_iscomplexobj, 1 }, { "isrealobj", l_isrealobj, 1 }, { NULL, NULL, 0 },
};

static const gl_reg complex_both[] = {
  { "isreal", l_isreal, 1 }, { "is_complex", l_is_complex, 1 }, { NULL, NULL, 0 },
};

/* Where kernels/elem_ops.h has rows of these names, the elementwise ops (gl_open_math,
** before this) serve: they run fused and in place as well. */

static void open_part(lua_State *L, int module, const char *name, lua_CFunction f, const char *key) {
  GL_PUSH_CTX(L);
  gl_lua_pushop(L, name, f, 1, 1);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
  lua_setfield(L, module, name);
}

void gl_open_complex(lua_State *L, int module, int methods) {
  luaL_newmetatable(L, COMPLEX_META);
  gl_lua_setfuncs(L, -1, complex_meta);
  lua_newtable(L);
  gl_lua_setfuncs(L, -1, complex_methods);
  lua_pushcclosure(L, z_index, 1);
  lua_setfield(L, -2, "__index");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &complex_meta_key);
  gl_lua_setops(L, module, "", complex_funcs);
  gl_lua_setboth(L, module, methods, complex_both);
  /* x.real and x.imag are properties: gpu.real and gpu.imag are no methods */
  open_part(L, module, "real", l_real, &real_key);
  open_part(L, module, "imag", l_imag, &imag_key);
}
