/* kemu's stand-in for cub::DeviceSegmentedRadixSort::SortPairs (tools/kemu). */
#ifndef KEMU_CUB_DEVICE_SEGMENTED_RADIX_SORT
#define KEMU_CUB_DEVICE_SEGMENTED_RADIX_SORT
#include "device_radix_sort.cuh"

namespace cub {
struct DeviceSegmentedRadixSort {
  template <class K, class V, class N, class O>
  static cudaError_t SortPairs(void *tmp, size_t &bytes, const K *kin, K *kout, const V *vin, V *vout, N n,
                               int segs, O begin, O end, int begin_bit = 0, int end_bit = (int)(8 * sizeof(K)),
                               cudaStream_t s = 0) {
    (void)s;
    (void)n;
    if (tmp == NULL) { bytes = 64; return cudaSuccess; }
    if (bytes < 64) return cudaErrorInvalidValue;
    for (int g = 0; g < segs; g++)
      kemu_detail::sort_range(kin, kout, vin, vout, (int64_t)begin[g], (int64_t)end[g], begin_bit, end_bit);
    return cudaSuccess;
  }
};
}  // namespace cub
#endif
