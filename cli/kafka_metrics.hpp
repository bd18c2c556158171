// The Kafka stage's Prometheus page (--metrics): records in and out, duplicates, lag per
// partition, the filter's estimated fill and false-positive rate, broker errors.
#pragma once

#include <optional>
#include <string>

#include "kafka_stage.hpp"
#include "redbloom/filter.hpp"

namespace redbloom::cli {

// What the filter holds, estimated from a sample of its bits (Filter::estimate_items).
struct FilterEstimate {
  double items = 0;
  // A plain filter's expected fill and false-positive rate at `items`; a windowed one has a
  // rate per link, left out.
  std::optional<double> fill_ratio;
  std::optional<double> false_positive_rate;
};

[[nodiscard]] FilterEstimate estimate_filter(const Filter& filter);

[[nodiscard]] std::string kafka_metrics_page(const KafkaStage& stage, const std::string& topic,
                                             const FilterEstimate& filter);

}  // namespace redbloom::cli
