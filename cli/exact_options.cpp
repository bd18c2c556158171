#include "exact_options.hpp"

#include "redbloom/error.hpp"

namespace redbloom::cli {

bool exact_exists(const FilterLocation& location) {
  return location.in_redis() ? redis_exact_set_exists(location.endpoint(), location.name)
                             : file_exact_set_exists(location.path);
}

std::unique_ptr<ExactSet> open_exact(const FilterLocation& location, bool writable) {
  return location.in_redis() ? open_redis_exact_set(location.endpoint(), location.name)
                             : open_file_exact_set(location.path, writable);
}

std::optional<ExactSetSummary> exact_summary(const FilterLocation& location) {
  if (!exact_exists(location)) return std::nullopt;
  return location.in_redis() ? summarize(*open_redis_exact_set(location.endpoint(), location.name))
                             : summarize_file_exact_set(location.path);
}

std::unique_ptr<ExactSet> exact_for_writing(const FilterLocation& location, const Filter& filter,
                                            bool create) {
  if (exact_exists(location)) return open_exact(location);
  if (!create) return nullptr;
  if (filter.store().count_set_bits() != 0) {
    throw InvalidArgument("filter " + location.describe() +
                          " already holds items but has no exact set: they could never be "
                          "verified; create the filter anew (--force) and load it with --exact");
  }
  const FilterParams& p = filter.params();
  try {
    if (location.in_redis()) {
      const std::uint64_t expected = p.capacity > 0 ? p.capacity : p.total_bits() / 10;
      return create_redis_exact_set(location.endpoint(), location.name, expected);
    }
    return create_file_exact_set(location.path);
  } catch (const FilterExists&) {
    return open_exact(location);  // another writer created it first
  }
}

void drop_exact_if_any(const FilterLocation& location) {
  if (!exact_exists(location)) return;
  if (location.in_redis()) {
    drop_redis_exact_set(location.endpoint(), location.name);
  } else {
    remove_file_exact_set(location.path);
  }
}

void add_to_exact(ExactSet& exact, std::span<const std::string_view> items) {
  try {
    exact.add(items);
  } catch (const IncompleteWrite&) {
    throw;
  } catch (const StorageError& e) {
    throw IncompleteWrite(std::string(e.what()) +
                              "\n(the exact set may hold some items of the failed batch; the "
                              "filter holds none of them)",
                          0);
  }
}

}  // namespace redbloom::cli
