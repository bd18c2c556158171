#include "core/redis_format.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "redbloom/error.hpp"

namespace redbloom::redis {
namespace {

std::string tag(std::string_view name, std::string_view id) {
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "{" + std::string.
  std::string text;
  text += '{';
  text += name;
  text += ':';
  text += id;
  text += '}';
  return text;
}

std::string partition_tag(std::string_view name, std::uint64_t partition, std::uint32_t salt) {
  std::string id = std::to_string(partition);
  if (salt != 0) {
    id += ':';
    id += std::to_string(salt);
  }
  return tag(name, id);
}

// "NAME:" or "NAME:<part>:".
std::string prefix(std::string_view name, std::string_view part) {
  std::string text(name);
  text += ':';
  if (!part.empty()) {
    text += part;
    text += ':';
  }
  return text;
}

std::string double_text(double value) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

std::vector<std::uint32_t> parse_salts(const Fields& fields) {
  std::vector<std::uint32_t> salts;
  if (!fields.has("tag_salts")) return salts;
  std::string_view text = fields.text("tag_salts");
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::uint32_t salt = 0;
    const std::string_view piece = text.substr(0, comma);
    const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), salt);
    if (ec != std::errc{} || end != piece.data() + piece.size()) {
      throw FormatError(fields.what() + ": metadata field 'tag_salts' is not a list of numbers");
    }
    salts.push_back(salt);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return salts;
}

std::string describe_format(std::string_view format) {
  if (format == kFilterFormat) return "a plain filter";
  if (format == kStreamFormat) return "a windowed or growing filter";
  if (format == kExactFormat) return "an exact set";
  return "unknown to this redbloom";
}

}  // namespace

void validate_filter_name(std::string_view name) {
  if (name.empty()) throw InvalidArgument("filter name is empty");
  if (name.size() > 1024) throw InvalidArgument("filter name is longer than 1024 bytes");
  if (name.find_first_of("{}") != std::string_view::npos) {
    throw InvalidArgument("filter name '" + std::string(name) +
                          "' contains '{' or '}' (they would change the keys' hash tags)");
  }
}

std::string partition_key(std::string_view name, std::uint64_t partition, std::uint32_t salt,
                          std::string_view part) {
  return prefix(name, part) + "bits:" + partition_tag(name, partition, salt);
}

std::string temp_key(std::string_view name, std::uint64_t partition, std::uint32_t salt,
                     std::string_view part) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ":%016llx", static_cast<unsigned long long>(random()));
  return prefix(name, part) + "tmp:" + partition_tag(name, partition, salt) + suffix;
}

std::string exact_meta_key(std::string_view name) {
  return std::string(name) + ":exact";
}

std::string exact_bucket_key(std::string_view name, std::uint64_t bucket) {
  std::string suffix(1, 'x');  // appended: GCC 12 at -O3 warns falsely (-Wrestrict) on "x" + string
  suffix += std::to_string(bucket);
  return std::string(name) + ":exact:" + tag(name, suffix);
}

Fields::Fields(std::vector<std::pair<std::string, std::string>> pairs, std::string what)
    : fields_(std::make_move_iterator(pairs.begin()), std::make_move_iterator(pairs.end())),
      what_(std::move(what)) {}

bool Fields::has(std::string_view field) const {
  return fields_.find(field) != fields_.end();
}

const std::string& Fields::text(std::string_view field) const {
  const auto it = fields_.find(field);
  if (it == fields_.end()) {
    throw FormatError(what_ + ": metadata field '" + std::string(field) + "' is missing");
  }
  return it->second;
}

std::uint64_t Fields::number(std::string_view field) const {
  const std::string& value = text(field);
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (ec != std::errc{} || end != value.data() + value.size()) {
    throw FormatError(what_ + ": metadata field '" + std::string(field) + "' is not a number: '" +
                      value + "'");
  }
  return number;
}

double Fields::real(std::string_view field) const {
  const std::string& value = text(field);
  char* end = nullptr;
  const double number = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size()) {
    throw FormatError(what_ + ": metadata field '" + std::string(field) + "' is not a number");
  }
  return number;
}

void Fields::check_format(std::string_view format, std::string_view noun,
                          std::uint32_t newest) const {
  const auto found = fields_.find("format");
  if (found == fields_.end() || found->second != format) {
    std::string message = what_ + " is a Redis hash but not a redbloom " + std::string(noun);
    // Another redbloom object (a windowed filter opened as a plain one): say which.
    if (found != fields_.end() && found->second.starts_with("redbloom")) {
      message +=
          ": it holds " + describe_format(found->second) + " (format '" + found->second + "')";
    }
    throw FormatError(message);
  }
  const std::uint64_t v = number("version");
  if (v < 1 || v > newest) {
    throw FormatError(what_ + ": redbloom " + std::string(noun) + " format version " +
                      std::to_string(v) + " is unknown to this redbloom (it reads versions 1 to " +
                      std::to_string(newest) + "); use a newer redbloom");
  }
}

std::uint32_t Fields::version() const {
  return static_cast<std::uint32_t>(number("version"));
}

bool Fields::ready() const {
  if (version() == 1 && !has("state")) return true;
  const auto state = fields_.find("state");
  return state != fields_.end() && state->second == "ready";
}

std::string encode_salts(const std::vector<std::uint32_t>& salts) {
  std::string text;
  if (std::all_of(salts.begin(), salts.end(), [](std::uint32_t s) { return s == 0; })) return text;
  for (std::size_t i = 0; i < salts.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(salts[i]);
  }
  return text;
}

std::vector<std::pair<std::string, std::string>> filter_claim_fields(const FilterMetadata& m) {
  return {
      {"format", std::string(kFilterFormat)},
      {"version", std::to_string(m.version)},
      {"state", "creating"},
      {"partitions", std::to_string(m.params.partitions)},
      {"partition_bits", std::to_string(m.params.partition_bits)},
      {"tag_salts", encode_salts(m.tag_salts)},
      {"claimed_unix_ns", std::to_string(m.claimed_unix_ns)},
  };
}

namespace {

// The placement's fields as a finished object records them.
void append_placement(std::vector<std::pair<std::string, std::string>>& fields,
                      const Placement& m) {
  fields.emplace_back("created_unix_ns", std::to_string(m.created_unix_ns));
  fields.emplace_back("shards", std::to_string(m.shards));
  fields.emplace_back("shard", std::to_string(m.shard));
  fields.emplace_back("shard_set", m.shard_set);
  fields.emplace_back("tag_salts", encode_salts(m.tag_salts));
}

// What a claim records, finished or not: the salts, the state, the claim's time.
void read_claim(const Fields& fields, Placement& m) {
  // Recorded from the claim on (older filters have none: every salt 0, the plain tags).
  m.tag_salts = parse_salts(fields);
  m.ready = fields.ready();
  if (fields.has("claimed_unix_ns")) m.claimed_unix_ns = fields.number("claimed_unix_ns");
}

void read_shards(const Fields& fields, Placement& m) {
  m.shards = static_cast<std::uint32_t>(fields.number("shards"));
  m.shard = static_cast<std::uint32_t>(fields.number("shard"));
  m.shard_set = fields.text("shard_set");
  if (m.shards == 0 || m.shard >= m.shards) {
    throw FormatError(fields.what() + ": shard " + std::to_string(m.shard) + " of " +
                      std::to_string(m.shards) + " is not a shard");
  }
}

void check_salts(const Fields& fields, const Placement& m, std::uint64_t partitions) {
  if (!m.tag_salts.empty() && m.tag_salts.size() != partitions) {
    throw FormatError(fields.what() + ": metadata field 'tag_salts' has " +
                      std::to_string(m.tag_salts.size()) + " entries for " +
                      std::to_string(partitions) + " partitions");
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> encode_filter_metadata(const FilterMetadata& m) {
  const FilterParams& p = m.params;
  std::vector<std::pair<std::string, std::string>> fields = {
      {"format", std::string(kFilterFormat)},
      {"version", std::to_string(m.version)},
      {"state", m.ready ? "ready" : "creating"},
      {"layout", std::to_string(static_cast<std::uint32_t>(p.layout))},
      {"hashes", std::to_string(p.hashes)},
      {"partitions", std::to_string(p.partitions)},
      {"partition_bits", std::to_string(p.partition_bits)},
      {"capacity", std::to_string(p.capacity)},
      {"error_rate", double_text(p.error_rate)},
      {"hash_scheme", std::to_string(p.hash_scheme)},
  };
  append_placement(fields, m);
  return fields;
}

FilterMetadata parse_filter_metadata(const Fields& fields) {
  fields.check_format(kFilterFormat, "filter", kFilterVersion);
  FilterMetadata m;
  m.version = fields.version();
  read_claim(fields, m);
  FilterParams& p = m.params;
  if (!m.ready) {
    // An unfinished creation records its partitions first, so drop can clean them up.
    if (fields.has("partitions")) p.partitions = fields.number("partitions");
    if (fields.has("partition_bits")) p.partition_bits = fields.number("partition_bits");
    if (m.tag_salts.size() != p.partitions) m.tag_salts.assign(p.partitions, 0);
    return m;
  }
  p.layout = static_cast<Layout>(fields.number("layout"));
  p.hashes = static_cast<std::uint32_t>(fields.number("hashes"));
  p.partitions = fields.number("partitions");
  p.partition_bits = fields.number("partition_bits");
  p.capacity = fields.number("capacity");
  p.hash_scheme = static_cast<std::uint32_t>(fields.number("hash_scheme"));
  p.error_rate = fields.real("error_rate");
  m.created_unix_ns = fields.number("created_unix_ns");
  if (fields.has("shards")) read_shards(fields, m);  // older filters: one server
  check_salts(fields, m, p.partitions);
  try {
    validate(p, /*from_storage=*/true);
  } catch (const FormatError& e) {
    throw FormatError(fields.what() + ": " + e.what());
  }
  return m;
}

std::vector<std::pair<std::string, std::string>> exact_claim_fields(const ExactMetadata& m) {
  return {
      {"format", std::string(kExactFormat)},
      {"version", std::to_string(m.version)},
      {"state", "creating"},
      {"bucket_bits", std::to_string(m.bucket_bits)},
      {"tag_bytes", std::to_string(kExactTagBytes)},
      {"entries", "0"},
      {"claimed_unix_ns", std::to_string(m.claimed_unix_ns)},
      {"filter_created_unix_ns", std::to_string(m.filter_id)},
  };
}

ExactMetadata parse_exact_metadata(const Fields& fields) {
  fields.check_format(kExactFormat, "exact set", kExactVersion);
  ExactMetadata m;
  m.version = fields.version();
  m.ready = fields.ready();
  if (fields.has("claimed_unix_ns")) m.claimed_unix_ns = fields.number("claimed_unix_ns");
  if (fields.has("filter_created_unix_ns")) m.filter_id = fields.number("filter_created_unix_ns");
  const std::uint64_t bits = fields.number("bucket_bits");
  if (bits > kMaxBucketBits) {
    throw FormatError(fields.what() + ": bad bucket_bits '" + std::to_string(bits) + "'");
  }
  m.bucket_bits = static_cast<unsigned>(bits);
  return m;
}

std::string slice_part(std::int64_t slice) {
  std::string part(1, 's');  // appended: GCC 12 at -O3 warns falsely (-Wrestrict) on "s" + string
  part += std::to_string(slice);
  return part;
}

std::vector<std::pair<std::string, std::string>> stream_claim_fields(const StreamMetadata& m) {
  std::string partitions = "0";
  for (const auto& [field, value] : m.shape_fields) {
    if (field == "partitions") partitions = value;
  }
  return {
      {"format", std::string(kStreamFormat)},
      {"version", std::to_string(m.version)},
      {"state", "creating"},
      {"partitions", partitions},
      {"tag_salts", encode_salts(m.tag_salts)},
      {"claimed_unix_ns", std::to_string(m.claimed_unix_ns)},
  };
}

std::vector<std::pair<std::string, std::string>> encode_stream_metadata(const StreamMetadata& m) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"format", std::string(kStreamFormat)},
      {"version", std::to_string(m.version)},
      {"state", m.ready ? "ready" : "creating"},
  };
  append_placement(fields, m);
  fields.insert(fields.end(), m.shape_fields.begin(), m.shape_fields.end());
  return fields;
}

StreamMetadata parse_stream_metadata(const Fields& fields) {
  fields.check_format(kStreamFormat, "stream filter", kStreamVersion);
  StreamMetadata m;
  m.version = fields.version();
  read_claim(fields, m);
  const std::uint64_t partitions = fields.has("partitions") ? fields.number("partitions") : 0;
  if (!m.ready) {
    if (m.tag_salts.size() != partitions) m.tag_salts.assign(partitions, 0);
    m.shape_fields.emplace_back("partitions", std::to_string(partitions));
    return m;
  }
  m.created_unix_ns = fields.number("created_unix_ns");
  read_shards(fields, m);
  check_salts(fields, m, partitions);
  m.tag_salts.resize(partitions, 0);
  static constexpr std::string_view kOwn[] = {"format",          "version",   "state",
                                              "created_unix_ns", "shards",    "shard",
                                              "shard_set",       "tag_salts", "claimed_unix_ns"};
  for (const auto& [field, value] : fields.all()) {
    if (std::find(std::begin(kOwn), std::end(kOwn), field) == std::end(kOwn)) {
      m.shape_fields.emplace_back(field, value);
    }
  }
  return m;
}

std::map<std::string, std::string, std::less<>> stream_shape_fields(const StreamMetadata& m) {
  return {m.shape_fields.begin(), m.shape_fields.end()};
}

std::string cuckoo_link_part(std::uint32_t link) {
  // Appended, not "c" + to_string: GCC 12 at -O3 warns falsely (-Wrestrict) on the latter.
  std::string part = "c";
  part += std::to_string(link);
  return part;
}

std::vector<std::pair<std::string, std::string>> cuckoo_claim_fields(const CuckooMetadata& m) {
  return {
      {"format", std::string(kCuckooFormat)},
      {"version", std::to_string(m.version)},
      {"state", "creating"},
      {"partitions", std::to_string(m.options.partitions)},
      {"tag_salts", encode_salts(m.tag_salts)},
      {"claimed_unix_ns", std::to_string(m.claimed_unix_ns)},
  };
}

std::vector<std::pair<std::string, std::string>> encode_cuckoo_metadata(const CuckooMetadata& m) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"format", std::string(kCuckooFormat)},
      {"version", std::to_string(m.version)},
      {"state", m.ready ? "ready" : "creating"},
      {"capacity", std::to_string(m.options.capacity)},
      {"error_rate", double_text(m.options.error_rate)},
      {"growth", std::to_string(m.options.growth)},
      {"max_bytes", std::to_string(m.options.max_bytes)},
      {"partitions", std::to_string(m.options.partitions)},
  };
  append_placement(fields, m);
  return fields;
}

CuckooMetadata parse_cuckoo_metadata(const Fields& fields) {
  fields.check_format(kCuckooFormat, "cuckoo filter", kCuckooVersion);
  CuckooMetadata m;
  m.version = fields.version();
  read_claim(fields, m);
  const std::uint64_t partitions = fields.has("partitions") ? fields.number("partitions") : 0;
  if (partitions > UINT32_MAX) {
    throw FormatError(fields.what() + ": metadata field 'partitions' is out of range");
  }
  m.options.partitions = static_cast<std::uint32_t>(partitions);
  if (!m.ready) {
    if (m.tag_salts.size() != partitions) m.tag_salts.assign(partitions, 0);
    return m;
  }
  m.options.capacity = fields.number("capacity");
  m.options.error_rate = fields.real("error_rate");
  const std::uint64_t growth = fields.number("growth");
  if (growth > UINT32_MAX)
    throw FormatError(fields.what() + ": metadata field 'growth' is out of range");
  m.options.growth = static_cast<std::uint32_t>(growth);
  m.options.max_bytes = fields.number("max_bytes");
  m.created_unix_ns = fields.number("created_unix_ns");
  read_shards(fields, m);
  check_salts(fields, m, partitions);
  m.tag_salts.resize(partitions, 0);
  return m;
}

}  // namespace redbloom::redis
