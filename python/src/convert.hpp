// Parameters and reports between Python and the library: sizing keywords to FilterParams,
// FilterParams and FilterInfo to dicts, the library's warnings to Python warnings.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "redbloom/filter.hpp"
#include "redbloom/filter_request.hpp"
#include "redbloom/params.hpp"
#include "redbloom/stream.hpp"

namespace redbloom::python {

namespace py = pybind11;

// The sizing keywords of open(), create() and KnownSet, each None when not given.
struct SizingKeywords {
  py::object capacity = py::none();
  py::object error_rate = py::none();
  py::object layout = py::none();
  py::object bits = py::none();
  py::object hashes = py::none();
  py::object window = py::none();  // seconds, a datetime.timedelta, or "10m"
  py::object slices = py::none();
  py::object growth = py::none();
  py::object max_bytes = py::none();
  py::object engine = py::none();  // "redbloom" or "bf"
  bool nonscaling = false;
  py::object kind = py::none();  // "bloom" or "cuckoo"
};

// What the keywords ask for (size_request, filter_request.hpp): a plain filter's parameters, a
// windowed or growing filter's options, or neither (open an existing filter only).
SizedRequest requested_size(const SizingKeywords& keywords);
// wait_for_creator=: seconds, a datetime.timedelta or "30s"; None: the library's default.
std::chrono::milliseconds creator_wait_of(const py::object& wait);

py::dict params_dict(const FilterParams& params);
py::dict info_dict(const FilterInfo& info);

// Issues each as a redbloom.RedbloomWarning.
void warn(const std::vector<std::string>& warnings);

}  // namespace redbloom::python
