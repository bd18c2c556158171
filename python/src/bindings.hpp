// The parts of the _redbloom extension module, each bound by its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace redbloom::python {

void bind_filter(pybind11::module_& m);
void bind_known_set(pybind11::module_& m);
void bind_record_key(pybind11::module_& m);

}  // namespace redbloom::python
