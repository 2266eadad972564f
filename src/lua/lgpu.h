/*
** lgpu.h — shared pieces of the Lua binding (src/lua). Only this layer and src/host
** include lua.h.
*/
#ifndef GL_LGPU_H
#define GL_LGPU_H

#include <lua.h>
#include <lauxlib.h>
#include "../gpulua.h"
#include "../ops/ops.h"

/* Per-state context, upvalue 1 of every function of the module (lmathlib's pattern). */
typedef struct gl_lctx {
  uint32_t magic;            /* GL_CTX_MAGIC: tells our context from another upvalue */
  const void *meta;          /* the array metatable (lua_topointer), for fast type tests */
  gl_device device;          /* where new arrays go */
  bool device_known;         /* false until decided (probing CUDA is lazy) */
  size_t gc_debt;            /* bytes allocated since the last GC step we asked for */
  size_t since_full;         /* bytes allocated since the last full collection */
  size_t full_threshold;     /* ... that trigger the next one */
} gl_lctx;

#define GL_CTX(L) ((gl_lctx *)lua_touserdata(L, lua_upvalueindex(1)))

/* Registry keys (their addresses): the context and the array metatable. Looking them
** up by pointer avoids hashing a string on every array op. */
extern const char gl_ctx_key, gl_meta_key;
#define GL_PUSH_CTX(L) lua_rawgetp(L, LUA_REGISTRYINDEX, &gl_ctx_key)
#define GL_CTX_MAGIC 0x676c7561u

/* The context: upvalue 1 of the running function when it is one of ours (fast), else
** from the registry (C hosts calling the public API). */
gl_lctx *gl_lua_ctx(lua_State *L);

/* ---- arrays as userdata ---------------------------------------------------------- */

/* Pushes a new userdata holding a closed array (storage NULL) and returns it. */
gl_array *gl_lua_push(lua_State *L);
/* The open array at idx, or a Lua error ("gpu.array expected" / "closed array"). */
gl_array *gl_lua_check(lua_State *L, int idx);
/* The array at idx if it is one (open or closed), else NULL. */
gl_array *gl_lua_test(lua_State *L, int idx);
/* The array at idx, open or closed; a type error otherwise. */
gl_array *gl_lua_checkany(lua_State *L, int idx);

/* Tells Lua's collector about bytes held outside its heap (device or host arrays). */
void gl_lua_account(lua_State *L, size_t nbytes);
/* Accounts a finished result's bytes (arrays of 256 elements or more; none for an empty,
** closed one). */
void gl_lua_account_array(lua_State *L, const gl_array *a);
/* The array at idx, or NULL when it is none or nil (anything else is an argument error). */
gl_array *gl_lua_optarray(lua_State *L, int idx);

/* Runs 'st' and raises a Lua error if it failed: at argument 'arg' (lauxlib's "bad
** argument #arg to 'f' (msg)") when arg > 0, else "f: msg". */
void gl_lua_check_status(lua_State *L, gl_status st, int arg);
/* Raises "f: msg" with the current function's name. */
int gl_lua_error(lua_State *L, const char *fmt, ...);

/* The out-of-memory ritual, for ops that allocate their result: when st is GL_ENOMEM,
** empty dev's cache, run a full collection and return true (try the op once more). */
bool gl_lua_retry_oom(lua_State *L, gl_status st, gl_device dev);

/* Allocation with the out-of-memory ritual: on failure empty the caches, run a full
** collection and try once more. */
gl_array *gl_lua_alloc(lua_State *L, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev);

/* ---- arguments -------------------------------------------------------------------- */

/* Reads a shape from arguments first..top: numbers as varargs, or one table; stops at
** a table with string keys (an options table). Returns the index after the shape. */
int gl_lua_shape(lua_State *L, int first, int *ndim, int64_t *shape);
/* Options table at idx (or none): sets dtype and device where given. Other keys are
** errors unless named in 'extra' (space-separated, may be NULL). A device left unset
** (type 255) becomes the default device. */
void gl_lua_opts(lua_State *L, int idx, gl_dtype *dt, gl_device *dev, const char *extra);
gl_dtype gl_lua_dtype(lua_State *L, int idx);            /* a dtype name argument */
gl_device gl_lua_device(lua_State *L, int idx);          /* a device name argument */
gl_device gl_lua_default_device(lua_State *L);
int64_t gl_lua_int(lua_State *L, int idx, const char *what);   /* integral number */

/* Pushes element 'offset' of a as a Lua value (integer, number or boolean). */
void gl_lua_push_element(lua_State *L, const gl_array *a, int64_t offset);
/* A Lua value (number/boolean) as a scalar; raises at 'arg' otherwise. */
gl_scalar gl_lua_scalar(lua_State *L, int idx, int arg);
/* The same for a value that becomes an element of dtype t: an integer dtype refuses what
** it cannot hold (gl_scalar_check), as an error of argument 'arg'. */
gl_scalar gl_lua_scalar_for(lua_State *L, int idx, int arg, gl_dtype t);

/* ---- module registration ------------------------------------------------------------- */

/* Each file adds its functions: 'module' to gpu.*, 'methods' to both gpu.* and x:*. */
void gl_open_array(lua_State *L, int module, int methods, int meta);
void gl_open_create(lua_State *L, int module, int methods);
void gl_open_shape(lua_State *L, int module, int methods);
void gl_open_device(lua_State *L, int module, int methods);
void gl_open_math(lua_State *L, int module, int methods, int meta);
void gl_open_event(lua_State *L, int module, int methods);
void gl_open_indexing(lua_State *L, int module, int methods);
/* x[key] and x[key] = v for a key that is an array (bool mask or int32/int64 indices
** along the first axis); lindexing.c. */
int gl_lua_index_array(lua_State *L, const gl_array *x, int key);
void gl_lua_newindex_array(lua_State *L, const gl_array *x, int key, int val);
void gl_open_linalg(lua_State *L, int module, int methods);
/* gpu.im2col, gpu.col2im; lconv.c. */
void gl_open_conv(lua_State *L, int module, int methods);
void gl_open_reduce(lua_State *L, int module, int methods);
/* gpu.save/load, savez/loadz, safetensors, loadtxt/savetxt; lio.c. */
void gl_open_io(lua_State *L, int module, int methods);
int gl_lua_tostring(lua_State *L);
/* gpu.random (a sub-table), gpu.rand, gpu.randn, x:shuffle() ...; lrandom.c. */
void gl_open_random(lua_State *L, int module, int methods);
/* gpu.load_idx (IDX files of MNIST/Fashion-MNIST); ldata.c. */
void gl_open_data(lua_State *L, int module, int methods);
/* gpu.range(name, fn, ...): an NVTX range around fn; lnvtx.c. */
void gl_open_nvtx(lua_State *L, int module, int methods);
/* gpu.set_matmul_precision / get_matmul_precision; lcuda.c. */
void gl_open_cuda(lua_State *L, int module, int methods);

/* gpu.fused: linear, cross-entropy, optimizer steps (the kernels under nn/optim); lfused.c. */
void gl_open_fused(lua_State *L, int module, int methods);

/* Registers 'l' into the table at 'idx' with the context as upvalue. */
void gl_lua_setfuncs(lua_State *L, int idx, const luaL_Reg *l);
/* Registers 'l' as gpu.f(x, ...) and as the method x:f(...). */
void gl_lua_setboth(lua_State *L, int module, int methods, const luaL_Reg *l);

#endif
