// The Redis companion: fingerprints split into 2^b buckets by their top b bits; each bucket a
// string of 6-byte tags (the fingerprint's low 48 bits). A lookup GETs the item's bucket (~64
// tags at the expected size) and scans it. An add sends each bucket its new tags in one script
// (kAddNewTags) that appends those the bucket lacks, so concurrent writers store and count
// each item once; a remove sends each bucket the tags to cut out (kRemoveTags), so of
// concurrent removers of an item exactly one removes it.
//
// Version 2 seals every bucket: `create` writes each one as a single zero byte, and tags are
// appended after it. A bucket that vanished (evicted, deleted) then reads as missing rather
// than empty, and one that an APPEND recreated afterwards has no seal (its length is a whole
// number of tags); both are errors naming the key. Unsealed (version 1, still read), a lost
// bucket answered "absent" for its items: in a diff, live items reported as orphans.
//
// Every command goes through a Router (redis_router.hpp), so the set lives on one server or in
// a Redis Cluster alike: each bucket key has its own hash tag, so the buckets spread over the
// cluster's slots and masters, and the metadata key sits in the slot of its own name.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/exact_fingerprint.hpp"
#include "core/redis_format.hpp"
#include "object.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "router.hpp"

namespace redbloom {
namespace {

using redis::CommandBuffer;
using redis::OnLostNode;
using redis::Replies;
using redis::Reply;
using redis::Router;
using redis::slot_of;
using redis::Work;

constexpr std::size_t kTagBytes = redis::kExactTagBytes;
constexpr std::uint64_t kTagMask = (std::uint64_t{1} << (8 * kTagBytes)) - 1;
// About this many tags per bucket at the expected size: a GET of ~400 bytes per lookup, and
// per-key overhead spread over enough items to stay near 1 byte each.
constexpr std::uint64_t kTagsPerBucket = 64;

// The start of both tag scripts. ARGV[1] is the seal's length (1, or 0 for version 1 sets): a
// tag is held only at an offset that is a whole number of tags past the seal (held_at). Every
// bucket KEYS[k] is read and checked before any is written: a missing, unsealed or damaged one
// is an error naming its k, as a lookup's checks report it, and nothing is written. ARGV[2] =
// "1" (one server): the last key is the metadata hash, whose `entries` the script moves by what
// it changed, so the count moves with the tags even when a later unit of the same call fails.
// On a cluster the metadata is in another slot, out of a script's reach, and the caller counts
// (ARGV[2] = "0"). Once a script has written, Redis no longer refuses its writes for maxmemory,
// so it never stops half way.
constexpr std::string_view kReadBuckets = R"lua(
local seal = tonumber(ARGV[1])
local counted = ARGV[2] == '1'
local nbuckets = #KEYS
if counted then nbuckets = nbuckets - 1 end
local buckets = {}
for k = 1, nbuckets do
  local bucket = redis.call('GET', KEYS[k])
  if not bucket then
    if seal == 1 then return redis.error_reply('REDBLOOM missing ' .. k) end
    bucket = ''
  end
  if seal == 1 and #bucket % 6 == 0 then return redis.error_reply('REDBLOOM unsealed ' .. k) end
  if #bucket % 6 ~= seal then return redis.error_reply('REDBLOOM damaged ' .. k) end
  buckets[k] = bucket
end
local function held_at(bucket, tag)
  local from = seal + 1
  while true do
    local at = string.find(bucket, tag, from, true)
    if not at then return nil end
    if (at - 1 - seal) % 6 == 0 then return at end
    from = at + 1
  end
end
)lua";

// Appends to each bucket KEYS[k] the tags of ARGV[k + 2] (6 bytes each) that it does not
// hold yet, and returns how many it appended in all. One script, so that of concurrent adders
// of an item exactly one stores it and counts it new (a GET, then an APPEND, let two of them
// both do so).
constexpr std::string_view kAddNewTagsBody = R"lua(
local added = 0
for k = 1, nbuckets do
  local bucket, tags, new = buckets[k], ARGV[k + 2], {}
  for i = 1, #tags, 6 do
    local tag = string.sub(tags, i, i + 5)
    if not held_at(bucket, tag) then new[#new + 1] = tag end
  end
  if #new > 0 then
    redis.call('APPEND', KEYS[k], table.concat(new))
    added = added + #new
  end
end
if counted and added > 0 then redis.call('HINCRBY', KEYS[#KEYS], 'entries', added) end
return added
)lua";

// Cuts from each bucket KEYS[k] the tags of ARGV[k + 2] that it holds (one copy each) and
// returns one character per tag, in order: '1' removed, '0' not held.
constexpr std::string_view kRemoveTagsBody = R"lua(
local flags, removed = {}, 0
for k = 1, nbuckets do
  local bucket, tags, changed = buckets[k], ARGV[k + 2], false
  for i = 1, #tags, 6 do
    local held = held_at(bucket, string.sub(tags, i, i + 5))
    if held then
      bucket = string.sub(bucket, 1, held - 1) .. string.sub(bucket, held + 6)
      flags[#flags + 1] = '1'
      removed = removed + 1
      changed = true
    else
      flags[#flags + 1] = '0'
    end
  end
  if changed then redis.call('SET', KEYS[k], bucket) end
end
if counted and removed > 0 then redis.call('HINCRBY', KEYS[#KEYS], 'entries', -removed) end
return table.concat(flags)
)lua";

std::string script_of(std::string_view body) {
  std::string script;
  script.reserve(kReadBuckets.size() + body.size());
  script.append(kReadBuckets);
  script.append(body);
  return script;
}

const std::string kAddNewTags = script_of(kAddNewTagsBody);
const std::string kRemoveTags = script_of(kRemoveTagsBody);

std::string meta_key(const std::string& name) {
  return redis::exact_meta_key(name);
}

std::string bucket_key(const std::string& name, std::uint64_t bucket) {
  return redis::exact_bucket_key(name, bucket);
}

// All 2^bucket_bits buckets as the parts of the set (object.hpp); `seal` bytes each as made.
redis::PartSet buckets_of(const std::string& name, unsigned bucket_bits, std::uint64_t seal) {
  return {std::uint64_t{1} << bucket_bits, [name](std::uint64_t b) { return bucket_key(name, b); },
          seal};
}

// Where a fingerprint is kept: its bucket, and the tag stored there.
struct Place {
  std::uint64_t bucket;
  std::uint64_t tag;
};

class RedisExactSet final : public ExactSet {
 public:
  RedisExactSet(std::unique_ptr<Router> router, std::string name,
                const redis::ExactMetadata& metadata)
      : router_(std::move(router)),
        name_(std::move(name)),
        bucket_bits_(metadata.bucket_bits),
        seal_(redis::seal_bytes(metadata.version)),
        filter_id_(metadata.filter_id) {}

  std::size_t add(std::span<const std::string_view> items) override {
    std::vector<std::uint64_t> fingerprints;
    fingerprints.reserve(items.size());
    for (const std::string_view item : items) fingerprints.push_back(exact_fingerprint(item));
    return add_fingerprints(fingerprints);
  }

  std::size_t add_fingerprints(std::span<const std::uint64_t> fingerprints) override {
    // Each fingerprint once, as stored: tags by bucket.
    std::map<std::uint64_t, std::string> tags_of;
    std::unordered_set<std::uint64_t> seen;
    for (const std::uint64_t f : fingerprints) {
      if (!seen.insert(f & fingerprint_mask()).second) continue;
      append_tag(tags_of, place_of(f));
    }
    std::size_t added = 0;
    run_tag_script(kAddNewTags, add_script_sha_, "EVALSHA (adding to buckets)", tags_of,
                   [&](std::span<const std::uint64_t>, const redisReply& reply) {
                     router_->expect(reply, REDIS_REPLY_INTEGER, "EVALSHA (adding to buckets)");
                     added += static_cast<std::size_t>(reply.integer);
                   });
    count_entries(static_cast<std::int64_t>(added));
    return added;
  }

  std::size_t remove(std::span<const std::string_view> items,
                     std::span<std::uint8_t> removed) override {
    std::vector<std::uint64_t> fingerprints;
    fingerprints.reserve(items.size());
    for (const std::string_view item : items) fingerprints.push_back(exact_fingerprint(item));
    return remove_fingerprints(fingerprints, removed);
  }

  std::size_t remove_fingerprints(std::span<const std::uint64_t> fingerprints,
                                  std::span<std::uint8_t> removed) override {
    if (!removed.empty() && removed.size() < fingerprints.size()) {
      throw InvalidArgument("exact set: flag span too small");
    }
    if (!removed.empty()) std::fill_n(removed.begin(), fingerprints.size(), std::uint8_t{0});
    // Each fingerprint once (its first occurrence), as stored: tags by bucket, and for each
    // bucket the items its tags stand for, in order.
    std::map<std::uint64_t, std::string> tags_of;
    std::map<std::uint64_t, std::vector<std::size_t>> items_of;
    std::unordered_set<std::uint64_t> seen;
    for (std::size_t i = 0; i < fingerprints.size(); ++i) {
      if (!seen.insert(fingerprints[i] & fingerprint_mask()).second) continue;
      const Place place = place_of(fingerprints[i]);
      append_tag(tags_of, place);
      items_of[place.bucket].push_back(i);
    }
    static constexpr std::string_view kOperation = "EVALSHA (removing from buckets)";
    std::size_t count = 0;
    run_tag_script(kRemoveTags, remove_script_sha_, kOperation, tags_of,
                   [&](std::span<const std::uint64_t> buckets, const redisReply& reply) {
                     router_->expect(reply, REDIS_REPLY_STRING, kOperation);
                     std::vector<std::size_t> items;
                     for (const std::uint64_t bucket : buckets) {
                       const auto& of_bucket = items_of[bucket];
                       items.insert(items.end(), of_bucket.begin(), of_bucket.end());
                     }
                     if (reply.len != items.size()) {
                       router_->fail(kOperation, "the script answered " +
                                                     std::to_string(reply.len) + " flags for " +
                                                     std::to_string(items.size()) + " tags");
                     }
                     for (std::size_t t = 0; t < items.size(); ++t) {
                       if (reply.str[t] != '1') continue;
                       ++count;
                       if (!removed.empty()) removed[items[t]] = 1;
                     }
                   });
    count_entries(-static_cast<std::int64_t>(count));
    return count;
  }

  void contains(std::span<const std::string_view> items, std::span<std::uint8_t> present) override {
    if (present.size() < items.size()) throw InvalidArgument("exact set: flag span too small");
    std::map<std::uint64_t, std::vector<std::size_t>> by_bucket;
    std::vector<std::uint64_t> tags(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Place place = place_of(exact_fingerprint(items[i]));
      tags[i] = place.tag;
      by_bucket[place.bucket].push_back(i);
      present[i] = 0;
    }
    std::vector<const std::pair<const std::uint64_t, std::vector<std::size_t>>*> order;
    for (const auto& entry : by_bucket) order.push_back(&entry);
    redis::for_each_part(
        *router_, order.size(), [&](std::uint64_t i) { return bucket_key(name_, order[i]->first); },
        "GET", Work::read,
        [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          buffer.command({"GET", key});
        },
        [&](std::uint64_t i, const redisReply& reply) {
          const std::vector<std::uint64_t> held = tags_in(order[i]->first, reply);
          for (std::size_t item : order[i]->second) {
            present[item] = std::find(held.begin(), held.end(), tags[item]) != held.end() ? 1 : 0;
          }
        });
  }

  void clear() override {
    // Every bucket back to its seal alone (version 1 buckets had none: unlinked).
    const redis::PartSet buckets = buckets_of(name_, bucket_bits_, seal_);
    redis::for_each_part(
        *router_, buckets.count, buckets.key_of, "SET", Work::idempotent_write,
        [&](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          if (seal_ != 0) {
            buffer.command({"SET", key, std::string_view("\0", 1)});
          } else {
            buffer.command({"UNLINK", key});
          }
        },
        [&](std::uint64_t, const redisReply& reply) {
          if (redis::is_error(reply)) router_->fail("clearing a bucket", redis::text_of(reply));
        });
    const std::string meta = meta_key(name_);
    router_->run(slot_of(meta), {"HSET", meta, "entries", "0"});
  }

  [[nodiscard]] std::uint64_t entries() const override {
    const std::string meta = meta_key(name_);
    auto reply = router_->run(slot_of(meta), {"HGET", meta, "entries"}, OnLostNode::retry);
    return reply->type == REDIS_REPLY_STRING ? std::stoull(std::string(redis::text_of(*reply))) : 0;
  }

  [[nodiscard]] std::uint64_t storage_bytes() const override {
    const std::uint64_t buckets = std::uint64_t{1} << bucket_bits_;
    std::uint64_t total = 0;
    const auto add = [&](const redisReply& reply) {
      if (redis::is_error(reply)) router_->fail("MEMORY USAGE", redis::text_of(reply));
      if (reply.type == REDIS_REPLY_INTEGER) total += static_cast<std::uint64_t>(reply.integer);
    };
    redis::for_each_part(
        *router_, buckets, [&](std::uint64_t b) { return bucket_key(name_, b); }, "MEMORY USAGE",
        Work::read,
        [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          buffer.command({"MEMORY", "USAGE", key});
        },
        [&](std::uint64_t, const redisReply& reply) { add(reply); });
    const std::string meta = meta_key(name_);
    add(*router_->call(slot_of(meta), {"MEMORY", "USAGE", meta}, OnLostNode::retry));
    return total;
  }

  [[nodiscard]] double false_match_probability() const override {
    const double per_bucket =
        static_cast<double>(entries()) / static_cast<double>(std::uint64_t{1} << bucket_bits_);
    return per_bucket / std::ldexp(1.0, 8 * kTagBytes);
  }

  [[nodiscard]] std::string location() const override {
    return "redis " + router_->endpoint().describe() + " exact set " + meta_key(name_);
  }
  [[nodiscard]] std::uint64_t filter_id() const override { return filter_id_; }

  // A fingerprint's bucket is its top bucket_bits bits, its tag the low 48: those are kept.
  [[nodiscard]] std::uint64_t fingerprint_mask() const override {
    const std::uint64_t top = bucket_bits_ == 0 ? 0 : ~std::uint64_t{0} << (64 - bucket_bits_);
    return top | kTagMask;
  }

  void for_each_fingerprint(
      const std::function<void(std::span<const std::uint64_t>)>& batch) const override {
    const std::uint64_t buckets = std::uint64_t{1} << bucket_bits_;
    std::vector<std::uint64_t> fingerprints;
    redis::for_each_part(
        *router_, buckets, [&](std::uint64_t b) { return bucket_key(name_, b); }, "GET", Work::read,
        [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          buffer.command({"GET", key});
        },
        [&](std::uint64_t bucket, const redisReply& reply) {
          for (const std::uint64_t tag : tags_in(bucket, reply)) {
            fingerprints.push_back((bucket_bits_ == 0 ? 0 : bucket << (64 - bucket_bits_)) | tag);
          }
          if (fingerprints.size() >= (std::size_t{1} << 16)) {
            batch(fingerprints);
            fingerprints.clear();
          }
        });
    if (!fingerprints.empty()) batch(fingerprints);
  }

 private:
  static constexpr std::string_view kUnsealed = "has no seal (it was recreated)";

  [[noreturn]] void lost(std::uint64_t bucket, std::string_view what,
                         std::string_view operation) const {
    router_->fail(operation, "exact-set bucket '" + bucket_key(name_, bucket) + "' " +
                                 std::string(what) +
                                 ": the exact set lost the items in it (evicted under maxmemory? "
                                 "deleted?); build it again");
  }
  [[noreturn]] void damaged(std::uint64_t bucket, std::string_view what,
                            std::string_view operation) const {
    const std::string size = what.empty() ? "" : std::string(what) + " ";
    router_->fail(operation, "exact-set bucket '" + bucket_key(name_, bucket) + "' " + size +
                                 "is not a whole number of tags (damaged?)");
  }
  // Throws what kAddNewTags's or kRemoveTags's error reply says about the k-th bucket of its unit
  // (bucket_of_key(k)), as a lookup's checks would; returns for other error replies.
  template <class BucketOfKey>
  void check_script_error(const redisReply& reply, std::string_view operation,
                          BucketOfKey&& bucket_of_key) const {
    const std::string_view text = redis::text_of(reply);
    for (const std::string_view kind : {"missing", "unsealed", "damaged"}) {
      const std::string prefix = "REDBLOOM " + std::string(kind) + " ";
      if (!text.starts_with(prefix)) continue;
      const std::uint64_t bucket =
          bucket_of_key(std::stoull(std::string(text.substr(prefix.size()))));
      if (kind == "missing") lost(bucket, "is missing", operation);
      if (kind == "unsealed") lost(bucket, kUnsealed, operation);
      damaged(bucket, "", operation);
    }
  }

  static void append_tag(std::map<std::uint64_t, std::string>& tags_of, const Place& place) {
    std::string& tags = tags_of[place.bucket];
    for (std::size_t b = 0; b < kTagBytes; ++b) tags += static_cast<char>(place.tag >> (8 * b));
  }

  // On a cluster the scripts cannot reach the metadata (another slot): `entries` moves here by
  // what their replies counted.
  void count_entries(std::int64_t change) {
    if (change == 0 || !router_->is_cluster()) return;
    const std::string meta = meta_key(name_);
    router_->run(slot_of(meta), {"HINCRBY", meta, "entries", std::to_string(change)});
  }

  // Runs `script` (kAddNewTags or kRemoveTags) over the buckets of `tags_of` with their tags,
  // several buckets a call on one server; on_reply(buckets, reply) sees each call's reply with
  // the buckets it covered, in order. On one server the script counts `entries` itself, so a
  // failed call leaves it equal to the tags stored.
  template <class OnReply>
  void run_tag_script(std::string_view script, std::string& sha_cache, std::string_view operation,
                      const std::map<std::uint64_t, std::string>& tags_of, OnReply&& on_reply) {
    std::vector<const std::pair<const std::uint64_t, std::string>*> order;
    for (const auto& entry : tags_of) order.push_back(&entry);
    const std::string_view seal = seal_ != 0 ? "1" : "0";
    const std::string& sha = script_sha(script, sha_cache);
    const std::string meta = meta_key(name_);
    const bool counted_by_script = !router_->is_cluster();
    // EVALSHA; then EVAL, which also caches the script there, for the units whose node did not
    // know it yet (NOSCRIPT: it did not run).
    std::vector<std::size_t> todo(order.size());
    std::iota(todo.begin(), todo.end(), std::size_t{0});
    for (const bool by_sha : {true, false}) {
      std::vector<std::size_t> unknown;
      const auto bucket_of = [&](std::uint64_t i) { return order[todo[i]]->first; };
      redis::for_part_units(
          *router_, todo.size(), [&](std::uint64_t i) { return bucket_key(name_, bucket_of(i)); },
          operation, Work::write,
          [&](std::uint64_t first, std::span<const std::string> keys, CommandBuffer& buffer) {
            buffer.begin(5 + 2 * keys.size() + (counted_by_script ? 1 : 0));
            buffer.arg(by_sha ? "EVALSHA" : "EVAL");
            buffer.arg(by_sha ? std::string_view(sha) : script);
            buffer.arg(std::uint64_t{keys.size() + (counted_by_script ? 1 : 0)});
            for (const std::string& key : keys) buffer.arg(key);
            if (counted_by_script) buffer.arg(meta);
            buffer.arg(seal);
            buffer.arg(counted_by_script ? "1" : "0");
            for (std::size_t k = 0; k < keys.size(); ++k)
              buffer.arg(order[todo[first + k]]->second);
            return std::size_t{1};
          },
          [&](std::uint64_t first, std::size_t size, Replies replies) {
            const redisReply& reply = *replies[0];
            if (by_sha && redis::is_error(reply) && redis::text_of(reply).starts_with("NOSCRIPT")) {
              for (std::uint64_t i = first; i < first + size; ++i) unknown.push_back(todo[i]);
              return;
            }
            if (redis::is_error(reply)) {
              check_script_error(reply, operation,
                                 [&](std::uint64_t k) { return bucket_of(first + k - 1); });
            }
            std::vector<std::uint64_t> buckets(size);
            for (std::size_t k = 0; k < size; ++k) buckets[k] = bucket_of(first + k);
            on_reply(std::span<const std::uint64_t>(buckets), reply);
          });
      todo = std::move(unknown);
      if (todo.empty()) break;
    }
  }

  // The SHA1 of `script`, from SCRIPT LOAD on every master (once per object and script).
  // Loaded on the metadata's node alone, the first add's calls to the other masters were all
  // sent before the first NOSCRIPT came back, and all went again as EVAL: in a 300k-item dedup
  // on 3 masters, a quarter of the add calls.
  const std::string& script_sha(std::string_view script, std::string& cache) {
    if (cache.empty()) {
      redis::for_each_master(*router_, [&](std::uint16_t slot) {
        const Reply reply = router_->run(slot, {"SCRIPT", "LOAD", script});
        router_->expect(*reply, REDIS_REPLY_STRING, "SCRIPT LOAD");
        cache = redis::text_of(*reply);
      });
    }
    return cache;
  }

  // The tags a bucket's GET reply holds, after checking it: a missing or unsealed bucket (lost)
  // or one that is not whole tags (damaged) is an error naming it.
  [[nodiscard]] std::vector<std::uint64_t> tags_in(std::uint64_t bucket,
                                                   const redisReply& reply) const {
    std::vector<std::uint64_t> tags;
    if (reply.type == REDIS_REPLY_NIL) {
      if (seal_ != 0) lost(bucket, "is missing", "GET");
      return tags;  // version 1: an empty bucket
    }
    router_->expect(reply, REDIS_REPLY_STRING, "GET");
    if (seal_ != 0 && reply.len % kTagBytes == 0) lost(bucket, kUnsealed, "GET");
    if (reply.len % kTagBytes != seal_) {
      damaged(bucket, "of " + std::to_string(reply.len) + " bytes", "GET");
    }
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(reply.str);
    for (std::size_t at = seal_; at < reply.len; at += kTagBytes) {
      std::uint64_t tag = 0;
      for (std::size_t b = kTagBytes; b-- > 0;) tag = (tag << 8) | bytes[at + b];
      tags.push_back(tag);
    }
    return tags;
  }

  [[nodiscard]] Place place_of(std::uint64_t f) const {
    return {bucket_bits_ == 0 ? 0 : f >> (64 - bucket_bits_), f & kTagMask};
  }

  std::unique_ptr<Router> router_;
  std::string name_;
  unsigned bucket_bits_;
  std::uint64_t seal_;  // bytes before a bucket's tags: 1 from version 2 on
  std::uint64_t filter_id_;
  std::string add_script_sha_;
  std::string remove_script_sha_;
};

// The set's metadata; nullopt if there is none. A key of another type, or a hash that is not
// an exact set's (another program's, or the metadata of a filter named NAME:exact), is a
// FormatError naming it.
std::optional<redis::ExactMetadata> read_stored(Router& router, const std::string& name) {
  const auto fields = redis::read_metadata(router, meta_key(name), "exact set");
  if (!fields) return std::nullopt;
  return redis::parse_exact_metadata(*fields);
}

}  // namespace

std::unique_ptr<ExactSet> create_redis_exact_set(const RedisEndpoint& endpoint,
                                                 const std::string& name,
                                                 std::uint64_t expected_items, bool overwrite,
                                                 std::uint64_t filter_id) {
  redis::validate_filter_name(name);
  if (overwrite && redis_exact_set_exists(endpoint, name)) drop_redis_exact_set(endpoint, name);
  redis::ExactMetadata metadata;
  while (metadata.bucket_bits < redis::kMaxBucketBits &&
         (std::uint64_t{kTagsPerBucket} << metadata.bucket_bits) < expected_items) {
    ++metadata.bucket_bits;
  }
  metadata.claimed_unix_ns = redis::unix_now_ns();
  metadata.filter_id = filter_id;
  auto router = redis::make_router(endpoint);
  const std::string meta = meta_key(name);
  const auto exists = [&] {
    return FilterExists("exact set '" + meta + "' on redis " + endpoint.describe() +
                        " already exists (use --force to replace it)");
  };
  // A key that is not an exact set is reported as such (read_stored throws), never written to.
  if (read_stored(*router, name)) throw exists();
  if (!redis::claim(*router, meta, redis::exact_claim_fields(metadata))) {
    (void)read_stored(*router, name);  // throws if what appeared is not an exact set
    throw exists();
  }
  redis::make_parts(*router, buckets_of(name, metadata.bucket_bits, 1), meta, "exact set");
  redis::mark_ready(*router, meta, {});
  return std::make_unique<RedisExactSet>(std::move(router), name, metadata);
}

std::unique_ptr<ExactSet> open_redis_exact_set(const RedisEndpoint& endpoint,
                                               const std::string& name,
                                               std::chrono::milliseconds wait_for_creator) {
  redis::validate_filter_name(name);
  auto router = redis::make_router(endpoint);
  // A creator that won a race may still be sealing the buckets (~1 s per million).
  const auto fields = redis::read_ready(*router, meta_key(name), redis::kExactFormat, "exact set",
                                        redis::kExactVersion, wait_for_creator);
  if (!fields) {
    throw NotFound("filter '" + name + "' on redis " + endpoint.describe() + " has no exact set: " +
                   how_to_get_exact_set(FilterContents::unknown, true, name));
  }
  return std::make_unique<RedisExactSet>(std::move(router), name,
                                         redis::parse_exact_metadata(*fields));
}

bool redis_exact_set_exists(const RedisEndpoint& endpoint, const std::string& name) {
  // Only an exact set's metadata counts: a filter named NAME:exact, or another program's key,
  // is not filter NAME's companion (and must not stop NAME from being written or dropped).
  auto router = redis::make_router(endpoint);
  const std::string meta = meta_key(name);
  const std::uint16_t slot = slot_of(meta);
  if (redis::text_of(*router->run(slot, {"TYPE", meta}, OnLostNode::retry)) != "hash") {
    return false;
  }
  const auto format = router->run(slot, {"HGET", meta, "format"}, OnLostNode::retry);
  return format->type == REDIS_REPLY_STRING && redis::text_of(*format) == redis::kExactFormat;
}

void drop_redis_exact_set(const RedisEndpoint& endpoint, const std::string& name) {
  auto router = redis::make_router(endpoint);
  const auto stored = read_stored(*router, name);
  if (!stored) {
    throw NotFound("no exact set '" + meta_key(name) + "' on redis " + endpoint.describe());
  }
  redis::drop_object(*router,
                     buckets_of(name, stored->bucket_bits, redis::seal_bytes(stored->version)),
                     stored->ready, meta_key(name));
}

}  // namespace redbloom
