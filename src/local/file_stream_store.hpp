// A windowed or growing filter in files (stream.hpp): a control file at PATH
// (stream_manifest.hpp) and one plain filter file per link, PATH.s<slice>.<link>.
//
// Concurrency: any number of processes. Writers take the control file's writers' lock for
// each batch (posix::lock_writers), so test-and-set is atomic across every link and slice:
// rotation and growth happen under it too. Readers take no lock (the manifest is published
// like a seqlock). Crashes: a link file is created whole before the manifest names it, and a
// retired one is deleted after the manifest stops naming it; what a killed writer leaves
// (a link file no manifest names, a link's temporary file) is deleted by the next rotation
// and by drop. A link file is known by its
// exact name and its header (a filter of the link's parameters): a user's file of a similar
// name is never deleted, and one in a new link's way is an error naming it.
#pragma once

#include <memory>
#include <string>

#include "local/file_store.hpp"
#include "local/stream_manifest.hpp"
#include "local/stream_store.hpp"
#include "redbloom/file_access.hpp"

namespace redbloom {

class FileStreamStore final : public LocalStreamStore {
 public:
  static std::unique_ptr<FileStreamStore> create(const std::string& path, const StreamShape& shape,
                                                 Clock clock, bool overwrite = false);
  static std::unique_ptr<FileStreamStore> open(const std::string& path, FileAccess access,
                                               Clock clock);
  // Whether `path` is a stream filter's control file (false if missing or anything else).
  [[nodiscard]] static bool is_stream_file(const std::string& path);
  // Deletes the control file and every link file, after checking it is a stream filter.
  static void remove(const std::string& path);

  ~FileStreamStore() override;

  [[nodiscard]] std::string location() const override { return "file " + path_ + " (stream)"; }
  [[nodiscard]] std::uint64_t storage_bytes() const override;
  [[nodiscard]] std::uint64_t created_unix_ns() const override { return created_unix_ns_; }
  void flush() override;

 protected:
  void begin_write() override;
  void end_write() noexcept override;
  void begin_read() const override;
  void add_link(std::int64_t slice, std::uint32_t link, std::int64_t retired_below) override;

 private:
  FileStreamStore(std::string path, int fd, const stream_manifest::Header& header,
                  FileAccess access, Clock clock);
  // Brings links_ up to the published manifest.
  void sync(bool locked) const;
  void publish_links();
  // StorageError when PATH no longer names this handle's control file.
  void check_still_at_path() const;
  // Deletes link files that no manifest names (left by a writer killed mid-rotation): files of
  // exactly a link's name (manifest::parse_link_name) whose header is a link's; and the
  // temporaries of links being made (LINK.tmp.PID.N) by a writer killed meanwhile. Called with
  // the writers' lock held.
  void remove_strays() const;
  // Creates the zeroed file of link number `link`; never over a file that is not a stray link.
  [[nodiscard]] std::unique_ptr<FileStore> create_link(const std::string& file,
                                                       std::uint32_t link) const;

  std::string path_;
  int fd_;
  FileAccess access_;
  std::uint64_t created_unix_ns_;
  mutable stream_manifest::Manifest manifest_;
  mutable bool synced_ = false;
  // begin_write brought links_ up to date under the lock: only then may end_write publish them
  // (a handle whose sync failed holds an older view, which would undo other writers' links).
  bool writing_ = false;
};

}  // namespace redbloom
