// Where a filter lives: open, create, drop and the exact companion, by Location, for every
// store. The CLI, KnownSet and the bindings all come through here.
#include <chrono>
#include <thread>
#include <utility>

#include "core/stream_shape.hpp"
#include "local/cuckoo_store.hpp"
#include "local/file_filters.hpp"
#include "local/file_store.hpp"
#include "local/stream_store.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redis/redis_filters.hpp"
#include "redis/redis_store.hpp"
#include "redis/sharded_store.hpp"

namespace redbloom {
namespace {

// A Redis filter still being created by another process is waited for (its store does that,
// in the Redis lifecycle); a file appears complete or not at all. Each store family tells the
// kinds of filter it holds apart.
Filter open_existing(const Location& location, const OpenOptions& options) {
  if (!location.in_redis()) {
    return Filter(open_file_filter(location.path, options.access, options.clock));
  }
  return Filter(
      open_redis_filter(location.servers, location.name, options.clock, options.wait_for_creator));
}

void check_parameters(const Filter& filter, const OpenOptions& options, const Location& location) {
  if (!options.require_params) return;
  if (const auto& server = filter.shape().server_filter) {
    throw FilterExists("filter " + filter.backend().location() +
                       " has the parameters its server gave it (capacity " +
                       std::to_string(server->capacity) +
                       "), which redbloom's options cannot check; leave out the sizing options "
                       "to use it as it is");
  }
  const FilterShape& shape = filter.shape();
  if (options.cuckoo) {
    // A Redis filter's partitions default as Filter::create made them.
    const CuckooOptions wanted =
        location.in_redis() ? redis_cuckoo_options(*options.cuckoo, location.servers.size())
                            : *options.cuckoo;
    if (!shape.cuckoo || !(*shape.cuckoo == wanted)) {
      throw FilterExists("filter " + filter.backend().location() +
                         " was created with other parameters: it is " + shape.describe() +
                         "; the options ask for " + describe(wanted));
    }
    return;
  }
  if (options.stream) {
    const StreamShape wanted(*options.stream);
    if (!shape.stream || !(*shape.stream == wanted.options())) {
      throw FilterExists("filter " + filter.backend().location() +
                         " was created with other parameters: it is " + shape.describe() +
                         "; the options ask for " + wanted.describe());
    }
    return;
  }
  if (!shape.plain() || !(shape.params == *options.params)) {
    throw FilterExists("filter " + filter.backend().location() +
                       " was created with other parameters: it is " + shape.describe() +
                       "; the options ask for " + describe(*options.params));
  }
}

// Servers that may evict the filter's keys when full (a lost partition is then an error, but
// the filter is gone): said after the filter was made, so a failed check is only a warning.
void note_eviction_risks(const Location& location, std::vector<std::string>& warnings) {
  for (const RedisEndpoint& server : location.servers) {
    try {
      for (std::string& risk : RedisStore::eviction_risks(server)) {
        warnings.push_back(std::move(risk));
      }
    } catch (const Error& e) {
      warnings.push_back(std::string("could not read the eviction policy: ") + e.what());
    }
  }
}

// A filter of fewer partitions than its servers (a cluster's masters) leaves the others
// idle: its memory and its work all on some of them. `link_bytes`: its first link's bytes.
void note_unspread(const Location& location, std::uint64_t partitions, std::uint64_t link_bytes,
                   std::vector<std::string>& warnings) {
  std::size_t holders = location.servers.size();
  std::string what = "servers";
  const bool cluster = holders == 1;
  if (cluster) {
    try {
      holders = RedisStore::masters(location.servers.front());
    } catch (const Error&) {
      return;  // the eviction check says what is wrong with the server
    }
    what = "masters";
  }
  if (partitions >= holders) return;
  // A power of two of at least a 64-byte line: a size a user would type, and still small
  // enough to give every holder a partition.
  std::uint64_t spread = 64;
  while (2 * spread <= link_bytes / holders) spread *= 2;
  // As --partition-size takes it.
  std::string size = std::to_string(spread) + "B";
  for (const auto& [unit, bytes] :
       {std::pair{"GiB", 1ull << 30}, std::pair{"MiB", 1ull << 20}, std::pair{"KiB", 1ull << 10}}) {
    if (spread >= bytes) {
      size = std::to_string(spread / bytes) + unit;
      break;
    }
  }
  const std::string count = std::to_string(partitions);
  std::string warning = "filter '" + location.name + "' has " + count +
                        (partitions == 1 ? " partition, so only 1 of its "
                                         : " partitions, so only " + count + " of its ");
  warning += std::to_string(holders) + " " + what +
             (partitions == 1 ? " holds it and does" : " hold it and do") +
             " its work; --partition-size " + size + " or less spreads it over all";
  if (cluster) {
    warning +=
        " (but a Redis Streams stage on a cluster needs the filter in one slot: keep "
        "one partition there)";
  }
  warnings.push_back(std::move(warning));
}

// The server that holds a Redis filter's exact set: the first (of a sharded filter).
const RedisEndpoint& exact_home(const Location& location) {
  return location.servers.front();
}

[[noreturn]] void no_memory_companion() {
  throw NotFound("a memory filter has no exact set");
}

// Whether `set` was made for `filter` (sets and filters that recorded no id are taken as one).
bool belongs_to(const ExactSet& set, const Filter& filter) {
  const std::uint64_t made_for = set.filter_id();
  const std::uint64_t id = filter.backend().created_unix_ns();
  return made_for == 0 || id == 0 || made_for == id;
}

}  // namespace

Filter Filter::create(const Location& location, const FilterParams& params, bool overwrite,
                      OpenReport* report) {
  if (location.kind == Location::Kind::memory) {
    if (report) report->created = true;
    return in_memory(params);
  }
  Filter filter(location.in_redis()
                    ? create_redis_filter(location.servers, location.name, params, overwrite)
                    : create_file_filter(location.path, params, overwrite));
  if (report) {
    report->created = true;
    if (location.in_redis()) {
      note_eviction_risks(location, report->warnings);
      note_unspread(location, params.partitions, params.partitions * params.partition_bytes(),
                    report->warnings);
    }
  }
  return filter;
}

Filter Filter::create(const Location& location, const StreamOptions& stream, bool overwrite,
                      OpenReport* report, Clock clock) {
  const StreamShape shape(stream);
  std::unique_ptr<FilterBackend> store;
  switch (location.kind) {
    case Location::Kind::memory:
      store = make_memory_stream_store(shape, std::move(clock));
      break;
    case Location::Kind::file:
      store = create_file_filter(location.path, shape, std::move(clock), overwrite);
      break;
    case Location::Kind::redis:
      store =
          create_redis_filter(location.servers, location.name, shape, std::move(clock), overwrite);
      break;
  }
  if (report) {
    report->created = true;
    if (location.in_redis()) {
      note_eviction_risks(location, report->warnings);
      const FilterParams first = shape.link_params(0);
      note_unspread(location, shape.partitions(), first.partitions * first.partition_bytes(),
                    report->warnings);
    }
  }
  return Filter(std::move(store));
}

Filter Filter::create(const Location& location, const CuckooOptions& cuckoo, bool overwrite,
                      OpenReport* report) {
  std::unique_ptr<FilterBackend> store;
  switch (location.kind) {
    case Location::Kind::memory:
      store = LocalCuckooStore::in_memory(cuckoo);
      break;
    case Location::Kind::file:
      store = create_file_filter(location.path, cuckoo, overwrite);
      break;
    case Location::Kind::redis:
      store = create_redis_filter(location.servers, location.name,
                                  redis_cuckoo_options(cuckoo, location.servers.size()), overwrite);
      break;
  }
  if (report) {
    report->created = true;
    if (location.in_redis()) note_eviction_risks(location, report->warnings);
  }
  return Filter(std::move(store));
}

Filter Filter::open(const Location& location, const OpenOptions& options, OpenReport* report) {
  if ((options.create_if_missing || options.require_params) && !options.params && !options.stream &&
      !options.cuckoo) {
    throw InvalidArgument("open: create_if_missing and require_params need the parameters");
  }
  // Its exact set, opened later, waits for its creator as long as the filter would.
  const auto remembering_wait = [&](Filter filter) {
    filter.wait_for_creator_ = options.wait_for_creator;
    return filter;
  };
  // Creates the filter the options describe.
  const auto create_asked = [&](bool overwrite) {
    if (options.stream) {
      return remembering_wait(create(location, *options.stream, overwrite, report, options.clock));
    }
    if (options.cuckoo)
      return remembering_wait(create(location, *options.cuckoo, overwrite, report));
    return remembering_wait(create(location, *options.params, overwrite, report));
  };
  if (location.kind == Location::Kind::memory) {
    if (!options.create_if_missing) {
      throw NotFound(
          "a memory filter exists only in the process that made it: open it with "
          "create_if_missing and its parameters");
    }
    return create_asked(false);
  }
  if (options.create_if_missing && !exists(location)) {
    try {
      return create_asked(false);
    } catch (const FilterExists&) {
      // Another process created it first (or is creating it): use theirs, checked below.
    }
  }
  Filter filter = open_existing(location, options);
  check_parameters(filter, options, location);
  return remembering_wait(std::move(filter));
}

bool Filter::exists(const Location& location) {
  switch (location.kind) {
    case Location::Kind::memory:
      return false;
    case Location::Kind::file:
      return FileStore::exists(location.path);
    case Location::Kind::redis:
      break;
  }
  return ShardedRedisStore::exists(location.servers, location.name);
}

void Filter::drop(const Location& location) {
  // The filter first: its drop refuses anything that is not a filter, and then its exact set
  // is left alone too. (A set left behind is dropped when a filter is created anew.)
  switch (location.kind) {
    case Location::Kind::memory:
      throw InvalidArgument("a memory filter is dropped by destroying it");
    case Location::Kind::file:
      remove_file_filter(location.path);
      break;
    case Location::Kind::redis:
      // A key of the server's own Bloom engine has no exact set beside it.
      if (!drop_redis_filter(location.servers, location.name)) return;
      break;
  }
  if (exact_set_exists(location)) drop_exact_set(location);
}

bool exact_set_exists(const Location& location) {
  switch (location.kind) {
    case Location::Kind::memory:
      return false;
    case Location::Kind::file:
      return file_exact_set_exists(location.path);
    case Location::Kind::redis:
      break;
  }
  return redis_exact_set_exists(exact_home(location), location.name);
}

std::unique_ptr<ExactSet> open_exact_set(const Location& location, const Filter& filter,
                                         bool writable) {
  std::unique_ptr<ExactSet> set;
  switch (location.kind) {
    case Location::Kind::memory:
      no_memory_companion();
    case Location::Kind::file:
      set = open_file_exact_set(location.path, writable);
      break;
    case Location::Kind::redis:
      set = open_redis_exact_set(exact_home(location), location.name, filter.wait_for_creator());
      break;
  }
  if (!belongs_to(*set, filter)) {
    throw FormatError(set->location() + " belongs to another filter than " +
                      filter.backend().location() +
                      " (one deleted or replaced since): its items are not this filter's; drop "
                      "the filter and build it again with --exact");
  }
  return set;
}

std::unique_ptr<ExactSet> create_exact_set(const Location& location, const Filter& filter,
                                           bool overwrite) {
  const FilterParams& p = filter.params();
  const std::uint64_t expected = p.capacity > 0 ? p.capacity : p.total_bits() / 10;
  switch (location.kind) {
    case Location::Kind::memory:
      no_memory_companion();
    case Location::Kind::file:
      return create_file_exact_set(location.path, overwrite);
    case Location::Kind::redis:
      break;
  }
  return create_redis_exact_set(exact_home(location), location.name, expected, overwrite,
                                filter.backend().created_unix_ns());
}

void drop_exact_set(const Location& location) {
  switch (location.kind) {
    case Location::Kind::memory:
      no_memory_companion();
    case Location::Kind::file:
      remove_file_exact_set(location.path);
      return;
    case Location::Kind::redis:
      break;
  }
  drop_redis_exact_set(exact_home(location), location.name);
}

void drop_stale_exact_set(const Location& location, const Filter& filter) {
  switch (location.kind) {
    case Location::Kind::memory:
      return;
    case Location::Kind::file:
      (void)remove_stale_file_exact_set(location.path);
      return;
    case Location::Kind::redis:
      break;
  }
  if (!exact_set_exists(location)) return;
  const auto set =
      open_redis_exact_set(exact_home(location), location.name, filter.wait_for_creator());
  if (!belongs_to(*set, filter)) drop_redis_exact_set(exact_home(location), location.name);
}

std::unique_ptr<ExactSet> exact_set_for_writing(const Location& location, const Filter& filter,
                                                bool create) {
  if (filter.shape().windowed()) {
    if (!create) return nullptr;
    throw InvalidArgument("filter " + location.describe() +
                          " is windowed: it forgets items, and an exact set beside it would "
                          "not; use --exact with a plain or growing filter");
  }
  if (const auto& server = filter.shape().server_filter) {
    if (!create) return nullptr;
    throw InvalidArgument("filter " + location.describe() + " is " + server->kind +
                          ": an exact set needs a redbloom filter beside it; create one (without "
                          "BF.RESERVE) and load it with --exact");
  }
  // Emptiness is read before the set is looked for: a racing writer may create the set and
  // add items in between, and its items must not be taken for ones added without a set.
  const bool empty = filter.backend().count_set_bits() == 0;
  if (exact_set_exists(location)) {
    // One left by a filter deleted or replaced since: replaced while this filter is empty
    // (nothing of it could be missing); else its items can never be verified.
    if (empty) drop_stale_exact_set(location, filter);
    if (exact_set_exists(location)) return open_exact_set(location, filter);
  }
  if (!create) return nullptr;
  if (!empty) {
    throw InvalidArgument("filter " + location.describe() +
                          " already holds items but has no exact set: they could never be "
                          "verified; load the same source with --exact into a new filter (or "
                          "create this one anew with --force, which drops its items, and load it "
                          "with --exact)");
  }
  try {
    return create_exact_set(location, filter);
  } catch (const FilterExists&) {
    return open_exact_set(location, filter);  // another writer created it first
  }
}

std::optional<ExactSetSummary> exact_set_summary(const Location& location) {
  if (!exact_set_exists(location)) return std::nullopt;
  if (location.kind == Location::Kind::file) return summarize_file_exact_set(location.path);
  return summarize(*open_redis_exact_set(exact_home(location), location.name));
}

}  // namespace redbloom
