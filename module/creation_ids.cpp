#include "creation_ids.hpp"

#include <mutex>
#include <random>
#include <unordered_map>

namespace redbloom::module {

namespace {

struct Ids {
  std::mutex mutex;  // values are freed on the lazy-free thread too
  std::unordered_map<const void*, std::uint64_t> of;
  std::uint64_t next = 0;
};

Ids& ids() {
  static Ids state;
  return state;
}

// A random start, so that a restarted server (or another one) does not give the ids again;
// 62 bits keep every id a positive integer reply.
std::uint64_t first_id() {
  std::random_device device;
  const std::uint64_t bits = (std::uint64_t{device()} << 32) ^ device();
  return (bits >> 2) | 1;
}

}  // namespace

void note_created(RedisModuleCtx* ctx, const void* value) {
  const int flags = RedisModule_GetContextFlags(ctx);
  if ((flags & (module_api::kContextFlagReplicated | module_api::kContextFlagLoading)) != 0) return;
  Ids& state = ids();
  const std::lock_guard lock(state.mutex);
  if (state.next == 0) state.next = first_id();
  state.of[value] = state.next++;
}

void forget_value(const void* value) noexcept {
  Ids& state = ids();
  const std::lock_guard lock(state.mutex);
  state.of.erase(value);
}

std::uint64_t creation_id(const void* value) noexcept {
  Ids& state = ids();
  const std::lock_guard lock(state.mutex);
  const auto found = state.of.find(value);
  return found == state.of.end() ? 0 : found->second;
}

}  // namespace redbloom::module
