// A filter in anonymous memory: fast, private to the process, gone when it exits.
// Not safe for concurrent writers (use one per thread, or a file store across processes).
#pragma once

#include <memory>

#include "local/bitmap_store.hpp"

namespace redbloom {

class MemoryStore final : public BitmapStore {
 public:
  explicit MemoryStore(const FilterParams& params);
  ~MemoryStore() override;

  void flush() override {}
  [[nodiscard]] std::string location() const override { return "memory"; }
  [[nodiscard]] std::uint64_t storage_bytes() const override { return mapping_bytes_; }

 private:
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
};

}  // namespace redbloom
