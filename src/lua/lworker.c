/*
** lworker.c — the processes behind DataLoader{num_workers = k} (gpu._worker; the Lua side,
** lua/gpu/data/workers.lua, decides what they do): fork, one socket pair per worker,
** length-prefixed messages read under a deadline, waitpid and kill. POSIX only.
**
** A worker is a fork of the calling process, as PyTorch's workers are on Linux. The child
** first makes itself host-only and single-threaded (gl_backends_host_only: a CUDA context
** does not survive fork and libgomp's thread pool is not fork-safe), then closes the
** parent's ends of every other worker's socket, so a worker's death is seen by the parent
** as end-of-file even while siblings live. Sockets rather than pipes so that a write to a
** dead peer fails with EPIPE (MSG_NOSIGNAL) instead of killing the writer with SIGPIPE;
** every descriptor is close-on-exec, so a program a dataset runs inherits none.
*/
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "lgpu.h"

/* The parent's ends of the sockets this process holds (every worker of every loader): a
** fork closes them all in the child. Process-wide on purpose: descriptors are. */
#define MAX_FDS 1024
static int parent_fds[MAX_FDS];
static int n_parent_fds;

static void forget_fd(int fd) {
  for (int i = 0; i < n_parent_fds; i++)
    if (parent_fds[i] == fd) { parent_fds[i] = parent_fds[--n_parent_fds]; return; }
}

static int fail_errno(lua_State *L, const char *what) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", what, strerror(errno));
  return 2;
}

/* spawn() -> pid, fd in the parent; 0, fd in the new worker */
static int w_spawn(lua_State *L) {
  if (n_parent_fds >= MAX_FDS) return luaL_error(L, "gpu._worker.spawn: too many workers (%d)", MAX_FDS);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return fail_errno(L, "socketpair");
  fflush(NULL);                                  /* nothing buffered is written twice */
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    errno = e;
    return fail_errno(L, "fork");
  }
  if (pid == 0) {
    gl_backends_host_only("a DataLoader worker process makes cpu arrays only");
    close(sv[0]);
    for (int i = 0; i < n_parent_fds; i++) close(parent_fds[i]);
    n_parent_fds = 0;
    lua_pushinteger(L, 0);
    lua_pushinteger(L, sv[1]);
    return 2;
  }
  close(sv[1]);
  parent_fds[n_parent_fds++] = sv[0];
  lua_pushinteger(L, pid);
  lua_pushinteger(L, sv[0]);
  return 2;
}

static int check_fd(lua_State *L, int idx) {
  lua_Integer fd = luaL_checkinteger(L, idx);
  luaL_argcheck(L, fd >= 0 && fd <= INT32_MAX, idx, "not a descriptor");
  return (int)fd;
}

/* send(fd, message) -> true, or nil and the error: an 8-byte length, then the bytes */
static int w_send(lua_State *L) {
  int fd = check_fd(L, 1);
  size_t len;
  const char *msg = luaL_checklstring(L, 2, &len);
  uint64_t n = len;
  for (int part = 0; part < 2; part++) {
    const char *p = part == 0 ? (const char *)&n : msg;
    size_t left = part == 0 ? sizeof n : len;
    while (left > 0) {
      ssize_t w = send(fd, p, left, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) {
        lua_pushnil(L);
        lua_pushliteral(L, "eof");
        return 2;
      }
      if (w < 0) return fail_errno(L, "send");
      p += w;
      left -= (size_t)w;
    }
  }
  lua_pushboolean(L, 1);
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads len bytes into p by the deadline (<= 0: none): 0, or "eof", "timeout", an error. */
static const char *read_all(int fd, char *p, size_t len, double deadline) {
  while (len > 0) {
    int ms = -1;
    if (deadline > 0) {
      double left = deadline - now_s();
      if (left <= 0) return "timeout";
      ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
    }
    struct pollfd pf = { .fd = fd, .events = POLLIN, .revents = 0 };
    int r = poll(&pf, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return strerror(errno);
    if (r == 0) continue;                        /* the deadline is checked above */
    ssize_t got = read(fd, p, len);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0 && errno == ECONNRESET) return "eof";      /* it died with our request unread */
    if (got < 0) return strerror(errno);
    if (got == 0) return "eof";
    p += got;
    len -= (size_t)got;
  }
  return NULL;
}

/* recv(fd [, timeout]) -> the next message, or nil and "eof" (the peer closed or died),
** "timeout" (none within timeout seconds; 0 or nil: wait for ever) or an error */
static int w_recv(lua_State *L) {
  int fd = check_fd(L, 1);
  lua_Number timeout = luaL_optnumber(L, 2, 0);
  double deadline = timeout > 0 ? now_s() + (double)timeout : 0;
  uint64_t n;
  const char *err = read_all(fd, (char *)&n, sizeof n, deadline);
  if (err == NULL && n > ((uint64_t)1 << 40)) err = "a damaged message (its length is past 1 TiB)";
  if (err) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, (size_t)n);
  err = read_all(fd, p, (size_t)n, deadline);
  if (err) {
    lua_pushnil(L);
    lua_pushstring(L, strcmp(err, "eof") == 0 ? "eof" : err);
    return 2;
  }
  luaL_pushresultsize(&b, (size_t)n);
  return 1;
}

/* close(fd): the parent's or the child's end */
static int w_close(lua_State *L) {
  int fd = check_fd(L, 1);
  forget_fd(fd);
  close(fd);
  return 0;
}

/* wait(pid [, how]) -> nil while it runs, else "exited" and the status, "signaled", the
** signal's number and its description, or "gone" (not a child of this process, or reaped
** already). how: nil or false looks once, true waits for the end, a number waits up to
** that many seconds. */
static int w_wait(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  int block = lua_toboolean(L, 2) && !lua_isnumber(L, 2);
  double deadline = lua_isnumber(L, 2) ? now_s() + (double)lua_tonumber(L, 2) : 0;
  int status;
  pid_t r;
  for (;;) {
    r = waitpid(pid, &status, block ? 0 : WNOHANG);
    if (r < 0 && errno == EINTR) continue;
    if (r != 0 || deadline == 0 || now_s() >= deadline) break;
    struct timespec ms = { 0, 1000000 };
    nanosleep(&ms, NULL);
  }
  if (r == 0) return 0;
  if (r < 0) {
    lua_pushliteral(L, "gone");
    return 1;
  }
  if (WIFSIGNALED(status)) {
    lua_pushliteral(L, "signaled");
    lua_pushinteger(L, WTERMSIG(status));
    lua_pushstring(L, strsignal(WTERMSIG(status)));
    return 3;
  }
  lua_pushliteral(L, "exited");
  lua_pushinteger(L, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 2;
}

/* kill(pid [, "KILL"|"TERM"|"INT"|"0"]) -> true, or nil and the error ("0": whether it is there) */
static int w_kill(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  static const char *const names[] = { "KILL", "TERM", "INT", "0", NULL };
  static const int sigs[] = { SIGKILL, SIGTERM, SIGINT, 0 };
  int sig = sigs[luaL_checkoption(L, 2, "KILL", names)];
  luaL_argcheck(L, pid > 0, 1, "not a process id");
  if (kill(pid, sig) != 0) return fail_errno(L, "kill");
  lua_pushboolean(L, 1);
  return 1;
}

/* exit(status): ends a worker at once: no Lua state closed, no finalizer run, nothing of
** the parent's flushed (the child's own output is) */
static int w_exit(lua_State *L) {
  int status = (int)luaL_optinteger(L, 1, 0);
  fflush(stdout);
  fflush(stderr);
  _exit(status);
  return 0;
}

static int w_getpid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  return 1;
}

void gl_open_worker(lua_State *L, int module) {
  static const gl_reg funcs[] = {
    { "spawn", w_spawn, 0 }, { "send", w_send, 2 }, { "recv", w_recv, 2 }, { "close", w_close, 1 },
    { "wait", w_wait, 2 }, { "kill", w_kill, 2 }, { "exit", w_exit, 1 }, { "getpid", w_getpid, 0 },
    { NULL, NULL, 0 }
  };
  lua_newtable(L);
  gl_lua_setfuncs(L, lua_gettop(L), funcs);
  lua_setfield(L, module, "_worker");
}
