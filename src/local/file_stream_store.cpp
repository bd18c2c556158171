#include "local/file_stream_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

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

// (slice, link) of a name "<base>.s<slice>.<link>", or false for any other name.
bool parse_link_name(const std::string& name, const std::string& base, std::int64_t& slice,
                     std::uint32_t& link) {
  const std::string prefix = base + ".s";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  const char* at = name.c_str() + prefix.size();
  char* end = nullptr;
  errno = 0;
  const long long s = std::strtoll(at, &end, 10);
  if (end == at || *end != '.' || errno != 0) return false;
  at = end + 1;
  const unsigned long l = std::strtoul(at, &end, 10);
  if (end == at || *end != '\0' || errno != 0 || l > 0xffffffffUL) return false;
  slice = s;
  link = static_cast<std::uint32_t>(l);
  return true;
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
  const auto store = open(path, FileAccess::read_write, {});
  posix::lock_writers(store->fd_, path, true);
  store->sync(true);
  for (const Link& link : store->links_) {
    const std::string file = manifest::link_path(path, link.slice, link.link);
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      throw StorageError(errno_message("cannot delete " + file));
    }
  }
  store->links_.clear();
  store->remove_strays();
  if (::unlink(path.c_str()) != 0) throw StorageError(errno_message("cannot delete " + path));
}

void FileStreamStore::begin_write() {
  if (access_ == FileAccess::read_only) {
    throw InvalidArgument("add: " + path_ + " was opened read-only");
  }
  if (access_ != FileAccess::exclusive_write) posix::lock_writers(fd_, path_, true);
  try {
    sync(true);
  } catch (...) {
    end_write();
    throw;
  }
}

void FileStreamStore::end_write() noexcept {
  // The counts of this batch; a failure to publish them only leaves growth a little late
  // (the bits are written), so it does not turn a committed batch into an error.
  try {
    publish_links();
  } catch (const Error&) {
    synced_ = false;
  }
  if (access_ != FileAccess::exclusive_write) posix::lock_writers(fd_, path_, false);
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
    bool moved = false;  // a link file went away: a writer retired it after this manifest
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
            throw FormatError(path_ + ": link file " + file + " named by the manifest is missing");
          }
          moved = true;
          break;
        }
      }
      link.slice = entry.slice;
      link.link = entry.link;
      link.created_unix_ns = entry.created_unix_ns;
      link.items = entry.items;
      links.push_back(std::move(link));
    }
    if (moved) {
      // Put back what was taken, and read the newer manifest.
      for (Link& link : links) {
        for (Link& old : links_) {
          if (!old.bits && old.slice == link.slice && old.link == link.link) {
            old.bits = std::move(link.bits);
          }
        }
      }
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

void FileStreamStore::add_link(std::int64_t slice, std::uint32_t link, std::int64_t retired_below) {
  const FilterParams params = link == 0 ? this->params() : shape().link_params(link);
  // A file of this name can only be a stray of a writer killed before publishing it.
  auto bits = FileStore::create(manifest::link_path(path_, slice, link), params,
                                /*overwrite=*/true);
  std::vector<std::string> retired;
  std::erase_if(links_, [&](const Link& l) {
    if (l.slice >= retired_below) return false;
    retired.push_back(manifest::link_path(path_, l.slice, l.link));
    return true;
  });
  links_.push_back(Link{slice, link, now(), 0, std::move(bits)});
  publish_links();
  for (const std::string& file : retired) {
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      throw StorageError(errno_message("cannot delete retired link " + file));
    }
  }
  if (link == 0) remove_strays();
}

void FileStreamStore::remove_strays() const {
  const auto [directory, base] = split_path(path_);
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) throw StorageError(errno_message("cannot list " + directory));
  std::vector<std::string> strays;
  while (const dirent* entry = ::readdir(dir)) {
    std::int64_t slice = 0;
    std::uint32_t link = 0;
    if (!parse_link_name(entry->d_name, base, slice, link)) continue;
    bool named = false;
    for (const Link& l : links_) named = named || (l.slice == slice && l.link == link);
    if (!named) strays.push_back(directory + "/" + entry->d_name);
  }
  ::closedir(dir);
  for (const std::string& file : strays) {
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
