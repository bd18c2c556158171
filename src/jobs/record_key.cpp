#include "redbloom/record_key.hpp"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "json_line_scan.hpp"
#include "redbloom/error.hpp"

namespace redbloom {

struct RecordKeyExtractor::Json {
  simdjson::dom::parser parser;
  // Only its first stage runs, for scan_json_lines: the structural indexes it leaves are the
  // parser's own (the member simdjson keeps public for such access).
  simdjson::dom::parser index;
  std::vector<JsonLineKey> keys;
  // Runs left to the document parser without trying the scan, after a run it could not take
  // (input whose records the scan does not cover would pay for both).
  int scan_rest = 0;
};

RecordKeySpec RecordKeySpec::field_of(std::size_t field, char delimiter) {
  RecordKeySpec spec;
  spec.format = Format::field;
  spec.field = field;
  spec.delimiter = delimiter;
  return spec;
}

RecordKeySpec RecordKeySpec::csv_field(std::size_t field, char delimiter) {
  RecordKeySpec spec;
  spec.format = Format::csv;
  spec.field = field;
  spec.delimiter = delimiter;
  return spec;
}

RecordKeySpec RecordKeySpec::json(std::string path) {
  RecordKeySpec spec;
  spec.format = Format::json;
  spec.json_path = std::move(path);
  return spec;
}

RecordKeyExtractor::RecordKeyExtractor(RecordKeySpec spec) : spec_(std::move(spec)) {
  if (spec_.format == RecordKeySpec::Format::json) {
    if (spec_.json_path.empty()) {
      throw InvalidArgument("the JSON key path is empty: name a member, as id or event.id");
    }
    std::size_t start = 0;
    for (;;) {
      const std::size_t dot = spec_.json_path.find('.', start);
      const std::string segment =
          spec_.json_path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (segment.empty()) {
        throw InvalidArgument("the JSON key path '" + spec_.json_path +
                              "' has an empty member name: write members joined by single "
                              "dots, as event.id");
      }
      path_.push_back(segment);
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    json_ = std::make_unique<Json>();
    return;
  }
  if (spec_.field == 0) {
    throw InvalidArgument(
        "key fields are counted from 1 (as cut -f and awk $1): field 0 selects "
        "nothing");
  }
  const char d = spec_.delimiter;
  if (d == '\n' || d == '\r' || (spec_.format == RecordKeySpec::Format::csv && d == '"')) {
    throw InvalidArgument(std::string("the field delimiter cannot be ") +
                          (d == '"' ? "a double quote (CSV quotes fields with it)"
                                    : "a line end (records are lines)"));
  }
}

RecordKeyExtractor::~RecordKeyExtractor() = default;
RecordKeyExtractor::RecordKeyExtractor(RecordKeyExtractor&&) noexcept = default;
RecordKeyExtractor& RecordKeyExtractor::operator=(RecordKeyExtractor&&) noexcept = default;

RecordKeyStatus RecordKeyExtractor::field_key(std::string_view record, std::string_view& key) {
  const char d = spec_.delimiter;
  std::size_t start = 0;
  for (std::size_t n = 1; n < spec_.field; ++n) {
    const void* at = std::memchr(record.data() + start, d, record.size() - start);
    if (at == nullptr) {
      problem_ =
          "no field " + std::to_string(spec_.field) + " (the line has " + std::to_string(n) + ")";
      return RecordKeyStatus::missing;
    }
    start = static_cast<std::size_t>(static_cast<const char*>(at) - record.data()) + 1;
  }
  const void* at = std::memchr(record.data() + start, d, record.size() - start);
  const std::size_t end =
      at == nullptr ? record.size()
                    : static_cast<std::size_t>(static_cast<const char*>(at) - record.data());
  key = record.substr(start, end - start);
  return RecordKeyStatus::ok;
}

RecordKeyStatus RecordKeyExtractor::csv_key(std::string_view record, std::string_view& key,
                                            std::string& out) {
  const char d = spec_.delimiter;
  const std::size_t size = record.size();
  std::size_t i = 0;
  for (std::size_t n = 1;; ++n) {
    const bool wanted = n == spec_.field;
    if (i < size && record[i] == '"') {
      // A quoted field: "" is one quote; the closing quote is followed by a delimiter or the end.
      const std::size_t open = ++i;
      bool doubled = false;
      for (;;) {
        const void* at = std::memchr(record.data() + i, '"', size - i);
        if (at == nullptr) {
          problem_ = "field " + std::to_string(n) +
                     " opens a quote that the line does not close (a field that spans lines "
                     "is not supported)";
          return RecordKeyStatus::invalid;
        }
        i = static_cast<std::size_t>(static_cast<const char*>(at) - record.data());
        if (i + 1 < size && record[i + 1] == '"') {
          doubled = true;
          i += 2;
          continue;
        }
        break;
      }
      const std::size_t close = i++;
      if (i < size && record[i] != d) {
        problem_ = "field " + std::to_string(n) + " has text after its closing quote";
        return RecordKeyStatus::invalid;
      }
      if (wanted) {
        const std::string_view inner = record.substr(open, close - open);
        if (!doubled) {
          key = inner;
          return RecordKeyStatus::ok;
        }
        out.reserve(out.size() + inner.size());
        for (std::size_t j = 0; j < inner.size(); ++j) {
          out.push_back(inner[j]);
          if (inner[j] == '"') ++j;  // the second quote of a pair
        }
        return RecordKeyStatus::ok;
      }
    } else {
      // An unquoted field runs to the delimiter; a quote inside it is taken as it is.
      const void* at = std::memchr(record.data() + i, d, size - i);
      const std::size_t end =
          at == nullptr ? size
                        : static_cast<std::size_t>(static_cast<const char*>(at) - record.data());
      if (wanted) {
        key = record.substr(i, end - i);
        return RecordKeyStatus::ok;
      }
      i = end;
    }
    if (i >= size) {
      problem_ =
          "no field " + std::to_string(spec_.field) + " (the line has " + std::to_string(n) + ")";
      return RecordKeyStatus::missing;
    }
    ++i;  // the delimiter
  }
}

namespace {

void append_number(std::string& out, auto value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  out.append(text, result.ptr);
}

const char* type_name(simdjson::dom::element_type type) {
  switch (type) {
    case simdjson::dom::element_type::ARRAY:
      return "an array";
    case simdjson::dom::element_type::OBJECT:
      return "an object";
    default:
      return "a scalar";
  }
}

}  // namespace

RecordKeyStatus RecordKeyExtractor::json_value_key(const void* root, std::string_view& key,
                                                   std::string& out) {
  simdjson::dom::element element = *static_cast<const simdjson::dom::element*>(root);
  for (std::size_t s = 0; s < path_.size(); ++s) {
    simdjson::dom::object object;
    if (element.get_object().get(object) != simdjson::SUCCESS) {
      problem_ = s == 0 ? std::string("not a JSON object")
                        : "member " + path_[s - 1] + " of the path " + spec_.json_path +
                              " is not an object";
      return s == 0 ? RecordKeyStatus::invalid : RecordKeyStatus::missing;
    }
    if (object.at_key(path_[s]).get(element) != simdjson::SUCCESS) {
      problem_ = "no member " + spec_.json_path;
      return RecordKeyStatus::missing;
    }
  }
  switch (element.type()) {
    case simdjson::dom::element_type::STRING: {
      out.push_back('s');
      out.append(element.get_string().value_unsafe());
      break;
    }
    case simdjson::dom::element_type::INT64:
      out.push_back('n');
      append_number(out, element.get_int64().value_unsafe());
      break;
    case simdjson::dom::element_type::UINT64:
      out.push_back('n');
      append_number(out, element.get_uint64().value_unsafe());
      break;
    case simdjson::dom::element_type::DOUBLE: {
      const double value = element.get_double().value_unsafe();
      out.push_back('n');
      // An integral double within int64 is written as that integer: 1.0, 1e0 and 1 are one key.
      if (std::trunc(value) == value && value >= -9.2e18 && value <= 9.2e18) {
        append_number(out, static_cast<std::int64_t>(value));
      } else {
        append_number(out, value);
      }
      break;
    }
    case simdjson::dom::element_type::BOOL:
      out.push_back('b');
      out.append(element.get_bool().value_unsafe() ? "true" : "false");
      break;
    case simdjson::dom::element_type::NULL_VALUE:
      problem_ = "member " + spec_.json_path + " is null";
      return RecordKeyStatus::missing;
    default:
      problem_ = "member " + spec_.json_path + " is " + type_name(element.type()) +
                 ", not a string, number or boolean";
      return RecordKeyStatus::invalid;
  }
  key = out;
  return RecordKeyStatus::ok;
}

RecordKeyStatus RecordKeyExtractor::json_key(std::string_view record, std::string_view& key,
                                             std::string& out) {
  // The parser reads up to SIMDJSON_PADDING bytes past the end: the record goes into a buffer
  // that has them (the bytes after a record in the input buffer may not be there).
  if (padded_.size() < record.size() + simdjson::SIMDJSON_PADDING) {
    padded_.resize(record.size() + simdjson::SIMDJSON_PADDING);
  }
  std::memcpy(padded_.data(), record.data(), record.size());
  std::memset(padded_.data() + record.size(), 0, simdjson::SIMDJSON_PADDING);
  simdjson::dom::element element;
  if (const auto error = json_->parser.parse(padded_.data(), record.size(), false).get(element);
      error != simdjson::SUCCESS) {
    problem_ = std::string("not valid JSON (") + simdjson::error_message(error) + ")";
    return RecordKeyStatus::invalid;
  }
  return json_value_key(&element, key, out);
}

RecordKeyStatus RecordKeyExtractor::extract(std::string_view record, std::string_view& key) {
  if (!record.empty() && record.back() == '\r') record.remove_suffix(1);
  key = {};
  own_.clear();
  switch (spec_.format) {
    case RecordKeySpec::Format::field:
      return field_key(record, key);
    case RecordKeySpec::Format::csv: {
      const RecordKeyStatus status = csv_key(record, key, own_);
      if (status == RecordKeyStatus::ok && key.data() == nullptr) key = own_;
      return status;
    }
    case RecordKeySpec::Format::json:
      return json_key(record, key, own_);
  }
  return RecordKeyStatus::invalid;
}

bool RecordKeyExtractor::json_all(const std::vector<std::string_view>& records, std::size_t first,
                                  std::size_t last, std::vector<RecordKeyStatus>& statuses,
                                  std::size_t& found) {
  // One parse of many records as a stream of documents costs far less than one parse per
  // record. It holds only if each record is exactly one valid document; otherwise (a bad
  // record, two documents on a line, one across lines) the caller parses record by record.
  std::vector<std::size_t>& starts = starts_;
  starts.resize(last - first + 1);
  std::size_t length = 0;
  for (std::size_t i = first; i < last; ++i) {
    starts[i - first] = length;
    length += records[i].size() + 1;
  }
  starts[last - first] = length;
  // The records of a run usually lie back to back in the caller's buffer, each followed by its
  // newline; then they are parsed where they are, if the bytes of later records in the batch
  // cover the padding the parser reads past the run's end. Else they are copied.
  const char* base = records[first].data();
  // Each next record starting right after the one before's delimiter puts that delimiter inside
  // the buffer; only then is it read.
  bool in_place = last < records.size();
  for (std::size_t i = first + 1; in_place && i <= last; ++i) {
    in_place = records[i].data() == base + starts[i - first] && base[starts[i - first] - 1] == '\n';
  }
  for (std::size_t j = last; in_place; ++j) {
    const std::string_view next = records[j];
    if (static_cast<std::size_t>(next.data() + next.size() - (base + length)) >=
        simdjson::SIMDJSON_PADDING) {
      break;
    }
    in_place = j + 1 < records.size() && records[j + 1].data() == next.data() + next.size() + 1;
  }
  if (!in_place) {
    if (padded_.size() < length + simdjson::SIMDJSON_PADDING) {
      padded_.resize(length + simdjson::SIMDJSON_PADDING);
    }
    char* at = padded_.data();
    for (std::size_t i = first; i < last; ++i) {
      std::memcpy(at, records[i].data(), records[i].size());
      at += records[i].size();
      *at++ = '\n';
    }
    std::memset(at, 0, simdjson::SIMDJSON_PADDING);
    base = padded_.data();
  }
  if (json_scan(base, length, first, last, statuses, found)) return true;
  simdjson::dom::document_stream stream;
  const std::size_t window = std::max(length, simdjson::dom::DEFAULT_BATCH_SIZE);
  if (json_->parser.parse_many(reinterpret_cast<const std::uint8_t*>(base), length, window)
          .get(stream) != simdjson::SUCCESS) {
    return false;
  }
  found = 0;
  std::size_t r = first;
  for (auto it = stream.begin(); it != stream.end(); ++it) {
    simdjson::dom::element document;
    if ((*it).get(document) != simdjson::SUCCESS || r == last) return false;
    // Each document starts at its record's first non-blank byte: then one that runs on past its
    // line (a record that is not valid JSON alone) makes the next record's document start late.
    const std::size_t offset = it.current_index();
    std::size_t lead = starts[r - first];
    while (lead < offset && (base[lead] == ' ' || base[lead] == '\t')) ++lead;
    if (offset != lead || offset >= starts[r - first + 1] - 1) return false;
    const std::size_t before = arena_.size();
    std::string_view key;
    const RecordKeyStatus status = json_value_key(&document, key, arena_);
    statuses[r] = status;
    if (status == RecordKeyStatus::ok) {
      owned_.push_back({r, before, arena_.size() - before});
      ++found;
    } else {
      arena_.resize(before);
    }
    ++r;
  }
  return r == last && stream.truncated_bytes() == 0;
}

bool RecordKeyExtractor::json_scan(const char* base, std::size_t length, std::size_t first,
                                   std::size_t last, std::vector<RecordKeyStatus>& statuses,
                                   std::size_t& found) {
  // After a run it could not take, the scan sits out this many.
  constexpr int kScanPause = 16;
  Json& json = *json_;
  if (json.scan_rest > 0) {
    --json.scan_rest;
    return false;
  }
  json.scan_rest = kScanPause;
  if (json.index.capacity() < length && json.index.allocate(length) != simdjson::SUCCESS) {
    return false;
  }
  simdjson::internal::dom_parser_implementation& stage = *json.index.implementation;
  if (stage.stage1(reinterpret_cast<const std::uint8_t*>(base), length,
                   simdjson::stage1_mode::regular) != simdjson::SUCCESS) {
    return false;
  }
  const std::size_t count = last - first;
  json.keys.resize(count);
  const JsonLineRun run{base, starts_.data(), count, stage.structural_indexes.get(),
                        stage.n_structural_indexes};
  if (!scan_json_lines(run, path_, statuses.data() + first, json.keys.data())) return false;
  json.scan_rest = 0;
  found = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (statuses[first + i] != RecordKeyStatus::ok) continue;
    const JsonLineKey& key = json.keys[i];
    const std::size_t before = arena_.size();
    arena_.push_back(key.type);
    if (key.type == 'n') {
      // As the document parser reads it: an int64 (18 digits always fit), "-0" as 0.
      std::int64_t value = 0;
      std::from_chars(key.text.data(), key.text.data() + key.text.size(), value);
      append_number(arena_, value);
    } else {
      arena_.append(key.text);
    }
    owned_.push_back({first + i, before, arena_.size() - before});
    ++found;
  }
  return true;
}

std::size_t RecordKeyExtractor::extract_all(const std::vector<std::string_view>& records,
                                            std::vector<std::string_view>& keys,
                                            std::vector<RecordKeyStatus>& statuses) {
  keys.assign(records.size(), std::string_view{});
  statuses.assign(records.size(), RecordKeyStatus::ok);
  arena_.clear();
  owned_.clear();
  std::size_t found = 0;
  auto one_by_one = [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      std::string_view record = records[i];
      if (!record.empty() && record.back() == '\r') record.remove_suffix(1);
      const std::size_t before = arena_.size();
      std::string_view key;
      RecordKeyStatus status = RecordKeyStatus::invalid;
      switch (spec_.format) {
        case RecordKeySpec::Format::field:
          status = field_key(record, key);
          break;
        case RecordKeySpec::Format::csv:
          status = csv_key(record, key, arena_);
          break;
        case RecordKeySpec::Format::json:
          status = json_key(record, key, arena_);
          break;
      }
      statuses[i] = status;
      if (status != RecordKeyStatus::ok) {
        arena_.resize(before);
        continue;
      }
      ++found;
      if (spec_.format == RecordKeySpec::Format::json ||
          (spec_.format == RecordKeySpec::Format::csv && key.data() == nullptr)) {
        owned_.push_back({i, before, arena_.size() - before});
      } else {
        keys[i] = key;
      }
    }
  };
  if (spec_.format != RecordKeySpec::Format::json) {
    one_by_one(0, records.size());
  } else {
    // JSON in runs that stay in the cache (the parser reads each run twice), and so that its
    // memory stays bounded whatever the batch.
    constexpr std::size_t kRunBytes = std::size_t{256} << 10;
    // The last records, whose bytes cover the parser's padding, make a run of their own: the
    // runs before them are then parsed where they lie, without a copy.
    std::size_t tail = records.size();
    for (std::size_t bytes = 0; tail > 0 && bytes <= simdjson::SIMDJSON_PADDING;) {
      bytes += records[--tail].size() + 1;
    }
    for (std::size_t first = 0; first < records.size();) {
      const std::size_t end = first < tail ? tail : records.size();
      std::size_t last = first;
      std::size_t bytes = 0;
      while (last < end && (last == first || bytes + records[last].size() < kRunBytes)) {
        bytes += records[last++].size() + 1;
      }
      const std::size_t arena_mark = arena_.size();
      const std::size_t owned_mark = owned_.size();
      std::size_t run_found = 0;
      if (last - first > 1 && json_all(records, first, last, statuses, run_found)) {
        found += run_found;
      } else {
        arena_.resize(arena_mark);
        owned_.resize(owned_mark);
        one_by_one(first, last);
      }
      first = last;
    }
  }
  for (const Owned& o : owned_) keys[o.record] = std::string_view(arena_.data() + o.offset, o.size);
  return found;
}

}  // namespace redbloom
