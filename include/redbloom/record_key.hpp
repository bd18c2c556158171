// The key of a record: one field of a delimited line (as cut -f), of an RFC 4180 CSV line, or
// one value of a JSON Lines object (a dot path). Pure: no I/O, so the CLI and the Python
// package extract the same key from the same record.
//
// Keys are the bytes the filter sees, so their encoding is part of a filter's contents and
// stays as it is:
//  - a field (plain or CSV): the field's bytes, CSV quotes removed and "" read as one ";
//  - a JSON value: one type byte, then the value: 's' and the decoded UTF-8 string ("caf\u00e9"
//    and "café" are one key), 'n' and the number (an integer in decimal, any other number as
//    the shortest text that reads back as the same double: 1.0 and 1 are one key), 'b' and
//    "true" or "false". A string and a number never share a key ("7" is s7, 7 is n7).
// A JSON null, object or array, a missing field or path, or a line that does not parse has no
// key: the caller decides what to do with the record (count it, skip it, refuse the input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redbloom {

struct RecordKeySpec {
  enum class Format { field, csv, json };
  Format format = Format::field;
  std::size_t field = 1;  // field and csv: 1-based, as cut -f and awk $N
  char delimiter = '\t';  // field and csv
  std::string json_path;  // json: "event.id" (members of nested objects)

  [[nodiscard]] static RecordKeySpec field_of(std::size_t field, char delimiter = '\t');
  [[nodiscard]] static RecordKeySpec csv_field(std::size_t field, char delimiter = ',');
  [[nodiscard]] static RecordKeySpec json(std::string path);
};

enum class RecordKeyStatus {
  ok,
  missing,  // the record parses but has no such field, or the value is null
  invalid,  // the record does not parse (CSV quoting, JSON syntax or UTF-8), or the value is
            // an object or array
};

// What a dedup stage does with a record that has no item: stop before it (error), drop it
// (skip), or pass it to the output unfiltered (pass).
enum class OnMissingKey { error, skip, pass };

class RecordKeyExtractor {
 public:
  // Throws InvalidArgument for a spec that cannot select anything (field 0, an empty path or
  // path segment, a delimiter that is a quote, CR or LF).
  explicit RecordKeyExtractor(RecordKeySpec spec);
  ~RecordKeyExtractor();
  RecordKeyExtractor(RecordKeyExtractor&&) noexcept;
  RecordKeyExtractor& operator=(RecordKeyExtractor&&) noexcept;

  [[nodiscard]] const RecordKeySpec& spec() const noexcept { return spec_; }

  // The key of one record (without its line end; a trailing CR is ignored). On ok, `key` is a
  // view into `record` or into this extractor's storage, valid until the next call.
  RecordKeyStatus extract(std::string_view record, std::string_view& key);
  // Why the last extract() was not ok, for a message ("no field 3 (the line has 2)").
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

  // The keys of a batch. keys[i] is record i's key (empty when statuses[i] is not ok); the views
  // point into `records` or into this extractor's storage, valid until the next call. Returns
  // how many records have a key.
  std::size_t extract_all(const std::vector<std::string_view>& records,
                          std::vector<std::string_view>& keys,
                          std::vector<RecordKeyStatus>& statuses);

 private:
  RecordKeyStatus field_key(std::string_view record, std::string_view& key);
  RecordKeyStatus csv_key(std::string_view record, std::string_view& key, std::string& out);
  RecordKeyStatus json_key(std::string_view record, std::string_view& key, std::string& out);
  // The key at the path from a parsed document (a simdjson::dom::element).
  RecordKeyStatus json_value_key(const void* root, std::string_view& key, std::string& out);
  // Records [first, last) parsed as one stream of JSON documents, their keys appended to the
  // arena; false when that does not apply (the caller then takes them one by one).
  bool json_all(const std::vector<std::string_view>& records, std::size_t first, std::size_t last,
                std::vector<RecordKeyStatus>& statuses, std::size_t& found);
  // The same from the first stage's index alone (scan_json_lines), where base holds the run
  // (starts_ filled, padded); false when the scan does not cover its records.
  bool json_scan(const char* base, std::size_t length, std::size_t first, std::size_t last,
                 std::vector<RecordKeyStatus>& statuses, std::size_t& found);

  RecordKeySpec spec_;
  std::vector<std::string> path_;
  std::string problem_;
  std::string own_;    // a single extract()'s key when it is not a view of the record
  std::string arena_;  // extract_all's keys that are not views of their records
  // Keys built in the arena are placed once it stops growing: (record, offset, size).
  struct Owned {
    std::size_t record, offset, size;
  };
  std::vector<Owned> owned_;
  std::vector<std::size_t> starts_;  // json_all: where each record starts in padded_
  std::vector<char> padded_;         // a JSON record with the padding the parser reads past its end
  struct Json;                       // the parser (kept across records: it reuses its memory)
  std::unique_ptr<Json> json_;
};

}  // namespace redbloom
