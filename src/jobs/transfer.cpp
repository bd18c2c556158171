#include "redbloom/transfer.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/bitmap_kernels.hpp"
#include "core/cuckoo_shape.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redis/redis_filters.hpp"
#include "redis/redis_store.hpp"

namespace redbloom {
namespace {

// Large enough to amortise a network round trip, small enough to keep memory flat whatever
// the filter's size.
constexpr std::uint64_t kChunkBytes = std::uint64_t{8} << 20;

}  // namespace

void copy_bits(const Store& from, Store& to, const CopyProgress& progress) {
  const FilterParams& params = from.params();
  if (!(params == to.params())) {
    throw InvalidArgument("cannot copy " + from.location() + " (" + describe(params) + ") into " +
                          to.location() + " (" + describe(to.params()) + "): parameters differ");
  }
  std::vector<std::uint8_t> chunk(std::min(kChunkBytes, params.partition_bytes()));
  const std::uint64_t total = params.total_bytes();
  std::uint64_t done = 0;
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    for (std::uint64_t offset = 0; offset < params.partition_bytes(); offset += chunk.size()) {
      const std::span<std::uint8_t> piece(
          chunk.data(), std::min<std::uint64_t>(chunk.size(), params.partition_bytes() - offset));
      from.read_bytes(p, offset, piece);
      to.write_bytes(p, offset, piece);
      done += piece.size();
      if (progress) progress(done, total);
    }
  }
  to.flush();
  const std::uint64_t source_bits = from.count_set_bits();
  const std::uint64_t copied_bits = to.count_set_bits();
  if (source_bits != copied_bits) {
    throw StorageError("copy of " + from.location() + " to " + to.location() + " holds " +
                       std::to_string(copied_bits) + " set bits, the source " +
                       std::to_string(source_bits) + " (was either written to during the copy?)");
  }
}

std::uint64_t copy_links(const FilterBackend& from, FilterBackend& to,
                         const CopyProgress& progress) {
  const StreamLinks* source = from.links();
  StreamLinks* target = to.links();
  const FilterShape shape = from.shape();
  if (source == nullptr || target == nullptr || !(shape.stream == to.shape().stream)) {
    throw InvalidArgument("cannot copy " + from.location() + " (" + shape.describe() + ") into " +
                          to.location() + " (" + to.shape().describe() +
                          "): a windowed or growing filter goes into a new one of the same "
                          "options");
  }
  const std::vector<SliceCopy> slices = source->live_slices();
  target->restore_slices(slices);
  std::uint64_t total = 0;
  for (const SliceCopy& slice : slices) {
    for (const auto& items : slice.items) {
      for (std::uint32_t l = 0; l < items.size(); ++l) total += shape.links.at(l).partition_bytes();
    }
  }
  std::vector<std::uint8_t> chunk;
  std::map<std::int64_t, std::uint64_t> ones_of;  // set bits written, per slice
  std::uint64_t done = 0;
  for (const SliceCopy& slice : slices) {
    for (std::uint64_t p = 0; p < slice.items.size(); ++p) {
      for (std::uint32_t l = 0; l < slice.items[p].size(); ++l) {
        const std::uint64_t bytes = shape.links[l].partition_bytes();
        chunk.resize(std::min(kChunkBytes, bytes));
        for (std::uint64_t offset = 0; offset < bytes; offset += chunk.size()) {
          const std::span<std::uint8_t> piece(
              chunk.data(), std::min<std::uint64_t>(chunk.size(), bytes - offset));
          source->read_link(slice.slice, l, p, offset, piece);
          target->write_link(slice.slice, l, p, offset, piece);
          ones_of[slice.slice] += kernels::count_ones(piece);
          done += piece.size();
          if (progress) progress(done, total);
        }
      }
    }
  }
  to.flush();
  // What the target holds of the slices still live (one may have retired meanwhile) against
  // what was written into them: nobody else knows the new filter yet.
  std::uint64_t written = 0;
  for (const SliceCopy& slice : target->live_slices()) {
    const auto ones = ones_of.find(slice.slice);
    if (ones != ones_of.end()) written += ones->second;
  }
  const std::uint64_t copied = to.count_set_bits();
  if (copied != written) {
    throw StorageError("copy of " + from.location() + " to " + to.location() + " holds " +
                       std::to_string(copied) + " set bits where " + std::to_string(written) +
                       " were written (was the new filter written to during the copy?)");
  }
  return done;
}

std::uint64_t copy_cuckoo_tables(const FilterBackend& from, FilterBackend& to,
                                 const CopyProgress& progress) {
  const CuckooTables* source = from.cuckoo_tables();
  CuckooTables* target = to.cuckoo_tables();
  const FilterShape shape = from.shape();
  if (source == nullptr || target == nullptr || !(shape.cuckoo == to.shape().cuckoo)) {
    throw InvalidArgument("cannot copy " + from.location() + " (" + shape.describe() + ") into " +
                          to.location() + " (" + to.shape().describe() +
                          "): a cuckoo filter goes into a new one of the same options");
  }
  const CuckooShape tables(*shape.cuckoo);
  const std::vector<std::uint32_t> counts = source->link_counts();
  std::uint64_t total = 0;
  for (const std::uint32_t links : counts) total += tables.partition_bytes(links);
  std::uint64_t done = 0;
  std::uint64_t written = 0;  // fingerprints
  for (std::uint32_t partition = 0; partition < counts.size(); ++partition) {
    for (std::uint32_t link = 0; link < counts[partition]; ++link) {
      std::vector<std::uint8_t> bytes = source->read_table(partition, link);
      written += cuckoo_table::Table(tables.link(link), bytes).stored();
      target->write_table(partition, link, bytes);
      done += bytes.size();
      if (progress) progress(done, total);
    }
  }
  to.flush();
  const std::uint64_t copied = to.cuckoo_info().value_or(CuckooInfo{}).items;
  if (copied != written) {
    throw StorageError("copy of " + from.location() + " to " + to.location() + " holds " +
                       std::to_string(copied) + " fingerprints where " + std::to_string(written) +
                       " were written (was the new filter written to during the copy?)");
  }
  return done;
}

void copy_exact_set(const ExactSet& from, ExactSet& to) {
  if ((to.fingerprint_mask() & ~from.fingerprint_mask()) != 0) {
    throw InvalidArgument("cannot copy exact set " + from.location() + " into " + to.location() +
                          ": the target keeps more bits of each fingerprint than the source has");
  }
  from.for_each_fingerprint(
      [&](std::span<const std::uint64_t> batch) { (void)to.add_fingerprints(batch); });
}

namespace {

// A cuckoo filter's copy has its source's options, partitions included: Filter::create would
// give a Redis filter left at one partition the partitions of a new one, whose tables differ.
Filter create_cuckoo_target(const Location& to, const CuckooOptions& options, bool overwrite,
                            OpenReport* report) {
  if (!to.in_redis()) return Filter::create(to, options, overwrite, report);
  Filter filter(create_redis_filter(to.servers, to.name, options, overwrite));
  report->created = true;
  return filter;
}

}  // namespace

CopyReport copy_filter(const Location& from, const Location& to, bool overwrite,
                       const CopyProgress& progress, Clock clock) {
  OpenOptions reading = OpenOptions::read_only();
  reading.clock = clock;
  const Filter source = Filter::open(from, reading);
  if (const auto& server = source.shape().server_filter) {
    throw InvalidArgument("filter " + from.describe() + " is " + server->kind +
                          ", whose bits the server's Bloom engine keeps in its own layout: it "
                          "cannot be copied byte for byte; create a redbloom filter and add its "
                          "items there");
  }
  const std::unique_ptr<ExactSet> source_exact =
      exact_set_exists(from) ? open_exact_set(from, source, /*writable=*/false) : nullptr;
  OpenReport created;
  const FilterShape& shape = source.shape();
  Filter target = shape.stream
                      ? Filter::create(to, *shape.stream, overwrite, &created, std::move(clock))
                  : shape.cuckoo ? create_cuckoo_target(to, *shape.cuckoo, overwrite, &created)
                                 : Filter::create(to, shape.params, overwrite, &created);
  CopyReport report;
  report.warnings = std::move(created.warnings);
  try {
    if (shape.stream) {
      report.bytes = copy_links(source.backend(), target.backend(), progress);
    } else if (shape.cuckoo) {
      report.bytes = copy_cuckoo_tables(source.backend(), target.backend(), progress);
    } else {
      copy_bits(source.store(), target.store(), progress);
      report.bytes = shape.params.total_bytes();
    }
    // A set left at the target by another filter describes other items.
    drop_stale_exact_set(to, target);
    if (source_exact) {
      // A file set made from a Redis set keeps only the bits the Redis set kept.
      std::unique_ptr<ExactSet> target_exact =
          to.kind == Location::Kind::file
              ? create_file_exact_set(to.path, /*overwrite=*/true, source_exact->fingerprint_mask())
              : create_exact_set(to, target, /*overwrite=*/true);
      copy_exact_set(*source_exact, *target_exact);
      target_exact->flush();
      report.exact = true;
      report.exact_entries = target_exact->entries();
      if (report.exact_entries != source_exact->entries()) {
        throw StorageError("copy of exact set " + source_exact->location() + " holds " +
                           std::to_string(report.exact_entries) + " entries, the source " +
                           std::to_string(source_exact->entries()) +
                           " (was either written to during the copy?)");
      }
    }
    target.flush();
  } catch (const Error& e) {
    // A half-copied filter would open fine and answer with false negatives: remove it.
    std::string outcome = "the incomplete copy was dropped";
    try {
      Filter::drop(to);
    } catch (const Error& drop_error) {
      outcome = "dropping the incomplete copy failed too (" + std::string(drop_error.what()) +
                "): drop " + to.describe() + " before using it";
    }
    throw StorageError(std::string(e.what()) + "; " + outcome);
  } catch (...) {
    try {
      Filter::drop(to);
    } catch (const Error&) {  // the caller checks what is left
    }
    throw;
  }
  return report;
}

bool same_redis_filter(const Location& a, const Location& b) {
  if (!a.in_redis() || !b.in_redis() || a.name != b.name) return false;
  std::set<std::string> seen;
  for (const RedisEndpoint& server : a.servers) seen.insert(RedisStore::keyspace_id(server));
  for (const RedisEndpoint& server : b.servers) {
    if (seen.count(RedisStore::keyspace_id(server)) != 0) return true;
  }
  return false;
}

}  // namespace redbloom
