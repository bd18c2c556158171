// Small POSIX file helpers shared by the file stores (internal). Every failure throws
// StorageError naming the path.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace redbloom::posix {

// Closes the descriptor it owns.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Writes all `size` bytes at `offset`.
void write_at(int fd, const void* data, std::size_t size, std::uint64_t offset,
              const std::string& path);

// Reads up to `size` bytes at `offset`; returns how many (fewer only at the end of the file).
std::size_t read_at(int fd, void* data, std::size_t size, std::uint64_t offset,
                    const std::string& path);

[[nodiscard]] std::uint64_t file_size(int fd, const std::string& path);

// Sizes the file to `size` bytes with its blocks allocated up front (as zero-reading extents):
// a full disk then fails here with a message, not later as SIGBUS on a write through a
// mapping or ENOSPC on a write into a hole. A file system that cannot preallocate gets a
// sparse file.
void reserve_space(int fd, std::uint64_t size, const std::string& path);

// Takes (`lock`) or drops the writers' lock of a filter file: an open-file-description lock
// (fcntl F_OFD_SETLKW) on its first byte, waiting for other writers. The kernel drops it when
// the process dies, so a crash never leaves a filter locked.
void lock_writers(int fd, const std::string& path, bool lock);

// Opens `path` only if it is a regular file: a FIFO (whose open would wait for a writer), a
// device or a directory is a FormatError naming it (`what`: "filter", "exact set"). -1 with
// errno set if it cannot be opened at all.
[[nodiscard]] int open_regular(const std::string& path, int flags, const std::string& what);

// Creates `path` so that it appears complete or not at all: `fill(fd, temp_path)` writes the
// content into a temporary file beside it, which is then linked into place (throwing
// FilterExists "<what> <path> already exists (use --force to replace it)" if `path` exists) or,
// with `overwrite`, renamed over it. Returns the open (read-write) descriptor.
[[nodiscard]] int create_atomically(const std::string& path, bool overwrite,
                                    const std::string& what,
                                    const std::function<void(int, const std::string&)>& fill);

}  // namespace redbloom::posix
