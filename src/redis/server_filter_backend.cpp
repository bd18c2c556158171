#include "server_filter_backend.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "core/redis_format.hpp"
#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"
#include "router.hpp"

namespace redbloom {

using redis::is_error;
using redis::OnLostNode;
using redis::Reply;
using redis::text_of;

namespace {

// The engines whose filters speak BF.*: their key TYPE and whose format it is. One type can be
// served by more than one module (redbloom.so also serves RedisBloom's), so `info` names the
// module from MODULE LIST rather than from the type.
struct Engine {
  std::string_view type;
  std::string_view maker;
};
constexpr Engine kEngines[] = {
    {"redbloomF", "redbloom.so"},
    {"MBbloom--", "RedisBloom"},
    {"bloomfltr", "valkey-bloom"},
};
// MODULE LIST names of the modules that serve BF.*: redbloom.so, RedisBloom and valkey-bloom.
constexpr std::string_view kBloomModules[] = {"redbloom", "bf", "bloom"};

const Engine* engine_of(std::string_view type) {
  for (const Engine& engine : kEngines) {
    if (engine.type == type) return &engine;
  }
  return nullptr;
}

std::string kind_text(const Engine& engine) {
  return std::string(engine.maker) + "'s BF filter (TYPE " + std::string(engine.type) + ")";
}

// Items per BF.INSERT / BF.MEXISTS: few enough to keep one command short on the server.
constexpr std::size_t kCommandItems = 1000;

std::uint64_t number_of(const redisReply& reply) {
  if (reply.type == REDIS_REPLY_INTEGER) return static_cast<std::uint64_t>(reply.integer);
  std::uint64_t value = 0;
  const std::string_view text = text_of(reply);
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

double real_of(const redisReply& reply) {
  if (reply.type == REDIS_REPLY_INTEGER) return static_cast<double>(reply.integer);
  return std::strtod(std::string(text_of(reply)).c_str(), nullptr);
}

std::size_t units_for(std::size_t items) {
  return (items + kCommandItems - 1) / kCommandItems;
}

// The items before the first unit not yet answered: units of one key run in order on one node,
// but a unit redirected while its slot moves is answered after later ones.
std::size_t answered_prefix(const std::vector<std::uint8_t>& answered, std::size_t items) {
  const auto gap = std::ranges::find(answered, std::uint8_t{0});
  const auto units = static_cast<std::size_t>(gap - answered.begin());
  return std::min(items, units * kCommandItems);
}

// Items committed when item `i` of `unit` failed: those before it, if every earlier unit was
// answered.
std::size_t committed_before(const std::vector<std::uint8_t>& answered, std::size_t unit,
                             std::size_t i) {
  const std::size_t first = unit * kCommandItems;
  const std::size_t prefix = answered_prefix(answered, first + kCommandItems);
  return prefix >= first ? first + i : prefix;
}

}  // namespace

struct ServerFilterBackend::State {
  State(std::unique_ptr<redis::Router> connected, std::string filter_name)
      : router(std::move(connected)), name(std::move(filter_name)), slot(redis::slot_of(name)) {}

  std::unique_ptr<redis::Router> router;
  std::string name;
  std::uint16_t slot;
  const Engine* engine = nullptr;
  FilterShape shape;  // what BF.INFO said at open
  // The first non-zero RB.FILTERID seen: the filter this backend has open (0: none seen yet).
  mutable std::atomic<std::uint64_t> filter_id{0};

  [[nodiscard]] std::size_t first_of(std::size_t unit) const { return unit * kCommandItems; }
  [[nodiscard]] static std::size_t count_of(std::size_t unit, std::size_t items) {
    return std::min(kCommandItems, items - unit * kCommandItems);
  }
  [[nodiscard]] redis::UnitRoute route(std::size_t unit, bool writes) const {
    return redis::UnitRoute{slot, unit, writes, {}};
  }
  // "BF.INSERT NAME NOCREATE ITEMS ..." or "BF.MEXISTS NAME ..." for one unit's items.
  void encode(redis::CommandBuffer& buffer, std::span<const std::string_view> head,
              std::span<const std::string_view> items) const {
    buffer.begin(head.size() + items.size());
    for (std::string_view word : head) buffer.arg(word);
    for (std::string_view item : items) buffer.arg(item);
  }

  [[nodiscard]] std::string location() const {
    return "redis " + router->endpoint().describe() + " filter " + name + " (" +
           kind_text(*engine) + ")";
  }
  // The key still holds such a filter (`type`: TYPE's reply): lookups of a missing key answer 0,
  // so a filter deleted or replaced under the backend is reported, never answered as empty.
  void check_still_there(const redisReply& type, std::string_view operation) const {
    if (is_error(type)) router->fail("TYPE", text_of(type));
    if (text_of(type) != engine->type) {
      throw FormatError(router->message(
          operation, "filter " + name + " is gone (the key now holds " +
                         std::string(text_of(type)) + ", not " + kind_text(*engine) +
                         "): deleted or replaced while in use"));
    }
  }
  // The key holds the filter this backend opened, not one made again there since (DEL and
  // BF.RESERVE, or an add after an eviction), which would read as empty. `id` is RB.FILTERID's
  // reply: redbloom.so's alone gives one; an error (another engine) or nil tells nothing, and
  // 0 is a filter the server loaded (a restart, a failover), which may be the same one.
  void check_same_filter(const redisReply& id, std::string_view operation) const {
    if (id.type != REDIS_REPLY_INTEGER || id.integer <= 0) return;
    const auto seen = static_cast<std::uint64_t>(id.integer);
    std::uint64_t known = 0;
    if (filter_id.compare_exchange_strong(known, seen) || known == seen) return;
    throw FormatError(router->message(
        operation, "filter " + name + " is gone: the key holds a new " + kind_text(*engine) +
                       ", made again (deleted, or evicted, then made by a command) while in " +
                       "use; the items added before are not in it"));
  }
};

std::optional<std::string> ServerFilterBackend::kind_of_type(std::string_view type) {
  const Engine* engine = engine_of(type);
  if (engine == nullptr) return std::nullopt;
  return kind_text(*engine);
}

std::unique_ptr<ServerFilterBackend> ServerFilterBackend::open_if_server_filter(
    const RedisEndpoint& endpoint, const std::string& name) {
  auto router = redis::make_router(endpoint);
  const std::uint16_t slot = redis::slot_of(name);
  std::string type;
  ServerFilterInfo info;
  double error_rate = 0;
  router->pipeline(
      1, "TYPE",
      [&](std::size_t unit) {
        return redis::UnitRoute{slot, unit, false, {}};
      },
      [&](std::size_t, redis::CommandBuffer& buffer) {
        buffer.command({"TYPE", name});
        buffer.command({"BF.INFO", name});
        return std::size_t{2};
      },
      [&](std::size_t, redis::Replies replies) {
        if (is_error(*replies[0])) router->fail("TYPE", text_of(*replies[0]));
        type = text_of(*replies[0]);
        if (engine_of(type) != nullptr) info = info_of(type, *replies[1], &error_rate);
      },
      OnLostNode::retry);
  if (engine_of(type) == nullptr) return nullptr;
  return open(std::move(router), name, info, error_rate);
}

std::unique_ptr<ServerFilterBackend> ServerFilterBackend::open(
    std::unique_ptr<redis::Router> router, const std::string& name, const ServerFilterInfo& info,
    double error_rate) {
  auto state = std::make_unique<State>(std::move(router), name);
  state->engine = engine_of(info.type);
  if (state->engine == nullptr) {
    throw InvalidArgument("TYPE " + info.type + " is no Bloom engine's filter");
  }
  state->shape.server_filter = info;
  state->shape.params.capacity = info.capacity;
  state->shape.params.error_rate = error_rate;
  return std::unique_ptr<ServerFilterBackend>(new ServerFilterBackend(std::move(state)));
}

std::unique_ptr<ServerFilterBackend> ServerFilterBackend::reserve(
    const RedisEndpoint& endpoint, const std::string& name, const EngineFilterOptions& options) {
  check_engine_options(options);
  const auto router = redis::make_router(endpoint);
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.17g", options.error_rate);
  const std::string capacity = std::to_string(options.capacity);
  const std::string expansion = std::to_string(options.expansion);
  std::vector<std::string_view> args = {"BF.RESERVE", name, rate, capacity};
  if (options.expansion != 0) {
    args.push_back("EXPANSION");
    args.push_back(expansion);
  }
  if (options.nonscaling) args.push_back("NONSCALING");
  const Reply reply = router->call(redis::slot_of(name), args);
  if (is_error(*reply)) {
    const std::string_view why = text_of(*reply);
    const std::string where = router->endpoint().describe();
    if (why.find("exists") != std::string_view::npos) {
      throw FilterExists("filter " + name + " already exists on redis " + where + " (BF.RESERVE: " +
                         std::string(why) + "); use it as it is, or create it anew with --force");
    }
    if (why.find("unknown command") != std::string_view::npos) {
      throw InvalidArgument("redis " + where +
                            " has no Bloom engine of its own (BF.RESERVE: " + std::string(why) +
                            "): create a redbloom filter there instead (without the BF engine), "
                            "or load a module that provides BF.* (RedisBloom, valkey-bloom, "
                            "redbloom.so)");
    }
    if (why.rfind("NOPERM", 0) == 0 || why.rfind("WRONGTYPE", 0) == 0) {
      router->fail("BF.RESERVE", why);
    }
    throw InvalidArgument(router->message("BF.RESERVE", why) + " (capacity " + capacity +
                          ", error rate " + rate + ")");
  }
  auto backend = open_if_server_filter(endpoint, name);
  if (!backend) {
    throw StorageError("redis " + router->endpoint().describe() + ": BF.RESERVE " + name +
                       " answered OK but the key is not a Bloom filter of a known engine "
                       "(TYPE is none of redbloomF, MBbloom--, bloomfltr)");
  }
  FilterParams& params = backend->state_->shape.params;
  if (params.error_rate == 0) params.error_rate = options.error_rate;
  return backend;
}

bool ServerFilterBackend::drop_if_server_filter(const RedisEndpoint& endpoint,
                                                const std::string& name) {
  const auto backend = open_if_server_filter(endpoint, name);
  if (!backend) return false;
  State& s = *backend->state_;
  (void)s.router->run(s.slot, {"UNLINK", name});
  return true;
}

ServerFilterBackend::ServerFilterBackend(std::unique_ptr<State> state) : state_(std::move(state)) {}
ServerFilterBackend::~ServerFilterBackend() = default;

FilterShape ServerFilterBackend::shape() const {
  return state_->shape;
}

void ServerFilterBackend::add(std::span<const std::string_view> items,
                              std::span<std::uint8_t> newly_added) {
  State& s = *state_;
  static constexpr std::string_view kOperation = "BF.INSERT";
  const std::array<std::string_view, 4> head = {"BF.INSERT", s.name, "NOCREATE", "ITEMS"};
  std::vector<std::uint8_t> answered(units_for(items.size()), 0);
  try {
    s.router->pipeline(
        answered.size(), kOperation, [&](std::size_t unit) { return s.route(unit, true); },
        [&](std::size_t unit, redis::CommandBuffer& buffer) {
          s.encode(buffer, head, items.subspan(s.first_of(unit), s.count_of(unit, items.size())));
          return std::size_t{1};
        },
        [&](std::size_t unit, redis::Replies replies) {
          const std::size_t first = s.first_of(unit);
          const std::size_t count = s.count_of(unit, items.size());
          const redisReply& reply = *replies[0];
          if (is_error(reply)) {
            // Nothing of this command ran ("not found": the key was deleted).
            throw IncompleteWrite(
                s.router->message(kOperation, text_of(reply)) + " (" + s.location() + ")",
                answered_prefix(answered, items.size()));
          }
          s.router->expect(reply, REDIS_REPLY_ARRAY, kOperation);
          for (std::size_t i = 0; i < count; ++i) {
            const redisReply* answer = i < reply.elements ? reply.element[i] : nullptr;
            if (answer == nullptr || answer->type != REDIS_REPLY_INTEGER) {
              // The engine refused this item (a full non-scaling filter, its memory limit).
              const std::string why =
                  answer != nullptr ? std::string(text_of(*answer)) : "no answer for this item";
              throw CapacityExceeded(s.location() + " refused item " +
                                         std::to_string(first + i + 1) + " of the batch: " + why +
                                         "; the items before it were added",
                                     committed_before(answered, unit, i));
            }
            if (!newly_added.empty()) newly_added[first + i] = answer->integer == 1 ? 1 : 0;
          }
          answered[unit] = 1;
        },
        OnLostNode::fail);
  } catch (const IncompleteWrite&) {
    throw;
  } catch (const StorageError& e) {
    throw IncompleteWrite(
        std::string(e.what()) + "; later items may be partly written (adding them again is safe)",
        answered_prefix(answered, items.size()));
  }
}

void ServerFilterBackend::load(std::span<const std::string_view> items) {
  add(items, {});
}

void ServerFilterBackend::contains(std::span<const std::string_view> items,
                                   std::span<std::uint8_t> present) const {
  const State& s = *state_;
  static constexpr std::string_view kOperation = "BF.MEXISTS";
  const std::array<std::string_view, 2> head = {"BF.MEXISTS", s.name};
  const std::array<std::string_view, 2> type = {"TYPE", s.name};
  const std::array<std::string_view, 2> id = {"RB.FILTERID", s.name};
  s.router->pipeline(
      units_for(items.size()), kOperation, [&](std::size_t unit) { return s.route(unit, false); },
      [&](std::size_t unit, redis::CommandBuffer& buffer) {
        s.encode(buffer, head, items.subspan(s.first_of(unit), s.count_of(unit, items.size())));
        buffer.command(type);
        buffer.command(id);
        return std::size_t{3};
      },
      [&](std::size_t unit, redis::Replies replies) {
        const std::size_t first = s.first_of(unit);
        const std::size_t count = s.count_of(unit, items.size());
        const redisReply& reply = *replies[0];
        s.router->expect(reply, REDIS_REPLY_ARRAY, kOperation);
        if (reply.elements != count) {
          s.router->fail(kOperation, std::to_string(reply.elements) + " answers for " +
                                         std::to_string(count) + " items");
        }
        bool any_absent = false;
        for (std::size_t i = 0; i < count; ++i) {
          present[first + i] = number_of(*reply.element[i]) == 1 ? 1 : 0;
          any_absent |= present[first + i] == 0;
        }
        if (any_absent) s.check_still_there(*replies[1], kOperation);
        s.check_same_filter(*replies[2], kOperation);
      },
      OnLostNode::retry);
}

std::uint64_t ServerFilterBackend::count_set_bits() const {
  throw InvalidArgument(
      "filter " + state_->location() + " keeps its bits in the server's own " +
      "Bloom engine, not in redbloom's layout: counting its set bits (an exact " +
      "set beside it, a byte-for-byte copy) cannot be done on it (adds, lookups " +
      "and info work)");
}

std::optional<ServerFilterInfo> ServerFilterBackend::server_filter_info() const {
  const State& s = *state_;
  const Reply reply = s.router->call(s.slot, {"BF.INFO", s.name}, OnLostNode::retry);
  s.router->expect(*reply, REDIS_REPLY_ARRAY, "BF.INFO");
  return info_of(s.engine->type, *reply, nullptr);
}

ServerFilterInfo ServerFilterBackend::info_of(std::string_view type, const redisReply& reply,
                                              double* error_rate) {
  const Engine* engine = engine_of(type);
  if (engine == nullptr) {
    throw InvalidArgument("TYPE " + std::string(type) + " is no Bloom engine's filter");
  }
  ServerFilterInfo info;
  info.type = std::string(engine->type);
  info.kind = kind_text(*engine);
  if (reply.type != REDIS_REPLY_ARRAY) return info;  // refused (ACLs): the sizes stay unknown
  for (std::size_t i = 0; i + 1 < reply.elements; i += 2) {
    const std::string_view label = text_of(*reply.element[i]);
    const redisReply& value = *reply.element[i + 1];
    const bool nil = value.type == REDIS_REPLY_NIL;
    if (label == "Capacity") {
      info.capacity = number_of(value);
    } else if (label == "Size") {
      info.bytes = number_of(value);
    } else if (label == "Number of filters") {
      info.filters = number_of(value);
    } else if (label == "Number of items inserted") {
      if (!nil) info.items = number_of(value);
    } else if (label == "Expansion rate") {
      if (!nil) info.expansion = number_of(value);
    } else if (label == "Error rate") {
      if (!nil && error_rate != nullptr) *error_rate = real_of(value);
    }
  }
  return info;
}

std::uint64_t ServerFilterBackend::storage_bytes() const {
  const State& s = *state_;
  const Reply reply = s.router->call(s.slot, {"MEMORY", "USAGE", s.name}, OnLostNode::retry);
  if (reply->type == REDIS_REPLY_INTEGER) return static_cast<std::uint64_t>(reply->integer);
  return server_filter_info()->bytes;
}

std::vector<std::string> ServerFilterBackend::engines() const {
  const State& s = *state_;
  std::string line = "redis " + s.router->endpoint().describe() + ": a filter in " +
                     std::string(s.engine->maker) + "'s format";
  // MODULE LIST names the module's version; a server that refuses it (ACLs) still works.
  const Reply modules = s.router->call(s.slot, {"MODULE", "LIST"}, OnLostNode::retry);
  if (modules->type == REDIS_REPLY_ARRAY) {
    for (std::size_t m = 0; m < modules->elements; ++m) {
      const redisReply& entry = *modules->element[m];
      std::string_view module_name;
      const redisReply* version = nullptr;
      for (std::size_t f = 0; f + 1 < entry.elements; f += 2) {
        const std::string_view field = text_of(*entry.element[f]);
        if (field == "name") module_name = text_of(*entry.element[f + 1]);
        if (field == "ver") version = entry.element[f + 1];
      }
      if (std::ranges::find(kBloomModules, module_name) != std::end(kBloomModules) &&
          version != nullptr) {
        line += ", served by module " + std::string(module_name) + " version " +
                std::to_string(number_of(*version));
      }
    }
  }
  return {line + ": BF.INSERT / BF.MEXISTS"};
}

std::string ServerFilterBackend::location() const {
  return state_->location();
}

}  // namespace redbloom
