// What a Kafka dedup stage decided for a range of one partition's offsets: which records were
// first seen (and so go to the output). Stored in a DecisionLog before the filter's bits are
// set, so a batch interrupted anywhere after that is replayed from it, never tested again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redbloom {

class DecisionRecord {
 public:
  DecisionRecord() = default;
  // An empty record of offsets first..last (nothing first seen).
  DecisionRecord(std::int64_t first, std::int64_t last);

  [[nodiscard]] std::int64_t first() const noexcept { return first_; }
  // Which decision made it (a random id per partition and round; 0 in a version 1 record):
  // a RoundIntent names the record it goes with by it.
  [[nodiscard]] std::uint64_t round() const noexcept { return round_; }
  void set_round(std::uint64_t round) noexcept { round_ = round; }
  [[nodiscard]] std::int64_t last() const noexcept { return last_; }
  [[nodiscard]] bool covers(std::int64_t offset) const noexcept {
    return offset >= first_ && offset <= last_;
  }
  // Offset `offset` (covered) was first seen.
  [[nodiscard]] bool first_seen(std::int64_t offset) const noexcept;
  void mark_first_seen(std::int64_t offset);
  void clear_first_seen(std::int64_t offset);

  // "redbloom-kafka-decisions 2 FIRST LAST ROUND\n" and one bit per offset.
  [[nodiscard]] std::string encode() const;
  // Reads versions 2 and 1 ("redbloom-kafka-decisions 1 FIRST LAST\n": round 0). Throws
  // FormatError for text that is not a record.
  [[nodiscard]] static DecisionRecord decode(std::string_view text);

 private:
  std::int64_t first_ = 0;
  std::int64_t last_ = -1;
  std::uint64_t round_ = 0;
  std::vector<std::uint8_t> bits_;
};

}  // namespace redbloom
