// The cuckoo filter as a kind of filter (redbloom/cuckoo.hpp), in memory and in a file: no
// false negatives, the measured rate against the links' formula, removes and re-adds against a
// model set, growth and its bounds, a full filter's committed count, handles that see each
// other's growth, concurrent processes of which exactly one sees an item as new, and damaged
// files refused.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/cuckoo_file_format.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/known_set.hpp"
#include "redbloom/sizing.hpp"
#include "redbloom/transfer.hpp"
#include "temp_dir.hpp"

namespace redbloom {
namespace {

std::vector<std::string> names(const std::string& prefix, std::size_t n) {
  std::vector<std::string> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

std::vector<std::string_view> views(const std::vector<std::string>& items) {
  return {items.begin(), items.end()};
}

CuckooOptions options(std::uint64_t capacity, double p, std::uint32_t growth = 0) {
  CuckooOptions o;
  o.capacity = capacity;
  o.error_rate = p;
  o.growth = growth;
  return o;
}

// Both local stores: memory, and a file in `dir`.
std::vector<Location> places(const testing::TempDir& dir) {
  return {Location::memory(), Location::file(dir.file("cuckoo.rbf"))};
}

// Adds every item, checks none is missing, and returns the share of `probes` never added that
// read as present, beside the rate the filter expects at its fill.
std::pair<double, double> measure(Filter& filter, const std::vector<std::string>& added,
                                  std::size_t probes) {
  const auto items = views(added);
  std::vector<std::uint8_t> present(items.size());
  filter.add_many(items);
  EXPECT_EQ(filter.contains_many(items, present), items.size()) << "a false negative";
  const auto absent = names("absent:", probes);
  const std::size_t false_positives = filter.contains_many(views(absent));
  return {static_cast<double>(false_positives) / static_cast<double>(probes),
          filter.info().estimated_error_rate};
}

TEST(CuckooKind, NoFalseNegativesAndTheRateOfTheFormula) {
  for (const double p : {0.01, 0.001}) {
    testing::TempDir dir;
    for (const Location& where : places(dir)) {
      Filter filter = Filter::create(where, options(100000, p));
      const auto [measured, expected] = measure(filter, names("item:", 100000), 1000000);
      // 1e6 probes: a 5-sigma band around the expected rate (at least 3e-4 wide).
      const double sigma = std::sqrt(expected / 1e6);
      EXPECT_NEAR(measured, expected, std::max(5 * sigma, 3e-4)) << where.describe() << " " << p;
      EXPECT_LE(expected, p);
      const FilterInfo info = filter.info();
      ASSERT_TRUE(info.cuckoo);
      EXPECT_EQ(info.cuckoo->links.size(), 1u);
      // Less the adds that were false positives: the rate rises with the fill, to p at the end.
      EXPECT_LE(info.estimated_items, 100000);
      EXPECT_GE(info.estimated_items, 100000 * (1 - p));
    }
  }
}

TEST(CuckooKind, GrowingPastCapacityKeepsTheRate) {
  testing::TempDir dir;
  for (const Location& where : places(dir)) {
    Filter filter = Filter::create(where, options(10000, 0.01, 2));
    const auto [measured, expected] = measure(filter, names("grow:", 150000), 500000);
    const FilterInfo info = filter.info();
    ASSERT_TRUE(info.cuckoo);
    EXPECT_EQ(info.cuckoo->links.size(), 4u) << where.describe();  // 10k + 20k + 40k + 80k
    EXPECT_LE(expected, 0.01);
    EXPECT_LE(measured, 0.01) << where.describe();
  }
}

TEST(CuckooKind, RemovesAndReaddsAgainstAModelSet) {
  testing::TempDir dir;
  for (const Location& where : places(dir)) {
    Filter filter = Filter::create(where, options(20000, 1e-4, 2));
    std::set<int> model;
    std::mt19937 rng(42);
    for (int step = 0; step < 60000; ++step) {
      const int i = static_cast<int>(rng() % 30000);
      const std::string item = "m:" + std::to_string(i);
      if (rng() % 3 == 0) {
        const bool removed = filter.remove(item);
        EXPECT_EQ(removed, model.erase(i) == 1 || removed) << item;
      } else {
        const bool is_new = filter.add(item);
        const bool was_new = model.insert(i).second;
        // New to the filter only if new to the model (a false positive can hide a new one).
        if (is_new) {
          EXPECT_TRUE(was_new) << item;
        }
      }
    }
    for (const int i : model) {
      const std::string item = "m:" + std::to_string(i);
      ASSERT_TRUE(filter.contains(item)) << where.describe() << " " << item;
      ASSERT_GE(filter.count(item), 1u) << item;
    }
  }
}

TEST(CuckooKind, AFullFilterSaysWhatItCommitted) {
  testing::TempDir dir;
  for (const Location& where : places(dir)) {
    Filter filter = Filter::create(where, options(1000, 0.01));
    const auto items = names("full:", 5000);
    try {
      filter.add_many(views(items));
      FAIL() << "a filter of 1000 items that may not grow took 5000";
    } catch (const CapacityExceeded& e) {
      EXPECT_GE(e.committed(), 1000u);
      EXPECT_LT(e.committed(), 1200u);
      EXPECT_NE(std::string(e.what()).find("full"), std::string::npos) << e.what();
      const auto committed = views(items);
      EXPECT_EQ(filter.contains_many(std::span(committed).first(e.committed())), e.committed());
    }
  }
}

TEST(CuckooKind, MaxBytesBoundsTheLinks) {
  CuckooOptions o = options(1000, 0.01, 2);
  o.max_bytes = 8000;  // link 0 (1000 items, 11-bit fingerprints) and link 1 fit, link 2 not
  Filter filter = Filter::create(Location::memory(), o);
  const auto items = names("bound:", 10000);
  EXPECT_THROW(filter.add_many(views(items)), CapacityExceeded);
  const FilterInfo info = filter.info();
  EXPECT_EQ(info.cuckoo->links.size(), 2u);
  EXPECT_LE(info.cuckoo->bytes, o.max_bytes);
  o.max_bytes = 100;
  EXPECT_THROW((void)Filter::create(Location::memory(), o), InvalidArgument);
}

TEST(CuckooKind, FileHandlesSeeEachOthersGrowthAndReopen) {
  testing::TempDir dir;
  const Location where = Location::file(dir.file("shared.rbf"));
  Filter first = Filter::create(where, options(2000, 0.001, 2));
  Filter second = Filter::open(where);
  ASSERT_TRUE(second.shape().cuckoo);
  const auto items = names("shared:", 10000);
  const auto all = views(items);
  first.add_many(all);  // grows links the second handle has not mapped
  EXPECT_EQ(second.contains_many(views(items)), items.size());
  EXPECT_EQ(second.remove_many(std::span(all).first(100)), 100u);
  EXPECT_EQ(first.info().cuckoo->items, second.info().cuckoo->items);
  const std::uint64_t held = second.info().cuckoo->items;
  Filter reopened = Filter::open(where, OpenOptions::read_only());
  EXPECT_EQ(reopened.info().cuckoo->items, held);
  EXPECT_EQ(reopened.contains_many(std::span(all).subspan(100)), items.size() - 100);
  EXPECT_THROW(reopened.add("x"), InvalidArgument);
  EXPECT_THROW((void)Filter::open(where, OpenOptions::create_cuckoo(options(2000, 0.01, 2), true)),
               FilterExists);
  Filter::drop(where);
  EXPECT_FALSE(Filter::exists(where));
}

TEST(CuckooKind, ConcurrentProcessesNeverBothSeeAnItemAsNew) {
  constexpr int kProcesses = 4;
  constexpr int kItems = 40000;
  testing::TempDir dir;
  const Location where = Location::file(dir.file("race.rbf"));
  { (void)Filter::create(where, options(5000, 1e-6, 2)); }  // grows while they race
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Filter filter = Filter::open(where);
      std::vector<int> order(kItems);
      for (int i = 0; i < kItems; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(p));
      std::ofstream out(dir.file("out" + std::to_string(p)));
      for (std::size_t start = 0; start < order.size(); start += 64) {
        std::vector<std::string> batch;
        for (std::size_t i = start; i < std::min(order.size(), start + 64); ++i) {
          batch.push_back("race:" + std::to_string(order[i]));
        }
        std::vector<std::uint8_t> fresh(batch.size());
        filter.add_many(views(batch), fresh);
        for (std::size_t i = 0; i < batch.size(); ++i) {
          if (fresh[i]) out << order[start + i] << '\n';
        }
      }
      out.close();
      _exit(out ? 0 : 3);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::multiset<int> emitted;
  for (int p = 0; p < kProcesses; ++p) {
    std::ifstream in(dir.file("out" + std::to_string(p)));
    for (int i; in >> i;) emitted.insert(i);
  }
  const std::set<int> distinct(emitted.begin(), emitted.end());
  EXPECT_EQ(emitted.size(), distinct.size()) << "an item was new to two processes";
  EXPECT_GE(distinct.size(), static_cast<std::size_t>(kItems - 2));
  Filter filter = Filter::open(where);
  EXPECT_EQ(filter.info().cuckoo->items, distinct.size());
  EXPECT_EQ(filter.contains_many(views(names("race:", kItems))), static_cast<std::size_t>(kItems));
}

void corrupt(const std::string& path, std::uint64_t offset, std::uint64_t value) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(reinterpret_cast<const char*>(&value), sizeof value);
}

TEST(CuckooKind, DamagedFilesAreRefused) {
  testing::TempDir dir;
  const std::string path = dir.file("damaged.rbf");
  { Filter::create(Location::file(path), options(1000, 0.01, 2)).add("x"); }
  corrupt(path, 32, 999);  // the capacity, under the checksum
  EXPECT_THROW((void)Filter::open(Location::file(path)), FormatError);
  { (void)Filter::create(Location::file(path), options(1000, 0.01, 2), true); }
  corrupt(path, cuckoo_directory_entry(0, 0), 1ull << 40);  // a table past the file's end
  EXPECT_THROW((void)Filter::open(Location::file(path)), FormatError);
  { (void)Filter::create(Location::file(path), options(1000, 0.01, 2), true); }
  corrupt(path, cuckoo_directory_entry(0, 2), 8192);  // link 2 without link 1
  EXPECT_THROW((void)Filter::open(Location::file(path)), FormatError);
}

TEST(CuckooKind, CopiesTableByTable) {
  testing::TempDir dir;
  const Location from = Location::file(dir.file("from.rbf"));
  const Location to = Location::file(dir.file("to.rbf"));
  Filter source = Filter::create(from, options(3000, 0.001, 2));
  const auto items = names("copy:", 10000);
  const auto all = views(items);
  source.add_many(all);
  EXPECT_EQ(source.remove_many(std::span(all).first(500)), 500u);
  const CopyReport report = copy_filter(from, to, false);
  Filter copy = Filter::open(to);
  EXPECT_EQ(report.bytes, copy.info().cuckoo->bytes);
  EXPECT_EQ(copy.shape().cuckoo, source.shape().cuckoo);
  EXPECT_EQ(copy.info().cuckoo->items, source.info().cuckoo->items);
  EXPECT_EQ(copy.contains_many(std::span(all).subspan(500)), items.size() - 500);
  for (std::uint32_t link = 0; link < 3; ++link) {
    EXPECT_EQ(copy.backend().cuckoo_tables()->read_table(0, link),
              source.backend().cuckoo_tables()->read_table(0, link));
  }
  // A copy goes on as the source would: it grows and removes alike.
  const auto more = names("more:", 20000);
  source.add_many(views(more));
  copy.add_many(views(more));
  EXPECT_EQ(copy.backend().cuckoo_tables()->link_counts(),
            source.backend().cuckoo_tables()->link_counts());
  EXPECT_EQ(copy.backend().cuckoo_tables()->read_table(0, 3),
            source.backend().cuckoo_tables()->read_table(0, 3));
}

TEST(CuckooKind, AKnownSetClearsItsTables) {
  testing::TempDir dir;
  Filter filter = Filter::create(Location::file(dir.file("known.rbf")), options(1000, 0.001, 2));
  const auto items = names("known:", 5000);
  filter.add_many(views(items));
  KnownSet known(std::move(filter), nullptr);
  known.clear();
  Filter reopened = Filter::open(Location::file(dir.file("known.rbf")));
  EXPECT_EQ(reopened.info().cuckoo->items, 0u);
  EXPECT_EQ(reopened.contains_many(views(items)), 0u);
}

TEST(CuckooKind, BloomFiltersCannotRemove) {
  Filter bloom = Filter::in_memory(size_filter(1000, 0.01, Layout::blocked));
  bloom.add("a");
  EXPECT_THROW(bloom.remove("a"), InvalidArgument);
  EXPECT_THROW((void)bloom.count("a"), InvalidArgument);
  EXPECT_TRUE(bloom.contains("a"));
}

}  // namespace
}  // namespace redbloom
