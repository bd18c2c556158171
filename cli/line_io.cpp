#include "line_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "diagnostics.hpp"
#include "exit_codes.hpp"

namespace redbloom::cli {
namespace {

// Writes all of `bytes` to a new file at `path` (O_EXCL: never over another file). Returns
// false, with errno set, if it could not.
bool write_new_file(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const bool ok = done == bytes.size() && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    errno = saved;
  }
  return ok;
}

std::string default_unprinted_name(const char* verb) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return std::string("redbloom-") + verb + "-unprinted-" + stamp + "-" +
         std::to_string(::getpid()) + ".txt";
}

}  // namespace

void add_line_options(CLI::App& command, LineOptions& options) {
  command.add_option("inputs", options.inputs, "Input files (default or '-': standard input)");
  command.add_flag("-0,--null", options.input.nul_delimited,
                   "Items end with NUL bytes instead of newlines");
  command.add_flag("--skip-empty", options.input.skip_empty, "Ignore empty lines");
  command.add_flag(
      "-q,--quiet", options.quiet,
      "No progress, notes or summary on stderr (but for a note when a missing filter is created)");
  command.add_flag("--json", options.json,
                   "Summary, warnings and notes as JSON objects on stderr, one per line");
  // exists and remove keep -v for grep's --invert.
  const bool inverts = command.get_name() == "exists" || command.get_name() == "remove";
  command.add_flag(inverts ? "--verbose" : "-v,--verbose", options.verbose,
                   "The summary names what does the work on each Redis server");
  command
      .add_option("--threads", options.threads,
                  "Cores for a local filter's batches (default 1; large inputs gain most)")
      ->check(CLI::Range(1u, 256u));
  command
      .add_option("--flush-interval", options.input.flush_interval_ms,
                  "Longest time in ms an item read waits for its batch to fill before it is "
                  "processed and its output written (0: process what has arrived)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 3600000u));
}

void check_threads(const LineOptions& options, const FilterLocation& location) {
  if (options.threads > 1 && location.in_redis()) {
    throw InvalidArgument(
        "--threads applies to local filters; a Redis filter's work is done by its servers: "
        "leave --threads out");
  }
}

bool OutputError::closed() const noexcept {
  return error_ == EPIPE;
}

void BatchOutput::write() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      // A line counts as written only if all of it, delimiter included, was.
      std::vector<std::string> unwritten;
      std::size_t start = 0;
      for (const std::size_t end : line_ends_) {
        if (end > done) unwritten.emplace_back(buffer_.data() + start, end - start - 1);
        start = end;
      }
      buffer_.clear();
      line_ends_.clear();
      errno = error;
      throw OutputError(errno_message("cannot write output"), error, std::move(unwritten));
    }
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
  line_ends_.clear();
}

int exit_status_for_signal(int signal) noexcept {
  return 128 + signal;
}

int report_output_failure(const OutputError& error, const char* verb, bool committed,
                          const LineOptions& options, const std::string& journal) {
  const std::size_t lost = error.unwritten().size();
  const int status = error.closed() ? kExitOutputClosed : kExitOutputFailed;
  const std::string what = error.closed() ? "output closed" : error.what();
  if (!committed) {
    // The answers are not state: running the command again gives them.
    if (!error.closed()) {
      report_error(std::string(verb) + ": " + what + "; " + std::to_string(lost) +
                   " answer line(s) of the last batch were not written");
    }
    return status;
  }
  if (lost == 0) return status;
  std::string bytes;
  const char delimiter = options.input.nul_delimited ? '\0' : '\n';
  for (const std::string& line : error.unwritten()) {
    bytes += line;
    bytes += delimiter;
  }
  std::vector<std::string> candidates;
  if (!options.unprinted_path.empty()) {
    candidates.push_back(options.unprinted_path);
  } else {
    const std::string name = default_unprinted_name(verb);
    candidates.push_back(name);
    const char* tmp = std::getenv("TMPDIR");
    candidates.push_back(std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + name);
  }
  std::string failures;
  for (const std::string& path : candidates) {
    if (write_new_file(path, bytes)) {
      report_error(std::string(verb) + ": " + what + ": " + std::to_string(lost) +
                   " committed item(s) of the last batch were not written; they are saved, in "
                   "order, in " +
                   path +
                   (journal.empty()
                        ? " (the filter holds them: a rerun would call them duplicates)"
                        : " (the journal " + journal +
                              " keeps them pending: the next run with it prints them again)"));
      return status;
    }
    failures += (failures.empty() ? "" : "; ") + errno_message("cannot save them to " + path);
  }
  report_error(std::string(verb) + ": " + what + ": " + std::to_string(lost) +
               " committed item(s) of the last batch were not written, and could not be saved (" +
               failures + "); the first was '" + error.unwritten().front() + "', the last '" +
               error.unwritten().back() + "'" +
               (journal.empty() ? std::string()
                                : "; the journal " + journal +
                                      " keeps them pending: the next run with it prints them "
                                      "again"));
  return status;
}

}  // namespace redbloom::cli
