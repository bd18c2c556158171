// What Store (store.hpp) and FilterBackend (filter_backend.hpp) do by default.
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/filter_backend.hpp"
#include "redbloom/store.hpp"

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

Store::OneItemCall FilterBackend::direct_contains_one() const {
  return {[](const void* backend, std::string_view item) {
            std::uint8_t present = 0;
            static_cast<const FilterBackend*>(backend)->contains({&item, 1}, {&present, 1});
            return present != 0;
          },
          this};
}

Store::OneItemCall FilterBackend::direct_add_one() {
  // The context is const only in the signature: it is this non-const backend.
  return {[](const void* backend, std::string_view item) {
            std::uint8_t newly = 0;
            const_cast<FilterBackend*>(static_cast<const FilterBackend*>(backend))
                ->add({&item, 1}, {&newly, 1});
            return newly != 0;
          },
          this};
}

namespace {

[[noreturn]] void bloom_cannot(const FilterBackend& backend, const char* what) {
  throw InvalidArgument("filter " + backend.location() + " is a Bloom filter: it cannot " + what +
                        " an item (a cuckoo filter can: create one with kind cuckoo)");
}

}  // namespace

void FilterBackend::remove(std::span<const std::string_view>, std::span<std::uint8_t>) {
  bloom_cannot(*this, "remove");
}

void FilterBackend::insert(std::span<const std::string_view>) {
  throw InvalidArgument("filter " + location() +
                        " is a Bloom filter: it keeps no copies of an item to remove later (a "
                        "cuckoo filter does: create one with kind cuckoo)");
}

void FilterBackend::remove_known(std::span<const std::string_view> items,
                                 std::span<std::uint8_t> removed) {
  std::vector<std::uint32_t> counts(items.size());
  count(items, counts);
  std::vector<std::string_view> sole;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < items.size(); ++i) {
    removed[i] = 0;
    if (counts[i] == 1) {
      sole.push_back(items[i]);
      where.push_back(i);
    }
  }
  std::vector<std::uint8_t> flags(sole.size());
  remove(sole, flags);
  for (std::size_t j = 0; j < sole.size(); ++j) removed[where[j]] = flags[j];
}

void FilterBackend::count(std::span<const std::string_view>, std::span<std::uint32_t>) const {
  bloom_cannot(*this, "count");
}

}  // namespace redbloom
