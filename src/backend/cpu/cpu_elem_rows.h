/*
** cpu_elem_rows.h — the stamping of cpu_elem.c's row kernels from kernels/elem_ops.h, shared
** by the two files that stamp them: cpu_elem.c (the real dtypes' rows) and
** cpu_elem_complex.c (the complex rows, compiled without contraction of a * b - c * d into
** an fma, as NumPy rounds each product: that would turn a complex square's inf - inf = NaN
** into -inf; the real rows keep the fma, which gelu's polynomial needs). A file sets
** CPU_ELEM_REAL and CPU_ELEM_COMPLEX (0 or 1) to the rows it stamps, then runs
** GL_UNARY_OPS(STAMP_U) and GL_BINARY_OPS(STAMP_B), and fills its tables with TABLE_U/TABLE_B.
*/
#ifndef GL_CPU_ELEM_ROWS_H
#define GL_CPU_ELEM_ROWS_H

#include "cpu.h"
#include "../../../kernels/elem.h"
#include "../../../kernels/convert.h"

typedef void (*urow_fn)(void *d, int64_t ds, const void *s, int64_t ss, int64_t n);
typedef void (*brow_fn)(void *d, int64_t ds, const void *a, int64_t as, const void *b, int64_t bs, int64_t n);

/* ---- stamping ------------------------------------------------------------------------------ */

/* A unary row: IT stored input, CT compute type of x, OT stored output; LD(x) widens a
** stored input, ST(OT, v) stores a result. */
#define UROW(fn, IT, CT, OT, TT, UTT, LD, ST, EXPR)                               \
  static void fn(void *d_, int64_t ds, const void *s_, int64_t ss, int64_t n) {   \
    typedef TT T; typedef UTT UT; (void)sizeof(T); (void)sizeof(UT);               \
    OT *d = d_;                                                                    \
    const IT *s = s_;                                                              \
    if (ds == 1 && ss == 1) {                                                      \
      for (int64_t i = 0; i < n; i++) { CT x = LD(s[i]); (void)x; d[i] = ST(OT, EXPR); }        \
    } else {                                                                       \
      for (int64_t i = 0; i < n; i++) { CT x = LD(s[i * ss]); (void)x; d[i * ds] = ST(OT, EXPR); } \
    }                                                                              \
  }

/* A binary row with fast paths for contiguous and stride-0 (scalar/broadcast) operands;
** the op's expression is fn##_at, inlined into each loop. */
#define BROW(fn, IT, CT, OT, TT, UTT, LD, ST, EXPR)                                          \
  static inline OT fn##_at(CT a, CT b) { typedef TT T; typedef UTT UT; (void)sizeof(T); (void)sizeof(UT); return ST(OT, EXPR); } \
  static void fn(void *d_, int64_t ds, const void *a_, int64_t as, const void *b_, int64_t bs, int64_t n) { \
    OT *d = d_;                                                                               \
    const IT *pa = a_, *pb = b_;                                                              \
    if (ds == 1 && as == 1 && bs == 1)                                                        \
      for (int64_t i = 0; i < n; i++) d[i] = fn##_at(LD(pa[i]), LD(pb[i]));                  \
    else if (ds == 1 && as == 1 && bs == 0)                                                   \
      { const CT b = LD(pb[0]); for (int64_t i = 0; i < n; i++) d[i] = fn##_at(LD(pa[i]), b); } \
    else if (ds == 1 && as == 0 && bs == 1)                                                   \
      { const CT a = LD(pa[0]); for (int64_t i = 0; i < n; i++) d[i] = fn##_at(a, LD(pb[i])); } \
    else                                                                                      \
      for (int64_t i = 0; i < n; i++) d[i * ds] = fn##_at(LD(pa[i * as]), LD(pb[i * bs]));  \
  }

/* What an op kind writes: the input dtype (SAME) or bool (comparisons, logic, predicates). */
#define OUT_UF SAME
#define OUT_US SAME
#define OUT_UP BOOL
#define OUT_UL BOOL
#define OUT_UB SAME
#define OUT_BA SAME
#define OUT_BD SAME
#define OUT_BC BOOL
#define OUT_BL BOOL
#define OUT_BB SAME
#define OUT_BS SAME
#define OUT_T_SAME(S) S
#define OUT_T_BOOL(S) uint8_t
#define OUT_ST_SAME(half) GL_DT_NARROW_##half
#define OUT_ST_BOOL(half) ST_BOOL
#define ST_BOOL(OT, v) ((uint8_t)((v) != 0))

/* The expression of elem_ops.h's row for a dtype row's kind and compute type: I for the
** integers and bool, F for a float computing in float, D for one computing in double. */
#define EXPR_OF(kind, CT, F, D, I) EXPR_##kind(CT, F, D, I)
#define EXPR_BOOL(CT, F, D, I) I
#define EXPR_UINT(CT, F, D, I) I
#define EXPR_INT(CT, F, D, I) I
#define EXPR_FLOAT(CT, F, D, I) EXPR_##CT(F, D)
#define EXPR_float(F, D) F
#define EXPR_double(F, D) D

/* A complex row's kernel: the op's complex.h function gl_<id>_<f>(args) (args: (x) or
** (a, b)), written as it returns it: the complex element, its real part's type (abs,
** angle) or bool. */
#define CX_CALL(id, cx, args) CX_CALL_(id, GL_CX_FN_##cx, args)
#define CX_CALL_(id, f, args) CX_CALL__(id, f, args)
#define CX_CALL__(id, f, args) gl_##id##_##f args
#define CX_OUT_T(cx, S) CX_OUT_T_(GL_CX_OUT_##cx, S)
#define CX_OUT_T_(out, S) CX_OUT_T__(out, S)
#define CX_OUT_T__(out, S) CX_T_##out(S)
#define CX_T_SAME(S) S
#define CX_T_REAL(S) __typeof__(((S *)0)->re)
#define CX_T_BOOL(S) uint8_t
#define CX_ST(cx) CX_ST_(GL_CX_OUT_##cx)
#define CX_ST_(out) CX_ST__(out)
#define CX_ST__(out) CX_ST_##out
#define CX_ST_SAME(OT, v) (v)
#define CX_ST_REAL(OT, v) (v)
#define CX_ST_BOOL ST_BOOL
#define IS_CX_BOOL 0
#define IS_CX_UINT 0
#define IS_CX_INT 0
#define IS_CX_FLOAT 0
#define IS_CX_COMPLEX 1

/* The row kernel of each (op, dtype) pair the op takes (elem_ops.h's GL_KINDS_<kind> for
** the real rows, its complex column for the complex ones), one per dtype row of
** kernels/dtypes.h: u_<op>_<dtype id>, b_<op>_<dtype id>. The op's row travels to each
** dtype row as the list's context, with the arguments of its complex function. */
#define STAMP(ROW, p, ctx, id, S, dkind, half, CT, UT) STAMP_(ROW, p, GL_DT_UNPAREN_ ctx, id, S, dkind, half, CT, UT)
#define STAMP_(...) STAMP__(__VA_ARGS__)
#define STAMP__(ROW, p, name, okind, F, D, I, cx, args, id, S, dkind, half, CT, UT) \
  STAMP___(ROW, p, name, okind, OUT_##okind, F, D, I, cx, args, id, S, dkind, half, CT, UT)
#define STAMP___(...) STAMP____(__VA_ARGS__)
#define STAMP____(ROW, p, name, okind, out, F, D, I, cx, args, id, S, dkind, half, CT, UT) \
  GL_DT_IF_(CPU_ELEM_REAL, GL_DT_WHEN(dkind, GL_KINDS_##okind, \
             ROW(p##name##_##id, S, CT, OUT_T_##out(S), CT, UT, GL_DT_WIDEN_##half, OUT_ST_##out(half), \
                 EXPR_OF(dkind, CT, F, D, I)))) \
  GL_DT_IF_(CPU_ELEM_COMPLEX, GL_DT_IF_(IS_CX_##dkind, GL_CX_IF(cx, \
             ROW(p##name##_##id, S, CT, CX_OUT_T(cx, S), CT, UT, GL_DT_WIDEN_none, CX_ST(cx), CX_CALL(id, cx, args)))))
#define STAMP_U_DT(ctx, E, id, S, kind, half, CT, UT, ...) STAMP(UROW, u_, ctx, id, S, kind, half, CT, UT)
#define STAMP_B_DT(ctx, E, id, S, kind, half, CT, UT, ...) STAMP(BROW, b_, ctx, id, S, kind, half, CT, UT)
#define STAMP_U(name, kind, F, D, I, cx) GL_DTYPE_ROWS_(STAMP_U_DT, (name, kind, F, D, I, cx, (x)))
#define STAMP_B(name, kind, F, D, I, cx) GL_DTYPE_ROWS_(STAMP_B_DT, (name, kind, F, D, I, cx, (a, b)))
/* The complex rows' tables (cpu_elem_complex.c), NULL where an op takes no complex dtype. */
extern const urow_fn gl_cpu_unary_cx[GL_NUNOP][GL_NDTYPE];
extern const brow_fn gl_cpu_binary_cx[GL_NBINOP][GL_NDTYPE];

/* The tables, [op][dtype]: NULL where the op does not take the dtype (what supports()
** answers from), the rows of the file's kinds. */
#define ENTRY(p, ctx, E, id, dkind) ENTRY_(p, GL_DT_UNPAREN_ ctx, E, id, dkind)
#define ENTRY_(...) ENTRY__(__VA_ARGS__)
#define ENTRY__(p, name, okind, cx, E, id, dkind) \
  GL_DT_IF_(CPU_ELEM_REAL, GL_DT_WHEN(dkind, GL_KINDS_##okind, [GL_##E] = p##name##_##id,)) \
  GL_DT_IF_(CPU_ELEM_COMPLEX, GL_DT_IF_(IS_CX_##dkind, GL_CX_IF(cx, [GL_##E] = p##name##_##id,)))
#define ENTRY_U_DT(ctx, E, id, S, kind, ...) ENTRY(u_, ctx, E, id, kind)
#define ENTRY_B_DT(ctx, E, id, S, kind, ...) ENTRY(b_, ctx, E, id, kind)
#define TABLE_U(name, kind, F, D, I, cx) [GL_U_##name] = { GL_DTYPE_ROWS_(ENTRY_U_DT, (name, kind, cx)) },
#define TABLE_B(name, kind, F, D, I, cx) [GL_B_##name] = { GL_DTYPE_ROWS_(ENTRY_B_DT, (name, kind, cx)) },
#endif
