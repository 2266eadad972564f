/*
** cuda_solver_t.h — the cuSOLVER drivers of cuda_solver.c for one element type, included
** twice: T float, P(x) s_##x, SV_DT GL_FLOAT32, SV_FN(f) sv.s.f; then the double ones.
** No include guard on purpose.
**
** C order and cuSOLVER's column-major: a C-order m x n matrix read column-major with
** leading dimension n is its transpose (n x m), as in cpu_lapack_t.h; each driver says how
** it uses that. Transposes that cannot be avoided are the backend's strided copies
** (gl_cuda_copy over sv_view's views). Batches: the Jacobi batched drivers for small
** matrices (SV_JACOBI_MAX), potrfBatched, else one call per matrix, each writing its own
** info code; the codes are read back once per call (sv_first_bad).
*/

#define SV_ESZ sizeof(T)

/* ---- SOLVE: getrf of a as is (cuSOLVER factors a^T), getrs with OP_T solves
** (a^T)^T x = a x = b; b goes in and x comes out through a column-major scratch. One
** pivot vector and one workspace serve the whole batch: the stream orders the calls. */
static gl_status P(solve)(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1], *x = g->out[0];
  int n = (int)a->shape[a->ndim - 1], k = (int)b->shape[b->ndim - 1], lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)n * n, bn = (int64_t)n * k;
  if (B == 0 || n == 0) return GL_OK;
  T *lu, *rhs, *work;
  int *ipiv, *info2;
  sv_status st;
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * an), (void **)&lu));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * bn), (void **)&rhs));
  GL_TRY(sv_scratch(c, sizeof(int) * (size_t)(n + 1), (void **)&ipiv));
  info2 = ipiv + n;
  GL_TRY(sv_status_new(c, B, false, &st));
  GL_TRY(sv_check(SV_FN(getrf_bufferSize)(c->h, n, n, lu, n, &lwork), "getrf_bufferSize"));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work));
  GL_TRY(sv_d2d(c, lu, sv_data(a), SV_ESZ * (size_t)(B * an)));
  const int64_t cmaj[3] = { bn, 1, n }, rmaj[3] = { bn, k, 1 };
  GL_TRY(sv_copy(c, SV_DT, B, n, k, rhs, cmaj, sv_data(b), rmaj));
  for (int64_t i = 0; i < B; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_check(SV_FN(getrf)(c->h, n, n, lu + i * an, n, work, ipiv, st.info + i), "getrf"));
    if (k > 0)
      GL_TRY(sv_check(SV_FN(getrs)(c->h, CUBLAS_OP_T, n, k, lu + i * an, n, ipiv, rhs + i * bn, n, info2), "getrs"));
  }
  GL_TRY(sv_copy(c, SV_DT, B, n, k, sv_data(x), rmaj, rhs, cmaj));
  return sv_first_bad(c, &st, bad);
}

/* ---- INV: cuSOLVER has no getri: getrf of a as is (a^T), then getrs with OP_N solves
** a^T Y = I into the output, which read in C order is Y^T = a^-1. */
static gl_status P(inv)(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  int n = (int)a->shape[a->ndim - 1], lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)n * n;
  if (B == 0 || n == 0) return GL_OK;
  T *lu, *work, *X = sv_data(g->out[0]);
  int *ipiv, *info2;
  sv_status st;
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * an), (void **)&lu));
  GL_TRY(sv_scratch(c, sizeof(int) * (size_t)(n + 1), (void **)&ipiv));
  info2 = ipiv + n;
  GL_TRY(sv_status_new(c, B, false, &st));
  GL_TRY(sv_check(SV_FN(getrf_bufferSize)(c->h, n, n, lu, n, &lwork), "getrf_bufferSize"));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work));
  GL_TRY(sv_d2d(c, lu, sv_data(a), SV_ESZ * (size_t)(B * an)));
  GL_TRY(sv_eye(c, SV_DT, B, n, n, X));
  for (int64_t i = 0; i < B; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_check(SV_FN(getrf)(c->h, n, n, lu + i * an, n, work, ipiv, st.info + i), "getrf"));
    GL_TRY(sv_check(SV_FN(getrs)(c->h, CUBLAS_OP_N, n, n, lu + i * an, n, ipiv, X + i * an, n, info2), "getrs"));
  }
  return sv_first_bad(c, &st, bad);
}

/* ---- SLOGDET: det(a^T) = det(a), so getrf of a as is; the info codes, pivots and U's
** diagonals come back in one copy and the sign and log|det| are made on the host as the
** CPU makes them (a zero pivot: sign 0, -inf), then copied to the outputs. */
static gl_status P(slogdet)(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  int n = (int)a->shape[a->ndim - 1], lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)n * n;
  T *S = sv_data(g->out[0]), *Lg = sv_data(g->out[1]);
  (void)bad;
  if (B == 0) return GL_OK;
  const int64_t flat[3] = { 1, 0, 0 };
  if (n == 0) {
    GL_TRY(sv_fill(c, SV_DT, B, 1, 1, S, flat, 1));
    return sv_fill(c, SV_DT, B, 1, 1, Lg, flat, 0);
  }
  size_t oi = sizeof(int) * (size_t)B, od = (oi + sizeof(int) * (size_t)(B * n) + 15) & ~(size_t)15;
  size_t total = od + SV_ESZ * (size_t)(B * n);
  char *blk;
  T *lu, *work;
  GL_TRY(sv_scratch(c, total, (void **)&blk));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * an), (void **)&lu));
  GL_TRY(sv_check(SV_FN(getrf_bufferSize)(c->h, n, n, lu, n, &lwork), "getrf_bufferSize"));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work));
  GL_TRY(sv_d2d(c, lu, sv_data(a), SV_ESZ * (size_t)(B * an)));
  int *info = (int *)(void *)blk, *ipiv = (int *)(void *)(blk + oi);
  for (int64_t i = 0; i < B; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_check(SV_FN(getrf)(c->h, n, n, lu + i * an, n, work, ipiv + i * n, info + i), "getrf"));
  }
  const int64_t dd[3] = { n, 0, 1 }, ds[3] = { an, 0, n + 1 };
  GL_TRY(sv_copy(c, SV_DT, B, 1, n, blk + od, dd, lu, ds));
  char *h = malloc(total + 2 * SV_ESZ * (size_t)B);
  if (h == NULL) return gl_fail(GL_ENOMEM, "slogdet: out of memory for the pivots");
  gl_status rc = gl_cuda_to_host(h, c->dev, blk, total);
  T *hs = (T *)(void *)(h + total), *hl = hs + B;
  for (int64_t i = 0; rc == GL_OK && i < B; i++) {
    int inf, p;
    memcpy(&inf, h + sizeof(int) * (size_t)i, sizeof inf);
    T sign = 1, logabs = 0;
    if (inf > 0) { sign = 0; logabs = -(T)INFINITY; }
    else {
      for (int j = 0; j < n; j++) {
        T d;
        memcpy(&p, h + oi + sizeof(int) * (size_t)(i * n + j), sizeof p);
        memcpy(&d, h + od + SV_ESZ * (size_t)(i * n + j), sizeof d);
        if (p != j + 1) sign = -sign;
        if (d < 0) sign = -sign;
        logabs += (T)log(fabs((double)d));
      }
    }
    hs[i] = sign;
    hl[i] = logabs;
  }
  if (rc == GL_OK) rc = gl_cuda_from_host(c->dev, S, hs, SV_ESZ * (size_t)B);
  if (rc == GL_OK) rc = gl_cuda_from_host(c->dev, Lg, hl, SV_ESZ * (size_t)B);
  free(h);
  return rc;     /* a singular matrix is an answer here (sign 0), not a failure */
}

/* ---- CHOLESKY: a in C order is a^T column-major, so its lower triangle is cuSOLVER's
** upper: potrf(UPPER) gives U with a^T = U^T U, which read in C order is L in the lower
** triangle (LOWER gives the upper factor the same way). Factored in the output; the
** other triangle, still the input's, is zeroed. Several matrices: potrfBatched, which
** takes an array of device pointers and one info code per matrix. A NaN in the triangle
** read gives a factor of NaN, as on the cpu, whatever potrf made of it. */
static gl_status P(cholesky)(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  int n = (int)a->shape[a->ndim - 1], lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)n * n;
  T *L = sv_data(g->out[0]);
  bool upper = (g->flags & GL_LA_UPPER) != 0;
  cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  if (B == 0 || n == 0) return GL_OK;
  if (B > INT_MAX) return gl_fail(GL_ETOOBIG, "cholesky: a batch of more than 2^31 - 1 matrices");
  sv_status st;
  void *nan;
  GL_TRY(sv_status_new(c, B, false, &st));
  GL_TRY(sv_scratch(c, (size_t)B, &nan));
  GL_TRY(sv_has_nan(c, SV_DT, B, n, n, sv_data(a), upper ? 2 : 1, nan));
  GL_TRY(sv_d2d(c, L, sv_data(a), SV_ESZ * (size_t)(B * an)));
  if (B == 1) {
    T *work;
    GL_TRY(sv_check(SV_FN(potrf_bufferSize)(c->h, uplo, n, L, n, &lwork), "potrf_bufferSize"));
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work));
    GL_TRY(sv_check(SV_FN(potrf)(c->h, uplo, n, L, n, work, lwork, st.info), "potrf"));
  } else {
    T **hp = malloc(sizeof(T *) * (size_t)B), **dp;
    if (hp == NULL) return gl_fail(GL_ENOMEM, "cholesky: out of memory for the batch's pointers");
    for (int64_t i = 0; i < B; i++) hp[i] = L + i * an;
    gl_status rc = sv_scratch(c, sizeof(T *) * (size_t)B, (void **)&dp);
    if (rc == GL_OK) rc = gl_cuda_from_host(c->dev, dp, hp, sizeof(T *) * (size_t)B);
    free(hp);
    GL_TRY(rc);
    GL_TRY(sv_check(SV_FN(potrfBatched)(c->h, uplo, n, dp, n, st.info, (int)B), "potrfBatched"));
  }
  GL_TRY(sv_nan_where(c, SV_DT, B, n, n, L, nan, st.info));
  GL_TRY(sv_keep_tri(c, SV_DT, B, n, n, L, upper));
  return sv_first_bad(c, &st, bad);
}

/* ---- QR: geqrf on a column-major copy (ld m, max(n, kq) columns); R is the upper
** triangle of its first kq rows, read back to C order; Q from orgqr over kq columns. The
** columns past a's (mode "complete", m > n) start as the identity's, as LAPACK's orgqr
** makes them, whatever cuSOLVER does with them. */
static gl_status P(qr)(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *q = g->out[0], *r = g->out[1];
  int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = m < n ? m : n;
  int kq = (int)r->shape[r->ndim - 2], cols = n > kq ? n : kq, lw1 = 0, lw2 = 0;
  int64_t B = sv_batch(a), mc = (int64_t)m * cols;
  if (B == 0) return GL_OK;
  T *cm, *tau, *work;
  int *info2;
  sv_status st;
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * mc), (void **)&cm));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * (k > 0 ? k : 1)), (void **)&tau));
  GL_TRY(sv_scratch(c, sizeof(int), (void **)&info2));
  GL_TRY(sv_status_new(c, B, false, &st));
  if (mc > 0) GL_TRY(gl_cuda_check(c->dev.index, cudaMemsetAsync(cm, 0, SV_ESZ * (size_t)(B * mc), c->s), "qr: scratch"));
  const int64_t cmaj[3] = { mc, 1, m }, rmaj[3] = { (int64_t)m * n, n, 1 };
  GL_TRY(sv_copy(c, SV_DT, B, m, n, cm, cmaj, sv_data(a), rmaj));
  if (cols > n) {
    const int64_t diag[3] = { mc, 0, m + 1 };
    GL_TRY(sv_fill(c, SV_DT, B, 1, cols - n, cm + (int64_t)n * m + n, diag, 1));
  }
  if (m > 0 && n > 0) GL_TRY(sv_check(SV_FN(geqrf_bufferSize)(c->h, m, n, cm, m, &lw1), "geqrf_bufferSize"));
  if (q && m > 0 && kq > 0 && k > 0)
    GL_TRY(sv_check(SV_FN(orgqr_bufferSize)(c->h, m, kq, k, cm, m, tau, &lw2), "orgqr_bufferSize"));
  int lwork = lw1 > lw2 ? lw1 : lw2;
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work));
  for (int64_t i = 0; i < B && m > 0 && n > 0; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_check(SV_FN(geqrf)(c->h, m, n, cm + i * mc, m, tau + i * k, work, lwork, st.info + i), "geqrf"));
  }
  const int64_t rout[3] = { (int64_t)kq * n, n, 1 };
  GL_TRY(sv_copy(c, SV_DT, B, kq, n, sv_data(r), rout, cm, cmaj));
  GL_TRY(sv_keep_tri(c, SV_DT, B, kq, n, sv_data(r), true));
  if (q) {
    for (int64_t i = 0; i < B && m > 0 && kq > 0 && k > 0; i++) {
      GL_TRY(gl_interrupt_check());
      GL_TRY(sv_check(SV_FN(orgqr)(c->h, m, kq, k, cm + i * mc, m, tau + i * k, work, lwork, info2), "orgqr"));
    }
    const int64_t qout[3] = { (int64_t)m * kq, kq, 1 };
    GL_TRY(sv_copy(c, SV_DT, B, m, kq, sv_data(q), qout, cm, cmaj));
  }
  return sv_first_bad(c, &st, bad);
}

/* ---- SVD. Several matrices of order <= 32: gesvdjBatched on a as is (X = a^T, n x m,
** = U_x S V_x^T, so a = V_x S U_x^T: u is V_x read back to C order, vh the first kv
** columns of U_x as they lie); it always makes the full U_x, V_x. Otherwise gesvd, one
** call per matrix, which wants rows >= columns: for n >= m on a as is (X = a^T), where
** its U_x (n x kv) read in C order is vh and its VT_x (m x m) read in C order is u, both
** written in place; for m > n on a column-major copy (X = a), U_x and VT_x then read back
** to C order. A matrix with an infinity or NaN fails as the CPU's does. */
static gl_status P(svd)(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *u = g->out[0], *s = g->out[1], *vh = g->out[2];
  int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = m < n ? m : n, lwork = 0;
  int ku = u ? (int)u->shape[u->ndim - 1] : 0, kv = vh ? (int)vh->shape[vh->ndim - 2] : 0;
  bool vec = u != NULL, full = (g->flags & GL_LA_FULL) != 0;
  int64_t B = sv_batch(a), an = (int64_t)m * n;
  T *A = sv_data(a), *U = sv_data(u), *S = sv_data(s), *V = sv_data(vh), *X, *work;
  if (B == 0) return GL_OK;
  if (k == 0) {      /* nothing to factor: the full factors are identities */
    if (vec) GL_TRY(sv_eye(c, SV_DT, B, m, ku, U));
    if (vec) GL_TRY(sv_eye(c, SV_DT, B, kv, n, V));
    return GL_OK;
  }
  sv_status st;
  GL_TRY(sv_status_new(c, B, true, &st));
  GL_TRY(sv_finite(c, SV_DT, B, m, n, A, 0, st.fin));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * an), (void **)&X));
  if (B > 1 && B <= INT_MAX && m <= SV_JACOBI_MAX && n <= SV_JACOBI_MAX) {
    T *Ux, *Vx;
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * n * n), (void **)&Ux));
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * m * m), (void **)&Vx));
    GL_TRY(sv_d2d(c, X, A, SV_ESZ * (size_t)(B * an)));
    cusolverEigMode_t jobz = vec ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    gesvdjInfo_t params = NULL;
    GL_TRY(sv_check(sv.gesvdj_new(&params), "cusolverDnCreateGesvdjInfo"));
    gl_status rc = sv_check(SV_FN(gesvdjBatched_bufferSize)(c->h, jobz, n, m, X, n, S, Ux, n, Vx, m, &lwork,
                                                            params, (int)B), "gesvdjBatched_bufferSize");
    if (rc == GL_OK) rc = sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work);
    if (rc == GL_OK)
      rc = sv_check(SV_FN(gesvdjBatched)(c->h, jobz, n, m, X, n, S, Ux, n, Vx, m, work, lwork, st.info, params,
                                         (int)B), "gesvdjBatched");
    sv.gesvdj_free(params);
    GL_TRY(rc);
    if (vec) {
      const int64_t uo[3] = { (int64_t)m * ku, ku, 1 }, ui[3] = { (int64_t)m * m, 1, m };
      const int64_t vo[3] = { (int64_t)kv * n, n, 1 }, vi[3] = { (int64_t)n * n, n, 1 };
      GL_TRY(sv_copy(c, SV_DT, B, m, ku, U, uo, Vx, ui));
      GL_TRY(sv_copy(c, SV_DT, B, kv, n, V, vo, Ux, vi));
    }
    return sv_first_bad(c, &st, bad);
  }
  T *rwork, *dummy;
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)k, (void **)&rwork));
  GL_TRY(sv_scratch(c, SV_ESZ, (void **)&dummy));
  signed char jobu = (signed char)(vec ? (full ? 'A' : 'S') : 'N'), jobvt = (signed char)(vec ? 'A' : 'N');
  if (n >= m) {
    GL_TRY(sv_d2d(c, X, A, SV_ESZ * (size_t)(B * an)));
    GL_TRY(sv_check(SV_FN(gesvd_bufferSize)(c->h, n, m, &lwork), "gesvd_bufferSize"));
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work));
    for (int64_t i = 0; i < B; i++) {
      GL_TRY(gl_interrupt_check());
      T *vi = vec ? V + i * (int64_t)kv * n : dummy, *ui = vec ? U + i * (int64_t)m * ku : dummy;
      GL_TRY(sv_check(SV_FN(gesvd)(c->h, jobu, jobvt, n, m, X + i * an, n, S + i * k, vi, n, ui, m, work, lwork,
                                   rwork, st.info + i), "gesvd"));
    }
  } else {
    const int64_t cmaj[3] = { an, 1, m }, rmaj[3] = { an, n, 1 };
    T *Ux = dummy, *VTx = dummy;
    if (vec) {
      GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * m * ku), (void **)&Ux));
      GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * n * n), (void **)&VTx));
    }
    GL_TRY(sv_copy(c, SV_DT, B, m, n, X, cmaj, A, rmaj));
    GL_TRY(sv_check(SV_FN(gesvd_bufferSize)(c->h, m, n, &lwork), "gesvd_bufferSize"));
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work));
    for (int64_t i = 0; i < B; i++) {
      GL_TRY(gl_interrupt_check());
      T *ui = vec ? Ux + i * (int64_t)m * ku : dummy, *vi = vec ? VTx + i * (int64_t)n * n : dummy;
      GL_TRY(sv_check(SV_FN(gesvd)(c->h, jobu, jobvt, m, n, X + i * an, m, S + i * k, ui, m, vi, n, work, lwork,
                                   rwork, st.info + i), "gesvd"));
    }
    if (vec) {
      const int64_t uo[3] = { (int64_t)m * ku, ku, 1 }, ui[3] = { (int64_t)m * ku, 1, m };
      const int64_t vo[3] = { (int64_t)n * n, n, 1 }, vi[3] = { (int64_t)n * n, 1, n };
      GL_TRY(sv_copy(c, SV_DT, B, m, ku, U, uo, Ux, ui));
      GL_TRY(sv_copy(c, SV_DT, B, n, n, V, vo, VTx, vi));
    }
  }
  return sv_first_bad(c, &st, bad);
}

/* ---- EIGH: a as is is a^T, so the lower triangle of a is cuSOLVER's upper. Several
** matrices of order <= 32: syevjBatched; else syevd per matrix. Eigenvalues come out
** ascending into w as they are; the eigenvectors, columns of a column-major matrix, are
** read back to C order. A read triangle with an infinity or NaN fails as on the CPU. */
static gl_status P(eigh)(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *v = g->out[1];
  int n = (int)a->shape[a->ndim - 1], lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)n * n;
  bool upper = (g->flags & GL_LA_UPPER) != 0;
  cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  cusolverEigMode_t jobz = v ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  T *A = sv_data(a), *W = sv_data(g->out[0]), *cm, *work;
  if (B == 0 || n == 0) return GL_OK;
  sv_status st;
  GL_TRY(sv_status_new(c, B, true, &st));
  GL_TRY(sv_finite(c, SV_DT, B, n, n, A, upper ? 2 : 1, st.fin));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(B * an), (void **)&cm));
  GL_TRY(sv_d2d(c, cm, A, SV_ESZ * (size_t)(B * an)));
  if (B > 1 && B <= INT_MAX && n <= SV_JACOBI_MAX) {
    syevjInfo_t params = NULL;
    GL_TRY(sv_check(sv.syevj_new(&params), "cusolverDnCreateSyevjInfo"));
    gl_status rc = sv_check(SV_FN(syevjBatched_bufferSize)(c->h, jobz, uplo, n, cm, n, W, &lwork, params, (int)B),
                            "syevjBatched_bufferSize");
    if (rc == GL_OK) rc = sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work);
    if (rc == GL_OK)
      rc = sv_check(SV_FN(syevjBatched)(c->h, jobz, uplo, n, cm, n, W, work, lwork, st.info, params, (int)B),
                    "syevjBatched");
    sv.syevj_free(params);
    GL_TRY(rc);
  } else {
    GL_TRY(sv_check(SV_FN(syevd_bufferSize)(c->h, jobz, uplo, n, cm, n, W, &lwork), "syevd_bufferSize"));
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(lwork > 0 ? lwork : 1), (void **)&work));
    for (int64_t i = 0; i < B; i++) {
      GL_TRY(gl_interrupt_check());
      GL_TRY(sv_check(SV_FN(syevd)(c->h, jobz, uplo, n, cm + i * an, n, W + i * n, work, lwork, st.info + i),
                      "syevd"));
    }
  }
  if (v) {
    const int64_t vo[3] = { an, n, 1 }, vi[3] = { an, 1, n };
    GL_TRY(sv_copy(c, SV_DT, B, n, n, sv_data(v), vo, cm, vi));
  }
  return sv_first_bad(c, &st, bad);
}

/* ---- LSTSQ through the SVD, as gelsd on the CPU: a = u diag(s) vh (reduced), singular
** values at or below rcond * s[0] count as zero (rank = the others), x = vh^T diag(1/s)
** u^T b (the minimum-norm solution), products by cuBLAS (gl_cuda_matmul). The residuals
** (|a x - b|^2 per column) only when rank == n < m, else NaN. s comes back to the host
** to count the rank (the ops layer reads the rank back anyway). */
static gl_status P(lstsq)(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1];
  int64_t m = a->shape[0], n = a->shape[1], kr = b->shape[1], mn = m < n ? m : n;
  T *X = sv_data(g->out[0]), *Res = sv_data(g->out[3]);
  const int64_t flat[3] = { 0, 0, 1 };
  sv_status st;
  GL_TRY(sv_status_new(c, 2, true, &st));
  GL_TRY(sv_finite(c, SV_DT, 1, m, n, sv_data(a), 0, st.fin));
  GL_TRY(sv_finite(c, SV_DT, 1, m, kr, sv_data(b), 0, st.fin + 1));
  GL_TRY(sv_first_bad(c, &st, bad));
  if (*bad >= 0) { *bad = 0; return GL_OK; }
  int64_t rank = 0;
  gl_array vb, vx;
  gl_storage sb, sx;
  sv_view(&vb, &sb, c, sv_data(b), SV_DT, 1, m, kr, m * kr, kr, 1);
  sv_view(&vx, &sx, c, X, SV_DT, 1, n, kr, n * kr, kr, 1);
  if (mn == 0 || kr == 0) GL_TRY(sv_fill(c, SV_DT, 1, 1, n * kr, X, flat, 0));
  if (mn > 0) {
    T *u, *sinv, *vh, *cb, *S = sv_data(g->out[2]);
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(m * mn), (void **)&u));
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)mn, (void **)&sinv));
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(mn * n), (void **)&vh));
    GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(mn * (kr > 0 ? kr : 1)), (void **)&cb));
    gl_array vu, vs, vv;
    gl_storage su, ss, svv;
    sv_view(&vu, &su, c, u, SV_DT, 1, m, mn, m * mn, mn, 1);
    sv_view(&vs, &ss, c, S, SV_DT, 1, 1, mn, mn, mn, 1);
    sv_view(&vv, &svv, c, vh, SV_DT, 1, mn, n, mn * n, n, 1);
    gl_la_args sa;
    memset(&sa, 0, sizeof sa);
    sa.in[0] = a;
    sa.out[0] = &vu; sa.out[1] = &vs; sa.out[2] = &vv;
    GL_TRY(P(svd)(c, &sa, bad));
    if (*bad >= 0) { *bad = 0; return GL_OK; }
    T *hs = malloc(2 * SV_ESZ * (size_t)mn);
    if (hs == NULL) return gl_fail(GL_ENOMEM, "lstsq: out of memory");
    gl_status rc = gl_cuda_to_host(hs, c->dev, S, SV_ESZ * (size_t)mn);
    T *hinv = hs + mn, thr = (T)g->rcond * hs[0];
    for (int64_t j = 0; j < mn; j++) {
      bool keep = hs[j] > thr;
      rank += keep;
      hinv[j] = keep ? 1 / hs[j] : 0;
    }
    if (rc == GL_OK) rc = gl_cuda_from_host(c->dev, sinv, hinv, SV_ESZ * (size_t)mn);
    free(hs);
    GL_TRY(rc);
    if (kr > 0) {
      gl_array vut, vc, vsi, vvt;
      gl_storage sut, sc, ssi, svt;
      sv_view(&vut, &sut, c, u, SV_DT, 1, mn, m, m * mn, 1, mn);        /* u^T */
      sv_view(&vc, &sc, c, cb, SV_DT, 1, mn, kr, mn * kr, kr, 1);
      sv_view(&vsi, &ssi, c, sinv, SV_DT, 1, mn, kr, 0, 1, 0);          /* 1/s down the rows */
      sv_view(&vvt, &svt, c, vh, SV_DT, 1, n, mn, mn * n, 1, n);         /* vh^T */
      GL_TRY(gl_cuda_matmul(&vc, &vut, &vb));
      gl_operand oc = { &vc, gl_scalar_int(0) }, os = { &vsi, gl_scalar_int(0) };
      GL_TRY(gl_cuda_binary(GL_B_mul, SV_DT, &vc, oc, os));
      GL_TRY(gl_cuda_matmul(&vx, &vvt, &vc));
    }
  }
  GL_TRY(gl_cuda_from_host(c->dev, sv_data(g->out[1]), &rank, sizeof rank));
  if (kr == 0) return GL_OK;
  if (!(rank == n && m > n)) return sv_fill(c, SV_DT, 1, 1, kr, Res, flat, (double)NAN);
  /* residuals: ones(1, m) @ (a x - b)^2 */
  T *r, *ones;
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)(m * kr), (void **)&r));
  GL_TRY(sv_scratch(c, SV_ESZ * (size_t)m, (void **)&ones));
  gl_array vr, vo, vres;
  gl_storage sr, so, sres;
  sv_view(&vr, &sr, c, r, SV_DT, 1, m, kr, m * kr, kr, 1);
  sv_view(&vo, &so, c, ones, SV_DT, 1, 1, m, m, m, 1);
  sv_view(&vres, &sres, c, Res, SV_DT, 1, 1, kr, kr, kr, 1);
  GL_TRY(sv_fill(c, SV_DT, 1, 1, m, ones, flat, 1));
  gl_operand orr = { &vr, gl_scalar_int(0) }, ob = { &vb, gl_scalar_int(0) };
  if (n > 0) {
    gl_array va;
    gl_storage sa2;
    sv_view(&va, &sa2, c, sv_data(a), SV_DT, 1, m, n, m * n, n, 1);
    GL_TRY(gl_cuda_matmul(&vr, &va, &vx));
    GL_TRY(gl_cuda_binary(GL_B_sub, SV_DT, &vr, orr, ob));
  } else {
    GL_TRY(sv_d2d(c, r, sv_data(b), SV_ESZ * (size_t)(m * kr)));
  }
  GL_TRY(gl_cuda_binary(GL_B_mul, SV_DT, &vr, orr, orr));
  return gl_cuda_matmul(&vres, &vo, &vr);
}

static gl_status P(run)(sv_ctx *c, gl_la_op op, const gl_la_args *g, int64_t *bad) {
  switch (op) {
    case GL_LA_SOLVE: return P(solve)(c, g, bad);
    case GL_LA_INV: return P(inv)(c, g, bad);
    case GL_LA_SLOGDET: return P(slogdet)(c, g, bad);
    case GL_LA_CHOLESKY: return P(cholesky)(c, g, bad);
    case GL_LA_QR: return P(qr)(c, g, bad);
    case GL_LA_SVD: return P(svd)(c, g, bad);
    case GL_LA_EIGH: return P(eigh)(c, g, bad);
    case GL_LA_LSTSQ: return P(lstsq)(c, g, bad);
    default: return gl_fail(GL_ENOTSUP, "linear algebra op %d is not supported on cuda", (int)op);
  }
}

#undef SV_ESZ
