// Capacity: a filter past the item count it was sized for answers "present" for new items ever
// more often. The commands that add items say so once, when their writes take the estimated
// count past the capacity (or, with --on-full error, stop there with exit 3).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "redbloom/filter.hpp"

namespace redbloom::cli {

enum class OnFull { warn, error };

// --on-full warn|error.
void add_on_full_option(CLI::App& command, OnFull& on_full);

class CapacityWatch {
 public:
  // `fresh`: the filter was just created, so it holds nothing and need not be sampled.
  // `printed`: the command prints what it commits (dedup), for the error's wording.
  CapacityWatch(const Filter& filter, OnFull on_full, bool fresh, const char* verb, bool printed);
  // After a committed batch that newly added `newly` items (add, dedup); `committed` input
  // items are in the filter so far. Throws StorageError with --on-full error.
  void added(std::uint64_t newly, std::uint64_t committed);
  // The same for load, which has no per-item answers: the count is estimated anew.
  void remeasure(std::uint64_t committed);

 private:
  void check(std::uint64_t committed);

  const Filter& filter_;
  OnFull on_full_;
  std::string verb_;
  bool printed_;
  double estimated_ = 0;
  bool warned_ = false;
  bool watched_ = false;
};

}  // namespace redbloom::cli
