// tools/philox_curand_check.cu — checks kernels/philox.h against cuRAND's device API on a
// GPU: for many (seed, block < 2^62) the words of gl_philox_block (on the device and on the host)
// must equal curand_init(seed, 0, 4 * block) + curand4(). Build and run:
//   nvcc -O2 -std=c++17 -arch=sm_90 tools/philox_curand_check.cu -o /tmp/pc && /tmp/pc
#include <cstdio>
#include <curand_kernel.h>
#include "../kernels/philox.h"

__global__ void check(const unsigned long long *seeds, const unsigned long long *blocks, int n, uint32_t *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  curandStatePhilox4_32_10_t st;
  curand_init(seeds[i], 0, 4 * blocks[i], &st);
  uint4 c = curand4(&st);
  uint32_t w[4];
  gl_philox_block(seeds[i], blocks[i], w);
  uint32_t *o = out + 12 * i;
  o[0] = c.x; o[1] = c.y; o[2] = c.z; o[3] = c.w;
  o[4] = w[0]; o[5] = w[1]; o[6] = w[2]; o[7] = w[3];
  uint4 d = curand4(&st);                       // the next block follows on
  o[8] = d.x; o[9] = d.y; o[10] = d.z; o[11] = d.w;
}

int main() {
  const int n = 1 << 16;
  unsigned long long *s, *b;
  uint32_t *out;
  cudaMallocManaged(&s, n * 8); cudaMallocManaged(&b, n * 8); cudaMallocManaged(&out, n * 48);
  unsigned long long x = 88172645463325252ull;
  for (int i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17; s[i] = i < 4 ? (unsigned long long)i * 0xffffffffull : x;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    b[i] = i % 3 == 0 ? (unsigned long long)i : i % 3 == 1 ? x : (x & 0xffffffffull) | 0xffffffff00000000ull;
    if (i == 5) b[i] = 0xffffffffull;              // carry into the high word
    b[i] &= (1ull << 62) - 1;                      // curand_init's offset 4 * b must fit 64 bits
  }
  check<<<(n + 255) / 256, 256>>>(s, b, n, out);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("CUDA error %s\n", cudaGetErrorString(e)); return 2; }
  int bad = 0;
  for (int i = 0; i < n; i++) {
    uint32_t h[4], h2[4];
    gl_philox_block(s[i], b[i], h);
    gl_philox_block(s[i], b[i] + 1, h2);
    for (int k = 0; k < 4; k++)
      if (out[12 * i + k] != out[12 * i + 4 + k] || h[k] != out[12 * i + k] || h2[k] != out[12 * i + 8 + k]) {
        if (bad++ < 5) printf("mismatch seed %llu block %llu word %d\n", s[i], b[i], k);
      }
  }
  printf("philox.h vs cuRAND curand_init/curand4: %d blocks, %d mismatches; block0 key0 = %08x %08x %08x %08x\n",
         n, bad, out[4], out[5], out[6], out[7]);
  return bad != 0;
}
