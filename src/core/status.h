/*
** status.h — how every layer below src/lua reports failure.
**
** Functions below the Lua binding never raise: they return a gl_status and leave a
** human-readable message in a per-thread buffer (gl_errmsg()). The Lua layer turns the
** pair into a Lua error that also names the function. Messages are fragments in the
** style of lauxlib's parenthesised reasons: "shapes (3,4) and (5,6) do not align".
*/
#ifndef GL_STATUS_H
#define GL_STATUS_H

typedef enum gl_status {
  GL_OK = 0,
  GL_EINVAL,      /* bad argument: shape, dtype, index, axis... */
  GL_ENOMEM,      /* an allocation failed (host or device) */
  GL_EDEVICE,     /* a device call failed (CUDA error, no device) */
  GL_ENOTSUP,     /* op/dtype not supported by this backend */
  GL_EIO,         /* file and format errors */
  GL_ETOOBIG,     /* a count or byte size past checked.h's limits: "array is too big (...)" */
  GL_EINTR        /* stopped by gl_interrupt_request (SIGINT): "interrupted" */
} gl_status;

/* Sets the message (printf-style) and returns 'code', so callers can write
** `return gl_fail(GL_EINVAL, "axis %d out of range", ax);`. The arguments may include
** gl_errmsg() itself, to wrap the fault a callee reported:
** `return gl_fail(GL_EIO, "member '%s': %s", name, gl_errmsg());` */
gl_status gl_fail(gl_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The message of the last failure on this thread ("" if none). */
const char *gl_errmsg(void);

/* Propagate a failure: `GL_TRY(gl_something(...));` */
#define GL_TRY(expr) do { gl_status gl_st_ = (expr); if (gl_st_ != GL_OK) return gl_st_; } while (0)

#endif
