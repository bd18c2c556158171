// The stream script's protocol (src/redis/stream_script.hpp) against RESP byte strings, without
// a server: the arguments a call sends, and what the client makes of each reply, the script's
// own errors (a damaged or foreign slice key, named) included.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <string>
#include <vector>

#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"
#include "redis/partition_ops.hpp"
#include "redis/stream_script.hpp"

namespace redbloom::redis::stream {
namespace {

// One reply parsed from RESP text by hiredis's reader, as a pipeline would get it.
Reply parse(const std::string& resp, std::span<const std::string> keys) {
  redisReader* reader = redisReaderCreate();
  EXPECT_EQ(redisReaderFeed(reader, resp.data(), resp.size()), REDIS_OK);
  void* raw = nullptr;
  EXPECT_EQ(redisReaderGetReply(reader, &raw), REDIS_OK);
  redisReaderFree(reader);
  redis::Reply owned(static_cast<redisReply*>(raw));
  return decode(*owned, keys);
}

std::string bulk(std::string_view text) {
  return "$" + std::to_string(text.size()) + "\r\n" + std::string(text) + "\r\n";
}
std::string integer(long long value) {
  return ":" + std::to_string(value) + "\r\n";
}

const std::vector<std::string> kKeys{"f:s9:bits:{f:0}", "f:s10:bits:{f:0}"};

TEST(StreamScript, AnAddSendsItsKeysShapeAndOffsets) {
  const std::vector<LinkArgs> links{{64, 10, 3}, {128, 20, 4}};
  const std::vector<std::uint64_t> offsets{4200, 4201, 4202, 4300, 4301, 4302};  // 2 items, K = 1
  Call call;
  call.mode = Mode::add;
  call.now_ms = 1234;
  call.slice_ms = 500;
  call.older = 1;
  call.first = 9;
  call.keys = kKeys;
  call.budget = 0;
  call.links = links;
  call.with_offsets = 1;
  call.items = 2;
  CommandBuffer items;
  for (const std::uint64_t offset : offsets) items.arg(offset);
  call.item_args = items.text();
  call.item_arg_count = offsets.size();
  CommandBuffer out;
  EXPECT_EQ(encode(out, call, "abc"), 1u);
  std::string expected = "*" + std::to_string(3 + 2 + 12 + 6 + 6) + "\r\n";
  for (const std::string_view arg : {"EVALSHA", "abc", "2"}) expected += bulk(arg);
  for (const std::string& key : kKeys) expected += bulk(key);
  for (const std::string_view arg : {"a", "1234", "500", "1", "9"}) expected += bulk(arg);
  expected += bulk(std::to_string(kHeaderBytes));
  for (const std::string_view arg :
       {"2", "0", "1", "b", "0", "64", "10", "3", "128", "20", "4", "2"}) {
    expected += bulk(arg);
  }
  for (const std::uint64_t offset : offsets) expected += bulk(std::to_string(offset));
  EXPECT_EQ(out.text(), expected);
  // Without a SHA the script's text goes along (EVAL), and without a clock the server's time.
  CommandBuffer text;
  call.now_ms = -1;
  encode(text, call, "");
  EXPECT_NE(text.text().find(bulk("EVAL") + bulk(script_text())), std::string::npos);
  EXPECT_NE(text.text().find(bulk("a") + bulk("-1")), std::string::npos);
}

// A blocked filter's items go as their lines: in each link, the line's first and last byte in
// the slice key and the (byte, mask) pairs of exactly the bits a bit-by-bit add sets.
TEST(StreamScript, ABlockedItemGoesAsItsLineInEachLink) {
  const std::vector<FilterParams> blocked{size_filter(1000, 0.01, Layout::blocked),
                                          size_filter(3000, 0.005, Layout::blocked)};
  const std::vector<FilterParams> classic{size_filter(1000, 0.01, Layout::classic)};
  EXPECT_EQ(item_form(blocked), ItemForm::lines);
  EXPECT_EQ(item_form(classic), ItemForm::bits);
  EXPECT_EQ(item_arguments(ItemForm::lines, blocked[1]), 3u);
  EXPECT_EQ(item_arguments(ItemForm::bits, blocked[1]), blocked[1].hashes);
  const std::vector<std::uint64_t> start{kHeaderBytes, kHeaderBytes + blocked[0].partition_bytes()};
  for (int i = 0; i < 200; ++i) {
    std::string item = "item ";
    item += std::to_string(i);
    const ItemHash h = hash_item(item);
    std::vector<std::uint64_t> bits;
    append_item_arguments(
        ItemForm::bits, blocked, start, h, 2, [&](std::uint64_t bit) { bits.push_back(bit); },
        [](std::string_view) { FAIL() << "bits are numbers"; });
    std::vector<std::uint64_t> numbers;
    std::vector<std::string> texts;
    append_item_arguments(
        ItemForm::lines, blocked, start, h, 2, [&](std::uint64_t n) { numbers.push_back(n); },
        [&](std::string_view t) { texts.emplace_back(t); });
    ASSERT_EQ(numbers.size(), 4u);
    ASSERT_EQ(texts.size(), 2u);
    std::vector<std::uint64_t> from_lines;
    for (std::size_t l = 0; l < 2; ++l) {
      const std::uint64_t first = numbers[2 * l];
      EXPECT_EQ(numbers[2 * l + 1], first + 63);
      EXPECT_EQ((first - start[l]) % 64, 0u);
      const std::string& pairs = texts[l];
      ASSERT_EQ(pairs.size() % 2, 0u);
      for (std::size_t q = 0; q < pairs.size(); q += 2) {
        const auto byte = static_cast<unsigned char>(pairs[q]);
        const auto mask = static_cast<unsigned char>(pairs[q + 1]);
        ASSERT_LT(byte, 64u);
        if (q > 0) {
          EXPECT_GT(byte, static_cast<unsigned char>(pairs[q - 2]));  // each byte once
        }
        for (unsigned b = 0; b < 8; ++b) {
          if (mask & (0x80u >> b)) from_lines.push_back(8 * (first + byte) + b);
        }
      }
    }
    std::sort(bits.begin(), bits.end());
    bits.erase(std::unique(bits.begin(), bits.end()), bits.end());
    EXPECT_EQ(from_lines, bits) << "item " << i;
  }
}

TEST(StreamScript, RepliesSayHowFarAUnitGotAndWhatItNeeds) {
  const Reply ok = parse(
      "*6\r\n" + bulk("ok") + integer(3) + bulk("101") + integer(2) + integer(10) + integer(5000),
      kKeys);
  EXPECT_EQ(ok.status, Reply::Status::ok);
  EXPECT_EQ(ok.done, 3u);
  EXPECT_EQ(ok.flags, "101");
  EXPECT_EQ(ok.links, 2u);
  EXPECT_EQ(ok.slice, 10);
  EXPECT_EQ(ok.now_ms, 5000);
  const Reply links = parse(
      "*6\r\n" + bulk("links") + integer(1) + bulk("1") + integer(3) + integer(10) + integer(1),
      kKeys);
  EXPECT_EQ(links.status, Reply::Status::links);
  EXPECT_EQ(links.links, 3u);
  EXPECT_EQ(
      parse("*6\r\n" + bulk("full") + integer(0) + bulk("") + integer(4) + integer(10) + integer(1),
            kKeys)
          .status,
      Reply::Status::full);
  EXPECT_EQ(
      parse("*6\r\n" + bulk("time") + integer(0) + bulk("") + integer(0) + integer(12) + integer(1),
            kKeys)
          .slice,
      12);
  // Answers that do not match their count, or unknown statuses, are refused.
  EXPECT_THROW(
      parse("*6\r\n" + bulk("ok") + integer(3) + bulk("10") + integer(1) + integer(10) + integer(1),
            kKeys),
      ReplyProblem);
  EXPECT_THROW(parse("*6\r\n" + bulk("maybe") + integer(0) + bulk("") + integer(1) + integer(10) +
                         integer(1),
                     kKeys),
               ReplyProblem);
  EXPECT_THROW(parse(integer(1), kKeys), ReplyProblem);
}

// An add's claims follow its items: their count, each slice, the links copied and their header
// fields as copied (none for no key), then one mark an item; the reply's verdict says which
// copies were the slice.
TEST(StreamScript, AnAddsClaimsFollowItsItemsAndTheReplySaysWhichHeld) {
  const std::vector<LinkArgs> links{{64, 10, 3}};
  Call call;
  call.mode = Mode::add;
  call.first = 9;
  call.keys = kKeys;
  call.links = links;
  call.with_offsets = 1;
  call.items = 2;
  CommandBuffer items;
  for (const std::uint64_t offset : {1, 2, 3, 4, 5, 6}) items.arg(std::uint64_t(offset));
  call.item_args = items.text();
  call.item_arg_count = 6;
  const std::string fields(16, 'f');
  const std::vector<Claim> claims{{9, 1, fields}, {8, 0, ""}};
  call.claims = claims;
  const std::string marks("\x01\x00", 2);
  call.marks = marks;
  CommandBuffer out;
  encode(out, call, "abc");
  std::string tail = bulk("6");
  for (const std::string_view arg : {"2", "9", "1"}) tail += bulk(arg);
  tail += bulk(fields) + bulk("8") + bulk("0") + bulk("") + bulk(marks);
  EXPECT_TRUE(out.text().ends_with(tail));
  EXPECT_TRUE(out.text().starts_with("*" + std::to_string(3 + 2 + 12 + 3 + 6 + 8) + "\r\n"));
  const Reply reply = parse("*7\r\n" + bulk("ok") + integer(2) + bulk("01") + integer(1) +
                                integer(10) + integer(5000) + bulk("10"),
                            kKeys);
  EXPECT_EQ(reply.verdict, "10");
  EXPECT_EQ(reply.flags, "01");
  EXPECT_TRUE(reply.slices.empty());
}

TEST(StreamScript, InfoRepliesCarryEachSliceHeader) {
  std::string header(kHeaderBytes, '\0');
  const auto put = [&](std::uint64_t field, std::uint64_t value) {
    for (int b = 7; b >= 0; --b) {
      header[8 * field + (7 - b)] = static_cast<char>((value >> (8 * b)) & 0xff);
    }
  };
  put(0, 2);                 // two links
  put(1, 300);               // link 0: items
  put(2, 1700000000123ull);  // link 0: created
  put(3, 45);                // link 1: items
  put(4, 1700000000999ull);  // link 1: created
  const Reply info =
      parse("*7\r\n" + bulk("ok") + integer(0) + bulk("") + integer(2) + integer(10) + integer(1) +
                "*4\r\n" + integer(10) + bulk(header) + integer(4000) + integer(777),
            kKeys);
  ASSERT_EQ(info.slices.size(), 1u);
  const SliceState& slice = info.slices[0];
  EXPECT_EQ(slice.slice, 10);
  EXPECT_EQ(slice.links, 2u);
  EXPECT_EQ(slice.items, (std::vector<std::uint64_t>{300, 45}));
  EXPECT_EQ(slice.created_ms, (std::vector<std::uint64_t>{1700000000123ull, 1700000000999ull}));
  EXPECT_EQ(slice.length, 4000u);
  EXPECT_EQ(slice.set_bits, 777u);
}

TEST(StreamScript, TheScriptsOwnErrorsNameTheKey) {
  try {
    (void)parse("-REDBLOOMSTREAM damaged 2 999\r\n", kKeys);
    FAIL() << "no error";
  } catch (const ReplyProblem& problem) {
    EXPECT_TRUE(problem.lost());
    EXPECT_NE(std::string(problem.what()).find("'f:s10:bits:{f:0}' is 999 bytes"),
              std::string::npos)
        << problem.what();
  }
  try {
    (void)parse("-REDBLOOMSTREAM wrongtype 1 hash\r\n", kKeys);
    FAIL() << "no error";
  } catch (const ReplyProblem& problem) {
    EXPECT_TRUE(problem.lost());
    EXPECT_NE(std::string(problem.what()).find("'f:s9:bits:{f:0}' holds a hash"), std::string::npos)
        << problem.what();
  }
  try {
    (void)parse("-REDBLOOMSTREAM lost 2 0\r\n", kKeys);
    FAIL() << "no error";
  } catch (const ReplyProblem& problem) {
    EXPECT_TRUE(problem.lost());
    EXPECT_NE(std::string(problem.what()).find("'f:s10:bits:{f:0}' is gone"), std::string::npos)
        << problem.what();
  }
  try {
    (void)parse("-OOM command not allowed\r\n", kKeys);
    FAIL() << "no error";
  } catch (const ReplyProblem& problem) {
    EXPECT_FALSE(problem.lost());
  }
}

}  // namespace
}  // namespace redbloom::redis::stream
