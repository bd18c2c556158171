// A merging t-digest (Dunning), as RedisBloom 2.4's TDIGEST.* keeps it (`TDIS-TYPE`): a buffer
// of `6 * compression + 10` centroids, new samples appended unmerged and merged in one sorted
// pass when the buffer fills or a query needs it. Every step (the sort, the merge rule
// q(1 - q) >= w * compression / (2 pi W ln W), the interpolations) is done in the same order of
// floating-point operations as RedisBloom's, so quantiles, ranks and CDFs are the same to the
// bit and a data set moves between the two modules unchanged.
//
// Pure: no I/O; memory comes from the caller's allocator (a Redis module passes RedisModule_Alloc
// so that the server accounts for it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/filter_chain.hpp"

namespace redbloom::tdigest {

// Centroids a digest of `compression` holds; nullopt when it cannot be held (RedisBloom's
// buffer size is an int).
[[nodiscard]] std::optional<std::size_t> capacity_for(long long compression) noexcept;

// Everything an RDB value holds, field for field.
struct Saved {
  double compression = 0;
  double min = 0;
  double max = 0;
  long long capacity = 0;
  long long merged_nodes = 0;
  long long unmerged_nodes = 0;
  long long total_compressions = 0;
  double merged_weight = 0;
  double unmerged_weight = 0;
};

class Digest {
 public:
  // An empty digest; bad_alloc when its buffer cannot be allocated, InvalidArgument when
  // capacity_for(compression) has none.
  Digest(long long compression, ChainAllocator allocator);
  Digest(const Digest& other);
  Digest& operator=(const Digest&) = delete;
  ~Digest();

  // Appends `weight` samples at `mean`; false (nothing changed) when a weight would overflow.
  bool add(double mean, long long weight) noexcept;
  // Merges the unmerged samples; false when the weights overflow a double's range.
  bool compress() noexcept;
  // Adds every centroid of `from` (compressed first) to this digest; false on overflow, with the
  // centroids before it added.
  bool merge_from(Digest& from) noexcept;
  void reset() noexcept;

  // NaN for an empty digest or q outside [0, 1].
  [[nodiscard]] double quantile(double q) noexcept;
  // quantiles ascending: one walk over the centroids, as TDIGEST.QUANTILE does for each ascending
  // run of its arguments.
  void ascending_quantiles(std::span<const double> quantiles, std::span<double> out) noexcept;
  [[nodiscard]] double cdf(double value) noexcept;
  [[nodiscard]] double trimmed_mean(double low_cut, double high_cut) noexcept;

  [[nodiscard]] long long size() const noexcept { return merged_weight_ + unmerged_weight_; }
  [[nodiscard]] double min() const noexcept { return min_; }
  [[nodiscard]] double max() const noexcept { return max_; }
  [[nodiscard]] double compression() const noexcept { return compression_; }
  [[nodiscard]] int capacity() const noexcept { return capacity_; }
  [[nodiscard]] int merged_nodes() const noexcept { return merged_nodes_; }
  [[nodiscard]] int unmerged_nodes() const noexcept { return unmerged_nodes_; }
  [[nodiscard]] long long merged_weight() const noexcept { return merged_weight_; }
  [[nodiscard]] long long unmerged_weight() const noexcept { return unmerged_weight_; }
  [[nodiscard]] long long total_compressions() const noexcept { return total_compressions_; }
  [[nodiscard]] double mean_at(int i) const noexcept { return means_[i]; }
  [[nodiscard]] long long weight_at(int i) const noexcept { return weights_[i]; }

  // The RDB fields; compresses first, as RedisBloom's save does.
  [[nodiscard]] Saved saved() noexcept;
  // A digest from RDB fields and its merged centroids (means, then weights as doubles), or the
  // reason the data cannot be a digest (checked before anything is allocated past the buffer
  // the compression asks for).
  [[nodiscard]] static std::string problem(const Saved& saved) noexcept;
  void restore(const Saved& saved, std::span<const double> means,
               std::span<const double> weights) noexcept;

 private:
  double iterate_to_index(double index, double left_weight, double* weight_so_far,
                          int* node) const noexcept;
  double trimmed_mean_of_weights(double leftmost, double rightmost) const noexcept;

  ChainAllocator allocator_;
  double compression_;
  double min_;
  double max_;
  int capacity_;
  int merged_nodes_ = 0;
  int unmerged_nodes_ = 0;
  long long total_compressions_ = 0;
  long long merged_weight_ = 0;
  long long unmerged_weight_ = 0;
  double* means_ = nullptr;
  long long* weights_ = nullptr;
};

}  // namespace redbloom::tdigest
