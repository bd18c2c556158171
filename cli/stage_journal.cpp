#include "stage_journal.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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

}  // namespace

StageJournal::StageJournal(const JournalOptions& options, int output_fd)
    : journal_(options.path, journal_limit(options)), output_fd_(output_fd) {
  struct stat st {};
  // A pipe, a terminal or a socket has no disk to sync: the guarantee ends at write(2).
  sync_output_ = ::fstat(output_fd, &st) == 0 && S_ISREG(st.st_mode);
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
  journal_.after_output();
}

void StageJournal::add_summary_fields(Summary& summary) const {
  summary.count_if_any("re-added from the journal", "journal_replayed", journal_.replayed())
      .count_if_any("unfinished at the crash", "journal_recovered", journal_.recovered())
      .count_if_any("printed again", "journal_reprinted", journal_.reprinted())
      .count_if_any("pending in the journal", "journal_pending", journal_.pending());
  for (const std::string& note : journal_.notes()) summary.note(note);
}

}  // namespace redbloom::cli
