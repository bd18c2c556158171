#include "object.hpp"

#include <cstdio>
#include <random>
#include <thread>

#include "redbloom/error.hpp"
#include "redbloom/stream.hpp"

namespace redbloom::redis {
namespace {

// Parts per Router::pipeline call: a cluster keeps routing state per unit, which for all 2^24
// buckets of the largest exact set at once would take about a gigabyte.
constexpr std::uint64_t kPartsPerPipeline = std::uint64_t{1} << 16;

// MAKE KEY LENGTH: a zeroed string of LENGTH bytes at KEY, only if no key is there (1 if made).
// One script, so that a key appearing between a check and the write is never overwritten.
constexpr std::string_view kMakePart =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end "
    "redis.call('SETRANGE', KEYS[1], tonumber(ARGV[1]) - 1, '\\0') return 1";

// UNLINK KEY if it is still exactly as a creation made it: a string of LENGTH zero bytes (of
// any length when LENGTH is 0: creations that did not record it).
constexpr std::string_view kUnlinkIfAsCreated =
    "local n = tonumber(ARGV[1]) "
    "if redis.call('TYPE', KEYS[1]).ok == 'string' and "
    "(n == 0 or redis.call('STRLEN', KEYS[1]) == n) and "
    "redis.call('BITCOUNT', KEYS[1]) == 0 then return redis.call('UNLINK', KEYS[1]) end return 0";

}  // namespace

void for_part_units(
    Router& router, std::uint64_t count, const std::function<std::string(std::uint64_t)>& key_of,
    std::string_view operation, Work work,
    const std::function<std::size_t(std::uint64_t, std::span<const std::string>, CommandBuffer&)>&
        write,
    const std::function<void(std::uint64_t, std::size_t, Replies)>& check, std::uint64_t per_unit) {
  if (router.is_cluster()) per_unit = 1;
  const bool writes = work != Work::read;
  const OnLostNode lost = work == Work::write ? OnLostNode::fail : OnLostNode::retry;
  std::vector<std::string> keys;
  for (std::uint64_t from = 0; from < count; from += kPartsPerPipeline) {
    const std::uint64_t n = std::min(count - from, kPartsPerPipeline);
    keys.clear();
    for (std::uint64_t i = 0; i < n; ++i) keys.push_back(key_of(from + i));
    const auto size_of = [&](std::size_t u) {
      return static_cast<std::size_t>(std::min(n, (u + 1) * per_unit) - u * per_unit);
    };
    router.pipeline(
        static_cast<std::size_t>((n + per_unit - 1) / per_unit), operation,
        [&](std::size_t u) {
          return UnitRoute{slot_of(keys[u * per_unit]), u, writes, {}};
        },
        [&](std::size_t u, CommandBuffer& buffer) {
          return write(from + u * per_unit,
                       std::span<const std::string>(keys).subspan(u * per_unit, size_of(u)),
                       buffer);
        },
        [&](std::size_t u, Replies replies) { check(from + u * per_unit, size_of(u), replies); },
        lost);
  }
}

void for_each_part(
    Router& router, std::uint64_t count, const std::function<std::string(std::uint64_t)>& key_of,
    std::string_view operation, Work work,
    const std::function<void(std::uint64_t, const std::string&, CommandBuffer&)>& write,
    const std::function<void(std::uint64_t, const redisReply&)>& check, std::uint64_t per_unit) {
  for_part_units(
      router, count, key_of, operation, work,
      [&](std::uint64_t first, std::span<const std::string> keys, CommandBuffer& buffer) {
        for (std::size_t k = 0; k < keys.size(); ++k) write(first + k, keys[k], buffer);
        return keys.size();
      },
      [&](std::uint64_t first, std::size_t, Replies replies) {
        for (std::size_t k = 0; k < replies.size(); ++k) check(first + k, *replies[k]);
      },
      per_unit);
}

std::vector<std::uint32_t> spread_tags(const Router& router, const std::string& name,
                                       std::uint64_t partitions) {
  constexpr std::uint32_t kTries = 1u << 16;
  std::vector<std::uint32_t> salts(partitions, 0);
  const std::size_t masters = router.masters();
  if (masters <= 1) return salts;
  for (std::uint64_t p = 0; p < partitions; ++p) {
    for (std::uint32_t salt = 0; salt < kTries; ++salt) {
      if (router.master_of(slot_of(partition_key(name, p, salt))) == p % masters) {
        salts[p] = salt;
        break;
      }
    }
  }
  return salts;
}

std::string describe_key(const Router& router, std::string_view key) {
  return "key '" + std::string(key) + "' on redis " + router.endpoint().describe();
}

std::uint64_t unix_now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

namespace {

// The metadata from HGETALL's reply (read_metadata).
std::optional<Fields> fields_of(Router& router, const std::string& key, std::string_view noun,
                                const redisReply& reply) {
  const std::uint16_t slot = slot_of(key);
  const std::string what = describe_key(router, key);
  if (is_error(reply)) {
    if (text_of(reply).starts_with("WRONGTYPE")) {
      throw FormatError(what + " holds a " +
                        std::string(text_of(*router.run(slot, {"TYPE", key}, OnLostNode::retry))) +
                        ", not a redbloom " + std::string(noun));
    }
    router.fail("HGETALL", text_of(reply));
  }
  router.expect(reply, REDIS_REPLY_ARRAY, "HGETALL");
  if (reply.elements == 0) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 0; i + 1 < reply.elements; i += 2) {
    pairs.emplace_back(text_of(*reply.element[i]), text_of(*reply.element[i + 1]));
  }
  return Fields(std::move(pairs), what);
}

}  // namespace

std::optional<Fields> read_metadata(Router& router, const std::string& key, std::string_view noun) {
  const Reply reply = router.call(slot_of(key), {"HGETALL", key}, OnLostNode::retry);
  return fields_of(router, key, noun, *reply);
}

std::optional<Fields> read_metadata_and_module(Router& router, const std::string& key,
                                               std::string_view noun,
                                               std::span<const std::string> strlen_keys,
                                               KeyLengths* lengths) {
  std::optional<Fields> fields;
  router.pipeline(
      1, "HGETALL",
      [&](std::size_t unit) {
        return UnitRoute{slot_of(key), unit, false, {}};
      },
      [&](std::size_t, CommandBuffer& buffer) {
        buffer.command({"HGETALL", key});
        buffer.command({"RB.VERSION"});
        for (const std::string& k : strlen_keys) buffer.command({"STRLEN", k});
        return 2 + strlen_keys.size();
      },
      [&](std::size_t, Replies replies) {
        router.remember_module_version(*replies[1]);
        fields = fields_of(router, key, noun, *replies[0]);
        for (std::size_t i = 0; i < strlen_keys.size() && lengths != nullptr; ++i) {
          const redisReply& r = *replies[2 + i];
          if (r.type == REDIS_REPLY_INTEGER && r.integer > 0) {
            (*lengths)[strlen_keys[i]] = static_cast<std::uint64_t>(r.integer);
          }
        }
      },
      OnLostNode::retry);
  return fields;
}

std::string creation_age(const Fields& fields) {
  if (!fields.has("claimed_unix_ns")) return "";
  const std::uint64_t claimed = fields.number("claimed_unix_ns");
  const std::uint64_t now = unix_now_ns();
  const long long seconds =
      now > claimed ? static_cast<long long>((now - claimed) / 1000000000u) : 0;
  return " (its creation started " + std::to_string(seconds) + " s ago)";
}

bool claim(Router& router, std::string_view key,
           const std::vector<std::pair<std::string, std::string>>& fields) {
  static constexpr std::string_view kClaim =
      "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end "
      "redis.call('HSET', KEYS[1], unpack(ARGV)) return 1";
  std::vector<std::string_view> args{"EVAL", kClaim, "1", key};
  for (const auto& [field, value] : fields) {
    args.push_back(field);
    args.push_back(value);
  }
  Reply reply = router.call(slot_of(key), args);
  router.expect(*reply, REDIS_REPLY_INTEGER, "EVAL (claiming the name)");
  return reply->integer == 1;
}

void make_parts(Router& router, const PartSet& parts, const std::string& meta_key,
                std::string_view noun) {
  const std::string length = std::to_string(parts.created_length);
  std::vector<std::uint64_t> made;
  std::string problem;
  bool taken = false;  // a key was already there (else the server refused)
  for_each_part(
      router, parts.count, parts.key_of, "creating", Work::write,
      [&](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
        // A one-byte part (a bare seal) the cheaper way; the same rule.
        if (parts.created_length == 1) {
          buffer.command({"SET", key, std::string_view("\0", 1), "NX"});
        } else {
          buffer.command({"EVAL", kMakePart, "1", key, length});
        }
      },
      [&](std::uint64_t i, const redisReply& reply) {
        const bool ok = reply.type == REDIS_REPLY_STATUS ||
                        (reply.type == REDIS_REPLY_INTEGER && reply.integer == 1);
        if (ok) {
          made.push_back(i);
        } else if (problem.empty()) {
          taken = !is_error(reply);
          problem = taken ? "key '" + parts.key_of(i) + "' already exists; not overwriting it " +
                                "to create the " + std::string(noun)
                          : parts.key_of(i) + ": " + std::string(text_of(reply));
        }
      });
  if (problem.empty()) return;
  std::string undone = "nothing of the " + std::string(noun) + " was kept";
  try {
    for_each_part(
        router, made.size(), [&](std::uint64_t i) { return parts.key_of(made[i]); }, "UNLINK",
        Work::idempotent_write,
        [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          buffer.command({"UNLINK", key});
        },
        [&](std::uint64_t, const redisReply& reply) {
          router.expect(reply, REDIS_REPLY_INTEGER, "UNLINK");
        });
    router.run(slot_of(meta_key), {"UNLINK", meta_key}, OnLostNode::retry);
  } catch (const Error& e) {
    undone = "removing what was made failed too (" + std::string(e.what()) + "): drop the " +
             std::string(noun);
  }
  if (taken) throw FilterExists(router.message("create", problem + "; " + undone));
  router.fail("create", problem + "; " + undone);
}

void mark_ready(Router& router, const std::string& meta_key,
                std::vector<std::pair<std::string, std::string>> fields) {
  fields.emplace_back("state", "ready");
  std::vector<std::string_view> args{"HSET", meta_key};
  for (const auto& [field, value] : fields) {
    args.push_back(field);
    args.push_back(value);
  }
  Reply reply = router.call(slot_of(meta_key), args);
  router.expect(*reply, REDIS_REPLY_INTEGER, "HSET");
}

std::optional<Fields> read_ready(Router& router, const std::string& key, std::string_view format,
                                 std::string_view noun, std::uint32_t newest,
                                 std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    std::optional<Fields> fields = read_metadata(router, key, noun);
    if (!fields) return std::nullopt;
    fields->check_format(format, noun, newest);
    if (fields->ready()) return fields;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw IncompleteFilter(
          describe_key(router, key) + ": the " + std::string(noun) + " is still being created" +
          creation_age(*fields) + " after waiting " +
          format_duration(static_cast<std::uint64_t>(std::chrono::nanoseconds(wait).count())) +
          " for it; if no process is creating it any more (its creator "
          "died), drop it and create it again");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void drop_object(Router& router, const PartSet& parts, bool finished, const std::string& meta_key) {
  const std::string length = std::to_string(parts.created_length);
  for_each_part(
      router, parts.count, parts.key_of, "UNLINK", Work::idempotent_write,
      [&](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
        if (finished) {
          buffer.command({"UNLINK", key});
        } else {
          buffer.command({"EVAL", kUnlinkIfAsCreated, "1", key, length});
        }
      },
      [&](std::uint64_t, const redisReply& reply) {
        router.expect(reply, REDIS_REPLY_INTEGER, "UNLINK");
      });
  router.run(slot_of(meta_key), {"UNLINK", meta_key}, OnLostNode::retry);
}

std::string random_set_id() {
  std::random_device device;
  const std::uint64_t value = (std::uint64_t{device()} << 32) ^ device();
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace redbloom::redis
