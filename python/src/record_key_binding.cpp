// redbloom.RecordKey: the key of a record (a field of a delimited or CSV line, a value of a JSON
// Lines object), the same bytes the CLI's --key-field, --csv and --json-key give the filter
// (include/redbloom/record_key.hpp), so that a filter fed by one answers for the other.
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <vector>

#include "bindings.hpp"
#include "items.hpp"
#include "redbloom/error.hpp"
#include "redbloom/record_key.hpp"

namespace redbloom::python {
namespace {

namespace py = pybind11;

// A record as read from a file keeps its line end: "\n" is not part of it (a CR before it is
// ignored by the extractor).
std::string_view without_newline(std::string_view record) {
  if (!record.empty() && record.back() == '\n') record.remove_suffix(1);
  return record;
}

RecordKeySpec spec_from(const py::object& field, const py::object& delimiter, bool csv,
                        const py::object& json_key) {
  const bool has_field = !field.is_none();
  const bool has_json = !json_key.is_none();
  if (has_field == has_json) {
    throw InvalidArgument(
        "RecordKey takes field=N (delimited or CSV lines) or json_key=PATH (JSON Lines): "
        "give exactly one");
  }
  if (has_json) {
    if (csv || !delimiter.is_none()) {
      throw InvalidArgument(
          "csv and delimiter describe delimited lines, not JSON: with json_key leave them out");
    }
    return RecordKeySpec::json(json_key.cast<std::string>());
  }
  const long long n = field.cast<long long>();
  if (n < 1) {
    throw InvalidArgument("field is counted from 1 (as cut -f and awk $1), not " +
                          std::to_string(n));
  }
  char d = csv ? ',' : '\t';
  if (!delimiter.is_none()) {
    const std::string text = delimiter.cast<std::string>();
    if (text.size() != 1) {
      throw InvalidArgument("delimiter takes one character, not '" + text + "'");
    }
    d = text[0];
  }
  return csv ? RecordKeySpec::csv_field(static_cast<std::size_t>(n), d)
             : RecordKeySpec::field_of(static_cast<std::size_t>(n), d);
}

class PyRecordKey {
 public:
  PyRecordKey(const py::object& field, const py::object& delimiter, bool csv,
              const py::object& json_key)
      : extractor_(spec_from(field, delimiter, csv, json_key)) {}

  // The calls keep the GIL: the extractor's storage is shared by its calls.
  py::object key(py::handle record) {
    Py_buffer buffer{};
    const std::string_view bytes = item_bytes(record, &buffer);
    std::string_view key;
    const RecordKeyStatus status = extractor_.extract(without_newline(bytes), key);
    py::object result = py::none();
    if (status == RecordKeyStatus::ok) result = py::bytes(key.data(), key.size());
    if (buffer.obj != nullptr) PyBuffer_Release(&buffer);
    return result;
  }

  py::object problem(py::handle record) {
    Py_buffer buffer{};
    const std::string_view bytes = item_bytes(record, &buffer);
    std::string_view key;
    const RecordKeyStatus status = extractor_.extract(without_newline(bytes), key);
    if (buffer.obj != nullptr) PyBuffer_Release(&buffer);
    if (status == RecordKeyStatus::ok) return py::none();
    return py::str(extractor_.problem());
  }

  py::list keys(py::iterable records) {
    ItemBatch batch;
    std::vector<std::string_view> views;
    for (py::handle record : records) batch.add(record);
    views.reserve(batch.size());
    for (const std::string_view view : batch.views()) views.push_back(without_newline(view));
    extractor_.extract_all(views, keys_, statuses_);
    py::list result(views.size());
    for (std::size_t i = 0; i < views.size(); ++i) {
      if (statuses_[i] == RecordKeyStatus::ok) {
        result[i] = py::bytes(keys_[i].data(), keys_[i].size());
      } else {
        result[i] = py::none();
      }
    }
    return result;
  }

  [[nodiscard]] std::string repr() const {
    const RecordKeySpec& spec = extractor_.spec();
    switch (spec.format) {
      case RecordKeySpec::Format::json:
        return "RecordKey(json_key=" + std::string(py::repr(py::str(spec.json_path))) + ")";
      case RecordKeySpec::Format::csv:
      case RecordKeySpec::Format::field:
        return "RecordKey(field=" + std::to_string(spec.field) +
               ", delimiter=" + std::string(py::repr(py::str(std::string(1, spec.delimiter)))) +
               (spec.format == RecordKeySpec::Format::csv ? ", csv=True)" : ")");
    }
    return "RecordKey()";
  }

 private:
  RecordKeyExtractor extractor_;
  std::vector<std::string_view> keys_;
  std::vector<RecordKeyStatus> statuses_;
};

}  // namespace

void bind_record_key(py::module_& m) {
  py::class_<PyRecordKey>(
      m, "RecordKey",
      "The key of a record, as the CLI's --key-field/--csv/--json-key give it:\n"
      "RecordKey(field=3, delimiter=',', csv=True) or "
      "RecordKey(json_key='event.id').\n"
      "Records are str (UTF-8) or bytes; a trailing line end is ignored. Keys "
      "are bytes, the items to give a filter.")
      .def(py::init<const py::object&, const py::object&, bool, const py::object&>(),
           py::arg("field") = py::none(), py::kw_only(), py::arg("delimiter") = py::none(),
           py::arg("csv") = false, py::arg("json_key") = py::none())
      .def("key", &PyRecordKey::key, py::arg("record"),
           "The record's key as bytes, or None if it has none (see problem()).")
      .def("keys", &PyRecordKey::keys, py::arg("records"),
           "The keys of many records (a list: bytes, or None for a record without a key).")
      .def("problem", &PyRecordKey::problem, py::arg("record"),
           "Why the record has no key ('no field 3 (the line has 2)'), or None if it has one.")
      .def("__repr__", &PyRecordKey::repr);
}

}  // namespace redbloom::python
