// The BF.* commands, as RedisBloom 2.4 defines them (syntax, defaults, replies, error texts),
// and RB.MADD / RB.MEXISTS: the same on a whole batch packed into one argument.
#include "bf_commands.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <string>

#include "command_support.hpp"
#include "core/chain_format.hpp"
#include "core/packed_items.hpp"
#include "module_info.hpp"
#include "plain_filter.hpp"
#include "redbloom/error.hpp"
#include "redisbloom_commands.hpp"

namespace redbloom::module {

namespace {

using AddResult = FilterChain::AddResult;

// Adds items in order up to the first that cannot be added (results[i] says why); the items
// after it are neither added nor answered. Returns how many were added or found present, and
// notes in `changed` whether any bit changed.
std::size_t add_until_refused(FilterChain& chain, std::span<const std::string_view> items,
                              AddResult* results, bool& changed) {
  const std::size_t done = chain.add(items, results);
  for (std::size_t i = 0; i < done; ++i) changed |= results[i] == AddResult::added;
  return done;
}

void announce(RedisModuleCtx* ctx, const char* event, RedisModuleString* key) {
  RedisModule_NotifyKeyspaceEvent(ctx, module_api::kNotifyGeneric, event, key);
  RedisModule_ReplicateVerbatim(ctx);
}

// The redbloom object at a key that holds a hash (a plain filter of the library's, a windowed
// one, an exact set); nullopt for any other key, which BF.* answers as RedisBloom does.
std::optional<RedbloomHash> redbloom_at(RedisModuleCtx* ctx, RedisModuleString* name,
                                        const OpenKey& key) {
  if (key.empty() || RedisModule_KeyType(key.get()) != module_api::kKeyTypeHash) {
    return std::nullopt;
  }
  RedbloomHash hash = inspect_hash(ctx, text(name), key.get());
  if (hash.kind.empty()) return std::nullopt;
  return hash;
}

// The start of redbloom's own SCANDUMP header (chain_format.hpp).
constexpr std::string_view kRedbloomHeaderMagic = "rbchain";

constexpr std::string_view kNoDumps =
    "BF.SCANDUMP and BF.LOADCHUNK copy only the module's own filters; copy this one with "
    "`redbloom export` and `redbloom import`";

constexpr std::string_view kOnlyPlain =
    "BF.* commands work on redbloom's plain filters on one server (and on the module's own "
    "filters); use the redbloom library or CLI for this one";

// How an adding command answers: one integer, an array of them, or a byte per item.
enum class AddReply { single, array, packed };

// An adding command on a redbloom plain filter: every item is answered (a plain filter never
// refuses one), or the error names what is wrong and nothing was written.
int add_to_plain(RedisModuleCtx* ctx, RedisModuleString* name, const RedbloomHash& hash,
                 std::span<const std::string_view> items, AddReply reply, const char* event) {
  if (!hash.plain) return reply_error(ctx, kind_error(text(name), hash, kOnlyPlain).c_str());
  std::string newly(items.size(), '\0');
  bool changed = false;
  if (const auto error = plain_add(ctx, text(name), *hash.plain, items,
                                   reinterpret_cast<std::uint8_t*>(newly.data()), &changed)) {
    return reply_error(ctx, error->c_str());
  }
  switch (reply) {
    case AddReply::single:
      RedisModule_ReplyWithLongLong(ctx, newly[0]);
      break;
    case AddReply::array:
      RedisModule_ReplyWithArray(ctx, static_cast<long>(newly.size()));
      for (char answer : newly) RedisModule_ReplyWithLongLong(ctx, answer);
      break;
    case AddReply::packed:
      RedisModule_ReplyWithStringBuffer(ctx, newly.data(), newly.size());
      break;
  }
  if (changed) announce(ctx, event, name);
  return module_api::kOk;
}

// A lookup on a redbloom object: the answers of a plain filter, or an error naming the kind.
// `present` is filled on success; false after an error reply.
bool contains_in_plain(RedisModuleCtx* ctx, RedisModuleString* name, const RedbloomHash& hash,
                       std::span<const std::string_view> items, std::uint8_t* present) {
  if (!hash.plain) {
    reply_error(ctx, kind_error(text(name), hash, kOnlyPlain).c_str());
    return false;
  }
  if (const auto error = plain_contains(ctx, text(name), *hash.plain, items, present)) {
    reply_error(ctx, error->c_str());
    return false;
  }
  return true;
}

// The filter at `key`, created with `options` when missing and `create`; nullptr after an
// error reply.
FilterChain* filter_for_write(RedisModuleCtx* ctx, const OpenKey& key, bool create,
                              const ChainOptions& options, bool* created) {
  if (key.holds_other_type()) {
    reply_error(ctx, module_api::kWrongTypeError);
    return nullptr;
  }
  if (FilterChain* chain = key.filter()) return chain;
  if (!create) {
    reply_error(ctx, "ERR not found");
    return nullptr;
  }
  *created = true;
  return key.store(make_filter(options));
}

// RedisBloom finds an option word anywhere in the arguments (RMUtil_ArgIndex), unknown words
// are ignored; the same here, for identical replies.
int find_option(RedisModuleString** argv, int argc, std::string_view name) {
  for (int i = 1; i < argc; ++i) {
    if (is_option(argv[i], name)) return i;
  }
  return -1;
}

// The FORMAT option's value at argv[at + 1]; nullopt after an error reply.
std::optional<FilterFormat> format_option(RedisModuleCtx* ctx, RedisModuleString** argv, int argc,
                                          int at) {
  if (at + 1 >= argc) {
    reply_error(ctx, "ERR FORMAT needs a value: redbloom or redisbloom");
    return std::nullopt;
  }
  const auto format = parse_format(text(argv[at + 1]));
  if (!format) reply_error(ctx, "ERR FORMAT is redbloom or redisbloom");
  return format;
}

// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
//            [FORMAT redbloom|redisbloom]
// FORMAT redisbloom makes RedisBloom's type, which RedisBloom can load again.
int reserve(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  // RedisBloom's 4 to 7 arguments, and FORMAT's two when given (searched past the figures
  // only: a key named FORMAT is not the option).
  int format_at = -1;
  for (int at = 4; at < argc && format_at < 0; ++at) {
    if (is_option(argv[at], "FORMAT")) format_at = at;
  }
  const int counted = format_at < 0 ? argc : argc - std::min(2, argc - format_at);
  if (counted < 4 || counted > 7) return RedisModule_WrongArity(ctx);
  ChainOptions options = default_options();
  const auto error_rate = real(argv[2]);
  if (!error_rate) return reply_error(ctx, "ERR bad error rate");
  if (!(*error_rate > 0 && *error_rate < 1)) {
    return reply_error(ctx, "ERR (0 < error rate range < 1) ");
  }
  const auto capacity = integer(argv[3]);
  if (!capacity) return reply_error(ctx, "ERR bad capacity");
  if (*capacity <= 0) return reply_error(ctx, "ERR (capacity should be larger than 0)");
  options.error_rate = *error_rate;
  options.capacity = static_cast<std::uint64_t>(*capacity);
  options.scaling = find_option(argv, argc, "NONSCALING") < 0;
  if (const int at = find_option(argv, argc, "EXPANSION"); at >= 0) {
    if (at + 1 == argc) return reply_error(ctx, "ERR no expansion");
    if (!options.scaling) return reply_error(ctx, "Nonscaling filters cannot expand");
    const auto expansion = integer(argv[at + 1]);
    if (!expansion) return reply_error(ctx, "ERR bad expansion");
    // RedisBloom takes 0 (and then answers 1 for items it never stores) and negative values;
    // refused here.
    if (*expansion < 1 || *expansion > kMaxExpansion) {
      return reply_error(ctx, "ERR expansion must be between 1 and 32768");
    }
    options.expansion = static_cast<std::uint32_t>(*expansion);
  }
  FilterFormat format = default_format();
  if (format_at >= 0) {
    const auto chosen = format_option(ctx, argv, argc, format_at);
    if (!chosen) return module_api::kOk;
    format = *chosen;
  }
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    const RedbloomHash named{hash->kind, std::nullopt, {}};
    return reply_error(
        ctx,
        kind_error(text(argv[1]), named, "BF.RESERVE makes a filter only at a free key").c_str());
  }
  if (redisbloom_at(key) != nullptr) return reply_error(ctx, "ERR item exists");
  if (key.holds_other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  if (!key.empty()) return reply_error(ctx, "ERR item exists");
  if (format == FilterFormat::redisbloom) {
    if (redisbloom_create(ctx, key, options.capacity, options.error_rate, options.expansion,
                          options.scaling) == nullptr) {
      return module_api::kOk;
    }
  } else {
    key.store(make_filter(options));
  }
  RedisModule_ReplyWithSimpleString(ctx, "OK");
  announce(ctx, "bf.reserve", argv[1]);
  return module_api::kOk;
}

// One answer per item up to the first refused one, whose error ends the array (RedisBloom
// stops there: later items are not added).
void reply_results(RedisModuleCtx* ctx, std::span<const AddResult> results) {
  std::size_t answered = 0;
  while (answered < results.size() &&
         (results[answered] == AddResult::present || results[answered] == AddResult::added)) {
    ++answered;
  }
  RedisModule_ReplyWithArray(ctx, static_cast<long>(std::min(answered + 1, results.size())));
  for (std::size_t i = 0; i < answered; ++i) {
    RedisModule_ReplyWithLongLong(ctx, results[i] == AddResult::added ? 1 : 0);
  }
  if (answered < results.size()) reply_error(ctx, refusal_message(results[answered]));
}

// BF.ADD key item
int add(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  const std::string_view item = text(argv[2]);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    return add_to_plain(ctx, argv[1], *hash, {&item, 1}, AddReply::single, "bf.add");
  }
  if (redisbloom::Chain* chain = redisbloom_at(key)) {
    return redisbloom_add(ctx, argv[1], *chain, {&item, 1}, false, "bf.add");
  }
  if (default_format() == FilterFormat::redisbloom && key.empty()) {
    const ChainOptions options = default_options();
    redisbloom::Chain* chain = redisbloom_create(ctx, key, options.capacity, options.error_rate,
                                                 options.expansion, options.scaling);
    if (chain == nullptr) return module_api::kOk;
    return redisbloom_add(ctx, argv[1], *chain, {&item, 1}, false, "bf.add");
  }
  bool created = false;
  FilterChain* chain = filter_for_write(ctx, key, true, default_options(), &created);
  if (chain == nullptr) return module_api::kOk;
  AddResult result = AddResult::present;
  bool changed = false;
  add_until_refused(*chain, {&item, 1}, &result, changed);
  if (result == AddResult::present || result == AddResult::added) {
    RedisModule_ReplyWithLongLong(ctx, result == AddResult::added ? 1 : 0);
  } else {
    reply_error(ctx, refusal_message(result));
  }
  if (changed || created) announce(ctx, "bf.add", argv[1]);
  return module_api::kOk;
}

// BF.MADD key item [item ...]
int madd(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  const std::vector<std::string_view> items = items_of(argv, 2, argc);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    return add_to_plain(ctx, argv[1], *hash, items, AddReply::array, "bf.madd");
  }
  if (redisbloom::Chain* chain = redisbloom_at(key)) {
    return redisbloom_add(ctx, argv[1], *chain, items, true, "bf.madd");
  }
  if (default_format() == FilterFormat::redisbloom && key.empty()) {
    const ChainOptions options = default_options();
    redisbloom::Chain* chain = redisbloom_create(ctx, key, options.capacity, options.error_rate,
                                                 options.expansion, options.scaling);
    if (chain == nullptr) return module_api::kOk;
    return redisbloom_add(ctx, argv[1], *chain, items, true, "bf.madd");
  }
  bool created = false;
  FilterChain* chain = filter_for_write(ctx, key, true, default_options(), &created);
  if (chain == nullptr) return module_api::kOk;
  std::vector<AddResult> results(items.size());
  bool changed = false;
  add_until_refused(*chain, items, results.data(), changed);
  reply_results(ctx, results);
  if (changed || created) announce(ctx, "bf.madd", argv[1]);
  return module_api::kOk;
}

// BF.INSERT key [CAPACITY capacity] [ERROR error] [EXPANSION expansion] [NOCREATE]
//           [NONSCALING] [FORMAT redbloom|redisbloom] ITEMS item [item ...]
// Options are told apart as RedisBloom 2.4 tells them: by their first letter (and ERROR from
// EXPANSION by the second, NOCREATE from NONSCALING by the third); a repeated one wins last.
// On an existing filter the creation options are ignored.
int insert(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 4) return RedisModule_WrongArity(ctx);
  ChainOptions options = default_options();
  long long capacity = static_cast<long long>(options.capacity);
  long long expansion = options.expansion;
  bool create = true;
  FilterFormat format = default_format();
  int items_at = -1;
  for (int i = 2; i < argc && items_at < 0; ++i) {
    const std::string_view word = text(argv[i]);
    const auto letter = [&](std::size_t at) {
      return at < word.size() ? std::tolower(static_cast<unsigned char>(word[at])) : 0;
    };
    switch (letter(0)) {
      case 'i':
        items_at = i + 1;
        break;
      case 'n':
        if (letter(2) == 'c') {
          create = false;
        } else {
          options.scaling = false;
        }
        break;
      case 'c': {
        if (++i == argc) return RedisModule_WrongArity(ctx);
        const auto value = integer(argv[i]);
        if (!value) return reply_error(ctx, "Bad capacity");
        capacity = *value;
        break;
      }
      case 'e': {
        if (++i == argc) return RedisModule_WrongArity(ctx);
        if (letter(1) == 'r') {
          const auto value = real(argv[i]);
          if (!value) return reply_error(ctx, "Bad error rate");
          options.error_rate = *value;
        } else {
          const auto value = integer(argv[i]);
          if (!value) return reply_error(ctx, "Bad expansion");
          expansion = *value;
        }
        break;
      }
      case 'f': {
        if (!is_option(argv[i], "FORMAT")) return reply_error(ctx, "Unknown argument received");
        const auto chosen = format_option(ctx, argv, argc, i);
        if (!chosen) return module_api::kOk;
        format = *chosen;
        ++i;
        break;
      }
      default:
        return reply_error(ctx, "Unknown argument received");
    }
  }
  if (items_at < 0 || items_at >= argc) return RedisModule_WrongArity(ctx);
  if (!(options.error_rate > 0 && options.error_rate < 1) || capacity < 1 || expansion < 1) {
    return reply_error(ctx, "Bad argument received");
  }
  if (expansion > kMaxExpansion)
    return reply_error(ctx, "ERR expansion must be between 1 and 32768");
  options.capacity = static_cast<std::uint64_t>(capacity);
  options.expansion = static_cast<std::uint32_t>(expansion);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  const std::vector<std::string_view> items = items_of(argv, items_at, argc);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    return add_to_plain(ctx, argv[1], *hash, items, AddReply::array, "bf.insert");
  }
  if (redisbloom::Chain* chain = redisbloom_at(key)) {
    return redisbloom_add(ctx, argv[1], *chain, items, true, "bf.insert");
  }
  if (create && format == FilterFormat::redisbloom && key.empty()) {
    redisbloom::Chain* chain = redisbloom_create(ctx, key, options.capacity, options.error_rate,
                                                 options.expansion, options.scaling);
    if (chain == nullptr) return module_api::kOk;
    return redisbloom_add(ctx, argv[1], *chain, items, true, "bf.insert");
  }
  bool created = false;
  FilterChain* chain = filter_for_write(ctx, key, create, options, &created);
  if (chain == nullptr) return module_api::kOk;
  std::vector<AddResult> results(items.size());
  bool changed = false;
  add_until_refused(*chain, items, results.data(), changed);
  reply_results(ctx, results);
  if (changed || created) announce(ctx, "bf.insert", argv[1]);
  return module_api::kOk;
}

// The filter at `key` for reading: nullptr with `missing` set when there is none, nullptr
// after an error reply when the key holds another type.
FilterChain* filter_for_read(RedisModuleCtx* ctx, const OpenKey& key, bool* missing) {
  *missing = false;
  if (key.holds_other_type()) {
    reply_error(ctx, module_api::kWrongTypeError);
    return nullptr;
  }
  FilterChain* chain = key.filter();
  *missing = chain == nullptr;
  return chain;
}

// BF.EXISTS key item. A missing key, or one of another type (as RedisBloom answers: no
// WRONGTYPE), holds no item.
int exists(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  const FilterChain* chain = key.filter();
  std::uint8_t present = 0;
  const std::string_view item = text(argv[2]);
  if (const redisbloom::Chain* rb = redisbloom_at(key)) {
    return redisbloom_exists(ctx, *rb, {&item, 1}, false);
  }
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    if (!contains_in_plain(ctx, argv[1], *hash, {&item, 1}, &present)) return module_api::kOk;
  }
  if (chain != nullptr) chain->contains({&item, 1}, &present);
  return RedisModule_ReplyWithLongLong(ctx, present);
}

// BF.MEXISTS key item [item ...], answered as BF.EXISTS.
int mexists(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  const FilterChain* chain = key.filter();
  const std::vector<std::string_view> items = items_of(argv, 2, argc);
  if (const redisbloom::Chain* rb = redisbloom_at(key)) {
    return redisbloom_exists(ctx, *rb, items, true);
  }
  std::vector<std::uint8_t> present(items.size(), 0);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    if (!contains_in_plain(ctx, argv[1], *hash, items, present.data())) return module_api::kOk;
  }
  if (chain != nullptr) chain->contains(items, present.data());
  RedisModule_ReplyWithArray(ctx, static_cast<long>(items.size()));
  for (std::uint8_t p : present) RedisModule_ReplyWithLongLong(ctx, p);
  return module_api::kOk;
}

// BF.CARD key
int card(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    return reply_error(ctx, kind_error(text(argv[1]), *hash,
                                       hash->plain ? "it does not count its items (BF.INFO gives "
                                                     "its capacity and size)"
                                                   : kOnlyPlain)
                                .c_str());
  }
  if (const redisbloom::Chain* rb = redisbloom_at(key)) return redisbloom_card(ctx, *rb);
  bool missing = false;
  const FilterChain* chain = filter_for_read(ctx, key, &missing);
  if (chain == nullptr && !missing) return module_api::kOk;
  return RedisModule_ReplyWithLongLong(
      ctx, chain == nullptr ? 0 : static_cast<long long>(chain->items()));
}

// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]
// On a redbloom plain filter: its capacity, the bytes of its partitions, one filter, and nil
// for the items inserted (it does not count them) and for the expansion (it does not grow).
int info(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 2 || argc > 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  struct Field {
    const char* option;
    const char* label;
    std::optional<long long> value;  // nil when unset
  };
  if (const redisbloom::Chain* rb = redisbloom_at(key)) {
    return redisbloom_info(ctx, *rb, argc == 3 ? argv[2] : nullptr);
  }
  std::vector<Field> fields;
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    if (!hash->plain) return reply_error(ctx, kind_error(text(argv[1]), *hash, kOnlyPlain).c_str());
    const FilterParams& p = hash->plain->params;
    fields = {
        {"CAPACITY", "Capacity", static_cast<long long>(p.capacity)},
        {"SIZE", "Size", static_cast<long long>(p.total_bytes())},
        {"FILTERS", "Number of filters", 1},
        {"ITEMS", "Number of items inserted", std::nullopt},
        {"EXPANSION", "Expansion rate", std::nullopt},
    };
  } else {
    bool missing = false;
    const FilterChain* chain = filter_for_read(ctx, key, &missing);
    if (chain == nullptr) return missing ? reply_error(ctx, "ERR not found") : module_api::kOk;
    fields = {
        {"CAPACITY", "Capacity", static_cast<long long>(chain->capacity())},
        {"SIZE", "Size", static_cast<long long>(memory_usage(*chain))},
        {"FILTERS", "Number of filters", static_cast<long long>(chain->links().size())},
        {"ITEMS", "Number of items inserted", static_cast<long long>(chain->items())},
        {"EXPANSION", "Expansion rate",
         chain->options().scaling
             ? std::optional<long long>(static_cast<long long>(chain->options().expansion))
             : std::nullopt},
    };
  }
  auto reply_value = [&](const Field& field) {
    if (field.value) {
      RedisModule_ReplyWithLongLong(ctx, *field.value);
    } else {
      RedisModule_ReplyWithNull(ctx);
    }
  };
  if (argc == 3) {
    for (const Field& field : fields) {
      if (is_option(argv[2], field.option)) {
        RedisModule_ReplyWithArray(ctx, 1);
        reply_value(field);
        return module_api::kOk;
      }
    }
    return reply_error(ctx, "Invalid information value");
  }
  RedisModule_ReplyWithArray(ctx, 2 * static_cast<long>(fields.size()));
  for (const Field& field : fields) {
    RedisModule_ReplyWithSimpleString(ctx, field.label);
    reply_value(field);
  }
  return module_api::kOk;
}

// BF.DEBUG key: RedisBloom's lines ("size:ITEMS", then per sub-filter its bytes, bits, probes,
// hash width, capacity, items and error rate), for both filter types.
int debug(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  if (const redisbloom::Chain* rb = redisbloom_at(key)) return redisbloom_debug(ctx, *rb);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    return reply_error(ctx, kind_error(text(argv[1]), *hash, kOnlyPlain).c_str());
  }
  bool missing = false;
  const FilterChain* chain = filter_for_read(ctx, key, &missing);
  if (chain == nullptr) return missing ? reply_error(ctx, "ERR not found") : module_api::kOk;
  RedisModule_ReplyWithArray(ctx, 1 + static_cast<long>(chain->links().size()));
  const std::string total = "size:" + std::to_string(chain->items());
  RedisModule_ReplyWithStringBuffer(ctx, total.data(), total.size());
  for (const FilterChain::Link& link : chain->links()) {
    char line[256];
    const int n = std::snprintf(
        line, sizeof line,
        "bytes:%llu bits:%llu hashes:%u hashwidth:64 capacity:%llu size:%llu ratio:%g",
        static_cast<unsigned long long>(link.params.total_bytes()),
        static_cast<unsigned long long>(link.params.total_bits()), link.params.hashes,
        static_cast<unsigned long long>(link.params.capacity),
        static_cast<unsigned long long>(link.items), link.target_error);
    RedisModule_ReplyWithStringBuffer(ctx, line, static_cast<std::size_t>(n));
  }
  return module_api::kOk;
}

// BF.SCANDUMP key iterator: [1, header] for iterator 0, then [next, bits] until [0, ""].
// `next` is one past the byte after the chunk, so BF.LOADCHUNK knows where the chunk goes.
int scandump(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    return reply_error(ctx,
                       kind_error(text(argv[1]), {hash->kind, std::nullopt, {}}, kNoDumps).c_str());
  }
  if (const redisbloom::Chain* rb = redisbloom_at(key)) {
    const auto iterator = integer(argv[2]);
    if (!iterator) return reply_error(ctx, "Second argument must be numeric");
    return redisbloom_scandump(ctx, *rb, *iterator);
  }
  bool missing = false;
  const FilterChain* chain = filter_for_read(ctx, key, &missing);
  if (chain == nullptr) return missing ? reply_error(ctx, "ERR not found") : module_api::kOk;
  const auto iterator = integer(argv[2]);
  if (!iterator) return reply_error(ctx, "Second argument must be numeric");
  RedisModule_ReplyWithArray(ctx, 2);
  if (*iterator == 0) {
    const std::string header = chain_format::encode_header(*chain);
    RedisModule_ReplyWithLongLong(ctx, 1);
    RedisModule_ReplyWithStringBuffer(ctx, header.data(), header.size());
    return module_api::kOk;
  }
  const auto offset = static_cast<std::uint64_t>(*iterator < 0 ? -1 : *iterator - 1);
  const auto chunk = chain->bytes_at(offset, kDumpChunkBytes);
  RedisModule_ReplyWithLongLong(
      ctx, chunk.empty() ? 0 : static_cast<long long>(offset + chunk.size() + 1));
  RedisModule_ReplyWithStringBuffer(ctx, reinterpret_cast<const char*>(chunk.data()), chunk.size());
  return module_api::kOk;
}

// BF.LOADCHUNK key iterator data: at an empty key, iterator 1 makes the filter from a header;
// at a filter, the data is the chunk that ends at byte iterator - 1 of its bits.
int loadchunk(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 4) return RedisModule_WrongArity(ctx);
  const auto iterator = integer(argv[2]);
  if (!iterator) return reply_error(ctx, "ERR Second argument must be numeric");
  const std::string_view data = text(argv[3]);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    return reply_error(ctx,
                       kind_error(text(argv[1]), {hash->kind, std::nullopt, {}}, kNoDumps).c_str());
  }
  if (redisbloom::Chain* rb = redisbloom_at(key)) {
    return redisbloom_loadchunk(ctx, argv[1], *rb, *iterator, data);
  }
  if (key.holds_other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  if (key.empty()) {
    if (*iterator != 1) return reply_error(ctx, "ERR not found");
    // A header without redbloom's magic is RedisBloom's: its filter is made in its type.
    if (!data.starts_with(kRedbloomHeaderMagic)) {
      return redisbloom_create_from_header(ctx, argv[1], key, data);
    }
    std::unique_ptr<FilterChain> chain;
    try {
      chain = chain_format::decode_header(data, server_allocator(), settings().max_filter_bytes);
    } catch (const FormatError&) {
      return reply_error(ctx, "ERR received bad data");
    }
    key.store(std::move(chain));
  } else {
    FilterChain* chain = key.filter();
    if (*iterator <= 0 || static_cast<std::uint64_t>(*iterator) < data.size()) {
      return reply_error(ctx, "ERR received bad data");
    }
    const auto offset = static_cast<std::uint64_t>(*iterator) - data.size() - 1;
    if (chain->bytes_at(offset, 1).empty()) {
      return reply_error(ctx, "ERR invalid offset - no link found");
    }
    if (!chain->write_bytes_at(offset,
                               {reinterpret_cast<const std::uint8_t*>(data.data()), data.size()})) {
      return reply_error(ctx, "ERR invalid chunk - Too big for current filter");
    }
  }
  RedisModule_ReplyWithSimpleString(ctx, "OK");
  announce(ctx, "bf.loadchunk", argv[1]);
  return module_api::kOk;
}

// RB.MADD key packed-items: BF.MADD's work on a batch in one argument (packed_items.hpp);
// the reply is one string, a byte per item: 0 present, 1 added, 2 refused (a full
// non-scaling filter or the memory limit). A missing filter is created as BF.MADD would.
int packed_madd(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const auto items = packed::split(text(argv[2]));
  if (!items) return reply_error(ctx, "ERR packed items end inside an item");
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    return add_to_plain(ctx, argv[1], *hash, *items, AddReply::packed, "bf.madd");
  }
  bool created = false;
  FilterChain* chain = filter_for_write(ctx, key, true, default_options(), &created);
  if (chain == nullptr) return module_api::kOk;
  std::string answers(items->size(), '\0');
  auto* results = reinterpret_cast<AddResult*>(answers.data());
  static_assert(sizeof(AddResult) == 1);
  // Unlike BF.MADD, every item is answered: past a refused one, present items still read 0
  // and new ones are refused in turn.
  bool changed = false;
  for (std::size_t done = 0; done < items->size();) {
    done += add_until_refused(*chain, std::span(*items).subspan(done), results + done, changed);
    if (done < items->size()) ++done;  // results[done] is the refusal
  }
  for (char& answer : answers) answer = answer > 1 ? 2 : answer;
  RedisModule_ReplyWithStringBuffer(ctx, answers.data(), answers.size());
  if (changed || created) announce(ctx, "bf.madd", argv[1]);
  return module_api::kOk;
}

// RB.MEXISTS key packed-items: one string, a byte per item, 1 when (probably) present.
int packed_mexists(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const auto items = packed::split(text(argv[2]));
  if (!items) return reply_error(ctx, "ERR packed items end inside an item");
  OpenKey key(ctx, argv[1], module_api::kRead);
  std::string answers(items->size(), '\0');
  if (const auto hash = redbloom_at(ctx, argv[1], key)) {
    if (contains_in_plain(ctx, argv[1], *hash, *items,
                          reinterpret_cast<std::uint8_t*>(answers.data()))) {
      RedisModule_ReplyWithStringBuffer(ctx, answers.data(), answers.size());
    }
    return module_api::kOk;
  }
  bool missing = false;
  const FilterChain* chain = filter_for_read(ctx, key, &missing);
  if (chain == nullptr && !missing) return module_api::kOk;
  if (chain != nullptr) chain->contains(*items, reinterpret_cast<std::uint8_t*>(answers.data()));
  return RedisModule_ReplyWithStringBuffer(ctx, answers.data(), answers.size());
}

// A command body with its call counter (INFO redbloom) and no exception let out.
template <int (*Body)(RedisModuleCtx*, RedisModuleString**, int)>
struct Counted {
  static inline std::uint64_t* calls = nullptr;
  static int run(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
    ++*calls;
    return guarded(ctx, [&] { return Body(ctx, argv, argc); });
  }
};

}  // namespace

bool register_bf_commands(RedisModuleCtx* ctx) noexcept {
  struct Command {
    const char* name;
    RedisModuleCmdFunc body;
    std::uint64_t** calls;
    const char* flags;
  };
  const Command commands[] = {
      {"bf.reserve", Counted<reserve>::run, &Counted<reserve>::calls, "write deny-oom"},
      {"bf.add", Counted<add>::run, &Counted<add>::calls, "write deny-oom"},
      {"bf.madd", Counted<madd>::run, &Counted<madd>::calls, "write deny-oom"},
      {"bf.insert", Counted<insert>::run, &Counted<insert>::calls, "write deny-oom"},
      {"bf.exists", Counted<exists>::run, &Counted<exists>::calls, "readonly fast"},
      {"bf.mexists", Counted<mexists>::run, &Counted<mexists>::calls, "readonly fast"},
      {"bf.card", Counted<card>::run, &Counted<card>::calls, "readonly fast"},
      {"bf.info", Counted<info>::run, &Counted<info>::calls, "readonly fast"},
      {"bf.debug", Counted<debug>::run, &Counted<debug>::calls, "readonly fast"},
      {"bf.scandump", Counted<scandump>::run, &Counted<scandump>::calls, "readonly"},
      {"bf.loadchunk", Counted<loadchunk>::run, &Counted<loadchunk>::calls, "write deny-oom"},
      {"rb.madd", Counted<packed_madd>::run, &Counted<packed_madd>::calls, "write deny-oom"},
      {"rb.mexists", Counted<packed_mexists>::run, &Counted<packed_mexists>::calls, "readonly"},
  };
  for (const Command& command : commands) {
    *command.calls = command_counter(command.name);
    if (RedisModule_CreateCommand(ctx, command.name, command.body, command.flags, 1, 1, 1) !=
        module_api::kOk) {
      RedisModule_Log(ctx, module_api::kLogWarning,
                      "redbloom: cannot register %s: another module (RedisBloom?) has it",
                      command.name);
      return false;
    }
  }
  return true;
}

}  // namespace redbloom::module
