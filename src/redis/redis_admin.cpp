// A filter's life in Redis: create, open, drop, and what a server says about keeping it
// (eviction policy, room). The lifecycle's rules are object.hpp's, shared with the exact set.
#include <algorithm>
#include <cstdio>

#include "core/sharding.hpp"
#include "redbloom/error.hpp"
#include "shard_servers.hpp"
#include "store_state.hpp"

namespace redbloom {
namespace {

using redis::CommandBuffer;
using redis::OnLostNode;
using redis::Replies;
using redis::Router;
using redis::slot_of;

std::string where(const Router& router, std::string_view name) {
  return "filter '" + std::string(name) + "' on redis " + router.endpoint().describe();
}

// One INFO field as a number (0 if absent).
std::uint64_t info_number(std::string_view info, std::string_view field) {
  // Built by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on "\n" + std::string.
  std::string needle(1, '\n');
  needle.append(field).push_back(':');
  const std::size_t at = info.find(needle);
  if (at == std::string_view::npos) return 0;
  return std::strtoull(std::string(info.substr(at + needle.size(), 24)).c_str(), nullptr, 10);
}

// Refuses, before anything is written, a filter that cannot fit: more bytes on a master than
// its maxmemory leaves free, or (without a limit) than the machine has. Without this check a
// huge -n took minutes, gigabytes of client memory, and left a half-made filter.
void check_room(Router& router, const std::string& name, std::uint64_t partition_key_bytes,
                std::uint64_t partitions_held) {
  const std::size_t masters = std::max<std::size_t>(1, router.masters());
  // Partitions spread evenly over a cluster's masters (spread_tags): the most on one master.
  const std::uint64_t per_master = (partitions_held + masters - 1) / masters;
  const double need = static_cast<double>(per_master) * static_cast<double>(partition_key_bytes);
  redis::for_each_master(router, [&](std::uint16_t slot) {
    const redis::Reply reply = router.call(slot, {"INFO", "memory"}, OnLostNode::retry);
    if (reply->type != REDIS_REPLY_STRING) return;  // INFO not allowed: nothing to compare with
    std::string info(1, '\n');
    info.append(redis::text_of(*reply));
    const double used = static_cast<double>(info_number(info, "used_memory"));
    const double limit = static_cast<double>(info_number(info, "maxmemory"));
    const double machine = static_cast<double>(info_number(info, "total_system_memory"));
    const double room = limit > 0 ? limit - used : machine - used;
    if (room <= 0 && limit <= 0 && machine <= 0) return;  // the server does not say
    if (need <= room) return;
    const std::string on = router.is_cluster() ? "a master of " + router.endpoint().describe()
                                               : router.endpoint().describe();
    throw InvalidArgument(
        where(router, name) + " would need " + format_bytes(need) + " (" +
        std::to_string(per_master) + " partition(s) of " +
        format_bytes(static_cast<double>(partition_key_bytes)) + ") on " + on + ", which has " +
        format_bytes(std::max(room, 0.0)) + " free (" +
        (limit > 0 ? "maxmemory " + format_bytes(limit)
                   : "the machine's " + format_bytes(machine)) +
        ", " + format_bytes(used) +
        " in use): nothing was created; use a smaller filter, spread it over more servers "
        "(--redis URI1,URI2,... or a Redis Cluster), or give the server more memory");
  });
}

// Every held partition must be a string of the full, sealed length: a missing, short or
// recreated key (deleted, evicted under maxmemory, overwritten) would silently turn into false
// negatives. `after_create`: the partitions were just made, so a missing one means the server
// evicted it at once.
void check_partitions(RedisStore::State& s, bool after_create) {
  Router& router = *s.router;
  const redis::PartSet parts = s.owned_parts();
  const std::uint64_t expected = s.key_bytes();
  redis::for_each_part(
      router, parts.count, parts.key_of, "STRLEN", redis::Work::read,
      [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
        buffer.command({"STRLEN", key});
      },
      [&](std::uint64_t i, const redisReply& reply) {
        const std::string& key = s.keys[s.owned[i]];
        if (redis::is_error(reply)) {
          throw FormatError(where(router, s.name) + ": partition key '" + key +
                            "' is not a string (" + std::string(redis::text_of(reply)) + ")");
        }
        const auto length = static_cast<std::uint64_t>(reply.integer);
        if (length == 0 && after_create) {
          throw StorageError(where(router, s.name) + ": partition key '" + key +
                             "' was evicted as soon as it was made (the server is at its "
                             "maxmemory with an evicting policy): the filter does not fit there");
        }
        if (length == 0) {
          throw FormatError(where(router, s.name) + ": partition key '" + key +
                            "' is missing (deleted, or evicted under maxmemory?)");
        }
        if (length != expected) {
          throw FormatError(where(router, s.name) + ": partition key '" + key + "' holds " +
                            std::to_string(length) + " bytes, expected " +
                            std::to_string(expected) + " (written outside redbloom?)");
        }
      });
}

}  // namespace

bool RedisStore::exists(const RedisEndpoint& endpoint, const std::string& name) {
  redis::validate_filter_name(name);
  const auto router = redis::make_router(endpoint);
  return router->run(slot_of(name), {"EXISTS", name}, OnLostNode::retry)->integer != 0;
}

std::string RedisStore::keyspace_id(const RedisEndpoint& endpoint) {
  return redis::make_router(endpoint)->keyspace_id();
}

std::unique_ptr<RedisStore> RedisStore::open(const RedisEndpoint& endpoint, std::string name,
                                             const ShardSpec& expected,
                                             std::chrono::milliseconds wait_for_creator,
                                             const std::vector<std::string>& likely_keys) {
  redis::validate_filter_name(name);
  auto router = redis::make_router(endpoint);
  redis::KeyLengths lengths;
  const auto fields =
      redis::read_metadata_and_module(*router, name, "filter", likely_keys, &lengths);
  if (!fields) throw NotFound("no " + where(*router, name));
  return open(std::move(router), std::move(name), &*fields, expected, wait_for_creator, lengths);
}

std::unique_ptr<RedisStore> RedisStore::open(std::unique_ptr<Router> connected, std::string name,
                                             const redis::Fields* read, const ShardSpec& expected,
                                             std::chrono::milliseconds wait_for_creator,
                                             const redis::KeyLengths& known_lengths) {
  auto state = std::make_unique<State>(std::move(connected), std::move(name));
  Router& router = *state->router;
  std::optional<redis::Fields> fields;
  if (read != nullptr) {
    read->check_format(redis::kFilterFormat, "filter", redis::kFilterVersion);
    if (read->ready()) fields = *read;
  }
  // Still being created by another process (or not read yet): wait for it here.
  if (!fields) {
    fields = redis::read_ready(router, state->name, redis::kFilterFormat, "filter",
                               redis::kFilterVersion, wait_for_creator);
  }
  if (!fields) throw NotFound("no " + where(router, state->name));
  const redis::FilterMetadata metadata = redis::parse_filter_metadata(*fields);
  // Opened as another shard, or one server of a sharded filter alone, every answer would be
  // wrong for the items of the partitions it does not hold.
  redis::check_shard(where(router, state->name),
                     {metadata.shard, metadata.shards, metadata.shard_set},
                     {expected.index, expected.count, expected.set_id});
  state->version = metadata.version;
  state->set_partitions(metadata.params, {metadata.shard, metadata.shards, metadata.shard_set},
                        metadata.tag_salts);
  state->created_unix_ns = metadata.created_unix_ns;
  // Every held partition read with the metadata, and whole: nothing more to check.
  const bool checked = std::all_of(state->owned.begin(), state->owned.end(), [&](std::uint64_t p) {
    const auto length = known_lengths.find(state->keys[p]);
    return length != known_lengths.end() && length->second == state->key_bytes();
  });
  if (!checked) check_partitions(*state, /*after_create=*/false);
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(state)));
}

std::unique_ptr<RedisStore> RedisStore::create(const RedisEndpoint& endpoint, std::string name,
                                               const FilterParams& params, bool overwrite,
                                               const ShardSpec& shard) {
  validate(params);
  redis::validate_filter_name(name);
  if (shard.count == 0 || shard.index >= shard.count) {
    throw InvalidArgument("shard " + std::to_string(shard.index) + " of " +
                          std::to_string(shard.count) + " is not a shard");
  }
  if (overwrite && exists(endpoint, name)) drop(endpoint, name);
  auto state = std::make_unique<State>(endpoint, std::move(name));
  Router& router = *state->router;
  const std::string& meta = state->name;
  std::uint64_t held = 0;
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    if (sharding::shard_of_partition(p, shard.count) == shard.index) ++held;
  }
  check_room(router, meta, params.partition_bytes() + redis::seal_bytes(state->version), held);
  redis::FilterMetadata metadata;
  metadata.params = params;
  metadata.shards = shard.count;
  metadata.shard = shard.index;
  metadata.shard_set = shard.set_id;
  // The salts go into the claim, so that drop() finds the partitions of a creation that died.
  metadata.tag_salts = redis::spread_tags(router, meta, params.partitions);
  metadata.claimed_unix_ns = redis::unix_now_ns();
  if (!redis::claim(router, meta, redis::filter_claim_fields(metadata))) {
    const auto existing = redis::read_metadata(router, meta, "filter");
    if (!existing) router.fail("create", "the name changed while it was being claimed");
    const redis::FilterMetadata found = redis::parse_filter_metadata(*existing);  // or throws
    throw FilterExists(where(router, meta) + " already exists" +
                       (found.ready ? " (use --force to replace it)"
                                    : " and is being created by another process" +
                                          redis::creation_age(*existing) +
                                          "; if that process is gone, drop it first"));
  }
  state->set_partitions(params, shard, metadata.tag_salts);
  // This call holds the name, so keys of a filter of that name are left over from one whose
  // metadata is gone (evicted or deleted): starting an empty filter over them would take their
  // items for new. A windowed or growing filter leaves its rosters.
  const std::string roster = redis::partition_key(meta, 0, 0, "slices");
  if (router.run(slot_of(roster), {"EXISTS", roster}, OnLostNode::retry)->integer != 0) {
    router.run(slot_of(meta), {"UNLINK", meta}, OnLostNode::retry);
    throw FormatError(where(router, meta) + " has no metadata, but the slice roster '" + roster +
                      "' of a windowed or growing filter of that name is there: that filter lost "
                      "its metadata key (evicted or deleted?); nothing was created (create it "
                      "with its window or growth and --force to start it anew)");
  }
  // Zeroed at its full length at once: the memory is taken now, and a full server fails here
  // rather than in the middle of a load. A key of another program at a partition's name is
  // never overwritten (make_parts undoes this creation and says so).
  try {
    redis::make_parts(router, state->owned_parts(), meta, "filter");
  } catch (const FilterExists& e) {
    // Not a concurrent creator (this call holds the name): a filter of that name that lost its
    // metadata, or another program's key. Neither may pass for "already exists, use it".
    throw FormatError(std::string(e.what()) +
                      " (left by a filter of that name whose metadata key was evicted or "
                      "deleted? its items cannot be trusted: unlink its keys to start anew)");
  }
  metadata.ready = true;
  metadata.created_unix_ns = redis::unix_now_ns();
  redis::mark_ready(router, meta, redis::encode_filter_metadata(metadata));
  try {
    check_partitions(*state, /*after_create=*/true);
  } catch (const Error& e) {
    std::string undone = "the filter was dropped again";
    try {
      drop(endpoint, meta);
    } catch (const Error& drop_error) {
      undone = "dropping it failed too (" + std::string(drop_error.what()) + ")";
    }
    throw StorageError(std::string(e.what()) + "; " + undone);
  }
  state->created_unix_ns = metadata.created_unix_ns;
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(state)));
}

std::size_t RedisStore::masters(const RedisEndpoint& endpoint) {
  return redis::make_router(endpoint)->masters();
}

std::vector<std::string> RedisStore::eviction_risks(const RedisEndpoint& endpoint) {
  const auto router = redis::make_router(endpoint);
  std::vector<std::string> risks;
  redis::for_each_master(*router, [&](std::uint16_t slot) {
    // "maxmemory*": one pattern, as servers before Redis 7 take only one.
    const redis::Reply reply =
        router->call(slot, {"CONFIG", "GET", "maxmemory*"}, OnLostNode::retry);
    if (reply->type != REDIS_REPLY_ARRAY) {
      // Managed services rename CONFIG or refuse it: the policy cannot be checked, so say so
      // rather than call the server safe.
      std::string why =
          redis::is_error(*reply) ? std::string(redis::text_of(*reply)) : std::string("no reply");
      why = why.substr(0, why.find(", with args beginning with"));
      const std::string where =
          router->is_cluster() ? "the master serving slot " + std::to_string(slot) + " of " : "";
      risks.push_back("redis " + where + endpoint.describe() +
                      ": its maxmemory-policy could not be read (CONFIG GET: " + why +
                      "), so whether it evicts keys when full is unknown; a filter's keys must "
                      "not be evicted: ask for maxmemory-policy noeviction (or a volatile-* "
                      "policy), as an evicted partition loses every item in it");
      return;
    }
    std::string limit = "0";
    std::string policy;
    for (std::size_t i = 0; i + 1 < reply->elements; i += 2) {
      const std::string_view field = redis::text_of(*reply->element[i]);
      if (field == "maxmemory") limit = redis::text_of(*reply->element[i + 1]);
      if (field == "maxmemory-policy") policy = redis::text_of(*reply->element[i + 1]);
    }
    if (limit == "0" || policy == "noeviction") return;
    const std::string where =
        router->is_cluster() ? "the master serving slot " + std::to_string(slot) + " of " : "";
    const std::string server = "redis " + where + endpoint.describe() +
                               " evicts keys when full (maxmemory " + limit +
                               " bytes, maxmemory-policy " + policy + "): ";
    if (policy.starts_with("allkeys-")) {
      risks.push_back(server +
                      "an evicted partition loses every item in it (redbloom reports the loss "
                      "as an error, and the filter must be built again); use "
                      "maxmemory-policy noeviction for filters");
    } else {
      // volatile-*: only keys with a TTL, which partitions never have; a bulk load's delta has.
      risks.push_back(server +
                      "a bulk load's temporary delta can be evicted when the server is full (the "
                      "load then fails, saying so, and is safe to run again); the filter's own "
                      "keys are safe");
    }
  });
  return risks;
}

void RedisStore::drop(const RedisEndpoint& endpoint, const std::string& name) {
  redis::validate_filter_name(name);
  const auto router = redis::make_router(endpoint);
  const auto fields = redis::read_metadata(*router, name, "filter");
  if (!fields) throw NotFound("no " + where(*router, name));
  const redis::FilterMetadata metadata = redis::parse_filter_metadata(*fields);
  const FilterParams& p = metadata.params;
  const std::vector<std::uint32_t>& salts = metadata.tag_salts;
  redis::PartSet parts;
  parts.count = p.partitions;
  parts.key_of = [&](std::uint64_t i) {
    return redis::partition_key(name, i, i < salts.size() ? salts[i] : 0);
  };
  parts.created_length =
      p.partition_bits == 0 ? 0 : p.partition_bytes() + redis::seal_bytes(metadata.version);
  redis::drop_object(*router, parts, metadata.ready, name);
}

}  // namespace redbloom
