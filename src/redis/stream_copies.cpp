#include "stream_copies.hpp"

#include <algorithm>

#include "core/layout.hpp"

namespace redbloom::redis::stream {
namespace {

// The header fields a copy's claim covers (stream_script.hpp): each copied link's item count and
// creation time, and for the current slice's first links the creation time of the link after
// them, when the key had one.
std::string claim_fields(const std::string& bytes, std::uint32_t links, bool whole) {
  if (links == 0) return {};
  std::string fields = bytes.substr(8, 16 * std::size_t{links});
  if (!whole && header_field(bytes, 0) > links)
    fields += bytes.substr(16 * std::size_t{links} + 16, 8);
  return fields;
}

}  // namespace

OlderCopies::OlderCopies(std::span<const FilterParams> links,
                         std::span<const std::uint64_t> link_start, std::uint64_t partitions,
                         std::uint64_t max_bytes)
    : links_(links.begin(), links.end()),
      link_start_(link_start.begin(), link_start.end()),
      of_(partitions),
      sent_(partitions, 0),
      max_bytes_(max_bytes) {}

std::vector<OlderCopies::Read> OlderCopies::wanted(std::uint64_t p, std::int64_t newest,
                                                   std::uint32_t older, std::uint32_t newest_links,
                                                   std::uint64_t items) {
  sent_[p] += items;
  const std::uint32_t frozen = older == 0 && newest_links > 1 ? newest_links - 1 : 0;
  std::vector<Copy>& copies = of_[p];
  std::erase_if(copies, [&](const Copy& copy) {
    const bool gone = copy.slice < newest - older || copy.slice > newest ||
                      (copy.slice == newest && (copy.whole || copy.links < frozen)) ||
                      (copy.slice < newest && !copy.whole);
    if (gone) bytes_ -= copy.bytes.size();
    return gone;
  });
  std::vector<Read> missing;
  const auto ask = [&](const Read& read, std::uint64_t least_bytes) {
    const bool held =
        std::ranges::any_of(copies, [&](const Copy& c) { return c.slice == read.slice; });
    if (held || sent_[p] * kBytesPerItem < least_bytes) return;
    if (least_bytes > kMaxKeyBytes || bytes_ + least_bytes > max_bytes_) {
      decline(p, read);
    } else {
      missing.push_back(read);
    }
  };
  if (frozen > 0) ask({newest, frozen}, link_start_[frozen]);
  // An older slice key is at least its header and first link.
  for (std::int64_t g = newest - 1; g >= newest - static_cast<std::int64_t>(older); --g) {
    ask({g, 0}, link_start_[1]);
  }
  return missing;
}

std::vector<std::string> OlderCopies::read_command(const Read& read, const std::string& key) const {
  if (read.links == 0) return {"GET", key};
  return {"GETRANGE", key, "0", std::to_string(link_start_[read.links] - 1)};
}

void OlderCopies::keep(std::uint64_t p, const Read& read, std::optional<std::string> bytes) {
  const std::uint64_t size = bytes ? bytes->size() : 0;
  Copy copy;
  copy.slice = read.slice;
  copy.whole = read.links == 0;
  if (!copy.whole) {
    // The current slice's first links: exactly their bytes, or nothing is kept.
    if (!bytes || size != link_start_[read.links]) return;
    copy.links = read.links;
  } else if (bytes) {
    // A key its header cannot explain is left to the script, which reports it.
    const std::uint64_t links = size < kHeaderBytes ? 0 : header_field(*bytes, 0);
    if (links < 1 || links >= link_start_.size() || size != link_start_[links]) return;
    copy.links = static_cast<std::uint32_t>(links);
  }
  if (size > kMaxKeyBytes || bytes_ + size > max_bytes_) {
    copy.declined = true;
  } else if (bytes) {
    copy.bytes = std::move(*bytes);
    copy.fields = claim_fields(copy.bytes, copy.links, copy.whole);
  }
  insert(p, std::move(copy));
}

void OlderCopies::keep_reply(std::uint64_t p, const Read& read, const redisReply& reply) {
  if (reply.type == REDIS_REPLY_STRING) {
    keep(p, read, std::string(reply.str, reply.len));
  } else if (reply.type == REDIS_REPLY_NIL) {
    keep(p, read, std::nullopt);
  } else {
    decline(p, read);
  }
}

void OlderCopies::decline(std::uint64_t p, const Read& read) {
  Copy declined;
  declined.slice = read.slice;
  declined.whole = read.links == 0;
  declined.links = read.links;
  declined.declined = true;
  insert(p, std::move(declined));
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

std::uint32_t links_claimed(std::span<const Claim> claims, std::int64_t current,
                            std::uint32_t older) noexcept {
  std::uint32_t covered = 0;
  std::uint32_t older_claimed = 0;
  for (const Claim& claim : claims) {
    if (claim.slice == current) covered = claim.links;
    if (claim.slice < current && claim.slice >= current - std::int64_t{older}) ++older_claimed;
  }
  return older_claimed == older ? covered : 0;
}

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
    claims.push_back(Claim{copy.slice, copy.links, copy.fields});
    links = std::max<std::uint64_t>(links, copy.links);
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
      if (copy->links > 0) __builtin_prefetch(copy->bytes.data() + at);
    }
  };
  for (std::size_t i = 0; i < std::min(kAhead, hashes.size()); ++i) request(i);
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kAhead < hashes.size()) request(i + kAhead);
    for (std::uint64_t l = 0; l < links; ++l)
      place(links_[l], link_start_[l], hashes[i], places[l]);
    for (const Copy* copy : used) {  // newest first
      const auto* key = reinterpret_cast<const unsigned char*>(copy->bytes.data());
      bool found = false;
      for (std::uint32_t l = 0; l < copy->links && !found; ++l) {
        found = holds_at(links_[l], places[l], key);
      }
      if (found) {
        marks[i] = static_cast<char>(copy->slice - first + 1);
        break;
      }
    }
  }
}

}  // namespace redbloom::redis::stream
