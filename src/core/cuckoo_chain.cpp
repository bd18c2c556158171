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

void prefetch(std::span<const cuckoo_table::Table> links, const ItemHash& h) noexcept {
  for (const cuckoo_table::Table& link : links) link.prefetch(h);
}

std::uint32_t count(std::span<const cuckoo_table::Table> links, const ItemHash& h) noexcept {
  std::uint32_t n = 0;
  for (const cuckoo_table::Table& link : links) n += link.count(h);
  return n;
}

}  // namespace redbloom::cuckoo_chain
