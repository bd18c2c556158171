// One lifecycle for every object redbloom keeps in Redis (a filter, an exact set; growth links
// and window generations next), so that each follows the same rules:
//
//   create  claim the name: the metadata hash, state "creating", written whole by one script
//           only if no key of that name exists (of two creators exactly one wins); make the
//           parts, each a zeroed string of its length, only where no key is (a key of another
//           program is never overwritten: what this call made is unlinked again and the error
//           says so); then mark the object ready.
//   open    read the metadata (a key of another type or format is a FormatError naming it);
//           while it says "creating", wait for the creator, boundedly.
//   drop    unlink the parts and the metadata; of an object whose creation never finished,
//           only the parts still exactly as a creation leaves them (its creator may have died
//           before it checked for a foreign key at that name).
//
// Parts are named by index (key_of(i)); they stream through pipelines in bounded chunks, so
// objects of millions of parts never hold all their keys at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/redis_format.hpp"
#include "router.hpp"

namespace redbloom::redis {

// What an object's parts are, for the generic part pipelines.
struct PartSet {
  std::uint64_t count = 0;
  std::function<std::string(std::uint64_t)> key_of;
  // Bytes of a part as created (all zero): a partition and its seal, or a bucket's seal; 0
  // where an unfinished creation did not record it (then any all-zero string counts).
  std::uint64_t created_length = 0;
};

// What a part command may do when a cluster node is lost in the middle of a pipeline: reads
// and writes that can run twice wait for the failover and run again; the others fail, since
// whether they ran is unknown.
enum class Work { read, idempotent_write, write };

// Parts key_of(i) for i in [0, count), in pipeline units: up to `per_unit` parts a unit on one
// server; on a cluster one part a unit, sent to the node serving its slot (a redirected unit
// runs again whole at the new node, and a unit of several keys would then also run for keys
// that have not moved there yet). write(first, keys, buffer) writes the commands of the unit
// of parts first .. first + keys.size() - 1 and returns how many; check(first, size, replies)
// sees them (never concurrently; on a cluster in any order).
void for_part_units(Router& router, std::uint64_t count,
                    const std::function<std::string(std::uint64_t)>& key_of,
                    std::string_view operation, Work work,
                    const std::function<std::size_t(std::uint64_t, std::span<const std::string>,
                                                    CommandBuffer&)>& write,
                    const std::function<void(std::uint64_t, std::size_t, Replies)>& check,
                    std::uint64_t per_unit = 64);

// The same with one command per part: write(i, key, buffer) writes part i's, check(i, reply)
// sees its reply.
void for_each_part(
    Router& router, std::uint64_t count, const std::function<std::string(std::uint64_t)>& key_of,
    std::string_view operation, Work work,
    const std::function<void(std::uint64_t, const std::string&, CommandBuffer&)>& write,
    const std::function<void(std::uint64_t, const redisReply&)>& check,
    std::uint64_t per_unit = 64);

// The metadata hash at `key`, or nullopt if there is no key. A key of another type is a
// FormatError naming it ("holds a string, not a redbloom <noun>").
[[nodiscard]] std::optional<Fields> read_metadata(Router& router, const std::string& key,
                                                  std::string_view noun);

// The same with RB.VERSION in the pipeline, remembered by the router (module_version), for
// an open that asks both.
// The lengths of string keys, read along with something else: key -> STRLEN (keys that are no
// string, or missing, are left out).
using KeyLengths = std::map<std::string, std::uint64_t>;  // as redis_store.hpp declares it
[[nodiscard]] std::optional<Fields> read_metadata_and_module(
    Router& router, const std::string& key, std::string_view noun,
    std::span<const std::string> strlen_keys = {}, KeyLengths* lengths = nullptr);

// " (its creation started 12 s ago)" from a claim's time, or "" if the claim has none.
[[nodiscard]] std::string creation_age(const Fields& fields);

// Claims `key` for a new object (see above): false if any key of that name exists.
[[nodiscard]] bool claim(Router& router, std::string_view key,
                         const std::vector<std::pair<std::string, std::string>>& fields);

// Makes every part, zeroed, at its created length, only where no key exists. On a refusal
// (a key already there: FilterExists; an error reply such as OOM: StorageError) unlinks the
// parts this call made and the metadata at `meta_key`, then throws, saying so. An I/O error leaves
// the object "creating" (which commands ran is unknown), for drop to clean up.
void make_parts(Router& router, const PartSet& parts, const std::string& meta_key,
                std::string_view noun);

// Writes `fields` into the metadata and sets its state to "ready".
void mark_ready(Router& router, const std::string& meta_key,
                std::vector<std::pair<std::string, std::string>> fields);

// Reads the metadata until it says ready, waiting up to `wait` for a concurrent creator.
// nullopt if there is no key. After the wait, IncompleteFilter that says how long ago the
// creation started and that its creator may be gone.
[[nodiscard]] std::optional<Fields> read_ready(Router& router, const std::string& key,
                                               std::string_view format, std::string_view noun,
                                               std::uint32_t newest,
                                               std::chrono::milliseconds wait);

// Unlinks the parts (all of them when `finished`; else only those still as created), then
// the metadata.
void drop_object(Router& router, const PartSet& parts, bool finished, const std::string& meta_key);

// Hash-tag salts that put partition p of filter `name` on master p mod M of a cluster's M
// masters (partition_key), so a filter's memory and load spread evenly over them; all 0 on
// one server.
[[nodiscard]] std::vector<std::uint32_t> spread_tags(const Router& router, const std::string& name,
                                                     std::uint64_t partitions);

// "key 'NAME' on redis HOST".
[[nodiscard]] std::string describe_key(const Router& router, std::string_view key);

// A random id naming a set of servers created together (the shard_set metadata field), so
// that opening with another set of servers is refused.
[[nodiscard]] std::string random_set_id();

// Now, in nanoseconds since the Unix epoch (the claim time of a creation).
[[nodiscard]] std::uint64_t unix_now_ns();

}  // namespace redbloom::redis
