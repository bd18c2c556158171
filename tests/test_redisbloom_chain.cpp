// RedisBloom's filter as core/redisbloom_chain.hpp reproduces it: no false negatives across
// sub-filters, growth by the expansion with halved error rates, refusals (full, memory
// limit), SCANDUMP header and chunks that load back to the same answers, and damaged headers
// refused. That every answer is RedisBloom's own is tested on its data
// (tests/module/test_redisbloom_data.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/redisbloom_chain.hpp"
#include "redbloom/error.hpp"

namespace redbloom::redisbloom {
namespace {

using AddResult = Chain::AddResult;

std::string item(const char* prefix, int i) {
  return prefix + std::to_string(i);
}

Chain grown(std::uint32_t options, std::uint32_t expansion, int count) {
  Chain chain = Chain::make(50, 0.02, options, expansion, default_chain_allocator());
  for (int i = 0; i < count; ++i) chain.add(item("in:", i), 0);
  return chain;
}

TEST(RedisBloomChain, EveryAddedItemIsFoundInEveryHashVersionAndSizing) {
  for (const std::uint32_t options : {kNewFilterOptions, kNoRound, kForce64, 0u}) {
    const Chain chain = grown(options, 2, 2000);
    EXPECT_GT(chain.links().size(), 3u);
    for (int i = 0; i < 2000; ++i) ASSERT_TRUE(chain.contains(item("in:", i))) << options;
    EXPECT_EQ(chain.problem(), "");
  }
}

TEST(RedisBloomChain, GrowsByTheExpansionWithHalvedErrorRates) {
  const Chain chain = grown(kNewFilterOptions, 3, 3000);
  const auto& links = chain.links();
  ASSERT_GE(links.size(), 3u);
  EXPECT_DOUBLE_EQ(links[0].error, 0.01);  // half the target
  std::uint64_t items = 0;
  for (std::size_t i = 1; i < links.size(); ++i) {
    EXPECT_EQ(links[i].capacity, links[i - 1].capacity * 3);
    EXPECT_DOUBLE_EQ(links[i].error, links[i - 1].error / 2);
    EXPECT_EQ(links[i - 1].items, links[i - 1].capacity);  // full before the next is made
  }
  for (const Link& link : links) items += link.items;
  EXPECT_EQ(items, chain.items());
  EXPECT_LE(chain.items(), 3000u);
}

TEST(RedisBloomChain, ANonScalingFilterRefusesNewItemsWhenFull) {
  Chain chain = Chain::make(40, 0.01, kNewFilterOptions | kNoScaling, 2, default_chain_allocator());
  EXPECT_DOUBLE_EQ(chain.links()[0].error, 0.01);  // not halved: it never grows
  int refused = 0;
  for (int i = 0; i < 100; ++i) refused += chain.add(item("n:", i), 0) == AddResult::full;
  EXPECT_GT(refused, 0);
  EXPECT_EQ(chain.links().size(), 1u);
  EXPECT_EQ(chain.items(), 40u);
  EXPECT_EQ(chain.add(item("n:", 0), 0), AddResult::present);
}

TEST(RedisBloomChain, AGrowthOverTheMemoryLimitIsRefusedAndChangesNothing) {
  Chain chain = grown(kNewFilterOptions, 2, 50);
  const std::uint64_t bytes = chain.bytes();
  int too_large = 0;
  for (int i = 0; i < 200; ++i)
    too_large += chain.add(item("m:", i), bytes + 8) == AddResult::too_large;
  EXPECT_GT(too_large, 0);
  EXPECT_EQ(chain.links().size(), 1u);
  EXPECT_EQ(chain.bytes(), bytes);
}

TEST(RedisBloomChain, HeaderAndChunksLoadBackToTheSameAnswers) {
  const Chain chain = grown(kForce64, 2, 1500);
  const std::string header = chain.encode_header();
  Chain copy = Chain::decode_header(header, 0, default_chain_allocator());
  EXPECT_EQ(copy.encode_header(), header);
  long long iterator = 1;
  int chunks = 0;
  for (long long next = 0;; iterator = next, ++chunks) {
    const auto data = chain.chunk(iterator, &next);
    if (data.empty()) break;
    ASSERT_EQ(copy.load_chunk(next, {reinterpret_cast<const char*>(data.data()), data.size()}),
              nullptr);
  }
  EXPECT_EQ(chunks, static_cast<int>(chain.links().size()));
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(copy.contains(item("in:", i)), chain.contains(item("in:", i))) << i;
  }
  EXPECT_STREQ(copy.load_chunk(0, "x"), "ERR received bad data");
  EXPECT_STREQ(copy.load_chunk(static_cast<long long>(chain.bytes()) + 2, "x"),
               "ERR invalid offset - no link found");
  const std::string too_long(chain.links()[0].data.size() + 1, 'x');
  EXPECT_STREQ(copy.load_chunk(static_cast<long long>(too_long.size()) + 1, too_long),
               "ERR invalid chunk - Too big for current filter");
}

TEST(RedisBloomChain, DamagedHeadersAreRefused) {
  const std::string header = grown(kNewFilterOptions, 2, 500).encode_header();
  for (std::size_t length = 0; length < header.size(); ++length) {
    EXPECT_THROW(Chain::decode_header(header.substr(0, length), 0, default_chain_allocator()),
                 FormatError)
        << length;
  }
  std::string items_off = header;
  items_off[0] ^= 1;  // the chain's item count no longer the sub-filters' sum
  EXPECT_THROW(Chain::decode_header(items_off, 0, default_chain_allocator()), FormatError);
  std::string probes_off = header;
  probes_off[20 + 40] ^= 1;  // the first sub-filter's probe count
  EXPECT_THROW(Chain::decode_header(probes_off, 0, default_chain_allocator()), FormatError);
  std::string options_off = header;
  options_off[12] = 0x10;  // an option RedisBloom does not know
  EXPECT_THROW(Chain::decode_header(options_off, 0, default_chain_allocator()), FormatError);
  EXPECT_THROW(Chain::decode_header(header, 8, default_chain_allocator()), InvalidArgument);
}

TEST(RedisBloomChain, TheTwoHashVersionsPlaceItemsDifferently) {
  int same = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string x = item("h:", i);
    same += item_hash(x, kForce64).a == item_hash(x, 0).a;
    EXPECT_EQ(item_hash(x, 0).a >> 32, 0u);  // 32-bit MurmurHash2
    EXPECT_EQ(item_hash(x, kForce64).b, murmur64a(x, item_hash(x, kForce64).a));
  }
  EXPECT_EQ(same, 0);
}

}  // namespace
}  // namespace redbloom::redisbloom
