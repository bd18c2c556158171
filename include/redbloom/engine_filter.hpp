// Filters kept by the server's own Bloom engine (RedisBloom, Redis 8, valkey-bloom, redbloom's
// module): made here with BF.RESERVE, then opened by Filter::open like any other filter and
// used through BF.* (store.hpp's ServerFilterInfo). Such a filter is one key: on one server, or
// in one slot of a Redis Cluster.
#pragma once

#include <cstdint>

#include "redbloom/filter.hpp"
#include "redbloom/filter_request.hpp"
#include "redbloom/location.hpp"

namespace redbloom {

// BF.RESERVE NAME error_rate capacity [EXPANSION n | NONSCALING] on the location's server.
// FilterExists when NAME is taken; with `overwrite`, a filter of any kind at NAME (and its exact
// set) is dropped first, while a key that is no filter is refused. InvalidArgument for a file,
// memory or sharded location, and for a server without a Bloom engine.
[[nodiscard]] Filter create_engine_filter(const Location& location,
                                          const EngineFilterOptions& options,
                                          bool overwrite = false);

}  // namespace redbloom
