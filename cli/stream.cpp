#include "stream.hpp"

#include <unistd.h>

#include <cerrno>

#include "redbloom/error.hpp"

namespace redbloom::cli {

void add_stream_options(CLI::App& command, StreamOptions& options) {
  command.add_option("inputs", options.inputs, "Input files (default or '-': standard input)");
  command.add_flag("-0,--null", options.input.nul_delimited,
                   "Items end with NUL bytes instead of newlines");
  command.add_flag("--skip-empty", options.input.skip_empty, "Ignore empty lines");
  command.add_flag("-q,--quiet", options.quiet, "No progress or summary on stderr");
  command.add_flag("--json", options.json, "The summary as one JSON object on stderr");
  command
      .add_option("--threads", options.threads,
                  "Cores for a local filter's batches (default 1; large inputs gain most)")
      ->check(CLI::Range(1u, 256u));
}

void check_threads(const StreamOptions& options, const FilterLocation& location) {
  if (options.threads > 1 && location.in_redis()) {
    throw InvalidArgument(
        "--threads applies to local filters; a Redis filter's work is done "
        "by its servers");
  }
}

void Output::flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw StorageError(errno_message("cannot write output"));
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

}  // namespace redbloom::cli
