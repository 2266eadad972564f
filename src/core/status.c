/*
** status.c — the per-thread failure message behind gl_status.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "status.h"

static __thread char gl_msg[512];

/* Formats into a local buffer first: a message that wraps the previous one,
** gl_fail(code, "bad header (%s)", gl_errmsg()), reads gl_msg while the new text is
** made; formatting straight into gl_msg would make it both source and destination
** (undefined behaviour, and in practice "bad header (bad header (" garbage). */
gl_status gl_fail(gl_status code, const char *fmt, ...) {
  char buf[sizeof gl_msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  memcpy(gl_msg, buf, sizeof gl_msg);
  return code;
}

const char *gl_errmsg(void) { return gl_msg; }
