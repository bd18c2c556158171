// The Bloom filter value a BF.* command works on, whatever encodes it: the module's own type
// (`redbloomF`), RedisBloom's (`MBbloom--`) or a filter of redbloom's library kept in a hash
// and string partitions. As Redis's own type APIs hide their encodings, each command opens its
// key once (BloomKey: the one place that tells the kinds apart) and calls the value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "command_support.hpp"
#include "core/redisbloom_chain.hpp"

namespace redbloom::module {

// Which type a new filter gets: redbloom's own (`redbloomF`, the default) or RedisBloom's
// (`MBbloom--`, which RedisBloom can load again). BF.RESERVE and BF.INSERT take FORMAT; the
// DEFAULT_FORMAT load argument sets it for the others.
enum class FilterFormat : std::uint8_t { redbloom, redisbloom };
[[nodiscard]] std::optional<FilterFormat> parse_format(std::string_view word) noexcept;
FilterFormat& default_format() noexcept;

// The error text a value answers with instead of doing an operation (nothing was written);
// nullopt when it was done.
using Refusal = std::optional<std::string>;

// What an adding command did: an answer per item handled, in order (0 present, 1 added,
// 2 refused), the first refusal's error text, and whether any bit changed.
struct AddOutcome {
  std::vector<std::uint8_t> answers;
  std::string refusal;
  bool changed = false;
};
// BF.ADD, BF.MADD and BF.INSERT stop at the first refused item (RedisBloom adds none after
// it); RB.MADD answers every item.
enum class PastRefusal : std::uint8_t { stop, go_on };

// A BF.INFO field: the option that asks for it alone, its label, its value (nil when unset).
struct InfoField {
  const char* option;
  const char* label;
  std::optional<long long> value;
};

// One BF.SCANDUMP step: the iterator to send next and the header or the chunk of bits.
struct DumpStep {
  long long next = 0;
  std::string header;
  std::span<const std::uint8_t> chunk;
};

class BloomValue {
 public:
  virtual ~BloomValue() = default;
  // Test-and-set in order into `out`.
  virtual Refusal add(RedisModuleCtx* ctx, std::span<const std::string_view> items,
                      PastRefusal past, AddOutcome& out) = 0;
  // present[i] = 1 when item i is (probably) in the filter.
  virtual Refusal contains(RedisModuleCtx* ctx, std::span<const std::string_view> items,
                           std::uint8_t* present) const = 0;
  virtual Refusal card(long long& items) const = 0;
  virtual Refusal info(std::vector<InfoField>& fields) const = 0;
  // BF.DEBUG's lines: the items, then one line per sub-filter.
  virtual Refusal debug(std::vector<std::string>& lines) const = 0;
  // `iterator` is nullopt when the client's was not a number.
  virtual Refusal scandump(std::optional<long long> iterator, DumpStep& step) const = 0;
  // The chunk of bits that ends before byte `iterator` - 1.
  virtual Refusal loadchunk(long long iterator, std::string_view data) = 0;
  // BF.RESERVE's error at a key that holds this value.
  [[nodiscard]] virtual std::string occupied() const = 0;
  // The filter's creation id (creation_ids.hpp); nullopt for a filter that has none.
  [[nodiscard]] virtual std::optional<std::uint64_t> creation() const = 0;
};

// Room for a value of the module's own types kept inside the BloomKey: no allocation per
// command on their path.
inline constexpr std::size_t kInlineValueBytes = 32;
struct ValueStorage {
  alignas(std::max_align_t) std::byte bytes[kInlineValueBytes];
};

// A BF.* key, opened once for the command: empty, another type's, or a Bloom filter value.
class BloomKey {
 public:
  BloomKey(RedisModuleCtx* ctx, RedisModuleString* name, int mode);
  BloomKey(const BloomKey&) = delete;
  BloomKey& operator=(const BloomKey&) = delete;
  ~BloomKey();
  [[nodiscard]] bool empty() const noexcept { return key_.empty(); }
  // A key of a type BF.* does not serve (a hash that is not redbloom's counts as one).
  [[nodiscard]] bool other_type() const noexcept { return !empty() && value_ == nullptr; }
  [[nodiscard]] BloomValue* value() const noexcept { return value_; }

  // Makes a filter at the empty key. Throws InvalidArgument (nothing written) for figures
  // that cannot be made or that pass a memory limit.
  BloomValue& create(FilterFormat format, const ChainOptions& options);
  // BF.LOADCHUNK key 1 header at the empty key: a filter of the header's shape, its format
  // told by the header.
  Refusal create_from_header(std::string_view header);

 private:
  RedisModuleCtx* ctx_;
  OpenKey key_;
  ValueStorage inline_;                // the value of the module's own types
  std::unique_ptr<BloomValue> owned_;  // the value of a library filter
  BloomValue* value_ = nullptr;        // one of them, or none
};

// The values, one per encoding (own_filter_value.cpp, redisbloom_value.cpp,
// library_filter_value.cpp).
// The first two make the value in `storage`.
BloomValue* own_filter_value(FilterChain& chain, ValueStorage& storage) noexcept;
BloomValue* redisbloom_value(redisbloom::Chain& chain, ValueStorage& storage) noexcept;
// nullptr when the hash at the key is not redbloom's.
[[nodiscard]] std::unique_ptr<BloomValue> library_filter_value(RedisModuleCtx* ctx,
                                                               std::string_view name,
                                                               RedisModuleKey* key);

}  // namespace redbloom::module
