/*
** cpu_backend.c — the CPU backend's table: the reference every other backend must agree
** with.
*/
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cpu.h"
#include "../../../kernels/philox.h"   /* GL_RAND_DTYPES */

static int cpu_count(const char **reason) { (void)reason; return 1; }

/* The processor's model from /proc/cpuinfo, or "cpu". */
static void cpu_model(char *out, size_t n) {
  snprintf(out, n, "cpu");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *p = strchr(line, ':');
      if (p) {
        p++;
        while (*p == ' ') p++;
        p[strcspn(p, "\n")] = '\0';
        snprintf(out, n, "%s", p);
      }
      break;
    }
  }
  fclose(f);
}

static gl_status cpu_info(int index, gl_devinfo *out) {
  (void)index;
  memset(out, 0, sizeof *out);
  cpu_model(out->name, sizeof out->name);
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  out->total_memory = pages > 0 ? (size_t)pages * (size_t)psz : 0;
  out->units = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return GL_OK;
}

/* gpu.config().versions: oneDNN's version when it loads, and BLAS: the OpenBLAS
** configuration string ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64")
** plus the thread count, or the library's name for another BLAS. Loads BLAS if it is not
** loaded yet. */
static void cpu_versions(gl_versions *v) {
  char onednn[32];
  gl_cpu_dnnl_version(onednn, sizeof onednn);
  if (onednn[0]) gl_versions_text(v, "onednn", "%s", onednn);
  char fftw[64];
  gl_cpu_fftw_version(fftw, sizeof fftw);
  if (fftw[0]) gl_versions_text(v, "fftw", "%s", fftw);
  const gl_cpu_blas *b;
  if (gl_cpu_blas_get(&b) != GL_OK) return;
  if (b->get_config) {
    const char *cfg = b->get_config();
    if (b->get_num_threads)
      gl_versions_text(v, "blas", "%s threads=%d", cfg ? cfg : "OpenBLAS", b->get_num_threads());
    else
      gl_versions_text(v, "blas", "%s", cfg ? cfg : "OpenBLAS");
  } else {
    gl_versions_text(v, "blas", "%s", b->lib);
  }
}

/* What this backend's tables and loops hold: the row kernels of cpu_elem.c, the reduction
** and matmul paths, the distributions' and the fused loops' dtypes (float and double loops);
** fill, copy, arange, indexing and sort have a kernel for every dtype row (complex sorts
** in NumPy's order), partition and histogram for every real one. */
static bool cpu_supports(gl_op op, int which, gl_dtype dt) {
  if ((unsigned)dt >= GL_NDTYPE) return false;
  switch (op) {
    case GL_OP_UNARY: return (unsigned)which < GL_NUNOP && gl_cpu_has_unary((gl_unop)which, dt);
    case GL_OP_BINARY: return (unsigned)which < GL_NBINOP && gl_cpu_has_binary((gl_binop)which, dt);
    case GL_OP_REDUCE: return gl_cpu_has_reduce((gl_redop)which, dt);
    case GL_OP_MATMUL: return gl_cpu_has_matmul(dt);
    case GL_OP_RANDOM: return (unsigned)which < GL_NRAND && GL_DTSET_HAS(GL_RAND_DTYPES(which), dt);
    case GL_OP_CONV: case GL_OP_FUSED: return GL_DTSET_HAS(GL_DTSET_WIDE_FLOAT, dt);
    case GL_OP_LINALG: return gl_cpu_has_linalg(which, dt);
    case GL_OP_FILL: case GL_OP_COPY: case GL_OP_ARANGE: case GL_OP_INDEX: case GL_OP_SORT: return true;
    case GL_OP_SELECT: case GL_OP_HISTOGRAM: return !gl_dtype_is_complex(dt);
    case GL_OP_FFT: return gl_cpu_has_fft(which, dt);
    default: return false;
  }
}

static gl_status cpu_to_host(void *dst, gl_device dev, const void *src, size_t n) {
  (void)dev; gl_cpu_move_bytes(dst, src, n); return gl_interrupt_check();
}
static gl_status cpu_from_host(gl_device dev, void *dst, const void *src, size_t n) {
  (void)dev; gl_cpu_move_bytes(dst, src, n); return gl_interrupt_check();
}
static gl_status cpu_synchronize(gl_device dev) { (void)dev; return GL_OK; }

/* Host allocator counters since the start or the last reset. */
static void cpu_stats(gl_stats *out, bool reset) {
  static uint64_t allocs0, hits0;
  uint64_t allocs, hits;
  gl_cpu_alloc_counts(&allocs, &hits);
  memset(out, 0, sizeof *out);
  out->allocs = allocs - allocs0;
  out->cache_hits = hits - hits0;
  if (reset) { allocs0 = allocs; hits0 = hits; }
}

const gl_backend gl_cpu_backend = {
  .name = "cpu",
  .kind = "cpu",
  .units = "cores",
  .dnn_paths = { .missing = "built without oneDNN", .no_layer_norm = "built without oneDNN",
                 .conv_fallback = "im2col + BLAS (cpu; %s)", .rnn_fallback = "fused loop (cpu; %s)" },
  .versions = cpu_versions,
  .count = cpu_count,
  .info = cpu_info,
  .supports = cpu_supports,
  .alloc = gl_cpu_alloc,
  .free = gl_cpu_free,
  .empty_cache = gl_cpu_empty_cache,
  .memory = gl_cpu_memory,
  .to_host = cpu_to_host,
  .from_host = cpu_from_host,
  .synchronize = cpu_synchronize,
  .stats = cpu_stats,
  .copy = gl_cpu_copy,
  .fill = gl_cpu_fill,
  .arange = gl_cpu_arange,
  .unary = gl_cpu_unary,
  .binary = gl_cpu_binary,
  .unary_flat = gl_cpu_unary_flat,
  .binary_flat = gl_cpu_binary_flat,
  .where = gl_cpu_where,
  .reduce = gl_cpu_reduce,
  .scan = gl_cpu_scan,
  .matmul = gl_cpu_matmul,
  .gather = gl_cpu_gather,
  .scatter = gl_cpu_scatter,
  .scatter_add = gl_cpu_scatter_add,
  .scatter_extreme = gl_cpu_scatter_extreme,
  .mask_select = gl_cpu_mask_select,
  .sort = gl_cpu_sort,
  .partition = gl_cpu_partition,
  .histogram = gl_cpu_histogram,
  .searchsorted = gl_cpu_searchsorted,
  .random = gl_cpu_random,
  .im2col = gl_cpu_im2col,
  .col2im = gl_cpu_col2im,
  .optim_step = gl_cpu_optim_step,
  .xent = gl_cpu_xent,
  .xent_bwd = gl_cpu_xent_bwd,
  .lstm_cell = gl_cpu_lstm_cell,
  .gru_cell = gl_cpu_gru_cell,
  .rnn_cell = gl_cpu_rnn_cell,
  .layer_norm = gl_cpu_layer_norm,
  .layer_norm_bwd = gl_cpu_layer_norm_bwd,
  .attention = gl_cpu_attention,
  .attention_bwd = gl_cpu_attention_bwd,
  .linalg = gl_cpu_linalg,
  .fft = gl_cpu_fft,
  .jit_run = gl_cpu_jit_run,
  .dnn = &gl_cpu_dnn,
  .telemetry = gl_cpu_telemetry,
};

/* The registry's test backend (GPULUA_TEST_BACKEND=1, src/backend/backend.c): this table
** under the name "testcpu", without the counters and versions the cpu already reports. Its
** arrays are host memory that the layers above reach only through the table, as they
** reach an accelerator's. */
const gl_backend *gl_cpu_test_backend(void);
const gl_backend *gl_cpu_test_backend(void) {
  static gl_backend test;
  test = gl_cpu_backend;
  test.name = "testcpu";
  test.versions = NULL;
  test.stats = NULL;
  return &test;
}
