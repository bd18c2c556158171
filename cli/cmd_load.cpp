// load: add items without per-item answers, in large batches, so that a Redis filter can take
// the bulk path (a locally built delta ORed into each partition; see redis_store.hpp). On a
// file it is add without the counts.
#include <cstdio>

#include "capacity.hpp"
#include "commands.hpp"
#include "exact_options.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "line_io.hpp"
#include "progress.hpp"
#include "records.hpp"
#include "redbloom/error.hpp"
#include "redbloom/known_set.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

// Items per bulk batch: the more items per delta, the fewer times each partition is sent.
// 2^20 URLs of ~60 bytes hold ~80 MB of input in memory.
constexpr std::size_t kLoadBatch = std::size_t{1} << 20;

struct LoadCommand {
  FilterLocation location;
  SizingOptions sizing;
  LineOptions stream;
  RecordOptions records;
  OnFull on_full = OnFull::warn;
  bool exact = false;
};

int run_load(const LoadCommand& cmd) {
  check_threads(cmd.stream, cmd.location);
  check_exact_for(requested_stream(cmd.sizing), cmd.exact);
  const StopSignals stop_signals;
  InputOptions input = cmd.stream.input;
  check_record_options(cmd.records, input);
  RecordKeys keys(cmd.records, "load");
  // The inputs first: a command that cannot read them must not leave a new filter behind.
  ItemReader reader(cmd.stream.inputs, input);
  auto [filter, created] = open_for_writing(cmd.location, cmd.sizing, /*create_if_missing=*/true);
  filter.use_threads(cmd.stream.threads);
  const auto exact = exact_set_for_writing(cmd.location.resolve(), filter, cmd.exact);
  CapacityWatch capacity(filter, cmd.on_full, created, "load", /*printed=*/false);
  Progress progress("load", reader.stats(), cmd.stream.quiet);
  std::vector<std::string_view> batch;
  std::uint64_t items = 0;
  for (;;) {
    try {
      if (!reader.next_batch(batch, kLoadBatch)) break;
    } catch (const InputError& e) {
      throw InputError(std::string(e.what()) + "; load: committed the first " +
                       std::to_string(items) + " input items; nothing after them was added");
    }
    const std::vector<std::string_view>& keyed = keys.items(batch, reader);
    try {
      if (exact && filter.shape().cuckoo) {
        // A copy per item new to the set, so that a safe remove never takes another's.
        (void)add_with_exact_set(filter, *exact, keyed);
      } else {
        // The companion first: the filter must never hold an item the companion lacks.
        if (exact) add_to_exact(*exact, keyed);
        filter.load_many(keyed);
      }
    } catch (const IncompleteWrite& e) {
      throw StorageError(std::string(e.what()) + "\nload: committed the first " +
                         std::to_string(items + e.committed()) + " input items; items " +
                         std::to_string(items + e.committed() + 1) + " to " +
                         std::to_string(items + keyed.size()) +
                         " may be partly written (loading the same input again is safe)");
    }
    items += keyed.size();
    progress.update(items);
    capacity.remeasure(items);
    if (keys.stopped()) {
      if (exact) exact->flush();
      filter.flush();
      keys.throw_if_stopped("committed the first " + std::to_string(items) +
                            " input items; nothing after them was added");
    }
  }
  if (exact) exact->flush();
  filter.flush();
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  Summary summary("load");
  summary.count("read", "read", items)
      .number("", "seconds", progress.elapsed_seconds(), "%.2f", "s")
      .rate("items_per_second", progress.rate(items), "items/s");
  if (exact) summary.count("exact set entries", "exact_entries", exact->entries());
  if (cmd.stream.verbose) summary.engines(filter.backend().engines());
  keys.add_summary_fields(summary);
  add_input_fields(summary, reader);
  summary.print(cmd.stream.json, cmd.stream.quiet);
  return reader.stopped_by() != 0 ? exit_status_for_signal(reader.stopped_by()) : kExitOk;
}

}  // namespace

void register_load(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<LoadCommand>();
  CLI::App* sub = app.add_subcommand(
      "load", "Add items in bulk, without per-item answers (fastest into Redis)");
  add_location_options(*sub, cmd->location);
  add_creator_wait_option(*sub, cmd->location);
  add_sizing_options(*sub, cmd->sizing);
  // A load has no output to hold back, and each bulk batch costs a pass over the partitions
  // it touches: it waits longer for a batch to fill than the commands that print.
  cmd->stream.input.flush_interval_ms = 1000;
  add_line_options(*sub, cmd->stream);
  add_record_options(*sub, cmd->records);
  add_on_full_option(*sub, cmd->on_full);
  sub->add_flag("--exact", cmd->exact,
                "Also keep the exact set that diff --exact verifies against (created if missing)");
  sub->callback([cmd, &exit_code] { exit_code = run_load(*cmd); });
}

}  // namespace redbloom::cli
