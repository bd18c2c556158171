// CRC-32C (Castagnoli): the checksum of the dedup journal's records (redbloom/journal.hpp).
#pragma once

#include <cstdint>
#include <string_view>

namespace redbloom {

[[nodiscard]] std::uint32_t crc32c(std::string_view bytes) noexcept;

}  // namespace redbloom
