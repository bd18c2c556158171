// A FilterChain's shape as bytes: what BF.SCANDUMP sends first, what RDB and AOF rewrites
// carry before the links' bits. Little-endian, fixed width:
//   "rbchain\x01"                                        magic and format version
//   u32 layout | u32 expansion | u8 scaling | f64 error_rate | u64 capacity | u32 links
//   per link: u32 layout | u32 hashes | u64 partitions | u64 partition_bits | u64 capacity |
//             f64 expected error | f64 target error | u64 items | u32 hash scheme
// The bits follow elsewhere, link after link, each params.total_bytes() long.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/filter_chain.hpp"

namespace redbloom::chain_format {

[[nodiscard]] std::string encode_header(const FilterChain& chain);
// An empty-bitted chain of the header's shape. Throws FormatError naming what is wrong with a
// damaged or hostile header, InvalidArgument when it is over `max_bytes` (0: no limit).
[[nodiscard]] std::unique_ptr<FilterChain> decode_header(std::string_view header,
                                                         ChainAllocator allocator,
                                                         std::uint64_t max_bytes);

}  // namespace redbloom::chain_format
