// RedisBloom's cuckoo filter as core/cuckoo_filter.hpp reproduces it: no false negatives
// across sub-filters and deletes, the false-positive rate its fingerprints predict, counts
// against a multiset model, kicks that undo themselves under a full table, growth and
// compaction, SCANDUMP header and chunks that load back byte for byte, damaged headers
// refused. That every answer is RedisBloom's own is tested on its data
// (tests/module/test_cuckoo_data.py).
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/cuckoo_filter.hpp"

namespace redbloom::cuckoo {
namespace {

std::string item(const char* prefix, std::uint64_t i) {
  return prefix + std::to_string(i);
}

std::unique_ptr<Filter> made(std::uint64_t capacity, std::uint16_t bucket_size = 2,
                             std::uint16_t expansion = 1, std::uint16_t iterations = 20) {
  MakeError error = MakeError::none;
  auto filter = Filter::make(capacity, bucket_size, iterations, expansion,
                             default_chain_allocator(), 0, error);
  EXPECT_NE(filter, nullptr);
  return filter;
}

std::vector<std::uint8_t> all_bytes(const Filter& filter) {
  std::vector<std::uint8_t> bytes;
  for (const SubFilter& sub : filter.filters()) {
    bytes.insert(bytes.end(), sub.data.data(), sub.data.data() + sub.data.size());
  }
  return bytes;
}

TEST(CuckooFilter, SizesAsRedisBloomDoes) {
  auto filter = made(1000);
  EXPECT_EQ(filter->buckets(), 512u);  // capacity / bucket size, up to a power of two
  EXPECT_EQ(filter->bytes(), 1024u);
  EXPECT_EQ(filter->memory_usage(), 40u + 16u + 1024u);
  EXPECT_EQ(made(64, 4, 3)->expansion(), 4u);  // the expansion rounded up too
  EXPECT_EQ(made(64, 4, 0)->expansion(), 0u);
  MakeError error = MakeError::none;
  EXPECT_EQ(Filter::make(3, 2, 20, 1, default_chain_allocator(), 0, error), nullptr);
  EXPECT_EQ(error, MakeError::too_small);
  EXPECT_EQ(Filter::make(9223372036854775807ULL, 2, 20, 1, default_chain_allocator(), 0, error),
            nullptr);
  EXPECT_EQ(error, MakeError::too_large);
  EXPECT_EQ(Filter::make(1 << 20, 2, 20, 1, default_chain_allocator(), 1 << 10, error), nullptr);
  EXPECT_EQ(error, MakeError::over_limit);
}

TEST(CuckooFilter, NoFalseNegativesAcrossSubFilters) {
  for (const std::uint16_t bucket_size : {1, 2, 4}) {
    for (const std::uint16_t expansion : {1, 2}) {
      auto filter = made(256, bucket_size, expansion);
      for (std::uint64_t i = 0; i < 5000; ++i) {
        ASSERT_EQ(filter->insert(item_hash(item("in:", i)), 0), Insert::inserted);
      }
      EXPECT_GT(filter->filters().size(), 1u);
      EXPECT_EQ(filter->items(), 5000u);
      for (std::uint64_t i = 0; i < 5000; ++i) {
        ASSERT_TRUE(filter->contains(item_hash(item("in:", i)))) << bucket_size << " " << i;
      }
      EXPECT_EQ(filter->problem(), "");
    }
  }
}

// A lookup compares the fingerprint (1 of 255 values) with the 2·b slots of its two buckets:
// at load α each holds a fingerprint with probability α, so the rate is about 2·b·α/255
// (2·b/2^f with f = 8 bits, less the empty value, at a full table).
TEST(CuckooFilter, FalsePositiveRateAsTheFingerprintsPredict) {
  for (const std::uint16_t bucket_size : {2, 4}) {
    auto filter = made(1 << 16, bucket_size, 0, 500);
    std::uint64_t added = 0;
    while (filter->insert(item_hash(item("in:", added)), 0) == Insert::inserted) ++added;
    const double slots = static_cast<double>(filter->buckets()) * bucket_size;
    const double load = static_cast<double>(filter->items()) / slots;
    // 8-bit fingerprints reach 255 alternate buckets only: a large table refuses early.
    EXPECT_GT(load, 0.5) << bucket_size;
    std::uint64_t positives = 0;
    constexpr std::uint64_t kProbes = 1'000'000;
    for (std::uint64_t i = 0; i < kProbes; ++i) {
      positives += filter->contains(item_hash(item("out:", i))) ? 1 : 0;
    }
    const double measured = static_cast<double>(positives) / kProbes;
    const double predicted = 2.0 * bucket_size * load / 255.0;
    EXPECT_NEAR(measured, predicted, predicted * 0.1)
        << "b=" << bucket_size << " load=" << load << " measured=" << measured;
  }
}

TEST(CuckooFilter, DeletesAndReAddsAgainstAMultiset) {
  for (const std::uint16_t expansion : {1, 2}) {
    auto filter = made(64, 2, expansion);
    std::map<std::string, std::uint64_t> model;
    std::uint64_t total = 0;
    std::mt19937_64 random(expansion);
    for (int step = 0; step < 20000; ++step) {
      const std::string name = item("k", random() % 300);
      const std::uint64_t hash = item_hash(name);
      if (random() % 3 != 0) {
        ASSERT_EQ(filter->insert(hash, 0), Insert::inserted);
        ++model[name];
        ++total;
      } else if (model[name] > 0) {  // only what was added is removed: no false negatives
        ASSERT_TRUE(filter->remove(hash));
        --model[name];
        --total;
      }
      if (step % 500 == 0 || step == 19999) {
        ASSERT_EQ(filter->items(), total);
        for (const auto& [key, times] : model) {
          ASSERT_GE(filter->count(item_hash(key)), times) << key;
          if (times > 0) {
            ASSERT_TRUE(filter->contains(item_hash(key))) << key;
          }
        }
      }
    }
    for (const auto& [key, times] : model) {
      for (std::uint64_t t = 0; t < times; ++t) ASSERT_TRUE(filter->remove(item_hash(key)));
    }
    EXPECT_EQ(filter->items(), 0u);
    for (const std::uint8_t b : all_bytes(*filter)) ASSERT_EQ(b, 0);
  }
}

TEST(CuckooFilter, KicksUnderAFullTableUndoThemselves) {
  auto filter = made(64, 2, 0, 50);
  std::vector<std::uint64_t> in;
  for (std::uint64_t i = 0;; ++i) {
    const std::uint64_t hash = item_hash(item("full:", i));
    const std::vector<std::uint8_t> before = all_bytes(*filter);
    const Insert result = filter->insert(hash, 0);
    if (result == Insert::no_space) {
      EXPECT_EQ(all_bytes(*filter), before);  // every kick walked back
      break;
    }
    ASSERT_EQ(result, Insert::inserted);
    in.push_back(hash);
  }
  EXPECT_EQ(filter->items(), in.size());
  EXPECT_GT(in.size(), 32u);  // more than the direct places gave: kicks made room
  for (const std::uint64_t hash : in) ASSERT_TRUE(filter->contains(hash));
}

TEST(CuckooFilter, InsertUniqueAndCountsOfRepeats) {
  auto filter = made(1024);
  const std::uint64_t hash = item_hash("a");
  EXPECT_EQ(filter->insert_unique(hash, 0), Insert::inserted);
  EXPECT_EQ(filter->insert_unique(hash, 0), Insert::exists);
  EXPECT_EQ(filter->insert(hash, 0), Insert::inserted);
  EXPECT_EQ(filter->count(hash), 2u);
  EXPECT_TRUE(filter->remove(hash));
  EXPECT_EQ(filter->count(hash), 1u);
  EXPECT_TRUE(filter->remove(hash));
  EXPECT_FALSE(filter->remove(hash));
  EXPECT_EQ(filter->deletes(), 2u);
}

TEST(CuckooFilter, GrowthStopsAtTheMemoryLimitAndCompactionFrees) {
  auto filter = made(8, 2, 2);
  EXPECT_EQ(filter->insert(item_hash("x"), 0), Insert::inserted);
  std::uint64_t i = 0;
  Insert last = Insert::inserted;
  while ((last = filter->insert(item_hash(item("g:", i)), 64)) == Insert::inserted) ++i;
  EXPECT_EQ(last, Insert::over_limit);
  EXPECT_LE(filter->bytes(), 64u);
  EXPECT_EQ(filter->filters().size(), 3u);  // 8 + 16 + 32 bytes; a fourth would pass 64
  for (std::uint64_t j = 0; j < i; ++j) ASSERT_TRUE(filter->remove(item_hash(item("g:", j))));
  filter->compact(true);
  EXPECT_EQ(filter->filters().size(), 1u);
  EXPECT_TRUE(filter->contains(item_hash("x")));
  EXPECT_EQ(filter->deletes(), 0u);
}

TEST(CuckooFilter, SameOperationsSameBytes) {
  auto a = made(128, 4, 2);
  auto b = made(128, 4, 2);
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::uint64_t hash = item_hash(item("d:", i % 700));
    if (i % 5 == 4) {
      a->remove(hash);
      b->remove(hash);
    } else {
      a->insert(hash, 0);
      b->insert(hash, 0);
    }
  }
  EXPECT_EQ(all_bytes(*a), all_bytes(*b));
  EXPECT_EQ(a->encode_header(), b->encode_header());
}

TEST(CuckooFilter, DumpLoadsBackByteForByte) {
  auto filter = made(64, 2, 2);
  for (std::uint64_t i = 0; i < 2000; ++i) filter->insert(item_hash(item("s:", i)), 0);
  std::string problem;
  auto copy = Filter::decode_header(filter->encode_header(), 0, default_chain_allocator(), problem);
  ASSERT_NE(copy, nullptr) << problem;
  long long iterator = 1;
  for (;;) {
    long long next = 0;
    const auto chunk = filter->chunk(iterator, &next);
    if (chunk.empty()) break;
    ASSERT_TRUE(
        copy->load_chunk(next, {reinterpret_cast<const char*>(chunk.data()), chunk.size()}));
    iterator = next;
  }
  EXPECT_EQ(all_bytes(*copy), all_bytes(*filter));
  EXPECT_EQ(copy->encode_header(), filter->encode_header());
  EXPECT_FALSE(copy->load_chunk(1, "x"));
  EXPECT_FALSE(copy->load_chunk(3 * static_cast<long long>(filter->bytes()), "xy"));
}

TEST(CuckooFilter, DamagedHeadersAreRefusedBeforeAllocating) {
  const std::string good = made(64, 2, 2)->encode_header();
  std::string problem;
  EXPECT_EQ(Filter::decode_header(good.substr(1), 0, default_chain_allocator(), problem), nullptr);
  std::mt19937_64 random(7);
  for (int round = 0; round < 20000; ++round) {
    std::string header = good;
    for (int flips = 0; flips < 3; ++flips) {
      header[random() % header.size()] = static_cast<char>(random());
    }
    auto filter = Filter::decode_header(header, 1 << 20, default_chain_allocator(), problem);
    if (filter == nullptr) continue;
    EXPECT_EQ(filter->problem(), "");
    EXPECT_LE(filter->bytes(), 1u << 20);
    if (filter->insert(item_hash("probe"), 1 << 20) == Insert::inserted) {
      EXPECT_TRUE(filter->contains(item_hash("probe")));
    }
  }
}

// Active defragmentation: each sub-filter's block moved (copied, the old one poisoned) in
// slices, resuming where the last stopped; every answer and byte unchanged.
struct PoisoningMover {
  int stop_after = -1;
  static void* move(void*, void* block) {
    const std::size_t size = ::malloc_usable_size(block);
    void* moved = std::malloc(size);
    std::memcpy(moved, block, size);
    std::memset(block, 0xff, size);
    std::free(block);
    return moved;
  }
  static bool stop(void* context) {
    auto& self = *static_cast<PoisoningMover*>(context);
    return self.stop_after >= 0 && self.stop_after-- == 0;
  }
};

TEST(CuckooFilter, DefragmentationMovesEverySubFilterInSlices) {
  ChainAllocator allocator{[](std::size_t bytes) { return std::malloc(bytes); },
                           [](void* block) { std::free(block); }};
  MakeError error = MakeError::none;
  auto filter = Filter::make(64, 2, 20, 2, allocator, 0, error);
  for (std::uint64_t i = 0; i < 3000; ++i) filter->insert(item_hash(item("m:", i)), 0);
  ASSERT_GT(filter->filters().size(), 3u);
  const std::vector<std::uint8_t> before = all_bytes(*filter);
  PoisoningMover mover;
  mover.stop_after = 1;
  std::uint64_t moved = 0;
  std::size_t next =
      filter->relocate(0, PoisoningMover::move, &mover, PoisoningMover::stop, &moved);
  EXPECT_LT(next, filter->filters().size());
  next = filter->relocate(next, PoisoningMover::move, &mover, nullptr, &moved);
  EXPECT_EQ(next, filter->filters().size());
  EXPECT_EQ(moved, filter->filters().size());
  EXPECT_EQ(all_bytes(*filter), before);
  for (std::uint64_t i = 0; i < 3000; ++i) ASSERT_TRUE(filter->contains(item_hash(item("m:", i))));
}

}  // namespace
}  // namespace redbloom::cuckoo
