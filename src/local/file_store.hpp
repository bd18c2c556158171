// The embedded default: a filter in a memory-mapped file (format in file_format.hpp).
//
// Concurrency: any number of processes may open one file. Readers take no lock. Writers
// serialise each batch with an open-file-description lock (fcntl F_OFD_SETLKW) on the
// header's first byte, so an item's test-and-set is atomic across processes: of several
// `dedup` processes meeting the same item, exactly one sees it as new. (Per-word atomic
// fetch-or is not enough for that: an item's k bits span several words, and two writers
// can each flip a different one of them and both conclude "new".) The kernel drops the lock
// when a process dies, so a crash never leaves the filter locked.
//
// Durability: writes go to the page cache through a MAP_SHARED mapping. They survive the
// process being killed; they survive a machine crash only once flush() (msync) returned.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/file_format.hpp"
#include "local/bitmap_store.hpp"
#include "redbloom/file_access.hpp"

namespace redbloom {

class FileStore final : public BitmapStore {
 public:
  using Access = FileAccess;

  // Creates a zeroed filter file. The file appears atomically, complete, or not at all; if
  // `path` exists, throws FilterExists unless `overwrite`.
  static std::unique_ptr<FileStore> create(const std::string& path, const FilterParams& params,
                                           bool overwrite = false);
  // Opens an existing filter; throws FormatError for anything that is not a sound filter file.
  static std::unique_ptr<FileStore> open(const std::string& path, Access access);
  // The same on a file already open (`fd`, which the store takes over; opened read-only or
  // read-write as `access` asks), whose first bytes were read into `prefix` (at least
  // kFileHeaderBytes unless the file is shorter): the one kind decision in file_filters.cpp.
  static std::unique_ptr<FileStore> open(const std::string& path, int fd,
                                         std::span<const std::uint8_t> prefix, Access access);
  // Deletes a filter file after checking that it is one (never deletes a foreign file).
  static void remove(const std::string& path);
  // Whether anything is at `path` (open() tells whether it is a filter).
  [[nodiscard]] static bool exists(const std::string& path);
  // The header of the filter file at `path`; nothing if none is there, or if what is there is
  // not a sound filter file (any other file, or one that cannot be read).
  [[nodiscard]] static std::optional<FileHeader> probe(const std::string& path);

  ~FileStore() override;

  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  void load(std::span<const std::string_view> items) override;
  bool add_one(std::string_view item) override;
  // Only a sole writer's adds skip the lock, and so the virtual path.
  [[nodiscard]] OneItemCall direct_add_one() override;
  void write_bytes(std::uint64_t partition, std::uint64_t offset,
                   std::span<const std::uint8_t> bytes) override;
  void flush() override;
  [[nodiscard]] std::uint64_t created_unix_ns() const override { return header_.created_unix_ns; }
  [[nodiscard]] std::uint64_t storage_bytes() const override {
    return header_.bitmap_offset + header_.bitmap_bytes;
  }
  [[nodiscard]] std::string location() const override { return "file " + path_; }

  [[nodiscard]] const FileHeader& header() const noexcept { return header_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  FileStore(std::string path, int fd, const FileHeader& header, Access access);
  class WriteLock;
  void require_writable(const char* op) const;
  [[nodiscard]] bool writable() const noexcept { return access_ != Access::read_only; }

  std::string path_;
  int fd_;
  FileHeader header_;
  Access access_;
  int mapped_slot_ = -1;  // in the table of mapped files (src/mapped_files.hpp)
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
};

}  // namespace redbloom
