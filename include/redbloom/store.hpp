// The one interface between a filter and where its bits live (memory, a mapped file, and
// later Redis). A store works on batches of items, hashes them with hash_item() and places
// their bits with layout.hpp, as its parameters say. Taking the items rather than their hashes
// lets a local store hash item i+D while item i's cache line is still on its way.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"

namespace redbloom {

class Store {
 public:
  virtual ~Store() = default;
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  [[nodiscard]] virtual const FilterParams& params() const noexcept = 0;

  // Sets the bits of every item, in order. newly_added[i] = 1 iff some bit of item i was 0
  // before (so the second of two equal items in one batch is not new). Each item's
  // test-and-set is atomic with respect to every other writer of the same filter: of several
  // concurrent writers adding one item, exactly one sees it as new.
  virtual void test_and_set(std::span<const std::string_view> items,
                            std::span<std::uint8_t> newly_added) = 0;

  // Sets the bits of every item; no per-item answers (the bulk path).
  virtual void set(std::span<const std::string_view> items) = 0;

  // present[i] = 1 iff all bits of item i are set.
  virtual void test(std::span<const std::string_view> items,
                    std::span<std::uint8_t> present) const = 0;

  // One item (Filter::add / Filter::contains). The defaults use the batch calls; local stores
  // override them with a path that has no batch to set up.
  virtual bool test_and_set_one(std::string_view item) {
    std::uint8_t newly = 0;
    test_and_set({&item, 1}, {&newly, 1});
    return newly != 0;
  }
  [[nodiscard]] virtual bool test_one(std::string_view item) const {
    std::uint8_t present = 0;
    test({&item, 1}, {&present, 1});
    return present != 0;
  }

  // Number of 1 bits in the whole filter.
  [[nodiscard]] virtual std::uint64_t count_set_bits() const = 0;

  // Makes every completed write durable (msync for a file).
  virtual void flush() = 0;

  // Where the filter lives, for messages: "file /tmp/a.rbf", "memory".
  [[nodiscard]] virtual std::string location() const = 0;
};

}  // namespace redbloom
