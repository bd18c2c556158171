// What a RedisCuckooStore knows about its filter: its shape, where each partition lives and
// which links Redis can hold. Shared by the lifecycle (cuckoo_redis_admin.cpp) and the data
// paths (cuckoo_redis_store.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuckoo_shape.hpp"
#include "redis/cuckoo_redis_store.hpp"
#include "router.hpp"

namespace redbloom {

struct RedisCuckooStore::State {
  State(const CuckooOptions& options, std::string filter_name)
      : shape(options), name(std::move(filter_name)) {}

  CuckooShape shape;
  std::string name;
  std::uint64_t created_unix_ns = 0;

  // One router for one server or a cluster; one per server when sharded.
  std::vector<std::unique_ptr<redis::Router>> routers;
  std::vector<std::uint32_t> router_of;  // per partition
  std::vector<std::uint32_t> salts;      // per partition, its hash tag's salt
  std::vector<std::uint16_t> slots;      // per partition
  // The links a partition may grow to here: the shape's, cut before the first one longer than
  // a Redis string may be.
  std::vector<cuckoo_table::Shape> links;
  std::vector<std::uint8_t> by_text;  // per router: NOSCRIPT seen, EVAL there
  // Per router: lookups and counts go by EVALSHA_RO until the server or user refuses it.
  std::vector<std::uint8_t> read_only_scripts;
  LookupMode lookup_mode = LookupMode::automatic;
  bool module = false;  // every master has RB.CUCKOO: it runs instead of the script

  // Sets slots, links, by_text and `module` (asking every master's RB.VERSION) once routers,
  // router_of and salts are set.
  void prepare();
  [[nodiscard]] std::string link_key(std::uint64_t partition, std::uint32_t link) const;
  // The partition's roster (cuckoo_script.hpp).
  [[nodiscard]] std::string roster_key(std::uint64_t partition) const;
  [[nodiscard]] std::string describe_servers() const;
};

// Makes server r's parts of a new filter (cuckoo_redis_admin.cpp).
void make_server_parts(RedisCuckooStore::State& state, std::uint32_t r, bool overwrite);

// Which server holds partition p: the only one, or as a sharded plain filter spreads them.
[[nodiscard]] std::vector<std::uint32_t> cuckoo_servers_of_partitions(std::uint64_t partitions,
                                                                      std::size_t servers);

}  // namespace redbloom
