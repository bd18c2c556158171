// Reads items from files or stdin: one item per line (LF, a trailing CR stripped) or per
// NUL-terminated record (-0). Bytes, not text: any byte but the delimiter may be in an item.
// Batches are bounded by count and by time, so a slow stream's items are not held back.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/error.hpp"

namespace redbloom::cli {

struct InputOptions {
  bool nul_delimited = false;        // -0
  bool skip_empty = false;           // --skip-empty
  unsigned flush_interval_ms = 100;  // --flush-interval: longest wait for more input
  // Records with keys (records.hpp): a record keeps its CR, so that it is printed as read, and
  // the line number of each record of a batch is kept for messages.
  bool records = false;
};

// An input that could not be opened or read (a usage error: exit 2).
class InputError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

struct InputStats {
  std::uint64_t records = 0;      // delimited records read, empty ones included
  std::uint64_t empty = 0;        // empty records (skipped or not)
  std::uint64_t with_nul = 0;     // LF mode: records that contain a NUL byte
  std::uint64_t bytes = 0;        // bytes consumed so far
  std::uint64_t total_bytes = 0;  // sum of the inputs' sizes when all are regular files, else 0
  // When the first record was read (the epoch until then): items flow from there on.
  std::chrono::steady_clock::time_point first_record_at{};
};

class ItemReader {
 public:
  // `paths` empty or "-" means standard input. Throws InputError for an input that cannot be
  // opened.
  ItemReader(std::vector<std::string> paths, InputOptions options);
  ~ItemReader();
  ItemReader(const ItemReader&) = delete;
  ItemReader& operator=(const ItemReader&) = delete;

  // Replaces `batch` with up to `max_items` next items. The views stay valid until the next
  // call. Returns false once the input is exhausted or a stop signal came (stop_signals.hpp),
  // and the batch is empty. A batch ends early where a source ends, when a stop signal
  // arrives, or when input stalls: no item waits more than the flush interval (counted from
  // when the batch's first item was read) for the batch to fill. Throws InputError when a
  // source cannot be opened or read; the items of the batch being built are then dropped.
  bool next_batch(std::vector<std::string_view>& batch, std::size_t max_items);
  // SIGINT, SIGTERM or SIGHUP if one ended the input, else 0.
  [[nodiscard]] int stopped_by() const noexcept { return stopped_by_; }

  [[nodiscard]] const InputStats& stats() const noexcept { return stats_; }
  // "input.txt line 17": where the first record holding a NUL byte was (LF mode; messages).
  [[nodiscard]] std::string first_nul_location() const { return first_nul_location_; }
  [[nodiscard]] char delimiter() const noexcept { return options_.nul_delimited ? '\0' : '\n'; }
  // "input.txt line 17": where item `index` of the last batch was (InputOptions::records only).
  [[nodiscard]] std::string location_of(std::size_t index) const;

 private:
  bool open_next_source();
  // Reads more bytes into the buffer, keeping (and moving the views of) `batch`'s bytes;
  // false at the end of the current source.
  bool fill(std::vector<std::string_view>& batch);
  void take(std::string_view record, std::vector<std::string_view>& batch);

  std::vector<std::string> paths_;
  std::size_t next_path_ = 0;
  InputOptions options_;
  int fd_ = -1;
  std::string current_name_;
  std::uint64_t current_line_ = 0;
  std::vector<std::uint64_t> batch_lines_;  // InputOptions::records: each batch item's line
  std::vector<char> buffer_;
  std::size_t begin_ = 0;        // first unconsumed byte
  std::size_t batch_start_ = 0;  // where the bytes of the batch being built begin
  std::size_t end_ = 0;          // one past the last byte read
  bool source_done_ = true;
  InputStats stats_;
  std::string first_nul_location_;
  int stopped_by_ = 0;
};

}  // namespace redbloom::cli
