#include "convert.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <variant>

#include "redbloom/error.hpp"

namespace redbloom::python {

namespace {

double number(const py::object& value, const char* what) {
  try {
    return py::cast<double>(value);
  } catch (const py::cast_error&) {
    throw InvalidArgument(std::string(what) + " must be a number, not " +
                          std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  }
}

std::optional<double> number_of(const py::object& value, const char* what) {
  if (value.is_none()) return std::nullopt;
  return number(value, what);
}

// A number, or text with its unit ("0.1%", "10m", "2GiB").
std::optional<RequestValue> value_of(const py::object& value, const char* what) {
  if (value.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(value)) return RequestValue(value.cast<std::string>());
  return RequestValue(number(value, what));
}

// A duration keyword: a datetime.timedelta says its unit; a plain number is seconds; text is
// parse_duration_ns's.
RequestValue duration_of(const py::object& value, const char* what) {
  const bool timedelta = py::isinstance(value, py::module_::import("datetime").attr("timedelta"));
  return timedelta ? RequestValue(number(value.attr("total_seconds")(), what))
                   : *value_of(value, what);
}

}  // namespace

std::chrono::milliseconds creator_wait_of(const py::object& wait) {
  if (wait.is_none()) return OpenOptions{}.wait_for_creator;
  const RequestValue value = duration_of(wait, "wait_for_creator");
  std::uint64_t ns = 0;
  if (const auto* text = std::get_if<std::string>(&value)) {
    ns = parse_duration_ns(*text);
  } else {
    const double seconds = std::get<double>(value);
    if (!(seconds >= 0.001 && seconds < 1e9)) {
      throw InvalidArgument("wait_for_creator=" + py::str(wait).cast<std::string>() +
                            " is not a wait: give seconds (at least 0.001), a timedelta or '30s'");
    }
    ns = static_cast<std::uint64_t>(seconds * 1e9);
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(ns));
}

SizedRequest requested_size(const SizingKeywords& k) {
  FilterRequest r;
  r.spelling = OptionSpelling::keywords;
  r.capacity = number_of(k.capacity, "capacity");
  r.error_rate = value_of(k.error_rate, "error_rate");
  if (!k.layout.is_none()) r.layout = py::cast<std::string>(k.layout);
  r.bits = number_of(k.bits, "bits");
  r.hashes = number_of(k.hashes, "hashes");
  if (!k.window.is_none()) r.window = duration_of(k.window, "window");
  r.slices = number_of(k.slices, "slices");
  r.growth = number_of(k.growth, "growth");
  r.max_bytes = value_of(k.max_bytes, "max_bytes");
  if (!k.engine.is_none()) r.engine = py::cast<std::string>(k.engine);
  r.nonscaling = k.nonscaling;
  if (!k.kind.is_none()) r.kind = py::cast<std::string>(k.kind);
  return size_request(r);
}

py::dict params_dict(const FilterParams& params) {
  py::dict d;
  d["layout"] = std::string(to_string(params.layout));
  d["hashes"] = params.hashes;
  d["bits"] = params.total_bits();
  d["bytes"] = params.total_bytes();
  d["partitions"] = params.partitions;
  d["partition_bits"] = params.partition_bits;
  d["capacity"] = params.capacity;
  d["error_rate"] = params.error_rate;
  d["hash_scheme"] = params.hash_scheme;
  return d;
}

namespace {

// A cuckoo filter's options and links, as info()["cuckoo"].
py::dict cuckoo_dict(const CuckooInfo& cuckoo) {
  py::dict c;
  c["description"] = describe(cuckoo.options);
  c["capacity"] = cuckoo.options.capacity;
  c["error_rate"] = cuckoo.options.error_rate;
  c["growth"] = cuckoo.options.growth;
  c["max_bytes"] = cuckoo.options.max_bytes;
  c["items"] = cuckoo.items;
  c["bytes"] = cuckoo.bytes;
  c["error_rate_now"] = cuckoo.error_rate_now;
  py::list links;
  for (const CuckooLinkInfo& link : cuckoo.links) {
    py::dict l;
    l["link"] = link.link;
    l["fingerprint_bits"] = link.fingerprint_bits;
    l["items"] = link.items;
    l["capacity"] = link.capacity;
    l["bytes"] = link.bytes;
    l["error_rate_now"] = link.error_rate_now;
    links.append(l);
  }
  c["links"] = links;
  return c;
}

}  // namespace

py::dict info_dict(const FilterInfo& info) {
  py::dict d = params_dict(info.params);
  d["location"] = info.location;
  d["set_bits"] = info.set_bits;
  d["fill_ratio"] = info.fill_ratio;
  d["estimated_items"] = info.estimated_items;
  d["estimated_error_rate"] = info.estimated_error_rate;
  d["created_unix_ns"] = info.created_unix_ns;
  d["storage_bytes"] = info.storage_bytes;
  py::list engines;
  for (const std::string& engine : info.engines) engines.append(engine);
  d["engines"] = engines;
  if (info.server_filter) {
    const ServerFilterInfo& server = *info.server_filter;
    py::dict s;
    s["type"] = server.type;
    s["kind"] = server.kind;
    s["capacity"] = server.capacity;
    s["bytes"] = server.bytes;
    s["filters"] = server.filters;
    s["items"] = server.items ? py::object(py::int_(*server.items)) : py::none();
    s["expansion"] = server.expansion ? py::object(py::int_(*server.expansion)) : py::none();
    d["server_filter"] = s;
    d["layout"] = py::none();  // the engine lays out its bits in its own way
  } else {
    d["server_filter"] = py::none();
  }
  d["kind"] = info.cuckoo ? "cuckoo" : "bloom";
  if (info.cuckoo) {
    d["cuckoo"] = cuckoo_dict(*info.cuckoo);
    d["layout"] = py::none();  // its tables are no bitmap
    d["hashes"] = py::none();
    d["bits"] = py::none();
    d["partition_bits"] = py::none();
    d["set_bits"] = py::none();
    d["fill_ratio"] = py::none();
  } else {
    d["cuckoo"] = py::none();
  }
  if (info.stream) {
    const StreamInfo& stream = *info.stream;
    py::dict s;
    s["description"] = describe(stream.options);
    s["capacity"] = stream.options.capacity;
    s["error_rate"] = stream.options.error_rate;
    s["window_seconds"] = double(stream.options.window_ns) / 1e9;
    s["slices"] = stream.options.slices;
    s["growth"] = stream.options.growth;
    s["max_bytes"] = stream.options.max_bytes;
    s["bytes"] = stream.bytes;
    s["error_rate_now"] = stream.error_rate_now;
    py::list links;
    for (const StreamSegment& segment : stream.segments) {
      py::dict link;
      link["slice"] = segment.slice;
      link["link"] = segment.link;
      link["created_unix_ns"] = segment.created_unix_ns;
      link["expires_unix_ns"] = segment.expires_unix_ns;
      link["items"] = segment.items;
      link["capacity"] = segment.capacity;
      link["bytes"] = segment.bytes;
      link["error_rate_now"] = segment.error_rate_now;
      links.append(link);
    }
    s["links"] = links;
    d["stream"] = s;
  } else {
    d["stream"] = py::none();
  }
  return d;
}

void warn(const std::vector<std::string>& warnings) {
  if (warnings.empty()) return;
  py::object category = py::module_::import("redbloom._errors").attr("RedbloomWarning");
  for (const std::string& text : warnings) {
    if (PyErr_WarnEx(category.ptr(), text.c_str(), 2) != 0) throw py::error_already_set();
  }
}

}  // namespace redbloom::python
