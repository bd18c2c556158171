#include "local/cuckoo_store.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "core/cuckoo_chain.hpp"
#include "local/mapped_files.hpp"
#include "local/posix_file.hpp"
#include "redbloom/error.hpp"
#include "redbloom/hash.hpp"

namespace redbloom {
namespace {

std::uint64_t now_unix_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::uint64_t page_up(std::uint64_t bytes) {
  return (bytes + kCuckooFilePage - 1) / kCuckooFilePage * kCuckooFilePage;
}

// An open-file-description lock on the file's first byte: F_RDLCK for lookups, F_WRLCK for
// changes; the kernel drops it when the process dies.
void lock_file(int fd, const std::string& path, short type) {
  struct flock range {};
  range.l_type = type;
  range.l_whence = SEEK_SET;
  range.l_start = 0;
  range.l_len = 1;
  while (::fcntl(fd, F_OFD_SETLKW, &range) != 0) {
    if (errno == EINTR) continue;
    if (type == F_UNLCK) return;
    throw StorageError(errno_message("cannot lock " + path));
  }
}

std::vector<std::uint8_t> read_whole_header(int fd, const std::string& path) {
  std::vector<std::uint8_t> fixed(kCuckooDirectoryOffset);
  fixed.resize(posix::read_at(fd, fixed.data(), fixed.size(), 0, path));
  std::vector<std::uint8_t> whole;
  try {
    whole.resize(cuckoo_header_bytes(fixed));
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }
  whole.resize(posix::read_at(fd, whole.data(), whole.size(), 0, path));
  return whole;
}

CuckooFileHeader parse_header(int fd, const std::string& path) {
  const std::vector<std::uint8_t> bytes = read_whole_header(fd, path);
  try {
    return parse_cuckoo_file_header(bytes, posix::file_size(fd, path));
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }
}

}  // namespace

// One batch's lock on a file (none in memory, none for an exclusive handle, which holds its
// lock while open).
class LocalCuckooStore::Lock {
 public:
  Lock(const LocalCuckooStore& store, bool write) : store_(store) {
    held_ = store.fd_ >= 0 && store.access_ != FileAccess::exclusive_write;
    if (held_) lock_file(store.fd_, store.path_, write ? F_WRLCK : F_RDLCK);
    store.refresh();
  }
  ~Lock() {
    if (held_) lock_file(store_.fd_, store_.path_, F_UNLCK);
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  const LocalCuckooStore& store_;
  bool held_ = false;
};

LocalCuckooStore::LocalCuckooStore(const CuckooFileHeader& header, std::string path, int fd,
                                   FileAccess access)
    : shape_(header.options),
      header_(header),
      path_(std::move(path)),
      fd_(fd),
      access_(access),
      links_(header.options.partitions),
      tables_(header.options.partitions) {
  header_.links.assign(header.options.partitions, {});
}

LocalCuckooStore::~LocalCuckooStore() {
  for (const auto& partition : links_) {
    for (const Link& link : partition) {
      if (!link.mapped) continue;
      mapped_files::forget(link.mapped_slot);
      ::munmap(link.bytes, link.size);
    }
  }
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<LocalCuckooStore> LocalCuckooStore::in_memory(const CuckooOptions& options) {
  CuckooFileHeader header;
  header.options = options;
  header.created_unix_ns = now_unix_ns();
  std::unique_ptr<LocalCuckooStore> store(
      new LocalCuckooStore(header, "", -1, FileAccess::read_write));
  for (std::uint32_t partition = 0; partition < options.partitions; ++partition) {
    store->grow(partition);
  }
  return store;
}

std::unique_ptr<LocalCuckooStore> LocalCuckooStore::create_file(const std::string& path,
                                                                const CuckooOptions& options,
                                                                bool overwrite) {
  const CuckooShape shape(options);
  CuckooFileHeader header;
  header.options = options;
  header.created_unix_ns = now_unix_ns();
  // Link 0 of every partition, end to end after the header.
  std::uint64_t end = header.header_bytes();
  header.links.resize(options.partitions);
  for (auto& links : header.links) {
    links.push_back(end);
    end = page_up(end + shape.link(0).bytes());
  }
  const int fd = posix::create_atomically(
      path, overwrite, "filter", [&](int temp_fd, const std::string& temp) {
        const std::vector<std::uint8_t> encoded = encode_cuckoo_file_header(header);
        posix::write_at(temp_fd, encoded.data(), encoded.size(), 0, temp);
        posix::reserve_space(temp_fd, end, temp);
        if (::fsync(temp_fd) != 0) throw StorageError(errno_message("cannot sync " + temp));
      });
  std::unique_ptr<LocalCuckooStore> store(
      new LocalCuckooStore(header, path, fd, FileAccess::read_write));
  Lock lock(*store, false);
  return store;
}

std::unique_ptr<LocalCuckooStore> LocalCuckooStore::open_file(const std::string& path, int fd,
                                                              std::span<const std::uint8_t>,
                                                              FileAccess access) {
  posix::Fd owned(fd);
  const CuckooFileHeader header = parse_header(fd, path);
  std::unique_ptr<LocalCuckooStore> store(
      new LocalCuckooStore(header, path, owned.release(), access));
  if (access == FileAccess::exclusive_write) lock_file(store->fd_, path, F_WRLCK);
  Lock lock(*store, false);
  return store;
}

bool LocalCuckooStore::is_cuckoo_file(const std::string& path) {
  posix::Fd fd(posix::open_regular(path, O_RDONLY, "filter"));
  if (fd.get() < 0) return false;
  std::uint8_t magic[8] = {};
  const std::size_t got = posix::read_at(fd.get(), magic, sizeof magic, 0, path);
  return has_cuckoo_magic(std::span<const std::uint8_t>(magic, got));
}

void LocalCuckooStore::remove_file(const std::string& path) {
  if (!is_cuckoo_file(path)) throw FormatError(path + " is not a cuckoo filter file");
  if (::unlink(path.c_str()) != 0) throw StorageError(errno_message("cannot delete " + path));
}

std::vector<ItemHash> LocalCuckooStore::hashes_ahead(
    std::span<const std::string_view> items) const {
  std::vector<ItemHash> hashes(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) hashes[i] = hash_item(items[i]);
  for (std::size_t i = 0; i < std::min(kAhead, items.size()); ++i) prefetch(hashes[i]);
  return hashes;
}

void LocalCuckooStore::prefetch(const ItemHash& h) const noexcept {
  cuckoo_chain::prefetch(tables_[shape_.partition_of(h)], h);
}

void LocalCuckooStore::attach(std::uint32_t partition, std::uint8_t* bytes, std::size_t size,
                              bool mapped, int mapped_slot) const {
  auto& links = links_[partition];
  const auto link = static_cast<std::uint32_t>(links.size());
  links.push_back({bytes, size, mapped, mapped_slot});
  tables_[partition].emplace_back(shape_.link(link), std::span<std::uint8_t>(bytes, size));
}

void LocalCuckooStore::refresh() const {
  if (fd_ < 0) return;
  const std::uint64_t size = posix::file_size(fd_, path_);
  if (size == seen_file_size_) return;
  const CuckooFileHeader now = parse_header(fd_, path_);
  if (!(now.options == header_.options) || now.created_unix_ns != header_.created_unix_ns) {
    throw FormatError(path_ + " was replaced by another filter while open; open it again");
  }
  const bool writable = access_ != FileAccess::read_only;
  for (std::uint32_t partition = 0; partition < now.links.size(); ++partition) {
    for (std::size_t link = links_[partition].size(); link < now.links[partition].size(); ++link) {
      const std::uint64_t offset = now.links[partition][link];
      const std::size_t bytes = shape_.link(static_cast<std::uint32_t>(link)).bytes();
      void* at = ::mmap(nullptr, bytes, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd_,
                        static_cast<off_t>(offset));
      if (at == MAP_FAILED) throw StorageError(errno_message("cannot map " + path_));
      attach(partition, static_cast<std::uint8_t*>(at), bytes, true,
             mapped_files::remember(at, bytes, path_));
      header_.links[partition].push_back(offset);
    }
  }
  seen_file_size_ = size;
}

bool LocalCuckooStore::grow(std::uint32_t partition) {
  const auto link = static_cast<std::uint32_t>(links_[partition].size());
  if (link >= shape_.max_links()) return false;
  const std::size_t bytes = shape_.link(link).bytes();
  if (fd_ < 0) {
    memory_.push_back(std::make_unique<std::uint8_t[]>(bytes));  // zeroed: empty slots
    attach(partition, memory_.back().get(), bytes, false, -1);
    return true;
  }
  // The table first, then its directory entry: a crash in between leaves unused space.
  const std::uint64_t offset = page_up(posix::file_size(fd_, path_));
  posix::reserve_space(fd_, offset + bytes, path_);
  posix::write_at(fd_, &offset, sizeof offset, cuckoo_directory_entry(partition, link), path_);
  refresh();
  return true;
}

void LocalCuckooStore::require_writable(const char* what) const {
  if (access_ == FileAccess::read_only) {
    throw InvalidArgument("filter " + path_ + " was opened read-only: it cannot " + what);
  }
}

void LocalCuckooStore::check_flags(std::size_t items, std::size_t flags) const {
  if (flags < items) {
    throw InvalidArgument("flag span holds " + std::to_string(flags) + " entries for " +
                          std::to_string(items) + " items");
  }
}

FilterShape LocalCuckooStore::shape() const {
  FilterShape out;
  out.cuckoo = header_.options;
  out.params.capacity = header_.options.capacity;
  out.params.error_rate = header_.options.error_rate;
  out.params.partitions = header_.options.partitions;
  return out;
}

void LocalCuckooStore::add(std::span<const std::string_view> items,
                           std::span<std::uint8_t> newly_added) {
  store_items(items, newly_added, cuckoo_chain::add);
}

void LocalCuckooStore::insert(std::span<const std::string_view> items) {
  std::vector<std::uint8_t> scratch(items.size());
  store_items(items, scratch, cuckoo_chain::insert);
}

void LocalCuckooStore::store_items(std::span<const std::string_view> items,
                                   std::span<std::uint8_t> newly_added,
                                   cuckoo_chain::Add (*step)(std::span<cuckoo_table::Table>,
                                                             const ItemHash&)) {
  require_writable("add");
  check_flags(items.size(), newly_added.size());
  Lock lock(*this, true);
  const std::vector<ItemHash> hashes = hashes_ahead(items);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i + kAhead < items.size()) prefetch(hashes[i + kAhead]);
    const ItemHash& h = hashes[i];
    const std::uint32_t partition = shape_.partition_of(h);
    cuckoo_chain::Add result = step(tables_[partition], h);
    while (result == cuckoo_chain::Add::full) {
      if (!grow(partition)) {
        throw CapacityExceeded("cuckoo filter " + location() +
                                   " is full: its links have no room for the item and it may "
                                   "not grow (" +
                                   shape_.describe() +
                                   "); create it with growth or a larger capacity or max_bytes",
                               i);
      }
      result = step(tables_[partition], h);
    }
    newly_added[i] = result == cuckoo_chain::Add::added ? 1 : 0;
  }
}

void LocalCuckooStore::load(std::span<const std::string_view> items) {
  std::vector<std::uint8_t> scratch(items.size());
  add(items, scratch);
}

void LocalCuckooStore::contains(std::span<const std::string_view> items,
                                std::span<std::uint8_t> present) const {
  check_flags(items.size(), present.size());
  Lock lock(*this, false);
  if (tables_.size() == 1 && tables_[0].size() == 1) {
    // The common case, one table: hashed first, then looked up with the buckets ahead fetched.
    constexpr std::size_t kRun = 256;
    ItemHash hashes[kRun];
    for (std::size_t at = 0; at < items.size(); at += kRun) {
      const std::size_t n = std::min(kRun, items.size() - at);
      for (std::size_t i = 0; i < n; ++i) hashes[i] = hash_item(items[at + i]);
      tables_[0][0].contains_many({hashes, n}, present.data() + at);
    }
    return;
  }
  each_item(items, [&](std::size_t i, auto& links, const ItemHash& h) {
    present[i] = cuckoo_chain::contains(links, h) ? 1 : 0;
  });
}

void LocalCuckooStore::remove(std::span<const std::string_view> items,
                              std::span<std::uint8_t> removed) {
  require_writable("remove");
  check_flags(items.size(), removed.size());
  Lock lock(*this, true);
  each_item(items, [&](std::size_t i, auto& links, const ItemHash& h) {
    removed[i] = cuckoo_chain::remove(links, h) ? 1 : 0;
  });
}

void LocalCuckooStore::remove_known(std::span<const std::string_view> items,
                                    std::span<std::uint8_t> removed) {
  require_writable("remove");
  check_flags(items.size(), removed.size());
  Lock lock(*this, true);
  each_item(items, [&](std::size_t i, auto& links, const ItemHash& h) {
    removed[i] = cuckoo_chain::remove_known(links, h) == cuckoo_chain::RemoveKnown::removed ? 1 : 0;
  });
}

void LocalCuckooStore::count(std::span<const std::string_view> items,
                             std::span<std::uint32_t> counts) const {
  if (counts.size() < items.size()) check_flags(items.size(), counts.size());
  Lock lock(*this, false);
  each_item(items, [&](std::size_t i, auto& links, const ItemHash& h) {
    counts[i] = cuckoo_chain::count(links, h);
  });
}

std::optional<CuckooInfo> LocalCuckooStore::cuckoo_info() const {
  Lock lock(*this, false);
  CuckooInfo info;
  info.options = header_.options;
  for (std::uint32_t link = 0; link < shape_.max_links(); ++link) {
    CuckooLinkInfo row;
    row.link = link;
    row.fingerprint_bits = shape_.link(link).fingerprint_bits;
    row.capacity = shape_.link_capacity(link);
    for (const auto& partition : tables_) {
      if (link >= partition.size()) continue;
      row.items += partition[link].stored();
      row.bytes += shape_.link(link).bytes();
      row.partitions += 1;
    }
    if (row.partitions == 0) break;
    row.error_rate_now = shape_.link_rate_now(link, row.items);
    info.items += row.items;
    info.bytes += row.bytes;
    info.error_rate_now += row.error_rate_now;
    info.links.push_back(row);
  }
  return info;
}

std::uint64_t LocalCuckooStore::count_set_bits() const {
  return cuckoo_info()->items;
}

std::uint64_t LocalCuckooStore::storage_bytes() const {
  if (fd_ < 0) return cuckoo_info()->bytes;
  Lock lock(*this, false);
  return seen_file_size_;
}

void LocalCuckooStore::flush() {
  if (fd_ < 0 || access_ == FileAccess::read_only) return;
  Lock lock(*this, false);
  for (const auto& partition : links_) {
    for (const Link& link : partition) {
      if (::msync(link.bytes, link.size, MS_SYNC) != 0) {
        throw StorageError(errno_message("cannot sync " + path_));
      }
    }
  }
}

std::vector<std::uint32_t> LocalCuckooStore::link_counts() const {
  Lock lock(*this, false);
  std::vector<std::uint32_t> counts;
  for (const auto& links : links_) counts.push_back(static_cast<std::uint32_t>(links.size()));
  return counts;
}

std::vector<std::uint8_t> LocalCuckooStore::read_table(std::uint32_t partition,
                                                       std::uint32_t link) const {
  Lock lock(*this, false);
  if (partition >= links_.size() || link >= links_[partition].size()) {
    throw InvalidArgument("cuckoo filter " + location() + " has no link " + std::to_string(link) +
                          " in partition " + std::to_string(partition));
  }
  const Link& table = links_[partition][link];
  return {table.bytes, table.bytes + table.size};
}

void LocalCuckooStore::write_table(std::uint32_t partition, std::uint32_t link,
                                   std::span<const std::uint8_t> bytes) {
  require_writable("be written");
  Lock lock(*this, true);
  if (partition >= links_.size() || link >= shape_.max_links() ||
      bytes.size() != shape_.link(link).bytes()) {
    throw InvalidArgument("cuckoo filter " + location() + ": no link " + std::to_string(link) +
                          " of " + std::to_string(bytes.size()) + " bytes in partition " +
                          std::to_string(partition));
  }
  while (links_[partition].size() <= link) grow(partition);
  std::memcpy(links_[partition][link].bytes, bytes.data(), bytes.size());
}

std::string LocalCuckooStore::location() const {
  return fd_ < 0 ? std::string("memory") : path_;
}

}  // namespace redbloom
