// add: put items into a filter. dedup: the same, printing each item the first time it is seen.
// Both commit a batch to the filter, then write and flush its output, before reading the next:
// an item is never printed as new unless the filter holds it, and at most one batch is ever
// committed and not yet printed (line_io.hpp has the rest of the contract).
#include <cstdio>
#include <optional>

#include "capacity.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "exact_options.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "line_io.hpp"
#include "progress.hpp"
#include "records.hpp"
#include "redbloom/error.hpp"
#include "redbloom/known_set.hpp"
#include "stage_journal.hpp"
#include "stage_metrics_pages.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

enum class Emit { nothing, first_occurrences, duplicates };

struct AddCommand {
  FilterLocation location;
  SizingOptions sizing;
  LineOptions stream;
  RecordOptions records;
  JournalOptions journal;  // dedup only
  std::size_t batch = 0;   // dedup --batch; 0: the filter's own
  OnFull on_full = OnFull::warn;
  bool print_duplicates = false;
  bool exact = false;
  std::string metrics;  // dedup --metrics HOST:PORT
};

// "committed the first N input items (their output is printed)": where a failed command stops
// being certain, for its message.
std::string committed_text(std::uint64_t items, Emit emit) {
  return "committed the first " + std::to_string(items) + " input items" +
         (emit == Emit::nothing ? "" : " (their output is printed)");
}
std::string committed_note(const char* verb, std::uint64_t items, Emit emit) {
  return std::string(verb) + ": " + committed_text(items, emit);
}

// A batch that stopped part-way: its committed prefix and where the input stops being certain.
[[noreturn]] void throw_incomplete(const IncompleteWrite& e, const char* verb,
                                   std::uint64_t items_before, std::size_t batch, Emit emit) {
  // A full windowed or growing filter stops before an item, writing nothing of the rest.
  const bool clean_stop = dynamic_cast<const CapacityExceeded*>(&e) != nullptr;
  throw StorageError(std::string(e.what()) + "\n" +
                     committed_note(verb, items_before + e.committed(), emit) + "; items " +
                     std::to_string(items_before + e.committed() + 1) + " to " +
                     std::to_string(items_before + batch) +
                     (clean_stop ? " and the rest of the input were not added"
                                 : " may be partly written: added again, some may count "
                                   "as duplicates"));
}

// A cuckoo filter with an exact set takes the set's answers, and two writers of one item could
// both print it: dedup is refused over one.
void check_printing_over(const Filter& filter, const ExactSet* exact, Emit emit,
                         const FilterLocation& location) {
  if (exact == nullptr || !filter.shape().cuckoo || emit == Emit::nothing) return;
  throw InvalidArgument("filter " + location.describe() +
                        " is a cuckoo filter with an exact set: dedup cannot print each item "
                        "once over it; add or load its items (they keep the set), or dedup with "
                        "a cuckoo filter without an exact set");
}

// One batch into the filter and its exact set, if any: the companion first (the filter must
// never hold an item it lacks); over a cuckoo filter a copy per item new to the set, so that a
// safe remove never takes another's. Returns the items newly added.
std::size_t commit_batch(Filter& filter, ExactSet* exact, std::span<const std::string_view> keyed,
                         std::span<std::uint8_t> newly) {
  if (exact != nullptr && filter.shape().cuckoo) {
    return add_with_exact_set(filter, *exact, keyed, newly);
  }
  if (exact != nullptr) add_to_exact(*exact, keyed);
  return filter.add_many(keyed, newly);
}

void add_counts(Summary& summary, std::uint64_t items, std::uint64_t added,
                const Progress& progress) {
  summary.count("read", "read", items)
      .count("unique", "unique", added)
      .count("duplicates", "duplicates", items - added)
      .number("", "seconds", progress.elapsed_seconds(), "%.2f", "s")
      .rate("items_per_second", progress.rate(items), "items/s");
}

// The summary's lines after the counts: the exact set, the engines, the records, the journal
// and the input.
void add_state_fields(Summary& summary, const AddCommand& cmd, const Filter& filter,
                      const ExactSet* exact, const RecordKeys& keys, const StageJournal* journal,
                      const ItemReader& reader) {
  if (exact != nullptr) summary.count("exact set entries", "exact_entries", exact->entries());
  if (cmd.stream.verbose) summary.engines(filter.backend().engines());
  keys.add_summary_fields(summary);
  if (journal != nullptr) journal->add_summary_fields(summary);
  add_input_fields(summary, reader);
}

// dedup --metrics: the page of the counts as they are when it is published.
StageMetrics::Page dedup_page(const std::uint64_t& items, const std::uint64_t& added, Emit emit,
                              const ItemReader& reader) {
  return [&items, &added, emit, &reader](const FilterEstimate& estimate) {
    const DedupCounts counts{items, added, emit == Emit::duplicates ? items - added : added,
                             reader.stats().bytes};
    return dedup_metrics_page(counts, estimate);
  };
}

// The options that cannot go together, refused before anything is read or made.
void check_add_options(const AddCommand& cmd, Emit emit, InputOptions& input) {
  check_threads(cmd.stream, cmd.location);
  check_exact_for(requested_stream(cmd.sizing), cmd.exact);
  check_record_options(cmd.records, input);
  if (!cmd.journal.path.empty() && emit != Emit::first_occurrences) {
    throw InvalidArgument(
        "--journal keeps first occurrences from being lost; with --dups leave it out");
  }
}

int run_add(const AddCommand& cmd, Emit emit, const char* verb) {
  const StopSignals stop_signals;
  InputOptions input = cmd.stream.input;
  check_add_options(cmd, emit, input);
  RecordKeys keys(cmd.records, verb);
  // The inputs first: a command that cannot read them must not leave a new filter behind.
  ItemReader reader(cmd.stream.inputs, input);
  StageMetrics metrics(cmd.metrics, cmd.stream.quiet);
  std::optional<StageJournal> journal;
  if (!cmd.journal.path.empty()) journal.emplace(cmd.journal, /*output_fd=*/1);
  auto [filter, created] = open_for_writing(cmd.location, cmd.sizing, /*create_if_missing=*/true);
  filter.use_threads(cmd.stream.threads);
  const auto exact = exact_set_for_writing(cmd.location.resolve(), filter, cmd.exact);
  check_printing_over(filter, exact.get(), emit, cmd.location);
  CapacityWatch capacity(filter, cmd.on_full, created, verb, emit != Emit::nothing);
  BatchOutput out(1, reader.delimiter());
  Progress progress(verb, reader.stats(), cmd.stream.quiet);
  std::vector<std::string_view> batch;
  const std::size_t batch_items = cmd.batch != 0 ? cmd.batch : line_batch(filter);
  if (journal) journal->recover(filter, exact.get(), batch_items);
  std::vector<std::uint8_t> newly(batch_items);
  std::uint64_t items = 0;
  std::uint64_t added = 0;
  metrics.show(filter, dedup_page(items, added, emit, reader));
  auto print = [&](std::size_t count) {
    if (emit == Emit::nothing) return;
    keys.emit(batch, newly, emit == Emit::first_occurrences ? 1 : 0, count, out);
    out.write();
  };
  try {
    for (;;) {
      try {
        if (!reader.next_batch(batch, batch_items)) break;
      } catch (const InputError& e) {
        throw InputError(std::string(e.what()) + "; " + committed_note(verb, items, emit) +
                         "; nothing after them was added");
      }
      const std::vector<std::string_view>& keyed = keys.items(batch, reader);
      std::size_t batch_added = 0;
      try {
        if (journal) journal->before_commit(keyed);
        batch_added = commit_batch(filter, exact.get(), keyed, newly);
        if (journal) journal->after_commit(keyed, newly);
      } catch (const IncompleteWrite& e) {
        // Print what is known committed, then say exactly where the input stops being certain.
        print(e.committed());
        throw_incomplete(e, verb, items, keyed.size(), emit);
      }
      added += batch_added;
      items += keyed.size();
      print(keyed.size());
      if (journal) journal->after_output();
      progress.update(items);
      metrics.update(added);
      capacity.added(batch_added, items);
      if (keys.stopped()) {
        if (exact) exact->flush();
        filter.flush();
        if (journal) journal->finish();
        keys.throw_if_stopped(committed_text(items, emit) + "; nothing after them was added");
      }
    }
  } catch (const OutputError& e) {
    filter.flush();
    return report_output_failure(e, verb, /*committed=*/true, cmd.stream, cmd.journal.path);
  }
  // Exit status 0 then means durable: the filter's pages are on disk, not only in the cache.
  if (exact) exact->flush();
  filter.flush();
  if (journal) journal->finish();
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  Summary summary(verb);
  add_counts(summary, items, added, progress);
  add_state_fields(summary, cmd, filter, exact.get(), keys, journal ? &*journal : nullptr, reader);
  summary.print(cmd.stream.json, cmd.stream.quiet);
  return reader.stopped_by() != 0 ? exit_status_for_signal(reader.stopped_by()) : kExitOk;
}

void register_adding(CLI::App& app, int& exit_code, const char* name, const char* help,
                     bool dedup) {
  auto cmd = std::make_shared<AddCommand>();
  CLI::App* sub = app.add_subcommand(name, help);
  add_location_options(*sub, cmd->location);
  add_creator_wait_option(*sub, cmd->location);
  add_sizing_options(*sub, cmd->sizing);
  add_line_options(*sub, cmd->stream);
  add_record_options(*sub, cmd->records);
  add_on_full_option(*sub, cmd->on_full);
  sub->add_flag("--exact", cmd->exact,
                "Also keep the exact set that diff --exact verifies against (created if missing)");
  if (dedup) {
    sub->add_flag("--dups", cmd->print_duplicates,
                  "Print the duplicates instead of the first occurrences");
    sub->add_option("--unprinted", cmd->stream.unprinted_path,
                    "Where to save committed items whose lines could not be written (output "
                    "closed or full); default: a new file in the working directory");
    add_journal_options(*sub, cmd->journal);
    sub->add_option("--batch", cmd->batch,
                    "Most records per batch (default 4096 on a local filter, more on Redis); "
                    "with --journal, the most records a crash can make print twice")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    sub->add_option("--metrics", cmd->metrics,
                    "Serve Prometheus metrics on HOST:PORT while it runs (items in and out, "
                    "duplicates, bytes read, the filter's estimated fill and false-positive "
                    "rate); PORT 0 picks a free one, noted on stderr");
  }
  sub->callback([cmd, &exit_code, dedup, name] {
    const Emit emit = !dedup                  ? Emit::nothing
                      : cmd->print_duplicates ? Emit::duplicates
                                              : Emit::first_occurrences;
    exit_code = run_add(*cmd, emit, name);
  });
}

}  // namespace

void register_add(CLI::App& app, int& exit_code) {
  register_adding(app, exit_code, "add", "Add items (lines) to a filter, creating it if missing",
                  false);
}

void register_dedup(CLI::App& app, int& exit_code) {
  register_adding(app, exit_code, "dedup",
                  "Print each item the first time the filter sees it (--dups: the repeats)", true);
}

}  // namespace redbloom::cli
