#include "exact_options.hpp"

#include "redbloom/error.hpp"

namespace redbloom::cli {

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
