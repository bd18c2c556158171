// A stream filter in Redis link by link (StreamLinks, filter_backend.hpp), for copies: the live
// slices as the info mode reports them, a link's bytes by GETRANGE, and a copy's target written
// key by key in the layout the script keeps (stream_script.hpp): the header with each link's
// count and creation time, the links zeroed then overwritten, the expiry of the slice and its
// field in the roster, so that the script and RB.STREAM take the slice for one they made.
#include <algorithm>
#include <map>

#include "core/redis_format.hpp"
#include "redbloom/error.hpp"
#include "stream_state.hpp"

namespace redbloom {
namespace {

using redis::OnLostNode;
namespace stream = redis::stream;

// Writes `value` as the big-endian i64 the script's BITFIELD reads.
void put_i64(std::string& bytes, std::uint64_t at, std::uint64_t value) {
  for (int b = 7; b >= 0; --b) {
    bytes[at + static_cast<std::uint64_t>(7 - b)] = static_cast<char>((value >> (8 * b)) & 0xff);
  }
}

std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  const std::int64_t m = a % b;
  return m < 0 ? m + b : m;
}

void check_link(const RedisStreamStore::State& s, const std::string& where, std::uint32_t link,
                std::uint64_t partition, std::uint64_t offset, std::size_t size) {
  if (partition >= s.shape.partitions() || link >= s.links.size() ||
      offset > s.links[link].partition_bytes() || size > s.links[link].partition_bytes() - offset) {
    throw InvalidArgument(where + ": bytes " + std::to_string(offset) + "+" + std::to_string(size) +
                          " of partition " + std::to_string(partition) + " of link " +
                          std::to_string(link) + " are outside the filter");
  }
}

}  // namespace

std::vector<SliceCopy> RedisStreamStore::live_slices() const {
  State& s = *state_;
  const LiveSlices live = read_live_slices(s);
  const std::uint64_t partitions = s.shape.partitions();
  std::map<std::int64_t, SliceCopy> by_slice;
  for (std::uint64_t p = 0; p < live.of.size(); ++p) {
    for (const stream::SliceState& slice : live.of[p]) {
      SliceCopy& copy = by_slice[slice.slice];
      if (copy.items.empty()) {
        copy.slice = slice.slice;
        copy.items.resize(partitions);
      }
      copy.items[p].assign(slice.items.begin(), slice.items.begin() + slice.links);
      if (copy.created_unix_ns.size() < slice.links) {
        copy.created_unix_ns.resize(slice.links, UINT64_MAX);
      }
      for (std::uint32_t l = 0; l < slice.links; ++l) {
        copy.created_unix_ns[l] =
            std::min(copy.created_unix_ns[l], slice.created_ms[l] * std::uint64_t{1'000'000});
      }
    }
  }
  std::vector<SliceCopy> slices;
  for (auto& [number, copy] : by_slice) slices.push_back(std::move(copy));
  return slices;
}

void RedisStreamStore::read_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                                 std::uint64_t offset, std::span<std::uint8_t> out) const {
  const State& s = *state_;
  check_link(s, location(), link, partition, offset, out.size());
  if (out.empty()) return;
  const std::string key = s.slice_key(partition, slice);
  const std::uint64_t first = s.link_start[link] + offset;
  const std::string from = std::to_string(first);
  const std::string to = std::to_string(first + out.size() - 1);
  redis::Router& router = *s.routers[s.router_of[partition]];
  const redis::Reply reply =
      router.run(s.slots[partition], {"GETRANGE", key, from, to}, OnLostNode::retry);
  router.expect(*reply, REDIS_REPLY_STRING, "GETRANGE");
  const std::string_view bytes = redis::text_of(*reply);
  std::fill(out.begin(), out.end(), std::uint8_t{0});
  std::copy_n(bytes.begin(), std::min(bytes.size(), out.size()), out.begin());
  if (bytes.size() == out.size()) return;
  // A slice key only grows while it lives: a short one has retired (its items are forgotten
  // at the target too) or was lost, which a copy must not hide.
  const std::int64_t now_ms =
      s.clock ? static_cast<std::int64_t>(s.clock() / 1'000'000)
              : static_cast<std::int64_t>(system_now_ns() / 1'000'000) + s.server_offset_ms;
  const std::uint64_t retire_ms = s.shape.retire_ns(slice) / 1'000'000;
  if (retire_ms != 0 &&
      static_cast<std::uint64_t>(std::max<std::int64_t>(now_ms, 0)) >= retire_ms) {
    std::fill(out.begin(), out.end(), std::uint8_t{0});
    return;
  }
  throw StorageError(router.message("GETRANGE", "slice key '" + key +
                                                    "' went away or shrank during the copy "
                                                    "(evicted or deleted?) before its slice "
                                                    "retired: its items would be lost"));
}

void RedisStreamStore::restore_slices(std::span<const SliceCopy> slices) {
  State& s = *state_;
  const std::uint64_t partitions = s.shape.partitions();
  const std::int64_t ring = s.shape.windowed() ? std::int64_t{s.shape.slices()} + 1 : 1;
  for (const SliceCopy& slice : slices) {
    if (slice.items.size() != partitions) {
      throw InvalidArgument(location() + ": a slice of " + std::to_string(slice.items.size()) +
                            " partitions copied into a filter of " + std::to_string(partitions));
    }
  }
  for (std::uint64_t p = 0; p < partitions; ++p) {
    redis::Router& router = *s.routers[s.router_of[p]];
    for (const SliceCopy& slice : slices) {
      const std::vector<std::uint64_t>& items = slice.items[p];
      const auto links = static_cast<std::uint32_t>(items.size());
      if (links == 0) continue;
      if (links > s.links.size() || links > slice.created_unix_ns.size()) {
        throw InvalidArgument(location() + ": slice " + std::to_string(slice.slice) + " has " +
                              std::to_string(links) +
                              " links, which this filter cannot hold: " + s.no_more_links);
      }
      std::string header(stream::kHeaderBytes, '\0');
      put_i64(header, 0, links);
      for (std::uint32_t l = 0; l < links; ++l) {
        put_i64(header, 8 * (1 + 2 * std::uint64_t{l}), items[l]);
        put_i64(header, 8 * (2 + 2 * std::uint64_t{l}), slice.created_unix_ns[l] / 1'000'000);
      }
      const std::string key = s.slice_key(p, slice.slice);
      const redis::Reply set = router.run(s.slots[p], {"SET", key, header, "NX"}, OnLostNode::fail);
      if (set->type == REDIS_REPLY_NIL) {
        throw InvalidArgument(location() + " already holds slice key '" + key +
                              "': a copy goes into a new filter");
      }
      router.expect(*set, REDIS_REPLY_STATUS, "SET");
      const std::string last = std::to_string(s.link_start[links] - 1);
      router.run(s.slots[p], {"SETRANGE", key, last, std::string_view("\0", 1)}, OnLostNode::retry);
      if (s.shape.windowed()) {
        const std::string at = std::to_string(s.shape.retire_ns(slice.slice) / 1'000'000);
        router.run(s.slots[p], {"PEXPIREAT", key, at}, OnLostNode::retry);
      }
      // The roster says the slice was made: were its key lost now, lookups would say so.
      std::string made(8, '\0');
      put_i64(made, 0, static_cast<std::uint64_t>(slice.slice + 1));
      const std::string field = std::to_string(8 * floor_mod(slice.slice, ring));
      router.run(s.slots[p], {"SETRANGE", s.roster_key(p), field, made}, OnLostNode::retry);
      s.known_links[p] = std::max(s.known_links[p], links);
      s.newest_slice[p] = std::max(s.newest_slice[p], slice.slice);
    }
  }
}

void RedisStreamStore::write_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                                  std::uint64_t offset, std::span<const std::uint8_t> bytes) {
  const State& s = *state_;
  check_link(s, location(), link, partition, offset, bytes.size());
  if (bytes.empty()) return;
  const std::string key = s.slice_key(partition, slice);
  const std::string at = std::to_string(s.link_start[link] + offset);
  const std::string_view data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  redis::Router& router = *s.routers[s.router_of[partition]];
  const redis::Reply reply =
      router.run(s.slots[partition], {"SETRANGE", key, at, data}, OnLostNode::retry);
  router.expect(*reply, REDIS_REPLY_INTEGER, "SETRANGE");
}

}  // namespace redbloom
