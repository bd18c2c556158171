// What a caller asks of a filter it may create, as its user gave it: a plain filter sized by
// capacity and error rate (or by bits and hashes by hand), or a windowed or growing one
// (stream.hpp). The command line and the Python package fill a FilterRequest from their options
// and call size_request(), so both follow one set of rules (which options go together, the
// defaults, the units) and say the same things in their own spelling of the options.
//
//   redbloom::FilterRequest asked;
//   asked.capacity = 7e6;
//   asked.error_rate = std::string("0.1%");
//   asked.window = std::string("10m");
//   const redbloom::SizedRequest sized = redbloom::size_request(asked);  // sized.stream
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "redbloom/cuckoo.hpp"
#include "redbloom/params.hpp"
#include "redbloom/stream.hpp"

namespace redbloom {

// A filter of the Redis server's own Bloom engine (BF.RESERVE: RedisBloom, Redis 8,
// valkey-bloom, redbloom.so): its capacity, rate and growth, as BF.RESERVE takes them.
struct EngineFilterOptions {
  std::uint64_t capacity = 0;  // items the first sub-filter holds at error_rate
  double error_rate = 0;       // its false-positive rate, 0 < error_rate < 1
  // Each new sub-filter holds `expansion` times the last one's items; 0: the engine's default.
  std::uint32_t expansion = 0;
  bool nonscaling = false;  // never grows: adds past capacity fail with CapacityExceeded
};

// The limits every front end applies to an engine filter (BF.RESERVE's own).
inline constexpr double kMaxEngineCapacity = 1e15;
inline constexpr std::uint32_t kMaxEngineExpansion = 32768;

// InvalidArgument, naming the field, for options no engine filter can have.
void check_engine_options(const EngineFilterOptions& options);

// A value as the user gave it: a number, or text with its unit ("512MiB", "0.1%", "10m").
using RequestValue = std::variant<double, std::string>;

// How messages name the options: "--window 3600" on the command line, "window='3600'" for the
// Python package's keywords.
enum class OptionSpelling : std::uint8_t { command_line, keywords };

// The size of a filter made with nothing said about its size (the command line's default).
inline constexpr double kDefaultCapacity = 1e6;
inline constexpr double kDefaultErrorRate = 0.01;

// Each option: unset when the user did not give it.
struct FilterRequest {
  std::optional<double> capacity;          // items (per window; in the first link if growing)
  std::optional<RequestValue> error_rate;  // 0.01, "1e-3", "0.1%"
  std::optional<std::string> layout;       // classic (default) or blocked
  std::optional<double> bits;              // with hashes: a plain filter's size set by hand
  std::optional<double> hashes;
  std::optional<RequestValue> partition_size;  // bytes or "64MiB" (default kDefaultPartitionBytes)
  // Windowed and growing filters.
  std::optional<RequestValue> window;  // seconds, or "10m" (text needs its unit)
  std::optional<double> slices;
  std::optional<double> growth;
  std::optional<std::string> item_rate;   // "12000/s": items per window = rate x window
  std::optional<RequestValue> max_bytes;  // bytes or "2GiB"
  // Who keeps the filter: "redbloom" (unset: redbloom's own layouts) or "bf" (the server's
  // Bloom engine, sized by capacity, error_rate and growth alone).
  std::optional<std::string> engine;
  bool nonscaling = false;  // an engine filter that never grows
  // "bloom" (unset: a Bloom filter) or "cuckoo" (cuckoo.hpp: sized by capacity, error_rate,
  // growth and max_bytes alone).
  std::optional<std::string> kind;
  // Build a filter whose rate at capacity is above error_rate (its hash count capped at
  // kMaxHashes) rather than refuse it.
  bool force_rate = false;
  // With no option that sizes a filter: the default size (kDefaultCapacity items at
  // kDefaultErrorRate) rather than no size at all.
  bool default_size = false;
  OptionSpelling spelling = OptionSpelling::command_line;
};

// What the request asks for: a plain filter's parameters, a stream's options, or neither (no
// size given and no default_size: open an existing filter only).
struct SizedRequest {
  std::optional<FilterParams> params;
  std::optional<StreamOptions> stream;
  std::optional<EngineFilterOptions> engine;  // engine "bf" with a size: BF.RESERVE's options
  std::optional<CuckooOptions> cuckoo;        // kind "cuckoo" with a size
  bool given = false;  // some option was given: an existing filter must match it
};

// Applies the rules and sizes the filter. InvalidArgument naming the option (in the request's
// spelling) and what to give instead, for a bad value or options that do not go together:
//  - bits and hashes go together and exclude error_rate, window and growth;
//  - window or growth makes a windowed or growing filter; slices and item_rate need a window,
//    item_rate excludes capacity, max_bytes needs window or growth;
//  - a rate the filter cannot reach (hash count capped) is refused unless force_rate;
//  - engine "bf" takes capacity, error_rate, growth (its EXPANSION) and nonscaling only, in
//    check_engine_options' limits; nonscaling needs it;
//  - kind "cuckoo" takes capacity, error_rate, growth and max_bytes (with growth) only.
[[nodiscard]] SizedRequest size_request(const FilterRequest& request);

// "64MiB", "512M", "1GiB", "4096" -> bytes (B, K/KiB, M/MiB, G/GiB; powers of 1024).
[[nodiscard]] std::uint64_t parse_size(std::string_view text);
// "0.01", "1e-3", "0.1%" -> a false-positive rate (checked as check_error_rate does).
[[nodiscard]] double parse_error_rate(std::string_view text);
// "12000/s", "1e6/m", "500/h", "20/d" -> items per second; a count without its period is
// refused.
[[nodiscard]] double parse_item_rate(std::string_view text);

// Whether `built` misses its `target` rate because its hash count is capped (kMaxHashes).
[[nodiscard]] bool rate_capped(const FilterParams& built, double target);

}  // namespace redbloom
