// Progress on stderr for long commands: a line rewritten once a second, only when stderr is a
// terminal (never in logs or pipes), and the one-line summary at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "input.hpp"

namespace redbloom::cli {

class Progress {
 public:
  // `unit` names what update() counts ("items", "bytes").
  Progress(std::string verb, const InputStats& stats, bool quiet, std::string unit = "items");
  // Called after each batch, with the items done so far; prints at most once a second.
  void update(std::uint64_t items);
  // Clears the progress line.
  void finish();
  [[nodiscard]] double elapsed_seconds() const;
  // Items per second while items were flowing: from the first record read (or, for a count
  // without records, from the start) to the last update() that counted more. NaN when that
  // cannot be measured (fewer than two items, or no time between them): a stream that
  // brings an item now and then is not "0 items/s".
  [[nodiscard]] double rate(std::uint64_t items) const;

 private:
  std::string verb_;
  std::string unit_;
  const InputStats& stats_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;        // the last progress line
  std::chrono::steady_clock::time_point counted_at_;  // the last update() that counted more
  std::uint64_t counted_ = 0;
};

// Prints the warnings a finished read deserves (NUL bytes in line mode, empty items).
void warn_about_input(const ItemReader& reader, bool skip_empty, bool quiet);

class Summary;
// The summary fields every streaming command has: empty lines, lines with NUL bytes, and the
// signal that stopped the input, if one did.
void add_input_fields(Summary& summary, const ItemReader& reader);

}  // namespace redbloom::cli
