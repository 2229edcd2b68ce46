// A growable array in fixed-size chunks: elements never move once added, so
// growing never copies what is there and never holds two copies at once (a
// std::vector of a few million tasks briefly needs 1.5x its size and faults
// every page twice when it doubles). Indices are dense, as in a vector.
//
// A chunk's slots are default-initialized when it is allocated (left as they
// are for trivial types: the pages are first written by push_back).
#ifndef STACKSIM_SIM_TRACE_CHUNKED_VECTOR_H_
#define STACKSIM_SIM_TRACE_CHUNKED_VECTOR_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace stacksim::trace {

template <typename T, int kLog2ChunkSize = 14>
class ChunkedVector {
 public:
  static constexpr size_t kChunkSize = size_t{1} << kLog2ChunkSize;

  ChunkedVector() = default;
  ChunkedVector(ChunkedVector&&) noexcept = default;
  ChunkedVector& operator=(ChunkedVector&&) noexcept = default;
  ChunkedVector(const ChunkedVector& o) { *this = o; }
  ChunkedVector& operator=(const ChunkedVector& o) {
    if (this == &o) return *this;
    chunks_.clear();
    size_ = 0;
    for (size_t c = 0; c < o.chunks_.size(); ++c) {
      chunks_.push_back(std::make_unique_for_overwrite<T[]>(kChunkSize));
      const size_t n = std::min(kChunkSize, o.size_ - c * kChunkSize);
      std::copy(o.chunks_[c].get(), o.chunks_[c].get() + n, chunks_.back().get());
    }
    size_ = o.size_;
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return chunks_[i >> kLog2ChunkSize][i & (kChunkSize - 1)]; }
  const T& operator[](size_t i) const { return chunks_[i >> kLog2ChunkSize][i & (kChunkSize - 1)]; }
  T& back() { return (*this)[size_ - 1]; }

  void push_back(const T& v) {
    if ((size_ & (kChunkSize - 1)) == 0 && (size_ >> kLog2ChunkSize) == chunks_.size()) {
      chunks_.push_back(std::make_unique_for_overwrite<T[]>(kChunkSize));
    }
    (*this)[size_++] = v;
  }
  // Room left in the current chunk before the next push_back starts a new one.
  size_t room_in_chunk() const { return chunks_.size() * kChunkSize - size_; }
  // Pads with default elements up to the start of the next chunk (no-op at a
  // boundary), so that the next `count` <= kChunkSize elements are contiguous.
  void StartChunkIfLessRoomThan(size_t count) {
    if (room_in_chunk() >= count) return;
    while (size_ < chunks_.size() * kChunkSize) (*this)[size_++] = T{};
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace stacksim::trace

#endif  // STACKSIM_SIM_TRACE_CHUNKED_VECTOR_H_
