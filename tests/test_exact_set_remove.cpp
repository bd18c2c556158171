// Removes from the exact companion (ExactSet::remove), in a file and on a private redis-server:
// a held item is removed once and a never-added one is not, other objects on the same set catch
// up, a removed item can be added again, the marker that starts a removal record is itself a
// fingerprint like any other, and damaged removal records are errors, never absences.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using redbloom::testing::make_items;
using redbloom::testing::TempDir;
using redbloom::testing::views_of;
using test::RedisServer;

// The slot that starts a removal record in the file format (exact_set_file.cpp).
constexpr std::uint64_t kMarker = 0x3156'4d52'5845'4252ull;
constexpr std::size_t kHeaderBytes = 56;

std::vector<std::uint8_t> flags_of(ExactSet& set, const std::vector<std::string>& items) {
  std::vector<std::uint8_t> present(items.size());
  set.contains(views_of(items), present);
  return present;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
std::uint64_t get64(const std::string& bytes, std::size_t at) {
  std::uint64_t value = 0;
  for (int b = 7; b >= 0; --b) value = (value << 8) | static_cast<std::uint8_t>(bytes[at + b]);
  return value;
}
void put64(std::string& bytes, std::size_t at, std::uint64_t value) {
  for (int b = 0; b < 8; ++b) bytes[at + b] = static_cast<char>(value >> (8 * b));
}
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Rewrites the file with `slots` committed and its header's sum and checksum made to match, as
// a writer with a bug (not damage on disk) would leave it.
void rewrite_consistently(const std::string& path, const std::vector<std::uint64_t>& slots) {
  std::string bytes = read_all(path).substr(0, kHeaderBytes);
  std::uint64_t sum = 0;
  for (const std::uint64_t slot : slots) {
    bytes.append(8, '\0');
    put64(bytes, bytes.size() - 8, slot);
    sum += mix(slot);
  }
  put64(bytes, 24, slots.size());
  put64(bytes, 32, sum);
  put64(bytes, 48, XXH3_64bits(bytes.data(), 48));
  write_all(path, bytes);
}

TEST(FileExactSetRemove, RemovesHeldItemsOnceAndRefusesOthers) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const auto exact = create_file_exact_set(filter);
  EXPECT_EQ(exact->add(views_of({"a", "b", "c"})), 3u);
  std::vector<std::uint8_t> removed(4, 9);
  EXPECT_EQ(exact->remove(views_of({"a", "never", "a", "c"}), removed), 2u);
  EXPECT_EQ(removed, (std::vector<std::uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(flags_of(*exact, {"a", "b", "c"}), (std::vector<std::uint8_t>{0, 1, 0}));
  EXPECT_EQ(exact->entries(), 1u);
  EXPECT_EQ(exact->remove(views_of({"a"})), 0u) << "removed twice";
  // What a reader sees from the file alone.
  const auto reopened = open_file_exact_set(filter, /*writable=*/false);
  EXPECT_EQ(reopened->entries(), 1u);
  EXPECT_EQ(flags_of(*reopened, {"a", "b", "c"}), (std::vector<std::uint8_t>{0, 1, 0}));
  EXPECT_EQ(summarize_file_exact_set(filter).entries, 1u);
  // Added again after the remove: held again, for this object and for others.
  EXPECT_EQ(exact->add(views_of({"a", "b"})), 1u);
  EXPECT_EQ(flags_of(*reopened, {"a", "b", "c"}), (std::vector<std::uint8_t>{1, 1, 0}));
  EXPECT_EQ(open_file_exact_set(filter)->entries(), 2u);
  EXPECT_EQ(summarize_file_exact_set(filter).entries, 2u);
  // A read-only object refuses to remove.
  EXPECT_THROW(reopened->remove(views_of({"a"})), StorageError);
  EXPECT_EQ(exact->entries(), 2u);
}

// Version 2 until the first removal (older redbloom reads such files), 3 from then on, 2
// again once cleared.
TEST(FileExactSetRemove, VersionThreeOnlyOnceARemovalIsWritten) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const std::string companion = filter + ".exact";
  const auto exact = create_file_exact_set(filter);
  exact->add(views_of({"a", "b"}));
  EXPECT_EQ(read_all(companion)[8], 2);
  EXPECT_EQ(exact->remove(views_of({"never"})), 0u);
  EXPECT_EQ(read_all(companion)[8], 2) << "nothing removed, nothing written";
  EXPECT_EQ(exact->remove(views_of({"a"})), 1u);
  const std::string bytes = read_all(companion);
  EXPECT_EQ(bytes[8], 3);
  ASSERT_EQ(bytes.size(), kHeaderBytes + 4 * 8) << "two adds, then a removal of two slots";
  EXPECT_EQ(get64(bytes, kHeaderBytes + 16), kMarker);
  exact->clear();
  EXPECT_EQ(read_all(companion)[8], 2);
  EXPECT_EQ(exact->entries(), 0u);
}

TEST(FileExactSetRemove, OtherObjectsCatchUpWithRemovals) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const auto first = create_file_exact_set(filter);
  const auto second = open_file_exact_set(filter);
  const auto items = make_items(1000, "i-");
  EXPECT_EQ(first->add(views_of(items)), 1000u);
  // second read the set empty: it catches up under the lock, so it removes what first added.
  const std::vector<std::string> half(items.begin(), items.begin() + 500);
  EXPECT_EQ(second->remove(views_of(half)), 500u);
  EXPECT_EQ(first->entries(), 500u);
  std::vector<std::uint8_t> present(items.size());
  first->contains(views_of(items), present);
  for (std::size_t i = 0; i < items.size(); ++i) EXPECT_EQ(present[i], i < 500 ? 0 : 1) << i;
  // first has not seen the removal in its own memory before it removes: none is removed twice.
  const auto third = open_file_exact_set(filter);
  EXPECT_EQ(first->remove(views_of(half)), 0u);
  EXPECT_EQ(first->add(views_of({"i-0", "i-1"})), 2u);
  EXPECT_EQ(second->entries(), 502u);
  EXPECT_EQ(flags_of(*third, {"i-0", "i-1", "i-2", "i-999"}),
            (std::vector<std::uint8_t>{1, 1, 0, 1}));
  EXPECT_EQ(summarize_file_exact_set(filter).entries, 502u);
  std::uint64_t streamed = 0;
  third->for_each_fingerprint(
      [&](std::span<const std::uint64_t> batch) { streamed += batch.size(); });
  EXPECT_EQ(streamed, 502u);
}

// The marker is a fingerprint too: added, removed and added again, as seen by other objects.
TEST(FileExactSetRemove, TheMarkerIsAFingerprintLikeAnyOther) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const auto exact = create_file_exact_set(filter);
  const auto other = open_file_exact_set(filter);
  const std::vector<std::uint64_t> marker{kMarker};
  const std::vector<std::uint64_t> both{kMarker, 1};
  EXPECT_EQ(exact->add_fingerprints(both), 2u);
  EXPECT_EQ(read_all(filter + ".exact")[8], 3) << "an escaped add needs version 3";
  EXPECT_EQ(other->entries(), 2u);
  EXPECT_EQ(other->add_fingerprints(marker), 0u);
  std::vector<std::uint8_t> removed(1);
  EXPECT_EQ(other->remove_fingerprints(marker, removed), 1u);
  EXPECT_EQ(removed[0], 1);
  EXPECT_EQ(exact->remove_fingerprints(marker), 0u);
  EXPECT_EQ(open_file_exact_set(filter)->entries(), 1u);
  EXPECT_EQ(summarize_file_exact_set(filter).entries, 1u);
  EXPECT_EQ(exact->add_fingerprints(marker), 1u);
  std::vector<std::uint64_t> held;
  open_file_exact_set(filter)->for_each_fingerprint([&](std::span<const std::uint64_t> batch) {
    held.insert(held.end(), batch.begin(), batch.end());
  });
  EXPECT_EQ(held, (std::vector<std::uint64_t>{1, kMarker}));
}

// A version 2 file (written before removals existed) whose plain slots hold the marker cannot
// become version 3: it would then read as a removal. Refused, with nothing written.
TEST(FileExactSetRemove, AnOldFileHoldingTheMarkerRefusesRemovals) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const std::string companion = filter + ".exact";
  { (void)create_file_exact_set(filter); }
  rewrite_consistently(companion, {kMarker, 7});
  const auto exact = open_file_exact_set(filter);
  EXPECT_EQ(exact->entries(), 2u);
  const std::vector<std::uint64_t> seven{7};
  const std::string message = error_of([&] { exact->remove_fingerprints(seven); });
  EXPECT_TRUE(contains_text(message, "cannot take removals")) << message;
  EXPECT_EQ(read_all(companion).size(), kHeaderBytes + 16);
  EXPECT_EQ(open_file_exact_set(filter)->entries(), 2u);
}

TEST(FileExactSetRemove, DamagedRemovalRecordsAreErrorsNeverAbsence) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const std::string companion = filter + ".exact";
  {
    const auto exact = create_file_exact_set(filter);
    exact->add(views_of({"a", "b", "c"}));
    exact->remove(views_of({"b"}));
  }
  const std::string good = read_all(companion);
  ASSERT_EQ(good.size(), kHeaderBytes + 5 * 8);
  const auto open_error = [&] { return error_of([&] { (void)open_file_exact_set(filter); }); };
  // A byte of the removed fingerprint, or of the marker, changed on disk: the checksum says.
  for (const std::size_t at : {kHeaderBytes + 4 * 8 + 3, kHeaderBytes + 3 * 8}) {
    std::string bytes = good;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
    write_all(companion, bytes);
    const std::string message = open_error();
    EXPECT_TRUE(contains_text(message, "the exact set is damaged")) << message;
    EXPECT_TRUE(contains_text(message, "checksum")) << message;
    EXPECT_THROW((void)summarize_file_exact_set(filter), FormatError);
  }
  // Checksums that match records no writer makes: a removal of a fingerprint not held, a
  // record cut short, a marker pair followed by neither 0 nor 1.
  const std::uint64_t a = get64(good, kHeaderBytes);
  const std::vector<std::vector<std::uint64_t>> bad{
      {a, kMarker, a, kMarker, a}, {a, kMarker}, {a, kMarker, kMarker}, {a, kMarker, kMarker, 2}};
  for (const auto& slots : bad) {
    write_all(companion, good);
    rewrite_consistently(companion, slots);
    const std::string message = open_error();
    EXPECT_TRUE(contains_text(message, "a removal record names no fingerprint it holds"))
        << message;
    EXPECT_THROW((void)summarize_file_exact_set(filter), FormatError);
  }
  // And the same for an object that had read the good file, catching up.
  write_all(companion, good);
  const auto reader = open_file_exact_set(filter);
  rewrite_consistently(companion,
                       {get64(good, kHeaderBytes), get64(good, kHeaderBytes + 8),
                        get64(good, kHeaderBytes + 16), get64(good, kHeaderBytes + 24),
                        get64(good, kHeaderBytes + 32), kMarker, get64(good, kHeaderBytes + 32)});
  std::vector<std::uint8_t> present(1);
  EXPECT_THROW(reader->contains(views_of({"a"}), present), FormatError);
}

class RedisExactSetRemoveTest : public ::testing::Test {
 protected:
  [[nodiscard]] RedisEndpoint endpoint() const { return server_.endpoint(); }
  RedisServer server_;
};

TEST_F(RedisExactSetRemoveTest, RemovesHeldItemsOnceAndRefusesOthers) {
  const auto exact = create_redis_exact_set(endpoint(), "f", 0);
  const auto other = open_redis_exact_set(endpoint(), "f");
  EXPECT_EQ(exact->add(views_of({"a", "b", "c"})), 3u);
  std::vector<std::uint8_t> removed(4, 9);
  EXPECT_EQ(other->remove(views_of({"a", "never", "a", "c"}), removed), 2u);
  EXPECT_EQ(removed, (std::vector<std::uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(flags_of(*exact, {"a", "b", "c"}), (std::vector<std::uint8_t>{0, 1, 0}));
  EXPECT_EQ(exact->entries(), 1u);
  EXPECT_EQ(exact->remove(views_of({"a", "c"})), 0u) << "removed twice";
  EXPECT_EQ(exact->entries(), 1u);
  EXPECT_EQ(other->add(views_of({"a", "b"})), 1u);
  EXPECT_EQ(flags_of(*exact, {"a", "b", "c"}), (std::vector<std::uint8_t>{1, 1, 0}));
  EXPECT_EQ(open_redis_exact_set(endpoint(), "f")->entries(), 2u);
  // The bucket keeps its seal and whole tags: 1 + 2 x 6 bytes.
  EXPECT_EQ(server_.integer({"STRLEN", "f:exact:{f:x0}"}), 13);
}

TEST_F(RedisExactSetRemoveTest, ManyBucketsAndItemsSharingThem) {
  const auto exact = create_redis_exact_set(endpoint(), "many", 20000);
  const auto items = make_items(20000, "i-");
  EXPECT_EQ(exact->add(views_of(items)), 20000u);
  std::vector<std::string> odd;
  std::vector<std::string> even;
  for (std::size_t i = 0; i < items.size(); ++i) (i % 2 ? odd : even).push_back(items[i]);
  std::vector<std::uint8_t> removed(odd.size() + 10);
  auto batch = odd;
  for (int i = 0; i < 10; ++i) batch.push_back("never-" + std::to_string(i));
  EXPECT_EQ(exact->remove(views_of(batch), removed), odd.size());
  for (std::size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(removed[i], i < odd.size()) << i;
  EXPECT_EQ(exact->entries(), even.size());
  const auto reopened = open_redis_exact_set(endpoint(), "many");
  for (const std::uint8_t f : flags_of(*reopened, odd)) ASSERT_EQ(f, 0);
  for (const std::uint8_t f : flags_of(*reopened, even)) ASSERT_EQ(f, 1);
  std::uint64_t streamed = 0;
  reopened->for_each_fingerprint(
      [&](std::span<const std::uint64_t> batch_of) { streamed += batch_of.size(); });
  EXPECT_EQ(streamed, even.size());
}

// A damaged bucket stops the remove before any bucket of its call changes; a missing one is
// an error naming it, as for adds.
TEST_F(RedisExactSetRemoveTest, DamagedAndMissingBucketsAreErrorsAndNothingIsRemoved) {
  const auto exact = create_redis_exact_set(endpoint(), "f", 0);
  exact->add(views_of({"a", "b"}));
  ASSERT_EQ(server_.integer({"APPEND", "f:exact:{f:x0}", "xyz"}), 16);
  const std::string message = error_of([&] { exact->remove(views_of({"a"})); });
  EXPECT_TRUE(contains_text(message, "'f:exact:{f:x0}' is not a whole number")) << message;
  EXPECT_EQ(server_.integer({"STRLEN", "f:exact:{f:x0}"}), 16) << "nothing removed";
  EXPECT_EQ(exact->entries(), 2u);
  ASSERT_EQ(server_.integer({"DEL", "f:exact:{f:x0}"}), 1);
  const std::string missing = error_of([&] { exact->remove(views_of({"a"})); });
  EXPECT_TRUE(contains_text(missing, "is missing")) << missing;
}

// A server that lost its script cache gets the remove script again.
TEST_F(RedisExactSetRemoveTest, AServerWithoutTheScriptGetsItAgain) {
  const auto exact = create_redis_exact_set(endpoint(), "f", 0);
  exact->add(views_of({"a", "b"}));
  EXPECT_EQ(exact->remove(views_of({"a"})), 1u);
  (void)server_.command({"SCRIPT", "FLUSH"});
  EXPECT_EQ(exact->remove(views_of({"b"})), 1u);
  EXPECT_EQ(exact->entries(), 0u);
}

// Of concurrent removers of one item exactly one removes it (one script per bucket).
TEST_F(RedisExactSetRemoveTest, ConcurrentRemoversRemoveEachItemOnce) {
  const auto items = make_items(5000, "c-");
  create_redis_exact_set(endpoint(), "c", 5000)->add(views_of(items));
  std::atomic<std::size_t> total{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      const auto mine = open_redis_exact_set(endpoint(), "c");
      for (std::size_t at = 0; at < items.size(); at += 500) {
        const std::vector<std::string> batch(items.begin() + static_cast<std::ptrdiff_t>(at),
                                             items.begin() + static_cast<std::ptrdiff_t>(at + 500));
        total += mine->remove(views_of(batch));
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  EXPECT_EQ(total.load(), items.size());
  EXPECT_EQ(open_redis_exact_set(endpoint(), "c")->entries(), 0u);
}

// On a cluster the buckets spread over the masters and the script cannot reach the metadata:
// the count moves by what the scripts answered.
TEST(ClusterExactSetRemove, RemovesAcrossMastersAndCountsExactly) {
  test::RedisCluster cluster(3, 0);
  const auto exact = create_redis_exact_set(cluster.endpoint(), "cl", 20000);
  const auto items = make_items(20000, "cl-");
  EXPECT_EQ(exact->add(views_of(items)), 20000u);
  std::vector<std::string> odd;
  std::vector<std::string> even;
  for (std::size_t i = 0; i < items.size(); ++i) (i % 2 ? odd : even).push_back(items[i]);
  auto batch = odd;
  batch.push_back("never");
  batch.push_back(odd.front());
  std::vector<std::uint8_t> removed(batch.size());
  EXPECT_EQ(exact->remove(views_of(batch), removed), odd.size());
  EXPECT_EQ(removed.back(), 0) << "a repeat is removed once";
  EXPECT_EQ(removed[odd.size()], 0) << "never added";
  EXPECT_EQ(exact->entries(), even.size());
  const auto reopened = open_redis_exact_set(cluster.endpoint(), "cl");
  for (const std::uint8_t f : flags_of(*reopened, odd)) ASSERT_EQ(f, 0);
  for (const std::uint8_t f : flags_of(*reopened, even)) ASSERT_EQ(f, 1);
  for (std::size_t m = 0; m < 3; ++m) EXPECT_GT(cluster.node(m).calls("evalsha"), 0) << m;
}

}  // namespace
}  // namespace redbloom
