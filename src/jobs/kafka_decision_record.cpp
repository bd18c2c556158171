#include "jobs/kafka_decision_record.hpp"

#include <charconv>

#include "redbloom/error.hpp"

namespace redbloom {
namespace {

constexpr std::string_view kMagic = "redbloom-kafka-decisions 2 ";
constexpr std::string_view kMagicVersion1 = "redbloom-kafka-decisions 1 ";

// At most this many offsets in one record: a batch is far smaller.
constexpr std::int64_t kMaxSpan = std::int64_t{1} << 30;

}  // namespace

DecisionRecord::DecisionRecord(std::int64_t first, std::int64_t last)
    : first_(first), last_(last), bits_(static_cast<std::size_t>((last - first + 1 + 7) / 8), 0) {
  if (first < 0 || last < first || last - first >= kMaxSpan) {
    throw InvalidArgument("a decision record covers offsets " + std::to_string(first) + " to " +
                          std::to_string(last) + ": not a range it can hold");
  }
}

bool DecisionRecord::first_seen(std::int64_t offset) const noexcept {
  if (!covers(offset)) return false;
  const auto i = static_cast<std::uint64_t>(offset - first_);
  return (bits_[i / 8] >> (i % 8) & 1) != 0;
}

void DecisionRecord::mark_first_seen(std::int64_t offset) {
  if (!covers(offset)) throw InvalidArgument("offset outside the decision record's range");
  const auto i = static_cast<std::uint64_t>(offset - first_);
  bits_[i / 8] = static_cast<std::uint8_t>(bits_[i / 8] | 1u << (i % 8));
}

void DecisionRecord::clear_first_seen(std::int64_t offset) {
  if (!covers(offset)) throw InvalidArgument("offset outside the decision record's range");
  const auto i = static_cast<std::uint64_t>(offset - first_);
  bits_[i / 8] = static_cast<std::uint8_t>(bits_[i / 8] & ~(1u << (i % 8)));
}

std::string DecisionRecord::encode() const {
  std::string text(kMagic);
  text +=
      std::to_string(first_) + " " + std::to_string(last_) + " " + std::to_string(round_) + "\n";
  text.append(reinterpret_cast<const char*>(bits_.data()), bits_.size());
  return text;
}

DecisionRecord DecisionRecord::decode(std::string_view text) {
  const auto bad = [] {
    return FormatError("a decision record that is not one: cannot replay it");
  };
  const bool version1 = text.starts_with(kMagicVersion1);
  if (!version1 && !text.starts_with(kMagic)) throw bad();
  const char* p = text.data() + kMagic.size();
  const char* end = text.data() + text.size();
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::uint64_t round = 0;
  auto r = std::from_chars(p, end, first);
  if (r.ec != std::errc{} || r.ptr == end || *r.ptr != ' ') throw bad();
  r = std::from_chars(r.ptr + 1, end, last);
  if (!version1) {
    if (r.ec != std::errc{} || r.ptr == end || *r.ptr != ' ') throw bad();
    r = std::from_chars(r.ptr + 1, end, round);
  }
  if (r.ec != std::errc{} || r.ptr == end || *r.ptr != '\n') throw bad();
  if (first < 0 || last < first || last - first >= kMaxSpan) throw bad();
  DecisionRecord record(first, last);
  record.round_ = round;
  const std::string_view bits(r.ptr + 1, static_cast<std::size_t>(end - r.ptr - 1));
  if (bits.size() != record.bits_.size()) throw bad();
  std::copy(bits.begin(), bits.end(), record.bits_.begin());
  return record;
}

}  // namespace redbloom
