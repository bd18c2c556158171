// A filter of the server's own Bloom engine, created by BF.RESERVE (engine_filter.hpp).
#include "redbloom/engine_filter.hpp"

#include "redbloom/error.hpp"
#include "redis/server_filter_backend.hpp"

namespace redbloom {

Filter create_engine_filter(const Location& location, const EngineFilterOptions& options,
                            bool overwrite) {
  if (!location.in_redis()) {
    throw InvalidArgument(
        "a BF filter is kept by a Redis server's Bloom engine: give a Redis location "
        "(--redis URI --name NAME), not " +
        location.describe());
  }
  if (location.servers.size() != 1) {
    throw InvalidArgument(
        "a BF filter is one key on one server (or in one slot of a Redis Cluster), not spread "
        "over several servers: give one server, or a redbloom filter (without the BF engine) "
        "to shard over them");
  }
  // Checked before anything is dropped, so a bad option leaves an existing filter alone.
  check_engine_options(options);
  if (overwrite && Filter::exists(location)) Filter::drop(location);
  return Filter(std::unique_ptr<FilterBackend>(
      ServerFilterBackend::reserve(location.servers.front(), location.name, options)));
}

}  // namespace redbloom
