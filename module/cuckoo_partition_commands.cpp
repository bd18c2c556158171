#include "cuckoo_partition_commands.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "command_support.hpp"
#include "command_table.hpp"
#include "core/cuckoo_chain.hpp"
#include "core/cuckoo_table.hpp"
#include "redbloom/cuckoo.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom::module {

namespace {

// RB.CUCKOO numkeys (roster link0 .. link[L-1]) x partitions mode L L x (buckets bits)
//           (partition-index lo-top hi-top) x items
struct Request {
  int numkeys = 0;
  char mode = 'c';
  std::uint32_t links = 0;  // L
  std::vector<cuckoo_table::Shape> shapes;
  std::uint32_t partitions = 0;
  struct Item {
    std::uint32_t partition;
    ItemHash hash;  // the two words where place_of reads them
  };
  std::vector<Item> items;
};

// One partition's keys, opened, and its tables over their bytes.
struct Partition {
  std::vector<std::unique_ptr<OpenKey>> keys;  // the roster, then the links held
  std::uint8_t* roster = nullptr;
  std::vector<cuckoo_table::Table> tables;
  bool opened = false;
};

bool bad(RedisModuleCtx* ctx, const char* what) {
  reply_error(ctx, (std::string("ERR bad RB.CUCKOO arguments: ") + what).c_str());
  return false;
}

bool parse(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, Request& r) {
  const auto numkeys = integer(argv[1]);
  if (!numkeys || *numkeys < 2 || *numkeys > argc - 4) return bad(ctx, "numkeys");
  r.numkeys = static_cast<int>(*numkeys);
  int at = 2 + r.numkeys;
  const std::string_view mode = text(argv[at]);
  if (mode.size() != 1 || std::string_view("aicrkn").find(mode[0]) == std::string_view::npos) {
    return bad(ctx, "mode is a, i, c, r, k or n");
  }
  r.mode = mode[0];
  const auto links = integer(argv[at + 1]);
  if (!links || *links < 1 || *links > kMaxCuckooLinks || r.numkeys % (*links + 1) != 0) {
    return bad(ctx, "L links, and L + 1 keys a partition");
  }
  r.links = static_cast<std::uint32_t>(*links);
  r.partitions = static_cast<std::uint32_t>(r.numkeys / (*links + 1));
  at += 2;
  if (argc < at + 2 * static_cast<int>(r.links) || (argc - at - 2 * r.links) % 3 != 0) {
    return bad(ctx, "L x (buckets bits), then three numbers an item");
  }
  for (std::uint32_t l = 0; l < r.links; ++l, at += 2) {
    const auto buckets = integer(argv[at]);
    const auto bits = integer(argv[at + 1]);
    if (!buckets || !bits || *buckets < 1 ||
        static_cast<std::uint64_t>(*buckets) > cuckoo_table::kMaxBuckets ||
        *bits < cuckoo_table::kMinFingerprintBits || *bits > cuckoo_table::kMaxFingerprintBits) {
      return bad(ctx, "a link is buckets (1 to 2^32) and fingerprint bits (4 to 32)");
    }
    r.shapes.push_back({static_cast<std::uint64_t>(*buckets), static_cast<std::uint32_t>(*bits)});
    if (r.shapes.back().bytes() * 8 > kRedisMaxStringBits) {
      return bad(ctx, "a link would pass Redis's 512 MiB string");
    }
  }
  for (; at < argc; at += 3) {
    const auto partition = integer(argv[at]);
    const auto lo = integer(argv[at + 1]);
    const auto hi = integer(argv[at + 2]);
    if (!partition || !lo || !hi || *partition < 0 || *partition >= r.partitions || *lo < 0 ||
        *lo > UINT32_MAX || *hi < 0 || *hi > UINT32_MAX) {
      return bad(ctx, "an item is its partition's index and two 32-bit words");
    }
    r.items.push_back(
        {static_cast<std::uint32_t>(*partition),
         {static_cast<std::uint64_t>(*lo) << 32, static_cast<std::uint64_t>(*hi) << 32}});
  }
  // One key under two handles would be written through one while the other points at its old
  // bytes.
  std::vector<std::string_view> names;
  for (int k = 0; k < r.numkeys; ++k) names.push_back(text(argv[2 + k]));
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
    return bad(ctx, "a key is named twice");
  }
  return true;
}

bool writes(char mode) noexcept {
  return mode != 'c' && mode != 'n';
}

bool lost(RedisModuleCtx* ctx, RedisModuleString* key) {
  reply_error(ctx, (std::string("REDBLOOMCUCKOO lost ") + std::string(text(key))).c_str());
  return false;
}

// Opens partition p's roster and the links it counts, each checked (as the script's links_of);
// false after an error reply.
bool open_partition(RedisModuleCtx* ctx, RedisModuleString** argv, const Request& r,
                    std::uint32_t p, Partition& out) {
  const int mode =
      r.mode == 'a' || r.mode == 'r' ? module_api::kRead | module_api::kWrite : module_api::kRead;
  RedisModuleString** keys = argv + 2 + p * (r.links + 1);
  out.keys.push_back(std::make_unique<OpenKey>(ctx, keys[0], mode));
  RedisModuleKey* roster = out.keys.back()->get();
  if (RedisModule_KeyType(roster) != module_api::kKeyTypeString ||
      RedisModule_ValueLength(roster) != 1) {
    return lost(ctx, keys[0]);
  }
  std::size_t length = 0;
  out.roster = reinterpret_cast<std::uint8_t*>(RedisModule_StringDMA(roster, &length, mode));
  const std::uint32_t held = std::uint32_t{out.roster[0]} + 1;
  if (held > r.links) return lost(ctx, keys[0]);
  for (std::uint32_t l = 0; l < held; ++l) {
    out.keys.push_back(std::make_unique<OpenKey>(ctx, keys[1 + l], mode));
    RedisModuleKey* link = out.keys.back()->get();
    if (RedisModule_KeyType(link) != module_api::kKeyTypeString ||
        RedisModule_ValueLength(link) != r.shapes[l].bytes()) {
      return lost(ctx, keys[1 + l]);
    }
    auto* bytes = reinterpret_cast<std::uint8_t*>(RedisModule_StringDMA(link, &length, mode));
    out.tables.emplace_back(r.shapes[l], std::span<std::uint8_t>(bytes, length));
  }
  if (held < r.links) {
    // The next link is made by the add that needs it: nothing may be there yet.
    const OpenKey next(ctx, keys[1 + held], module_api::kRead);
    if (!next.empty()) return lost(ctx, keys[1 + held]);
  }
  out.opened = true;
  return true;
}

// Grows partition p by a zeroed link; false when it holds L links already.
bool grow(RedisModuleCtx* ctx, RedisModuleString** argv, const Request& r, std::uint32_t p,
          Partition& part) {
  const auto held = static_cast<std::uint32_t>(part.tables.size());
  if (held >= r.links) return false;
  RedisModuleString* name = argv[2 + p * (r.links + 1) + 1 + held];
  part.keys.push_back(std::make_unique<OpenKey>(ctx, name, module_api::kRead | module_api::kWrite));
  RedisModuleKey* link = part.keys.back()->get();
  const std::size_t bytes = r.shapes[held].bytes();
  if (RedisModule_StringTruncate(link, bytes) != module_api::kOk) {
    throw std::runtime_error("cannot grow a cuckoo filter's link");
  }
  std::size_t length = 0;
  auto* at = reinterpret_cast<std::uint8_t*>(
      RedisModule_StringDMA(link, &length, module_api::kRead | module_api::kWrite));
  part.tables.emplace_back(r.shapes[held], std::span<std::uint8_t>(at, length));
  part.roster[0] = static_cast<std::uint8_t>(held);
  return true;
}

int cuckoo(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (RedisModule_IsKeysPositionRequest(ctx)) {
    const auto numkeys = argc >= 2 ? integer(argv[1]) : std::nullopt;
    if (numkeys && *numkeys >= 1 && *numkeys <= argc - 2) {
      // Lookups and counts only read their keys: a user who may only read them may run those.
      const std::string_view mode = *numkeys + 2 < argc ? text(argv[2 + *numkeys]) : "";
      name_keys(ctx, 2, static_cast<int>(*numkeys), mode.size() == 1 && !writes(mode[0]));
    }
    return module_api::kOk;
  }
  if (argc < 6) return RedisModule_WrongArity(ctx);
  Request r;
  if (!parse(ctx, argv, argc, r)) return module_api::kOk;
  // Every partition of the call is checked before anything is written.
  std::vector<Partition> parts(r.partitions);
  for (const Request::Item& item : r.items) {
    Partition& part = parts[item.partition];
    if (!part.opened && !open_partition(ctx, argv, r, item.partition, part)) {
      return module_api::kOk;
    }
  }
  std::vector<long long> answers;
  answers.reserve(r.items.size());
  bool full = false;
  for (const Request::Item& item : r.items) {
    Partition& part = parts[item.partition];
    const std::span<cuckoo_table::Table> tables(part.tables);
    if (r.mode == 'c') {
      answers.push_back(cuckoo_chain::contains(tables, item.hash) ? 1 : 0);
    } else if (r.mode == 'n') {
      answers.push_back(cuckoo_chain::count(tables, item.hash));
    } else if (r.mode == 'r') {
      answers.push_back(cuckoo_chain::remove(tables, item.hash) ? 1 : 0);
    } else if (r.mode == 'k') {
      answers.push_back(
          cuckoo_chain::remove_known(tables, item.hash) == cuckoo_chain::RemoveKnown::removed ? 1
                                                                                              : 0);
    } else {
      const auto store = [&] {
        std::span<cuckoo_table::Table> now(part.tables);
        return r.mode == 'a' ? cuckoo_chain::add(now, item.hash)
                             : cuckoo_chain::insert(now, item.hash);
      };
      cuckoo_chain::Add result = store();
      while (result == cuckoo_chain::Add::full && grow(ctx, argv, r, item.partition, part)) {
        result = store();
      }
      if (result == cuckoo_chain::Add::full) {
        full = true;
        break;
      }
      answers.push_back(result == cuckoo_chain::Add::added ? 1 : 0);
    }
  }
  // Deterministic (kicks follow the tables' state): replicas and the AOF run it as it came.
  if (writes(r.mode)) RedisModule_ReplicateVerbatim(ctx);
  RedisModule_ReplyWithArray(ctx, static_cast<long>(answers.size() + 1));
  RedisModule_ReplyWithLongLong(ctx, full ? 1 : 0);
  for (const long long answer : answers) RedisModule_ReplyWithLongLong(ctx, answer);
  return module_api::kOk;
}

}  // namespace

bool register_cuckoo_partition_commands(RedisModuleCtx* ctx) noexcept {
  // The keys follow numkeys as EVAL's do: getkeys-api names them for cluster routing.
  static const Command commands[] = {
      counted<cuckoo>("rb.cuckoo", "write deny-oom getkeys-api", 0, 0, 0),
  };
  return register_commands(ctx, commands);
}

}  // namespace redbloom::module
