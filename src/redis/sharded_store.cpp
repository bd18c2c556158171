#include "redis/sharded_store.hpp"

#include <algorithm>
#include <exception>
#include <random>

#include "core/item_hash_inline.hpp"
#include "core/layout.hpp"
#include "core/sharding.hpp"
#include "object.hpp"
#include "redbloom/error.hpp"
#include "run_each.hpp"
#include "shard_servers.hpp"

namespace redbloom {
namespace {

// One batch split by server: items[s] are the views for server s, in batch order, and
// index[s][j] the position in the batch of items[s][j].
struct Split {
  std::vector<std::vector<std::string_view>> items;
  std::vector<std::vector<std::size_t>> index;
};

Split split(std::span<const std::string_view> batch, const FilterParams& params,
            std::size_t servers) {
  Split out{std::vector<std::vector<std::string_view>>(servers),
            std::vector<std::vector<std::size_t>>(servers)};
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const ItemHash h = detail::hash_inline(batch[i]);
    const std::uint64_t partition = layout::partition_of(h, params.partitions);
    const std::uint32_t s =
        sharding::shard_of_partition(partition, static_cast<std::uint32_t>(servers));
    out.items[s].push_back(batch[i]);
    out.index[s].push_back(i);
  }
  return out;
}

std::string server_list(const std::vector<std::unique_ptr<RedisStore>>& shards) {
  std::string text;
  for (const auto& shard : shards) {
    if (!text.empty()) text += ", ";
    text += shard->endpoint().describe();
  }
  return text;
}

}  // namespace

ShardedRedisStore::ShardedRedisStore(std::vector<std::unique_ptr<RedisStore>> shards)
    : shards_(std::move(shards)) {}
ShardedRedisStore::~ShardedRedisStore() = default;

std::unique_ptr<ShardedRedisStore> ShardedRedisStore::create(
    const std::vector<RedisEndpoint>& servers, const std::string& name, const FilterParams& params,
    bool overwrite) {
  if (servers.empty()) throw InvalidArgument("no Redis server given");
  std::vector<std::string> keyspaces;
  for (const RedisEndpoint& server : servers) keyspaces.push_back(RedisStore::keyspace_id(server));
  redis::check_distinct_servers(servers, keyspaces);
  const auto count = static_cast<std::uint32_t>(servers.size());
  const std::string set_id = redis::random_set_id();
  std::vector<std::unique_ptr<RedisStore>> shards;
  try {
    for (std::uint32_t i = 0; i < count; ++i) {
      shards.push_back(RedisStore::create(servers[i], name, params, overwrite, {i, count, set_id}));
    }
  } catch (...) {
    // Undo the shards this call made; the error is what matters.
    for (const auto& shard : shards) {
      try {
        RedisStore::drop(shard->endpoint(), name);
      } catch (const Error&) {
      }
    }
    throw;
  }
  return std::unique_ptr<ShardedRedisStore>(new ShardedRedisStore(std::move(shards)));
}

namespace {

// The partition keys shard `shard` of `count` holds if it has the first shard's parameters (as
// it must), on a server of its own (no hash-tag salt): read with its metadata, they cost no
// round trip of their own. A filter of many partitions leaves them to the usual check.
std::vector<std::string> likely_keys(const FilterParams& params, const std::string& name,
                                     std::uint32_t shard, std::uint32_t count) {
  constexpr std::uint64_t kMostKeys = 64;
  std::vector<std::string> keys;
  if (params.partitions > kMostKeys * count) return keys;
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    if (sharding::shard_of_partition(p, count) == shard)
      keys.push_back(redis::partition_key(name, p));
  }
  return keys;
}

}  // namespace

std::unique_ptr<ShardedRedisStore> ShardedRedisStore::open(
    const std::vector<RedisEndpoint>& servers, const std::string& name,
    std::chrono::milliseconds wait_for_creator) {
  if (servers.empty()) throw InvalidArgument("no Redis server given");
  redis::validate_filter_name(name);
  return open(redis::make_router(servers[0]), nullptr, servers, name, wait_for_creator);
}

std::unique_ptr<ShardedRedisStore> ShardedRedisStore::open(
    std::unique_ptr<redis::Router> first, const redis::Fields* first_fields,
    const std::vector<RedisEndpoint>& servers, const std::string& name,
    std::chrono::milliseconds wait_for_creator, const redis::KeyLengths& first_lengths) {
  const auto count = static_cast<std::uint32_t>(servers.size());
  std::vector<std::unique_ptr<RedisStore>> shards;
  shards.push_back(RedisStore::open(std::move(first), name, first_fields, {0, count, ""},
                                    wait_for_creator, first_lengths));
  const std::string set_id = shards[0]->shard().set_id;
  for (std::uint32_t i = 1; i < count; ++i) {
    shards.push_back(RedisStore::open(servers[i], name, {i, count, set_id}, wait_for_creator,
                                      likely_keys(shards[0]->params(), name, i, count)));
    if (!(shards.back()->params() == shards[0]->params())) {
      throw FormatError("filter '" + name + "' on redis " + servers[i].describe() +
                        " has other parameters than on " + servers[0].describe());
    }
  }
  return std::unique_ptr<ShardedRedisStore>(new ShardedRedisStore(std::move(shards)));
}

void ShardedRedisStore::drop(const std::vector<RedisEndpoint>& servers, const std::string& name) {
  std::size_t dropped = 0;
  for (const RedisEndpoint& server : servers) {
    if (!RedisStore::exists(server, name)) continue;
    RedisStore::drop(server, name);
    ++dropped;
  }
  if (dropped == 0) throw NotFound("no filter '" + name + "' on any of the given servers");
}

bool ShardedRedisStore::exists(const std::vector<RedisEndpoint>& servers, const std::string& name) {
  return std::any_of(servers.begin(), servers.end(),
                     [&](const RedisEndpoint& s) { return RedisStore::exists(s, name); });
}

const FilterParams& ShardedRedisStore::params() const noexcept {
  return shards_[0]->params();
}

RedisStore& ShardedRedisStore::holder(std::uint64_t partition) const {
  check_byte_range(params(), partition, 0, 0);
  return *shards_[sharding::shard_of_partition(partition,
                                               static_cast<std::uint32_t>(shards_.size()))];
}

void ShardedRedisStore::add(std::span<const std::string_view> items,
                            std::span<std::uint8_t> newly_added) {
  if (newly_added.size() < items.size()) throw InvalidArgument("test_and_set: flag span too small");
  const Split parts = split(items, params(), shards_.size());
  std::vector<std::vector<std::uint8_t>> flags(shards_.size());
  std::vector<std::size_t> known(shards_.size(), 0);  // answers each server is sure of
  const auto errors = redis::run_each_collecting(shards_.size(), [&](std::size_t s) {
    if (parts.items[s].empty()) return;
    flags[s].resize(parts.items[s].size());
    try {
      shards_[s]->add(parts.items[s], flags[s]);
      known[s] = flags[s].size();
    } catch (const IncompleteWrite& e) {
      known[s] = e.committed();
      throw;
    }
  });
  // Scatter the known answers; the batch is committed up to the first item a server did not
  // commit.
  std::size_t committed = items.size();
  std::string message;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    for (std::size_t j = 0; j < known[s]; ++j) newly_added[parts.index[s][j]] = flags[s][j];
    if (!errors[s]) continue;
    if (known[s] < parts.index[s].size()) {
      committed = std::min(committed, parts.index[s][known[s]]);
    }
    try {
      std::rethrow_exception(errors[s]);
    } catch (const std::exception& e) {
      if (!message.empty()) message += "; ";
      message += e.what();
    }
  }
  if (!message.empty()) throw IncompleteWrite(message, committed);
}

void ShardedRedisStore::load(std::span<const std::string_view> items) {
  const Split parts = split(items, params(), shards_.size());
  const auto errors = redis::run_each_collecting(shards_.size(), [&](std::size_t s) {
    if (!parts.items[s].empty()) shards_[s]->load(parts.items[s]);
  });
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& error) {
      throw IncompleteWrite(std::string(error.what()) + " (other servers of " + location() +
                                " may have taken their share; loading again is safe)",
                            0);
    }
  }
}

void ShardedRedisStore::contains(std::span<const std::string_view> items,
                                 std::span<std::uint8_t> present) const {
  if (present.size() < items.size()) throw InvalidArgument("test: flag span too small");
  const Split parts = split(items, params(), shards_.size());
  std::vector<std::vector<std::uint8_t>> answers(shards_.size());
  redis::run_each(shards_.size(), [&](std::size_t s) {
    if (parts.items[s].empty()) return;
    answers[s].resize(parts.items[s].size());
    shards_[s]->contains(parts.items[s], answers[s]);
  });
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    for (std::size_t j = 0; j < answers[s].size(); ++j) present[parts.index[s][j]] = answers[s][j];
  }
}

std::uint64_t ShardedRedisStore::sum_over_servers(std::uint64_t (RedisStore::*measure)()
                                                      const) const {
  std::vector<std::uint64_t> values(shards_.size());
  redis::run_each(shards_.size(), [&](std::size_t s) { values[s] = ((*shards_[s]).*measure)(); });
  std::uint64_t total = 0;
  for (std::uint64_t v : values) total += v;
  return total;
}

std::uint64_t ShardedRedisStore::count_set_bits() const {
  return sum_over_servers(&RedisStore::count_set_bits);
}

std::uint64_t ShardedRedisStore::storage_bytes() const {
  return sum_over_servers(&RedisStore::storage_bytes);
}

void ShardedRedisStore::read_bytes(std::uint64_t partition, std::uint64_t offset,
                                   std::span<std::uint8_t> out) const {
  holder(partition).read_bytes(partition, offset, out);
}

void ShardedRedisStore::write_bytes(std::uint64_t partition, std::uint64_t offset,
                                    std::span<const std::uint8_t> bytes) {
  holder(partition).write_bytes(partition, offset, bytes);
}

std::uint64_t ShardedRedisStore::created_unix_ns() const {
  return shards_[0]->created_unix_ns();
}

std::vector<std::string> ShardedRedisStore::engines() const {
  std::vector<std::string> all;
  for (const auto& shard : shards_) {
    for (std::string& line : shard->engines()) all.push_back(std::move(line));
  }
  return all;
}

std::string ShardedRedisStore::location() const {
  return "redis shards [" + server_list(shards_) + "] filter " + shards_[0]->name();
}

std::size_t ShardedRedisStore::batch_items() const noexcept {
  return shards_[0]->batch_items();
}

void ShardedRedisStore::set_bulk_mode(RedisStore::BulkMode mode) noexcept {
  for (auto& shard : shards_) shard->set_bulk_mode(mode);
}

}  // namespace redbloom
