// The one wording of how a filter without an exact set gets one: the CLI's diff and info, and
// the library's NotFound when a set is opened, all say it this way.
#include <string>

#include "redbloom/exact_set.hpp"

namespace redbloom {

std::string how_to_get_exact_set(FilterContents contents, bool in_redis,
                                 const std::string& name_or_path) {
  const std::string load_this = "load its items with --exact (redbloom load --exact " +
                                (in_redis ? "--name " + name_or_path : "-f " + name_or_path) +
                                " SOURCE)";
  const std::string build_new =
      std::string(
          "build a new filter with its exact set from the same source (redbloom load "
          "--exact ") +
      (in_redis ? "--name NEW (on the same --redis)" : "-f NEW.rbf") + " SOURCE)";
  switch (contents) {
    case FilterContents::empty:
      return "it is empty: " + load_this;
    case FilterContents::holds_items:
      return "it already holds items the set would lack, so one cannot be added: " + build_new;
    case FilterContents::unknown:
      break;
  }
  return "an empty filter gets one if you " + load_this +
         "; one that already holds items cannot take one: " + build_new;
}

}  // namespace redbloom
