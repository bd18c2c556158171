// The write-ahead journal of a dedup stage (the CLI's `dedup --journal FILE`, Python's
// dedup_records(journal=...)): what makes a SIGKILL, a crash or a power loss lose no record
// whose key the filter took. Journal is the file; DedupJournal wires it into a dedup loop.
//
// The hole it closes: a batch's keys are committed to the filter, then its first-seen records
// are written out. A death between the two leaves keys that the filter holds and nobody
// printed; fed the same input again, the filter calls them duplicates. The protocol:
//   1. begin(keys): append the batch's keys and fdatasync, before the filter is touched;
//   2. commit the batch to the filter, then append which of its keys are printed as new (no
//      sync: without it, all of the batch's keys count as printed as new);
//   3. write its records to the output (and fdatasync the output when it is a regular file);
//   4. done(): append a mark that the batch is finished (no sync: the next begin()'s sync
//      carries it, and a mark that is lost only makes the batch count as unfinished).
// Opening a journal replays it. The keys of the batch that has no mark (those printed as new,
// when that record made it, else all of them) are pending: the
// stage prints each of them once more the next time it reads it, duplicate or not, then
// forgets it. The keys of every batch since the last checkpoint are handed back for adding to
// the filter again (the filter's own writes may not have reached the disk before a power
// loss; adding is idempotent). checkpoint(), after the filter is flushed, starts the journal
// again holding only the keys still pending.
//
// A journal belongs to one filter: its keys mean "committed to that filter". bind() records
// the filter's location and creation time, and refuses another filter (or one made again at the
// same place) while the journal holds keys, since adding them to it would make it call their
// records duplicates.
//
// File format: a header line, then records of [u32 size][u32 CRC-32C of type+payload][u8 type]
// [payload], little-endian. The first record names the filter (format 2; format 1 journals,
// which do not, are read and rewritten in format 2). A record cut short or failing its checksum
// at the end of the file, or zero bytes after the last record, is a write the crash interrupted
// (its batch was never committed, or its mark is lost) and is ignored; a bad record followed by
// more records means the file is damaged, and it is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "redbloom/error.hpp"

namespace redbloom {

class ExactSet;
class Filter;

// A journal that cannot be used: damaged, not a journal, or not writable.
class JournalError : public StorageError {
 public:
  using StorageError::StorageError;
};

// The filter a journal belongs to: where it is and when it was created (0: the store does not
// record it).
struct JournalFilter {
  std::string location;
  std::uint64_t created_unix_ns = 0;
  bool operator==(const JournalFilter&) const = default;
};

class Journal {
 public:
  // Opens the journal at `path`, creating it if missing, and replays it. Holds an exclusive
  // lock on it while open (InvalidArgument if another process holds it). `checkpoint_bytes`:
  // the size past which checkpoint_due() says yes.
  Journal(std::string path, std::uint64_t checkpoint_bytes);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // After opening: every key of the batches since the last checkpoint and the pending ones, to
  // add to the filter again before anything else. Cleared by checkpoint().
  [[nodiscard]] const std::vector<std::string>& replay_keys() const noexcept { return replay_; }
  // What opening found, for notes: records of an unfinished batch, and whether a torn last
  // record was dropped.
  [[nodiscard]] std::size_t unfinished_keys() const noexcept { return unfinished_; }
  [[nodiscard]] bool dropped_torn_record() const noexcept { return torn_; }
  // Zero bytes after the last record (what some file systems leave after a power loss), dropped.
  [[nodiscard]] bool dropped_zero_tail() const noexcept { return zero_tail_; }
  // The file ends after a whole record inside a batch: a crash before the batch's later records
  // were written, or a file cut at a record's end. Its keys are pending.
  [[nodiscard]] bool ends_inside_batch() const noexcept { return ends_inside_batch_; }

  // Ties the journal to `filter`, the one the stage opened. A journal that names another
  // filter, or (format 1) was last written before `filter` was created, is refused while it
  // holds keys (InvalidArgument, saying what to do); one that holds none is taken over. Call
  // before recovering; then checkpoint() if rewrite_due() (the filter is not on disk yet).
  void bind(const JournalFilter& filter);
  [[nodiscard]] bool rewrite_due() const noexcept { return rewrite_due_; }
  // A format 1 journal holding keys was taken as the filter's (it names none).
  [[nodiscard]] bool took_unnamed() const noexcept { return took_unnamed_; }

  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }
  // True, once, for a pending key: its record must be printed even though the filter holds it.
  bool take_pending(std::string_view key);

  // Appends a batch's keys and syncs them to the disk. Call before committing the batch.
  void begin(std::span<const std::string_view> keys);
  // After the commit: which keys of the batch (flags[i] != 0) are printed as new. Not synced:
  // if it is lost, every key of an unfinished batch is pending, which only prints more twice.
  void committed(std::span<const std::uint8_t> flags, std::size_t count);
  // Marks the batch begun last as written out.
  void done();

  [[nodiscard]] bool checkpoint_due() const noexcept { return size_ >= checkpoint_bytes_; }
  // Replaces the journal by one that holds only the pending keys. Call only when the filter's
  // writes so far are durable (Filter::flush) and no batch is begun and not done.
  void checkpoint();

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  void replay(std::string_view bytes);
  void remove_checkpoint_leftover() const;
  // Seals the record in scratch_ (its length and checksum) and appends it to the file.
  void write_record();

  // Lets pending_ be searched with a string_view, without a copy per key.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const noexcept {
      return std::hash<std::string_view>{}(key);
    }
  };

  std::string path_;
  std::uint64_t checkpoint_bytes_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t seq_ = 0;  // of the batch begun last
  bool open_batch_ = false;
  std::unordered_set<std::string, KeyHash, std::equal_to<>> pending_;
  std::vector<std::string> replay_;
  std::size_t unfinished_ = 0;
  bool torn_ = false;
  bool zero_tail_ = false;
  bool ends_inside_batch_ = false;
  std::optional<JournalFilter> filter_;   // as recorded in the file, then as bound
  std::uint64_t last_write_unix_ns_ = 0;  // the file's modification time when opened
  bool rewrite_due_ = false;
  bool took_unnamed_ = false;
  std::string scratch_;
};

// The journal in a dedup loop over a filter. Open it before the filter (a journal that cannot
// be used then leaves no new filter behind), then per batch:
//   recover() once -> [before_commit -> commit to the filter -> after_commit -> write the
//   batch's new records (and make them durable) -> after_output] ... -> finish().
class DedupJournal {
 public:
  DedupJournal(std::string path, std::uint64_t checkpoint_bytes);

  // Binds the journal to `filter` (Journal::bind: another filter is refused while the journal
  // holds keys); then, if a crash left work, adds the journal's keys to the filter (and to
  // `exact`, when given) again, flushes them and checkpoints. Call once, before the first
  // batch, with batches of at most `batch_items`.
  void recover(Filter& filter, ExactSet* exact, std::size_t batch_items);

  // Before the batch's keys are committed: they are written to the journal and synced.
  void before_commit(std::span<const std::string_view> keys);
  // After the commit: a pending key (of a batch a crash left unfinished) counts as new once, so
  // newly[i] is set for it; then which keys are printed as new is recorded.
  void after_commit(std::span<const std::string_view> keys, std::span<std::uint8_t> newly);
  // After the batch's new records are written out and as durable as they will be: marks the
  // batch done, and checkpoints (flushing the filter) when the journal has grown to its limit.
  void after_output();
  // At a clean end: flushes the filter; the journal keeps only the pending keys.
  void finish();

  [[nodiscard]] const std::string& path() const noexcept { return journal_.path(); }
  // What recover() did and what is left, for summaries.
  [[nodiscard]] std::uint64_t replayed() const noexcept { return replayed_; }
  [[nodiscard]] std::uint64_t recovered() const noexcept { return recovered_; }
  [[nodiscard]] std::uint64_t reprinted() const noexcept { return reprinted_; }
  [[nodiscard]] std::size_t pending() const noexcept { return journal_.pending(); }
  // Things the user should know about what opening the journal found (a torn tail, ...).
  [[nodiscard]] std::vector<std::string> notes() const;

 private:
  Journal journal_;
  Filter* filter_ = nullptr;
  ExactSet* exact_ = nullptr;
  std::uint64_t replayed_ = 0;   // keys re-added at the start
  std::uint64_t recovered_ = 0;  // keys of the batch a crash interrupted
  std::uint64_t reprinted_ = 0;  // pending keys printed again though the filter held them
  bool torn_ = false;
  bool zero_tail_ = false;
  bool ends_inside_batch_ = false;
  std::size_t batch_keys_ = 0;    // of the batch in hand
  std::uint64_t items_done_ = 0;  // of this run's batches, printed and marked done
};

}  // namespace redbloom
