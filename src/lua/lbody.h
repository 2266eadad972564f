/*
** lbody.h — what the bodies of the module's functions share beyond lgpu.h: an option key
** written alike in several files, the options of the functions that make arrays, the
** ending of an op with several results, the metatable of a userdata type, and running a
** function as an op level (lhold.c).
*/
#ifndef GL_LBODY_H
#define GL_LBODY_H

#include "lgpu.h"

/* A boolean option: { "name", GL_OPT_BOOL } with nothing to check but its type. */
#define GL_KEY_FLAG(name) { name, GL_OPT_BOOL, 0, 0, 0, NULL }

/* The dtype and device options of a function that makes arrays (gl_lua_opts): the dtype
** 'dt_default' unless given, the default device unless given; vals gets d's other keys. */
void gl_lua_create_opts(lua_State *L, int idx, const gl_optdecl *d, gl_dtype dt_default, gl_dtype *dt, gl_device *dev,
                        gl_optval *vals);

/* Sets the stack to top, then pushes n new closed arrays (slots top + 1 .. top + n) into
** res[0..n-1], for an op to fill. */
void gl_lua_push_results(lua_State *L, int top, gl_array **res, int n);
/* How an op with n results ends: raises if st failed (naming the function), else accounts
** each result's bytes to the collector; returns n. */
int gl_lua_results(lua_State *L, gl_status st, gl_array *const *res, int n);

/* Makes the metatable of the userdata type tname (liolib's createmeta) and pops it: the
** metamethods 'meta' and an __index table of 'methods', these run as op levels when held
** (lhold.c: methods that read arrays). */
void gl_lua_newclass(lua_State *L, const char *tname, const gl_reg *meta, const gl_reg *methods, bool held);

/* Runs f(L) as an op level (lhold.c): what gl_lua_setfuncs_held does for each function, for
** the metamethods that take the level only on their slow paths (larray.c). */
int gl_lua_run_held(lua_State *L, gl_lctx *c, lua_CFunction f);

#endif
