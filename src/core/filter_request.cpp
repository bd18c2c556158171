#include "redbloom/filter_request.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "core/cuckoo_shape.hpp"
#include "core/stream_shape.hpp"
#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

std::string shown(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Two significant digits: 7.6e-88.
std::string brief(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", value);
  return text;
}

enum class Option : std::uint8_t {
  capacity,
  error_rate,
  layout,
  bits,
  hashes,
  partition_size,
  window,
  slices,
  growth,
  item_rate,
  max_bytes,
  force_rate,
  engine,
  nonscaling,
  kind,
};

// The options as the two front ends spell them.
struct Spelled {
  const char* command_line;
  const char* keyword;
};
constexpr Spelled kSpellings[] = {
    {"-n", "capacity"},     {"-p", "error_rate"},           {"--layout", "layout"},
    {"--bits", "bits"},     {"--hashes", "hashes"},         {"--partition-size", "partition_size"},
    {"--window", "window"}, {"--slices", "slices"},         {"--growth", "growth"},
    {"--rate", "rate"},     {"--max-bytes", "max_bytes"},   {"--force-rate", "force_rate"},
    {"--engine", "engine"}, {"--nonscaling", "nonscaling"}, {"--kind", "kind"},
};

class Words {
 public:
  explicit Words(OptionSpelling spelling) : keywords_(spelling == OptionSpelling::keywords) {}

  [[nodiscard]] bool keywords() const noexcept { return keywords_; }
  // "--window" / "window=".
  [[nodiscard]] std::string name(Option option) const {
    const Spelled& s = kSpellings[static_cast<int>(option)];
    return keywords_ ? std::string(s.keyword) + "=" : s.command_line;
  }
  // "--window 3600" / "window='3600'" (text) or "slices=0" (a number).
  [[nodiscard]] std::string with(Option option, const std::string& value, bool text) const {
    const Spelled& s = kSpellings[static_cast<int>(option)];
    if (!keywords_) return std::string(s.command_line) + " " + value;
    return std::string(s.keyword) + "=" + (text ? "'" + value + "'" : value);
  }
  [[nodiscard]] std::string with(Option option, double value) const {
    return with(option, shown(value), false);
  }

 private:
  bool keywords_;
};

// "12000/s" -> items per second; `said` is how the message shows the value ("--rate 12000").
double items_per_second(std::string_view text_view, const std::string& said) {
  const std::string text(text_view);
  const std::string forms = "give items per period: 12000/s, 12000/m, 12000/h or 12000/d";
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos) throw InvalidArgument(said + " has no period: " + forms);
  const std::string count = text.substr(0, slash);
  const std::string unit = text.substr(slash + 1);
  double per = 0;
  if (unit == "s") per = 1;
  if (unit == "m" || unit == "min") per = 60;
  if (unit == "h") per = 3600;
  if (unit == "d") per = 86400;
  char* end = nullptr;
  const double value = std::strtod(count.c_str(), &end);
  if (count.empty() || *end != '\0' || per == 0 || !(value > 0) || !(value < 1e15)) {
    throw InvalidArgument("bad rate '" + text + "': " + forms);
  }
  return value / per;
}

bool is_whole(double value, double low, double high) {
  return value >= low && value <= high && value == std::floor(value);
}

Layout layout_of(const FilterRequest& r) {
  if (!r.layout) return Layout::classic;
  const auto layout = parse_layout(*r.layout);
  if (!layout) throw InvalidArgument("unknown layout '" + *r.layout + "' (use classic or blocked)");
  return *layout;
}

double error_rate_of(const FilterRequest& r) {
  if (!r.error_rate) return kDefaultErrorRate;
  if (const auto* text = std::get_if<std::string>(&*r.error_rate)) return parse_error_rate(*text);
  const double p = std::get<double>(*r.error_rate);
  check_error_rate(p);
  return p;
}

// Bytes given as text with a unit or as a number.
std::uint64_t bytes_of(const RequestValue& value, Option option, const Words& words) {
  if (const auto* text = std::get_if<std::string>(&value)) return parse_size(*text);
  const double bytes = std::get<double>(value);
  if (!is_whole(bytes, 1, 1e18)) {
    throw InvalidArgument(words.with(option, bytes) + " is not a size: give a whole number of " +
                          "bytes, at least 1");
  }
  return static_cast<std::uint64_t>(bytes);
}

std::uint64_t partition_bytes_of(const FilterRequest& r, const Words& words) {
  return r.partition_size ? bytes_of(*r.partition_size, Option::partition_size, words)
                          : kDefaultPartitionBytes;
}

// A filter's rate at capacity is above its target only when its hash count is capped: refused,
// saying what would be built, unless the caller consents. `target` is the rate `built` was
// sized for, `asked` the user's (they differ for a stream's links).
void check_rate_reached(const FilterParams& built, double target, double asked, bool consent,
                        const Words& words) {
  if (consent || !rate_capped(built, target)) return;
  char bits_per_item[32];
  std::snprintf(bits_per_item, sizeof bits_per_item, "%.0f",
                static_cast<double>(built.total_bits()) / static_cast<double>(built.capacity));
  const std::string reached =
      target == asked
          ? "a rate of " + brief(built.error_rate) + " at capacity, not " + brief(asked)
          : "a rate of " + brief(built.error_rate) + " in each link, not the " + brief(target) +
                " that " + words.with(Option::error_rate, brief(asked), false) + " needs";
  std::string message = words.with(Option::error_rate, brief(asked), false) +
                        " cannot be built: a filter uses at most " + std::to_string(kMaxHashes) +
                        " hashes per item, so this one (" + bits_per_item +
                        " bits per item) would take items it never saw for ones it holds at " +
                        reached + ". Rates down to about " + brief(std::pow(0.5, kMaxHashes)) +
                        " are built as asked: give one of those";
  if (!words.keywords()) {
    message += ", or add " + words.name(Option::force_rate) + " to build this filter anyway";
  }
  throw InvalidArgument(message);
}

FilterParams plain_by_hand(const FilterRequest& r, const Words& words) {
  if (!r.bits || !r.hashes) {
    throw InvalidArgument(words.name(Option::bits) + " and " + words.name(Option::hashes) +
                          " go together (a size set by hand)");
  }
  if (r.error_rate) {
    throw InvalidArgument(words.name(Option::error_rate) + " sizes a filter; with " +
                          words.name(Option::bits) + " and " + words.name(Option::hashes) +
                          " it is implied");
  }
  const double bits = *r.bits;
  if (!(bits >= 1) || bits != std::floor(bits)) {
    throw InvalidArgument(words.name(Option::bits) + " must be a positive whole number (got " +
                          shown(bits) + ")");
  }
  if (bits > static_cast<double>(kMaxFilterBits)) {
    throw InvalidArgument(words.with(Option::bits, bits) +
                          " is too large: a filter holds at most 2^63 bits (1 EiB)");
  }
  if (!is_whole(*r.hashes, 0, 4294967295.0)) {  // its range: explicit_filter's message
    throw InvalidArgument(words.name(Option::hashes) + " must be a whole number (got " +
                          shown(*r.hashes) + ")");
  }
  std::uint64_t capacity = 0;
  if (r.capacity) {
    if (!(*r.capacity >= 0) || !(*r.capacity < 1.8e19)) {
      throw InvalidArgument(words.name(Option::capacity) +
                            " must be a number of items, at least 0 (got " + shown(*r.capacity) +
                            ")");
    }
    capacity = static_cast<std::uint64_t>(std::ceil(*r.capacity));
  }
  return explicit_filter(static_cast<std::uint64_t>(bits), static_cast<std::uint32_t>(*r.hashes),
                         layout_of(r), capacity, partition_bytes_of(r, words));
}

std::uint64_t window_ns_of(const RequestValue& window, const Words& words) {
  if (const auto* text = std::get_if<std::string>(&window)) {
    // A bare number once meant seconds; a window of 3600 is too easily meant otherwise.
    char* end = nullptr;
    (void)std::strtod(text->c_str(), &end);
    if (!text->empty() && end != text->c_str() && *end == '\0') {
      throw InvalidArgument(words.with(Option::window, *text, true) +
                            " has no unit: give a number and a unit ms, s, m, h or d (e.g. " +
                            *text + "s, " + *text + "m, 1h, 7d)");
    }
    return parse_duration_ns(*text);
  }
  const double seconds = std::get<double>(window);
  if (!(seconds >= 0.001) || !(seconds < 1e9)) {
    throw InvalidArgument(
        words.keywords()
            ? "window must be at least 0.001 seconds (a number of seconds, a datetime.timedelta "
              "or a string like '10m')"
            : words.name(Option::window) + " must be at least 1ms");
  }
  return static_cast<std::uint64_t>(std::llround(seconds * 1e9));
}

StreamOptions stream_of(const FilterRequest& r, const Words& words) {
  if (r.bits || r.hashes) {
    throw InvalidArgument(words.name(r.bits ? Option::bits : Option::hashes) +
                          " sizes a plain filter by hand: a windowed or growing one is sized by " +
                          words.name(Option::capacity) + " and " + words.name(Option::error_rate));
  }
  if (r.item_rate && r.capacity) {
    throw InvalidArgument(words.name(Option::item_rate) +
                          " gives the items per window instead of " + words.name(Option::capacity) +
                          ": give one of them");
  }
  StreamOptions stream;
  stream.layout = layout_of(r);
  stream.error_rate = error_rate_of(r);
  if (r.slices && !is_whole(*r.slices, 1, kMaxSlices)) {
    throw InvalidArgument(words.with(Option::slices, *r.slices) + " is out of range: give 1 to " +
                          std::to_string(kMaxSlices) + " slices per window (default " +
                          std::to_string(kDefaultSlices) + ")");
  }
  if (r.growth && !is_whole(*r.growth, 2, 1024)) {
    throw InvalidArgument(words.with(Option::growth, *r.growth) +
                          " is out of range: give 2 to 1024 (each new link holds that many "
                          "times the last one's items)");
  }
  stream.max_partition_bytes = partition_bytes_of(r, words);
  if (r.window) stream.window_ns = window_ns_of(*r.window, words);
  if (r.slices) stream.slices = static_cast<std::uint32_t>(*r.slices);
  if (r.growth) stream.growth = static_cast<std::uint32_t>(*r.growth);
  if (r.max_bytes) stream.max_bytes = bytes_of(*r.max_bytes, Option::max_bytes, words);
  double capacity = 0;
  if (r.item_rate) {
    capacity = items_per_second(*r.item_rate, words.with(Option::item_rate, *r.item_rate, true)) *
               double(stream.window_ns) / 1e9;
  } else if (r.capacity) {
    capacity = *r.capacity;
  } else if (r.default_size) {
    capacity = kDefaultCapacity;
  } else {
    throw InvalidArgument(words.name(Option::capacity) +
                          " (items per window, or of the first link) is needed");
  }
  if (!(capacity >= 1) || capacity > 1e15) {
    throw InvalidArgument(
        "a windowed or growing filter needs at least 1 item per window (or in its first link); "
        "got " +
        shown(capacity));
  }
  stream.capacity = static_cast<std::uint64_t>(std::ceil(capacity));
  const StreamShape shape(stream);  // checks the combination, naming what is wrong
  check_rate_reached(shape.link_params(0), shape.link_error_rate(0), stream.error_rate,
                     r.force_rate, words);
  return stream;
}

bool wants_engine(const FilterRequest& r, const Words& words) {
  if (!r.engine || *r.engine == "redbloom") {
    if (r.nonscaling) {
      throw InvalidArgument(words.name(Option::nonscaling) + " is for " +
                            words.with(Option::engine, "bf", true) +
                            " (a filter of the server's Bloom engine); a redbloom filter grows "
                            "only with " +
                            words.name(Option::growth));
    }
    return false;
  }
  if (*r.engine == "bf") return true;
  throw InvalidArgument(words.name(Option::engine) + " is " +
                        (words.keywords() ? "'redbloom'" : "redbloom") +
                        " (redbloom's own filter) or " + (words.keywords() ? "'bf'" : "bf") +
                        " (the Redis server's Bloom engine), not '" + *r.engine + "'");
}

// BF.RESERVE's options; what the engine has no counterpart for is refused rather than ignored.
std::optional<EngineFilterOptions> engine_of(const FilterRequest& r, const Words& words,
                                             bool given) {
  const std::string engine = words.with(Option::engine, "bf", true);
  const std::string windows =
      "windows are redbloom's own (a BF key never forgets items): leave "
      "out " +
      engine;
  const std::tuple<bool, Option, std::string> refused[] = {
      {r.layout.has_value(), Option::layout, "the engine picks its own layout and hashes"},
      {r.bits.has_value(), Option::bits,
       "the engine sizes its bits from " + words.name(Option::capacity) + " and " +
           words.name(Option::error_rate)},
      {r.hashes.has_value(), Option::hashes,
       "the engine picks its hashes from " + words.name(Option::error_rate)},
      {r.partition_size.has_value(), Option::partition_size, "the engine keeps one key"},
      {r.window.has_value(), Option::window, windows},
      {r.slices.has_value(), Option::slices, "windows are redbloom's own"},
      {r.item_rate.has_value(), Option::item_rate, "windows are redbloom's own"},
      {r.max_bytes.has_value(), Option::max_bytes, "the engine sets its own limits"},
  };
  for (const auto& [present, option, why] : refused) {
    if (present) {
      throw InvalidArgument(words.name(option) +
                            " cannot apply to a filter of the server's Bloom engine (" + engine +
                            "): " + why);
    }
  }
  if (r.nonscaling && r.growth) {
    throw InvalidArgument(words.name(Option::nonscaling) + " and " + words.name(Option::growth) +
                          " contradict each other: a non-scaling BF filter never grows");
  }
  if (!r.capacity && !r.default_size) {
    if (given) {
      throw InvalidArgument(words.name(Option::capacity) +
                            " (the items of its first sub-filter) is needed to make a BF filter");
    }
    return std::nullopt;
  }
  const double capacity = r.capacity.value_or(kDefaultCapacity);
  if (!(capacity >= 1) || capacity > kMaxEngineCapacity) {
    throw InvalidArgument(words.name(Option::capacity) +
                          " for a BF filter must be between 1 and 1e15 (got " + shown(capacity) +
                          ")");
  }
  if (r.growth && !is_whole(*r.growth, 1, kMaxEngineExpansion)) {
    throw InvalidArgument(words.with(Option::growth, *r.growth) +
                          " is out of range for a BF filter: give 1 to 32768 (its EXPANSION: each "
                          "new sub-filter holds that many times the last one's items)");
  }
  EngineFilterOptions options;
  options.capacity = static_cast<std::uint64_t>(capacity);
  options.error_rate = error_rate_of(r);
  options.expansion = r.growth ? static_cast<std::uint32_t>(*r.growth) : 0;
  options.nonscaling = r.nonscaling;
  check_engine_options(options);
  return options;
}

bool wants_cuckoo(const FilterRequest& r, const Words& words) {
  if (!r.kind || *r.kind == "bloom") return false;
  if (*r.kind == "cuckoo") return true;
  throw InvalidArgument(words.name(Option::kind) + " is " +
                        (words.keywords() ? "'bloom'" : "bloom") + " (the default) or " +
                        (words.keywords() ? "'cuckoo'" : "cuckoo") +
                        " (a filter that can remove items), not '" + *r.kind + "'");
}

// A cuckoo filter's options; what it has no counterpart for is refused rather than ignored.
std::optional<CuckooOptions> cuckoo_of(const FilterRequest& r, const Words& words, bool given) {
  const std::string kind = words.with(Option::kind, "cuckoo", true);
  const std::tuple<bool, Option, std::string> refused[] = {
      {r.layout.has_value(), Option::layout, "its tables have one layout"},
      {r.bits.has_value() || r.hashes.has_value(), r.bits ? Option::bits : Option::hashes,
       "it is sized by " + words.name(Option::capacity) + " and " + words.name(Option::error_rate)},
      {r.partition_size.has_value(), Option::partition_size, "a local cuckoo filter is one table"},
      {r.window.has_value(), Option::window,
       "it forgets items by remove, not by time: use a Bloom filter with a window"},
      {r.slices.has_value(), Option::slices, "windows are the Bloom filter's"},
      {r.item_rate.has_value(), Option::item_rate, "windows are the Bloom filter's"},
      {r.engine.has_value() && *r.engine != "redbloom", Option::engine,
       "the server's engine has its own cuckoo filter (CF.RESERVE)"},
      {r.nonscaling, Option::nonscaling,
       "a cuckoo filter grows only with " + words.name(Option::growth)},
      {r.force_rate, Option::force_rate, "its fingerprints reach any rate down to 2e-9"},
  };
  for (const auto& [present, option, why] : refused) {
    if (present) {
      throw InvalidArgument(words.name(option) + " cannot apply to a cuckoo filter (" + kind +
                            "): " + why);
    }
  }
  if (!r.capacity && !r.default_size) {
    if (given) {
      throw InvalidArgument(words.name(Option::capacity) +
                            " (the items of its first table) is needed to size a cuckoo filter");
    }
    return std::nullopt;
  }
  const double capacity = r.capacity.value_or(kDefaultCapacity);
  if (!(capacity >= 1) || capacity > 1e15) {
    throw InvalidArgument(words.name(Option::capacity) +
                          " for a cuckoo filter must be between 1 and 1e15 (got " +
                          shown(capacity) + ")");
  }
  if (r.growth && !is_whole(*r.growth, 2, 1024)) {
    throw InvalidArgument(words.with(Option::growth, *r.growth) +
                          " is out of range: give 2 to 1024 (each new table holds that many "
                          "times the last one's items)");
  }
  if (r.max_bytes && !r.growth) {
    throw InvalidArgument(words.name(Option::max_bytes) +
                          " limits a cuckoo filter that grows: add " + words.name(Option::growth));
  }
  CuckooOptions options;
  options.capacity = static_cast<std::uint64_t>(std::ceil(capacity));
  options.error_rate = error_rate_of(r);
  if (r.growth) options.growth = static_cast<std::uint32_t>(*r.growth);
  if (r.max_bytes) options.max_bytes = bytes_of(*r.max_bytes, Option::max_bytes, words);
  (void)CuckooShape(options);  // checks the combination, naming what is wrong
  return options;
}

}  // namespace

void check_engine_options(const EngineFilterOptions& options) {
  if (options.capacity < 1 || static_cast<double>(options.capacity) > kMaxEngineCapacity) {
    throw InvalidArgument("a BF filter's capacity must be between 1 and 1e15");
  }
  if (!(options.error_rate > 0 && options.error_rate < 1)) {
    throw InvalidArgument("a BF filter's error rate must be between 0 and 1 (exclusive)");
  }
  if (options.expansion > kMaxEngineExpansion) {
    throw InvalidArgument("a BF filter's expansion must be 32768 or less");
  }
  if (options.nonscaling && options.expansion != 0) {
    throw InvalidArgument(
        "a non-scaling BF filter never grows, so it takes no expansion: give one or the other");
  }
}

SizedRequest size_request(const FilterRequest& r) {
  const Words words(r.spelling);
  SizedRequest sized;
  sized.given = r.capacity || r.error_rate || r.layout || r.bits || r.hashes || r.partition_size ||
                r.window || r.slices || r.growth || r.item_rate || r.max_bytes || r.nonscaling;
  if (wants_cuckoo(r, words)) {
    sized.cuckoo = cuckoo_of(r, words, sized.given);
    return sized;
  }
  if (wants_engine(r, words)) {
    sized.engine = engine_of(r, words, sized.given);
    return sized;
  }
  if (!r.window && (r.slices || r.item_rate)) {
    throw InvalidArgument(words.name(r.slices ? Option::slices : Option::item_rate) +
                          " belongs to a windowed filter: add " + words.name(Option::window));
  }
  if (r.window || r.growth) {
    sized.stream = stream_of(r, words);
    return sized;
  }
  if (r.max_bytes) {
    throw InvalidArgument(words.name(Option::max_bytes) +
                          " limits a windowed or growing filter: add " +
                          words.name(Option::window) + " or " + words.name(Option::growth) +
                          " (a plain filter's size is fixed by " + words.name(Option::capacity) +
                          " and " + words.name(Option::error_rate) + ")");
  }
  if (r.bits || r.hashes) {
    sized.params = plain_by_hand(r, words);
    return sized;
  }
  double capacity = kDefaultCapacity;
  if (r.capacity) {
    capacity = *r.capacity;
  } else if (!r.default_size) {
    if (sized.given) {
      throw InvalidArgument(words.name(Option::capacity) +
                            " (the number of items expected) is needed to size a filter");
    }
    return sized;
  }
  const Layout layout = layout_of(r);
  const double p = error_rate_of(r);
  sized.params = size_filter(capacity, p, layout, partition_bytes_of(r, words));
  check_rate_reached(*sized.params, p, p, r.force_rate, words);
  return sized;
}

std::uint64_t parse_size(std::string_view text_view) {
  const std::string text(text_view);
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InvalidArgument("bad size '" + text + "' (examples: 64MiB, 512M, 4096)");
  }
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "" || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KiB" || unit == "k") {
    scale = 1024;
  } else if (unit == "M" || unit == "MiB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GiB") {
    scale = 1024.0 * 1024 * 1024;
  } else {
    throw InvalidArgument("bad size unit in '" + text + "' (use B, KiB, MiB or GiB)");
  }
  const double bytes = value * scale;
  if (!(bytes >= 1) || bytes > 1e18 || bytes != std::floor(bytes)) {
    throw InvalidArgument("bad size '" + text + "'");
  }
  return static_cast<std::uint64_t>(bytes);
}

double parse_error_rate(std::string_view text_view) {
  std::string text(text_view);
  const bool percent = text.ends_with('%');
  if (percent) text.pop_back();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno != 0) {
    throw InvalidArgument("bad error rate '" + std::string(text_view) +
                          "' (examples: 0.01, 1e-3, 0.1%)");
  }
  const double p = percent ? value / 100 : value;
  check_error_rate(p);
  return p;
}

double parse_item_rate(std::string_view text) {
  return items_per_second(text, "rate " + std::string(text));
}

bool rate_capped(const FilterParams& built, double target) {
  // Below the cap, rounding only lowers the rate; a capped k leaves it far above the target.
  return built.hashes >= kMaxHashes && built.error_rate > target * 1.01;
}

}  // namespace redbloom
