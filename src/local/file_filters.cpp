#include "local/file_filters.hpp"

#include "local/file_store.hpp"
#include "local/file_stream_store.hpp"

namespace redbloom {

std::unique_ptr<FilterBackend> open_file_filter(const std::string& path, FileAccess access,
                                                Clock clock) {
  if (FileStreamStore::is_stream_file(path)) {
    return FileStreamStore::open(path, access, std::move(clock));
  }
  return plain_backend(FileStore::open(path, access));
}

std::unique_ptr<FilterBackend> create_file_filter(const std::string& path,
                                                  const FilterParams& params, bool overwrite) {
  if (overwrite && FileStreamStore::is_stream_file(path)) FileStreamStore::remove(path);
  return plain_backend(FileStore::create(path, params, overwrite));
}

std::unique_ptr<FilterBackend> create_file_filter(const std::string& path, const StreamShape& shape,
                                                  Clock clock, bool overwrite) {
  if (overwrite && FileStore::exists(path) && !FileStreamStore::is_stream_file(path)) {
    FileStore::remove(path);
  }
  return FileStreamStore::create(path, shape, std::move(clock), overwrite);
}

void remove_file_filter(const std::string& path) {
  if (FileStreamStore::is_stream_file(path)) {
    FileStreamStore::remove(path);
  } else {
    FileStore::remove(path);
  }
}

}  // namespace redbloom
