// A filter file of any kind by its path: a plain filter file (file_store.hpp), the control file
// of a windowed or growing filter (file_stream_store.hpp) or a cuckoo filter file
// (cuckoo_store.hpp), told apart by their magic. The one place that knows every kind of file;
// Filter's open, create and drop come through here.
#pragma once

#include <memory>
#include <string>

#include "core/stream_shape.hpp"
#include "redbloom/cuckoo.hpp"
#include "redbloom/file_access.hpp"
#include "redbloom/filter_backend.hpp"

namespace redbloom {

[[nodiscard]] std::unique_ptr<FilterBackend> open_file_filter(const std::string& path,
                                                              FileAccess access, Clock clock);
// A new filter at `path`; with `overwrite`, whatever filter of either kind is there goes first
// (a windowed or growing one with its link files).
[[nodiscard]] std::unique_ptr<FilterBackend> create_file_filter(const std::string& path,
                                                                const FilterParams& params,
                                                                bool overwrite);
[[nodiscard]] std::unique_ptr<FilterBackend> create_file_filter(const std::string& path,
                                                                const StreamShape& shape,
                                                                Clock clock, bool overwrite);
[[nodiscard]] std::unique_ptr<FilterBackend> create_file_filter(const std::string& path,
                                                                const CuckooOptions& cuckoo,
                                                                bool overwrite);
// Deletes the filter at `path`, of any kind, after checking that it is one.
void remove_file_filter(const std::string& path);

}  // namespace redbloom
