/*
** cuda_random.c — random fills on the GPU: the host side of kernels/random.cu. The
** stream and the element-to-counter mapping are kernels/philox.h's, shared with the CPU
** backend. PERMUTATION is not done here: the ops layer runs that serial walk on the
** host for every device and copies the result.
*/
#include "cuda.h"

/* kernels/random.cu: dst (n contiguous float64 or int64) = sampler 'kind' of
** kernels/random_dist.h from the blocks offset + i of key seed, parameters par[k] or, where
** pa[k] is set, pa[k][i]. (Declared here rather than in kernels/launch.h, which every
** kernel includes.) */
int gl_klaunch_sampler(void *stream, int kind, int dt, void *dst, int64_t n, uint64_t seed,
                       uint64_t offset, const double par[3], const double *const pa[3]);

_Static_assert(GL_KR_UNIFORM == (int)GL_RAND_UNIFORM && GL_KR_NORMAL == (int)GL_RAND_NORMAL &&
               GL_KR_INTEGERS == (int)GL_RAND_INTEGERS && GL_KR_BERNOULLI == (int)GL_RAND_BERNOULLI,
               "kernels/launch.h numbers the distributions as gl_rand_dist");

gl_status gl_cuda_random(gl_rand_dist dist, const gl_array *dst, const gl_rand_req *rq) {
  if (dist == GL_RAND_PERMUTATION)
    return gl_fail(GL_ENOTSUP, "permutation is made on the host, not by the cuda backend");
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  if (dist == GL_RAND_SAMPLER) {
    const double par[3] = { rq->a, rq->b, rq->c };
    const double *pa[3];
    for (int k = 0; k < 3; k++) pa[k] = rq->pa[k] ? (const double *)gl_array_data(rq->pa[k]) : NULL;
    int rc = gl_klaunch_sampler(s, rq->kind, dst->dtype, gl_array_data(dst), dst->size, rq->seed, rq->offset,
                                par, pa);
    if (rc == GL_KERR_NOTSUP)
      return gl_fail(GL_ENOTSUP, "the sampler is not defined for %s arrays", gl_dtypes[dst->dtype].name);
    return gl_cuda_launched(dev, s, rc, gl_rand_dist_name[dist]);
  }
  const double *p = rq->p ? (const double *)gl_array_data(rq->p) : NULL;
  int rc = gl_klaunch_random(s, (int)dist, dst->dtype, gl_array_data(dst), dst->size, rq->seed,
                             rq->offset, rq->a, rq->b, rq->lo, rq->range, p);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "%s is not defined for %s arrays", gl_rand_dist_name[dist], gl_dtypes[dst->dtype].name);
  return gl_cuda_launched(dev, s, rc, gl_rand_dist_name[dist]);
}
