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

void check_exact_for(const std::optional<StreamOptions>& stream, bool exact) {
  if (exact && stream && stream->window_ns != 0) {
    throw InvalidArgument(
        "--exact with --window: a windowed filter forgets items, and an exact set beside it "
        "would not; use --exact with a plain or growing filter");
  }
}

}  // namespace redbloom::cli
