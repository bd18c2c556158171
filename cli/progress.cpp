#include "progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "diagnostics.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {

Progress::Progress(std::string verb, const InputStats& stats, bool quiet, std::string unit)
    : verb_(std::move(verb)),
      unit_(std::move(unit)),
      stats_(stats),
      enabled_(!quiet && !json_diagnostics() && ::isatty(2) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double Progress::rate(std::uint64_t items) const {
  const auto from = stats_.first_record_at != std::chrono::steady_clock::time_point{}
                        ? stats_.first_record_at
                        : start_;
  const double seconds = std::chrono::duration<double>(counted_at_ - from).count();
  if (items < 2 || items != counted_ || !(seconds > 0)) return std::nan("");
  return static_cast<double>(items) / seconds;
}

void Progress::update(std::uint64_t items) {
  const auto now = std::chrono::steady_clock::now();
  if (items > counted_) {
    counted_ = items;
    counted_at_ = now;
  }
  if (!enabled_) return;
  if (now - last_ < std::chrono::seconds(1)) return;
  last_ = now;
  std::fprintf(stderr, "\r\033[K%s: %llu %s", verb_.c_str(), static_cast<unsigned long long>(items),
               unit_.c_str());
  if (const double per_second = rate(items); std::isfinite(per_second)) {
    std::fprintf(stderr, ", %s %s/s", format_rate(per_second).c_str(), unit_.c_str());
  }
  if (stats_.total_bytes > 0 && stats_.bytes > 0) {
    const double done = static_cast<double>(stats_.bytes) / static_cast<double>(stats_.total_bytes);
    const double eta = done > 0 ? elapsed_seconds() * (1 - done) / done : 0;
    std::fprintf(stderr, ", %.0f%%, ETA %.0fs", 100 * done, eta);
  }
  std::fflush(stderr);
  shown_ = true;
}

void Progress::finish() {
  if (shown_) std::fputs("\r\033[K", stderr);
  shown_ = false;
}

void warn_about_input(const ItemReader& reader, bool skip_empty, bool quiet) {
  (void)quiet;  // report_note honours --quiet
  const InputStats& stats = reader.stats();
  if (stats.with_nul > 0) {
    // Always shown: binary data in line mode is usually a mistake worth knowing about.
    report_warning(std::to_string(stats.with_nul) +
                   " line(s) contain NUL bytes (first: " + reader.first_nul_location() +
                   "); they were taken as raw bytes; use -0 for NUL-delimited input");
  }
  if (stats.empty > 0) {
    report_note(std::to_string(stats.empty) + " empty line(s) " +
                (skip_empty ? "skipped" : "counted as items (use --skip-empty to ignore them)"));
  }
}

void add_input_fields(Summary& summary, const ItemReader& reader) {
  const InputStats& stats = reader.stats();
  summary.count_if_any("empty lines", "empty", stats.empty)
      .count_if_any("lines with NUL", "with_nul", stats.with_nul);
  if (reader.stopped_by() != 0) {
    summary.text("stopped by", "stopped_by", signal_name(reader.stopped_by()));
  }
}

}  // namespace redbloom::cli
