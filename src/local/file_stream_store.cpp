#include "local/file_stream_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string_view>

#include "local/file_store.hpp"
#include "local/posix_file.hpp"
#include "redbloom/error.hpp"

namespace redbloom {
namespace {

using posix::Fd;
namespace manifest = stream_manifest;

// A reader meets a manifest that changes under it only while writers rotate; this bounds the
// retries of a reader that keeps losing that race.
constexpr int kReadAttempts = 10000;

int open_control(const std::string& path, FileAccess access) {
  const int fd =
      posix::open_regular(path, access == FileAccess::read_only ? O_RDONLY : O_RDWR, "filter");
  if (fd < 0) {
    if (errno == ENOENT) throw NotFound("filter " + path + " does not exist");
    throw StorageError(errno_message("cannot open " + path));
  }
  return fd;
}

// Whether `file` is a filter file of `params`, by its header: a link file this filter wrote.
// Anything else at a link's name is the user's, and is never deleted or replaced.
bool is_link_file(const std::string& file, const FilterParams& params) {
  const std::optional<FileHeader> header = FileStore::probe(file);
  return header && header->params == params;
}

// A link file's temporary (LINK.tmp.PID.N, posix::create_atomically) left by a writer killed
// while it made the link. Links are made only under the writers' lock, so with the lock held
// no such file is still being written.
bool is_link_temporary(std::string_view name, std::string_view base) {
  const std::size_t at = name.find(".tmp.");
  if (at == std::string_view::npos) return false;
  std::int64_t slice = 0;
  std::uint32_t link = 0;
  if (!manifest::parse_link_name(name.substr(0, at), base, slice, link)) return false;
  const std::string_view tail = name.substr(at + 5);
  const std::size_t dot = tail.find('.');
  const auto digits = [](std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return dot != std::string_view::npos && digits(tail.substr(0, dot)) &&
         digits(tail.substr(dot + 1));
}

std::pair<std::string, std::string> split_path(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

FileStreamStore::FileStreamStore(std::string path, int fd, const manifest::Header& header,
                                 FileAccess access, Clock clock)
    : LocalStreamStore(header.shape, std::move(clock)),
      path_(std::move(path)),
      fd_(fd),
      access_(access),
      created_unix_ns_(header.created_unix_ns) {
  if (access_ == FileAccess::exclusive_write) {
    // Held until close(fd_): the kernel drops an OFD lock with its last descriptor.
    try {
      posix::lock_writers(fd_, path_, true);
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
}

FileStreamStore::~FileStreamStore() {
  ::close(fd_);
}

std::unique_ptr<FileStreamStore> FileStreamStore::create(const std::string& path,
                                                         const StreamShape& shape, Clock clock,
                                                         bool overwrite) {
  const std::uint64_t created = clock ? clock() : system_now_ns();
  if (overwrite && is_stream_file(path)) remove(path);
  const int fd = posix::create_atomically(
      path, overwrite, "filter", [&](int temp_fd, const std::string& temp) {
        manifest::write_new(temp_fd, temp, shape, created);
        if (::fsync(temp_fd) != 0) {
          throw StorageError(errno_message("cannot sync " + temp));
        }
      });
  manifest::Header header{shape, created};
  return std::unique_ptr<FileStreamStore>(
      new FileStreamStore(path, fd, header, FileAccess::read_write, std::move(clock)));
}

std::unique_ptr<FileStreamStore> FileStreamStore::open(const std::string& path, FileAccess access,
                                                       Clock clock) {
  Fd fd(open_control(path, access));
  const manifest::Header header = manifest::read_header(fd.get(), path);
  auto store = std::unique_ptr<FileStreamStore>(
      new FileStreamStore(path, fd.release(), header, access, std::move(clock)));
  store->sync(false);
  return store;
}

bool FileStreamStore::is_stream_file(const std::string& path) {
  const int fd = posix::open_regular(path, O_RDONLY, "filter");
  if (fd < 0) return false;
  Fd owned(fd);
  return manifest::has_magic(fd, path);
}

void FileStreamStore::remove(const std::string& path) {
  Fd fd(open_control(path, FileAccess::read_write));
  const manifest::Header header = manifest::read_header(fd.get(), path);
  const auto store = std::unique_ptr<FileStreamStore>(
      new FileStreamStore(path, fd.release(), header, FileAccess::read_write, {}));
  posix::lock_writers(store->fd_, path, true);
  // The files the manifest names, not opened: some may be gone already (a drop that stopped
  // part-way), which must not keep the rest from going.
  manifest::Manifest named;
  bool read = false;
  for (int attempt = 0; attempt < kReadAttempts && !read; ++attempt) {
    read = manifest::read(store->fd_, path, manifest::published(store->fd_, path), named);
  }
  if (!read) throw StorageError(path + ": its manifest cannot be read");
  for (const manifest::Entry& entry : named.entries) {
    const std::string file = manifest::link_path(path, entry.slice, entry.link);
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      throw StorageError(errno_message("cannot delete " + file));
    }
  }
  store->remove_strays();
  if (::unlink(path.c_str()) != 0) throw StorageError(errno_message("cannot delete " + path));
}

void FileStreamStore::begin_write() {
  if (access_ == FileAccess::read_only) {
    throw InvalidArgument("add: " + path_ + " was opened read-only");
  }
  if (access_ != FileAccess::exclusive_write) posix::lock_writers(fd_, path_, true);
  try {
    check_still_at_path();
    sync(true);
  } catch (...) {
    end_write();
    throw;
  }
  writing_ = true;
}

void FileStreamStore::end_write() noexcept {
  // The counts of this batch; a failure to publish them only leaves growth a little late
  // (the bits are written), so it does not turn a committed batch into an error.
  if (writing_) {
    try {
      publish_links();
    } catch (const Error&) {
      synced_ = false;
    }
  }
  writing_ = false;
  if (access_ != FileAccess::exclusive_write) posix::lock_writers(fd_, path_, false);
}

void FileStreamStore::check_still_at_path() const {
  // A filter dropped or made again at this path (create --force) since this handle opened it:
  // its rotations would delete the new filter's link files, which have the same names.
  struct stat mine {};
  struct stat there {};
  if (::fstat(fd_, &mine) != 0) throw StorageError(errno_message("cannot stat " + path_));
  const bool same = ::stat(path_.c_str(), &there) == 0 && there.st_dev == mine.st_dev &&
                    there.st_ino == mine.st_ino;
  if (!same) {
    throw StorageError(path_ +
                       " was dropped or made again since this process opened it; "
                       "nothing was added: open it again");
  }
}

void FileStreamStore::begin_read() const {
  sync(false);
}

void FileStreamStore::sync(bool locked) const {
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    const std::uint64_t sequence = manifest::published(fd_, path_);
    if (synced_ && sequence == manifest_.sequence) return;
    manifest::Manifest next;
    if (!manifest::read(fd_, path_, sequence, next)) continue;
    std::vector<Link> links;
    // Gives links_ back what `links` took from it: a sync that stops leaves links_ whole.
    const auto put_back = [&] {
      for (Link& link : links) {
        for (Link& old : links_) {
          if (!old.bits && old.slice == link.slice && old.link == link.link) {
            old.bits = std::move(link.bits);
          }
        }
      }
    };
    bool moved = false;  // a link file went away: a writer retired it after this manifest
    try {
      for (const manifest::Entry& entry : next.entries) {
        Link* known = nullptr;
        for (Link& link : links_) {
          if (link.bits && link.slice == entry.slice && link.link == entry.link) known = &link;
        }
        Link link;
        if (known != nullptr) {
          link.bits = std::move(known->bits);
        } else {
          const std::string file = manifest::link_path(path_, entry.slice, entry.link);
          try {
            link.bits =
                FileStore::open(file, access_ == FileAccess::read_only ? FileAccess::read_only
                                                                       : FileAccess::read_write);
          } catch (const NotFound&) {
            if (locked || manifest::published(fd_, path_) == sequence) {
              throw FormatError(path_ + ": link file " + file +
                                " named by the manifest is missing (deleted, or a drop that "
                                "stopped part-way: redbloom drop removes what is left)");
            }
            moved = true;
            break;
          }
          if (!(link.bits->params() == stream_shape().link_params(entry.link))) {
            throw FormatError(path_ + ": link file " + file +
                              " named by the manifest is a filter of other parameters, not the "
                              "link it names (replaced by another file?)");
          }
        }
        link.slice = entry.slice;
        link.link = entry.link;
        link.created_unix_ns = entry.created_unix_ns;
        link.items = entry.items;
        links.push_back(std::move(link));
      }
    } catch (...) {
      put_back();
      throw;
    }
    if (moved) {
      // Read the newer manifest.
      put_back();
      ::sched_yield();
      continue;
    }
    links_ = std::move(links);
    manifest_ = std::move(next);
    synced_ = true;
    return;
  }
  throw StorageError(path_ + ": its manifest kept changing while being read (" +
                     std::to_string(kReadAttempts) + " attempts)");
}

void FileStreamStore::publish_links() {
  manifest::Manifest next;
  next.sequence = manifest_.sequence;
  for (const Link& link : links_) {
    next.entries.push_back({link.slice, link.link, link.created_unix_ns, link.items});
  }
  if (next.entries == manifest_.entries) return;
  manifest::publish(fd_, path_, next);
  manifest_ = std::move(next);
}

std::unique_ptr<FileStore> FileStreamStore::create_link(const std::string& file,
                                                        std::uint32_t link) const {
  const FilterParams params = stream_shape().link_params(link);
  for (int attempt = 0;; ++attempt) {
    try {
      return FileStore::create(file, params, /*overwrite=*/false);
    } catch (const FilterExists&) {
      // No manifest names a link this new: a link file there is a stray of a writer killed
      // before publishing it, and anything else is the user's.
      if (attempt > 0 || !is_link_file(file, params)) {
        throw StorageError("cannot create the link file " + file +
                           ": a file this filter did not write is in the way; move or delete "
                           "it, then run again");
      }
      if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
        throw StorageError(errno_message("cannot delete stray link " + file));
      }
    }
  }
}

void FileStreamStore::add_link(std::int64_t slice, std::uint32_t link, std::int64_t retired_below) {
  const std::string file = manifest::link_path(path_, slice, link);
  auto bits = create_link(file, link);
  // links_ changes only once the manifest that names the new link is published: a failure
  // before leaves the filter as it was.
  manifest::Manifest next;
  next.sequence = manifest_.sequence;
  for (const Link& l : links_) {
    if (l.slice >= retired_below) {
      next.entries.push_back({l.slice, l.link, l.created_unix_ns, l.items});
    }
  }
  const std::uint64_t created = now();
  next.entries.push_back({slice, link, created, 0});
  try {
    manifest::publish(fd_, path_, next);
  } catch (...) {
    bool unpublished = false;
    try {
      unpublished = manifest::published(fd_, path_) == manifest_.sequence;
    } catch (const Error&) {
      // Unknown: the file stays, a stray the next rotation deletes if no manifest names it.
    }
    bits.reset();
    if (unpublished) ::unlink(file.c_str());
    throw;
  }
  manifest_ = std::move(next);
  std::vector<std::pair<std::string, FilterParams>> retired;
  std::erase_if(links_, [&](const Link& l) {
    if (l.slice >= retired_below) return false;
    retired.emplace_back(manifest::link_path(path_, l.slice, l.link), l.bits->params());
    return true;
  });
  links_.push_back(Link{slice, link, created, 0, std::move(bits)});
  for (const auto& [retired_file, params] : retired) {
    if (!is_link_file(retired_file, params)) continue;  // replaced by the user meanwhile
    if (::unlink(retired_file.c_str()) != 0 && errno != ENOENT) {
      throw StorageError(errno_message("cannot delete retired link " + retired_file));
    }
  }
  if (link == 0) remove_strays();
}

void FileStreamStore::remove_strays() const {
  const auto [directory, base] = split_path(path_);
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) throw StorageError(errno_message("cannot list " + directory));
  std::vector<std::pair<std::string, std::uint32_t>> strays;
  std::vector<std::string> temporaries;
  while (const dirent* entry = ::readdir(dir)) {
    std::int64_t slice = 0;
    std::uint32_t link = 0;
    if (is_link_temporary(entry->d_name, base))
      temporaries.push_back(directory + "/" + entry->d_name);
    if (!manifest::parse_link_name(entry->d_name, base, slice, link)) continue;
    bool named = false;
    for (const Link& l : links_) named = named || (l.slice == slice && l.link == link);
    if (!named) strays.emplace_back(directory + "/" + entry->d_name, link);
  }
  ::closedir(dir);
  for (const std::string& file : temporaries) {
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      throw StorageError(errno_message("cannot delete a killed writer's temporary " + file));
    }
  }
  for (const auto& [file, link] : strays) {
    FilterParams params;
    try {
      params = stream_shape().link_params(link);
    } catch (const InvalidArgument&) {
      continue;  // no link of this filter has that number: not one of its files
    }
    if (!is_link_file(file, params)) continue;
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      throw StorageError(errno_message("cannot delete stray link " + file));
    }
  }
}

std::uint64_t FileStreamStore::storage_bytes() const {
  sync(false);
  std::uint64_t total = manifest::kFileBytes;
  for (const Link& link : links_) total += link.bits->storage_bytes();
  return total;
}

void FileStreamStore::flush() {
  if (access_ == FileAccess::read_only) return;
  for (const Link& link : links_) link.bits->flush();
  if (::fdatasync(fd_) != 0) throw StorageError(errno_message("cannot flush " + path_));
}

}  // namespace redbloom
