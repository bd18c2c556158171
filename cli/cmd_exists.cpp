// exists: print the items the filter (probably) holds; -v the ones it certainly does not.
// Exit status as grep: 0 if any line was selected, 1 if none.
#include <cstdio>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "line_io.hpp"
#include "progress.hpp"
#include "records.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct ExistsCommand {
  FilterLocation location;
  LineOptions stream;
  RecordOptions records;
  bool invert = false;
  bool count = false;
};

int run_exists(const ExistsCommand& cmd) {
  check_threads(cmd.stream, cmd.location);
  const StopSignals stop_signals;
  Filter filter = open_for_reading(cmd.location);
  filter.use_threads(cmd.stream.threads);
  InputOptions input = cmd.stream.input;
  check_record_options(cmd.records, input);
  RecordKeys keys(cmd.records, "exists");
  ItemReader reader(cmd.stream.inputs, input);
  BatchOutput out(1, reader.delimiter());
  Progress progress("exists", reader.stats(), cmd.stream.quiet);
  std::vector<std::string_view> batch;
  const std::size_t batch_items = line_batch(filter);
  std::vector<std::uint8_t> present(batch_items);
  std::uint64_t items = 0;
  std::uint64_t selected = 0;
  const std::uint8_t wanted = cmd.invert ? 0 : 1;
  try {
    while (reader.next_batch(batch, batch_items)) {
      const std::vector<std::string_view>& keyed = keys.items(batch, reader);
      filter.contains_many(keyed, present);
      for (std::size_t i = 0; i < keyed.size(); ++i) selected += present[i] == wanted ? 1 : 0;
      if (!cmd.count) keys.emit(batch, present, wanted, keyed.size(), out);
      out.write();
      items += keyed.size();
      progress.update(items);
      keys.throw_if_stopped("answered the first " + std::to_string(items) +
                            " input items; nothing after them was looked up");
    }
    if (cmd.count) {
      BatchOutput count_out(1, '\n');
      count_out.line(std::to_string(selected));
      count_out.write();
    }
  } catch (const OutputError& e) {
    return report_output_failure(e, "exists", /*committed=*/false, cmd.stream);
  }
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  const std::uint64_t present_items = cmd.invert ? items - selected : selected;
  Summary summary("exists");
  summary.count("read", "read", items)
      .count("present", "present", present_items)
      .count("absent", "absent", items - present_items)
      .number("", "seconds", progress.elapsed_seconds(), "%.2f", "s")
      .rate("items_per_second", progress.rate(items), "items/s");
  if (cmd.stream.verbose) summary.engines(filter.backend().engines());
  keys.add_summary_fields(summary);
  add_input_fields(summary, reader);
  summary.print(cmd.stream.json, cmd.stream.quiet);
  if (reader.stopped_by() != 0) return exit_status_for_signal(reader.stopped_by());
  return selected > 0 ? kExitOk : kExitNoMatch;
}

}  // namespace

void register_exists(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<ExistsCommand>();
  CLI::App* sub = app.add_subcommand(
      "exists", "Print the items that are (probably) in the filter; exit 1 if none");
  add_location_options(*sub, cmd->location);
  add_creator_wait_option(*sub, cmd->location);
  add_line_options(*sub, cmd->stream);
  add_record_options(*sub, cmd->records);
  sub->add_flag("-v,--invert", cmd->invert, "Print the items that are certainly absent instead");
  sub->add_flag("-c,--count", cmd->count, "Print only the number of selected items");
  sub->callback([cmd, &exit_code] { exit_code = run_exists(*cmd); });
}

}  // namespace redbloom::cli
