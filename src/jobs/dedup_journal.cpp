// DedupJournal (redbloom/journal.hpp): the journal's protocol around a dedup loop's commits,
// shared by the CLI's dedup --journal and Python's dedup_records.
#include <algorithm>
#include <cstdlib>

#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/journal.hpp"

namespace redbloom {
namespace {

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

DedupJournal::DedupJournal(std::string path, std::uint64_t checkpoint_bytes)
    : journal_(std::move(path), checkpoint_bytes) {
  torn_ = journal_.dropped_torn_record();
  zero_tail_ = journal_.dropped_zero_tail();
  ends_inside_batch_ = journal_.ends_inside_batch();
  recovered_ = journal_.unfinished_keys();
}

void DedupJournal::recover(Filter& filter, ExactSet* exact, std::size_t batch_items) {
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
  std::vector<std::uint8_t> ignored(std::max<std::size_t>(batch_items, 1));
  try {
    for (std::size_t first = 0; first < keys.size(); first += ignored.size()) {
      const std::size_t last = std::min(keys.size(), first + ignored.size());
      chunk.assign(keys.begin() + static_cast<std::ptrdiff_t>(first),
                   keys.begin() + static_cast<std::ptrdiff_t>(last));
      if (exact_ != nullptr) exact_->add(chunk);
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

void DedupJournal::before_commit(std::span<const std::string_view> keys) {
  batch_keys_ = keys.size();
  try {
    journal_.begin(keys);
  } catch (const JournalError& e) {
    throw JournalError(std::string(e.what()) + "; the next batch was not committed: the first " +
                       std::to_string(items_done_) +
                       " input items of this run are committed and printed");
  }
}

void DedupJournal::after_commit(std::span<const std::string_view> keys,
                                std::span<std::uint8_t> newly) {
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
        " input items of this run are committed and printed; the next batch "
        "(items " +
        std::to_string(items_done_ + 1) + " to " + std::to_string(items_done_ + keys.size()) +
        ") may be committed to the filter and was not printed: the journal " + journal_.path() +
        " keeps its keys pending, and the next run with it prints them");
  }
}

void DedupJournal::after_output() {
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

void DedupJournal::finish() {
  journal_.checkpoint();
}

std::vector<std::string> DedupJournal::notes() const {
  std::vector<std::string> notes;
  if (torn_)
    notes.emplace_back("the journal's last record was cut short by the crash and was dropped");
  if (zero_tail_) {
    notes.emplace_back(
        "the journal ended in zero bytes after its last record (what a file system can leave "
        "after a power loss); they were dropped");
  }
  if (ends_inside_batch_) {
    notes.emplace_back(
        "the journal ended inside a batch, after a whole record (a crash before the batch's end "
        "was written, or a file cut there): its new keys count as pending");
  }
  if (journal_.took_unnamed()) {
    notes.emplace_back(
        "the journal, written by an earlier version, named no filter; it was taken as this "
        "filter's (made before the journal's last write) and now names it");
  }
  return notes;
}

}  // namespace redbloom
