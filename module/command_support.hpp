// What every command of the module shares: reading arguments, opening a filter key, replying
// with the errors RedisBloom's users know, and keeping C++ exceptions out of the server.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string_view>
#include <vector>

#include "bloom_type.hpp"

namespace redbloom::module {

[[nodiscard]] std::string_view text(const RedisModuleString* argument) noexcept;
// Case-insensitive comparison with an option name.
[[nodiscard]] bool is_option(const RedisModuleString* argument, std::string_view name) noexcept;
[[nodiscard]] std::optional<long long> integer(const RedisModuleString* argument) noexcept;
[[nodiscard]] std::optional<double> real(const RedisModuleString* argument) noexcept;
// The arguments from `first` on, as views (valid while the command runs).
[[nodiscard]] std::vector<std::string_view> items_of(RedisModuleString** argv, int first, int argc);

// A key opened for the command, closed when it goes out of scope.
class OpenKey {
 public:
  OpenKey(RedisModuleCtx* ctx, RedisModuleString* name, int mode) noexcept
      : ctx_(ctx), key_(RedisModule_OpenKey(ctx, name, mode)) {}
  OpenKey(const OpenKey&) = delete;
  OpenKey& operator=(const OpenKey&) = delete;
  ~OpenKey() {
    if (key_ != nullptr) RedisModule_CloseKey(key_);
  }
  [[nodiscard]] RedisModuleKey* get() const noexcept { return key_; }
  [[nodiscard]] bool empty() const noexcept {
    return RedisModule_KeyType(key_) == module_api::kKeyTypeEmpty;
  }
  // Stores a new filter at the (empty) key, which then owns it; warns in the server's log
  // when the server may evict it (warn_if_filters_may_be_evicted).
  FilterChain* store(std::unique_ptr<FilterChain> chain) const noexcept;

 private:
  RedisModuleCtx* ctx_;
  RedisModuleKey* key_;
};

// An evicted filter is gone whole, and the next BF.ADD, BF.MADD or BF.INSERT makes it again,
// empty: its items read as never added. Logs a warning when a filter is made while the
// server's maxmemory-policy is allkeys-* with a limit set; once each time the server turns to
// such a policy, so that a server making many filters does not fill its log.
void warn_if_filters_may_be_evicted(RedisModuleCtx* ctx) noexcept;

// A new filter with the module's settings, overridden by the caller's options.
[[nodiscard]] std::unique_ptr<FilterChain> make_filter(const ChainOptions& options);
[[nodiscard]] ChainOptions default_options() noexcept;

int reply_error(RedisModuleCtx* ctx, const char* message) noexcept;
// Answers a getkeys-api request: the keys at first .. first + count - 1, as only read when
// `read_only` (so that a user who may only read keys may run the command, Redis >= 7.0).
void name_keys(RedisModuleCtx* ctx, int first, int count, bool read_only) noexcept;
// Runs a command body and turns any escaping exception into an error reply: Redis is C, and
// an exception through its frames would end the server.
template <class Body>
int guarded(RedisModuleCtx* ctx, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return reply_error(ctx, "ERR redbloom: out of memory");
  } catch (const std::exception& e) {
    return reply_error(ctx, (std::string("ERR ") + e.what()).c_str());
  } catch (...) {
    return reply_error(ctx, "ERR redbloom: internal error");
  }
}

// The reply for an item that could not be added.
[[nodiscard]] const char* refusal_message(FilterChain::AddResult result) noexcept;

}  // namespace redbloom::module
