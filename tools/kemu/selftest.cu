/*
** selftest.cu — kernels with deliberate bugs, for kemu's own test (test_kemu.cpp "self"):
** each must be caught by the emulator or a sanitizer. Compiled only into kemu_test.
*/
#include "cuda_common.cuh"

/* Lanes 16..31 of every warp return, then the others shuffle with a full mask. */
__global__ void kemu_bad_shuffle(float *out) {
  float v = (float)threadIdx.x;
  if (threadIdx.x % 32 >= 16) return;
  v += __shfl_down_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

/* One element past the end. */
__global__ void kemu_bad_bounds(float *out, int n) {
  GL_KLOOP(i, n + 1) out[i] = 1.0f;
}

/* A 16-byte load from an address that is only 4-byte aligned. */
__global__ void kemu_bad_align(const float *in, float *out) {
  gl_pack<float, 4> p = *(const gl_pack<float, 4> *)(in + 1);
  out[threadIdx.x] = p.v[0];
}

/* Shared memory read by a neighbour without a barrier in between (a race). */
__global__ void kemu_bad_race(float *out) {
  __shared__ float s[GL_KTHREADS];
  s[threadIdx.x] = (float)threadIdx.x;
  out[threadIdx.x] = s[(threadIdx.x + 1) % GL_KTHREADS];
}

/* The same with the barrier: must pass everywhere. */
__global__ void kemu_good_sync(float *out) {
  __shared__ float s[GL_KTHREADS];
  s[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  float v = s[(threadIdx.x + 1) % GL_KTHREADS];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  out[blockIdx.x * GL_KTHREADS + threadIdx.x] = v;
}

extern "C" int kemu_selftest(int which, float *buf, int n) {
  switch (which) {
    case 0: kemu_bad_shuffle<<<1, 64, 0, 0>>>(buf); break;
    case 1: kemu_bad_bounds<<<gl_kblocks(n), GL_KTHREADS, 0, 0>>>(buf, n); break;
    case 2: kemu_bad_align<<<1, 32, 0, 0>>>(buf, buf + 8); break;
    case 3: kemu_bad_race<<<1, GL_KTHREADS, 0, 0>>>(buf); break;
    case 4: kemu_good_sync<<<2, GL_KTHREADS, 0, 0>>>(buf); break;
    case 5: kemu_good_sync<<<2, 2048, 0, 0>>>(buf); break;                  /* too many threads */
    case 6: kemu_good_sync<<<dim3(1, 70000), GL_KTHREADS, 0, 0>>>(buf); break;  /* grid.y too big */
    default: return -1;
  }
  return gl_klaunched();
}
