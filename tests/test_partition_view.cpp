// The partition view (src/core/partition_view.hpp) on memory of any alignment gives the bits
// and answers of the aligned local store: both layouts, k from 1 to 16, at every offset of a
// cache line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace redbloom
