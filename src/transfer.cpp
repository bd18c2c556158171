#include "redbloom/transfer.hpp"

#include <algorithm>
#include <vector>

#include "redbloom/error.hpp"

namespace redbloom {
namespace {

// Large enough to amortise a network round trip, small enough to keep memory flat whatever
// the filter's size.
constexpr std::uint64_t kChunkBytes = std::uint64_t{8} << 20;

}  // namespace

void copy_bits(const Store& from, Store& to, const CopyProgress& progress) {
  const FilterParams& params = from.params();
  if (!(params == to.params())) {
    throw InvalidArgument("cannot copy " + from.location() + " (" + describe(params) + ") into " +
                          to.location() + " (" + describe(to.params()) + "): parameters differ");
  }
  std::vector<std::uint8_t> chunk(std::min(kChunkBytes, params.partition_bytes()));
  const std::uint64_t total = params.total_bytes();
  std::uint64_t done = 0;
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    for (std::uint64_t offset = 0; offset < params.partition_bytes(); offset += chunk.size()) {
      const std::span<std::uint8_t> piece(
          chunk.data(), std::min<std::uint64_t>(chunk.size(), params.partition_bytes() - offset));
      from.read_bytes(p, offset, piece);
      to.write_bytes(p, offset, piece);
      done += piece.size();
      if (progress) progress(done, total);
    }
  }
  to.flush();
  const std::uint64_t source_bits = from.count_set_bits();
  const std::uint64_t copied_bits = to.count_set_bits();
  if (source_bits != copied_bits) {
    throw StorageError("copy of " + from.location() + " to " + to.location() + " holds " +
                       std::to_string(copied_bits) + " set bits, the source " +
                       std::to_string(source_bits) + " (was either written to during the copy?)");
  }
}

}  // namespace redbloom
