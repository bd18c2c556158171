// redbloom.Filter: a filter at any location, shared safely by threads and across fork().
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "items.hpp"
#include "redbloom/engine_filter.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/journal.hpp"
#include "redbloom/location.hpp"
#include "redbloom/sizing.hpp"
#include "shared_handle.hpp"

namespace redbloom::python {

namespace {

// Items per trip without the GIL: large enough to hide the release, small enough to bound
// the memory of views and answers.
constexpr std::size_t kChunk = std::size_t{1} << 16;

class PyFilter {
 public:
  PyFilter(Filter filter, const Location& location, FileAccess access)
      : params_(filter.params()),
        stream_(filter.shape().stream),
        location_(location),
        remote_(location.in_redis()),
        server_filter_(filter.shape().server_filter.has_value()),
        cuckoo_(filter.shape().cuckoo),
        handle_(std::move(filter), reopener(location, access)) {}

  bool add(py::handle item) {
    Py_buffer buffer{};
    const std::string_view view = item_bytes(item, &buffer);
    BufferRelease release(buffer);
    return handle_.run(remote_, [&](Filter& f) { return f.add(view); });
  }

  bool contains(py::handle item) {
    Py_buffer buffer{};
    const std::string_view view = item_bytes(item, &buffer);
    BufferRelease release(buffer);
    return handle_.run(remote_, [&](Filter& f) { return f.contains(view); });
  }

  py::list add_many(py::handle items) {
    return answers(items, "add_many", true,
                   [](Filter& f, std::span<const std::string_view> views,
                      std::span<std::uint8_t> out) { f.add_many(views, out); });
  }

  bool remove(py::handle item) {
    before_removing("remove");
    Py_buffer buffer{};
    const std::string_view view = item_bytes(item, &buffer);
    BufferRelease release(buffer);
    return handle_.run(remote_, [&](Filter& f) { return f.remove(view); });
  }

  py::list remove_many(py::handle items) {
    before_removing("remove_many");
    return answers(items, "remove_many", true,
                   [](Filter& f, std::span<const std::string_view> views,
                      std::span<std::uint8_t> out) { f.remove_many(views, out); });
  }

  std::uint32_t count(py::handle item) {
    require_cuckoo("count");
    Py_buffer buffer{};
    const std::string_view view = item_bytes(item, &buffer);
    BufferRelease release(buffer);
    return handle_.run(remote_, [&](Filter& f) { return f.count(view); });
  }

  py::list contains_many(py::handle items) {
    return answers(items, "contains_many", false,
                   [](Filter& f, std::span<const std::string_view> views,
                      std::span<std::uint8_t> out) { f.contains_many(views, out); });
  }

  void update(py::handle items) {
    ItemSource source(items, kChunk);
    ItemBatch batch;
    std::size_t done = 0;
    try {
      while (source.next(batch)) {
        std::exception_ptr failed;
        done += run_chunk(
            batch.size(), [&](Filter& f) { f.load_many(batch.views()); }, failed);
        stop_if_failed_or_signalled(failed);
      }
    } catch (...) {
      raise_part_way(std::current_exception(), "update", done, py::none());
    }
  }

  py::dict info() {
    return info_dict(handle_.run(true, [](Filter& f) { return f.info(); }));
  }
  std::uint64_t estimated_items() {
    const double n = handle_.run(remote_, [](Filter& f) { return f.estimate_items(); });
    return static_cast<std::uint64_t>(std::llround(n));
  }
  // A filter of the server's engine keeps its rate by growing (or refuses items past its
  // capacity): its rate is the one it was made with, where known.
  py::object error_rate_at(double items) const {
    if (server_filter_) return error_rate();
    if (cuckoo_) {
      throw InvalidArgument(
          "error_rate_at: a cuckoo filter's rate follows its tables' fill: "
          "info()['cuckoo']['error_rate_now'] gives it now");
    }
    return py::float_(expected_false_positive_rate(params_, items));
  }
  // None for a filter of the server's engine whose BF.INFO does not say it.
  [[nodiscard]] py::object error_rate() const {
    if (server_filter_ && params_.error_rate == 0) return py::none();
    return py::float_(params_.error_rate);
  }
  [[nodiscard]] std::string engine() const { return server_filter_ ? "bf" : "redbloom"; }
  [[nodiscard]] std::string kind() const { return cuckoo_ ? "cuckoo" : "bloom"; }
  // None for a filter of the server's engine, which lays out its bits in its own way.
  [[nodiscard]] py::object layout() const {
    if (server_filter_ || cuckoo_) return py::none();
    return py::str(std::string(to_string(params_.layout)));
  }
  // None for a cuckoo filter: its tables are no bitmap.
  [[nodiscard]] py::object bits() const {
    if (cuckoo_) return py::none();
    return py::int_(params_.total_bits());
  }
  [[nodiscard]] py::object hashes() const {
    if (cuckoo_) return py::none();
    return py::int_(params_.hashes);
  }
  [[nodiscard]] py::dict params_as_dict() const {
    py::dict d = params_dict(params_);
    d["layout"] = layout();
    if (cuckoo_) {
      d["kind"] = "cuckoo";
      for (const char* bitmap_only : {"hashes", "bits", "bytes", "partition_bits", "hash_scheme"}) {
        d[bitmap_only] = py::none();
      }
      d["growth"] = cuckoo_->growth;
      d["max_bytes"] = cuckoo_->max_bytes;
    } else {
      d["kind"] = "bloom";
    }
    return d;
  }
  [[nodiscard]] const std::optional<CuckooOptions>& cuckoo() const { return cuckoo_; }
  void flush() {
    handle_.run(true, [](Filter& f) { f.flush(); });
  }
  void close() { handle_.close(); }
  [[nodiscard]] bool closed() const { return handle_.closed(); }
  [[nodiscard]] const FilterParams& params() const { return params_; }
  [[nodiscard]] const std::optional<StreamOptions>& stream() const { return stream_; }
  [[nodiscard]] std::string location() const { return location_.describe(); }
  // Runs `work` on the filter, without the GIL (dedup_records' journal).
  template <class Work>
  decltype(auto) run(Work&& work) {
    return handle_.run(true, std::forward<Work>(work));
  }

 private:
  // Frees a buffer item's view when the call ends.
  struct BufferRelease {
    Py_buffer& buffer;
    ~BufferRelease() {
      if (buffer.obj != nullptr) PyBuffer_Release(&buffer);
    }
  };

  FilterParams params_;
  std::optional<StreamOptions> stream_;
  Location location_;
  bool remote_;
  bool server_filter_;                   // kept by the server's own Bloom engine (BF.*)
  std::optional<CuckooOptions> cuckoo_;  // a cuckoo filter's options
  SharedHandle<Filter> handle_;

  bool warned_of_removes_ = false;

  // A Bloom filter cannot forget an item: said before the library is asked.
  void require_cuckoo(const char* call) const {
    if (!cuckoo_) {
      throw InvalidArgument(std::string(call) + ": " + location_.describe() +
                            " is a Bloom filter, which cannot forget or count an item; a "
                            "cuckoo filter can: create one with kind='cuckoo'");
    }
  }

  // Beside an exact set a remove goes through both (KnownSet.remove, which refuses items the set
  // lacks); the caveat said once per filter object.
  void before_removing(const char* call) {
    require_cuckoo(call);
    if (exact_set_exists(location_)) {
      throw InvalidArgument(std::string(call) + ": " + location_.describe() +
                            " has an exact set: remove through redbloom.KnownSet(location, "
                            "exact=True).remove(items), which removes from both only the items "
                            "the set holds");
    }
    if (!warned_of_removes_) {
      warned_of_removes_ = true;
      warn(
          {"removing an item that was never added can remove another item's fingerprint "
           "(that item then reads as absent): remove only items you added"});
    }
  }

  static std::function<Filter()> reopener(const Location& location, FileAccess access) {
    if (location.kind == Location::Kind::memory) return nullptr;
    return [location, access] {
      OpenOptions options;
      options.access = access;
      return Filter::open(location, options);
    };
  }

  // Runs one chunk; how many of its items were done: all, or an IncompleteWrite's count, the
  // error then left in `failed` for stop_if_failed_or_signalled.
  template <class Work>
  std::size_t run_chunk(std::size_t size, Work&& work, std::exception_ptr& failed) {
    try {
      handle_.run(true, work);
      return size;
    } catch (const IncompleteWrite& e) {
      failed = std::current_exception();
      return e.committed();
    }
  }

  // Between chunks: rethrows a chunk's IncompleteWrite once its answers are kept, and runs
  // Python's signal handlers (a Ctrl-C arrives while the GIL is released, and is otherwise
  // only seen after the call, its answers lost).
  static void stop_if_failed_or_signalled(const std::exception_ptr& failed) {
    if (failed) std::rethrow_exception(failed);
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }

  // The answers go into a list made at the items' length when they tell it (lists, tuples,
  // arrays), so filling it is a store per item rather than an append that may reallocate.
  // `writes`: a call that stops part-way reports what it committed (raise_part_way).
  template <class Batch>
  py::list answers(py::handle items, const char* call, bool writes, Batch&& batch_call) {
    ItemSource source(items, kChunk);
    ItemBatch batch;
    std::vector<std::uint8_t> flags;
    const Py_ssize_t expected = PyObject_LengthHint(items.ptr(), 0);
    if (expected < 0) throw py::error_already_set();
    py::list out(expected);
    std::size_t done = 0;  // items committed, their answers in `out`
    try {
      while (source.next(batch)) {
        flags.assign(batch.size(), 0);
        std::exception_ptr failed;
        const std::size_t landed = run_chunk(
            batch.size(), [&](Filter& f) { batch_call(f, batch.views(), flags); }, failed);
        for (std::size_t i = 0; i < landed; ++i) {
          PyObject* answer = flags[i] ? Py_True : Py_False;
          const auto at = static_cast<Py_ssize_t>(done + i);
          if (at < expected) {
            Py_INCREF(answer);
            PyList_SET_ITEM(out.ptr(), at, answer);
          } else if (PyList_Append(out.ptr(), answer) != 0) {
            throw py::error_already_set();
          }
        }
        done += landed;
        stop_if_failed_or_signalled(failed);
      }
    } catch (...) {
      if (!writes) throw;
      py::object given = py::reinterpret_steal<py::object>(
          PyList_GetSlice(out.ptr(), 0, static_cast<Py_ssize_t>(done)));
      if (!given) throw py::error_already_set();
      raise_part_way(std::current_exception(), call, done, std::move(given));
    }
    // Fewer items than the hint said: drop the unfilled tail.
    if (static_cast<Py_ssize_t>(done) < expected &&
        PyList_SetSlice(out.ptr(), static_cast<Py_ssize_t>(done), expected, nullptr) != 0) {
      throw py::error_already_set();
    }
    return out;
  }
};

// dedup_records(journal=...): the library's DedupJournal (redbloom/journal.hpp) around each
// batch's add_many. One process uses it: a forked child gets an error, not a shared file.
class PyDedupJournal {
 public:
  PyDedupJournal(const std::string& path, std::uint64_t checkpoint_bytes)
      : journal_(path, checkpoint_bytes), pid_(::getpid()) {}

  void recover(PyFilter& filter, std::size_t batch) {
    check_process();
    filter.run([&](Filter& f) { journal_.recover(f, nullptr, batch); });
    recovered_ = true;
  }
  // The batch's keys added under the journal: True where the record is printed as new.
  py::list add_many(PyFilter& filter, py::handle keys) {
    check_ready();
    const Py_ssize_t size = PyObject_Length(keys.ptr());
    if (size < 0) throw py::error_already_set();
    ItemSource source(keys, std::max<std::size_t>(static_cast<std::size_t>(size), 1));
    ItemBatch batch;
    py::list out;
    (void)source.next(batch);  // none: an empty batch, begun and done as any other
    std::vector<std::uint8_t> flags(batch.size(), 0);
    filter.run([&](Filter& f) {
      journal_.before_commit(batch.views());
      f.add_many(batch.views(), flags);
      journal_.after_commit(batch.views(), flags);
    });
    for (const std::uint8_t flag : flags) out.append(py::bool_(flag != 0));
    return out;
  }
  // The batch's new records were taken by the caller.
  void done(PyFilter& filter) {
    check_ready();
    filter.run([&](Filter&) { journal_.after_output(); });
  }
  void finish(PyFilter& filter) {
    check_ready();
    filter.run([&](Filter&) { journal_.finish(); });
  }
  [[nodiscard]] py::dict summary() const {
    py::dict d;
    d["replayed"] = journal_.replayed();
    d["recovered"] = journal_.recovered();
    d["reprinted"] = journal_.reprinted();
    d["pending"] = journal_.pending();
    d["notes"] = journal_.notes();
    return d;
  }

 private:
  void check_process() const {
    if (::getpid() != pid_) {
      throw InvalidArgument(
          "a dedup journal is used by the process that opened it, not by a "
          "forked child: open one journal per process");
    }
  }
  void check_ready() const {
    check_process();
    if (!recovered_) throw InvalidArgument("the journal is used before its recovery");
  }
  DedupJournal journal_;
  pid_t pid_;
  bool recovered_ = false;
};

bool wants_bf(const py::object& engine) {
  return !engine.is_none() && py::cast<std::string>(engine) == "bf";
}

// The filter at `location` must be of the engine asked for (when one was).
void check_engine_of(const Filter& filter, const Location& location, const py::object& engine) {
  if (engine.is_none()) return;
  const bool bf = filter.shape().server_filter.has_value();
  if (bf != wants_bf(engine)) {
    throw FilterExists(location.describe() + " is " +
                       (bf ? "a filter of the server's Bloom engine (engine='bf')"
                           : "redbloom's own filter (engine='redbloom')") +
                       ", not the engine asked for; open it with engine=" +
                       (bf ? "'bf'" : "'redbloom'") + " or None");
  }
}

// The filter at `location` must be of the kind asked for (when one was).
void check_kind_of(const Filter& filter, const Location& location, const py::object& kind) {
  if (kind.is_none()) return;
  const bool cuckoo = filter.shape().cuckoo.has_value();
  if (cuckoo != (py::cast<std::string>(kind) == "cuckoo")) {
    throw InvalidArgument(
        location.describe() + " is " +
        (cuckoo ? "a cuckoo filter (kind='cuckoo')" : "a Bloom filter (kind='bloom')") +
        ", not the kind asked for; open it with kind=" + (cuckoo ? "'cuckoo'" : "'bloom'") +
        " or without kind=");
  }
}

// open(engine='bf'): the key, reserved with BF.RESERVE first when missing and `create`. Its
// size options apply only then: the engine keeps its own.
std::unique_ptr<PyFilter> open_engine_filter(const Location& location, const py::object& capacity,
                                             const EngineFilterOptions* reserve,
                                             const OpenOptions& options) {
  std::optional<Filter> filter;
  {
    py::gil_scoped_release no_gil;
    if (reserve != nullptr && !Filter::exists(location)) {
      try {
        filter.emplace(create_engine_filter(location, *reserve));
      } catch (const FilterExists&) {
        // Another process reserved it first: use theirs.
      }
    }
    if (!filter) {
      if (!Filter::exists(location)) {
        throw NotFound(location.describe() + " does not exist; pass capacity= (and error_rate=) " +
                       "to create it" + (capacity.is_none() ? "" : " (and create=True)"));
      }
      filter.emplace(Filter::open(location, options));
    }
  }
  check_engine_of(*filter, location, py::str("bf"));
  return std::make_unique<PyFilter>(std::move(*filter), location, options.access);
}

// open(): an existing filter, or a new one when `create` and a size was given.
std::unique_ptr<PyFilter> open_filter(const std::string& where, const std::string& name,
                                      const py::object& capacity, const py::object& error_rate,
                                      const py::object& layout, const py::object& bits,
                                      const py::object& hashes, bool create, bool read_only,
                                      const py::object& window, const py::object& slices,
                                      const py::object& growth, const py::object& max_bytes,
                                      const py::object& engine, bool nonscaling,
                                      const py::object& kind, const py::object& wait_for_creator) {
  const Location location = Location::parse(where, name);
  const SizedRequest sized = requested_size({capacity, error_rate, layout, bits, hashes, window,
                                             slices, growth, max_bytes, engine, nonscaling, kind});
  OpenOptions options;
  options.access = read_only ? FileAccess::read_only : FileAccess::read_write;
  options.wait_for_creator = creator_wait_of(wait_for_creator);
  if (wants_bf(engine)) {
    const bool reserve = sized.engine && create && !read_only;
    return open_engine_filter(location, capacity, reserve ? &*sized.engine : nullptr, options);
  }
  const std::optional<StreamOptions>& stream = sized.stream;
  const std::optional<FilterParams>& params = sized.params;
  const std::optional<CuckooOptions>& cuckoo = sized.cuckoo;
  if (cuckoo) {
    options.cuckoo = cuckoo;
    options.require_params = true;
    options.create_if_missing = create && !read_only;
  } else if (stream) {
    options.stream = stream;
    options.require_params = true;
    options.create_if_missing = create && !read_only;
  } else if (params) {
    options.params = params;
    options.require_params = true;  // a filter made otherwise is refused, naming both sizes
    options.create_if_missing = create && !read_only;
  } else if (location.kind == Location::Kind::memory) {
    throw InvalidArgument("a memory filter needs its size: capacity= (and error_rate=)");
  }
  OpenReport report;
  std::optional<Filter> filter;
  {
    py::gil_scoped_release no_gil;
    if (!params && !stream && !cuckoo && create && !read_only && !Filter::exists(location)) {
      throw NotFound(location.describe() +
                     " does not exist; pass capacity= (and error_rate=) to create it");
    }
    filter.emplace(Filter::open(location, options, &report));
  }
  warn(report.warnings);
  check_engine_of(*filter, location, engine);
  check_kind_of(*filter, location, kind);
  return std::make_unique<PyFilter>(std::move(*filter), location, options.access);
}

std::unique_ptr<PyFilter> create_filter(const std::string& where, const std::string& name,
                                        const py::object& capacity, const py::object& error_rate,
                                        const py::object& layout, const py::object& bits,
                                        const py::object& hashes, bool overwrite,
                                        const py::object& window, const py::object& slices,
                                        const py::object& growth, const py::object& max_bytes,
                                        const py::object& engine, bool nonscaling,
                                        const py::object& kind) {
  const Location location = Location::parse(where, name);
  const SizedRequest sized = requested_size({capacity, error_rate, layout, bits, hashes, window,
                                             slices, growth, max_bytes, engine, nonscaling, kind});
  if (wants_bf(engine)) {
    if (!sized.engine) throw InvalidArgument("create needs a size: capacity= (and error_rate=)");
    std::optional<Filter> filter;
    {
      py::gil_scoped_release no_gil;
      filter.emplace(create_engine_filter(location, *sized.engine, overwrite));
    }
    return std::make_unique<PyFilter>(std::move(*filter), location, FileAccess::read_write);
  }
  const std::optional<StreamOptions>& stream = sized.stream;
  const std::optional<FilterParams>& params = sized.params;
  const std::optional<CuckooOptions>& cuckoo = sized.cuckoo;
  if (!params && !stream && !cuckoo) {
    throw InvalidArgument("create needs a size: capacity= (or bits= and hashes=)");
  }
  OpenReport report;
  std::optional<Filter> filter;
  {
    py::gil_scoped_release no_gil;
    filter.emplace(cuckoo   ? Filter::create(location, *cuckoo, overwrite, &report)
                   : stream ? Filter::create(location, *stream, overwrite, &report)
                            : Filter::create(location, *params, overwrite, &report));
  }
  warn(report.warnings);
  return std::make_unique<PyFilter>(std::move(*filter), location, FileAccess::read_write);
}

void bind_journal(py::module_& m) {
  py::class_<PyDedupJournal>(m, "_DedupJournal",
                             "dedup_records' journal (redbloom/records.py drives it)")
      .def(py::init<const std::string&, std::uint64_t>(), py::arg("path"),
           py::arg("checkpoint_bytes"))
      .def("recover", &PyDedupJournal::recover, py::arg("filter"), py::arg("batch"))
      .def("add_many", &PyDedupJournal::add_many, py::arg("filter"), py::arg("keys"))
      .def("done", &PyDedupJournal::done, py::arg("filter"))
      .def("finish", &PyDedupJournal::finish, py::arg("filter"))
      .def("summary", &PyDedupJournal::summary);
}

// Filter.open and Filter.create, with every option of a filter's size and kind.
void bind_open_and_create(py::class_<PyFilter>& filter) {
  filter
      .def_static("open", &open_filter, py::arg("location"), py::kw_only(), py::arg("name") = "",
                  py::arg("capacity") = py::none(), py::arg("error_rate") = py::none(),
                  py::arg("layout") = py::none(), py::arg("bits") = py::none(),
                  py::arg("hashes") = py::none(), py::arg("create") = false,
                  py::arg("read_only") = false, py::arg("window") = py::none(),
                  py::arg("slices") = py::none(), py::arg("growth") = py::none(),
                  py::arg("max_bytes") = py::none(), py::arg("engine") = py::none(),
                  py::arg("nonscaling") = false, py::arg("kind") = py::none(),
                  py::arg("wait_for_creator") = py::none(),
                  "Opens a filter; with a size and create=True, creates it if missing. A size "
                  "given must match an existing filter's (FilterExists otherwise). window= "
                  "(seconds or '10m') makes a windowed filter, capacity= then being items per "
                  "window; growth= a growing one (docs/streams.md). engine='bf': a filter of "
                  "the Redis server's own Bloom engine, created with BF.RESERVE from capacity=, "
                  "error_rate=, growth= (EXPANSION) or nonscaling=True when missing; an existing "
                  "one is used as the server made it. kind='cuckoo': a cuckoo filter (capacity=, "
                  "error_rate=, growth=, max_bytes=), which can also remove items. "
                  "wait_for_creator= (seconds, a timedelta or '30s'; default 30 s): how long to "
                  "wait for another process still creating the filter in Redis.")
      .def_static(
          "create", &create_filter, py::arg("location"), py::kw_only(), py::arg("name") = "",
          py::arg("capacity") = py::none(), py::arg("error_rate") = py::none(),
          py::arg("layout") = py::none(), py::arg("bits") = py::none(),
          py::arg("hashes") = py::none(), py::arg("overwrite") = false,
          py::arg("window") = py::none(), py::arg("slices") = py::none(),
          py::arg("growth") = py::none(), py::arg("max_bytes") = py::none(),
          py::arg("engine") = py::none(), py::arg("nonscaling") = false,
          py::arg("kind") = py::none(),
          "Creates a new, empty filter (FilterExists if there is one, unless overwrite); "
          "engine='bf' one of the Redis server's own Bloom engine (BF.RESERVE); kind='cuckoo' "
          "a cuckoo filter, which can also remove items.");
}

// What only a cuckoo filter does (a Bloom filter's calls raise InvalidArgument).
void bind_cuckoo_calls(py::class_<PyFilter>& filter) {
  filter
      .def("remove", &PyFilter::remove, py::arg("item"),
           "A cuckoo filter forgets one copy of the item; True if it held one. Removing an item "
           "that was never added can make another item disappear (one sharing its "
           "fingerprint): remove only items you added. InvalidArgument for a Bloom filter.")
      .def("remove_many", &PyFilter::remove_many, py::arg("items"),
           "remove() for each item in order; a list of bools, True where a copy was removed.")
      .def("count", &PyFilter::count, py::arg("item"),
           "A cuckoo filter: how many copies of the item's fingerprint it holds (0: never "
           "added).")
      .def_property_readonly("kind", &PyFilter::kind, "'bloom' or 'cuckoo'");
}

}  // namespace

void bind_filter(py::module_& m) {
  bind_journal(m);
  py::class_<PyFilter> filter(m, "Filter", R"doc(A Bloom filter at any location: a file path,
"redis://host:port#name", several servers ("redis://a,redis://b#name"), "redis+cluster://...#name"
or "memory:"; kind='cuckoo' a cuckoo filter, which can also remove items. Safe to share between
threads; reopened by a forked child on first use.)doc");
  bind_cuckoo_calls(filter);
  bind_open_and_create(filter);
  filter
      .def("add", &PyFilter::add, py::arg("item"),
           "Adds the item; True iff it was new (as BF.ADD). Atomic: of concurrent writers "
           "adding one item, exactly one gets True.")
      .def("__contains__", &PyFilter::contains, py::arg("item"))
      .def("contains", &PyFilter::contains, py::arg("item"),
           "False: certainly never added. True: added, or a false positive.")
      .def("add_many", &PyFilter::add_many, py::arg("items"),
           "Adds every item in order; a list of bools, True where the item was new. Stopped "
           "part-way (Ctrl-C, an error of the items, a failed store): IncompleteWrite, with "
           "the items committed (.committed) and their answers (.answers).")
      .def("contains_many", &PyFilter::contains_many, py::arg("items"))
      .def("update", &PyFilter::update, py::arg("items"),
           "Adds every item without answers (the bulk path). Stopped part-way: IncompleteWrite "
           "with the items committed (.committed).")
      .def("info", &PyFilter::info, "Parameters, fill and estimates (reads every bit).")
      .def("__len__", &PyFilter::estimated_items,
           "The estimated number of items (from the fill of a sample of the bits).")
      .def("error_rate_at", &PyFilter::error_rate_at, py::arg("items"),
           "The false-positive rate expected after `items` distinct items.")
      .def("flush", &PyFilter::flush)
      .def("close", &PyFilter::close)
      .def_property_readonly("closed", &PyFilter::closed)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyFilter& self, py::args) { self.close(); })
      .def_property_readonly("location", &PyFilter::location)
      .def_property_readonly("params", &PyFilter::params_as_dict)
      .def_property_readonly("capacity", [](const PyFilter& f) { return f.params().capacity; })
      .def_property_readonly("error_rate", &PyFilter::error_rate,
                             "The rate it was sized for; None where the server's engine keeps "
                             "it and does not say it")
      .def_property_readonly("engine", &PyFilter::engine,
                             "'redbloom' (redbloom's own bits) or 'bf' (the server's Bloom "
                             "engine, through BF.*)")
      .def_property_readonly("bits", &PyFilter::bits, "None for a cuckoo filter")
      .def_property_readonly("hashes", &PyFilter::hashes, "None for a cuckoo filter")
      .def_property_readonly("layout", &PyFilter::layout)
      .def("__repr__", [](const PyFilter& f) {
        return "<redbloom.Filter " + f.location() + (f.closed() ? " (closed)" : "") + ": " +
               (f.engine() == "bf" ? "the server's Bloom engine (BF.*), capacity " +
                                         std::to_string(f.params().capacity)
                : f.cuckoo() ? describe(*f.cuckoo())
                : f.stream() ? describe(*f.stream())
                             : describe(f.params())) +
               ">";
      });
}

}  // namespace redbloom::python
