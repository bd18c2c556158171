#include "bloom_value.hpp"

#include <algorithm>
#include <cctype>

#include "core/chain_format.hpp"
#include "creation_ids.hpp"
#include "memory_room.hpp"
#include "module_info.hpp"
#include "redbloom/error.hpp"
#include "redisbloom_type.hpp"

namespace redbloom::module {

namespace {

// The start of redbloom's own SCANDUMP header (chain_format.hpp); any other is RedisBloom's.
constexpr std::string_view kRedbloomHeaderMagic = "rbchain";

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

BloomKey::BloomKey(RedisModuleCtx* ctx, RedisModuleString* name, int mode)
    : ctx_(ctx), key_(ctx, name, mode) {
  if (key_.empty()) return;
  RedisModuleType* type = RedisModule_ModuleTypeGetType(key_.get());
  if (type == filter_type()) {
    value_ = own_filter_value(
        *static_cast<FilterChain*>(RedisModule_ModuleTypeGetValue(key_.get())), inline_);
  } else if (type == redisbloom_type()) {
    value_ = redisbloom_value(
        *static_cast<redisbloom::Chain*>(RedisModule_ModuleTypeGetValue(key_.get())), inline_);
  } else if (RedisModule_KeyType(key_.get()) == module_api::kKeyTypeHash) {
    owned_ = library_filter_value(ctx, text(name), key_.get());
    value_ = owned_.get();
  }
}

BloomKey::~BloomKey() {
  if (value_ != nullptr && owned_ == nullptr) value_->~BloomValue();
}

namespace {

// The bytes of a new filter's bits, sized as its type sizes them, without allocating them.
std::uint64_t first_link_bytes(FilterFormat format, const ChainOptions& options) {
  if (format == FilterFormat::redisbloom) {
    const std::uint32_t flags =
        redisbloom::kNewFilterOptions | (options.scaling ? 0 : redisbloom::kNoScaling);
    redisbloom::Link link;
    bool over = false;
    // A limit of one byte sizes the link and stops before allocating its bits.
    (void)redisbloom::size_link(
        options.capacity,
        options.scaling ? options.error_rate * redisbloom::kTightening : options.error_rate, flags,
        redisbloom_allocator(), link, 1, &over);
    return over ? link.bits / 8 : 0;  // 0: figures RedisBloom refuses, an error below
  }
  const FilterChain unsized(options, server_allocator(), nullptr);
  double target = 0;
  return unsized.next_link_params(&target).total_bytes();
}

}  // namespace

BloomValue& BloomKey::create(FilterFormat format, const ChainOptions& options) {
  if (const auto room = maxmemory_room(ctx_)) {
    check_new_filter_fits(first_link_bytes(format, options), room);
  }
  if (format == FilterFormat::redisbloom) {
    auto chain = std::make_unique<redisbloom::Chain>(redisbloom::Chain::make(
        options.capacity, options.error_rate,
        redisbloom::kNewFilterOptions | (options.scaling ? 0 : redisbloom::kNoScaling),
        options.expansion, redisbloom_allocator(), settings().max_filter_bytes));
    value_ = redisbloom_value(*chain, inline_);
    note_created(ctx_, chain.get());
    RedisModule_ModuleTypeSetValue(key_.get(), redisbloom_type(), chain.release());
    ++redisbloom_stats().filters;
    warn_if_filters_may_be_evicted(ctx_);
  } else {
    FilterChain* chain = key_.store(make_filter(options));
    note_created(ctx_, chain);
    value_ = own_filter_value(*chain, inline_);
  }
  return *value_;
}

Refusal BloomKey::create_from_header(std::string_view header) {
  try {
    if (header.starts_with(kRedbloomHeaderMagic)) {
      FilterChain* chain = key_.store(
          chain_format::decode_header(header, server_allocator(), settings().max_filter_bytes));
      note_created(ctx_, chain);
      value_ = own_filter_value(*chain, inline_);
      return std::nullopt;
    }
    auto chain = std::make_unique<redisbloom::Chain>(redisbloom::Chain::decode_header(
        header, settings().max_filter_bytes, redisbloom_allocator()));
    value_ = redisbloom_value(*chain, inline_);
    note_created(ctx_, chain.get());
    RedisModule_ModuleTypeSetValue(key_.get(), redisbloom_type(), chain.release());
    ++redisbloom_stats().filters;
    warn_if_filters_may_be_evicted(ctx_);
    return std::nullopt;
  } catch (const FormatError&) {
    return "ERR received bad data";
  }
}

}  // namespace redbloom::module
