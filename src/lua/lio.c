/*
** lio.c — arrays in and out of files: gpu.save/load (.npy, and .npz by its magic),
** savez/savez_compressed/loadz, save_safetensors/load_safetensors, loadtxt/savetxt, and
** the PNG codec under gpu.image (gpu._png_save/_png_load; lua/gpu/image.lua lays out).
**
** Files hold dtype, shape and bytes, never a device: loads build the array on the CPU
** from the file's bytes, then copy it to the device asked for ({device=}, else the
** default device, as every creation function). The parsing is in src/core (npy.c,
** npz.c, safetensors.c, text.c); here are arguments, the device and the errors, which
** read "gpu.load: 'x.npy': truncated data (expected 4000 bytes, found 12)".
**
** Whatever a call holds while Lua may raise (the file mapping, an inflated member, the
** temporary file of a save) lives in a to-be-closed box, so an error anywhere releases
** it at once and a failed save leaves no temporary behind (Redis's cleanup rule).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lbody.h"
#include "../core/fileio.h"
#include "../core/npy.h"
#include "../core/npz.h"
#include "../core/png.h"
#include "../core/safetensors.h"
#include "../core/text.h"

/* ---- the box ------------------------------------------------------------------------------ */

/* An array a save writes, by name (an .npz member, a safetensors tensor). */
typedef struct named_array { const char *name; gl_array *x; const void *bytes; } named_array;

typedef struct io_box {
  const char *fname, *path;   /* what errors name: "gpu.<fname>: '<path>': ..." */
  gl_mapfile map;
  gl_outfile out;
  gl_zip zip;
  gl_zipw zw;
  gl_safetensors st;
  void *owned;                /* an inflated member, parsed text, pixels, a member's name or
                              ** the tensors' descriptors */
  named_array *entries;         /* the arrays a save writes (read_entries) */
  uint8_t *st_header;         /* the header a safetensors save writes */
} io_box;

static const char box_key = 'b';

static int box_close(lua_State *L) {
  io_box *b = lua_touserdata(L, 1);
  if (b == NULL) return 0;
  gl_unmap_file(&b->map);
  gl_out_abort(&b->out);
  gl_zip_free(&b->zip);
  gl_zipw_free(&b->zw);
  gl_st_free(&b->st);
  free(b->owned);
  free(b->entries);
  free(b->st_header);
  b->owned = NULL;
  b->entries = NULL;
  b->st_header = NULL;
  return 0;
}

/* A new box for a call of gpu.<fname> on the file at path. */
static io_box *push_box(lua_State *L, const char *fname, const char *path) {
  io_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  b->fname = fname;
  b->path = path;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &box_key);
  lua_setmetatable(L, -2);
  lua_toclose(L, -1);
  return b;
}

/* "gpu.load: 'x.npy': <the core's message>" */
static int file_error(lua_State *L, const io_box *b) {
  return luaL_error(L, "gpu.%s: '%s': %s", b->fname, b->path, gl_errmsg());
}

static void check_file(lua_State *L, const io_box *b, gl_status st) {
  if (st != GL_OK) file_error(L, b);
}

/* A save's file: opened (a temporary beside the target until commit_file) with its first
** n bytes at p written. */
static void open_file(lua_State *L, io_box *b, const void *p, size_t n) {
  check_file(L, b, gl_out_open(&b->out, b->path));
  check_file(L, b, gl_out_write(&b->out, p, n));
}

/* Puts the written file in place (fsync, rename); the call's end. */
static int commit_file(lua_State *L, io_box *b) {
  check_file(L, b, gl_out_commit(&b->out));
  return 0;
}

/* ---- options ------------------------------------------------------------------------------ */

static const gl_optkey load_keys[] = { GL_KEYS_DTYPE_DEVICE, { NULL } };
static const gl_optkey loadtxt_keys[] = {
  GL_KEYS_DTYPE_DEVICE, { "delimiter", GL_OPT_ANY, 0, 0, 0, NULL }, { "skip", GL_OPT_INT, GL_RANGE_MIN, 0, 0, NULL },
  { "comments", GL_OPT_ANY, 0, 0, 0, NULL }, { NULL }
};
static const gl_optkey savez_keys[] = { GL_KEY_FLAG("compressed"), { NULL } };
static const gl_optkey savetxt_keys[] = {
  { "delimiter", GL_OPT_STRING, 0, 0, 0, NULL }, { "fmt", GL_OPT_STRING, 0, 0, 0, NULL }, { NULL }
};
#define TMP "os.tmpname()"
static const gl_optdecl load_decl = { "load", "local p = " TMP " gpu.save(p, gpu.ones(2)) gpu.load(p, %s) os.remove(p)",
                                      load_keys };
static const gl_optdecl loadz_decl = { "loadz", "local p = " TMP " gpu.savez(p, {a = gpu.ones(2)}) gpu.loadz(p, %s) os.remove(p)",
                                       load_keys };
static const gl_optdecl load_st_decl = {
  "load_safetensors", "local p = " TMP " gpu.save_safetensors(p, {a = gpu.ones(2)}) gpu.load_safetensors(p, %s) os.remove(p)",
  load_keys };
static const gl_optdecl loadtxt_decl = {
  "loadtxt", "local p = " TMP " gpu.savetxt(p, gpu.ones(2, 2)) gpu.loadtxt(p, %s) os.remove(p)", loadtxt_keys };
static const gl_optdecl savez_decl = { "savez", "local p = " TMP " gpu.savez(p, {a = gpu.ones(2)}, %s) os.remove(p)",
                                       savez_keys };
static const gl_optdecl savez_c_decl = {
  "savez_compressed", "local p = " TMP " gpu.savez_compressed(p, {a = gpu.ones(2)}, %s) os.remove(p)", savez_keys };
static const gl_optdecl savetxt_decl = { "savetxt", "local p = " TMP " gpu.savetxt(p, gpu.ones(2), %s) os.remove(p)",
                                         savetxt_keys };
#undef TMP
static const gl_optdecl *const io_decls[] = {
  &load_decl, &loadz_decl, &load_st_decl, &loadtxt_decl, &savez_decl, &savez_c_decl, &savetxt_decl, NULL
};

/* The device (and dtype, -1 for "as in the file") a load puts its arrays on; vals gets
** d's other keys. */
static void load_opts(lua_State *L, int idx, const gl_optdecl *d, int *dtype, gl_device *dev, gl_optval *vals) {
  gl_dtype dt;
  gl_optval own[2];
  if (vals == NULL) vals = own;
  gl_lua_create_opts(L, idx, d, GL_DEFAULT_DTYPE, &dt, dev, vals);
  *dtype = vals[0].set ? (int)dt : -1;
}

/* What a load begins with: the path (argument 1), the options (argument 2: the device and
** dtype of the arrays) and the file mapped into a new box. */
static io_box *open_load(lua_State *L, const char *fname, const gl_optdecl *d, int *dtype, gl_device *dev) {
  const char *path = luaL_checkstring(L, 1);
  load_opts(L, 2, d, dtype, dev, NULL);
  io_box *b = push_box(L, fname, path);
  check_file(L, b, gl_map_file(path, &b->map));
  return b;
}

/* ---- arrays from bytes ------------------------------------------------------------------ */

/* Moves the array at the top to (dev, dtype) when it is not there already. */
static void finish_array(lua_State *L, int dtype, gl_device dev) {
  gl_array *a = gl_lua_check(L, -1);
  if (gl_device_eq(gl_array_device(a), dev) && (dtype < 0 || dtype == a->dtype)) return;
  gl_array *c = gl_lua_push(L);
  gl_lua_check_status(L, gl_op_copy(c, a, dtype < 0 ? (gl_dtype)a->dtype : (gl_dtype)dtype, dev), 0);
  gl_lua_account_array(L, c);
  lua_remove(L, -2);
}

/* Pushes a new array made of bytes in file order: byte-swapped, bools made 0/1, and a
** Fortran-ordered array read as its transpose's bytes then permuted and made contiguous. */
static void push_from_bytes(lua_State *L, gl_dtype dt, int ndim, const int64_t *shape, bool fortran,
                            bool swap, const void *bytes, int dtype, gl_device dev) {
  int64_t fshape[GL_MAXDIMS];
  for (int i = 0; i < ndim; i++) fshape[i] = fortran ? shape[ndim - 1 - i] : shape[i];
  gl_array *a = gl_lua_alloc(L, dt, ndim, fshape, gl_cpu());
  size_t nbytes = (size_t)a->size * gl_dtypes[dt].size;
  if (nbytes) memcpy(gl_array_data(a), bytes, nbytes);
  if (swap) {                                    /* each real number: both parts of a complex */
    unsigned part = gl_dtype_part_size(dt);
    gl_bswap(gl_array_data(a), a->size * (int64_t)(gl_dtypes[dt].size / part), part);
  }
  if (dt == GL_BOOL) {
    uint8_t *p = gl_array_data(a);
    for (int64_t i = 0; i < a->size; i++) p[i] = p[i] != 0;
  }
  if (fortran) {
    int perm[GL_MAXDIMS];
    for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
    gl_array *v = gl_lua_push(L);
    gl_array_view_of(v, a);
    gl_lua_check_status(L, gl_view_permute(v, perm), 0);
    gl_array *c = gl_lua_push(L);
    gl_lua_check_status(L, gl_op_copy(c, v, dtype < 0 ? dt : (gl_dtype)dtype, dev), 0);
    gl_lua_account_array(L, c);
    lua_replace(L, -3);
    lua_pop(L, 1);
    return;
  }
  finish_array(L, dtype, dev);
}

static void push_npy(lua_State *L, const gl_npy_info *info, int dtype, gl_device dev) {
  push_from_bytes(L, info->dtype, info->ndim, info->shape, info->fortran, info->swap, info->data, dtype, dev);
}

/* The bytes of x in C order on the host: x's own when it is a contiguous CPU array,
** else a copy pushed on the stack (the caller keeps the stack slot until written). */
static const void *host_bytes(lua_State *L, gl_array *x) {
  if (gl_array_device(x).type == GL_CPU && gl_array_is_contiguous(x)) return gl_array_data(x);
  luaL_checkstack(L, 2, "too many arrays");
  gl_array *c = gl_lua_push(L);
  gl_lua_check_status(L, gl_op_copy(c, x, (gl_dtype)x->dtype, gl_cpu()), 0);
  return gl_array_data(c);
}

/* gpu.save(path, x) and x:save(path): the path may come first or second. */
static void path_and_array(lua_State *L, const char **path, gl_array **x) {
  if (gl_lua_test(L, 1) && lua_type(L, 2) == LUA_TSTRING) {
    *x = gl_lua_check(L, 1);
    *path = lua_tostring(L, 2);
  } else {
    *path = luaL_checkstring(L, 1);
    *x = gl_lua_check(L, 2);
  }
}

/* ---- .npy ----------------------------------------------------------------------------------- */

static int loadz_from(lua_State *L, io_box *b, int dtype, gl_device dev);

/* gpu.save(path, t) and gpu.load of what it wrote (a safetensors file): a Lua table of
** arrays, numbers, strings and tables, in lua/gpu/serialization.lua. */
static int to_serialization(lua_State *L, const char *name) {
  int nargs = lua_gettop(L);
  gl_lua_push_part_stub(L, "gpu.serialization", name);
  lua_insert(L, 1);
  lua_call(L, nargs, LUA_MULTRET);
  return lua_gettop(L);
}

/* gpu.save(path, x): .npy, byte-identical to np.save of the same array */
static int l_save(lua_State *L) {
  if (lua_type(L, 1) == LUA_TSTRING && lua_type(L, 2) == LUA_TTABLE) return to_serialization(L, "save");
  const char *path;
  gl_array *x;
  path_and_array(L, &path, &x);
  const void *bytes = host_bytes(L, x);
  char hdr[GL_NPY_HEADER_BUFSZ];
  size_t hlen;
  gl_lua_check_status(L, gl_npy_header(hdr, &hlen, (gl_dtype)x->dtype, x->ndim, x->shape), 0);
  io_box *b = push_box(L, "save", path);
  open_file(L, b, hdr, hlen);
  check_file(L, b, gl_out_write(&b->out, bytes, (size_t)x->size * gl_array_itemsize(x)));
  return commit_file(L, b);
}

/* gpu.load(path [, {device=, dtype=}]): an .npy gives an array, an .npz a table, a file
** of gpu.save(path, t) the table */
static int l_load(lua_State *L) {
  int dtype;
  gl_device dev;
  int nargs = lua_gettop(L);
  io_box *b = open_load(L, "load", &load_decl, &dtype, &dev);
  /* safetensors: an 8-byte header length, then the header's JSON object */
  if (b->map.len >= 9 && b->map.data[8] == '{') {
    lua_closeslot(L, lua_gettop(L));
    lua_settop(L, nargs);
    return to_serialization(L, "load");
  }
  /* a zip starts with a member's local header, or (no members: savez of {}) with the
  ** end record, as NumPy's np.load tells them */
  if (b->map.len >= 4 && (memcmp(b->map.data, "PK\3\4", 4) == 0 || memcmp(b->map.data, "PK\5\6", 4) == 0))
    return loadz_from(L, b, dtype, dev);
  gl_npy_info info;
  check_file(L, b, gl_npy_parse(b->map.data, b->map.len, &info));
  push_npy(L, &info, dtype, dev);
  return 1;
}

/* ---- .npz ----------------------------------------------------------------------------------- */

static int by_name(const void *a, const void *b) {
  return strcmp(((const named_array *)a)->name, ((const named_array *)b)->name);
}

/* Reads {name = array, ...} at idx into a sorted malloc'd list held by the box. */
static named_array *read_entries(lua_State *L, int idx, io_box *b, size_t *n, size_t *maxname) {
  luaL_checktype(L, idx, LUA_TTABLE);
  size_t cap = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) { cap++; lua_pop(L, 1); }
  named_array *e = b->entries = calloc(cap ? cap : 1, sizeof *e);
  if (e == NULL) luaL_error(L, "out of memory");
  *n = 0;
  *maxname = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_argerror(L, idx, lua_pushfstring(L, "names must be strings, got %s", luaL_typename(L, -2)));
    const char *name = lua_tostring(L, -2);
    if (name[0] == 0 || strlen(name) != lua_rawlen(L, -2))
      luaL_argerror(L, idx, "names must be non-empty strings without NUL bytes");
    gl_array *x = gl_lua_test(L, -1);
    if (x == NULL)
      luaL_argerror(L, idx, lua_pushfstring(L, "'%s' is not a gpu.array (got %s)", name, luaL_typename(L, -1)));
    if (x->storage == NULL) luaL_argerror(L, idx, lua_pushfstring(L, "'%s' is a closed array", name));
    gl_lua_hold(L, -2);          /* Lua code inside the save may empty the table (lhold.c) */
    gl_lua_hold(L, -1);
    e[*n].name = name;
    e[*n].x = x;
    size_t len = strlen(name);
    if (len > *maxname) *maxname = len;
    (*n)++;
    lua_pop(L, 1);
  }
  qsort(e, *n, sizeof *e, by_name);
  return e;
}

/* The bytes of each entry on the host (host_bytes: copies stay on the stack). */
static void entry_bytes(lua_State *L, named_array *e, size_t n) {
  luaL_checkstack(L, (int)(n > 10000 ? 10000 : n) + 4, "too many arrays");
  for (size_t i = 0; i < n; i++) {
    if (i >= 10000) luaL_checkstack(L, 2, "too many arrays");
    e[i].bytes = host_bytes(L, e[i].x);
  }
}

static int savez(lua_State *L, const char *fname, bool compress) {
  const char *path = luaL_checkstring(L, 1);
  gl_optval ov[1];
  gl_lua_readopts(L, 3, compress ? &savez_c_decl : &savez_decl, ov);
  if (ov[0].set) compress = ov[0].b;
  lua_settop(L, 3);
  io_box *b = push_box(L, fname, path);
  size_t n, maxname;
  named_array *e = read_entries(L, 2, b, &n, &maxname);
  entry_bytes(L, e, n);
  char *member = b->owned = malloc(maxname + 5);
  if (member == NULL) return luaL_error(L, "out of memory");
  check_file(L, b, gl_out_open(&b->out, path));
  gl_zipw_init(&b->zw, &b->out);
  for (size_t i = 0; i < n; i++) {
    char hdr[GL_NPY_HEADER_BUFSZ];
    size_t hlen;
    gl_array *x = e[i].x;
    check_file(L, b, gl_npy_header(hdr, &hlen, (gl_dtype)x->dtype, x->ndim, x->shape));
    snprintf(member, maxname + 5, "%s.npy", e[i].name);
    check_file(L, b, gl_zipw_add(&b->zw, member, compress, hdr, hlen, e[i].bytes, (size_t)x->size * gl_array_itemsize(x)));
  }
  check_file(L, b, gl_zipw_finish(&b->zw));
  return 0;
}

/* gpu.savez(path, {name = x, ...} [, {compressed = true}]) */
static int l_savez(lua_State *L) { return savez(L, "savez", false); }
/* gpu.savez_compressed(path, {name = x, ...}): members deflated */
static int l_savez_compressed(lua_State *L) { return savez(L, "savez_compressed", true); }

/* The members of the mapped archive as a table name -> array ("x.npy" is named "x"). */
static int loadz_from(lua_State *L, io_box *b, int dtype, gl_device dev) {
  check_file(L, b, gl_zip_open(b->map.data, b->map.len, &b->zip));
  lua_createtable(L, 0, (int)(b->zip.n > 1000 ? 1000 : b->zip.n));
  for (size_t i = 0; i < b->zip.n; i++) {
    const gl_zip_member *m = &b->zip.m[i];
    const uint8_t *data;
    size_t len;
    void *owned;
    check_file(L, b, gl_zip_extract(b->map.data, b->map.len, m, &data, &len, &owned));
    b->owned = owned;
    gl_npy_info info;
    gl_status st = gl_npy_parse(data, len, &info);
    if (st != GL_OK) {
      gl_fail(GL_EIO, "member '%s': %s", m->name, gl_errmsg());
      file_error(L, b);
    }
    size_t nl = strlen(m->name);
    if (nl > 4 && strcmp(m->name + nl - 4, ".npy") == 0) lua_pushlstring(L, m->name, nl - 4);
    else lua_pushstring(L, m->name);
    push_npy(L, &info, dtype, dev);
    lua_rawset(L, -3);
    free(b->owned);
    b->owned = NULL;
  }
  return 1;
}

/* gpu.loadz(path [, {device=, dtype=}]) -> {name = array, ...} */
static int l_loadz(lua_State *L) {
  int dtype;
  gl_device dev;
  io_box *b = open_load(L, "loadz", &loadz_decl, &dtype, &dev);
  return loadz_from(L, b, dtype, dev);
}

/* ---- safetensors ---------------------------------------------------------------------------- */

/* The layout of a safetensors save of the tensors at argument 2 ({name = x, ...}) and the
** metadata at argument 3 ({key = "value", ...} or nil; the box above them): the header in b->st_header (*hlen
** bytes), then entries (*n, with their bytes on the host) in *e and their descriptors in
** *tensors, each with its byte range. */
static void st_layout(lua_State *L, io_box *b, named_array **e, gl_st_tensor **tensors, size_t *n, size_t *hlen) {
  if (!lua_isnil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  size_t maxname, nm = 0;
  *e = read_entries(L, 2, b, n, &maxname);
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*e)[i].name, "__metadata__") == 0) luaL_argerror(L, 2, "'__metadata__' is not a tensor name");
  if (!lua_isnil(L, 3)) {
    lua_pushnil(L);
    while (lua_next(L, 3)) { nm++; lua_pop(L, 1); }
  }
  /* one block: the tensors' descriptors, then the metadata pairs */
  b->owned = calloc(*n + nm + 1, sizeof(gl_st_tensor) + sizeof(gl_st_meta));
  if (b->owned == NULL) luaL_error(L, "out of memory");
  gl_st_tensor *t = *tensors = b->owned;
  gl_st_meta *m = (gl_st_meta *)(t + *n + nm + 1);
  size_t k = 0;
  if (nm) {
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        luaL_argerror(L, 3, lua_pushfstring(L, "metadata must map strings to strings (got %s -> %s)",
                                            luaL_typename(L, -2), luaL_typename(L, -1)));
      if (strlen(lua_tostring(L, -2)) != lua_rawlen(L, -2) || strlen(lua_tostring(L, -1)) != lua_rawlen(L, -1))
        luaL_argerror(L, 3, "metadata strings must not hold NUL bytes");
      m[k].key = (char *)lua_tostring(L, -2);
      m[k].value = (char *)lua_tostring(L, -1);
      k++;
      lua_pop(L, 1);
    }
  }
  entry_bytes(L, *e, *n);
  for (size_t i = 0; i < *n; i++) {
    t[i].name = (char *)(*e)[i].name;
    t[i].dtype = (gl_dtype)(*e)[i].x->dtype;
    t[i].ndim = (*e)[i].x->ndim;
    memcpy(t[i].shape, (*e)[i].x->shape, sizeof t[i].shape);
    t[i].size = (*e)[i].x->size;
  }
  uint8_t *hdr;
  gl_lua_check_status(L, gl_st_header(&hdr, hlen, t, *n, m, k), 0);
  b->st_header = hdr;
}

/* gpu.save_safetensors(path, {name = x, ...} [, {key = "value", ...}]) */
static int l_save_safetensors(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_settop(L, 3);
  io_box *b = push_box(L, "save_safetensors", path);
  named_array *e;
  gl_st_tensor *t;
  size_t n, hlen;
  st_layout(L, b, &e, &t, &n, &hlen);
  open_file(L, b, b->st_header, hlen);
  for (size_t i = 0; i < n; i++) check_file(L, b, gl_out_write(&b->out, e[i].bytes, (size_t)(t[i].end - t[i].begin)));
  return commit_file(L, b);
}

/* gpu._safetensors_bytes({name = x, ...} [, {key = "value", ...}]) -> the bytes a
** save_safetensors of them writes, as a string (lua/gpu/serialization.lua's dumps: a
** DataLoader worker's batches travel so) */
static int l_safetensors_bytes(lua_State *L) {
  lua_settop(L, 2);
  lua_pushnil(L);
  lua_insert(L, 1);                                /* the tensors and metadata at 2 and 3 */
  io_box *b = push_box(L, "_safetensors_bytes", "(bytes)");
  named_array *e;
  gl_st_tensor *t;
  size_t n, hlen, total;
  st_layout(L, b, &e, &t, &n, &hlen);
  total = hlen;
  for (size_t i = 0; i < n; i++) total += (size_t)(t[i].end - t[i].begin);
  luaL_Buffer buf;
  char *p = luaL_buffinitsize(L, &buf, total);
  memcpy(p, b->st_header, hlen);
  for (size_t i = 0, at = hlen; i < n; i++) {
    size_t len = (size_t)(t[i].end - t[i].begin);
    if (len) memcpy(p + at, e[i].bytes, len);
    at += len;
  }
  luaL_pushresultsize(&buf, total);
  return 1;
}

/* The tensors and metadata of the parsed file in b as two tables. */
static int push_safetensors(lua_State *L, io_box *b, int dtype, gl_device dev) {
  lua_createtable(L, 0, (int)(b->st.nt > 1000 ? 1000 : b->st.nt));
  for (size_t i = 0; i < b->st.nt; i++) {
    const gl_st_tensor *t = &b->st.t[i];
    lua_pushstring(L, t->name);
    push_from_bytes(L, t->dtype, t->ndim, t->shape, false, false, b->st.data + t->begin, dtype, dev);
    lua_rawset(L, -3);
  }
  lua_createtable(L, 0, (int)(b->st.nmeta > 1000 ? 1000 : b->st.nmeta));
  for (size_t i = 0; i < b->st.nmeta; i++) {
    lua_pushstring(L, b->st.meta[i].value);
    lua_setfield(L, -2, b->st.meta[i].key);
  }
  return 2;
}

/* gpu._safetensors_parse(bytes) -> {name = array, ...}, {key = value, ...}: cpu arrays */
static int l_safetensors_parse(lua_State *L) {
  size_t len;
  const char *bytes = luaL_checklstring(L, 1, &len);
  io_box *b = push_box(L, "_safetensors_parse", "(bytes)");
  check_file(L, b, gl_st_parse((const uint8_t *)bytes, len, &b->st));
  return push_safetensors(L, b, -1, gl_cpu());
}

/* gpu.load_safetensors(path [, {device=, dtype=}]) -> {name = array, ...}, {key = value, ...} */
static int l_load_safetensors(lua_State *L) {
  int dtype;
  gl_device dev;
  io_box *b = open_load(L, "load_safetensors", &load_st_decl, &dtype, &dev);
  check_file(L, b, gl_st_parse(b->map.data, b->map.len, &b->st));
  return push_safetensors(L, b, dtype, dev);
}

/* ---- text ------------------------------------------------------------------------------------ */

/* A one-character option: delimiter, comments. */
static char char_opt(lua_State *L, int idx, const char *key, char dflt, bool blank_is_ws) {
  if (!lua_istable(L, idx)) return dflt;
  char c = dflt;
  int t = lua_getfield(L, idx, key);
  if (t == LUA_TBOOLEAN && !lua_toboolean(L, -1)) c = 0;
  else if (t == LUA_TSTRING && lua_rawlen(L, -1) <= 1) {
    c = lua_tostring(L, -1)[0];
    if (blank_is_ws && (c == ' ' || c == '\t')) c = 0;
  } else if (t != LUA_TNIL)
    luaL_argerror(L, idx, lua_pushfstring(L, "option '%s' must be one character", key));
  lua_pop(L, 1);
  return c;
}

/* gpu.loadtxt(path [, {delimiter=, skip=, comments=, dtype=, device=}]): CSV or
** whitespace-separated numbers, NumPy's loadtxt (one row or column gives 1-D) */
static int l_loadtxt(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int dtype;
  gl_device dev;
  gl_optval ov[5];
  load_opts(L, 2, &loadtxt_decl, &dtype, &dev, ov);
  gl_text_opts o = { 0, '#', 0 };
  o.delimiter = char_opt(L, 2, "delimiter", 0, true);
  o.comment = char_opt(L, 2, "comments", '#', false);
  if (ov[3].set) o.skip = ov[3].i;
  gl_dtype dt = dtype < 0 ? GL_DEFAULT_DTYPE : (gl_dtype)dtype;
  io_box *b = push_box(L, "loadtxt", path);
  check_file(L, b, gl_map_file(path, &b->map));
  int ndim;
  int64_t shape[2];
  check_file(L, b, gl_text_parse(b->map.data, b->map.len, &o, dt, &b->owned, &ndim, shape));
  push_from_bytes(L, dt, ndim, shape, false, false, b->owned, -1, dev);
  return 1;
}

/* gpu.savetxt(path, x [, {delimiter = " ", fmt = "%.18e"}]) and x:savetxt(path, opts) */
static int l_savetxt(lua_State *L) {
  const char *path;
  gl_array *x;
  path_and_array(L, &path, &x);
  gl_optval ov[2];
  gl_lua_readopts(L, 3, &savetxt_decl, ov);
  const char *delim = ov[0].set ? ov[0].s : " ", *fmt = ov[1].set ? ov[1].s : "%.18e";
  if (x->ndim < 1 || x->ndim > 2)
    luaL_argerror(L, 2, lua_pushfstring(L, "savetxt takes a 1-D or 2-D array, got %d-D", x->ndim));
  char cfmt[160];
  bool is_int = false;
  gl_lua_check_status(L, gl_text_fmt(fmt, cfmt, sizeof cfmt, &is_int), 3);
  const void *bytes = host_bytes(L, x);
  io_box *b = push_box(L, "savetxt", path);
  check_file(L, b, gl_out_open(&b->out, path));
  check_file(L, b, gl_text_write(&b->out, bytes, (gl_dtype)x->dtype, x->ndim, x->shape, cfmt, is_int, delim));
  return commit_file(L, b);
}

/* ---- PNG (for lua/gpu/image.lua) --------------------------------------------------------- */

/* gpu._png_save(path, x): x a uint8 (H, W, C) array, C = 1..4, written as one PNG. The
** layout (channels first, grids, floats) is image.lua's; this checks what it is given. */
static int l_png_save(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  gl_array *x = gl_lua_check(L, 2);
  if (x->dtype != GL_UINT8 || x->ndim != 3)
    luaL_argerror(L, 2, lua_pushfstring(L, "a uint8 (H, W, C) array expected, got %s with %d dims",
                                        gl_dtypes[x->dtype].name, x->ndim));
  const void *bytes = host_bytes(L, x);
  io_box *b = push_box(L, "image.save", path);
  check_file(L, b, gl_out_open(&b->out, path));
  check_file(L, b, gl_png_encode(&b->out, bytes, x->shape[0], x->shape[1], (int)x->shape[2]));
  return commit_file(L, b);
}

/* gpu._png_load(path): the image as a uint8 (H, W, C) CPU array */
static int l_png_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  io_box *b = push_box(L, "image.load", path);
  check_file(L, b, gl_map_file(path, &b->map));
  gl_png_image img;
  check_file(L, b, gl_png_decode(b->map.data, b->map.len, &img));
  b->owned = img.pixels;
  int64_t shape[3] = { img.h, img.w, img.channels };
  gl_array *a = gl_lua_alloc(L, GL_UINT8, 3, shape, gl_cpu());
  memcpy(gl_array_data(a), img.pixels, (size_t)a->size);
  return 1;
}

/* ---- bytes made elsewhere ------------------------------------------------------------------ */

/* gpu._save_bytes(path, bytes, fname): 'bytes' saved to path as every save (a temporary
** made with mkstemp beside the target, fsync, rename; links resolved, a non-regular target
** refused); errors read "gpu.<fname>: 'path': ...". For lua/gpu/plot.lua, whose pictures
** gnuplot writes on a pipe, so no program opens a file by a name someone could plant. */
static int l_save_bytes(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t n;
  const char *bytes = luaL_checklstring(L, 2, &n);
  const char *fname = luaL_checkstring(L, 3);
  io_box *b = push_box(L, fname, path);
  open_file(L, b, bytes, n);
  return commit_file(L, b);
}

/* ---- registration ----------------------------------------------------------------------- */

/* gpu.isatty(file): whether a Lua file (io.stdout, ...) is a terminal; fit draws its
** progress bar only then. */
static int l_isatty(lua_State *L) {
  luaL_Stream *p = (luaL_Stream *)luaL_checkudata(L, 1, LUA_FILEHANDLE);
  if (p->closef == NULL) luaL_argerror(L, 1, "the file is closed");
  lua_pushboolean(L, p->f != NULL && isatty(fileno(p->f)));
  return 1;
}

static const gl_reg io_funcs[] = {
  { "isatty", l_isatty, 1 }, { "load", l_load, 2 }, { "savez", l_savez, 3 },
  { "savez_compressed", l_savez_compressed, 3 }, { "loadz", l_loadz, 2 },
  { "save_safetensors", l_save_safetensors, 3 }, { "load_safetensors", l_load_safetensors, 2 },
  { "loadtxt", l_loadtxt, 2 }, { "_png_save", l_png_save, 2 }, { "_png_load", l_png_load, 1 },
  { "_save_bytes", l_save_bytes, 3 }, { "_safetensors_bytes", l_safetensors_bytes, 2 },
  { "_safetensors_parse", l_safetensors_parse, 1 }, { NULL, NULL, 0 },
};

/* x:save(path) and x:savetxt(path [, opts]) as well as gpu.save(path, x) */
static const gl_reg io_both[] = {
  { "save", l_save, 2 },
  { "savetxt", l_savetxt, 3 },
  { NULL, NULL, 0 }
};

void gl_open_io(lua_State *L, int module, int methods) {
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, box_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, box_close);
  lua_setfield(L, -2, "__gc");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &box_key);
  gl_lua_setops(L, module, "", io_funcs);
  gl_lua_setboth(L, module, methods, io_both);
  gl_lua_declare_all(L, io_decls);
}
