/*
** cpu_elem_complex.c — the complex rows of the elementwise kernels (kernels/complex.h's
** math), stamped as cpu_elem.c stamps the real ones (cpu_elem_rows.h), in a file of their
** own so that only they are compiled without contraction (the Makefile's -ffp-contract=off).
*/
#define CPU_ELEM_REAL 0
#define CPU_ELEM_COMPLEX 1
#include "cpu_elem_rows.h"

GL_UNARY_OPS(STAMP_U)
GL_BINARY_OPS(STAMP_B)

const urow_fn gl_cpu_unary_cx[GL_NUNOP][GL_NDTYPE] = { GL_UNARY_OPS(TABLE_U) };
const brow_fn gl_cpu_binary_cx[GL_NBINOP][GL_NDTYPE] = { GL_BINARY_OPS(TABLE_B) };
