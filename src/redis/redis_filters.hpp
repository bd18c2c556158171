// A filter in Redis of any kind by its name: a plain filter on one server (redis_store.hpp) or
// sharded over several (sharded_store.hpp), a windowed or growing filter (stream_store.hpp), or
// a cuckoo filter (cuckoo_redis_store.hpp), or a key of the server's own Bloom engine
// (server_filter_backend.hpp), told apart by the metadata
// at NAME. The one place that knows all the kinds; Filter's open, create and drop come through
// here.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/stream_shape.hpp"
#include "redbloom/filter_backend.hpp"
#include "redbloom/redis_endpoint.hpp"

namespace redbloom {

// Waits up to `wait_for_creator` for a filter another process is still creating.
[[nodiscard]] std::unique_ptr<FilterBackend> open_redis_filter(
    const std::vector<RedisEndpoint>& servers, const std::string& name, Clock clock,
    std::chrono::milliseconds wait_for_creator);
// A new filter; with `overwrite`, a filter of either kind of that name goes first.
[[nodiscard]] std::unique_ptr<FilterBackend> create_redis_filter(
    const std::vector<RedisEndpoint>& servers, const std::string& name, const FilterParams& params,
    bool overwrite);
[[nodiscard]] std::unique_ptr<FilterBackend> create_redis_filter(
    const std::vector<RedisEndpoint>& servers, const std::string& name, const StreamShape& shape,
    Clock clock, bool overwrite);
// A cuckoo filter of exactly these options (a copy's target keeps its source's partitions); with
// `overwrite`, a filter of any kind of that name goes first.
[[nodiscard]] std::unique_ptr<FilterBackend> create_redis_filter(
    const std::vector<RedisEndpoint>& servers, const std::string& name,
    const CuckooOptions& options, bool overwrite);
// The options a cuckoo filter made in Redis on `servers` gets (more partitions when they
// leave them at 1: RedisCuckooStore::with_redis_partitions).
[[nodiscard]] CuckooOptions redis_cuckoo_options(const CuckooOptions& options, std::size_t servers);
// Drops the filter of any kind, after checking that what is at NAME is one. False when it was
// a key of the server's own Bloom engine, which has no exact set beside it.
bool drop_redis_filter(const std::vector<RedisEndpoint>& servers, const std::string& name);

}  // namespace redbloom
