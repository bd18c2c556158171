// Records with keys (--key-field, --csv, --json-key) for the commands that stream items: the
// filter sees each record's key (RecordKeyExtractor), the output is the whole record as read.
// A record without a key is never an item: --on-bad-record says whether it stops the command
// (error, the default), is dropped (skip) or goes to the output untouched (pass).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "input.hpp"
#include "line_io.hpp"
#include "redbloom/record_key.hpp"

namespace redbloom::cli {

class Summary;

enum class OnBadRecord { error, skip, pass };

struct RecordOptions {
  std::size_t key_field = 0;  // 0: the whole line is the item
  std::string delimiter;      // empty: tab, or a comma with --csv
  bool csv = false;
  std::string json_key;
  OnBadRecord on_bad = OnBadRecord::error;

  [[nodiscard]] bool active() const noexcept { return key_field != 0 || !json_key.empty(); }
};

// Adds the record options, and marks `input` so that the reader keeps what records need.
void add_record_options(CLI::App& command, RecordOptions& options);
// Refuses options that do not go together (--csv without --key-field, both kinds of key...).
// Call before reading. Sets input.records when keys are on.
void check_record_options(const RecordOptions& options, InputOptions& input);

class RecordKeys {
 public:
  RecordKeys(const RecordOptions& options, const char* verb);

  // The items the filter gets for this batch of records: the records themselves without keys;
  // else the keys of the records that have one, in order. With --on-bad-record error they
  // stop before the first record without a key (stop_error() then says where).
  const std::vector<std::string_view>& items(const std::vector<std::string_view>& records,
                                             const ItemReader& reader);

  // Writes, in input order, the records of the first `item_count` items whose flag is `wanted`,
  // and (--on-bad-record pass) the records without keys among them.
  void emit(const std::vector<std::string_view>& records, const std::vector<std::uint8_t>& flags,
            std::uint8_t wanted, std::size_t item_count, BatchOutput& out) const;

  // items() stopped before a record without a key (--on-bad-record error).
  [[nodiscard]] bool stopped() const noexcept { return !stop_error_.empty(); }
  // After the batch that items() cut short is committed and printed: throws the error that
  // names the record, then `done` (what was committed or answered, and what was not).
  void throw_if_stopped(const std::string& done) const;

  // Summary fields and a note for the records without keys that were skipped or passed.
  void add_summary_fields(Summary& summary) const;

 private:
  const RecordOptions& options_;
  const char* verb_;
  std::optional<RecordKeyExtractor> extractor_;
  std::vector<std::string_view> keys_;
  std::vector<RecordKeyStatus> statuses_;
  std::vector<std::string_view> items_;
  std::size_t batch_records_ = 0;  // records of this batch that items() covers
  std::uint64_t bad_ = 0;
  std::string first_bad_;  // "input.jsonl line 3: not valid JSON (...)"
  std::string stop_error_;
};

}  // namespace redbloom::cli
