#include "format.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <random>

#include "redbloom/error.hpp"

namespace redbloom::redis {
namespace {

std::string tag(std::string_view name, std::uint64_t partition, std::uint32_t salt) {
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "{" + std::string.
  std::string text;
  text += '{';
  text += name;
  text += ':';
  text += std::to_string(partition);
  if (salt != 0) {
    text += ':';
    text += std::to_string(salt);
  }
  text += '}';
  return text;
}

std::string double_text(double value) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

template <class Int>
Int parse_field(const std::map<std::string, std::string>& fields, const char* field,
                const std::string& what) {
  const auto it = fields.find(field);
  if (it == fields.end()) throw FormatError(what + ": metadata field '" + field + "' is missing");
  Int value{};
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    throw FormatError(what + ": metadata field '" + field + "' is not a number: '" + text + "'");
  }
  return value;
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

std::string partition_key(std::string_view name, std::uint64_t partition, std::uint32_t salt) {
  return std::string(name) + ":bits:" + tag(name, partition, salt);
}

std::string temp_key(std::string_view name, std::uint64_t partition, std::uint32_t salt) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ":%016llx", static_cast<unsigned long long>(random()));
  return std::string(name) + ":tmp:" + tag(name, partition, salt) + suffix;
}

std::vector<std::pair<std::string, std::string>> encode_metadata(const Metadata& m) {
  const FilterParams& p = m.params;
  return {
      {"format", std::string(kFormatName)},
      {"version", std::to_string(m.version)},
      {"state", m.ready ? "ready" : "creating"},
      {"layout", std::to_string(static_cast<std::uint32_t>(p.layout))},
      {"hashes", std::to_string(p.hashes)},
      {"partitions", std::to_string(p.partitions)},
      {"partition_bits", std::to_string(p.partition_bits)},
      {"capacity", std::to_string(p.capacity)},
      {"error_rate", double_text(p.error_rate)},
      {"hash_scheme", std::to_string(p.hash_scheme)},
      {"created_unix_ns", std::to_string(m.created_unix_ns)},
      {"shards", std::to_string(m.shards)},
      {"shard", std::to_string(m.shard)},
      {"shard_set", m.shard_set},
      {"tag_salts", encode_salts(m.tag_salts)},
  };
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

Metadata parse_metadata(const std::vector<std::pair<std::string, std::string>>& pairs,
                        const std::string& what) {
  const std::map<std::string, std::string> fields(pairs.begin(), pairs.end());
  const auto format = fields.find("format");
  if (format == fields.end() || format->second != kFormatName) {
    throw FormatError(what + " is a Redis hash but not a redbloom filter");
  }
  const auto version = parse_field<std::uint32_t>(fields, "version", what);
  if (version < 1 || version > kFormatVersion) {
    throw FormatError(what + ": redbloom Redis format version " + std::to_string(version) +
                      " is unknown to this redbloom (it reads versions 1 to " +
                      std::to_string(kFormatVersion) + ")");
  }
  Metadata m;
  m.version = version;
  // Recorded from the claim on (older filters have none: every salt 0, the plain tags).
  if (const auto salts = fields.find("tag_salts"); salts != fields.end()) {
    std::string_view text = salts->second;
    while (!text.empty()) {
      const std::size_t comma = text.find(',');
      std::uint32_t salt = 0;
      const std::string_view piece = text.substr(0, comma);
      const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), salt);
      if (ec != std::errc{} || end != piece.data() + piece.size()) {
        throw FormatError(what + ": metadata field 'tag_salts' is not a list of numbers");
      }
      m.tag_salts.push_back(salt);
      text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    }
  }
  const auto state = fields.find("state");
  m.ready = state != fields.end() && state->second == "ready";
  FilterParams& p = m.params;
  if (!m.ready) {
    // An unfinished creation records its partition count first, so drop can clean it up.
    if (fields.count("partitions") != 0) {
      p.partitions = parse_field<std::uint64_t>(fields, "partitions", what);
    }
    if (m.tag_salts.size() != p.partitions) m.tag_salts.assign(p.partitions, 0);
    return m;
  }
  p.layout = static_cast<Layout>(parse_field<std::uint32_t>(fields, "layout", what));
  p.hashes = parse_field<std::uint32_t>(fields, "hashes", what);
  p.partitions = parse_field<std::uint64_t>(fields, "partitions", what);
  p.partition_bits = parse_field<std::uint64_t>(fields, "partition_bits", what);
  p.capacity = parse_field<std::uint64_t>(fields, "capacity", what);
  p.hash_scheme = parse_field<std::uint32_t>(fields, "hash_scheme", what);
  m.created_unix_ns = parse_field<std::uint64_t>(fields, "created_unix_ns", what);
  if (fields.count("shards") != 0) {
    m.shards = parse_field<std::uint32_t>(fields, "shards", what);
    m.shard = parse_field<std::uint32_t>(fields, "shard", what);
    m.shard_set = fields.at("shard_set");
    if (m.shards == 0 || m.shard >= m.shards) {
      throw FormatError(what + ": shard " + std::to_string(m.shard) + " of " +
                        std::to_string(m.shards) + " is not a shard");
    }
  }
  const auto rate = fields.find("error_rate");
  if (rate == fields.end()) throw FormatError(what + ": metadata field 'error_rate' is missing");
  char* end = nullptr;
  p.error_rate = std::strtod(rate->second.c_str(), &end);
  if (rate->second.empty() || end != rate->second.c_str() + rate->second.size()) {
    throw FormatError(what + ": metadata field 'error_rate' is not a number");
  }
  if (!m.tag_salts.empty() && m.tag_salts.size() != p.partitions) {
    throw FormatError(what + ": metadata field 'tag_salts' has " +
                      std::to_string(m.tag_salts.size()) + " entries for " +
                      std::to_string(p.partitions) + " partitions");
  }
  try {
    validate(p, /*from_storage=*/true);
  } catch (const FormatError& e) {
    throw FormatError(what + ": " + e.what());
  }
  return m;
}

}  // namespace redbloom::redis
