// Items from Python as byte strings: gathered while the GIL is held (the owners stay
// referenced), read as string_views by C++ with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace redbloom::python {

namespace py = pybind11;

// The bytes of one item: str as UTF-8 (the bytes the CLI hashes for the same text), bytes, or
// any C-contiguous buffer. TypeError for anything else. The view lives as long as `item`; a
// buffer's view needs `buffer` released afterwards (only filled for buffers).
std::string_view item_bytes(py::handle item, Py_buffer* buffer);

// One chunk of items with what keeps them alive.
class ItemBatch {
 public:
  ItemBatch() = default;
  ItemBatch(const ItemBatch&) = delete;
  ItemBatch& operator=(const ItemBatch&) = delete;
  ~ItemBatch();  // with the GIL held, as every other member

  void add(py::handle item);
  // A view into memory kept alive by someone else (a numpy array held by the caller).
  void add_view(std::string_view view) { views_.push_back(view); }
  void clear();

  [[nodiscard]] std::span<const std::string_view> views() const { return views_; }
  [[nodiscard]] std::size_t size() const { return views_.size(); }
  [[nodiscard]] bool empty() const { return views_.empty(); }

 private:
  std::vector<std::string_view> views_;
  std::vector<py::object> owners_;
  std::vector<Py_buffer> buffers_;
};

// Any iterable of items, or an array of fixed-width items read in place: a 1-D numpy `S<n>`
// array (trailing NULs stripped, as numpy does) or a 2-D C-contiguous uint8 array (one row an
// item). Yields chunks of at most `chunk` items.
class ItemSource {
 public:
  ItemSource(py::handle items, std::size_t chunk);
  ItemSource(const ItemSource&) = delete;
  ItemSource& operator=(const ItemSource&) = delete;
  ~ItemSource();

  // Fills `batch` (cleared first) with the next chunk; false when there are no more items.
  bool next(ItemBatch& batch);
  // The i-th item of the last chunk as given (for an array: its bytes).
  [[nodiscard]] py::object original(std::size_t i) const;

 private:
  py::object iterator_;            // an iterable's iterator, else null
  std::vector<py::object> chunk_;  // the last chunk's items, for original()
  Py_buffer array_{};              // a fixed-width array, when array_.buf is set
  bool is_array_ = false;
  std::size_t rows_ = 0;
  std::size_t width_ = 0;
  std::ptrdiff_t stride_ = 0;
  bool strip_nuls_ = false;
  std::size_t next_row_ = 0;
  std::size_t chunk_start_ = 0;
  std::size_t chunk_size_;

  [[nodiscard]] std::string_view row(std::size_t index) const;
};

}  // namespace redbloom::python
