#include "input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "redbloom/error.hpp"
#include "stop_signals.hpp"

namespace redbloom::cli {
namespace {

constexpr std::size_t kReadSize = std::size_t{1} << 20;

bool is_stdin(const std::string& path) {
  return path == "-";
}

}  // namespace

ItemReader::ItemReader(std::vector<std::string> paths, InputOptions options)
    : paths_(std::move(paths)), options_(options), buffer_(2 * kReadSize) {
  if (paths_.empty()) paths_.push_back("-");
  // Sizes are known up front only when every input is a regular file (for an ETA).
  std::uint64_t total = 0;
  bool all_regular = true;
  for (const std::string& path : paths_) {
    struct stat st {};
    const int rc = is_stdin(path) ? ::fstat(0, &st) : ::stat(path.c_str(), &st);
    if (rc != 0) {
      if (is_stdin(path)) throw InputError(errno_message("cannot read standard input"));
      throw InputError(errno_message("cannot open input " + path));
    }
    if (S_ISDIR(st.st_mode)) throw InputError("input " + path + " is a directory");
    // Unreadable inputs are refused up front, before a command creates anything.
    if (!is_stdin(path) && ::access(path.c_str(), R_OK) != 0) {
      throw InputError(errno_message("cannot open input " + path));
    }
    if (S_ISREG(st.st_mode)) {
      total += static_cast<std::uint64_t>(st.st_size);
    } else {
      all_regular = false;
    }
  }
  stats_.total_bytes = all_regular ? total : 0;
}

ItemReader::~ItemReader() {
  if (fd_ > 0) ::close(fd_);
}

bool ItemReader::open_next_source() {
  if (fd_ > 0) ::close(fd_);
  fd_ = -1;
  if (next_path_ == paths_.size()) return false;
  const std::string& path = paths_[next_path_++];
  if (is_stdin(path)) {
    fd_ = 0;
    current_name_ = "standard input";
  } else {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(errno_message("cannot open input " + path));
    current_name_ = path;
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  current_line_ = 0;
  source_done_ = false;
  return true;
}

bool ItemReader::fill(std::vector<std::string_view>& batch) {
  // Keep the unconsumed tail (a partial record), and the records of the batch being built,
  // whose views are moved along with their bytes.
  // (Skipped empty records move begin_ without adding to the batch: an empty batch starts
  // at begin_.)
  if (batch.empty()) batch_start_ = begin_;
  const std::size_t keep_from = batch_start_;
  const char* old_base = buffer_.data();
  if (keep_from > 0) {
    std::memmove(buffer_.data(), buffer_.data() + keep_from, end_ - keep_from);
    end_ -= keep_from;
    begin_ -= keep_from;
    batch_start_ -= keep_from;
  }
  // Doubling keeps the reallocations (and view fix-ups) of a large batch to a few.
  if (buffer_.size() - end_ < kReadSize) {
    buffer_.resize(std::max(end_ + kReadSize, batch.empty() ? 0 : 2 * buffer_.size()));
  }
  if (!batch.empty() && (keep_from > 0 || buffer_.data() != old_base)) {
    for (std::string_view& view : batch) {
      view = std::string_view(buffer_.data() + (view.data() - old_base) - keep_from, view.size());
    }
  }
  for (;;) {
    const ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(errno_message("cannot read " + current_name_));
    if (n == 0) return false;
    end_ += static_cast<std::size_t>(n);
    return true;
  }
}

void ItemReader::take(std::string_view record, std::vector<std::string_view>& batch) {
  ++current_line_;
  if (stats_.records++ == 0) stats_.first_record_at = std::chrono::steady_clock::now();
  stats_.bytes += record.size() + 1;
  if (!options_.nul_delimited) {
    if (!options_.records && !record.empty() && record.back() == '\r') record.remove_suffix(1);
    if (record.find('\0') != std::string_view::npos) {
      if (stats_.with_nul++ == 0) {
        first_nul_location_ = current_name_ + " line " + std::to_string(current_line_);
      }
    }
  }
  // A record keeps its CR (InputOptions::records), but a line of only a CR is still empty.
  if (record.empty() || (options_.records && !options_.nul_delimited && record == "\r")) {
    ++stats_.empty;
    if (options_.skip_empty) return;
  }
  if (options_.records) batch_lines_.push_back(current_line_);
  batch.push_back(record);
}

bool ItemReader::next_batch(std::vector<std::string_view>& batch, std::size_t max_items) {
  using Clock = std::chrono::steady_clock;
  batch.clear();
  batch_lines_.clear();
  batch_start_ = begin_;
  const char delimiter = this->delimiter();
  Clock::time_point deadline{};
  while (batch.size() < max_items && stopped_by_ == 0) {
    if (source_done_ && !open_next_source()) break;
    const char* start = buffer_.data() + begin_;
    const char* stop = buffer_.data() + end_;
    const void* found = std::memchr(start, delimiter, static_cast<std::size_t>(stop - start));
    if (found != nullptr) {
      const char* at = static_cast<const char*>(found);
      const bool first = batch.empty();
      take(std::string_view(start, static_cast<std::size_t>(at - start)), batch);
      if (first && !batch.empty()) {
        deadline = Clock::now() + std::chrono::milliseconds(options_.flush_interval_ms);
      }
      begin_ += static_cast<std::size_t>(at - start) + 1;
      continue;
    }
    // Out of buffered records: wait for more bytes, but not past the batch's deadline. Past
    // it, bytes already there are still taken (input that keeps coming fills the batch; the
    // deadline bounds how long a stalled stream's items wait).
    int timeout_ms = -1;
    if (!batch.empty()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      timeout_ms = static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
    }
    const WaitResult waited = wait_readable(fd_, timeout_ms);
    if (waited == WaitResult::timed_out) break;
    if (waited == WaitResult::stop_requested) {
      stopped_by_ = stop_signal();
      break;
    }
    if (!fill(batch)) {
      // End of this source: an unterminated last record is still a record.
      if (end_ > begin_) {
        take(std::string_view(buffer_.data() + begin_, end_ - begin_), batch);
        stats_.bytes -= 1;  // it had no delimiter
        begin_ = end_;
      }
      source_done_ = true;
      if (!batch.empty()) break;
    }
  }
  return !batch.empty();
}

std::string ItemReader::location_of(std::size_t index) const {
  // A batch ends where its source ends: all its items are in the current source.
  return current_name_ + (options_.nul_delimited ? " record " : " line ") +
         (index < batch_lines_.size() ? std::to_string(batch_lines_[index]) : std::string("?"));
}

}  // namespace redbloom::cli
