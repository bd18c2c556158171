// RedisBloom's filter type (`MBbloom--`) behind BF.*: RedisBloom 2.4's answers, hashing and
// growth, so that data a server kept under RedisBloom reads and grows as it did.
#include <cstdio>
#include <new>
#include <string>

#include "bloom_value.hpp"
#include "creation_ids.hpp"
#include "memory_room.hpp"
#include "module_info.hpp"

namespace redbloom::module {

namespace {

using redisbloom::Chain;

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

bool answered(Chain::AddResult result) noexcept {
  return result == Chain::AddResult::added || result == Chain::AddResult::present;
}

class RedisBloomValue final : public BloomValue {
 public:
  explicit RedisBloomValue(Chain& chain) : chain_(chain) {}

  // As RedisBloom: items in order up to the first refused one, whose error ends the answers.
  Refusal add(RedisModuleCtx* ctx, std::span<const std::string_view> items, PastRefusal past,
              AddOutcome& out) override {
    std::vector<Chain::AddResult> results(items.size());
    // A new sub-filter must also fit in the room maxmemory leaves (asked only when these adds
    // may fill the newest one).
    std::uint64_t limit = settings().max_filter_bytes;
    const auto asked = may_grow(items.size()) ? maxmemory_room(ctx) : std::nullopt;
    const std::uint64_t room = asked.value_or(0);
    const bool room_binds = asked && chain_.bytes() + room < limit;
    if (room_binds) limit = chain_.bytes() + room;
    std::size_t done = chain_.add_many(items, results.data(), limit);
    if (past == PastRefusal::go_on) {
      while (done < items.size())
        done += chain_.add_many(items.subspan(done), &results[done], limit);
    }
    out.answers.resize(done);
    for (std::size_t i = 0; i < done; ++i) {
      const Chain::AddResult result = results[i];
      out.changed |= result == Chain::AddResult::added;
      out.answers[i] =
          answered(result) ? static_cast<std::uint8_t>(result == Chain::AddResult::added) : 2;
      if (!answered(result) && out.refusal.empty()) {
        out.refusal = room_binds && result == Chain::AddResult::too_large ? growth_refusal(room)
                                                                          : refusal(result);
      }
    }
    return std::nullopt;
  }

  Refusal contains(RedisModuleCtx*, std::span<const std::string_view> items,
                   std::uint8_t* present) const override {
    chain_.contains_many(items, present);
    return std::nullopt;
  }

  Refusal card(long long& items) const override {
    items = static_cast<long long>(chain_.items());
    return std::nullopt;
  }

  Refusal info(std::vector<InfoField>& fields) const override {
    fields = {
        {"CAPACITY", "Capacity", static_cast<long long>(chain_.capacity())},
        {"SIZE", "Size", static_cast<long long>(chain_.memory_usage())},
        {"FILTERS", "Number of filters", static_cast<long long>(chain_.links().size())},
        {"ITEMS", "Number of items inserted", static_cast<long long>(chain_.items())},
        {"EXPANSION", "Expansion rate",
         chain_.scaling() ? std::optional<long long>(chain_.expansion()) : std::nullopt},
    };
    return std::nullopt;
  }

  Refusal debug(std::vector<std::string>& lines) const override {
    char line[256];
    lines.push_back("size:" + std::to_string(chain_.items()));
    const unsigned width = (chain_.options() & redisbloom::kForce64) != 0 ? 64 : 32;
    for (const redisbloom::Link& link : chain_.links()) {
      // RedisBloom prints a power-of-two link's bit count as 2^n2 when its bits field is 0.
      const std::uint64_t bits = link.bits != 0 ? link.bits : std::uint64_t{1} << link.n2;
      const int n = std::snprintf(
          line, sizeof line,
          "bytes:%llu bits:%llu hashes:%u hashwidth:%u capacity:%llu size:%llu ratio:%g",
          static_cast<unsigned long long>(link.data.size()), static_cast<unsigned long long>(bits),
          link.hashes, width, static_cast<unsigned long long>(link.capacity),
          static_cast<unsigned long long>(link.items), link.error);
      lines.emplace_back(line, static_cast<std::size_t>(n));
    }
    return std::nullopt;
  }

  Refusal scandump(std::optional<long long> iterator, DumpStep& step) const override {
    if (!iterator) return "Second argument must be numeric";
    if (*iterator == 0) {
      step.next = 1;
      step.header = chain_.encode_header();
      return std::nullopt;
    }
    step.chunk = chain_.chunk(*iterator, &step.next);
    return std::nullopt;
  }

  Refusal loadchunk(long long iterator, std::string_view data) override {
    if (const char* error = chain_.load_chunk(iterator, data)) return error;
    return std::nullopt;
  }

  [[nodiscard]] std::string occupied() const override { return "ERR item exists"; }

  [[nodiscard]] std::optional<std::uint64_t> creation() const override {
    return creation_id(&chain_);
  }

 private:
  // Whether adding `count` items may stack a new sub-filter.
  [[nodiscard]] bool may_grow(std::size_t count) const noexcept {
    if (!chain_.scaling() || chain_.links().empty()) return false;
    const redisbloom::Link& newest = chain_.links().back();
    return newest.items + count >= newest.capacity;
  }

  Chain& chain_;
};

}  // namespace

BloomValue* redisbloom_value(Chain& chain, ValueStorage& storage) noexcept {
  static_assert(sizeof(RedisBloomValue) <= kInlineValueBytes);
  return new (storage.bytes) RedisBloomValue(chain);
}

}  // namespace redbloom::module
