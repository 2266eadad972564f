/*
** ldevice.c — devices, memory and build facts: gpu.device(), set_device, is_available,
** device_count, devices, memory (and memory_allocated, max_memory_allocated,
** memory_reserved), empty_cache, synchronize, config, terminal_size.
**
** Everything comes from the registry of backends (src/backend/backend.c): names, counts,
** descriptions, versions. GPUs are probed lazily: nothing here runs at luaopen, so
** `gpulua -e ''` and scripts that name the cpu make no call into a GPU's runtime.
*/
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "lgpu.h"

static gl_lctx *get_ctx(lua_State *L) {
  GL_PUSH_CTX(L);
  gl_lctx *ctx = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return ctx;
}

static bool is_gpu(const gl_backend *b) { return strcmp(b->kind, "gpu") == 0; }

/* Number of usable GPUs, of every GPU backend (0 with the first one's reason); *first: the
** first GPU, where there is one and first is not NULL. */
static int gpu_count(const char **why, gl_device *first) {
  int n = 0;
  *why = NULL;
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *b = gl_backend_get(t);
    if (!is_gpu(b)) continue;
    const char *reason;
    int k = gl_backend_devices(b, &reason);
    if (k > 0 && n == 0 && first) { first->type = (uint8_t)t; first->index = 0; }
    if (*why == NULL) *why = reason;
    n += k;
  }
  if (n > 0) *why = NULL;
  else if (*why == NULL) *why = "no GPU backend is built in";
  return n;
}

gl_device gl_lua_default_device(lua_State *L) {
  gl_lctx *ctx = get_ctx(L);
  if (!ctx->device_known) {
    const char *env = getenv("GPULUA_DEVICE"), *why;
    gl_device d = gl_cpu();
    if (env && *env) {
      gl_status st = gl_device_parse(env, &d);
      const gl_backend *b;
      if (st == GL_OK) st = gl_backend_for(d, &b);
      if (st != GL_OK) luaL_error(L, "GPULUA_DEVICE: %s", gl_errmsg());
    } else {
      gpu_count(&why, &d);                    /* the first GPU, if any */
    }
    ctx->device = d;
    ctx->device_known = true;
  }
  return ctx->device;
}

static int l_device(lua_State *L) {
  char buf[GL_DEVNAME_SIZE];
  lua_pushstring(L, gl_device_name(gl_lua_default_device(L), buf));
  return 1;
}

static int l_set_device(lua_State *L) {
  gl_device d = gl_lua_device(L, 1);
  gl_lctx *ctx = get_ctx(L);
  ctx->device = d;
  ctx->device_known = true;
  return 0;
}

static int l_is_available(lua_State *L) {
  const char *why;
  int n = gpu_count(&why, NULL);
  lua_pushboolean(L, n > 0);
  if (n > 0) return 1;
  lua_pushstring(L, why);
  return 2;
}

static int l_device_count(lua_State *L) {
  const char *why;
  lua_pushinteger(L, gpu_count(&why, NULL));
  return 1;
}

static void push_devinfo(lua_State *L, gl_device d, const gl_devinfo *info) {
  const gl_backend *b = gl_backend_get(d.type);
  char buf[GL_DEVNAME_SIZE];
  lua_createtable(L, 0, 6);
  lua_pushstring(L, gl_device_name(d, buf));
  lua_setfield(L, -2, "device");
  lua_pushstring(L, b->name);
  lua_setfield(L, -2, "type");
  lua_pushstring(L, info->name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, (lua_Integer)info->total_memory);
  lua_setfield(L, -2, "total_memory");
  if (info->major > 0) {
    lua_pushfstring(L, "%d.%d", info->major, info->minor);
    lua_setfield(L, -2, "capability");
  }
  lua_pushinteger(L, info->units);
  lua_setfield(L, -2, b->units);
  /* what the device reads of itself where it answers (NVML on a GPU): utilisation
  ** (percent), temperature (degrees C), power (watts) and the memory every process on it
  ** uses (bytes) */
  if (b->telemetry) {
    gl_telemetry t;
    b->telemetry(d.index, &t);
    if (t.utilization >= 0) { lua_pushnumber(L, t.utilization); lua_setfield(L, -2, "utilization"); }
    if (t.temperature_c >= 0) { lua_pushnumber(L, t.temperature_c); lua_setfield(L, -2, "temperature"); }
    if (t.power_w >= 0) { lua_pushnumber(L, t.power_w); lua_setfield(L, -2, "power"); }
    if (t.memory_used >= 0) { lua_pushinteger(L, (lua_Integer)t.memory_used); lua_setfield(L, -2, "memory_used"); }
  }
}

/* gpu._workspace(device, bytes) -> true | nil, message: takes and gives back a library's
** workspace of that size the way the backends do (gl_workspace_alloc: on "out of memory"
** the reclaim hook, then once more), for the specs of that path. */
static int l_workspace(lua_State *L) {
  gl_device d = gl_lua_optdevice(L, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 0 && n <= ((lua_Integer)1 << 40), 2, "bytes must be in 0..2^40");
  const gl_backend *b;
  gl_lua_check_status(L, gl_backend_for(d, &b), 1);
  void *p = NULL;
  if (gl_workspace_alloc(d, (size_t)n, &p) != GL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, gl_errmsg());
    return 2;
  }
  b->free(d, p, (size_t)n);
  lua_pushboolean(L, 1);
  return 1;
}

/* gpu._energy([device]) -> joules, source | nil, why: the device's energy counter (NVML on
** a GPU, RAPL for the cpu), a number that only grows; gpu.bench reads it around its loop. */
static int l_energy(lua_State *L) {
  gl_device d = gl_lua_optdevice(L, 1);
  const gl_backend *b;
  gl_lua_check_status(L, gl_backend_for(d, &b), 1);
  if (b->telemetry == NULL) {
    lua_pushnil(L);
    lua_pushstring(L, "this device has no energy counter gpulua can read");
    return 2;
  }
  gl_telemetry t;
  b->telemetry(d.index, &t);
  if (t.energy_j < 0) {
    lua_pushnil(L);
    lua_pushstring(L, t.why);
    return 2;
  }
  lua_pushnumber(L, t.energy_j);
  lua_pushstring(L, t.source);
  return 2;
}

/* The backends gpu.devices(type) lists: those whose name or kind (any case) is type, so
** 'cuda' or 'gpu' (as PyTorch's "cuda" and TensorFlow's "GPU"); nil lists every one. Sets
** want[t] for each backend t. */
static void devices_wanted(lua_State *L, bool *want) {
  bool any = lua_isnoneornil(L, 1);
  lua_settop(L, 1);
  const char *names[2 * GL_MAX_BACKENDS];         /* every name, then the kinds not yet named */
  int k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int t = 0; t < gl_nbackends; t++) {
      const char *n = pass == 0 ? gl_backend_get(t)->name : gl_backend_get(t)->kind;
      bool dup = false;
      for (int i = 0; i < k; i++) dup = dup || strcmp(names[i], n) == 0;
      if (!dup) names[k++] = n;
    }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0; i < k; i++) {
    luaL_addstring(&b, i == 0 ? "'" : i == k - 1 ? " or '" : ", '");
    luaL_addstring(&b, names[i]);
    luaL_addchar(&b, '\'');
  }
  luaL_pushresult(&b);
  const char *expected = lua_tostring(L, -1);
  if (!any && lua_type(L, 1) != LUA_TSTRING)
    luaL_argerror(L, 1, lua_pushfstring(L, "device type %s expected, got %s", expected, luaL_typename(L, 1)));
  const char *type = any ? NULL : lua_tostring(L, 1);
  bool found = false;
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *be = gl_backend_get(t);
    want[t] = any || strcasecmp(type, be->name) == 0 || strcasecmp(type, be->kind) == 0;
    found = found || want[t];
  }
  if (!found) luaL_argerror(L, 1, lua_pushfstring(L, "unknown device type '%s' (expected %s)", type, expected));
  lua_pop(L, 1);
}

/* gpu.devices([type]): every device of every backend, in the registry's order (the cpu
** first); with a type, only those. */
static int l_devices(lua_State *L) {
  bool want[GL_MAX_BACKENDS];
  devices_wanted(L, want);
  gl_devinfo info;
  int k = 0;
  lua_newtable(L);
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *b = gl_backend_get(t);
    int n = want[t] ? gl_backend_devices(b, NULL) : 0;
    for (int i = 0; i < n; i++) {
      gl_device d = { (uint8_t)t, (uint8_t)i };
      gl_lua_check_status(L, b->info(i, &info), 0);
      push_devinfo(L, d, &info);
      lua_rawseti(L, -2, ++k);
    }
  }
  return 1;
}

/* The memory counters of the device at argument 1 (the default device when none). */
static gl_meminfo read_meminfo(lua_State *L) {
  gl_device d = gl_lua_optdevice(L, 1);
  const gl_backend *b;
  gl_lua_check_status(L, gl_backend_for(d, &b), 1);
  gl_meminfo m;
  memset(&m, 0, sizeof m);
  b->memory(d, &m);
  return m;
}

static int l_memory(lua_State *L) {
  gl_meminfo m = read_meminfo(L);
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, (lua_Integer)m.allocated); lua_setfield(L, -2, "allocated");
  lua_pushinteger(L, (lua_Integer)m.reserved);  lua_setfield(L, -2, "reserved");
  lua_pushinteger(L, (lua_Integer)m.peak);      lua_setfield(L, -2, "peak");
  lua_pushinteger(L, (lua_Integer)m.free);      lua_setfield(L, -2, "free");
  lua_pushinteger(L, (lua_Integer)m.total);     lua_setfield(L, -2, "total");
  return 1;
}

/* PyTorch's names for three of gpu.memory()'s fields, bytes as integers. */
static int l_memory_allocated(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)read_meminfo(L).allocated);
  return 1;
}
static int l_max_memory_allocated(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)read_meminfo(L).peak);
  return 1;
}
static int l_memory_reserved(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)read_meminfo(L).reserved);
  return 1;
}

/* gpu.terminal_size([file]) -> columns, rows of the terminal the file (io.stdout when
** none) writes to, or nil when it is not a terminal or the size is unknown (0 x 0, as
** some pseudo-terminals report). fit's progress bar fits its line to it. */
static int l_terminal_size(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_getglobal(L, "io");
    if (lua_istable(L, -1)) lua_getfield(L, -1, "stdout"); else lua_pushnil(L);
    lua_replace(L, 1);
    if (lua_isnil(L, 1)) luaL_error(L, "terminal_size: io.stdout is not available");
  }
  luaL_Stream *p = (luaL_Stream *)luaL_checkudata(L, 1, LUA_FILEHANDLE);
  if (p->closef == NULL) luaL_argerror(L, 1, "the file is closed");
  struct winsize ws;
  if (p->f == NULL || !isatty(fileno(p->f)) || ioctl(fileno(p->f), TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushinteger(L, ws.ws_col);
  lua_pushinteger(L, ws.ws_row);
  return 2;
}

static int l_empty_cache(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {              /* every device type that is initialised */
    gl_backend_get(GL_CPU)->empty_cache(gl_cpu());
    gl_lctx *ctx = get_ctx(L);
    if (ctx->device_known && ctx->device.type != GL_CPU) gl_backend_get(ctx->device.type)->empty_cache(ctx->device);
    return 0;
  }
  gl_device d = gl_lua_optdevice(L, 1);
  const gl_backend *b;
  gl_lua_check_status(L, gl_backend_for(d, &b), 1);
  b->empty_cache(d);
  return 0;
}

static int l_synchronize(lua_State *L) {
  gl_device d = gl_lua_optdevice(L, 1);
  const gl_backend *b;
  gl_lua_check_status(L, gl_backend_for(d, &b), 1);
  gl_lua_check_status(L, b->synchronize(d), 0);
  return 0;
}

static void set_bool(lua_State *L, const char *k, bool v) { lua_pushboolean(L, v); lua_setfield(L, -2, k); }
static void set_str(lua_State *L, const char *k, const char *v) { lua_pushstring(L, v); lua_setfield(L, -2, k); }
/* The default device as two integers (run protected by config_device). */
static int default_device(lua_State *L) {
  gl_device d = gl_lua_default_device(L);
  lua_pushinteger(L, d.type);
  lua_pushinteger(L, d.index);
  return 2;
}

/* package.loaded.gpu.dnn.enabled (true unless a script set it false) */
static bool dnn_enabled(lua_State *L) {
  int top = lua_gettop(L);
  bool enabled = true;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "gpu") == LUA_TTABLE && lua_getfield(L, -1, "dnn") == LUA_TTABLE &&
      lua_getfield(L, -1, "enabled") == LUA_TBOOLEAN)
    enabled = lua_toboolean(L, -1);
  lua_settop(L, top);
  return enabled;
}

/* *d = the default device, or false with "none (<why>)" pushed: a bad GPULUA_DEVICE is an
** answer for gpu.config(), not an error. */
static bool config_device(lua_State *L, gl_device *d) {
  lua_pushcfunction(L, default_device);
  if (lua_pcall(L, 0, 2, 0) != LUA_OK) {
    lua_pushfstring(L, "none (%s)", lua_tostring(L, -1));
    lua_remove(L, -2);
    return false;
  }
  *d = gl_cpu();
  d->type = (uint8_t)lua_tointeger(L, -2);
  d->index = (uint8_t)lua_tointeger(L, -1);
  lua_pop(L, 2);
  return true;
}

/* gpu.config().layer_norm: nn's float32 LayerNorm path on the default device (lua/gpu/nn/norm.lua
** takes the library's forward and backward where gpu.dnn.available says so). */
static void layer_norm_path(lua_State *L) {
  gl_device d;
  if (!config_device(L, &d)) return;
  const gl_backend *be = gl_backend_get(d.type);
  const char *why = be->dnn == NULL || be->dnn->layer_norm == NULL ? be->dnn_paths.no_layer_norm : NULL;
  if (why == NULL) why = be->dnn->unavailable();
  if (why == NULL && !dnn_enabled(L)) why = "gpu.dnn.enabled is false";
  if (why == NULL) lua_pushstring(L, be->dnn->name);
  else lua_pushfstring(L, "own fused kernel (%s)", why);
}

/* gpu.config().conv: which path nn's convolutions, pooling and batch norm take on the
** default device (lua/gpu/nn/functional.lua's use_dnn: gpu.dnn.enabled and the device's
** library, cuDNN on cuda, oneDNN on the cpu for float32), or im2col + GEMM. */
static void conv_path(lua_State *L) {
  gl_device d;
  if (!config_device(L, &d)) return;
  const gl_backend *be = gl_backend_get(d.type);
  const char *nodev;
  if (gl_backend_devices(be, &nodev) <= d.index) {
    char dn[GL_DEVNAME_SIZE];
    lua_pushfstring(L, "none (%s is not usable: %s)", gl_device_name(d, dn), nodev ? nodev : "no such device");
    return;
  }
  const char *why = be->dnn ? be->dnn->unavailable() : be->dnn_paths.missing;
  if (why == NULL && !dnn_enabled(L)) why = "gpu.dnn.enabled is false";
  if (why == NULL) lua_pushstring(L, be->dnn->name);
  else lua_pushfstring(L, be->dnn_paths.conv_fallback, why);
}

/* gpu.config().rnn: what nn.LSTM / nn.GRU run on for float32 on the default device (nn.RNN
** and other dtypes always take the fused loops; lua/gpu/nn/recurrent.lua's dnn_ok): the
** library, the whole network in one call, or the fused loop. */
static void rnn_path(lua_State *L) {
  gl_device d;
  if (!config_device(L, &d)) return;
  const char *why = gl_op_dnn_unavailable(d, GL_FLOAT32, GL_DNN_RNN);
  if (why == NULL && !dnn_enabled(L)) why = "gpu.dnn.enabled is false";
  const gl_backend *be = gl_backend_get(d.type);
  if (why == NULL) lua_pushstring(L, be->dnn->name);
  else lua_pushfstring(L, be->dnn_paths.rnn_fallback, why);
}

static int l_config(lua_State *L) {
  lua_createtable(L, 0, 6);
  set_str(L, "version", GPULUA_VERSION);
  set_str(L, "lua", LUA_RELEASE);
  set_str(L, "default_dtype", gl_dtypes[GL_DEFAULT_DTYPE].name);
  lua_createtable(L, 0, 6);                    /* build */
  for (int t = 0; t < gl_nbackends; t++)      /* a GPU backend: whether this build has it */
    if (is_gpu(gl_backend_get(t))) set_bool(L, gl_backend_get(t)->name, gl_backend_get(t)->absent == NULL);
#ifdef GL_WITH_CUDNN
  set_bool(L, "cudnn", true);
#else
  set_bool(L, "cudnn", false);
#endif
#ifdef _OPENMP
  set_bool(L, "openmp", true);
#else
  set_bool(L, "openmp", false);
#endif
#if defined(__SANITIZE_ADDRESS__)
  set_bool(L, "sanitizers", true);
#else
  set_bool(L, "sanitizers", false);
#endif
  set_str(L, "compiler", "gcc " __VERSION__);
  lua_setfield(L, -2, "build");
  lua_createtable(L, 0, 6);                    /* versions: each backend's */
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *b = gl_backend_get(t);
    gl_versions v;
    v.n = 0;
    if (b->versions) b->versions(&v);
    for (int i = 0; i < v.n; i++) {
      if (v.item[i].text[0]) lua_pushstring(L, v.item[i].text);
      else lua_pushinteger(L, (lua_Integer)v.item[i].number);
      lua_setfield(L, -2, v.item[i].name);
    }
  }
  lua_setfield(L, -2, "versions");
  conv_path(L);
  lua_setfield(L, -2, "conv");
  rnn_path(L);
  lua_setfield(L, -2, "rnn");
  layer_norm_path(L);
  lua_setfield(L, -2, "layer_norm");
  return 1;
}

/* gpu.clock(): a monotonic wall clock in seconds (os.clock is process CPU time, which
** counts every OpenMP thread). */
static int l_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
  return 1;
}

/* The counters of gl_stats, by the names gpu.stats() gives them. */
static const struct { const char *name; size_t offset; } stat_fields[] = {
  { "h2d_bytes", offsetof(gl_stats, h2d_bytes) },   { "h2d_copies", offsetof(gl_stats, h2d_copies) },
  { "d2h_bytes", offsetof(gl_stats, d2h_bytes) },   { "d2h_copies", offsetof(gl_stats, d2h_copies) },
  { "d2d_bytes", offsetof(gl_stats, d2d_bytes) },   { "d2d_copies", offsetof(gl_stats, d2d_copies) },
  { "kernels", offsetof(gl_stats, kernels) },       { "allocs", offsetof(gl_stats, allocs) },
  { "cache_hits", offsetof(gl_stats, cache_hits) }, { "device_mallocs", offsetof(gl_stats, device_mallocs) },
};
enum { NSTAT_FIELDS = sizeof stat_fields / sizeof stat_fields[0] };

static uint64_t *stat_field(gl_stats *s, int i) { return (uint64_t *)((char *)s + stat_fields[i].offset); }

/* Reads (and with reset, zeroes) every backend's counters: the devices' summed into *dev. */
static void read_stats(gl_stats *dev, gl_stats *host, bool reset) {
  memset(dev, 0, sizeof *dev);
  memset(host, 0, sizeof *host);
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *b = gl_backend_get(t);
    if (b->stats == NULL) continue;
    if (t == GL_CPU) { b->stats(host, reset); continue; }
    gl_stats s;
    b->stats(&s, reset);
    for (int i = 0; i < NSTAT_FIELDS; i++) *stat_field(dev, i) += *stat_field(&s, i);
  }
}

static void set_u64(lua_State *L, const char *k, uint64_t v) { lua_pushinteger(L, (lua_Integer)v); lua_setfield(L, -2, k); }

/* gpu.stats(): transfer, kernel and allocation counters since the start or the last
** gpu.reset_stats(): the devices' summed over the backends, the host's (the cpu's
** allocator) apart. */
static int l_stats(lua_State *L) {
  gl_stats s, h;
  read_stats(&s, &h, false);
  lua_createtable(L, 0, NSTAT_FIELDS + 2);
  for (int i = 0; i < NSTAT_FIELDS; i++) set_u64(L, stat_fields[i].name, *stat_field(&s, i));
  set_u64(L, "host_allocs", h.allocs);
  set_u64(L, "host_cache_hits", h.cache_hits);
  return 1;
}

static int l_reset_stats(lua_State *L) {
  gl_stats s, h;
  read_stats(&s, &h, true);
  (void)L;
  return 0;
}

/* gpu._devices() -> {{name =, kind =, numbered =, count =, why =}, ...}: the registry's
** backends in order, each with its device count now (and why there is none). */
static int l_backends(lua_State *L) {
  lua_createtable(L, gl_nbackends, 0);
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *b = gl_backend_get(t);
    const char *why;
    int n = gl_backend_devices(b, &why);
    lua_createtable(L, 0, 5);
    set_str(L, "name", b->name);
    set_str(L, "kind", b->kind);
    set_bool(L, "numbered", b->numbered);
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "count");
    if (why) set_str(L, "why", why);
    lua_rawseti(L, -2, t + 1);
  }
  return 1;
}

/* gpu._device_name(name [, usable]) -> the canonical name ("cuda" -> "cuda:0"), its backend's
** name and the language of the kernels that backend compiles at run time ("c", "cuda";
** gpu.ElementwiseKernel and friends) or nil | nil, message: gl_device_parse's, and with
** usable, gl_backend_for's when the device is not there. */
static int l_device_name(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  gl_device d;
  const gl_backend *b;
  gl_status st = gl_device_parse(name, &d);
  if (st == GL_OK && lua_toboolean(L, 2)) st = gl_backend_for(d, &b);
  if (st != GL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, gl_errmsg());
    return 2;
  }
  char buf[GL_DEVNAME_SIZE];
  lua_pushstring(L, gl_device_name(d, buf));
  b = gl_backend_get(d.type);
  lua_pushstring(L, b->name);
  lua_pushstring(L, b->jit_run ? "c" : b->rtc ? "cuda" : NULL);
  return 3;
}

static const gl_reg device_funcs[] = {
  { "stats", l_stats, 0 }, { "reset_stats", l_reset_stats, 0 }, { "clock", l_clock, 0 },
  { "device", l_device, 0 }, { "set_device", l_set_device, 1 }, { "is_available", l_is_available, 0 },
  { "device_count", l_device_count, 0 }, { "devices", l_devices, 1 }, { "_devices", l_backends, 0 },
  { "_device_name", l_device_name, 2 }, { "_energy", l_energy, 1 }, { "_workspace", l_workspace, 2 },
  { "memory", l_memory, 1 }, { "memory_allocated", l_memory_allocated, 1 },
  { "max_memory_allocated", l_max_memory_allocated, 1 }, { "memory_reserved", l_memory_reserved, 1 },
  { "terminal_size", l_terminal_size, 1 }, { "empty_cache", l_empty_cache, 1 },
  { "synchronize", l_synchronize, 1 }, { "config", l_config, 0 }, { NULL, NULL, 0 },
};

void gl_open_device(lua_State *L, int module, int methods) {
  (void)methods;
  gl_lua_setfuncs(L, module, device_funcs);
  lua_pushstring(L, gl_device_syntax());    /* the device names, for messages */
  lua_setfield(L, module, "_device_syntax");
}
