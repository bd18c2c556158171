// The file companion: `<filter>.exact`, a 16-byte header then 8-byte little-endian
// fingerprints, appended under an exclusive flock and read whole at open.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"

namespace redbloom {
namespace {

constexpr char kMagic[8] = {'R', 'B', 'E', 'X', 'A', 'C', 'T', '1'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 16;
constexpr double kTwoTo64 = 18446744073709551616.0;

std::string companion_path(const std::string& filter_path) {
  return filter_path + ".exact";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

void write_all(int fd, const void* data, std::size_t size, const std::string& path) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw StorageError(errno_message("cannot write " + path));
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Reads bytes [from, from + size) of the file.
std::vector<std::uint8_t> read_range(int fd, std::uint64_t from, std::uint64_t size,
                                     const std::string& path) {
  std::vector<std::uint8_t> bytes(size);
  std::uint64_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(from + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw StorageError(errno_message("cannot read " + path));
    if (n == 0) throw FormatError(path + ": shorter than its size");
    done += static_cast<std::uint64_t>(n);
  }
  return bytes;
}

std::uint64_t file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw StorageError(errno_message("cannot stat " + path));
  return static_cast<std::uint64_t>(st.st_size);
}

class FlockGuard {
 public:
  FlockGuard(int fd, const std::string& path) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) throw StorageError(errno_message("cannot lock " + path));
    }
  }
  ~FlockGuard() { ::flock(fd_, LOCK_UN); }
  FlockGuard(const FlockGuard&) = delete;
  FlockGuard& operator=(const FlockGuard&) = delete;

 private:
  int fd_;
};

class FileExactSet final : public ExactSet {
 public:
  FileExactSet(std::string path, int fd) : path_(std::move(path)), fd_(fd) {
    const std::uint64_t size = file_size(fd_.get(), path_);
    if (size < kHeaderBytes) throw FormatError(path_ + ": not an exact set (too short)");
    const auto header = read_range(fd_.get(), 0, kHeaderBytes, path_);
    if (std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) {
      throw FormatError(path_ + ": not a redbloom exact set (no RBEXACT1 signature)");
    }
    std::uint32_t version = 0;
    std::memcpy(&version, header.data() + 8, sizeof version);
    if (version != kVersion) {
      throw FormatError(path_ + ": exact-set version " + std::to_string(version) +
                        " is unknown to this redbloom");
    }
    catch_up(size);
  }

  std::size_t add(std::span<const std::string_view> items) override {
    std::vector<std::uint64_t> fresh;
    fresh.reserve(items.size());
    for (std::string_view item : items) fresh.push_back(exact_fingerprint(item));
    std::sort(fresh.begin(), fresh.end());
    fresh.erase(std::unique(fresh.begin(), fresh.end()), fresh.end());
    FlockGuard lock(fd_.get(), path_);
    // Other writers may have appended since: read their records first, so that no item is
    // stored twice by two processes taking turns.
    catch_up(file_size(fd_.get(), path_));
    std::erase_if(fresh, [&](std::uint64_t f) { return has(f); });
    if (fresh.empty()) return 0;
    std::vector<std::uint8_t> records(fresh.size() * 8);
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      for (int b = 0; b < 8; ++b)
        records[i * 8 + b] = static_cast<std::uint8_t>(fresh[i] >> (8 * b));
    }
    if (::lseek(fd_.get(), 0, SEEK_END) < 0)
      throw StorageError(errno_message("cannot seek " + path_));
    write_all(fd_.get(), records.data(), records.size(), path_);
    known_size_ += records.size();
    merge(fresh);
    return fresh.size();
  }

  void contains(std::span<const std::string_view> items, std::span<std::uint8_t> present) override {
    if (present.size() < items.size()) throw InvalidArgument("exact set: flag span too small");
    for (std::size_t i = 0; i < items.size(); ++i) present[i] = has(exact_fingerprint(items[i]));
  }

  void clear() override {
    FlockGuard lock(fd_.get(), path_);
    if (::ftruncate(fd_.get(), kHeaderBytes) != 0) {
      throw StorageError(errno_message("cannot truncate " + path_));
    }
    sorted_.clear();
    known_size_ = kHeaderBytes;
  }

  void flush() override {
    if (::fsync(fd_.get()) != 0) throw StorageError(errno_message("cannot sync " + path_));
  }

  [[nodiscard]] std::uint64_t entries() const override { return sorted_.size(); }
  [[nodiscard]] std::uint64_t storage_bytes() const override { return file_size(fd_.get(), path_); }
  [[nodiscard]] double false_match_probability() const override {
    return static_cast<double>(sorted_.size()) / kTwoTo64;
  }
  [[nodiscard]] std::string location() const override { return "file " + path_; }

 private:
  [[nodiscard]] bool has(std::uint64_t f) const {
    return std::binary_search(sorted_.begin(), sorted_.end(), f);
  }
  void merge(const std::vector<std::uint64_t>& more) {
    const auto middle = static_cast<std::ptrdiff_t>(sorted_.size());
    sorted_.insert(sorted_.end(), more.begin(), more.end());
    std::inplace_merge(sorted_.begin(), sorted_.begin() + middle, sorted_.end());
  }
  // Reads the records between what this object has seen and `size`.
  void catch_up(std::uint64_t size) {
    if (known_size_ == 0) known_size_ = kHeaderBytes;
    if (size == known_size_) return;
    if ((size - kHeaderBytes) % 8 != 0) {
      throw FormatError(path_ +
                        ": ends in a partial record (an interrupted write?); rebuild it "
                        "with --exact --force");
    }
    const auto bytes = read_range(fd_.get(), known_size_, size - known_size_, path_);
    std::vector<std::uint64_t> more(bytes.size() / 8);
    for (std::size_t i = 0; i < more.size(); ++i) {
      std::uint64_t f = 0;
      for (int b = 7; b >= 0; --b) f = (f << 8) | bytes[i * 8 + b];
      more[i] = f;
    }
    std::sort(more.begin(), more.end());
    merge(more);
    known_size_ = size;
  }

  std::string path_;
  Fd fd_;
  std::uint64_t known_size_ = 0;
  std::vector<std::uint64_t> sorted_;
};

}  // namespace

std::unique_ptr<ExactSet> create_file_exact_set(const std::string& filter_path, bool overwrite) {
  const std::string path = companion_path(filter_path);
  const int flags = O_RDWR | O_CREAT | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL);
  Fd fd(::open(path.c_str(), flags, 0644));
  if (fd.get() < 0) {
    if (errno == EEXIST) {
      throw FilterExists("exact set " + path + " already exists (use --force to replace it)");
    }
    throw StorageError(errno_message("cannot create " + path));
  }
  std::uint8_t header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  std::memcpy(header + 8, &kVersion, sizeof kVersion);
  write_all(fd.get(), header, sizeof header, path);
  return std::make_unique<FileExactSet>(path, fd.release());
}

std::unique_ptr<ExactSet> open_file_exact_set(const std::string& filter_path) {
  const std::string path = companion_path(filter_path);
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      throw NotFound("filter " + filter_path + " has no exact set (" + path +
                     "): build one with add or load --exact");
    }
    throw StorageError(errno_message("cannot open " + path));
  }
  return std::make_unique<FileExactSet>(path, fd.release());
}

bool file_exact_set_exists(const std::string& filter_path) {
  struct stat st {};
  return ::stat(companion_path(filter_path).c_str(), &st) == 0;
}

void remove_file_exact_set(const std::string& filter_path) {
  const std::string path = companion_path(filter_path);
  (void)open_file_exact_set(filter_path);  // never delete a file that is not one
  if (::unlink(path.c_str()) != 0) throw StorageError(errno_message("cannot delete " + path));
}

}  // namespace redbloom
