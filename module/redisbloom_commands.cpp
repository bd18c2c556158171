#include "redisbloom_commands.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "module_info.hpp"
#include "redbloom/error.hpp"
#include "redisbloom_type.hpp"

namespace redbloom::module {

namespace {

using redisbloom::Chain;

void announce(RedisModuleCtx* ctx, const char* event, RedisModuleString* key) {
  RedisModule_NotifyKeyspaceEvent(ctx, module_api::kNotifyGeneric, event, key);
  RedisModule_ReplicateVerbatim(ctx);
}

const char* refusal(Chain::AddResult result) noexcept {
  switch (result) {
    case Chain::AddResult::full:
      return "ERR non scaling filter is full";
    case Chain::AddResult::too_large:
      return "ERR filter cannot grow: it would pass the module's memory limit per filter "
             "(MAX_FILTER_BYTES)";
    default:
      return "ERR filter cannot grow: its next sub-filter's capacity is out of range";
  }
}

}  // namespace

std::optional<FilterFormat> parse_format(std::string_view word) noexcept {
  const auto is = [&](std::string_view name) {
    return word.size() == name.size() &&
           std::equal(word.begin(), word.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           });
  };
  if (is("redbloom")) return FilterFormat::redbloom;
  if (is("redisbloom")) return FilterFormat::redisbloom;
  return std::nullopt;
}

FilterFormat& default_format() noexcept {
  static FilterFormat format = FilterFormat::redbloom;
  return format;
}

Chain* redisbloom_create(RedisModuleCtx* ctx, const OpenKey& key, std::uint64_t capacity,
                         double error, std::uint32_t expansion, bool scaling) {
  std::unique_ptr<Chain> chain;
  try {
    chain = std::make_unique<Chain>(Chain::make(
        capacity, error, redisbloom::kNewFilterOptions | (scaling ? 0 : redisbloom::kNoScaling),
        expansion, redisbloom_allocator(), settings().max_filter_bytes));
  } catch (const InvalidArgument& e) {
    reply_error(ctx, (std::string("ERR ") + e.what()).c_str());
    return nullptr;
  }
  Chain* stored = chain.get();
  RedisModule_ModuleTypeSetValue(key.get(), redisbloom_type(), chain.release());
  ++redisbloom_stats().filters;
  warn_if_filters_may_be_evicted(ctx);
  return stored;
}

Chain* redisbloom_at(const OpenKey& key) noexcept {
  if (key.get() == nullptr || key.empty()) return nullptr;
  if (RedisModule_ModuleTypeGetType(key.get()) != redisbloom_type()) return nullptr;
  return static_cast<Chain*>(RedisModule_ModuleTypeGetValue(key.get()));
}

// As RedisBloom: items in order up to the first refused one, whose error ends the array.
int redisbloom_add(RedisModuleCtx* ctx, RedisModuleString* name, Chain& chain,
                   std::span<const std::string_view> items, bool array, const char* event) {
  std::vector<Chain::AddResult> results(items.size());
  results.resize(chain.add_many(items, results.data(), settings().max_filter_bytes));
  bool changed = false;
  for (const Chain::AddResult result : results) changed |= result == Chain::AddResult::added;
  if (array) RedisModule_ReplyWithArray(ctx, static_cast<long>(results.size()));
  for (const Chain::AddResult result : results) {
    if (result == Chain::AddResult::added || result == Chain::AddResult::present) {
      RedisModule_ReplyWithLongLong(ctx, result == Chain::AddResult::added ? 1 : 0);
    } else {
      reply_error(ctx, refusal(result));
    }
  }
  if (changed) announce(ctx, event, name);
  return module_api::kOk;
}

int redisbloom_exists(RedisModuleCtx* ctx, const Chain& chain,
                      std::span<const std::string_view> items, bool array) {
  std::vector<std::uint8_t> present(items.size());
  chain.contains_many(items, present.data());
  if (array) RedisModule_ReplyWithArray(ctx, static_cast<long>(items.size()));
  for (const std::uint8_t answer : present) RedisModule_ReplyWithLongLong(ctx, answer);
  return module_api::kOk;
}

int redisbloom_debug(RedisModuleCtx* ctx, const Chain& chain) {
  RedisModule_ReplyWithArray(ctx, 1 + static_cast<long>(chain.links().size()));
  char line[256];
  const int length =
      std::snprintf(line, sizeof line, "size:%llu", static_cast<unsigned long long>(chain.items()));
  RedisModule_ReplyWithStringBuffer(ctx, line, static_cast<std::size_t>(length));
  const unsigned width = (chain.options() & redisbloom::kForce64) != 0 ? 64 : 32;
  for (const redisbloom::Link& link : chain.links()) {
    // RedisBloom prints a power-of-two link's bit count as 2^n2 when its bits field is 0.
    const std::uint64_t bits = link.bits != 0 ? link.bits : std::uint64_t{1} << link.n2;
    const int n = std::snprintf(
        line, sizeof line,
        "bytes:%llu bits:%llu hashes:%u hashwidth:%u capacity:%llu size:%llu ratio:%g",
        static_cast<unsigned long long>(link.data.size()), static_cast<unsigned long long>(bits),
        link.hashes, width, static_cast<unsigned long long>(link.capacity),
        static_cast<unsigned long long>(link.items), link.error);
    RedisModule_ReplyWithStringBuffer(ctx, line, static_cast<std::size_t>(n));
  }
  return module_api::kOk;
}

int redisbloom_card(RedisModuleCtx* ctx, const Chain& chain) {
  return RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(chain.items()));
}

int redisbloom_info(RedisModuleCtx* ctx, const Chain& chain, const RedisModuleString* field) {
  struct Field {
    const char* option;
    const char* label;
    long long value;
    bool null;
  };
  const Field fields[] = {
      {"CAPACITY", "Capacity", static_cast<long long>(chain.capacity()), false},
      {"SIZE", "Size", static_cast<long long>(chain.memory_usage()), false},
      {"FILTERS", "Number of filters", static_cast<long long>(chain.links().size()), false},
      {"ITEMS", "Number of items inserted", static_cast<long long>(chain.items()), false},
      {"EXPANSION", "Expansion rate", static_cast<long long>(chain.expansion()), !chain.scaling()},
  };
  const auto reply_value = [&](const Field& f) {
    if (f.null) {
      RedisModule_ReplyWithNull(ctx);
    } else {
      RedisModule_ReplyWithLongLong(ctx, f.value);
    }
  };
  if (field != nullptr) {
    for (const Field& f : fields) {
      if (is_option(field, f.option)) {
        RedisModule_ReplyWithArray(ctx, 1);
        reply_value(f);
        return module_api::kOk;
      }
    }
    return reply_error(ctx, "Invalid information value");
  }
  RedisModule_ReplyWithArray(ctx, 2 * static_cast<long>(std::size(fields)));
  for (const Field& f : fields) {
    RedisModule_ReplyWithSimpleString(ctx, f.label);
    reply_value(f);
  }
  return module_api::kOk;
}

int redisbloom_scandump(RedisModuleCtx* ctx, const Chain& chain, long long iterator) {
  RedisModule_ReplyWithArray(ctx, 2);
  if (iterator == 0) {
    const std::string header = chain.encode_header();
    RedisModule_ReplyWithLongLong(ctx, 1);
    RedisModule_ReplyWithStringBuffer(ctx, header.data(), header.size());
    return module_api::kOk;
  }
  long long next = 0;
  const auto chunk = chain.chunk(iterator, &next);
  RedisModule_ReplyWithLongLong(ctx, next);
  RedisModule_ReplyWithStringBuffer(ctx, reinterpret_cast<const char*>(chunk.data()), chunk.size());
  return module_api::kOk;
}

int redisbloom_loadchunk(RedisModuleCtx* ctx, RedisModuleString* name, Chain& chain,
                         long long iterator, std::string_view data) {
  if (const char* error = chain.load_chunk(iterator, data)) return reply_error(ctx, error);
  RedisModule_ReplyWithSimpleString(ctx, "OK");
  announce(ctx, "bf.loadchunk", name);
  return module_api::kOk;
}

int redisbloom_create_from_header(RedisModuleCtx* ctx, RedisModuleString* name, const OpenKey& key,
                                  std::string_view header) {
  std::unique_ptr<Chain> chain;
  try {
    chain = std::make_unique<Chain>(
        Chain::decode_header(header, settings().max_filter_bytes, redisbloom_allocator()));
  } catch (const FormatError&) {
    return reply_error(ctx, "ERR received bad data");
  } catch (const InvalidArgument& e) {
    return reply_error(ctx, (std::string("ERR ") + e.what()).c_str());
  }
  RedisModule_ModuleTypeSetValue(key.get(), redisbloom_type(), chain.release());
  ++redisbloom_stats().filters;
  warn_if_filters_may_be_evicted(ctx);
  RedisModule_ReplyWithSimpleString(ctx, "OK");
  announce(ctx, "bf.loadchunk", name);
  return module_api::kOk;
}

}  // namespace redbloom::module
