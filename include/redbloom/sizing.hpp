// Sizing math for Bloom filters: pure functions, no I/O.
//
// Notation: n items inserted, m bits, k probes per item, p false-positive rate.
//
// Classic layout (k probes anywhere in the item's partition). After n insertions a given bit
// is still 0 with probability (1 - 1/m)^(kn) ~= e^(-kn/m), so a query for an absent item finds
// all k of its bits set with probability
//     p = (1 - e^(-kn/m))^k.
// For fixed m/n this is smallest at k = (m/n) ln 2, where p = 2^-k, which gives
//     m = -n ln p / (ln 2)^2      (about 9.585 bits per item at p = 1%).
// We round k to the nearest integer, which gives the lower rate: floor(), as some libraries do,
// takes k = 6 instead of 7 at p = 1% (m/n = 9.585) and 1.4% more false positives.
//
// Blocked layout (all k probes inside one 512-bit block, one cache line; docs/design.md). The
// number of items that land in a block is Binomial(n, 512/m) ~= Poisson(lambda = 512 n / m).
// Blocks with more items than average are fuller, and the textbook formula underestimates the
// rate; summing over the Poisson distribution gives the true rate
//     p = sum_j Pois(j; lambda) * (1 - q^j)^k
// (Putze, Sanders, Singler: "Cache-, Hash- and Space-Efficient Bloom Filters", 2007), where q
// is the probability that one inserted item leaves a given bit of its block clear. Our probes
// go to 8 words in turn (k = 8a + c: c words get a + 1 probes, the rest a, each probe one of
// 64 bits), so q = (c/8)(63/64)^(a+1) + (1 - c/8)(63/64)^a; for k <= 8 that is 1 - k/512.
// A blocked filter therefore needs a few more bits per item for the same p; sizing searches
// for the smallest m (and best k) whose blocked rate meets the target.
#pragma once

#include <cstdint>

namespace redbloom {

// One cache line: the unit of the blocked layout.
inline constexpr std::uint64_t kBlockBits = 512;
inline constexpr std::uint32_t kMaxHashes = 64;
// Redis strings are at most 512 MiB, so SETBIT offsets stop at 2^32 - 1.
inline constexpr std::uint64_t kRedisMaxStringBits = std::uint64_t{1} << 32;
// The largest filter sizing makes: bit offsets and byte counts stay clear of 64-bit overflow.
inline constexpr std::uint64_t kMaxFilterBits = std::uint64_t{1} << 63;
// Above 0.5 a filter answers "present" for most absent items: sizing refuses such rates.
inline constexpr double kMaxErrorRate = 0.5;

// Refuses an error rate outside (0, kMaxErrorRate] with InvalidArgument, in the words every
// filter the library sizes, the CLI and Python share: "error rate 0.6 is too high: the error
// rate must be above 0 and at most 0.5 (0.01 is common); ...".
void check_error_rate(double p);

// m = ceil(-n ln p / (ln 2)^2). Throws InvalidArgument unless n >= 1, 0 < p <= 0.5 and m fits.
std::uint64_t classic_bits_for(double n, double p);

// k = round((m/n) ln 2), clamped to 1..64.
std::uint32_t classic_hashes_for(double bits_per_item);

// (1 - e^(-kn/m))^k.
double classic_false_positive_rate(double m, double k, double n);

// The Poisson sum above, for blocks of kBlockBits.
double blocked_false_positive_rate(double m, double k, double n);

struct BitsAndHashes {
  std::uint64_t bits;
  std::uint32_t hashes;
};

// Smallest m (and the k that minimises the blocked rate at that m) whose blocked rate is <= p.
BitsAndHashes blocked_bits_for(double n, double p);

// q above: the chance that one item in a block leaves a given bit of it clear.
double blocked_bit_survival(std::uint32_t k);

// The k in 1..64 that minimises the blocked rate for m bits and n items.
std::uint32_t blocked_best_hashes(double m, double n);

// Expected number of false positives among `queries` queries for absent items.
inline double expected_false_positives(double p, double queries) {
  return p * queries;
}

// Estimated number of distinct items from the count of set bits X.
// Classic: E[X] = m (1 - e^(-kn/m))  =>  n = -(m/k) ln(1 - X/m)   (Swamidass & Baldi, 2007).
double classic_estimated_items(double m, double k, double ones);
// Blocked: E[X] = m (1 - e^(-lambda (1 - q))), lambda = 512 n / m, inverted for n.
double blocked_estimated_items(double m, double k, double ones);

}  // namespace redbloom
