#include "local/stream_store.hpp"

#include <algorithm>
#include <limits>

#include "core/bitmap_kernels.hpp"
#include "core/filter_shape.hpp"
#include "local/memory_store.hpp"
#include "redbloom/error.hpp"

namespace redbloom {
namespace {

// Per thread, kept between batches.
struct Scratch {
  std::vector<ItemHash> hashes;
  std::vector<std::uint32_t> unknown;
  std::vector<std::uint32_t> todo;
  std::vector<std::uint8_t> flags;
  std::vector<std::uint8_t> elsewhere;
  std::vector<const BitmapStore*> links;
  std::vector<const kernels::Bitmap*> bitmaps;
};
Scratch& scratch() {
  thread_local Scratch instance;
  return instance;
}

void all_items(std::vector<std::uint32_t>& order, std::size_t n) {
  order.resize(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
}

// Drops from `order` the items some link of `links` holds, marking them in `found` (by item
// index) when given. Links of equal parameters (every slice's first link) are tested in one
// pass: an item's probes are computed once and its lines in all of them fetched together.
void drop_present(std::span<const BitmapStore* const> links, std::span<const ItemHash> hashes,
                  std::vector<std::uint32_t>& order, std::vector<std::uint8_t>& flags,
                  std::uint8_t* found) {
  std::vector<bool> tested(links.size(), false);
  std::vector<const kernels::Bitmap*> group;
  for (std::size_t i = 0; i < links.size() && !order.empty(); ++i) {
    if (tested[i]) continue;
    group.clear();
    for (std::size_t j = i; j < links.size(); ++j) {
      if (!tested[j] && links[j]->params() == links[i]->params()) {
        tested[j] = true;
        group.push_back(&links[j]->bitmap());
      }
    }
    flags.resize(order.size());
    kernels::test_any(group, hashes, order, flags.data());
    std::size_t kept = 0;
    for (std::size_t j = 0; j < order.size(); ++j) {
      if (found != nullptr) found[order[j]] |= flags[j];
      order[kept] = order[j];
      kept += flags[j] == 0;
    }
    order.resize(kept);
  }
}

void drop_present(const BitmapStore& link, std::span<const ItemHash> hashes,
                  std::vector<std::uint32_t>& order, std::vector<std::uint8_t>& flags) {
  const BitmapStore* one = &link;
  drop_present({&one, 1}, hashes, order, flags, nullptr);
}

// Rethrows the exception in flight; a storage failure (a full disk while a link is made, a
// manifest that cannot be read or written) as an IncompleteWrite saying that items
// [0, committed) of the call were added and the rest not, as every store's failed write does.
[[noreturn]] void rethrow_with_committed(std::size_t committed) {
  try {
    throw;
  } catch (const IncompleteWrite&) {
    throw;
  } catch (const StorageError& e) {
    throw IncompleteWrite(std::string(e.what()) + "; the items before the one it stopped at " +
                              "were added, it and the rest not",
                          committed);
  }
}

class MemoryStreamStore final : public LocalStreamStore {
 public:
  MemoryStreamStore(const StreamShape& shape, Clock clock)
      : LocalStreamStore(shape, std::move(clock)) {}
  [[nodiscard]] std::string location() const override { return "memory (stream)"; }
  [[nodiscard]] std::uint64_t storage_bytes() const override {
    std::uint64_t total = 0;
    for (const Link& link : links_) total += link.bits->storage_bytes();
    return total;
  }
  void flush() override {}

 protected:
  void begin_write() override {}
  void end_write() noexcept override {}
  void begin_read() const override {}
  void add_link(std::int64_t slice, std::uint32_t link, std::int64_t retired_below) override {
    auto bits = std::make_unique<MemoryStore>(stream_shape().link_params(link));
    std::erase_if(links_, [&](const Link& l) { return l.slice < retired_below; });
    links_.push_back(Link{slice, link, now(), 0, std::move(bits)});
  }
};

}  // namespace

LocalStreamStore::LocalStreamStore(const StreamShape& shape, Clock clock)
    : shape_(shape), clock_(std::move(clock)), first_(shape.link_params(0)) {}

void LocalStreamStore::add(std::span<const std::string_view> items,
                           std::span<std::uint8_t> newly_added) {
  if (newly_added.size() < items.size()) {
    throw InvalidArgument("add: output span holds " + std::to_string(newly_added.size()) +
                          " flags for " + std::to_string(items.size()) + " items");
  }
  std::size_t committed = 0;
  try {
    begin_write();
  } catch (...) {
    rethrow_with_committed(0);
  }
  try {
    add_locked(items, newly_added.data(), committed);
  } catch (...) {
    end_write();
    rethrow_with_committed(committed);
  }
  end_write();
}

void LocalStreamStore::load(std::span<const std::string_view> items) {
  std::vector<std::uint8_t> flags(items.size());
  add(items, flags);
}

void LocalStreamStore::add_locked(std::span<const std::string_view> items,
                                  std::uint8_t* newly_added, std::size_t& committed) {
  const std::size_t n = items.size();
  std::fill_n(newly_added, n, std::uint8_t{0});
  std::int64_t current = shape_.slice_at(now());
  if (!links_.empty()) current = std::max(current, links_.back().slice);
  if (links_.empty() || links_.back().slice < current) open_slice(current);

  Scratch& work = scratch();
  work.hashes.resize(n);
  kernels::hash_items(items, work.hashes.data());
  if (add_in_one_pass(current, newly_added)) return;
  work.elsewhere.assign(n, 0);
  // Older slices: an item found there is not new but is still set in this slice.
  work.links.clear();
  for (const Link& link : links_) {
    if (link.slice < current) work.links.push_back(link.bits.get());
  }
  all_items(work.unknown, n);
  drop_present(work.links, work.hashes, work.unknown, work.flags, work.elsewhere.data());
  // The current slice's older links: an item there needs no write.
  work.links.clear();
  for (std::size_t l = 0; l + 1 < links_.size(); ++l) {
    if (links_[l].slice == current) work.links.push_back(links_[l].bits.get());
  }
  all_items(work.todo, n);
  drop_present(work.links, work.hashes, work.todo, work.flags, nullptr);
  std::size_t pos = 0;
  while (pos < work.todo.size()) {
    Link* newest = &links_.back();
    const std::uint64_t capacity = shape_.link_capacity(newest->link);
    if (newest->items >= capacity) {
      // Items before this one are settled: set, or found in a link.
      committed = work.todo[pos];
      grow(committed);
      // The items left have not met the link that just filled up.
      work.todo.erase(work.todo.begin(), work.todo.begin() + static_cast<std::ptrdiff_t>(pos));
      pos = 0;
      drop_present(*links_[links_.size() - 2].bits, work.hashes, work.todo, work.flags);
      continue;
    }
    const std::size_t chunk = static_cast<std::size_t>(
        std::min<std::uint64_t>(capacity - newest->items, work.todo.size() - pos));
    const std::span<const std::uint32_t> owned(work.todo.data() + pos, chunk);
    work.flags.resize(chunk);
    kernels::test_and_set(newest->bits->bitmap(), work.hashes, owned, work.flags.data());
    for (std::size_t j = 0; j < chunk; ++j) {
      newest->items += work.flags[j];
      newly_added[owned[j]] = work.flags[j] & (work.elsewhere[owned[j]] ^ 1);
    }
    pos += chunk;
  }
}

// The steady state of a window: the current slice has one link with room for the batch, and
// every older slice one link of the same parameters. Then one pass per item looks it up in the
// older slices and tests-and-sets it in the current one.
bool LocalStreamStore::add_in_one_pass(std::int64_t current, std::uint8_t* newly_added) {
  Scratch& work = scratch();
  Link& newest = links_.back();
  const std::size_t n = work.hashes.size();
  if (newest.items + n > shape_.link_capacity(newest.link)) return false;
  work.bitmaps.clear();
  for (std::size_t l = 0; l + 1 < links_.size(); ++l) {
    const Link& link = links_[l];
    if (link.slice == current || !(link.bits->params() == newest.bits->params())) return false;
    work.bitmaps.push_back(&link.bits->bitmap());
  }
  all_items(work.todo, n);
  work.flags.resize(n);
  kernels::test_any_and_set(work.bitmaps, newest.bits->bitmap(), work.hashes, work.todo,
                            work.flags.data());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t fresh_here = work.flags[i] >> 1;
    newest.items += fresh_here;
    newly_added[i] = fresh_here & ~work.flags[i] & 1;
  }
  return true;
}

void LocalStreamStore::open_slice(std::int64_t slice) {
  const std::int64_t retired_below = shape_.oldest_live(slice);
  std::uint64_t kept = 0;
  for (const Link& link : links_) {
    if (link.slice >= retired_below) kept += link.bits->params().total_bytes();
  }
  const std::uint64_t limit = shape_.options().max_bytes;
  if (limit != 0 && kept + first_.total_bytes() > limit) {
    throw CapacityExceeded(location() + ": a new slice would take the live links to " +
                               format_bytes(double(kept + first_.total_bytes())) +
                               ", over the limit of " + format_bytes(double(limit)) +
                               "; nothing of this batch was added",
                           0);
  }
  try {
    add_link(slice, 0, retired_below);
  } catch (const IncompleteWrite&) {
    throw;
  } catch (const InvalidArgument& e) {
    // The store's own limit (a file filter's manifest holds at most so many links).
    throw CapacityExceeded(location() + ": cannot start a new slice: " + e.what() +
                               "; nothing of this batch was added",
                           0);
  } catch (const StorageError& e) {
    throw IncompleteWrite(location() + ": cannot start a new slice: " + e.what() +
                              "; nothing of this batch was added",
                          0);
  }
}

void LocalStreamStore::grow(std::size_t committed) {
  const Link& newest = links_.back();
  const std::uint32_t next = newest.link + 1;
  const std::string done = "; the items before it were added, it and the rest not";
  FilterParams params;
  try {
    params = shape_.link_params(next);
  } catch (const InvalidArgument& e) {
    throw CapacityExceeded(location() + ": cannot grow: " + e.what() + done, committed);
  }
  const std::uint64_t limit = shape_.options().max_bytes;
  if (limit != 0 && live_bytes() + params.total_bytes() > limit) {
    throw CapacityExceeded(location() + ": growing to link " + std::to_string(next) +
                               " would take the live links to " +
                               format_bytes(double(live_bytes() + params.total_bytes())) +
                               ", over the limit of " + format_bytes(double(limit)) + done,
                           committed);
  }
  try {
    add_link(newest.slice, next, std::numeric_limits<std::int64_t>::min());
  } catch (const IncompleteWrite&) {
    throw;
  } catch (const InvalidArgument& e) {
    throw CapacityExceeded(
        location() + ": cannot grow to link " + std::to_string(next) + ": " + e.what() + done,
        committed);
  } catch (const StorageError& e) {
    throw IncompleteWrite(
        location() + ": cannot grow to link " + std::to_string(next) + ": " + e.what() + done,
        committed);
  }
}

std::uint64_t LocalStreamStore::live_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const Link& link : links_) total += link.bits->params().total_bytes();
  return total;
}

void LocalStreamStore::contains(std::span<const std::string_view> items,
                                std::span<std::uint8_t> present) const {
  if (present.size() < items.size()) {
    throw InvalidArgument("contains: output span holds " + std::to_string(present.size()) +
                          " flags for " + std::to_string(items.size()) + " items");
  }
  begin_read();
  const std::size_t n = items.size();
  std::fill_n(present.data(), n, std::uint8_t{0});
  if (links_.empty()) return;
  const std::int64_t oldest = oldest_live_now();
  Scratch& work = scratch();
  work.hashes.resize(n);
  kernels::hash_items(items, work.hashes.data());
  work.links.clear();
  for (const Link& link : links_) {
    if (link.slice >= oldest) work.links.push_back(link.bits.get());
  }
  all_items(work.unknown, n);
  drop_present(work.links, work.hashes, work.unknown, work.flags, present.data());
}

std::uint64_t LocalStreamStore::count_set_bits() const {
  begin_read();
  if (links_.empty()) return 0;
  const std::int64_t oldest = oldest_live_now();
  std::uint64_t total = 0;
  for (const Link& link : links_) {
    if (link.slice >= oldest) total += link.bits->count_set_bits();
  }
  return total;
}

std::int64_t LocalStreamStore::oldest_live_now() const {
  return shape_.oldest_live(std::max(shape_.slice_at(now()), links_.back().slice));
}

FilterShape LocalStreamStore::shape() const {
  return shape_of(shape_);
}

const LocalStreamStore::Link& LocalStreamStore::find_link(std::int64_t slice,
                                                          std::uint32_t link) const {
  for (const Link& l : links_) {
    if (l.slice == slice && l.link == link) return l;
  }
  throw StorageError(location() + ": link " + std::to_string(link) + " of slice " +
                     std::to_string(slice) + " is not there (deleted during the copy?)");
}

std::vector<SliceCopy> LocalStreamStore::live_slices() const {
  begin_read();
  std::vector<SliceCopy> slices;
  if (links_.empty()) return slices;
  const std::int64_t oldest = oldest_live_now();
  const std::uint64_t partitions = shape_.partitions();
  for (const Link& link : links_) {
    if (link.slice < oldest) continue;
    if (slices.empty() || slices.back().slice != link.slice) {
      slices.push_back(
          SliceCopy{link.slice, {}, std::vector<std::vector<std::uint64_t>>(partitions)});
    }
    SliceCopy& slice = slices.back();
    slice.created_unix_ns.push_back(link.created_unix_ns);
    for (std::uint64_t p = 0; p < partitions; ++p) {
      slice.items[p].push_back(link.items / partitions + (p < link.items % partitions ? 1 : 0));
    }
  }
  return slices;
}

void LocalStreamStore::read_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                                 std::uint64_t offset, std::span<std::uint8_t> out) const {
  begin_read();
  if (!links_.empty() && slice < oldest_live_now()) {
    // It left the window during the copy (a writer may have deleted it): its items are
    // forgotten, at the target too.
    check_byte_range(shape_.link_params(link), partition, offset, out.size());
    std::fill(out.begin(), out.end(), std::uint8_t{0});
    return;
  }
  find_link(slice, link).bits->read_bytes(partition, offset, out);
}

void LocalStreamStore::restore_slices(std::span<const SliceCopy> slices) {
  begin_write();
  try {
    if (!links_.empty()) {
      throw InvalidArgument(location() + " already holds slices: a copy goes into a new filter");
    }
    for (const SliceCopy& slice : slices) {
      for (std::uint32_t l = 0; l < slice.created_unix_ns.size(); ++l) {
        std::uint64_t items = 0;
        for (const auto& counts : slice.items) items += l < counts.size() ? counts[l] : 0;
        add_link(slice.slice, l, std::numeric_limits<std::int64_t>::min());
        links_.back().created_unix_ns = slice.created_unix_ns[l];
        links_.back().items = items;
      }
    }
  } catch (...) {
    end_write();
    throw;
  }
  end_write();
}

void LocalStreamStore::write_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                                  std::uint64_t offset, std::span<const std::uint8_t> bytes) {
  find_link(slice, link).bits->write_bytes(partition, offset, bytes);
}

std::optional<StreamInfo> LocalStreamStore::stream_info() const {
  begin_read();
  StreamInfo info;
  info.options = shape_.options();
  info.now_unix_ns = now();
  if (links_.empty()) return info;
  const std::int64_t oldest =
      shape_.oldest_live(std::max(shape_.slice_at(info.now_unix_ns), links_.back().slice));
  std::vector<std::pair<std::uint32_t, std::uint64_t>> rates;
  for (const Link& link : links_) {
    if (link.slice < oldest) continue;
    const FilterParams& p = link.bits->params();
    StreamSegment segment;
    segment.slice = link.slice;
    segment.link = link.link;
    segment.created_unix_ns = link.created_unix_ns;
    segment.expires_unix_ns = shape_.retire_ns(link.slice);
    segment.items = link.items;
    segment.capacity = shape_.link_capacity(link.link);
    segment.bytes = p.total_bytes();
    segment.error_rate_now = expected_false_positive_rate(p, double(link.items));
    segment.partitions = p.partitions;
    info.bytes += segment.bytes;
    rates.emplace_back(link.link, link.items);
    info.segments.push_back(segment);
  }
  info.error_rate_now = shape_.compound_rate(rates);
  return info;
}

std::unique_ptr<FilterBackend> make_memory_stream_store(const StreamShape& shape, Clock clock) {
  return std::make_unique<MemoryStreamStore>(shape, std::move(clock));
}

}  // namespace redbloom
