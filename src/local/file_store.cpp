#include "local/file_store.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <utility>
#include <vector>

#include "local/mapped_files.hpp"
#include "local/posix_file.hpp"
#include "redbloom/error.hpp"

namespace redbloom {
namespace {

using posix::Fd;

std::uint64_t now_unix_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

// The header from the file's first bytes, already read.
FileHeader header_of(int fd, const std::string& path, std::span<const std::uint8_t> prefix) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw StorageError(errno_message("cannot stat " + path));
  if (!S_ISREG(st.st_mode)) throw FormatError(path + " is not a regular file");
  try {
    return parse_file_header(prefix, static_cast<std::uint64_t>(st.st_size));
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }
}

FileHeader read_header(int fd, const std::string& path) {
  std::vector<std::uint8_t> prefix(kFileHeaderBytes);
  prefix.resize(posix::read_at(fd, prefix.data(), prefix.size(), 0, path));
  return header_of(fd, path, prefix);
}

}  // namespace

// Holds the writers' lock for one batch.
class FileStore::WriteLock {
 public:
  // An exclusive handle already holds the lock for its lifetime.
  explicit WriteLock(const FileStore& store)
      : store_(store), needed_(store.access_ != Access::exclusive_write) {
    if (needed_) apply(store_.fd_, store_.path_, F_WRLCK);
  }
  ~WriteLock() {
    if (needed_) apply(store_.fd_, store_.path_, F_UNLCK);
  }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

  static void apply(int fd, const std::string& path, short type) {
    posix::lock_writers(fd, path, type == F_WRLCK);
  }

 private:
  const FileStore& store_;
  bool needed_;
};

FileStore::FileStore(std::string path, int fd, const FileHeader& header, Access access)
    : BitmapStore(header.params),
      path_(std::move(path)),
      fd_(fd),
      header_(header),
      access_(access) {
  mapping_bytes_ = header.bitmap_offset + header.bitmap_bytes;
  const int prot = PROT_READ | (writable() ? PROT_WRITE : 0);
  mapping_ = ::mmap(nullptr, mapping_bytes_, prot, MAP_SHARED, fd_, 0);
  if (mapping_ == MAP_FAILED) {
    const std::string message = errno_message("cannot map " + path_);
    ::close(fd_);
    throw StorageError(message);
  }
  mapped_slot_ = mapped_files::remember(mapping_, mapping_bytes_, path_);
  if (access == Access::exclusive_write) {
    // Held until close(fd_): the kernel drops an OFD lock with its last descriptor.
    try {
      WriteLock::apply(fd_, path_, F_WRLCK);
    } catch (...) {
      mapped_files::forget(mapped_slot_);
      ::munmap(mapping_, mapping_bytes_);
      ::close(fd_);
      throw;
    }
  }
  attach(
      reinterpret_cast<std::uint64_t*>(static_cast<std::uint8_t*>(mapping_) + header.bitmap_offset),
      /*private_memory=*/false);
}

FileStore::~FileStore() {
  mapped_files::forget(mapped_slot_);
  ::munmap(mapping_, mapping_bytes_);
  ::close(fd_);
}

std::unique_ptr<FileStore> FileStore::create(const std::string& path, const FilterParams& params,
                                             bool overwrite) {
  validate(params);
  const FileHeader header = make_file_header(params, now_unix_ns());
  const int fd = posix::create_atomically(
      path, overwrite, "filter", [&](int temp_fd, const std::string& temp) {
        const auto encoded = encode_file_header(header);
        posix::write_at(temp_fd, encoded.data(), encoded.size(), 0, temp);
        posix::reserve_space(temp_fd, header.bitmap_offset + header.bitmap_bytes, temp);
        if (::fsync(temp_fd) != 0) throw StorageError(errno_message("cannot sync " + temp));
      });
  return std::unique_ptr<FileStore>(new FileStore(path, fd, header, Access::read_write));
}

std::unique_ptr<FileStore> FileStore::open(const std::string& path, Access access) {
  const int flags = access == Access::read_only ? O_RDONLY : O_RDWR;
  Fd fd(posix::open_regular(path, flags, "filter"));
  if (fd.get() < 0) {
    if (errno == ENOENT) throw NotFound("filter " + path + " does not exist");
    throw StorageError(errno_message("cannot open " + path));
  }
  const FileHeader header = read_header(fd.get(), path);
  return std::unique_ptr<FileStore>(new FileStore(path, fd.release(), header, access));
}

std::unique_ptr<FileStore> FileStore::open(const std::string& path, int fd,
                                           std::span<const std::uint8_t> prefix, Access access) {
  Fd owned(fd);
  const FileHeader header = header_of(owned.get(), path, prefix);
  return std::unique_ptr<FileStore>(new FileStore(path, owned.release(), header, access));
}

bool FileStore::exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<FileHeader> FileStore::probe(const std::string& path) {
  try {
    Fd fd(posix::open_regular(path, O_RDONLY, "filter"));
    if (fd.get() < 0) return std::nullopt;
    return read_header(fd.get(), path);
  } catch (const StorageError&) {
    return std::nullopt;
  }
}

void FileStore::remove(const std::string& path) {
  {
    Fd fd(posix::open_regular(path, O_RDONLY, "filter"));
    if (fd.get() < 0) {
      if (errno == ENOENT) throw NotFound("filter " + path + " does not exist");
      throw StorageError(errno_message("cannot open " + path));
    }
    (void)read_header(fd.get(), path);
  }
  if (::unlink(path.c_str()) != 0) throw StorageError(errno_message("cannot delete " + path));
}

void FileStore::require_writable(const char* op) const {
  if (!writable()) {
    throw InvalidArgument(std::string(op) + ": " + path_ + " was opened read-only");
  }
}

void FileStore::add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) {
  require_writable("add");
  WriteLock lock(*this);
  BitmapStore::add(items, newly_added);
}

bool FileStore::add_one(std::string_view item) {
  require_writable("add");
  WriteLock lock(*this);
  return BitmapStore::add_one(item);
}

Store::OneItemCall FileStore::direct_add_one() {
  // A shared writer takes the writers' lock per call: through the virtual add_one.
  if (access_ != Access::exclusive_write) return Store::direct_add_one();
  return BitmapStore::direct_add_one();
}

void FileStore::load(std::span<const std::string_view> items) {
  require_writable("add");
  WriteLock lock(*this);
  BitmapStore::load(items);
}

void FileStore::write_bytes(std::uint64_t partition, std::uint64_t offset,
                            std::span<const std::uint8_t> bytes) {
  require_writable("write");
  WriteLock lock(*this);
  BitmapStore::write_bytes(partition, offset, bytes);
}

void FileStore::flush() {
  if (!writable()) return;
  if (::msync(mapping_, mapping_bytes_, MS_SYNC) != 0) {
    throw StorageError(errno_message("cannot flush " + path_));
  }
}

}  // namespace redbloom
