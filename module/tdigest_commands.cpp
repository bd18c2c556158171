#include "tdigest_commands.hpp"

#include <cfloat>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "command_support.hpp"
#include "command_table.hpp"
#include "tdigest_type.hpp"

namespace redbloom::module {

namespace {

using tdigest::Digest;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr long long kDefaultCompression = 100;

// A number as the server reads it (RedisModule_StringToDouble), with the common case (plain
// decimal digits, correctly rounded like the server's strtod) parsed here without the server's
// checks; anything else (hex, a sign, spaces, out of range, NaN) is left to the server.
std::optional<double> number(const RedisModuleString* argument) {
  const std::string_view t = text(argument);
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec == std::errc() && end == t.data() + t.size() && !t.empty() && t.front() != '+' &&
      !std::isnan(value) && !std::isinf(value)) {
    return value;
  }
  return real(argument);
}

int reply_ok(RedisModuleCtx* ctx) {
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// The digest at an open key; nullptr, with the error replied, when there is none.
Digest* existing(RedisModuleCtx* ctx, const OpenKey& key) {
  if (key.empty()) {
    reply_error(ctx, "ERR T-Digest: key does not exist");
    return nullptr;
  }
  if (RedisModule_ModuleTypeGetType(key.get()) != tdigest_type()) {
    reply_error(ctx, module_api::kWrongTypeError);
    return nullptr;
  }
  return static_cast<Digest*>(RedisModule_ModuleTypeGetValue(key.get()));
}

// Where `word` is among argv[from, argc) (case-insensitively), counted from `from`; -1 if absent.
int position_of(RedisModuleString** argv, int from, int argc, std::string_view word) {
  for (int i = from; i < argc; ++i) {
    if (is_option(argv[i], word)) return i - from;
  }
  return -1;
}

// A compression argument; nullopt with the error replied.
std::optional<long long> compression_of(RedisModuleCtx* ctx, const RedisModuleString* argument) {
  const auto compression = integer(argument);
  if (!compression) {
    reply_error(ctx, "ERR T-Digest: error parsing compression parameter");
    return std::nullopt;
  }
  if (*compression <= 0) {
    reply_error(ctx, "ERR T-Digest: compression parameter needs to be a positive integer");
    return std::nullopt;
  }
  return compression;
}

// A new digest; nullptr, with the error replied, when it would pass the memory limit.
std::unique_ptr<Digest> new_digest(RedisModuleCtx* ctx, long long compression) {
  if (!tdigest_fits(compression)) {
    reply_error(ctx,
                "ERR T-Digest: allocation failed: a digest of that compression is over the "
                "module's memory limit per value (MAX_FILTER_BYTES)");
    return nullptr;
  }
  return std::make_unique<Digest>(compression, tdigest_allocator());
}

// TDIGEST.CREATE key [COMPRESSION compression]
int create(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2 && argc != 4) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  if (!key.empty()) {
    return reply_error(ctx, RedisModule_ModuleTypeGetType(key.get()) == tdigest_type()
                                ? "ERR T-Digest: key already exists"
                                : module_api::kWrongTypeError);
  }
  long long compression = kDefaultCompression;
  if (argc == 4) {
    // As RedisBloom reads it: COMPRESSION anywhere after the key, the number always last.
    if (position_of(argv, 2, argc, "COMPRESSION") < 0) {
      return reply_error(ctx, "ERR T-Digest: wrong keyword");
    }
    const auto given = compression_of(ctx, argv[3]);
    if (!given) return module_api::kOk;
    compression = *given;
  }
  auto digest = new_digest(ctx, compression);
  if (!digest) return module_api::kOk;
  if (RedisModule_ModuleTypeSetValue(key.get(), tdigest_type(), digest.get()) != module_api::kOk) {
    return reply_error(ctx, "ERR T-Digest: error setting value");
  }
  digest.release();
  RedisModule_ReplicateVerbatim(ctx);
  return reply_ok(ctx);
}

// TDIGEST.RESET key
int reset(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  digest->reset();
  RedisModule_ReplicateVerbatim(ctx);
  return reply_ok(ctx);
}

// TDIGEST.ADD key value [value ...]
int add(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(argc - 2));
  for (int i = 2; i < argc; ++i) {
    const auto value = number(argv[i]);
    if (!value || std::isnan(*value)) {
      return reply_error(ctx, "ERR T-Digest: error parsing val parameter");
    }
    if (*value < -DBL_MAX || *value > DBL_MAX) {
      return reply_error(ctx, "ERR T-Digest: val parameter needs to be a finite number");
    }
    values.push_back(*value);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!digest->add(values[i], 1)) {
      // The values before it are in: replicas get the command too and stop at the same one.
      if (i > 0) RedisModule_ReplicateVerbatim(ctx);
      return reply_error(ctx, "ERR T-Digest: overflow detected");
    }
  }
  RedisModule_ReplicateVerbatim(ctx);
  return reply_ok(ctx);
}

// The keys of TDIGEST.MERGE, for cluster routing: the destination and the numkeys sources.
int merge_keys(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  RedisModule_KeyAtPos(ctx, 1);
  const auto numkeys = argc >= 3 ? integer(argv[2]) : std::nullopt;
  if (numkeys && *numkeys >= 1 && *numkeys <= argc - 3) {
    for (long long i = 0; i < *numkeys; ++i) RedisModule_KeyAtPos(ctx, 3 + static_cast<int>(i));
  }
  return module_api::kOk;
}

struct MergeOptions {
  long long compression = 0;
  bool max_of_inputs = false;  // no COMPRESSION given: the largest of the inputs'
  bool override = false;
};

// The options after the source keys; nullopt with the error replied.
std::optional<MergeOptions> merge_options(RedisModuleCtx* ctx, RedisModuleString** argv, int argc,
                                          int rest, const Digest* destination) {
  MergeOptions o;
  o.compression = destination != nullptr ? static_cast<long long>(destination->compression()) : 0;
  o.max_of_inputs = destination == nullptr;
  if (rest >= argc) return o;
  const int compression_at = position_of(argv, rest, argc, "COMPRESSION");
  if (compression_at >= 0) {
    o.max_of_inputs = false;
    if (rest + compression_at + 1 >= argc) {
      RedisModule_WrongArity(ctx);
      return std::nullopt;
    }
    const auto given = compression_of(ctx, argv[rest + compression_at + 1]);
    if (!given) return std::nullopt;
    o.compression = *given;
  }
  if (position_of(argv, rest, argc, "OVERRIDE") >= 0) {
    o.override = true;
    if (compression_at < 0) {
      o.max_of_inputs = true;
      o.compression = 0;
    }
  } else if (compression_at < 0) {
    reply_error(ctx, "ERR T-Digest: wrong keyword");
    return std::nullopt;
  }
  return o;
}

// The source digests of TDIGEST.MERGE; empty with the error replied when one is missing.
std::vector<Digest*> merge_sources(RedisModuleCtx* ctx, RedisModuleString** argv, int numkeys,
                                   Digest* destination) {
  std::vector<Digest*> sources;
  for (int i = 0; i < numkeys; ++i) {
    RedisModuleString* name = argv[3 + i];
    const std::string_view a = text(argv[1]);
    if (text(name) == a) {
      if (destination == nullptr) {
        reply_error(ctx, "ERR T-Digest: key does not exist");
        return {};
      }
      sources.push_back(destination);
      continue;
    }
    OpenKey key(ctx, name, module_api::kRead);
    Digest* source = existing(ctx, key);
    if (source == nullptr) return {};
    sources.push_back(source);
  }
  return sources;
}

// TDIGEST.MERGE destination numkeys source [source ...] [COMPRESSION compression] [OVERRIDE]
int merge(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (RedisModule_IsKeysPositionRequest(ctx)) return merge_keys(ctx, argv, argc);
  if (argc < 4) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  Digest* destination = nullptr;
  if (!key.empty()) {
    if (RedisModule_ModuleTypeGetType(key.get()) != tdigest_type()) {
      return reply_error(ctx, module_api::kWrongTypeError);
    }
    destination = static_cast<Digest*>(RedisModule_ModuleTypeGetValue(key.get()));
  }
  const auto numkeys = integer(argv[2]);
  if (!numkeys) return reply_error(ctx, "ERR T-Digest: error parsing numkeys");
  if (*numkeys <= 0)
    return reply_error(ctx, "ERR T-Digest: numkeys needs to be a positive integer");
  if (*numkeys > argc - 3) return RedisModule_WrongArity(ctx);
  const int n = static_cast<int>(*numkeys);
  auto options = merge_options(ctx, argv, argc, 3 + n, destination);
  if (!options) return module_api::kOk;
  const std::vector<Digest*> sources = merge_sources(ctx, argv, n, destination);
  if (sources.empty()) return module_api::kOk;
  if (options->max_of_inputs) {
    for (const Digest* source : sources) {
      options->compression =
          std::max(options->compression, static_cast<long long>(source->compression()));
    }
  }
  auto merged = new_digest(ctx, options->compression);
  if (!merged) return module_api::kOk;
  if (destination != nullptr && !options->override) merged->merge_from(*destination);
  for (Digest* source : sources) {
    if (!merged->merge_from(*source)) return reply_error(ctx, "ERR T-Digest: overflow detected");
  }
  if (RedisModule_ModuleTypeSetValue(key.get(), tdigest_type(), merged.get()) != module_api::kOk) {
    return reply_error(ctx, "ERR T-Digest: error setting value");
  }
  merged.release();
  RedisModule_ReplicateVerbatim(ctx);
  return reply_ok(ctx);
}

// TDIGEST.MIN key / TDIGEST.MAX key: NaN for an empty digest.
template <bool Max>
int extreme(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  const double value = digest->size() > 0 ? (Max ? digest->max() : digest->min()) : kNaN;
  return RedisModule_ReplyWithDouble(ctx, value);
}

int reply_doubles(RedisModuleCtx* ctx, const std::vector<double>& values) {
  RedisModule_ReplyWithArray(ctx, static_cast<long>(values.size()));
  for (const double v : values) RedisModule_ReplyWithDouble(ctx, v);
  return module_api::kOk;
}

// The doubles from argv[2] on; nullopt with `error` replied when one does not parse (or, with
// `no_nan`, is NaN).
std::optional<std::vector<double>> doubles_of(RedisModuleCtx* ctx, RedisModuleString** argv,
                                              int argc, const char* error, bool no_nan) {
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(argc - 2));
  for (int i = 2; i < argc; ++i) {
    const auto value = number(argv[i]);
    if (!value || (no_nan && std::isnan(*value))) {
      reply_error(ctx, error);
      return std::nullopt;
    }
    values.push_back(*value);
  }
  return values;
}

// Rounds half down in magnitude (2.5 -> 2), as RedisBloom's forward rank does.
double round_half_down(double f) {
  double whole = 0;
  const double fraction = std::modf(f, &whole);
  if (std::fabs(fraction) <= 0.5) return whole;
  return whole >= 0.0 ? whole + 1.0 : whole - 1.0;
}

// TDIGEST.RANK key value [value ...] / TDIGEST.REVRANK: -2 for an empty digest, -1 past the
// end the rank does not count from.
template <bool Reverse>
int rank(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  const auto values = doubles_of(ctx, argv, argc, "ERR T-Digest: error parsing value", true);
  if (!values) return module_api::kOk;
  const double size = static_cast<double>(digest->size());
  const double min = digest->min();
  const double max = digest->max();
  RedisModule_ReplyWithArray(ctx, static_cast<long>(values->size()));
  for (const double value : *values) {
    double r = 0;
    if (size == 0) {
      r = -2;
    } else if (value < min) {
      r = Reverse ? size : -1;
    } else if (value > max) {
      r = Reverse ? -1 : size;
    } else {
      const double below = digest->cdf(value) * size;
      r = Reverse ? std::round(size - std::round(below)) : round_half_down(below);
    }
    RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(r));
  }
  return module_api::kOk;
}

// TDIGEST.BYRANK key rank [rank ...] / TDIGEST.BYREVRANK
template <bool Reverse>
int by_rank(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  std::vector<long long> ranks;
  for (int i = 2; i < argc; ++i) {
    const auto r = integer(argv[i]);
    if (!r) return reply_error(ctx, "ERR T-Digest: error parsing rank");
    if (*r < 0) return reply_error(ctx, "ERR T-Digest: rank needs to be non negative");
    ranks.push_back(*r);
  }
  const double size = static_cast<double>(digest->size());
  std::vector<double> out;
  for (const long long given : ranks) {
    const double r = static_cast<double>(given);
    if (size == 0) {
      out.push_back(kNaN);
    } else if (r == 0) {
      out.push_back(Reverse ? digest->max() : digest->min());
    } else if (r >= size) {
      out.push_back(Reverse ? -INFINITY : INFINITY);
    } else {
      out.push_back(digest->quantile((Reverse ? size - r - 1 : r) / size));
    }
  }
  return reply_doubles(ctx, out);
}

// TDIGEST.QUANTILE key quantile [quantile ...]
int quantile(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  const auto qs = doubles_of(ctx, argv, argc, "ERR T-Digest: error parsing quantile", false);
  if (!qs) return module_api::kOk;
  for (const double q : *qs) {
    if (q < 0 || q > 1.0) return reply_error(ctx, "ERR T-Digest: quantile should be in [0,1]");
  }
  // Each ascending run in one walk over the centroids, as RedisBloom answers them.
  std::vector<double> out(qs->size());
  for (std::size_t start = 0; start < qs->size();) {
    std::size_t end = start + 1;
    while (end < qs->size() && (*qs)[end - 1] <= (*qs)[end]) ++end;
    digest->ascending_quantiles(std::span(*qs).subspan(start, end - start),
                                std::span(out).subspan(start, end - start));
    start = end;
  }
  return reply_doubles(ctx, out);
}

// TDIGEST.CDF key value [value ...]
int cdf(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  const auto values = doubles_of(ctx, argv, argc, "ERR T-Digest: error parsing cdf", false);
  if (!values) return module_api::kOk;
  std::vector<double> out;
  for (const double value : *values) out.push_back(digest->cdf(value));
  return reply_doubles(ctx, out);
}

// TDIGEST.TRIMMED_MEAN key low_cut_percentile high_cut_percentile
int trimmed_mean(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 4) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  const auto low = real(argv[2]);
  if (!low) return reply_error(ctx, "ERR T-Digest: error parsing low_cut_percentile");
  const auto high = real(argv[3]);
  if (!high) return reply_error(ctx, "ERR T-Digest: error parsing high_cut_percentile");
  if (*low < 0.0 || *low > 1.0 || *high < 0.0 || *high > 1.0) {
    return reply_error(
        ctx, "ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]");
  }
  if (*low >= *high) {
    return reply_error(ctx,
                       "ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile");
  }
  return RedisModule_ReplyWithDouble(ctx, digest->trimmed_mean(*low, *high));
}

// TDIGEST.INFO key
int info(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 2) return RedisModule_WrongArity(ctx);
  OpenKey key(ctx, argv[1], module_api::kRead);
  Digest* digest = existing(ctx, key);
  if (digest == nullptr) return module_api::kOk;
  const long long memory = static_cast<long long>(
      sizeof(void*) + 2 * static_cast<std::size_t>(digest->capacity()) * sizeof(double));
  const std::pair<const char*, long long> fields[] = {
      {"Compression", static_cast<long long>(digest->compression())},
      {"Capacity", digest->capacity()},
      {"Merged nodes", digest->merged_nodes()},
      {"Unmerged nodes", digest->unmerged_nodes()},
      {"Merged weight", digest->merged_weight()},
      {"Unmerged weight", digest->unmerged_weight()},
      {"Observations", digest->size()},
      {"Total compressions", digest->total_compressions()},
      {"Memory usage", memory},
  };
  RedisModule_ReplyWithArray(ctx, 2 * static_cast<long>(std::size(fields)));
  for (const auto& [name, value] : fields) {
    RedisModule_ReplyWithSimpleString(ctx, name);
    RedisModule_ReplyWithLongLong(ctx, value);
  }
  return module_api::kOk;
}

}  // namespace

bool register_tdigest_commands(RedisModuleCtx* ctx) noexcept {
  static const Command commands[] = {
      counted<create>("tdigest.create", "write deny-oom"),
      counted<add>("tdigest.add", "write deny-oom"),
      counted<reset>("tdigest.reset", "write deny-oom"),
      counted<merge>("tdigest.merge", "write deny-oom getkeys-api", 0, 0, 0),
      counted<extreme<false>>("tdigest.min", "readonly"),
      counted<extreme<true>>("tdigest.max", "readonly"),
      counted<quantile>("tdigest.quantile", "readonly"),
      counted<by_rank<false>>("tdigest.byrank", "readonly"),
      counted<by_rank<true>>("tdigest.byrevrank", "readonly"),
      counted<rank<false>>("tdigest.rank", "readonly"),
      counted<rank<true>>("tdigest.revrank", "readonly"),
      counted<cdf>("tdigest.cdf", "readonly"),
      counted<trimmed_mean>("tdigest.trimmed_mean", "readonly"),
      counted<info>("tdigest.info", "readonly"),
  };
  return register_commands(ctx, commands);
}

}  // namespace redbloom::module
