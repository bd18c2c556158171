// remove: a cuckoo filter forgets items. Each batch is removed, then its output written, so an
// item is never printed as removed unless the filter no longer holds it. Prints the items it
// removed (-v: the ones it did not hold); exit 1 if any was not held. Beside an exact set it
// removes only the items the set holds (KnownSet::remove), refusing the others: then no remove
// can make another item absent.
#include <cstdio>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "line_io.hpp"
#include "progress.hpp"
#include "records.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/known_set.hpp"
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

// A cuckoo filter with its exact set if it has one, checked before any input is read.
KnownSet open_for_removing(const RemoveCommand& cmd) {
  Filter filter =
      open_for_writing(cmd.location, SizingOptions{}, /*create_if_missing=*/false).filter;
  if (!filter.shape().cuckoo) {
    throw InvalidArgument("filter " + cmd.location.describe() + " is a Bloom filter (" +
                          filter.shape().describe() +
                          "): it cannot forget an item; a cuckoo filter can (redbloom create "
                          "--kind cuckoo)");
  }
  const Location where = cmd.location.resolve();
  std::unique_ptr<ExactSet> exact =
      exact_set_exists(where) ? open_exact_set(where, filter) : nullptr;
  return {std::move(filter), std::move(exact)};
}

int run_remove(const RemoveCommand& cmd) {
  const StopSignals stop_signals;
  KnownSet known = open_for_removing(cmd);
  Filter& filter = known.filter();
  const bool checked = known.has_exact();
  if (!checked && !cmd.stream.quiet) {
    std::fprintf(stderr, "redbloom remove: note: %s\n", kRemoveCaveat);
  }
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
  std::uint64_t left_in_filter = 0;
  try {
    while (reader.next_batch(batch, batch_items)) {
      const std::vector<std::string_view>& keyed = keys.items(batch, reader);
      try {
        if (checked) {
          const KnownSet::RemoveResult result = known.remove(keyed, removed);
          removed_items += result.removed;
          left_in_filter += result.left_in_filter;
        } else {
          removed_items += filter.remove_many(keyed, removed);
        }
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
  known.flush();
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  Summary summary("remove");
  summary.count("read", "read", items)
      .count("removed", "removed", removed_items)
      .count(checked ? "refused (not in the exact set)" : "not held",
             checked ? "refused" : "not_held", items - removed_items)
      .number("", "seconds", progress.elapsed_seconds(), "%.2f", "s")
      .rate("items_per_second", progress.rate(items), "items/s");
  // Copies a growing filter kept because several of its links hold the fingerprint: each a
  // stale false positive, never another item made absent.
  if (checked) summary.count("copies left in the filter", "left_in_filter", left_in_filter);
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
  sub->footer(std::string("Note, for a filter without an exact set: ") + kRemoveCaveat +
              ". Beside an exact set (create --exact) only the items it holds are removed, the "
              "others refused.");
  add_location_options(*sub, cmd->location);
  add_creator_wait_option(*sub, cmd->location);
  add_line_options(*sub, cmd->stream);
  add_record_options(*sub, cmd->records);
  sub->add_flag("-v,--invert", cmd->invert, "Print the items it did not hold instead");
  sub->callback([cmd, &exit_code] { exit_code = run_remove(*cmd); });
}

}  // namespace redbloom::cli
