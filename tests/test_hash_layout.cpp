#include <gtest/gtest.h>

#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/bit_order.hpp"
#include "core/bitmap_kernels.hpp"
#include "core/layout.hpp"
#include "local/file_store.hpp"
#include "local/memory_store.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "simd_levels.hpp"
#include "temp_dir.hpp"

namespace redbloom {
namespace {

TEST(Hash, IsXxh3_128AsPrintedByXxh128sum) {
  // `printf hello | xxh128sum` prints high64 then low64.
  EXPECT_EQ(hash_item("hello"), (ItemHash{0xc779cfaa5e523818ull, 0xb5e9c1ad071b3e7full}));
  EXPECT_EQ(hash_item(""), (ItemHash{0x6001c324468d497full, 0x99aa06d3014798d8ull}));
  EXPECT_EQ(hash_item("s3://bucket/dir/file1.pdf"),
            (ItemHash{0x0b2d299c4b3e52b6ull, 0x23a0ab8c87391511ull}));
  // Bytes, not C strings: an embedded NUL is part of the item.
  EXPECT_NE(hash_item(std::string_view("a\0b", 3)), hash_item("a"));
}

// The batch hash (eight items a vector with AVX-512) gives each item's own hash, whatever the
// mix of lengths in a group of eight and wherever the batch ends.
TEST(Hash, BatchHashIsEachItemsHash) {
  std::string bytes;
  for (int i = 0; i < 700; ++i) bytes.push_back(static_cast<char>((i * 131 + 7) % 256));
  std::vector<std::string_view> mixed;
  for (std::size_t i = 0; i < 2000; ++i) {
    const std::size_t length = (i * 37) % 300;  // 0 to 299: every XXH3 length class
    mixed.emplace_back(bytes.data() + i % 400, length);
  }
  std::vector<std::string_view> ids;  // a batch of 8-byte ids takes its own loop
  for (std::size_t i = 0; i < 100; ++i) ids.emplace_back(bytes.data() + i * 3, 8);
  for (kernels::Simd simd : testing::simd_levels()) {
    const kernels::Simd previous = kernels::use_simd(simd);
    SCOPED_TRACE(testing::to_string(simd));
    for (const auto& items : {mixed, ids}) {
      for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                            std::size_t{17}, items.size()}) {
        const std::span<const std::string_view> batch(items.data(), n);
        std::vector<ItemHash> hashes(n);
        kernels::hash_items(batch, hashes.data());
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(hashes[i], hash_item(batch[i]))
              << "item " << i << " of " << n << ", " << batch[i].size() << " bytes";
        }
      }
    }
    kernels::use_simd(previous);
  }
}

// Hash scheme 1 is frozen: these positions must never change, or every stored filter breaks.
TEST(Layout, Scheme1PositionsArePinned) {
  const ItemHash h = hash_item("hello");
  EXPECT_EQ(layout::partition_of(h, 3), 1u);
  std::vector<std::uint64_t> classic;
  layout::classic_probes(h, 1 << 20, 7, [&](std::uint64_t o) { classic.push_back(o); });
  EXPECT_EQ(classic,
            (std::vector<std::uint64_t>{817052, 513593, 210133, 955249, 651789, 348329, 44869}));
  std::vector<std::uint64_t> blocked;
  layout::blocked_probes(h, 1 << 20, 7, [&](std::uint64_t o) { blocked.push_back(o); });
  EXPECT_EQ(blocked,
            (std::vector<std::uint64_t>{817133, 816667, 816732, 816784, 816875, 816897, 816999}));
}

TEST(Layout, BlockedProbesStayInOneCacheLine) {
  for (int i = 0; i < 1000; ++i) {
    const ItemHash h = hash_item("item" + std::to_string(i));
    std::set<std::uint64_t> blocks;
    layout::blocked_probes(h, 1 << 20, 16, [&](std::uint64_t o) {
      EXPECT_LT(o, 1u << 20);
      blocks.insert(o / 512);
    });
    EXPECT_EQ(blocks.size(), 1u);
  }
}

TEST(Layout, BlockedProbesGoToWordsInTurnFromTheStartWord) {
  const ItemHash h = hash_item("hello");  // hi mod 8 = 7
  std::vector<std::uint64_t> words;
  layout::blocked_probes_in_block(h, 10, [&](std::uint64_t o) { words.push_back(o / 64); });
  EXPECT_EQ(words, (std::vector<std::uint64_t>{7, 0, 1, 2, 3, 4, 5, 6, 7, 0}));
}

TEST(BitOrder, MatchesTheRedisSetbitDocumentation) {
  // redis.io SETBIT, "Pattern: accessing the entire bitmap":
  //   SETBIT bitmapsarestrings 2 1; ... 3 1; ... 5 1; ... 10 1; ... 11 1; ... 14 1
  //   GET bitmapsarestrings  ->  "42"
  std::uint64_t word = 0;
  for (std::uint64_t bit : {2, 3, 5, 10, 11, 14}) word |= word_mask(bit);
  const auto* bytes = reinterpret_cast<const char*>(&word);
  EXPECT_EQ(std::string(bytes, 2), "42");
  // SET k "A" (0x41); GETBIT k 1 -> 1, GETBIT k 7 -> 1, every other bit 0.
  for (std::uint64_t bit = 0; bit < 8; ++bit) {
    EXPECT_EQ((0x41 & redis_byte_mask(bit)) != 0, bit == 1 || bit == 7) << bit;
  }
  EXPECT_EQ(redis_byte_index(10086), 1260u);
  EXPECT_EQ(word_index(10086), 157u);
}

// The kernels must set exactly the layout's offsets, in Redis bit order, in the item's partition.
void expect_bits_in_redis_order(Layout layout_kind) {
  const FilterParams params = explicit_filter(4 * 65536, 7, layout_kind, 0, 8192);
  ASSERT_EQ(params.partitions, 4u);
  MemoryStore* raw = nullptr;
  auto store = std::make_unique<MemoryStore>(params);
  raw = store.get();
  Filter filter(std::move(store));
  const std::string item = "s3://bucket/dir/file1.pdf";
  filter.add(item);
  const ItemHash h = hash_item(item);
  const std::uint64_t base = layout::partition_of(h, params.partitions) * params.partition_bits;
  std::set<std::uint64_t> offsets;
  auto collect = [&](std::uint64_t o) { offsets.insert(base + o); };
  if (layout_kind == Layout::classic) {
    layout::classic_probes(h, params.partition_bits, params.hashes, collect);
  } else {
    layout::blocked_probes(h, params.partition_bits, params.hashes, collect);
  }
  const auto bytes = raw->bytes();
  for (std::uint64_t bit : offsets) {
    EXPECT_NE(bytes[redis_byte_index(bit)] & redis_byte_mask(bit), 0) << bit;
  }
  EXPECT_EQ(raw->count_set_bits(), offsets.size());
}

TEST(BitOrder, ClassicKernelWritesRedisOffsets) {
  expect_bits_in_redis_order(Layout::classic);
}
TEST(BitOrder, BlockedKernelWritesRedisOffsets) {
  expect_bits_in_redis_order(Layout::blocked);
}

// Every kernel (the batch and one-item paths, SIMD or scalar, each k range) must set exactly
// the bits the pure layout names, in Redis bit order: checked against a bitmap built here from
// layout.hpp alone, so a mistake shared by two kernels cannot pass by their agreeing.
TEST(Kernels, EveryPathSetsExactlyTheLayoutsBits) {
  std::vector<std::string> items;
  for (int i = 0; i < 3000; ++i) items.push_back("item-" + std::to_string(i * 7919));
  // Runs of 4- to 8-byte keys (64-bit ids and the like): the AVX-512 batch path hashes eight
  // of them at once, and falls back item by item when a group mixes in other lengths.
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::uint64_t key = (i + 1) * 0x9E3779B97F4A7C15ull;
    const std::size_t length = i < 2000 ? 8 : 4 + i % 5;
    items.emplace_back(reinterpret_cast<const char*>(&key), length);
  }
  // Runs of 17- to 240-byte items (URLs, paths, hex digests), hashed eight at a time as well:
  // first 17 to 32 bytes (one XXH3 round), then 129 to 240 (four to seven rounds and the last
  // 32 bytes), then every length from 9 to 260, so that groups mix the length ranges with
  // lengths that fall back item by item (over 240).
  for (int i = 0; i < 5000; ++i) {
    const std::size_t length = i < 1000   ? 17 + i % 16
                               : i < 2000 ? 129 + (i * 13) % 112
                                          : 9 + (i * 37) % 252;
    std::string url = "https://example.com/" + std::to_string(i * 104729) + "/";
    while (url.size() < length) url += static_cast<char>('a' + (url.size() * 7 + i) % 26);
    items.push_back(url.substr(0, length));
  }
  // Last, a batch added by a call of its own that starts and ends with 64-bit ids and holds
  // every length from 0 to 260 between them: the batch path picks its loop by the batch's ends.
  const std::size_t mixed_batch_at = items.size();
  const auto id = [&](std::uint64_t i) {
    const std::uint64_t key = (i + 7) * 0xD1B54A32D192ED03ull;
    items.emplace_back(reinterpret_cast<const char*>(&key), sizeof key);
  };
  for (std::uint64_t i = 0; i < 8; ++i) id(i);
  for (std::size_t length = 0; length <= 260; ++length) {
    items.push_back(std::string(length, static_cast<char>('a' + length % 26)));
  }
  for (std::uint64_t i = 8; i < 16; ++i) id(i);
  const std::vector<std::string_view> views(items.begin(), items.end());
  const auto main_views = std::span(views).first(mixed_batch_at);
  const auto mixed_batch = std::span(views).subspan(mixed_batch_at);
  for (Layout layout_kind : {Layout::classic, Layout::blocked}) {
    for (std::uint32_t k : {1u, 3u, 6u, 8u, 9u, 13u, 16u}) {
      const FilterParams params = explicit_filter(1 << 18, k, layout_kind, 0, 8192);
      std::vector<std::uint8_t> expected(params.total_bytes());
      for (const std::string& item : items) {
        const ItemHash h = hash_item(item);
        const std::uint64_t base =
            layout::partition_of(h, params.partitions) * params.partition_bits;
        auto set = [&](std::uint64_t offset) {
          expected[redis_byte_index(base + offset)] |= redis_byte_mask(base + offset);
        };
        if (layout_kind == Layout::classic) {
          layout::classic_probes(h, params.partition_bits, k, set);
        } else {
          layout::blocked_probes(h, params.partition_bits, k, set);
        }
      }
      for (kernels::Simd simd : testing::simd_levels()) {
        const kernels::Simd previous = kernels::use_simd(simd);
        for (bool one_at_a_time : {false, true}) {
          SCOPED_TRACE(std::string(to_string(layout_kind)) + " k=" + std::to_string(k) + " " +
                       testing::to_string(simd) + (one_at_a_time ? " add" : " add_many"));
          auto store = std::make_unique<MemoryStore>(params);
          const MemoryStore& bits = *store;
          Filter filter(std::move(store));
          if (one_at_a_time) {
            for (std::string_view item : views) filter.add(item);
          } else {
            filter.add_many(main_views);
            filter.add_many(mixed_batch);
          }
          EXPECT_TRUE(std::equal(expected.begin(), expected.end(), bits.bytes().begin()));
        }
        kernels::use_simd(previous);
      }
    }
  }
}

// Filter::add / contains take a one-item path of their own; it must agree with the batch path
// bit for bit, for both layouts, both blocked kernels, one partition or several.
TEST(Kernels, OneItemAndBatchPathsAgree) {
  std::vector<std::string> items;
  // Repeats, and every length from 0 to 40 bytes: the one-item paths treat 4-8 bytes, up to
  // 16 and longer items differently.
  const std::string tail = "-with-a-longer-tail-0123456789abcdefghij";
  for (int i = 0; i < 5000; ++i) {
    const int id = i % 4000;
    items.push_back(("one-" + std::to_string(id) + tail).substr(0, id % 41));
  }
  // Whole groups of eight 8-byte keys, repeats included, for the eight-at-a-time batch hash.
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::uint64_t key = (i % 2500 + 1) * 0xD1B54A32D192ED03ull;
    items.emplace_back(reinterpret_cast<const char*>(&key), sizeof key);
  }
  const std::vector<std::string_view> views(items.begin(), items.end());
  const testing::TempDir dir;
  for (kernels::Simd simd : testing::simd_levels()) {
    const kernels::Simd previous = kernels::use_simd(simd);
    SCOPED_TRACE(testing::to_string(simd));
    for (bool in_file : {false, true}) {
      for (Layout layout_kind : {Layout::classic, Layout::blocked}) {
        for (std::uint64_t partition_bytes : {std::uint64_t{5120}, std::uint64_t{1280}}) {
          for (std::uint32_t k : {3u, 7u, 13u}) {
            const FilterParams params = explicit_filter(40960, k, layout_kind, 0, partition_bytes);
            ASSERT_EQ(params.partitions, 5120 / partition_bytes);
            // One-item adds into private memory rewrite every probed word; into a file mapping
            // only words whose bit changes (bitmap_kernels.hpp): both paths, against the batch.
            SCOPED_TRACE(std::string(to_string(layout_kind)) + " k=" + std::to_string(k) +
                         (in_file ? " file" : " memory"));
            std::unique_ptr<Store> one_store;
            const BitmapStore* one_bitmap = nullptr;
            if (in_file) {
              auto file = FileStore::create(dir.file("one.rbf"), params, /*overwrite=*/true);
              one_bitmap = file.get();
              one_store = std::move(file);
            } else {
              auto memory = std::make_unique<MemoryStore>(params);
              one_bitmap = memory.get();
              one_store = std::move(memory);
            }
            auto batch_store = std::make_unique<MemoryStore>(params);
            const BitmapStore& one_bits = *one_bitmap;
            const MemoryStore& batch_bits = *batch_store;
            Filter one(std::move(one_store));
            Filter batch(std::move(batch_store));
            std::vector<std::uint8_t> batch_new(views.size());
            batch.add_many(views, batch_new);
            for (std::size_t i = 0; i < views.size(); ++i) {
              ASSERT_EQ(one.add(views[i]), batch_new[i] != 0) << i;
            }
            EXPECT_TRUE(std::equal(one_bits.bytes().begin(), one_bits.bytes().end(),
                                   batch_bits.bytes().begin()));
            std::vector<std::uint8_t> present(views.size());
            batch.contains_many(views, present);
            // Absent items too (the filter is nearly full, so both answers occur): a one-item
            // lookup may stop at the first clear bit, the batch path tests all k.
            std::vector<std::string> absent;
            for (std::size_t i = 0; i < views.size(); i += 7)
              absent.push_back("absent-" + items[i]);
            const std::vector<std::string_view> absent_views(absent.begin(), absent.end());
            std::vector<std::uint8_t> absent_present(absent.size());
            const std::size_t false_positives = batch.contains_many(absent_views, absent_present);
            EXPECT_GT(false_positives, 0u);
            EXPECT_LT(false_positives, absent.size());
            for (std::size_t i = 0; i < views.size(); i += 7) {
              EXPECT_EQ(one.contains(views[i]), present[i] != 0);
              EXPECT_EQ(one.contains(absent_views[i / 7]), absent_present[i / 7] != 0) << i;
            }
          }
        }
      }
    }
    kernels::use_simd(previous);
  }
}

// Filters past 2^32 bits: earlier libraries truncated offsets to 32 bits there.
void expect_large_filter_works(Layout layout_kind) {
  const std::uint64_t bits = std::uint64_t{1} << 33;  // 1 GiB, two 512 MiB partitions
  const FilterParams params = explicit_filter(bits, 7, layout_kind, 0, std::uint64_t{512} << 20);
  ASSERT_EQ(params.partitions, 2u);
  ASSERT_EQ(params.partition_bits, std::uint64_t{1} << 32);
  auto store = std::make_unique<MemoryStore>(params);
  MemoryStore* raw = store.get();
  Filter filter(std::move(store));
  std::vector<std::string> items;
  for (int i = 0; i < 200000; ++i) items.push_back("large-" + std::to_string(i));
  const std::vector<std::string_view> views(items.begin(), items.end());
  EXPECT_EQ(filter.add_many(views), items.size());
  EXPECT_EQ(filter.contains_many(views), items.size());
  // Bits are set in the top quarter of the address range (past 2^32 + 2^31).
  const auto bytes = raw->bytes();
  std::uint64_t high_bytes_set = 0;
  for (std::uint64_t i = bytes.size() * 7 / 8; i < bytes.size(); ++i)
    high_bytes_set += bytes[i] != 0;
  EXPECT_GT(high_bytes_set, 10000u);
}

TEST(LargeFilter, ClassicBeyond2To32Bits) {
  expect_large_filter_works(Layout::classic);
}
TEST(LargeFilter, BlockedBeyond2To32Bits) {
  expect_large_filter_works(Layout::blocked);
}

}  // namespace
}  // namespace redbloom
