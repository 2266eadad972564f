/*
** backend.h — what a device must provide. One table of function pointers per device
** type (ggml's ggml-backend-impl.h is the model). The ops layer validates arguments,
** computes output shapes and dtypes, allocates, and then calls these; a backend may
** assume its inputs are valid and live on its device.
**
** Entries marked (optional) may be NULL; the ops layer then reports "not supported on
** <device>" before anything runs. supports() answers per (op, dtype) the same way, from the
** backend's own tables of kernels, and the ops layer asks it before allocating anything.
*/
#ifndef GL_BACKEND_H
#define GL_BACKEND_H

#include "../core/array.h"
#include "../../kernels/elem_ops.h"
#include "../../kernels/optim.h"
#include "../../kernels/jit_abi.h"
#include "../../kernels/rnn.h"

/* Op families, for supports(); 'which' there names the op within the family. */
typedef enum gl_op {
  GL_OP_FILL,
  GL_OP_COPY,       /* strided copy with dtype conversion */
  GL_OP_ARANGE,
  GL_OP_UNARY,      /* which: a gl_unop; dt: the source's (compute) dtype */
  GL_OP_BINARY,     /* which: a gl_binop; dt: the compute dtype */
  GL_OP_REDUCE,     /* which: a gl_redop (scans: SUM, PROD); dt: the result dtype */
  GL_OP_MATMUL,
  GL_OP_INDEX,      /* gather, scatter (and its adds), mask selection */
  GL_OP_SORT,
  GL_OP_RANDOM,     /* which: a gl_rand_dist; dt: the filled array's */
  GL_OP_CONV,       /* im2col, col2im */
  GL_OP_FUSED,      /* optimizer steps, softmax cross-entropy */
  GL_OP_LINALG,     /* which: a gl_la_op; dt: the compute dtype (GL_LA_DTYPES) */
  GL_OP_SELECT,     /* partition (kth order statistics) */
  GL_OP_HISTOGRAM,  /* bin counts; dt: the binned array's */
  GL_OP_FFT,        /* which: a gl_fft_kind; dt: the complex dtype (complex64 or complex128) */
  GL_NOP
} gl_op;

/* Elementwise ops, generated from kernels/elem_ops.h: GL_U_exp, GL_B_add, ... */
typedef enum gl_unop {
#define GL_X(name, ...) GL_U_##name,
  GL_UNARY_OPS(GL_X)
#undef GL_X
  GL_NUNOP
} gl_unop;

typedef enum gl_binop {
#define GL_X(name, ...) GL_B_##name,
  GL_BINARY_OPS(GL_X)
#undef GL_X
  GL_NBINOP
} gl_binop;

/* Op kinds (see kernels/elem_ops.h), names and tables indexed by op. */
typedef enum gl_opkind {
#define GL_X(kind) GL_K_##kind,
  GL_OP_KINDS(GL_X)
#undef GL_X
  GL_NOPKIND
} gl_opkind;
extern const uint8_t gl_unop_kind[GL_NUNOP];
extern const uint8_t gl_binop_kind[GL_NBINOP];
extern const char *const gl_unop_name[GL_NUNOP];
extern const char *const gl_binop_name[GL_NBINOP];
/* The dtypes (a kernels/dtypes.h set) each op has kernels for, the same on every device
** (elem_ops.h's GL_OP_DTYPES: its kind's and, by its complex column, complex), and what
** the op returns for a complex operand (gl_cxout: GL_CXOUT_NONE where it takes none). */
extern const uint32_t gl_unop_dtypes[GL_NUNOP];
extern const uint32_t gl_binop_dtypes[GL_NBINOP];
extern const uint8_t gl_unop_cxout[GL_NUNOP];
extern const uint8_t gl_binop_cxout[GL_NBINOP];

/* The most elements a flat elementwise call (gl_backend's unary_flat, binary_flat) takes:
** one row on one thread, where the walk over shapes costs more than the elements. */
#define GL_FLAT_MAX 4096

/* An elementwise operand: an array (a view already broadcast to the output's shape),
** or, when arr is NULL, a scalar the backend converts to the compute dtype. */
typedef struct gl_operand {
  const gl_array *arr;
  gl_scalar s;
} gl_operand;

/* Reductions. dst keeps src's ndim with extent 1 on the reduced axes. */
typedef enum gl_redop {
  GL_R_SUM, GL_R_PROD, GL_R_MAX, GL_R_MIN, GL_R_ARGMAX, GL_R_ARGMIN, GL_R_ALL, GL_R_ANY,
  GL_R_MEAN, GL_R_VAR, GL_R_NORM, GL_R_LOGSUMEXP,
  GL_NREDOP
} gl_redop;
extern const char *const gl_redop_name[GL_NREDOP];

/* Random fills (GL_OP_RANDOM). The stream and the element-to-counter mapping of each
** distribution are documented in kernels/philox.h; both devices follow it exactly. */
typedef enum gl_rand_dist {
  GL_RAND_UNIFORM,       /* float dst: a + (b - a) u, u in [0, 1) */
  GL_RAND_NORMAL,        /* float dst: a + b z, z standard normal (Box-Muller) */
  GL_RAND_INTEGERS,      /* int32/int64 dst: lo + [0, range), range 0 meaning 2^64 */
  GL_RAND_BERNOULLI,     /* any dst: 1 with probability a (or p[i]), else 0 */
  GL_RAND_PERMUTATION,   /* int64 1-D dst of k <= range: the first k of a Fisher-Yates
                         ** shuffle of lo .. lo + range - 1 */
  GL_RAND_SAMPLER,       /* float64 or int64 dst: sampler 'kind' of kernels/random_dist.h
                         ** with parameters a, b, c (or pa[k][i]) */
  GL_NRAND
} gl_rand_dist;
/* "uniform", "normal", "randint", "bernoulli", "permutation", "sampler". */
extern const char *const gl_rand_dist_name[GL_NRAND];

typedef struct gl_rand_req {
  uint64_t seed;         /* Philox key */
  uint64_t offset;       /* first 128-bit counter block of this call */
  double a, b;           /* uniform: lo, hi; normal: mean, std; bernoulli: p */
  int64_t lo;            /* integers, permutation: the smallest value */
  uint64_t range;        /* integers: how many values (0: 2^64); permutation: n */
  const gl_array *p;     /* bernoulli: per-element p (float64, contiguous, dst's size) or NULL */
  int kind;              /* sampler: which (GL_RD_* of kernels/random_dist.h) */
  double c;              /* sampler: the third parameter (a, b: the first two) */
  const gl_array *pa[3]; /* sampler: per-element parameters (float64, contiguous, dst's size) or NULL */
} gl_rand_req;

/* Dense linear algebra (GL_OP_LINALG, gl_backend.linalg): LAPACK's drivers over a batch.
** Every array is C-contiguous on the backend's device; the matrices are the last two axes
** and the leading axes (any number, any product, 0 included) are the batch, the same for
** every operand. Matrix operands and outputs are of one dtype dt of GL_LA_DTYPES (float32,
** float64, complex64, complex128), except the outputs marked real (dt's part type: float32
** for complex64) or complex (dt's complex type); the inputs are only read (the backend
** factors copies). Per op (a: in[0], b: in[1]; outputs out[0..3], NULL where not wanted):
**   SOLVE     a (..., n, n), b (..., n, k) -> out[0] x (..., n, k) = a^-1 b
**   INV       a (..., n, n) -> out[0] (..., n, n)
**   SLOGDET   a (..., n, n) -> out[0] sign (...) (complex a: d / |d|), out[1] log|det| (...)
**             real; never fails (a singular matrix gives sign 0 and -inf)
**   CHOLESKY  a (..., n, n) Hermitian, lower triangle read (GL_LA_UPPER: upper) -> out[0] L
**             with a = L L^H (GL_LA_UPPER: U with a = U^H U), the other triangle zero
**   QR        a (..., m, n) -> out[0] q (..., m, kq) or NULL, out[1] r (..., kq, n); kq is
**             min(m, n) (reduced) or m (complete), told by the shapes
**   SVD       a (..., m, n) -> out[0] u (..., m, ku), out[1] s (..., min(m, n)) real,
**             descending, out[2] vh (..., kv, n) (a = u diag(s) vh); u and vh both NULL
**             (values only) or both given, ku = kv = min(m, n) or (GL_LA_FULL) ku = m, kv = n
**   EIGH      a (..., n, n) Hermitian, lower triangle read (GL_LA_UPPER: upper) -> out[0] w
**             (..., n) real, ascending, out[1] v (..., n, n) (columns the eigenvectors) or NULL
**   LSTSQ     a (m, n), b (m, k) (no batch) -> out[0] x (n, k) minimising |a x - b|, out[1]
**             rank (0-d int64), out[2] s (min(m, n)) real, out[3] residuals (k) real:
**             squared norms of the residual columns, NaN unless rank == n < m; singular
**             values below rcond times the largest count as zero (rcond < 0: machine precision)
**   EIG       a (..., n, n) any (real or complex) -> out[0] w (..., n) complex, out[1] v
**             (..., n, n) complex or NULL: a v = v diag(w), the columns of v of unit 2-norm
**             with their largest component real (LAPACK's geev: a real a's complex
**             eigenvalues come in conjugate pairs, positive imaginary part first)
**   LU        a (..., m, n) -> out[0] (..., m, n) the factors of a = P L U packed as LAPACK's
**             getrf packs them (U on and above the diagonal, L's multipliers below it, L's
**             unit diagonal implied), out[1] pivots (..., min(m, n)) int32, 1-based: row i
**             was swapped with row pivots[i]; never fails (a zero pivot is left in U)
**   LU_SOLVE  a (..., n, n) packed as LU's out[0], in[2] pivots (..., n) int32 as LU's
**             (each within 1..n), b: in[1] (..., n, k) -> out[0] x (..., n, k) with
**             P L U x = b (GL_LA_ADJOINT: (P L U)^H x = b), LAPACK's getrs; never fails
** *bad is set to the 0-based batch index of the first matrix whose factorization failed
** (singular for SOLVE/INV, not positive definite for CHOLESKY, no convergence for SVD,
** EIGH, LSTSQ, EIG), or -1 when none did; outputs are then unspecified. */
typedef enum gl_la_op {
  GL_LA_SOLVE, GL_LA_INV, GL_LA_SLOGDET, GL_LA_CHOLESKY, GL_LA_QR, GL_LA_SVD, GL_LA_EIGH, GL_LA_LSTSQ, GL_LA_EIG,
  GL_LA_LU, GL_LA_LU_SOLVE, GL_NLA
} gl_la_op;
/* The dtypes the linalg entry computes in (the ops layer promotes the others to them). */
#define GL_LA_DTYPES (GL_DTSET_WIDE_FLOAT | GL_DTSET_COMPLEX)
enum { GL_LA_UPPER = 1, GL_LA_FULL = 2, GL_LA_ADJOINT = 4 };
typedef struct gl_la_args {
  const gl_array *in[3];
  const gl_array *out[4];
  unsigned flags;        /* GL_LA_UPPER, GL_LA_FULL, GL_LA_ADJOINT */
  double rcond;          /* LSTSQ */
} gl_la_args;

/* Discrete Fourier transforms (GL_OP_FFT, gl_backend.fft): FFTW on the cpu, cuFFT on cuda.
** One call transforms 'rank' axes of 'in' (axes[], 0-based, distinct, in any order, each of
** extent >= 1) for every position of the other axes (the batch, any extents, none 0), and
** multiplies the result by 'scale'. Unnormalised, with n_a the logical extent of axis a:
**   C2C  in, out of one complex dtype and shape:
**        out[k] = scale * sum_j in[j] exp(sign * 2 pi i * sum_a j_a k_a / n_a)
**        (sign -1 forward, +1 inverse)
**   R2C  in real (the complex dtype's real part), out complex: the C2C forward of in, of
**        which out holds k = 0 .. n/2 on the last of axes[] (n / 2 + 1 entries; the rest is
**        conjugate symmetric)
**   C2R  in complex, out real: the C2C inverse (sign +1) of the conjugate symmetric array
**        whose half is in (n / 2 + 1 entries on the last of axes[], n = out's extent
**        there); the imaginary parts that symmetry forces to zero (k = 0, and n / 2 for an
**        even n) are ignored. 'in' is only read (the backend transforms a copy).
** in and out have any strides (0 on a broadcast batch axis of in, negative ones included),
** do not overlap, and out is written only. The ops layer has checked everything above. */
typedef enum gl_fft_kind { GL_FFT_C2C, GL_FFT_R2C, GL_FFT_C2R, GL_NFFT } gl_fft_kind;
typedef struct gl_fft_args {
  gl_fft_kind kind;
  int sign;                /* C2C: -1 or +1 */
  int rank;                /* 1 .. the arrays' ndim */
  int axes[GL_MAXDIMS];    /* the last one is the halved axis of R2C and C2R */
  double scale;
} gl_fft_args;

/* gl_optim_kind and gl_optim_hp (fused optimizer steps) come from kernels/optim.h. */

typedef struct gl_devinfo {
  char name[128];
  size_t total_memory;
  int major, minor;     /* compute capability; 0.0 where the device has none (the cpu) */
  int units;            /* its compute units, what gl_backend.units names (cores, multiprocessors) */
} gl_devinfo;

/* What a device says of its power and use (NVML on cuda, RAPL on the cpu). A reading the
** machine does not give is negative; 'why' says why there is no energy counter. */
typedef struct gl_telemetry {
  double energy_j;           /* a counter that only grows: joules since some fixed point */
  double power_w;            /* the power drawn now */
  double temperature_c;
  double utilization;        /* percent of the last sample period with work running */
  int64_t memory_used;       /* bytes in use by every process on the device */
  char source[48];           /* where the readings come from ("NVML", "RAPL") */
  char why[200];
} gl_telemetry;

/* Memory figures of one device, as gpu.memory() reports them. */
typedef struct gl_meminfo {
  size_t allocated;     /* bytes held by live arrays */
  size_t reserved;      /* allocated + cached for reuse */
  size_t peak;          /* highest 'allocated' since start (or reset) */
  size_t free, total;   /* of the device (host: of the machine) */
} gl_meminfo;

/* Traffic counters of one backend (all its devices), as gpu.stats() reports them. */
typedef struct gl_stats {
  uint64_t h2d_bytes, h2d_copies;     /* host to device */
  uint64_t d2h_bytes, d2h_copies;     /* device to host */
  uint64_t d2d_bytes, d2d_copies;     /* device to device (same-dtype contiguous copies) */
  uint64_t kernels;                   /* kernel launches (memsets included) */
  uint64_t allocs;                    /* allocation requests */
  uint64_t cache_hits;                /* ... served from the allocator's cache */
  uint64_t device_mallocs;            /* ... that needed fresh device memory (cudaMalloc) */
} gl_stats;

/* A launch of a kernel compiled at run time (src/ops/jit.c, gl_backend.jit_run): the
** geometry and one pointer per parameter (an array's first element, a scalar's value),
** and the module's entry points (kernels/jit_abi.h). A reduction when 'part' is set. */
typedef struct gl_jit_launch {
  gl_jit_geom geom;
  int nargs;
  char *ptr[GL_JIT_MAXARGS];
  bool contiguous;             /* elementwise: every array parameter contiguous, C order */
  gl_jit_contig_fn contig;     /* elementwise */
  gl_jit_strided_fn strided;
  gl_jit_init_fn init;         /* reduction */
  gl_jit_part_fn part;
  gl_jit_post_fn post;
} gl_jit_launch;

/* A launch of CUDA source compiled at run time (gpu.RawKernel, through gl_backend.rtc):
** the source and its extern "C" kernel's name, the launch shape, and a pointer to each
** argument's value (a device pointer, or a scalar of the kernel's parameter type). */
typedef struct gl_raw_launch {
  const char *source, *name;
  unsigned grid[3], block[3], shared_mem;
  int nargs;
  void *args[GL_JIT_MAXARGS];
  char *log;                   /* set (malloc'd) on a compile failure: NVRTC's log */
} gl_raw_launch;

/* The run-time compiler of CUDA source and the driver calls that load and launch what it
** makes (NVRTC and libcuda, opened with dlopen at first use: src/backend/cuda/
** cuda_nvrtc.c). src/ops/jit_cuda.c keys, caches and launches through it; only
** 'version' and 'compile' work without a GPU (and without libcuda). */
typedef struct gl_rtc {
  /* The NVRTC library that would be loaded, without loading it: "path size mtime" of the
  ** file (GL_ENOTSUP when it is not found by that search: then only 'version' tells) */
  gl_status (*identity)(char *buf, size_t len);
  /* NVRTC's version (loads libnvrtc the first time; GL_ENOTSUP when it cannot) */
  gl_status (*version)(int *major, int *minor);
  /* Compiles src for sm_<arch> with opts: a cubin, or PTX for the newest architecture
  ** NVRTC knows when it does not know arch (*ptx set; the driver compiles it at load).
  ** On success *image is malloc'd; on a compile error (GL_EINVAL) *log may be. */
  gl_status (*compile)(const char *src, const char *const *opts, int nopts, int arch, char **image, size_t *size,
                       bool *ptx, char **log);
  /* The device's compute capability as major * 10 + minor. */
  gl_status (*arch)(gl_device dev, int *arch);
  /* Loads image into dev's context and looks up the function 'name' (*fn). */
  gl_status (*load)(gl_device dev, const void *image, const char *name, void **fn);
  /* Launches fn on dev's stream: grid x block threads, args[k] points at parameter k. */
  gl_status (*launch)(gl_device dev, void *fn, const unsigned grid[3], const unsigned block[3], unsigned shared_mem,
                      void **args, const char *name);
} gl_rtc;

/* Library versions a backend reports, as gpu.config().versions shows them: name/value
** pairs, a value being text or, where text is empty, a number. A backend adds only what it
** knows (gl_versions_text, gl_versions_number below). */
#define GL_MAXVERSIONS 12
typedef struct gl_version {
  const char *name;                 /* a literal: "blas", "cuda_runtime" */
  char text[128];
  long long number;
} gl_version;
typedef struct gl_versions { int n; gl_version item[GL_MAXVERSIONS]; } gl_versions;

/* Library kernels for NCHW networks (cuDNN on cuda), gl_backend.dnn. The ops layer has
** checked shapes, dtypes and devices: every operand is contiguous and on the backend's
** device, data operands share one float dtype ('dt' below), and per-channel operands of
** batch norm are of float32 for float16/bfloat16 data, else of dt. */
typedef struct gl_dnn_conv {
  int stride[2], pad[2], dil[2], groups;   /* (h, w); groups divides both channel counts */
} gl_dnn_conv;

/* The families of gl_dnn's entries, for takes(). */
typedef enum gl_dnn_family { GL_DNN_CONV, GL_DNN_POOL, GL_DNN_BATCH_NORM, GL_DNN_SOFTMAX, GL_DNN_LAYER_NORM,
                             GL_DNN_RNN, GL_NDNN_FAMILY } gl_dnn_family;

/* One recurrent layer and direction for gl_dnn's rnn entries (oneDNN's LSTM and
** linear-before-reset GRU, which is PyTorch's GRU): kind GL_DNN_LSTM or GL_DNN_GRU, L steps
** of N rows, I inputs, H units, reverse: from step L to 1. Every pointer is of a contiguous
** float32 buffer on the device: x (L, N, I); w_ih (G, H, I) and w_hh (G, H, H) in the
** library's gate order (LSTM i, f, g, o as PyTorch's; GRU z, r, n: PyTorch's r and z
** swapped); b (4, H) (LSTM b_ih + b_hh; GRU b_iz + b_hz, b_ir + b_hr, b_in, b_hn); h0, c0
** (N, H) (c0 LSTM only); y (L, N, H) every step's h, cn (N, H) the last c (LSTM), ws the
** workspace (rnn_workspace's bytes) the forward keeps for the backward. The backward reads
** dy (L, N, H) and dcn (LSTM) and writes dx, dw_ih, dw_hh, db, dh0, dc0 (LSTM). */
enum { GL_DNN_LSTM, GL_DNN_GRU };
typedef struct gl_dnn_rnn {
  int kind;
  bool reverse;
  int64_t L, N, I, H;
  const void *x, *w_ih, *w_hh, *b, *h0, *c0;
  void *y, *cn, *ws;
  const void *dy, *dcn;
  void *dx, *dw_ih, *dw_hh, *db, *dh0, *dc0;
} gl_dnn_rnn;

/* A multi-layer recurrent network for gl_dnn.rnn_net (cuDNN's RNN): PyTorch's RNN (tanh or relu),
** LSTM (gates i, f, g, o) or GRU (r, z, n); dirs 1 or 2; x (seq, batch, input) time-major. */
typedef enum gl_rnn_mode { GL_RNN_TANH, GL_RNN_RELU, GL_RNN_LSTM, GL_RNN_GRU } gl_rnn_mode;
typedef struct gl_dnn_rnn_net {
  gl_rnn_mode mode;
  int layers, dirs;
  bool bias;
  int64_t seq, batch, input, hidden;
} gl_dnn_rnn_net;

typedef struct gl_dnn {
  const char *name;                   /* the library: "cudnn", "onednn" */
  /* NULL when the library can be used, else why not (the loader's message). Loads it on
  ** the first call; never needs a device. */
  const char *(*unavailable)(void);
  /* (optional) Whether the library takes a family's operands of dtype dt (oneDNN: float32
  ** only, no softmax); NULL: every float dtype the ops layer lets through. */
  bool (*takes)(gl_dnn_family family, gl_dtype dt);
  /* y (N, O, OH, OW) = x (N, C, H, W) cross-correlated with w (O, C/groups, kh, kw); no bias.
  ** bwd_data: dx (x's shape) from dy and w; bwd_filter: dw (w's shape) from x and dy. */
  gl_status (*conv2d)(const gl_array *y, const gl_array *x, const gl_array *w, const gl_dnn_conv *c);
  gl_status (*conv2d_bwd_data)(const gl_array *dx, const gl_array *dy, const gl_array *w, const gl_dnn_conv *c);
  gl_status (*conv2d_bwd_filter)(const gl_array *dw, const gl_array *x, const gl_array *dy, const gl_dnn_conv *c);
  /* Pooling windows k, stride, pad (h, w), no dilation: max (padding never wins, NaN
  ** propagates) or the mean counting padding as zeros. bwd: dx from x, y, dy. */
  gl_status (*pool2d)(bool max, const gl_array *y, const gl_array *x, const int *k, const int *stride,
                      const int *pad);
  gl_status (*pool2d_bwd)(bool max, const gl_array *dx, const gl_array *x, const gl_array *y,
                          const gl_array *dy, const int *k, const int *stride, const int *pad);
  /* Batch norm per channel of 4-D x (N, C, H, W) over N, H, W. train: y, and save_mean,
  ** save_invstd (C) for bwd; running mean/var (C, both or neither NULL) updated in place
  ** with 'momentum' (unbiased variance). infer: y from the running statistics. bwd: dx,
  ** dw, db from x, dy, w and the saved statistics. */
  gl_status (*batch_norm_train)(const gl_array *y, const gl_array *save_mean, const gl_array *save_invstd,
                                const gl_array *x, const gl_array *w, const gl_array *b,
                                const gl_array *rmean, const gl_array *rvar, double momentum, double eps);
  gl_status (*batch_norm_infer)(const gl_array *y, const gl_array *x, const gl_array *w, const gl_array *b,
                                const gl_array *rmean, const gl_array *rvar, double eps);
  gl_status (*batch_norm_bwd)(const gl_array *dx, const gl_array *dw, const gl_array *db, const gl_array *x,
                              const gl_array *dy, const gl_array *w, const gl_array *save_mean,
                              const gl_array *save_invstd, double eps);
  /* Softmax (or, with log, log-softmax) of each row of x (rows, C), max-shifted; bwd: dx
  ** from the forward's output y and dy. */
  gl_status (*softmax)(bool log, const gl_array *y, const gl_array *x);
  gl_status (*softmax_bwd)(bool log, const gl_array *dx, const gl_array *y, const gl_array *dy);
  /* (optional) A recurrent layer and direction (gl_dnn_rnn above): the workspace's bytes,
  ** the forward (training: y, cn, ws) and the backward (from ws). */
  gl_status (*rnn_workspace)(const gl_dnn_rnn *r, size_t *bytes);
  gl_status (*rnn_fwd)(const gl_dnn_rnn *r);
  gl_status (*rnn_bwd)(const gl_dnn_rnn *r);
  /* (optional: oneDNN only) Layer norm of each row of x (R, D): y, and mean, rstd (R) =
  ** 1/sqrt(biased variance + eps), the fused op's form; w, b (D) or NULL. bwd: dx, and dw,
  ** db (D) when not NULL, from x, dy, w and the saved statistics. */
  gl_status (*layer_norm)(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                          const gl_array *w, const gl_array *b, double eps);
  gl_status (*layer_norm_bwd)(const gl_array *dx, const gl_array *dw, const gl_array *db, const gl_array *x,
                              const gl_array *dy, const gl_array *w, const gl_array *mean, const gl_array *rstd,
                              double eps);
  /* (optional: cuDNN only) The RNN r over x (seq, batch, input) with w, the flat parameters in
  ** PyTorch's order (per layer, per direction: weight_ih, weight_hh [, bias_ih, bias_hh]), hx
  ** (and cx for LSTM, else NULL) (layers * dirs, batch, hidden): out, flat, holds y (seq, batch,
  ** dirs * hidden), then hy, then cy (LSTM). reserve (uint8, rnn_net_reserve's bytes) is kept for
  ** the backward; NULL: inference. rnn_net_bwd: dx, dw (w's shape), dhx, dcx (LSTM, else NULL)
  ** from g (out's shape: dy, dhy, dcy) and the forward's out and reserve (consumed). */
  const char *(*rnn_net_unavailable)(void);
  gl_status (*rnn_net_reserve)(gl_device dev, const gl_dnn_rnn_net *r, gl_dtype dt, size_t *bytes);
  gl_status (*rnn_net)(const gl_dnn_rnn_net *r, const gl_array *out, const gl_array *reserve, const gl_array *x,
                   const gl_array *w, const gl_array *hx, const gl_array *cx);
  gl_status (*rnn_net_bwd)(const gl_dnn_rnn_net *r, const gl_array *dx, const gl_array *dw, const gl_array *dhx,
                       const gl_array *dcx, const gl_array *g, const gl_array *out, const gl_array *reserve,
                       const gl_array *x, const gl_array *w, const gl_array *hx, const gl_array *cx);
} gl_dnn;

/* How gpu.config() words the path nn's layers take on a backend's devices when its library
** kernels (gl_backend.dnn) are missing or refuse; the fallbacks are formats of one %s, the
** reason. */
typedef struct gl_dnn_paths {
  const char *missing;          /* dnn is NULL: "built without oneDNN" */
  const char *no_layer_norm;    /* dnn is NULL or has no layer_norm */
  const char *conv_fallback;    /* "im2col + BLAS (cpu; %s)" */
  const char *rnn_fallback;     /* "fused loop (cpu; %s)" */
} gl_dnn_paths;

typedef struct gl_backend {
  /* Devices are named after the backend: "cpu"; with 'numbered', "cuda:N" (and "cuda" for
  ** cuda:0). Names must be short enough that "name:255" fits GL_DEVNAME_SIZE. */
  const char *name;
  bool numbered;
  /* "cpu" or "gpu": gpu.devices(kind) lists the backends of that kind, gpu.is_available()
  ** and the default device ask the "gpu" ones. */
  const char *kind;
  /* Set in an entry for a backend this build lacks: why its devices are missing (its name
  ** still parses, so that asking for it says why). Such an entry has no functions. */
  const char *absent;
  const char *units;                                  /* what gl_devinfo.units counts */
  gl_dnn_paths dnn_paths;
  void (*versions)(gl_versions *out);                 /* (optional) adds to out */

  /* Devices. count() returns how many usable devices there are (0 with a reason). */
  int (*count)(const char **reason);
  gl_status (*info)(int index, gl_devinfo *out);

  /* Whether the backend has kernels for op 'which' of family 'op' in dtype dt (see gl_op for
  ** what which and dt are per family); answered from the backend's own kernel tables. */
  bool (*supports)(gl_op op, int which, gl_dtype dt);

  /* Memory. alloc returns 64-byte-aligned blocks from a cache. */
  gl_status (*alloc)(gl_device dev, size_t nbytes, void **out);
  void (*free)(gl_device dev, void *p, size_t nbytes);
  void (*empty_cache)(gl_device dev);
  void (*memory)(gl_device dev, gl_meminfo *out);

  /* (optional) Timing on the device's stream: an event marks the point the work queued
  ** so far has reached; elapsed waits for 'end' and gives the milliseconds between the
  ** two. Without these (the cpu), gpu.event measures host time. */
  gl_status (*event_new)(gl_device dev, void **ev);
  gl_status (*event_record)(gl_device dev, void *ev);
  gl_status (*event_elapsed)(void *start, void *end, double *ms);
  void (*event_free)(void *ev);

  /* Host <-> device bytes (for cpu: memcpy). */
  gl_status (*to_host)(void *dst, gl_device dev, const void *src, size_t nbytes);
  gl_status (*from_host)(gl_device dev, void *dst, const void *src, size_t nbytes);
  gl_status (*synchronize)(gl_device dev);

  /* dst[...] = src[...] over dst's shape (src already broadcast to it), converting
  ** dtypes; any strides on both sides. */
  gl_status (*copy)(const gl_array *dst, const gl_array *src);
  /* Every element of dst (any strides) = v converted to dst's dtype. */
  gl_status (*fill)(const gl_array *dst, gl_scalar v);
  /* Contiguous dst: dst[i] = start + i * step, computed in double then converted. */
  gl_status (*arange)(const gl_array *dst, double start, double step);

  /* ---- math (the ops layer has checked dtypes, shapes and devices) ---- */

  /* dst = op(src), same shape, any strides. US/UF: src and dst of one (compute) dtype;
  ** UP/UL: src of any dtype, dst bool. dst may be src itself. */
  gl_status (*unary)(gl_unop op, const gl_array *dst, const gl_array *src);
  /* dst = a op b over dst's shape. Array operands are of dtype 'ct' and broadcast to
  ** dst's shape; scalars are converted to ct. dst is of ct, or bool for BC/BL ops. dst
  ** may be an operand itself (same layout). */
  gl_status (*binary)(gl_binop op, gl_dtype ct, const gl_array *dst, gl_operand a, gl_operand b);
  /* (optional) The flat forms of unary and binary: n <= GL_FLAT_MAX elements, every operand
  ** C-contiguous and of one shape, no scalar, dst a new array (no overlap); dtypes as above
  ** (src/a/b of ct, dst of ct or bool). The ops layer takes them for small same-shape
  ** calls, where the general walk over shapes and strides costs more than the elements;
  ** the results are bit for bit those of unary/binary. The kernel exists (supports said so). */
  void (*unary_flat)(gl_unop op, gl_dtype ct, void *dst, const void *src, int64_t n);
  void (*binary_flat)(gl_binop op, gl_dtype ct, void *dst, const void *a, const void *b, int64_t n);
  /* dst = cond ? a : b; cond bool, a and b of dst's dtype (or scalars), all broadcast. */
  gl_status (*where)(const gl_array *dst, const gl_array *cond, gl_operand a, gl_operand b);

  /* dst = reduction of src over the axes where dst has extent 1 and src does not (src
  ** extent 0 there: an empty reduction); any strides on both. dst's dtype is the result
  ** dtype (the ops layer picks it) and, for SUM/PROD/MEAN/VAR/NORM/LOGSUMEXP, the compute
  ** type: elements are converted to int64 for integer results (sums wrap), float for
  ** float16/bfloat16/float32, double for float64; MAX/MIN/ARGMAX/ARGMIN/ALL/ANY compare
  ** in src's own type (ALL/ANY: x != 0, NaN is true). Float sums are pairwise/blocked.
  ** NaN propagates (MAX/MIN give NaN; ARGMAX/ARGMIN the first NaN). ARGMAX/ARGMIN reduce
  ** one axis and write int64 0-based positions, the first of equal values. VAR: param =
  ** ddof, two-pass, divisor max(n - ddof, 0). NORM: param = ord: 2 sqrt(sum x^2), 1
  ** sum |x|, +-inf max/min |x|, 0 count of nonzeros, else (sum |x|^p)^(1/p). LOGSUMEXP:
  ** max-shifted, a non-finite max shifting by 0 (scipy). Of nothing: SUM 0, PROD 1,
  ** MEAN/VAR NaN, NORM 0, LOGSUMEXP -inf, ALL true, ANY false (MAX/MIN/ARG*, NORM +-inf
  ** are refused by the ops layer first). std is the ops layer's sqrt of VAR. (optional) */
  gl_status (*reduce)(gl_redop op, const gl_array *dst, const gl_array *src, double param);
  /* Inclusive scan (SUM: cumsum, PROD: cumprod) along 0-based 'axis'; dst and src of
  ** the same shape, any strides, dst of the result dtype, elements converted to its
  ** compute type as for SUM. (optional) */
  gl_status (*scan)(gl_redop op, const gl_array *dst, const gl_array *src, int axis);

  /* dst (..., M, N) = a (..., M, K) @ b (..., K, N); all three of one dtype (integers
  ** wrap; bool is logical: or of ands; float16/bfloat16 accumulate in float32), batch
  ** axes already broadcast (0 strides allowed), M, N, K > 0 (the ops layer handles
  ** empty results and K = 0). (optional) */
  gl_status (*matmul)(const gl_array *dst, const gl_array *a, const gl_array *b);

  /* Along 0-based 'axis': dst[..., j, ...] = src[..., idx[j], ...]; idx contiguous 1-D
  ** int64 with 0-based positions already checked in range; dst and src of one dtype,
  ** any strides, dst's shape is src's with idx->size on 'axis'. (optional) */
  gl_status (*gather)(const gl_array *dst, const gl_array *src, int axis, const gl_array *idx);
  /* dst[..., idx[j], ...] = src[..., j, ...] (or += when accumulate); src of dst's dtype
  ** and shape but idx->size on 'axis', any strides (0 strides where broadcast). With a
  ** repeated position the last j wins (accumulate: all add up). (optional) */
  gl_status (*scatter)(const gl_array *dst, int axis, const gl_array *idx, const gl_array *src,
                       bool accumulate);
  /* dst[k] += src[j] for every j, k the 1-based position idx[j] (negatives from the end:
  ** n + 1 + idx[j]) that the backend checks: the first one out of range is an error that
  ** names it ("index 7 is out of range for axis 1 with size 3 ...") and leaves dst as it
  ** was. dst contiguous 1-D of length n, float32, float64, int32 or int64 (integers wrap);
  ** idx contiguous int64, read flat; src 1-D of dst's dtype and idx's length, any stride
  ** (0: one value for all). The adds to a position may be grouped otherwise than one after
  ** the other in j's order (floats may then round otherwise). (optional: without it the
  ** ops layer checks the positions and calls scatter with accumulate) */
  gl_status (*scatter_add)(const gl_array *dst, const gl_array *idx, const gl_array *src);
  /* The largest (max) or smallest of the src[j] sent to each position: dst[k] = that of
  ** the src[j] with position k, seen[k] = 1; a position nothing is sent to gets 0 and
  ** seen[k] = 0. NaN is largest and smallest (it wins) and a tie goes to the last j (-0
  ** and +0 tie), so the result is the element a stable sort by value (descending for min)
  ** would put last. dst (any real dtype) and seen (bool) contiguous 1-D of one length n;
  ** idx contiguous 1-D int64 of 1-based positions (negatives from the end: n + 1 + idx[j])
  ** that the backend checks: the first one out of range is an error that names it ("index
  ** 7 is out of range for axis 1 with size 3 ...", dst and seen then undefined); src 1-D of
  ** dst's dtype and idx's length, any stride. (optional: without it the ops layer reports
  ** the op unsupported, and gpu.scatter_reduce sorts) */
  gl_status (*scatter_extreme)(const gl_array *dst, const gl_array *seen, const gl_array *idx,
                               const gl_array *src, bool max);
  /* dst (1-D, length = number of true mask elements) = src[mask] in C order; mask bool of
  ** src's shape (may be a broadcast view with 0 strides); src any strides. (optional) */
  gl_status (*mask_select)(const gl_array *dst, const gl_array *src, const gl_array *mask);
  /* Stable sort along 0-based 'axis' of src (ndim >= 1; NaN last; descending keeps NaN
  ** last too, ties keep their order in both); either output may be NULL: values (src's
  ** dtype) and int64 0-based indices, both of src's shape, any strides. bool sorts as
  ** false < true. (optional) */
  gl_status (*sort)(const gl_array *values, const gl_array *indices, const gl_array *src,
                    int axis, bool descending);
  /* Along 0-based 'axis' of src (ndim >= 1), as sort's outputs (either may be NULL), each
  ** lane rearranged so that at each of the nk 0-based positions kth[] (ascending,
  ** distinct, in range) lies the element a sort would put there, none larger before it
  ** and none smaller after it (NaN largest). (optional) */
  gl_status (*partition)(const gl_array *values, const gl_array *indices, const gl_array *src,
                         int axis, const int64_t *kth, int nk);
  /* counts (contiguous 1-D of nb bins, int64, or float64 with weights) = the number (the
  ** sum of the weights) of the elements of x (contiguous, any dtype) in each bin. edges
  ** (contiguous float64, nb + 1, increasing): bin k holds edges[k] <= v < edges[k + 1],
  ** the last bin its right edge too, values outside and NaN in none; 'uniform' says the
  ** edges are equal steps, so the bin is found by arithmetic (as NumPy) rather than by a
  ** search. edges NULL: x is an integer array and bin k holds the value k (the ops layer
  ** has checked 0 <= v < nb). weights: NULL or contiguous float64 of x's size. (optional) */
  gl_status (*histogram)(const gl_array *counts, const gl_array *x, const gl_array *weights,
                         const gl_array *edges, bool uniform);
  /* dst[i] (contiguous int64, v's length) = how many elements of the sorted a are < v[i]
  ** (right: <= v[i]), NaN larger than every number as the sort puts it: a binary search
  ** per element, a and v 1-D of one real dtype, any strides. (optional: the Lua side
  ** searches with whole-array steps instead) */
  gl_status (*searchsorted)(const gl_array *dst, const gl_array *a, const gl_array *v, bool right);

  /* dst (contiguous, on this device) = random numbers of 'dist' from the counter blocks
  ** req->offset, req->offset + 1, ... (kernels/philox.h); the ops layer has checked the
  ** parameters and dtypes and advances the generator. (optional: without it random
  ** numbers are not supported on the device; PERMUTATION may be cpu-only) */
  gl_status (*random)(gl_rand_dist dist, const gl_array *dst, const gl_rand_req *req);

  /* (optional) One optimizer step in place, one pass: p, g and the state arrays st[0..2]
  ** (NULL where the rule has none) contiguous, float32 or float64, one dtype and size.
  ** SGD: st[0] momentum buffer. ADAM: st[0] exp_avg, st[1] exp_avg_sq, st[2] max_exp_avg_sq
  ** (amsgrad). RMSPROP: st[0] square_avg, st[1] momentum buffer, st[2] grad_avg (centered). */
  gl_status (*optim_step)(gl_optim_kind kind, const gl_array *p, const gl_array *g,
                          const gl_array *const st[3], const gl_optim_hp *hp);
  /* (optional) Softmax cross-entropy, rows of logits (N, C) contiguous float32/float64:
  ** loss (N) = logsumexp(z_i) - sum_c t_ic z_ic and probs (N, C) = softmax(z_i), where the
  ** target row t_i is (1 - smoothing) onehot(labels[i]) + smoothing / C when labels (int64,
  ** 1-based, already checked in 1..C) is given, else the row of 'target' (N, C, logits'
  ** dtype). Backward (bwd): dst (N, C) = (probs - t) * gout[i] * scale, gout 0-d or (N),
  ** of the logits' dtype; dst may be probs itself. */
  gl_status (*xent)(const gl_array *loss, const gl_array *probs, const gl_array *logits,
                    const gl_array *labels, const gl_array *target, double smoothing);
  gl_status (*xent_bwd)(const gl_array *dst, const gl_array *probs, const gl_array *labels,
                        const gl_array *target, double smoothing, const gl_array *gout, double scale);
  /* (optional) One time step of the fused LSTM cell over (N, H) rows and units (the
  ** pointers of kernels/rnn.h's gl_lstm_cell on this device, of dtype dt: float32 or
  ** float64), forward or backward; src/ops/rnn.c runs the time loop and the GEMMs. */
  gl_status (*lstm_cell)(gl_device dev, bool backward, gl_dtype dt, const gl_lstm_cell *s);
  /* (optional) The same for the GRU cell and the Elman RNN cell (gl_gru_cell, gl_rnn_cell). */
  gl_status (*gru_cell)(gl_device dev, bool backward, gl_dtype dt, const gl_gru_cell *s);
  gl_status (*rnn_cell)(gl_device dev, bool backward, gl_dtype dt, const gl_rnn_cell *s);
  /* (optional) Layer norm over the last axis of x (R, D) contiguous float32/float64, w and b
  ** (D) of x's dtype or NULL: y (R, D) = (x - mean) * rstd * w + b, mean (R), rstd (R) =
  ** 1 / sqrt(biased variance + eps). Backward (bwd): from g (R, D) and the saved mean and
  ** rstd, gx (R, D) and, where not NULL, gw and gb (D) (gw needs w's values only for gx). */
  gl_status (*layer_norm)(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                          const gl_array *w, const gl_array *b, double eps);
  gl_status (*layer_norm_bwd)(const gl_array *gx, const gl_array *gw, const gl_array *gb, const gl_array *g,
                              const gl_array *x, const gl_array *mean, const gl_array *rstd, const gl_array *w);
  /* (optional) Attention rows without a (L, S) score matrix: q (B, L, E), k (B, S, E), v (B,
  ** S, Ev) contiguous float32/float64 -> out (B, L, Ev) = softmax(q k^T * scale) v, row by row
  ** with an online softmax (causal: key j <= query i only), and lse (B, L) the logsumexp of
  ** each row's scaled scores (-inf for a row with no key). */
  gl_status (*attention)(const gl_array *out, const gl_array *lse, const gl_array *q, const gl_array *k,
                         const gl_array *v, double scale, bool causal);
  /* (optional) Its backward, FlashAttention-2's, without a (L, S) matrix either: from g (B, L, Ev)
  ** (the gradient of out), out and lse of the forward and q, k, v (all contiguous, of one
  ** dtype), the probabilities recomputed tile by tile as exp(q k^T * scale - lse), D =
  ** rowsum(g * out): gv = P^T g, gS = P * (g v^T - D), gq = gS k * scale, gk = gS^T q *
  ** scale, overwriting gq (B, L, E), gk (B, S, E), gv (B, S, Ev). A row whose lse is -inf
  ** (no key) adds nothing and gets a zero gq row, whatever its out holds. */
  gl_status (*attention_bwd)(const gl_array *gq, const gl_array *gk, const gl_array *gv, const gl_array *g,
                             const gl_array *q, const gl_array *k, const gl_array *v, const gl_array *out,
                             const gl_array *lse, double scale, bool causal);
  /* (optional) Dense linear algebra, see gl_la_op. */
  gl_status (*linalg)(gl_la_op op, const gl_la_args *args, int64_t *bad);
  /* (optional) Fourier transforms, see gl_fft_kind; 'dt' of supports is the complex dtype. */
  gl_status (*fft)(const gl_array *out, const gl_array *in, const gl_fft_args *args);
  /* Counters since start (or the last reset): copies, launches, allocations; with
  ** reset, zeroes them after reading (out may be NULL). (optional) */
  void (*stats)(gl_stats *out, bool reset);
  /* Releases streams, library handles, pinned buffers and cached device memory; call
  ** it at lua_close, before the CUDA runtime unloads. Later frees are bookkeeping
  ** only; a later use starts the device again. (optional) */
  void (*shutdown)(void);
  /* (optional) gpu.set_matmul_precision: whether float32 matmuls may use TF32 tensor cores
  ** (false: IEEE float32, the default). Without it the setting is accepted and ignored. */
  void (*matmul_precision)(bool tf32);
  /* (optional) convolution helpers, NCHW; k, stride, pad, dil hold (h, w). im2col: src
  ** (N, C, H, W) contiguous float32/float64 -> dst (N, C*kh*kw, OH*OW) contiguous of src's
  ** dtype; taps outside the input read 'padval'. col2im: the reverse, dst (N, C, H, W)
  ** contiguous is overwritten with the sum of every column entry that reads it. */
  gl_status (*im2col)(const gl_array *dst, const gl_array *src, const int *k, const int *stride,
                      const int *pad, const int *dil, double padval);
  gl_status (*col2im)(const gl_array *dst, const gl_array *cols, const int *k, const int *stride,
                      const int *pad, const int *dil);
  /* (optional) library convolution, pooling and batch norm (see gl_dnn): cuDNN on cuda,
  ** oneDNN on the cpu; where it is missing or refuses, nn's layers use im2col + GEMM. */
  const gl_dnn *dnn;
  /* (optional) runs a kernel compiled at run time over l's geometry (NULL: the device has
  ** no run-time compiled kernels of this kind). */
  gl_status (*jit_run)(const gl_jit_launch *l);
  /* (optional) the run-time compiler of CUDA source and its launches (cuda: NVRTC). */
  const gl_rtc *rtc;
  /* (optional) collectives between processes on this device's memory (NCCL on cuda), see
  ** gl_collectives; NULL on the cpu, whose arrays src/dist hands to MPI. */
  const struct gl_collectives *collectives;
  /* (optional) the device's power, energy, temperature and use (gl_telemetry; NULL: the
  ** backend reads none, and gpu.bench says it cannot measure energy). Cheap enough to call
  ** around a timed loop; never fails, filling 'why' instead. */
  void (*telemetry)(int index, gl_telemetry *out);
} gl_backend;

/* Collectives on device memory between the processes of a job (src/dist's NCCL engine).
** The library is opened at 'load' (never before gpu.distributed.init); the unique id made
** by rank 0 reaches the others through MPI (src/dist); every operation is queued on the
** device's stream, so the ops after it see its result without a wait. op: 0 sum, 1 prod,
** 2 max, 3 min, 4 mean (float dtypes). Ranks are 0-based. */
typedef struct gl_collectives {
  size_t id_bytes;                                       /* bytes of a unique id */
  gl_status (*load)(void);
  gl_status (*unique_id)(void *id);
  gl_status (*init)(gl_device dev, const void *id, int nranks, int rank);
  gl_status (*all_reduce)(gl_device dev, void *buf, int64_t count, gl_dtype dt, int op);
  gl_status (*broadcast)(gl_device dev, void *buf, int64_t count, gl_dtype dt, int root);
  gl_status (*all_gather)(gl_device dev, const void *send, void *recv, int64_t count, gl_dtype dt);
  gl_status (*reduce_scatter)(gl_device dev, const void *send, void *recv, int64_t count, gl_dtype dt, int op);
  /* Whether all_reduce and reduce_scatter take dt with op (they refuse the rest; src/dist
  ** asks first and sends those through MPI on host copies). The collectives that only move
  ** data take every dtype. */
  bool (*reduces)(gl_dtype dt, int op);
  /* Point-to-point calls join one group that the engine queues as a whole (NCCL requires
  ** the sends and receives that must progress together to be grouped): 'async' leaves the
  ** group open for more calls, anything else (a call that is not async, a collective,
  ** 'flush', 'finalize') closes it. */
  gl_status (*send)(gl_device dev, const void *buf, int64_t count, gl_dtype dt, int peer, bool async);
  gl_status (*recv)(gl_device dev, void *buf, int64_t count, gl_dtype dt, int peer, bool async);
  gl_status (*flush)(void);     /* queues the open group of point-to-point calls, if any */
  void (*finalize)(bool abort);
  /* The watchdog's look at the queued operations, from another thread (src/dist's, every
  ** 20 ms while any is queued): 0 when all are done, 1 while some run within 'timeout'
  ** seconds of being queued, -1 with a message in msg when the oldest has run longer or
  ** the communicator reports an asynchronous error. */
  int (*poll)(double timeout, char *msg, size_t size);
} gl_collectives;

/* ---- the registry: every backend of the build, in one array (backend.c) ------------ */

#define GL_MAX_BACKENDS 4
#define GL_DEVNAME_SIZE 16       /* bytes a device's name needs, NUL included */

extern const gl_backend *gl_backends[GL_MAX_BACKENDS];
extern int gl_nbackends;         /* entries in gl_backends: the cpu (GL_CPU) first */

/* The backend of a device type; NULL past the registry. */
static inline const gl_backend *gl_backend_get(int type) {
  return (unsigned)type < (unsigned)gl_nbackends ? gl_backends[type] : NULL;
}

/* How many devices b has now (0 with *why set where why is not NULL). */
int gl_backend_devices(const gl_backend *b, const char **why);

/* Makes this process use the host only, on one thread, from now on: every other device
** is unavailable for 'why' (kept, not copied) and the CPU backend runs no parallel teams.
** For a process made by fork (a DataLoader's worker): a GPU runtime does not survive
** fork, and OpenMP's thread pool (libgomp's) is not fork-safe. */
void gl_backends_host_only(const char *why);

/* Backend of d, or a GL_EDEVICE failure naming why the device is unusable. */
gl_status gl_backend_for(gl_device d, const gl_backend **out);

/* "cpu", "cuda", "cuda:1" -> device (of any backend in the registry, usable or not).
** Returns GL_EINVAL with a message on names no backend has. */
gl_status gl_device_parse(const char *name, gl_device *out);
/* Writes the device's name ("cpu", "cuda:0") into buf (GL_DEVNAME_SIZE bytes); returns buf. */
const char *gl_device_name(gl_device d, char *buf);
/* The names gl_device_parse takes, for messages: "'cpu', 'cuda' or 'cuda:N'". */
const char *gl_device_syntax(void);

/* A dense numbering of every device the registry can name (0 .. gl_device_slots()-1), for
** tables kept per device. */
int gl_device_slots(void);
int gl_device_slot(gl_device d);

/* Adds a text (printf format) or a number to a backend's versions; past GL_MAXVERSIONS
** the pair is dropped. */
void gl_versions_text(gl_versions *v, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void gl_versions_number(gl_versions *v, const char *name, long long x);

/* ---- storage: made and freed by the device's allocator ----------------------- */

/* New storage of nbytes on 'dev' (refcount 1). */
gl_status gl_storage_new(gl_device dev, size_t nbytes, gl_storage **out);
/* What gl_storage_new runs once before retrying an allocation that failed for want of
** memory (the Lua binding frees what it can); NULL: no retry. */
typedef void (*gl_reclaim_fn)(gl_device dev);
void gl_set_reclaim(gl_reclaim_fn fn);
/* Device memory for a library's workspace or an op's scratch, from the device's allocator
** (freed with its 'free'), retried after the reclaim hook as gl_storage_new is. Not to be
** called with the device's allocator lock held or inside a parallel region: the hook may
** run a Lua collection. */
gl_status gl_workspace_alloc(gl_device dev, size_t nbytes, void **out);
/* Drops one reference; frees at zero. NULL is fine. */
void gl_storage_release(gl_storage *s);

/* A new, uninitialised C-contiguous array on 'dev'. 'a' must be closed. */
gl_status gl_array_alloc(gl_array *a, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev);
/* Drops the storage reference; idempotent. */
void gl_array_release(gl_array *a);

#endif
