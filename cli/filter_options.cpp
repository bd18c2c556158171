#include "filter_options.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>

#include "redbloom/error.hpp"

namespace redbloom::cli {
namespace {

bool given(const CLI::Option* option) {
  return option != nullptr && option->count() > 0;
}

bool any_sizing_given(const SizingOptions& o) {
  return given(o.capacity_option) || given(o.error_rate_option) || given(o.layout_option) ||
         given(o.bits_option) || given(o.hashes_option) || given(o.partition_option);
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

void add_filter_path_option(CLI::App& command, std::string& path) {
  command.add_option("-f,--filter", path, "Filter file (a redbloom .rbf file)")->required();
}

void add_sizing_options(CLI::App& command, SizingOptions& o) {
  o.capacity_option = command.add_option("-n,--capacity", o.capacity,
                                         "Items the filter is sized for (default 1e6)");
  o.error_rate_option = command.add_option("-p,--error-rate", o.error_rate,
                                           "False-positive rate at capacity (default 0.01)");
  o.layout_option = command.add_option("--layout", o.layout, "classic (default) or blocked");
  o.bits_option = command.add_option("--bits", o.bits, "Explicit size in bits (with --hashes)");
  o.hashes_option =
      command.add_option("--hashes", o.hashes, "Explicit hashes per item (with --bits)");
  o.partition_option =
      command.add_option("--partition-size", o.partition_size,
                         "Largest partition (one Redis key later): default 64MiB, at most 512MiB");
  o.bits_option->needs(o.hashes_option);
  o.hashes_option->needs(o.bits_option);
  o.bits_option->excludes(o.error_rate_option);
}

std::uint64_t parse_size(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InvalidArgument("bad size '" + text + "' (examples: 64MiB, 512M, 4096)");
  }
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "" || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KiB" || unit == "k") {
    scale = 1024;
  } else if (unit == "M" || unit == "MiB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GiB") {
    scale = 1024.0 * 1024 * 1024;
  } else {
    throw InvalidArgument("bad size unit in '" + text + "' (use B, KiB, MiB or GiB)");
  }
  const double bytes = value * scale;
  if (!(bytes >= 1) || bytes > 1e18 || bytes != std::floor(bytes)) {
    throw InvalidArgument("bad size '" + text + "'");
  }
  return static_cast<std::uint64_t>(bytes);
}

FilterParams requested_params(const SizingOptions& o) {
  const auto layout = parse_layout(o.layout);
  if (!layout) throw InvalidArgument("unknown layout '" + o.layout + "' (use classic or blocked)");
  const std::uint64_t partition_bytes = parse_size(o.partition_size);
  if (given(o.bits_option)) {
    if (!(o.bits >= 1) || o.bits > 1.8e19 || o.bits != std::floor(o.bits)) {
      throw InvalidArgument("--bits must be a positive whole number");
    }
    const auto capacity =
        given(o.capacity_option) ? static_cast<std::uint64_t>(std::ceil(o.capacity)) : 0;
    return explicit_filter(static_cast<std::uint64_t>(o.bits), o.hashes, *layout, capacity,
                           partition_bytes);
  }
  return size_filter(o.capacity, o.error_rate, *layout, partition_bytes);
}

Filter open_for_writing(const std::string& path, const SizingOptions& options,
                        bool create_if_missing) {
  // Validate the options even when the filter exists: a typo must not pass silently.
  const FilterParams requested = requested_params(options);
  if (create_if_missing && !file_exists(path)) {
    try {
      return Filter::create_file(path, requested);
    } catch (const FilterExists&) {
      // Another process created it first; use theirs (checked below).
    }
  }
  Filter filter = Filter::open_file(path, FileStore::Access::read_write);
  if (any_sizing_given(options) && !(filter.params() == requested)) {
    throw FilterExists("filter " + path + " was created with other parameters: it is " +
                       describe(filter.params()) + "; the options ask for " + describe(requested));
  }
  return filter;
}

Filter open_for_reading(const std::string& path) {
  return Filter::open_file(path, FileStore::Access::read_only);
}

}  // namespace redbloom::cli
