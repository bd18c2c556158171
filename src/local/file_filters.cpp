#include "local/file_filters.hpp"

#include <fcntl.h>

#include <cerrno>
#include <vector>

#include "core/cuckoo_file_format.hpp"
#include "core/file_format.hpp"
#include "local/cuckoo_store.hpp"
#include "local/file_store.hpp"
#include "local/file_stream_store.hpp"
#include "local/posix_file.hpp"
#include "local/stream_manifest.hpp"
#include "redbloom/error.hpp"

namespace redbloom {

std::unique_ptr<FilterBackend> open_file_filter(const std::string& path, FileAccess access,
                                                Clock clock) {
  // One open and one read of the first bytes, then a switch on the magic.
  posix::Fd fd(
      posix::open_regular(path, access == FileAccess::read_only ? O_RDONLY : O_RDWR, "filter"));
  if (fd.get() < 0) {
    if (errno == ENOENT) throw NotFound("filter " + path + " does not exist");
    throw StorageError(errno_message("cannot open " + path));
  }
  std::vector<std::uint8_t> prefix(kFileHeaderBytes);
  prefix.resize(posix::read_at(fd.get(), prefix.data(), prefix.size(), 0, path));
  if (stream_manifest::has_magic(prefix)) {
    return FileStreamStore::open(path, access, std::move(clock));
  }
  if (has_cuckoo_magic(prefix)) {
    return LocalCuckooStore::open_file(path, fd.release(), prefix, access);
  }
  return plain_backend(FileStore::open(path, fd.release(), prefix, access));
}

std::unique_ptr<FilterBackend> create_file_filter(const std::string& path,
                                                  const FilterParams& params, bool overwrite) {
  if (overwrite && FileStreamStore::is_stream_file(path)) FileStreamStore::remove(path);
  if (overwrite && LocalCuckooStore::is_cuckoo_file(path)) LocalCuckooStore::remove_file(path);
  return plain_backend(FileStore::create(path, params, overwrite));
}

std::unique_ptr<FilterBackend> create_file_filter(const std::string& path, const StreamShape& shape,
                                                  Clock clock, bool overwrite) {
  if (overwrite && LocalCuckooStore::is_cuckoo_file(path)) LocalCuckooStore::remove_file(path);
  if (overwrite && FileStore::exists(path) && !FileStreamStore::is_stream_file(path)) {
    FileStore::remove(path);
  }
  return FileStreamStore::create(path, shape, std::move(clock), overwrite);
}

std::unique_ptr<FilterBackend> create_file_filter(const std::string& path,
                                                  const CuckooOptions& cuckoo, bool overwrite) {
  (void)CuckooShape(cuckoo);  // options checked before anything is removed
  if (overwrite && FileStreamStore::is_stream_file(path)) FileStreamStore::remove(path);
  return LocalCuckooStore::create_file(path, cuckoo, overwrite);
}

void remove_file_filter(const std::string& path) {
  if (FileStreamStore::is_stream_file(path)) {
    FileStreamStore::remove(path);
  } else if (LocalCuckooStore::is_cuckoo_file(path)) {
    LocalCuckooStore::remove_file(path);
  } else {
    FileStore::remove(path);
  }
}

}  // namespace redbloom
