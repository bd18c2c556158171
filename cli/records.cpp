#include "records.hpp"

#include "redbloom/error.hpp"
#include "summary.hpp"

namespace redbloom::cli {

void add_record_options(CLI::App& command, RecordOptions& options) {
  command
      .add_option("--key-field", options.key_field,
                  "The item is field N of each line (from 1, as cut -f); the whole line is "
                  "printed")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  command.add_option("-d,--delimiter", options.delimiter,
                     "The character between fields for --key-field (default: tab; comma with "
                     "--csv)");
  command.add_flag("--csv", options.csv,
                   "Fields are CSV (RFC 4180): a quoted field may hold the delimiter and \"\"");
  command.add_option("--json-key", options.json_key,
                     "Lines are JSON objects; the item is the value at this dot path "
                     "(e.g. event.id); the whole line is printed");
  command
      .add_option("--on-bad-record", options.on_bad,
                  "A line without the key, or that does not parse: error (stop, the default), "
                  "skip (drop it) or pass (print it unfiltered)")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, OnBadRecord>{{"error", OnBadRecord::error},
                                                                     {"skip", OnBadRecord::skip},
                                                                     {"pass", OnBadRecord::pass}},
                                  CLI::ignore_case));
}

void check_record_options(const RecordOptions& options, InputOptions& input) {
  if (options.key_field != 0 && !options.json_key.empty()) {
    throw InvalidArgument(
        "--key-field and --json-key both name the key: keep --key-field for delimited or CSV "
        "lines, --json-key for JSON Lines");
  }
  if (!options.json_key.empty() && (options.csv || !options.delimiter.empty())) {
    throw InvalidArgument(
        "--csv and --delimiter describe delimited lines, not JSON: with "
        "--json-key leave them out");
  }
  if (options.key_field == 0 && (options.csv || !options.delimiter.empty())) {
    throw InvalidArgument(std::string(options.csv ? "--csv" : "--delimiter") +
                          " needs --key-field N: the field of each line that is the item");
  }
  if (!options.delimiter.empty() && options.delimiter.size() != 1 && options.delimiter != "\\t") {
    throw InvalidArgument("--delimiter takes one character (or \\t for a tab), not '" +
                          options.delimiter + "'");
  }
  input.records = options.active();
}

namespace {

RecordKeySpec spec_of(const RecordOptions& options) {
  if (!options.json_key.empty()) return RecordKeySpec::json(options.json_key);
  char delimiter = options.csv ? ',' : '\t';
  if (options.delimiter == "\\t") {
    delimiter = '\t';
  } else if (!options.delimiter.empty()) {
    delimiter = options.delimiter[0];
  }
  return options.csv ? RecordKeySpec::csv_field(options.key_field, delimiter)
                     : RecordKeySpec::field_of(options.key_field, delimiter);
}

}  // namespace

RecordKeys::RecordKeys(const RecordOptions& options, const char* verb)
    : options_(options), verb_(verb) {
  if (options.active()) extractor_.emplace(spec_of(options));
}

const std::vector<std::string_view>& RecordKeys::items(const std::vector<std::string_view>& records,
                                                       const ItemReader& reader) {
  if (!extractor_) return records;
  batch_records_ = records.size();
  // Every record has its key (the usual batch): the keys are the items as they are.
  if (extractor_->extract_all(records, keys_, statuses_) == records.size()) return keys_;
  items_.clear();
  for (std::size_t r = 0; r < records.size(); ++r) {
    if (statuses_[r] == RecordKeyStatus::ok) {
      items_.push_back(keys_[r]);
      continue;
    }
    // extract_all keeps no reason per record: ask again for this one's.
    std::string_view unused;
    (void)extractor_->extract(records[r], unused);
    const std::string where = reader.location_of(r) + ": " + extractor_->problem();
    if (bad_++ == 0) first_bad_ = where;
    if (options_.on_bad == OnBadRecord::error) {
      stop_error_ = where;
      batch_records_ = r;
      break;
    }
  }
  return items_;
}

void RecordKeys::emit(const std::vector<std::string_view>& records,
                      const std::vector<std::uint8_t>& flags, std::uint8_t wanted,
                      std::size_t item_count, BatchOutput& out) const {
  if (!extractor_) {
    for (std::size_t i = 0; i < item_count; ++i) {
      if (flags[i] == wanted) out.line(records[i]);
    }
    return;
  }
  const bool pass = options_.on_bad == OnBadRecord::pass;
  std::size_t k = 0;
  for (std::size_t r = 0; r < batch_records_; ++r) {
    if (statuses_[r] != RecordKeyStatus::ok) {
      if (pass) out.line(records[r]);
      continue;
    }
    if (k == item_count) break;
    if (flags[k++] == wanted) out.line(records[r]);
  }
}

void RecordKeys::throw_if_stopped(const std::string& done) const {
  if (stop_error_.empty()) return;
  throw InvalidArgument(std::string(verb_) + ": " + stop_error_ + "; " + done +
                        ". A line without the key is not an item: fix it, or go on past such "
                        "lines with --on-bad-record skip (drop them) or pass (print them "
                        "unfiltered)");
}

void RecordKeys::add_summary_fields(Summary& summary) const {
  if (!extractor_) return;
  summary.count_if_any(options_.on_bad == OnBadRecord::pass ? "lines without key passed"
                                                            : "lines without key skipped",
                       "bad_records", bad_);
  if (bad_ > 0) summary.note("first line without key: " + first_bad_);
}

}  // namespace redbloom::cli
