// A writer's copies of a windowed filter's older slices (src/redis/stream_copies.hpp), without a
// server: which slices it asks for, which keys it keeps, the claims and marks it sends, and which
// copies it forgets when the script says they were stale.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/layout.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"
#include "redis/stream_copies.hpp"

namespace redbloom::redis::stream {
namespace {

struct OneLink {
  std::vector<FilterParams> links{size_filter(1000, 0.01, Layout::blocked)};
  std::vector<std::uint64_t> start{kHeaderBytes, kHeaderBytes + links[0].partition_bytes()};

  // A slice key of one link holding `items`.
  [[nodiscard]] std::string key_with(const std::vector<std::string>& items) const {
    std::string key(start[1], '\0');
    key[7] = 1;  // header field 0, big-endian: one link
    for (const std::string& item : items) {
      const layout::BlockedLine line =
          layout::blocked_line(hash_item(item), links[0].partition_bits, links[0].hashes, start[0]);
      const std::string_view pairs = line.pairs();
      for (std::size_t q = 0; q < pairs.size(); q += 2) {
        key[line.first + static_cast<unsigned char>(pairs[q])] |= pairs[q + 1];
      }
    }
    return key;
  }
};

TEST(StreamCopies, AWriterClaimsTheOlderSlicesItCopiedAndMarksTheNewestHoldingEachItem) {
  const OneLink shape;
  OlderCopies copies(shape.links, shape.start, 2);
  EXPECT_EQ(copies.wanted(1, 10, 4), (std::vector<std::int64_t>{9, 8, 7, 6}));
  copies.keep(1, 9, shape.key_with({"a"}));
  copies.keep(1, 8, std::nullopt);  // no key: nothing in it
  copies.keep(1, 7, shape.key_with({"a", "b"}));
  copies.keep(1, 6, std::string(100, '\0'));  // no slice key: left to the script
  EXPECT_EQ(copies.wanted(1, 10, 4), (std::vector<std::int64_t>{6}));
  EXPECT_EQ(copies.wanted(0, 10, 4).size(), 4u);  // partitions apart

  const std::vector<ItemHash> hashes{hash_item("a"), hash_item("b"), hash_item("c")};
  std::vector<Claim> claims;
  std::string marks;
  copies.claim(1, 5, 12, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 3u);
  EXPECT_EQ(claims[0].slice, 9);  // newest first
  EXPECT_EQ(claims[0].header.size(), kHeaderBytes);
  EXPECT_EQ(claims[1].slice, 8);
  EXPECT_TRUE(claims[1].header.empty());
  EXPECT_EQ(claims[2].slice, 7);
  // "a" is newest in 9, "b" in 7 (marks are g - first + 1), "c" in none.
  EXPECT_EQ(marks, std::string("\x05\x03\x00", 3));
  // Only the declared slices are claimed.
  copies.claim(1, 8, 12, hashes, claims, marks);
  EXPECT_EQ(claims.size(), 2u);
  EXPECT_EQ(marks, std::string("\x02\x00\x00", 3));

  // The script said slice 9's copy was stale: it is asked for again; 8's is kept.
  const std::vector<std::int64_t> claimed{9, 8, 7};
  copies.forget_stale(1, claimed, "011");
  EXPECT_EQ(copies.wanted(1, 10, 4), (std::vector<std::int64_t>{9, 6}));
  // Slices that left the window, or became current, are dropped.
  EXPECT_EQ(copies.wanted(1, 12, 4), (std::vector<std::int64_t>{11, 10, 9}));
  copies.claim(1, 5, 14, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].slice, 8);
  EXPECT_EQ(copies.wanted(1, 8, 4), (std::vector<std::int64_t>{7, 6, 5, 4}));
}

// Past the bytes a store may hold, a slice goes without a copy (the script reads it) and is
// not read again at every call.
TEST(StreamCopies, SlicesPastTheByteLimitGoUncopiedAndAreNotAskedForAgain) {
  const OneLink shape;
  const std::uint64_t key_bytes = shape.start[1];
  OlderCopies copies(shape.links, shape.start, 1, key_bytes + key_bytes / 2);
  EXPECT_EQ(copies.wanted(0, 10, 2), (std::vector<std::int64_t>{9, 8}));
  copies.keep(0, 9, shape.key_with({"a"}));
  copies.keep(0, 8, shape.key_with({"a"}));  // would pass the limit
  EXPECT_TRUE(copies.wanted(0, 10, 2).empty());
  std::vector<Claim> claims;
  std::string marks;
  const std::vector<ItemHash> hashes{hash_item("a")};
  copies.claim(0, 5, 12, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].slice, 9);
  // The next slice cannot fit either: it is not read at all.
  EXPECT_EQ(copies.wanted(0, 11, 2), (std::vector<std::int64_t>{}));
  copies.claim(0, 5, 12, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].slice, 9);
  // Once 9 leaves, 10 and 11 are read.
  EXPECT_EQ(copies.wanted(0, 12, 2), (std::vector<std::int64_t>{11}));
}

}  // namespace
}  // namespace redbloom::redis::stream
