#include "jobs/kafka_round_intent.hpp"

#include <charconv>

#include "jobs/kafka_decision_record.hpp"
#include "redbloom/decision_log.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"

namespace redbloom {
namespace {

constexpr std::string_view kMagic = "redbloom-kafka-intent 1 ";

FormatError not_an_intent() {
  return FormatError(
      "a round intent beside the decision records that is not one: cannot add "
      "the items a stage left");
}

// Reads a decimal number ending with `stop` at text[at...]; moves `at` past the stop.
std::uint64_t number_at(std::string_view text, std::size_t& at, char stop) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data() + at, end, value);
  if (r.ec != std::errc{} || r.ptr == end || *r.ptr != stop) throw not_an_intent();
  at = static_cast<std::size_t>(r.ptr - text.data()) + 1;
  return value;
}

std::string_view bytes_at(std::string_view text, std::size_t& at, std::uint64_t size) {
  if (size > text.size() - at) throw not_an_intent();
  const std::string_view bytes = text.substr(at, size);
  at += size;
  return bytes;
}

}  // namespace

std::string RoundIntent::encode() const {
  std::string text(kMagic);
  text += std::to_string(round) + " " + std::to_string(items.size()) + " " +
          std::to_string(record_key.size()) + "\n";
  text += record_key;
  for (const std::string& item : items) {
    text += std::to_string(item.size());
    text += ':';
    text += item;
  }
  return text;
}

RoundIntent RoundIntent::decode(std::string_view text) {
  if (!text.starts_with(kMagic)) throw not_an_intent();
  std::size_t at = kMagic.size();
  RoundIntent intent;
  intent.round = number_at(text, at, ' ');
  const std::uint64_t count = number_at(text, at, ' ');
  intent.record_key = bytes_at(text, at, number_at(text, at, '\n'));
  // Each item takes at least two bytes ("0:"): a count beyond that is damage, not a size.
  if (count > (text.size() - at) / 2) throw not_an_intent();
  intent.items.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    intent.items.emplace_back(bytes_at(text, at, number_at(text, at, ':')));
  }
  if (at != text.size()) throw not_an_intent();
  return intent;
}

std::size_t roll_forward(Filter& filter, DecisionLog& decisions, ExactSet* exact_set) {
  const std::string key(RoundIntent::kKey);
  const std::optional<std::string> text = decisions.get(key);
  if (!text) return 0;
  const RoundIntent intent = RoundIntent::decode(*text);
  decisions.erase(key, *text);
  // A record of another round: the dead stage stopped before storing this one, so nothing
  // was decided (its records are tested again).
  const std::optional<std::string> record = decisions.get(intent.record_key);
  if (!record || DecisionRecord::decode(*record).round() != intent.round) return 0;
  const std::vector<std::string_view> items(intent.items.begin(), intent.items.end());
  if (exact_set != nullptr) (void)exact_set->add(items);
  filter.load_many(items);
  return items.size();
}

}  // namespace redbloom
