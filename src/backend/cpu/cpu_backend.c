/*
** cpu_backend.c — the CPU backend's table: the reference every other backend must agree
** with.
*/
#include <string.h>
#include <unistd.h>
#include "cpu.h"

static int cpu_count(const char **reason) { (void)reason; return 1; }

static gl_status cpu_info(int index, gl_devinfo *out) {
  (void)index;
  memset(out, 0, sizeof *out);
  strcpy(out->name, "cpu");
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  out->total_memory = pages > 0 ? (size_t)pages * (size_t)psz : 0;
  out->multiprocessors = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return GL_OK;
}

static bool cpu_supports(gl_op op, gl_dtype dt) { (void)op; (void)dt; return true; }

static gl_status cpu_to_host(void *dst, gl_device dev, const void *src, size_t n) {
  (void)dev; memcpy(dst, src, n); return GL_OK;
}
static gl_status cpu_from_host(gl_device dev, void *dst, const void *src, size_t n) {
  (void)dev; memcpy(dst, src, n); return GL_OK;
}
static gl_status cpu_synchronize(gl_device dev) { (void)dev; return GL_OK; }

const gl_backend gl_cpu_backend = {
  .name = "cpu",
  .count = cpu_count,
  .info = cpu_info,
  .supports = cpu_supports,
  .alloc = gl_cpu_alloc,
  .free = gl_cpu_free,
  .empty_cache = gl_cpu_empty_cache,
  .memory = gl_cpu_memory,
  .to_host = cpu_to_host,
  .from_host = cpu_from_host,
  .synchronize = cpu_synchronize,
  .copy = gl_cpu_copy,
  .fill = gl_cpu_fill,
  .arange = gl_cpu_arange,
  .unary = gl_cpu_unary,
  .binary = gl_cpu_binary,
  .where = gl_cpu_where,
};
