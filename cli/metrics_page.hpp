// The pieces of a long-running stage's Prometheus page (--metrics) that every stage shares: a
// metric's lines, label escapes, the filter's estimated fill and false-positive rate, and the
// endpoint kept up to date between batches.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "metrics_endpoint.hpp"
#include "redbloom/filter.hpp"

namespace redbloom::cli {

// What the filter holds, estimated from a sample of its bits (Filter::estimate_items).
struct FilterEstimate {
  double items = 0;
  // A plain filter's expected fill and false-positive rate at `items`; a cuckoo filter's share
  // of its links' capacity and its rate now; a windowed one has a rate per link, left out.
  std::optional<double> fill_ratio;
  std::optional<double> false_positive_rate;
};

[[nodiscard]] FilterEstimate estimate_filter(const Filter& filter);

// One metric: its HELP and TYPE lines, then its sample (labels as `{a="x",b="y"}`, or none).
void append_metric(std::string& page, const char* name, const char* type, const char* help,
                   double value, const std::string& labels = "");
// A label value with Prometheus's escapes.
[[nodiscard]] std::string metric_label(const std::string& text);
// The filter's estimated items, and its fill and false-positive rate when known.
void append_filter_metrics(std::string& page, const FilterEstimate& filter);

// The endpoint of a stage that has --metrics, and the filter's estimate it shows.
class StageMetrics {
 public:
  using Page = std::function<std::string(const FilterEstimate&)>;
  // Nothing when `address` is empty; else listens there (MetricsEndpoint: a bad address throws
  // before the stage opens or makes anything) and notes the address on stderr unless `quiet`.
  StageMetrics(const std::string& address, bool quiet);
  // From now on the page is `page` with `filter`'s estimate; publishes it.
  void show(const Filter& filter, Page page);
  // Publishes the page again. The estimate reads a sample of the filter's bits: it is taken
  // again at most every 10 s, or at once when the first items came (`items` turned non-zero).
  void update(std::uint64_t items);
  [[nodiscard]] bool enabled() const noexcept { return endpoint_.has_value(); }

 private:
  std::optional<MetricsEndpoint> endpoint_;
  const Filter* filter_ = nullptr;
  Page page_;
  FilterEstimate estimate_;
  std::uint64_t items_ = 0;
  std::chrono::steady_clock::time_point estimated_;
};

}  // namespace redbloom::cli
