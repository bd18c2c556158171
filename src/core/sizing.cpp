#include "redbloom/sizing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "redbloom/error.hpp"

namespace redbloom {
namespace {

constexpr double kLn2 = std::numbers::ln2;

std::string shown(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

void check_items_and_rate(double n, double p) {
  if (!(n >= 1.0) || !std::isfinite(n)) {
    throw InvalidArgument("capacity must be a finite number of items, at least 1 (got " + shown(n) +
                          ")");
  }
  check_error_rate(p);
}

// The bits a sizing formula asked for, refused when no filter can hold them.
std::uint64_t checked_bits(double bits, double n, double p) {
  if (!(bits <= static_cast<double>(kMaxFilterBits))) {
    throw InvalidArgument("a filter for " + shown(n) + " items at error rate " + shown(p) +
                          " needs " + shown(bits) +
                          " bits; a filter holds at most 2^63 bits (1 "
                          "EiB): spread the items over several filters, or allow a higher rate");
  }
  return static_cast<std::uint64_t>(std::ceil(bits));
}

// Poisson(lambda) probabilities over the range of j that carries all but ~1e-30 of the mass.
struct PoissonWeights {
  std::uint64_t first = 0;
  std::vector<double> weights;
};

PoissonWeights poisson_weights(double lambda) {
  PoissonWeights out;
  const double spread = 12.0 * std::sqrt(lambda) + 40.0;
  const double lo = std::max(0.0, std::floor(lambda - spread));
  const double hi = std::ceil(lambda + spread);
  out.first = static_cast<std::uint64_t>(lo);
  const double log_lambda = lambda > 0 ? std::log(lambda) : 0.0;
  for (double j = lo; j <= hi; j += 1.0) {
    out.weights.push_back(std::exp(-lambda + j * log_lambda - std::lgamma(j + 1.0)));
  }
  return out;
}

double blocked_rate(const PoissonWeights& pois, double k) {
  const double miss_per_item = blocked_bit_survival(static_cast<std::uint32_t>(k));
  double miss = std::pow(miss_per_item, static_cast<double>(pois.first));  // miss_per_item^j
  double rate = 0.0;
  for (double w : pois.weights) {
    rate += w * std::pow(1.0 - miss, k);
    miss *= miss_per_item;
  }
  return rate;
}

// Best k and its rate for a given Poisson load. The rate is unimodal in k, so the scan stops
// once it has risen past the minimum.
std::pair<std::uint32_t, double> best_blocked(double lambda) {
  const PoissonWeights pois = poisson_weights(lambda);
  std::uint32_t best_k = 1;
  double best = std::numeric_limits<double>::infinity();
  for (std::uint32_t k = 1; k <= kMaxHashes; ++k) {
    const double rate = blocked_rate(pois, k);
    if (rate < best) {
      best = rate;
      best_k = k;
    } else if (k > best_k + 2) {
      break;
    }
  }
  return {best_k, best};
}

BitsAndHashes size_blocked(double n, double p) {
  check_items_and_rate(n, p);
  // The rate falls monotonically as bits per item grow; bisect on bits per item.
  double lo = 0.5;
  double hi = 4096.0;
  if (const double floor = best_blocked(kBlockBits / hi).second; floor > p) {
    throw InvalidArgument("error rate " + shown(p) + " is below what a blocked filter can reach (" +
                          shown(floor) + " at 4096 bits per item); use --layout classic for it");
  }
  for (int i = 0; i < 100 && hi - lo > 1e-6; ++i) {
    const double mid = 0.5 * (lo + hi);
    (best_blocked(kBlockBits / mid).second <= p ? hi : lo) = mid;
  }
  const std::uint64_t bits = checked_bits(hi * n, n, p);
  return {bits, blocked_best_hashes(static_cast<double>(bits), n)};
}

}  // namespace

void check_error_rate(double p) {
  const std::string rule = "the error rate must be above 0 and at most 0.5 (0.01 is common)";
  if (p > kMaxErrorRate) {
    throw InvalidArgument("error rate " + shown(p) + " is too high: " + rule +
                          "; above 0.5 a filter answers 'present' for most items it never saw");
  }
  if (!(p > 0.0)) throw InvalidArgument("error rate " + shown(p) + " is too low: " + rule);
}

std::uint64_t classic_bits_for(double n, double p) {
  check_items_and_rate(n, p);
  return checked_bits(-n * std::log(p) / (kLn2 * kLn2), n, p);
}

std::uint32_t classic_hashes_for(double bits_per_item) {
  const double k = std::round(bits_per_item * kLn2);
  return static_cast<std::uint32_t>(std::clamp(k, 1.0, static_cast<double>(kMaxHashes)));
}

double classic_false_positive_rate(double m, double k, double n) {
  return std::pow(1.0 - std::exp(-k * n / m), k);
}

double blocked_false_positive_rate(double m, double k, double n) {
  return blocked_rate(poisson_weights(static_cast<double>(kBlockBits) * n / m), k);
}

std::uint32_t blocked_best_hashes(double m, double n) {
  return best_blocked(static_cast<double>(kBlockBits) * n / m).first;
}

BitsAndHashes blocked_bits_for(double n, double p) {
  // Bisecting takes thousands of pow() calls, and opening a growing filter sizes each link
  // again with the same (n, p): the last answers are kept, per thread (the core takes no locks).
  struct Recent {
    double n = 0;
    double p = 0;
    BitsAndHashes sized{};
  };
  thread_local std::array<Recent, 16> recent;
  thread_local std::size_t filled = 0;
  thread_local std::size_t next = 0;
  for (std::size_t i = 0; i < filled; ++i) {
    if (recent[i].n == n && recent[i].p == p) return recent[i].sized;
  }
  const BitsAndHashes sized = size_blocked(n, p);  // throws for what no filter can be
  recent[next] = {n, p, sized};
  next = (next + 1) % recent.size();
  filled = std::max(filled, next == 0 ? recent.size() : next);
  return sized;
}

double classic_estimated_items(double m, double k, double ones) {
  if (ones >= m) return std::numeric_limits<double>::infinity();
  return -(m / k) * std::log1p(-ones / m);
}

double blocked_bit_survival(std::uint32_t k) {
  // k = 8a + c: c of the 8 words get a + 1 probes, the others a; each probe picks 1 of 64 bits.
  const double a = k / 8;
  const double c = k % 8;
  constexpr double kMiss = 63.0 / 64.0;
  return (c / 8) * std::pow(kMiss, a + 1) + (1 - c / 8) * std::pow(kMiss, a);
}

double blocked_estimated_items(double m, double k, double ones) {
  if (ones >= m) return std::numeric_limits<double>::infinity();
  const double per_item = 1.0 - blocked_bit_survival(static_cast<std::uint32_t>(k));
  return -std::log1p(-ones / m) * m / (static_cast<double>(kBlockBits) * per_item);
}

}  // namespace redbloom
