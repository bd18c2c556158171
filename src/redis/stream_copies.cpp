#include "stream_copies.hpp"

#include <algorithm>

#include "core/layout.hpp"

namespace redbloom::redis::stream {

OlderCopies::OlderCopies(std::span<const FilterParams> links,
                         std::span<const std::uint64_t> link_start, std::uint64_t partitions,
                         std::uint64_t max_bytes)
    : links_(links.begin(), links.end()),
      link_start_(link_start.begin(), link_start.end()),
      of_(partitions),
      max_bytes_(max_bytes) {}

std::vector<std::int64_t> OlderCopies::wanted(std::uint64_t p, std::int64_t newest,
                                              std::uint32_t older) {
  std::vector<Copy>& copies = of_[p];
  std::erase_if(copies, [&](const Copy& copy) {
    const bool gone = copy.slice < newest - older || copy.slice >= newest;
    if (gone) bytes_ -= copy.bytes.size();
    return gone;
  });
  std::vector<std::int64_t> missing;
  for (std::int64_t g = newest - 1; g >= newest - static_cast<std::int64_t>(older); --g) {
    const bool held = std::ranges::any_of(copies, [&](const Copy& c) { return c.slice == g; });
    if (held) continue;
    // A slice key is at least its header and first link: one that cannot fit is not read.
    if (link_start_[1] > kMaxKeyBytes || bytes_ + link_start_[1] > max_bytes_) {
      Copy declined;
      declined.slice = g;
      declined.declined = true;
      insert(p, std::move(declined));
    } else {
      missing.push_back(g);
    }
  }
  return missing;
}

void OlderCopies::keep(std::uint64_t p, std::int64_t slice, std::optional<std::string> bytes) {
  const std::uint64_t size = bytes ? bytes->size() : 0;
  // A key its header cannot explain is left to the script, which reports it.
  if (bytes && (size < kHeaderBytes || header_field(*bytes, 0) < 1 ||
                header_field(*bytes, 0) >= link_start_.size() ||
                size != link_start_[header_field(*bytes, 0)])) {
    return;
  }
  Copy copy;
  copy.slice = slice;
  if (size > kMaxKeyBytes || bytes_ + size > max_bytes_) {
    copy.declined = true;
  } else {
    copy.exists = bytes.has_value();
    if (bytes) copy.bytes = std::move(*bytes);
  }
  insert(p, std::move(copy));
}

void OlderCopies::insert(std::uint64_t p, Copy copy) {
  std::vector<Copy>& copies = of_[p];
  if (std::ranges::any_of(copies, [&](const Copy& c) { return c.slice == copy.slice; })) return;
  bytes_ += copy.bytes.size();
  const auto at = std::ranges::find_if(copies, [&](const Copy& c) { return c.slice < copy.slice; });
  copies.insert(at, std::move(copy));
}

void OlderCopies::forget_stale(std::uint64_t p, std::span<const std::int64_t> claimed,
                               std::string_view verdict) {
  for (std::size_t c = 0; c < claimed.size() && c < verdict.size(); ++c) {
    if (verdict[c] == '1') continue;
    std::erase_if(of_[p], [&](const Copy& copy) {
      const bool stale = copy.slice == claimed[c];
      if (stale) bytes_ -= copy.bytes.size();
      return stale;
    });
  }
}

namespace {

// Where an item's bits are in one link of a slice key: a blocked item's line, or a classic
// item's bits (Redis bit order: bit 0 is the top bit of byte 0).
struct Place {
  layout::BlockedLine line;
  std::vector<std::uint64_t> bits;
};

void place(const FilterParams& params, std::uint64_t start, const ItemHash& h, Place& out) {
  if (params.layout == Layout::blocked) {
    out.line = layout::blocked_line(h, params.partition_bits, params.hashes, start);
    return;
  }
  out.bits.clear();
  layout::classic_probes(h, params.partition_bits, params.hashes,
                         [&](std::uint64_t bit) { out.bits.push_back(8 * start + bit); });
}

bool holds_at(const FilterParams& params, const Place& at, const unsigned char* key) {
  if (params.layout == Layout::blocked) {
    const std::string_view pairs = at.line.pairs();
    for (std::size_t q = 0; q + 1 < pairs.size(); q += 2) {
      const auto mask = static_cast<unsigned char>(pairs[q + 1]);
      if ((key[at.line.first + static_cast<unsigned char>(pairs[q])] & mask) != mask) {
        return false;
      }
    }
    return true;
  }
  for (const std::uint64_t bit : at.bits) {
    if (((key[bit >> 3] >> (7 - (bit & 7))) & 1) == 0) return false;
  }
  return true;
}

}  // namespace

void OlderCopies::claim(std::uint64_t p, std::int64_t first, std::int64_t last,
                        std::span<const ItemHash> hashes, std::vector<Claim>& claims,
                        std::string& marks) const {
  claims.clear();
  marks.clear();
  std::vector<const Copy*> used;
  std::uint64_t links = 0;  // the most any claimed copy has
  for (const Copy& copy : of_[p]) {
    // A mark is one byte.
    if (copy.declined || copy.slice < first || copy.slice > last || copy.slice - first + 1 > 255) {
      continue;
    }
    used.push_back(&copy);
    claims.push_back(
        Claim{copy.slice, std::string_view(copy.bytes).substr(0, copy.exists ? kHeaderBytes : 0)});
    if (copy.exists) links = std::max(links, header_field(copy.bytes, 0));
  }
  if (claims.empty()) return;
  marks.assign(hashes.size(), '\0');
  // An item's place in link l is the same in every slice: worked out once. Its first link's
  // lines in the copies are requested a few items ahead, so that their misses overlap.
  constexpr std::size_t kAhead = 8;
  std::vector<Place> places(links);
  const auto request = [&](std::size_t i) {
    if (links == 0 || links_[0].layout != Layout::blocked) return;
    const std::uint64_t at =
        layout::blocked_line(hashes[i], links_[0].partition_bits, links_[0].hashes, link_start_[0])
            .first;
    for (const Copy* copy : used) {
      if (copy->exists) __builtin_prefetch(copy->bytes.data() + at);
    }
  };
  for (std::size_t i = 0; i < std::min(kAhead, hashes.size()); ++i) request(i);
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kAhead < hashes.size()) request(i + kAhead);
    for (std::uint64_t l = 0; l < links; ++l)
      place(links_[l], link_start_[l], hashes[i], places[l]);
    for (const Copy* copy : used) {  // newest first
      if (!copy->exists) continue;
      const auto* key = reinterpret_cast<const unsigned char*>(copy->bytes.data());
      const std::uint64_t count = header_field(copy->bytes, 0);
      bool found = false;
      for (std::uint64_t l = 0; l < count && !found; ++l)
        found = holds_at(links_[l], places[l], key);
      if (found) {
        marks[i] = static_cast<char>(copy->slice - first + 1);
        break;
      }
    }
  }
}

}  // namespace redbloom::redis::stream
