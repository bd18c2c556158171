// The pure part of windowed and growing filters (stream.hpp): which slice a time falls in,
// which slices are live, how each link is sized, and the error budget that keeps the whole
// filter at its target. Every store (memory, file, Redis) follows it, so a filter's links have
// the same parameters wherever it lives.
//
// Error budget. A lookup is a false positive if any live link answers yes, so the filter's rate
// is 1 - prod(1 - p_link). With L live slices (slices + 1 with a window, else 1) each slice may
// spend p_s = 1 - (1 - p)^(1/L). Inside a slice, link 0 gets a share f of p_s and link i >= 1
// gets (1 - f) p_s 2^-i, a geometric series whose sum stays below p_s however many links grow.
// A window grows only on bursts, so its first link takes f = 0.9; a growing filter grows as a
// rule and halves from the start (f = 0.5: p/2, p/4, ..., as RedisBloom's scaling filters).
//
// A window's slices are sized for a tenth more than their share of the window's items (n/N), so
// that a stream at the rate it was sized for does not grow a link for its fluctuations.
//
// Slices. With a window W in N slices of S = W / N, slice g covers [g S, (g + 1) S) of Unix
// time. At time t in slice G the live slices are G - N .. G: an item added at t0 (slice g0) is
// present until slice g0 + N ends, at least W and at most W + S after t0.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "redbloom/params.hpp"
#include "redbloom/stream.hpp"

namespace redbloom {

class StreamShape {
 public:
  // Checks the options (InvalidArgument naming the bad one) and sizes the first link.
  explicit StreamShape(const StreamOptions& options);

  [[nodiscard]] const StreamOptions& options() const noexcept { return options_; }
  [[nodiscard]] bool windowed() const noexcept { return options_.window_ns != 0; }
  [[nodiscard]] std::uint32_t slices() const noexcept { return options_.slices; }
  [[nodiscard]] std::uint32_t growth() const noexcept { return options_.growth; }
  // Slices that can hold live items at once: slices + 1 with a window, else 1.
  [[nodiscard]] std::uint32_t live_slices() const noexcept;
  [[nodiscard]] std::uint64_t slice_ns() const noexcept { return slice_ns_; }
  // The slice `unix_ns` falls in (0 without a window).
  [[nodiscard]] std::int64_t slice_at(std::uint64_t unix_ns) const noexcept;
  // The oldest slice still live when `newest` is the current one.
  [[nodiscard]] std::int64_t oldest_live(std::int64_t newest) const noexcept;
  // When slice g stops being live (0 without a window: never).
  [[nodiscard]] std::uint64_t retire_ns(std::int64_t slice) const noexcept;

  // Every link has this many partitions: an item's partition is the same in all of them.
  [[nodiscard]] std::uint64_t partitions() const noexcept { return first_.partitions; }
  [[nodiscard]] double slice_error_rate() const noexcept { return slice_error_; }
  [[nodiscard]] double link_error_rate(std::uint32_t link) const noexcept;
  [[nodiscard]] std::uint64_t link_capacity(std::uint32_t link) const noexcept;
  // Link `link`'s parameters (capacity and error_rate its own). InvalidArgument, saying why,
  // if it cannot exist: past kMaxStreamLinks, more than 2^53 items, or partitions over 512 MiB.
  [[nodiscard]] FilterParams link_params(std::uint32_t link) const;

  // 1 - prod(1 - rate of link l at its items), over (link, items) pairs.
  [[nodiscard]] double compound_rate(
      std::span<const std::pair<std::uint32_t, std::uint64_t>> links) const;

  // "windowed 10m in 4 slices of 2.5m, N items per window at p=0.001, blocked, growth 2".
  [[nodiscard]] std::string describe() const;

  // The options as text fields (Redis metadata, the file manifest) and back. parse checks that
  // the recorded first link matches this version's sizing (FormatError otherwise: a filter
  // made by a build that sized links differently would place bits elsewhere).
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> encode() const;
  [[nodiscard]] static StreamShape parse(const std::map<std::string, std::string, std::less<>>& f,
                                         const std::string& what);

 private:
  [[nodiscard]] FilterParams size_link(std::uint32_t link) const;

  StreamOptions options_;
  std::uint64_t slice_ns_ = 0;
  double slice_error_ = 0;
  double first_share_ = 0;
  FilterParams first_;
  // Links sized so far: a blocked sizing searches m and k and costs milliseconds, and growth,
  // info and the rate now ask for the same links again and again.
  mutable std::vector<FilterParams> sized_;
};

}  // namespace redbloom
