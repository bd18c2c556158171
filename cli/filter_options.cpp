#include "filter_options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "diagnostics.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"

namespace redbloom::cli {
namespace {

bool given(const CLI::Option* option) {
  return option != nullptr && option->count() > 0;
}

}  // namespace

namespace {

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
  if (!path.empty()) return Location::parse(path, name, {path_flag, name_flag, redis_flag});
  if (!redis_file.empty()) {
    const std::string flag = redis_flag + "-file";
    return Location::parse(servers_in_file(redis_file, flag), name, {flag, name_flag, redis_flag});
  }
  // No servers given: $REDIS_URL or the local default (Location::parse); a failed connection
  // then says which server it tried, and why.
  if (redis_uri.empty()) note_implicit_server();
  return Location::parse(redis_uri, name, {redis_flag, name_flag, redis_flag});
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

void add_creator_wait_option(CLI::App& command, FilterLocation& location) {
  command.add_option("--wait-for-creator", location.creator_wait,
                     "How long to wait for another process that is still creating the filter in "
                     "Redis, a number and a unit ms, s, m or h (default 30s)");
}

std::chrono::milliseconds FilterLocation::wait_for_creator() const {
  if (creator_wait.empty()) return OpenOptions{}.wait_for_creator;
  std::uint64_t ns = 0;
  try {
    ns = parse_duration_ns(creator_wait);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--wait-for-creator: ") + e.what());
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(ns));
}

void add_sizing_options(CLI::App& command, SizingOptions& o) {
  o.capacity_option = command.add_option("-n,--capacity", o.capacity,
                                         "Items the filter is sized for (default 1e6)");
  o.error_rate_option =
      command.add_option("-p,--error-rate", o.error_rate,
                         "False-positive rate at capacity: 0.01 (default), 1e-3 or 0.1%");
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
                         "Limit of a windowed or growing filter's memory, or a growing cuckoo "
                         "filter's (e.g. 2GiB): adds past it fail, saying what was committed");
  o.kind_option = command.add_option(
      "--kind", o.kind,
      "bloom (default) or cuckoo: a cuckoo filter can remove items (redbloom remove) and count "
      "them, sized by -n and -p (with --growth and --max-bytes)");
  o.kind_option->check(CLI::IsMember({"bloom", "cuckoo"}));
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

FilterRequest SizingOptions::request() const {
  FilterRequest r;
  r.default_size = true;
  r.force_rate = force_rate;
  if (given(capacity_option)) r.capacity = capacity;
  if (given(error_rate_option)) r.error_rate = error_rate;
  if (given(layout_option)) r.layout = layout;
  if (given(bits_option)) r.bits = bits;
  if (given(hashes_option)) r.hashes = hashes;
  if (given(partition_option)) r.partition_size = partition_size;
  if (given(window_option)) r.window = window;
  if (given(slices_option)) r.slices = slices;
  if (given(growth_option)) r.growth = growth;
  if (given(rate_option)) r.item_rate = rate;
  if (given(max_bytes_option)) r.max_bytes = max_bytes;
  if (given(kind_option)) r.kind = kind;
  return r;
}

SizedRequest requested_size(const SizingOptions& options) {
  return size_request(options.request());
}

FilterParams requested_params(const SizingOptions& options) {
  const SizedRequest sized = requested_size(options);
  if (sized.cuckoo) throw InvalidArgument("these options make a cuckoo filter");
  if (!sized.params) throw InvalidArgument("these options make a windowed or growing filter");
  return *sized.params;
}

std::optional<StreamOptions> requested_stream(const SizingOptions& options) {
  return requested_size(options).stream;
}

std::string defaulted_size(const SizingOptions& options) {
  static_assert(kDefaultCapacity == 1e6 && kDefaultErrorRate == 0.01, "the text below says so");
  const bool by_hand = given(options.bits_option);
  const bool capacity = !by_hand && !given(options.capacity_option) && !given(options.rate_option);
  const bool rate = !by_hand && !given(options.error_rate_option);
  if (!capacity && !rate) return "";
  const bool windowed = given(options.window_option);
  if (given(options.kind_option) && options.kind == "cuckoo") {
    const std::string what = capacity && rate ? "the default size, -n 1e6 -p 0.01"
                             : capacity       ? "the default capacity, -n 1e6"
                                              : "the default error rate, -p 0.01";
    if (given(options.growth_option)) {
      return " (" + what +
             "): for another size, drop it and pass -n ITEMS (its first table's) -p RATE";
    }
    return " (" + what +
           "); once full it refuses adds: for another size, drop it and pass -n ITEMS -p RATE, "
           "or --growth 2 to let it grow";
  }
  const std::string items = windowed ? "-n 1e6 items per window" : "-n 1e6";
  const std::string what = capacity && rate ? "the default size, " + items + " -p 0.01"
                           : capacity       ? "the default capacity, " + items
                                            : "the default error rate, -p 0.01";
  if (windowed) {
    return " (" + what +
           "): for another size, drop it and pass --rate ITEMS/s or -n ITEMS (per window) and "
           "-p RATE";
  }
  if (given(options.growth_option)) {
    return " (" + what +
           "): for another size, drop it and pass -n ITEMS (its first link's) -p RATE";
  }
  return " (" + what +
         "); past its capacity new items are ever more often taken for ones already seen: for "
         "another size, drop it and pass -n ITEMS -p RATE (redbloom plan -n ITEMS -p RATE shows "
         "the cost)";
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
  } catch (const IncompleteFilter& e) {
    throw IncompleteFilter(std::string(e.what()) +
                           "; if its creator is still at work, --wait-for-creator waits longer");
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

Filter create_cuckoo_filter(const FilterLocation& location, const CuckooOptions& cuckoo,
                            bool overwrite) {
  return create_any(location, cuckoo, overwrite);
}

WritableFilter open_for_writing(const FilterLocation& location, const SizingOptions& options,
                                bool create_if_missing) {
  // Validate the options even when the filter exists: a typo must not pass silently.
  const SizedRequest sized = requested_size(options);
  const std::optional<StreamOptions>& stream = sized.stream;
  const Location where = location.resolve();
  OpenReport report;
  OpenOptions open_options = sized.cuckoo ? OpenOptions::create_cuckoo(*sized.cuckoo, sized.given)
                             : stream     ? OpenOptions::create_stream(*stream, sized.given)
                                          : OpenOptions::create_missing(*sized.params, sized.given);
  open_options.create_if_missing = create_if_missing;
  open_options.wait_for_creator = location.wait_for_creator();
  if (create_if_missing && where.kind == Location::Kind::file) check_new_file(where.path);
  Filter filter = open_with_hint(where, open_options, &report);
  if (sized.cuckoo && !filter.shape().cuckoo) {
    throw FilterExists("filter " + where.describe() + " is a Bloom filter (" +
                       filter.shape().describe() +
                       "), not a cuckoo filter: leave out --kind "
                       "cuckoo to use it, or give another filter");
  }
  for (const std::string& warning : report.warnings) report_warning(warning);
  if (report.created) {
    std::string note = "created filter " + where.describe() + ": " +
                       (sized.cuckoo ? describe(*sized.cuckoo)
                        : stream     ? describe(*stream)
                                     : describe(*sized.params));
    report_created(note + defaulted_size(options));
  }
  return {std::move(filter), report.created};
}

Filter open_for_reading(const FilterLocation& location) {
  OpenOptions options = OpenOptions::read_only();
  options.wait_for_creator = location.wait_for_creator();
  return open_with_hint(location.resolve(), options, nullptr);
}

}  // namespace redbloom::cli
