// redbloom.KnownSet: orphan detection (a Bloom filter of known items, optionally with an exact
// companion) for Celery-style jobs.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "items.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/known_set.hpp"
#include "redbloom/location.hpp"
#include "shared_handle.hpp"

namespace redbloom::python {

namespace {

// KnownSet's own batch: a Redis companion is read and appended to once per bucket per batch.
constexpr std::size_t kChunk = std::size_t{1} << 18;

class PyKnownSet {
 public:
  PyKnownSet(KnownSet set, const Location& location, bool exact)
      : has_exact_(set.has_exact()), handle_(std::move(set), reopener(location, exact)) {}

  std::uint64_t add(py::handle items, const py::object& progress) {
    ItemSource source(items, kChunk);
    ItemBatch batch;
    std::uint64_t done = 0;
    try {
      while (source.next(batch)) {
        try {
          handle_.run(true, [&](KnownSet& set) { set.add_batch(batch.views()); });
        } catch (const IncompleteWrite& e) {
          done += e.committed();
          throw;
        }
        done += batch.size();
        if (!progress.is_none()) progress(done);
        // Ctrl-C arrives while the GIL is released: seen here, its count is reported.
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      }
    } catch (...) {
      raise_part_way(std::current_exception(), "add", done, py::none());
    }
    return done;
  }

  py::list find_missing(py::handle items, bool exact, const py::object& progress) {
    const auto mode = exact ? KnownSet::Mode::exact : KnownSet::Mode::bloom_only;
    if (exact && !has_exact_) {
      throw InvalidArgument(
          "find_missing(exact=True) needs the exact companion: open the KnownSet with "
          "exact=True (built with it from the start), or pass exact=False for Bloom answers");
    }
    ItemSource source(items, kChunk);
    ItemBatch batch;
    std::vector<std::uint8_t> missing;
    py::list out;
    std::uint64_t done = 0;
    while (source.next(batch)) {
      missing.assign(batch.size(), 0);
      handle_.run(true, [&](KnownSet& set) { set.missing_batch(batch.views(), missing, mode); });
      for (std::size_t i = 0; i < missing.size(); ++i) {
        if (missing[i]) out.append(source.original(i));
      }
      done += batch.size();
      if (!progress.is_none()) progress(done);
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    return out;
  }

  // Over a cuckoo filter with its companion: forgets the items the companion holds, from both,
  // and refuses the others (KnownSet::remove). One bool per item: True if it was forgotten.
  py::list remove(py::handle items) {
    ItemSource source(items, kChunk);
    ItemBatch batch;
    std::vector<std::uint8_t> removed;
    py::list out;
    std::uint64_t done = 0;
    try {
      while (source.next(batch)) {
        removed.assign(batch.size(), 0);
        handle_.run(true, [&](KnownSet& set) { set.remove(batch.views(), removed); });
        for (const std::uint8_t flag : removed) out.append(py::bool_(flag != 0));
        done += batch.size();
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      }
    } catch (...) {
      raise_part_way(std::current_exception(), "remove", done, py::none());
    }
    return out;
  }

  py::dict stats(bool measure_storage) {
    const KnownSet::Stats s =
        handle_.run(true, [&](KnownSet& set) { return set.stats(measure_storage); });
    py::dict d;
    d["filter"] = info_dict(s.filter);
    d["added"] = s.added;
    d["checked"] = s.checked;
    d["missing"] = s.missing;
    d["verified"] = s.verified;
    d["false_positives"] = s.false_positives;
    d["removed"] = s.removed;
    d["refused"] = s.refused;
    d["left_in_filter"] = s.left_in_filter;
    d["has_exact"] = s.has_exact;
    d["exact_entries"] = s.exact_entries;
    d["exact_bytes"] = s.exact_bytes;
    d["false_match_probability"] = s.false_match_probability;
    return d;
  }

  void clear() {
    handle_.run(true, [](KnownSet& set) { set.clear(); });
  }
  void flush() {
    handle_.run(true, [](KnownSet& set) { set.flush(); });
  }
  void close() { handle_.close(); }
  [[nodiscard]] bool closed() const { return handle_.closed(); }
  [[nodiscard]] bool has_exact() const { return has_exact_; }

 private:
  bool has_exact_;
  SharedHandle<KnownSet> handle_;

  static std::function<KnownSet()> reopener(const Location& location, bool exact) {
    if (location.kind == Location::Kind::memory) return nullptr;
    return [location, exact] { return KnownSet::open(location, exact); };
  }
};

std::unique_ptr<PyKnownSet> make_known_set(const std::string& where, const std::string& name,
                                           const py::object& capacity, const py::object& error_rate,
                                           const py::object& layout, const py::object& exact_arg,
                                           bool create, bool overwrite, const py::object& kind) {
  const Location location = Location::parse(where, name);
  // exact=None: the companion the filter has, if any, so that a KnownSet reopened by its location
  // answers exactly and its adds keep the companion whole; a new one gets none.
  const std::optional<bool> asked =
      exact_arg.is_none() ? std::nullopt : std::optional<bool>(exact_arg.cast<bool>());
  bool exact = asked.value_or(false);
  SizingKeywords keywords;
  keywords.capacity = capacity;
  keywords.error_rate = error_rate;
  keywords.layout = layout;
  keywords.kind = kind;
  const SizedRequest sized = requested_size(keywords);
  const std::optional<FilterParams>& params = sized.params;
  std::optional<KnownSet> set;
  {
    py::gil_scoped_release no_gil;
    const bool missing = overwrite || !Filter::exists(location);
    if (missing && !create) throw NotFound(location.describe() + " does not exist");
    if (missing && !params && !sized.cuckoo) {
      throw NotFound(location.describe() + " does not exist; pass capacity= to create it");
    }
    if (missing) {
      try {
        set.emplace(sized.cuckoo ? KnownSet::create(location, *sized.cuckoo, exact, overwrite)
                                 : KnownSet::create(location, *params, exact, overwrite));
      } catch (const FilterExists&) {
        // Another process created it first: theirs is opened below.
      }
    }
    if (!set) {
      if (!asked) exact = exact_set_exists(location);
      set.emplace(KnownSet::open(location, exact));
    }
  }
  return std::make_unique<PyKnownSet>(std::move(*set), location, exact);
}

}  // namespace

void bind_known_set(py::module_& m) {
  py::class_<PyKnownSet>(m, "KnownSet", R"doc(Orphan detection: the items known (S3 URLs, say)
as a Bloom filter at any location, with exact=True also an exact companion, and the question
"which of these items are not known?".)doc")
      .def(py::init(&make_known_set), py::arg("location"), py::kw_only(), py::arg("name") = "",
           py::arg("capacity") = py::none(), py::arg("error_rate") = py::none(),
           py::arg("layout") = py::none(), py::arg("exact") = py::none(), py::arg("create") = true,
           py::arg("overwrite") = false, py::arg("kind") = py::none())
      .def("add", &PyKnownSet::add, py::arg("items"), py::arg("progress") = py::none(),
           "Adds every item (to the companion first); progress(done) after each batch. "
           "Returns the number of items added. Stopped part-way (Ctrl-C, an error of the items "
           "or of progress, a failed store): IncompleteWrite with the items added (.committed).")
      .def("find_missing", &PyKnownSet::find_missing, py::arg("items"), py::arg("exact") = true,
           py::arg("progress") = py::none(), "The items not known, in input order.")
      .def("remove", &PyKnownSet::remove, py::arg("items"),
           "With kind='cuckoo' and exact=True: forgets the items the exact companion holds, "
           "from it and from the filter, and refuses the others (never added, or removed "
           "before), so that no remove can make another item absent. One bool per item: True "
           "if it was forgotten. stats() counts removed, refused and left_in_filter.")
      .def("stats", &PyKnownSet::stats, py::arg("measure_storage") = true)
      .def("clear", &PyKnownSet::clear, "Empties the filter and the companion.")
      .def("flush", &PyKnownSet::flush)
      .def("close", &PyKnownSet::close)
      .def_property_readonly("closed", &PyKnownSet::closed)
      .def_property_readonly("has_exact", &PyKnownSet::has_exact)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyKnownSet& self, py::args) { self.close(); });
}

}  // namespace redbloom::python
