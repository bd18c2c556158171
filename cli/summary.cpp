#include "summary.hpp"

#include <cmath>
#include <cstdio>

#include "diagnostics.hpp"

namespace redbloom::cli {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

std::string params_json_members(const FilterParams& p) {
  return "\"layout\": " + json_string(to_string(p.layout)) +
         ", \"hash_scheme\": " + std::to_string(p.hash_scheme) +
         ", \"bits\": " + std::to_string(p.total_bits()) +
         ", \"bytes\": " + std::to_string(p.total_bytes()) +
         ", \"hashes\": " + std::to_string(p.hashes) +
         ", \"partitions\": " + std::to_string(p.partitions) +
         ", \"partition_bytes\": " + std::to_string(p.partition_bytes()) +
         ", \"capacity\": " + std::to_string(p.capacity) +
         ", \"error_rate\": " + json_number(p.error_rate);
}

Summary& Summary::count(std::string label, std::string key, unsigned long long value) {
  const std::string digits = std::to_string(value);
  fields_.push_back({label.empty() ? digits : label + " " + digits, std::move(key), digits});
  return *this;
}

Summary& Summary::count_if_any(std::string label, std::string key, unsigned long long value) {
  count(std::move(label), std::move(key), value);
  if (value == 0) fields_.back().text.clear();
  return *this;
}

std::string format_rate(double per_second) {
  char text[32];
  const char* format = per_second >= 10 ? "%.0f" : per_second >= 1 ? "%.1f" : "%.2g";
  std::snprintf(text, sizeof text, format, per_second);
  return text;
}

Summary& Summary::rate(std::string key, double per_second, const std::string& unit) {
  const std::string shown = std::isfinite(per_second) ? format_rate(per_second) + " " + unit : "";
  fields_.push_back({shown, std::move(key), json_number(per_second)});
  return *this;
}

Summary& Summary::number(std::string label, std::string key, double value, const char* format,
                         std::string unit) {
  if (!std::isfinite(value)) {
    fields_.push_back({"", std::move(key), json_number(value)});
    return *this;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  std::string shown = label.empty() ? std::string(buf) : label + " " + buf;
  if (!unit.empty()) shown += " " + unit;
  fields_.push_back({std::move(shown), std::move(key), json_number(value)});
  return *this;
}

Summary& Summary::text(std::string label, std::string key, std::string value) {
  fields_.push_back(
      {label.empty() ? value : label + " " + value, std::move(key), json_string(value)});
  return *this;
}

Summary& Summary::engines(const std::vector<std::string>& engines) {
  if (engines.empty()) return *this;
  std::string text = "engine";
  std::string json = "[";
  for (std::size_t i = 0; i < engines.size(); ++i) {
    text += (i == 0 ? " " : "; ") + engines[i];
    json += (i == 0 ? "" : ", ") + json_string(engines[i]);
  }
  fields_.push_back({std::move(text), "engines", json + "]"});
  return *this;
}

Summary& Summary::note(std::string sentence) {
  notes_.push_back(std::move(sentence));
  return *this;
}

void Summary::print(bool json, bool quiet) const {
  if (quiet) return;
  std::string line;
  if (json) {
    line = "{\"type\": \"summary\", \"command\": " + json_string(command_);
    for (const Field& f : fields_) line += ", " + json_string(f.key) + ": " + f.json;
    line += "}";
  } else {
    line = "redbloom " + command_ + ":";
    bool first = true;
    for (const Field& f : fields_) {
      if (f.text.empty()) continue;
      line += (first ? " " : ", ") + f.text;
      first = false;
    }
    for (const std::string& n : notes_) line += "; " + n;
  }
  report_line(line);
}

}  // namespace redbloom::cli
