// A writer's copies of a windowed or growing filter's frozen links (src/redis/stream_copies.hpp),
// without a server: which reads it asks for, which answers it keeps, the claims and marks it
// sends, and which copies it forgets when the script says they were stale.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/layout.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"
#include "redis/stream_copies.hpp"

namespace redbloom::redis::stream {
namespace {

using Read = OlderCopies::Read;

// Items enough for any copy in these tests.
constexpr std::uint64_t kMany = 1u << 20;

// Links of three sizes, as a growing filter's.
struct Links {
  std::vector<FilterParams> links{size_filter(1000, 0.01, Layout::blocked),
                                  size_filter(2000, 0.005, Layout::blocked),
                                  size_filter(4000, 0.0025, Layout::blocked)};
  std::vector<std::uint64_t> start{kHeaderBytes};
  Links() {
    for (const FilterParams& link : links) start.push_back(start.back() + link.partition_bytes());
  }

  // A slice key's first `count` links, link l holding items[l], its header saying `header_links`
  // links, each link's count its item count.
  [[nodiscard]] std::string key_with(const std::vector<std::vector<std::string>>& items,
                                     std::uint32_t header_links = 0) const {
    const auto count = static_cast<std::uint32_t>(items.size());
    std::string key(start[count], '\0');
    key[7] = static_cast<char>(header_links == 0 ? count : header_links);
    for (std::uint32_t l = 0; l < count; ++l) {
      key[8 + 16 * l + 7] = static_cast<char>(items[l].size());
      for (const std::string& item : items[l]) {
        const layout::BlockedLine line = layout::blocked_line(
            hash_item(item), links[l].partition_bits, links[l].hashes, start[l]);
        const std::string_view pairs = line.pairs();
        for (std::size_t q = 0; q < pairs.size(); q += 2) {
          key[line.first + static_cast<unsigned char>(pairs[q])] |= pairs[q + 1];
        }
      }
    }
    return key;
  }
};

TEST(StreamCopies, AWriterClaimsTheOlderSlicesItCopiedAndMarksTheNewestHoldingEachItem) {
  const Links shape;
  OlderCopies copies(shape.links, shape.start, 2);
  EXPECT_EQ(copies.wanted(1, 10, 4, 1, kMany), (std::vector<Read>{{9, 0}, {8, 0}, {7, 0}, {6, 0}}));
  EXPECT_EQ(copies.read_command({9, 0}, "k"), (std::vector<std::string>{"GET", "k"}));
  copies.keep(1, {9, 0}, shape.key_with({{"a"}}));
  copies.keep(1, {8, 0}, std::nullopt);  // no key: nothing in it
  copies.keep(1, {7, 0}, shape.key_with({{"c"}, {"b"}}));
  copies.keep(1, {6, 0}, std::string(100, '\0'));  // no slice key: left to the script
  EXPECT_EQ(copies.wanted(1, 10, 4, 1, kMany), (std::vector<Read>{{6, 0}}));
  EXPECT_EQ(copies.wanted(0, 10, 4, 1, kMany).size(), 4u);  // partitions apart

  const std::vector<ItemHash> hashes{hash_item("a"), hash_item("b"), hash_item("c"),
                                     hash_item("d")};
  std::vector<Claim> claims;
  std::string marks;
  copies.claim(1, 5, 12, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 3u);
  EXPECT_EQ(claims[0].slice, 9);  // newest first
  EXPECT_EQ(claims[0].links, 1u);
  EXPECT_EQ(claims[0].fields.size(), 16u);
  EXPECT_EQ(claims[1].slice, 8);
  EXPECT_EQ(claims[1].links, 0u);
  EXPECT_TRUE(claims[1].fields.empty());
  EXPECT_EQ(claims[2].slice, 7);
  EXPECT_EQ(claims[2].links, 2u);
  EXPECT_EQ(claims[2].fields.size(), 32u);
  // "a" is newest in 9, "b" and "c" in 7's second and first links (marks are g - first + 1).
  EXPECT_EQ(marks, std::string("\x05\x03\x03\x00", 4));
  // Only the declared slices are claimed.
  copies.claim(1, 8, 12, hashes, claims, marks);
  EXPECT_EQ(claims.size(), 2u);
  EXPECT_EQ(marks, std::string("\x02\x00\x00\x00", 4));

  // The script said slice 9's copy was stale: it is asked for again; 8's is kept.
  const std::vector<std::int64_t> claimed{9, 8, 7};
  copies.forget_stale(1, claimed, "011");
  EXPECT_EQ(copies.wanted(1, 10, 4, 1, kMany), (std::vector<Read>{{9, 0}, {6, 0}}));
  // Slices that left the window, or became current, are dropped.
  EXPECT_EQ(copies.wanted(1, 12, 4, 1, kMany), (std::vector<Read>{{11, 0}, {10, 0}, {9, 0}}));
  copies.claim(1, 5, 14, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].slice, 8);
  EXPECT_EQ(copies.wanted(1, 8, 4, 1, kMany), (std::vector<Read>{{7, 0}, {6, 0}, {5, 0}, {4, 0}}));
}

// Without a window the one slice is current: its links before the newest are frozen, copied by
// a GETRANGE of exactly them, and copied again when another link froze.
TEST(StreamCopies, AGrowingFiltersLinksBeforeItsNewestAreCopied) {
  const Links shape;
  OlderCopies copies(shape.links, shape.start, 1);
  EXPECT_TRUE(copies.wanted(0, 0, 0, 1, kMany).empty());  // one link: it is the newest
  EXPECT_EQ(copies.wanted(0, 0, 0, 2, kMany), (std::vector<Read>{{0, 1}}));
  EXPECT_EQ(copies.read_command({0, 1}, "k"),
            (std::vector<std::string>{"GETRANGE", "k", "0", std::to_string(shape.start[1] - 1)}));
  copies.keep(0, {0, 1}, shape.key_with({{"a"}, {"b"}}));  // not what was asked for
  EXPECT_EQ(copies.wanted(0, 0, 0, 2, kMany), (std::vector<Read>{{0, 1}}));
  copies.keep(0, {0, 1}, shape.key_with({{"a"}}, 2));
  EXPECT_TRUE(copies.wanted(0, 0, 0, 2, kMany).empty());
  std::vector<Claim> claims;
  std::string marks;
  const std::vector<ItemHash> hashes{hash_item("a"), hash_item("b")};
  copies.claim(0, 0, 0, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].links, 1u);
  EXPECT_EQ(marks, std::string("\x01\x00", 2));
  // A third link: the first two are frozen now.
  EXPECT_EQ(copies.wanted(0, 0, 0, 3, kMany), (std::vector<Read>{{0, 2}}));
  copies.keep(0, {0, 2}, shape.key_with({{"a"}, {"b"}}, 3));
  copies.claim(0, 0, 0, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].links, 2u);
  EXPECT_EQ(marks, std::string("\x01\x01", 2));
}

// Items go without arguments for the links before F only when the claims answer for those
// links in every live slice: the current slice's claim covers them, and each older live slice
// has a claim of its own.
TEST(StreamCopies, ItemsLeaveOutOnlyTheLinksEveryLiveSlicesClaimCovers) {
  // A growing filter: one slice, whose claim covers its first three links.
  EXPECT_EQ(links_claimed(std::vector<Claim>{{0, 3, ""}}, 0, 0), 3u);
  EXPECT_EQ(links_claimed(std::vector<Claim>{}, 0, 0), 0u);
  // A window of slices 8 .. 10, 10 current with two links claimed.
  EXPECT_EQ(links_claimed(std::vector<Claim>{{10, 2, ""}, {9, 1, ""}, {8, 0, ""}}, 10, 2), 2u);
  EXPECT_EQ(links_claimed(std::vector<Claim>{{10, 2, ""}, {9, 1, ""}}, 10, 2), 0u);
  EXPECT_EQ(links_claimed(std::vector<Claim>{{10, 2, ""}, {9, 1, ""}, {7, 1, ""}}, 10, 2), 0u);
  EXPECT_EQ(links_claimed(std::vector<Claim>{{9, 1, ""}, {8, 1, ""}}, 10, 2), 0u);
}

// A writer of a few items does not read whole slices for them: a partition's links are copied
// once it was sent an item for every kBytesPerItem bytes to read.
TEST(StreamCopies, AFewItemsDoNotMakeAWriterReadWholeSlices) {
  const Links shape;
  OlderCopies copies(shape.links, shape.start, 2);
  const std::uint64_t enough = shape.start[1] / OlderCopies::kBytesPerItem + 1;
  EXPECT_TRUE(copies.wanted(0, 10, 1, 1, 1).empty());
  EXPECT_TRUE(copies.wanted(0, 10, 1, 1, enough - 2).empty());
  EXPECT_TRUE(copies.wanted(1, 10, 1, 1, enough / 2).empty());  // partitions apart
  EXPECT_EQ(copies.wanted(0, 10, 1, 1, 1), (std::vector<Read>{{9, 0}}));
}

// A read the server refused (a key of another type, a user who may not read it) leaves the slice
// to the script, and is not sent again at every call.
TEST(StreamCopies, ARefusedReadIsNotSentAgain) {
  const Links shape;
  OlderCopies copies(shape.links, shape.start, 1);
  EXPECT_EQ(copies.wanted(0, 10, 1, 1, kMany), (std::vector<Read>{{9, 0}}));
  std::string text = "NOPERM this user has no permissions to run the 'get' command";
  redisReply refused{};
  refused.type = REDIS_REPLY_ERROR;
  refused.str = text.data();
  refused.len = text.size();
  copies.keep_reply(0, {9, 0}, refused);
  EXPECT_TRUE(copies.wanted(0, 10, 1, 1, kMany).empty());
  std::vector<Claim> claims;
  std::string marks;
  const std::vector<ItemHash> hashes{hash_item("a")};
  copies.claim(0, 5, 12, hashes, claims, marks);
  EXPECT_TRUE(claims.empty());
  // A string reply is kept.
  std::string key = shape.key_with({{"a"}});
  redisReply bytes{};
  bytes.type = REDIS_REPLY_STRING;
  bytes.str = key.data();
  bytes.len = key.size();
  EXPECT_EQ(copies.wanted(0, 11, 1, 1, kMany), (std::vector<Read>{{10, 0}}));
  copies.keep_reply(0, {10, 0}, bytes);
  copies.claim(0, 5, 12, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(marks, std::string("\x06", 1));
}

// Past the bytes a store may hold, a slice goes without a copy (the script reads it) and is
// not read again at every call.
TEST(StreamCopies, SlicesPastTheByteLimitGoUncopiedAndAreNotAskedForAgain) {
  const Links shape;
  const std::uint64_t key_bytes = shape.start[1];
  OlderCopies copies(shape.links, shape.start, 1, key_bytes + key_bytes / 2);
  EXPECT_EQ(copies.wanted(0, 10, 2, 1, kMany), (std::vector<Read>{{9, 0}, {8, 0}}));
  copies.keep(0, {9, 0}, shape.key_with({{"a"}}));
  copies.keep(0, {8, 0}, shape.key_with({{"a"}}));  // would pass the limit
  EXPECT_TRUE(copies.wanted(0, 10, 2, 1, kMany).empty());
  std::vector<Claim> claims;
  std::string marks;
  const std::vector<ItemHash> hashes{hash_item("a")};
  copies.claim(0, 5, 12, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].slice, 9);
  // The next slice cannot fit either: it is not read at all.
  EXPECT_TRUE(copies.wanted(0, 11, 2, 1, kMany).empty());
  copies.claim(0, 5, 12, hashes, claims, marks);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].slice, 9);
  // Once 9 leaves, 11 is read.
  EXPECT_EQ(copies.wanted(0, 12, 2, 1, kMany), (std::vector<Read>{{11, 0}}));
}

}  // namespace
}  // namespace redbloom::redis::stream
