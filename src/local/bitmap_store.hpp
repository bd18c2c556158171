// A store whose bits are in this process's address space (heap memory or a mapped file).
// Subclasses own the memory; this class does the bit work.
#pragma once

#include <cstdint>
#include <memory>

#include "redbloom/store.hpp"

namespace redbloom {
namespace kernels {
struct Bitmap;
}
class ParallelRunner;

class BitmapStore : public Store {
 public:
  ~BitmapStore() override;
  [[nodiscard]] const FilterParams& params() const noexcept override { return params_; }
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  void load(std::span<const std::string_view> items) override;
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override;
  bool add_one(std::string_view item) override;
  [[nodiscard]] bool contains_one(std::string_view item) const override;
  [[nodiscard]] OneItemCall direct_contains_one() const override;
  [[nodiscard]] OneItemCall direct_add_one() override;
  [[nodiscard]] std::uint64_t count_set_bits() const override;
  // Batches of 2048 items or more run on `threads` threads. A lookup batch is cut into equal
  // parts. A classic add batch is hashed in equal parts, then thread t takes, in batch order,
  // the items whose partition is in the t-th equal run of the partitions, so no two threads
  // write one line and the second of two equal items in a batch is still not new. Classic
  // adds therefore use at most `partitions` threads (under 64 MiB, one); blocked adds stay on
  // one thread (measured no faster split). Not to be called while another thread is inside a
  // call on this store.
  void use_threads(unsigned threads) override;
  // 1024 items a call on one thread; 64Ki when split (a thread's share then stays large).
  [[nodiscard]] std::size_t batch_items() const noexcept override;
  void read_bytes(std::uint64_t partition, std::uint64_t offset,
                  std::span<std::uint8_t> out) const override;
  void write_bytes(std::uint64_t partition, std::uint64_t offset,
                   std::span<const std::uint8_t> bytes) override;

  // The bitmap in Redis bit order: partition i is bytes [i * partition_bytes, (i+1) * ...).
  [[nodiscard]] std::span<const std::uint8_t> bytes() const noexcept;
  // The words and kernel tables, for callers that run the kernels themselves under their own
  // lock (a windowed filter tests several links per item).
  [[nodiscard]] const kernels::Bitmap& bitmap() const noexcept { return *bitmap_; }

 protected:
  explicit BitmapStore(const FilterParams& params);
  // `words` must be 64-byte aligned and hold params.total_bits() bits. `private_memory`: they
  // are this process's anonymous memory, not a file mapping (kernels::make_bitmap says why).
  void attach(std::uint64_t* words, bool private_memory);

 private:
  FilterParams params_;
  // Whether a batch of `items` goes to the threads (lookups; adds need 2+ partitions too).
  [[nodiscard]] bool splits(std::size_t items) const noexcept;
  [[nodiscard]] bool splits_writes(std::size_t items) const noexcept;

  std::unique_ptr<kernels::Bitmap> bitmap_;  // the words and per-filter kernel tables
  std::unique_ptr<ParallelRunner> runner_;   // set by use_threads(n > 1)
};

}  // namespace redbloom
