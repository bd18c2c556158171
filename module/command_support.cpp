#include "command_support.hpp"

#include <cctype>
#include <string>

#include "command_table.hpp"
#include "module_info.hpp"

namespace redbloom::module {

std::string_view text(const RedisModuleString* argument) noexcept {
  std::size_t length = 0;
  const char* bytes = RedisModule_StringPtrLen(argument, &length);
  return {bytes, length};
}

bool is_option(const RedisModuleString* argument, std::string_view name) noexcept {
  const std::string_view given = text(argument);
  if (given.size() != name.size()) return false;
  for (std::size_t i = 0; i < given.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(given[i])) !=
        std::toupper(static_cast<unsigned char>(name[i]))) {
      return false;
    }
  }
  return true;
}

std::optional<long long> integer(const RedisModuleString* argument) noexcept {
  long long value = 0;
  if (RedisModule_StringToLongLong(argument, &value) != module_api::kOk) return std::nullopt;
  return value;
}

std::optional<double> real(const RedisModuleString* argument) noexcept {
  double value = 0;
  if (RedisModule_StringToDouble(argument, &value) != module_api::kOk) return std::nullopt;
  return value;
}

std::vector<std::string_view> items_of(RedisModuleString** argv, int first, int argc) {
  std::vector<std::string_view> items;
  items.reserve(static_cast<std::size_t>(argc > first ? argc - first : 0));
  for (int i = first; i < argc; ++i) items.push_back(text(argv[i]));
  return items;
}

FilterChain* OpenKey::store(std::unique_ptr<FilterChain> chain) const noexcept {
  FilterChain* stored = chain.release();
  RedisModule_ModuleTypeSetValue(key_, filter_type(), stored);
  ++redbloom_stats().filters;
  warn_if_filters_may_be_evicted(ctx_);
  return stored;
}

void warn_if_filters_may_be_evicted(RedisModuleCtx* ctx) noexcept {
  static bool warned = false;  // for the policy in force; commands run on one thread
  // The flag is cheap; the policy's name costs an INFO section, asked only when keys may go.
  if ((RedisModule_GetContextFlags(ctx) & module_api::kContextFlagEvict) == 0) {
    warned = false;
    return;
  }
  RedisModuleServerInfoData* info = RedisModule_GetServerInfo(ctx, "memory");
  if (info == nullptr) return;
  const char* policy = RedisModule_ServerInfoGetFieldC(info, "maxmemory_policy");
  const bool allkeys = policy != nullptr && std::string_view(policy).starts_with("allkeys-");
  if (allkeys && !warned) {
    RedisModule_Log(ctx, module_api::kLogWarning,
                    "redbloom: maxmemory-policy is %s: a server at its maxmemory may evict a "
                    "whole filter, and the next BF.ADD, BF.MADD or BF.INSERT makes it again, "
                    "empty (its items then read as never added). Set maxmemory-policy to "
                    "noeviction, or to a volatile-* policy and give filters no TTL",
                    policy);
  }
  warned = allkeys;
  RedisModule_FreeServerInfo(ctx, info);
}

ChainOptions default_options() noexcept {
  const Settings& s = settings();
  ChainOptions options;
  options.capacity = s.capacity;
  options.error_rate = s.error_rate;
  options.expansion = s.expansion;
  options.layout = s.layout;
  options.max_bytes = s.max_filter_bytes;
  return options;
}

std::unique_ptr<FilterChain> make_filter(const ChainOptions& options) {
  return std::make_unique<FilterChain>(options, server_allocator());
}

void name_keys(RedisModuleCtx* ctx, int first, int count, bool read_only) noexcept {
  for (int pos = first; pos < first + count; ++pos) {
    if (read_only && RedisModule_KeyAtPosWithFlags != nullptr) {
      RedisModule_KeyAtPosWithFlags(
          ctx, pos, static_cast<int>(module_api::kKeyReadOnly | module_api::kKeyAccess));
    } else {
      RedisModule_KeyAtPos(ctx, pos);
    }
  }
}

int reply_error(RedisModuleCtx* ctx, const char* message) noexcept {
  return RedisModule_ReplyWithError(ctx, message);
}

const char* refusal_message(FilterChain::AddResult result) noexcept {
  return result == FilterChain::AddResult::full
             ? "ERR non scaling filter is full"
             : "ERR filter cannot grow: it would pass the module's memory limit per filter "
               "(MAX_FILTER_BYTES) or its 64 sub-filters";
}

namespace {

// A read-only command's keys declared as read, not written: Redis 7 takes the keys of a module
// command created with key positions as read and written, so a user whose ACL may only read
// them (%R~pattern) could not run BF.EXISTS. Logged, not fatal, where the server refuses it.
void declare_keys_read_only(RedisModuleCtx* ctx, const Command& command) noexcept {
  if (RedisModule_GetCommand == nullptr || RedisModule_SetCommandInfo == nullptr) return;
  if (command.first_key == 0 ||
      std::string_view(command.flags).find("readonly") == std::string_view::npos) {
    return;
  }
  static const RedisModuleCommandInfoVersion version{
      module_api::kCommandInfoVersion, 2 * sizeof(const char*), sizeof(RedisModuleCommandKeySpec),
      sizeof(void*)};
  RedisModuleCommandKeySpec specs[2] = {};  // the second, zeroed, ends the array
  specs[0].flags = module_api::kKeyReadOnly | module_api::kKeyAccess;
  specs[0].begin_search_type = module_api::kKeySearchIndex;
  specs[0].bs.index.pos = command.first_key;
  specs[0].find_keys_type = module_api::kKeysRange;
  specs[0].fk.range.lastkey =
      command.last_key < 0 ? command.last_key : command.last_key - command.first_key;
  specs[0].fk.range.keystep = command.key_step;
  RedisModuleCommandInfo info{};
  info.version = &version;
  info.key_specs = specs;
  RedisModuleCommand* registered = RedisModule_GetCommand(ctx, command.name);
  if (registered == nullptr || RedisModule_SetCommandInfo(registered, &info) != module_api::kOk) {
    RedisModule_Log(ctx, module_api::kLogWarning,
                    "redbloom: cannot declare %s's key read-only: users who may only read keys "
                    "cannot run it",
                    command.name);
  }
}

}  // namespace

bool register_commands(RedisModuleCtx* ctx, std::span<const Command> commands) noexcept {
  for (const Command& command : commands) {
    *command.calls = command_counter(command.name);
    if (RedisModule_CreateCommand(ctx, command.name, command.run, command.flags, command.first_key,
                                  command.last_key, command.key_step) != module_api::kOk) {
      RedisModule_Log(ctx, module_api::kLogWarning,
                      "redbloom: cannot register %s: another module (RedisBloom?) has it",
                      command.name);
      return false;
    }
    declare_keys_read_only(ctx, command);
  }
  return true;
}

}  // namespace redbloom::module
