// Safe removes (KnownSet::remove) over a cuckoo filter and its exact set: an item the set does
// not hold is refused and counted and never reaches the filter, so no added item ever goes
// missing; removed items are gone from both; items can be added again; items that share a
// fingerprint in the filter each keep their own copy; a Bloom filter, or a filter without its
// set, refuses before anything changes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "error_of.hpp"
#include "redbloom/cuckoo.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/known_set.hpp"
#include "redbloom/location.hpp"
#include "redbloom/params.hpp"
#include "temp_dir.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using redbloom::testing::make_items;
using redbloom::testing::TempDir;
using redbloom::testing::views_of;
using Mode = KnownSet::Mode;

CuckooOptions options(std::uint64_t capacity, double error_rate, std::uint32_t growth = 0) {
  CuckooOptions o;
  o.capacity = capacity;
  o.error_rate = error_rate;
  o.growth = growth;
  return o;
}

// How many of `items` the filter alone calls absent (false negatives, for added items).
std::size_t absent_in_filter(const Filter& filter, const std::vector<std::string>& items) {
  std::vector<std::uint8_t> present(items.size());
  return items.size() - filter.contains_many(views_of(items), present);
}

std::size_t missing(KnownSet& known, const std::vector<std::string>& items, Mode mode) {
  std::vector<std::uint8_t> flags(items.size());
  return known.missing_batch(views_of(items), flags, mode);
}

// The case: 50k items added, 50k never added removed: all refused and counted, and
// every added item still present, in the filter and the set.
TEST(KnownSetRemove, NeverAddedItemsAreRefusedAndNoAddedItemGoesMissing) {
  TempDir dir;
  auto known = KnownSet::create(Location::file(dir.file("c.rbf")), options(60'000, 0.01), true);
  const auto added = make_items(50'000, "added-");
  const auto never = make_items(50'000, "never-");
  known.add(added);
  std::vector<std::uint8_t> removed(never.size(), 9);
  const KnownSet::RemoveResult result = known.remove(views_of(never), removed);
  EXPECT_EQ(result.removed, 0u);
  EXPECT_EQ(result.refused, 50'000u);
  for (const std::uint8_t flag : removed) ASSERT_EQ(flag, 0);
  EXPECT_EQ(absent_in_filter(known.filter(), added), 0u);
  EXPECT_EQ(missing(known, added, Mode::exact), 0u);
  const KnownSet::Stats stats = known.stats();
  EXPECT_EQ(stats.refused, 50'000u);
  EXPECT_EQ(stats.removed, 0u);
  EXPECT_EQ(stats.exact_entries, 50'000u);
  ASSERT_TRUE(stats.filter.cuckoo.has_value());
  EXPECT_EQ(stats.filter.cuckoo->items, 50'000u) << "one copy per item, none taken";
  // A bare cuckoo remove of the same items takes fingerprints of added ones (at p = 1%, about
  // 2 x 4 x 50k / 2^fingerprint bits of them): what the set's check prevents.
  auto bare = Filter::create(Location::memory(), options(60'000, 0.01));
  bare.load_many(views_of(added));
  EXPECT_GT(bare.remove_many(views_of(never)), 0u);
  EXPECT_GT(absent_in_filter(bare, added), 0u);
}

// Removed items leave both the set and the filter (up to the filter's false positives); the
// others all stay, including those that share a fingerprint with a removed one (at p = 1%
// about 1 in 100 items tested present before it was added: a test-and-set add would have
// given such a pair one copy, which the first remove would take).
TEST(KnownSetRemove, RemovedItemsAreGoneFromBothAndTheOthersStay) {
  TempDir dir;
  const std::string path = dir.file("c.rbf");
  auto known = KnownSet::create(Location::file(path), options(60'000, 0.01), true);
  const auto items = make_items(50'000, "item-");
  std::vector<std::string> gone;
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < items.size(); ++i) (i % 2 ? gone : kept).push_back(items[i]);
  known.add(items);
  std::vector<std::uint8_t> removed(gone.size());
  const auto result = known.remove(views_of(gone), removed);
  EXPECT_EQ(result.removed, gone.size());
  EXPECT_EQ(result.refused, 0u);
  for (const std::uint8_t flag : removed) ASSERT_EQ(flag, 1);
  EXPECT_EQ(absent_in_filter(known.filter(), kept), 0u) << "false negatives";
  EXPECT_EQ(missing(known, kept, Mode::exact), 0u);
  EXPECT_EQ(missing(known, gone, Mode::exact), gone.size());
  // The filter alone: absent but for its false positives (p = 1%).
  EXPECT_GT(absent_in_filter(known.filter(), gone), gone.size() * 95 / 100);
  EXPECT_EQ(known.filter().info().cuckoo->items, kept.size());
  // Removed again: refused; then added again, present again, and the same for a new object.
  EXPECT_EQ(known.remove(views_of(gone)).refused, gone.size());
  known.add(gone);
  EXPECT_EQ(absent_in_filter(known.filter(), items), 0u);
  auto reopened = KnownSet::open(Location::file(path), true);
  EXPECT_EQ(missing(reopened, items, Mode::exact), 0u);
  EXPECT_EQ(reopened.filter().info().cuckoo->items, items.size()) << "one copy per item";
  EXPECT_EQ(reopened.remove(views_of(kept)).removed, kept.size());
  EXPECT_EQ(missing(known, gone, Mode::exact), 0u) << "the other object sees the removes";
  EXPECT_EQ(missing(known, kept, Mode::exact), kept.size());
}

// Adds and removes in rounds against a model (the set of items added and not removed since),
// with repeats inside batches and items added again: zero false negatives throughout.
TEST(KnownSetRemove, RoundsOfAddsAndRemovesMatchAModel) {
  TempDir dir;
  auto known = KnownSet::create(Location::file(dir.file("c.rbf")), options(20'000, 0.01), true);
  const auto universe = make_items(12'000, "u-");
  std::vector<std::uint8_t> model(universe.size(), 0);
  std::uint64_t state = 42;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>(state >> 33);
  };
  for (int round = 0; round < 8; ++round) {
    std::vector<std::string> adds;
    std::vector<std::string> removes;
    for (int i = 0; i < 4000; ++i) adds.push_back(universe[next() % universe.size()]);
    for (int i = 0; i < 4000; ++i) removes.push_back(universe[next() % universe.size()]);
    known.add(adds);
    for (const std::string& item : adds) model[std::stoul(item.substr(2))] = 1;
    std::uint64_t expected_removed = 0;
    for (const std::string& item : removes) {
      std::uint8_t& held = model[std::stoul(item.substr(2))];
      expected_removed += held;
      held = 0;
    }
    const auto result = known.remove(views_of(removes));
    EXPECT_EQ(result.removed, expected_removed) << "round " << round;
    EXPECT_EQ(result.refused, removes.size() - expected_removed) << "round " << round;
    std::vector<std::string> held;
    for (std::size_t i = 0; i < universe.size(); ++i) {
      if (model[i]) held.push_back(universe[i]);
    }
    EXPECT_EQ(absent_in_filter(known.filter(), held), 0u) << "round " << round;
    std::vector<std::uint8_t> flags(universe.size());
    known.missing_batch(views_of(universe), flags, Mode::exact);
    for (std::size_t i = 0; i < universe.size(); ++i) {
      ASSERT_EQ(flags[i], model[i] ? 0 : 1) << "round " << round << " item " << i;
    }
    EXPECT_EQ(known.filter().info().cuckoo->items, held.size()) << "round " << round;
  }
}

// A growing filter's links hold fingerprints of other widths in other places, so an item can
// match another item's copy in one link and its own in another: a remove that took the first
// made the other item absent (4 of 30k kept items at p = 1%, 4 links, when removes took the
// newest link's copy). Copies held in several links stay instead (left_in_filter, a few per
// thousand), and no kept item goes missing.
TEST(KnownSetRemove, AGrowingFilterNeverTakesAnotherItemsCopy) {
  TempDir dir;
  auto known = KnownSet::create(Location::file(dir.file("c.rbf")), options(5'000, 0.01, 2), true);
  const auto items = make_items(60'000, "item-");
  known.add(items);
  ASSERT_GE(known.filter().info().cuckoo->links.size(), 3u);
  std::vector<std::string> gone;
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < items.size(); ++i) (i % 2 ? gone : kept).push_back(items[i]);
  const auto result = known.remove(views_of(gone));
  EXPECT_EQ(result.removed, gone.size());
  EXPECT_EQ(absent_in_filter(known.filter(), kept), 0u) << "false negatives";
  EXPECT_EQ(missing(known, kept, Mode::exact), 0u);
  EXPECT_EQ(missing(known, gone, Mode::exact), gone.size());
  EXPECT_LT(result.left_in_filter, gone.size() / 50);
  EXPECT_EQ(known.filter().info().cuckoo->items, kept.size() + result.left_in_filter);
  EXPECT_EQ(known.stats().left_in_filter, result.left_in_filter);
}

// Four objects on one file (as four processes would be), adding shared items at once (racing
// adders may each store a copy: stale ones, never a missing one) and their own items, then
// removing half of their own and names never added: the rest is all there.
TEST(KnownSetRemove, ConcurrentObjectsOnOneFileLoseNothing) {
  TempDir dir;
  const std::string path = dir.file("c.rbf");
  { (void)KnownSet::create(Location::file(path), options(100'000, 0.01), true); }
  const auto shared = make_items(5'000, "shared-");
  constexpr int kThreads = 4;
  std::vector<std::vector<std::string>> kept(kThreads);
  std::vector<std::vector<std::string>> gone(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      try {
        auto known = KnownSet::open(Location::file(path), true);
        const auto own = make_items(10'000, "t" + std::to_string(t) + "-");
        for (std::size_t at = 0; at < own.size(); at += 1'000) {
          known.add(
              std::vector<std::string>(shared.begin() + static_cast<std::ptrdiff_t>(at / 2),
                                       shared.begin() + static_cast<std::ptrdiff_t>(at / 2 + 500)));
          const std::vector<std::string> batch(
              own.begin() + static_cast<std::ptrdiff_t>(at),
              own.begin() + static_cast<std::ptrdiff_t>(at + 1'000));
          known.add(batch);
          std::vector<std::string> removes =
              make_items(200, "never-" + std::to_string(t) + "-", at);
          for (std::size_t i = 0; i < batch.size(); ++i) {
            (i % 2 ? gone[t] : kept[t]).push_back(batch[i]);
            if (i % 2) removes.push_back(batch[i]);
          }
          const auto result = known.remove(views_of(removes));
          if (result.removed != 500 || result.refused != 200) {
            errors[t] = "removed " + std::to_string(result.removed) + ", refused " +
                        std::to_string(result.refused);
          }
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  auto known = KnownSet::open(Location::file(path), true);
  EXPECT_EQ(absent_in_filter(known.filter(), shared), 0u);
  EXPECT_EQ(missing(known, shared, Mode::exact), 0u);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(absent_in_filter(known.filter(), kept[t]), 0u) << t;
    EXPECT_EQ(missing(known, kept[t], Mode::exact), 0u) << t;
    EXPECT_EQ(missing(known, gone[t], Mode::exact), gone[t].size()) << t;
  }
  EXPECT_EQ(known.stats().exact_entries, shared.size() + kThreads * 5'000u);
}

// What add --exact and other writers call: over a cuckoo filter the answers are the
// companion's (exact), one copy per new item; over a Bloom filter the filter's.
TEST(KnownSetRemove, AddWithExactSetAnswersAndStoresOneCopyPerNewItem) {
  TempDir dir;
  Filter cuckoo = Filter::create(Location::file(dir.file("c.rbf")), options(1000, 0.01));
  const auto set = create_exact_set(Location::file(dir.file("c.rbf")), cuckoo);
  std::vector<std::uint8_t> fresh(4, 9);
  EXPECT_EQ(add_with_exact_set(cuckoo, *set, views_of({"a", "b", "a", "c"}), fresh), 3u);
  EXPECT_EQ(fresh, (std::vector<std::uint8_t>{1, 1, 0, 1}));
  EXPECT_EQ(add_with_exact_set(cuckoo, *set, views_of({"b", "d"}), fresh), 1u);
  EXPECT_EQ(fresh[0], 0);
  EXPECT_EQ(fresh[1], 1);
  EXPECT_EQ(cuckoo.info().cuckoo->items, 4u);
  EXPECT_EQ(set->entries(), 4u);
  EXPECT_EQ(cuckoo.count("a"), 1u);

  Filter bloom =
      Filter::create(Location::file(dir.file("b.rbf")), size_filter(1000, 0.01, Layout::classic));
  const auto bloom_set = create_exact_set(Location::file(dir.file("b.rbf")), bloom);
  EXPECT_EQ(add_with_exact_set(bloom, *bloom_set, views_of({"a", "b", "a"}), fresh), 2u);
  EXPECT_EQ(std::vector<std::uint8_t>(fresh.begin(), fresh.begin() + 3),
            (std::vector<std::uint8_t>{1, 1, 0}));
  EXPECT_EQ(bloom_set->entries(), 2u);
}

// A cuckoo filter in memory, with a companion file beside (memory filters have none of their
// own).
TEST(KnownSetRemove, AMemoryFilterWithACompanion) {
  TempDir dir;
  KnownSet known(Filter::create(Location::memory(), options(10'000, 0.001)),
                 create_file_exact_set(dir.file("mem")));
  const auto items = make_items(5'000, "m-");
  known.add(items);
  const auto result = known.remove(views_of({"m-1", "m-1", "not-added"}));
  EXPECT_EQ(result.removed, 1u);
  EXPECT_EQ(result.refused, 2u);
  EXPECT_EQ(known.filter().info().cuckoo->items, 4'999u);
  EXPECT_EQ(missing(known, items, Mode::exact), 1u);
  std::vector<std::string> rest(items.begin() + 2, items.end());
  EXPECT_EQ(absent_in_filter(known.filter(), rest), 0u);
}

// A crash between the set's remove and the filter's leaves the item in the filter alone: exact
// answers call it missing, and a second remove is refused, so no other item's copy is taken.
TEST(KnownSetRemove, ACrashBetweenTheTwoStepsLeavesAStaleCopyOnly) {
  TempDir dir;
  const std::string path = dir.file("c.rbf");
  auto known = KnownSet::create(Location::file(path), options(1'000, 0.01), true);
  known.add(std::vector<std::string>{"a", "b"});
  // The first step alone, as a process killed after it would leave it.
  open_file_exact_set(path)->remove(views_of({"a"}));
  EXPECT_EQ(missing(known, {"a", "b"}, Mode::exact), 1u);
  EXPECT_TRUE(known.filter().contains("a")) << "the stale copy";
  const auto result = known.remove(views_of({"a"}));
  EXPECT_EQ(result.removed, 0u);
  EXPECT_EQ(result.refused, 1u);
  EXPECT_TRUE(known.filter().contains("a"));
  EXPECT_TRUE(known.filter().contains("b"));
}

TEST(KnownSetRemove, ABloomFilterOrNoCompanionRefusesBeforeAnythingChanges) {
  TempDir dir;
  const std::string bloom = dir.file("b.rbf");
  auto known =
      KnownSet::create(Location::file(bloom), size_filter(1000, 0.01, Layout::classic), true);
  known.add(std::vector<std::string>{"a"});
  const std::string message = error_of([&] { known.remove(views_of({"a"})); });
  EXPECT_THROW(known.remove(views_of({"a"})), InvalidArgument);
  EXPECT_TRUE(contains_text(message, "is a Bloom filter: it cannot remove")) << message;
  EXPECT_EQ(known.stats().exact_entries, 1u) << "the companion kept it";
  EXPECT_EQ(missing(known, {"a"}, Mode::exact), 0u);

  auto bare = KnownSet::create(Location::file(dir.file("c.rbf")), options(1000, 0.01), false);
  bare.add(std::vector<std::string>{"a"});
  const std::string without = error_of([&] { bare.remove(views_of({"a"})); });
  EXPECT_TRUE(contains_text(without, "has no exact set")) << without;
  EXPECT_TRUE(bare.filter().contains("a"));
}

// The companion of a cuckoo filter file is bound to it: one left by a filter replaced since is
// refused, as for a Bloom filter file.
TEST(KnownSetRemove, TheCompanionIsBoundToTheCuckooFile) {
  TempDir dir;
  const std::string path = dir.file("c.rbf");
  { (void)KnownSet::create(Location::file(path), options(1000, 0.01), true); }
  EXPECT_NE(open_file_exact_set(path)->filter_id(), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // another creation time
  (void)Filter::create(Location::file(path), options(1000, 0.01), /*overwrite=*/true);
  EXPECT_THROW((void)KnownSet::open(Location::file(path), true), FormatError);
}

}  // namespace
}  // namespace redbloom
