// The module's own filter type (`redbloomF`, a FilterChain) behind BF.*.
#include <cstdio>
#include <new>
#include <string>

#include "bloom_value.hpp"
#include "core/chain_format.hpp"
#include "creation_ids.hpp"
#include "memory_room.hpp"

namespace redbloom::module {

namespace {

using AddResult = FilterChain::AddResult;

class OwnFilterValue final : public BloomValue {
 public:
  explicit OwnFilterValue(FilterChain& chain) : chain_(chain) {}

  Refusal add(RedisModuleCtx* ctx, std::span<const std::string_view> items, PastRefusal past,
              AddOutcome& out) override {
    // A new link must also fit in the room maxmemory leaves: the chain's limit is narrowed to
    // it for these adds (asked only when they may fill the newest link).
    const std::uint64_t limit = chain_.options().max_bytes;
    const auto asked = may_grow(items.size()) ? maxmemory_room(ctx) : std::nullopt;
    const std::uint64_t room = asked.value_or(0);
    const bool room_binds = asked && (limit == 0 || chain_.bytes() + room < limit);
    if (room_binds) chain_.set_max_bytes(chain_.bytes() + room);
    struct Restore {
      FilterChain& chain;
      std::uint64_t limit;
      ~Restore() { chain.set_max_bytes(limit); }
    } restore{chain_, limit};
    out.answers.assign(items.size(), 0);
    static_assert(sizeof(AddResult) == 1);
    auto* results = reinterpret_cast<AddResult*>(out.answers.data());
    std::size_t done = chain_.add(items, results);
    if (done < items.size()) {
      out.refusal = room_binds && results[done] == AddResult::over_limit
                        ? growth_refusal(room)
                        : refusal_message(results[done]);
    }
    if (past == PastRefusal::stop) {
      out.answers.resize(std::min(done + 1, items.size()));
    } else {
      // Past a refused item, present ones still read 0 and new ones are refused in turn.
      while (done < items.size()) {
        ++done;  // results[done - 1] is the refusal
        done += chain_.add(items.subspan(done), results + done);
      }
    }
    for (std::uint8_t& answer : out.answers) {
      out.changed |= answer == static_cast<std::uint8_t>(AddResult::added);
      answer = answer > 1 ? 2 : answer;
    }
    return std::nullopt;
  }

  Refusal contains(RedisModuleCtx*, std::span<const std::string_view> items,
                   std::uint8_t* present) const override {
    chain_.contains(items, present);
    return std::nullopt;
  }

  Refusal card(long long& items) const override {
    items = static_cast<long long>(chain_.items());
    return std::nullopt;
  }

  Refusal info(std::vector<InfoField>& fields) const override {
    const ChainOptions& options = chain_.options();
    fields = {
        {"CAPACITY", "Capacity", static_cast<long long>(chain_.capacity())},
        {"SIZE", "Size", static_cast<long long>(memory_usage(chain_))},
        {"FILTERS", "Number of filters", static_cast<long long>(chain_.links().size())},
        {"ITEMS", "Number of items inserted", static_cast<long long>(chain_.items())},
        {"EXPANSION", "Expansion rate",
         options.scaling ? std::optional<long long>(static_cast<long long>(options.expansion))
                         : std::nullopt},
    };
    return std::nullopt;
  }

  Refusal debug(std::vector<std::string>& lines) const override {
    lines.push_back("size:" + std::to_string(chain_.items()));
    for (const FilterChain::Link& link : chain_.links()) {
      char line[256];
      const int n = std::snprintf(
          line, sizeof line,
          "bytes:%llu bits:%llu hashes:%u hashwidth:64 capacity:%llu size:%llu ratio:%g",
          static_cast<unsigned long long>(link.params.total_bytes()),
          static_cast<unsigned long long>(link.params.total_bits()), link.params.hashes,
          static_cast<unsigned long long>(link.params.capacity),
          static_cast<unsigned long long>(link.items), link.target_error);
      lines.emplace_back(line, static_cast<std::size_t>(n));
    }
    return std::nullopt;
  }

  // [1, header] for iterator 0, then [next, bits] until [0, ""]. `next` is one past the byte
  // after the chunk, so BF.LOADCHUNK knows where the chunk goes.
  Refusal scandump(std::optional<long long> iterator, DumpStep& step) const override {
    if (!iterator) return "Second argument must be numeric";
    if (*iterator == 0) {
      step.next = 1;
      step.header = chain_format::encode_header(chain_);
      return std::nullopt;
    }
    const auto offset = static_cast<std::uint64_t>(*iterator < 0 ? -1 : *iterator - 1);
    step.chunk = chain_.bytes_at(offset, kDumpChunkBytes);
    step.next = step.chunk.empty() ? 0 : static_cast<long long>(offset + step.chunk.size() + 1);
    return std::nullopt;
  }

  Refusal loadchunk(long long iterator, std::string_view data) override {
    if (iterator <= 0 || static_cast<std::uint64_t>(iterator) < data.size()) {
      return "ERR received bad data";
    }
    const auto offset = static_cast<std::uint64_t>(iterator) - data.size() - 1;
    if (chain_.bytes_at(offset, 1).empty()) return "ERR invalid offset - no link found";
    if (!chain_.write_bytes_at(offset,
                               {reinterpret_cast<const std::uint8_t*>(data.data()), data.size()})) {
      return "ERR invalid chunk - Too big for current filter";
    }
    return std::nullopt;
  }

  [[nodiscard]] std::string occupied() const override { return "ERR item exists"; }

  [[nodiscard]] std::optional<std::uint64_t> creation() const override {
    return creation_id(&chain_);
  }

 private:
  // Whether adding `count` items may stack a new link.
  [[nodiscard]] bool may_grow(std::size_t count) const noexcept {
    if (!chain_.options().scaling || chain_.links().empty()) return false;
    const FilterChain::Link& newest = chain_.links().back();
    return newest.items + count >= newest.params.capacity;
  }

  FilterChain& chain_;
};

}  // namespace

BloomValue* own_filter_value(FilterChain& chain, ValueStorage& storage) noexcept {
  static_assert(sizeof(OwnFilterValue) <= kInlineValueBytes);
  return new (storage.bytes) OwnFilterValue(chain);
}

}  // namespace redbloom::module
