// The partition view (src/core/partition_view.hpp) on memory of any alignment gives the bits
// and answers of the aligned local store: both layouts, k from 1 to 16, at every offset of a
// cache line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/bit_order.hpp"
#include "core/bitmap_buffer.hpp"
#include "core/item_hash_inline.hpp"
#include "core/layout.hpp"
#include "core/partition_view.hpp"
#include "local/memory_store.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using testing::make_items;
using testing::views_of;

TEST(PartitionView, SameBitsAndAnswersAsTheStoreAtEveryAlignment) {
  const auto items = make_items(3000, "v-");
  const auto views = views_of(items);
  const auto absent = make_items(3000, "absent-");
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    for (std::uint32_t k = 1; k <= 16; k += 3) {
      const FilterParams params = explicit_filter(64 * 1024, k, layout, 3000, 64 * 1024 / 8);
      ASSERT_EQ(params.partitions, 1u);
      MemoryStore store(params);
      std::vector<std::uint8_t> expected_new(views.size());
      store.add(views, expected_new);
      for (std::size_t offset = 0; offset < 64; offset += 7) {
        SCOPED_TRACE(std::string(to_string(layout)) + " k=" + std::to_string(k) +
                     " offset=" + std::to_string(offset));
        std::vector<std::uint8_t> buffer(params.partition_bytes() + 64, 0);
        PartitionView view(buffer.data() + offset, params);
        std::vector<std::uint8_t> newly(views.size());
        EXPECT_EQ(view.add(views, newly.data()), static_cast<std::size_t>(std::count(
                                                     expected_new.begin(), expected_new.end(), 1)));
        EXPECT_EQ(newly, expected_new);
        EXPECT_EQ(
            std::memcmp(buffer.data() + offset, store.bytes().data(), params.partition_bytes()), 0)
            << "other bits than the store's";
        std::vector<std::uint8_t> present(views.size()), expected(views.size());
        EXPECT_EQ(view.contains(views, present.data()), views.size()) << "a false negative";
        const auto others = views_of(absent);
        store.contains(others, expected);
        view.contains(others, present.data());
        EXPECT_EQ(present, expected);
      }
    }
  }
}

// The simplest reading of layout.hpp: each probe's bit set or tested one byte at a time.
struct Reference {
  std::vector<std::uint8_t> bytes;
  FilterParams params;

  template <class Visit>
  void probes(const ItemHash& h, Visit&& visit) const {
    if (params.layout == Layout::blocked) {
      layout::blocked_probes(h, params.partition_bits, params.hashes, visit);
    } else {
      layout::classic_probes(h, params.partition_bits, params.hashes, visit);
    }
  }
  bool add(const ItemHash& h) {
    bool fresh = false;
    probes(h, [&](std::uint64_t bit) {
      fresh = fresh || (bytes[redis_byte_index(bit)] & redis_byte_mask(bit)) == 0;
      bytes[redis_byte_index(bit)] |= redis_byte_mask(bit);
    });
    return fresh;
  }
  [[nodiscard]] bool contains(const ItemHash& h) const {
    bool all = true;
    probes(h, [&](std::uint64_t bit) {
      all = all && (bytes[redis_byte_index(bit)] & redis_byte_mask(bit)) != 0;
    });
    return all;
  }
};

// The one-item calls the module's windowed and growing links use, at every byte offset of a
// line (so that every 8-byte word of a blocked line straddles two aligned words) and with k
// across the rounds of eight probes (1, 8, 9, 17, 64), against the reference; no byte outside
// the partition is touched.
TEST(PartitionView, OneItemCallsMatchTheReferenceAtEveryOffset) {
  const auto items = make_items(1500, "o-");
  const auto absent = make_items(1500, "absent-o-");
  constexpr std::size_t kGuard = 64;
  constexpr std::uint8_t kGuardByte = 0xA5;
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    for (const std::uint32_t k : {1u, 7u, 8u, 9u, 16u, 17u, 24u, 33u, 64u}) {
      const FilterParams params = explicit_filter(16 * 1024, k, layout, 1500, 16 * 1024 / 8);
      for (std::size_t offset = 0; offset < 64; ++offset) {
        SCOPED_TRACE(std::string(to_string(layout)) + " k=" + std::to_string(k) +
                     " offset=" + std::to_string(offset));
        std::vector<std::uint8_t> buffer(params.partition_bytes() + 2 * kGuard, kGuardByte);
        std::uint8_t* start = buffer.data() + kGuard + offset;
        std::fill(start, start + params.partition_bytes(), 0);
        PartitionView view(start, params);
        Reference reference{std::vector<std::uint8_t>(params.partition_bytes(), 0), params};
        bool same_answers = true;
        for (const std::string& item : items) {
          const ItemHash h = detail::hash_inline(item);
          same_answers = same_answers && view.add_one(h) == reference.add(h);
        }
        EXPECT_TRUE(same_answers) << "add_one answered otherwise than the reference";
        EXPECT_EQ(std::memcmp(start, reference.bytes.data(), params.partition_bytes()), 0)
            << "other bits than the reference's";
        for (const std::string& item : absent) {
          const ItemHash h = detail::hash_inline(item);
          same_answers = same_answers && view.contains_one(h) == reference.contains(h);
        }
        for (const std::string& item : items) {
          same_answers = same_answers && view.contains_one(detail::hash_inline(item));
        }
        EXPECT_TRUE(same_answers) << "contains_one answered otherwise than the reference";
        const auto outside = [&](std::uint8_t byte) { return byte != kGuardByte; };
        EXPECT_EQ(std::count_if(buffer.data(), start, outside), 0) << "wrote before the partition";
        EXPECT_EQ(
            std::count_if(start + params.partition_bytes(), buffer.data() + buffer.size(), outside),
            0)
            << "wrote past the partition";
      }
    }
  }
}

// The Redis store's buffer for bulk work holds the bits a local store would.
TEST(BitmapBuffer, SameBitsAndAnswersAsTheStore) {
  const auto items = make_items(4000, "b-");
  const auto views = views_of(items);
  const auto absent = views_of(make_items(4000, "absent-b-"));
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    const FilterParams params = size_filter(4000, 0.001, layout);
    MemoryStore store(params);
    store.load(views);
    BitmapBuffer buffer(params);
    buffer.set(views);
    ASSERT_EQ(buffer.bytes().size(), store.bytes().size());
    EXPECT_TRUE(std::equal(buffer.bytes().begin(), buffer.bytes().end(), store.bytes().begin()));
    std::vector<std::uint8_t> present(absent.size()), expected(absent.size());
    buffer.test(absent, present.data());
    store.contains(absent, expected);
    EXPECT_EQ(present, expected);
  }
}

}  // namespace
}  // namespace redbloom
