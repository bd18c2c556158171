// Filter::use_threads: a batch split over threads must give exactly what one thread gives (the
// same flags, in order, and the same bits), for both layouts, with one partition (adds then
// stay on one thread) and with several (classic adds split by partition; blocked adds stay on
// one thread, lookups split for both). Giving an item to two threads fails these checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "local/memory_store.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"

namespace redbloom {
namespace {

struct Twins {
  explicit Twins(const FilterParams& params)
      : one_store(new MemoryStore(params)),
        split_store(new MemoryStore(params)),
        one(std::unique_ptr<Store>(one_store)),
        split(std::unique_ptr<Store>(split_store)) {
    split.use_threads(3);
  }
  MemoryStore* one_store;
  MemoryStore* split_store;
  Filter one;
  Filter split;
};

// 60k items with repeats inside each batch, so the "second of two equal items is not new"
// rule is tested across the split.
std::vector<std::string> items_with_repeats() {
  std::vector<std::string> items;
  for (int i = 0; i < 60000; ++i) items.push_back("t-" + std::to_string(i % 45000 * 7919 % 45000));
  return items;
}

void expect_same_as_one_thread(const FilterParams& params) {
  SCOPED_TRACE(describe(params));
  Twins twins(params);
  const std::vector<std::string> items = items_with_repeats();
  const std::vector<std::string_view> views(items.begin(), items.end());
  std::vector<std::uint8_t> one_new(views.size());
  std::vector<std::uint8_t> split_new(views.size());
  // Batches large enough to split (>= 2048 items) and one too small to.
  const std::size_t cuts[] = {0, 20000, 21000, 60000};
  for (int c = 0; c < 3; ++c) {
    const auto batch = std::span(views).subspan(cuts[c], cuts[c + 1] - cuts[c]);
    const std::size_t a = twins.one.add_many(batch, std::span(one_new).subspan(cuts[c]));
    const std::size_t b = twins.split.add_many(batch, std::span(split_new).subspan(cuts[c]));
    EXPECT_EQ(a, b);
  }
  EXPECT_EQ(one_new, split_new);
  EXPECT_LE(std::count(split_new.begin(), split_new.end(), 1), 45000);
  EXPECT_TRUE(std::equal(twins.one_store->bytes().begin(), twins.one_store->bytes().end(),
                         twins.split_store->bytes().begin()));

  std::vector<std::string> probes = items;
  for (int i = 0; i < 60000; ++i) probes.push_back("absent-" + std::to_string(i));
  const std::vector<std::string_view> probe_views(probes.begin(), probes.end());
  std::vector<std::uint8_t> one_present(probe_views.size());
  std::vector<std::uint8_t> split_present(probe_views.size());
  twins.one.contains_many(probe_views, one_present);
  twins.split.contains_many(probe_views, split_present);
  EXPECT_EQ(one_present, split_present);
  EXPECT_TRUE(std::all_of(split_present.begin(), split_present.begin() + 60000, [](std::uint8_t f) {
    return f == 1;
  })) << "false negative";

  // load_many splits the same way as add_many.
  Twins bulk(params);
  bulk.one.load_many(views);
  bulk.split.load_many(views);
  EXPECT_TRUE(std::equal(bulk.one_store->bytes().begin(), bulk.one_store->bytes().end(),
                         bulk.split_store->bytes().begin()));
}

TEST(Threads, SplitBatchesGiveTheSameFlagsAndBitsAsOneThread) {
  for (Layout layout_kind : {Layout::classic, Layout::blocked}) {
    // One partition, then five (of 4 KiB each) so that adds split three ways unevenly.
    expect_same_as_one_thread(explicit_filter(600000, 7, layout_kind));
    expect_same_as_one_thread(explicit_filter(5 * 32768, 7, layout_kind, 0, 4096));
  }
}

TEST(Threads, ZeroThreadsIsRefused) {
  Filter filter = Filter::in_memory(size_filter(1000, 0.01, Layout::classic));
  EXPECT_THROW(filter.use_threads(0), InvalidArgument);
  filter.use_threads(1);
  EXPECT_TRUE(filter.add("x"));
}

}  // namespace
}  // namespace redbloom
