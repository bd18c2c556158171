// The growing filter chain (core/filter_chain.hpp) and its header format: no false negatives
// across links, a compound false-positive rate that matches the links' formulas and stays
// under the target, growth only on new items, non-scaling and memory-limit refusals, and
// headers that are refused, never misread, when damaged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/chain_format.hpp"
#include "core/filter_chain.hpp"
#include "core/packed_items.hpp"
#include "error_of.hpp"
#include "redbloom/error.hpp"

namespace redbloom {
namespace {

using AddResult = FilterChain::AddResult;

std::vector<std::string> keys(const char* prefix, std::size_t first, std::size_t count) {
  std::vector<std::string> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) out.push_back(prefix + std::to_string(first + i));
  return out;
}

std::vector<std::string_view> views(const std::vector<std::string>& items) {
  return {items.begin(), items.end()};
}

ChainOptions options(Layout layout, std::uint64_t capacity, double error, bool scaling = true) {
  ChainOptions o;
  o.layout = layout;
  o.capacity = capacity;
  o.error_rate = error;
  o.scaling = scaling;
  return o;
}

class ChainLayouts : public ::testing::TestWithParam<Layout> {};

// The module's BF.RESERVE takes what RedisBloom takes, (0, 1): this filter keeps that rule (a
// link asked for more than 0.5 is sized for 0.5) and says whose rule it is.
TEST(FilterChain, TakesRedisBloomsErrorRatesAndSaysSo) {
  EXPECT_NO_THROW(FilterChain(options(Layout::classic, 1000, 0.6), default_chain_allocator()));
  const std::string expected_tail =
      " is out of range: a RedisBloom-compatible filter (BF.RESERVE, BF.INSERT) takes a rate "
      "above 0 and below 1, as RedisBloom does; rates above 0.5 are sized as 0.5 (0.01 is "
      "common)";
  EXPECT_EQ(testing::error_of([] {
              (void)FilterChain(options(Layout::classic, 1000, 1), default_chain_allocator());
            }),
            "error rate 1" + expected_tail);
  EXPECT_EQ(testing::error_of([] {
              (void)FilterChain(options(Layout::classic, 1000, 0), default_chain_allocator());
            }),
            "error rate 0" + expected_tail);
}

TEST_P(ChainLayouts, GrowsWithNoFalseNegativesAndTheRateOfItsLinks) {
  FilterChain chain(options(GetParam(), 1000, 0.01), default_chain_allocator());
  const auto added = keys("in:", 0, 60000);
  std::vector<AddResult> results(added.size());
  ASSERT_EQ(chain.add(views(added), results.data()), added.size());
  std::size_t fresh = 0;
  for (AddResult r : results) fresh += r == AddResult::added;
  EXPECT_EQ(chain.items(), fresh);
  // 1000 + 2000 + ... holds 60000 items in 6 links (63000).
  ASSERT_EQ(chain.links().size(), 6u);
  EXPECT_EQ(chain.capacity(), 63000u);
  for (std::size_t i = 0; i + 1 < chain.links().size(); ++i) {
    EXPECT_EQ(chain.links()[i].items, chain.links()[i].params.capacity) << "link " << i;
    EXPECT_DOUBLE_EQ(chain.links()[i + 1].target_error, chain.links()[i].target_error / 2);
  }

  std::vector<std::uint8_t> present(added.size());
  chain.contains(views(added), present.data());
  for (std::size_t i = 0; i < present.size(); ++i) ASSERT_EQ(present[i], 1) << added[i];

  // An absent item is a false positive if any link says so: 1 - prod(1 - p_i).
  double pass_all = 1;
  for (const auto& link : chain.links()) {
    pass_all *= 1 - expected_false_positive_rate(link.params, double(link.items));
  }
  const double theory = 1 - pass_all;
  const std::size_t queries = 400000;
  const auto absent = keys("out:", 0, queries);
  std::vector<std::uint8_t> hits(queries);
  chain.contains(views(absent), hits.data());
  double positives = 0;
  for (std::uint8_t h : hits) positives += h;
  const double measured = positives / queries;
  const double sigma = std::sqrt(theory * (1 - theory) / queries);
  EXPECT_NEAR(measured, theory, 5 * sigma + 0.05 * theory) << "theory " << theory;
  EXPECT_LE(measured, 0.01);
}

TEST_P(ChainLayouts, GrowsOnlyWhenANewItemArrives) {
  FilterChain chain(options(GetParam(), 10, 0.01), default_chain_allocator());
  const auto first = keys("a", 0, 10);
  std::vector<AddResult> results(10);
  chain.add(views(first), results.data());
  ASSERT_EQ(chain.items(), 10u) << "ten distinct items, none a false positive at this size";
  // Full: present items are answered without a new link.
  chain.add(views(first), results.data());
  for (AddResult r : results) EXPECT_EQ(r, AddResult::present);
  EXPECT_EQ(chain.links().size(), 1u);
  const auto next = keys("b", 0, 1);
  chain.add(views(next), results.data());
  EXPECT_EQ(results[0], AddResult::added);
  EXPECT_EQ(chain.links().size(), 2u);
  EXPECT_EQ(chain.links()[1].params.capacity, 20u);
}

TEST_P(ChainLayouts, DuplicatesInOneBatchAreNewOnce) {
  FilterChain chain(options(GetParam(), 100, 0.01), default_chain_allocator());
  const std::vector<std::string_view> batch = {"x", "y", "x", "x", "y", "z"};
  std::vector<AddResult> results(batch.size());
  chain.add(batch, results.data());
  const std::vector<AddResult> expected = {AddResult::added,   AddResult::added,
                                           AddResult::present, AddResult::present,
                                           AddResult::present, AddResult::added};
  EXPECT_EQ(results, expected);
}

TEST_P(ChainLayouts, ANonScalingChainRefusesNewItemsWhenFull) {
  FilterChain chain(options(GetParam(), 50, 0.01, /*scaling=*/false), default_chain_allocator());
  const auto items = keys("n", 0, 80);
  std::vector<AddResult> results(items.size());
  const std::size_t done = chain.add(views(items), results.data());
  ASSERT_LT(done, items.size());
  EXPECT_EQ(results[done], AddResult::full);
  EXPECT_EQ(chain.items(), 50u);
  EXPECT_EQ(chain.links().size(), 1u);
  // Items already in answer "present", full or not.
  const auto known = views(items);
  std::vector<AddResult> again(done);
  EXPECT_EQ(chain.add(std::span(known).first(done), again.data()), done);
}

TEST_P(ChainLayouts, GrowthStopsAtTheMemoryLimit) {
  ChainOptions o = options(GetParam(), 1000, 0.01);
  o.max_bytes = 8 << 10;  // room for the first link and one more
  FilterChain chain(o, default_chain_allocator());
  const auto items = keys("m", 0, 20000);
  std::vector<AddResult> results(items.size());
  const std::size_t done = chain.add(views(items), results.data());
  ASSERT_LT(done, items.size());
  EXPECT_EQ(results[done], AddResult::over_limit);
  EXPECT_LE(chain.bytes(), o.max_bytes);
  o.capacity = 1000000;
  EXPECT_THROW(FilterChain(o, default_chain_allocator()), InvalidArgument);
}

TEST_P(ChainLayouts, AHeaderAndTheBitsMakeTheSameFilter) {
  FilterChain chain(options(GetParam(), 500, 0.001), default_chain_allocator());
  const auto items = keys("h", 0, 3000);
  std::vector<AddResult> results(items.size());
  chain.add(views(items), results.data());
  const std::string header = chain_format::encode_header(chain);
  auto copy = chain_format::decode_header(header, default_chain_allocator(), 0);
  ASSERT_EQ(copy->links().size(), chain.links().size());
  for (std::uint64_t offset = 0;;) {
    const auto chunk = chain.bytes_at(offset, 1000);  // chunks never span links
    if (chunk.empty()) break;
    ASSERT_TRUE(copy->write_bytes_at(offset, chunk));
    offset += chunk.size();
  }
  EXPECT_EQ(chain_format::encode_header(*copy), header);
  const auto probe = keys("h", 2000, 4000);
  std::vector<std::uint8_t> a(probe.size()), b(probe.size());
  chain.contains(views(probe), a.data());
  copy->contains(views(probe), b.data());
  EXPECT_EQ(a, b);
  EXPECT_EQ(copy->items(), chain.items());
}

INSTANTIATE_TEST_SUITE_P(BothLayouts, ChainLayouts,
                         ::testing::Values(Layout::classic, Layout::blocked));

TEST(ChainFormat, DamagedHeadersAreRefusedNeverMisread) {
  FilterChain chain(options(Layout::blocked, 1000, 0.01), default_chain_allocator());
  const auto items = keys("d", 0, 5000);
  std::vector<AddResult> results(items.size());
  chain.add(views(items), results.data());
  const std::string header = chain_format::encode_header(chain);
  std::mt19937_64 random(7);
  std::size_t refused = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string damaged = header;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int f = 0; f < flips; ++f) {
      damaged[random() % damaged.size()] = static_cast<char>(random());
    }
    if (random() % 8 == 0) damaged.resize(random() % damaged.size());
    try {
      auto loaded = chain_format::decode_header(damaged, default_chain_allocator(), 1 << 20);
      EXPECT_LE(loaded->bytes(), 1u << 20);
      std::vector<std::uint8_t> present(items.size());
      loaded->contains(views(items), present.data());  // usable, whatever it answers
    } catch (const FormatError&) {
      ++refused;
    } catch (const InvalidArgument&) {
      ++refused;  // over the limit
    }
  }
  EXPECT_GT(refused, 10000u);
}

// Byte offsets in a header (chain_format.hpp): the chain's fields, then 60 bytes per link.
constexpr std::size_t kChainError = 8 + 4 + 4 + 1;
constexpr std::size_t kChainCapacity = kChainError + 8;
constexpr std::size_t kFirstLink = kChainCapacity + 8 + 4;
constexpr std::size_t kLinkBytes = 60;

template <class T>
std::string with_field(std::string header, std::size_t at, T value) {
  std::memcpy(header.data() + at, &value, sizeof value);
  return header;
}

template <class T>
T field_of(const std::string& header, std::size_t at) {
  T value;
  std::memcpy(&value, header.data() + at, sizeof value);
  return value;
}

std::string grown_header(Layout layout, std::uint64_t capacity, double error, std::size_t count) {
  FilterChain chain(options(layout, capacity, error), default_chain_allocator());
  const auto items = keys("g", 0, count);
  std::vector<AddResult> results(items.size());
  chain.add(views(items), results.data());
  return chain_format::encode_header(chain);
}

TEST_P(ChainLayouts, HeadersWhoseLinksAreNotWhatTheirOptionsMakeAreRefused) {
  const std::string header = grown_header(GetParam(), 100, 0.01, 500);  // links of 100, 200, 400
  ASSERT_EQ(chain_format::decode_header(header, default_chain_allocator(), 0)->links().size(), 3u);
  std::vector<std::pair<std::string, std::string>> cases;
  for (std::size_t link = 0; link < 3; ++link) {
    const std::size_t at = kFirstLink + link * kLinkBytes;
    const auto name = [&](const char* what) { return "link " + std::to_string(link) + what; };
    cases.emplace_back(name(" error 1e-317"), with_field(header, at + 32, 1e-317));
    cases.emplace_back(name(" error x2"),
                       with_field(header, at + 32, 2 * field_of<double>(header, at + 32)));
    cases.emplace_back(name(" hashes + 1"),
                       with_field(header, at + 4, field_of<std::uint32_t>(header, at + 4) + 1));
    cases.emplace_back(name(" capacity + 1"),
                       with_field(header, at + 24, field_of<std::uint64_t>(header, at + 24) + 1));
    cases.emplace_back(name(" target / 2"),
                       with_field(header, at + 40, field_of<double>(header, at + 40) / 2));
    cases.emplace_back(
        name(" bits x2, half the partitions"),
        with_field(with_field(header, at + 16, 2 * field_of<std::uint64_t>(header, at + 16)),
                   at + 8, std::uint64_t{1}));
    if (link < 2) {  // an older link holds its capacity: the next was added when it was full
      cases.emplace_back(name(" items - 1"),
                         with_field(header, at + 48, field_of<std::uint64_t>(header, at + 48) - 1));
    }
  }
  cases.emplace_back("options: capacity + 1",
                     with_field(header, kChainCapacity, std::uint64_t{101}));
  cases.emplace_back("options: error x 2", with_field(header, kChainError, 0.02));
  cases.emplace_back("options: expansion 3", with_field(header, 12, std::uint32_t{3}));
  // The options of another valid filter with these links.
  const std::string other = grown_header(GetParam(), 300, 0.001, 10);
  cases.emplace_back("options of another filter",
                     other.substr(0, kFirstLink) + header.substr(kFirstLink));
  for (const auto& [what, damaged] : cases) {
    EXPECT_THROW((void)chain_format::decode_header(damaged, default_chain_allocator(), 0),
                 FormatError)
        << what;
  }
  // The expected rate may differ in its last digits (libm on another machine).
  const std::size_t error_at = kFirstLink + kLinkBytes + 32;
  const double error = field_of<double>(header, error_at);
  EXPECT_NO_THROW((void)chain_format::decode_header(
      with_field(header, error_at, std::nextafter(error, 1.0)), default_chain_allocator(), 0));
}

TEST(PackedItems, RoundTripAndTruncation) {
  const std::vector<std::string_view> items = {"", "a", std::string_view("\0b\0", 3),
                                               "a longer item with spaces"};
  std::string packed;
  packed::append_all(packed, items);
  EXPECT_EQ(packed.size(), 4 * 4 + 0 + 1 + 3 + 25);
  const auto split = packed::split(packed);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(*split, items);
  for (std::size_t cut = 1; cut < packed.size(); ++cut) {
    const auto part = packed::split(std::string_view(packed).substr(0, cut));
    // A cut is fine only exactly at an item's end.
    if (part) {
      EXPECT_TRUE(cut == 4 || cut == 9 || cut == 16) << cut;
    }
  }
  EXPECT_TRUE(packed::split("")->empty());
}

// Hashes as 16 bytes each (XXH3-128's low then high half, little-endian): one at a time, into
// a string sized once, and a batch read back whole.
TEST(PackedItems, HashesRoundTripOneByOneAndAsABatch) {
  const std::vector<ItemHash> hashes = {
      {0x0123456789abcdefull, 0xfedcba9876543210ull}, {1, 2}, hash_item("x")};
  std::string appended;
  for (const ItemHash& h : hashes) packed::append_hash(appended, h);
  std::string written(hashes.size() * packed::kHashedItemBytes, '\0');
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    packed::write_hash(written.data() + i * packed::kHashedItemBytes, hashes[i]);
  }
  EXPECT_EQ(written, appended);
  EXPECT_EQ(appended.substr(0, 16), std::string("\xef\xcd\xab\x89\x67\x45\x23\x01"
                                                "\x10\x32\x54\x76\x98\xba\xdc\xfe"));
  std::vector<ItemHash> read(hashes.size());
  packed::read_hashes(appended.data(), read);
  EXPECT_EQ(read, hashes);
  EXPECT_EQ(packed::read_hash(appended.data() + 32), hashes[2]);
}

}  // namespace
}  // namespace redbloom
