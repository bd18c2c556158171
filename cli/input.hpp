// Reads items from files or stdin: one item per line (LF, a trailing CR stripped) or per
// NUL-terminated record (-0). Bytes, not text: any byte but the delimiter may be in an item.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redbloom::cli {

struct InputOptions {
  bool nul_delimited = false;  // -0
  bool skip_empty = false;     // --skip-empty
};

struct InputStats {
  std::uint64_t records = 0;      // delimited records read, empty ones included
  std::uint64_t empty = 0;        // empty records (skipped or not)
  std::uint64_t with_nul = 0;     // LF mode: records that contain a NUL byte
  std::uint64_t bytes = 0;        // bytes consumed so far
  std::uint64_t total_bytes = 0;  // sum of the inputs' sizes when all are regular files, else 0
};

class ItemReader {
 public:
  // `paths` empty or "-" means standard input. Throws InvalidArgument for an input that
  // cannot be opened.
  ItemReader(std::vector<std::string> paths, InputOptions options);
  ~ItemReader();
  ItemReader(const ItemReader&) = delete;
  ItemReader& operator=(const ItemReader&) = delete;

  // Replaces `batch` with up to `max_items` next items. The views stay valid until the next
  // call. Returns false once the input is exhausted (and the batch is empty). A batch ends
  // where the read buffer ends (about 1 MiB of input) unless `fill_up`: then the buffer grows
  // until the batch has `max_items` items or a source ends (for bulk loads).
  bool next_batch(std::vector<std::string_view>& batch, std::size_t max_items,
                  bool fill_up = false);

  [[nodiscard]] const InputStats& stats() const noexcept { return stats_; }
  // "input.txt line 17": where the first record holding a NUL byte was (LF mode; messages).
  [[nodiscard]] std::string first_nul_location() const { return first_nul_location_; }
  [[nodiscard]] char delimiter() const noexcept { return options_.nul_delimited ? '\0' : '\n'; }

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
  std::vector<char> buffer_;
  std::size_t begin_ = 0;        // first unconsumed byte
  std::size_t batch_start_ = 0;  // where the bytes of the batch being built begin
  std::size_t end_ = 0;          // one past the last byte read
  bool source_done_ = true;
  InputStats stats_;
  std::string first_nul_location_;
};

}  // namespace redbloom::cli
