/* kemu's stand-in for cub::DeviceRadixSort::SortPairs (tools/kemu): a stable host sort by
** the key bits [begin, end), over host memory. */
#ifndef KEMU_CUB_DEVICE_RADIX_SORT
#define KEMU_CUB_DEVICE_RADIX_SORT
#include "../../../kemu.h"
#include <algorithm>
#include <vector>

namespace cub {
namespace kemu_detail {
template <class K, class V>
static void sort_range(const K *kin, K *kout, const V *vin, V *vout, int64_t lo, int64_t hi, int b0, int b1) {
  std::vector<int64_t> ix;
  for (int64_t i = lo; i < hi; i++) ix.push_back(i);
  int nb = (int)(8 * sizeof(K));
  K mask = b1 - b0 >= nb ? (K)~(K)0 : (K)((((K)1 << (b1 - b0)) - 1) << b0);
  std::stable_sort(ix.begin(), ix.end(), [&](int64_t a, int64_t b) { return (kin[a] & mask) < (kin[b] & mask); });
  for (int64_t i = lo; i < hi; i++) {
    kout[i] = kin[ix[i - lo]];
    vout[i] = vin[ix[i - lo]];
  }
}
}  // namespace kemu_detail

struct DeviceRadixSort {
  template <class K, class V, class N>
  static cudaError_t SortPairs(void *tmp, size_t &bytes, const K *kin, K *kout, const V *vin, V *vout, N n,
                               int begin_bit = 0, int end_bit = (int)(8 * sizeof(K)), cudaStream_t s = 0) {
    (void)s;
    if (tmp == NULL) { bytes = 64; return cudaSuccess; }
    if (bytes < 64) return cudaErrorInvalidValue;
    kemu_detail::sort_range(kin, kout, vin, vout, 0, (int64_t)n, begin_bit, end_bit);
    return cudaSuccess;
  }
};
}  // namespace cub
#endif
