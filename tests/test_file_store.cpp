#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/file_format.hpp"
#include "error_of.hpp"
#include "local/file_store.hpp"
#include "local/memory_store.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "temp_dir.hpp"

namespace redbloom {
namespace {

using redbloom::testing::error_of;
using testing::TempDir;

std::vector<std::string> make_items(int count, const std::string& prefix) {
  std::vector<std::string> items;
  for (int i = 0; i < count; ++i) items.push_back(prefix + std::to_string(i));
  return items;
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(FileStore, RoundTripsAndMatchesMemoryByteForByte) {
  TempDir dir;
  const std::string path = dir.file("f.rbf");
  const FilterParams params = size_filter(50000, 0.01, Layout::blocked, 4096);
  const auto items = make_items(50000, "url-");
  const std::vector<std::string_view> views(items.begin(), items.end());
  {
    Filter filter = Filter::create_file(path, params);
    // A fresh filter reports every item new except the rare false positive.
    EXPECT_GT(filter.add_many(views), 49000u);
    filter.flush();
  }
  Filter memory = Filter::in_memory(params);
  memory.add_many(views);
  Filter reopened = Filter::open_file(path, FileAccess::read_only);
  EXPECT_EQ(reopened.params(), params);
  EXPECT_EQ(reopened.contains_many(views), items.size());
  const auto& file_bytes = dynamic_cast<FileStore&>(reopened.store()).bytes();
  const auto& memory_bytes = dynamic_cast<MemoryStore&>(memory.store()).bytes();
  ASSERT_EQ(file_bytes.size(), memory_bytes.size());
  EXPECT_TRUE(std::equal(file_bytes.begin(), file_bytes.end(), memory_bytes.begin()));
  EXPECT_EQ(reopened.info().set_bits, memory.info().set_bits);
  // The bitmap starts on a page boundary after the header.
  EXPECT_EQ(read_file(path).size(), kFileHeaderBytes + params.total_bytes());
}

// A memory filter of a few MiB (a windowed filter's slice) is mapped in whole 2 MiB pages from
// a 2 MiB boundary, the only memory the kernel backs with huge pages; one that would grow by
// more than an eighth keeps its size. Its bits work the same either way.
TEST(MemoryStore, AFilterOfAFewMiBIsMappedInWholeHugePages) {
  constexpr std::uint64_t kHuge = std::uint64_t{2} << 20;
  const FilterParams near = size_filter(1.6e6, 0.01, Layout::blocked);
  const FilterParams small = size_filter(8e5, 0.01, Layout::blocked);
  ASSERT_GT(near.total_bytes(), kHuge * 7 / 8);
  ASSERT_LT(near.total_bytes(), kHuge);
  ASSERT_LT(small.total_bytes(), kHuge * 7 / 8);
  const auto items = make_items(1000, "item-");
  const std::vector<std::string_view> views(items.begin(), items.end());
  for (const FilterParams* shape : {&near, &small}) {
    const FilterParams& params = *shape;
    Filter filter = Filter::in_memory(params);
    auto& store = dynamic_cast<MemoryStore&>(filter.store());
    if (shape == &near) {
      EXPECT_EQ(store.storage_bytes(), kHuge);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(store.bytes().data()) % kHuge, 0u);
    } else {
      EXPECT_EQ(store.storage_bytes(), params.total_bytes());
    }
    EXPECT_EQ(store.bytes().size(), params.total_bytes());
    EXPECT_GT(filter.add_many(views), 990u);
    EXPECT_EQ(filter.contains_many(views), items.size());
  }
}

TEST(FileStore, CreateRefusesAnExistingFilterUnlessForced) {
  TempDir dir;
  const std::string path = dir.file("f.rbf");
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  { Filter::create_file(path, params).add("x"); }
  EXPECT_THROW((void)Filter::create_file(path, params), FilterExists);
  EXPECT_TRUE(Filter::open_file(path).contains("x"));  // untouched by the refused create
  { (void)Filter::create_file(path, params, /*overwrite=*/true); }
  EXPECT_FALSE(Filter::open_file(path).contains("x"));
}

TEST(FileStore, ClearErrorsForMissingReadOnlyAndForeignFiles) {
  TempDir dir;
  EXPECT_NE(error_of([&] { (void)Filter::open_file(dir.file("none.rbf")); }).find("does not exist"),
            std::string::npos);
  const std::string path = dir.file("f.rbf");
  { (void)Filter::create_file(path, size_filter(1000, 0.01, Layout::classic)); }
  Filter read_only = Filter::open_file(path, FileAccess::read_only);
  EXPECT_NE(error_of([&] { read_only.add("x"); }).find("read-only"), std::string::npos);

  const std::string text = dir.file("notes.txt");
  write_file(text, {'h', 'e', 'l', 'l', 'o'});
  EXPECT_NE(error_of([&] { (void)Filter::open_file(text); }).find("not a redbloom filter"),
            std::string::npos);
  EXPECT_THROW(FileStore::remove(text), FormatError);
  EXPECT_EQ(read_file(text).size(), 5u);  // drop never deletes a foreign file
  FileStore::remove(path);
  EXPECT_THROW((void)Filter::open_file(path), NotFound);
}

class CorruptFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("f.rbf");
    { (void)Filter::create_file(path_, size_filter(1000, 0.01, Layout::classic)); }
    bytes_ = read_file(path_);
  }
  std::string open_error() {
    write_file(path_, bytes_);
    return error_of([&] { (void)Filter::open_file(path_); });
  }
  TempDir dir_;
  std::string path_;
  std::vector<char> bytes_;
};

TEST_F(CorruptFile, Truncated) {
  bytes_.resize(bytes_.size() - 1);
  EXPECT_NE(open_error().find("truncated"), std::string::npos);
  bytes_.resize(50);
  EXPECT_NE(open_error().find("truncated"), std::string::npos);
  bytes_.resize(0);
  EXPECT_NE(open_error().find("not a redbloom filter"), std::string::npos);
}

TEST_F(CorruptFile, FlippedHeaderByte) {
  bytes_[40] ^= 1;
  EXPECT_NE(open_error().find("checksum"), std::string::npos);
}

TEST_F(CorruptFile, TrailingGarbage) {
  bytes_.push_back('x');
  EXPECT_NE(open_error().find("corrupt"), std::string::npos);
}

// Re-encodes a header with one field changed, as a newer or foreign writer would.
std::vector<char> with_header(const std::vector<char>& bytes, FileHeader header) {
  const auto encoded = encode_file_header(header);
  std::vector<char> out = bytes;
  std::copy(encoded.begin(), encoded.end(), out.begin());
  return out;
}

TEST_F(CorruptFile, UnknownHashSchemeIsRefusedByName) {
  FileHeader header = parse_file_header(
      {reinterpret_cast<const std::uint8_t*>(bytes_.data()), kFileHeaderBytes}, bytes_.size());
  header.params.hash_scheme = 2;
  bytes_ = with_header(bytes_, header);
  const std::string error = open_error();
  EXPECT_NE(error.find("hash scheme 2 is unknown"), std::string::npos) << error;
}

TEST_F(CorruptFile, UnknownFormatVersion) {
  bytes_[8] = 9;
  EXPECT_NE(open_error().find("format version 9"), std::string::npos);
}

TEST(FileStore, ExclusiveWriterHoldsTheLockUntilClosed) {
  TempDir dir;
  const std::string path = dir.file("f.rbf");
  { (void)Filter::create_file(path, size_filter(1000, 0.01, Layout::blocked)); }
  int ready[2];
  int release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Filter exclusive = Filter::open_file(path, FileAccess::exclusive_write);
    exclusive.add("from the exclusive writer");
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    if (read(release[0], &c, 1) != 1) _exit(3);
    _exit(0);  // the lock goes with the process
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  // While the exclusive writer lives, another writer's lock attempt fails at once (F_OFD_SETLK).
  Filter shared = Filter::open_file(path, FileAccess::read_only);
  const int fd = ::open(path.c_str(), O_RDWR);
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  probe.l_len = 1;
  EXPECT_NE(fcntl(fd, F_OFD_SETLK, &probe), 0);
  EXPECT_TRUE(shared.contains("from the exclusive writer"));  // readers never wait
  ASSERT_EQ(write(release[1], "x", 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(fcntl(fd, F_OFD_SETLK, &probe), 0);  // free again
  ::close(fd);
  Filter writer = Filter::open_file(path);
  EXPECT_TRUE(writer.add("after"));
}

TEST(FileStore, KillDuringWritesLeavesAConsistentFile) {
  // Writes through the shared mapping are in the page cache the moment they are made: a
  // process killed without flush() loses nothing that add() had returned.
  TempDir dir;
  const std::string path = dir.file("f.rbf");
  { (void)Filter::create_file(path, size_filter(100000, 0.01, Layout::classic)); }
  const auto items = make_items(20000, "k-");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Filter filter = Filter::open_file(path);
    for (const auto& item : items) filter.add(item);
    raise(SIGKILL);  // no flush, no destructors
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  Filter filter = Filter::open_file(path, FileAccess::read_only);
  const std::vector<std::string_view> views(items.begin(), items.end());
  EXPECT_EQ(filter.contains_many(views), items.size());
}

}  // namespace
}  // namespace redbloom
