// dedup --journal: the journal (journal.hpp) wired into dedup's loop. Opening it replays what
// a crash left (the keys re-added to the filter, the unfinished batch's keys made pending);
// each batch then goes before_commit -> commit -> after_commit -> output -> after_output.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "journal.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"

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
  // Ties the journal to the filter (refusing another one while it holds keys); then, if a
  // crash left work, adds the journal's keys to the filter (and the exact set) again, flushes
  // them and checkpoints. Call once, before the first batch.
  void recover(Filter& filter, ExactSet* exact, std::size_t batch_items);

  // Before the batch's keys are committed: they are written to the journal and synced.
  void before_commit(const std::vector<std::string_view>& keys);
  // After the commit: a pending key (of a batch a crash left unfinished) counts as new once.
  void after_commit(const std::vector<std::string_view>& keys, std::vector<std::uint8_t>& newly);
  // After the batch's output is written: syncs the output if it is a file, marks the batch done,
  // and checkpoints when the journal has grown to its limit.
  void after_output();
  // At a clean end: the filter is flushed; the journal keeps only the pending keys.
  void finish();

  void add_summary_fields(Summary& summary) const;

 private:
  Journal journal_;
  Filter* filter_ = nullptr;
  ExactSet* exact_ = nullptr;
  int output_fd_;
  bool sync_output_ = false;
  std::uint64_t replayed_ = 0;   // keys re-added at the start
  std::uint64_t recovered_ = 0;  // keys of the batch a crash interrupted
  std::uint64_t reprinted_ = 0;  // pending keys printed again though the filter held them
  bool torn_ = false;
  bool zero_tail_ = false;
  bool ends_inside_batch_ = false;
  std::size_t batch_keys_ = 0;    // of the batch in hand
  std::uint64_t items_done_ = 0;  // of this run's batches, printed and marked done
};

}  // namespace redbloom::cli
