/* kemu's stand-in for cub::DeviceScan (tools/kemu): a host loop over host memory. */
#ifndef KEMU_CUB_DEVICE_SCAN
#define KEMU_CUB_DEVICE_SCAN
#include "../../../kemu.h"

namespace cub {
struct DeviceScan {
  template <class In, class Out, class N>
  static cudaError_t InclusiveSum(void *tmp, size_t &bytes, In in, Out out, N n, cudaStream_t s = 0) {
    (void)s;
    if (tmp == NULL) { bytes = 64; return cudaSuccess; }
    if (bytes < 64) return cudaErrorInvalidValue;
    if (n <= 0) return cudaSuccess;
    auto acc = in[0];
    out[0] = acc;
    for (N i = 1; i < n; i++) { acc = acc + in[i]; out[i] = acc; }
    return cudaSuccess;
  }
};
}  // namespace cub
#endif
