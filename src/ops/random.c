/*
** random.c — random arrays: check the distribution's parameters and dtype, allocate,
** let the device's backend fill from the generator's counter blocks, then advance the
** generator by the blocks the call used. kernels/philox.h documents which block and
** which words each element reads, so the same (seed, call sequence) gives the same
** numbers on every device.
*/
#include <math.h>
#include <string.h>
#include "ops.h"
#include "../../kernels/philox.h"

/* What a distribution makes, for messages. */
static const char *const dist_what[GL_NRAND] = {
  "uniform numbers", "normal numbers", "random integers", "bernoulli draws", "a permutation",
};

/* The backend of dev, when it has random fills at all. */
static gl_status random_entry(gl_device dev, const gl_backend **out) {
  GL_TRY(gl_backend_for(dev, out));
  if ((*out)->random != NULL) return GL_OK;
  char dn[16];
  return gl_fail(GL_ENOTSUP, "random numbers are not supported on %s", gl_device_name(dev, dn));
}

/* The backend of dev, when it fills dtype dt from 'dist' (its supports() says), before
** anything is allocated. */
static gl_status random_backend(gl_device dev, gl_rand_dist dist, gl_dtype dt, const gl_backend **out) {
  GL_TRY(random_entry(dev, out));
  if (!(*out)->supports(GL_OP_RANDOM, (int)dist, dt)) {
    char dn[16];
    char list[160];
    return gl_fail(GL_EINVAL, "dtype %s is not supported for %s on %s (expected %s)", gl_dtypes[dt].name,
                   dist_what[dist], gl_device_name(dev, dn),
                   gl_supported_dtypes(dev, GL_OP_RANDOM, (int)dist, list, sizeof list));
  }
  return GL_OK;
}

/* Counter blocks a fill of n elements reads: ceil(n * words / 4). */
static uint64_t blocks_used(gl_rand_dist dist, gl_dtype dt, int64_t n, uint64_t range) {
  uint64_t w = (uint64_t)gl_rand_words_per_element((int)dist, dt == GL_FLOAT64, range);
  return ((uint64_t)n * w + 3) / 4;
}

/* Allocates 'out' on dev and fills it with b (random_backend's); the generator advances
** only on success. */
static gl_status fill_new(const gl_backend *b, gl_array *out, gl_rng *g, gl_rand_dist dist, gl_rand_req *rq,
                          gl_dtype dt, int ndim, const int64_t *shape, gl_device dev) {
  GL_TRY(gl_array_alloc(out, dt, ndim, shape, dev));
  rq->seed = g->seed;
  rq->offset = g->offset;
  gl_status st = out->size ? b->random(dist, out, rq) : GL_OK;
  if (st != GL_OK) { gl_array_release(out); return st; }
  g->offset += blocks_used(dist, dt, out->size, rq->range);
  return GL_OK;
}

gl_status gl_op_random(gl_array *out, gl_rng *g, gl_rand_dist dist, double a, double b, gl_dtype dt,
                       int ndim, const int64_t *shape, gl_device dev) {
  if (dist != GL_RAND_UNIFORM && dist != GL_RAND_NORMAL)
    return gl_fail(GL_EINVAL, "%s is not a float distribution", gl_rand_dist_name[dist]);
  const gl_backend *be;
  GL_TRY(random_backend(dev, dist, dt, &be));
  if (dist == GL_RAND_UNIFORM) {
    if (!isfinite(a) || !isfinite(b) || !isfinite(b - a))
      return gl_fail(GL_EINVAL, "bounds must be finite (got %g and %g)", a, b);
    if (a > b) return gl_fail(GL_EINVAL, "lo (%g) is greater than hi (%g)", a, b);
  } else {
    if (!isfinite(a)) return gl_fail(GL_EINVAL, "mean must be finite (got %g)", a);
    if (!isfinite(b) || b < 0) return gl_fail(GL_EINVAL, "std must be finite and >= 0 (got %g)", b);
  }
  gl_rand_req rq = { 0 };
  rq.a = a;
  rq.b = b;
  return fill_new(be, out, g, dist, &rq, dt, ndim, shape, dev);
}

gl_status gl_op_randint(gl_array *out, gl_rng *g, int64_t lo, int64_t hi, gl_dtype dt, int ndim,
                        const int64_t *shape, gl_device dev) {
  const gl_backend *be;
  GL_TRY(random_backend(dev, GL_RAND_INTEGERS, dt, &be));
  if (gl_dtypes[dt].kind == GL_KIND_UINT && gl_dtypes[dt].size == 8) {     /* bounds past INT64_MAX */
    if ((uint64_t)lo > (uint64_t)hi)
      return gl_fail(GL_EINVAL, "lo (%llu) is greater than hi (%llu)", (unsigned long long)lo, (unsigned long long)hi);
  } else {
    if (lo > hi) return gl_fail(GL_EINVAL, "lo (%lld) is greater than hi (%lld)", (long long)lo, (long long)hi);
    if (lo < gl_dtypes[dt].min || hi > gl_dtypes[dt].max)
      return gl_fail(GL_EINVAL, "bounds %lld..%lld do not fit %s", (long long)lo, (long long)hi, gl_dtypes[dt].name);
  }
  gl_rand_req rq = { 0 };
  rq.lo = lo;
  rq.range = (uint64_t)hi - (uint64_t)lo + 1;       /* 0 stands for 2^64 */
  return fill_new(be, out, g, GL_RAND_INTEGERS, &rq, dt, ndim, shape, dev);
}

/* p as a contiguous float64 array of 'shape' on dev, checked to lie in [0, 1]. */
static gl_status prepare_p(gl_array *pd, const gl_array *p, int ndim, const int64_t *shape, gl_device dev) {
  if (!gl_device_eq(gl_array_device(p), dev)) {
    char da[16], db[16];
    return gl_fail(GL_EINVAL, "p is on %s but the result goes to %s; move it with :to('%s')",
                   gl_device_name(gl_array_device(p), da), gl_device_name(dev, db), gl_device_name(dev, db));
  }
  if (p->dtype == GL_BOOL || !(gl_dtype_is_float((gl_dtype)p->dtype) || gl_dtype_is_int((gl_dtype)p->dtype)))
    return gl_fail(GL_EINVAL, "p must be a numeric array, got %s", gl_dtypes[p->dtype].name);
  gl_array v = { 0 };
  gl_array_view_of(&v, p);
  gl_status st = gl_view_expand(&v, ndim, shape);
  if (st == GL_OK) st = gl_op_copy(pd, &v, GL_FLOAT64, dev);
  gl_array_release(&v);
  GL_TRY(st);
  if (pd->size == 0) return GL_OK;
  gl_array lo = { 0 }, hi = { 0 };
  gl_scalar slo, shi;
  st = gl_op_reduce(&lo, GL_R_MIN, pd, NULL, -1, false, -1, 0);
  if (st == GL_OK) st = gl_op_reduce(&hi, GL_R_MAX, pd, NULL, -1, false, -1, 0);
  if (st == GL_OK) st = gl_op_get(&lo, 0, &slo);
  if (st == GL_OK) st = gl_op_get(&hi, 0, &shi);
  gl_array_release(&lo);
  gl_array_release(&hi);
  if (st == GL_OK && !(slo.f >= 0 && shi.f <= 1))
    st = gl_fail(GL_EINVAL, "probabilities must lie in [0, 1] (got values from %g to %g)", slo.f, shi.f);
  if (st != GL_OK) gl_array_release(pd);
  return st;
}

gl_status gl_op_bernoulli(gl_array *out, gl_rng *g, double p, const gl_array *parr, gl_dtype dt,
                          int ndim, const int64_t *shape, gl_device dev) {
  const gl_backend *be;
  GL_TRY(random_backend(dev, GL_RAND_BERNOULLI, dt, &be));
  gl_rand_req rq = { 0 };
  gl_array pd = { 0 };
  if (parr) {
    GL_TRY(prepare_p(&pd, parr, ndim, shape, dev));
    rq.p = &pd;
  } else {
    if (!(p >= 0 && p <= 1)) return gl_fail(GL_EINVAL, "p must lie in [0, 1] (got %g)", p);
    rq.a = p;
  }
  gl_status st = fill_new(be, out, g, GL_RAND_BERNOULLI, &rq, dt, ndim, shape, dev);
  gl_array_release(&pd);
  return st;
}

gl_status gl_op_permutation(gl_array *out, gl_rng *g, int64_t n, int64_t k, gl_device dev) {
  if (n < 0) return gl_fail(GL_EINVAL, "n must be >= 0 (got %lld)", (long long)n);
  if (k < 0) return gl_fail(GL_EINVAL, "sample size must be >= 0 (got %lld)", (long long)k);
  if (k > n)
    return gl_fail(GL_EINVAL, "cannot take %lld samples from %lld without replacement", (long long)k, (long long)n);
  const gl_backend *b;
  GL_TRY(random_entry(dev, &b));
  /* a serial walk: always on the host (the cpu backend), then copied to dev; it needs
  ** all n values even when k are kept, so n must be a possible int64 array */
  size_t walk;
  GL_TRY(gl_nbytes(n, GL_INT64, &walk));
  const gl_backend *cpu = gl_backend_get(GL_CPU);
  gl_array h = { 0 };
  GL_TRY(gl_array_alloc(&h, GL_INT64, 1, &k, gl_cpu()));
  gl_rand_req rq = { 0 };
  rq.seed = g->seed;
  rq.offset = g->offset;
  rq.lo = 1;
  rq.range = (uint64_t)n;
  gl_status st = n > 0 ? cpu->random(GL_RAND_PERMUTATION, &h, &rq) : GL_OK;
  if (st == GL_OK && dev.type != GL_CPU) {
    st = gl_op_copy(out, &h, GL_INT64, dev);
    gl_array_release(&h);
  } else if (st == GL_OK) {
    *out = h;
  } else {
    gl_array_release(&h);
  }
  if (st == GL_OK) {
    int64_t steps = k < n ? k : n - 1;
    if (steps > 0) g->offset += blocks_used(GL_RAND_PERMUTATION, GL_INT64, steps, 0);
  }
  return st;
}

gl_status gl_op_shuffle(const gl_array *x, gl_rng *g) {
  if (x->ndim == 0) return gl_fail(GL_EINVAL, "cannot shuffle a 0-d array");
  GL_TRY(gl_array_writable(x, NULL));          /* refused before the work; assign counts the write */
  if (x->shape[0] < 2) return GL_OK;
  gl_array perm = { 0 }, tmp = { 0 };
  gl_rng g2 = *g;
  GL_TRY(gl_op_permutation(&perm, &g2, x->shape[0], x->shape[0], gl_array_device(x)));
  gl_status st = gl_op_take(&tmp, x, 0, &perm);
  if (st == GL_OK) st = gl_op_assign(x, &tmp);
  gl_array_release(&perm);
  gl_array_release(&tmp);
  if (st == GL_OK) *g = g2;
  return st;
}
