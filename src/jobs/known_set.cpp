#include "redbloom/known_set.hpp"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "redbloom/error.hpp"

namespace redbloom {

KnownSet::KnownSet(Filter filter, std::unique_ptr<ExactSet> exact)
    : filter_(std::move(filter)), exact_(std::move(exact)) {}

namespace {

// The filter `make(overwrite)` creates at `location`, with a new companion if `exact`.
template <class Make>
KnownSet create_with(const Location& location, bool exact, bool overwrite, Make&& make) {
  // A replaced filter's companion describes other items: it goes too (before anything is
  // replaced, so that a companion that cannot be removed leaves the old pair as it was).
  if (overwrite && exact_set_exists(location)) drop_exact_set(location);
  Filter filter = make();
  if (!exact) return {std::move(filter), nullptr};
  std::unique_ptr<ExactSet> companion;
  try {
    companion = create_exact_set(location, filter);
  } catch (...) {
    // No filter without the companion asked for (a leftover companion refused, say).
    try {
      Filter::drop(location);
    } catch (const Error&) {  // the companion's error says more
    }
    throw;
  }
  return {std::move(filter), std::move(companion)};
}

}  // namespace

KnownSet KnownSet::create(const Location& location, const FilterParams& params, bool exact,
                          bool overwrite) {
  return create_with(location, exact, overwrite,
                     [&] { return Filter::create(location, params, overwrite); });
}

KnownSet KnownSet::create(const Location& location, const CuckooOptions& cuckoo, bool exact,
                          bool overwrite) {
  return create_with(location, exact, overwrite,
                     [&] { return Filter::create(location, cuckoo, overwrite); });
}

KnownSet KnownSet::open(const Location& location, bool exact) {
  Filter filter = Filter::open(location);
  std::unique_ptr<ExactSet> companion = exact ? open_exact_set(location, filter) : nullptr;
  return {std::move(filter), std::move(companion)};
}

KnownSet KnownSet::create_file(const std::string& path, const FilterParams& params, bool exact,
                               bool overwrite) {
  return create(Location::file(path), params, exact, overwrite);
}

KnownSet KnownSet::open_file(const std::string& path, bool exact) {
  return open(Location::file(path), exact);
}

KnownSet KnownSet::create_redis(const RedisEndpoint& endpoint, const std::string& name,
                                const FilterParams& params, bool exact, bool overwrite) {
  return create(Location::redis({endpoint}, name), params, exact, overwrite);
}

KnownSet KnownSet::open_redis(const RedisEndpoint& endpoint, const std::string& name, bool exact) {
  return open(Location::redis({endpoint}, name), exact);
}

void KnownSet::add_batch(std::span<const std::string_view> items) {
  if (exact_) {
    add_with_exact_set(filter_, *exact_, items);
  } else {
    filter_.load_many(items);
  }
  added_ += items.size();
}

std::size_t add_with_exact_set(Filter& filter, ExactSet& exact,
                               std::span<const std::string_view> items,
                               std::span<std::uint8_t> newly_added) {
  if (!newly_added.empty() && newly_added.size() < items.size()) {
    throw InvalidArgument("add: flag span too small");
  }
  if (!filter.shape().cuckoo) {
    exact.add(items);
    if (newly_added.empty()) {
      filter.load_many(items);
      return 0;
    }
    return filter.add_many(items, newly_added);
  }
  // A test-and-set add would give two items with one fingerprint one copy between them, and
  // removing one would take the other's. A racing adder of the same item may store a second
  // copy: stale, like a crash's.
  std::vector<std::uint8_t> held(items.size());
  exact.contains(items, held);
  std::vector<std::string_view> fresh;
  std::vector<std::size_t> where;
  std::unordered_set<std::string_view> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!newly_added.empty()) newly_added[i] = 0;
    if (!held[i] && seen.insert(items[i]).second) {
      fresh.push_back(items[i]);
      where.push_back(i);
    }
  }
  try {
    filter.backend().insert(fresh);
  } catch (const IncompleteWrite& e) {
    // The leading items have their copies: their entries too, so that they can be removed.
    exact.add(std::span<const std::string_view>(fresh).first(e.committed()));
    throw;
  }
  exact.add(fresh);
  if (!newly_added.empty()) {
    for (const std::size_t i : where) newly_added[i] = 1;
  }
  return fresh.size();
}

KnownSet::RemoveResult KnownSet::remove(std::span<const std::string_view> items,
                                        std::span<std::uint8_t> removed) {
  if (!removed.empty() && removed.size() < items.size()) {
    throw InvalidArgument("remove: flag span too small");
  }
  // A Bloom filter's refusal, Filter::remove's own words, before the companion is touched.
  if (!filter_.shape().cuckoo) filter_.backend().remove({}, {});
  if (!exact_) {
    throw InvalidArgument("filter " + filter_.backend().location() +
                          " has no exact set: removes checked against it need one (create the "
                          "filter with --exact); a remove without it can make another item "
                          "absent when the item removed was never added");
  }
  // The companion first, then the filter. A crash between the two leaves the item in the
  // filter alone: exact answers call it missing (it was being removed), and a second remove is
  // refused, so its copy stays as a stale fingerprint (a false positive). The other order
  // would leave it in the companion without its copy, and a second remove, let through, would
  // take the copy of another item with the same fingerprint: a false negative. The filter
  // clears only a copy that can be no other item's (remove_known).
  std::vector<std::uint8_t> flags(items.size());
  exact_->remove(items, flags);
  std::vector<std::string_view> gone;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (flags[i]) gone.push_back(items[i]);
  }
  std::vector<std::uint8_t> cleared(gone.size());
  filter_.backend().remove_known(gone, cleared);
  if (!removed.empty()) std::copy(flags.begin(), flags.end(), removed.begin());
  const auto left = static_cast<std::uint64_t>(std::count(cleared.begin(), cleared.end(), 0));
  const RemoveResult result{gone.size(), items.size() - gone.size(), left};
  removed_ += result.removed;
  refused_ += result.refused;
  left_in_filter_ += result.left_in_filter;
  return result;
}

std::size_t KnownSet::missing_batch(std::span<const std::string_view> items,
                                    std::span<std::uint8_t> missing, Mode mode) {
  if (missing.size() < items.size()) throw InvalidArgument("missing_batch: flag span too small");
  if (mode == Mode::exact && !exact_) {
    throw InvalidArgument("exact answers need the filter's exact set (build it with --exact)");
  }
  std::vector<std::uint8_t> present(items.size());
  filter_.contains_many(items, present);
  std::size_t count = 0;
  if (mode == Mode::exact) {
    // Only the items the filter calls present touch the companion.
    std::vector<std::string_view> candidates;
    std::vector<std::size_t> where;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (present[i]) {
        candidates.push_back(items[i]);
        where.push_back(i);
      }
    }
    std::vector<std::uint8_t> confirmed(candidates.size());
    exact_->contains(candidates, confirmed);
    for (std::size_t j = 0; j < candidates.size(); ++j) {
      if (!confirmed[j]) {
        present[where[j]] = 0;
        ++false_positives_;
      }
    }
    verified_ += candidates.size();
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    missing[i] = present[i] ? 0 : 1;
    count += missing[i];
  }
  checked_ += items.size();
  missing_ += count;
  return count;
}

KnownSet::Stats KnownSet::stats(bool measure_storage) const {
  Stats s;
  s.filter = filter_.info();
  s.added = added_;
  s.checked = checked_;
  s.missing = missing_;
  s.verified = verified_;
  s.false_positives = false_positives_;
  s.removed = removed_;
  s.refused = refused_;
  s.left_in_filter = left_in_filter_;
  if (exact_) {
    s.has_exact = true;
    s.exact_entries = exact_->entries();
    if (measure_storage) s.exact_bytes = exact_->storage_bytes();
    s.false_match_probability = exact_->false_match_probability();
  }
  return s;
}

void KnownSet::clear() {
  if (CuckooTables* tables = filter_.backend().cuckoo_tables()) {
    // A cuckoo filter's tables, each overwritten with zeros (empty slots).
    const std::vector<std::uint32_t> counts = tables->link_counts();
    for (std::uint32_t partition = 0; partition < counts.size(); ++partition) {
      for (std::uint32_t link = 0; link < counts[partition]; ++link) {
        const std::vector<std::uint8_t> zeros(tables->read_table(partition, link).size());
        tables->write_table(partition, link, zeros);
      }
    }
    if (exact_) exact_->clear();
    flush();
    return;
  }
  const FilterParams& p = filter_.params();
  std::vector<std::uint8_t> zeros(std::min<std::uint64_t>(p.partition_bytes(), 8u << 20));
  for (std::uint64_t partition = 0; partition < p.partitions; ++partition) {
    for (std::uint64_t at = 0; at < p.partition_bytes(); at += zeros.size()) {
      const std::size_t n = std::min<std::uint64_t>(zeros.size(), p.partition_bytes() - at);
      filter_.store().write_bytes(partition, at, {zeros.data(), n});
    }
  }
  if (exact_) exact_->clear();
  flush();
}

void KnownSet::flush() {
  if (exact_) exact_->flush();
  filter_.flush();
}

}  // namespace redbloom
