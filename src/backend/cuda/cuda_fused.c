/*
** cuda_fused.c — gpu.fused on the GPU (kernels/fused.cu, kernels/attention.cu): optimizer steps, layer
** norm, softmax cross-entropy and attention forward and backward, backend.h's optim_step / xent /
** xent_bwd / layer_norm(_bwd) / attention(_bwd) contracts (operands checked and made contiguous by
** src/ops/fused.c).
*/
#include "cuda.h"
#include "../../../kernels/fused.h"
#include "../../../kernels/attention.h"

#define DATA(a) ((a) ? gl_array_data(a) : NULL)

gl_status gl_cuda_optim_step(gl_optim_kind kind, const gl_array *p, const gl_array *g,
                             const gl_array *const st[3], const gl_optim_hp *hp) {
  gl_device dev = gl_array_device(p);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  static const char *const names[GL_OPTIM_KINDS] = { "sgd_", "adam_", "rmsprop_", "adagrad_", "adadelta_", "adamax_",
                                                      "nadam_", "radam_" };
  int rc = gl_klaunch_optim(s, (int)kind, p->dtype, p->size, gl_array_data(p), gl_array_data(g), DATA(st[0]),
                            DATA(st[1]), DATA(st[2]), hp);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "%s of %s parameters is not supported on cuda", names[kind], gl_dtypes[p->dtype].name);
  return gl_cuda_launched(dev, s, rc, names[kind]);
}

gl_status gl_cuda_xent(const gl_array *loss, const gl_array *probs, const gl_array *logits,
                       const gl_array *labels, const gl_array *target, double smoothing) {
  gl_device dev = gl_array_device(logits);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  int rc = gl_klaunch_xent(s, logits->dtype, logits->shape[0], logits->shape[1], gl_array_data(loss),
                           gl_array_data(probs), gl_array_data(logits), (const int64_t *)DATA(labels), DATA(target),
                           smoothing);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "cross_entropy of %s logits is not supported on cuda", gl_dtypes[logits->dtype].name);
  return gl_cuda_launched(dev, s, rc, "cross_entropy");
}

gl_status gl_cuda_xent_bwd(const gl_array *dst, const gl_array *probs, const gl_array *labels,
                           const gl_array *target, double smoothing, const gl_array *gout, double scale) {
  gl_device dev = gl_array_device(probs);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  int rc = gl_klaunch_xent_bwd(s, probs->dtype, probs->shape[0], probs->shape[1], gl_array_data(dst),
                               gl_array_data(probs), (const int64_t *)DATA(labels), DATA(target), smoothing,
                               gl_array_data(gout), gout->ndim == 0 ? 0 : 1, scale);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "cross_entropy_backward of %s is not supported on cuda", gl_dtypes[probs->dtype].name);
  return gl_cuda_launched(dev, s, rc, "cross_entropy_backward");
}

gl_status gl_cuda_layer_norm(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                             const gl_array *w, const gl_array *b, double eps) {
  gl_device dev = gl_array_device(x);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  int64_t D = x->shape[x->ndim - 1];
  int rc = gl_klaunch_layer_norm(s, x->dtype, x->size / D, D, gl_array_data(y), gl_array_data(mean),
                                 gl_array_data(rstd), gl_array_data(x), DATA(w), DATA(b), eps);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "layer_norm of %s is not supported on cuda", gl_dtypes[x->dtype].name);
  return gl_cuda_launched(dev, s, rc, "layer_norm");
}

gl_status gl_cuda_layer_norm_bwd(const gl_array *gx, const gl_array *gw, const gl_array *gb, const gl_array *g,
                                 const gl_array *x, const gl_array *mean, const gl_array *rstd, const gl_array *w) {
  gl_device dev = gl_array_device(x);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  int64_t D = x->shape[x->ndim - 1];
  int rc = gl_klaunch_layer_norm_bwd(s, x->dtype, x->size / D, D, gl_array_data(gx), DATA(gw), DATA(gb),
                                     gl_array_data(g), gl_array_data(x), gl_array_data(mean), gl_array_data(rstd),
                                     DATA(w));
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "layer_norm_backward of %s is not supported on cuda", gl_dtypes[x->dtype].name);
  return gl_cuda_launched(dev, s, rc, "layer_norm_backward");
}

/* Attention's sizes: B rows of heads (lse's), L queries, S keys, E and Ev widths. */
static void att_dims(const gl_array *q, const gl_array *k, const gl_array *v, const gl_array *lse, int64_t *B,
                     int64_t *L, int64_t *S, int64_t *E, int64_t *Ev) {
  int nd = q->ndim;
  *L = q->shape[nd - 2], *E = q->shape[nd - 1], *S = k->shape[nd - 2], *Ev = v->shape[nd - 1];
  *B = lse->size / (*L > 0 ? *L : 1);
}

gl_status gl_cuda_attention(const gl_array *out, const gl_array *lse, const gl_array *q, const gl_array *k,
                            const gl_array *v, double scale, bool causal) {
  if (q->dtype == GL_FLOAT16 || q->dtype == GL_BFLOAT16) {
#ifdef GL_WITH_CUDNN
    return gl_cuda_cudnn_attention(out, lse, q, k, v, scale, causal);   /* GL_ENOTSUP: the ops layer's float32 */
#else
    return gl_fail(GL_ENOTSUP, "attention of %s needs cuDNN on cuda (built without it)", gl_dtypes[q->dtype].name);
#endif
  }
  gl_device dev = gl_array_device(q);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  int64_t B, L, S, E, Ev;
  att_dims(q, k, v, lse, &B, &L, &S, &E, &Ev);
  int rc = gl_klaunch_attention(s, q->dtype, B, L, S, E, Ev, gl_array_data(out), gl_array_data(lse), gl_array_data(q),
                                gl_array_data(k), gl_array_data(v), scale, causal);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "attention of %s with %lld value columns is not supported on cuda (at most %d)",
                   gl_dtypes[q->dtype].name, (long long)Ev, GL_KATT_MAX_EV);
  return gl_cuda_launched(dev, s, rc, "attention");
}

gl_status gl_cuda_attention_bwd(const gl_array *gq, const gl_array *gk, const gl_array *gv, const gl_array *g,
                                const gl_array *q, const gl_array *k, const gl_array *v, const gl_array *out,
                                const gl_array *lse, double scale, bool causal) {
  gl_device dev = gl_array_device(q);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  int64_t B, L, S, E, Ev;
  att_dims(q, k, v, lse, &B, &L, &S, &E, &Ev);
  size_t nbytes = (size_t)lse->size * gl_array_itemsize(q);   /* D = rowsum(g * out) per row */
  void *dsum = NULL;
  GL_TRY(gl_cuda_alloc(dev, nbytes, &dsum));
  int rc = gl_klaunch_attention_bwd(s, q->dtype, B, L, S, E, Ev, gl_array_data(gq), gl_array_data(gk),
                                    gl_array_data(gv), dsum, gl_array_data(g), gl_array_data(q), gl_array_data(k),
                                    gl_array_data(v), gl_array_data(out), gl_array_data(lse), scale, causal);
  gl_cuda_free(dev, dsum, nbytes);                   /* stream order: later users wait for us */
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "attention_backward of %s is not supported on cuda", gl_dtypes[q->dtype].name);
  return gl_cuda_launched(dev, s, rc, "attention_backward");
}
