/*
** cuda_cudnn.h — what cuda_cudnn.c (the cuDNN loader, handles and gl_dnn table) shares with the
** other files that call cuDNN (cuda_cudnn_rnn.c, cuda_cudnn_attn.c): its entry points by name, the device's handle,
** and the error text. Includes cudnn.h: only files built with GL_WITH_CUDNN include it.
*/
#ifndef GL_CUDA_CUDNN_H
#define GL_CUDA_CUDNN_H
#ifdef GL_WITH_CUDNN

#include <cudnn.h>
#include "cuda.h"

/* NULL when cuDNN loaded (loading it on the first call), else why not. */
const char *gl_cuda_cudnn_unavailable(void);
/* Loads the entry points names[0..n) of the library (loading it on the first call) into
** the function-pointer fields whose addresses are slots[0..n): NULL, or why not (cuDNN's own
** reason, or "cuDNN's <what> not usable: libcudnn.so.9 lacks ..." written into msg). */
const char *gl_cuda_cudnn_load(const char *what, const char *const *names, void *const *slots, int n, char *msg,
                               size_t size);
/* For the names[] of an X-macro list of entry points: X(GL_CUDNN_NAME). */
#define GL_CUDNN_NAME(name) #name,

/* The device's stream and cuDNN handle (made on first use, bound to that stream). */
gl_status gl_cuda_cudnn_enter(gl_device dev, const char *op, cudaStream_t *s, cudnnHandle_t *h);
/* GL_OK, or "op: call: CUDNN_STATUS_...: message" for a failed call. */
gl_status gl_cuda_cudnn_check(cudnnStatus_t st, const char *op, const char *call);

/* dt's cuDNN data type (its row's cudnn column: CUDNN_DATA_FLOAT ...); cuDNN has none for
** int16, uint16, uint64 or complex (the families that call cuDNN take floats). */
cudnnDataType_t gl_cuda_cudnn_type(gl_dtype dt);

/* cuda_cudnn_attn.c: frees device 'index''s cached attention plans (gl_cuda_lock held). */
void gl_cuda_cudnn_attn_release(int index);

/* cuda_cudnn_rnn.c: gl_dnn's RNN entries */
const char *gl_cuda_rnn_unavailable(void);
gl_status gl_cuda_rnn_reserve(gl_device dev, const gl_dnn_rnn_net *r, gl_dtype dt, size_t *bytes);
gl_status gl_cuda_rnn(const gl_dnn_rnn_net *r, const gl_array *out, const gl_array *reserve, const gl_array *x,
                      const gl_array *w, const gl_array *hx, const gl_array *cx);
gl_status gl_cuda_rnn_bwd(const gl_dnn_rnn_net *r, const gl_array *dx, const gl_array *dw, const gl_array *dhx,
                          const gl_array *dcx, const gl_array *g, const gl_array *out, const gl_array *reserve,
                          const gl_array *x, const gl_array *w, const gl_array *hx, const gl_array *cx);

#endif
#endif
