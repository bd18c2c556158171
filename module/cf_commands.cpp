// The CF.* commands. Each handler parses its arguments, opens its key once (CuckooKey: empty,
// another type, or a cuckoo filter) and calls the filter; the replies and error texts are
// RedisBloom 2.4.23's, quirks included (a lookup at a key of another type answers 0).
#include "cf_commands.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command_support.hpp"
#include "command_table.hpp"
#include "cuckoo_type.hpp"
#include "memory_room.hpp"

namespace redbloom::module {

namespace {

using cuckoo::Filter;
using cuckoo::Insert;

class CuckooKey {
 public:
  CuckooKey(RedisModuleCtx* ctx, RedisModuleString* name, int mode) : key_(ctx, name, mode) {
    if (!key_.empty() && RedisModule_KeyType(key_.get()) == module_api::kKeyTypeModule &&
        RedisModule_ModuleTypeGetType(key_.get()) == cuckoo_type()) {
      filter_ = static_cast<Filter*>(RedisModule_ModuleTypeGetValue(key_.get()));
    }
  }
  [[nodiscard]] bool empty() const noexcept { return key_.empty(); }
  [[nodiscard]] Filter* filter() const noexcept { return filter_; }
  // RedisBloom's answer at a key that holds no filter: missing, or another type's.
  [[nodiscard]] const char* not_a_filter() const noexcept {
    return empty() ? "ERR not found" : module_api::kWrongTypeError;
  }
  void store(std::unique_ptr<Filter> filter) {
    filter_ = filter.release();
    RedisModule_ModuleTypeSetValue(key_.get(), cuckoo_type(), filter_);
    ++cuckoo_stats().filters;
  }

 private:
  OpenKey key_;
  Filter* filter_ = nullptr;
};

void announce(RedisModuleCtx* ctx, const char* event, RedisModuleString* key) {
  RedisModule_NotifyKeyspaceEvent(ctx, module_api::kNotifyGeneric, event, key);
  RedisModule_ReplicateVerbatim(ctx);
}

// The bytes a filter may hold: the module's limit per filter, and the room maxmemory leaves.
std::uint64_t byte_limit(RedisModuleCtx* ctx, std::uint64_t held) {
  std::uint64_t limit = settings().max_filter_bytes;
  if (const auto room = maxmemory_room(ctx); room && held + *room < limit) limit = held + *room;
  return limit;
}

constexpr const char* kOverLimit =
    "ERR filter cannot grow: it would pass the module's memory limit per filter "
    "(MAX_FILTER_BYTES) or the room maxmemory leaves";

// Makes the filter at the empty key; false after the error reply.
bool create(RedisModuleCtx* ctx, CuckooKey& key, long long capacity, long long bucket_size,
            long long iterations, long long expansion) {
  cuckoo::MakeError error = cuckoo::MakeError::none;
  auto filter =
      Filter::make(static_cast<std::uint64_t>(capacity), static_cast<std::uint16_t>(bucket_size),
                   static_cast<std::uint16_t>(iterations), static_cast<std::uint16_t>(expansion),
                   cuckoo_allocator(), byte_limit(ctx, 0), error);
  switch (error) {
    case cuckoo::MakeError::none:
      key.store(std::move(filter));
      return true;
    case cuckoo::MakeError::too_small:
      reply_error(ctx, "ERR Could not create filter");
      return false;
    case cuckoo::MakeError::too_large:
      reply_error(ctx, "ERR Insufficient memory to create filter");
      return false;
    case cuckoo::MakeError::over_limit:
      reply_error(ctx,
                  "ERR Insufficient memory to create filter: it would pass the module's memory "
                  "limit per filter (MAX_FILTER_BYTES) or the room maxmemory leaves");
      return false;
  }
  return false;
}

// RedisBloom finds an option word anywhere in the arguments (RMUtil_ArgIndex).
int find_option(RedisModuleString** argv, int argc, std::string_view name) {
  for (int i = 1; i < argc; ++i) {
    if (is_option(argv[i], name)) return i;
  }
  return -1;
}

// An option's value in [low, high], the default when absent; nullopt after the error reply.
std::optional<long long> ranged_option(RedisModuleCtx* ctx, RedisModuleString** argv, int argc,
                                       const char* name, long long fallback, long long low,
                                       long long high) {
  const int at = find_option(argv, argc, name);
  if (at < 0) return fallback;
  const auto value = at + 1 < argc ? integer(argv[at + 1]) : std::nullopt;
  if (!value) {
    reply_error(ctx, (std::string("Couldn't parse ") + name).c_str());
    return std::nullopt;
  }
  if (*value < low || *value > high) {
    reply_error(ctx, (std::string(name) + ": value must be an integer between " +
                      std::to_string(low) + " and " + std::to_string(high) + ", inclusive.")
                         .c_str());
    return std::nullopt;
  }
  return value;
}

// CF.RESERVE key capacity [BUCKETSIZE n] [MAXITERATIONS n] [EXPANSION n]
int reserve(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3 || argc % 2 == 0) return RedisModule_WrongArity(ctx);
  const auto capacity = integer(argv[2]);
  if (!capacity) return reply_error(ctx, "Bad capacity");
  const Settings& s = settings();
  const auto iterations = ranged_option(ctx, argv, argc, "MAXITERATIONS", s.cf_max_iterations, 1,
                                        cuckoo::kMaxIterations);
  if (!iterations) return module_api::kOk;
  const auto bucket_size =
      ranged_option(ctx, argv, argc, "BUCKETSIZE", s.cf_bucket_size, 1, cuckoo::kMaxBucketSize);
  if (!bucket_size) return module_api::kOk;
  const auto expansion =
      ranged_option(ctx, argv, argc, "EXPANSION", s.cf_expansion, 0, cuckoo::kMaxExpansion);
  if (!expansion) return module_api::kOk;
  if (*bucket_size * 2 > *capacity) {
    return reply_error(ctx, "Capacity must be at least (BucketSize * 2)");
  }
  CuckooKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (!key.empty()) {
    return reply_error(ctx, key.filter() != nullptr ? "ERR item exists" : key.not_a_filter());
  }
  if (!create(ctx, key, *capacity, *bucket_size, *iterations, *expansion)) return module_api::kOk;
  announce(ctx, "cf.reserve", argv[1]);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

struct InsertOptions {
  bool nx = false;
  bool create = true;
  bool multi = false;
  long long capacity = settings().cf_initial_size;
};

// A batch's hashes, in a buffer kept between commands (they run one at a time on the
// server's main thread); a huge batch's is not kept.
std::vector<std::uint64_t>& hashes_of(RedisModuleString** items, int count) {
  static std::vector<std::uint64_t> hashes;
  constexpr std::size_t kKept = std::size_t{64} << 10;
  if (hashes.capacity() > kKept) hashes = {};
  hashes.resize(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) hashes[i] = cuckoo::item_hash(text(items[i]));
  return hashes;
}

// Items ahead whose buckets are fetched while one is added or looked up.
constexpr int kAhead = 8;

// What an adding command did, for its replication: whether it made the filter, which items it
// stored, and whether a growth was refused for the memory limits (the room maxmemory leaves
// differs on a replica, which applies every command it gets).
struct AddsDone {
  bool created = false;
  long long capacity = 0, bucket_size = 0, iterations = 0, expansion = 0;
  // Per item, 1 when stored; kept between commands (one runs at a time), so that an add
  // allocates nothing for it.
  std::vector<std::uint8_t>& stored = stored_buffer();
  std::size_t stored_count = 0;
  bool growth_refused = false;

  static std::vector<std::uint8_t>& stored_buffer() {
    static std::vector<std::uint8_t> buffer;
    if (buffer.capacity() > (std::size_t{64} << 10)) buffer = {};
    buffer.clear();
    return buffer;
  }
};

// Tells the replicas and the keyspace what changed: the command as it came when it holds
// everywhere, else only the items stored (in order: the refused ones changed nothing).
void replicate_adds(RedisModuleCtx* ctx, RedisModuleString* name, RedisModuleString** items,
                    const AddsDone& done, const char* event) {
  if (!done.created && done.stored_count == 0) return;
  RedisModule_NotifyKeyspaceEvent(ctx, module_api::kNotifyGeneric, event, name);
  if (!done.growth_refused) {
    RedisModule_ReplicateVerbatim(ctx);
    return;
  }
  std::vector<RedisModuleString*> stored;
  for (std::size_t i = 0; i < done.stored.size(); ++i) {
    if (done.stored[i] != 0) stored.push_back(items[i]);
  }
  if (done.created) {
    RedisModule_Replicate(ctx, "CF.RESERVE", "slclclcl", name, done.capacity, "BUCKETSIZE",
                          done.bucket_size, "MAXITERATIONS", done.iterations, "EXPANSION",
                          done.expansion);
  }
  if (!stored.empty()) {
    RedisModule_Replicate(ctx, "CF.INSERT", "sccv", name, "NOCREATE", "ITEMS", stored.data(),
                          stored.size());
  }
}

// The body CF.ADD, CF.ADDNX, CF.INSERT and CF.INSERTNX share: open, make, add in order.
int insert_items(RedisModuleCtx* ctx, RedisModuleString* name, RedisModuleString** items, int count,
                 const InsertOptions& options) {
  CuckooKey key(ctx, name, module_api::kRead | module_api::kWrite);
  const char* event = options.multi ? "cf.insert" : "cf.add";
  AddsDone done;
  done.capacity = options.capacity;
  if (key.empty() && options.create) {
    const Settings& s = settings();
    done.bucket_size = s.cf_bucket_size;
    done.iterations = s.cf_max_iterations;
    done.expansion = s.cf_expansion;
    if (!create(ctx, key, options.capacity, s.cf_bucket_size, s.cf_max_iterations,
                s.cf_expansion)) {
      return module_api::kOk;
    }
    done.created = true;
  } else if (key.filter() == nullptr) {
    return reply_error(ctx, key.not_a_filter());
  }
  Filter& filter = *key.filter();
  // RedisBloom's guard against endless growth: refused once the filter has this many
  // sub-filters, even when older ones have room.
  if (static_cast<long long>(filter.filters().size()) >= settings().cf_max_expansions) {
    replicate_adds(ctx, name, items, done, event);
    return reply_error(ctx, "Maximum expansions reached");
  }
  // The memory limit is asked of the server only when an add must grow the filter (rarely):
  // until then a limit of the bytes held refuses any growth and changes nothing, so that add
  // is made again with the real limit.
  std::optional<std::uint64_t> limit;
  const auto add_one = [&](std::uint64_t hash) {
    const std::uint64_t bound = limit ? *limit : filter.bytes();
    Insert result = options.nx ? filter.insert_unique(hash, bound) : filter.insert(hash, bound);
    if (result == Insert::over_limit && !limit) {
      limit = byte_limit(ctx, filter.bytes());
      result = options.nx ? filter.insert_unique(hash, *limit) : filter.insert(hash, *limit);
    }
    return result;
  };
  if (options.multi) RedisModule_ReplyWithArray(ctx, count);
  std::vector<std::uint64_t>& hashes = hashes_of(items, count);
  done.stored.assign(static_cast<std::size_t>(count), 0);
  for (int i = 0; i < std::min(count, kAhead); ++i) filter.prefetch(hashes[i]);
  for (int i = 0; i < count; ++i) {
    if (i + kAhead < count) filter.prefetch(hashes[i + kAhead]);
    const Insert result = add_one(hashes[i]);
    done.stored[i] = result == Insert::inserted ? 1 : 0;
    done.stored_count += done.stored[i];
    done.growth_refused |= result == Insert::over_limit || result == Insert::cannot_grow;
    if (result == Insert::inserted || result == Insert::exists) {
      RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(result));
    } else if (options.multi) {
      RedisModule_ReplyWithLongLong(ctx, -1);
    } else {
      replicate_adds(ctx, name, items, done, event);
      return reply_error(ctx, result == Insert::no_space     ? "Filter is full"
                              : result == Insert::over_limit ? kOverLimit
                                                             : "Memory allocation failure");
    }
  }
  replicate_adds(ctx, name, items, done, event);
  return module_api::kOk;
}

// CF.ADD key item / CF.ADDNX key item (one body each: each has its own call counter)
template <bool Nx>
int add(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  InsertOptions options;
  options.nx = Nx;
  return insert_items(ctx, argv[1], argv + 2, 1, options);
}

// CF.INSERT key [CAPACITY n] [NOCREATE] ITEMS item... (and CF.INSERTNX); RedisBloom tells the
// options by their first letter.
template <bool Nx>
int insert(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 4) return RedisModule_WrongArity(ctx);
  InsertOptions options;
  options.nx = Nx;
  options.multi = true;
  int at = 2;
  int items = -1;
  while (at < argc && items < 0) {
    const std::string_view word = text(argv[at]);
    switch (word.empty() ? '\0' : std::tolower(static_cast<unsigned char>(word[0]))) {
      case 'c': {
        if (++at == argc) return RedisModule_WrongArity(ctx);
        const auto capacity = integer(argv[at++]);
        if (!capacity) return reply_error(ctx, "Bad capacity");
        if (2 * settings().cf_bucket_size > *capacity) {
          return reply_error(ctx, "Capacity must be at least (BucketSize * 2)");
        }
        options.capacity = *capacity;
        break;
      }
      case 'i':
        items = ++at;
        break;
      case 'n':
        options.create = false;
        ++at;
        break;
      default:
        return reply_error(ctx, "Unknown argument received");
    }
  }
  if (items < 0 || items == argc) return RedisModule_WrongArity(ctx);
  return insert_items(ctx, argv[1], argv + items, argc - items, options);
}

// CF.EXISTS key item / CF.MEXISTS key item... / CF.COUNT key item: 0 at a missing key and
// at a key of another type, as RedisBloom answers.
template <bool Multi, bool Count>
int look_up(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if ((!Multi && argc != 3) || (Multi && argc < 3)) return RedisModule_WrongArity(ctx);
  CuckooKey key(ctx, argv[1], module_api::kRead);
  const Filter* filter = key.filter();
  if (Multi) RedisModule_ReplyWithArray(ctx, argc - 2);
  if (filter == nullptr) {
    for (int i = 2; i < argc; ++i) RedisModule_ReplyWithLongLong(ctx, 0);
    return module_api::kOk;
  }
  if (Count || !Multi) {
    const std::uint64_t hash = cuckoo::item_hash(text(argv[2]));
    return RedisModule_ReplyWithLongLong(
        ctx, Count ? static_cast<long long>(filter->count(hash)) : filter->contains(hash));
  }
  const std::vector<std::uint64_t>& hashes = hashes_of(argv + 2, argc - 2);
  static std::vector<std::uint8_t> present;
  if (present.capacity() > (std::size_t{64} << 10)) present = {};
  present.resize(hashes.size());
  filter->contains_many(hashes, present.data());
  for (const std::uint8_t answer : present) RedisModule_ReplyWithLongLong(ctx, answer);
  return module_api::kOk;
}

// CF.DEL key item
int del(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  CuckooKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (key.filter() == nullptr) return reply_error(ctx, "Not found");
  const bool removed = key.filter()->remove(cuckoo::item_hash(text(argv[2])));
  if (removed) announce(ctx, "cf.del", argv[1]);
  return RedisModule_ReplyWithLongLong(ctx, removed ? 1 : 0);
}

// CF.COMPACT key
int compact(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  CuckooKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (key.filter() == nullptr) return reply_error(ctx, "Cuckoo filter was not found");
  key.filter()->compact(true);
  announce(ctx, "cf.compact", argv[1]);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// CF.SCANDUMP key iterator
int scandump(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const auto iterator = integer(argv[2]);
  if (!iterator || *iterator < 0) return reply_error(ctx, "Invalid position");
  CuckooKey key(ctx, argv[1], module_api::kRead);
  const Filter* filter = key.filter();
  if (filter == nullptr) return reply_error(ctx, key.not_a_filter());
  RedisModule_ReplyWithArray(ctx, 2);
  if (filter->items() == 0) {
    RedisModule_ReplyWithLongLong(ctx, 0);
    return RedisModule_ReplyWithNull(ctx);
  }
  if (*iterator == 0) {
    const std::string header = filter->encode_header();
    RedisModule_ReplyWithLongLong(ctx, 1);
    return RedisModule_ReplyWithStringBuffer(ctx, header.data(), header.size());
  }
  long long next = 0;
  const auto chunk = filter->chunk(*iterator, &next);
  if (chunk.empty()) {
    RedisModule_ReplyWithLongLong(ctx, 0);
    return RedisModule_ReplyWithNull(ctx);
  }
  RedisModule_ReplyWithLongLong(ctx, next);
  return RedisModule_ReplyWithStringBuffer(ctx, reinterpret_cast<const char*>(chunk.data()),
                                           chunk.size());
}

// CF.LOADCHUNK key iterator data: iterator 1 with the header at an empty key, then each chunk.
int loadchunk(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 4) return RedisModule_WrongArity(ctx);
  CuckooKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  const auto iterator = integer(argv[2]);
  if (!iterator || *iterator == 0) return reply_error(ctx, "Invalid position");
  const std::string_view data = text(argv[3]);
  if (*iterator == 1) {
    if (!key.empty()) {
      return reply_error(ctx, key.filter() != nullptr ? "ERR item exists" : key.not_a_filter());
    }
    if (data.size() != cuckoo::kHeaderBytes) return reply_error(ctx, "Invalid header");
    std::string problem;
    auto filter = Filter::decode_header(data, byte_limit(ctx, 0), cuckoo_allocator(), problem);
    if (filter == nullptr) return reply_error(ctx, "Couldn't create filter!");
    key.store(std::move(filter));
    announce(ctx, "cf.loadchunk", argv[1]);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
  }
  if (key.filter() == nullptr) return reply_error(ctx, key.not_a_filter());
  if (!key.filter()->load_chunk(*iterator, data)) return reply_error(ctx, "Couldn't load chunk!");
  // RedisBloom does not replicate a chunk (its replicas keep the header's empty filter).
  announce(ctx, "cf.loadchunk", argv[1]);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// CF.INFO key
int info(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  CuckooKey key(ctx, argv[1], module_api::kRead);
  const Filter* filter = key.filter();
  if (filter == nullptr) return reply_error(ctx, key.not_a_filter());
  const std::pair<const char*, std::uint64_t> fields[] = {
      {"Size", filter->memory_usage()},
      {"Number of buckets", filter->buckets()},
      {"Number of filters", filter->filters().size()},
      {"Number of items inserted", filter->items()},
      {"Number of items deleted", filter->deletes()},
      {"Bucket size", filter->bucket_size()},
      {"Expansion rate", filter->expansion()},
      {"Max iterations", filter->max_iterations()},
  };
  RedisModule_ReplyWithArray(ctx, 2 * std::size(fields));
  for (const auto& [label, value] : fields) {
    RedisModule_ReplyWithSimpleString(ctx, label);
    RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(value));
  }
  return module_api::kOk;
}

// CF.DEBUG key
int debug(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  CuckooKey key(ctx, argv[1], module_api::kRead);
  const Filter* filter = key.filter();
  if (filter == nullptr) return reply_error(ctx, key.not_a_filter());
  const std::string line = filter->debug_line();
  return RedisModule_ReplyWithStringBuffer(ctx, line.data(), line.size());
}

}  // namespace

bool register_cf_commands(RedisModuleCtx* ctx) noexcept {
  static const Command commands[] = {
      counted<reserve>("cf.reserve", "write deny-oom"),
      counted<add<false>>("cf.add", "write deny-oom"),
      counted<add<true>>("cf.addnx", "write deny-oom"),
      counted<insert<false>>("cf.insert", "write deny-oom"),
      counted<insert<true>>("cf.insertnx", "write deny-oom"),
      counted<look_up<false, false>>("cf.exists", "readonly fast"),
      counted<look_up<true, false>>("cf.mexists", "readonly fast"),
      counted<look_up<false, true>>("cf.count", "readonly fast"),
      counted<del>("cf.del", "write fast"),
      counted<compact>("cf.compact", "write"),
      counted<scandump>("cf.scandump", "readonly"),
      counted<loadchunk>("cf.loadchunk", "write deny-oom"),
      counted<info>("cf.info", "readonly fast"),
      counted<debug>("cf.debug", "readonly fast"),
  };
  return register_commands(ctx, commands);
}

}  // namespace redbloom::module
