#include "key_scan.hpp"

#include "object.hpp"

namespace redbloom::redis {

std::string glob_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void scan_keys(Router& router, const std::string& pattern,
               const std::function<void(std::string_view)>& on_key) {
  for_each_master(router, [&](std::uint16_t slot) {
    std::string cursor = "0";
    do {
      const Reply reply =
          router.run(slot, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, OnLostNode::retry);
      router.expect(*reply, REDIS_REPLY_ARRAY, "SCAN");
      if (reply->elements != 2 || reply->element[1]->type != REDIS_REPLY_ARRAY) {
        router.fail("SCAN", "not a SCAN reply");
      }
      cursor = text_of(*reply->element[0]);
      const redisReply& keys = *reply->element[1];
      for (std::size_t i = 0; i < keys.elements; ++i) on_key(text_of(*keys.element[i]));
    } while (cursor != "0");
  });
}

void unlink_keys(Router& router, const std::vector<std::string>& keys) {
  for_each_part(
      router, keys.size(), [&](std::uint64_t i) { return keys[i]; }, "UNLINK",
      Work::idempotent_write,
      [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
        buffer.command({"UNLINK", key});
      },
      [&](std::uint64_t, const redisReply& reply) {
        router.expect(reply, REDIS_REPLY_INTEGER, "UNLINK");
      });
}

}  // namespace redbloom::redis
