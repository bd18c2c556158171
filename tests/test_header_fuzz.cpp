// The header parser meets untrusted bytes (any file a user points us at). It must refuse every
// malformed header with FormatError, never crash, never read out of bounds. Runs a bounded
// number of seeded random cases each time (run it under ASan/UBSan for the strongest check).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/file_format.hpp"
#include "redbloom/error.hpp"
#include "redbloom/params.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

void parse_or_refuse(const std::vector<std::uint8_t>& bytes, std::uint64_t file_size) {
  try {
    const FileHeader header = parse_file_header(bytes, file_size);
    // Anything accepted must be self-consistent.
    EXPECT_EQ(header.bitmap_offset + header.bitmap_bytes, file_size);
    EXPECT_EQ(header.bitmap_bytes * 8, header.params.total_bits());
    EXPECT_NO_THROW(validate(header.params));
  } catch (const FormatError&) {
    // refused with a message: fine
  }
}

TEST(HeaderFuzz, RandomMutationsOfAValidHeader) {
  std::mt19937_64 rng(20261121);
  const FileHeader valid = make_file_header(size_filter(1e6, 0.01, Layout::blocked), 1);
  const auto encoded = encode_file_header(valid);
  const std::uint64_t valid_size = valid.bitmap_offset + valid.bitmap_bytes;
  for (int round = 0; round < 200000; ++round) {
    std::vector<std::uint8_t> bytes(encoded.begin(), encoded.end());
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      bytes[rng() % kFileHeaderUsedBytes] = static_cast<std::uint8_t>(rng());
    }
    if (rng() % 4 == 0) bytes.resize(rng() % (kFileHeaderBytes + 1));
    const std::uint64_t size = rng() % 8 == 0 ? rng() : valid_size;
    parse_or_refuse(bytes, size);
  }
}

TEST(HeaderFuzz, RandomFieldsWithAValidChecksum) {
  // Past the checksum: every field combination must be validated, not trusted.
  std::mt19937_64 rng(7);
  auto pick = [&](std::initializer_list<std::uint64_t> interesting) {
    if (rng() % 3 == 0) return rng();
    return *(interesting.begin() + rng() % interesting.size());
  };
  for (int round = 0; round < 100000; ++round) {
    FileHeader header;
    header.params.layout = static_cast<Layout>(pick({0, 1, 2, 3}));
    header.params.hashes = static_cast<std::uint32_t>(pick({0, 1, 7, 64, 65}));
    header.params.hash_scheme = static_cast<std::uint32_t>(pick({0, 1, 2}));
    header.params.partitions =
        pick({0, 1, 2, std::uint64_t{1} << 32, (std::uint64_t{1} << 32) + 1});
    header.params.partition_bits =
        pick({0, 1, 512, 513, 1 << 20, std::uint64_t{1} << 32, (std::uint64_t{1} << 32) + 512});
    header.params.capacity = pick({0, 1, 1000000});
    header.params.error_rate = (rng() % 2) ? 0.01 : -1.0;
    header.bitmap_offset = pick({0, 4096, 8192});
    header.bitmap_bytes = pick({0, 64, header.params.total_bytes()});
    const auto encoded = encode_file_header(header);
    const std::vector<std::uint8_t> bytes(encoded.begin(), encoded.end());
    const std::uint64_t size = rng() % 2 ? header.bitmap_offset + header.bitmap_bytes : rng();
    parse_or_refuse(bytes, size);
  }
}

TEST(HeaderFuzz, RandomBytes) {
  std::mt19937_64 rng(99);
  for (int round = 0; round < 100000; ++round) {
    std::vector<std::uint8_t> bytes(rng() % (kFileHeaderBytes + 1));
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    if (bytes.size() >= 8 && rng() % 2) std::copy_n("REDBLOOM", 8, bytes.begin());
    parse_or_refuse(bytes, rng());
  }
}

}  // namespace
}  // namespace redbloom
