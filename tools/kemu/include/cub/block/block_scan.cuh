/*
** kemu's stand-in for cub::BlockScan (tools/kemu): the block's threads scan through
** TempStorage with one barrier, and like CUB's, the storage may only be reused after the
** caller's own __syncthreads (a missing one shows up as a race or a wrong result).
*/
#ifndef KEMU_CUB_BLOCK_SCAN
#define KEMU_CUB_BLOCK_SCAN
#include "../../../kemu.h"

namespace cub {
template <class T, int BLOCK_DIM_X, int ALGORITHM = 0, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockScan {
  static constexpr int N = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

 public:
  struct TempStorage { T v[N]; };
  explicit BlockScan(TempStorage &t) : s(t) {
    if ((int)(blockDim.x * blockDim.y * blockDim.z) != N) kemu::fail("cub::BlockScan of %d threads in a block of %u", N, blockDim.x * blockDim.y * blockDim.z);
  }
  template <class Op> void InclusiveScan(T in, T &out, Op op, T &aggregate) {
    int t = tid();
    s.v[t] = in;
    __syncthreads();
    T a = s.v[0];
    for (int k = 1; k <= t; k++) a = op(a, s.v[k]);
    out = a;
    for (int k = t + 1; k < N; k++) a = op(a, s.v[k]);
    aggregate = a;
  }
  template <class Op> void InclusiveScan(T in, T &out, Op op) { T agg; InclusiveScan(in, out, op, agg); }
  void InclusiveSum(T in, T &out) { InclusiveScan(in, out, [](const T &a, const T &b) { return (T)(a + b); }); }
  void InclusiveSum(T in, T &out, T &agg) { InclusiveScan(in, out, [](const T &a, const T &b) { return (T)(a + b); }, agg); }
  void ExclusiveSum(T in, T &out, T &agg) {
    T inc;
    InclusiveSum(in, inc, agg);
    out = (T)(inc - in);
  }
  void ExclusiveSum(T in, T &out) { T agg; ExclusiveSum(in, out, agg); }

 private:
  TempStorage &s;
  static int tid() { return (int)((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x); }
};
}  // namespace cub
#endif
