#include "stage_metrics_pages.hpp"

namespace redbloom::cli {

std::string redis_stream_metrics_page(const RedisStreamDedupBatch& total,
                                      const std::optional<RedisStreamBacklog>& backlog,
                                      const std::string& stream, const std::string& group,
                                      const FilterEstimate& filter) {
  std::string page;
  append_metric(page, "redbloom_records_in_total", "counter",
                "Entries read from the input stream and done.", static_cast<double>(total.entries));
  append_metric(page, "redbloom_records_out_total", "counter",
                "Entries copied to the output stream (key new, and passed without a key).",
                static_cast<double>(total.unique + total.passed));
  append_metric(page, "redbloom_duplicates_total", "counter", "Entries whose key was seen before.",
                static_cast<double>(total.duplicates));
  append_metric(page, "redbloom_records_without_key_total", "counter",
                "Entries without the key field, skipped or passed.",
                static_cast<double>(total.skipped + total.passed));
  append_metric(page, "redbloom_recovered_total", "counter",
                "Entries read again or taken over from a stopped consumer.",
                static_cast<double>(total.recovered));
  if (backlog) {
    const std::string labels =
        "{stream=\"" + metric_label(stream) + "\",group=\"" + metric_label(group) + "\"}";
    append_metric(page, "redbloom_stream_pending", "gauge",
                  "Entries delivered to the group's consumers and not yet acknowledged.",
                  static_cast<double>(backlog->pending), labels);
    if (backlog->lag) {
      append_metric(page, "redbloom_stream_lag", "gauge",
                    "Entries of the input stream not yet delivered to the group.",
                    static_cast<double>(*backlog->lag), labels);
    }
  }
  append_filter_metrics(page, filter);
  return page;
}

std::string dedup_metrics_page(const DedupCounts& counts, const FilterEstimate& filter) {
  std::string page;
  append_metric(page, "redbloom_records_in_total", "counter", "Items read.",
                static_cast<double>(counts.read));
  append_metric(page, "redbloom_records_out_total", "counter",
                "Lines written (the first occurrences, or the repeats with --dups).",
                static_cast<double>(counts.written));
  append_metric(page, "redbloom_duplicates_total", "counter", "Items the filter had seen before.",
                static_cast<double>(counts.read - counts.added));
  append_metric(page, "redbloom_input_bytes_total", "counter", "Bytes of input read.",
                static_cast<double>(counts.input_bytes));
  append_filter_metrics(page, filter);
  return page;
}

}  // namespace redbloom::cli
