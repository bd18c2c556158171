// _redbloom: the C++ half of the redbloom Python package (redbloom/__init__.py is the other).
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "errors.hpp"

PYBIND11_MODULE(_redbloom, m) {
  m.doc() = "redbloom's C++ core and stores; use the redbloom package";
  redbloom::python::register_error_translation();
  redbloom::python::bind_filter(m);
  redbloom::python::bind_known_set(m);
  redbloom::python::bind_record_key(m);
}
