// RecordKeyExtractor: the key of a delimited, CSV or JSON Lines record, and the records that
// have none.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/record_key.hpp"

namespace redbloom {
namespace {

using Status = RecordKeyStatus;
using namespace std::string_literals;

struct Got {
  Status status;
  std::string key;
};

Got key_of(RecordKeyExtractor& extractor, std::string_view record) {
  std::string_view key;
  const Status status = extractor.extract(record, key);
  return {status, std::string(key)};
}

Got key_of(const RecordKeySpec& spec, std::string_view record) {
  RecordKeyExtractor extractor(spec);
  return key_of(extractor, record);
}

void expect_key(const RecordKeySpec& spec, std::string_view record, const std::string& key) {
  const Got got = key_of(spec, record);
  EXPECT_EQ(got.status, Status::ok) << record;
  EXPECT_EQ(got.key, key) << record;
}

void expect_no_key(const RecordKeySpec& spec, std::string_view record, Status status) {
  RecordKeyExtractor extractor(spec);
  const Got got = key_of(extractor, record);
  EXPECT_EQ(got.status, status) << record;
  EXPECT_FALSE(extractor.problem().empty()) << record;
}

TEST(RecordKeyField, CountsFromOneAsCut) {
  expect_key(RecordKeySpec::field_of(1), "a\tb\tc", "a");
  expect_key(RecordKeySpec::field_of(2), "a\tb\tc", "b");
  expect_key(RecordKeySpec::field_of(3), "a\tb\tc", "c");
  expect_key(RecordKeySpec::field_of(2, ','), "a,,c", "");
  expect_key(RecordKeySpec::field_of(1), "", "");
  // A line without the delimiter is one field, as cut prints it for -f1.
  expect_key(RecordKeySpec::field_of(1, ','), "whole line", "whole line");
}

TEST(RecordKeyField, MissingFieldIsNoKey) {
  expect_no_key(RecordKeySpec::field_of(4), "a\tb\tc", Status::missing);
  expect_no_key(RecordKeySpec::field_of(2), "", Status::missing);
}

TEST(RecordKeyField, TrailingCarriageReturnIsNotPartOfTheKey) {
  expect_key(RecordKeySpec::field_of(2), "a\tb\r", "b");
  expect_key(RecordKeySpec::field_of(1), "a\r", "a");
}

TEST(RecordKeyField, NulBytesAreKeyBytes) {
  const std::string record = "x\0y\tk\0ey\tz"s;
  expect_key(RecordKeySpec::field_of(2), record, "k\0ey"s);
  expect_key(RecordKeySpec::field_of(1, '\0'), record, "x");
}

TEST(RecordKeyField, KeyIsAViewOfTheRecord) {
  RecordKeyExtractor extractor(RecordKeySpec::field_of(2));
  const std::string record = "a\tbb\tc";
  std::string_view key;
  ASSERT_EQ(extractor.extract(record, key), Status::ok);
  EXPECT_EQ(key.data(), record.data() + 2);
}

TEST(RecordKeyCsv, QuotedFieldsHoldDelimitersAndDoubledQuotes) {
  const auto second = RecordKeySpec::csv_field(2);
  expect_key(second, R"(1,"a,b",3)", "a,b");
  expect_key(second, R"(1,"say ""hi""",3)", R"(say "hi")");
  expect_key(second, R"(1,"""",3)", R"(")");
  expect_key(second, R"(1,"",3)", "");
  expect_key(second, R"("x,y",z)", "z");
  expect_key(second, R"("a""b,c",key)", "key");
  expect_key(RecordKeySpec::csv_field(3), R"(1,"a,b","last")", "last");
  expect_key(RecordKeySpec::csv_field(1), R"("only")", "only");
  // A quote inside an unquoted field is a character of it.
  expect_key(second, R"(1,ab"c,3)", R"(ab"c)");
  expect_key(RecordKeySpec::csv_field(2, ';'), R"(1;"a;b";3)", "a;b");
  expect_key(RecordKeySpec::csv_field(2, '\t'), "1\t\"a\tb\"\t3", "a\tb");
}

TEST(RecordKeyCsv, CrlfLineEnds) {
  expect_key(RecordKeySpec::csv_field(2), "1,\"a\"\r", "a");
  expect_key(RecordKeySpec::csv_field(2), "1,b\r", "b");
}

TEST(RecordKeyCsv, BadQuotingIsInvalid) {
  const auto second = RecordKeySpec::csv_field(2);
  expect_no_key(second, R"(1,"open,3)", Status::invalid);
  expect_no_key(second, R"(1,"a"b,3)", Status::invalid);
  // A quote opened before the key field hides the rest of the line.
  expect_no_key(second, R"("open,key)", Status::invalid);
  expect_no_key(RecordKeySpec::csv_field(4), R"(1,"a,b",3)", Status::missing);
}

TEST(RecordKeyCsv, KeysOfABatchStayValidTogether) {
  RecordKeyExtractor extractor(RecordKeySpec::csv_field(1));
  std::vector<std::string> lines;
  for (int i = 0; i < 2000; ++i) {
    lines.push_back("\"k\"\"" + std::to_string(i) + std::string(50, 'x') + "\",v");
  }
  lines.push_back("\"open");
  lines.push_back("plain,v");
  const std::vector<std::string_view> records(lines.begin(), lines.end());
  std::vector<std::string_view> keys;
  std::vector<Status> statuses;
  EXPECT_EQ(extractor.extract_all(records, keys, statuses), 2001u);
  ASSERT_EQ(keys.size(), records.size());
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(keys[i], "k\"" + std::to_string(i) + std::string(50, 'x'));
  }
  EXPECT_EQ(statuses[2000], Status::invalid);
  EXPECT_EQ(keys[2001], "plain");
}

TEST(RecordKeyJson, EscapesDecodeToOneKey) {
  const auto id = RecordKeySpec::json("id");
  const Got escaped = key_of(id, R"({"id":"caf\u00e9"})");
  const Got plain = key_of(id, "{\"id\":\"caf\xc3\xa9\"}");
  EXPECT_EQ(escaped.status, Status::ok);
  EXPECT_EQ(escaped.key, plain.key);
  EXPECT_EQ(escaped.key, "scaf\xc3\xa9");
  expect_key(id, R"({"id":"a\"b\\c\/d\n"})", "sa\"b\\c/d\n");
  // A surrogate pair is one code point (U+1F600).
  expect_key(id, R"({"id":"\ud83d\ude00"})", "s\xf0\x9f\x98\x80");
  // An escaped NUL is a key byte.
  expect_key(id, R"({"id":"a\u0000b"})", "sa\0b"s);
}

TEST(RecordKeyJson, TypesAreNeverTheSameKey) {
  const auto id = RecordKeySpec::json("id");
  expect_key(id, R"({"id":"7"})", "s7");
  expect_key(id, R"({"id":7})", "n7");
  expect_key(id, R"({"id":true})", "btrue");
  expect_key(id, R"({"id":"true"})", "strue");
  expect_key(id, R"({"id":-12})", "n-12");
  expect_key(id, R"({"id":18446744073709551615})", "n18446744073709551615");
  expect_key(id, R"({"id":2.5})", "n2.5");
}

TEST(RecordKeyJson, NumbersAreKeyedByValue) {
  const auto id = RecordKeySpec::json("id");
  expect_key(id, R"({"id":1.0})", "n1");
  expect_key(id, R"({"id":1e3})", "n1000");
  expect_key(id, R"({"id":0.1})", "n0.1");
  EXPECT_EQ(key_of(id, R"({"id":1.50})").key, key_of(id, R"({"id":15e-1})").key);
}

TEST(RecordKeyJson, NestedPaths) {
  const auto path = RecordKeySpec::json("event.id");
  expect_key(path, R"({"event":{"id":"e1","x":[1,2]},"id":"top"})", "se1");
  expect_key(path, R"({"a":1,"event":{"meta":{},"id":42}})", "n42");
  expect_key(RecordKeySpec::json("a.b.c"), R"({"a":{"b":{"c":"deep"}}})", "sdeep");
  expect_no_key(path, R"({"event":{"other":1}})", Status::missing);
  expect_no_key(path, R"({"event":"flat"})", Status::missing);
  expect_no_key(path, R"({"id":"e1"})", Status::missing);
}

TEST(RecordKeyJson, NullObjectsAndArraysAreNotKeys) {
  const auto id = RecordKeySpec::json("id");
  expect_no_key(id, R"({"id":null})", Status::missing);
  expect_no_key(id, R"({"id":{"a":1}})", Status::invalid);
  expect_no_key(id, R"({"id":[1]})", Status::invalid);
}

TEST(RecordKeyJson, InvalidLinesAreInvalid) {
  const auto id = RecordKeySpec::json("id");
  expect_no_key(id, "", Status::invalid);
  expect_no_key(id, R"({"id":"a")", Status::invalid);
  expect_no_key(id, R"({"id":"a"} trailing)", Status::invalid);
  expect_no_key(id, R"({"id":"a",})", Status::invalid);
  expect_no_key(id, R"(["id"])", Status::invalid);
  expect_no_key(id, R"("id")", Status::invalid);
  expect_no_key(id, "{\"id\":\"bad \xff utf-8\"}", Status::invalid);
  // A raw NUL byte is not JSON, inside a string or out of it.
  expect_no_key(id, "{\"id\":\"a\0b\"}"s, Status::invalid);
  expect_no_key(id, "{\"id\":\"ab\"}\0"s, Status::invalid);
  // Even after the key: the whole line must parse.
  expect_no_key(id, R"({"id":"a","x":tru})", Status::invalid);
}

TEST(RecordKeyJson, CrlfAndSpaces) {
  const auto id = RecordKeySpec::json("id");
  expect_key(id, " { \"id\" : \"a\" } \r", "sa");
}

TEST(RecordKeyJson, VeryLongLines) {
  const auto id = RecordKeySpec::json("id");
  const std::string big(3 << 20, 'z');
  expect_key(id, R"({"pad":")" + big + R"(","id":"k"})", "sk");
  expect_key(id, R"({"id":")" + big + R"("})", "s" + big);
  expect_key(RecordKeySpec::field_of(2), big + "\tkey\t" + big, "key");
  expect_key(RecordKeySpec::csv_field(2), big + ",\"k,\"\"" + big + "\"", "k,\"" + big);
}

TEST(RecordKeyJson, ParserIsReusedAcrossRecordsOfAnySize) {
  RecordKeyExtractor extractor(RecordKeySpec::json("id"));
  for (int i = 0; i < 100; ++i) {
    const std::string pad(static_cast<std::size_t>((i * 7919) % 5000), 'p');
    const std::string record = R"({"p":")" + pad + R"(","id":)" + std::to_string(i) + "}";
    const Got got = key_of(extractor, record);
    EXPECT_EQ(got.status, Status::ok);
    // Appended, not "n" + std::to_string(i): GCC 12 at -O3 warns falsely (-Wrestrict) on that.
    std::string expected = "n";
    expected += std::to_string(i);
    EXPECT_EQ(got.key, expected);
  }
}

TEST(RecordKeyJson, BatchKeysPointIntoOneArena) {
  RecordKeyExtractor extractor(RecordKeySpec::json("id"));
  std::vector<std::string> lines;
  for (int i = 0; i < 3000; ++i) lines.push_back(R"({"id":"key-)" + std::to_string(i) + R"("})");
  lines.insert(lines.begin() + 5, "not json");
  lines.insert(lines.begin() + 9, R"({"other":1})");
  const std::vector<std::string_view> records(lines.begin(), lines.end());
  std::vector<std::string_view> keys;
  std::vector<Status> statuses;
  EXPECT_EQ(extractor.extract_all(records, keys, statuses), 3000u);
  EXPECT_EQ(statuses[5], Status::invalid);
  EXPECT_EQ(statuses[9], Status::missing);
  EXPECT_EQ(keys[0], "skey-0");
  EXPECT_EQ(keys[6], "skey-5");
  EXPECT_EQ(keys[10], "skey-8");
  EXPECT_EQ(keys.back(), "skey-2999");
}

// The batch path (records parsed as one stream) must give what the records give one by one.
void expect_records_as_one_by_one(const std::vector<std::string_view>& records) {
  RecordKeyExtractor batch_extractor(RecordKeySpec::json("a.id"));
  RecordKeyExtractor single(RecordKeySpec::json("a.id"));
  std::vector<std::string_view> keys;
  std::vector<Status> statuses;
  const std::size_t found = batch_extractor.extract_all(records, keys, statuses);
  std::size_t expected_found = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Got got = key_of(single, records[i]);
    EXPECT_EQ(statuses[i], got.status) << i << ": " << records[i];
    EXPECT_EQ(std::string(keys[i]), got.status == Status::ok ? got.key : "") << records[i];
    expected_found += got.status == Status::ok ? 1 : 0;
  }
  EXPECT_EQ(found, expected_found);
}

// Whatever the mix: good batches, and batches where the stream does not apply.
// `lines` with `records` in place of its lines from `where` on.
std::vector<std::string> replaced(std::vector<std::string> lines, std::size_t where,
                                  std::initializer_list<std::string_view> records) {
  for (const std::string_view record : records) lines.at(where++) = std::string(record);
  return lines;
}

// A record that is not valid JSON alone, whose document runs on into the next line, where a
// second document follows.
constexpr std::string_view kRunsOn = R"({"a":{"id":1},)";
constexpr std::string_view kRunOn = R"("x":2}{"a":{"id":3}})";

void expect_batch_as_one_by_one(const std::vector<std::string>& lines) {
  expect_records_as_one_by_one({lines.begin(), lines.end()});
}

TEST(RecordKeyJson, BatchGivesWhatRecordsGiveOneByOne) {
  std::vector<std::string> good;
  for (int i = 0; i < 500; ++i) {
    good.push_back(R"({"a":{"id":)" +
                   (i % 2 ? std::to_string(i) : "\"k" + std::to_string(i) + "\"") +
                   R"(},"x":"caf\u00e9"})" + (i % 3 ? "" : "\r"));
  }
  expect_batch_as_one_by_one(good);
  // Records the stream parses but that have no key: null, missing, scalars, arrays.
  auto mixed = good;
  mixed[3] = R"({"a":{"id":null}})";
  mixed[7] = R"({"a":{}})";
  mixed[11] = "5";
  mixed[12] = R"([{"a":{"id":1}}])";
  mixed[13] = R"({"a":{"id":{"deep":1}}})";
  expect_batch_as_one_by_one(mixed);
  // Records the stream cannot take as they are: two documents on one line, one across two
  // lines, an empty line, a NUL byte, bad UTF-8, a truncated last record.
  for (const std::string& odd :
       {R"({"a":{"id":1}} {"a":{"id":2}})"s, R"({"a":{"id":)"s, ""s, "   "s,
        "{\"a\":{\"id\":\"n\0\"}}"s, "{\"a\":{\"id\":\"\xff\"}}"s, "}"s}) {
    for (const std::size_t where : {std::size_t{0}, std::size_t{250}, good.size() - 1}) {
      expect_batch_as_one_by_one(replaced(good, where, {odd}));
    }
  }
  // A record that is not valid JSON alone, whose document runs on into the next line, where a
  // second document follows: each line must still be judged alone.
  for (const std::size_t where : {std::size_t{0}, std::size_t{250}, good.size() - 2}) {
    expect_batch_as_one_by_one(replaced(good, where, {kRunsOn, kRunOn}));
  }
  // A record holding a line end (NUL-delimited input) is still one record.
  auto with_lf = good;
  with_lf[5] = "{\"a\":\n{\"id\":\"lf\"}}";
  expect_batch_as_one_by_one(with_lf);
  // More than one run of the stream (runs are a few MiB).
  std::vector<std::string> large;
  for (int i = 0; i < 3000; ++i) {
    large.push_back(R"({"pad":")" + std::string(4000, 'p') + R"(","a":{"id":)" +
                    std::to_string(i % 1000) + "}}");
  }
  large[2100] = "broken";
  expect_batch_as_one_by_one(large);
}

// A batch checks every value of a record, not only the key's: a bad value after the key still
// makes the record invalid, as it does alone.
TEST(RecordKeyJson, BatchRefusesBadValuesAfterTheKey) {
  std::vector<std::string> good;
  for (int i = 0; i < 500; ++i) good.push_back(R"({"a":{"id":)" + std::to_string(i) + "}}");
  for (const std::string& bad :
       {R"({"a":{"id":1},"x":tru})"s, R"({"a":{"id":1},"x":"\q"})"s, R"({"a":{"id":1},"x":01})"s,
        R"({"a":{"id":1},"x":1.})"s, R"({"a":{"id":1},"x":[1,]})"s,
        R"({"a":{"id":1},"x":"\ud800"})"s, R"({"a":{"id":1}}{"a":{"id":2}})"s}) {
    auto lines = good;
    lines[250] = bad;
    RecordKeyExtractor extractor(RecordKeySpec::json("a.id"));
    const std::vector<std::string_view> records(lines.begin(), lines.end());
    std::vector<std::string_view> keys;
    std::vector<Status> statuses;
    EXPECT_EQ(extractor.extract_all(records, keys, statuses), 499u) << bad;
    EXPECT_EQ(statuses[250], Status::invalid) << bad;
    EXPECT_EQ(statuses[249], Status::ok) << bad;
    expect_batch_as_one_by_one(lines);
  }
}

// Records as the reader hands them over: views into one buffer, each followed by its newline,
// so that the runs are parsed where they lie and only the last records (the parser's padding)
// alone. Every record gives what it gives alone, wherever a bad one falls: in the last records,
// just before them, at the end of a run, or as the key after a large nested object.
std::vector<std::string_view> views_in_one_buffer(const std::vector<std::string>& lines,
                                                  std::string& buffer) {
  buffer.clear();
  for (const std::string& line : lines) buffer += line + "\n";
  std::vector<std::string_view> records;
  std::size_t at = 0;
  for (const std::string& line : lines) {
    records.emplace_back(buffer.data() + at, line.size());
    at += line.size() + 1;
  }
  return records;
}

void expect_buffer_batch_as_one_by_one(const std::vector<std::string>& lines) {
  std::string buffer;
  expect_records_as_one_by_one(views_in_one_buffer(lines, buffer));
}

TEST(RecordKeyJson, BatchInOneBufferGivesWhatRecordsGiveOneByOne) {
  std::vector<std::string> good;
  for (int i = 0; i < 4096; ++i) {
    good.push_back(R"({"ts":"2026-11-26T08:00:00Z","a":{"kind":"GET","id":"user-)" +
                   std::to_string(i) + R"(","path":"/items/)" + std::to_string(i) +
                   R"("},"status":200})");
  }
  expect_buffer_batch_as_one_by_one(good);
  // The key after a large nested object, and bad values after the key, anywhere in the batch.
  std::string nested = R"({"n":)";
  for (int depth = 0; depth < 200; ++depth) nested += R"({"x":[1,2.5,"s",true,null],"y":)";
  nested += "0";
  for (int depth = 0; depth < 200; ++depth) nested += "}";
  nested += R"(,"a":{"id":"after-nested"}})";
  expect_key(RecordKeySpec::json("a.id"), nested, "safter-nested");
  const std::vector<std::string> odd = {nested,
                                        R"({"a":{"id":"k"},"x":tru})",
                                        R"({"a":{"id":"k"},"x":"\q"})",
                                        R"({"a":{"id":"k"},"x":[1,]})",
                                        R"({"a":{"id":"k"},"x":"\ud800"})",
                                        R"({"a":{"id":"k"}}{"a":{"id":"k2"}})",
                                        R"({"a":{"id":"k"},)",
                                        "{\"a\":{\"id\":\"\xff\"}}",
                                        "",
                                        R"({"a":{"id":null}})"};
  for (const std::string& record : odd) {
    // The last record, one inside the last 64 bytes, the one before them, mid-batch, and at
    // the end of the first run (runs are 256 KiB: about 2,300 of these records).
    for (const std::size_t where : {good.size() - 1, good.size() - 2, good.size() - 3,
                                    std::size_t{0}, std::size_t{1500}, std::size_t{2300}}) {
      expect_buffer_batch_as_one_by_one(replaced(good, where, {record}));
    }
  }
  // The bad value after a key counts as a bad record, not as a key.
  auto lines = good;
  lines.back() = R"({"a":{"id":"last"},"x":tru})";
  std::string buffer;
  const std::vector<std::string_view> records = views_in_one_buffer(lines, buffer);
  RecordKeyExtractor extractor(RecordKeySpec::json("a.id"));
  std::vector<std::string_view> keys;
  std::vector<Status> statuses;
  EXPECT_EQ(extractor.extract_all(records, keys, statuses), lines.size() - 1);
  EXPECT_EQ(statuses.back(), Status::invalid);
  EXPECT_EQ(keys[lines.size() - 2], "suser-4094");
  // Short records, all of them within the parser's padding of the batch's end.
  expect_buffer_batch_as_one_by_one({R"({"a":{"id":1}})", R"({"a":{"id":2}})", "x"});
  expect_buffer_batch_as_one_by_one({R"({"a":{"id":1}})"});
}

// Records as everyday logs write them (no escapes, integers), which the batch reads from the
// parser's first stage alone, give what the document parser gives them one by one: keys of
// every type, paths that are not there, and records that break the grammar anywhere, before or
// after the key, each in a batch of good records in one buffer.
TEST(RecordKeyJson, BatchScanGivesWhatTheParserGives) {
  std::vector<std::string> good;
  for (int i = 0; i < 64; ++i) {
    good.push_back(R"({"ts":"t)" + std::to_string(i) + R"(","a":{"k":[1,{"x":null}],"id":)" +
                   std::to_string(i * 7919) + R"(,"p":"/i?q=)" + std::to_string(i) +
                   R"("},"s":true})");
  }
  std::string deep = R"({"d":)";
  for (int depth = 0; depth < 40; ++depth) deep += R"({"x":[1,-2,"s",true,false,null,{}],"y":)";
  deep += "[]";
  for (int depth = 0; depth < 40; ++depth) deep += "}";
  const std::vector<std::string> odd = {
      deep + R"(,"a":{"id":"after-deep"}})",
      R"({"a":{"id":"k"},"b":)" + deep.substr(5) + "}",
      R"({"a":{"id":"s"}})",
      R"({"a":{"id":-0}})",
      R"({"a":{"id":0}})",
      R"({"a":{"id":-17}})",
      R"({"a":{"id":123456789012345678}})",
      R"({"a":{"id":-123456789012345678}})",
      R"({"a":{"id":1234567890123456789}})",
      R"({"a":{"id":18446744073709551615}})",
      R"({"a":{"id":18446744073709551616}})",
      R"({"a":{"id":1.0}})",
      R"({"a":{"id":1e2}})",
      R"({"a":{"id":true}})",
      R"({"a":{"id":false}})",
      R"({"a":{"id":null}})",
      R"({"a":{"id":{}}})",
      R"({"a":{"id":[]}})",
      R"({"a":{"id":[1]}})",
      R"({"a":{}})",
      R"({})",
      R"({"a":[{"id":1}]})",
      R"({"a":"id"})",
      R"({"a":null})",
      R"({"a":7})",
      R"({"a":{"id":1,"id":2}})",
      R"({"a":{"x":1},"a":{"id":2}})",
      R"({"a":{"id":1},"a":{"id":2}})",
      R"({"a":{"idx":1,"i":2,"id":3}})",
      R"({"aa":{"id":1},"a":{"id":4}})",
      R"({"x":{"a":{"id":5}},"a":{"y":{"id":6},"id":7}})",
      R"({"a":{"b":{"id":8}}})",
      " {\t\"a\" :\r{ \"id\"\t: \"spaced\" } } \r",
      "{\"a\":{\"id\":\"caf\xc3\xa9\"}}",
      R"(["a"])",
      R"("a")",
      "5",
      "null",
      R"({"a":{"id":1}} )",
      R"({"a":{"id":1}}})",
      R"({"a":{"id":1}},)",
      R"({"a":{"id":1}} x)",
      R"({"a":{"id":1}}{})",
      R"({"a":{"id":1})",
      R"({"a":{"id":1},"x":tru})",
      R"({"a":{"id":1},"x":truex})",
      R"({"a":{"id":1},"x":nul})",
      R"({"a":{"id":1},"x":01})",
      R"({"a":{"id":1},"x":-})",
      R"({"a":{"id":1},"x":--1})",
      R"({"a":{"id":1},"x":1.})",
      R"({"a":{"id":1},"x":1.5e3})",
      R"({"a":{"id":1},"x":+1})",
      R"({"a":{"id":1},"x":[1,]})",
      R"({"a":{"id":1},"x":[,1]})",
      R"({"a":{"id":1},"x":[1 2]})",
      R"({"a":{"id":1},"x":{"y"}})",
      R"({"a":{"id":1},"x":{"y":}})",
      R"({"a":{"id":1},"x"})",
      R"({"a":{"id":1},})",
      R"({"a":{"id":1}:1})",
      R"({"a":{"id":1},"x":[}})",
      R"({"a":{"id" 1}})",
      R"({"a":{"id":1},"x":"y""z"})",
      R"({"a":{"id":1},"x":1"z"})",
      R"({"a":{"id":1},"x":{1:2}})",
      R"({"a":{"id":1},"x":"\u0041"})",
      R"({"a":{"id":"\u0041"}})",
      R"({"a":{"i\u0064":1}})",
      R"({"a":{"id":1},"x":"\q"})",
      R"({"a":{"id":1},"x":"\/i\u00e9\n\"q\\","y":["\t\b\f\r","\uABCD\uffff\u0000"]})",
      R"({"a":{"id":"k\u0041"}})",
      R"({"a":{"id":"k\n"}})",
      R"({"x\u00e9":1,"a":{"id":2}})",
      R"({"a":{"x\n":1,"id":2}})",
      R"({"a":{"id":3,"x\n":1}})",
      R"({"a":{"id":1},"x":"\ud83d\ude00"})",
      R"({"a":{"id":1},"x":"\udc00"})",
      R"({"a":{"id":1},"x":"\ud800x"})",
      R"({"a":{"id":1},"x":"\u12"})",
      R"({"a":{"id":1},"x":"\u12G4"})",
      R"({"a":{"id":1},"x":"\U0041"})",
      R"({"a":{"id":1},"x":"\x"})",
      R"({"a":{"id":1},"x":"a\nb\qc"})",
      R"({"a":{"id":1},"x":"\u0041\u12x4"})",
      R"({"a":{"id":1},"x":"\\"})",
      R"({"a":{"id":1},"x":"\\\""})",
      R"({"a":{"id":1},"x":"a\\"b"})",
      R"({"a":{"id":1},"x":"\"})",
      R"({"a":{"id":1},"x":"\\\"})",
      R"({"a":{"id":1},"x":tr\ue})",
      R"({"a":{"id":1},"x":1\2})",
      R"({"a":{"id":1},"x":\"s"})",
      "{\"a\":{\"id\":1},\"x\":\"t\tab\"}",
      "{\"a\":{\"id\":1},\"x\":\"\xff\"}",
      "{\"a\":{\"id\":1},\"x\":\x01}",
      R"({"a":{"id":"open})",
      R"({"a":{"id":1},"x":")",
      "",
      "  ",
      R"({"a":{"id":1})"
      "\n"
      R"(})"};
  // First, mid-run, and the last of the run before the batch's last record (parsed alone).
  for (const std::string& record : odd) {
    for (const std::size_t where : {std::size_t{0}, std::size_t{20}, good.size() - 2}) {
      const auto lines = replaced(good, where, {record});
      expect_buffer_batch_as_one_by_one(lines);
      expect_batch_as_one_by_one(lines);
    }
  }
  // A record whose object closes on the next line, where another object follows.
  for (const std::size_t where : {std::size_t{0}, std::size_t{20}, good.size() - 3}) {
    expect_buffer_batch_as_one_by_one(replaced(good, where, {kRunsOn, kRunOn}));
  }
  // Random edits of good records: a byte dropped, added or changed, anywhere.
  const std::string bytes = "{}[]:,\"\\ \ttfnrue0123456789-+.eEaidx\x01\xc3\xff";
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state](std::size_t below) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<std::size_t>(state % below);
  };
  std::vector<std::string> lines = good;
  lines.push_back(R"({"a":{"id":"k","z":[true,false,null,-3,{"w":[]}]},"b":[[],{}]})");
  lines.push_back(R"({"a":{"q":1},"a":{"id":2}, "b" : { "a" : { "id" : 3 } } })");
  lines.push_back(R"({"a":{"id":"k"},"p":"\/x\u00e9\n\"q\\","b":["\t",{"\u0041":"\u00e9"}]})");
  for (int edit = 0; edit < 3000; ++edit) {
    const std::size_t where = next(lines.size() - 4);
    std::string record = lines[next(lines.size())];
    const std::size_t at = next(record.size() + 1);
    switch (next(3)) {
      case 0:
        if (at < record.size()) record.erase(at, 1);
        break;
      case 1:
        record.insert(at, 1, bytes[next(bytes.size())]);
        break;
      default:
        if (at < record.size()) record[at] = bytes[next(bytes.size())];
        break;
    }
    auto batch = lines;
    batch[where] = record;
    expect_buffer_batch_as_one_by_one(batch);
  }
}

TEST(RecordKeySpec, RefusesWhatSelectsNothing) {
  EXPECT_THROW(RecordKeyExtractor(RecordKeySpec::field_of(0)), InvalidArgument);
  EXPECT_THROW(RecordKeyExtractor(RecordKeySpec::field_of(1, '\n')), InvalidArgument);
  EXPECT_THROW(RecordKeyExtractor(RecordKeySpec::csv_field(1, '"')), InvalidArgument);
  EXPECT_THROW(RecordKeyExtractor(RecordKeySpec::json("")), InvalidArgument);
  EXPECT_THROW(RecordKeyExtractor(RecordKeySpec::json("a..b")), InvalidArgument);
  EXPECT_THROW(RecordKeyExtractor(RecordKeySpec::json(".a")), InvalidArgument);
}

}  // namespace
}  // namespace redbloom
