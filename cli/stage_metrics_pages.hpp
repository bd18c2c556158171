// The Prometheus pages (--metrics) of the Redis Streams stage and of `dedup` reading a pipe or
// files; the Kafka stage's is kafka_metrics.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metrics_page.hpp"
#include "redbloom/redis_stream_dedup.hpp"

namespace redbloom::cli {

// `total`: the batches done so far; `backlog`: the group's, when known.
[[nodiscard]] std::string redis_stream_metrics_page(
    const RedisStreamDedupBatch& total, const std::optional<RedisStreamBacklog>& backlog,
    const std::string& stream, const std::string& group, const FilterEstimate& filter);

// What `dedup` has done so far.
struct DedupCounts {
  std::uint64_t read = 0;     // items read
  std::uint64_t added = 0;    // new to the filter
  std::uint64_t written = 0;  // lines printed (first occurrences, or the repeats with --dups)
  std::uint64_t input_bytes = 0;
};

[[nodiscard]] std::string dedup_metrics_page(const DedupCounts& counts,
                                             const FilterEstimate& filter);

}  // namespace redbloom::cli
