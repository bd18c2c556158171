// The per-partition commands (src/redis/partition_ops.hpp) against RESP byte strings, without a
// server: what each operation sends, and what it makes of the replies, the partition lost
// between its two length checks included.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/layout.hpp"
#include "core/packed_items.hpp"
#include "core/redis_format.hpp"
#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"
#include "redis/partition_ops.hpp"

namespace redbloom::redis {
namespace {

// Replies parsed from RESP text by hiredis's own reader, as a pipeline would get them.
class ParsedReplies {
 public:
  explicit ParsedReplies(const std::string& resp) {
    redisReader* reader = redisReaderCreate();
    EXPECT_EQ(redisReaderFeed(reader, resp.data(), resp.size()), REDIS_OK);
    void* reply = nullptr;
    while (redisReaderGetReply(reader, &reply) == REDIS_OK && reply != nullptr) {
      owned_.emplace_back(static_cast<redisReply*>(reply));
      pointers_.push_back(owned_.back().get());
    }
    redisReaderFree(reader);
  }
  [[nodiscard]] Replies all() const { return pointers_; }

 private:
  std::vector<Reply> owned_;
  std::vector<const redisReply*> pointers_;
};

std::string integer(long long value) {
  return ":" + std::to_string(value) + "\r\n";
}

struct Fixture {
  FilterParams params = size_filter(1000, 0.01, Layout::classic);
  std::vector<std::string_view> items{"a", "b"};
  std::vector<ItemHash> hashes{hash_item("a"), hash_item("b")};
  std::vector<std::uint32_t> order{0, 1};
  PartitionKey key{"f:bits:{f:0}", params.partition_bytes() + 1};
  [[nodiscard]] UnitItems unit() const { return {order, hashes.data(), items.data()}; }
  // The BITFIELD reply: the old bit of each probe, k per item.
  [[nodiscard]] std::string old_bits(const std::vector<int>& bits) const {
    std::string resp = "*" + std::to_string(bits.size()) + "\r\n";
    for (int b : bits) resp += integer(b);
    return resp;
  }
};

TEST(PartitionOps, TestAndSetBracketsBitfieldWithLengthChecks) {
  const Fixture f;
  const auto commands = stock_partition_commands(f.params);
  CommandBuffer out;
  EXPECT_EQ(commands->encode_test_and_set(out, f.key, f.unit()), 3u);
  // STRLEN, then BITFIELD SET u1 <bit> 1 for each probe, then STRLEN again.
  std::string expected = "*2\r\n$6\r\nSTRLEN\r\n$12\r\nf:bits:{f:0}\r\n";
  const std::size_t args = 2 + 4 * f.params.hashes * 2;
  expected += "*" + std::to_string(args) + "\r\n$8\r\nBITFIELD\r\n$12\r\nf:bits:{f:0}\r\n";
  for (const ItemHash& h : f.hashes) {
    layout::classic_probes(h, f.params.partition_bits, f.params.hashes, [&](std::uint64_t bit) {
      const std::string offset = std::to_string(bit);
      expected += "$3\r\nSET\r\n$2\r\nu1\r\n$" + std::to_string(offset.size()) + "\r\n" + offset +
                  "\r\n$1\r\n1\r\n";
    });
  }
  expected += "*2\r\n$6\r\nSTRLEN\r\n$12\r\nf:bits:{f:0}\r\n";
  EXPECT_EQ(out.text(), expected);
}

TEST(PartitionOps, TestAndSetAnswersFromTheOldBits) {
  const Fixture f;
  const auto commands = stock_partition_commands(f.params);
  const std::uint32_t k = f.params.hashes;
  std::vector<int> bits(2 * k, 1);
  bits[k] = 0;  // item b had one clear bit: new
  const std::string sealed = integer(static_cast<long long>(f.key.sealed_length));
  const ParsedReplies replies(sealed + f.old_bits(bits) + sealed);
  std::uint8_t newly[2] = {9, 9};
  commands->decode_test_and_set(replies.all(), f.key, f.unit(), newly);
  EXPECT_EQ(newly[0], 0);
  EXPECT_EQ(newly[1], 1);
}

// The partition vanished between the checks: the command read zeros (and recreated the key
// without its seal). Every bit looks clear, so both items look new; the second length refuses.
TEST(PartitionOps, APartitionLostBetweenTheChecksIsRefused) {
  const Fixture f;
  const auto commands = stock_partition_commands(f.params);
  const std::uint32_t k = f.params.hashes;
  const std::string sealed = integer(static_cast<long long>(f.key.sealed_length));
  const std::string recreated = integer(static_cast<long long>(f.key.sealed_length - 1));
  std::uint8_t flags[2] = {};
  for (const std::string& before : {sealed, integer(0)}) {
    const ParsedReplies replies(before + f.old_bits(std::vector<int>(2 * k, 0)) + recreated);
    try {
      commands->decode_test_and_set(replies.all(), f.key, f.unit(), flags);
      FAIL() << "a lost partition gave answers";
    } catch (const ReplyProblem& problem) {
      EXPECT_TRUE(problem.lost());
      EXPECT_NE(std::string(problem.what()).find("f:bits:{f:0}"), std::string::npos);
    }
    const ParsedReplies lookup(before + f.old_bits(std::vector<int>(2 * k, 0)) + integer(0));
    EXPECT_THROW(commands->decode_lookup(lookup.all(), f.key, f.unit(), flags), ReplyProblem);
  }
}

TEST(PartitionOps, BlockedLookupsReadOneBlockPerItem) {
  Fixture f;
  f.params = size_filter(1000, 0.01, Layout::blocked);
  f.key.sealed_length = f.params.partition_bytes() + 1;
  const auto commands = stock_partition_commands(f.params);
  CommandBuffer out;
  EXPECT_EQ(commands->encode_lookup(out, f.key, f.unit()), 4u);  // STRLEN, 2 GETRANGE, STRLEN
  // Item a's block with every bit set, b's empty.
  const std::string sealed = integer(static_cast<long long>(f.key.sealed_length));
  const std::string full = "$64\r\n" + std::string(64, '\xff') + "\r\n";
  const std::string empty = "$64\r\n" + std::string(64, '\0') + "\r\n";
  const ParsedReplies replies(sealed + full + empty + sealed);
  std::uint8_t present[2] = {9, 9};
  commands->decode_lookup(replies.all(), f.key, f.unit(), present);
  EXPECT_EQ(present[0], 1);
  EXPECT_EQ(present[1], 0);
  // A short block (the key shorter than the filter says) is a lost partition too.
  const ParsedReplies shorter(sealed + "$0\r\n\r\n" + empty + sealed);
  EXPECT_THROW(commands->decode_lookup(shorter.all(), f.key, f.unit(), present), ReplyProblem);
}

TEST(PartitionOps, ErrorRepliesAreProblemsButNotLosses) {
  const Fixture f;
  const auto commands = stock_partition_commands(f.params);
  const std::string sealed = integer(static_cast<long long>(f.key.sealed_length));
  const ParsedReplies replies(sealed + "-OOM command not allowed\r\n" + sealed);
  std::uint8_t newly[2] = {};
  try {
    commands->decode_test_and_set(replies.all(), f.key, f.unit(), newly);
    FAIL() << "no error";
  } catch (const ReplyProblem& problem) {
    EXPECT_FALSE(problem.lost());
    EXPECT_EQ(std::string(problem.what()), "OOM command not allowed");
  }
}

TEST(PartitionOps, ADeltaStartsAtTheSealedLengthAndMergesOnlyWhole) {
  const Fixture f;
  CommandBuffer out;
  EXPECT_EQ(encode_delta_start(out, f.key, "t", std::chrono::milliseconds(600000)), 3u);
  const std::string last = std::to_string(f.key.sealed_length - 1);
  EXPECT_EQ(out.text(),
            "*2\r\n$6\r\nSTRLEN\r\n$12\r\nf:bits:{f:0}\r\n"
            "*4\r\n$8\r\nSETRANGE\r\n$1\r\nt\r\n$" +
                std::to_string(last.size()) + "\r\n" + last + "\r\n$1\r\n" + std::string(1, '\0') +
                "\r\n"
                "*3\r\n$7\r\nPEXPIRE\r\n$1\r\nt\r\n$6\r\n600000\r\n");
  // The merge script's refusals.
  const ParsedReplies delta_lost("-REDBLOOM delta 524288\r\n");
  try {
    decode_delta_merge(delta_lost.all(), f.key, "t");
    FAIL() << "a partial delta was accepted";
  } catch (const ReplyProblem& problem) {
    EXPECT_FALSE(problem.lost());
    EXPECT_NE(std::string(problem.what()).find("was lost part way"), std::string::npos);
  }
  const ParsedReplies partition_lost("-REDBLOOM partition 0\r\n");
  try {
    decode_delta_merge(partition_lost.all(), f.key, "t");
    FAIL() << "a lost partition was merged into";
  } catch (const ReplyProblem& problem) {
    EXPECT_TRUE(problem.lost());
  }
  const ParsedReplies merged(integer(1));
  EXPECT_NO_THROW(decode_delta_merge(merged.all(), f.key, "t"));
}

TEST(RedisFormat, KeysKeepEveryPartOfAPartitionInOneSlot) {
  EXPECT_EQ(partition_key("f", 3), "f:bits:{f:3}");
  EXPECT_EQ(partition_key("f", 3, 7), "f:bits:{f:3:7}");
  EXPECT_EQ(partition_key("f", 3, 0, "g12"), "f:g12:bits:{f:3}");
  EXPECT_EQ(temp_key("f", 3, 0, "g12").rfind("f:g12:tmp:{f:3}:", 0), 0u);
  EXPECT_EQ(exact_meta_key("f"), "f:exact");
  EXPECT_EQ(exact_bucket_key("f", 9), "f:exact:{f:x9}");
}

TEST(RedisFormat, MetadataRoundTripsAndBadFieldsAreNamed) {
  FilterMetadata m;
  m.params = size_filter(1e6, 0.01, Layout::blocked, 64 << 10);
  m.ready = true;
  m.created_unix_ns = 42;
  m.tag_salts.assign(m.params.partitions, 0);
  m.tag_salts[1] = 5;
  const FilterMetadata back = parse_filter_metadata(Fields(encode_filter_metadata(m), "key 'f'"));
  EXPECT_EQ(back.params, m.params);
  EXPECT_EQ(back.tag_salts, m.tag_salts);
  EXPECT_TRUE(back.ready);
  auto fields = encode_filter_metadata(m);
  for (auto& [field, value] : fields) {
    if (field == "hashes") value = "seven";
  }
  try {
    (void)parse_filter_metadata(Fields(fields, "key 'f'"));
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "key 'f': metadata field 'hashes' is not a number: 'seven'");
  }
  // A creation in progress: only what drop needs.
  FilterMetadata claim = m;
  claim.claimed_unix_ns = 7;
  const FilterMetadata creating =
      parse_filter_metadata(Fields(filter_claim_fields(claim), "key 'f'"));
  EXPECT_FALSE(creating.ready);
  EXPECT_EQ(creating.params.partitions, m.params.partitions);
  EXPECT_EQ(creating.params.partition_bits, m.params.partition_bits);
  EXPECT_EQ(creating.claimed_unix_ns, 7u);
  // Another object's hash, or a newer version, is refused by name.
  EXPECT_THROW((void)parse_exact_metadata(Fields(encode_filter_metadata(m), "key 'f'")),
               FormatError);
  fields = encode_filter_metadata(m);
  for (auto& [field, value] : fields) {
    if (field == "version") value = "3";
  }
  try {
    (void)parse_filter_metadata(Fields(fields, "key 'f'"));
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("version 3 is unknown"), std::string::npos) << e.what();
  }
}

// --- redbloom's module (module/partition_commands.cpp) --------------------------------------

std::string bulk(std::string_view text) {
  return "$" + std::to_string(text.size()) + "\r\n" + std::string(text) + "\r\n";
}

TEST(PartitionOps, ModuleCommandsSendTheItemsPackedInOneCommand) {
  const Fixture f;
  const auto commands = module_partition_commands(f.params);
  for (const bool lookup : {false, true}) {
    CommandBuffer out;
    const std::size_t sent = lookup ? commands->encode_lookup(out, f.key, f.unit())
                                    : commands->encode_test_and_set(out, f.key, f.unit());
    EXPECT_EQ(sent, 1u);
    // NAME key sealed-length layout hashes partition-bits partitions index packed-items
    const std::string packed{"\x01\0\0\0a\x01\0\0\0b", 10};
    const std::string expected = "*9\r\n" + bulk(lookup ? "RB.PARTEXISTS" : "RB.PARTADD") +
                                 bulk("f:bits:{f:0}") + bulk(std::to_string(f.key.sealed_length)) +
                                 bulk("classic") + bulk(std::to_string(f.params.hashes)) +
                                 bulk(std::to_string(f.params.partition_bits)) + bulk("1") +
                                 bulk("0") + bulk(packed);
    EXPECT_EQ(out.text(), expected);
    EXPECT_EQ(commands->operation(lookup), lookup ? "RB.PARTEXISTS" : "RB.PARTADD");
  }
}

// From module version 5: the items' hashes, 16 bytes each (low then high half, little-endian),
// the ones the client routed them by.
TEST(PartitionOps, ModuleCommandsCanSendTheHashesInstead) {
  const Fixture f;
  const auto commands = module_partition_commands(f.params, /*hashed=*/true);
  for (const bool lookup : {false, true}) {
    CommandBuffer out;
    const std::size_t sent = lookup ? commands->encode_lookup(out, f.key, f.unit())
                                    : commands->encode_test_and_set(out, f.key, f.unit());
    EXPECT_EQ(sent, 1u);
    std::string hashes;
    for (const ItemHash& h : {f.hashes[0], f.hashes[1]}) {
      for (const std::uint64_t half : {h.lo, h.hi}) {
        for (int i = 0; i < 8; ++i) hashes += static_cast<char>(half >> (8 * i));
      }
    }
    ASSERT_EQ(hashes.size(), 32u);
    const std::string expected = "*9\r\n" + bulk(lookup ? "RB.PARTEXISTSH" : "RB.PARTADDH") +
                                 bulk("f:bits:{f:0}") + bulk(std::to_string(f.key.sealed_length)) +
                                 bulk("classic") + bulk(std::to_string(f.params.hashes)) +
                                 bulk(std::to_string(f.params.partition_bits)) + bulk("1") +
                                 bulk("0") + bulk(hashes);
    EXPECT_EQ(out.text(), expected);
    EXPECT_EQ(commands->operation(lookup), lookup ? "RB.PARTEXISTSH" : "RB.PARTADDH");
    EXPECT_EQ(packed::read_hash(hashes.data() + 16), f.hashes[1]);
  }
}

// The Redis Streams stage's script takes each item as the encoders send it: the same bit
// offsets as BITFIELD's, or the same packed item as RB.PARTADD's.
TEST(PartitionOps, ScriptItemsAreWhatTheCommandsSend) {
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    Fixture f;
    f.params = size_filter(1000, 0.01, layout);
    std::vector<std::string> stock;
    stock_partition_commands(f.params)->append_script_item(stock, f.hashes[0], "a");
    std::vector<std::string> probes;
    if (layout == Layout::blocked) {
      // The item's line (its first and last byte offsets), then each byte of it holding its
      // bits, once, with the mask of those bits (BITFIELD's order: bit 0 is a byte's highest).
      std::map<std::uint64_t, std::uint8_t> masks;
      layout::blocked_probes(f.hashes[0], f.params.partition_bits, f.params.hashes,
                             [&](std::uint64_t bit) {
                               masks[bit / 8] |= static_cast<std::uint8_t>(0x80u >> (bit % 8));
                             });
      const std::uint64_t line = masks.begin()->first / 64 * 64;
      std::string pairs;
      for (const auto& [byte, mask] : masks) {
        ASSERT_EQ(byte / 64 * 64, line);  // one line
        pairs.push_back(static_cast<char>(byte - line));
        pairs.push_back(static_cast<char>(mask));
      }
      probes = {std::to_string(line), std::to_string(line + 63), pairs};
    } else {
      layout::classic_probes(f.hashes[0], f.params.partition_bits, f.params.hashes,
                             [&](std::uint64_t bit) { probes.push_back(std::to_string(bit)); });
    }
    EXPECT_EQ(stock, probes);
    std::vector<std::string> module;
    module_partition_commands(f.params)->append_script_item(module, f.hashes[0], "a");
    EXPECT_EQ(module, std::vector<std::string>{std::string("\x01\0\0\0a", 5)});
  }
}

TEST(PartitionOps, ModuleRepliesAreAByteAnItemOrALostPartition) {
  const Fixture f;
  const auto commands = module_partition_commands(f.params);
  std::uint8_t answers[2] = {9, 9};
  commands->decode_test_and_set(ParsedReplies(bulk(std::string("\x01\x00", 2))).all(), f.key,
                                f.unit(), answers);
  EXPECT_EQ(answers[0], 1);
  EXPECT_EQ(answers[1], 0);
  commands->decode_lookup(ParsedReplies(bulk(std::string("\x00\x01", 2))).all(), f.key, f.unit(),
                          answers);
  EXPECT_EQ(answers[0], 0);
  EXPECT_EQ(answers[1], 1);
  // A lost partition is a ReplyProblem that says so (the store makes it a FormatError).
  try {
    commands->decode_test_and_set(ParsedReplies("-REDBLOOMLOST partition key is missing\r\n").all(),
                                  f.key, f.unit(), answers);
    FAIL() << "a lost partition was answered";
  } catch (const ReplyProblem& problem) {
    EXPECT_TRUE(problem.lost());
    EXPECT_NE(std::string(problem.what()).find("f:bits:{f:0}"), std::string::npos);
  }
  // Another error, or a reply of the wrong length, is refused and not lost.
  for (const std::string& reply : {std::string("-ERR item 0 belongs to another partition\r\n"),
                                   bulk(std::string("\x01", 1))}) {
    try {
      commands->decode_lookup(ParsedReplies(reply).all(), f.key, f.unit(), answers);
      FAIL() << "refused reply was answered: " << reply;
    } catch (const ReplyProblem& problem) {
      EXPECT_FALSE(problem.lost());
    }
  }
}

}  // namespace
}  // namespace redbloom::redis
