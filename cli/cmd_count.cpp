// count: how many copies of each item's fingerprint a cuckoo filter holds, one line per item:
// the count, a tab, the item (0: never added, or removed since; a false positive's 1 is rare).
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "line_io.hpp"
#include "progress.hpp"
#include "records.hpp"
#include "redbloom/error.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct CountCommand {
  FilterLocation location;
  LineOptions stream;
  RecordOptions records;
};

int run_count(const CountCommand& cmd) {
  const StopSignals stop_signals;
  Filter filter = open_for_reading(cmd.location);
  if (!filter.shape().cuckoo) {
    throw InvalidArgument("filter " + cmd.location.describe() + " is a Bloom filter (" +
                          filter.shape().describe() +
                          "): it keeps no count of an item; a cuckoo filter does (redbloom create "
                          "--kind cuckoo), and exists answers whether it is held");
  }
  InputOptions input = cmd.stream.input;
  check_record_options(cmd.records, input);
  RecordKeys keys(cmd.records, "count");
  ItemReader reader(cmd.stream.inputs, input);
  BatchOutput out(1, reader.delimiter());
  Progress progress("count", reader.stats(), cmd.stream.quiet);
  std::vector<std::string_view> batch;
  const std::size_t batch_items = line_batch(filter);
  std::vector<std::uint32_t> counts(batch_items);
  std::uint64_t items = 0;
  std::uint64_t held = 0;
  std::string line;
  try {
    while (reader.next_batch(batch, batch_items)) {
      const std::vector<std::string_view>& keyed = keys.items(batch, reader);
      filter.count_many(keyed, counts);
      for (std::size_t i = 0; i < keyed.size(); ++i) {
        held += counts[i] > 0 ? 1 : 0;
        line = std::to_string(counts[i]);
        line += '\t';
        line += keyed[i];
        out.line(line);
      }
      out.write();
      items += keyed.size();
      progress.update(items);
      keys.throw_if_stopped("counted the first " + std::to_string(items) +
                            " input items; nothing after them was looked up");
    }
  } catch (const OutputError& e) {
    return report_output_failure(e, "count", /*committed=*/false, cmd.stream);
  }
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  Summary summary("count");
  summary.count("read", "read", items)
      .count("held", "held", held)
      .count("not held", "not_held", items - held)
      .number("", "seconds", progress.elapsed_seconds(), "%.2f", "s")
      .rate("items_per_second", progress.rate(items), "items/s");
  keys.add_summary_fields(summary);
  add_input_fields(summary, reader);
  summary.print(cmd.stream.json, cmd.stream.quiet);
  if (reader.stopped_by() != 0) return exit_status_for_signal(reader.stopped_by());
  return kExitOk;
}

}  // namespace

void register_count(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<CountCommand>();
  CLI::App* sub = app.add_subcommand(
      "count", "Print how many copies of each item a cuckoo filter holds (count, a tab, the item)");
  add_location_options(*sub, cmd->location);
  add_creator_wait_option(*sub, cmd->location);
  add_line_options(*sub, cmd->stream);
  add_record_options(*sub, cmd->records);
  sub->callback([cmd, &exit_code] { exit_code = run_count(*cmd); });
}

}  // namespace redbloom::cli
