#include "local/memory_store.hpp"

#include <sys/mman.h>

#include <cstdint>

#include "redbloom/error.hpp"

namespace redbloom {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Bytes to map for `bytes` of filter: whole 2 MiB pages where that adds at most an eighth, so
// that a filter of a few MiB (a windowed filter's slice) is on huge pages at all.
std::size_t mapping_size(std::size_t bytes) {
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  return rounded - bytes <= bytes / 8 ? rounded : bytes;
}

// An anonymous mapping of `bytes` whose start is 2 MiB-aligned: the kernel backs only aligned
// 2 MiB extents with huge pages. Maps a huge page more and gives back the ends.
void* map_aligned(std::size_t bytes) {
  void* raw =
      mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return raw;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t end = start + bytes + kHugePage;
  if (end > aligned + bytes)
    munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace

MemoryStore::MemoryStore(const FilterParams& params) : BitmapStore(params) {
  validate(params);
  mapping_bytes_ = mapping_size(params.total_bytes());
  // Anonymous pages arrive zeroed and page-aligned.
  mapping_ = map_aligned(mapping_bytes_);
  if (mapping_ == MAP_FAILED) {
    throw StorageError(errno_message("cannot allocate " + format_bytes(double(mapping_bytes_)) +
                                     " for an in-memory filter"));
  }
  // 2 MiB pages halve the cost of a random miss on these VMs (nested page walks), and a filter
  // past the TLB's reach of 4 KiB pages (a few MiB) misses it on nearly every line; a hint only.
  madvise(mapping_, mapping_bytes_, MADV_HUGEPAGE);
  // Fault every page in now: items hash to random lines, so a filter's first adds would touch
  // (and fault, one page at a time) nearly all of its pages anyway, and a fault in an add costs
  // more than the add. A hint too: kernels before 5.14 refuse it and fault on first touch.
  madvise(mapping_, mapping_bytes_, MADV_POPULATE_WRITE);
  attach(static_cast<std::uint64_t*>(mapping_), /*private_memory=*/true);
}

MemoryStore::~MemoryStore() {
  munmap(mapping_, mapping_bytes_);
}

}  // namespace redbloom
