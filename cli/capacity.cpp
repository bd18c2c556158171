#include "capacity.hpp"

#include <cmath>
#include <cstdio>
#include <map>

#include "diagnostics.hpp"
#include "redbloom/error.hpp"

namespace redbloom::cli {
namespace {

std::string format_rate(double rate) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", rate);
  return buf;
}

}  // namespace

void add_on_full_option(CLI::App& command, OnFull& on_full) {
  const std::map<std::string, OnFull> names{{"warn", OnFull::warn}, {"error", OnFull::error}};
  command
      .add_option("--on-full", on_full,
                  "When writes take the filter past its capacity: warn (default, once) or "
                  "error (stop after the batch, exit 3)")
      ->transform(CLI::CheckedTransformer(names, CLI::ignore_case));
}

CapacityWatch::CapacityWatch(const Filter& filter, OnFull on_full, bool fresh, const char* verb,
                             bool printed)
    : filter_(filter), on_full_(on_full), verb_(verb), printed_(printed) {
  // A filter sized by explicit bits and hashes has no capacity to compare with; a windowed or
  // growing one keeps its rate by growing (it stops with CapacityExceeded at its limit), and so
  // does a filter of the server's Bloom engine (or it refuses items past its capacity).
  watched_ = filter.shape().plain() && filter.params().capacity != 0;
  if (!watched_) return;
  if (!fresh) estimated_ = filter.estimate_items();
  check(0);
}

void CapacityWatch::added(std::uint64_t newly, std::uint64_t committed) {
  if (!watched_) return;
  estimated_ += static_cast<double>(newly);
  check(committed);
}

void CapacityWatch::remeasure(std::uint64_t committed) {
  if (!watched_) return;
  estimated_ = filter_.estimate_items();
  check(committed);
}

void CapacityWatch::check(std::uint64_t committed) {
  const FilterParams& p = filter_.params();
  if (warned_ || estimated_ <= static_cast<double>(p.capacity)) return;
  warned_ = true;
  char items[64];
  std::snprintf(items, sizeof items, "%.0f", estimated_);
  const std::string state = filter_.backend().location() + " holds about " + items +
                            " items, past its capacity of " + std::to_string(p.capacity) +
                            ": its false-positive rate is now about " +
                            format_rate(expected_false_positive_rate(p, estimated_)) +
                            " (sized for " + format_rate(p.error_rate) + ")";
  if (on_full_ == OnFull::error) {
    throw StorageError(state + "; stopped (--on-full error): " + verb_ + " committed the first " +
                       std::to_string(committed) + " input items" +
                       (printed_ ? " (their output is printed)" : "") +
                       "; make a larger filter to go on (redbloom plan shows the size)");
  }
  report_warning(state +
                 ", so new items are ever more often taken for ones already seen; make "
                 "a larger filter (redbloom plan shows the size), or use --on-full error to stop "
                 "at capacity");
}

}  // namespace redbloom::cli
