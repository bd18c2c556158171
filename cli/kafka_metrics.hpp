// The Kafka stage's Prometheus page (--metrics): records in and out, duplicates, lag per
// partition, the filter's estimated fill and false-positive rate, broker errors.
#pragma once

#include <string>

#include "kafka_stage.hpp"
#include "metrics_page.hpp"

namespace redbloom::cli {

[[nodiscard]] std::string kafka_metrics_page(const KafkaStage& stage, const std::string& topic,
                                             const FilterEstimate& filter);

}  // namespace redbloom::cli
