// Options and output shared by the commands that read items as lines and write lines (add,
// dedup, load, exists, diff).
//
// The contract these commands keep (README, "Concurrency and crashes"): a batch is committed to
// the filter, then its output is written and flushed, before the next batch is read. A batch
// is bounded by count and by time (--flush-interval). A stop signal ends the input; the batch
// in hand is finished. An output that fails loses no committed item without saying so: the
// lines not written are saved to a file the message names.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filter_options.hpp"
#include "input.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"

namespace redbloom::cli {

struct LineOptions {
  std::vector<std::string> inputs;
  InputOptions input;
  bool quiet = false;
  bool json = false;           // the summary, warnings and notes as JSON objects on stderr
  bool verbose = false;        // the summary names what does the work on each server
  unsigned threads = 1;        // for a local filter's batches (Filter::use_threads)
  std::string unprinted_path;  // where committed lines that could not be written go
};

void add_line_options(CLI::App& command, LineOptions& options);
// Refuses --threads above 1 for a Redis filter (its work happens on its servers), before the
// filter is opened.
void check_threads(const LineOptions& options, const FilterLocation& location);

// Items per batch handed to the filter: amortises locks and network round trips. A remote
// store that prefers larger batches (several pipelined commands per round trip) gets them.
inline constexpr std::size_t kLineBatch = 4096;
[[nodiscard]] inline std::size_t line_batch(const Filter& filter) noexcept {
  return std::max(kLineBatch, filter.backend().batch_items());
}

// An output write that failed. `unwritten()` are the lines (without their delimiters) not
// written whole, in order.
class OutputError : public StorageError {
 public:
  OutputError(const std::string& what, int error, std::vector<std::string> unwritten)
      : StorageError(what), error_(error), unwritten_(std::move(unwritten)) {}
  [[nodiscard]] bool closed() const noexcept;  // the reader went away (EPIPE)
  [[nodiscard]] const std::vector<std::string>& unwritten() const noexcept { return unwritten_; }

 private:
  int error_;
  std::vector<std::string> unwritten_;
};

// A batch's output: lines collected, then written with write() in as few system calls as the
// descriptor takes. Nothing is held across batches.
class BatchOutput {
 public:
  explicit BatchOutput(int fd, char delimiter) : fd_(fd), delimiter_(delimiter) {}
  void line(std::string_view item) {
    buffer_.append(item);
    buffer_.push_back(delimiter_);
    line_ends_.push_back(buffer_.size());
  }
  // Writes the collected lines and clears them. Throws OutputError.
  void write();

 private:
  int fd_;
  char delimiter_;
  std::string buffer_;
  std::vector<std::size_t> line_ends_;  // where each line's delimiter ends, in buffer_
};

// Exit statuses of a stopped or failed stream (exit_codes.hpp has the others).
[[nodiscard]] int exit_status_for_signal(int signal) noexcept;

// Handles an output failure of a command that had committed the unwritten lines (dedup): saves
// them to options.unprinted_path (or a new file in the working directory, else $TMPDIR/tmp),
// says how many and where, and returns the exit status (output closed: kExitOutputClosed,
// else kExitOutputFailed). With `committed` false (exists, diff: the lines are answers, and
// running again gives them), it only says how many answers were not written. `journal`: the
// journal (dedup --journal) that keeps the lines pending for the next run, if any.
[[nodiscard]] int report_output_failure(const OutputError& error, const char* verb, bool committed,
                                        const LineOptions& options,
                                        const std::string& journal = "");

}  // namespace redbloom::cli
