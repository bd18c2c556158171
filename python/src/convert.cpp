#include "convert.hpp"

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
