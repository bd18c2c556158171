// The file companion: `<filter>.exact`, a 56-byte header, then records of 8-byte little-endian
// slots. Header (little-endian):
//
//    0  8  magic "RBEXACT1"
//    8  4  version: 2 (every slot adds its fingerprint), or 3 once a removal was written
//   12  4  generation: bumped by clear(), so other objects reread the file
//   16  8  the filter's creation time (ns): the filter this set belongs to (0: none recorded)
//   24  8  slots committed
//   32  8  checksum of the committed slots: the sum of mix(slot) mod 2^64
//   40  8  the fingerprint bits kept (all 64, unless the set came from Redis, which keeps fewer)
//   48  8  XXH3-64 of bytes 0..47
//
// Version 3 records: a slot other than kMarker adds it; kMarker, F (F != kMarker) removes F;
// kMarker, kMarker, 0 adds kMarker and kMarker, kMarker, 1 removes it. Removals are records
// like adds, so a removal commits, catches up and is checked as an add is.
//
// Records are appended under an exclusive flock, then committed by rewriting the header (one
// 56-byte write): a crash before it leaves records past the committed count, which are ignored
// and overwritten. Readers read the committed records under a shared flock and check their sum,
// so a damaged record, a damaged header or a foreign file is an error, never "absent". Each
// object catches up with what others appended (or rereads the file after their clear) before
// it adds or answers.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/cuckoo_file_format.hpp"
#include "core/exact_fingerprint.hpp"
#include "core/file_format.hpp"
#include "local/posix_file.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"

namespace redbloom {
namespace {

using posix::Fd;
using posix::file_size;

constexpr char kMagic[8] = {'R', 'B', 'E', 'X', 'A', 'C', 'T', '1'};
constexpr std::uint32_t kVersion = 2;
// With removal records (read by this redbloom only; version 2 files stay readable by older ones).
constexpr std::uint32_t kVersionWithRemovals = 3;
constexpr std::size_t kHeaderBytes = 56;
// The slot that starts a removal record (or an add of itself), in version 3.
constexpr std::uint64_t kMarker = 0x3156'4d52'5845'4252ull;  // "RBEXRMV1"

std::string companion_path(const std::string& filter_path) {
  return filter_path + ".exact";
}

// A strong 64-bit mixer (SplitMix64's finalizer): records are summed through it, so that a
// changed record changes the sum (plain sums of fingerprints would do too, but a byte flipped
// in two records could then cancel out).
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void put64(std::uint8_t* at, std::uint64_t value) {
  for (int b = 0; b < 8; ++b) at[b] = static_cast<std::uint8_t>(value >> (8 * b));
}
std::uint64_t get64(const std::uint8_t* at) {
  std::uint64_t value = 0;
  for (int b = 7; b >= 0; --b) value = (value << 8) | at[b];
  return value;
}
std::uint32_t get32(const std::uint8_t* at) {
  std::uint32_t value = 0;
  for (int b = 3; b >= 0; --b) value = (value << 8) | at[b];
  return value;
}

struct Header {
  std::uint32_t version = kVersion;
  std::uint32_t generation = 0;
  std::uint64_t filter_id = 0;
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  std::uint64_t mask = ~std::uint64_t{0};
};

std::array<std::uint8_t, kHeaderBytes> encode(const Header& h) {
  std::array<std::uint8_t, kHeaderBytes> bytes{};
  std::memcpy(bytes.data(), kMagic, sizeof kMagic);
  for (int b = 0; b < 4; ++b) bytes[8 + b] = static_cast<std::uint8_t>(h.version >> (8 * b));
  for (int b = 0; b < 4; ++b) bytes[12 + b] = static_cast<std::uint8_t>(h.generation >> (8 * b));
  put64(&bytes[16], h.filter_id);
  put64(&bytes[24], h.count);
  put64(&bytes[32], h.sum);
  put64(&bytes[40], h.mask);
  put64(&bytes[48], XXH3_64bits(bytes.data(), 48));
  return bytes;
}

// The slots of one record (see the top): an add, or a removal with `removal`.
void append_record(std::vector<std::uint64_t>& slots, std::uint64_t f, bool removal) {
  if (f != kMarker) {
    if (removal) slots.push_back(kMarker);
    slots.push_back(f);
    return;
  }
  slots.insert(slots.end(), {kMarker, kMarker, removal ? 1u : 0u});
}

// Turns slots back into records, slot by slot (records may span the chunks a reader streams).
class RecordDecoder {
 public:
  explicit RecordDecoder(std::uint32_t version) : with_removals_(version == kVersionWithRemovals) {}

  // Calls record(fingerprint, removal) once a record is complete; false for slots no writer
  // makes (the caller reports the set damaged).
  template <class Record>
  [[nodiscard]] bool feed(std::uint64_t slot, Record&& record) {
    if (!with_removals_) {
      record(slot, false);
      return true;
    }
    switch (pending_) {
      case 0:
        if (slot == kMarker) {
          pending_ = 1;
        } else {
          record(slot, false);
        }
        return true;
      case 1:
        if (slot == kMarker) {
          pending_ = 2;
        } else {
          pending_ = 0;
          record(slot, true);
        }
        return true;
      default:
        pending_ = 0;
        if (slot > 1) return false;
        record(kMarker, slot == 1);
        return true;
    }
  }
  // No record cut short.
  [[nodiscard]] bool complete() const noexcept { return pending_ == 0; }

 private:
  bool with_removals_;
  int pending_ = 0;  // marker slots read of the record in hand
};

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

[[noreturn]] void damaged(const std::string& path, const std::string& what) {
  throw FormatError(path + ": the exact set is damaged (" + what +
                    "): its answers cannot be trusted; rebuild it: create the filter anew with "
                    "--force --exact and load the items again");
}

// Reads and checks the header: FormatError for a foreign, old, damaged or truncated file.
Header read_header(int fd, const std::string& path) {
  const std::uint64_t size = file_size(fd, path);
  if (size < 16) throw FormatError(path + ": not an exact set (too short)");
  const auto start = read_range(fd, 0, std::min<std::uint64_t>(size, kHeaderBytes), path);
  if (std::memcmp(start.data(), kMagic, sizeof kMagic) != 0) {
    throw FormatError(path + ": not a redbloom exact set (no RBEXACT1 signature)");
  }
  const std::uint32_t version = get32(&start[8]);
  if (version != kVersion && version != kVersionWithRemovals) {
    throw FormatError(path + ": exact-set version " + std::to_string(version) +
                      (version < kVersion ? " (from an older redbloom, without integrity checks): "
                                            "rebuild it with create --force --exact and a load"
                                          : " is unknown to this redbloom"));
  }
  if (size < kHeaderBytes) damaged(path, "its header is cut short");
  if (get64(&start[48]) != XXH3_64bits(start.data(), 48)) damaged(path, "header checksum");
  Header h;
  h.version = version;
  h.generation = get32(&start[12]);
  h.filter_id = get64(&start[16]);
  h.count = get64(&start[24]);
  h.sum = get64(&start[32]);
  h.mask = get64(&start[40]);
  if (size < kHeaderBytes + h.count * 8) {
    damaged(path, "it holds fewer records than its header commits");
  }
  return h;
}

// The creation time of the filter file at `filter_path` (the id an exact set is bound to), or
// 0 if there is no filter file there.
std::uint64_t filter_id_of(const std::string& filter_path) {
  int raw = -1;
  try {
    raw = posix::open_regular(filter_path, O_RDONLY, "filter");
  } catch (const FormatError&) {
    return 0;  // not a filter: nothing to bind to (the filter's own open reports it)
  }
  const Fd fd(raw);
  if (fd.get() < 0) return 0;
  const std::uint64_t size = file_size(fd.get(), filter_path);
  if (size < kFileHeaderUsedBytes) return 0;
  const auto prefix = read_range(fd.get(), 0, kFileHeaderUsedBytes, filter_path);
  try {
    if (has_cuckoo_magic(prefix)) {
      if (size < kCuckooDirectoryOffset) return 0;
      const std::uint64_t header_bytes =
          cuckoo_header_bytes(read_range(fd.get(), 0, kCuckooDirectoryOffset, filter_path));
      if (size < header_bytes) return 0;
      return parse_cuckoo_file_header(read_range(fd.get(), 0, header_bytes, filter_path), size)
          .created_unix_ns;
    }
    return parse_file_header(prefix, size).created_unix_ns;
  } catch (const FormatError&) {
    return 0;  // not a filter: nothing to bind to (the filter's own open reports it)
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
    refresh();
  }

  std::size_t add(std::span<const std::string_view> items) override {
    std::vector<std::uint64_t> fresh;
    fresh.reserve(items.size());
    for (std::string_view item : items) fresh.push_back(exact_fingerprint(item));
    return add_fingerprints(fresh);
  }

  std::size_t add_fingerprints(std::span<const std::uint64_t> fingerprints) override {
    std::vector<std::uint64_t> fresh(fingerprints.begin(), fingerprints.end());
    for (std::uint64_t& f : fresh) f &= header_.mask;
    std::sort(fresh.begin(), fresh.end());
    fresh.erase(std::unique(fresh.begin(), fresh.end()), fresh.end());
    FlockGuard lock(fd_.get(), path_);
    // Other writers may have appended since: read their records first, so that no item is
    // stored twice by two processes taking turns.
    refresh();
    std::erase_if(fresh, [&](std::uint64_t f) { return has(f); });
    if (fresh.empty()) return 0;
    std::vector<std::uint64_t> slots;
    slots.reserve(fresh.size());
    for (const std::uint64_t f : fresh) append_record(slots, f, false);
    // The marker added is escaped, which only version 3 reads (the set lacked it, so no
    // version 2 slot holds it).
    commit(slots, slots.size() != fresh.size());
    merge(fresh);
    return fresh.size();
  }

  std::size_t remove(std::span<const std::string_view> items,
                     std::span<std::uint8_t> removed) override {
    std::vector<std::uint64_t> fingerprints;
    fingerprints.reserve(items.size());
    for (std::string_view item : items) fingerprints.push_back(exact_fingerprint(item));
    return remove_fingerprints(fingerprints, removed);
  }

  std::size_t remove_fingerprints(std::span<const std::uint64_t> fingerprints,
                                  std::span<std::uint8_t> removed) override {
    if (!removed.empty() && removed.size() < fingerprints.size()) {
      throw InvalidArgument("exact set: flag span too small");
    }
    FlockGuard lock(fd_.get(), path_);
    // What other objects committed counts: an item they added is removed, one they removed
    // is not removed twice.
    refresh();
    std::vector<std::uint8_t> flags(fingerprints.size());
    std::unordered_set<std::uint64_t> taken;
    std::vector<std::uint64_t> gone;
    for (std::size_t i = 0; i < fingerprints.size(); ++i) {
      const std::uint64_t f = fingerprints[i] & header_.mask;
      if (has(f) && taken.insert(f).second) {
        flags[i] = 1;
        gone.push_back(f);
      }
    }
    if (!gone.empty()) {
      // Version 2 slots are all adds: one equal to the marker would be read as a removal's
      // start once the file is version 3 (odds: entries / 2^64).
      if (header_.version == kVersion && has(kMarker)) {
        throw StorageError(path_ +
                           ": this exact set holds a fingerprint equal to the marker that starts "
                           "a removal (a chance of about one in 2^64 per item), so it cannot take "
                           "removals; create the filter anew with --force --exact and load it");
      }
      std::vector<std::uint64_t> slots;
      slots.reserve(gone.size() * 2);
      for (const std::uint64_t f : gone) append_record(slots, f, true);
      commit(slots, true);
      drop(gone);
    }
    if (!removed.empty()) std::copy(flags.begin(), flags.end(), removed.begin());
    return gone.size();
  }

  void contains(std::span<const std::string_view> items, std::span<std::uint8_t> present) override {
    if (present.size() < items.size()) throw InvalidArgument("exact set: flag span too small");
    // An item another process added to the filter since this set was read is in the file by
    // now (the companion is written first): read it, or it would be called missing.
    refresh_if_changed();
    for (std::size_t i = 0; i < items.size(); ++i) {
      present[i] = has(exact_fingerprint(items[i]) & header_.mask);
    }
  }

  [[nodiscard]] std::uint64_t fingerprint_mask() const override { return header_.mask; }

  void for_each_fingerprint(
      const std::function<void(std::span<const std::uint64_t>)>& batch) const override {
    refresh_if_changed();
    constexpr std::size_t kBatch = std::size_t{1} << 16;
    for (std::size_t at = 0; at < sorted_.size(); at += kBatch) {
      batch(std::span<const std::uint64_t>(sorted_).subspan(at,
                                                            std::min(kBatch, sorted_.size() - at)));
    }
  }

  void clear() override {
    FlockGuard lock(fd_.get(), path_);
    refresh();
    // A new generation tells other objects on the file to reread it.
    Header next = header_;
    ++next.generation;
    next.version = kVersion;  // no removal records left
    next.count = 0;
    next.sum = 0;
    write_header(next);
    if (::ftruncate(fd_.get(), kHeaderBytes) != 0) {
      throw StorageError(errno_message("cannot truncate " + path_));
    }
    sorted_.clear();
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
    return static_cast<double>(entries()) / std::ldexp(1.0, std::popcount(header_.mask));
  }
  [[nodiscard]] std::string location() const override { return "file " + path_; }
  [[nodiscard]] std::uint64_t filter_id() const override { return header_.filter_id; }

 private:
  [[nodiscard]] bool has(std::uint64_t f) const {
    return std::binary_search(sorted_.begin(), sorted_.end(), f);
  }
  void merge(const std::vector<std::uint64_t>& more) const {
    const auto middle = static_cast<std::ptrdiff_t>(sorted_.size());
    sorted_.insert(sorted_.end(), more.begin(), more.end());
    std::inplace_merge(sorted_.begin(), sorted_.begin() + middle, sorted_.end());
  }
  // Under the exclusive lock: appends the slots past the committed ones (over any an append
  // that never committed left), then commits them by rewriting the header; `removals`: they
  // need version 3.
  void commit(const std::vector<std::uint64_t>& slots, bool removals) {
    std::vector<std::uint8_t> bytes(slots.size() * 8);
    std::uint64_t sum = header_.sum;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      put64(&bytes[i * 8], slots[i]);
      sum += mix(slots[i]);
    }
    posix::write_at(fd_.get(), bytes.data(), bytes.size(), kHeaderBytes + header_.count * 8, path_);
    Header next = header_;
    if (removals) next.version = kVersionWithRemovals;
    next.count += slots.size();
    next.sum = sum;
    write_header(next);
  }
  // Removes one copy of each of `gone` (held, distinct) from sorted_.
  void drop(std::vector<std::uint64_t> gone) const {
    std::sort(gone.begin(), gone.end());
    std::vector<std::uint64_t> kept;
    kept.reserve(sorted_.size() - gone.size());
    auto next = gone.begin();
    for (const std::uint64_t f : sorted_) {
      if (next != gone.end() && *next == f) {
        ++next;
        continue;
      }
      kept.push_back(f);
    }
    sorted_ = std::move(kept);
  }
  // Applies committed slots read from the file, in order.
  void apply(const std::vector<std::uint64_t>& slots, std::uint32_t version) const {
    if (version == kVersion || std::find(slots.begin(), slots.end(), kMarker) == slots.end()) {
      std::vector<std::uint64_t> more = slots;  // adds alone: sorted in
      std::sort(more.begin(), more.end());
      merge(more);
      return;
    }
    // Net copies per fingerprint; a removal must find one (held before, or added earlier).
    std::unordered_map<std::uint64_t, std::int64_t> net;
    RecordDecoder decoder(version);
    bool consistent = true;
    for (const std::uint64_t slot : slots) {
      consistent &= decoder.feed(slot, [&](std::uint64_t f, bool removal) {
        std::int64_t& n = net[f];
        if (!removal) {
          ++n;
          return;
        }
        const auto held = std::equal_range(sorted_.begin(), sorted_.end(), f);
        consistent &= static_cast<std::int64_t>(held.second - held.first) + n > 0;
        --n;
      });
    }
    if (!consistent || !decoder.complete()) {
      damaged(path_, "a removal record names no fingerprint it holds, or is cut short");
    }
    std::vector<std::uint64_t> added;
    std::vector<std::uint64_t> gone;
    for (const auto& [f, n] : net) {
      for (std::int64_t k = 0; k < n; ++k) added.push_back(f);
      for (std::int64_t k = 0; k < -n; ++k) gone.push_back(f);
    }
    // A fingerprint is removed at most once per set it holds, so `gone` is distinct.
    drop(std::move(gone));
    std::sort(added.begin(), added.end());
    merge(added);
  }
  void write_header(const Header& next) {
    const auto bytes = encode(next);
    posix::write_at(fd_.get(), bytes.data(), bytes.size(), 0, path_);
    header_ = next;
  }
  // With no lock held: refresh() if the header is not what this object read (a cheap check,
  // then the shared lock so that no append is seen in part).
  void refresh_if_changed() const {
    const auto bytes = read_range(
        fd_.get(), 0, std::min<std::uint64_t>(kHeaderBytes, file_size(fd_.get(), path_)), path_);
    if (bytes.size() == kHeaderBytes && get32(&bytes[12]) == header_.generation &&
        get64(&bytes[24]) == header_.count && get64(&bytes[48]) == XXH3_64bits(bytes.data(), 48)) {
      return;
    }
    FlockGuard lock(fd_.get(), path_, LOCK_SH);
    refresh();
  }
  // Under the lock: reads the records other objects committed since, or all of them again
  // after a clear, and checks their sum against the header's.
  void refresh() const {
    const Header now = read_header(fd_.get(), path_);
    std::uint64_t from = header_.count;
    std::uint64_t sum = header_.sum;
    if (!read_once_ || now.generation != header_.generation || now.count < header_.count) {
      sorted_.clear();
      from = 0;
      sum = 0;
    }
    if (now.count > from) {
      const auto bytes =
          read_range(fd_.get(), kHeaderBytes + from * 8, (now.count - from) * 8, path_);
      std::vector<std::uint64_t> more(now.count - from);
      for (std::size_t i = 0; i < more.size(); ++i) {
        more[i] = get64(&bytes[i * 8]);
        sum += mix(more[i]);
      }
      if (sum != now.sum) damaged(path_, "the checksum of its records does not match");
      // Commits end on a record's end: slots from here start a record.
      apply(more, now.version);
    } else if (sum != now.sum) {
      damaged(path_, "the checksum of its records does not match");
    }
    header_ = now;
    read_once_ = true;
  }

  std::string path_;
  Fd fd_;
  // What this object has read of the file; refreshed by readers too, hence mutable.
  mutable Header header_;
  mutable bool read_once_ = false;
  mutable std::vector<std::uint64_t> sorted_;
};

}  // namespace

std::unique_ptr<ExactSet> create_file_exact_set(const std::string& filter_path, bool overwrite,
                                                std::uint64_t mask) {
  const std::string path = companion_path(filter_path);
  Header header;
  header.filter_id = filter_id_of(filter_path);
  header.mask = mask;
  // Appears complete or not at all: a racing creator that loses and opens this one never sees
  // it without its header.
  const int fd = posix::create_atomically(
      path, overwrite, "exact set", [&](int temp_fd, const std::string& temp) {
        const auto bytes = encode(header);
        posix::write_at(temp_fd, bytes.data(), bytes.size(), 0, temp);
      });
  return std::make_unique<FileExactSet>(path, fd);
}

namespace {

// Opens the companion of `filter_path`: NotFound if there is none; a FIFO or anything but a
// regular file is refused before it can block.
Fd open_companion(const std::string& filter_path, int flags) {
  const std::string path = companion_path(filter_path);
  Fd fd(posix::open_regular(path, flags, "exact set"));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      throw NotFound("filter " + filter_path + " has no exact set (" + path +
                     "): " + how_to_get_exact_set(FilterContents::unknown, false, filter_path));
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
  FlockGuard lock(fd.get(), path, LOCK_SH);
  const Header header = read_header(fd.get(), path);
  // The slots are checked, not kept: streamed through their sum, records counted.
  constexpr std::uint64_t kChunkRecords = std::uint64_t{1} << 17;
  std::uint64_t sum = 0;
  std::uint64_t entries = 0;
  bool consistent = true;
  RecordDecoder decoder(header.version);
  for (std::uint64_t at = 0; at < header.count; at += kChunkRecords) {
    const std::uint64_t n = std::min(kChunkRecords, header.count - at);
    const auto bytes = read_range(fd.get(), kHeaderBytes + at * 8, n * 8, path);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t slot = get64(&bytes[i * 8]);
      sum += mix(slot);
      consistent &= decoder.feed(slot, [&](std::uint64_t, bool removal) {
        consistent &= !removal || entries > 0;
        entries = removal ? entries - 1 : entries + 1;
      });
    }
  }
  if (sum != header.sum) damaged(path, "the checksum of its records does not match");
  if (!consistent || !decoder.complete()) {
    damaged(path, "a removal record names no fingerprint it holds, or is cut short");
  }
  return {"file " + path, entries, file_size(fd.get(), path),
          static_cast<double>(entries) / std::ldexp(1.0, std::popcount(header.mask))};
}

bool file_exact_set_exists(const std::string& filter_path) {
  struct stat st {};
  return ::stat(companion_path(filter_path).c_str(), &st) == 0;
}

void remove_file_exact_set(const std::string& filter_path) {
  const std::string path = companion_path(filter_path);
  {
    // Never delete a file that is not one (its signature says; a damaged or older one goes).
    const Fd fd = open_companion(filter_path, O_RDONLY);
    if (file_size(fd.get(), path) < sizeof kMagic ||
        std::memcmp(read_range(fd.get(), 0, sizeof kMagic, path).data(), kMagic, sizeof kMagic) !=
            0) {
      throw FormatError(path + ": not a redbloom exact set (no RBEXACT1 signature): not deleted");
    }
  }
  if (::unlink(path.c_str()) != 0) throw StorageError(errno_message("cannot delete " + path));
}

bool remove_stale_file_exact_set(const std::string& filter_path) {
  const std::string path = companion_path(filter_path);
  Fd fd(posix::open_regular(path, O_RDONLY, "exact set"));
  if (fd.get() < 0) {
    if (errno == ENOENT) return false;
    throw StorageError(errno_message("cannot open " + path));
  }
  // Under the companion's lock, as its writers hold it: a companion bound to the filter now
  // at the path (made by a process that opened it) is never the one removed.
  FlockGuard lock(fd.get(), path);
  if (file_size(fd.get(), path) < sizeof kMagic ||
      std::memcmp(read_range(fd.get(), 0, sizeof kMagic, path).data(), kMagic, sizeof kMagic) !=
          0) {
    return false;  // not an exact set: never removed
  }
  std::uint64_t bound = 0;
  try {
    bound = read_header(fd.get(), path).filter_id;
  } catch (const FormatError&) {
    bound = 0;  // an older or damaged companion is not this filter's
  }
  const std::uint64_t current = filter_id_of(filter_path);
  if (bound != 0 && bound == current) return false;
  // The path may name another file by now (a racing remover took this one, a writer made the
  // new filter's): only the file this lock holds is removed.
  struct stat held {};
  struct stat named {};
  if (::fstat(fd.get(), &held) != 0 || ::stat(path.c_str(), &named) != 0 ||
      held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
    return false;
  }
  if (::unlink(path.c_str()) != 0) throw StorageError(errno_message("cannot delete " + path));
  return true;
}

}  // namespace redbloom
