#include "local/posix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>

#include "redbloom/error.hpp"
#include "redbloom/params.hpp"

namespace redbloom::posix {

void write_at(int fd, const void* data, std::size_t size, std::uint64_t offset,
              const std::string& path) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw StorageError(errno_message("cannot write " + path));
    done += static_cast<std::size_t>(n);
  }
}

std::size_t read_at(int fd, void* data, std::size_t size, std::uint64_t offset,
                    const std::string& path) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n =
        ::pread(fd, static_cast<char*>(data) + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw StorageError(errno_message("cannot read " + path));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

void lock_writers(int fd, const std::string& path, bool lock) {
  struct flock range {};
  range.l_type = lock ? F_WRLCK : F_UNLCK;
  range.l_whence = SEEK_SET;
  range.l_start = 0;
  range.l_len = 1;
  while (::fcntl(fd, F_OFD_SETLKW, &range) != 0) {
    if (errno == EINTR) continue;
    // Unlocking cannot meaningfully fail on a valid descriptor; locking failures must stop
    // the write, or concurrent writers could both report an item as new.
    if (!lock) return;
    throw StorageError(errno_message("cannot lock " + path + " for writing"));
  }
}

std::uint64_t file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw StorageError(errno_message("cannot stat " + path));
  return static_cast<std::uint64_t>(st.st_size);
}

void reserve_space(int fd, std::uint64_t size, const std::string& path) {
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (err == 0) return;
  if (err != EOPNOTSUPP && err != EINVAL) {
    errno = err;
    throw StorageError(
        errno_message("cannot allocate " + format_bytes(double(size)) + " for " + path));
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    throw StorageError(errno_message("cannot size " + path + " to " + format_bytes(double(size))));
  }
}

int open_regular(const std::string& path, int flags, const std::string& what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait until something writes to it.
  Fd fd(::open(path.c_str(), flags | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return -1;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw StorageError(errno_message("cannot stat " + path));
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    throw FormatError(path + " is " + kind + ", not a " + what +
                      " file: give the path of a file redbloom wrote");
  }
  if (::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0) {
    throw StorageError(errno_message("cannot open " + path));
  }
  return fd.release();
}

int create_atomically(const std::string& path, bool overwrite, const std::string& what,
                      const std::function<void(int, const std::string&)>& fill) {
  // link() fails atomically if the path exists, so of racing creators exactly one wins, and
  // neither readers nor the losers ever see a half-written file.
  static std::atomic<std::uint64_t> serial{0};
  const std::string temp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  Fd fd(::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw StorageError(errno_message("cannot create " + temp));
  try {
    fill(fd.get(), temp);
    if (overwrite) {
      if (::rename(temp.c_str(), path.c_str()) != 0) {
        throw StorageError(errno_message("cannot rename " + temp + " to " + path));
      }
    } else {
      if (::link(temp.c_str(), path.c_str()) != 0) {
        if (errno == EEXIST) {
          throw FilterExists(what + " " + path + " already exists (use --force to replace it)");
        }
        throw StorageError(errno_message("cannot create " + path));
      }
      ::unlink(temp.c_str());
    }
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  return fd.release();
}

}  // namespace redbloom::posix
