// add: put items into a filter. dedup: the same, printing each item the first time it is seen.
// Both commit a batch to the filter before printing any of it, so an item is never printed
// as new unless the filter holds it.
#include <cstdio>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "progress.hpp"
#include "stream.hpp"

namespace redbloom::cli {
namespace {

enum class Emit { nothing, first_occurrences, duplicates };

struct AddCommand {
  std::string path;
  SizingOptions sizing;
  StreamOptions stream;
  bool print_duplicates = false;
};

int run_add(const AddCommand& cmd, Emit emit, const char* verb) {
  Filter filter = open_for_writing(cmd.path, cmd.sizing, /*create_if_missing=*/true);
  ItemReader reader(cmd.stream.inputs, cmd.stream.input);
  Output out(1);
  Progress progress(verb, reader.stats(), cmd.stream.quiet);
  std::vector<std::string_view> batch;
  std::vector<std::uint8_t> newly(kStreamBatch);
  std::uint64_t items = 0;
  std::uint64_t added = 0;
  while (reader.next_batch(batch, kStreamBatch)) {
    added += filter.add_many(batch, newly);
    items += batch.size();
    if (emit != Emit::nothing) {
      const std::uint8_t wanted = emit == Emit::first_occurrences ? 1 : 0;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (newly[i] == wanted) out.write_item(batch[i], reader.delimiter());
      }
    }
    progress.update(items);
  }
  out.flush();
  // Exit status 0 then means durable: the filter's pages are on disk, not only in the cache.
  filter.flush();
  progress.finish();
  warn_about_input(reader, cmd.stream.input.skip_empty, cmd.stream.quiet);
  if (!cmd.stream.quiet) {
    std::fprintf(
        stderr, "redbloom %s: read %llu, unique %llu, duplicates %llu, %.2f s, %.0f items/s\n",
        verb, static_cast<unsigned long long>(items), static_cast<unsigned long long>(added),
        static_cast<unsigned long long>(items - added), progress.elapsed_seconds(),
        progress.rate(items));
  }
  return kExitOk;
}

void register_adding(CLI::App& app, int& exit_code, const char* name, const char* help,
                     bool dedup) {
  auto cmd = std::make_shared<AddCommand>();
  CLI::App* sub = app.add_subcommand(name, help);
  add_filter_path_option(*sub, cmd->path);
  add_sizing_options(*sub, cmd->sizing);
  add_stream_options(*sub, cmd->stream);
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
