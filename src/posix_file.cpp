#include "posix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>

#include "redbloom/error.hpp"

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

std::uint64_t file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw StorageError(errno_message("cannot stat " + path));
  return static_cast<std::uint64_t>(st.st_size);
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
