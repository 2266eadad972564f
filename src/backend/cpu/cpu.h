/*
** cpu.h — pieces of the CPU backend shared between its files.
*/
#ifndef GL_CPU_H
#define GL_CPU_H

#include "../backend.h"
#include "../../core/interrupt.h"
#include "../../core/iter.h"


gl_status gl_cpu_alloc(gl_device dev, size_t nbytes, void **out);
void gl_cpu_free(gl_device dev, void *p, size_t nbytes);
void gl_cpu_empty_cache(gl_device dev);
void gl_cpu_memory(gl_device dev, gl_meminfo *m);
/* cpu_energy.c: the host's RAPL energy counter (backend.h's telemetry) */
void gl_cpu_telemetry(int index, gl_telemetry *t);
void gl_cpu_alloc_counts(uint64_t *allocs, uint64_t *hits);

gl_status gl_cpu_copy(const gl_array *dst, const gl_array *src);
/* memmove that polls for a stop every few MiB (and then leaves the rest unmoved). */
void gl_cpu_move_bytes(char *d, const char *s, size_t n);
gl_status gl_cpu_fill(const gl_array *dst, gl_scalar v);
gl_status gl_cpu_arange(const gl_array *dst, double start, double step);

gl_status gl_cpu_unary(gl_unop op, const gl_array *dst, const gl_array *src);
gl_status gl_cpu_binary(gl_binop op, gl_dtype ct, const gl_array *dst, gl_operand a, gl_operand b);
void gl_cpu_unary_flat(gl_unop op, gl_dtype ct, void *dst, const void *src, int64_t n);
void gl_cpu_binary_flat(gl_binop op, gl_dtype ct, void *dst, const void *a, const void *b, int64_t n);
gl_status gl_cpu_where(const gl_array *dst, const gl_array *cond, gl_operand a, gl_operand b);
/* Whether cpu_elem.c's tables have a row kernel for (op, dtype). */
bool gl_cpu_has_unary(gl_unop op, gl_dtype dt);
bool gl_cpu_has_binary(gl_binop op, gl_dtype dt);

/* Reductions (cpu_reduce.c) and scans (cpu_scan.c). */
gl_status gl_cpu_reduce(gl_redop op, const gl_array *dst, const gl_array *src, double param);
gl_status gl_cpu_scan(gl_redop op, const gl_array *dst, const gl_array *src, int axis);
/* Whether gl_cpu_reduce has a kernel for op into a result of dtype dt. */
bool gl_cpu_has_reduce(gl_redop op, gl_dtype dt);

gl_status gl_cpu_gather(const gl_array *dst, const gl_array *src, int axis, const gl_array *idx);
gl_status gl_cpu_scatter(const gl_array *dst, int axis, const gl_array *idx, const gl_array *src,
                         bool accumulate);
gl_status gl_cpu_scatter_add(const gl_array *dst, const gl_array *idx, const gl_array *src);
gl_status gl_cpu_scatter_extreme(const gl_array *dst, const gl_array *seen, const gl_array *idx,
                                 const gl_array *src, bool max);
gl_status gl_cpu_mask_select(const gl_array *dst, const gl_array *src, const gl_array *mask);
gl_status gl_cpu_sort(const gl_array *values, const gl_array *indices, const gl_array *src,
                      int axis, bool descending);
gl_status gl_cpu_partition(const gl_array *values, const gl_array *indices, const gl_array *src,
                           int axis, const int64_t *kth, int nk);
gl_status gl_cpu_searchsorted(const gl_array *dst, const gl_array *a, const gl_array *v, bool right);
gl_status gl_cpu_histogram(const gl_array *counts, const gl_array *x, const gl_array *weights,
                           const gl_array *edges, bool uniform);

/* Random fills from kernels/philox.h (cpu_random.c). */
gl_status gl_cpu_random(gl_rand_dist dist, const gl_array *dst, const gl_rand_req *req);

/* Threads for a parallel region over 'work' elements (cpu_team.c): 1 below 32768, else
** OpenMP's count less the cores other runnable tasks hold; gl_cpu_team_done(nt) after the
** region notes that its workers spin for a while. */
int gl_cpu_team_size(int64_t work);
void gl_cpu_team_done(int nt);
/* OpenMP's thread count at start-up (the most any team gets). */
int gl_cpu_max_threads(void);
/* Caps the teams at n threads from now on. */
void gl_cpu_set_max_threads(int n);


/* Kernels compiled at run time (cpu_jit.c). */
gl_status gl_cpu_jit_run(const gl_jit_launch *l);

/* Fused optimizer steps and softmax cross-entropy (cpu_fused.c). */
gl_status gl_cpu_optim_step(gl_optim_kind kind, const gl_array *p, const gl_array *g,
                            const gl_array *const st[3], const gl_optim_hp *hp);
gl_status gl_cpu_xent(const gl_array *loss, const gl_array *probs, const gl_array *logits,
                      const gl_array *labels, const gl_array *target, double smoothing);
gl_status gl_cpu_xent_bwd(const gl_array *dst, const gl_array *probs, const gl_array *labels,
                          const gl_array *target, double smoothing, const gl_array *gout, double scale);
gl_status gl_cpu_lstm_cell(gl_device dev, bool backward, gl_dtype dt, const gl_lstm_cell *s);
gl_status gl_cpu_gru_cell(gl_device dev, bool backward, gl_dtype dt, const gl_gru_cell *s);
gl_status gl_cpu_rnn_cell(gl_device dev, bool backward, gl_dtype dt, const gl_rnn_cell *s);
gl_status gl_cpu_attention(const gl_array *out, const gl_array *lse, const gl_array *q, const gl_array *k,
                           const gl_array *v, double scale, bool causal);
gl_status gl_cpu_attention_bwd(const gl_array *gq, const gl_array *gk, const gl_array *gv, const gl_array *g,
                               const gl_array *q, const gl_array *k, const gl_array *v, const gl_array *out,
                               const gl_array *lse, double scale, bool causal);
gl_status gl_cpu_layer_norm(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                            const gl_array *w, const gl_array *b, double eps);
gl_status gl_cpu_layer_norm_bwd(const gl_array *gx, const gl_array *gw, const gl_array *gb, const gl_array *g,
                                const gl_array *x, const gl_array *mean, const gl_array *rstd, const gl_array *w);

/* BLAS, loaded lazily (cpu_blas.c). CBLAS enums travel as int: RowMajor 101,
** NoTrans 111, Trans 112. */
enum { GL_CBLAS_ROW_MAJOR = 101, GL_CBLAS_NO_TRANS = 111, GL_CBLAS_TRANS = 112 };
typedef void (*gl_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                            const float *a, int lda, const float *b, int ldb, float beta,
                            float *c, int ldc);
typedef void (*gl_dgemm_fn)(int order, int ta, int tb, int m, int n, int k, double alpha,
                            const double *a, int lda, const double *b, int ldb, double beta,
                            double *c, int ldc);
/* cblas_cgemm / cblas_zgemm: alpha, beta and the matrices hold interleaved complex values. */
typedef void (*gl_cgemm_fn)(int order, int ta, int tb, int m, int n, int k, const void *alpha,
                            const void *a, int lda, const void *b, int ldb, const void *beta,
                            void *c, int ldc);
typedef struct gl_cpu_blas {
  gl_sgemm_fn sgemm;
  gl_dgemm_fn dgemm;
  gl_cgemm_fn cgemm, zgemm;         /* complex64, complex128; NULL where the BLAS lacks them */
  char *(*get_config)(void);        /* OpenBLAS only, else NULL */
  int (*get_num_threads)(void);     /* OpenBLAS only, else NULL */
  void (*set_num_threads)(int);     /* OpenBLAS only, else NULL */
  const char *lib;                  /* the name that loaded */
  void *handle;                     /* its dlopen handle (LAPACK's symbols: cpu_lapack.c) */
} gl_cpu_blas;
/* The loaded BLAS (loads it on the first call); GL_ENOTSUP naming the libraries tried. */
gl_status gl_cpu_blas_get(const gl_cpu_blas **out);
/* Sets OpenBLAS's thread count for the next gemm (a call only when it changes). */
void gl_cpu_blas_threads(const gl_cpu_blas *bl, int nt);
gl_status gl_cpu_matmul(const gl_array *dst, const gl_array *a, const gl_array *b);
/* Whether gl_cpu_matmul has a path for operands of dtype dt (BLAS or a row kernel). */
bool gl_cpu_has_matmul(gl_dtype dt);
/* Dense linear algebra over LAPACK (cpu_lapack.c): gl_backend.linalg. */
gl_status gl_cpu_linalg(gl_la_op op, const gl_la_args *args, int64_t *bad);
/* Whether gl_cpu_linalg has gl_la_op 'which' in dtype dt (GL_LA_DTYPES). */
bool gl_cpu_has_linalg(int which, gl_dtype dt);
/* Fourier transforms over FFTW (cpu_fft.c): gl_backend.fft; whether it has (kind, complex
** dtype); FFTW's version for gpu.config() (empty until a transform has loaded it). */
gl_status gl_cpu_fft(const gl_array *out, const gl_array *in, const gl_fft_args *args);
bool gl_cpu_has_fft(int kind, gl_dtype dt);
void gl_cpu_fftw_version(char *buf, size_t n);
/* im2col / col2im for convolutions (cpu_conv.c). */
gl_status gl_cpu_im2col(const gl_array *dst, const gl_array *src, const int *k, const int *stride,
                        const int *pad, const int *dil, double padval);
gl_status gl_cpu_col2im(const gl_array *dst, const gl_array *cols, const int *k, const int *stride,
                        const int *pad, const int *dil);
/* oneDNN's convolution, pooling and batch norm (cpu_dnnl.c): gl_backend.dnn; its version
** ("2.6.3", empty when it does not load) for gpu.config(). */
extern const gl_dnn gl_cpu_dnn;
void gl_cpu_dnnl_version(char *buf, size_t n);

#endif
