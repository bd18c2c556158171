#include "core/cuckoo_chain.hpp"

namespace redbloom::cuckoo_chain {

Add add(std::span<cuckoo_table::Table> links, const ItemHash& h) noexcept {
  if (contains(links, h)) return Add::present;
  return insert(links, h);
}

Add insert(std::span<cuckoo_table::Table> links, const ItemHash& h) noexcept {
  for (std::size_t i = links.size(); i-- > 0;) {
    if (links[i].insert_absent(h) == cuckoo_table::Insert::added) return Add::added;
  }
  return Add::full;
}

bool contains(std::span<const cuckoo_table::Table> links, const ItemHash& h) noexcept {
  for (const cuckoo_table::Table& link : links) {
    if (link.contains(h)) return true;
  }
  return false;
}

bool remove(std::span<cuckoo_table::Table> links, const ItemHash& h) noexcept {
  for (std::size_t i = links.size(); i-- > 0;) {
    if (links[i].remove(h)) return true;
  }
  return false;
}

RemoveKnown remove_known(std::span<cuckoo_table::Table> links, const ItemHash& h) noexcept {
  std::size_t holder = links.size();
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (!links[i].contains(h)) continue;
    if (holder != links.size()) return RemoveKnown::ambiguous;
    holder = i;
  }
  if (holder == links.size()) return RemoveKnown::absent;
  (void)links[holder].remove(h);
  return RemoveKnown::removed;
}

void prefetch(std::span<const cuckoo_table::Table> links, const ItemHash& h) noexcept {
  for (const cuckoo_table::Table& link : links) link.prefetch(h);
}

std::uint32_t count(std::span<const cuckoo_table::Table> links, const ItemHash& h) noexcept {
  std::uint32_t n = 0;
  for (const cuckoo_table::Table& link : links) n += link.count(h);
  return n;
}

}  // namespace redbloom::cuckoo_chain
