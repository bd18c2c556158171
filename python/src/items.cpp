#include "items.hpp"

#include <cctype>
#include <cstring>
#include <string>

namespace redbloom::python {

namespace {

[[noreturn]] void not_an_item(py::handle item) {
  throw py::type_error("an item is str, bytes or a bytes-like object, not " +
                       std::string(py::str(py::type::handle_of(item).attr("__name__"))));
}

// "32s" (numpy S32) or "s": fixed-width byte strings.
bool is_fixed_bytes_format(const char* format) {
  if (format == nullptr) return false;
  std::size_t i = 0;
  while (format[i] == '<' || format[i] == '>' || format[i] == '=' || format[i] == '|') ++i;
  while (std::isdigit(static_cast<unsigned char>(format[i]))) ++i;
  return format[i] == 's' && format[i + 1] == '\0';
}

bool is_uint8_format(const char* format) {
  return format != nullptr && (std::strcmp(format, "B") == 0 || std::strcmp(format, "|B") == 0 ||
                               std::strcmp(format, "<B") == 0 || std::strcmp(format, "=B") == 0);
}

}  // namespace

std::string_view item_bytes(py::handle item, Py_buffer* buffer) {
  PyObject* object = item.ptr();
  if (PyUnicode_Check(object)) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(object, &size);  // cached by the str itself
    if (data == nullptr) throw py::error_already_set();
    return {data, static_cast<std::size_t>(size)};
  }
  if (PyBytes_Check(object)) {
    return {PyBytes_AS_STRING(object), static_cast<std::size_t>(PyBytes_GET_SIZE(object))};
  }
  if (PyObject_CheckBuffer(object)) {
    if (PyObject_GetBuffer(object, buffer, PyBUF_C_CONTIGUOUS) != 0) {
      PyErr_Clear();
      throw py::type_error("a buffer item must be C-contiguous (copy it with bytes(item))");
    }
    return {static_cast<const char*>(buffer->buf), static_cast<std::size_t>(buffer->len)};
  }
  not_an_item(item);
}

ItemBatch::~ItemBatch() {
  clear();
}

void ItemBatch::add(py::handle item) {
  Py_buffer buffer{};
  const std::string_view view = item_bytes(item, &buffer);
  if (buffer.obj != nullptr) buffers_.push_back(buffer);
  owners_.push_back(py::reinterpret_borrow<py::object>(item));
  views_.push_back(view);
}

void ItemBatch::clear() {
  for (Py_buffer& buffer : buffers_) PyBuffer_Release(&buffer);
  buffers_.clear();
  owners_.clear();
  views_.clear();
}

ItemSource::ItemSource(py::handle items, std::size_t chunk) : chunk_size_(chunk) {
  PyObject* object = items.ptr();
  if (PyUnicode_Check(object) || PyBytes_Check(object) || PyByteArray_Check(object)) {
    throw py::type_error("expected an iterable of items, got one " +
                         std::string(py::str(py::type::handle_of(items).attr("__name__"))) +
                         " (for one item use add() or `in`; for many, a list)");
  }
  if (PyObject_CheckBuffer(object) && !PyMemoryView_Check(object)) {
    if (PyObject_GetBuffer(object, &array_, PyBUF_RECORDS_RO) == 0) {
      if (array_.ndim == 1 && is_fixed_bytes_format(array_.format)) {
        is_array_ = true;
        strip_nuls_ = true;
        rows_ = static_cast<std::size_t>(array_.shape[0]);
        width_ = static_cast<std::size_t>(array_.itemsize);
        stride_ = array_.strides[0];
      } else if (array_.ndim == 2 && is_uint8_format(array_.format) && array_.strides[1] == 1) {
        is_array_ = true;
        rows_ = static_cast<std::size_t>(array_.shape[0]);
        width_ = static_cast<std::size_t>(array_.shape[1]);
        stride_ = array_.strides[0];
      } else {
        PyBuffer_Release(&array_);  // another array: its elements are the items
      }
    } else {
      PyErr_Clear();
    }
  }
  if (!is_array_) iterator_ = py::reinterpret_steal<py::object>(PyObject_GetIter(object));
  if (!is_array_ && !iterator_) {
    PyErr_Clear();
    throw py::type_error("expected an iterable of items, got " +
                         std::string(py::str(py::type::handle_of(items).attr("__name__"))));
  }
}

ItemSource::~ItemSource() {
  if (is_array_) PyBuffer_Release(&array_);
}

std::string_view ItemSource::row(std::size_t index) const {
  const char* start =
      static_cast<const char*>(array_.buf) + static_cast<std::ptrdiff_t>(index) * stride_;
  std::size_t size = width_;
  if (strip_nuls_) {
    while (size > 0 && start[size - 1] == '\0') --size;
  }
  return {start, size};
}

bool ItemSource::next(ItemBatch& batch) {
  batch.clear();
  chunk_.clear();
  if (is_array_) {
    chunk_start_ = next_row_;
    while (next_row_ < rows_ && batch.size() < chunk_size_) batch.add_view(row(next_row_++));
    return !batch.empty();
  }
  while (batch.size() < chunk_size_) {
    py::object item = py::reinterpret_steal<py::object>(PyIter_Next(iterator_.ptr()));
    if (!item) {
      if (PyErr_Occurred()) throw py::error_already_set();
      break;
    }
    batch.add(item);
    chunk_.push_back(std::move(item));
  }
  return !batch.empty();
}

py::object ItemSource::original(std::size_t i) const {
  if (is_array_) {
    const std::string_view bytes = row(chunk_start_ + i);
    return py::bytes(bytes.data(), bytes.size());
  }
  return chunk_[i];
}

}  // namespace redbloom::python
