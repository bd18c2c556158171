// remove: a cuckoo filter forgets items. Each batch is removed, then its output written, so an
// item is never printed as removed unless the filter no longer holds it. Prints the items it
// removed (-v: the ones it did not hold); exit 1 if any was not held.
#include <cstdio>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "line_io.hpp"
#include "progress.hpp"
#include "records.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct RemoveCommand {
  FilterLocation location;
  LineOptions stream;
  RecordOptions records;
  bool invert = false;
};

constexpr const char* kRemoveCaveat =
    "removing an item that was never added can remove another item's fingerprint (that item "
    "then reads as absent): remove only items you added";

// A cuckoo filter, checked before any input is read.
Filter open_for_removing(const RemoveCommand& cmd) {
  Filter filter =
      open_for_writing(cmd.location, SizingOptions{}, /*create_if_missing=*/false).filter;
  if (!filter.shape().cuckoo) {
    throw InvalidArgument("filter " + cmd.location.describe() + " is a Bloom filter (" +
                          filter.shape().describe() +
                          "): it cannot forget an item; a cuckoo filter can (redbloom create "
                          "--kind cuckoo)");
  }
  if (exact_set_exists(cmd.location.resolve())) {
    throw InvalidArgument("filter " + cmd.location.describe() +
                          " has an exact set, which cannot forget items: remove works on a "
                          "cuckoo filter without one");
  }
  return filter;
}

int run_remove(const RemoveCommand& cmd) {
  const StopSignals stop_signals;
  Filter filter = open_for_removing(cmd);
  if (!cmd.stream.quiet) std::fprintf(stderr, "redbloom remove: note: %s\n", kRemoveCaveat);
  InputOptions input = cmd.stream.input;
  check_record_options(cmd.records, input);
  RecordKeys keys(cmd.records, "remove");
  ItemReader reader(cmd.stream.inputs, input);
  BatchOutput out(1, reader.delimiter());
  Progress progress("remove", reader.stats(), cmd.stream.quiet);
  std::vector<std::string_view> batch;
  const std::size_t batch_items = line_batch(filter);
  std::vector<std::uint8_t> removed(batch_items);
  std::uint64_t items = 0;
  std::uint64_t removed_items = 0;
  try {
    while (reader.next_batch(batch, batch_items)) {
      const std::vector<std::string_view>& keyed = keys.items(batch, reader);
      try {
        removed_items += filter.remove_many(keyed, removed);
      } catch (const IncompleteWrite& e) {
        throw StorageError(std::string(e.what()) + "\nremove: removed the first " +
                           std::to_string(items + e.committed()) +
                           " input items' fingerprints where held; items " +
                           std::to_string(items + e.committed() + 1) + " to " +
                           std::to_string(items + keyed.size()) +
                           " may be partly removed: removing them again may remove other "
                           "items' fingerprints");
      }
      keys.emit(batch, removed, cmd.invert ? 0 : 1, keyed.size(), out);
      out.write();
      items += keyed.size();
      progress.update(items);
      keys.throw_if_stopped("removed the first " + std::to_string(items) +
                            " input items where held; nothing after them was removed");
    }
  } catch (const OutputError& e) {
    return report_output_failure(e, "remove", /*committed=*/true, cmd.stream);
  }
  filter.flush();
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  Summary summary("remove");
  summary.count("read", "read", items)
      .count("removed", "removed", removed_items)
      .count("not held", "not_held", items - removed_items)
      .number("", "seconds", progress.elapsed_seconds(), "%.2f", "s")
      .rate("items_per_second", progress.rate(items), "items/s");
  keys.add_summary_fields(summary);
  add_input_fields(summary, reader);
  summary.print(cmd.stream.json, cmd.stream.quiet);
  if (reader.stopped_by() != 0) return exit_status_for_signal(reader.stopped_by());
  return removed_items == items ? kExitOk : kExitNoMatch;
}

}  // namespace

void register_remove(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<RemoveCommand>();
  CLI::App* sub = app.add_subcommand(
      "remove",
      "Remove items from a cuckoo filter, printing the ones it held; exit 1 if any was "
      "not held");
  sub->footer(std::string("Note: ") + kRemoveCaveat + ".");
  add_location_options(*sub, cmd->location);
  add_line_options(*sub, cmd->stream);
  add_record_options(*sub, cmd->records);
  sub->add_flag("-v,--invert", cmd->invert, "Print the items it did not hold instead");
  sub->callback([cmd, &exit_code] { exit_code = run_remove(*cmd); });
}

}  // namespace redbloom::cli
