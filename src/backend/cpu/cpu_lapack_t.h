/*
** cpu_lapack_t.h — the LAPACK drivers of cpu_lapack.c for one element type, included
** twice: T float, P(x) s_##x, LA_PREFIX "s"; then T double, P(x) d_##x, LA_PREFIX "d".
** No include guard on purpose.
**
** Row-major and LAPACK's column-major: a C-order m x n matrix read column-major with
** leading dimension n is its transpose (n x m). Where the transpose does no harm (the
** determinant, the inverse, Cholesky and SVD, see each) the C buffer goes to LAPACK as is;
** QR, eigenvectors, solve's right-hand sides and lstsq copy through a transposed scratch.
*/

/* LAPACK's Fortran entry points (32-bit integers; the hidden lengths of character
** arguments, size_t each, passed as gfortran expects them). */
typedef struct P(lapack) {
  void (*getrf)(const la_int *m, const la_int *n, T *a, const la_int *lda, la_int *ipiv, la_int *info);
  void (*getrs)(const char *tr, const la_int *n, const la_int *nrhs, const T *a, const la_int *lda,
                const la_int *ipiv, T *b, const la_int *ldb, la_int *info, size_t);
  void (*getri)(const la_int *n, T *a, const la_int *lda, const la_int *ipiv, T *work, const la_int *lwork,
                la_int *info);
  void (*potrf)(const char *uplo, const la_int *n, T *a, const la_int *lda, la_int *info, size_t);
  void (*geqrf)(const la_int *m, const la_int *n, T *a, const la_int *lda, T *tau, T *work,
                const la_int *lwork, la_int *info);
  void (*orgqr)(const la_int *m, const la_int *n, const la_int *k, T *a, const la_int *lda, const T *tau,
                T *work, const la_int *lwork, la_int *info);
  void (*gesdd)(const char *jobz, const la_int *m, const la_int *n, T *a, const la_int *lda, T *s, T *u,
                const la_int *ldu, T *vt, const la_int *ldvt, T *work, const la_int *lwork, la_int *iwork,
                la_int *info, size_t);
  void (*syevd)(const char *jobz, const char *uplo, const la_int *n, T *a, const la_int *lda, T *w, T *work,
                const la_int *lwork, la_int *iwork, const la_int *liwork, la_int *info, size_t, size_t);
  void (*gelsd)(const la_int *m, const la_int *n, const la_int *nrhs, T *a, const la_int *lda, T *b,
                const la_int *ldb, T *s, const T *rcond, la_int *rank, T *work, const la_int *lwork,
                la_int *iwork, la_int *info);
} P(lapack);

static P(lapack) P(lib);

/* Resolves every entry from the BLAS handle; false when one is missing. */
static bool P(resolve)(void *h) {
#define LA_SYM(f) (*(void **)&P(lib).f = dlsym(h, LA_PREFIX #f "_")) != NULL
  return LA_SYM(getrf) && LA_SYM(getrs) && LA_SYM(getri) && LA_SYM(potrf) && LA_SYM(geqrf) &&
         LA_SYM(orgqr) && LA_SYM(gesdd) && LA_SYM(syevd) && LA_SYM(gelsd);
#undef LA_SYM
}

/* dst[0..n) = src[0..n); nothing for n = 0 (either may be NULL then: empty matrices). */
static void P(copy)(T *dst, const T *src, int64_t n) {
  if (n > 0) memcpy(dst, src, sizeof(T) * (size_t)n);
}

/* dst (c x r, C order) = the transpose of src (r x c, C order): between C order and
** column-major. */
static void P(transpose)(T *dst, const T *src, int64_t r, int64_t c) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) dst[j * r + i] = src[i * c + j];
}

/* Whether the r x c matrix at x is all finite: the iterative drivers (gesdd, syevd,
** gelsd) can loop for ever on an infinity, so a matrix that is not fails as "did not
** converge" before LAPACK sees it (NumPy's LinAlgError for those). */
static bool P(finite)(const T *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) if (!isfinite(x[i])) return false;
  return true;
}

/* The same for the triangle of an n x n matrix (C order) that syevd reads. */
static bool P(finite_tri)(const T *x, int64_t n, bool lower) {
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = lower ? 0 : r; c < (lower ? r + 1 : n); c++)
      if (!isfinite(x[r * n + c])) return false;
  return true;
}

/* Whether that triangle holds a NaN. */
static bool P(nan_tri)(const T *x, int64_t n, bool lower) {
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = lower ? 0 : r; c < (lower ? r + 1 : n); c++)
      if (isnan(x[r * n + c])) return true;
  return false;
}

/* The workspace size a LAPACK query (lwork = -1) reported. */
static la_int P(lwork_of)(T w) { return w < 1 ? 1 : (la_int)w + 1; }

/* ---- SOLVE: getrf of a as is (LAPACK factors a^T), getrs with 'T' solves (a^T)^T x = b;
** b goes in and x comes out through a column-major scratch ---------------------------- */
static la_int P(solve1)(const T *a, const T *b, T *x, la_int n, la_int k, T *lu, T *rhs, la_int *ipiv) {
  la_int info = 0, ld = n > 0 ? n : 1;
  P(copy)(lu, a, (int64_t)n * n);
  P(lib).getrf(&n, &n, lu, &ld, ipiv, &info);
  if (info != 0) return info;
  P(transpose)(rhs, b, n, k);
  P(lib).getrs("T", &n, &k, lu, &ld, ipiv, rhs, &ld, &info, 1);
  P(transpose)(x, rhs, k, n);
  return info;
}

/* Small systems (n <= LA_SMALL) skip LAPACK, whose call and transposes cost more than
** the arithmetic: getf2's algorithm (partial pivoting on the first largest |pivot|, a zero
** pivot making the matrix singular) on the C-order copy, then the two triangular solves. */
#define LA_SMALL 8
static la_int P(solve_small)(const T *a, const T *b, T *x, int n, int k, T *lu) {
  P(copy)(lu, a, (int64_t)n * n);
  P(copy)(x, b, (int64_t)n * k);
  for (int j = 0; j < n; j++) {
    int p = j;
    for (int r = j + 1; r < n; r++) if (fabs((double)lu[r * n + j]) > fabs((double)lu[p * n + j])) p = r;
    if (lu[p * n + j] == 0) return j + 1;
    if (p != j) {
      for (int c = 0; c < n; c++) { T t = lu[j * n + c]; lu[j * n + c] = lu[p * n + c]; lu[p * n + c] = t; }
      for (int c = 0; c < k; c++) { T t = x[j * k + c]; x[j * k + c] = x[p * k + c]; x[p * k + c] = t; }
    }
    T inv = 1 / lu[j * n + j];
    for (int r = j + 1; r < n; r++) {
      T l = lu[r * n + j] *= inv;
      for (int c = j + 1; c < n; c++) lu[r * n + c] -= l * lu[j * n + c];
      for (int c = 0; c < k; c++) x[r * k + c] -= l * x[j * k + c];
    }
  }
  for (int r = n - 1; r >= 0; r--)
    for (int c = 0; c < k; c++) {
      T v = x[r * k + c];
      for (int q = r + 1; q < n; q++) v -= lu[r * n + q] * x[q * k + c];
      x[r * k + c] = v / lu[r * n + r];
    }
  return 0;
}

static gl_status P(solve)(const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1], *x = g->out[0];
  la_int n = (la_int)a->shape[a->ndim - 1], k = (la_int)b->shape[b->ndim - 1];
  int64_t B = batch_of(a);
  const T *A = (const T *)gl_array_data(a), *Bv = (const T *)gl_array_data(b);
  T *X = (T *)gl_array_data(x);
  int64_t an = (int64_t)n * n, bn = (int64_t)n * k;
  size_t scratch = sizeof(T) * (size_t)(an + bn) + sizeof(la_int) * (size_t)n;
  LA_BATCH(B, (double)n * n * n, scratch, {
    T *lu = (T *)ws, *rhs = lu + an;
    la_int *ipiv = (la_int *)(rhs + bn);
    la_int info = n <= LA_SMALL ? P(solve_small)(A + i * an, Bv + i * bn, X + i * bn, n, k, lu)
                                : P(solve1)(A + i * an, Bv + i * bn, X + i * bn, n, k, lu, rhs, ipiv);
    if (info != 0) LA_BAD(i);
  });
  return GL_OK;
}

/* ---- INV: getrf + getri in the output itself: LAPACK inverts a^T in place, which read
** in C order is (a^T)^-1 ^T = a^-1 ----------------------------------------------------- */
static gl_status P(inv)(const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *x = g->out[0];
  la_int n = (la_int)a->shape[a->ndim - 1], ld = n > 0 ? n : 1, info = 0, q = -1;
  int64_t B = batch_of(a), an = (int64_t)n * n;
  const T *A = (const T *)gl_array_data(a);
  T *X = (T *)gl_array_data(x), wq = 0;
  la_int ipq = 0;
  P(lib).getri(&n, X, &ld, &ipq, &wq, &q, &info);
  la_int lwork = P(lwork_of)(wq);
  size_t scratch = sizeof(T) * (size_t)lwork + sizeof(la_int) * (size_t)n;
  LA_BATCH(B, (double)n * n * n, scratch, {
    T *work = (T *)ws, *xi = X + i * an;
    la_int *ipiv = (la_int *)(work + lwork), inf = 0;
    P(copy)(xi, A + i * an, an);
    P(lib).getrf(&n, &n, xi, &ld, ipiv, &inf);
    if (inf == 0) P(lib).getri(&n, xi, &ld, ipiv, work, &lwork, &inf);
    if (inf != 0) LA_BAD(i);
  });
  return GL_OK;
}

/* ---- SLOGDET: det(a^T) = det(a), so getrf of a as is; the sign from U's diagonal and
** the row swaps, the log from |U's diagonal| (NumPy's way) ---------------------------- */
static gl_status P(slogdet)(const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  la_int n = (la_int)a->shape[a->ndim - 1], ld = n > 0 ? n : 1;
  int64_t B = batch_of(a), an = (int64_t)n * n;
  const T *A = (const T *)gl_array_data(a);
  T *S = (T *)gl_array_data(g->out[0]), *Lg = (T *)gl_array_data(g->out[1]);
  size_t scratch = sizeof(T) * (size_t)an + sizeof(la_int) * (size_t)n;
  LA_BATCH(B, (double)n * n * n, scratch, {
    T *lu = (T *)ws;
    la_int *ipiv = (la_int *)(lu + an), inf = 0;
    P(copy)(lu, A + i * an, an);
    if (n > 0) P(lib).getrf(&n, &n, lu, &ld, ipiv, &inf);
    T sign = 1, logabs = 0;
    if (inf > 0) { sign = 0; logabs = -(T)INFINITY; }
    else {
      for (la_int j = 0; j < n; j++) {
        T d = lu[(int64_t)j * n + j];
        if (ipiv[j] != j + 1) sign = -sign;
        if (d < 0) sign = -sign;
        logabs += (T)log(fabs((double)d));
      }
    }
    S[i] = sign;
    Lg[i] = logabs;
  });
  return GL_OK;   /* a singular matrix is an answer here (sign 0), not a failure */
}

/* ---- CHOLESKY: a in C order is a^T column-major, so its lower triangle is LAPACK's
** upper: potrf('U') gives U with a^T = U^T U, which read in C order is L = U^T in the lower
** triangle (and potrf('L') gives the upper factor the same way); the other triangle still
** holds the input and is zeroed. A NaN in the triangle read gives a factor of NaN (in its
** triangle), whatever potrf's blocking or scaling would make of it, so every dtype and
** device agree --------------------------------------------------------------------------- */
static gl_status P(cholesky)(const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  la_int n = (la_int)a->shape[a->ndim - 1], ld = n > 0 ? n : 1;
  int64_t B = batch_of(a), an = (int64_t)n * n;
  const T *A = (const T *)gl_array_data(a);
  T *Lm = (T *)gl_array_data(g->out[0]);
  bool upper = (g->flags & GL_LA_UPPER) != 0;
  LA_BATCH(B, (double)n * n * n / 3, 0, {
    (void)ws;
    T *li = Lm + i * an;
    la_int inf = 0;
    bool nan = P(nan_tri)(A + i * an, n, !upper);
    P(copy)(li, A + i * an, an);
    if (!nan) P(lib).potrf(upper ? "L" : "U", &n, li, &ld, &inf, 1);
    if (inf != 0) LA_BAD(i);
    for (int64_t r = 0; r < n; r++)
      for (int64_t c = 0; c < n; c++)
        if (upper ? r > c : r < c) li[r * n + c] = 0;
        else if (nan) li[r * n + c] = (T)NAN;
  });
  return GL_OK;
}

/* ---- QR: geqrf on a column-major copy; R from its upper triangle, Q from orgqr over
** kq columns (columns past the reflectors start as the identity's, so "complete" works) */
static gl_status P(qr)(const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *q = g->out[0], *r = g->out[1];
  la_int m = (la_int)a->shape[a->ndim - 2], n = (la_int)a->shape[a->ndim - 1];
  la_int k = m < n ? m : n, kq = (la_int)r->shape[r->ndim - 2], ld = m > 0 ? m : 1, info = 0, mq = -1;
  la_int cols = n > kq ? n : kq;
  int64_t B = batch_of(a);
  const T *A = (const T *)gl_array_data(a);
  T *Q = q ? (T *)gl_array_data(q) : NULL, *R = (T *)gl_array_data(r), w1 = 0, w2 = 0;
  T dummy[1] = { 0 };
  P(lib).geqrf(&m, &n, dummy, &ld, dummy, &w1, &mq, &info);
  if (Q) P(lib).orgqr(&m, &kq, &k, dummy, &ld, dummy, &w2, &mq, &info);
  la_int lwork = P(lwork_of)(w1 > w2 ? w1 : w2);
  int64_t mc = (int64_t)m * cols;
  size_t scratch = sizeof(T) * (size_t)(mc + k + lwork);
  LA_BATCH(B, 2.0 * m * n * k, scratch, {
    T *cm = (T *)ws, *tau = cm + mc, *work = tau + k;
    la_int inf = 0;
    P(transpose)(cm, A + i * (int64_t)m * n, m, n);
    if (m > 0 && n > 0) P(lib).geqrf(&m, &n, cm, &ld, tau, work, &lwork, &inf);
    T *ri = R + i * (int64_t)kq * n;
    for (int64_t row = 0; row < kq; row++)
      for (int64_t c = 0; c < n; c++) ri[row * n + c] = row <= c && row < m ? cm[c * m + row] : 0;
    if (Q) {
      T *qi = Q + i * (int64_t)m * kq;
      if (m > 0 && kq > 0) P(lib).orgqr(&m, &kq, &k, cm, &ld, tau, work, &lwork, &inf);
      for (int64_t row = 0; row < m; row++)
        for (int64_t c = 0; c < kq; c++) qi[row * kq + c] = cm[c * m + row];
    }
    if (inf != 0) LA_BAD(i);
  });
  return GL_OK;
}

/* ---- SVD: gesdd on a as is, i.e. on a^T = V S U^T: LAPACK's U (column-major n x kv) is V,
** which read in C order is vh (kv, n), and its VT (ku x m) read in C order is u (m, ku),
** so LAPACK writes both outputs in place, untransposed ------------------------------ */
static gl_status P(svd)(const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *u = g->out[0], *s = g->out[1], *vh = g->out[2];
  la_int m = (la_int)a->shape[a->ndim - 2], n = (la_int)a->shape[a->ndim - 1], k = m < n ? m : n;
  la_int ku = u ? (la_int)u->shape[u->ndim - 1] : 1, kv = vh ? (la_int)vh->shape[vh->ndim - 2] : 1;
  const char *jobz = u == NULL ? "N" : (g->flags & GL_LA_FULL) ? "A" : "S";
  la_int ldn = n > 0 ? n : 1, ldu = ku > 0 ? ku : 1, ldv = n > 0 ? n : 1, info = 0, mq = -1;
  int64_t B = batch_of(a), an = (int64_t)m * n;
  const T *A = (const T *)gl_array_data(a);
  T *U = u ? (T *)gl_array_data(u) : NULL, *Sv = (T *)gl_array_data(s), *V = vh ? (T *)gl_array_data(vh) : NULL;
  T wq = 0, dummy[1] = { 0 };
  la_int iw[1];
  if (k > 0) P(lib).gesdd(jobz, &n, &m, dummy, &ldn, dummy, dummy, &ldv, dummy, &ldu, &wq, &mq, iw, &info, 1);
  la_int lwork = P(lwork_of)(wq);
  size_t scratch = sizeof(T) * (size_t)(an + lwork) + sizeof(la_int) * (size_t)(8 * (int64_t)k + 1);
  LA_BATCH(B, 4.0 * m * n * k, scratch, {
    T *cm = (T *)ws, *work = cm + an;
    la_int *iwork = (la_int *)(work + lwork), inf = 0;
    T *ui = U ? U + i * (int64_t)m * ku : dummy, *vi = V ? V + i * (int64_t)kv * n : dummy;
    if (k == 0) {          /* nothing to factor: the full factors are identities */
      if (U) { for (int64_t e = 0; e < (int64_t)m * ku; e++) ui[e] = 0; for (int64_t d = 0; d < m && d < ku; d++) ui[d * ku + d] = 1; }
      if (V) { for (int64_t e = 0; e < (int64_t)kv * n; e++) vi[e] = 0; for (int64_t d = 0; d < n && d < kv; d++) vi[d * n + d] = 1; }
    } else if (!P(finite)(A + i * an, an)) {
      LA_BAD(i);
    } else {
      P(copy)(cm, A + i * an, an);
      P(lib).gesdd(jobz, &n, &m, cm, &ldn, Sv + i * k, vi, &ldv, ui, &ldu, work, &lwork, iwork, &inf, 1);
      if (inf != 0) LA_BAD(i);
    }
  });
  return GL_OK;
}

/* ---- EIGH: a as is is a^T, so the lower triangle of a is LAPACK's upper: syevd('U');
** the eigenvectors come back as columns of a column-major matrix and are transposed to
** C order in place ---------------------------------------------------------------------- */
static gl_status P(eigh)(const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *w = g->out[0], *v = g->out[1];
  la_int n = (la_int)a->shape[a->ndim - 1], ld = n > 0 ? n : 1, info = 0, mq = -1, iq = 0;
  const char *jobz = v ? "V" : "N", *uplo = (g->flags & GL_LA_UPPER) ? "L" : "U";
  int64_t B = batch_of(a), an = (int64_t)n * n;
  const T *A = (const T *)gl_array_data(a);
  T *W = (T *)gl_array_data(w), *Vv = v ? (T *)gl_array_data(v) : NULL, wq = 0, dummy[1] = { 0 };
  if (n > 0) P(lib).syevd(jobz, uplo, &n, dummy, &ld, dummy, &wq, &mq, &iq, &mq, &info, 1, 1);
  la_int lwork = P(lwork_of)(wq), liwork = iq > 1 ? iq : 1;
  size_t scratch = sizeof(T) * (size_t)(an + lwork) + sizeof(la_int) * (size_t)liwork;
  LA_BATCH(B, 9.0 * n * n * n, scratch, {
    T *cm = Vv ? Vv + i * an : (T *)ws, *work = (T *)ws + an;
    la_int *iwork = (la_int *)(work + lwork), inf = 0;
    P(copy)(cm, A + i * an, an);
    if (!P(finite_tri)(cm, n, !(g->flags & GL_LA_UPPER))) { LA_BAD(i); continue; }
    if (n > 0) P(lib).syevd(jobz, uplo, &n, cm, &ld, W + i * n, work, &lwork, iwork, &liwork, &inf, 1, 1);
    if (inf != 0) LA_BAD(i);
    if (Vv)
      for (int64_t r = 0; r < n; r++)
        for (int64_t c = r + 1; c < n; c++) { T t = cm[r * n + c]; cm[r * n + c] = cm[c * n + r]; cm[c * n + r] = t; }
  });
  return GL_OK;
}

/* ---- LSTSQ: gelsd on column-major copies of a and b (b padded to max(m, n) rows) ------- */
static gl_status P(lstsq)(const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1];
  la_int m = (la_int)a->shape[0], n = (la_int)a->shape[1], k = (la_int)b->shape[1], mn = m < n ? m : n;
  la_int lda = m > 0 ? m : 1, ldb = m > n ? m : n, rank = 0, info = 0, mq = -1, iq = 0;
  if (ldb < 1) ldb = 1;
  T rcond = (T)g->rcond, wq = 0;
  T *ca = malloc(sizeof(T) * ((size_t)lda * (size_t)(n > 0 ? n : 1) + (size_t)ldb * (size_t)(k > 0 ? k : 1) + (size_t)mn + 1));
  if (ca == NULL) return gl_fail(GL_ENOMEM, "lstsq: out of memory for LAPACK's workspace");
  T *cb = ca + (size_t)lda * (size_t)(n > 0 ? n : 1), *sv = cb + (size_t)ldb * (size_t)(k > 0 ? k : 1);
  const T *A = (const T *)gl_array_data(a), *Bv = (const T *)gl_array_data(b);
  if (!P(finite)(A, (int64_t)m * n) || !P(finite)(Bv, (int64_t)m * k)) {
    free(ca);
    *bad = 0;
    return GL_OK;
  }
  P(transpose)(ca, A, m, n);
  for (int64_t c = 0; c < k; c++)
    for (int64_t r = 0; r < ldb; r++) cb[c * ldb + r] = r < m ? Bv[r * k + c] : 0;
  P(lib).gelsd(&m, &n, &k, ca, &lda, cb, &ldb, sv, &rcond, &rank, &wq, &mq, &iq, &info);
  la_int lwork = P(lwork_of)(wq), liwork = iq > 1 ? iq : 1;
  T *work = malloc(sizeof(T) * (size_t)lwork + sizeof(la_int) * (size_t)liwork);
  if (work == NULL) { free(ca); return gl_fail(GL_ENOMEM, "lstsq: out of memory for LAPACK's workspace"); }
  info = 0;
  if (mn > 0) P(lib).gelsd(&m, &n, &k, ca, &lda, cb, &ldb, sv, &rcond, &rank, work, &lwork,
                           (la_int *)(work + lwork), &info);
  *bad = info != 0 ? 0 : -1;
  T *X = (T *)gl_array_data(g->out[0]), *S = (T *)gl_array_data(g->out[2]), *Res = (T *)gl_array_data(g->out[3]);
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < k; c++) X[r * k + c] = cb[c * ldb + r];
  for (int64_t j = 0; j < mn; j++) S[j] = sv[j];
  for (int64_t c = 0; c < k; c++) {
    T acc = 0;
    for (int64_t r = n; r < m; r++) acc += cb[c * ldb + r] * cb[c * ldb + r];
    Res[c] = rank == n && m > n ? acc : (T)NAN;
  }
  *(int64_t *)gl_array_data(g->out[1]) = rank;
  free(work);
  free(ca);
  return GL_OK;
}

static gl_status P(run)(gl_la_op op, const gl_la_args *g, int64_t *bad) {
  switch (op) {
    case GL_LA_SOLVE: return P(solve)(g, bad);
    case GL_LA_INV: return P(inv)(g, bad);
    case GL_LA_SLOGDET: return P(slogdet)(g, bad);
    case GL_LA_CHOLESKY: return P(cholesky)(g, bad);
    case GL_LA_QR: return P(qr)(g, bad);
    case GL_LA_SVD: return P(svd)(g, bad);
    case GL_LA_EIGH: return P(eigh)(g, bad);
    case GL_LA_LSTSQ: return P(lstsq)(g, bad);
    default: return gl_fail(GL_ENOTSUP, "linear algebra op %d is not supported on cpu", (int)op);
  }
}
