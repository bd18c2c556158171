// redbloom's C++ errors as the Python classes of redbloom/_errors.py (InvalidArgument is also
// a ValueError, NotFound a LookupError, StorageError an OSError; IncompleteWrite carries
// .committed and .answers), and what a batch raises when it stops part-way.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <exception>

namespace redbloom::python {

void register_error_translation();

// Throws, as py::error_already_set, the error of a batch `call` ("add_many", ...) that stopped
// with items [0, committed) of the call in the filter and `answers` their answers (None when
// the call gives none):
// - the library's IncompleteWrite or CapacityExceeded: its class and message, with these counts;
// - anything else with nothing committed: the error as it was;
// - anything else (Ctrl-C, an error from the items or their iterator, a failed store): an
//   IncompleteWrite raised from it, an Interrupted (also a KeyboardInterrupt) for Ctrl-C. An
//   error that is no Exception and no KeyboardInterrupt (SystemExit) keeps its type, so an
//   exit stays an exit, and gets .committed and .answers.
[[noreturn]] void raise_part_way(const std::exception_ptr& error, const char* call,
                                 std::size_t committed, pybind11::object answers);

}  // namespace redbloom::python
