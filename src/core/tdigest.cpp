#include "core/tdigest.hpp"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>

#include "redbloom/error.hpp"

namespace redbloom::tdigest {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The mean of two centroids, clamped between them (rounding could otherwise leave the range).
double weighted_average_sorted(double x1, double w1, double x2, double w2) {
  const double x = (x1 * w1 + x2 * w2) / (w1 + w2);
  return std::max(x1, std::min(x, x2));
}

double weighted_average(double x1, double w1, double x2, double w2) {
  return x1 <= x2 ? weighted_average_sorted(x1, w1, x2, w2)
                  : weighted_average_sorted(x2, w2, x1, w1);
}

bool add_fits(long long a, long long b) {
  return b < 0 ? a >= LLONG_MAX - b : a <= LLONG_MAX - b;
}

// A weight sum whose normaliser 2 pi W ln W is no longer finite cannot be merged.
bool weights_overflow(double unmerged, double total) {
  if (unmerged == INFINITY || total == INFINITY) return true;
  return 2 * kPi * total * std::log(total) == INFINITY;
}

void swap_centroids(double* means, long long* weights, int i, int j) {
  std::swap(means[i], means[j]);
  std::swap(weights[i], weights[j]);
}

// Lomuto's partition around the middle element. The sort is not stable, so equal means keep the
// order this exact partition gives them: the merge that follows depends on it.
int partition(double* means, long long* weights, int start, int end, int pivot) {
  const double pivot_mean = means[pivot];
  swap_centroids(means, weights, pivot, end);
  int i = start - 1;
  for (int j = start; j < end; ++j) {
    if (means[j] < pivot_mean) {
      ++i;
      swap_centroids(means, weights, i, j);
    }
  }
  swap_centroids(means, weights, i + 1, end);
  return i + 1;
}

// Sorts [start, end] (inclusive) by mean, weights alongside.
void sort_centroids(double* means, long long* weights, int start, int end) {
  while (start < end) {
    if (end - start == 1) {
      if (means[start] > means[end]) swap_centroids(means, weights, start, end);
      return;
    }
    const int middle = partition(means, weights, start, end, (start + end) / 2);
    if (middle > start) sort_centroids(means, weights, start, middle - 1);
    start = middle + 1;
  }
}

}  // namespace

std::optional<std::size_t> capacity_for(long long compression) noexcept {
  if (compression <= 0) return std::nullopt;
  const auto c = static_cast<unsigned long long>(compression);
  if (c > (static_cast<unsigned long long>(INT_MAX) - 10) / 6) return std::nullopt;
  return static_cast<std::size_t>(6 * c + 10);
}

Digest::Digest(long long compression, ChainAllocator allocator)
    : allocator_(allocator), compression_(static_cast<double>(compression)) {
  const auto capacity = capacity_for(compression);
  if (!capacity) throw InvalidArgument("t-digest compression out of range");
  capacity_ = static_cast<int>(*capacity);
  void* means = allocator_.allocate(*capacity * sizeof(double));
  void* weights = allocator_.allocate(*capacity * sizeof(long long));
  if (means == nullptr || weights == nullptr) {
    if (means != nullptr) allocator_.release(means);
    if (weights != nullptr) allocator_.release(weights);
    throw std::bad_alloc();
  }
  means_ = static_cast<double*>(means);
  weights_ = static_cast<long long*>(weights);
  std::memset(means_, 0, *capacity * sizeof(double));
  std::memset(weights_, 0, *capacity * sizeof(long long));
  reset();
}

Digest::Digest(const Digest& other)
    : Digest(static_cast<long long>(other.compression_), other.allocator_) {
  min_ = other.min_;
  max_ = other.max_;
  merged_nodes_ = other.merged_nodes_;
  unmerged_nodes_ = other.unmerged_nodes_;
  total_compressions_ = other.total_compressions_;
  merged_weight_ = other.merged_weight_;
  unmerged_weight_ = other.unmerged_weight_;
  std::memcpy(means_, other.means_, static_cast<std::size_t>(capacity_) * sizeof(double));
  std::memcpy(weights_, other.weights_, static_cast<std::size_t>(capacity_) * sizeof(long long));
}

Digest::~Digest() {
  allocator_.release(means_);
  allocator_.release(weights_);
}

void Digest::reset() noexcept {
  min_ = DBL_MAX;
  max_ = -DBL_MAX;
  merged_nodes_ = 0;
  merged_weight_ = 0;
  unmerged_nodes_ = 0;
  unmerged_weight_ = 0;
  total_compressions_ = 0;
}

bool Digest::add(double mean, long long weight) noexcept {
  if (merged_nodes_ + unmerged_nodes_ >= capacity_ - 1 && !compress()) return false;
  const int position = merged_nodes_ + unmerged_nodes_;
  if (position >= capacity_) return false;
  if (!add_fits(unmerged_weight_, weight)) return false;
  const long long new_unmerged = unmerged_weight_ + weight;
  if (!add_fits(new_unmerged, merged_weight_)) return false;
  const long long new_total = new_unmerged + merged_weight_;
  if (weights_overflow(static_cast<double>(new_unmerged), static_cast<double>(new_total))) {
    return false;
  }
  if (mean < min_) min_ = mean;
  if (mean > max_) max_ = mean;
  means_[position] = mean;
  weights_[position] = weight;
  ++unmerged_nodes_;
  unmerged_weight_ = new_unmerged;
  return true;
}

bool Digest::compress() noexcept {
  if (unmerged_nodes_ == 0) return true;
  const int n = merged_nodes_ + unmerged_nodes_;
  sort_centroids(means_, weights_, 0, n - 1);
  const double total = static_cast<double>(merged_weight_) + static_cast<double>(unmerged_weight_);
  if (weights_overflow(static_cast<double>(unmerged_weight_), total)) return false;
  // A single sample stays unmerged (sorted), as RedisBloom leaves it.
  if (total <= 1) return true;
  const double denominator = 2 * kPi * total * std::log(total);
  if (denominator == INFINITY) return false;
  const double normalizer = compression_ / denominator;
  if (normalizer == INFINITY) return false;
  int current = 0;
  double weight_so_far = 0;
  for (int i = 1; i < n; ++i) {
    const double proposed =
        static_cast<double>(weights_[current]) + static_cast<double>(weights_[i]);
    const double z = proposed * normalizer;
    const double q0 = weight_so_far / total;
    const double q2 = (weight_so_far + proposed) / total;
    if (z <= q0 * (1 - q0) && z <= q2 * (1 - q2)) {
      weights_[current] += weights_[i];
      const double delta = means_[i] - means_[current];
      means_[current] +=
          delta * static_cast<double>(weights_[i]) / static_cast<double>(weights_[current]);
    } else {
      weight_so_far += static_cast<double>(weights_[current]);
      ++current;
      weights_[current] = weights_[i];
      means_[current] = means_[i];
    }
    if (current != i) {
      weights_[i] = 0;
      means_[i] = 0.0;
    }
  }
  merged_nodes_ = current + 1;
  merged_weight_ = static_cast<long long>(total);
  unmerged_nodes_ = 0;
  unmerged_weight_ = 0;
  ++total_compressions_;
  return true;
}

bool Digest::merge_from(Digest& from) noexcept {
  if (!compress() || !from.compress()) return false;
  const int n = from.merged_nodes_ + from.unmerged_nodes_;
  for (int i = 0; i < n; ++i) {
    if (!add(from.means_[i], from.weights_[i])) return false;
  }
  return true;
}

double Digest::cdf(double value) noexcept {
  compress();
  if (merged_nodes_ == 0) return kNaN;
  if (value < min_) return 0;
  if (value > max_) return 1;
  if (merged_nodes_ == 1) {
    const double width = max_ - min_;
    return value - min_ <= width ? 0.5 : (value - min_) / width;
  }
  const int n = merged_nodes_;
  const double total = static_cast<double>(merged_weight_);
  const double left_mean = means_[0];
  const double left_weight = static_cast<double>(weights_[0]);
  if (value < left_mean) {
    const double width = left_mean - min_;
    if (width <= 0) return 0;
    if (value == min_) return 0.5 / total;
    return (1 + (value - min_) / width * (left_weight / 2 - 1)) / total;
  }
  const double right_mean = means_[n - 1];
  const double right_weight = static_cast<double>(weights_[n - 1]);
  if (value > right_mean) {
    const double width = max_ - right_mean;
    if (width <= 0) return 1;
    if (value == max_) return 1 - 0.5 / total;
    return 1 - (1 + (max_ - value) / width * (right_weight / 2 - 1)) / total;
  }
  double weight_so_far = 0;
  for (int i = 0; i < n - 1; ++i) {
    if (means_[i] == value) {
      // Centroids exactly at the value count half.
      double at_value = 0;
      while (i < n && means_[i] == value) at_value += static_cast<double>(weights_[i++]);
      return (weight_so_far + at_value / 2) / total;
    }
    if (means_[i] <= value && value < means_[i + 1]) {
      const double weight = static_cast<double>(weights_[i]);
      const double next_weight = static_cast<double>(weights_[i + 1]);
      const double mean = means_[i];
      const double next_mean = means_[i + 1];
      const double dw = (weight + next_weight) / 2;
      if (!(next_mean - mean > 0)) return (weight_so_far + dw) / total;
      // A singleton's weight sits exactly at its mean: it takes no part in the interpolation.
      double left_excluded = 0;
      double right_excluded = 0;
      if (weight == 1) {
        if (next_weight == 1) return (weight_so_far + 1) / total;
        left_excluded = 0.5;
      } else if (next_weight == 1) {
        right_excluded = 0.5;
      }
      const double dw_no_singleton = dw - left_excluded - right_excluded;
      const double base = weight_so_far + weight / 2 + left_excluded;
      return (base + dw_no_singleton * (value - mean) / (next_mean - mean)) / total;
    }
    weight_so_far += static_cast<double>(weights_[i]);
  }
  return 1 - 0.5 / total;
}

double Digest::iterate_to_index(double index, double left_weight, double* weight_so_far,
                                int* node) const noexcept {
  const int n = merged_nodes_;
  if (left_weight > 1 && index < left_weight / 2) {
    // One sample sits at min: interpolate with the rest of the left centroid.
    return min_ + (index - 1) / (left_weight / 2 - 1) * (means_[0] - min_);
  }
  if (index > static_cast<double>(merged_weight_ - 1)) return max_;
  const double right_weight = static_cast<double>(weights_[n - 1]);
  const double right_mean = means_[n - 1];
  const double total = static_cast<double>(merged_weight_);
  if (right_weight > 1 && total - index <= right_weight / 2) {
    return max_ - (total - index - 1) / (right_weight / 2 - 1) * (max_ - right_mean);
  }
  for (; *node < n - 1; ++*node) {
    const int i = *node;
    const double weight = static_cast<double>(weights_[i]);
    const double next_weight = static_cast<double>(weights_[i + 1]);
    const double dw = (weight + next_weight) / 2;
    if (*weight_so_far + dw > index) {
      double left_unit = 0;
      if (weight == 1) {
        if (index - *weight_so_far < 0.5) return means_[i];
        left_unit = 0.5;
      }
      double right_unit = 0;
      if (next_weight == 1) {
        if (*weight_so_far + dw - index <= 0.5) return means_[i + 1];
        right_unit = 0.5;
      }
      const double z1 = index - *weight_so_far - left_unit;
      const double z2 = *weight_so_far + dw - index - right_unit;
      return weighted_average(means_[i], z2, means_[i + 1], z1);
    }
    *weight_so_far += dw;
  }
  const double z1 = index - total - right_weight / 2.0;
  const double z2 = right_weight / 2 - z1;
  return weighted_average(right_mean, z1, max_, z2);
}

double Digest::quantile(double q) noexcept {
  compress();
  if (q < 0.0 || q > 1.0 || merged_nodes_ == 0) return kNaN;
  if (merged_nodes_ == 1) return means_[0];
  const double index = q * static_cast<double>(merged_weight_);
  if (index < 1) return min_;
  const double left_weight = static_cast<double>(weights_[0]);
  double weight_so_far = left_weight / 2;
  int node = 0;
  return iterate_to_index(index, left_weight, &weight_so_far, &node);
}

void Digest::ascending_quantiles(std::span<const double> quantiles,
                                 std::span<double> out) noexcept {
  compress();
  if (merged_nodes_ <= 1) {
    for (std::size_t i = 0; i < quantiles.size(); ++i) {
      const bool inside = quantiles[i] >= 0.0 && quantiles[i] <= 1.0;
      out[i] = merged_nodes_ == 1 && inside ? means_[0] : kNaN;
    }
    return;
  }
  // No `index < 1` shortcut here: RedisBloom's batched walk has none either.
  const double left_weight = static_cast<double>(weights_[0]);
  double weight_so_far = left_weight / 2;
  int node = 0;
  for (std::size_t i = 0; i < quantiles.size(); ++i) {
    const double index = quantiles[i] * static_cast<double>(merged_weight_);
    out[i] = iterate_to_index(index, left_weight, &weight_so_far, &node);
  }
}

double Digest::trimmed_mean_of_weights(double leftmost, double rightmost) const noexcept {
  double count_done = 0;
  double sum = 0;
  double count = 0;
  for (int i = 0; i < merged_nodes_; ++i) {
    const double weight = static_cast<double>(weights_[i]);
    double count_add = weight;
    count_add -= std::min(std::max(0.0, leftmost - count_done), count_add);
    count_add = std::min(std::max(0.0, rightmost - count_done), count_add);
    count_done += weight;
    sum += means_[i] * count_add;
    count += count_add;
    if (count_done >= rightmost) break;
  }
  return sum / count;
}

double Digest::trimmed_mean(double low_cut, double high_cut) noexcept {
  compress();
  if (merged_nodes_ == 0 || low_cut < 0.0 || low_cut > 1.0 || high_cut < 0.0 || high_cut > 1.0) {
    return kNaN;
  }
  if (merged_nodes_ == 1) return means_[0];
  const double total = static_cast<double>(merged_weight_);
  return trimmed_mean_of_weights(std::floor(total * low_cut), std::ceil(total * high_cut));
}

Saved Digest::saved() noexcept {
  compress();
  return {compression_,
          min_,
          max_,
          capacity_,
          merged_nodes_,
          unmerged_nodes_,
          total_compressions_,
          static_cast<double>(merged_weight_),
          static_cast<double>(unmerged_weight_)};
}

std::string Digest::problem(const Saved& saved) noexcept {
  if (!(saved.compression >= 1 && saved.compression <= static_cast<double>(INT_MAX)) ||
      saved.compression != std::floor(saved.compression)) {
    return "compression out of range";
  }
  const auto capacity = capacity_for(static_cast<long long>(saved.compression));
  if (!capacity || saved.capacity != static_cast<long long>(*capacity)) {
    return "centroid capacity does not follow from the compression";
  }
  if (saved.merged_nodes < 0 || saved.merged_nodes > saved.capacity) {
    return "merged centroid count out of range";
  }
  // A digest of one sample is saved with it unmerged (compression merges from two on), its
  // centroid not saved: it loads as an unmerged count with zeroed centroids, as RedisBloom's does.
  if (saved.unmerged_nodes < 0 || saved.unmerged_nodes > saved.capacity - saved.merged_nodes) {
    return "unmerged centroid count out of range";
  }
  const auto weight_fits = [](double w) { return w >= 0 && w < 9.2e18; };
  if (!weight_fits(saved.merged_weight) || !weight_fits(saved.unmerged_weight) ||
      saved.total_compressions < 0) {
    return "weights out of range";
  }
  return {};
}

void Digest::restore(const Saved& saved, std::span<const double> means,
                     std::span<const double> weights) noexcept {
  min_ = saved.min;
  max_ = saved.max;
  merged_nodes_ = static_cast<int>(saved.merged_nodes);
  unmerged_nodes_ = static_cast<int>(saved.unmerged_nodes);
  total_compressions_ = saved.total_compressions;
  merged_weight_ = static_cast<long long>(saved.merged_weight);
  unmerged_weight_ = static_cast<long long>(saved.unmerged_weight);
  for (int i = 0; i < merged_nodes_; ++i) {
    means_[i] = means[static_cast<std::size_t>(i)];
    const double w = weights[static_cast<std::size_t>(i)];
    weights_[i] = w >= -9.2e18 && w <= 9.2e18 ? static_cast<long long>(w) : 0;
  }
}

}  // namespace redbloom::tdigest
