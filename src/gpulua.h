/*
** gpulua.h — the public C interface of the gpu module, for C hosts that link
** libgpulua.a (or load gpu.so) and want to hand arrays to Lua or take them back.
** `make install` puts it in PREFIX/include beside PREFIX/lib/libgpulua.a; build a host
** with `cc host.c $(pkg-config --cflags --libs gpulua)` (examples/embed/main.c is one).
*/
#ifndef GPULUA_H
#define GPULUA_H

#include <stdint.h>
#include <lua.h>

/* The __name of an array's metatable (in messages). An array has one of two metatables
** (small cpu results are "light": no finalizer), so test and read arrays with
** gpulua_check_array / gpulua_read_array, not luaL_checkudata. */
#define GPULUA_ARRAY "gpu.array"

/* Opens the module: returns the `gpu` table (use with luaL_requiref). */
int luaopen_gpu(lua_State *L);

/* Dtype names are "float32", "float64", "int32", "int64", "uint8", "bool",
** "float16", "bfloat16". */

/* Pushes a new CPU array of the given dtype and shape holding a copy of 'data'
** (C order, 'ndim' <= 8). Raises a Lua error on bad arguments. */
void gpulua_push_array(lua_State *L, const char *dtype, int ndim, const int64_t *shape,
                       const void *data);

/* Checks that argument 'arg' is an open gpu array and returns its dtype name, ndim and
** shape (shape must hold 8 entries). Raises a Lua error otherwise. */
const char *gpulua_check_array(lua_State *L, int arg, int *ndim, int64_t *shape);

/* Copies the elements of the array at 'arg' (any device, any strides) into 'out' in C
** order and in the array's own dtype; 'out' must hold size * itemsize bytes. Returns
** the number of elements. Raises on error. */
int64_t gpulua_read_array(lua_State *L, int arg, void *out);

/* For hosts: a script that called gpu.distributed.init() ended with an error 'msg'. Tells
** the other ranks (their next collective raises "rank N failed: msg") and aborts the job
** (MPI_Abort); returns at once when no job of several processes runs. gpulua calls it. */
void gpulua_dist_fail(const char *msg);

#endif
