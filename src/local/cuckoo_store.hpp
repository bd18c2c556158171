// A cuckoo filter (redbloom/cuckoo.hpp) in process memory or in a file
// (core/cuckoo_file_format.hpp), its tables mapped. Each batch is one atomic step under the
// file's lock: writers take it exclusively, readers shared (kicks move fingerprints, so a
// lookup must not run during another process's add). A link added by another process is
// mapped at the next batch (the file grew).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/cuckoo_chain.hpp"
#include "core/cuckoo_file_format.hpp"
#include "core/cuckoo_shape.hpp"
#include "core/cuckoo_table.hpp"
#include "redbloom/file_access.hpp"
#include "redbloom/filter_backend.hpp"

namespace redbloom {

class LocalCuckooStore final : public FilterBackend, public CuckooTables {
 public:
  ~LocalCuckooStore() override;

  [[nodiscard]] static std::unique_ptr<LocalCuckooStore> in_memory(const CuckooOptions& options);
  // FilterExists when a file is there, unless `overwrite` (the caller removed other kinds).
  [[nodiscard]] static std::unique_ptr<LocalCuckooStore> create_file(const std::string& path,
                                                                     const CuckooOptions& options,
                                                                     bool overwrite);
  // `fd` (owned from here) with the file's first bytes already read.
  [[nodiscard]] static std::unique_ptr<LocalCuckooStore> open_file(
      const std::string& path, int fd, std::span<const std::uint8_t> prefix, FileAccess access);
  [[nodiscard]] static bool is_cuckoo_file(const std::string& path);
  static void remove_file(const std::string& path);

  [[nodiscard]] FilterShape shape() const override;
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  void load(std::span<const std::string_view> items) override;
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override;
  void remove(std::span<const std::string_view> items, std::span<std::uint8_t> removed) override;
  void insert(std::span<const std::string_view> items) override;
  void remove_known(std::span<const std::string_view> items,
                    std::span<std::uint8_t> removed) override;
  void count(std::span<const std::string_view> items,
             std::span<std::uint32_t> counts) const override;
  [[nodiscard]] std::optional<CuckooInfo> cuckoo_info() const override;
  // Fingerprints stored: zero exactly when the filter is empty.
  [[nodiscard]] std::uint64_t count_set_bits() const override;
  [[nodiscard]] std::uint64_t created_unix_ns() const override { return header_.created_unix_ns; }
  [[nodiscard]] std::uint64_t storage_bytes() const override;
  void flush() override;
  [[nodiscard]] std::string location() const override;
  [[nodiscard]] CuckooTables* cuckoo_tables() noexcept override { return this; }
  [[nodiscard]] const CuckooTables* cuckoo_tables() const noexcept override { return this; }

  [[nodiscard]] std::vector<std::uint32_t> link_counts() const override;
  [[nodiscard]] std::vector<std::uint8_t> read_table(std::uint32_t partition,
                                                     std::uint32_t link) const override;
  void write_table(std::uint32_t partition, std::uint32_t link,
                   std::span<const std::uint8_t> bytes) override;

 private:
  class Lock;
  struct Link {
    std::uint8_t* bytes = nullptr;
    std::size_t size = 0;
    bool mapped = false;
    int mapped_slot = -1;
  };

  LocalCuckooStore(const CuckooFileHeader& header, std::string path, int fd, FileAccess access);
  // Maps the links the file's directory has and this handle has not (another process grew
  // them), if the file has grown since the last look.
  void refresh() const;
  void attach(std::uint32_t partition, std::uint8_t* bytes, std::size_t size, bool mapped,
              int mapped_slot) const;
  // add and insert: each item through `step` (cuckoo_chain::add or insert), the chain grown
  // while it is full.
  void store_items(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added,
                   cuckoo_chain::Add (*step)(std::span<cuckoo_table::Table>, const ItemHash&));
  // Adds a link to the partition's chain; false when it holds max_links already.
  bool grow(std::uint32_t partition);
  void require_writable(const char* what) const;
  // The batch's hashes, the buckets of the first kAhead items asked of the cache; each step
  // then asks for the buckets of the item kAhead places on.
  static constexpr std::size_t kAhead = 8;
  [[nodiscard]] std::vector<ItemHash> hashes_ahead(std::span<const std::string_view> items) const;
  void prefetch(const ItemHash& h) const noexcept;
  // step(i, the links of item i's partition, its hash) for each item in order, the buckets of
  // the items ahead prefetched (the caller holds the lock).
  template <class Step>
  void each_item(std::span<const std::string_view> items, Step&& step) const {
    const std::vector<ItemHash> hashes = hashes_ahead(items);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i + kAhead < items.size()) prefetch(hashes[i + kAhead]);
      step(i, tables_[shape_.partition_of(hashes[i])], hashes[i]);
    }
  }
  void check_flags(std::size_t items, std::size_t flags) const;

  CuckooShape shape_;
  mutable CuckooFileHeader header_;
  std::string path_;  // empty in memory
  int fd_ = -1;
  FileAccess access_ = FileAccess::read_write;
  mutable std::uint64_t seen_file_size_ = 0;
  // Per partition: its links' bytes and tables, oldest first. Mutable: a reader maps links
  // other processes grew.
  mutable std::vector<std::vector<Link>> links_;
  mutable std::vector<std::vector<cuckoo_table::Table>> tables_;
  std::vector<std::unique_ptr<std::uint8_t[]>> memory_;
};

}  // namespace redbloom
