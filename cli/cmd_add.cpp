// add: put items into a filter. dedup: the same, printing each item the first time it is seen.
// Both commit a batch to the filter before printing any of it, so an item is never printed
// as new unless the filter holds it.
#include <cstdio>

#include "commands.hpp"
#include "exact_options.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "progress.hpp"
#include "redbloom/error.hpp"
#include "stream.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

enum class Emit { nothing, first_occurrences, duplicates };

struct AddCommand {
  FilterLocation location;
  SizingOptions sizing;
  StreamOptions stream;
  bool print_duplicates = false;
  bool exact = false;
};

int run_add(const AddCommand& cmd, Emit emit, const char* verb) {
  check_threads(cmd.stream, cmd.location);
  Filter filter = open_for_writing(cmd.location, cmd.sizing, /*create_if_missing=*/true);
  filter.use_threads(cmd.stream.threads);
  const auto exact = exact_for_writing(cmd.location, filter, cmd.exact);
  ItemReader reader(cmd.stream.inputs, cmd.stream.input);
  Output out(1);
  Progress progress(verb, reader.stats(), cmd.stream.quiet);
  std::vector<std::string_view> batch;
  const std::size_t batch_items = stream_batch(filter);
  std::vector<std::uint8_t> newly(batch_items);
  std::uint64_t items = 0;
  std::uint64_t added = 0;
  const std::uint8_t wanted = emit == Emit::first_occurrences ? 1 : 0;
  auto print = [&](std::size_t count) {
    if (emit == Emit::nothing) return;
    for (std::size_t i = 0; i < count; ++i) {
      if (newly[i] == wanted) out.write_item(batch[i], reader.delimiter());
    }
  };
  while (reader.next_batch(batch, batch_items)) {
    try {
      // The companion first: the filter must never hold an item the companion lacks.
      if (exact) add_to_exact(*exact, batch);
      added += filter.add_many(batch, newly);
    } catch (const IncompleteWrite& e) {
      // Print what is known committed, then say exactly where the input stops being certain.
      print(e.committed());
      out.flush();
      throw StorageError(std::string(e.what()) + "\n" + verb + ": committed the first " +
                         std::to_string(items + e.committed()) + " input items" +
                         (emit == Emit::nothing ? "" : " (their output is printed)") + "; items " +
                         std::to_string(items + e.committed() + 1) + " to " +
                         std::to_string(items + batch.size()) +
                         " may be partly written: added again, some may count as duplicates");
    }
    items += batch.size();
    print(batch.size());
    progress.update(items);
  }
  out.flush();
  // Exit status 0 then means durable: the filter's pages are on disk, not only in the cache.
  if (exact) exact->flush();
  filter.flush();
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  Summary summary(verb);
  summary.count("read", "read", items)
      .count("unique", "unique", added)
      .count("duplicates", "duplicates", items - added)
      .number("", "seconds", progress.elapsed_seconds(), "%.2f", "s")
      .number("", "items_per_second", progress.rate(items), "%.0f", "items/s");
  if (exact) summary.count("exact set entries", "exact_entries", exact->entries());
  summary.print(cmd.stream.json, cmd.stream.quiet);
  return kExitOk;
}

void register_adding(CLI::App& app, int& exit_code, const char* name, const char* help,
                     bool dedup) {
  auto cmd = std::make_shared<AddCommand>();
  CLI::App* sub = app.add_subcommand(name, help);
  add_location_options(*sub, cmd->location);
  add_sizing_options(*sub, cmd->sizing);
  add_stream_options(*sub, cmd->stream);
  sub->add_flag("--exact", cmd->exact,
                "Also keep the exact set that diff --exact verifies against (created if missing)");
  if (dedup) {
    sub->add_flag("--dups", cmd->print_duplicates,
                  "Print the duplicates instead of the first occurrences");
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
