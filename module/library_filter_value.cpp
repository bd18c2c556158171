// A filter of redbloom's library (a metadata hash and string partitions, plain_filter.hpp)
// behind BF.*: a plain filter answers adds, lookups and BF.INFO; every other redbloom object
// at a BF.* key is named in an error, never answered as empty.
#include <string>

#include "bloom_value.hpp"
#include "plain_filter.hpp"

namespace redbloom::module {

namespace {

constexpr std::string_view kNoDumps =
    "BF.SCANDUMP and BF.LOADCHUNK copy only the module's own filters; copy this one with "
    "`redbloom export` and `redbloom import`";

constexpr std::string_view kOnlyPlain =
    "BF.* commands work on redbloom's plain filters on one server (and on the module's own "
    "filters); use the redbloom library or CLI for this one";

class LibraryFilterValue final : public BloomValue {
 public:
  LibraryFilterValue(std::string_view name, RedbloomHash hash)
      : name_(name), hash_(std::move(hash)) {}

  // A plain filter never refuses an item: every one is answered, or nothing was written.
  Refusal add(RedisModuleCtx* ctx, std::span<const std::string_view> items, PastRefusal,
              AddOutcome& out) override {
    if (!hash_.plain) return kind_error(name_, hash_, kOnlyPlain);
    out.answers.assign(items.size(), 0);
    return plain_add(ctx, name_, *hash_.plain, items, out.answers.data(), &out.changed);
  }

  Refusal contains(RedisModuleCtx* ctx, std::span<const std::string_view> items,
                   std::uint8_t* present) const override {
    if (!hash_.plain) return kind_error(name_, hash_, kOnlyPlain);
    return plain_contains(ctx, name_, *hash_.plain, items, present);
  }

  Refusal card(long long&) const override {
    return kind_error(name_, hash_,
                      hash_.plain ? "it does not count its items (BF.INFO gives its capacity "
                                    "and size)"
                                  : kOnlyPlain);
  }

  // Its capacity, the bytes of its partitions, one filter, and nil for the items inserted (it
  // does not count them) and for the expansion (it does not grow).
  Refusal info(std::vector<InfoField>& fields) const override {
    if (!hash_.plain) return kind_error(name_, hash_, kOnlyPlain);
    const FilterParams& p = hash_.plain->params;
    fields = {
        {"CAPACITY", "Capacity", static_cast<long long>(p.capacity)},
        {"SIZE", "Size", static_cast<long long>(p.total_bytes())},
        {"FILTERS", "Number of filters", 1},
        {"ITEMS", "Number of items inserted", std::nullopt},
        {"EXPANSION", "Expansion rate", std::nullopt},
    };
    return std::nullopt;
  }

  Refusal debug(std::vector<std::string>&) const override {
    return kind_error(name_, hash_, kOnlyPlain);
  }

  Refusal scandump(std::optional<long long>, DumpStep&) const override {
    return kind_error(name_, kind_only(), kNoDumps);
  }

  Refusal loadchunk(long long, std::string_view) override {
    return kind_error(name_, kind_only(), kNoDumps);
  }

  // The library keeps its own record of its filters (their metadata).
  [[nodiscard]] std::optional<std::uint64_t> creation() const override { return std::nullopt; }

  [[nodiscard]] std::string occupied() const override {
    return kind_error(name_, kind_only(), "BF.RESERVE makes a filter only at a free key");
  }

 private:
  // The kind alone, for errors where why BF.* cannot read it does not matter.
  [[nodiscard]] RedbloomHash kind_only() const { return {hash_.kind, std::nullopt, {}}; }

  std::string_view name_;  // the command's argument: valid while the command runs
  RedbloomHash hash_;
};

}  // namespace

std::unique_ptr<BloomValue> library_filter_value(RedisModuleCtx* ctx, std::string_view name,
                                                 RedisModuleKey* key) {
  RedbloomHash hash = inspect_hash(ctx, name, key);
  if (hash.kind.empty()) return nullptr;
  return std::make_unique<LibraryFilterValue>(name, std::move(hash));
}

}  // namespace redbloom::module
