// What a RedisStreamStore knows about its filter: the shape and its links, where each
// partition lives, and what it has seen of the slices (link counts, the newest slice). Shared
// by the lifecycle (stream_admin.cpp) and the data paths (stream_store.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/stream_shape.hpp"
#include "redis/stream_store.hpp"
#include "router.hpp"
#include "stream_copies.hpp"
#include "stream_script.hpp"

namespace redbloom {

struct RedisStreamStore::State {
  State(const StreamShape& stream_shape, std::string filter_name, Clock driven)
      : shape(stream_shape), name(std::move(filter_name)), clock(std::move(driven)) {}

  StreamShape shape;
  std::string name;
  Clock clock;  // empty: the servers' time
  FilterParams first;
  std::uint64_t created_unix_ns = 0;

  // One router for one server or a cluster; one per server when sharded.
  std::vector<std::unique_ptr<redis::Router>> routers;
  std::vector<std::uint32_t> router_of;  // per partition
  std::vector<std::uint32_t> salts;      // per partition, its hash tag's salt
  std::vector<std::uint16_t> slots;      // per partition

  // Every link that can exist, in order; why the next one cannot.
  std::vector<FilterParams> links;
  std::vector<redis::stream::LinkArgs> link_args;
  std::vector<std::uint64_t> link_start;  // byte offset of link l in a slice key
  redis::stream::ItemForm form = redis::stream::ItemForm::bits;  // how the script takes items
  std::string no_more_links;
  std::uint64_t budget = 0;  // bytes of links a partition's live slices may hold (0: any)

  // Learnt from replies: per partition, the most links seen and the newest slice.
  std::vector<std::uint32_t> known_links;
  std::vector<std::int64_t> newest_slice;
  std::int64_t server_offset_ms = 0;  // the first server's TIME minus this machine's clock
  std::string sha;                    // of the script (the same on every server)
  bool module = false;                // every master has RB.STREAM: it runs instead of the script
  bool hashed = false;                // every master has RB.STREAMH: units go as the items' hashes
  bool guarded = false;  // the rosters were made with the filter: a missing one is an error
  // Per router: lookups and info run the script by EVALSHA_RO (a user who may only read the
  // keys may run it, Redis >= 7.0), until the server says it has no such command.
  std::vector<std::uint8_t> read_only_scripts;
  // A windowed filter's older slices as this writer copied them, for the script's adds.
  std::unique_ptr<redis::stream::OlderCopies> copies;

  // Sizes the links and the per-partition state once shape, routers and salts are set.
  void prepare();
  // Loads the script on every master of every router, and sets `module`.
  void load_commands();

  [[nodiscard]] std::string slice_key(std::uint64_t partition, std::int64_t slice) const;
  // The partition's slice roster (stream_script.hpp).
  [[nodiscard]] std::string roster_key(std::uint64_t partition) const;
  // Makes every partition's roster, as yet without slices (a creation does, before it marks the
  // filter ready). Without `overwrite`, a roster already there is kept: the first such key is
  // returned ("" when none was).
  std::string make_rosters(bool overwrite);
  // The client's now in ms for the script (-1: the server's TIME) and its best guess of the
  // current slice.
  [[nodiscard]] std::int64_t now_ms() const;
  [[nodiscard]] std::int64_t guess_slice() const;
  [[nodiscard]] std::string describe_servers() const;
};

// Every partition's live slices, as the script's info mode (or RB.STREAM's) reports them.
struct LiveSlices {
  std::vector<std::vector<redis::stream::SliceState>> of;  // per partition
  std::int64_t now_ms = 0;
};
[[nodiscard]] LiveSlices read_live_slices(RedisStreamStore::State& s);

}  // namespace redbloom
