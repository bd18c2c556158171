#include "redbloom/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/crc32c.hpp"

namespace redbloom {
namespace {

constexpr std::string_view kHeader = "redbloom dedup journal 2\n";
// The first format: the same records, without the one that names the filter.
constexpr std::string_view kHeaderFormat1 = "redbloom dedup journal 1\n";
// Where a checkpoint writes the new journal before renaming it over the old one.
constexpr std::string_view kCheckpointSuffix = ".checkpoint";
constexpr std::size_t kRecordHead = 9;  // u32 size, u32 checksum, u8 type
constexpr char kPending = 'P';          // payload: u64 sequence number, then keys
constexpr char kBegin = 'B';            // payload: u64 sequence number, then keys
constexpr char kDone = 'D';             // payload: u64 sequence number
constexpr char kNew = 'N';              // payload: u64 sequence number, a bit per key
constexpr char kFilter = 'F';           // payload: u64 sequence number, u64 creation time, location

void put_u32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}
void put_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}
void set_u32(std::string& out, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}
std::uint64_t get_le(std::string_view bytes, std::size_t at, int size) {
  std::uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  }
  return value;
}

void write_all(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw JournalError(errno_message("write failed"));
    done += static_cast<std::size_t>(n);
  }
}

std::string read_all(int fd, const std::string& path) {
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::pread(fd, chunk, sizeof chunk, static_cast<off_t>(bytes.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw JournalError(errno_message("cannot read the journal " + path));
    if (n == 0) return bytes;
    bytes.append(chunk, static_cast<std::size_t>(n));
  }
}

void sync_directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw JournalError(errno_message("cannot open the journal's directory " + dir));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) {
    errno = saved;
    throw JournalError(errno_message("cannot sync the journal's directory " + dir));
  }
}

// Opens `path` and takes its exclusive lock; the file the name points to afterwards (another
// stage's checkpoint may have replaced it between the open and the lock).
InvalidArgument not_a_file(const std::string& path) {
  return InvalidArgument("the journal " + path +
                         " is not a regular file (a device, a pipe or a directory): --journal "
                         "takes a file, created if missing");
}

int open_locked(const std::string& path, int flags) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    struct stat named {};
    // Before opening: a FIFO or a device must not be opened at all.
    if (::stat(path.c_str(), &named) == 0 && !S_ISREG(named.st_mode)) throw not_a_file(path);
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd < 0) throw JournalError(errno_message("cannot open the journal " + path));
    if (struct stat opened{}; ::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
      ::close(fd);
      throw not_a_file(path);
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(fd);
      if (error == EWOULDBLOCK) {
        throw InvalidArgument("the journal " + path +
                              " is in use by another running dedup: give each stage its own "
                              "journal (and its own filter)");
      }
      errno = error;
      throw JournalError(errno_message("cannot lock the journal " + path));
    }
    struct stat held {};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      return fd;
    }
    ::close(fd);
  }
  throw InvalidArgument("the journal " + path +
                        " keeps being replaced by another running dedup: give each stage its "
                        "own journal");
}

// "2026-11-28 12:40:05 UTC"; "an unrecorded time" for 0.
std::string utc_text(std::uint64_t unix_ns) {
  if (unix_ns == 0) return "an unrecorded time";
  const std::time_t seconds = static_cast<std::time_t>(unix_ns / 1000000000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

std::string filter_text(const JournalFilter& filter) {
  return filter.location + " (created " + utc_text(filter.created_unix_ns) + ")";
}

void append_keys(std::string& out, const auto& keys) {
  for (const auto& key : keys) {
    put_u32(out, static_cast<std::uint32_t>(key.size()));
    out.append(key.data(), key.size());
  }
}

}  // namespace

Journal::Journal(std::string path, std::uint64_t checkpoint_bytes)
    : path_(std::move(path)), checkpoint_bytes_(checkpoint_bytes) {
  fd_ = open_locked(path_, O_RDWR | O_CREAT | O_APPEND);
  try {
    remove_checkpoint_leftover();
    const std::string bytes = read_all(fd_, path_);
    if (bytes.size() < kHeader.size() && kHeader.starts_with(bytes)) {
      // New, or its creation was cut short: nothing was ever committed under it.
      if (::ftruncate(fd_, 0) != 0) throw JournalError(errno_message("cannot reset " + path_));
      write_all(fd_, kHeader);
      if (::fdatasync(fd_) != 0) throw JournalError(errno_message("cannot sync " + path_));
      sync_directory_of(path_);
      size_ = kHeader.size();
      rewrite_due_ = true;  // the filter is named once bound
      return;
    }
    if (!bytes.starts_with(kHeader) && !bytes.starts_with(kHeaderFormat1)) {
      throw JournalError(path_ +
                         " is not a dedup journal: name a new file for --journal (it is created), "
                         "or move this one aside");
    }
    if (struct stat st{}; ::fstat(fd_, &st) == 0) {
      last_write_unix_ns_ = static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
                            static_cast<std::uint64_t>(st.st_mtim.tv_nsec);
    }
    replay(bytes);
    // A format 1 journal is rewritten in format 2 once bound.
    if (bytes.starts_with(kHeaderFormat1)) rewrite_due_ = true;
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

void Journal::remove_checkpoint_leftover() const {
  // A checkpoint the crash interrupted (the journal itself is still whole); a file of that name
  // that is no journal is left alone, and checkpoint() then says it is in the way.
  const std::string tmp = path_ + std::string(kCheckpointSuffix);
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char head[kHeader.size()];
  ssize_t n = 0;
  do {
    n = ::pread(fd, head, sizeof head, 0);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n >= 0 && kHeader.starts_with(std::string_view(head, static_cast<std::size_t>(n)))) {
    ::unlink(tmp.c_str());
  }
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::replay(std::string_view bytes) {
  // long: one pass over the records with each type's rule beside the others'; split up, the
  // rules that relate records (a batch's begin, its new keys, its mark) would read apart.
  std::size_t at = kHeader.size();
  std::vector<std::string_view> batch;  // the keys of the batch begun and not yet done
  std::string_view fresh;               // its bits of keys printed as new, if recorded
  bool have_fresh = false;
  bool open = false;
  auto damaged = [&](std::size_t where, const std::string& what) {
    return JournalError("the journal " + path_ + " is damaged at byte " + std::to_string(where) +
                        " (" + what +
                        "), and cannot tell which keys the filter holds that were never "
                        "printed. Keep it for inspection and name a new --journal file: the "
                        "records of the batch in hand at the last crash may then be missing "
                        "from the output");
  };
  auto read_keys = [&](std::string_view payload, std::size_t where, auto&& each) {
    std::size_t k = 8;
    while (k < payload.size()) {
      if (payload.size() - k < 4) throw damaged(where, "a key's length is cut short");
      const std::uint64_t size = get_le(payload, k, 4);
      k += 4;
      if (payload.size() - k < size) throw damaged(where, "a key runs past its record");
      each(payload.substr(k, static_cast<std::size_t>(size)));
      k += static_cast<std::size_t>(size);
    }
  };
  std::size_t good_end = at;
  std::size_t filter_end = 0;  // where the record after the filter's name starts
  while (at < bytes.size()) {
    const std::size_t left = bytes.size() - at;
    if (bytes.find_first_not_of('\0', at) == std::string_view::npos) {
      zero_tail_ = true;  // space the file system gave the file, whose data never came
      break;
    }
    const std::uint64_t size = left >= kRecordHead ? get_le(bytes, at, 4) : 0;
    if (left < kRecordHead || size > left - kRecordHead) {
      torn_ = true;  // the last write, cut short
      break;
    }
    const std::size_t end = at + kRecordHead + static_cast<std::size_t>(size);
    const std::string_view typed = bytes.substr(at + 8, 1 + static_cast<std::size_t>(size));
    if (crc32c(typed) != static_cast<std::uint32_t>(get_le(bytes, at + 4, 4))) {
      if (end == bytes.size() || bytes.find_first_not_of('\0', end) == std::string_view::npos) {
        torn_ = true;
        break;
      }
      throw damaged(at, "a record's checksum does not match, and records follow it");
    }
    const char type = typed[0];
    const std::string_view payload = typed.substr(1);
    if (payload.size() < 8) throw damaged(at, "a record too short for its sequence number");
    const std::uint64_t seq = get_le(payload, 0, 8);
    switch (type) {
      case kFilter: {
        if (at != kHeader.size()) throw damaged(at, "the filter's name after the first record");
        if (payload.size() < 16) throw damaged(at, "the filter's name cut short");
        filter_ = JournalFilter{std::string(payload.substr(16)), get_le(payload, 8, 8)};
        seq_ = seq;
        break;
      }
      case kPending:
        if (at != kHeader.size() && !(filter_ && at == filter_end)) {
          throw damaged(at, "pending keys after the first record");
        }
        read_keys(payload, at, [&](std::string_view key) {
          pending_.emplace(key);
          replay_.emplace_back(key);
        });
        seq_ = seq;
        break;
      case kBegin:
        if (open) throw damaged(at, "a batch begins before the one before it is done");
        batch.clear();
        have_fresh = false;
        read_keys(payload, at, [&](std::string_view key) {
          batch.push_back(key);
          replay_.emplace_back(key);
        });
        seq_ = seq;
        open = true;
        break;
      case kNew:
        if (!open || seq != seq_ || have_fresh || payload.size() - 8 != (batch.size() + 7) / 8) {
          throw damaged(at, "a batch's new keys that do not match the batch");
        }
        fresh = payload.substr(8);
        have_fresh = true;
        break;
      case kDone:
        if (!open || seq != seq_) throw damaged(at, "a batch marked done that was not begun");
        // Every key of a finished batch was printed then (new, pending, or printed before).
        for (const std::string_view key : batch) {
          if (const auto it = pending_.find(key); it != pending_.end()) pending_.erase(it);
        }
        open = false;
        break;
      default:
        throw damaged(at, "a record of unknown type");
    }
    at = end;
    good_end = at;
    if (type == kFilter) filter_end = at;
  }
  ends_inside_batch_ = open && !torn_ && !zero_tail_;
  if (open) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (have_fresh && (static_cast<unsigned char>(fresh[i / 8]) & (1u << (i % 8))) == 0) {
        continue;  // a duplicate of a key printed before
      }
      pending_.emplace(batch[i]);
      ++unfinished_;
    }
  }
  if (good_end < bytes.size()) {
    // Appends must follow the last whole record.
    if (::ftruncate(fd_, static_cast<off_t>(good_end)) != 0 || ::fdatasync(fd_) != 0) {
      throw JournalError(errno_message("cannot cut the torn last record off " + path_));
    }
  }
  size_ = good_end;
}

void Journal::bind(const JournalFilter& filter) {
  if (filter_ && *filter_ == filter) return;
  const std::size_t keys = replay_.size();
  if (keys != 0) {
    const std::string holds = " holds " + std::to_string(keys) + " keys of it (" +
                              std::to_string(pending_.size()) +
                              " pending: records committed and not yet printed)";
    const std::string what_to_do =
        ". Adding its keys to this filter would make it call their records duplicates. Run "
        "with the journal's filter to finish its work; to start over with this filter, name a "
        "new --journal file (and keep this one until its filter's run has printed them)";
    if (filter_) {
      const bool same_place = filter_->location == filter.location;
      const bool newer =
          filter.created_unix_ns > filter_->created_unix_ns && filter_->created_unix_ns != 0;
      if (same_place && newer) {
        throw InvalidArgument("the journal " + path_ + " belongs to the filter " +
                              filter_text(*filter_) + " and" + holds +
                              "; the filter there now "
                              "was created " +
                              utc_text(filter.created_unix_ns) +
                              ", after it (deleted and made again?)" + what_to_do);
      }
      throw InvalidArgument("the journal " + path_ + " belongs to the filter " +
                            filter_text(*filter_) + " and" + holds + "; this run's filter is " +
                            filter_text(filter) +
                            (same_place ? ""
                                        : ", another filter (or the same one reached by "
                                          "another name: then use the journal's name)") +
                            what_to_do);
    }
    // Format 1 names no filter: the one made after the journal's last write is surely not its.
    if (filter.created_unix_ns > last_write_unix_ns_) {
      throw InvalidArgument("the journal " + path_ +
                            " names no filter (an earlier version "
                            "wrote it) and was last written " +
                            utc_text(last_write_unix_ns_) + " and" + holds + "; the filter " +
                            filter_text(filter) +
                            " was made after it, so it is not the "
                            "journal's filter" +
                            what_to_do);
    }
    took_unnamed_ = true;
  }
  filter_ = filter;
  rewrite_due_ = true;
}

bool Journal::take_pending(std::string_view key) {
  if (pending_.empty()) return false;
  const auto it = pending_.find(key);
  if (it == pending_.end()) return false;
  pending_.erase(it);
  return true;
}

void Journal::write_record() {
  set_u32(scratch_, 0, static_cast<std::uint32_t>(scratch_.size() - kRecordHead));
  set_u32(scratch_, 4, crc32c(std::string_view(scratch_).substr(8)));
  try {
    write_all(fd_, scratch_);
  } catch (const JournalError& e) {
    throw JournalError("cannot write the journal " + path_ + " (" + e.what() + ")");
  }
}

void Journal::begin(std::span<const std::string_view> keys) {
  scratch_.assign(kRecordHead, '\0');
  scratch_[8] = kBegin;
  put_u64(scratch_, seq_ + 1);
  append_keys(scratch_, keys);
  write_record();
  if (::fdatasync(fd_) != 0) throw JournalError(errno_message("cannot sync the journal " + path_));
  size_ += scratch_.size();
  ++seq_;
  open_batch_ = true;
}

void Journal::committed(std::span<const std::uint8_t> flags, std::size_t count) {
  scratch_.assign(kRecordHead, '\0');
  scratch_[8] = kNew;
  put_u64(scratch_, seq_);
  const std::size_t bits = scratch_.size();
  scratch_.append((count + 7) / 8, '\0');
  for (std::size_t i = 0; i < count; ++i) {
    if (flags[i] != 0)
      scratch_[bits + i / 8] = static_cast<char>(scratch_[bits + i / 8] | (1 << (i % 8)));
  }
  write_record();
  size_ += scratch_.size();
}

void Journal::done() {
  scratch_.assign(kRecordHead, '\0');
  scratch_[8] = kDone;
  put_u64(scratch_, seq_);
  write_record();
  size_ += scratch_.size();
  open_batch_ = false;
}

void Journal::checkpoint() {
  const std::string tmp = path_ + std::string(kCheckpointSuffix);
  remove_checkpoint_leftover();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw JournalError(
        errno_message("cannot create " + tmp) +
        (errno == EEXIST ? " (a file that is not a journal is in the way: move it)" : "") +
        "; the journal " + path_ + " is still whole and is replayed by the next run");
  }
  try {
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      throw JournalError(errno_message("cannot lock " + tmp));
    }
    scratch_.assign(kHeader);
    if (filter_) {
      const std::size_t named = scratch_.size();
      scratch_.append(kRecordHead, '\0');
      scratch_[named + 8] = kFilter;
      put_u64(scratch_, seq_);
      put_u64(scratch_, filter_->created_unix_ns);
      scratch_.append(filter_->location);
      set_u32(scratch_, named, static_cast<std::uint32_t>(scratch_.size() - named - kRecordHead));
      set_u32(scratch_, named + 4, crc32c(std::string_view(scratch_).substr(named + 8)));
    }
    const std::size_t record = scratch_.size();
    scratch_.append(kRecordHead, '\0');
    scratch_[record + 8] = kPending;
    put_u64(scratch_, seq_);
    append_keys(scratch_, pending_);
    set_u32(scratch_, record, static_cast<std::uint32_t>(scratch_.size() - record - kRecordHead));
    set_u32(scratch_, record + 4, crc32c(std::string_view(scratch_).substr(record + 8)));
    write_all(fd, scratch_);
    if (::fdatasync(fd) != 0) throw JournalError(errno_message("cannot sync " + tmp));
    if (::rename(tmp.c_str(), path_.c_str()) != 0) {
      throw JournalError(errno_message("cannot replace " + path_ + " by " + tmp));
    }
    sync_directory_of(path_);
  } catch (const JournalError& e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw JournalError(std::string(e.what()) + "; the journal " + path_ +
                       " is still whole and is replayed by the next run");
  }
  ::close(fd_);
  fd_ = fd;
  size_ = scratch_.size();
  replay_.clear();
  replay_.shrink_to_fit();
  unfinished_ = 0;
  torn_ = false;
  zero_tail_ = false;
  ends_inside_batch_ = false;
  rewrite_due_ = false;
}

}  // namespace redbloom
