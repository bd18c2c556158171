#include "plain_filter.hpp"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "command_support.hpp"
#include "core/bitmap_kernels.hpp"
#include "core/kernel_parts.hpp"
#include "core/layout.hpp"
#include "core/partition_view.hpp"
#include "redbloom/error.hpp"

namespace redbloom::module {

namespace {

// Every field a redbloom metadata hash may have (format.cpp writes them).
constexpr const char* kMetadataFields[] = {
    "format",         "version",  "state",      "layout",      "hashes",          "partitions",
    "partition_bits", "capacity", "error_rate", "hash_scheme", "created_unix_ns", "claimed_unix_ns",
    "tag_salts",      "shards",   "shard",      "shard_set",
};

// REDISMODULE_HASH_CFIELDS: HashGet takes the field names as C strings.
constexpr int kHashCFields = 1 << 2;
// REDISMODULE_CTX_FLAGS_CLUSTER.
constexpr int kContextCluster = 1 << 5;

std::string quoted(std::string_view name) {
  std::string text(1, '\'');
  text += name;
  text += '\'';
  return text;
}

std::string describe(std::string_view format) {
  if (format == redis::kFilterFormat) {
    return "a redbloom plain filter (a metadata hash and string partitions)";
  }
  if (format == redis::kStreamFormat) return "a redbloom windowed or growing filter";
  if (format == redis::kExactFormat) return "a redbloom exact set";
  return "a redbloom object of format '" + std::string(format) + "'";
}

std::string field_text(RedisModuleCtx* ctx, RedisModuleKey* key, const char* field, bool* found) {
  RedisModuleString* value = nullptr;
  RedisModule_HashGet(key, kHashCFields, field, &value, nullptr);
  *found = value != nullptr;
  if (value == nullptr) return {};
  std::string copy(text(value));
  RedisModule_FreeString(ctx, value);
  return copy;
}

// Why BF.* cannot work here on a plain filter of this metadata, or "" when it can.
std::string plain_problem(RedisModuleCtx* ctx, const redis::FilterMetadata& m) {
  if (!m.ready) return "is still being created (or its creation died): wait, or drop it";
  if (m.shards > 1) {
    return "is shard " + std::to_string(m.shard + 1) + " of " + std::to_string(m.shards) +
           " of a filter sharded over several servers, whose other partitions BF.* cannot "
           "reach: use the redbloom library or CLI";
  }
  if ((RedisModule_GetContextFlags(ctx) & kContextCluster) != 0) {
    return "has its partitions in other slots of this cluster, which a BF.* command on one key "
           "cannot reach: use the redbloom library or CLI (they hash on the server with "
           "RB.PARTADD / RB.PARTEXISTS, partition by partition)";
  }
  if (m.params.hash_scheme != kCurrentHashScheme) {
    return "uses hash scheme " + std::to_string(m.params.hash_scheme) +
           ", which this module does not place bits by";
  }
  return {};
}

// The partitions' keys a command opened, closed and their names freed at scope end.
class PartitionKeys {
 public:
  explicit PartitionKeys(RedisModuleCtx* ctx) noexcept : ctx_(ctx) {}
  PartitionKeys(const PartitionKeys&) = delete;
  PartitionKeys& operator=(const PartitionKeys&) = delete;
  ~PartitionKeys() {
    keys_.clear();
    for (RedisModuleString* name : names_) RedisModule_FreeString(ctx_, name);
  }
  const OpenKey& open(const std::string& name, int mode) {
    names_.push_back(RedisModule_CreateString(ctx_, name.data(), name.size()));
    keys_.push_back(std::make_unique<OpenKey>(ctx_, names_.back(), mode));
    return *keys_.back();
  }

 private:
  RedisModuleCtx* ctx_;
  std::vector<RedisModuleString*> names_;
  std::vector<std::unique_ptr<OpenKey>> keys_;
};

// Hashes the items, opens and checks each partition they need, then runs `work(view, i, hash)`
// on item i in order. A missing or changed partition is an error before any bit is touched.
template <class Work>
std::optional<std::string> over_partitions(RedisModuleCtx* ctx, std::string_view name,
                                           const redis::FilterMetadata& m,
                                           std::span<const std::string_view> items, bool write,
                                           Work&& work) {
  const FilterParams& params = m.params;
  std::vector<ItemHash> hashes(items.size());
  std::vector<std::uint64_t> partition(items.size());
  kernels::hash_items(items, hashes.data());
  for (std::size_t i = 0; i < items.size(); ++i) {
    partition[i] = layout::partition_of(hashes[i], params.partitions);
  }
  const std::uint64_t sealed = params.partition_bytes() + redis::seal_bytes(m.version);
  const int mode = write ? module_api::kRead | module_api::kWrite : module_api::kRead;
  PartitionKeys keys(ctx);
  // Partition index -> its bytes, for the partitions these items need.
  std::unordered_map<std::uint64_t, std::uint8_t*> bytes_of;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::uint64_t p = partition[i];
    if (bytes_of.contains(p)) continue;
    const std::uint32_t salt = m.tag_salts.empty() ? 0 : m.tag_salts[p];
    const std::string key_name = redis::partition_key(name, p, salt);
    const OpenKey& key = keys.open(key_name, mode);
    const char* lost = nullptr;
    if (key.empty()) {
      lost = "is missing";
    } else if (RedisModule_KeyType(key.get()) != module_api::kKeyTypeString) {
      lost = "holds another type than a string";
    } else if (RedisModule_ValueLength(key.get()) != sealed) {
      lost = "has changed length";
    }
    if (lost != nullptr) {
      return "REDBLOOMLOST partition " + quoted(key_name) + " of redbloom filter " + quoted(name) +
             " " + lost +
             " (evicted, deleted or overwritten): its items are lost; nothing was done";
    }
    std::size_t length = 0;
    auto* bytes = reinterpret_cast<std::uint8_t*>(
        RedisModule_StringDMA(key.get(), &length, write ? module_api::kWrite : module_api::kRead));
    bytes_of.emplace(p, bytes);
  }
  std::vector<std::uint8_t*> item_bytes(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) item_bytes[i] = bytes_of[partition[i]];
  // Each item's bits are requested a few items before its turn (PartitionView::prefetch).
  kernels::parts::ahead_pipeline<PartitionView::kPrefetchAhead>(
      items.size(),
      [&](std::size_t i) {
        PartitionView(item_bytes[i], params).prefetch(hashes[i], write);
        return i;
      },
      [&](std::size_t i, std::size_t) {
        PartitionView view(item_bytes[i], params);
        work(view, i, hashes[i]);
      });
  return std::nullopt;
}

}  // namespace

RedbloomHash inspect_hash(RedisModuleCtx* ctx, std::string_view name, RedisModuleKey* key) {
  RedbloomHash hash;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const char* field : kMetadataFields) {
    bool found = false;
    std::string value = field_text(ctx, key, field, &found);
    if (found) pairs.emplace_back(field, std::move(value));
  }
  const auto format = std::find_if(pairs.begin(), pairs.end(),
                                   [](const auto& pair) { return pair.first == "format"; });
  if (format == pairs.end() || !format->second.starts_with("redbloom")) return hash;
  hash.kind = describe(format->second);
  if (format->second != redis::kFilterFormat) {
    hash.problem = "is not a plain filter";
    return hash;
  }
  try {
    redis::FilterMetadata metadata =
        redis::parse_filter_metadata(redis::Fields(std::move(pairs), "key " + quoted(name)));
    hash.problem = plain_problem(ctx, metadata);
    if (hash.problem.empty()) hash.plain = std::move(metadata);
  } catch (const Error& e) {
    hash.problem = std::string("cannot be read: ") + e.what();
  }
  return hash;
}

std::string kind_error(std::string_view name, const RedbloomHash& hash, std::string_view what) {
  std::string message = "ERR " + quoted(name) + " holds " + hash.kind;
  if (!hash.problem.empty()) message += ", which " + hash.problem;
  message += ": ";
  message += what;
  return message;
}

std::optional<std::string> plain_add(RedisModuleCtx* ctx, std::string_view name,
                                     const redis::FilterMetadata& metadata,
                                     std::span<const std::string_view> items, std::uint8_t* newly,
                                     bool* changed) {
  return over_partitions(ctx, name, metadata, items, true,
                         [&](PartitionView& view, std::size_t i, const ItemHash& hash) {
                           view.add({&hash, 1}, newly + i);
                           *changed |= newly[i] != 0;
                         });
}

std::optional<std::string> plain_contains(RedisModuleCtx* ctx, std::string_view name,
                                          const redis::FilterMetadata& metadata,
                                          std::span<const std::string_view> items,
                                          std::uint8_t* present) {
  return over_partitions(ctx, name, metadata, items, false,
                         [&](PartitionView& view, std::size_t i, const ItemHash& hash) {
                           view.contains({&hash, 1}, present + i);
                         });
}

}  // namespace redbloom::module
