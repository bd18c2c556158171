// The BF.* commands, as RedisBloom 2.4 defines them (syntax, defaults, replies, error texts),
// and RB.MADD / RB.MEXISTS: the same on a whole batch packed into one argument. Each handler
// parses its arguments, opens its key once (BloomKey) and calls the value it holds.
#include "bf_commands.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "bloom_value.hpp"
#include "command_table.hpp"
#include "core/packed_items.hpp"

namespace redbloom::module {

namespace {

void announce(RedisModuleCtx* ctx, const char* event, RedisModuleString* key) {
  RedisModule_NotifyKeyspaceEvent(ctx, module_api::kNotifyGeneric, event, key);
  RedisModule_ReplicateVerbatim(ctx);
}

// Error replies for helpers that return an optional: the reply is sent, nothing is returned.
std::nullopt_t refuse(RedisModuleCtx* ctx, const char* message) {
  reply_error(ctx, message);
  return std::nullopt;
}
std::nullopt_t wrong_arity(RedisModuleCtx* ctx) {
  RedisModule_WrongArity(ctx);
  return std::nullopt;
}

// What an adding command makes at a missing key: whether it may, in which format, how.
struct Creation {
  bool allowed = true;
  FilterFormat format = default_format();
  ChainOptions options = default_options();
};

// How an adding command answers: one integer, an array of them, or a byte per item.
enum class AddReply { single, array, packed };

void reply_added(RedisModuleCtx* ctx, const AddOutcome& out, AddReply reply) {
  const auto answer = [&](std::uint8_t a) {
    if (a == 2) {
      reply_error(ctx, out.refusal.c_str());
    } else {
      RedisModule_ReplyWithLongLong(ctx, a);
    }
  };
  switch (reply) {
    case AddReply::single:
      answer(out.answers[0]);
      break;
    case AddReply::array:
      RedisModule_ReplyWithArray(ctx, static_cast<long>(out.answers.size()));
      for (const std::uint8_t a : out.answers) answer(a);
      break;
    case AddReply::packed:
      RedisModule_ReplyWithStringBuffer(ctx, reinterpret_cast<const char*>(out.answers.data()),
                                        out.answers.size());
      break;
  }
}

// The answers' buffer kept between adds, at most.
constexpr std::size_t kKeptAnswers = std::size_t{64} << 10;

// The body every adding command shares: open, make the filter when missing, add, reply.
int add_items(RedisModuleCtx* ctx, RedisModuleString* name, std::span<const std::string_view> items,
              const Creation& creation, AddReply reply, const char* event) {
  BloomKey key(ctx, name, module_api::kRead | module_api::kWrite);
  if (key.other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  const bool created = key.empty();
  if (created) {
    if (!creation.allowed) return reply_error(ctx, "ERR not found");
    key.create(creation.format, creation.options);
  }
  // Kept between commands (they run on the server's main thread, one at a time), so that an
  // add allocates no answers once the buffer has grown.
  static AddOutcome out;
  out.answers.clear();
  out.refusal.clear();
  out.changed = false;
  const PastRefusal past = reply == AddReply::packed ? PastRefusal::go_on : PastRefusal::stop;
  if (const Refusal refusal = key.value()->add(ctx, items, past, out)) {
    return reply_error(ctx, refusal->c_str());
  }
  reply_added(ctx, out, reply);
  if (out.changed || created) announce(ctx, event, name);
  if (out.answers.capacity() > kKeptAnswers) out.answers = {};  // a huge batch's, not kept
  return module_api::kOk;
}

// The answers of a lookup: zeros at a missing key (and, as RedisBloom answers, at a key of
// another type: no WRONGTYPE); false after an error reply.
bool look_up(RedisModuleCtx* ctx, const BloomKey& key, std::span<const std::string_view> items,
             std::uint8_t* present) {
  std::fill_n(present, items.size(), 0);
  if (const BloomValue* value = key.value()) {
    if (const Refusal refusal = value->contains(ctx, items, present)) {
      reply_error(ctx, refusal->c_str());
      return false;
    }
  }
  return true;
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
  BloomKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (const BloomValue* value = key.value()) return reply_error(ctx, value->occupied().c_str());
  if (key.other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  key.create(format, options);
  RedisModule_ReplyWithSimpleString(ctx, "OK");
  announce(ctx, "bf.reserve", argv[1]);
  return module_api::kOk;
}

// BF.ADD key item
int add(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const std::string_view item = text(argv[2]);
  return add_items(ctx, argv[1], {&item, 1}, Creation{}, AddReply::single, "bf.add");
}

// BF.MADD key item [item ...]
int madd(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  return add_items(ctx, argv[1], items_of(argv, 2, argc), Creation{}, AddReply::array, "bf.madd");
}

// BF.INSERT's options, up to ITEMS (whose first item's index goes to `items_at`); nullopt
// after an error reply. Options are told apart as RedisBloom 2.4 tells them: by their first
// letter (and ERROR from EXPANSION by the second, NOCREATE from NONSCALING by the third); a
// repeated one wins last. On an existing filter the creation options are ignored.
std::optional<Creation> insert_options(RedisModuleCtx* ctx, RedisModuleString** argv, int argc,
                                       int& items_at) {
  Creation creation;
  ChainOptions& options = creation.options;
  long long capacity = static_cast<long long>(options.capacity);
  long long expansion = options.expansion;
  items_at = -1;
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
          creation.allowed = false;
        } else {
          options.scaling = false;
        }
        break;
      case 'c': {
        if (++i == argc) return wrong_arity(ctx);
        const auto value = integer(argv[i]);
        if (!value) return refuse(ctx, "Bad capacity");
        capacity = *value;
        break;
      }
      case 'e': {
        if (++i == argc) return wrong_arity(ctx);
        if (letter(1) == 'r') {
          const auto value = real(argv[i]);
          if (!value) return refuse(ctx, "Bad error rate");
          options.error_rate = *value;
        } else {
          const auto value = integer(argv[i]);
          if (!value) return refuse(ctx, "Bad expansion");
          expansion = *value;
        }
        break;
      }
      case 'f': {
        if (!is_option(argv[i], "FORMAT")) return refuse(ctx, "Unknown argument received");
        const auto chosen = format_option(ctx, argv, argc, i);
        if (!chosen) return std::nullopt;
        creation.format = *chosen;
        ++i;
        break;
      }
      default:
        return refuse(ctx, "Unknown argument received");
    }
  }
  if (items_at < 0 || items_at >= argc) return wrong_arity(ctx);
  if (!(options.error_rate > 0 && options.error_rate < 1) || capacity < 1 || expansion < 1) {
    return refuse(ctx, "Bad argument received");
  }
  if (expansion > kMaxExpansion) {
    return refuse(ctx, "ERR expansion must be between 1 and 32768");
  }
  options.capacity = static_cast<std::uint64_t>(capacity);
  options.expansion = static_cast<std::uint32_t>(expansion);
  return creation;
}

// BF.INSERT key [CAPACITY capacity] [ERROR error] [EXPANSION expansion] [NOCREATE]
//           [NONSCALING] [FORMAT redbloom|redisbloom] ITEMS item [item ...]
int insert(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 4) return RedisModule_WrongArity(ctx);
  int items_at = -1;
  const auto creation = insert_options(ctx, argv, argc, items_at);
  if (!creation) return module_api::kOk;
  return add_items(ctx, argv[1], items_of(argv, items_at, argc), *creation, AddReply::array,
                   "bf.insert");
}

// BF.EXISTS key item
int exists(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const BloomKey key(ctx, argv[1], module_api::kRead);
  const std::string_view item = text(argv[2]);
  std::uint8_t present = 0;
  if (!look_up(ctx, key, {&item, 1}, &present)) return module_api::kOk;
  return RedisModule_ReplyWithLongLong(ctx, present);
}

// BF.MEXISTS key item [item ...]
int mexists(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  const BloomKey key(ctx, argv[1], module_api::kRead);
  const std::vector<std::string_view> items = items_of(argv, 2, argc);
  std::vector<std::uint8_t> present(items.size());
  if (!look_up(ctx, key, items, present.data())) return module_api::kOk;
  RedisModule_ReplyWithArray(ctx, static_cast<long>(items.size()));
  for (const std::uint8_t p : present) RedisModule_ReplyWithLongLong(ctx, p);
  return module_api::kOk;
}

// BF.CARD key: 0 at a missing key.
int card(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  const BloomKey key(ctx, argv[1], module_api::kRead);
  if (key.other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  long long items = 0;
  if (const BloomValue* value = key.value()) {
    if (const Refusal refusal = value->card(items)) return reply_error(ctx, refusal->c_str());
  }
  return RedisModule_ReplyWithLongLong(ctx, items);
}

// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]
int info(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 2 || argc > 3) return RedisModule_WrongArity(ctx);
  const BloomKey key(ctx, argv[1], module_api::kRead);
  if (key.other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  if (key.empty()) return reply_error(ctx, "ERR not found");
  std::vector<InfoField> fields;
  if (const Refusal refusal = key.value()->info(fields)) return reply_error(ctx, refusal->c_str());
  const auto reply_value = [&](const InfoField& field) {
    if (field.value) {
      RedisModule_ReplyWithLongLong(ctx, *field.value);
    } else {
      RedisModule_ReplyWithNull(ctx);
    }
  };
  if (argc == 3) {
    for (const InfoField& field : fields) {
      if (is_option(argv[2], field.option)) {
        RedisModule_ReplyWithArray(ctx, 1);
        reply_value(field);
        return module_api::kOk;
      }
    }
    return reply_error(ctx, "Invalid information value");
  }
  RedisModule_ReplyWithArray(ctx, 2 * static_cast<long>(fields.size()));
  for (const InfoField& field : fields) {
    RedisModule_ReplyWithSimpleString(ctx, field.label);
    reply_value(field);
  }
  return module_api::kOk;
}

// BF.DEBUG key: RedisBloom's lines ("size:ITEMS", then per sub-filter its bytes, bits, probes,
// hash width, capacity, items and error rate).
int debug(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  const BloomKey key(ctx, argv[1], module_api::kRead);
  if (key.other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  if (key.empty()) return reply_error(ctx, "ERR not found");
  std::vector<std::string> lines;
  if (const Refusal refusal = key.value()->debug(lines)) return reply_error(ctx, refusal->c_str());
  RedisModule_ReplyWithArray(ctx, static_cast<long>(lines.size()));
  for (const std::string& line : lines) {
    RedisModule_ReplyWithStringBuffer(ctx, line.data(), line.size());
  }
  return module_api::kOk;
}

// BF.SCANDUMP key iterator: [1, header] for iterator 0, then [next, bits] until [0, ""].
int scandump(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const BloomKey key(ctx, argv[1], module_api::kRead);
  if (key.other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  if (key.empty()) return reply_error(ctx, "ERR not found");
  DumpStep step;
  if (const Refusal refusal = key.value()->scandump(integer(argv[2]), step)) {
    return reply_error(ctx, refusal->c_str());
  }
  RedisModule_ReplyWithArray(ctx, 2);
  RedisModule_ReplyWithLongLong(ctx, step.next);
  if (!step.header.empty()) {
    return RedisModule_ReplyWithStringBuffer(ctx, step.header.data(), step.header.size());
  }
  return RedisModule_ReplyWithStringBuffer(ctx, reinterpret_cast<const char*>(step.chunk.data()),
                                           step.chunk.size());
}

// BF.LOADCHUNK key iterator data: at an empty key, iterator 1 makes the filter from a header
// (redbloom's or RedisBloom's); at a filter, the data is the chunk that ends at byte
// iterator - 1 of its bits.
int loadchunk(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 4) return RedisModule_WrongArity(ctx);
  const auto iterator = integer(argv[2]);
  if (!iterator) return reply_error(ctx, "ERR Second argument must be numeric");
  const std::string_view data = text(argv[3]);
  BloomKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (key.other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  Refusal refusal;
  if (key.empty()) {
    refusal = *iterator == 1 ? key.create_from_header(data) : Refusal("ERR not found");
  } else {
    refusal = key.value()->loadchunk(*iterator, data);
  }
  if (refusal) return reply_error(ctx, refusal->c_str());
  RedisModule_ReplyWithSimpleString(ctx, "OK");
  announce(ctx, "bf.loadchunk", argv[1]);
  return module_api::kOk;
}

// RB.MADD key packed-items: BF.MADD's work on a batch in one argument (packed_items.hpp);
// the reply is one string, a byte per item: 0 present, 1 added, 2 refused (a full
// non-scaling filter or a memory limit). A missing filter is created as BF.MADD would.
int packed_madd(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const auto items = packed::split(text(argv[2]));
  if (!items) return reply_error(ctx, "ERR packed items end inside an item");
  return add_items(ctx, argv[1], *items, Creation{}, AddReply::packed, "bf.madd");
}

// RB.MEXISTS key packed-items: one string, a byte per item, 1 when (probably) present.
int packed_mexists(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  const auto items = packed::split(text(argv[2]));
  if (!items) return reply_error(ctx, "ERR packed items end inside an item");
  const BloomKey key(ctx, argv[1], module_api::kRead);
  if (key.other_type()) return reply_error(ctx, module_api::kWrongTypeError);
  std::string answers(items->size(), '\0');
  if (!look_up(ctx, key, *items, reinterpret_cast<std::uint8_t*>(answers.data()))) {
    return module_api::kOk;
  }
  return RedisModule_ReplyWithStringBuffer(ctx, answers.data(), answers.size());
}

// RB.FILTERID key: the id of the filter at the key, which no filter made later at the same key
// (or anywhere on this server) repeats: a client that remembers it learns that the filter it
// had open was deleted and made again. 0 for a filter the server loaded (creation_ids.hpp);
// nil when the key holds no BF.* filter of the module's types.
int filter_id(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  const BloomKey key(ctx, argv[1], module_api::kRead);
  const auto id = key.value() != nullptr ? key.value()->creation() : std::nullopt;
  if (!id) return RedisModule_ReplyWithNull(ctx);
  return RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(*id));
}

}  // namespace

bool register_bf_commands(RedisModuleCtx* ctx) noexcept {
  static const Command commands[] = {
      counted<reserve>("bf.reserve", "write deny-oom"),
      counted<add>("bf.add", "write deny-oom"),
      counted<madd>("bf.madd", "write deny-oom"),
      counted<insert>("bf.insert", "write deny-oom"),
      counted<exists>("bf.exists", "readonly fast"),
      counted<mexists>("bf.mexists", "readonly fast"),
      counted<card>("bf.card", "readonly fast"),
      counted<info>("bf.info", "readonly fast"),
      counted<debug>("bf.debug", "readonly fast"),
      counted<scandump>("bf.scandump", "readonly"),
      counted<loadchunk>("bf.loadchunk", "write deny-oom"),
      counted<packed_madd>("rb.madd", "write deny-oom"),
      counted<packed_mexists>("rb.mexists", "readonly"),
      counted<filter_id>("rb.filterid", "readonly fast"),
  };
  return register_commands(ctx, commands);
}

}  // namespace redbloom::module
