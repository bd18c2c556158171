#include "local/memory_store.hpp"

#include <sys/mman.h>

#include "redbloom/error.hpp"

namespace redbloom {

MemoryStore::MemoryStore(const FilterParams& params) : BitmapStore(params) {
  validate(params);
  mapping_bytes_ = params.total_bytes();
  // Anonymous pages arrive zeroed and page-aligned.
  mapping_ =
      mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping_ == MAP_FAILED) {
    throw StorageError(errno_message("cannot allocate " + format_bytes(double(mapping_bytes_)) +
                                     " for an in-memory filter"));
  }
  // 2 MiB pages halve the cost of a random miss on these VMs (nested page walks); a hint only.
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
