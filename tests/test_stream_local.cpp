// Windowed and growing filters in memory and in files, on a driven clock: zero false
// negatives inside the window, forgetting after window + one slice, the error rate held by
// growth, bounded memory, and (files) atomic test-and-set across processes and crashes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/bitmap_kernels.hpp"
#include "core/file_format.hpp"
#include "core/stream_shape.hpp"
#include "local/memory_store.hpp"
#include "local/stream_manifest.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "simd_levels.hpp"
#include "temp_dir.hpp"

namespace redbloom {
namespace {

constexpr std::uint64_t kSecond = 1'000'000'000;
constexpr std::uint64_t kStart = 1'800'000'000 * kSecond;  // a whole second, so slices align

// A clock the test moves; shared with forked children when it lives in shared memory.
struct DrivenClock {
  std::atomic<std::uint64_t>* now;
  [[nodiscard]] Clock clock() const {
    auto* at = now;
    return [at] { return at->load(); };
  }
};

DrivenClock shared_clock() {
  void* memory = ::mmap(nullptr, sizeof(std::atomic<std::uint64_t>), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::runtime_error("mmap failed");
  return DrivenClock{new (memory) std::atomic<std::uint64_t>(kStart)};
}

StreamOptions window_of(std::uint64_t items_per_window, double p, Layout layout) {
  StreamOptions options;
  options.capacity = items_per_window;
  options.error_rate = p;
  options.layout = layout;
  options.window_ns = 4 * kSecond;
  options.slices = 4;
  return options;
}

std::string event(std::uint64_t i) {
  return "event-" + std::to_string(i);
}

std::size_t present_count(const Filter& filter, const std::vector<std::string>& items) {
  const std::vector<std::string_view> views(items.begin(), items.end());
  return filter.contains_many(views);
}

// Nothing is left in the directory of `path` (a dropped filter took every file of its own).
void expect_directory_empty(const std::string& path) {
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    ADD_FAILURE() << "left behind: " << entry.path();
  }
}

class StreamStores : public ::testing::TestWithParam<const char*> {
 protected:
  Location location() const {
    return std::string(GetParam()) == "memory" ? Location::memory()
                                               : Location::file(dir_.file("clicks.rbf"));
  }
  testing::TempDir dir_;
};

// 25 windows at the rate the filter was sized for: every item added within the window is
// present at every check; items last added more than window + slice ago are forgotten; absent
// items read present at no more than the target rate; memory stays flat.
TEST_P(StreamStores, WindowRemembersTheWindowAndForgetsWhatLeftIt) {
  for (Layout layout : {Layout::classic, Layout::blocked}) {
    DrivenClock time = shared_clock();
    const double p = 0.01;
    const StreamOptions options = window_of(4000, p, layout);
    Filter filter = Filter::create(location(), options, /*overwrite=*/true, nullptr, time.clock());
    std::vector<std::uint64_t> added_at;  // by event number
    std::uint64_t probes = 0, false_positives = 0, forgotten = 0, stale = 0;
    std::uint64_t max_bytes = 0;
    const std::uint64_t tick = kSecond / 10;
    for (int step = 0; step < 25 * 40; ++step) {
      std::vector<std::string> batch;
      for (int i = 0; i < 100; ++i) {
        batch.push_back(event(added_at.size()));
        added_at.push_back(time.now->load());
      }
      const std::vector<std::string_view> views(batch.begin(), batch.end());
      std::vector<std::uint8_t> fresh(views.size());
      filter.add_many(views, fresh);
      time.now->fetch_add(tick);
      if (step % 40 != 39) continue;
      const std::uint64_t now = time.now->load();
      std::vector<std::string> inside, outside;
      for (std::uint64_t e = 0; e < added_at.size(); ++e) {
        if (added_at[e] + options.window_ns > now) inside.push_back(event(e));
        if (added_at[e] + options.window_ns + kSecond <= now &&
            added_at[e] + options.window_ns + 3 * kSecond > now) {
          outside.push_back(event(e));
        }
      }
      ASSERT_EQ(present_count(filter, inside), inside.size()) << "false negative, step " << step;
      stale += outside.size();
      forgotten += outside.size() - present_count(filter, outside);
      std::vector<std::string> absent;
      for (int i = 0; i < 5000; ++i) absent.push_back("never-" + std::to_string(probes++));
      false_positives += present_count(filter, absent);
      max_bytes = std::max(max_bytes, filter.info().stream->bytes);
    }
    const double fp_rate = double(false_positives) / double(probes);
    const double stale_rate = 1.0 - double(forgotten) / double(stale);
    EXPECT_LE(fp_rate, p) << to_string(layout);
    EXPECT_LE(stale_rate, 2 * p) << to_string(layout) << ": items older than window + slice";
    const FilterInfo info = filter.info();
    ASSERT_TRUE(info.stream);
    EXPECT_LE(max_bytes, 5 * filter.params().total_bytes()) << "memory grew";
    EXPECT_LE(info.stream->segments.size(), 5u);
    EXPECT_LE(info.stream->error_rate_now, p);
  }
}

TEST_P(StreamStores, EachAddRestartsTheItemsWindow) {
  DrivenClock time = shared_clock();
  Filter filter = Filter::create(location(), window_of(1000, 0.001, Layout::blocked), true, nullptr,
                                 time.clock());
  EXPECT_TRUE(filter.add("kept"));
  EXPECT_TRUE(filter.add("once"));
  for (int second = 1; second <= 20; ++second) {
    time.now->fetch_add(kSecond);
    if (second % 3 == 0) {
      EXPECT_FALSE(filter.add("kept")) << second;
    }
    EXPECT_TRUE(filter.contains("kept")) << second;
  }
  EXPECT_FALSE(filter.contains("once"));
  EXPECT_TRUE(filter.add("once"));  // forgotten: new again
}

// Ten times the rate inside one slice: links grow, answers stay exact for added items and
// the rate for absent ones stays at the target.
TEST_P(StreamStores, BurstGrowsTheSliceInsteadOfTheErrorRate) {
  DrivenClock time = shared_clock();
  const double p = 0.01;
  Filter filter =
      Filter::create(location(), window_of(4000, p, Layout::blocked), true, nullptr, time.clock());
  std::vector<std::string> items;
  for (int i = 0; i < 10000; ++i) items.push_back(event(i));
  const std::vector<std::string_view> views(items.begin(), items.end());
  const std::size_t fresh = filter.add_many(views);
  EXPECT_GE(double(fresh), (1 - p) * double(items.size()));  // the others: false positives
  EXPECT_EQ(present_count(filter, items), items.size());
  std::vector<std::string> absent;
  for (int i = 0; i < 200000; ++i) absent.push_back("never-" + std::to_string(i));
  EXPECT_LE(double(present_count(filter, absent)) / double(absent.size()), p);
  const StreamInfo info = *filter.info().stream;
  ASSERT_GE(info.segments.size(), 3u);
  EXPECT_EQ(info.segments.back().slice, info.segments.front().slice);
  std::uint64_t counted = 0;
  for (const StreamSegment& s : info.segments) counted += s.items;
  EXPECT_EQ(counted, fresh);
  EXPECT_LE(info.error_rate_now, p);
}

TEST_P(StreamStores, GrowingFilterKeepsItsRate) {
  StreamOptions options;
  options.capacity = 1000;
  options.error_rate = 0.01;
  options.layout = Layout::classic;
  options.growth = 2;
  Filter filter = Filter::create(location(), options, true);
  std::vector<std::string> items;
  for (int i = 0; i < 100000; ++i) items.push_back(event(i));
  const std::vector<std::string_view> views(items.begin(), items.end());
  const std::size_t fresh = filter.add_many(views);
  EXPECT_GE(double(fresh), 0.99 * double(items.size()));  // the others: false positives
  EXPECT_EQ(present_count(filter, items), items.size());
  std::vector<std::string> absent;
  for (int i = 0; i < 200000; ++i) absent.push_back("never-" + std::to_string(i));
  EXPECT_LE(double(present_count(filter, absent)) / double(absent.size()), 0.01);
  const StreamInfo info = *filter.info().stream;
  EXPECT_EQ(info.segments.size(), 7u);  // 1000 + 2000 + ... + 64000 >= 100000
  EXPECT_LE(info.error_rate_now, 0.01);
  EXPECT_EQ(info.segments.back().expires_unix_ns, 0u);
}

TEST_P(StreamStores, ByteLimitStopsGrowthAndSaysWhatWasAdded) {
  StreamOptions options;
  options.capacity = 1000;
  options.error_rate = 0.01;
  options.growth = 2;
  options.max_bytes = 5000;  // link 0 (~1.4 KB) and link 1 (~3 KB), not link 2
  Filter filter = Filter::create(location(), options, true);
  std::vector<std::string> items;
  for (int i = 0; i < 5000; ++i) items.push_back(event(i));
  const std::vector<std::string_view> views(items.begin(), items.end());
  std::vector<std::uint8_t> fresh(items.size());
  try {
    filter.add_many(views, fresh);
    FAIL() << "grew past max_bytes";
  } catch (const CapacityExceeded& e) {
    // Links 0 and 1 hold 3000 items; inputs that were false positives took no room.
    EXPECT_GE(e.committed(), 3000u);
    EXPECT_LE(e.committed(), 3100u);
    EXPECT_NE(std::string(e.what()).find("over the limit"), std::string::npos) << e.what();
    const std::vector<std::string> committed(items.begin(), items.begin() + e.committed());
    EXPECT_EQ(present_count(filter, committed), committed.size());
  }
  EXPECT_LE(filter.info().stream->bytes, options.max_bytes);
}

// The fused lookup over a window's slices answers as the lookups one slice at a time, for both
// layouts, on every SIMD path and the scalar one.
TEST(StreamKernels, TestAnyIsTheUnionOfTheSlicesLookups) {
  for (Layout layout : {Layout::classic, Layout::blocked}) {
    for (kernels::Simd simd : testing::simd_levels()) {
      const kernels::Simd before = kernels::use_simd(simd);
      const FilterParams params = size_filter(2000, 0.05, layout);
      std::vector<std::unique_ptr<MemoryStore>> slices;
      std::vector<const kernels::Bitmap*> bitmaps;
      for (int s = 0; s < 5; ++s) {
        slices.push_back(std::make_unique<MemoryStore>(params));
        std::vector<std::string> items;
        for (int i = 0; i < 2000; ++i) items.push_back(event(s * 100000 + i));
        const std::vector<std::string_view> views(items.begin(), items.end());
        slices.back()->load(views);
        bitmaps.push_back(&slices.back()->bitmap());
      }
      std::vector<std::string> probes;
      for (int i = 0; i < 20000; ++i) probes.push_back(event(i * 37 % 500000));
      const std::vector<std::string_view> views(probes.begin(), probes.end());
      std::vector<ItemHash> hashes(views.size());
      kernels::hash_items(views, hashes.data());
      std::vector<std::uint32_t> owned(views.size());
      for (std::size_t i = 0; i < owned.size(); ++i) owned[i] = static_cast<std::uint32_t>(i);
      std::vector<std::uint8_t> fused(views.size()), one(views.size()), expected(views.size());
      kernels::test_any(bitmaps, hashes, owned, fused.data());
      for (const kernels::Bitmap* bitmap : bitmaps) {
        kernels::test(*bitmap, hashes, owned, one.data());
        for (std::size_t i = 0; i < one.size(); ++i) expected[i] |= one[i];
      }
      EXPECT_EQ(fused, expected) << to_string(layout) << " " << testing::to_string(simd);
      EXPECT_GT(std::count(fused.begin(), fused.end(), 1), 1000);  // hits, not only misses

      // The windowed add in one pass: the same lookups in the first four, and the same
      // test-and-set in the fifth as the plain kernel makes on a copy of it.
      MemoryStore copy(params);
      const auto fifth = slices[4]->bytes();
      copy.write_bytes(0, 0, fifth.subspan(0, params.partition_bytes()));
      std::vector<std::uint8_t> both(views.size()), newly(views.size()), older(views.size());
      kernels::test_any(std::span(bitmaps).first(4), hashes, owned, older.data());
      kernels::test_and_set(copy.bitmap(), hashes, owned, newly.data());
      kernels::test_any_and_set(std::span(bitmaps).first(4), *bitmaps[4], hashes, owned,
                                both.data());
      for (std::size_t i = 0; i < both.size(); ++i) {
        ASSERT_EQ(both[i] & 1, older[i]) << i;
        ASSERT_EQ(both[i] >> 1, newly[i]) << i;
      }
      EXPECT_TRUE(std::equal(fifth.begin(), fifth.end(), copy.bytes().begin()));
      kernels::use_simd(before);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, StreamStores, ::testing::Values("memory", "file"));

TEST(StreamFile, ReopensRetiresOldSlicesAndDrops) {
  testing::TempDir dir;
  const std::string path = dir.file("w.rbf");
  DrivenClock time = shared_clock();
  const StreamOptions options = window_of(1000, 0.01, Layout::blocked);
  {
    Filter filter = Filter::create(Location::file(path), options, false, nullptr, time.clock());
    for (int second = 0; second < 12; ++second) {
      EXPECT_TRUE(filter.add(event(second)));
      time.now->fetch_add(kSecond);
    }
  }
  OpenOptions reopen;
  reopen.clock = time.clock();
  Filter again = Filter::open(Location::file(path), reopen);
  ASSERT_TRUE(again.info().stream);
  for (int second = 8; second < 12; ++second) EXPECT_TRUE(again.contains(event(second)));
  EXPECT_FALSE(again.add(event(11)));
  // Five live slices of one link each: five link files and the control file.
  std::size_t files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    files += entry.path().filename().string().rfind("w.rbf", 0) == 0;
  }
  EXPECT_EQ(files, 6u);
  // Stray link files (a writer killed between creating and publishing) go at the next rotation,
  // and so do a link's temporaries (a writer killed while making it).
  (void)Filter::create_file(path + ".s5.0", again.shape().params);
  { std::ofstream(path + ".s5.1.tmp.4242.7") << "half a link"; }
  { std::ofstream(path + ".s5.1.tmp.mine") << "the user's"; }
  time.now->fetch_add(kSecond);
  EXPECT_TRUE(again.add("next"));
  EXPECT_FALSE(std::filesystem::exists(path + ".s5.0"));
  EXPECT_FALSE(std::filesystem::exists(path + ".s5.1.tmp.4242.7"));
  ASSERT_TRUE(std::filesystem::remove(path + ".s5.1.tmp.mine"));
  { std::ofstream(path + ".s9.0.tmp.99.0") << "half a link"; }
  // Parameters: a stream is not a plain filter, nor a stream of other options.
  StreamOptions other = options;
  other.slices = 2;
  EXPECT_THROW((void)Filter::open(Location::file(path), OpenOptions::create_stream(other, true)),
               FilterExists);
  EXPECT_THROW(
      (void)Filter::open(Location::file(path), OpenOptions::create_missing(
                                                   size_filter(1000, 0.01, Layout::blocked), true)),
      FilterExists);
  Filter::drop(Location::file(path));
  expect_directory_empty(path);
}

// Four processes add the same items while the clock crosses a slice boundary and the slice
// grows: each item is new to exactly one of them.
TEST(StreamFile, ConcurrentWritersAcrossASliceBoundarySeeEachItemNewOnce) {
  testing::TempDir dir;
  const std::string path = dir.file("shared.rbf");
  DrivenClock time = shared_clock();
  time.now->store(kStart + kSecond - kSecond / 100);  // just before a boundary
  constexpr int kProcesses = 4;
  constexpr int kItems = 40000;
  // 10000 items a window, 2500 a slice: the 40000 shared items make the slice grow too.
  const StreamOptions options = window_of(10000, 0.001, Layout::blocked);
  (void)Filter::create(Location::file(path), options, false, nullptr, time.clock());
  std::vector<pid_t> children;
  for (int c = 0; c < kProcesses; ++c) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<int> order(kItems);
      for (int i = 0; i < kItems; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(c));
      OpenOptions open;
      open.clock = time.clock();
      Filter filter = Filter::open(Location::file(path), open);
      std::ofstream out(dir.file("new-" + std::to_string(c)));
      std::vector<std::uint8_t> fresh(64);
      for (int start = 0; start < kItems; start += 64) {
        std::vector<std::string> batch;
        for (int i = start; i < start + 64; ++i) batch.push_back(event(order[i]));
        const std::vector<std::string_view> views(batch.begin(), batch.end());
        filter.add_many(views, fresh);
        for (int i = 0; i < 64; ++i) {
          if (fresh[i]) out << order[start + i] << '\n';
        }
        // The child that passes the middle first moves the clock into the next slice.
        if (start >= kItems / 2) {
          std::uint64_t expected = kStart + kSecond - kSecond / 100;
          time.now->compare_exchange_strong(expected, kStart + kSecond + kSecond / 100);
        }
      }
      out.close();
      ::_exit(out ? 0 : 3);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  std::vector<int> seen(kItems, 0);
  for (int c = 0; c < kProcesses; ++c) {
    std::ifstream in(dir.file("new-" + std::to_string(c)));
    for (int i; in >> i;) ++seen[i];
  }
  // An item may be missed as new only as a false positive (target 0.001).
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](int n) { return n > 1; }), 0);
  EXPECT_LE(std::count(seen.begin(), seen.end(), 0), kItems / 200);
  OpenOptions open;
  open.clock = time.clock();
  const StreamInfo info = *Filter::open(Location::file(path), open).info().stream;
  EXPECT_GE(info.segments.size(), 3u) << "neither rotated nor grew";
  EXPECT_EQ(info.segments.front().slice + 1, info.segments.back().slice);
}

// A writer killed at any point while rotating and growing: the filter opens, and everything
// the writer was told was committed is present.
TEST(StreamFile, WriterKilledWhileRotatingAndGrowingLosesNothingReported) {
  for (int round = 0; round < 6; ++round) {
    testing::TempDir dir;
    const std::string path = dir.file("crash.rbf");
    DrivenClock time = shared_clock();
    (void)Filter::create(Location::file(path), window_of(400, 0.01, Layout::classic), false,
                         nullptr, time.clock());
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(pipe_fds[0]);
      OpenOptions open;
      open.clock = time.clock();
      Filter filter = Filter::open(Location::file(path), open);
      for (std::uint32_t batch = 0;; ++batch) {
        std::vector<std::string> items;
        for (int i = 0; i < 50; ++i) items.push_back(event(batch * 50 + i));
        const std::vector<std::string_view> views(items.begin(), items.end());
        filter.add_many(views);
        if (::write(pipe_fds[1], &batch, sizeof batch) != sizeof batch) ::_exit(4);
        time.now->fetch_add(kSecond / 7);  // rotations every ~7 batches, growth in between
      }
    }
    ::close(pipe_fds[1]);
    std::uint32_t last = 0, got = 0;
    for (std::uint32_t read_batches = 0; read_batches < 20u + 7u * round; ++read_batches) {
      ASSERT_EQ(::read(pipe_fds[0], &got, sizeof got), ssize_t(sizeof got));
      last = got;
    }
    ::usleep(static_cast<useconds_t>(round * 300));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    while (::read(pipe_fds[0], &got, sizeof got) == ssize_t(sizeof got)) last = got;
    ::close(pipe_fds[0]);
    OpenOptions open;
    open.clock = time.clock();
    Filter filter = Filter::open(Location::file(path), open);
    // The window is 4 s: batches reported in the last 4 s of the clock must all be present.
    const std::uint64_t now = time.now->load();
    std::vector<std::string> recent;
    for (std::uint32_t batch = 0; batch <= last; ++batch) {
      const std::uint64_t added = kStart + batch * (kSecond / 7);
      if (added + 4 * kSecond <= now) continue;
      for (int i = 0; i < 50; ++i) recent.push_back(event(batch * 50 + i));
    }
    ASSERT_FALSE(recent.empty());
    EXPECT_EQ(present_count(filter, recent), recent.size()) << "round " << round;
    EXPECT_NO_THROW(filter.add("after the crash"));
  }
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> names_in(const std::string& directory) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// Files a user may keep beside a windowed filter w.rbf: names near a link's, and an exact
// link name holding text or a filter of other parameters.
const std::vector<std::string> kUserSuffixes = {".s5.0",  ".s 12.3",   ".s+5.1", ".s-3.0",
                                                ".s05.0", ".s5.0.bak", ".s7.0"};

// Rotation and drop delete a link file only by its exact name and its header.
TEST(StreamFile, FilesNamedLikeLinksAreLeftUnlessTheyAreLinks) {
  testing::TempDir dir;
  const std::string path = dir.file("w.rbf");
  DrivenClock time = shared_clock();
  const StreamOptions options = window_of(1000, 0.01, Layout::blocked);
  Filter filter = Filter::create(Location::file(path), options, false, nullptr, time.clock());
  for (const std::string& suffix : kUserSuffixes) {
    if (suffix == ".s7.0") {
      (void)Filter::create_file(path + suffix, size_filter(50, 0.1, Layout::blocked));
    } else {
      std::ofstream(path + suffix) << "mine " << suffix << "\n";
    }
  }
  const auto content = [&](const std::string& suffix) { return read_whole(path + suffix); };
  std::vector<std::string> before;
  for (const std::string& suffix : kUserSuffixes) before.push_back(content(suffix));
  // A stray link (a writer killed before publishing it) is one: it goes.
  (void)Filter::create_file(path + ".s9.0", filter.shape().params);
  for (int second = 0; second < 8; ++second) {
    EXPECT_TRUE(filter.add(event(second)));
    time.now->fetch_add(kSecond);
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".s9.0"));
  for (std::size_t i = 0; i < kUserSuffixes.size(); ++i) {
    EXPECT_TRUE(content(kUserSuffixes[i]) == before[i]) << "rotation took " << kUserSuffixes[i];
  }
  Filter::drop(Location::file(path));
  std::set<std::string> expected;
  for (const std::string& suffix : kUserSuffixes) expected.insert("w.rbf" + suffix);
  EXPECT_EQ(names_in(std::filesystem::path(path).parent_path().string()), expected);
  for (std::size_t i = 0; i < kUserSuffixes.size(); ++i) {
    EXPECT_TRUE(content(kUserSuffixes[i]) == before[i]) << "drop took " << kUserSuffixes[i];
  }
}

// A file where a new link must go is replaced only if it is a stray link; anything else stops
// the batch there, naming the file, with what was added said.
TEST(StreamFile, AUserFileWhereALinkMustGoIsAnErrorNamingIt) {
  testing::TempDir dir;
  StreamOptions growing;
  growing.capacity = 100;
  growing.error_rate = 0.01;
  growing.growth = 2;
  std::vector<std::string> items;
  for (int i = 0; i < 1000; ++i) items.push_back(event(i));
  const std::vector<std::string_view> views(items.begin(), items.end());

  const std::string path = dir.file("g.rbf");
  Filter filter = Filter::create(Location::file(path), growing);
  { std::ofstream(path + ".s0.1") << "mine\n"; }
  std::vector<std::uint8_t> fresh(views.size());
  std::size_t committed = 0;
  try {
    filter.add_many(views, fresh);
    ADD_FAILURE() << "grew over a user's file";
  } catch (const CapacityExceeded& e) {
    ADD_FAILURE() << "not a capacity limit: " << e.what();
  } catch (const IncompleteWrite& e) {
    committed = e.committed();
    EXPECT_NE(std::string(e.what()).find(path + ".s0.1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in the way"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(read_whole(path + ".s0.1") == "mine\n") << "the user's file was replaced";
  // Link 0 took 100 new items; the items it answered present took no room.
  EXPECT_GE(committed, 100u);
  EXPECT_LE(committed, 110u);
  const std::vector<std::string> added(items.begin(), items.begin() + committed);
  EXPECT_EQ(present_count(filter, added), added.size());
  // Moved away, the link is made and the rest goes in.
  std::filesystem::rename(path + ".s0.1", dir.file("mine.txt"));
  EXPECT_NO_THROW(filter.add_many(std::span(views).subspan(committed)));
  EXPECT_EQ(present_count(filter, items), items.size());

  // A stray link in the way (a writer killed before publishing it) is replaced.
  const std::string other = dir.file("h.rbf");
  Filter second = Filter::create(Location::file(other), growing);
  (void)Filter::create_file(other + ".s0.1", StreamShape(growing).link_params(1));
  EXPECT_NO_THROW(second.add_many(views));

  // A windowed filter: the user's file at the next slice's first link.
  const std::string windowed = dir.file("w.rbf");
  DrivenClock time = shared_clock();
  Filter window = Filter::create(Location::file(windowed), window_of(1000, 0.01, Layout::blocked),
                                 false, nullptr, time.clock());
  EXPECT_TRUE(window.add("first"));
  const std::string next_slice =
      stream_manifest::link_path(windowed, static_cast<std::int64_t>(kStart / kSecond + 1), 0);
  { std::ofstream(next_slice) << "mine\n"; }
  time.now->fetch_add(kSecond);
  try {
    window.add_many(views);
    ADD_FAILURE() << "made a slice over a user's file";
  } catch (const IncompleteWrite& e) {
    EXPECT_EQ(e.committed(), 0u);
    EXPECT_NE(std::string(e.what()).find(next_slice), std::string::npos) << e.what();
  }
  EXPECT_TRUE(read_whole(next_slice) == "mine\n") << "the user's file was replaced";
  EXPECT_TRUE(window.contains("first"));
}

bool write_text(const char* file, const std::string& text) {
  const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  return written;
}

// Mounts a tmpfs of `bytes` at `directory` in a user and mount namespace of this process's own
// (what `unshare -rm` makes: no privilege needed, nothing outside sees it). The caller must be
// single-threaded: a forked child.
bool mount_small_tmpfs(const std::string& directory, std::uint64_t bytes) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  (void)write_text("/proc/self/setgroups", "deny");  // absent on kernels that need no deny
  if (!write_text("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
      !write_text("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
    return false;
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  const std::string size = "size=" + std::to_string(bytes);
  return ::mount("tmpfs", directory.c_str(), "tmpfs", 0, size.c_str()) == 0;
}

// Resizes the tmpfs at `directory` to what its files take now plus `bytes`.
void leave_room(const std::string& directory, std::uint64_t bytes) {
  struct statvfs fs {};
  ASSERT_EQ(::statvfs(directory.c_str(), &fs), 0);
  const std::uint64_t used = std::uint64_t(fs.f_blocks - fs.f_bfree) * fs.f_frsize;
  const std::string size = "size=" + std::to_string(used + bytes);
  ASSERT_EQ(::mount(nullptr, directory.c_str(), nullptr, MS_REMOUNT, size.c_str()), 0)
      << std::strerror(errno);
}

// Runs `body` in a child process that has a tmpfs of `bytes` at `directory`; the test fails if
// the tmpfs cannot be mounted or an expectation in `body` fails.
void on_small_tmpfs(const std::string& directory, std::uint64_t bytes,
                    const std::function<void()>& body) {
  std::filesystem::create_directory(directory);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!mount_small_tmpfs(directory, bytes)) {
      std::fprintf(stderr, "cannot mount a tmpfs at %s: %s\n", directory.c_str(),
                   std::strerror(errno));
      std::fflush(nullptr);
      ::_exit(100);
    }
    try {
      body();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unexpected exception: " << e.what();
    }
    std::fflush(nullptr);
    ::_exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child ended by signal " << WTERMSIG(status);
  ASSERT_NE(WEXITSTATUS(status), 100)
      << "a small tmpfs could not be mounted in a user and mount namespace (as `unshare -rm` "
         "does): this test needs unprivileged user namespaces";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "expectations failed in the child (above)";
}

std::uint64_t pages(std::uint64_t bytes) {
  return (bytes + 4095) / 4096 * 4096;
}

std::uint64_t link_file_bytes(const StreamShape& shape, std::uint32_t link) {
  return pages(kFileHeaderBytes + shape.link_params(link).total_bytes());
}

// A full disk while a growing filter makes its next link: an IncompleteWrite whose count is
// exact (a replay of the items before it gives the same answers and the same bits), the
// filter left sound, no file of the failed link left behind.
TEST(StreamFile, FullDiskWhileGrowingSaysExactlyWhatWasAdded) {
  testing::TempDir dir;
  StreamOptions options;
  options.capacity = 1000;
  options.error_rate = 0.01;
  options.growth = 2;
  const StreamShape shape(options);
  const std::string small = dir.file("small");
  on_small_tmpfs(small, 1 << 20, [&] {
    const std::string path = small + "/g.rbf";
    Filter filter = Filter::create(Location::file(path), options);
    // Room for links 0 and 1, not link 2.
    leave_room(small, link_file_bytes(shape, 0) + link_file_bytes(shape, 1) +
                          link_file_bytes(shape, 2) / 2);
    std::vector<std::string> items;
    for (int i = 0; i < 5000; ++i) items.push_back(event(i));
    const std::vector<std::string_view> views(items.begin(), items.end());
    std::vector<std::uint8_t> fresh(views.size());
    std::size_t committed = 0;
    try {
      filter.add_many(views, fresh);
      ADD_FAILURE() << "no error on a full disk";
    } catch (const CapacityExceeded& e) {
      ADD_FAILURE() << "a full disk is not the byte limit: " << e.what();
    } catch (const IncompleteWrite& e) {
      committed = e.committed();
      EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos)
          << e.what();
    }
    // Links 0 and 1 hold 3000 new items: the stop comes in a later chunk than the store's first.
    ASSERT_GE(committed, 3000u);
    Filter replay = Filter::create(Location::memory(), options);
    std::vector<std::uint8_t> replayed(committed);
    replay.add_many(std::span(views).first(committed), replayed);
    EXPECT_TRUE(std::equal(replayed.begin(), replayed.end(), fresh.begin()));
    EXPECT_EQ(filter.info().set_bits, replay.info().set_bits) << "items past the count were set";
    EXPECT_TRUE(replay.add(items[committed])) << "it stopped at an item that needed no link";
    Filter again = Filter::open(Location::file(path));
    const std::vector<std::string> added(items.begin(), items.begin() + committed);
    EXPECT_EQ(present_count(again, added), added.size());
    EXPECT_EQ(names_in(small), (std::set<std::string>{"g.rbf", "g.rbf.s0.0", "g.rbf.s0.1"}));
  });
}

// A full disk when a windowed filter starts a slice: nothing of the batch is added and it says
// so (IncompleteWrite, 0 committed); what the older slices hold stays.
TEST(StreamFile, FullDiskWhileRotatingAddsNothingAndSaysSo) {
  testing::TempDir dir;
  const StreamOptions options = window_of(1000, 0.01, Layout::blocked);
  const StreamShape shape(options);
  const std::string small = dir.file("small");
  on_small_tmpfs(small, 1 << 20, [&] {
    const std::string path = small + "/w.rbf";
    DrivenClock time = shared_clock();
    Filter filter = Filter::create(Location::file(path), options, false, nullptr, time.clock());
    // Room for two slices' links, not a third.
    leave_room(small, 2 * link_file_bytes(shape, 0) + link_file_bytes(shape, 0) / 2);
    std::vector<std::string> items;
    for (int i = 0; i < 300; ++i) items.push_back(event(i));
    const std::vector<std::string_view> views(items.begin(), items.end());
    filter.add_many(std::span(views).first(100));
    time.now->fetch_add(kSecond);
    filter.add_many(std::span(views).subspan(100, 100));
    time.now->fetch_add(kSecond);
    std::vector<std::uint8_t> fresh(100);
    try {
      filter.add_many(std::span(views).subspan(200), fresh);
      ADD_FAILURE() << "no error on a full disk";
    } catch (const CapacityExceeded& e) {
      ADD_FAILURE() << "a full disk is not the byte limit: " << e.what();
    } catch (const IncompleteWrite& e) {
      EXPECT_EQ(e.committed(), 0u);
      EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos)
          << e.what();
    }
    const std::vector<std::string> held(items.begin(), items.begin() + 200);
    const std::vector<std::string> refused(items.begin() + 200, items.end());
    EXPECT_EQ(present_count(filter, held), held.size());
    EXPECT_LE(present_count(filter, refused), 3u);  // false positives only
    EXPECT_EQ(names_in(small).size(), 3u);          // the control file and two links
  });
}

// The control file is allocated whole when created: publishing a manifest later never needs a
// block a full disk cannot give.
TEST(StreamFile, ControlFileIsAllocatedWhole) {
  testing::TempDir dir;
  const std::string path = dir.file("w.rbf");
  (void)Filter::create(Location::file(path), window_of(1000, 0.01, Layout::blocked));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GE(static_cast<std::uint64_t>(st.st_blocks) * 512, stream_manifest::kFileBytes);
}

// A drop that stopped part-way (some link files deleted, the control file not yet): the filter
// says what is missing, and drop and create --force still clear it.
TEST(StreamFile, ADropThatStoppedPartWayIsFinishedByDropOrReplaced) {
  testing::TempDir dir;
  const std::string path = dir.file("w.rbf");
  DrivenClock time = shared_clock();
  const StreamOptions options = window_of(1000, 0.01, Layout::blocked);
  for (const bool by_drop : {true, false}) {
    SCOPED_TRACE(by_drop ? "drop" : "create --force");
    const std::uint64_t first_slice = time.now->load() / kSecond;  // slices of a second
    {
      Filter filter = Filter::create(Location::file(path), options, true, nullptr, time.clock());
      for (int second = 0; second < 3; ++second) {
        EXPECT_TRUE(filter.add(event(second)));
        time.now->fetch_add(kSecond);
      }
    }
    ASSERT_TRUE(std::filesystem::remove(path + ".s" +
                                        std::to_string(first_slice + (by_drop ? 1 : 0)) + ".0"));
    OpenOptions reopen;
    reopen.clock = time.clock();
    try {
      (void)Filter::open(Location::file(path), reopen);
      ADD_FAILURE() << "opened with a link file missing";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("redbloom drop removes what is left"), std::string::npos)
          << e.what();
    }
    if (by_drop) {
      Filter::drop(Location::file(path));
    } else {
      Filter fresh = Filter::create(Location::file(path), options, true, nullptr, time.clock());
      EXPECT_FALSE(fresh.contains(event(0)));
      fresh = Filter::create(Location::file(path), size_filter(10, 0.01, Layout::blocked), true);
      Filter::drop(Location::file(path));
    }
    expect_directory_empty(path);
  }
}

// A filter made again at the path of one a writer still has open (create --force): that
// writer's next add stops, saying so, and never deletes the new filter's link files, whose
// names are the same.
TEST(StreamFile, AWriterWhoseFilterWasMadeAgainStopsAndLeavesTheNewOneAlone) {
  testing::TempDir dir;
  const std::string path = dir.file("w.rbf");
  DrivenClock time = shared_clock();
  const StreamOptions options = window_of(1000, 0.01, Layout::blocked);
  OpenOptions both;
  both.clock = time.clock();
  Filter old = Filter::create(Location::file(path), options, false, nullptr, time.clock());
  EXPECT_TRUE(old.add("old"));
  Filter made_again = Filter::create(Location::file(path), options, true, nullptr, time.clock());
  std::vector<std::string> theirs;
  for (int second = 0; second < 6; ++second) {
    theirs.push_back(event(second));
    EXPECT_TRUE(made_again.add(theirs.back()));
    time.now->fetch_add(kSecond);
  }
  try {
    (void)old.add("rotating");
    ADD_FAILURE() << "added to a filter that is no longer at its path";
  } catch (const IncompleteWrite& e) {
    EXPECT_EQ(e.committed(), 0u);
    EXPECT_NE(std::string(e.what()).find("made again"), std::string::npos) << e.what();
  }
  Filter reader = Filter::open(Location::file(path), both);
  // The clock is now in the slice after the last add's: the window holds the last four.
  const std::vector<std::string> live(theirs.begin() + 2, theirs.end());
  EXPECT_EQ(present_count(reader, live), live.size());
}

// Opening a link file fails part-way through bringing a handle up to date (here: no file
// descriptor left): the add says so, and the handle stays whole: it flushes and adds again.
TEST(StreamFile, AWriterThatCannotOpenANewLinkStaysUsable) {
  testing::TempDir dir;
  const std::string path = dir.file("w.rbf");
  DrivenClock time = shared_clock();
  const StreamOptions options = window_of(1000, 0.01, Layout::blocked);
  OpenOptions both;
  both.clock = time.clock();
  Filter writer = Filter::create(Location::file(path), options, false, nullptr, time.clock());
  EXPECT_TRUE(writer.add("first"));
  Filter other = Filter::open(Location::file(path), both);
  time.now->fetch_add(kSecond);
  EXPECT_TRUE(other.add("second"));  // a new slice, whose link file `writer` has not opened
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const int lowest_free = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit tight = limit;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  bool failed = false;
  try {
    (void)writer.add("third");
  } catch (const Error&) {
    failed = true;
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_TRUE(failed) << "the new link file opened with no descriptor left";
  writer.flush();
  EXPECT_TRUE(writer.contains("second"));
  EXPECT_TRUE(writer.add("third"));
  EXPECT_FALSE(writer.add("first"));
}

}  // namespace
}  // namespace redbloom
