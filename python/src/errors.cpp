#include "errors.hpp"

#include <cstddef>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "redbloom/error.hpp"

namespace redbloom::python {

namespace py = pybind11;

namespace {

// Sets the Python error `name` of redbloom._errors; `committed` and `answers` go on
// IncompleteWrite and its subclasses.
void raise(const char* name, const std::string& message, std::optional<std::size_t> committed = {},
           const py::object& answers = py::none()) {
  py::object errors = py::module_::import("redbloom._errors");
  py::object type = errors.attr(name);
  py::object error = committed ? type(message, *committed, answers) : type(message);
  PyErr_SetObject(type.ptr(), error.ptr());
}

// The library's errors; false (nothing set) for any other exception.
bool set_library_error(const std::exception_ptr& pointer) {
  // Most derived first: the first matching handler wins.
  try {
    std::rethrow_exception(pointer);
  } catch (const CapacityExceeded& e) {
    raise("CapacityExceeded", e.what(), e.committed());
  } catch (const IncompleteWrite& e) {
    raise("IncompleteWrite", e.what(), e.committed());
  } catch (const IncompleteFilter& e) {
    raise("IncompleteFilter", e.what());
  } catch (const FormatError& e) {
    raise("FormatError", e.what());
  } catch (const StorageError& e) {
    raise("StorageError", e.what());
  } catch (const FilterExists& e) {
    raise("FilterExists", e.what());
  } catch (const NotFound& e) {
    raise("NotFound", e.what());
  } catch (const InvalidArgument& e) {
    raise("InvalidArgument", e.what());
  } catch (const Error& e) {
    raise("Error", e.what());
  } catch (...) {
    return false;
  }
  return true;
}

// Sets the Python error pybind11 raises for the exception; true when it came from Python (an
// error of the items or their iterator, a signal handler's), not from the library.
bool set_python_error(const std::exception_ptr& pointer) {
  if (set_library_error(pointer)) return false;
  try {
    std::rethrow_exception(pointer);
  } catch (const py::error_already_set& e) {
    PyErr_Restore(e.type().inc_ref().ptr(), e.value().inc_ref().ptr(), e.trace().inc_ref().ptr());
    return true;
  } catch (const py::builtin_exception& e) {
    e.set_error();
    return true;
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "an unknown C++ exception");
  }
  return false;
}

// The Python error set, taken (normalized, with its traceback) and cleared.
py::object take_python_error() {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != nullptr) PyException_SetTraceback(value, traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  return py::reinterpret_steal<py::object>(value);
}

}  // namespace

void register_error_translation() {
  py::register_exception_translator([](std::exception_ptr pointer) {
    if (pointer && !set_library_error(pointer)) std::rethrow_exception(pointer);
  });
}

void raise_part_way(const std::exception_ptr& error, const char* call, std::size_t committed,
                    py::object answers) {
  const std::string count = std::to_string(committed);
  try {
    std::rethrow_exception(error);
  } catch (const IncompleteWrite& e) {
    raise(dynamic_cast<const CapacityExceeded*>(&e) ? "CapacityExceeded" : "IncompleteWrite",
          e.what(), committed, answers);
    throw py::error_already_set();
  } catch (...) {
    if (committed == 0) throw;
  }
  const bool from_python = set_python_error(error);
  py::object cause = take_python_error();
  const bool interrupt = PyErr_GivenExceptionMatches(cause.ptr(), PyExc_KeyboardInterrupt) != 0;
  if (!interrupt && PyErr_GivenExceptionMatches(cause.ptr(), PyExc_Exception) == 0) {
    cause.attr("committed") = committed;
    cause.attr("answers") = answers;
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(cause.ptr())), cause.ptr());
    throw py::error_already_set();
  }
  std::string message = std::string(call) + " stopped by " + Py_TYPE(cause.ptr())->tp_name;
  if (!from_python) message += " (" + std::string(py::str(cause)) + ")";
  message += " after " + count + " items: items [0, " + count + ") of the call are stored";
  if (!answers.is_none()) message += " (their answers are in .answers)";
  message += from_python
                 ? "; the rest were not added: add the items from index " + count + " on again"
                 : "; later ones may or may not be: adding them again is safe";
  py::object type =
      py::module_::import("redbloom._errors").attr(interrupt ? "Interrupted" : "IncompleteWrite");
  py::object wrapper = type(message, committed, std::move(answers));
  // "raise wrapper from cause": both references are stolen.
  PyException_SetCause(wrapper.ptr(), cause.inc_ref().ptr());
  PyException_SetContext(wrapper.ptr(), cause.release().ptr());
  PyErr_SetObject(type.ptr(), wrapper.ptr());
  throw py::error_already_set();
}

}  // namespace redbloom::python
