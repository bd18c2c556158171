// Filters for streams that never end (docs/streams.md): a time window ("seen in the last 10
// minutes", memory bounded forever), growth (no item count needed in advance), or both.
//
//   redbloom::StreamOptions clicks;
//   clicks.capacity = 7'000'000;          // items per window
//   clicks.error_rate = 0.001;            // at any time, whatever the stream has done
//   clicks.window_ns = redbloom::parse_duration_ns("10m");
//   auto filter = redbloom::Filter::open(location, redbloom::OpenOptions::create_stream(clicks));
//
// A windowed filter keeps `slices` slices of window / slices each plus the one being filled.
// An item added within the last window is always reported present; one not added for window +
// one slice is forgotten (reported present only at the false-positive rate). Adding an item
// sets it in the current slice, so each add restarts its window. When the current slice (or,
// without a window, the newest link) holds its capacity, a link of capacity x growth is added
// with a tightened error rate, so a burst costs memory rather than false positives.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/params.hpp"

namespace redbloom {

// Now, in nanoseconds since the Unix epoch. Tests drive their own; an empty Clock means the
// real one: this machine's for local filters, the Redis server's for filters in Redis (so
// workers with skewed clocks agree).
using Clock = std::function<std::uint64_t()>;
[[nodiscard]] std::uint64_t system_now_ns();

inline constexpr std::uint32_t kDefaultSlices = 4;
inline constexpr std::uint32_t kDefaultWindowGrowth = 2;
inline constexpr std::uint32_t kMaxSlices = 1024;
// A slice (of one partition) may hold at most this many links.
inline constexpr std::uint32_t kMaxStreamLinks = 32;

struct StreamOptions {
  // Items per window (windowed), or of the first link (growing only).
  std::uint64_t capacity = 0;
  // The false-positive rate the whole filter keeps, over all its live slices and links.
  double error_rate = 0.01;
  Layout layout = Layout::blocked;
  // Remember items this long; 0: forever (then `growth` must be set).
  std::uint64_t window_ns = 0;
  // Slices per window; 0: kDefaultSlices.
  std::uint32_t slices = 0;
  // Link i+1 holds `growth` x link i's items. 0: kDefaultWindowGrowth with a window; without a
  // window, at least 2 (a filter that never grows is a plain filter).
  std::uint32_t growth = 0;
  // The live links' bits together may not exceed this (0: no limit). An add that needs a link
  // past it fails with CapacityExceeded, after committing the items before it.
  std::uint64_t max_bytes = 0;
  // Partitions of the first link are at most this large (params.hpp); later links keep the
  // partition count and grow their partitions, up to Redis's 512 MiB.
  std::uint64_t max_partition_bytes = kDefaultPartitionBytes;

  friend bool operator==(const StreamOptions&, const StreamOptions&) = default;
};

// "10m" -> 600e9. Units ms, s, m (or min), h, d; at least a millisecond. InvalidArgument otherwise,
// also for a number without a unit ("3600": seconds, minutes?).
[[nodiscard]] std::uint64_t parse_duration_ns(std::string_view text);
// 600e9 -> "10m", 1500e6 -> "1.5s".
[[nodiscard]] std::string format_duration(std::uint64_t ns);

// "windowed 10m in 4 slices of 2.5m, N items per window at p=0.001, blocked, growth 2".
// Throws InvalidArgument, naming the problem, for options no filter can have.
[[nodiscard]] std::string describe(const StreamOptions& options);

// One link of one slice, as info() reports it.
struct StreamSegment {
  std::int64_t slice = 0;  // the slice's number (time / slice length); 0 without a window
  std::uint32_t link = 0;
  std::uint64_t created_unix_ns = 0;
  std::uint64_t expires_unix_ns = 0;  // when it stops being live; 0: never
  std::uint64_t items = 0;            // adds that set a bit of it
  std::uint64_t capacity = 0;
  std::uint64_t bytes = 0;
  double error_rate_now = 0;  // its expected rate at `items`
  // Redis: the partitions that made this link (each partition grows on its own); else all.
  std::uint64_t partitions = 0;
};

struct StreamInfo {
  StreamOptions options;
  std::uint64_t now_unix_ns = 0;
  std::vector<StreamSegment> segments;  // oldest slice first, links in order
  double error_rate_now = 0;            // 1 - prod(1 - rate of each live link)
  std::uint64_t bytes = 0;              // of the live links
};

}  // namespace redbloom
