#include "cms_commands.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <memory>
#include <optional>
#include <vector>

#include "cms_type.hpp"
#include "command_support.hpp"
#include "command_table.hpp"

namespace redbloom::module {

namespace {

using cms::Sketch;

// Items handed to the sketch at a time (their names and answers on the stack).
constexpr int kChunk = 64;

// An increment as the server reads it (RedisModule_StringToLongLong), with the common case
// (plain decimal digits without a leading zero, as the server accepts them) parsed here; anything
// else (a sign, a zero, out of range) is left to the server.
std::optional<long long> increment_of(const RedisModuleString* argument) {
  const std::string_view t = text(argument);
  long long value = 0;
  if (!t.empty() && t.front() >= '1' && t.front() <= '9') {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (ec == std::errc() && end == t.data() + t.size()) return value;
  }
  return integer(argument);
}

// The sketch at an open key; nullptr, with RedisBloom's error replied, when there is none.
Sketch* existing(RedisModuleCtx* ctx, const OpenKey& key) {
  if (key.empty()) {
    reply_error(ctx, "CMS: key does not exist");
    return nullptr;
  }
  if (RedisModule_ModuleTypeGetType(key.get()) != cms_type()) {
    reply_error(ctx, module_api::kWrongTypeError);
    return nullptr;
  }
  return static_cast<Sketch*>(RedisModule_ModuleTypeGetValue(key.get()));
}

// The dimensions CMS.INITBYDIM or CMS.INITBYPROB asks for; nullopt with the error replied.
std::optional<cms::Dimensions> dimensions_of(RedisModuleCtx* ctx, RedisModuleString** argv,
                                             bool by_probability) {
  if (!by_probability) {
    const auto width = integer(argv[2]);
    if (!width || *width < 1) {
      reply_error(ctx, "CMS: invalid width");
      return std::nullopt;
    }
    const auto depth = integer(argv[3]);
    if (!depth || *depth < 1) {
      reply_error(ctx, "CMS: invalid depth");
      return std::nullopt;
    }
    if (*width > LLONG_MAX / *depth) {
      reply_error(ctx, "CMS: invalid init arguments");
      return std::nullopt;
    }
    return cms::Dimensions{static_cast<std::uint64_t>(*width), static_cast<std::uint64_t>(*depth)};
  }
  const auto error = real(argv[2]);
  if (!error || *error <= 0 || *error >= 1) {
    reply_error(ctx, "CMS: invalid overestimation value");
    return std::nullopt;
  }
  const auto probability = real(argv[3]);
  if (!probability || *probability <= 0 || *probability >= 1) {
    reply_error(ctx, "CMS: invalid prob value");
    return std::nullopt;
  }
  const auto dimensions = cms::dimensions_for(*error, *probability);
  if (!dimensions) reply_error(ctx, "CMS: invalid init arguments");
  return dimensions;
}

// CMS.INITBYDIM key width depth / CMS.INITBYPROB key error probability
template <bool ByProbability>
int create(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 4) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  // Whatever the key holds, as RedisBloom answers.
  if (!key.empty()) return reply_error(ctx, "CMS: key already exists");
  const auto dimensions = dimensions_of(ctx, argv, ByProbability);
  if (!dimensions) return module_api::kOk;
  if (!cms::counter_bytes(dimensions->width, dimensions->depth)) {
    return reply_error(ctx, "CMS: Insufficient memory to create the key");
  }
  if (!cms_fits(dimensions->width, dimensions->depth)) {
    return reply_error(ctx,
                       "CMS: Insufficient memory to create the key: over the module's memory "
                       "limit per value (MAX_FILTER_BYTES)");
  }
  auto sketch = std::make_unique<Sketch>(dimensions->width, dimensions->depth, cms_allocator());
  if (RedisModule_ModuleTypeSetValue(key.get(), cms_type(), sketch.get()) != module_api::kOk) {
    return reply_error(ctx, "CMS: error setting value");
  }
  sketch.release();
  RedisModule_ReplicateVerbatim(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// CMS.INCRBY key item increment [item increment ...]
int incrby(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 4 || argc % 2 == 1) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kWrite);
  Sketch* sketch = existing(ctx, key);
  if (sketch == nullptr) return module_api::kOk;
  // Every increment read before any is applied: a bad one changes nothing.
  const int pairs = (argc - 2) / 2;
  std::vector<std::uint64_t> increments(static_cast<std::size_t>(pairs));
  for (int i = 0; i < pairs; ++i) {
    const auto by = increment_of(argv[3 + 2 * i]);
    if (!by) return reply_error(ctx, "CMS: Cannot parse number");
    if (*by < 0) return reply_error(ctx, "CMS: Number cannot be negative");
    increments[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(*by);
  }
  RedisModule_ReplyWithArray(ctx, pairs);
  std::string_view items[kChunk];
  std::uint32_t counts[kChunk];
  for (int first = 0; first < pairs; first += kChunk) {
    const int n = std::min(kChunk, pairs - first);
    for (int j = 0; j < n; ++j) items[j] = text(argv[2 + 2 * (first + j)]);
    const auto size = static_cast<std::size_t>(n);
    sketch->increment_all({items, size}, {increments.data() + first, size}, {counts, size});
    for (int j = 0; j < n; ++j) {
      if (counts[j] != cms::kSaturated) {
        RedisModule_ReplyWithLongLong(ctx, counts[j]);
      } else {
        RedisModule_ReplyWithError(ctx, "CMS: INCRBY overflow");
      }
    }
  }
  RedisModule_ReplicateVerbatim(ctx);
  return module_api::kOk;
}

// CMS.QUERY key item [item ...]
int query(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  const Sketch* sketch = existing(ctx, key);
  if (sketch == nullptr) return module_api::kOk;
  RedisModule_ReplyWithArray(ctx, argc - 2);
  std::string_view items[kChunk];
  std::uint32_t counts[kChunk];
  for (int first = 2; first < argc; first += kChunk) {
    const int n = std::min(kChunk, argc - first);
    for (int j = 0; j < n; ++j) items[j] = text(argv[first + j]);
    const auto size = static_cast<std::size_t>(n);
    sketch->query_all({items, size}, {counts, size});
    for (int j = 0; j < n; ++j) RedisModule_ReplyWithLongLong(ctx, counts[j]);
  }
  return module_api::kOk;
}

// The keys of CMS.MERGE, for cluster routing: the destination and the numkeys sources.
int merge_keys(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  RedisModule_KeyAtPos(ctx, 1);
  const auto numkeys = argc >= 3 ? integer(argv[2]) : std::nullopt;
  if (numkeys && *numkeys >= 1 && *numkeys <= argc - 3) {
    for (long long i = 0; i < *numkeys; ++i) RedisModule_KeyAtPos(ctx, 3 + static_cast<int>(i));
  }
  return module_api::kOk;
}

// The sources and weights of CMS.MERGE from `rest` (the arguments after numkeys), in
// RedisBloom's order of checks; false with the error replied.
bool merge_sources(RedisModuleCtx* ctx, RedisModuleString** rest, int count, long long numkeys,
                   const Sketch& destination, std::vector<const Sketch*>& sources,
                   std::vector<long long>& weights) {
  if (numkeys <= 0) return reply_error(ctx, "CMS: Number of keys must be positive"), false;
  int weights_at = -1;
  for (int i = 0; i < count; ++i) {
    if (is_option(rest[i], "WEIGHTS")) {
      weights_at = i;
      break;
    }
  }
  if (weights_at < 0 && numkeys != count) {
    return reply_error(ctx, "CMS: wrong number of keys"), false;
  }
  if (weights_at >= 0 && (weights_at != numkeys || count != 1 + numkeys * 2)) {
    return reply_error(ctx, "CMS: wrong number of keys/weights"), false;
  }
  const int n = static_cast<int>(numkeys);
  for (int i = 0; i < n; ++i) {
    long long weight = 1;
    if (weights_at >= 0) {
      const auto given = integer(rest[n + 1 + i]);
      if (!given) return reply_error(ctx, "CMS: invalid weight value"), false;
      weight = *given;
    }
    OpenKey key(ctx, rest[i], module_api::kRead);
    const Sketch* source = existing(ctx, key);
    if (source == nullptr) return false;
    if (source->width() != destination.width() || source->depth() != destination.depth()) {
      return reply_error(ctx, "CMS: width/depth is not equal"), false;
    }
    sources.push_back(source);
    weights.push_back(weight);
  }
  return true;
}

// CMS.MERGE destination numkeys source [source ...] [WEIGHTS weight [weight ...]]
int merge(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (RedisModule_IsKeysPositionRequest(ctx)) return merge_keys(ctx, argv, argc);
  if (argc < 4) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  Sketch* destination = existing(ctx, key);
  if (destination == nullptr) return module_api::kOk;
  const auto numkeys = integer(argv[2]);
  if (!numkeys) return reply_error(ctx, "CMS: invalid numkeys");
  std::vector<const Sketch*> sources;
  std::vector<long long> weights;
  if (!merge_sources(ctx, argv + 3, argc - 3, *numkeys, *destination, sources, weights)) {
    return module_api::kOk;
  }
  if (!destination->merge(sources, weights)) return reply_error(ctx, "CMS: MERGE overflow");
  RedisModule_ReplicateVerbatim(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// CMS.INFO key
int info(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  const Sketch* sketch = existing(ctx, key);
  if (sketch == nullptr) return module_api::kOk;
  RedisModule_ReplyWithArray(ctx, 6);
  RedisModule_ReplyWithSimpleString(ctx, "width");
  RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(sketch->width()));
  RedisModule_ReplyWithSimpleString(ctx, "depth");
  RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(sketch->depth()));
  RedisModule_ReplyWithSimpleString(ctx, "count");
  RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(sketch->count()));
  return module_api::kOk;
}

}  // namespace

bool register_cms_commands(RedisModuleCtx* ctx) noexcept {
  static const Command commands[] = {
      counted<create<false>>("cms.initbydim", "write deny-oom"),
      counted<create<true>>("cms.initbyprob", "write deny-oom"),
      counted<incrby>("cms.incrby", "write deny-oom"),
      counted<query>("cms.query", "readonly"),
      counted<merge>("cms.merge", "write deny-oom getkeys-api", 0, 0, 0),
      counted<info>("cms.info", "readonly"),
  };
  return register_commands(ctx, commands);
}

}  // namespace redbloom::module
