#include "metrics_page.hpp"

#include <cmath>
#include <cstdio>

#include "diagnostics.hpp"

namespace redbloom::cli {

FilterEstimate estimate_filter(const Filter& filter) {
  FilterEstimate estimate;
  if (filter.shape().cuckoo) {
    // One scan of the tables: the fingerprints stored against what the links were sized for.
    const std::optional<CuckooInfo> cuckoo = filter.backend().cuckoo_info();
    if (cuckoo) {
      estimate.items = static_cast<double>(cuckoo->items);
      double capacity = 0;
      for (const CuckooLinkInfo& link : cuckoo->links) capacity += double(link.capacity);
      estimate.fill_ratio = capacity > 0 ? estimate.items / capacity : 0;
      estimate.false_positive_rate = cuckoo->error_rate_now;
    }
    return estimate;
  }
  estimate.items = filter.estimate_items();
  if (filter.shape().plain()) {
    // Each item sets k bits spread over the m bits: the expected fill after n items; the rate
    // by the layout's own formula.
    const FilterParams& p = filter.params();
    estimate.fill_ratio = 1 - std::exp(-static_cast<double>(p.hashes) * estimate.items /
                                       static_cast<double>(p.total_bits()));
    estimate.false_positive_rate = expected_false_positive_rate(p, estimate.items);
  }
  return estimate;
}

void append_metric(std::string& page, const char* name, const char* type, const char* help,
                   double value, const std::string& labels) {
  char number[64];
  std::snprintf(number, sizeof number, "%.17g", value);
  page += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
          name + labels + " " + number + "\n";
}

std::string metric_label(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void append_filter_metrics(std::string& page, const FilterEstimate& filter) {
  append_metric(page, "redbloom_filter_estimated_items", "gauge",
                "Items in the filter, estimated from a sample of its bits.", filter.items);
  if (filter.fill_ratio) {
    append_metric(page, "redbloom_filter_fill_ratio", "gauge", "Expected fraction of the bits set.",
                  *filter.fill_ratio);
  }
  if (filter.false_positive_rate) {
    append_metric(page, "redbloom_filter_estimated_false_positive_rate", "gauge",
                  "Expected false-positive rate at the estimated items.",
                  *filter.false_positive_rate);
  }
}

StageMetrics::StageMetrics(const std::string& address, bool quiet) {
  if (address.empty()) return;
  endpoint_.emplace(address);
  if (!quiet) {
    report_note("metrics on http://" + address.substr(0, address.rfind(':')) + ":" +
                std::to_string(endpoint_->port()) + "/metrics");
  }
}

void StageMetrics::show(const Filter& filter, Page page) {
  if (!endpoint_) return;
  filter_ = &filter;
  page_ = std::move(page);
  estimate_ = estimate_filter(filter);
  estimated_ = std::chrono::steady_clock::now();
  endpoint_->publish(page_(estimate_));
}

void StageMetrics::update(std::uint64_t items) {
  if (!endpoint_ || filter_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - estimated_ >= std::chrono::seconds(10) || (items_ == 0 && items != 0)) {
    estimate_ = estimate_filter(*filter_);
    estimated_ = now;
  }
  items_ = items;
  endpoint_->publish(page_(estimate_));
}

}  // namespace redbloom::cli
