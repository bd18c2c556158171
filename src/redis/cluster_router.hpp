// The Router of a Redis Cluster (redis_router.hpp): slot map from CLUSTER SLOTS, one
// connection and one pipeline per master, the masters served at the same time, MOVED / ASK
// followed, TRYAGAIN / CLUSTERDOWN / a failing-over master waited out with bounded backoff.
#pragma once

#include <memory>

#include "router.hpp"

namespace redbloom::redis {

// Connects to the seeds until one answers CLUSTER SLOTS; throws StorageError if none does.
[[nodiscard]] std::unique_ptr<Router> make_cluster_router(const RedisEndpoint& endpoint);

}  // namespace redbloom::redis
