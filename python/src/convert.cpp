#include "convert.hpp"

#include <cmath>
#include <cstdint>

#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom::python {

namespace {

Layout layout_of(const py::object& layout) {
  if (layout.is_none()) return Layout::classic;
  const std::string name = py::cast<std::string>(layout);
  const auto parsed = parse_layout(name);
  if (!parsed) throw InvalidArgument("layout '" + name + "' is not classic or blocked");
  return *parsed;
}

double number(const py::object& value, const char* what) {
  try {
    return py::cast<double>(value);
  } catch (const py::cast_error&) {
    throw InvalidArgument(std::string(what) + " must be a number, not " +
                          std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  }
}

std::uint64_t whole(const py::object& value, const char* what) {
  const double x = number(value, what);
  if (!(x >= 1) || x > 1.8e19 || x != static_cast<double>(static_cast<std::uint64_t>(x))) {
    throw InvalidArgument(std::string(what) + " must be a positive whole number");
  }
  return static_cast<std::uint64_t>(x);
}

}  // namespace

std::optional<FilterParams> requested_params(const py::object& capacity,
                                             const py::object& error_rate, const py::object& layout,
                                             const py::object& bits, const py::object& hashes) {
  if (!bits.is_none() || !hashes.is_none()) {
    if (bits.is_none() || hashes.is_none()) {
      throw InvalidArgument("bits= and hashes= go together (a size set by hand)");
    }
    if (!error_rate.is_none()) {
      throw InvalidArgument("error_rate= sizes a filter; with bits= and hashes= it is implied");
    }
    const std::uint64_t k = whole(hashes, "hashes");
    if (k > 64) throw InvalidArgument("hashes must be at most 64");
    return explicit_filter(whole(bits, "bits"), static_cast<std::uint32_t>(k), layout_of(layout),
                           capacity.is_none() ? 0 : whole(capacity, "capacity"));
  }
  if (capacity.is_none()) {
    if (!error_rate.is_none() || !layout.is_none()) {
      throw InvalidArgument("capacity= (the number of items expected) is needed to size a filter");
    }
    return std::nullopt;
  }
  const double n = number(capacity, "capacity");
  const double p = error_rate.is_none() ? 0.01 : number(error_rate, "error_rate");
  return size_filter(n, p, layout_of(layout));
}

std::optional<StreamOptions> requested_stream(const py::object& capacity,
                                              const py::object& error_rate,
                                              const py::object& layout, const py::object& window,
                                              const py::object& slices, const py::object& growth,
                                              const py::object& max_bytes) {
  if (window.is_none() && growth.is_none()) {
    if (!slices.is_none() || !max_bytes.is_none()) {
      throw InvalidArgument(
          "slices= and max_bytes= belong to a windowed or growing filter: "
          "give window= or growth=");
    }
    return std::nullopt;
  }
  if (capacity.is_none()) {
    throw InvalidArgument("capacity= (items per window, or of the first link) is needed");
  }
  StreamOptions stream;
  stream.capacity = whole(capacity, "capacity");
  stream.error_rate = error_rate.is_none() ? 0.01 : number(error_rate, "error_rate");
  stream.layout = layout_of(layout);
  if (!window.is_none()) {
    if (py::isinstance<py::str>(window)) {
      stream.window_ns = parse_duration_ns(window.cast<std::string>());
    } else {
      // A datetime.timedelta says its unit; a plain number is seconds.
      const bool timedelta =
          py::isinstance(window, py::module_::import("datetime").attr("timedelta"));
      const double seconds =
          timedelta ? number(window.attr("total_seconds")(), "window") : number(window, "window");
      if (!(seconds >= 0.001) || !(seconds < 1e9)) {
        throw InvalidArgument(
            "window must be at least 0.001 seconds (a number of seconds, a datetime.timedelta or a "
            "string like '10m')");
      }
      stream.window_ns = static_cast<std::uint64_t>(std::llround(seconds * 1e9));
    }
  }
  if (!slices.is_none()) stream.slices = static_cast<std::uint32_t>(whole(slices, "slices"));
  if (!growth.is_none()) stream.growth = static_cast<std::uint32_t>(whole(growth, "growth"));
  if (!max_bytes.is_none()) stream.max_bytes = whole(max_bytes, "max_bytes");
  (void)describe(stream);  // refuses what no filter can have, naming it
  return stream;
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
  } else {
    d["server_filter"] = py::none();
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
