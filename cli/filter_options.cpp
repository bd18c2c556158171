#include "filter_options.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "diagnostics.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom::cli {
namespace {

std::string shown(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

bool given(const CLI::Option* option) {
  return option != nullptr && option->count() > 0;
}

bool any_sizing_given(const SizingOptions& o) {
  return given(o.capacity_option) || given(o.error_rate_option) || given(o.layout_option) ||
         given(o.bits_option) || given(o.hashes_option) || given(o.partition_option) ||
         given(o.window_option) || given(o.slices_option) || given(o.growth_option) ||
         given(o.rate_option) || given(o.max_bytes_option);
}

}  // namespace

Location FilterLocation::resolve() const {
  if (path.empty() && name.empty()) {
    throw InvalidArgument("no filter given: use --filter PATH, or --name NAME for Redis");
  }
  if (!in_redis()) return Location::file(path);
  std::string list = redis_uri;
  if (!redis_file.empty()) {
    std::ifstream in(redis_file);
    if (!in) throw InvalidArgument("cannot read --redis-file " + redis_file);
    std::string line;
    while (std::getline(in, line)) {
      const std::size_t hash = line.find('#');
      if (hash != std::string::npos) line.erase(hash);
      line.erase(0, line.find_first_not_of(" \t\r"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (line.empty()) continue;
      if (!list.empty()) list += ',';
      list += line;
    }
    if (list.empty()) throw InvalidArgument("--redis-file " + redis_file + " lists no server");
  }
  // No list: $REDIS_URL or the local default (Location::parse).
  if (list.empty()) return Location::parse("", name);
  return Location::redis(parse_redis_servers(list), name);
}

void add_location_options(CLI::App& command, FilterLocation& location,
                          const std::string& flag_prefix, const std::string& path_alias) {
  const bool first = flag_prefix.empty();
  std::string path_names = (first ? "-f,--" : "--") + flag_prefix + "filter";
  if (!path_alias.empty()) path_names += "," + path_alias;
  CLI::Option* path =
      command.add_option(path_names, location.path,
                         first ? "Filter file (a redbloom .rbf file)" : "Destination filter file");
  CLI::Option* name = command.add_option(
      "--" + flag_prefix + "name", location.name,
      first ? "Filter name in Redis (instead of --filter)" : "Destination filter name in Redis");
  CLI::Option* redis =
      command.add_option("--" + flag_prefix + "redis", location.redis_uri,
                         "Redis URI: redis://[user:password@]host[:port][/db] or unix:///path.sock "
                         "(default: $REDIS_URL, else redis://127.0.0.1:6379); several, "
                         "comma-separated, shard the filter over those servers in that order; "
                         "redis+cluster://host:port[,host:port...] is a Redis Cluster");
  CLI::Option* redis_file =
      command.add_option("--" + flag_prefix + "redis-file", location.redis_file,
                         "File listing the Redis URIs of a sharded filter, one per line, in order");
  path->excludes(name);
  path->excludes(redis);
  path->excludes(redis_file);
  redis->excludes(redis_file);
  redis->needs(name);
  redis_file->needs(name);
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
  o.window_option = command.add_option(
      "--window", o.window,
      "Remember items this long (10m, 1h, 7d): -n is then items per window; memory stays bounded");
  o.slices_option = command.add_option(
      "--slices", o.slices,
      "Slices per window (default 4): items are forgotten window + one slice after their last add");
  o.growth_option = command.add_option(
      "--growth", o.growth,
      "Grow by a link of this many times the capacity when full (default 2 with --window)");
  o.rate_option = command.add_option(
      "--rate", o.rate, "Expected items per time (12000/s, 1e6/h), instead of -n, with --window");
  o.max_bytes_option =
      command.add_option("--max-bytes", o.max_bytes,
                         "Limit of a windowed or growing filter's memory (e.g. 2GiB): adds past "
                         "it fail, saying what was committed");
  o.bits_option->needs(o.hashes_option);
  o.hashes_option->needs(o.bits_option);
  o.bits_option->excludes(o.error_rate_option);
  o.slices_option->needs(o.window_option);
  o.rate_option->needs(o.window_option);
  o.rate_option->excludes(o.capacity_option);
  o.bits_option->excludes(o.window_option);
  o.bits_option->excludes(o.growth_option);
}

double parse_rate(const std::string& text) {
  const std::size_t slash = text.find('/');
  const std::string count = text.substr(0, slash);
  const std::string unit = slash == std::string::npos ? "s" : text.substr(slash + 1);
  const std::map<std::string, double> per{
      {"s", 1}, {"m", 60}, {"min", 60}, {"h", 3600}, {"d", 86400}};
  char* end = nullptr;
  const double value = std::strtod(count.c_str(), &end);
  const auto found = per.find(unit);
  if (count.empty() || *end != '\0' || found == per.end() || !(value > 0) || !(value < 1e15)) {
    throw InvalidArgument("bad rate '" + text + "': give items per time, e.g. 12000/s or 1e6/h");
  }
  return value / found->second;
}

std::optional<StreamOptions> requested_stream(const SizingOptions& o) {
  if (!given(o.window_option) && !given(o.growth_option)) {
    if (given(o.max_bytes_option)) {
      throw InvalidArgument(
          "--max-bytes limits a windowed or growing filter: add --window or "
          "--growth (a plain filter's size is fixed by -n and -p)");
    }
    return std::nullopt;
  }
  const auto layout = parse_layout(o.layout);
  if (!layout) throw InvalidArgument("unknown layout '" + o.layout + "' (use classic or blocked)");
  StreamOptions stream;
  stream.layout = *layout;
  stream.error_rate = o.error_rate;
  stream.max_partition_bytes = parse_size(o.partition_size);
  if (given(o.window_option)) stream.window_ns = parse_duration_ns(o.window);
  stream.slices = o.slices;
  stream.growth = o.growth;
  if (given(o.max_bytes_option)) stream.max_bytes = parse_size(o.max_bytes);
  double capacity = o.capacity;
  if (given(o.rate_option)) capacity = parse_rate(o.rate) * double(stream.window_ns) / 1e9;
  if (!(capacity >= 1) || capacity > 1e15) {
    throw InvalidArgument(
        "a windowed or growing filter needs at least 1 item per window (or in "
        "its first link); got " +
        shown(capacity));
  }
  stream.capacity = static_cast<std::uint64_t>(std::ceil(capacity));
  (void)describe(stream);  // checks the combination, naming what is wrong
  return stream;
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
    if (!(o.bits >= 1) || o.bits != std::floor(o.bits)) {
      throw InvalidArgument("--bits must be a positive whole number (got " + shown(o.bits) + ")");
    }
    if (o.bits > static_cast<double>(kMaxFilterBits)) {
      throw InvalidArgument("--bits " + shown(o.bits) +
                            " is too large: a filter holds at most 2^63 bits (1 EiB)");
    }
    const auto capacity =
        given(o.capacity_option) ? static_cast<std::uint64_t>(std::ceil(o.capacity)) : 0;
    return explicit_filter(static_cast<std::uint64_t>(o.bits), o.hashes, *layout, capacity,
                           partition_bytes);
  }
  return size_filter(o.capacity, o.error_rate, *layout, partition_bytes);
}

namespace {

// Filter::create with a plain filter's parameters or a stream's options.
template <class Shape>
Filter create_any(const FilterLocation& location, const Shape& shape, bool overwrite) {
  const Location where = location.resolve();
  OpenReport report;
  Filter filter = Filter::create(where, shape, overwrite, &report);
  // An exact set left from a filter of the same name that is gone (a deleted file, keys
  // unlinked by hand) describes other items: adopted, it would hide orphans. One another
  // process already made for this new filter stays.
  drop_stale_exact_set(where, filter);
  for (const std::string& warning : report.warnings) report_warning(warning);
  return filter;
}

}  // namespace

Filter create_filter(const FilterLocation& location, const FilterParams& params, bool overwrite) {
  return create_any(location, params, overwrite);
}

Filter create_stream_filter(const FilterLocation& location, const StreamOptions& stream,
                            bool overwrite) {
  return create_any(location, stream, overwrite);
}

WritableFilter open_for_writing(const FilterLocation& location, const SizingOptions& options,
                                bool create_if_missing) {
  // Validate the options even when the filter exists: a typo must not pass silently.
  const std::optional<StreamOptions> stream = requested_stream(options);
  const FilterParams requested = requested_params(options);
  const Location where = location.resolve();
  OpenReport report;
  OpenOptions open_options =
      stream ? OpenOptions::create_stream(*stream, any_sizing_given(options))
             : OpenOptions::create_missing(requested, any_sizing_given(options));
  open_options.create_if_missing = create_if_missing;
  Filter filter = Filter::open(where, open_options, &report);
  for (const std::string& warning : report.warnings) report_warning(warning);
  if (report.created) {
    std::string note = "created filter " + where.describe() + ": " +
                       (stream ? describe(*stream) : describe(requested));
    if (!any_sizing_given(options)) {
      note +=
          " (the default size, -n 1e6 -p 0.01); past its capacity new items are ever more "
          "often taken for ones already seen: for another size, drop it and pass "
          "-n ITEMS -p RATE (redbloom plan -n ITEMS -p RATE shows the cost)";
    }
    report_note(note);
  }
  return {std::move(filter), report.created};
}

Filter open_for_reading(const FilterLocation& location) {
  return Filter::open(location.resolve(), OpenOptions::read_only());
}

}  // namespace redbloom::cli
