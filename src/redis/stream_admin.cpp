// A stream filter's life in Redis: create, open, drop. The metadata follows the one object
// lifecycle (object.hpp); the slices are no parts of it (the script makes them as the stream
// needs them, and Redis retires them), so drop finds them by SCAN and keeps only the names
// that are exactly this filter's slice keys.
#include <charconv>
#include <cstdio>
#include <random>

#include "core/redis_format.hpp"
#include "core/sharding.hpp"
#include "key_scan.hpp"
#include "object.hpp"
#include "redbloom/error.hpp"
#include "redis/redis_store.hpp"
#include "shard_servers.hpp"
#include "stream_state.hpp"

namespace redbloom {
namespace {

using redis::check_distinct_servers;
using redis::OnLostNode;
using redis::Router;
using redis::routers_for;
using redis::slot_of;

std::string where(const Router& router, std::string_view name) {
  return "stream filter '" + std::string(name) + "' on redis " + router.endpoint().describe();
}

// Which server holds partition p: the only one, or as a sharded plain filter spreads them.
std::vector<std::uint32_t> servers_of_partitions(std::uint64_t partitions, std::size_t servers) {
  std::vector<std::uint32_t> of(partitions, 0);
  if (servers == 1) return of;
  for (std::uint64_t p = 0; p < partitions; ++p) {
    of[p] = sharding::shard_of_partition(p, static_cast<std::uint32_t>(servers));
  }
  return of;
}

// The server's clock minus this machine's, so that the client's guess of the current slice
// matches the script's (a wrong guess costs one more round trip, never a wrong answer).
std::int64_t server_offset_ms(Router& router, const std::string& name) {
  const redis::Reply reply = router.run(slot_of(name), {"TIME"}, OnLostNode::retry);
  return redis::clock_offset_ms(router, *reply);
}

// True if `key` is exactly slice key "NAME:s<g>:bits:{NAME:p[:salt]}" of this filter.
bool is_slice_key(std::string_view key, const std::string& name,
                  const std::vector<std::uint32_t>& salts) {
  const std::string prefix = name + ":s";
  if (!key.starts_with(prefix)) return false;
  const std::string_view rest = key.substr(prefix.size());
  const std::size_t bits = rest.find(":bits:{");
  if (bits == std::string_view::npos) return false;
  std::int64_t slice = 0;
  const auto [slice_end, slice_error] = std::from_chars(rest.data(), rest.data() + bits, slice);
  if (slice_error != std::errc{} || slice_end != rest.data() + bits) return false;
  const std::string tag_start = "{" + name + ":";
  const std::string_view tag = rest.substr(bits + 6);
  if (!tag.starts_with(tag_start)) return false;
  std::uint64_t partition = 0;
  const std::string_view number = tag.substr(tag_start.size());
  const auto [end, error] =
      std::from_chars(number.data(), number.data() + number.size(), partition);
  if (error != std::errc{} || partition >= salts.size()) return false;
  (void)end;
  return key == redis::partition_key(name, partition, salts[partition], redis::slice_part(slice));
}

// Unlinks every slice key of the filter on this router's servers (every master of a cluster).
void unlink_slices(Router& router, const std::string& name,
                   const std::vector<std::uint32_t>& salts) {
  std::vector<std::string> found;
  redis::scan_keys(router, redis::glob_escape(name) + ":s*:bits:{*", [&](std::string_view key) {
    if (is_slice_key(key, name, salts)) found.emplace_back(key);
  });
  redis::unlink_keys(router, found);
}

// The metadata at NAME if it is a stream filter's (ready or not); nullopt for anything else
// (no key, a plain filter, a key of another program: the plain filter's paths name those).
std::optional<redis::Fields> stream_fields(Router& router, const std::string& name) {
  return redis::metadata_of_kind(router, name, redis::kStreamFormat, "stream filter",
                                 redis::kStreamVersion);
}

// The name was claimed by someone else: says by what (a plain filter, a windowed or growing
// one, or one still being created).
[[noreturn]] void throw_taken(Router& router, const std::string& name) {
  const auto existing = redis::read_metadata(router, name, "stream filter");
  if (!existing) router.fail("create", "the name changed while it was being claimed");
  const bool plain = existing->has("format") && existing->text("format") == redis::kFilterFormat;
  if (!plain) existing->check_format(redis::kStreamFormat, "stream filter", redis::kStreamVersion);
  throw FilterExists(where(router, name) + " already exists" +
                     (plain               ? " as a plain filter (use --force to replace it)"
                      : existing->ready() ? " (use --force to replace it)"
                                          : " and is being created by another process" +
                                                redis::creation_age(*existing) +
                                                "; if that process is gone, drop it first"));
}

}  // namespace

std::unique_ptr<RedisStreamStore> RedisStreamStore::create(
    const std::vector<RedisEndpoint>& servers, const std::string& name, const StreamShape& shape,
    Clock clock, bool overwrite) {
  auto state = std::make_unique<State>(shape, name, std::move(clock));
  state->routers = routers_for(servers, name);
  const auto count = static_cast<std::uint32_t>(servers.size());
  if (count > 1) check_distinct_servers(state->routers);
  if (overwrite && !drop_if_stream(servers, name)) {
    for (const RedisEndpoint& server : servers) {
      if (RedisStore::exists(server, name)) RedisStore::drop(server, name);
    }
  }
  const std::uint64_t partitions = shape.partitions();
  state->router_of = servers_of_partitions(partitions, count);
  state->salts.assign(partitions, 0);
  const std::string set_id = count > 1 ? redis::random_set_id() : std::string();
  std::vector<redis::StreamMetadata> metadata(count);
  for (std::uint32_t r = 0; r < count; ++r) {
    redis::StreamMetadata& m = metadata[r];
    m.shape_fields = shape.encode();
    m.shards = count;
    m.shard = r;
    m.shard_set = set_id;
    m.tag_salts = redis::spread_tags(*state->routers[r], name, partitions);
    m.claimed_unix_ns = redis::unix_now_ns();
    for (std::uint64_t p = 0; p < partitions; ++p) {
      if (state->router_of[p] == r) state->salts[p] = m.tag_salts[p];
    }
    Router& router = *state->routers[r];
    if (redis::claim(router, name, redis::stream_claim_fields(m))) continue;
    // Taken: undo this call's claims on the servers before, then say by what.
    for (std::uint32_t before = 0; before < r; ++before) {
      state->routers[before]->run(slot_of(name), {"UNLINK", name}, OnLostNode::retry);
    }
    throw_taken(router, name);
  }
  state->guarded = true;
  if (overwrite) {
    // A filter of that name whose metadata is gone leaves no trace drop_if_stream finds.
    for (const auto& router : state->routers) unlink_slices(*router, name, state->salts);
  }
  const std::string taken = state->make_rosters(overwrite);
  if (!taken.empty()) {
    // NAME was free, yet a roster of it is there: its filter lost its metadata (evicted or
    // deleted). Taking its keys would answer from slices of another filter, or re-create it
    // empty and take every item for new.
    for (const auto& router : state->routers) {
      router->run(slot_of(name), {"UNLINK", name}, OnLostNode::retry);
    }
    throw FormatError("stream filter '" + name + "' on redis " + state->describe_servers() +
                      " has no metadata, but its slice roster '" + taken +
                      "' is there: the filter lost its metadata key (evicted or deleted?) and its "
                      "items cannot be trusted; nothing was created (create it with --force to "
                      "start it anew, which removes what is left of it)");
  }
  state->created_unix_ns = redis::unix_now_ns();
  for (std::uint32_t r = 0; r < count; ++r) {
    metadata[r].ready = true;
    metadata[r].created_unix_ns = state->created_unix_ns;
    redis::mark_ready(*state->routers[r], name, redis::encode_stream_metadata(metadata[r]));
  }
  state->prepare();
  state->load_commands();
  state->server_offset_ms = server_offset_ms(*state->routers[0], name);
  return std::unique_ptr<RedisStreamStore>(new RedisStreamStore(std::move(state)));
}

std::unique_ptr<RedisStreamStore> RedisStreamStore::open_if_stream(
    const std::vector<RedisEndpoint>& servers, const std::string& name, Clock clock,
    std::chrono::milliseconds wait_for_creator) {
  std::vector<std::unique_ptr<Router>> routers = routers_for(servers, name);
  const auto fields = stream_fields(*routers[0], name);
  if (!fields) return nullptr;
  const std::int64_t offset = server_offset_ms(*routers[0], name);
  return open(std::move(routers[0]), *fields, offset, servers, name, std::move(clock),
              wait_for_creator);
}

std::unique_ptr<RedisStreamStore> RedisStreamStore::open(
    std::unique_ptr<Router> first, const redis::Fields& first_fields, std::int64_t offset_ms,
    const std::vector<RedisEndpoint>& servers, const std::string& name, Clock clock,
    std::chrono::milliseconds wait_for_creator) {
  first_fields.check_format(redis::kStreamFormat, "stream filter", redis::kStreamVersion);
  std::vector<std::unique_ptr<Router>> routers;
  routers.push_back(std::move(first));
  for (std::size_t r = 1; r < servers.size(); ++r) {
    routers.push_back(redis::make_router(servers[r]));
  }
  const auto count = static_cast<std::uint32_t>(servers.size());
  std::vector<redis::StreamMetadata> metadata;
  for (std::uint32_t r = 0; r < count; ++r) {
    Router& router = *routers[r];
    // The first server's metadata came with the kind decision; read again only while its
    // creator is still at work.
    const auto fields = r == 0 && first_fields.ready()
                            ? std::optional<redis::Fields>(first_fields)
                            : redis::read_ready(router, name, redis::kStreamFormat, "stream filter",
                                                redis::kStreamVersion, wait_for_creator);
    if (!fields) redis::throw_missing_shard(where(router, name));
    redis::StreamMetadata m = redis::parse_stream_metadata(*fields);
    redis::check_shard(where(router, name), {m.shard, m.shards, m.shard_set},
                       {r, count, r > 0 ? metadata[0].shard_set : std::string()});
    if (r > 0 && redis::stream_shape_fields(m) != redis::stream_shape_fields(metadata[0])) {
      throw FormatError(where(router, name) + " has other stream options than on " +
                        routers[0]->endpoint().describe());
    }
    metadata.push_back(std::move(m));
  }
  const StreamShape shape = StreamShape::parse(redis::stream_shape_fields(metadata[0]),
                                               redis::describe_key(*routers[0], name));
  auto state = std::make_unique<State>(shape, name, std::move(clock));
  state->routers = std::move(routers);
  state->created_unix_ns = metadata[0].created_unix_ns;
  state->guarded = metadata[0].version >= 2;
  const std::uint64_t partitions = shape.partitions();
  state->router_of = servers_of_partitions(partitions, count);
  state->salts.assign(partitions, 0);
  for (std::uint64_t p = 0; p < partitions; ++p) {
    const auto& salts = metadata[state->router_of[p]].tag_salts;
    if (salts.size() != partitions) {
      throw FormatError(where(*state->routers[state->router_of[p]], name) + ": " +
                        std::to_string(salts.size()) + " tag salts for " +
                        std::to_string(partitions) + " partitions");
    }
    state->salts[p] = salts[p];
  }
  state->prepare();
  state->load_commands();
  state->server_offset_ms = offset_ms;
  return std::unique_ptr<RedisStreamStore>(new RedisStreamStore(std::move(state)));
}

bool RedisStreamStore::drop_if_stream(const std::vector<RedisEndpoint>& servers,
                                      const std::string& name) {
  std::vector<std::unique_ptr<Router>> routers = routers_for(servers, name);
  bool dropped = false;
  for (std::size_t r = 0; r < routers.size(); ++r) {
    Router& router = *routers[r];
    const auto fields = stream_fields(router, name);
    if (!fields) continue;
    // A creation that never finished recorded its partitions and salts in its claim.
    const redis::StreamMetadata m = redis::parse_stream_metadata(*fields);
    unlink_slices(router, name, m.tag_salts);
    const auto server_of = servers_of_partitions(m.tag_salts.size(), routers.size());
    std::vector<std::string> rosters;
    for (std::uint64_t p = 0; p < m.tag_salts.size(); ++p) {
      if (server_of[p] == r)
        rosters.push_back(redis::partition_key(name, p, m.tag_salts[p], "slices"));
    }
    redis::unlink_keys(router, rosters);
    router.run(slot_of(name), {"UNLINK", name}, OnLostNode::retry);
    dropped = true;
  }
  return dropped;
}

}  // namespace redbloom
