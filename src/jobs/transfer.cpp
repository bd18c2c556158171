#include "redbloom/transfer.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
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

void copy_exact_set(const ExactSet& from, ExactSet& to) {
  if ((to.fingerprint_mask() & ~from.fingerprint_mask()) != 0) {
    throw InvalidArgument("cannot copy exact set " + from.location() + " into " + to.location() +
                          ": the target keeps more bits of each fingerprint than the source has");
  }
  from.for_each_fingerprint(
      [&](std::span<const std::uint64_t> batch) { (void)to.add_fingerprints(batch); });
}

CopyReport copy_filter(const Location& from, const Location& to, bool overwrite,
                       const CopyProgress& progress) {
  const Filter source = Filter::open(from, OpenOptions::read_only());
  if (const auto server = source.store().server_filter_info()) {
    throw InvalidArgument("filter " + from.describe() + " is " + server->kind +
                          ", whose bits the server's Bloom engine keeps in its own layout: it "
                          "cannot be copied byte for byte; create a redbloom filter and add its "
                          "items there");
  }
  if (source.store().stream_info()) {
    throw InvalidArgument("filter " + from.describe() +
                          " is windowed or growing: copying one is not supported (its slices "
                          "come and go); create the destination with the same options and add "
                          "the items there");
  }
  const std::unique_ptr<ExactSet> source_exact =
      exact_set_exists(from) ? open_exact_set(from, source, /*writable=*/false) : nullptr;
  OpenReport created;
  Filter target = Filter::create(to, source.params(), overwrite, &created);
  CopyReport report;
  report.warnings = std::move(created.warnings);
  try {
    copy_bits(source.store(), target.store(), progress);
    report.bytes = source.params().total_bytes();
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
