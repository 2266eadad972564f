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
#define GL_STASH_DEPTH 32        /* tracked calls nested in one another, at most */
#define GL_NODE_INLINE_MAX 4      /* arguments of a call whose node the result holds inline */
#define GL_OP_DEPTH 64            /* ops running inside one another whose levels are recorded */

typedef struct gl_lctx {
  uint32_t magic;            /* GL_CTX_MAGIC: tells our context from another upvalue */
  const void *meta;          /* the array metatable (lua_topointer), for fast type tests */
  const void *meta_light;    /* the light arrays' (the same without __gc; larray.c) */
  gl_device device;          /* where new arrays go */
  bool device_known;         /* false until decided (probing CUDA is lazy) */
  size_t gc_debt;            /* bytes allocated since the last GC step we asked for */
  size_t since_full;         /* bytes allocated since the last full collection */
  size_t full_threshold;     /* ... that trigger the next one */
  bool grad_live;            /* an array has required grad: dispatch looks for tracked inputs */
  bool autocast_live;        /* gpu.autocast has been used: dispatch asks for its dtype */
  int main_mode;             /* grad mode and autocast dtype of the main thread (lgrad.c) */
  const lua_State *main_thread;   /* the state's main thread, once seen */
  int stash_depth;           /* tracked calls in progress (lgrad.c) */
  int node_slots;            /* > 0: the next new array takes a node of that many arguments */
  const void *node_ud;       /* ... and this is the userdata that took them */
  lua_Integer *node_tail;    /* ... and the last word of its tail (k) */
  const void *node_op;       /* ... and the op's entry (lgrad.c), written to the node's tail */
  const struct gl_array *operand[2];   /* the arrays a GL_OP_KEEPS_ARGS op read in slots 1, 2 */
  unsigned operand_seen;     /* ... which of them it reported (bit i: slot i + 1) */
  unsigned rules_gen;        /* counts gpu.autograd's rules registrations (lgrad.c) */
  const void *stash_marker[GL_STASH_DEPTH];
  int op_depth;              /* ops in progress (lhold.c) */
  int held_n, closing_n;     /* ... the values they hold, the closes waiting for them to end */
  const void *op_marker[GL_OP_DEPTH];
} gl_lctx;

/* The context's user values: 1 the array metatable, 2 the autograd rules, 3 the tape
** nodes' metatable, 4.. the nodes of the tracked calls in progress (lgrad.c), then the
** light arrays' metatable, then what the ops in progress hold (lhold.c). */
#define GL_CTX_UV_RULES 2
#define GL_CTX_UV_NODEMETA 3
#define GL_CTX_UV_STASH 4
#define GL_CTX_UV_LIGHTMETA (GL_CTX_UV_STASH + GL_STASH_DEPTH * (GL_NODE_INLINE_MAX + 1))
#define GL_CTX_UV_HELD (GL_CTX_UV_LIGHTMETA + 1)
#define GL_CTX_UV_CLOSING (GL_CTX_UV_LIGHTMETA + 2)
#define GL_CTX_UVALUES GL_CTX_UV_CLOSING

/* An array userdata's user values: the tape node (lgrad.c), and for a view of a light
** array the userdata that holds its bytes (the anchor). */
#define GL_UV_NODE 1
#define GL_UV_ANCHOR 2
#define GL_ARRAY_UVALUES 2
/* A tracked op's result holds its node inline (lgrad.c): user value 1 is true, 3 the
** rule (or nil: the op's entry in the tail names it), 3 + i argument i; the block ends with
** the versions v[0..k], the op's entry, then k. Made into a node userdata when something
** asks for it (backward, node(x)). */
#define GL_UV_RULE 3
#define GL_UV_ARG0 3
#define GL_NODE_TAIL(k) ((size_t)((k) + 3) * sizeof(lua_Integer))

/* A GL_OP_KEEPS_ARGS op tells the recorder which array it read in slot idx (1 or 2): the
** recorder then reads that argument's version without testing it again. */
static inline void gl_lua_operand(gl_lctx *c, int idx, const struct gl_array *a) {
  if (c->node_slots > 0 && idx >= 1 && idx <= 2) {
    c->operand[idx - 1] = a;
    c->operand_seen |= 1u << (idx - 1);
  }
}

#define GL_CTX(L) ((gl_lctx *)lua_touserdata(L, lua_upvalueindex(1)))

/* Registry keys (their addresses): the context and the array metatable. Looking them
** up by pointer avoids hashing a string on every array op. */
extern const char gl_ctx_key, gl_meta_key;
#define GL_PUSH_CTX(L) lua_rawgetp(L, LUA_REGISTRYINDEX, &gl_ctx_key)
#define GL_CTX_MAGIC 0x676c7561u

/* The context: upvalue 1 of the running function when it is one of ours (fast), else
** from the registry (C hosts calling the public API). */
gl_lctx *gl_lua_ctx(lua_State *L);

/* ---- what each function takes ------------------------------------------------------------- */

/* Every function of the module is registered with the most arguments it takes: a call with
** more raises "bad argument #3 to 'add' (at most 2 arguments expected, got 3)" before the
** function runs, so nothing a caller passes is silently ignored. A shape given as numbers
** counts GL_SHAPE_ARGS (GL_MAXDIMS extents and an options table); GL_VARARGS is for the
** few that pass their arguments on (gpu.range(name, fn, ...)). gpu._arity(f) answers the
** count of any function so registered (spec/arity_spec.lua calls each with one more). */
typedef struct gl_reg {
  const char *name;
  lua_CFunction func;
  int nargs;
} gl_reg;
#define GL_VARARGS (-1)
#define GL_SHAPE_ARGS (GL_MAXDIMS + 1)
/* Raises the error of a call with more than nargs arguments. */
int gl_lua_too_many(lua_State *L, int nargs);
/* Where the options table of a call is: at 'first' or, past optional positionals given as
** nil, at the first argument that is not nil, up to 'last' (its place when every
** positional is given): gpu.eye(3, nil, {k = 1}). Anything but a table or nil there is an
** error ("<what> expected, got string"), and so is any argument after it. */
int gl_lua_optsarg(lua_State *L, int first, int last, const char *what);
/* Whether the function at idx was registered with a count, and the count (INT_MAX for
** GL_VARARGS): dispatched ops (lgrad.c). */
bool gl_lua_op_nargs(lua_State *L, int idx, int *nargs);

/* ---- what an op holds while Lua code runs inside it (lhold.c) ---------------------- */

/* An op runs as a level: gl_lua_op_enter(c, &local) before it reads its arguments,
** gl_lua_op_leave after. While a level is open, closing an array only marks it (the close
** takes effect when the outermost level ends) and gl_lua_hold keeps a value from being
** collected. A level an error skipped is dropped by the next level entered from a frame
** that is not below it: marker is the address of a local of the op's C frame. */
static inline void gl_lua_op_prune(gl_lctx *c, const void *marker) {
  while (c->op_depth > 0 && c->op_marker[c->op_depth - 1] <= marker) c->op_depth--;
}
static inline int gl_lua_op_enter(gl_lctx *c, const void *marker) {
  gl_lua_op_prune(c, marker);
  if (c->op_depth == GL_OP_DEPTH) return -1;      /* not recorded: the levels below stay open */
  c->op_marker[c->op_depth] = marker;
  return c->op_depth++;
}
void gl_lua_op_flush(lua_State *L, gl_lctx *c);
static inline void gl_lua_op_leave(lua_State *L, gl_lctx *c, int level) {
  if (level < 0) return;
  c->op_depth = level;
  if (level == 0 && (c->held_n | c->closing_n)) gl_lua_op_flush(L, c);
}
/* Keeps the value at idx alive until the outermost op in progress ends (an array an op
** found in a table, which Lua code inside the op could drop and collect). */
void gl_lua_hold(lua_State *L, int idx);
/* x:close() and __close of the array at idx: now, or when the ops in progress end. */
void gl_lua_close(lua_State *L, int idx);
/* Whether the array at idx was closed during the ops in progress (it still reads). */
bool gl_lua_closing(lua_State *L, int idx);
/* Registers 'l' into the table at idx like gl_lua_setfuncs, each function running as an
** op level (the metamethods and collectives that read arrays outside the dispatch). */
void gl_lua_setfuncs_held(lua_State *L, int idx, const gl_reg *l);
/* Whether the function at idx was registered by it, and its count (INT_MAX: any number). */
bool gl_lua_held_nargs(lua_State *L, int idx, int *nargs);
/* gpu._hold (collect_next, state): the specs' handles on this file. */
void gl_open_hold(lua_State *L, int module);
/* gpu._worker (spawn, send, recv, close, wait, kill, exit, getpid): a DataLoader's worker
** processes (lworker.c). */
void gl_open_worker(lua_State *L, int module);

/* ---- arrays as userdata ---------------------------------------------------------- */

/* Pushes a new userdata holding a closed array (storage NULL) and returns it. */
gl_array *gl_lua_push(lua_State *L);
/* Pushes v, a descriptor made from another array's (a view), as a new array of that
** storage (retained). Returns the new array. */
gl_array *gl_lua_push_view(lua_State *L, const gl_array *v);
/* Pushes a new open array of that dtype, shape and device, for an op to fill: a cpu
** result of at most GL_LIGHT_MAX bytes is a light array, its bytes inside the userdata
** (one Lua allocation, no finalizer; larray.c), others come from the device as through
** gl_lua_alloc. c: the context, upvalue 1 of the running function (any dispatched op's
** body). */
#define GL_LIGHT_MAX 512
gl_array *gl_lua_push_result(lua_State *L, gl_lctx *c, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev);
/* The same for an elementwise plan (ops.h): a flat one's result copies its operand's
** shape without checking it again. */
gl_array *gl_lua_push_planned(lua_State *L, gl_lctx *c, const gl_plan *p);
/* Views of light arrays: a call that made one (gl_lua_owned_retains moved) gives each of
** its results that is such a view, or a table of them, an anchor (GL_UV_ANCHOR): the
** userdata holding the bytes, found among the arguments 1..nargs (their own anchors
** first). The dispatch runs it after every op; larray.c's __index for x[key] and x.T. */
void gl_lua_anchor_views(lua_State *L, int nargs, int first, int last);
/* The open array at idx, or a Lua error ("gpu.array expected" / "closed array"). */
gl_array *gl_lua_check(lua_State *L, int idx);
/* The array at idx if it is one (open or closed), else NULL. */
gl_array *gl_lua_test(lua_State *L, int idx);
/* The same test against a context already in hand (the hot paths fetch it once per op:
** finding the context costs as much as the test itself). */
static inline gl_array *gl_lua_test_in(lua_State *L, const gl_lctx *c, int idx) {
  void *p = lua_touserdata(L, idx);
  if (p == NULL || !lua_getmetatable(L, idx)) return NULL;
  const void *m = lua_topointer(L, -1);
  bool same = m == c->meta || m == c->meta_light;
  lua_pop(L, 1);
  return same ? p : NULL;
}
/* The array at idx, open or closed; a type error otherwise. */
gl_array *gl_lua_checkany(lua_State *L, int idx);

/* Pays the collector debt that gl_lua_account recorded (lrun.c; called by gl_lua_push
** before a new array exists). */
void gl_lua_pay_gc_debt(lua_State *L, gl_lctx *ctx);
/* Tells Lua's collector about bytes held outside its heap (device or host arrays). */
void gl_lua_account(lua_State *L, size_t nbytes);
/* Accounts a finished result's bytes (arrays of 256 elements or more; none for an empty,
** closed one). */
void gl_lua_account_array(lua_State *L, const gl_array *a);
/* The array at idx, or NULL when it is none or nil (anything else is an argument error). */
gl_array *gl_lua_optarray(lua_State *L, int idx);

/* Runs 'st' and raises a Lua error if it failed: at argument 'arg' (lauxlib's "bad
** argument #arg to 'f' (msg)") when arg > 0, else "f: msg". GL_ETOOBIG always reads
** "f: array is too big (...)": a result too big to exist is no one argument's fault. */
void gl_lua_check_status(lua_State *L, gl_status st, int arg);
/* Raises "f: msg" with the current function's name. */
int gl_lua_error(lua_State *L, const char *fmt, ...);

/* The out-of-memory ritual is done once for all, where storage is made (backend.c's
** reclaim hook, installed by luaopen_gpu): a failed allocation empties the device's
** cache, runs a full collection on the thread gl_lua_push last saw, and retries. */
void gl_lua_install_reclaim(void);
void gl_lua_set_current(lua_State *L);
void gl_lua_forget_current(lua_State *L);      /* its state is closing */
/* How an op ends: raise if st failed (at argument arg, or naming the function when 0),
** else account out's bytes to the collector; returns 1 (out is at the top). */
int gl_lua_result(lua_State *L, gl_status st, const gl_array *out, int arg);

/* A new array on the stack (the out-of-memory ritual included). */
gl_array *gl_lua_alloc(lua_State *L, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev);

/* ---- arguments (largs.c) ----------------------------------------------------------- */

/* Reads a shape from arguments first..top: numbers as varargs, or one table; stops at
** a table with string keys (an options table). Returns the index after the shape. The
** extents are checked (integers >= 0, at most GL_MAXDIMS); the size is not, as it depends
** on the dtype the options may name: gl_array_init (or gl_shape_nbytes) checks it. */
int gl_lua_shape(lua_State *L, int first, int *ndim, int64_t *shape);
/* The integer at idx, errors reported at argument arg: a number with a fraction raises
** fraction_fmt with (what, the number), anything else type_fmt with (what, its type name);
** both are lua_pushfstring formats. */
int64_t gl_lua_integer(lua_State *L, int idx, int arg, const char *what, const char *fraction_fmt,
                       const char *type_fmt);
/* One dimension (a non-negative integer) at idx, errors reported at argument arg. */
int64_t gl_lua_dim(lua_State *L, int idx, int arg);
/* The dimensions of a reshape at first..top (varargs or one table; one may be -1). */
int gl_lua_dims(lua_State *L, int first, int64_t *shape);
/* Axes at idx, 1-based (negatives from the end) into 0-based: nil gives -1 ("all"; 0
** with GL_AXES_VARARGS), a number 1, a table of numbers its length; GL_AXES_VARARGS
** reads numbers from idx to the top; GL_AXES_ONE refuses a table. Repeats are errors. */
enum { GL_AXES_ONE = 1, GL_AXES_VARARGS = 2 };
int gl_lua_axes(lua_State *L, int idx, int ndim, int *axes, unsigned flags);
/* A device argument, or (optdevice) an array's device, or the default when absent. */
gl_device gl_lua_optdevice(lua_State *L, int idx);
gl_dtype gl_lua_dtype(lua_State *L, int idx);            /* a dtype name argument */
gl_device gl_lua_device(lua_State *L, int idx);          /* a device name argument */
gl_device gl_lua_default_device(lua_State *L);
int64_t gl_lua_int(lua_State *L, int idx, const char *what);   /* integral number */

/* Pushes element 'offset' of a as a Lua value (integer, number, boolean, complex scalar). */
void gl_lua_push_element(lua_State *L, const gl_array *a, int64_t offset);
/* A Lua value (number, boolean, complex scalar) as a scalar; raises at 'arg' otherwise. */
gl_scalar gl_lua_scalar(lua_State *L, int idx, int arg);
/* The same for a value that becomes an element of dtype t: an integer dtype refuses what
** it cannot hold (gl_scalar_check), as an error of argument 'arg'. */
gl_scalar gl_lua_scalar_for(lua_State *L, int idx, int arg, gl_dtype t);

/* ---- complex numbers (lcomplex.c) ----------------------------------------------------------- */

/* Pushes the complex scalar re + im i (a full userdata, metatable "gpu.complex"). */
void gl_lua_push_complex(lua_State *L, double re, double im);
/* Whether the value at idx is a complex scalar, and its parts. */
bool gl_lua_tocomplex(lua_State *L, int idx, double *re, double *im);
/* Pushes x.real (part 0) or x.imag (part 1) of the array at idx: the result of the
** dispatched ops gpu.real / gpu.imag, so that autograd records them. */
void gl_lua_push_part(lua_State *L, int idx, int part);
/* gpu.complex, real, imag, conj, angle, polar, isreal, iscomplex, isrealobj, iscomplexobj,
** x:is_complex() and the complex scalar's metatable; after gl_open_math. */
void gl_open_complex(lua_State *L, int module, int methods);

/* ---- options tables (largs.c) ------------------------------------------------------------ */

/* The values a key takes: one bit per kind, or'ed for a key that takes several (options.lua's
** "string|function"). */
typedef enum gl_opttype {
  GL_OPT_BOOL = 1 << 0, GL_OPT_INT = 1 << 1, GL_OPT_NUMBER = 1 << 2, GL_OPT_STRING = 1 << 3,
  GL_OPT_DTYPE = 1 << 4,     /* a dtype name or alias */
  GL_OPT_DEVICE = 1 << 5,    /* a device name of an available backend */
  GL_OPT_PAIR = 1 << 6,      /* an integer or a table {a, b} of two integers (window sizes, strides) */
  GL_OPT_TABLE = 1 << 7, GL_OPT_ARRAY = 1 << 8, GL_OPT_FUNCTION = 1 << 9,
  GL_OPT_CALLABLE = 1 << 10, /* a function or a value with a __call metamethod */
  GL_OPT_ANY = 1 << 11,      /* TABLE to ANY: type checked only; the caller reads the value */
  GL_OPT_NUMSTR = GL_OPT_NUMBER | GL_OPT_STRING   /* a number, or a string among 'choices' ("fro") */
} gl_opttype;

enum { GL_RANGE_MIN = 1, GL_RANGE_MAX = 2, GL_RANGE_MIN_OPEN = 4, GL_RANGE_MAX_OPEN = 8 };

/* One declared key. Numbers (and a PAIR's two) are checked against [min, max] as 'range'
** says (NaN never passes); strings of a STRING key against 'choices' (space-separated;
** NULL: any string). options.lua's declarations are made of the same (largs.c). */
typedef struct gl_optkey {
  const char *name;
  gl_opttype type;
  unsigned range;
  double min, max;
  const char *choices;
} gl_optkey;

/* A function's options: its name as users call it, Lua code calling it with %s for the
** options table (spec/options_spec.lua runs it), and its keys (ending with { NULL }). */
typedef struct gl_optdecl {
  const char *name;
  const char *example;
  const gl_optkey *keys;
} gl_optdecl;

/* What gl_lua_readopts found for one key (vals[i] for keys[i]): the fields of the value's
** kind (a number: n, and i when an integer; a PAIR: pair; a string: s and choice, or dtype
** or device for such a key). */
typedef struct gl_optval {
  bool set, b;
  lua_Integer i;
  double n;            /* any number */
  const char *s;       /* a string: valid while the table is alive */
  int choice;          /* a string with choices: the index of the value among them */
  gl_dtype dtype;
  gl_device device;
  int pair[2];
} gl_optval;

/* Reads the options table at idx (none or nil: nothing set) against d into vals[], one
** per key, or raises at argument idx: unknown key (with the nearest declared one), wrong
** type, out of range. Nothing is pushed. */
void gl_lua_readopts(lua_State *L, int idx, const gl_optdecl *d, gl_optval *vals);
/* Adds d (or each of a NULL-terminated list) to gpu._options, for the generated spec. */
void gl_lua_declare(lua_State *L, const gl_optdecl *d);
void gl_lua_declare_all(lua_State *L, const gl_optdecl *const *list);
/* The candidate nearest to word when close enough to be a typo, else NULL. */
const char *gl_lua_nearest(const char *word, const char *const *candidates, int n);
/* gpu._word_distance(a, b) (the edit distance gl_lua_nearest uses), gpu._nearest(word,
** candidates) and options.lua's reader (gpu._declare_options, _read_options, _check_value,
** _describe). */
void gl_open_args(lua_State *L, int module);
/* The dtypes from Lua (ldtype.c): gpu._dtypes (the dtype table), the names as constants
** (gpu.float32, gpu.cfloat, ...), gpu.iinfo, gpu.finfo, gpu.result_type, gpu.promote_types,
** and gpu._supports / gpu._families (what each device's backend takes). */
void gl_open_dtypes(lua_State *L, int module);
/* A table with a string key (an options table, as opposed to a shape or axis list). */
bool gl_lua_is_options(lua_State *L, int idx);
/* The options of a function that makes arrays: d's first two keys are dtype and device
** (GL_KEYS_DTYPE_DEVICE), read into *dt and *dev where given; its other keys land in
** vals (NULL when d has no others; vals[i] for d->keys[i]). A device left unset (type
** 255) becomes the default device. */
#define GL_KEYS_DTYPE_DEVICE { "dtype", GL_OPT_DTYPE, 0, 0, 0, NULL }, { "device", GL_OPT_DEVICE, 0, 0, 0, NULL }
extern const gl_optkey gl_create_keys[];      /* just those two */
void gl_lua_opts(lua_State *L, int idx, const gl_optdecl *d, gl_dtype *dt, gl_device *dev, gl_optval *vals);
/* Registry key (its address) of gpu._options. */
extern const char gl_options_key;

/* ---- module registration ------------------------------------------------------------- */

/* Each file adds its functions: 'module' to gpu.*, 'methods' to both gpu.* and x:*. */
void gl_open_array(lua_State *L, int module, int methods, int meta);
void gl_lua_make_light_meta(lua_State *L, int meta);   /* pushes nothing; see larray.c */
void gl_open_create(lua_State *L, int module, int methods);
void gl_open_shape(lua_State *L, int module, int methods);
void gl_open_device(lua_State *L, int module, int methods);
void gl_open_math(lua_State *L, int module, int methods, int meta);
void gl_open_event(lua_State *L, int module, int methods);
void gl_open_indexing(lua_State *L, int module, int methods);
void gl_open_select(lua_State *L, int module, int methods);
/* x[key] and x[key] = v for a key that is an array (bool mask or int32/int64 indices
** along the first axis); lindexing.c. */
int gl_lua_index_array(lua_State *L, const gl_array *x, int key);
void gl_lua_newindex_array(lua_State *L, const gl_array *x, int key, int val);
void gl_open_linalg(lua_State *L, int module, int methods);
/* gpu._fft: the transforms under gpu.fft (lua/gpu/fft.lua); lfft.c. */
void gl_open_fft(lua_State *L, int module);
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

/* gpu.distributed: collectives between processes (MPI at init); ldist.c. */
void gl_open_dist(lua_State *L, int module);

/* gpu.fused: linear, cross-entropy, optimizer steps (the kernels under nn/optim); lfused.c. */
void gl_open_fused(lua_State *L, int module, int methods);
/* gpu.fused.lstm, gru, rnn and their backward ops (the time loops under nn.LSTM/GRU/RNN); lrnn.c. */
void gl_open_rnn(lua_State *L, int module, int methods);
/* Stubs of the routines written in Lua (lroutines.c): gpu.einsum, x:trace ...; after the
** Lua parts are preloaded and gpu.methods is set. */
void gl_open_routines(lua_State *L, int module);
/* Pushes a stub of the function 'name' of the Lua part 'part' ("gpu.routines"): its first
** call requires the part and every call is passed on to part.name (lroutines.c). */
void gl_lua_push_part_stub(lua_State *L, const char *part, const char *name);

/* gpu.ElementwiseKernel, ReductionKernel, RawKernel, RawModule, fuse (stubs of the Lua
** part gpu.kernel) and gpu._jit; lkernel.c. */
void gl_open_kernel(lua_State *L, int module);

/* Registers 'l' into the table at 'idx' with the context as upvalue: plain functions that
** are not ops (devices, events, metamethods that make no arrays). Metamethods ("__" names)
** are registered as they are: Lua calls them with their operands only. */
void gl_lua_setfuncs(lua_State *L, int idx, const gl_reg *l);

/* ---- ops: the dispatch every op goes through (lgrad.c) ------------------------------------- */

#define GL_OP_UPVALUES 3         /* an op's own upvalues, at most (the first is the context) */
/* GL_OP_KEEPS_ARGS: the op leaves its argument slots as they were (it only reads them and
** pushes its result): a tracked call then finds its arguments there after the op and
** stashes nothing (the elementwise ops; the dispatch checks that the result is the op's
** first new array, right above the arguments). */
enum { GL_OP_LIST = 1, GL_OP_AUTOCAST = 2, GL_OP_INPLACE = 4, GL_OP_KEEPS_ARGS = 8 };
/* Pops the top nup values (the op's upvalues, the context first) and pushes the op 'fn'
** wrapped in the dispatch closure, under its rules name (e.g. "add", "dnn.conv2d"); it
** takes at most nargs arguments (GL_VARARGS: any number). */
void gl_lua_pushop(lua_State *L, const char *name, lua_CFunction fn, int nargs, int nup);
/* The same with flags of its own (GL_OP_KEEPS_ARGS) besides those the name implies. */
void gl_lua_pushop_flags(lua_State *L, const char *name, lua_CFunction fn, int nargs, int nup, unsigned flags);
/* Registers 'l' as ops into the table at idx, their rules names prefixed by 'prefix'. */
void gl_lua_setops(lua_State *L, int idx, const char *prefix, const gl_reg *l);
/* Grad mode and the autocast dtype (-1: none) of the running coroutine. */
bool gl_lua_grad_enabled(lua_State *L);
int gl_lua_autocast_dtype(lua_State *L);
/* For ops outside the dispatch (x[key], x.T): is argument idx tracked with grad on, and
** the node {x, key} of rule 'name' given to the result at res_idx. */
bool gl_lua_tracked_call(lua_State *L, int idx);
void gl_lua_record_view(lua_State *L, const char *name, int x_idx, int key_idx, int res_idx);
/* x[key] = v (slots 1..3) with grad on and x or v on the tape: the autograd engine's
** setindex records it as an in-place op, or refuses it (a leaf, a view); returns 0. */
int gl_lua_record_setindex(lua_State *L);
/* Pushes x.grad (nil when none); x.grad = g with its checks (raises naming fname). */
int gl_lua_push_grad(lua_State *L, int idx);
void gl_lua_set_grad(lua_State *L, int x_idx, int g_idx, const char *fname);
/* The methods requires_grad, detach, backward ... and gpu._grad; after gl_open_shape. */
void gl_open_grad(lua_State *L, int module, int methods);
/* Puts the table at the top in package.loaded[name] too (it stays on the stack), so that
** lauxlib names its functions 'gpu.fused.f' in errors even when called through pcall. */
void gl_lua_setloaded(lua_State *L, const char *name);
/* Registers 'l' as gpu.f(x, ...) and as the method x:f(...). */
void gl_lua_setboth(lua_State *L, int module, int methods, const gl_reg *l);

#endif
