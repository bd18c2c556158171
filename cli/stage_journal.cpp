#include "stage_journal.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <span>

#include "exact_options.hpp"
#include "filter_options.hpp"
#include "summary.hpp"

namespace redbloom::cli {

void add_journal_options(CLI::App& command, JournalOptions& options) {
  command.add_option("--journal", options.path,
                     "A write-ahead file (created if missing) that makes a restarted dedup, fed "
                     "the same input again, print every record a crash or kill left committed "
                     "and unprinted; at most one batch is printed twice per crash");
  command
      .add_option("--journal-max", options.max_size,
                  "How large the journal grows before the filter is synced to disk and the "
                  "journal started again (smaller: less to redo after a crash, more syncs)")
      ->capture_default_str();
}

namespace {

std::uint64_t journal_limit(const JournalOptions& options) {
  const std::uint64_t bytes = parse_size(options.max_size);
  if (bytes < 4096) {
    throw InvalidArgument("--journal-max " + options.max_size +
                          " is below 4KiB: the journal must hold at least a batch's keys "
                          "between syncs of the filter");
  }
  return bytes;
}

// The filter as the journal records it; a file by its absolute path, so that a run from
// another directory finds the same filter.
JournalFilter identity_of(const Filter& filter) {
  JournalFilter identity{filter.backend().location(), filter.backend().created_unix_ns()};
  constexpr std::string_view kFile = "file ";
  if (identity.location.starts_with(kFile)) {
    if (char* real = ::realpath(identity.location.c_str() + kFile.size(), nullptr)) {
      identity.location = std::string(kFile) + real;
      std::free(real);
    }
  }
  return identity;
}

}  // namespace

StageJournal::StageJournal(const JournalOptions& options, int output_fd)
    : journal_(options.path, journal_limit(options)), output_fd_(output_fd) {
  struct stat st {};
  // A pipe, a terminal or a socket has no disk to sync: the guarantee ends at write(2).
  sync_output_ = ::fstat(output_fd, &st) == 0 && S_ISREG(st.st_mode);
  torn_ = journal_.dropped_torn_record();
  zero_tail_ = journal_.dropped_zero_tail();
  ends_inside_batch_ = journal_.ends_inside_batch();
  recovered_ = journal_.unfinished_keys();
}

void StageJournal::recover(Filter& filter, ExactSet* exact, std::size_t batch_items) {
  filter_ = &filter;
  exact_ = exact;
  journal_.bind(identity_of(filter));
  const std::vector<std::string>& keys = journal_.replay_keys();
  if (keys.empty() && !torn_ && !zero_tail_) {
    if (journal_.rewrite_due()) journal_.checkpoint();  // names the filter in the file
    return;
  }
  // The filter's writes since the last checkpoint may not have reached the disk (a power
  // loss): adding the journal's keys again makes the filter hold every one of them.
  std::vector<std::string_view> chunk;
  std::vector<std::uint8_t> ignored(batch_items);
  try {
    for (std::size_t first = 0; first < keys.size(); first += batch_items) {
      const std::size_t last = std::min(keys.size(), first + batch_items);
      chunk.assign(keys.begin() + static_cast<std::ptrdiff_t>(first),
                   keys.begin() + static_cast<std::ptrdiff_t>(last));
      if (exact_ != nullptr) add_to_exact(*exact_, chunk);
      (void)filter_->add_many(chunk, ignored);
    }
    if (exact_ != nullptr) exact_->flush();
    filter_->flush();
  } catch (const Error& e) {
    throw StorageError(std::string(e.what()) + "\nwhile adding the " + std::to_string(keys.size()) +
                       " keys of the journal " + journal_.path() +
                       " to the filter again; nothing was read or printed; the journal is kept "
                       "whole for the next run");
  }
  replayed_ = keys.size();
  journal_.checkpoint();
}

void StageJournal::before_commit(const std::vector<std::string_view>& keys) {
  batch_keys_ = keys.size();
  try {
    journal_.begin(keys);
  } catch (const JournalError& e) {
    throw JournalError(std::string(e.what()) + "; the next batch was not committed: the first " +
                       std::to_string(items_done_) +
                       " input items of this run are committed and printed");
  }
}

void StageJournal::after_commit(const std::vector<std::string_view>& keys,
                                std::vector<std::uint8_t>& newly) {
  if (journal_.pending() != 0) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (!journal_.take_pending(keys[i])) continue;
      if (newly[i] == 0) ++reprinted_;
      newly[i] = 1;
    }
  }
  try {
    journal_.committed(newly, keys.size());
  } catch (const JournalError& e) {
    // The batch's keys were synced to the journal before the commit: they stay pending there.
    throw JournalError(
        std::string(e.what()) + "; the first " + std::to_string(items_done_) +
        " input items of this run are committed and printed; the next batch (items " +
        std::to_string(items_done_ + 1) + " to " + std::to_string(items_done_ + keys.size()) +
        ") may be committed to the filter and was not printed: the journal " + journal_.path() +
        " keeps its keys pending, and the next run with it prints them");
  }
}

void StageJournal::after_output() {
  // The mark must not reach the disk before the records it vouches for.
  if (sync_output_ && ::fdatasync(output_fd_) != 0 && errno != EINVAL) {
    throw StorageError(errno_message("cannot sync the output file") +
                       "; the batch's records were written but may not be on disk: the journal " +
                       journal_.path() +
                       " keeps the batch unfinished, and the next run prints "
                       "them again");
  }
  try {
    journal_.done();
  } catch (const JournalError& e) {
    throw JournalError(
        std::string(e.what()) + "; the first " + std::to_string(items_done_ + batch_keys_) +
        " input items of this run are committed and printed; the journal " + journal_.path() +
        " counts the last batch as unfinished, so the next run with it prints its "
        "new records again");
  }
  items_done_ += batch_keys_;
  if (journal_.checkpoint_due()) {
    if (exact_ != nullptr) exact_->flush();
    filter_->flush();
    journal_.checkpoint();
  }
}

void StageJournal::finish() {
  journal_.checkpoint();
}

void StageJournal::add_summary_fields(Summary& summary) const {
  summary.count_if_any("re-added from the journal", "journal_replayed", replayed_)
      .count_if_any("unfinished at the crash", "journal_recovered", recovered_)
      .count_if_any("printed again", "journal_reprinted", reprinted_)
      .count_if_any("pending in the journal", "journal_pending", journal_.pending());
  if (torn_) {
    summary.note("the journal's last record was cut short by the crash and was dropped");
  }
  if (zero_tail_) {
    summary.note(
        "the journal ended in zero bytes after its last record (what a file system can "
        "leave after a power loss); they were dropped");
  }
  if (ends_inside_batch_) {
    summary.note(
        "the journal ended inside a batch, after a whole record (a crash before the "
        "batch's end was written, or a file cut there): its new keys count as pending");
  }
  if (journal_.took_unnamed()) {
    summary.note(
        "the journal, written by an earlier version, named no filter; it was taken as "
        "this filter's (made before the journal's last write) and now names it");
  }
}

}  // namespace redbloom::cli
