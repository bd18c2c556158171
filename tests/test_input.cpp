#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "input.hpp"
#include "redbloom/error.hpp"
#include "stop_signals.hpp"
#include "temp_dir.hpp"

namespace redbloom::cli {
namespace {

using redbloom::testing::TempDir;

std::vector<std::string> read_all(const std::vector<std::string>& paths, InputOptions options,
                                  std::size_t batch_size = 3, InputStats* stats = nullptr) {
  ItemReader reader(paths, options);
  std::vector<std::string> items;
  std::vector<std::string_view> batch;
  while (reader.next_batch(batch, batch_size)) {
    EXPECT_LE(batch.size(), batch_size);
    for (auto item : batch) items.emplace_back(item);
  }
  if (stats) *stats = reader.stats();
  return items;
}

std::string write(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(ItemReader, LinesWithCrlfEmptyAndUnterminatedLast) {
  TempDir dir;
  const auto path = write(dir, "a", "one\r\ntwo\n\nthree\r\n\r\nlast");
  InputStats stats;
  EXPECT_EQ(read_all({path}, {}, 3, &stats),
            (std::vector<std::string>{"one", "two", "", "three", "", "last"}));
  EXPECT_EQ(stats.records, 6u);
  EXPECT_EQ(stats.empty, 2u);
  EXPECT_EQ(read_all({path}, {.nul_delimited = false, .skip_empty = true}),
            (std::vector<std::string>{"one", "two", "three", "last"}));
}

TEST(ItemReader, NulDelimitedKeepsNewlinesAndCarriageReturns) {
  TempDir dir;
  const auto path = write(dir, "a", std::string("a\nb\0c\r\0\0d", 9));
  EXPECT_EQ(read_all({path}, {.nul_delimited = true, .skip_empty = false}),
            (std::vector<std::string>{"a\nb", "c\r", "", "d"}));
}

TEST(ItemReader, BinaryBytesAreKeptAndNulLinesCounted) {
  TempDir dir;
  const std::string binary("\xff\xfe\x00\x01", 4);
  const auto path = write(dir, "a", "x\n" + binary + "\ny\n");
  InputStats stats;
  const auto items = read_all({path}, {}, 10, &stats);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[1], binary);
  EXPECT_EQ(stats.with_nul, 1u);
}

TEST(ItemReader, ManyFilesAndLinesLongerThanTheBuffer) {
  TempDir dir;
  const std::string long_line(3 << 20, 'x');  // larger than one read
  const auto a = write(dir, "a", "a1\na2");   // no final newline: must not join b's first
  const auto b = write(dir, "b", long_line + "\nb2\n");
  const auto items = read_all({a, b}, {}, 1000);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[1], "a2");
  EXPECT_EQ(items[2], long_line);
  EXPECT_EQ(items[3], "b2");
}

TEST(ItemReader, ManyItemsAcrossReads) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 300000; ++i) text += "item-" + std::to_string(i) + "\n";
  const auto path = write(dir, "a", text);
  InputStats stats;
  const auto items = read_all({path}, {}, 4096, &stats);
  ASSERT_EQ(items.size(), 300000u);
  EXPECT_EQ(items[123456], "item-123456");
  EXPECT_EQ(stats.bytes, text.size());
  EXPECT_EQ(stats.total_bytes, text.size());
}

TEST(ItemReader, MissingInputIsAClearError) {
  TempDir dir;
  try {
    ItemReader reader({dir.file("missing.txt")}, {});
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open input"), std::string::npos);
  }
}

// Large batches span many buffer refills (each ~1 MiB) and reallocations; every view must
// still point at its own bytes when the batch is returned, across several files.
TEST(ItemReader, LargeBatchesSpanRefillsAndKeepEveryItemIntact) {
  TempDir dir;
  std::string first;
  std::string second;
  std::vector<std::string> expected;
  for (int i = 0; i < 300000; ++i) {
    std::string item = "s3://bucket/dir/file" + std::to_string(i) + ".pdf";
    std::string& file = i < 200000 ? first : second;
    file.append(item).push_back('\n');
    expected.push_back(std::move(item));
  }
  const auto a = write(dir, "a", first);
  const auto b = write(dir, "b", second);
  ItemReader reader({a, b}, {});
  std::vector<std::string> items;
  std::vector<std::size_t> sizes;
  std::vector<std::string_view> batch;
  while (reader.next_batch(batch, 150000)) {
    sizes.push_back(batch.size());
    for (auto item : batch) items.emplace_back(item);
  }
  EXPECT_EQ(items, expected);
  // Batches end only at max_items or at the end of a file, never at the end of the buffer.
  EXPECT_EQ(sizes, (std::vector<std::size_t>{150000, 50000, 100000}));
}

// With --skip-empty, empty records consumed while the batch is still empty must not be kept
// as part of it: a batch that starts after a run of empty lines spanning refills stays intact.
TEST(ItemReader, BatchAfterSkippedEmptyLinesAcrossRefills) {
  TempDir dir;
  std::string bytes;
  std::vector<std::string> expected;
  for (int i = 0; i < 100000; ++i) {
    // Built by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on "a" + std::string.
    expected.emplace_back("a").append(std::to_string(i));
    bytes.append(expected.back()).push_back('\n');
  }
  bytes.append(std::size_t{3} << 20, '\n');  // empty lines past several refills
  for (int i = 0; i < 60000; ++i) {
    expected.push_back(std::string(100, 'b') + std::to_string(i));
    bytes.append(expected.back()).push_back('\n');
  }
  const auto path = write(dir, "a", bytes);
  ItemReader reader({path}, {.nul_delimited = false, .skip_empty = true});
  std::vector<std::string> items;
  std::vector<std::string_view> batch;
  while (reader.next_batch(batch, 100000)) {
    for (auto item : batch) items.emplace_back(item);
  }
  EXPECT_EQ(items, expected);
}

// A pipe whose writer sends three lines, then waits (up to a minute) to hear that the reader has
// them before it sends more: the reader must hand the three over when the flush interval has
// passed, not wait for its batch to fill.
TEST(ItemReader, AStalledStreamIsHandedOverAfterTheFlushInterval) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::mutex mutex;
  std::condition_variable cv;
  bool reader_has_them = false;
  bool writer_gave_up = false;
  std::thread writer([&] {
    const std::string first = "a\nb\nc\n";
    EXPECT_EQ(::write(fds[1], first.data(), first.size()), static_cast<ssize_t>(first.size()));
    std::unique_lock lock(mutex);
    writer_gave_up = !cv.wait_for(lock, std::chrono::minutes(1), [&] { return reader_has_them; });
    lock.unlock();
    const std::string rest = "d\n";
    EXPECT_EQ(::write(fds[1], rest.data(), rest.size()), static_cast<ssize_t>(rest.size()));
    ::close(fds[1]);
  });
  ASSERT_EQ(::dup2(fds[0], 0), 0);  // the reader reads standard input
  ::close(fds[0]);
  ItemReader reader({}, {.nul_delimited = false, .skip_empty = false, .flush_interval_ms = 50});
  std::vector<std::string_view> batch;
  ASSERT_TRUE(reader.next_batch(batch, 4096));
  std::vector<std::string> first(batch.begin(), batch.end());
  {
    std::lock_guard lock(mutex);
    reader_has_them = true;
  }
  cv.notify_one();
  std::vector<std::string> rest;
  while (reader.next_batch(batch, 4096)) rest.insert(rest.end(), batch.begin(), batch.end());
  writer.join();
  EXPECT_FALSE(writer_gave_up) << "the first lines waited for more input";
  EXPECT_EQ(first, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(rest, (std::vector<std::string>{"d"}));
}

// A stop signal that arrives while the reader waits for input ends the input at once, with
// the items read so far handed over, and is reported.
TEST(ItemReader, AStopSignalEndsTheInputWhileWaiting) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const StopSignals stop_signals;  // before the thread starts: it inherits the blocked mask
  std::thread writer([&] {
    const std::string first = "x\ny\n";
    EXPECT_EQ(::write(fds[1], first.data(), first.size()), static_cast<ssize_t>(first.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(::getpid(), SIGTERM);
  });
  ASSERT_EQ(::dup2(fds[0], 0), 0);
  ::close(fds[0]);
  // A flush interval longer than the test: only the signal can end the batch.
  ItemReader reader({},
                    {.nul_delimited = false, .skip_empty = false, .flush_interval_ms = 3600000});
  std::vector<std::string_view> batch;
  ASSERT_TRUE(reader.next_batch(batch, 4096));
  EXPECT_EQ(std::vector<std::string>(batch.begin(), batch.end()),
            (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(reader.stopped_by(), SIGTERM);
  EXPECT_FALSE(reader.next_batch(batch, 4096));
  writer.join();
  ::close(fds[1]);
}

}  // namespace
}  // namespace redbloom::cli
