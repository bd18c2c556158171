#include "errors.hpp"

#include <cstddef>
#include <exception>
#include <optional>

#include "redbloom/error.hpp"

namespace redbloom::python {

namespace py = pybind11;

namespace {

// Sets the Python error `name` of redbloom._errors; `committed` goes on IncompleteWrite.
void raise(const char* name, const char* message, std::optional<std::size_t> committed = {}) {
  py::object errors = py::module_::import("redbloom._errors");
  py::object type = errors.attr(name);
  py::object error = committed ? type(message, *committed) : type(message);
  PyErr_SetObject(type.ptr(), error.ptr());
}

}  // namespace

void register_error_translation() {
  // Most derived first: the first matching handler wins.
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
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
    }
  });
}

}  // namespace redbloom::python
