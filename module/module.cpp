// redbloom.so: RedisBloom-compatible BF.* commands over redbloom's filters, and server-side
// hashing for redbloom's plain-string filters. Loaded with
//   redis-server --loadmodule /path/redbloom.so [NAME VALUE ...]
// where NAME (case-insensitive) is one of
//   ERROR_RATE p          error rate of filters that BF.ADD/MADD/INSERT create (0.01)
//   INITIAL_SIZE n        their capacity (100)
//   EXPANSION n           their expansion (2)
//   LAYOUT classic|blocked  the layout of every new filter (blocked: one cache line per item)
//   DEFAULT_FORMAT redbloom|redisbloom  the type of new filters (redisbloom: RedisBloom's own,
//                         which RedisBloom can load again)
//   MAX_FILTER_BYTES n[k|m|g]  no filter grows past this (512m)
//   MAXMEMORY_CHECK yes|no  refuse a filter or a growth larger than the room maxmemory
//                         leaves (yes)
//   CF_MAX_EXPANSIONS n   adds to a cuckoo filter of n sub-filters fail, as in RedisBloom (32;
//                         also spelled cf-max-expansions)
//   cf-bucket-size n, cf-initial-size n, cf-max-iterations n, cf-expansion-factor n
//                         RedisBloom 8's defaults of new cuckoo filters (2, 1024, 20, 1)
#include <strings.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "bf_commands.hpp"
#include "bloom_type.hpp"
#include "bloom_value.hpp"
#include "cf_commands.hpp"
#include "cms_commands.hpp"
#include "cms_type.hpp"
#include "command_support.hpp"
#include "cuckoo_partition_commands.hpp"
#include "cuckoo_type.hpp"
#include "module_info.hpp"
#include "partition_commands.hpp"
#include "redisbloom_type.hpp"
#include "stream_commands.hpp"
#include "tdigest_commands.hpp"
#include "tdigest_type.hpp"
#include "topk_commands.hpp"
#include "topk_type.hpp"

namespace redbloom::module {

namespace {

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  std::string digits(text);
  std::uint64_t unit = 1;
  if (!digits.empty()) {
    switch (std::tolower(static_cast<unsigned char>(digits.back()))) {
      case 'k':
        unit = 1ull << 10;
        break;
      case 'm':
        unit = 1ull << 20;
        break;
      case 'g':
        unit = 1ull << 30;
        break;
      default:
        break;
    }
    if (unit != 1) digits.pop_back();
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const unsigned long long value = std::strtoull(digits.c_str(), nullptr, 10);
  if (value == 0 || value > (UINT64_MAX >> 1) / unit) return std::nullopt;
  return value * unit;
}

// RedisBloom 8's cf-* settings of new cuckoo filters, with their ranges.
struct CuckooSetting {
  const char* name;
  long long Settings::*field;
  long long low, high;
};
std::optional<CuckooSetting> cuckoo_setting(std::string_view name) {
  static const CuckooSetting all[] = {
      {"cf-bucket-size", &Settings::cf_bucket_size, 1, 255},
      {"cf-initial-size", &Settings::cf_initial_size, 4, 1LL << 30},
      {"cf-max-iterations", &Settings::cf_max_iterations, 1, 65535},
      {"cf-expansion-factor", &Settings::cf_expansion, 0, 32768},
  };
  for (const CuckooSetting& setting : all) {
    if (name.size() == std::strlen(setting.name) &&
        strncasecmp(name.data(), setting.name, name.size()) == 0) {
      return setting;
    }
  }
  return std::nullopt;
}

// Reads the load arguments into settings(); a bad one is logged and fails the load.
bool read_settings(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  Settings& s = settings();
  if (argc % 2 != 0) {
    RedisModule_Log(ctx, module_api::kLogWarning,
                    "redbloom: module arguments come in pairs: NAME VALUE");
    return false;
  }
  for (int i = 0; i < argc; i += 2) {
    const std::string_view name = text(argv[i]);
    const RedisModuleString* value = argv[i + 1];
    bool ok = false;
    if (is_option(argv[i], "ERROR_RATE")) {
      const auto rate = real(value);
      ok = rate && *rate > 0 && *rate < 1;
      if (ok) s.error_rate = *rate;
    } else if (is_option(argv[i], "INITIAL_SIZE")) {
      const auto capacity = integer(value);
      ok = capacity && *capacity >= 1 && *capacity < 0xffffffffLL;
      if (ok) s.capacity = static_cast<std::uint64_t>(*capacity);
    } else if (is_option(argv[i], "EXPANSION")) {
      const auto expansion = integer(value);
      ok = expansion && *expansion >= 1 && *expansion <= kMaxExpansion;
      if (ok) s.expansion = static_cast<std::uint32_t>(*expansion);
    } else if (is_option(argv[i], "LAYOUT")) {
      const auto layout = parse_layout(text(value));
      ok = layout.has_value();
      if (ok) s.layout = *layout;
    } else if (is_option(argv[i], "DEFAULT_FORMAT")) {
      const auto format = parse_format(text(value));
      ok = format.has_value();
      if (ok) default_format() = *format;
    } else if (is_option(argv[i], "CF_MAX_EXPANSIONS") || is_option(argv[i], "cf-max-expansions")) {
      const auto most = integer(value);
      ok = most && *most >= 1 && *most <= 65536;
      if (ok) s.cf_max_expansions = *most;
    } else if (const auto cf = cuckoo_setting(name)) {
      const auto number = integer(value);
      ok = number && *number >= cf->low && *number <= cf->high;
      if (ok) s.*(cf->field) = *number;
    } else if (is_option(argv[i], "MAXMEMORY_CHECK")) {
      const std::string_view word = text(value);
      ok = word == "yes" || word == "no";
      if (ok) s.maxmemory_check = word == "yes";
    } else if (is_option(argv[i], "MAX_FILTER_BYTES")) {
      const auto bytes = parse_bytes(text(value));
      ok = bytes.has_value();
      if (ok) s.max_filter_bytes = *bytes;
    } else {
      RedisModule_Log(ctx, module_api::kLogWarning,
                      "redbloom: unknown module argument '%.*s' (known: ERROR_RATE, "
                      "INITIAL_SIZE, EXPANSION, LAYOUT, DEFAULT_FORMAT, MAX_FILTER_BYTES, "
                      "MAXMEMORY_CHECK, CF_MAX_EXPANSIONS, cf-bucket-size, cf-initial-size, "
                      "cf-max-iterations, cf-expansion-factor)",
                      static_cast<int>(name.size()), name.data());
      return false;
    }
    if (!ok) {
      const std::string_view shown = text(value);
      RedisModule_Log(ctx, module_api::kLogWarning, "redbloom: bad value '%.*s' for %.*s",
                      static_cast<int>(shown.size()), shown.data(), static_cast<int>(name.size()),
                      name.data());
      return false;
    }
  }
  return true;
}

}  // namespace

}  // namespace redbloom::module

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx* ctx,
                                                                         RedisModuleString** argv,
                                                                         int argc) {
  using namespace redbloom;
  const char* missing = nullptr;
  if (!module_api::load(ctx, &missing)) return module_api::kErr;
  if (RedisModule_IsModuleNameBusy("redbloom")) return module_api::kErr;
  RedisModule_SetModuleAttribs(ctx, "redbloom", 1, module_api::kApiVersion1);
  // Damaged RDB or RESTORE payloads then fail the load instead of stopping the server.
  // Async loading (a replica's swapdb diskless load) is safe: loading touches no keyspace and
  // no state that commands change. Servers older than 7.0 ignore the flag.
  RedisModule_SetModuleOptions(
      ctx, module_api::kOptionHandleIoErrors | module_api::kOptionHandleReplAsyncLoad);
  if (!module::read_settings(ctx, argv, argc)) return module_api::kErr;
  if (module::settings().cf_initial_size < 2 * module::settings().cf_bucket_size) {
    RedisModule_Log(ctx, module_api::kLogWarning,
                    "redbloom: cf-initial-size must be at least twice cf-bucket-size");
    return module_api::kErr;
  }
  if (!module::register_type(ctx)) return module_api::kErr;
  if (!module::register_redisbloom_type(ctx)) return module_api::kErr;
  if (!module::register_cuckoo_type(ctx)) return module_api::kErr;
  if (!module::register_bf_commands(ctx)) return module_api::kErr;
  if (!module::register_cf_commands(ctx)) return module_api::kErr;
  if (!module::register_partition_commands(ctx)) return module_api::kErr;
  if (!module::register_stream_commands(ctx)) return module_api::kErr;
  if (!module::register_cuckoo_partition_commands(ctx)) return module_api::kErr;
  if (!module::register_tdigest_type(ctx)) return module_api::kErr;
  if (!module::register_tdigest_commands(ctx)) return module_api::kErr;
  if (!module::register_topk_type(ctx)) return module_api::kErr;
  if (!module::register_topk_commands(ctx)) return module_api::kErr;
  if (!module::register_cms_type(ctx)) return module_api::kErr;
  if (!module::register_cms_commands(ctx)) return module_api::kErr;
  if (!module::register_info(ctx)) return module_api::kErr;
  return module_api::kOk;
}
