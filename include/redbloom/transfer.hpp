// Copying a filter between stores (file <-> Redis, Redis <-> Redis). Every store keeps a
// partition's bytes in Redis bit order, so a copy is the same bytes moved, partition by
// partition (of each link of each live slice, for a windowed or growing filter), in bounded
// chunks; the exact set, if any, goes with it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "redbloom/exact_set.hpp"
#include "redbloom/filter_backend.hpp"
#include "redbloom/location.hpp"
#include "redbloom/store.hpp"

namespace redbloom {

// Called after each chunk with the bytes copied so far and the total.
using CopyProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

// Overwrites every bit of `to` with `from`'s. Both must have equal parameters (InvalidArgument
// otherwise). Afterwards the two stores' bit counts are compared: a difference (a writer
// changed either filter during the copy) throws StorageError.
void copy_bits(const Store& from, Store& to, const CopyProgress& progress = {});

// Copies the live slices of `from`, a windowed or growing filter, into `to`, a new filter of
// the same options (InvalidArgument otherwise), link by link. Each slice keeps its number,
// which is its place in Unix time, so it retires at the same moment at the target (the
// remaining life of each slice is the same, as far as the two stores' clocks agree); each link
// keeps its creation time and its count of adds, so the target grows when the source would.
// Writers may go on adding to `from` meanwhile: every item whose add returned before the copy
// began is in the copy (until its window ends); items added during the copy may or may not be.
// Afterwards the bits the target holds are compared with those written (StorageError if they
// differ). Returns the bytes copied.
std::uint64_t copy_links(const FilterBackend& from, FilterBackend& to,
                         const CopyProgress& progress = {});

// Copies the tables of `from`, a cuckoo filter, into `to`, a new one of the same options
// (InvalidArgument otherwise), table by table, each read in one atomic step. Writers may go on
// adding to and removing from `from`: every item added before the copy began and not removed
// is in the copy; items added or removed during it may or may not be. Afterwards the
// fingerprints the target holds are compared with those written (StorageError if they differ).
// Returns the bytes copied.
std::uint64_t copy_cuckoo_tables(const FilterBackend& from, FilterBackend& to,
                                 const CopyProgress& progress = {});

// Copies every fingerprint of `from` into `to`. InvalidArgument if `to` keeps bits `from` does
// not (a Redis set's fingerprints cannot fill a set that keeps more of each).
void copy_exact_set(const ExactSet& from, ExactSet& to);

// What copy_filter copied.
struct CopyReport {
  std::uint64_t bytes = 0;
  bool exact = false;  // the exact set went too
  std::uint64_t exact_entries = 0;
  std::vector<std::string> warnings;  // about the target (Filter::create's OpenReport)
};

// Creates the filter at `to` with the parameters (or the window and growth options) of the one
// at `from` (FilterExists if there is one, unless `overwrite`), copies its bits (copy_bits) or
// its live slices (copy_links), then its exact set if it has one (bound to the new filter; a
// file set made from a Redis set keeps the bits the Redis set kept). Every kind of filter
// copies between a file, one Redis server, several and a Cluster. Anything that fails part way
// leaves nothing at `to`: the incomplete copy is dropped, and the error says so (or, if
// dropping failed too, what to drop). `clock` drives both filters' windows (stream.hpp; empty:
// the real one).
CopyReport copy_filter(const Location& from, const Location& to, bool overwrite,
                       const CopyProgress& progress = {}, Clock clock = {});

// Whether two Redis locations name one filter: the same name on a server they have in common,
// compared by the servers' run_id and db (localhost and 127.0.0.1 are one server, as is an
// alias), so a copy onto itself can be refused before `overwrite` drops the source. Asks each
// server (StorageError if one cannot be reached); false if either location is not in Redis.
[[nodiscard]] bool same_redis_filter(const Location& a, const Location& b);

}  // namespace redbloom
