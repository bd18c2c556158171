#include "core/packed_items.hpp"

#include <bit>
#include <cstring>

namespace redbloom::packed {

void append(std::string& out, std::string_view item) {
  const auto length = static_cast<std::uint32_t>(item.size());
  const char prefix[4] = {static_cast<char>(length), static_cast<char>(length >> 8),
                          static_cast<char>(length >> 16), static_cast<char>(length >> 24)};
  out.append(prefix, 4);
  out.append(item);
}

void append_all(std::string& out, std::span<const std::string_view> items) {
  std::size_t bytes = 0;
  for (std::string_view item : items) bytes += 4 + item.size();
  out.reserve(out.size() + bytes);
  for (std::string_view item : items) append(out, item);
}

std::optional<std::vector<std::string_view>> split(std::string_view bytes) {
  std::vector<std::string_view> items;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 4) return std::nullopt;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + at);
    const std::uint64_t length = std::uint64_t{p[0]} | std::uint64_t{p[1]} << 8 |
                                 std::uint64_t{p[2]} << 16 | std::uint64_t{p[3]} << 24;
    at += 4;
    if (bytes.size() - at < length) return std::nullopt;
    items.push_back(bytes.substr(at, length));
    at += length;
  }
  return items;
}

namespace {

void append_le64(std::string& out, std::uint64_t value) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  out.append(bytes, 8);
}

std::uint64_t read_le64(const char* bytes) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes);
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = value << 8 | p[i];
  return value;
}

}  // namespace

void append_hash(std::string& out, const ItemHash& hash) {
  append_le64(out, hash.lo);
  append_le64(out, hash.hi);
}

void write_hash(char* out, const ItemHash& hash) noexcept {
  if constexpr (std::endian::native == std::endian::little &&
                sizeof(ItemHash) == kHashedItemBytes) {
    std::memcpy(out, &hash, kHashedItemBytes);
  } else {
    for (int i = 0; i < 8; ++i) {
      out[i] = static_cast<char>(hash.lo >> (8 * i));
      out[8 + i] = static_cast<char>(hash.hi >> (8 * i));
    }
  }
}

ItemHash read_hash(const char* bytes) noexcept {
  return ItemHash{read_le64(bytes), read_le64(bytes + 8)};
}

void read_hashes(const char* bytes, std::span<ItemHash> out) noexcept {
  // On a little-endian machine the 16 bytes are the struct's two words as they lie in memory.
  if constexpr (std::endian::native == std::endian::little &&
                sizeof(ItemHash) == kHashedItemBytes) {
    if (!out.empty()) std::memcpy(out.data(), bytes, out.size() * kHashedItemBytes);
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = read_hash(bytes + i * kHashedItemBytes);
  }
}

}  // namespace redbloom::packed
