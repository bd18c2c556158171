#include "core/stream_shape.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/link_sizing.hpp"
#include "redbloom/error.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

constexpr double kWindowFirstShare = 0.9;
constexpr double kGrowingFirstShare = 0.5;
constexpr double kMaxLinkItems = 9007199254740992.0;  // 2^53: counts stay exact in a double
// A slice's first link holds a tenth more than its share of the window: arrivals fluctuate,
// and a stream at the rate it was sized for should not add a link (a whole link's memory) for
// the few items a slice gets past its share.
constexpr std::uint64_t kSliceHeadroomTenths = 11;

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::string number_text(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

}  // namespace

std::uint64_t system_now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::uint64_t parse_duration_ns(std::string_view text) {
  const std::string value(text);
  const std::string forms = "give a number and a unit ms, s, m, h or d (e.g. 3600s, 60m, 1h, 7d)";
  char* end = nullptr;
  errno = 0;
  const double amount = std::strtod(value.c_str(), &end);
  const std::string unit(end != nullptr ? end : "");
  // A bare number once meant seconds; "3600" is too easily meant as minutes or milliseconds.
  if (!value.empty() && end != value.c_str() && unit.empty()) {
    throw InvalidArgument("'" + value + "' has no unit: " + forms);
  }
  double scale = 0;
  if (unit == "s") scale = 1e9;
  if (unit == "ms") scale = 1e6;
  if (unit == "m" || unit == "min") scale = 60e9;
  if (unit == "h") scale = 3600e9;
  if (unit == "d") scale = 86400e9;
  const double ns = amount * scale;
  if (value.empty() || end == value.c_str() || scale == 0 || errno != 0 || !(ns >= 1e6) ||
      !(ns < 1e18)) {
    throw InvalidArgument("'" + value + "' is not a duration: " + forms + ", at least 1ms");
  }
  return static_cast<std::uint64_t>(std::llround(ns));
}

std::string format_duration(std::uint64_t ns) {
  struct Unit {
    const char* name;
    double ns;
  };
  static constexpr Unit units[] = {{"d", 86400e9}, {"h", 3600e9}, {"m", 60e9}, {"s", 1e9}};
  for (const Unit& unit : units) {
    if (double(ns) >= unit.ns) {
      char text[40];
      std::snprintf(text, sizeof text, "%.4g%s", double(ns) / unit.ns, unit.name);
      return text;
    }
  }
  char text[40];
  std::snprintf(text, sizeof text, "%.4gms", double(ns) / 1e6);
  return text;
}

std::string describe(const StreamOptions& options) {
  return StreamShape(options).describe();
}

StreamShape::StreamShape(const StreamOptions& options) : options_(options) {
  if (options_.capacity < 1 || options_.capacity > 1'000'000'000'000'000) {
    throw InvalidArgument("capacity must be between 1 and 1e15 items");
  }
  check_error_rate(options_.error_rate);
  if (options_.window_ns != 0) {
    if (options_.slices == 0) options_.slices = kDefaultSlices;
    if (options_.growth == 0) options_.growth = kDefaultWindowGrowth;
    if (options_.slices > kMaxSlices) {
      throw InvalidArgument("a window has at most " + std::to_string(kMaxSlices) + " slices");
    }
    slice_ns_ = options_.window_ns / options_.slices;
    // Redis keeps time in milliseconds: a slice must be one at least.
    if (slice_ns_ < 1'000'000 || options_.window_ns % options_.slices != 0 ||
        slice_ns_ % 1'000'000 != 0) {
      throw InvalidArgument("window " + format_duration(options_.window_ns) + " in " +
                            std::to_string(options_.slices) +
                            " slices: each slice must be a whole number of milliseconds");
    }
  } else {
    options_.slices = 0;
    if (options_.growth == 0) {
      throw InvalidArgument("a filter without a window grows or is a plain filter: give a growth");
    }
  }
  if (options_.growth < 2 || options_.growth > 1024) {
    throw InvalidArgument("growth must be between 2 and 1024 (got " +
                          std::to_string(options_.growth) + ")");
  }
  first_share_ = windowed() ? kWindowFirstShare : kGrowingFirstShare;
  slice_error_ = -std::expm1(std::log1p(-options_.error_rate) / live_slices());
  first_ = size_filter(double(link_capacity(0)), link_error_rate(0), options_.layout,
                       options_.max_partition_bytes);
  if (options_.max_bytes != 0 && first_.total_bytes() * live_slices() > options_.max_bytes) {
    throw InvalidArgument(
        "the live slices need " + format_bytes(double(first_.total_bytes() * live_slices())) +
        " before any growth, over the limit of " + format_bytes(double(options_.max_bytes)));
  }
}

std::uint32_t StreamShape::live_slices() const noexcept {
  return windowed() ? options_.slices + 1 : 1;
}

std::int64_t StreamShape::slice_at(std::uint64_t unix_ns) const noexcept {
  return windowed() ? static_cast<std::int64_t>(unix_ns / slice_ns_) : 0;
}

std::int64_t StreamShape::oldest_live(std::int64_t newest) const noexcept {
  return windowed() ? newest - static_cast<std::int64_t>(options_.slices) : newest;
}

std::uint64_t StreamShape::retire_ns(std::int64_t slice) const noexcept {
  if (!windowed()) return 0;
  return static_cast<std::uint64_t>(slice + 1 + options_.slices) * slice_ns_;
}

double StreamShape::link_error_rate(std::uint32_t link) const noexcept {
  if (link == 0) return slice_error_ * first_share_;
  return slice_error_ * (1 - first_share_) * std::ldexp(1.0, -static_cast<int>(link));
}

std::uint64_t StreamShape::link_capacity(std::uint32_t link) const noexcept {
  const std::uint64_t share = std::uint64_t{10} * options_.slices;
  const double first = windowed()
                           ? double((options_.capacity * kSliceHeadroomTenths + share - 1) / share)
                           : double(options_.capacity);
  const double capacity = first * std::pow(double(options_.growth), double(link));
  return capacity >= kMaxLinkItems ? static_cast<std::uint64_t>(kMaxLinkItems)
                                   : static_cast<std::uint64_t>(capacity);
}

FilterParams StreamShape::link_params(std::uint32_t link) const {
  if (link == 0) return first_;
  if (link < sized_.size() && sized_[link].partitions != 0) return sized_[link];
  FilterParams params = size_link(link);
  if (sized_.size() <= link) sized_.resize(link + 1);
  sized_[link] = params;
  return params;
}

FilterParams StreamShape::size_link(std::uint32_t link) const {
  if (link >= kMaxStreamLinks) {
    throw InvalidArgument("a slice has at most " + std::to_string(kMaxStreamLinks) + " links");
  }
  const double capacity = double(options_.capacity) * std::pow(double(options_.growth), link);
  if (!(capacity < kMaxLinkItems)) {
    throw InvalidArgument("link " + std::to_string(link) + " would hold more than 2^53 items");
  }
  // Sized as one partition (the largest a sizing takes), then cut into the first link's count.
  FilterParams params = redbloom::size_link(double(link_capacity(link)), link_error_rate(link),
                                            options_.layout, kRedisMaxStringBits / 8);
  const std::uint64_t bits = params.total_bits();
  params.partitions = first_.partitions;
  params.partition_bits = round_up((bits + params.partitions - 1) / params.partitions, kBlockBits);
  if (params.partition_bits > kRedisMaxStringBits) {
    throw InvalidArgument("link " + std::to_string(link) + " would need partitions of " +
                          format_bytes(double(params.partition_bits / 8)) +
                          ", over Redis's 512 MiB: create the filter with more partitions "
                          "(a smaller partition size)");
  }
  params.error_rate = expected_false_positive_rate(params, double(params.capacity));
  validate(params);
  return params;
}

double StreamShape::compound_rate(
    std::span<const std::pair<std::uint32_t, std::uint64_t>> links) const {
  double log_pass = 0;  // log of the chance that every link answers "absent"
  for (const auto& [link, items] : links) {
    const double rate = expected_false_positive_rate(link_params(link), double(items));
    log_pass += std::log1p(-std::min(rate, 1.0 - 1e-300));
  }
  return 0.0 - std::expm1(log_pass);  // not -expm1: with no live link that is -0, shown "-0"
}

std::string StreamShape::describe() const {
  char text[256];
  if (windowed()) {
    std::snprintf(text, sizeof text,
                  "windowed %s in %u slices of %s, %llu items per window at p=%g, %s, growth %u",
                  format_duration(options_.window_ns).c_str(), options_.slices,
                  format_duration(slice_ns_).c_str(),
                  static_cast<unsigned long long>(options_.capacity), options_.error_rate,
                  std::string(to_string(options_.layout)).c_str(), options_.growth);
  } else {
    std::snprintf(text, sizeof text, "growing from %llu items at p=%g, %s, growth %u",
                  static_cast<unsigned long long>(options_.capacity), options_.error_rate,
                  std::string(to_string(options_.layout)).c_str(), options_.growth);
  }
  std::string out = text;
  if (options_.max_bytes != 0) out += ", at most " + format_bytes(double(options_.max_bytes));
  return out;
}

std::vector<std::pair<std::string, std::string>> StreamShape::encode() const {
  return {
      {"capacity", std::to_string(options_.capacity)},
      {"error_rate", number_text(options_.error_rate)},
      {"layout", std::string(to_string(options_.layout))},
      {"window_ns", std::to_string(options_.window_ns)},
      {"slices", std::to_string(options_.slices)},
      {"growth", std::to_string(options_.growth)},
      {"max_bytes", std::to_string(options_.max_bytes)},
      {"max_partition_bytes", std::to_string(options_.max_partition_bytes)},
      {"hash_scheme", std::to_string(first_.hash_scheme)},
      {"partitions", std::to_string(first_.partitions)},
      {"link0_bits", std::to_string(first_.partition_bits)},
      {"link0_hashes", std::to_string(first_.hashes)},
  };
}

StreamShape StreamShape::parse(const std::map<std::string, std::string, std::less<>>& fields,
                               const std::string& what) {
  auto text = [&](const char* name) -> const std::string& {
    const auto found = fields.find(name);
    if (found == fields.end()) {
      throw FormatError(what + ": stream field '" + name + "' is missing");
    }
    return found->second;
  };
  auto number = [&](const char* name) -> std::uint64_t {
    const std::string& value = text(name);
    char* end = nullptr;
    errno = 0;
    const unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || value[0] == '-') {
      throw FormatError(what + ": stream field '" + name + "' is not a number: '" + value + "'");
    }
    return parsed;
  };
  StreamOptions options;
  options.capacity = number("capacity");
  {
    const std::string& value = text("error_rate");
    char* end = nullptr;
    options.error_rate = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') {
      throw FormatError(what + ": stream field 'error_rate' is not a number: '" + value + "'");
    }
  }
  const auto layout = parse_layout(text("layout"));
  if (!layout) throw FormatError(what + ": unknown layout '" + text("layout") + "'");
  options.layout = *layout;
  options.window_ns = number("window_ns");
  options.slices = static_cast<std::uint32_t>(number("slices"));
  options.growth = static_cast<std::uint32_t>(number("growth"));
  options.max_bytes = number("max_bytes");
  options.max_partition_bytes = number("max_partition_bytes");
  if (number("hash_scheme") != kCurrentHashScheme) {
    throw FormatError(what + ": made with hash scheme " + text("hash_scheme") +
                      ", which this version does not know");
  }
  try {
    StreamShape shape(options);
    if (shape.first_.partitions != number("partitions") ||
        shape.first_.partition_bits != number("link0_bits") ||
        shape.first_.hashes != number("link0_hashes")) {
      throw FormatError(what + ": its first link was sized differently (" + text("partitions") +
                        " partitions of " + text("link0_bits") +
                        " bits, k=" + text("link0_hashes") +
                        ") than this version sizes it: open it with the version that made it");
    }
    return shape;
  } catch (const FormatError&) {
    throw;
  } catch (const InvalidArgument& e) {
    throw FormatError(what + ": its stream options are invalid: " + e.what());
  }
}

}  // namespace redbloom
