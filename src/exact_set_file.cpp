// The file companion: `<filter>.exact`, a 16-byte header (magic, version, and a generation
// that clear() bumps) then 8-byte little-endian fingerprints, appended under an exclusive flock
// and read whole at open, under a shared one. Each object catches up with what other objects
// appended (or rereads the file after their clear) before it adds or answers.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "posix_file.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"

namespace redbloom {
namespace {

using posix::Fd;
using posix::file_size;

constexpr char kMagic[8] = {'R', 'B', 'E', 'X', 'A', 'C', 'T', '1'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 16;
// Bytes 12..15: how many times the set was cleared (written as 0 by create).
constexpr std::size_t kGenerationOffset = 12;
constexpr double kTwoTo64 = 18446744073709551616.0;

std::string companion_path(const std::string& filter_path) {
  return filter_path + ".exact";
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

std::uint32_t read_generation(int fd, const std::string& path) {
  const auto bytes = read_range(fd, kGenerationOffset, 4, path);
  std::uint32_t generation = 0;
  for (int b = 3; b >= 0; --b) generation = (generation << 8) | bytes[b];
  return generation;
}

// Throws FormatError unless the file starts with an exact set's header.
void check_header(int fd, const std::string& path) {
  if (file_size(fd, path) < kHeaderBytes)
    throw FormatError(path + ": not an exact set (too short)");
  const auto header = read_range(fd, 0, kHeaderBytes, path);
  if (std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) {
    throw FormatError(path + ": not a redbloom exact set (no RBEXACT1 signature)");
  }
  std::uint32_t version = 0;
  for (int b = 3; b >= 0; --b) version = (version << 8) | header[8 + b];
  if (version != kVersion) {
    throw FormatError(path + ": exact-set version " + std::to_string(version) +
                      " is unknown to this redbloom");
  }
}

class FlockGuard {
 public:
  // `operation`: LOCK_EX for writers, LOCK_SH for readers.
  FlockGuard(int fd, const std::string& path, int operation = LOCK_EX) : fd_(fd) {
    while (::flock(fd_, operation) != 0) {
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
    // Shared: a writer's append is never seen in part.
    FlockGuard lock(fd_.get(), path_, LOCK_SH);
    check_header(fd_.get(), path_);
    refresh();
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
    refresh();
    std::erase_if(fresh, [&](std::uint64_t f) { return has(f); });
    if (fresh.empty()) return 0;
    std::vector<std::uint8_t> records(fresh.size() * 8);
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      for (int b = 0; b < 8; ++b)
        records[i * 8 + b] = static_cast<std::uint8_t>(fresh[i] >> (8 * b));
    }
    // Under the lock, after the catch-up: known_size_ is the end of the file.
    posix::write_at(fd_.get(), records.data(), records.size(), known_size_, path_);
    known_size_ += records.size();
    merge(fresh);
    return fresh.size();
  }

  void contains(std::span<const std::string_view> items, std::span<std::uint8_t> present) override {
    if (present.size() < items.size()) throw InvalidArgument("exact set: flag span too small");
    // An item another process added to the filter since this set was read is in the file by
    // now (the companion is written first): read it, or it would be called missing.
    refresh_if_changed();
    for (std::size_t i = 0; i < items.size(); ++i) present[i] = has(exact_fingerprint(items[i]));
  }

  void clear() override {
    FlockGuard lock(fd_.get(), path_);
    // A new generation tells other objects on the file to reread it, even once it has grown
    // past the size they had read.
    const std::uint32_t generation = read_generation(fd_.get(), path_) + 1;
    std::uint8_t bytes[4];
    for (int b = 0; b < 4; ++b) bytes[b] = static_cast<std::uint8_t>(generation >> (8 * b));
    if (::pwrite(fd_.get(), bytes, sizeof bytes, kGenerationOffset) != sizeof bytes) {
      throw StorageError(errno_message("cannot write " + path_));
    }
    if (::ftruncate(fd_.get(), kHeaderBytes) != 0) {
      throw StorageError(errno_message("cannot truncate " + path_));
    }
    sorted_.clear();
    known_size_ = kHeaderBytes;
    generation_ = generation;
  }

  void flush() override {
    if (::fsync(fd_.get()) != 0) throw StorageError(errno_message("cannot sync " + path_));
  }

  [[nodiscard]] std::uint64_t entries() const override {
    refresh_if_changed();
    return sorted_.size();
  }
  [[nodiscard]] std::uint64_t storage_bytes() const override { return file_size(fd_.get(), path_); }
  [[nodiscard]] double false_match_probability() const override {
    return static_cast<double>(entries()) / kTwoTo64;
  }
  [[nodiscard]] std::string location() const override { return "file " + path_; }

 private:
  [[nodiscard]] bool has(std::uint64_t f) const {
    return std::binary_search(sorted_.begin(), sorted_.end(), f);
  }
  void merge(const std::vector<std::uint64_t>& more) const {
    const auto middle = static_cast<std::ptrdiff_t>(sorted_.size());
    sorted_.insert(sorted_.end(), more.begin(), more.end());
    std::inplace_merge(sorted_.begin(), sorted_.begin() + middle, sorted_.end());
  }
  // With no lock held: refresh() if the file is not what this object read (a cheap check,
  // then the shared lock so that no append is seen in part).
  void refresh_if_changed() const {
    if (file_size(fd_.get(), path_) == known_size_ &&
        read_generation(fd_.get(), path_) == generation_) {
      return;
    }
    FlockGuard lock(fd_.get(), path_, LOCK_SH);
    refresh();
  }
  // Under the lock: reads what other objects appended since, or the whole file again after
  // they cleared it.
  void refresh() const {
    const std::uint64_t size = file_size(fd_.get(), path_);
    if (size < kHeaderBytes) throw FormatError(path_ + ": not an exact set (too short)");
    const std::uint32_t generation = read_generation(fd_.get(), path_);
    if (generation != generation_ || size < known_size_) {
      sorted_.clear();
      known_size_ = kHeaderBytes;
      generation_ = generation;
    }
    catch_up(size);
  }
  // Reads the records between what this object has seen and `size`.
  void catch_up(std::uint64_t size) const {
    if (size == known_size_) return;
    if ((size - kHeaderBytes) % 8 != 0) {
      throw FormatError(path_ +
                        ": ends in a partial record (an interrupted write?); rebuild it: "
                        "create --force --exact, then load the items again");
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
  // What this object has read of the file; refreshed by readers too, hence mutable.
  mutable std::uint64_t known_size_ = kHeaderBytes;
  mutable std::uint32_t generation_ = 0;
  mutable std::vector<std::uint64_t> sorted_;
};

}  // namespace

std::unique_ptr<ExactSet> create_file_exact_set(const std::string& filter_path, bool overwrite) {
  const std::string path = companion_path(filter_path);
  // Appears complete or not at all: a racing creator that loses and opens this one never sees
  // it without its header.
  const int fd = posix::create_atomically(
      path, overwrite, "exact set", [](int temp_fd, const std::string& temp) {
        std::uint8_t header[kHeaderBytes] = {};
        std::memcpy(header, kMagic, sizeof kMagic);
        for (int b = 0; b < 4; ++b) header[8 + b] = static_cast<std::uint8_t>(kVersion >> (8 * b));
        posix::write_at(temp_fd, header, sizeof header, 0, temp);
      });
  return std::make_unique<FileExactSet>(path, fd);
}

namespace {

// Opens the companion of `filter_path`: NotFound if there is none.
Fd open_companion(const std::string& filter_path, int flags) {
  const std::string path = companion_path(filter_path);
  Fd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      throw NotFound("filter " + filter_path + " has no exact set (" + path +
                     "): build one with add or load --exact");
    }
    throw StorageError(errno_message("cannot open " + path));
  }
  return fd;
}

}  // namespace

std::unique_ptr<ExactSet> open_file_exact_set(const std::string& filter_path, bool writable) {
  const std::string path = companion_path(filter_path);
  Fd fd = open_companion(filter_path, writable ? O_RDWR : O_RDONLY);
  return std::make_unique<FileExactSet>(path, fd.release());
}

ExactSetSummary summarize_file_exact_set(const std::string& filter_path) {
  const std::string path = companion_path(filter_path);
  const Fd fd = open_companion(filter_path, O_RDONLY);
  check_header(fd.get(), path);
  const std::uint64_t bytes = file_size(fd.get(), path);
  // Writers append whole records under their lock; a record being written is not counted.
  const std::uint64_t entries = (bytes - kHeaderBytes) / 8;
  return {"file " + path, entries, bytes, static_cast<double>(entries) / kTwoTo64};
}

bool file_exact_set_exists(const std::string& filter_path) {
  struct stat st {};
  return ::stat(companion_path(filter_path).c_str(), &st) == 0;
}

void remove_file_exact_set(const std::string& filter_path) {
  const std::string path = companion_path(filter_path);
  {
    // Never delete a file that is not one (its header says; the records need not be read).
    const Fd fd = open_companion(filter_path, O_RDONLY);
    check_header(fd.get(), path);
  }
  if (::unlink(path.c_str()) != 0) throw StorageError(errno_message("cannot delete " + path));
}

}  // namespace redbloom
