// RedisBloom's filter as core/redisbloom_chain.hpp reproduces it: no false negatives across
// sub-filters, growth by the expansion with halved error rates, refusals (full, memory
// limit), SCANDUMP header and chunks that load back to the same answers, and damaged headers
// refused. That every answer is RedisBloom's own is tested on its data
// (tests/module/test_redisbloom_data.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
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

// Per sub-filter in the header: bytes, bits, items, error, bits per entry, probes, capacity,
// n2 (53 bytes) after the chain's 20.
std::string with_field(std::string header, std::size_t link, std::size_t at, const void* value,
                       std::size_t size) {
  header.replace(20 + 53 * link + at, size, static_cast<const char*>(value), size);
  return header;
}

TEST(RedisBloomChain, HeaderFieldsOutsideWhatTheOptionsMakeAreRefused) {
  const Chain chain = grown(kNewFilterOptions, 2, 500);
  ASSERT_GE(chain.links().size(), 3u);
  const std::string header = chain.encode_header();
  ASSERT_NO_THROW(Chain::decode_header(header, 0, default_chain_allocator()));
  const auto refused = [](const std::string& damaged) {
    EXPECT_THROW(Chain::decode_header(damaged, 0, default_chain_allocator()), FormatError);
  };
  // An error rate of 1e-317 with the probes of another rate: its bits per entry do not match.
  const double tiny = 1e-317;
  refused(with_field(header, 0, 24, &tiny, 8));
  // A second sub-filter whose error is not half the first's, though its other fields are kept.
  const double off = chain.links()[1].error * 0.999;
  refused(with_field(header, 1, 24, &off, 8));
  // A capacity that does not follow from the one before.
  const std::uint64_t capacity = chain.links()[2].capacity + 1;
  refused(with_field(header, 2, 44, &capacity, 8));
  // More items in a sub-filter than its capacity (the chain's total moved along).
  const std::uint64_t items = chain.links()[2].capacity + 1;
  std::string overfull = with_field(header, 2, 16, &items, 8);
  const std::uint64_t total = chain.items() - chain.links()[2].items + items;
  overfull.replace(0, 8, reinterpret_cast<const char*>(&total), 8);
  refused(overfull);
  // A first sub-filter with fewer bits than its capacity and rate make.
  std::uint64_t capacity0 = chain.links()[0].capacity * 2;
  refused(with_field(header, 0, 44, &capacity0, 8));
  // A non-scaling filter with two sub-filters.
  std::string two = header;
  const std::uint32_t options = kNewFilterOptions | kNoScaling;
  two.replace(12, 4, reinterpret_cast<const char*>(&options), 4);
  refused(two);
}

TEST(RedisBloomChain, GrowsPastSixtyFourSubFiltersUntilTheErrorRateReachesZero) {
  // BF.RESERVE poc 0.0001 1 EXPANSION 1: a sub-filter per item, each at half the error.
  Chain chain = Chain::make(1, 0.0001, kNewFilterOptions, 1, default_chain_allocator());
  int refused = 0;
  for (int i = 0; i < 5001; ++i) refused += chain.add(item("poc:", i), 0) == AddResult::refused;
  EXPECT_EQ(chain.links().size(), 1061u);  // as RedisBloom 2.4
  EXPECT_GT(refused, 0);
  EXPECT_GT(chain.links().back().error, 0.0);
  EXPECT_EQ(chain.problem(), "");
  // Its header, with links at denormal error rates, loads back.
  EXPECT_NO_THROW(Chain::decode_header(chain.encode_header(), 0, default_chain_allocator()));
}

// What active defragmentation does to a block: a copy elsewhere, the old block poisoned (and
// kept, so a stale pointer reads the poison instead of freed memory).
struct Mover {
  std::vector<std::vector<std::uint8_t>> old_blocks;
  std::size_t sizes_known = 0;
  const Chain* chain = nullptr;
  int stop_after = -1;  // DefragShouldStop: true after this many calls

  static void* move(void* context, void* block) {
    auto& self = *static_cast<Mover*>(context);
    std::size_t size = 0;
    for (const Link& link : self.chain->links()) {
      if (link.data.data() == block) size = link.data.size();
    }
    if (size == 0) return nullptr;  // not a block of the chain's: a bug
    ++self.sizes_known;
    void* moved = std::malloc(size);
    std::memcpy(moved, block, size);
    std::memset(block, 0xff, size);
    // The chain's default allocator is malloc's: the poisoned block is handed to a vector
    // that keeps it readable until the test ends.
    self.old_blocks.emplace_back(static_cast<std::uint8_t*>(block),
                                 static_cast<std::uint8_t*>(block) + size);
    std::free(block);
    return moved;
  }
  static bool stop(void* context) {
    auto& self = *static_cast<Mover*>(context);
    return self.stop_after >= 0 && self.stop_after-- == 0;
  }
};

TEST(RedisBloomChain, DefragmentationMovesEveryBitsBlockWithoutChangingAnAnswer) {
  Chain chain = grown(kNewFilterOptions, 2, 3000);
  std::vector<bool> before;
  for (int i = 0; i < 6000; ++i) before.push_back(chain.contains(item(i < 3000 ? "in:" : "x:", i)));
  Mover mover;
  mover.chain = &chain;
  mover.stop_after = 1;  // a time budget that runs out after two sub-filters: resumed later
  std::uint64_t moved = 0;
  std::size_t next = chain.relocate(0, Mover::move, &mover, Mover::stop, &moved);
  EXPECT_EQ(next, 2u);
  EXPECT_EQ(moved, 2u);
  next = chain.relocate(next, Mover::move, &mover, nullptr, &moved);
  EXPECT_EQ(next, chain.links().size());
  EXPECT_EQ(moved, chain.links().size());
  EXPECT_EQ(mover.sizes_known, chain.links().size());
  for (int i = 0; i < 6000; ++i) {
    ASSERT_EQ(chain.contains(item(i < 3000 ? "in:" : "x:", i)), before[i]) << i;
  }
  EXPECT_EQ(chain.add(item("in:", 1), 0), AddResult::present);
}

TEST(RedisBloomChain, BatchesAnswerAsItemByItemAcrossGrowth) {
  for (const std::uint32_t options : {kNewFilterOptions, kForce64, kNoRound, 0u}) {
    Chain one = Chain::make(30, 0.01, options, 2, default_chain_allocator());
    Chain batched = Chain::make(30, 0.01, options, 2, default_chain_allocator());
    std::vector<std::string> items;
    for (int i = 0; i < 3000; ++i) items.push_back(item(i % 3 == 0 ? "dup:" : "in:", i % 1500));
    std::vector<std::string_view> views(items.begin(), items.end());
    std::vector<AddResult> singles, batch(views.size());
    for (const std::string_view v : views) singles.push_back(one.add(v, 0));
    std::size_t done = 0;
    for (std::size_t first = 0; first < views.size(); first += 97) {
      const std::size_t count = std::min<std::size_t>(97, views.size() - first);
      done += batched.add_many(std::span(views).subspan(first, count), batch.data() + first, 0);
    }
    ASSERT_EQ(done, views.size());
    EXPECT_EQ(batch, singles) << options;
    EXPECT_EQ(batched.links().size(), one.links().size());
    EXPECT_GE(one.links().size(), 4u);
    std::vector<std::string> probes;
    for (int i = 0; i < 4000; ++i) probes.push_back(item(i % 2 == 0 ? "in:" : "out:", i));
    std::vector<std::string_view> probe_views(probes.begin(), probes.end());
    std::vector<std::uint8_t> present(probes.size());
    batched.contains_many(probe_views, present.data());
    for (std::size_t i = 0; i < probes.size(); ++i) {
      ASSERT_EQ(present[i] != 0, one.contains(probe_views[i])) << i;
    }
  }
  // A batch stops at the first refused item and says how many it handled.
  Chain full = Chain::make(5, 0.01, kNewFilterOptions | kNoScaling, 2, default_chain_allocator());
  std::vector<std::string> many;
  for (int i = 0; i < 50; ++i) many.push_back(item("f:", i));
  std::vector<std::string_view> many_views(many.begin(), many.end());
  std::vector<AddResult> results(many.size());
  const std::size_t handled = full.add_many(many_views, results.data(), 0);
  ASSERT_LT(handled, many.size());
  EXPECT_EQ(results[handled - 1], AddResult::full);
}

TEST(RedisBloomChain, RemaindersByMultiplicationAreExact) {
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  const auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const std::uint64_t edges[] = {
      0,          1,         2,    63, 64, 65, (1ULL << 32) - 1, 1ULL << 32, (1ULL << 63) - 1,
      1ULL << 63, ~0ULL - 1, ~0ULL};
  for (int trial = 0; trial < 2000; ++trial) {
    Link link;
    link.bits = trial < 8 ? (std::uint64_t{64} << trial) + 64 * trial + 8 : (next() >> 2) | 8;
    const Modulus modulus(link);
    for (const std::uint64_t x : edges) ASSERT_EQ(modulus.of(x), x % link.bits) << link.bits;
    for (int i = 0; i < 50; ++i) {
      const std::uint64_t x = next();
      ASSERT_EQ(modulus.of(x), x % link.bits) << x << " mod " << link.bits;
    }
    // The walk gives each probe's ((a + i·b) mod 2^64) mod bits.
    link.hashes = 40;
    const HashPair hash{next(), next()};
    std::uint64_t at[40];
    link.positions(hash, modulus, at);
    for (std::uint32_t i = 0; i < 40; ++i) ASSERT_EQ(at[i], (hash.a + i * hash.b) % link.bits);
  }
}

// MurmurHash64A as published (Austin Appleby), word by word and byte by byte: what the
// module's shortcuts (one load for the tail, both passes fused) must equal at every length.
std::uint64_t reference_murmur64a(const std::string& data, std::uint64_t seed) {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
  std::uint64_t h = seed ^ (data.size() * m);
  const std::size_t words = data.size() / 8;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t k = 0;
    for (int b = 7; b >= 0; --b) k = (k << 8) | static_cast<unsigned char>(data[8 * i + b]);
    k *= m;
    k ^= k >> 47;
    k *= m;
    h ^= k;
    h *= m;
  }
  const std::size_t left = data.size() % 8;
  if (left != 0) {
    for (std::size_t b = left; b-- > 0;) {
      h ^= std::uint64_t{static_cast<unsigned char>(data[8 * words + b])} << (8 * b);
    }
    h *= m;
  }
  h ^= h >> 47;
  h *= m;
  h ^= h >> 47;
  return h;
}

TEST(RedisBloomChain, HashesAreMurmurHash64AAtEveryLength) {
  std::string data;
  for (std::size_t length = 0; length <= 160; ++length) {
    const std::uint64_t a = reference_murmur64a(data, 0xc6a4a7935bd1e995ULL);
    ASSERT_EQ(murmur64a(data, 0xc6a4a7935bd1e995ULL), a) << length;
    ASSERT_EQ(murmur64a(data, 12345), reference_murmur64a(data, 12345)) << length;
    const HashPair pair = item_hash(data, kForce64);
    ASSERT_EQ(pair.a, a) << length;
    ASSERT_EQ(pair.b, reference_murmur64a(data, a)) << length;
    data.push_back(static_cast<char>(0x80 + 37 * length));  // bytes past 0x7f too
  }
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
