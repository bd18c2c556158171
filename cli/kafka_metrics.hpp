// The Kafka stage's Prometheus page (--metrics): records in and out, duplicates, lag per
// partition, the filter's estimated fill and false-positive rate, broker errors.
#pragma once

#include <string>

#include "metrics_page.hpp"
#include "redbloom/kafka_dedup.hpp"

namespace redbloom::cli {

[[nodiscard]] std::string kafka_metrics_page(const KafkaDedup& stage, const std::string& topic,
                                             const FilterEstimate& filter);

}  // namespace redbloom::cli
