/*
** status.c — the per-thread failure message behind gl_status.
*/
#include <stdarg.h>
#include <stdio.h>
#include "status.h"

static __thread char gl_msg[512];

gl_status gl_fail(gl_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(gl_msg, sizeof gl_msg, fmt, ap);
  va_end(ap);
  return code;
}

const char *gl_errmsg(void) { return gl_msg; }
