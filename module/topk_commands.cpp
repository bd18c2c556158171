#include "topk_commands.hpp"

#include <strings.h>

#include <memory>
#include <optional>
#include <string>

#include "command_support.hpp"
#include "command_table.hpp"
#include "module_info.hpp"
#include "topk_type.hpp"

namespace redbloom::module {

namespace {

using topk::TopK;

// RedisBloom's text, spaces of its source's line continuation included.
constexpr const char* kBadIncrement =
    "TopK: increment must be an integer greater or equal to 0                            and "
    "smaller or equal to 100,000";

// The Top-K at an open key; nullptr, with the error replied, when there is none.
TopK* existing(RedisModuleCtx* ctx, const OpenKey& key) {
  if (key.empty()) {
    reply_error(ctx, "TopK: key does not exist");
    return nullptr;
  }
  if (RedisModule_ModuleTypeGetType(key.get()) != topk_type()) {
    reply_error(ctx, module_api::kWrongTypeError);
    return nullptr;
  }
  return static_cast<TopK*>(RedisModule_ModuleTypeGetValue(key.get()));
}

// An item as RedisBloom replies it, a simple string; as a bulk string when it holds a byte a
// simple string cannot carry (RedisBloom's reply would cut it or break the protocol).
int reply_item(RedisModuleCtx* ctx, const std::string& item) {
  if (item.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    return RedisModule_ReplyWithStringBuffer(ctx, item.data(), item.size());
  }
  return RedisModule_ReplyWithSimpleString(ctx, item.c_str());
}

int reply_expelled(RedisModuleCtx* ctx, const std::optional<std::string>& expelled) {
  return expelled ? reply_item(ctx, *expelled) : RedisModule_ReplyWithNull(ctx);
}

// One of k, width, depth: an integer in [1, 2^32); nullopt with `error` replied.
std::optional<std::uint32_t> figure(RedisModuleCtx* ctx, const RedisModuleString* argument,
                                    const char* error) {
  const auto value = integer(argument);
  if (!value || *value < 1 || *value > 0xffffffffLL) {
    reply_error(ctx, error);
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(*value);
}

// TOPK.RESERVE key topk [width depth decay]
int reserve(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3 && argc != 6) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (!key.empty()) return reply_error(ctx, "TopK: key already exists");
  const auto k = figure(ctx, argv[2], "TopK: invalid k");
  if (!k) return module_api::kOk;
  std::uint32_t width = topk::kDefaultWidth;
  std::uint32_t depth = topk::kDefaultDepth;
  double decay = topk::kDefaultDecay;
  if (argc == 6) {
    const auto w = figure(ctx, argv[3], "TopK: invalid width");
    if (!w) return module_api::kOk;
    const auto d = figure(ctx, argv[4], "TopK: invalid depth");
    if (!d) return module_api::kOk;
    const auto given = real(argv[5]);
    if (!given || !(*given > 0 && *given <= 1)) {
      return reply_error(ctx, "TopK: invalid decay value. must be '<= 1' & '> 0'");
    }
    width = *w;
    depth = *d;
    decay = *given;
  }
  if (!topk_fits(*k, width, depth)) {
    return reply_error(ctx,
                       "ERR Insufficient memory to create topk data structure (over the "
                       "module's memory limit per value, MAX_FILTER_BYTES)");
  }
  auto value = std::make_unique<TopK>(*k, width, depth, decay, topk_allocator());
  if (RedisModule_ModuleTypeSetValue(key.get(), topk_type(), value.get()) != module_api::kOk) {
    return reply_error(ctx, "ERR TopK: error setting value");
  }
  value.release();
  ++topk_stats().filters;
  RedisModule_ReplicateVerbatim(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// TOPK.ADD key item [item ...]
int add(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  TopK* value = existing(ctx, key);
  if (value == nullptr) return module_api::kOk;
  RedisModule_ReplyWithArray(ctx, argc - 2);
  for (int i = 2; i < argc; ++i) reply_expelled(ctx, value->add(text(argv[i]), 1));
  RedisModule_ReplicateVerbatim(ctx);
  return module_api::kOk;
}

// TOPK.INCRBY key item increment [item increment ...]
// As RedisBloom, the pairs before a bad increment are applied and answered, the bad one is
// answered by an error and the rest are not applied; the reply holds just those answers.
int incrby(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 4 || argc % 2 == 1) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  TopK* value = existing(ctx, key);
  if (value == nullptr) return module_api::kOk;
  RedisModule_ReplyWithArray(ctx, module_api::kPostponedLength);
  long answered = 0;
  for (int i = 2; i < argc; i += 2) {
    ++answered;
    const auto increment = integer(argv[i + 1]);
    if (!increment || *increment < 0 || *increment > topk::kMaxIncrement) {
      reply_error(ctx, kBadIncrement);
      break;
    }
    reply_expelled(ctx, value->add(text(argv[i]), static_cast<std::uint32_t>(*increment)));
  }
  RedisModule_ReplySetArrayLength(ctx, answered);
  RedisModule_ReplicateVerbatim(ctx);
  return module_api::kOk;
}

// TOPK.QUERY key item [item ...] (Count: false) and TOPK.COUNT key item [item ...] (true)
template <bool Count>
int per_item(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  const TopK* value = existing(ctx, key);
  if (value == nullptr) return module_api::kOk;
  RedisModule_ReplyWithArray(ctx, argc - 2);
  for (int i = 2; i < argc; ++i) {
    const std::string_view item = text(argv[i]);
    RedisModule_ReplyWithLongLong(ctx, Count ? static_cast<long long>(value->count(item))
                                             : static_cast<long long>(value->query(item)));
  }
  return module_api::kOk;
}

// TOPK.LIST key [WITHCOUNT]
int list(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2 && argc != 3) return RedisModule_WrongArity(ctx);
  bool with_count = false;
  if (argc == 3) {
    // RedisBloom compares the argument's own length: any prefix of WITHCOUNT is taken.
    const std::string_view word = text(argv[2]);
    with_count = word.size() <= 9 && strncasecmp(word.data(), "WITHCOUNT", word.size()) == 0;
    if (!with_count) return reply_error(ctx, "WITHCOUNT keyword expected");
  }
  OpenKey key(ctx, argv[1], module_api::kRead);
  const TopK* value = existing(ctx, key);
  if (value == nullptr) return module_api::kOk;
  const auto entries = value->list();
  RedisModule_ReplyWithArray(ctx, static_cast<long>(entries.size() * (with_count ? 2 : 1)));
  for (const topk::Entry& entry : entries) {
    reply_item(ctx, entry.item);
    if (with_count) RedisModule_ReplyWithLongLong(ctx, entry.count);
  }
  return module_api::kOk;
}

// TOPK.INFO key
int info(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  const TopK* value = existing(ctx, key);
  if (value == nullptr) return module_api::kOk;
  RedisModule_ReplyWithArray(ctx, 8);
  RedisModule_ReplyWithSimpleString(ctx, "k");
  RedisModule_ReplyWithLongLong(ctx, value->k());
  RedisModule_ReplyWithSimpleString(ctx, "width");
  RedisModule_ReplyWithLongLong(ctx, value->width());
  RedisModule_ReplyWithSimpleString(ctx, "depth");
  RedisModule_ReplyWithLongLong(ctx, value->depth());
  RedisModule_ReplyWithSimpleString(ctx, "decay");
  return RedisModule_ReplyWithDouble(ctx, value->decay());
}

}  // namespace

bool register_topk_commands(RedisModuleCtx* ctx) noexcept {
  // TOPK.COUNT is read-only here (RedisBloom registers it as a write command, which a
  // read-only replica refuses).
  static const Command commands[] = {
      counted<reserve>("topk.reserve", "write deny-oom"),
      counted<add>("topk.add", "write deny-oom"),
      counted<incrby>("topk.incrby", "write deny-oom"),
      counted<per_item<false>>("topk.query", "readonly"),
      counted<per_item<true>>("topk.count", "readonly"),
      counted<list>("topk.list", "readonly"),
      counted<info>("topk.info", "readonly"),
  };
  return register_commands(ctx, commands);
}

}  // namespace redbloom::module
