// Options and output shared by the commands that stream items (add, dedup, exists).
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "filter_options.hpp"
#include "input.hpp"
#include "redbloom/filter.hpp"

namespace redbloom::cli {

struct StreamOptions {
  std::vector<std::string> inputs;
  InputOptions input;
  bool quiet = false;
  bool json = false;     // the summary as one JSON object on stderr
  unsigned threads = 1;  // for a local filter's batches (Filter::use_threads)
};

void add_stream_options(CLI::App& command, StreamOptions& options);
// Refuses --threads above 1 for a Redis filter (its work happens on its servers), before the
// filter is opened.
void check_threads(const StreamOptions& options, const FilterLocation& location);

// Items per batch handed to the filter: amortises locks and network round trips. A remote
// store that prefers larger batches (several pipelined commands per round trip) gets them.
inline constexpr std::size_t kStreamBatch = 4096;
[[nodiscard]] inline std::size_t stream_batch(const Filter& filter) noexcept {
  return std::max(kStreamBatch, filter.store().batch_items());
}

// Buffered writes to a file descriptor; throws StorageError when the output fails.
class Output {
 public:
  explicit Output(int fd) : fd_(fd) { buffer_.reserve(kFlushAt + 4096); }
  ~Output() = default;
  void write_item(std::string_view item, char delimiter) {
    buffer_.append(item);
    buffer_.push_back(delimiter);
    if (buffer_.size() >= kFlushAt) flush();
  }
  void write_text(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= kFlushAt) flush();
  }
  void flush();

 private:
  static constexpr std::size_t kFlushAt = std::size_t{1} << 16;
  int fd_;
  std::string buffer_;
};

}  // namespace redbloom::cli
