// A windowed or growing filter whose links are in this process's address space (stream.hpp,
// core/stream_shape.hpp): the bit work over the links, shared by the memory and file stores,
// which decide where links live and how writers are serialised.
//
// add, per batch, inside begin_write / end_write (the file store's writers' lock):
//   1. the current slice is max(the clock's slice, the newest slice there is): a process whose
//      clock lags never writes into a slice older than another's; a new slice retires those
//      that left the window;
//   2. each item is tested in the live links of older slices (present there: not new), then in
//      the current slice's older links (present: nothing to write);
//   3. the rest are tested-and-set in the current slice's newest link, which grows first when
//      it holds its capacity. An item is new iff no link had it.
// A batch that stops part-way (a link past the byte limit: CapacityExceeded; a link or
// manifest the storage cannot write: IncompleteWrite) says how many leading items are in the
// filter; none after them was written.
// Lookups read every live link; slices that left the window by the clock are skipped even
// before a writer retires them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/stream_shape.hpp"
#include "local/bitmap_store.hpp"
#include "redbloom/filter_backend.hpp"

namespace redbloom {

class LocalStreamStore : public FilterBackend, public StreamLinks {
 public:
  struct Link {
    std::int64_t slice = 0;
    std::uint32_t link = 0;
    std::uint64_t created_unix_ns = 0;
    std::uint64_t items = 0;
    std::unique_ptr<BitmapStore> bits;
  };

  [[nodiscard]] FilterShape shape() const override;
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  void load(std::span<const std::string_view> items) override;
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override;
  [[nodiscard]] std::uint64_t count_set_bits() const override;
  [[nodiscard]] std::optional<StreamInfo> stream_info() const override;
  [[nodiscard]] const StreamShape& stream_shape() const noexcept { return shape_; }
  [[nodiscard]] StreamLinks* links() noexcept override { return this; }
  [[nodiscard]] const StreamLinks* links() const noexcept override { return this; }

  // StreamLinks: a link's partitions all hold it; its count is spread evenly over them.
  [[nodiscard]] std::vector<SliceCopy> live_slices() const override;
  void read_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                 std::uint64_t offset, std::span<std::uint8_t> out) const override;
  void restore_slices(std::span<const SliceCopy> slices) override;
  void write_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                  std::uint64_t offset, std::span<const std::uint8_t> bytes) override;

 protected:
  LocalStreamStore(const StreamShape& shape, Clock clock);
  [[nodiscard]] std::uint64_t now() const { return clock_ ? clock_() : system_now_ns(); }

  // Writers: serialise and bring links() up to date (file: lock, read the manifest); after the
  // batch, publish what changed (counts, links) and unlock. end_write runs on errors too.
  virtual void begin_write() = 0;
  virtual void end_write() noexcept = 0;
  // Readers: bring links() up to date, without a lock.
  virtual void begin_read() const = 0;
  // Makes link `link` of slice `slice` (zeroed) and appends it to links(); retires the links
  // of `retired` slices (below it). Called between begin_write and end_write.
  virtual void add_link(std::int64_t slice, std::uint32_t link, std::int64_t retired_below) = 0;

  // Live links, oldest slice first, links in order (the subclass keeps it).
  mutable std::vector<Link> links_;

 private:
  // `committed`: how many leading items are settled so far, for the error of a failure.
  void add_locked(std::span<const std::string_view> items, std::uint8_t* newly_added,
                  std::size_t& committed);
  // The add of a window in its steady state (stream_store.cpp); false when it does not apply.
  bool add_in_one_pass(std::int64_t current, std::uint8_t* newly_added);
  // Appends link 0 of `slice` (retiring what left the window) or the next link of the newest
  // slice; CapacityExceeded when it may not exist, IncompleteWrite when it cannot be made
  // (committed: `committed`, 0 for a new slice).
  void open_slice(std::int64_t slice);
  void grow(std::size_t committed);
  [[nodiscard]] std::uint64_t live_bytes() const noexcept;
  // Link `link` of slice `slice` in links_; StorageError naming it when it is not there.
  [[nodiscard]] const Link& find_link(std::int64_t slice, std::uint32_t link) const;
  // The oldest slice a lookup reads now (links_ not empty).
  [[nodiscard]] std::int64_t oldest_live_now() const;

  StreamShape shape_;
  Clock clock_;
  FilterParams first_;
};

// A windowed or growing filter in this process's memory (MemoryStore links).
[[nodiscard]] std::unique_ptr<FilterBackend> make_memory_stream_store(const StreamShape& shape,
                                                                      Clock clock);

}  // namespace redbloom
