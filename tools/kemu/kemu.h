/*
** kemu.h — the device side of kemu, a CPU EMULATOR of the CUDA execution model for testing
** the logic of the kernels (kernels/NAME.cu) on a machine without a GPU. A developer tool only: it is never
** linked into gpulua or gpu.so, and passing under it says nothing about timing, the real
** memory model, performance or the CUDA runtime. See doc/HACKING.md ("kemu").
**
** Force-included (g++ -include) before each kernel file, which tools/kemu/rewrite.py has
** turned from `k<<<g, b, sh, s>>>(args)` into `kemu::launch(k, "k", "where", sync, g, b, sh, s)(args)`.
** Blocks run one after another. The threads of a block of a kernel that synchronises
** ('sync': rewrite.py found __syncthreads, a shuffle, ... in it) run as fibers (pthreads
** under TSan or with KEMU_PTHREADS=1), so __syncthreads and warp shuffles are real
** synchronisation (a barrier over the block's live threads; a warp exchange with checks);
** the threads of other kernels run one after another on the calling thread (KEMU_THREADS=1:
** as the synchronising ones). __shared__ becomes static storage, shared by the threads of
** the block that is running.
*/
#ifndef KEMU_H
#define KEMU_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <math.h>
#include <tuple>
#include <utility>
#include <type_traits>

/* ---- qualifiers ------------------------------------------------------------------------ */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__ static

/* ---- the runtime API subset (values as in CUDA's driver_types.h where it matters) ------- */

struct uint3 { unsigned int x, y, z; };
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
};
typedef struct kemu_stream_ *cudaStream_t;
enum cudaError {
  cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9, cudaErrorNoDevice = 100, cudaErrorLaunchFailure = 719
};
typedef enum cudaError cudaError_t;
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMultiProcessorCount = 16 };

extern "C" {
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int dev);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaDeviceSynchronize(void);
const char *cudaGetErrorString(cudaError_t e);
}

/* ---- built-in variables ----------------------------------------------------------------- */

extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;
static constexpr int warpSize = 32;

/* ---- synchronisation (kemu.cpp) ------------------------------------------------------------ */

namespace kemu {
[[noreturn]] void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void syncthreads(void);
/* Exchanges 'bits' among the lanes of 'mask' of the caller's warp; all[] gets every lane's. */
void warp_exchange(unsigned mask, uint64_t bits, uint64_t all[32], const char *what);
}

static inline void __syncthreads(void) { kemu::syncthreads(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  uint64_t all[32];
  kemu::warp_exchange(mask, 0, all, "__syncwarp");
}

namespace kemu {
static inline unsigned lane_id(void) {
  return ((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) % 32u;
}
template <class T> static inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "kemu: shuffle of a type over 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof v);
  return b;
}
template <class T> static inline T from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof v);
  return v;
}
/* The lane whose value lane 'l' receives ('src' out of the segment: its own). */
template <class T> static inline T shfl(unsigned mask, T v, int src, int width, const char *what) {
  unsigned l = lane_id();
  if (width <= 0 || width > 32 || (width & (width - 1)))
    fail("%s: width %d is not a power of 2 up to 32", what, width);
  uint64_t all[32];
  warp_exchange(mask, to_bits(v), all, what);
  if (src < 0 || src / width != (int)l / width) return v;
  if (!(mask >> src & 1u))
    fail("%s: lane %u reads lane %d, which is not in the mask 0x%08x", what, l, src, mask);
  return from_bits<T>(all[src]);
}
}

template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  int l = (int)kemu::lane_id();
  return kemu::shfl(mask, v, l / width * width + (src % width + width) % width, width, "__shfl_sync");
}
template <class T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  int l = (int)kemu::lane_id();
  return kemu::shfl(mask, v, l + (int)d, width, "__shfl_down_sync");
}
template <class T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  int l = (int)kemu::lane_id();
  return kemu::shfl(mask, v, (l % width) >= (int)d ? l - (int)d : -1, width, "__shfl_up_sync");
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
  int l = (int)kemu::lane_id();
  return kemu::shfl(mask, v, l ^ m, width, "__shfl_xor_sync");
}
static inline unsigned __ballot_sync(unsigned mask, int pred) {
  uint64_t all[32];
  kemu::warp_exchange(mask, pred != 0, all, "__ballot_sync");
  unsigned r = 0;
  for (int k = 0; k < 32; k++) if ((mask >> k & 1u) && all[k]) r |= 1u << k;
  return r;
}
static inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
static inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }
static inline unsigned __activemask(void) { return 0xffffffffu; }

/* ---- atomics (relaxed, as the device's) ---------------------------------------------------- */

template <class T> static inline T kemu_atomic_rmw(T *p, T v, int op) {
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  for (;;) {
    T nv = op == 0 ? (T)(old + v) : op == 1 ? (v > old ? v : old) : (v < old ? v : old);
    if (__atomic_compare_exchange(p, &old, &nv, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return old;
  }
}
static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline float atomicAdd(float *p, float v) { return kemu_atomic_rmw(p, v, 0); }
static inline double atomicAdd(double *p, double v) { return kemu_atomic_rmw(p, v, 0); }
static inline int atomicMax(int *p, int v) { return kemu_atomic_rmw(p, v, 1); }
static inline unsigned atomicMax(unsigned *p, unsigned v) { return kemu_atomic_rmw(p, v, 1); }
static inline long long atomicMax(long long *p, long long v) { return kemu_atomic_rmw(p, v, 1); }
static inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) { return kemu_atomic_rmw(p, v, 1); }
static inline int atomicMin(int *p, int v) { return kemu_atomic_rmw(p, v, 2); }
static inline unsigned atomicMin(unsigned *p, unsigned v) { return kemu_atomic_rmw(p, v, 2); }
static inline long long atomicMin(long long *p, long long v) { return kemu_atomic_rmw(p, v, 2); }
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) { return kemu_atomic_rmw(p, v, 2); }
template <class T> static inline T atomicCAS(T *p, T cmp, T v) {
  __atomic_compare_exchange(p, &cmp, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp;
}
template <class T> static inline T atomicExch(T *p, T v) {
  T old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* ---- intrinsics ------------------------------------------------------------------------------- */

template <class T> static inline T __ldg(const T *p) { return *p; }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }
static inline double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }
/* __expf and __logf: glibc's own (same names) */
static inline float __fdividef(float a, float b) { return a / b; }
/* rounded, never fused (g++ here targets no FMA unit) */
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }

/* ---- launches ------------------------------------------------------------------------------- */

namespace kemu {
struct config {
  dim3 grid, block;
  size_t shmem;
  const char *name, *where;
  bool sync;
};
/* Runs body(ctx) in every thread of every block of c (or records the launch error). */
void run(const config &c, void (*body)(void *), void *ctx);
/* Every kernel's threads as those of a synchronising one (as KEMU_THREADS=1). */
void force_threads(bool on);

template <class... P> struct launcher {
  void (*f)(P...);
  config c;
  void operator()(P... a) const {
    struct state { void (*f)(P...); std::tuple<P...> t; } st{ f, std::tuple<P...>(a...) };
    run(c, [](void *ctx) { state *s = (state *)ctx; std::apply(s->f, s->t); }, &st);
  }
};
template <class... P>
static inline launcher<P...> launch(void (*f)(P...), const char *name, const char *where, int sync, dim3 g,
                                    dim3 b, size_t shmem = 0, cudaStream_t s = 0) {
  (void)s;
  return launcher<P...>{ f, config{ g, b, shmem, name, where, sync != 0 } };
}
}

#endif
