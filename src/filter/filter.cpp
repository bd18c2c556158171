#include "redbloom/filter.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/bitmap_kernels.hpp"
#include "filter/plain_backend.hpp"
#include "local/file_store.hpp"
#include "local/memory_store.hpp"
#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"
#include "redis/redis_store.hpp"
#include "redis/sharded_store.hpp"

namespace redbloom {
namespace {

enum class ChunkAccess { reads, writes };

// Calls `apply(chunk, offset)` for consecutive chunks of at most `chunk_items` items (the
// store's preferred batch). An IncompleteWrite from a chunk is rethrown with its committed
// count made relative to the whole call; for writes, any other storage failure after the
// first chunk is an IncompleteWrite too, since the chunks before it are committed.
template <class Apply>
void for_each_chunk(std::span<const std::string_view> items, std::size_t chunk_items,
                    ChunkAccess access, Apply&& apply) {
  chunk_items = std::max<std::size_t>(chunk_items, 1);
  for (std::size_t offset = 0; offset < items.size(); offset += chunk_items) {
    try {
      apply(items.subspan(offset, std::min(chunk_items, items.size() - offset)), offset);
    } catch (const CapacityExceeded& e) {
      if (offset == 0) throw;
      throw CapacityExceeded(e.what(), offset + e.committed());
    } catch (const IncompleteWrite& e) {
      if (offset == 0) throw;
      throw IncompleteWrite(e.what(), offset + e.committed());
    } catch (const StorageError& e) {
      if (offset == 0 || access == ChunkAccess::reads) throw;
      throw IncompleteWrite(e.what(), offset);
    }
  }
}

// How many of the flags are set (nonzero), eight bytes at a time: std::count's byte-by-byte
// compare, widened to 64-bit counts, cost as much per item as a batched in-cache lookup.
std::size_t count_flags(std::span<const std::uint8_t> flags) {
  constexpr std::uint64_t kLow7 = 0x7f7f7f7f7f7f7f7full;
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kEvenBytes = 0x00ff00ff00ff00ffull;
  std::size_t total = 0;
  std::size_t i = 0;
  while (i + 8 <= flags.size()) {
    // Each byte of `lanes` counts one byte position's set flags: at most 255 words a round.
    const std::size_t end = i + std::min<std::size_t>((flags.size() - i) / 8, 255) * 8;
    std::uint64_t lanes = 0;
    for (; i < end; i += 8) {
      std::uint64_t word;
      std::memcpy(&word, flags.data() + i, 8);
      // A byte's top bit: set iff the byte is nonzero.
      lanes += (((word & kLow7) + kLow7) | word) >> 7 & kOnes;
    }
    const std::uint64_t pairs = (lanes & kEvenBytes) + (lanes >> 8 & kEvenBytes);
    total += static_cast<std::size_t>((pairs * 0x0001000100010001ull) >> 48);
  }
  for (; i < flags.size(); ++i) total += flags[i] != 0;
  return total;
}

// Calls `apply(chunk, flags)` chunk by chunk with one output flag per item, written into
// `flags` when the caller gave room for them (or a scratch buffer when it gave none), and
// returns how many flags were set.
template <class Apply>
std::size_t for_each_flagged_chunk(std::span<const std::string_view> items,
                                   std::span<std::uint8_t> flags, std::size_t chunk_items,
                                   ChunkAccess access, Apply&& apply) {
  if (!flags.empty() && flags.size() < items.size()) {
    throw InvalidArgument("flag span holds " + std::to_string(flags.size()) + " entries for " +
                          std::to_string(items.size()) + " items");
  }
  std::vector<std::uint8_t> scratch(flags.empty() ? std::min(chunk_items, items.size()) : 0);
  std::size_t ones = 0;
  for_each_chunk(items, chunk_items, access,
                 [&](std::span<const std::string_view> chunk, std::size_t offset) {
                   const std::span<std::uint8_t> out =
                       flags.empty() ? std::span<std::uint8_t>(scratch.data(), chunk.size())
                                     : flags.subspan(offset, chunk.size());
                   apply(chunk, out);
                   ones += count_flags(out);
                 });
  return ones;
}

double estimated_items_from(const FilterParams& params, double ones) {
  const double m = static_cast<double>(params.total_bits());
  const double k = params.hashes;
  return params.layout == Layout::blocked ? blocked_estimated_items(m, k, ones)
                                          : classic_estimated_items(m, k, ones);
}

}  // namespace

Filter::Filter(std::unique_ptr<Store> store)
    : Filter(std::unique_ptr<FilterBackend>(std::make_unique<PlainBackend>(std::move(store)))) {}

Filter::Filter(std::unique_ptr<FilterBackend> backend) : backend_(std::move(backend)) {
  if (!backend_) throw InvalidArgument("Filter needs a backend");
  shape_ = backend_->shape();
  params_ = shape_.params;
  params_.capacity = shape_.capacity();
  params_.error_rate = shape_.error_rate();
  contains_one_ = backend_->direct_contains_one();
  add_one_ = backend_->direct_add_one();
}

Store& Filter::store() {
  if (Store* bitmap = backend_->bitmap()) return *bitmap;
  if (shape_.server_filter) {
    throw InvalidArgument("filter " + backend_->location() + " keeps its bits in the server's " +
                          "own Bloom engine, not in redbloom's layout: reading or writing its " +
                          "bits (export, import, copy, clear) cannot be done on it (adds, " +
                          "lookups and info work)");
  }
  if (shape_.cuckoo) {
    throw InvalidArgument("filter " + backend_->location() + " is " + shape_.describe() +
                          ": it keeps tables of fingerprints, not a bitmap (copies move its "
                          "tables: backend().cuckoo_tables())");
  }
  throw InvalidArgument("filter " + backend_->location() + " is " + shape_.describe() +
                        ": it keeps one bitmap per link, not one store");
}

const Store& Filter::store() const {
  return const_cast<Filter*>(this)->store();
}

Filter Filter::in_memory(const FilterParams& params) {
  return Filter(std::make_unique<MemoryStore>(params));
}

Filter Filter::create_file(const std::string& path, const FilterParams& params, bool overwrite) {
  return Filter(FileStore::create(path, params, overwrite));
}

Filter Filter::open_file(const std::string& path, FileAccess access) {
  return Filter(FileStore::open(path, access));
}

Filter Filter::create_redis(const RedisEndpoint& endpoint, const std::string& name,
                            const FilterParams& params, bool overwrite) {
  return Filter(RedisStore::create(endpoint, name, params, overwrite));
}

Filter Filter::open_redis(const RedisEndpoint& endpoint, const std::string& name) {
  return Filter(RedisStore::open(endpoint, name));
}

Filter Filter::create_redis(const std::vector<RedisEndpoint>& servers, const std::string& name,
                            const FilterParams& params, bool overwrite) {
  if (servers.size() == 1) return create_redis(servers[0], name, params, overwrite);
  return Filter(ShardedRedisStore::create(servers, name, params, overwrite));
}

Filter Filter::open_redis(const std::vector<RedisEndpoint>& servers, const std::string& name) {
  if (servers.size() == 1) return open_redis(servers[0], name);
  return Filter(ShardedRedisStore::open(servers, name));
}

std::size_t Filter::add_many(std::span<const std::string_view> items,
                             std::span<std::uint8_t> newly_added) {
  return for_each_flagged_chunk(items, newly_added, backend_->batch_items(), ChunkAccess::writes,
                                [&](auto chunk, auto out) { backend_->add(chunk, out); });
}

void Filter::load_many(std::span<const std::string_view> items) {
  for_each_chunk(
      items, backend_->bulk_batch_items(), ChunkAccess::writes,
      [&](std::span<const std::string_view> chunk, std::size_t) { backend_->load(chunk); });
}

std::size_t Filter::contains_many(std::span<const std::string_view> items,
                                  std::span<std::uint8_t> present) const {
  return for_each_flagged_chunk(items, present, backend_->bulk_batch_items(), ChunkAccess::reads,
                                [&](auto chunk, auto out) { backend_->contains(chunk, out); });
}

bool Filter::remove(std::string_view item) {
  std::uint8_t removed = 0;
  backend_->remove({&item, 1}, {&removed, 1});
  return removed != 0;
}

std::size_t Filter::remove_many(std::span<const std::string_view> items,
                                std::span<std::uint8_t> removed) {
  return for_each_flagged_chunk(items, removed, backend_->batch_items(), ChunkAccess::writes,
                                [&](auto chunk, auto out) { backend_->remove(chunk, out); });
}

std::uint32_t Filter::count(std::string_view item) const {
  std::uint32_t n = 0;
  backend_->count({&item, 1}, {&n, 1});
  return n;
}

void Filter::count_many(std::span<const std::string_view> items,
                        std::span<std::uint32_t> counts) const {
  if (counts.size() < items.size()) {
    throw InvalidArgument("count span holds " + std::to_string(counts.size()) + " entries for " +
                          std::to_string(items.size()) + " items");
  }
  for_each_chunk(items, backend_->bulk_batch_items(), ChunkAccess::reads,
                 [&](std::span<const std::string_view> chunk, std::size_t offset) {
                   backend_->count(chunk, counts.subspan(offset, chunk.size()));
                 });
}

FilterInfo Filter::info() const {
  FilterInfo info;
  info.params = params();
  info.shape = shape_;
  info.location = backend_->location();
  info.engines = backend_->engines();
  if (shape_.server_filter) {
    // Read now: the server's item count changes with every add.
    info.server_filter = backend_->server_filter_info().value_or(*shape_.server_filter);
    info.storage_bytes = backend_->storage_bytes();
    info.estimated_items = static_cast<double>(info.server_filter->items.value_or(0));
    return info;
  }
  info.created_unix_ns = backend_->created_unix_ns();
  info.storage_bytes = backend_->storage_bytes();
  if (shape_.cuckoo) {
    info.cuckoo = backend_->cuckoo_info();
    if (info.cuckoo) {
      info.estimated_items = static_cast<double>(info.cuckoo->items);
      info.estimated_error_rate = info.cuckoo->error_rate_now;
    }
    return info;
  }
  info.set_bits = backend_->count_set_bits();
  info.stream = backend_->stream_info();
  if (info.stream) {
    // Counted rather than estimated: each link knows how many adds set a bit of it.
    const double bits = 8.0 * static_cast<double>(info.stream->bytes);
    info.fill_ratio = bits > 0 ? static_cast<double>(info.set_bits) / bits : 0.0;
    info.estimated_items = 0;
    for (const StreamSegment& segment : info.stream->segments) {
      info.estimated_items += static_cast<double>(segment.items);
    }
    info.estimated_error_rate = info.stream->error_rate_now;
    return info;
  }
  const double m = static_cast<double>(info.params.total_bits());
  const double k = info.params.hashes;
  const double ones = static_cast<double>(info.set_bits);
  info.fill_ratio = ones / m;
  info.estimated_items = estimated_items_from(info.params, ones);
  info.estimated_error_rate = info.params.layout == Layout::blocked
                                  ? blocked_false_positive_rate(m, k, info.estimated_items)
                                  : std::pow(info.fill_ratio, k);
  return info;
}

double Filter::estimate_items(std::uint64_t sample_bytes) const {
  if (shape_.cuckoo) {
    const std::optional<CuckooInfo> now = backend_->cuckoo_info();
    return now ? static_cast<double>(now->items) : 0.0;
  }
  if (shape_.server_filter) {
    const ServerFilterInfo now = backend_->server_filter_info().value_or(*shape_.server_filter);
    return static_cast<double>(now.items.value_or(0));
  }
  if (const std::optional<StreamInfo> stream = backend_->stream_info()) {
    double items = 0;
    for (const StreamSegment& segment : stream->segments) items += double(segment.items);
    return items;
  }
  const FilterParams& p = params();
  if (sample_bytes >= p.total_bytes()) {
    return estimated_items_from(p, static_cast<double>(backend_->count_set_bits()));
  }
  // Up to 16 partitions, evenly spaced; in each, one run of whole 64-byte blocks at a spread
  // offset (the hash spreads items evenly, so any run is as good as another).
  const std::uint64_t sampled = std::min<std::uint64_t>(p.partitions, 16);
  const std::uint64_t block_bytes = kBlockBits / 8;
  const std::uint64_t run =
      std::max(block_bytes, sample_bytes / sampled / block_bytes * block_bytes);
  const std::uint64_t runs_per_partition = p.partition_bytes() / run;
  std::vector<std::uint8_t> buffer(run);
  std::uint64_t ones = 0;
  std::uint64_t bits = 0;
  for (std::uint64_t i = 0; i < sampled; ++i) {
    const std::uint64_t partition = i * p.partitions / sampled;
    const std::uint64_t offset = runs_per_partition > 1 ? (i * 7919 % runs_per_partition) * run : 0;
    const std::uint64_t size = std::min(run, p.partition_bytes() - offset);
    std::span<std::uint8_t> out(buffer.data(), size);
    store().read_bytes(partition, offset, out);
    ones += kernels::count_ones(out);
    bits += size * 8;
  }
  const double fill = static_cast<double>(ones) / static_cast<double>(bits);
  return estimated_items_from(p, fill * static_cast<double>(p.total_bits()));
}

}  // namespace redbloom
