// A cuckoo filter's life in Redis: create, open, drop, following the one object lifecycle
// (object.hpp): the metadata claimed on every server, link 0 of each partition made as its
// parts, then marked ready. Links the script grew later are dropped with the rest, by name.
#include <cmath>

#include "core/redis_format.hpp"
#include "object.hpp"
#include "redbloom/error.hpp"
#include "redbloom/params.hpp"
#include "redis/cuckoo_redis_state.hpp"
#include "shard_servers.hpp"

namespace redbloom {
namespace {

using redis::check_distinct_servers;
using redis::OnLostNode;
using redis::Router;
using redis::routers_for;
using redis::slot_of;

constexpr std::string_view kNoun = "cuckoo filter";

std::string where(const Router& router, std::string_view name) {
  return "cuckoo filter '" + std::string(name) + "' on redis " + router.endpoint().describe();
}

// The metadata at NAME if it is a cuckoo filter's (ready or not); nullopt for anything else.
std::optional<redis::Fields> cuckoo_fields(Router& router, const std::string& name) {
  return redis::metadata_of_kind(router, name, redis::kCuckooFormat, kNoun, redis::kCuckooVersion);
}

// Router r's partitions, in order.
std::vector<std::uint32_t> partitions_of(const std::vector<std::uint32_t>& router_of,
                                         std::size_t r) {
  std::vector<std::uint32_t> mine;
  for (std::uint32_t p = 0; p < router_of.size(); ++p) {
    if (router_of[p] == r) mine.push_back(p);
  }
  return mine;
}

// Every key a filter of these partitions and salts may have on router r: per partition its
// roster, then its links (links as yet ungrown have no key: unlinking them is harmless).
redis::PartSet every_link(const std::string& name, const std::vector<std::uint32_t>& salts,
                          const std::vector<std::uint32_t>& mine) {
  constexpr std::uint64_t kKeys = kMaxCuckooLinks + 1;
  redis::PartSet parts;
  parts.count = std::uint64_t{mine.size()} * kKeys;
  parts.key_of = [&name, &salts, mine](std::uint64_t i) {
    const std::uint32_t p = mine[i / kKeys];
    const auto key = static_cast<std::uint32_t>(i % kKeys);
    return redis::partition_key(
        name, p, salts[p],
        key == 0 ? std::string(redis::kCuckooRosterPart) : redis::cuckoo_link_part(key - 1));
  };
  return parts;
}

// The name was claimed by someone else: says by what.
[[noreturn]] void throw_taken(Router& router, const std::string& name) {
  const auto existing = redis::read_metadata(router, name, kNoun);
  if (!existing) router.fail("create", "the name changed while it was being claimed");
  const bool cuckoo = existing->has("format") && existing->text("format") == redis::kCuckooFormat;
  if (!cuckoo) {
    throw FilterExists(where(router, name) +
                       " already exists as another kind of filter (use --force to replace it)");
  }
  existing->check_format(redis::kCuckooFormat, kNoun, redis::kCuckooVersion);
  throw FilterExists(where(router, name) + " already exists" +
                     (existing->ready() ? " (use --force to replace it)"
                                        : " and is being created by another process" +
                                              redis::creation_age(*existing) +
                                              "; if that process is gone, drop it first"));
}

void unlink_parts(Router& router, const redis::PartSet& parts) {
  redis::for_each_part(
      router, parts.count, parts.key_of, "UNLINK", redis::Work::idempotent_write,
      [](std::uint64_t, const std::string& key, redis::CommandBuffer& buffer) {
        buffer.command({"UNLINK", key});
      },
      [&](std::uint64_t, const redisReply& reply) {
        router.expect(reply, REDIS_REPLY_INTEGER, "UNLINK");
      });
}

}  // namespace

// Server r's parts of a new filter: each partition's roster (one zero byte: one link), then its
// link 0. On a failure, what this call made there and the metadata are unlinked again.
void make_server_parts(RedisCuckooStore::State& state, std::uint32_t r, bool overwrite) {
  Router& router = *state.routers[r];
  const std::vector<std::uint32_t> mine = partitions_of(state.router_of, r);
  // Keys of a filter of that name that lost its metadata leave no trace drop finds.
  if (overwrite) unlink_parts(router, every_link(state.name, state.salts, mine));
  redis::PartSet rosters;
  rosters.count = mine.size();
  rosters.key_of = [&](std::uint64_t i) { return state.roster_key(mine[i]); };
  rosters.created_length = 1;
  redis::PartSet link0;
  link0.count = mine.size();
  link0.key_of = [&](std::uint64_t i) { return state.link_key(mine[i], 0); };
  link0.created_length = state.links[0].bytes();
  redis::make_parts(router, rosters, state.name, kNoun);
  try {
    redis::make_parts(router, link0, state.name, kNoun);
  } catch (const Error&) {
    unlink_parts(router, rosters);
    throw;
  }
}

CuckooOptions RedisCuckooStore::with_redis_partitions(CuckooOptions options, std::size_t servers) {
  if (options.partitions != 1 || options.capacity == 0) return options;
  // A first guess from link 0's fingerprints (one partition may hold more than a table can),
  // then up until each link-0 table fits.
  const double rate = options.growth == 0 ? options.error_rate : options.error_rate / 2;
  const double bytes = static_cast<double>(options.capacity) / cuckoo_table::kTargetLoad *
                       cuckoo_table::fingerprint_bits_for(rate) / 8;
  std::uint64_t partitions = std::max<std::uint64_t>(
      servers, static_cast<std::uint64_t>(std::ceil(bytes / kDefaultPartitionBytes)));
  partitions = std::min<std::uint64_t>({partitions, options.capacity, UINT32_MAX});
  // The guess is at most a rounding short (the tables' tails, bucket rounding).
  for (int step = 0; step < 64; ++step) {
    options.partitions = static_cast<std::uint32_t>(partitions);
    if (partitions >= std::min<std::uint64_t>(options.capacity, UINT32_MAX)) break;
    try {
      if (CuckooShape(options).link(0).bytes() <= kDefaultPartitionBytes) break;
    } catch (const InvalidArgument&) {
      break;  // options no filter can have: the creation says why
    }
    ++partitions;
  }
  return options;
}

std::unique_ptr<RedisCuckooStore> RedisCuckooStore::create(
    const std::vector<RedisEndpoint>& servers, const std::string& name,
    const CuckooOptions& options, bool overwrite) {
  auto state = std::make_unique<State>(options, name);
  state->routers = routers_for(servers, name);
  const auto count = static_cast<std::uint32_t>(servers.size());
  if (count > 1) check_distinct_servers(state->routers);
  const std::uint32_t partitions = options.partitions;
  state->router_of = cuckoo_servers_of_partitions(partitions, count);
  state->salts.assign(partitions, 0);
  const std::string set_id = count > 1 ? redis::random_set_id() : std::string();
  std::vector<redis::CuckooMetadata> metadata(count);
  for (std::uint32_t r = 0; r < count; ++r) {
    redis::CuckooMetadata& m = metadata[r];
    m.options = options;
    m.shards = count;
    m.shard = r;
    m.shard_set = set_id;
    m.tag_salts = redis::spread_tags(*state->routers[r], name, partitions);
    m.claimed_unix_ns = redis::unix_now_ns();
    for (std::uint32_t p = 0; p < partitions; ++p) {
      if (state->router_of[p] == r) state->salts[p] = m.tag_salts[p];
    }
    if (redis::claim(*state->routers[r], name, redis::cuckoo_claim_fields(m))) continue;
    // Taken: undo this call's claims on the servers before, then say by what.
    for (std::uint32_t before = 0; before < r; ++before) {
      state->routers[before]->run(slot_of(name), {"UNLINK", name}, OnLostNode::retry);
    }
    throw_taken(*state->routers[r], name);
  }
  state->prepare();
  for (std::uint32_t r = 0; r < count; ++r) {
    try {
      make_server_parts(*state, r, overwrite);
    } catch (const Error&) {
      // make_server_parts undid its own server's parts; the others are undone here.
      for (std::uint32_t other = 0; other < count; ++other) {
        Router& router = *state->routers[other];
        if (other < r) {
          redis::drop_object(router,
                             every_link(name, state->salts, partitions_of(state->router_of, other)),
                             true, name);
        } else if (other > r) {
          router.run(slot_of(name), {"UNLINK", name}, OnLostNode::retry);
        }
      }
      throw;
    }
  }
  state->created_unix_ns = redis::unix_now_ns();
  for (std::uint32_t r = 0; r < count; ++r) {
    metadata[r].ready = true;
    metadata[r].created_unix_ns = state->created_unix_ns;
    redis::mark_ready(*state->routers[r], name, redis::encode_cuckoo_metadata(metadata[r]));
  }
  return std::unique_ptr<RedisCuckooStore>(new RedisCuckooStore(std::move(state)));
}

std::unique_ptr<RedisCuckooStore> RedisCuckooStore::open(
    std::unique_ptr<Router> first, const redis::Fields& first_fields,
    const std::vector<RedisEndpoint>& servers, const std::string& name,
    std::chrono::milliseconds wait_for_creator) {
  first_fields.check_format(redis::kCuckooFormat, kNoun, redis::kCuckooVersion);
  std::vector<std::unique_ptr<Router>> routers;
  routers.push_back(std::move(first));
  for (std::size_t r = 1; r < servers.size(); ++r)
    routers.push_back(redis::make_router(servers[r]));
  const auto count = static_cast<std::uint32_t>(servers.size());
  std::vector<redis::CuckooMetadata> metadata;
  for (std::uint32_t r = 0; r < count; ++r) {
    Router& router = *routers[r];
    const auto fields = r == 0 && first_fields.ready()
                            ? std::optional<redis::Fields>(first_fields)
                            : redis::read_ready(router, name, redis::kCuckooFormat, kNoun,
                                                redis::kCuckooVersion, wait_for_creator);
    if (!fields) redis::throw_missing_shard(where(router, name));
    redis::CuckooMetadata m = redis::parse_cuckoo_metadata(*fields);
    redis::check_shard(where(router, name), {m.shard, m.shards, m.shard_set},
                       {r, count, r > 0 ? metadata[0].shard_set : std::string()});
    if (r > 0 && !(m.options == metadata[0].options)) {
      throw FormatError(where(router, name) + " has other options than on " +
                        routers[0]->endpoint().describe());
    }
    metadata.push_back(std::move(m));
  }
  std::unique_ptr<State> state;
  try {
    state = std::make_unique<State>(metadata[0].options, name);
  } catch (const InvalidArgument& e) {
    throw FormatError(where(*routers[0], name) +
                      ": its metadata holds options no cuckoo filter has: " + e.what());
  }
  state->routers = std::move(routers);
  state->created_unix_ns = metadata[0].created_unix_ns;
  const std::uint32_t partitions = metadata[0].options.partitions;
  state->router_of = cuckoo_servers_of_partitions(partitions, count);
  state->salts.assign(partitions, 0);
  for (std::uint32_t p = 0; p < partitions; ++p) {
    state->salts[p] = metadata[state->router_of[p]].tag_salts[p];
  }
  state->prepare();
  return std::unique_ptr<RedisCuckooStore>(new RedisCuckooStore(std::move(state)));
}

bool RedisCuckooStore::drop_if_cuckoo(const std::vector<RedisEndpoint>& servers,
                                      const std::string& name) {
  std::vector<std::unique_ptr<Router>> routers = routers_for(servers, name);
  bool dropped = false;
  for (std::size_t r = 0; r < routers.size(); ++r) {
    Router& router = *routers[r];
    const auto fields = cuckoo_fields(router, name);
    if (!fields) continue;
    // A creation that never finished recorded its partitions and salts in its claim.
    const redis::CuckooMetadata m = redis::parse_cuckoo_metadata(*fields);
    const auto server_of = cuckoo_servers_of_partitions(m.tag_salts.size(), routers.size());
    redis::drop_object(router, every_link(name, m.tag_salts, partitions_of(server_of, r)), m.ready,
                       name);
    dropped = true;
  }
  return dropped;
}

}  // namespace redbloom
