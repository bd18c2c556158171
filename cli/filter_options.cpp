#include "filter_options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "core/stream_shape.hpp"
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

// Two significant digits: 7.6e-88.
std::string brief(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", value);
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

namespace {

// Location::parse takes anything with a scheme for a URI (file:NAME and ./NAME stay files).
bool has_scheme(const std::string& text) {
  return !text.starts_with("file:") && text.find("://") != std::string::npos;
}

// The servers listed in a --redis-file, comma-joined; '#' starts a comment.
std::string servers_in_file(const std::string& path, const std::string& flag) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument(errno_message("cannot read " + flag + " " + path));
  std::string list;
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
  if (list.empty()) throw InvalidArgument(flag + " " + path + " lists no server");
  return list;
}

}  // namespace

Location FilterLocation::resolve() const {
  if (path.empty() && name.empty() && redis_uri.empty() && redis_file.empty()) {
    throw InvalidArgument("no filter given: use " + path_flag + " PATH, " + path_flag +
                          " redis://HOST:PORT#NAME, or " + name_flag + " NAME for Redis");
  }
  if (!path.empty()) {
    if (has_scheme(path) && name.empty() && path.find('#') == std::string::npos) {
      throw InvalidArgument(path_flag + " " + path +
                            " names no filter: write its name after '#' (" + path +
                            "#NAME) or give " + name_flag + " NAME");
    }
    if (!has_scheme(path) && !name.empty()) {
      throw InvalidArgument(
          path_flag + " " + path + " is a file, and a file has no name: " + name_flag +
          " is for a filter in Redis (" + path_flag + " redis://HOST:PORT#NAME, or " + name_flag +
          " NAME with " + redis_flag + " URI)");
    }
    return Location::parse(path, name);
  }
  // Redis: the servers from --redis (its '#NAME' naming the filter) or --redis-file, else
  // $REDIS_URL or the local default (Location::parse).
  std::string list = redis_uri;
  std::string named = name;
  if (const std::size_t hash = list.rfind('#'); hash != std::string::npos) {
    const std::string fragment = list.substr(hash + 1);
    list.erase(hash);
    if (!named.empty() && named != fragment) {
      throw InvalidArgument("two names for one filter: '" + fragment + "' in " + redis_flag + " " +
                            redis_uri + " and '" + named + "' in " + name_flag);
    }
    named = fragment;
  }
  if (!redis_file.empty()) list = servers_in_file(redis_file, redis_flag + "-file");
  if (named.empty()) {
    throw InvalidArgument(redis_flag + " " + (redis_uri.empty() ? redis_file : redis_uri) +
                          " names no filter: write its name after '#' (" +
                          (redis_uri.empty() ? "redis://HOST:PORT" : redis_uri) +
                          "#NAME) or give " + name_flag + " NAME");
  }
  if (list.empty()) return Location::parse("", named);
  return Location::redis(parse_redis_servers(list), named);
}

void add_location_options(CLI::App& command, FilterLocation& location,
                          const std::string& flag_prefix, const std::string& path_alias) {
  const bool first = flag_prefix.empty();
  location.path_flag = "--" + flag_prefix + "filter";
  location.redis_flag = "--" + flag_prefix + "redis";
  location.name_flag = "--" + flag_prefix + "name";
  if (!path_alias.empty()) location.path_flag = path_alias;
  std::string path_names = (first ? "-f,--" : "--") + flag_prefix + "filter";
  if (!path_alias.empty()) path_names += "," + path_alias;
  CLI::Option* path = command.add_option(
      path_names, location.path,
      std::string(first ? "Filter" : "Destination filter") +
          ": a file (PATH), or in Redis redis://HOST[:PORT][/DB]#NAME, several such URIs "
          "comma-separated (sharded), or redis+cluster://HOST:PORT[,HOST:PORT...]#NAME; "
          "rediss:// and rediss+cluster:// for TLS");
  CLI::Option* name = command.add_option("--" + flag_prefix + "name", location.name,
                                         std::string(first ? "Filter" : "Destination filter") +
                                             " name in Redis, when the URI has no #NAME");
  CLI::Option* redis = command.add_option(
      "--" + flag_prefix + "redis", location.redis_uri,
      "Redis URI, the filter's name after '#' or in --" + flag_prefix +
          "name: redis://[user:password@]host[:port][/db][#NAME] or unix:///path.sock[#NAME] "
          "(default: $REDIS_URL, else redis://127.0.0.1:6379); several, comma-separated, shard "
          "the filter over those servers in that order; redis+cluster://host:port[,host:port...] "
          "is a Redis Cluster; rediss:// and rediss+cluster:// over TLS "
          "(?tls_ca=PATH&tls_cert=PATH&tls_key=PATH&tls_server_name=NAME)");
  CLI::Option* redis_file =
      command.add_option("--" + flag_prefix + "redis-file", location.redis_file,
                         "File listing the Redis URIs of a sharded filter, one per line, in order");
  path->excludes(redis);
  path->excludes(redis_file);
  redis->excludes(redis_file);
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
      "Remember items this long, a number and a unit ms, s, m, h or d (10m, 1h, 7d): -n is then "
      "items per window; memory stays bounded");
  o.slices_option =
      command.add_option("--slices", o.slices,
                         "Slices per window, 1 to " + std::to_string(kMaxSlices) + " (default " +
                             std::to_string(kDefaultSlices) +
                             "): items are forgotten window + one slice after their last add");
  o.growth_option = command.add_option(
      "--growth", o.growth,
      "Grow by a link of this many times the capacity when full, 2 to 1024 (default 2 with "
      "--window)");
  o.rate_option = command.add_option(
      "--rate", o.rate,
      "Expected items per period, /s, /m, /h or /d (12000/s, 1e6/h), instead of -n, with "
      "--window");
  o.max_bytes_option =
      command.add_option("--max-bytes", o.max_bytes,
                         "Limit of a windowed or growing filter's memory (e.g. 2GiB): adds past "
                         "it fail, saying what was committed");
  command.add_flag("--force-rate", o.force_rate,
                   "Build the filter even when its rate at capacity is above -p (a filter uses "
                   "at most 64 hashes, which very low rates need more of)");
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
  const std::string forms = "give items per period: 12000/s, 12000/m, 12000/h or 12000/d";
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos) {
    throw InvalidArgument("--rate " + text + " has no period: " + forms);
  }
  const std::string count = text.substr(0, slash);
  const std::string unit = text.substr(slash + 1);
  const std::map<std::string, double> per{
      {"s", 1}, {"m", 60}, {"min", 60}, {"h", 3600}, {"d", 86400}};
  char* end = nullptr;
  const double value = std::strtod(count.c_str(), &end);
  const auto found = per.find(unit);
  if (count.empty() || *end != '\0' || found == per.end() || !(value > 0) || !(value < 1e15)) {
    throw InvalidArgument("bad rate '" + text + "': " + forms);
  }
  return value / found->second;
}

bool rate_capped(const FilterParams& built, double target) {
  // Below the cap, rounding only lowers the rate; a capped k leaves it far above the target.
  return built.hashes >= kMaxHashes && built.error_rate > target * 1.01;
}

void check_rate_reached(const FilterParams& built, double target, double asked, bool consent) {
  if (consent || !rate_capped(built, target)) return;
  char bits_per_item[32];
  std::snprintf(bits_per_item, sizeof bits_per_item, "%.0f",
                static_cast<double>(built.total_bits()) / static_cast<double>(built.capacity));
  const std::string reached =
      target == asked ? "a rate of " + brief(built.error_rate) + " at capacity, not " + brief(asked)
                      : "a rate of " + brief(built.error_rate) + " in each link, not the " +
                            brief(target) + " that -p " + brief(asked) + " needs";
  throw InvalidArgument("-p " + brief(asked) + " cannot be built: a filter uses at most " +
                        std::to_string(kMaxHashes) + " hashes per item, so this one (" +
                        bits_per_item +
                        " bits per item) would take items it never saw for ones it holds at " +
                        reached + ". Rates down to about " + brief(std::pow(0.5, kMaxHashes)) +
                        " are built as asked: give one of those, or add --force-rate to build "
                        "this filter anyway");
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
  check_error_rate(o.error_rate);
  if (given(o.window_option)) {
    // A bare number once meant seconds; a window of 3600 is too easily meant otherwise.
    char* end = nullptr;
    (void)std::strtod(o.window.c_str(), &end);
    if (!o.window.empty() && end != o.window.c_str() && *end == '\0') {
      throw InvalidArgument("--window " + o.window +
                            " has no unit: give a number and a unit ms, s, m, h or d (e.g. " +
                            o.window + "s, " + o.window + "m, 1h, 7d)");
    }
  }
  if (given(o.slices_option) && (o.slices < 1 || o.slices > kMaxSlices)) {
    throw InvalidArgument("--slices " + std::to_string(o.slices) + " is out of range: give 1 to " +
                          std::to_string(kMaxSlices) + " slices per window (default " +
                          std::to_string(kDefaultSlices) + ")");
  }
  if (given(o.growth_option) && (o.growth < 2 || o.growth > 1024)) {
    throw InvalidArgument("--growth " + std::to_string(o.growth) +
                          " is out of range: give 2 to 1024 (each new link holds that many "
                          "times the last one's items)");
  }
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
  const StreamShape shape(stream);  // checks the combination, naming what is wrong
  check_rate_reached(shape.link_params(0), shape.link_error_rate(0), o.error_rate, o.force_rate);
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
  check_error_rate(o.error_rate);
  const FilterParams params = size_filter(o.capacity, o.error_rate, *layout, partition_bytes);
  check_rate_reached(params, o.error_rate, o.error_rate, o.force_rate);
  return params;
}

namespace {

// Where a new filter file is to be made: the errors the store would report about its temporary
// file (a missing directory, a path that is one), said of the path the user gave.
void check_new_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      throw InvalidArgument(path + " is a directory: give the path of a filter file, e.g. " +
                            (path.ends_with('/') ? path : path + "/") + "NAME.rbf");
    }
    return;  // an existing file: the store opens it or says what it is
  }
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      throw InvalidArgument("cannot create filter " + path + ": directory " + dir +
                            " does not exist (make it first: mkdir -p " + dir + ")");
    }
    throw InvalidArgument(errno_message("cannot create filter " + path + ": " + dir));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw InvalidArgument("cannot create filter " + path + ": " + dir + " is not a directory");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw StorageError(errno_message("cannot create filter " + path + " in directory " + dir));
  }
}

// Whether a file's first bytes read as text (no NUL byte): a list of items, not a filter.
bool looks_like_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // a FIFO would block
  std::ifstream in(path, std::ios::binary);
  char head[4096];
  in.read(head, sizeof head);
  const std::streamsize n = in.gcount();
  return n > 0 && std::memchr(head, '\0', static_cast<std::size_t>(n)) == nullptr;
}

// Opens an existing filter; a text file given as one gets a hint to make a filter of it.
Filter open_with_hint(const Location& where, const OpenOptions& options, OpenReport* report) {
  try {
    return Filter::open(where, options, report);
  } catch (const FormatError& e) {
    if (where.kind != Location::Kind::file || !looks_like_text(where.path)) throw;
    throw FormatError(std::string(e.what()) + "; " + where.path +
                      " looks like a list of items: make a filter of it first (redbloom load -f " +
                      where.path + ".rbf " + where.path +
                      ", with --exact for diff --exact), then name that filter");
  }
}

// Filter::create with a plain filter's parameters or a stream's options.
template <class Shape>
Filter create_any(const FilterLocation& location, const Shape& shape, bool overwrite) {
  const Location where = location.resolve();
  if (where.kind == Location::Kind::file) {
    check_new_file(where.path);
    // --force replaces a filter, never a file that is something else (as for a stream).
    if (overwrite && Filter::exists(where)) {
      try {
        (void)Filter::open(where, OpenOptions::read_only());
      } catch (const FormatError& e) {
        throw FormatError(where.path + " is not a redbloom filter that --force could replace (" +
                          e.what() + "); if that file can go, delete it, then create the filter");
      }
    }
  }
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
  if (create_if_missing && where.kind == Location::Kind::file) check_new_file(where.path);
  Filter filter = open_with_hint(where, open_options, &report);
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
  return open_with_hint(location.resolve(), OpenOptions::read_only(), nullptr);
}

}  // namespace redbloom::cli
