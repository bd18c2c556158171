// What a Kafka dedup stage is about to add to the filter for one partition's batch, stored
// beside the decision records under the filter's round lock: from before the batch's decision
// record is stored until its first-seen items are added. A stage that dies in between leaves
// it behind, and the next stage to take the lock adds those items (roll_forward) before it
// tests anything, so no stage ever sees a decision record without its items' bits: of two
// stages that meet one item, the second always finds it added.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redbloom {

class DecisionLog;
class ExactSet;
class Filter;

struct RoundIntent {
  // The DecisionLog key it is kept under: one per filter, as the round lock is.
  static constexpr std::string_view kKey = "kafka-round-intent";

  std::uint64_t round = 0;  // the decision record's round() it goes with
  std::string record_key;   // that record's DecisionLog key
  std::vector<std::string> items;

  // "redbloom-kafka-intent 1 ROUND COUNT KEYLEN\n", the key, then each item as "LEN:" and
  // its bytes.
  [[nodiscard]] std::string encode() const;
  // Throws FormatError for text that is not an intent.
  [[nodiscard]] static RoundIntent decode(std::string_view text);
};

// With the round lock held: the intent a stage left when it died, if any, carried out: erased
// first (a stage whose Redis lock expired while it stalled then sees its round taken over),
// then, if its decision record is the one it went with, its items added to the exact set if
// any and to the filter. Returns how many items it added (0: none was left).
std::size_t roll_forward(Filter& filter, DecisionLog& decisions, ExactSet* exact_set);

}  // namespace redbloom
