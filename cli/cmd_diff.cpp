// diff: print the items of the checked input that the known filter does not hold (the
// orphans). Bloom-only by default: never prints a known item, but hides each orphan with
// probability ~ the filter's current rate (the summary gives the expected number). --exact
// verifies every item the filter calls present against the exact set built by
// add/load --exact, so that no orphan is hidden (up to a ~1e-13 fingerprint collision).
#include <cstdio>

#include "commands.hpp"
#include "exact_options.hpp"
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

// The exact set diff --exact needs is missing: how to get one. A filter that already holds
// items cannot take one (the items before it could never be verified), so it is built anew.
[[noreturn]] void no_exact_set(const Location& where, const Filter& filter) {
  const bool empty = filter.backend().count_set_bits() == 0;
  const std::string how =
      how_to_get_exact_set(empty ? FilterContents::empty : FilterContents::holds_items,
                           where.in_redis(), where.in_redis() ? where.name : where.path);
  throw NotFound("filter " + where.describe() +
                 " has no exact set, which diff --exact verifies against; " + how +
                 (empty ? ", then diff again"
                        : ", and diff --known that filter --exact; or leave out --exact for a "
                          "Bloom-only diff"));
}

struct DiffCommand {
  FilterLocation known;
  LineOptions stream;
  RecordOptions records;
  bool exact = false;
};

int run_diff(const DiffCommand& cmd) {
  check_threads(cmd.stream, cmd.known);
  const StopSignals stop_signals;
  Filter filter = open_for_reading(cmd.known);
  filter.use_threads(cmd.stream.threads);
  const double rate = filter.info().estimated_error_rate;
  std::unique_ptr<ExactSet> exact;
  if (cmd.exact) {
    const Location where = cmd.known.resolve();
    try {
      exact = open_exact_set(where, filter, /*writable=*/false);
    } catch (const NotFound&) {
      no_exact_set(where, filter);
    }
  }
  KnownSet known(std::move(filter), std::move(exact));
  const auto mode = cmd.exact ? KnownSet::Mode::exact : KnownSet::Mode::bloom_only;
  InputOptions input = cmd.stream.input;
  check_record_options(cmd.records, input);
  RecordKeys keys(cmd.records, "diff");
  ItemReader reader(cmd.stream.inputs, input);
  BatchOutput out(1, reader.delimiter());
  Progress progress("diff", reader.stats(), cmd.stream.quiet);
  std::vector<std::string_view> batch;
  std::vector<std::uint8_t> missing;
  const std::size_t batch_items = line_batch(known.filter());
  std::uint64_t items = 0;
  try {
    while (reader.next_batch(batch, batch_items)) {
      const std::vector<std::string_view>& keyed = keys.items(batch, reader);
      missing.resize(keyed.size());
      known.missing_batch(keyed, missing, mode);
      keys.emit(batch, missing, 1, keyed.size(), out);
      out.write();
      items += keyed.size();
      progress.update(items);
      keys.throw_if_stopped("checked the first " + std::to_string(items) +
                            " input items; nothing after them was checked");
    }
  } catch (const OutputError& e) {
    return report_output_failure(e, "diff", /*committed=*/false, cmd.stream);
  }
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  const KnownSet::Stats stats = known.stats(/*measure_storage=*/false);
  Summary summary("diff");
  summary.count("checked", "checked", stats.checked)
      .count("missing", "missing", stats.missing)
      .number("", "seconds", progress.elapsed_seconds(), "%.2f", "s")
      .rate("items_per_second", progress.rate(items), "items/s")
      .text("mode", "mode", cmd.exact ? "exact" : "bloom-only");
  if (cmd.exact) {
    summary.count("verified", "verified", stats.verified)
        .count("false positives caught", "false_positives", stats.false_positives)
        .number("false-match probability per item", "false_match_probability",
                stats.false_match_probability, "%.2g");
  } else {
    // Each orphan passes as known with probability `rate`: of A absent items the filter shows
    // A(1 - rate), so about missing * rate / (1 - rate) more are hidden.
    const double hidden = rate < 1 ? static_cast<double>(stats.missing) * rate / (1 - rate) : 0;
    summary.number("expected hidden orphans", "expected_hidden", hidden, "%.1f")
        .note("Bloom-only: each orphan is missed with probability " + std::to_string(rate) +
              "; use --exact to verify");
  }
  if (cmd.stream.verbose) summary.engines(known.filter().backend().engines());
  keys.add_summary_fields(summary);
  add_input_fields(summary, reader);
  summary.print(cmd.stream.json, cmd.stream.quiet);
  if (reader.stopped_by() != 0) return exit_status_for_signal(reader.stopped_by());
  return stats.missing > 0 ? kExitOk : kExitNoMatch;
}

}  // namespace

void register_diff(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<DiffCommand>();
  CLI::App* sub = app.add_subcommand(
      "diff", "Print the checked items the known filter does not hold (orphans); exit 1 if none");
  add_location_options(*sub, cmd->known, "", "--known");
  add_creator_wait_option(*sub, cmd->known);
  add_line_options(*sub, cmd->stream);
  add_record_options(*sub, cmd->records);
  sub->add_option("--check", cmd->stream.inputs, "Items to check (files; default stdin)");
  sub->add_flag("--exact", cmd->exact,
                "Verify the items the filter calls present against its exact set");
  sub->callback([cmd, &exit_code] { exit_code = run_diff(*cmd); });
}

}  // namespace redbloom::cli
