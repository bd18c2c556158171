// The one-line summary a long command prints on stderr when it ends: as text
// ("redbloom dedup: read 5, unique 3, duplicates 2, 0.00 s, 9968 items/s") or, with --json, as
// one JSON object for scripts. --quiet prints nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redbloom/params.hpp"

namespace redbloom::cli {

// JSON text of a string / number (non-finite numbers are null).
[[nodiscard]] std::string json_string(std::string_view text);
[[nodiscard]] std::string json_number(double value);
// A filter's parameters as JSON members (no braces): layout, hash_scheme, bits, bytes, hashes,
// partitions, partition_bytes, capacity, error_rate.
[[nodiscard]] std::string params_json_members(const FilterParams& params);

// 4486, 2.5, 0.033: a rate with the digits that matter at its size.
[[nodiscard]] std::string format_rate(double per_second);

class Summary {
 public:
  explicit Summary(std::string command) : command_(std::move(command)) {}
  // Text "label value" (or "value unit" when the label is empty); JSON "key": value.
  Summary& count(std::string label, std::string key, unsigned long long value);
  // The same, but in the text line only when it is not zero (JSON always has it).
  Summary& count_if_any(std::string label, std::string key, unsigned long long value);
  // A value that is not finite (not measured) is left out of the text line; JSON has null.
  Summary& number(std::string label, std::string key, double value, const char* format,
                  std::string unit = "");
  // "4486 items/s" (format_rate), or nothing in the text line when `per_second` is NaN.
  Summary& rate(std::string key, double per_second, const std::string& unit);
  Summary& text(std::string label, std::string key, std::string value);
  // What does the work on each server (Store::engines), once; nothing for a local filter.
  Summary& engines(const std::vector<std::string>& engines);
  // Text only: a sentence appended after the fields (a caveat, a note).
  Summary& note(std::string sentence);
  void print(bool json, bool quiet) const;

 private:
  struct Field {
    std::string text;  // as shown in the text line; empty: JSON only
    std::string key;
    std::string json;  // the JSON value
  };
  std::string command_;
  std::vector<Field> fields_;
  std::vector<std::string> notes_;
};

}  // namespace redbloom::cli
