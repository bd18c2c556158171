// The dedup journal's file (redbloom/journal.hpp): replay of finished and unfinished batches,
// pending keys, torn and damaged records, checkpoints and the lock.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/crc32c.hpp"
#include "redbloom/journal.hpp"
#include "temp_dir.hpp"

namespace redbloom {
namespace {

using redbloom::testing::TempDir;

constexpr std::uint64_t kLimit = std::uint64_t{1} << 20;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<std::string> sorted(std::vector<std::string> keys) {
  std::sort(keys.begin(), keys.end());
  return keys;
}

void begin(Journal& journal, const std::vector<std::string>& keys) {
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  journal.begin(views);
}

TEST(Journal, Crc32cOfTheCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(Journal, NewJournalHasNothingToReplay) {
  TempDir dir;
  const std::string path = dir.file("j");
  { Journal journal(path, kLimit); }
  ASSERT_TRUE(std::filesystem::exists(path));
  Journal journal(path, kLimit);
  EXPECT_TRUE(journal.replay_keys().empty());
  EXPECT_EQ(journal.pending(), 0u);
  EXPECT_FALSE(journal.dropped_torn_record());
}

TEST(Journal, UnfinishedBatchIsPendingAndEveryBatchIsReplayed) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"a", "b"});
    journal.done();
    begin(journal, {"c", std::string("d\0e", 3), ""});
    // killed here: the second batch has no mark
  }
  Journal journal(path, kLimit);
  EXPECT_EQ(sorted(journal.replay_keys()), sorted({"a", "b", "c", std::string("d\0e", 3), ""}));
  EXPECT_EQ(journal.unfinished_keys(), 3u);
  EXPECT_EQ(journal.pending(), 3u);
  EXPECT_FALSE(journal.take_pending("a"));  // its batch was printed
  EXPECT_TRUE(journal.take_pending(std::string("d\0e", 3)));
  EXPECT_FALSE(journal.take_pending(std::string("d\0e", 3)));  // once only
  EXPECT_TRUE(journal.take_pending(""));
  EXPECT_EQ(journal.pending(), 1u);
}

TEST(Journal, OnlyTheKeysPrintedAsNewArePendingWhenThatIsRecorded) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"old", "new1", "new2", "old2"});
    journal.committed(std::vector<std::uint8_t>{0, 1, 1, 0}, 4);
  }
  Journal journal(path, kLimit);
  EXPECT_EQ(journal.unfinished_keys(), 2u);
  EXPECT_FALSE(journal.take_pending("old"));
  EXPECT_FALSE(journal.take_pending("old2"));
  EXPECT_TRUE(journal.take_pending("new1"));
  EXPECT_TRUE(journal.take_pending("new2"));
}

TEST(Journal, NewKeysRecordCutShortLeavesTheWholeBatchPending) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"old", "new"});
    journal.committed(std::vector<std::uint8_t>{0, 1}, 2);
  }
  const std::string whole = slurp(path);
  spit(path, whole.substr(0, whole.size() - 1));
  Journal journal(path, kLimit);
  EXPECT_TRUE(journal.dropped_torn_record());
  EXPECT_EQ(journal.unfinished_keys(), 2u);
  EXPECT_TRUE(journal.take_pending("old"));
}

TEST(Journal, CheckpointKeepsOnlyThePendingKeys) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"a", "b", "c"});
  }
  {
    Journal journal(path, kLimit);
    ASSERT_EQ(journal.pending(), 3u);
    journal.checkpoint();
    EXPECT_TRUE(journal.replay_keys().empty());
    // A later batch prints "b" (it was pending); "a" and "c" stay pending.
    begin(journal, {"b", "x"});
    EXPECT_TRUE(journal.take_pending("b"));
    journal.done();
  }
  Journal journal(path, kLimit);
  EXPECT_EQ(journal.pending(), 2u);
  EXPECT_EQ(journal.unfinished_keys(), 0u);
  // The pending keys written at the checkpoint, then the batch after it.
  EXPECT_EQ(sorted(journal.replay_keys()), sorted({"a", "b", "b", "c", "x"}));
  EXPECT_TRUE(journal.take_pending("a"));
  EXPECT_TRUE(journal.take_pending("c"));
  EXPECT_FALSE(journal.take_pending("b"));
}

TEST(Journal, CheckpointIsDueAtTheLimit) {
  TempDir dir;
  Journal journal(dir.file("j"), 4096);
  const std::vector<std::string> keys(100, std::string(40, 'k'));
  begin(journal, keys);
  journal.done();
  EXPECT_TRUE(journal.checkpoint_due());
  journal.checkpoint();
  EXPECT_FALSE(journal.checkpoint_due());
  EXPECT_LT(slurp(dir.file("j")).size(), 100u);
}

TEST(Journal, TornLastRecordIsDroppedAndCutOff) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"a"});
    journal.done();
    begin(journal, {"bbbbbbbb", "cccccccc"});
  }
  const std::string whole = slurp(path);
  // The crash cut the last begin short: its batch was never committed (the commit waits for the
  // sync), so nothing of it is pending.
  for (std::size_t cut : {1, 5, 9, 20}) {
    spit(path, whole.substr(0, whole.size() - cut));
    {
      Journal journal(path, kLimit);
      EXPECT_TRUE(journal.dropped_torn_record()) << cut;
      EXPECT_EQ(journal.pending(), 0u) << cut;
      EXPECT_EQ(journal.replay_keys(), std::vector<std::string>{"a"}) << cut;
      // Appends go after the last whole record.
      begin(journal, {"z"});
    }
    Journal journal(path, kLimit);
    EXPECT_FALSE(journal.dropped_torn_record()) << cut;
    EXPECT_TRUE(journal.take_pending("z")) << cut;
  }
}

TEST(Journal, BadChecksumOnTheLastRecordIsATornWrite) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"a"});
    journal.done();
    begin(journal, {"b"});
  }
  std::string bytes = slurp(path);
  bytes.back() ^= 0x20;  // "b" -> "B": the sector that held it was half written
  spit(path, bytes);
  Journal journal(path, kLimit);
  EXPECT_TRUE(journal.dropped_torn_record());
  EXPECT_EQ(journal.pending(), 0u);
}

TEST(Journal, BadChecksumBeforeOtherRecordsIsRefused) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"first-key"});
    journal.done();
    begin(journal, {"second-key"});
  }
  std::string bytes = slurp(path);
  const std::size_t at = bytes.find("first-key");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'F';
  spit(path, bytes);
  try {
    Journal journal(path, kLimit);
    FAIL() << "a damaged journal was accepted";
  } catch (const JournalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("is damaged at byte"), std::string::npos) << what;
    EXPECT_NE(what.find("checksum"), std::string::npos) << what;
    EXPECT_NE(what.find("name a new --journal file"), std::string::npos) << what;
  }
  EXPECT_EQ(slurp(path), bytes);  // kept as it was, for inspection
}

TEST(Journal, OtherFileIsRefused) {
  TempDir dir;
  const std::string path = dir.file("notes.txt");
  spit(path, "my notes, not a journal\n");
  try {
    Journal journal(path, kLimit);
    FAIL() << "a file that is not a journal was accepted";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a dedup journal"), std::string::npos);
  }
  EXPECT_EQ(slurp(path), "my notes, not a journal\n");
}

TEST(Journal, HeaderCutShortIsCreatedAgain) {
  TempDir dir;
  const std::string path = dir.file("j");
  spit(path, "redbloom de");
  Journal journal(path, kLimit);
  EXPECT_EQ(journal.pending(), 0u);
  begin(journal, {"a"});
}

TEST(Journal, OneStagePerJournal) {
  TempDir dir;
  const std::string path = dir.file("j");
  Journal first(path, kLimit);
  try {
    Journal second(path, kLimit);
    FAIL() << "two stages shared a journal";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("in use by another running dedup"), std::string::npos);
  }
  // Still locked after a checkpoint replaced the file.
  first.checkpoint();
  EXPECT_THROW(Journal(path, kLimit), InvalidArgument);
}

TEST(Journal, LeftoverCheckpointFileIsIgnored) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"a"});
  }
  spit(path + ".checkpoint", "redbloom dedup jour");  // cut short by the crash
  Journal journal(path, kLimit);
  EXPECT_TRUE(journal.take_pending("a"));
  EXPECT_FALSE(std::filesystem::exists(path + ".checkpoint"));
}

TEST(Journal, ForeignFileWhereTheCheckpointGoesIsKept) {
  TempDir dir;
  const std::string path = dir.file("j");
  spit(path + ".checkpoint", "someone's notes");
  Journal journal(path, kLimit);
  begin(journal, {"a"});
  journal.done();
  try {
    journal.checkpoint();
    FAIL() << "a checkpoint wrote over a file that is not a journal";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find("is in the way"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(path + ".checkpoint"), "someone's notes");
}

const JournalFilter kF1{"file /data/f1.rbf", 1000};
const JournalFilter kF2{"file /data/f2.rbf", 2000};

// A journal of filter F1 that a crash left with a batch unfinished: keys it must not give to
// another filter.
void left_by_a_crash(const std::string& path) {
  Journal journal(path, kLimit);
  journal.bind(kF1);
  journal.checkpoint();
  begin(journal, {"a", "b"});
}

std::string refusal(const std::string& path, const JournalFilter& filter) {
  try {
    Journal journal(path, kLimit);
    journal.bind(filter);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Journal, AJournalHoldingKeysRefusesAnotherFilter) {
  TempDir dir;
  const std::string path = dir.file("j");
  left_by_a_crash(path);
  const std::string bytes = slurp(path);
  const std::string other = refusal(path, kF2);
  EXPECT_NE(other.find("belongs to the filter file /data/f1.rbf"), std::string::npos) << other;
  EXPECT_NE(other.find("this run's filter is file /data/f2.rbf"), std::string::npos) << other;
  EXPECT_NE(other.find("name a new --journal file"), std::string::npos) << other;
  // The same place, made again after the journal's filter.
  const std::string again = refusal(path, JournalFilter{kF1.location, 5000});
  EXPECT_NE(again.find("deleted and made again"), std::string::npos) << again;
  EXPECT_EQ(slurp(path), bytes);  // refused without a write
  // Its own filter takes it, with the keys pending.
  Journal journal(path, kLimit);
  journal.bind(kF1);
  EXPECT_EQ(journal.pending(), 2u);
  EXPECT_TRUE(journal.ends_inside_batch());
}

TEST(Journal, TheFilterIsStillNamedAfterACheckpoint) {
  TempDir dir;
  const std::string path = dir.file("j");
  left_by_a_crash(path);
  {
    Journal journal(path, kLimit);
    journal.bind(kF1);
    journal.checkpoint();  // as a recovery does: "a" and "b" stay pending
    EXPECT_EQ(journal.pending(), 2u);
  }
  EXPECT_NE(refusal(path, kF2).find("belongs to the filter"), std::string::npos);
}

TEST(Journal, AJournalWithoutKeysIsTakenOverByAnotherFilter) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    journal.bind(kF1);
    begin(journal, {"a"});
    journal.done();
    journal.checkpoint();  // a clean end: nothing pending
  }
  {
    Journal journal(path, kLimit);
    journal.bind(kF2);
    EXPECT_TRUE(journal.rewrite_due());
    journal.checkpoint();
    begin(journal, {"b"});
  }
  EXPECT_NE(refusal(path, kF1).find("belongs to the filter file /data/f2.rbf"), std::string::npos);
}

TEST(Journal, AFormat1JournalIsTakenByAFilterOlderThanItAndRewritten) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"a"});
  }
  std::string bytes = slurp(path);
  bytes.replace(0, 25, "redbloom dedup journal 1\n");
  spit(path, bytes);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const std::uint64_t written = static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000u;
  // A filter made after the journal's last write cannot be its filter.
  const std::string newer = refusal(path, JournalFilter{kF1.location, written + 60000000000u});
  EXPECT_NE(newer.find("names no filter"), std::string::npos) << newer;
  {
    Journal journal(path, kLimit);
    journal.bind(JournalFilter{kF1.location, written - 60000000000u});
    EXPECT_TRUE(journal.took_unnamed());
    EXPECT_TRUE(journal.rewrite_due());
    EXPECT_EQ(journal.pending(), 1u);
    journal.checkpoint();
  }
  EXPECT_TRUE(slurp(path).starts_with("redbloom dedup journal 2\n"));
  EXPECT_NE(refusal(path, kF2).find("belongs to the filter"), std::string::npos);
}

TEST(Journal, ZeroBytesAfterTheLastRecordAreATornTail) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"a"});
    journal.done();
    begin(journal, {"b"});
  }
  const std::string whole = slurp(path);
  // Zeros alone, and a record cut short followed by zeros (a block the data never reached).
  for (const std::string& tail :
       {std::string(4096, '\0'), std::string(3, 'x') + std::string(9, '\0')}) {
    spit(path, whole + tail);
    {
      Journal journal(path, kLimit);
      EXPECT_TRUE(journal.dropped_zero_tail() || journal.dropped_torn_record());
      EXPECT_EQ(journal.pending(), 1u);
      EXPECT_TRUE(journal.take_pending("b"));
    }
    EXPECT_EQ(slurp(path), whole);  // cut off: appends follow the last record
  }
  spit(path, whole + std::string(100, '\0'));
  Journal journal(path, kLimit);
  EXPECT_TRUE(journal.dropped_zero_tail());
}

TEST(Journal, ABatchCutAtARecordBoundaryIsSaidToEndInside) {
  TempDir dir;
  const std::string path = dir.file("j");
  {
    Journal journal(path, kLimit);
    begin(journal, {"a"});
    journal.done();
  }
  EXPECT_FALSE(Journal(path, kLimit).ends_inside_batch());
  {
    Journal journal(path, kLimit);
    begin(journal, {"b"});
  }
  EXPECT_TRUE(Journal(path, kLimit).ends_inside_batch());
}

TEST(Journal, AnythingButARegularFileIsRefused) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/zero"), std::string("/dev/full"),
                                  std::string("/dev/null"), fifo, dir.file("")}) {
    try {
      Journal journal(path, kLimit);
      FAIL() << path << " was taken as a journal";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace redbloom
