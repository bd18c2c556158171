// dedup --journal: the library's DedupJournal (redbloom/journal.hpp) with the CLI's options,
// the sync of standard output when it is a file, and the summary's fields.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/journal.hpp"

namespace redbloom::cli {

class Summary;

struct JournalOptions {
  std::string path;                // --journal; empty: none
  std::string max_size = "64MiB";  // --journal-max
};

void add_journal_options(CLI::App& command, JournalOptions& options);

class StageJournal {
 public:
  // Opens (or creates) the journal, before the filter is opened: a journal that cannot be used
  // leaves no new filter behind. `output_fd` is synced after each batch's output when it is a
  // regular file.
  StageJournal(const JournalOptions& options, int output_fd);
  // As DedupJournal's.
  void recover(Filter& filter, ExactSet* exact, std::size_t batch_items) {
    journal_.recover(filter, exact, batch_items);
  }
  void before_commit(std::span<const std::string_view> keys) { journal_.before_commit(keys); }
  void after_commit(std::span<const std::string_view> keys, std::span<std::uint8_t> newly) {
    journal_.after_commit(keys, newly);
  }
  // After the batch's output is written: syncs the output if it is a file, then as
  // DedupJournal's.
  void after_output();
  void finish() { journal_.finish(); }

  void add_summary_fields(Summary& summary) const;

 private:
  DedupJournal journal_;
  int output_fd_;
  bool sync_output_ = false;
};

}  // namespace redbloom::cli
