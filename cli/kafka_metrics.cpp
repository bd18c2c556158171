#include "kafka_metrics.hpp"

namespace redbloom::cli {

std::string kafka_metrics_page(const KafkaDedup& stage, const std::string& topic,
                               const FilterEstimate& filter) {
  const KafkaDedupCounts& c = stage.counts();
  std::string page;
  append_metric(page, "redbloom_records_in_total", "counter", "Records read from the input topic.",
                static_cast<double>(c.read));
  append_metric(page, "redbloom_records_out_total", "counter",
                "Records produced to the output topic (first seen, and passed without a key).",
                static_cast<double>(c.first_seen));
  append_metric(page, "redbloom_duplicates_total", "counter", "Records whose item was seen before.",
                static_cast<double>(c.duplicates));
  append_metric(page, "redbloom_replayed_total", "counter",
                "Records decided by a decision record after a restart or a takeover.",
                static_cast<double>(c.replayed));
  append_metric(page, "redbloom_taken_by_others_total", "counter",
                "Duplicates tested new, then found added by another stage when set.",
                static_cast<double>(c.taken_by_others));
  append_metric(page, "redbloom_rolled_forward_total", "counter",
                "Items a stage that died mid-round had decided, added to the filter for it.",
                static_cast<double>(c.rolled_forward));
  append_metric(page, "redbloom_records_without_key_total", "counter",
                "Records without an item, skipped or passed.",
                static_cast<double>(c.skipped + c.passed));
  append_metric(page, "redbloom_errors_total", "counter", "Broker errors reported by the client.",
                static_cast<double>(c.errors));
  page +=
      "# HELP redbloom_partition_lag Records of the partition not yet read.\n"
      "# TYPE redbloom_partition_lag gauge\n";
  for (const KafkaPartitionLag& p : stage.lag()) {
    if (p.lag < 0) continue;
    page += "redbloom_partition_lag{topic=\"" + metric_label(topic) + "\",partition=\"" +
            std::to_string(p.partition) + "\"} " + std::to_string(p.lag) + "\n";
  }
  append_filter_metrics(page, filter);
  return page;
}

}  // namespace redbloom::cli
