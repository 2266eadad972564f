/*
** levent.c — gpu.event([device]): a point in a device's stream, for timing GPU work
** without synchronising after every call (torch.cuda.Event, cupy's Event). On the cpu
** an event is the host clock at record time.
**
**   local e0, e1 = gpu.event(), gpu.event()
**   e0:record(); work(); e1:record()
**   print(e0:elapsed(e1), "ms")      -- waits for e1
*/
#include <string.h>
#include <time.h>
#include "lbody.h"

#define GL_EVENT "gpu.event"

typedef struct gl_event {
  gl_device device;
  const gl_backend *backend;   /* NULL: host clock */
  void *handle;                /* the backend's event; NULL when closed or host */
  double host_t;               /* seconds, when recorded on the host */
  bool recorded;
} gl_event;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static gl_event *check_event(lua_State *L, int idx) {
  return luaL_checkudata(L, idx, GL_EVENT);
}

static int l_event(lua_State *L) {
  gl_device d = lua_isnoneornil(L, 1) ? gl_lua_default_device(L) : gl_lua_device(L, 1);
  gl_event *e = lua_newuserdatauv(L, sizeof *e, 0);
  memset(e, 0, sizeof *e);                  /* a safe, empty state before any resource */
  e->device = d;
  luaL_setmetatable(L, GL_EVENT);
  const gl_backend *b;
  gl_lua_check_status(L, gl_backend_for(d, &b), 1);
  if (b->event_new) {
    gl_lua_check_status(L, b->event_new(d, &e->handle), 0);
    e->backend = b;
  }
  return 1;
}

static int event_record(lua_State *L) {
  gl_event *e = check_event(L, 1);
  if (e->backend) {
    if (e->handle == NULL) return luaL_argerror(L, 1, "event is closed");
    gl_lua_check_status(L, e->backend->event_record(e->device, e->handle), 0);
  } else {
    e->host_t = now();
  }
  e->recorded = true;
  lua_settop(L, 1);
  return 1;
}

/* e0:elapsed(e1): milliseconds from e0 to e1 (both recorded, same device). */
static int event_elapsed(lua_State *L) {
  gl_event *a = check_event(L, 1), *b = check_event(L, 2);
  if (!a->recorded || !b->recorded) return luaL_error(L, "elapsed: both events must be recorded first");
  if (!gl_device_eq(a->device, b->device)) return luaL_argerror(L, 2, "events are on different devices");
  double ms;
  if (a->backend) {
    if (a->handle == NULL || b->handle == NULL) return luaL_error(L, "elapsed: event is closed");
    gl_lua_check_status(L, a->backend->event_elapsed(a->handle, b->handle, &ms), 0);
  } else {
    ms = (b->host_t - a->host_t) * 1e3;
  }
  lua_pushnumber(L, ms);
  return 1;
}

static int event_synchronize(lua_State *L) {
  gl_event *e = check_event(L, 1);
  if (e->backend && e->handle) {
    double ms;
    gl_lua_check_status(L, e->backend->event_elapsed(e->handle, e->handle, &ms), 0);
  }
  return 0;
}

static int event_gc(lua_State *L) {
  gl_event *e = check_event(L, 1);
  if (e->backend && e->handle) e->backend->event_free(e->handle);
  e->handle = NULL;
  return 0;
}

static int event_tostring(lua_State *L) {
  gl_event *e = check_event(L, 1);
  char buf[16];
  lua_pushfstring(L, "gpu.event(%s%s)", gl_device_name(e->device, buf), e->recorded ? ", recorded" : "");
  return 1;
}

static const gl_reg event_methods[] = {
  { "record", event_record, 1 }, { "elapsed", event_elapsed, 2 }, { "elapsed_time", event_elapsed, 2 },
  { "synchronize", event_synchronize, 1 }, { NULL, NULL, 0 },
};

static const gl_reg event_meta[] = {
  { "__gc", event_gc, 1 }, { "__close", event_gc, 2 }, { "__tostring", event_tostring, 1 }, { NULL, NULL, 0 },
};

static const gl_reg event_funcs[] = {
  { "event", l_event, 1 },
  { NULL, NULL, 0 }
};

void gl_open_event(lua_State *L, int module, int methods) {
  (void)methods;
  gl_lua_newclass(L, GL_EVENT, event_meta, event_methods, false);
  gl_lua_setfuncs(L, module, event_funcs);
}
