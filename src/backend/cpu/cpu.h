/*
** cpu.h — pieces of the CPU backend shared between its files.
*/
#ifndef GL_CPU_H
#define GL_CPU_H

#include "../backend.h"
#include "../../core/iter.h"

gl_status gl_cpu_alloc(gl_device dev, size_t nbytes, void **out);
void gl_cpu_free(gl_device dev, void *p, size_t nbytes);
void gl_cpu_empty_cache(gl_device dev);
void gl_cpu_memory(gl_device dev, gl_meminfo *m);
void gl_cpu_alloc_counts(uint64_t *allocs, uint64_t *hits);

gl_status gl_cpu_copy(const gl_array *dst, const gl_array *src);
gl_status gl_cpu_fill(const gl_array *dst, gl_scalar v);
gl_status gl_cpu_arange(const gl_array *dst, double start, double step);

gl_status gl_cpu_unary(gl_unop op, const gl_array *dst, const gl_array *src);
gl_status gl_cpu_binary(gl_binop op, gl_dtype ct, const gl_array *dst, gl_operand a, gl_operand b);
gl_status gl_cpu_where(const gl_array *dst, const gl_array *cond, gl_operand a, gl_operand b);

#endif
