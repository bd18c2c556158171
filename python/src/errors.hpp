// redbloom's C++ errors as the Python classes of redbloom/_errors.py (InvalidArgument is also
// a ValueError, NotFound a LookupError, StorageError an OSError; IncompleteWrite carries
// .committed).
#pragma once

#include <pybind11/pybind11.h>

namespace redbloom::python {

void register_error_translation();

}  // namespace redbloom::python
