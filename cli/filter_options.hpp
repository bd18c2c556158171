// Options every filter command shares: where the filter is and, for commands that may create
// it, how to size it.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "redbloom/filter.hpp"
#include "redbloom/filter_request.hpp"
#include "redbloom/location.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/stream.hpp"

namespace redbloom::cli {

// The sizing options as CLI11 fills them; request() hands the ones given to the library
// (filter_request.hpp), which has the rules and the defaults.
struct SizingOptions {
  double capacity = 0;
  std::string error_rate;  // "0.01", "1e-3", "0.1%"
  std::string layout;
  double bits = 0;
  std::uint32_t hashes = 0;
  std::string partition_size;
  // Set by add_sizing_options; count() tells whether the user gave the option.
  CLI::Option* capacity_option = nullptr;
  CLI::Option* error_rate_option = nullptr;
  CLI::Option* layout_option = nullptr;
  CLI::Option* bits_option = nullptr;
  CLI::Option* hashes_option = nullptr;
  CLI::Option* partition_option = nullptr;
  // Windowed and growing filters (stream.hpp).
  std::string window;
  std::uint32_t slices = 0;
  std::uint32_t growth = 0;
  std::string rate;
  std::string max_bytes;
  CLI::Option* window_option = nullptr;
  CLI::Option* slices_option = nullptr;
  CLI::Option* growth_option = nullptr;
  CLI::Option* rate_option = nullptr;
  CLI::Option* max_bytes_option = nullptr;
  // Build a filter whose rate is above the one asked for (hashes capped), instead of refusing.
  bool force_rate = false;
  // bloom (default) or cuckoo (cuckoo.hpp).
  std::string kind;
  CLI::Option* kind_option = nullptr;

  // The options given, with the command line's default size for a filter sized by none.
  [[nodiscard]] FilterRequest request() const;
};

// Where a filter lives, as the options give it, in the location strings of Location::parse
// (location.hpp) and the Python package: --filter PATH, --filter redis://host:port#NAME (or
// redis+cluster://...#NAME, or several comma-separated URIs), or Redis as --redis URI#NAME,
// --redis URI --name NAME, or --name NAME alone ($REDIS_URL, else redis://127.0.0.1:6379).
// A --redis-file lists the servers of a sharded filter, one per line.
struct FilterLocation {
  std::string path;  // --filter: a path or a location string
  std::string redis_uri;
  std::string redis_file;
  std::string name;
  // --wait-for-creator: how long an open waits for another process still creating the filter
  // (a Redis filter is visible while its partitions are allocated); empty: the library's 30 s.
  std::string creator_wait;
  // The options' names in messages ("--filter", "--redis", "--name"; "--to-..." for a second
  // filter), set by add_location_options.
  std::string path_flag = "--filter";
  std::string redis_flag = "--redis";
  std::string name_flag = "--name";

  [[nodiscard]] bool in_redis() const { return resolve().in_redis(); }
  // The library's Location (location.hpp). Throws InvalidArgument when no filter was given,
  // for a Redis location without a name, or for a bad URI or --redis-file.
  [[nodiscard]] Location resolve() const;
  // "urls.rbf" or "urls on redis 127.0.0.1:6379".
  [[nodiscard]] std::string describe() const { return resolve().describe(); }
  // --wait-for-creator as a duration. Throws InvalidArgument for a bad one.
  [[nodiscard]] std::chrono::milliseconds wait_for_creator() const;
};

// --filter, --redis, --name; `flag_prefix` ("" or "to-") names the options of a second filter
// ("--to-filter", "--to-redis", "--to-name").
// `path_alias` ("--known") is one more name for --filter.
void add_location_options(CLI::App& command, FilterLocation& location,
                          const std::string& flag_prefix = "", const std::string& path_alias = "");
// --wait-for-creator, for the commands that open an existing filter.
void add_creator_wait_option(CLI::App& command, FilterLocation& location);
void add_sizing_options(CLI::App& command, SizingOptions& options);

// What the options ask for (size_request): a plain filter's parameters or a stream's options.
// Throws InvalidArgument for bad values or options that do not go together.
[[nodiscard]] SizedRequest requested_size(const SizingOptions& options);
// The plain filter's parameters the options ask for (they ask for no stream).
[[nodiscard]] FilterParams requested_params(const SizingOptions& options);
// A windowed or growing filter, when --window or --growth asks for one; nullopt otherwise.
[[nodiscard]] std::optional<StreamOptions> requested_stream(const SizingOptions& options);
// What of a new filter's size the options left to the defaults, for the note that says it was
// created: " (the default size, -n 1e6 -p 0.01; ...)", or "" when they gave the whole size.
[[nodiscard]] std::string defaulted_size(const SizingOptions& options);

// Opens the filter for writing (Filter::open). A missing filter is created from the options
// when `create_if_missing` (and a note on stderr says so, with its size); an existing one must
// match any sizing option the user gave (FilterExists otherwise).
struct WritableFilter {
  Filter filter;
  bool created = false;  // made by this call
};
[[nodiscard]] WritableFilter open_for_writing(const FilterLocation& location,
                                              const SizingOptions& options, bool create_if_missing);
[[nodiscard]] Filter open_for_reading(const FilterLocation& location);
// Filter::create, its warnings (a server that may evict the filter) on stderr.
[[nodiscard]] Filter create_filter(const FilterLocation& location, const FilterParams& params,
                                   bool overwrite);
[[nodiscard]] Filter create_stream_filter(const FilterLocation& location,
                                          const StreamOptions& stream, bool overwrite);
[[nodiscard]] Filter create_cuckoo_filter(const FilterLocation& location,
                                          const CuckooOptions& cuckoo, bool overwrite);

}  // namespace redbloom::cli
