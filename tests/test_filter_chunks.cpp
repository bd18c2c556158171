// Filter splits large batches into the store's chunks; a failure after the first chunk must
// still say how many items are committed, whatever kind of storage error the store raised.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "local/memory_store.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

// A memory store whose calls fail with a plain StorageError from the `fail_at`-th call on,
// in chunks of `kChunk` items, as a store that loses its disk or its server mid-batch would.
class FailingStore final : public Store {
 public:
  static constexpr std::size_t kChunk = 100;
  FailingStore(const FilterParams& params, int fail_at) : inner_(params), fail_at_(fail_at) {}
  const FilterParams& params() const noexcept override { return inner_.params(); }
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly) override {
    step();
    inner_.add(items, newly);
  }
  void load(std::span<const std::string_view> items) override {
    step();
    inner_.load(items);
  }
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override {
    step();
    inner_.contains(items, present);
  }
  std::uint64_t count_set_bits() const override { return inner_.count_set_bits(); }
  void read_bytes(std::uint64_t partition, std::uint64_t offset,
                  std::span<std::uint8_t> out) const override {
    inner_.read_bytes(partition, offset, out);
  }
  void write_bytes(std::uint64_t partition, std::uint64_t offset,
                   std::span<const std::uint8_t> bytes) override {
    inner_.write_bytes(partition, offset, bytes);
  }
  std::uint64_t storage_bytes() const override { return inner_.storage_bytes(); }
  void flush() override {}
  std::string location() const override { return "failing memory"; }
  std::size_t batch_items() const noexcept override { return kChunk; }
  std::size_t bulk_batch_items() const noexcept override { return kChunk; }

 private:
  void step() const {
    if (++calls_ >= fail_at_) throw StorageError("the store went away");
  }
  MemoryStore inner_;
  int fail_at_;
  mutable int calls_ = 0;
};

std::vector<std::string> numbered(int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(std::string("item-").append(std::to_string(i)));
  return names;
}

std::size_t committed_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const IncompleteWrite& e) {
    return e.committed();
  }
  ADD_FAILURE() << "expected IncompleteWrite";
  return 0;
}

TEST(FilterChunks, AStorageErrorAfterTheFirstChunkSaysWhatWasCommitted) {
  const FilterParams params = size_filter(10000, 0.01, Layout::blocked);
  const std::vector<std::string> names = numbered(350);
  const std::vector<std::string_view> items(names.begin(), names.end());
  for (int fail_at : {2, 3, 4}) {
    const std::size_t before = static_cast<std::size_t>(fail_at - 1) * FailingStore::kChunk;
    {
      Filter filter(std::make_unique<FailingStore>(params, fail_at));
      std::vector<std::uint8_t> flags(items.size());
      EXPECT_EQ(committed_of([&] { filter.add_many(items, flags); }), before) << fail_at;
    }
    {
      Filter filter(std::make_unique<FailingStore>(params, fail_at));
      EXPECT_EQ(committed_of([&] { filter.load_many(items); }), before) << fail_at;
    }
  }
  // The first chunk failing commits nothing: the store's own error, unchanged.
  Filter first(std::make_unique<FailingStore>(params, 1));
  EXPECT_THROW(
      {
        try {
          first.add_many(items);
        } catch (const IncompleteWrite&) {
          FAIL() << "nothing was committed";
        }
      },
      StorageError);
}

TEST(FilterChunks, ALookupThatFailsMidwayIsAStorageErrorNotAWrite) {
  const FilterParams params = size_filter(10000, 0.01, Layout::blocked);
  const std::vector<std::string> names = numbered(350);
  const std::vector<std::string_view> items(names.begin(), names.end());
  Filter filter(std::make_unique<FailingStore>(params, 2));
  try {
    filter.contains_many(items);
    FAIL() << "expected StorageError";
  } catch (const IncompleteWrite&) {
    FAIL() << "a lookup commits nothing";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("went away"), std::string::npos);
  }
}

}  // namespace
}  // namespace redbloom
