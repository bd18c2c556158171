// Parameters and reports between Python and the library: sizing keywords to FilterParams,
// FilterParams and FilterInfo to dicts, the library's warnings to Python warnings.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "redbloom/filter.hpp"
#include "redbloom/params.hpp"
#include "redbloom/stream.hpp"

namespace redbloom::python {

namespace py = pybind11;

// The size a caller asked for: capacity and error rate (error_rate 0.01 and layout classic
// by default, as the CLI), or bits and hashes. nullopt when nothing was given.
std::optional<FilterParams> requested_params(const py::object& capacity,
                                             const py::object& error_rate, const py::object& layout,
                                             const py::object& bits, const py::object& hashes);

// A windowed or growing filter, when window= or growth= was given (window: seconds or "10m";
// capacity: items per window). nullopt otherwise.
std::optional<StreamOptions> requested_stream(const py::object& capacity,
                                              const py::object& error_rate,
                                              const py::object& layout, const py::object& window,
                                              const py::object& slices, const py::object& growth,
                                              const py::object& max_bytes);

py::dict params_dict(const FilterParams& params);
py::dict info_dict(const FilterInfo& info);

// Issues each as a redbloom.RedbloomWarning.
void warn(const std::vector<std::string>& warnings);

}  // namespace redbloom::python
