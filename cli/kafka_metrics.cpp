#include "kafka_metrics.hpp"

#include <cmath>
#include <cstdio>

namespace redbloom::cli {
namespace {

void metric(std::string& page, const char* name, const char* type, const char* help, double value,
            const std::string& labels = "") {
  char number[64];
  std::snprintf(number, sizeof number, "%.17g", value);
  page += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
          name + labels + " " + number + "\n";
}

// A label value with Prometheus's escapes.
std::string label(const std::string& text) {
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

}  // namespace

FilterEstimate estimate_filter(const Filter& filter) {
  FilterEstimate estimate;
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

std::string kafka_metrics_page(const KafkaStage& stage, const std::string& topic,
                               const FilterEstimate& filter) {
  const KafkaStageCounts& c = stage.counts();
  std::string page;
  metric(page, "redbloom_records_in_total", "counter", "Records read from the input topic.",
         static_cast<double>(c.read));
  metric(page, "redbloom_records_out_total", "counter",
         "Records produced to the output topic (first seen, and passed without a key).",
         static_cast<double>(c.first_seen));
  metric(page, "redbloom_duplicates_total", "counter", "Records whose item was seen before.",
         static_cast<double>(c.duplicates));
  metric(page, "redbloom_replayed_total", "counter",
         "Records decided by a decision record after a restart or a takeover.",
         static_cast<double>(c.replayed));
  metric(page, "redbloom_records_without_key_total", "counter",
         "Records without an item, skipped or passed.", static_cast<double>(c.skipped + c.passed));
  metric(page, "redbloom_errors_total", "counter", "Broker errors reported by the client.",
         static_cast<double>(c.errors));
  page +=
      "# HELP redbloom_partition_lag Records of the partition not yet read.\n"
      "# TYPE redbloom_partition_lag gauge\n";
  for (const PartitionLag& p : stage.lag()) {
    if (p.lag < 0) continue;
    page += "redbloom_partition_lag{topic=\"" + label(topic) + "\",partition=\"" +
            std::to_string(p.partition) + "\"} " + std::to_string(p.lag) + "\n";
  }
  metric(page, "redbloom_filter_estimated_items", "gauge",
         "Items in the filter, estimated from a sample of its bits.", filter.items);
  if (filter.fill_ratio) {
    metric(page, "redbloom_filter_fill_ratio", "gauge", "Expected fraction of the bits set.",
           *filter.fill_ratio);
  }
  if (filter.false_positive_rate) {
    metric(page, "redbloom_filter_estimated_false_positive_rate", "gauge",
           "Expected false-positive rate at the estimated items.", *filter.false_positive_rate);
  }
  return page;
}

}  // namespace redbloom::cli
