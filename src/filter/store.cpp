#include "redbloom/store.hpp"

#include "redbloom/error.hpp"

namespace redbloom {

void check_byte_range(const FilterParams& params, std::uint64_t partition, std::uint64_t offset,
                      std::size_t size) {
  if (partition >= params.partitions || offset > params.partition_bytes() ||
      size > params.partition_bytes() - offset) {
    throw InvalidArgument("byte range " + std::to_string(offset) + "+" + std::to_string(size) +
                          " of partition " + std::to_string(partition) +
                          " is outside the filter (" + std::to_string(params.partitions) +
                          " partitions of " + std::to_string(params.partition_bytes()) + " bytes)");
  }
}

Store::OneItemCall Store::direct_contains_one() const {
  return {[](const void* store, std::string_view item) {
            return static_cast<const Store*>(store)->contains_one(item);
          },
          this};
}

Store::OneItemCall Store::direct_add_one() {
  // The context is const only in the signature: it is this non-const store.
  return {[](const void* store, std::string_view item) {
            return const_cast<Store*>(static_cast<const Store*>(store))->add_one(item);
          },
          this};
}

}  // namespace redbloom
