#include "stream_commands.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command_support.hpp"
#include "command_table.hpp"
#include "core/bit_order.hpp"
#include "core/item_hash_inline.hpp"
#include "core/kernel_parts.hpp"
#include "core/layout.hpp"
#include "core/packed_items.hpp"
#include "core/partition_view.hpp"
#include "redbloom/stream.hpp"

namespace redbloom::module {

namespace {

// RB.STREAM[_RO] numkeys roster slice... mode now-ms slice-ms older first header-bytes M budget
//           partitions index M x (layout hashes partition-bits capacity) packed-items
// RB.STREAMH[_RO] ... the same with hashed-items: the items' 16-byte hashes (packed_items.hpp),
//           which the client computed anyway to route them, so the server does not hash.
// The keys, the header, the roster, the statuses, the reply and the REDBLOOMSTREAM errors are
// the stream script's (src/redis/stream_script.hpp); instead of bit offsets it takes the items
// and every link's geometry, so it never answers `links`.
constexpr int kFixedArgs = 10;  // mode .. index
constexpr int kLinkArgs = 4;
constexpr long long kMaxHeaderBytes = 1 << 20;

struct Link {
  FilterParams params;
  std::uint64_t bytes = 0;
  std::uint64_t capacity = 0;
};

// How a command's last argument gives the items.
enum class Items { packed, hashed };

struct StreamRequest {
  const char* name = "RB.STREAM";  // the write command, as replicated
  std::int64_t numkeys = 0;        // the roster and the slices
  char mode = 'l';
  bool guarded = false;  // upper-case mode: the roster was made with the filter
  int now_arg = 0;       // where now-ms is in argv
  std::int64_t now_ms = -1;
  std::int64_t slice_ms = 0;
  std::int64_t older = 0;
  std::int64_t first = 0;
  std::int64_t last = 0;  // the last declared slice
  std::uint64_t header = 0;
  std::uint64_t budget = 0;
  std::uint64_t partitions = 0;
  std::uint64_t index = 0;
  std::vector<Link> links;
  std::vector<std::uint64_t> start;     // byte offset of link l in a slice key; start[M] its end
  std::vector<std::string_view> items;  // packed form
  std::string_view hashed;              // hashed form: 16 bytes an item
};

bool bad(RedisModuleCtx* ctx, const char* what) {
  const std::string message = std::string("ERR bad RB.STREAM[H][_RO] arguments: ") + what;
  reply_error(ctx, message.c_str());
  return false;
}

// The roster and the slices are distinct keys: one key under two handles would be written
// through one while the other still points at its old bytes.
bool distinct_keys(RedisModuleString** argv, std::int64_t numkeys) {
  std::vector<std::string_view> names;
  names.reserve(static_cast<std::size_t>(numkeys));
  for (std::int64_t k = 0; k < numkeys; ++k) names.push_back(text(argv[2 + k]));
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) == names.end();
}

// The links' parameters (layout hashes partition-bits capacity, each), and where each link
// starts in a slice key, after its header.
bool parse_links(RedisModuleCtx* ctx, RedisModuleString** argv, int base, int links,
                 StreamRequest& r) {
  r.start.assign(1, r.header);
  for (int l = 0; l < links; ++l) {
    const int at = base + kFixedArgs + kLinkArgs * l;
    const auto layout = parse_layout(text(argv[at]));
    const auto hashes = integer(argv[at + 1]);
    const auto bits = integer(argv[at + 2]);
    const auto capacity = integer(argv[at + 3]);
    if (!layout || !hashes || !bits || !capacity || *hashes < 1 || *hashes > kMaxHashes ||
        *bits <= 0 || *bits % kBlockBits != 0 ||
        static_cast<std::uint64_t>(*bits) > kRedisMaxStringBits || *capacity < 0) {
      return bad(ctx, "a link is layout, hashes, partition-bits (a multiple of 512) and capacity");
    }
    Link link;
    link.params.layout = *layout;
    link.params.hashes = static_cast<std::uint32_t>(*hashes);
    link.params.partition_bits = static_cast<std::uint64_t>(*bits);
    link.params.partitions = r.partitions;
    link.params.hash_scheme = kCurrentHashScheme;
    link.bytes = link.params.partition_bytes();
    link.capacity = static_cast<std::uint64_t>(*capacity);
    r.links.push_back(link);
    r.start.push_back(r.start.back() + link.bytes);
    if (r.start.back() > kRedisMaxStringBits / 8) {
      return bad(ctx, "the links would pass Redis's 512 MiB string");
    }
  }
  return true;
}

// The last argument: the packed items, or their hashes (16 bytes each).
bool parse_items(RedisModuleCtx* ctx, std::string_view last, Items form, StreamRequest& r) {
  if (form == Items::hashed) {
    r.name = "RB.STREAMH";
    r.hashed = last;
    if (r.hashed.size() % packed::kHashedItemBytes != 0) {
      reply_error(ctx, "ERR hashed items are 16 bytes each");
      return false;
    }
    return true;
  }
  auto items = packed::split(last);
  if (!items) {
    reply_error(ctx, "ERR packed items end inside an item");
    return false;
  }
  r.items = std::move(*items);
  return true;
}

bool parse(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, bool read_only, Items form,
           StreamRequest& r) {
  const auto numkeys = integer(argv[1]);
  if (!numkeys || *numkeys < 2 || *numkeys > argc - 2 - kFixedArgs - kLinkArgs - 1) {
    return bad(ctx, "numkeys must count the roster and at least one slice key");
  }
  r.numkeys = *numkeys;
  const int base = 2 + static_cast<int>(r.numkeys);
  const std::string_view mode = text(argv[base]);
  const std::string_view modes = read_only ? "liLI" : "aliALI";
  if (mode.size() != 1 || modes.find(mode[0]) == std::string_view::npos) {
    return bad(ctx, read_only ? "mode is l or i (L or I guarded)"
                              : "mode is a, l or i (A, L or I guarded)");
  }
  r.guarded = mode[0] >= 'A' && mode[0] <= 'Z';
  r.mode = static_cast<char>(r.guarded ? mode[0] - 'A' + 'a' : mode[0]);
  r.now_arg = base + 1;
  const auto now = integer(argv[base + 1]);
  const auto slice_ms = integer(argv[base + 2]);
  const auto older = integer(argv[base + 3]);
  const auto first = integer(argv[base + 4]);
  const auto header = integer(argv[base + 5]);
  const auto links = integer(argv[base + 6]);
  const auto budget = integer(argv[base + 7]);
  const auto partitions = integer(argv[base + 8]);
  const auto index = integer(argv[base + 9]);
  if (!now || !slice_ms || !older || !first || !header || !links || !budget || !partitions ||
      !index || *slice_ms < 0 || *older < 0 || *older > INT32_MAX || *budget < 0) {
    return bad(ctx,
               "now-ms, slice-ms, older, first, header-bytes, links, budget, partitions and index "
               "are integers; slice-ms, older and budget not negative, older below 2^31");
  }
  // Without a window there is one slice: an older one would be looked for and found lost.
  if (*slice_ms == 0 && *older != 0)
    return bad(ctx, "older must be 0 without a window (slice-ms 0)");
  if (*links < 1 || *links > kMaxStreamLinks ||
      argc != base + kFixedArgs + kLinkArgs * static_cast<int>(*links) + 1) {
    return bad(ctx, "M links of layout hashes partition-bits capacity, then the packed items");
  }
  if (*header % 8 != 0 || *header < 8 * (1 + 2 * *links) || *header > kMaxHeaderBytes) {
    return bad(ctx, "header-bytes must hold the link count and two fields per link");
  }
  if (*partitions < 1 || *partitions > (1LL << 32) || *index < 0 || *index >= *partitions) {
    return bad(ctx, "index must be a partition of partitions (at most 2^32)");
  }
  r.now_ms = *now;
  r.slice_ms = *slice_ms;
  r.older = *older;
  r.first = *first;
  // The slice numbers are the client's: every sum and product of them below is checked here,
  // so that no loop over the slices runs past the declared keys.
  std::int64_t retire = 0;
  if (__builtin_add_overflow(r.first, r.numkeys - 2, &r.last) || r.last == INT64_MAX) {
    return bad(ctx, "the last declared slice (first + numkeys - 2) must be below 2^63 - 1");
  }
  if (r.slice_ms > 0 && (__builtin_add_overflow(r.last, 1 + r.older, &retire) ||
                         __builtin_mul_overflow(retire, r.slice_ms, &retire))) {
    return bad(ctx,
               "the last declared slice's retirement ((slice + 1 + older) x slice-ms) "
               "must fit a 64-bit count of milliseconds");
  }
  if (!distinct_keys(argv, r.numkeys)) {
    return bad(ctx, "a key is named twice: the roster and each slice need keys of their own");
  }
  r.header = static_cast<std::uint64_t>(*header);
  r.budget = static_cast<std::uint64_t>(*budget);
  r.partitions = static_cast<std::uint64_t>(*partitions);
  r.index = static_cast<std::uint64_t>(*index);
  if (!parse_links(ctx, argv, base, static_cast<int>(*links), r)) return false;
  return parse_items(ctx, text(argv[argc - 1]), form, r);
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}

std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  return a - floor_div(a, b) * b;
}

// The header's and the roster's big-endian i64 fields.
std::int64_t field(const std::uint8_t* bytes, std::uint64_t index) {
  std::uint64_t value = 0;
  for (std::size_t b = 0; b < 8; ++b) value = (value << 8) | bytes[8 * index + b];
  return static_cast<std::int64_t>(value);
}

void set_field(std::uint8_t* bytes, std::uint64_t index, std::int64_t value) {
  auto bits = static_cast<std::uint64_t>(value);
  for (std::size_t b = 8; b-- > 0;) {
    bytes[8 * index + b] = static_cast<std::uint8_t>(bits & 0xff);
    bits >>= 8;
  }
}

const char* type_name(int type) {
  switch (type) {
    case module_api::kKeyTypeList:
      return "list";
    case module_api::kKeyTypeHash:
      return "hash";
    case module_api::kKeyTypeSet:
      return "set";
    case module_api::kKeyTypeZset:
      return "zset";
    case module_api::kKeyTypeStream:
      return "stream";
    default:
      return "module";
  }
}

int stream_error(RedisModuleCtx* ctx, const char* kind, std::int64_t index,
                 const std::string& detail) {
  const std::string message =
      std::string("REDBLOOMSTREAM ") + kind + " " + std::to_string(index) + " " + detail;
  return reply_error(ctx, message.c_str());
}

// {status, done, flags, links, G, now}, with `extra` more entries to follow.
void reply_head(RedisModuleCtx* ctx, const char* status, std::size_t done, const std::string& flags,
                std::int64_t links, std::int64_t slice, std::int64_t now, std::size_t extra = 0) {
  RedisModule_ReplyWithArray(ctx, static_cast<long>(6 + extra));
  RedisModule_ReplyWithStringBuffer(ctx, status, std::strlen(status));
  RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(done));
  RedisModule_ReplyWithStringBuffer(ctx, flags.data(), flags.size());
  RedisModule_ReplyWithLongLong(ctx, links);
  RedisModule_ReplyWithLongLong(ctx, slice);
  RedisModule_ReplyWithLongLong(ctx, now);
}

int reply_time(RedisModuleCtx* ctx, std::int64_t slice, std::int64_t now) {
  reply_head(ctx, "time", 0, {}, 0, slice, now);
  return module_api::kOk;
}

// A clone with POPCNT where the CPU has it: built for baseline x86-64, std::popcount is a call
// into libgcc a word, and a slice may hold hundreds of MiB.
#if defined(__x86_64__)
__attribute__((target_clones("popcnt", "default")))
#endif
std::uint64_t
set_bits(const std::uint8_t* bytes, std::uint64_t length) {
  std::uint64_t ones = 0;
  std::uint64_t at = 0;
  for (; at + 8 <= length; at += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes + at, 8);
    ones += static_cast<std::uint64_t>(std::popcount(word));
  }
  for (; at < length; ++at) ones += static_cast<std::uint64_t>(std::popcount(bytes[at]));
  return ones;
}

// A live slice: its key, opened for the command, and what its header says.
struct Slice {
  std::unique_ptr<OpenKey> key;
  std::uint32_t links = 0;  // 0: the key does not exist
  std::uint8_t* bytes = nullptr;
  std::uint64_t length = 0;
};

// One item's place in link l of a slice: every slice's link l has the same parameters, so the
// place is worked out once per item and link and then tested in each live slice that has it.
// A blocked item's block and word masks (layout.hpp) are read inline; classic items go through
// PartitionView.
class Place {
 public:
  Place(const ItemHash& h, const FilterParams& params) noexcept
      : hash_(h), params_(params), blocked_(params.layout == Layout::blocked) {
    if (blocked_) {
      offset_ = layout::blocked_block_of(h, params.partition_bits) * (kBlockBits / 8);
      word_masks(h.hi, params.hashes);
    }
  }

  // True iff every bit of the item is set in the link at `link`.
  [[nodiscard]] bool in(const std::uint8_t* link) const noexcept {
    if (!blocked_)
      return PartitionView(const_cast<std::uint8_t*>(link), params_).contains_one(hash_);
    Pair line[kPairs];
    std::memcpy(line, link + offset_, sizeof line);
    return !any(missing_in(line));
  }

  // Sets the item's bits in the link at `link`; true iff one of them was 0. The line is read
  // and written whole (unchanged words as they were): no branch a word.
  bool set_in(std::uint8_t* link) const noexcept {
    if (!blocked_) return PartitionView(link, params_).add_one(hash_);
    Pair line[kPairs];
    std::memcpy(line, link + offset_, sizeof line);
    if (!any(missing_in(line))) return false;
    for (std::size_t p = 0; p < kPairs; ++p) line[p] |= mask_[p];
    std::memcpy(link + offset_, line, sizeof line);
    return true;
  }

 private:
  // Two words in one vector register (SSE2 on x86-64, NEON on ARM): the line's words kept in
  // general registers went through the stack, where a wide reload of narrow stores stalls.
  using Pair = std::uint64_t __attribute__((vector_size(16)));
  static constexpr std::size_t kPairs = kBlockBits / 128;

  [[nodiscard]] Pair missing_in(const Pair (&line)[kPairs]) const noexcept {
    Pair missing = mask_[0] & ~line[0];
    for (std::size_t p = 1; p < kPairs; ++p) missing |= mask_[p] & ~line[p];
    return missing;
  }
  static bool any(Pair v) noexcept { return (v[0] | v[1]) != 0; }

  // layout::blocked_word_masks's masks, worked out word by word rather than probe by probe:
  // round r probes word w with its probe 8r + ((w - start) mod 8), so each word is a shift and
  // a compare a round, kept in a register. Probe by probe, each probe updated a word in memory
  // that the next might update again, and an item of a growing filter pays that once per link.
  // (The module-against-script tests check the bits are the same.)
  void word_masks(std::uint64_t hi, std::uint32_t k) noexcept {
    const unsigned start = layout::blocked_start_word(hi);
    std::uint64_t words[kBlockBits / 64] = {};
    for (std::uint32_t base = 0; base < k; base += 8) {
      const std::uint64_t x = hi * layout::kRoundMultipliers[base / 8];
      const std::uint32_t count = std::min<std::uint32_t>(8, k - base);
#pragma GCC unroll 8
      for (unsigned w = 0; w < kBlockBits / 64; ++w) {
        const std::uint64_t bit = word_mask((x >> layout::blocked_field_shift(w)) & 63);
        words[w] |= ((w - start) & 7) < count ? bit : 0;
      }
    }
    for (std::size_t p = 0; p < kPairs; ++p) mask_[p] = Pair{words[2 * p], words[2 * p + 1]};
  }

  const ItemHash& hash_;
  const FilterParams& params_;
  bool blocked_;
  std::uint64_t offset_ = 0;
  Pair mask_[kPairs] = {};
};

// How far ahead of the item being tested its lines are requested: far enough that the tests of
// the items in between cover the misses of a window's slices (out of the caches once the live
// slices pass L2), near enough that the requested lines are still there.
constexpr std::size_t kAhead = 16;

// Requests item h's line in links 0 .. links - 1 of every live slice that has them (blocked
// links; a classic item's bits are spread over its link). Prefetches only: the lines of a
// stale pointer or a link not made yet cost a wasted request, never a fault.
template <kernels::parts::Op op>
void request_lines(const StreamRequest& r, const std::vector<Slice>& live, const ItemHash& h,
                   std::uint32_t links) noexcept {
  for (std::uint32_t l = 0; l < links && l < r.links.size(); ++l) {
    const FilterParams& params = r.links[l].params;
    if (params.layout != Layout::blocked) continue;
    const std::uint64_t offset =
        r.start[l] + layout::blocked_block_of(h, params.partition_bits) * (kBlockBits / 8);
    for (const Slice& slice : live) {
      if (slice.links > l) kernels::parts::prefetch<op>(slice.bytes + offset);
    }
  }
  // GCC takes a function of prefetches only for one without effects and drops its calls; an
  // empty volatile asm is an effect it keeps.
  asm volatile("");
}

// Replicates the command as it ran, with the time it used: a replica or an AOF replay reading
// its own clock could pick another slice.
void replicate(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, const StreamRequest& r,
               std::int64_t now) {
  if (r.now_ms >= 0) {
    RedisModule_ReplicateVerbatim(ctx);
    return;
  }
  std::vector<RedisModuleString*> args(argv + 1, argv + argc);
  RedisModuleString* pinned = RedisModule_CreateStringFromLongLong(ctx, now);
  args[static_cast<std::size_t>(r.now_arg - 1)] = pinned;
  RedisModule_Replicate(ctx, r.name, "v", args.data(), args.size());
  RedisModule_FreeString(ctx, pinned);
}

// Where the declared slices are: slice g's key is argv[3 + g - first], the script's key index
// g - first + 2. parse() bounds first .. last so that none of this overflows.
struct Declared {
  RedisModuleString** argv;
  std::int64_t first;
  std::int64_t last;
  [[nodiscard]] RedisModuleString* key_of(std::int64_t g) const { return argv[3 + (g - first)]; }
  [[nodiscard]] std::int64_t index_of(std::int64_t g) const { return g - first + 2; }
};

// The current slice: the one of now, or the newest declared one that exists (time never goes
// back for a partition). nullopt when the declared slices do not cover it and its live ones:
// the `time` reply is then sent.
std::optional<std::int64_t> current_slice(RedisModuleCtx* ctx, const StreamRequest& r,
                                          const Declared& d, std::int64_t now) {
  std::int64_t current = r.slice_ms > 0 ? floor_div(now, r.slice_ms) : 0;
  if (current > d.last) {
    reply_time(ctx, current, now);
    return std::nullopt;
  }
  std::int64_t newest = current;
  for (std::int64_t g = std::max(current + 1, d.first); g <= d.last; ++g) {
    const OpenKey key(ctx, d.key_of(g), module_api::kRead);
    if (!key.empty()) newest = g;
  }
  if (newest == d.last && d.last > current) {
    reply_time(ctx, d.last, now);
    return std::nullopt;
  }
  if (newest - r.older < d.first) {
    reply_time(ctx, newest, now);
    return std::nullopt;
  }
  return newest;
}

// The roster (stream_script.hpp), opened for the command; `ring` its bytes, nullptr when the
// key does not exist.
struct Roster {
  std::unique_ptr<OpenKey> key;
  std::uint8_t* ring = nullptr;
  std::int64_t slots = 0;

  // True once slice g's key was made.
  [[nodiscard]] bool made(std::int64_t g) const {
    return ring != nullptr && field(ring, static_cast<std::uint64_t>(floor_mod(g, slots))) == g + 1;
  }
};

// Opens the roster; false after an error reply (another type, another length, or gone when the
// filter made it).
bool open_roster(RedisModuleCtx* ctx, RedisModuleString* name, const StreamRequest& r,
                 Roster& roster) {
  roster.slots = r.older + 1;
  const int mode = r.mode == 'a' ? module_api::kRead | module_api::kWrite : module_api::kRead;
  roster.key = std::make_unique<OpenKey>(ctx, name, mode);
  if (roster.key->empty()) {
    if (!r.guarded) return true;
    stream_error(ctx, "gone", 1, "0");
    return false;
  }
  if (RedisModule_KeyType(roster.key->get()) != module_api::kKeyTypeString) {
    reply_error(ctx, module_api::kWrongTypeError);
    return false;
  }
  const std::size_t length = RedisModule_ValueLength(roster.key->get());
  if (length != 8 * static_cast<std::uint64_t>(roster.slots)) {
    stream_error(ctx, "roster", 1, std::to_string(length));
    return false;
  }
  // A string this short may be stored as a number: DMA decodes it in place (even to read), so
  // its bytes are there.
  std::size_t ignored = 0;
  roster.ring =
      reinterpret_cast<std::uint8_t*>(RedisModule_StringDMA(roster.key->get(), &ignored, mode));
  return true;
}

// Opens the live slices current - older .. current (the current one writable when adding) and
// checks each against its header; false after an error reply.
bool open_live(RedisModuleCtx* ctx, const StreamRequest& r, const Declared& d, const Roster& roster,
               std::int64_t current, std::vector<Slice>& live) {
  const bool adding = r.mode == 'a';
  live.resize(static_cast<std::size_t>(r.older) + 1);
  for (std::int64_t g = current - r.older; g <= current; ++g) {
    Slice& slice = live[static_cast<std::size_t>(g - (current - r.older))];
    const bool writable = adding && g == current;
    slice.key = std::make_unique<OpenKey>(
        ctx, d.key_of(g), writable ? module_api::kRead | module_api::kWrite : module_api::kRead);
    if (slice.key->empty()) {
      if (roster.made(g)) {
        stream_error(ctx, "lost", d.index_of(g), "0");
        return false;
      }
      continue;
    }
    const int type = RedisModule_KeyType(slice.key->get());
    if (type != module_api::kKeyTypeString) {
      stream_error(ctx, "wrongtype", d.index_of(g), type_name(type));
      return false;
    }
    const std::size_t length = RedisModule_ValueLength(slice.key->get());
    std::int64_t links = -1;
    std::size_t ignored = 0;
    // Longer than any number, so its bytes are there to read.
    auto* bytes = length >= r.header ? reinterpret_cast<std::uint8_t*>(RedisModule_StringDMA(
                                           slice.key->get(), &ignored, module_api::kRead))
                                     : nullptr;
    if (bytes != nullptr) links = field(bytes, 0);
    if (links < 1 || static_cast<std::uint64_t>(links) > r.links.size() ||
        length != r.start[static_cast<std::size_t>(links)]) {
      stream_error(ctx, "damaged", d.index_of(g), std::to_string(length));
      return false;
    }
    slice.links = static_cast<std::uint32_t>(links);
    slice.bytes = bytes;
    slice.length = length;
  }
  return true;
}

std::int64_t most_links(const std::vector<Slice>& live) {
  std::int64_t most = 0;
  for (const Slice& slice : live) most = std::max<std::int64_t>(most, slice.links);
  return most;
}

int reply_info(RedisModuleCtx* ctx, const StreamRequest& r, const std::vector<Slice>& live,
               std::int64_t current, std::int64_t now) {
  const auto existing = static_cast<std::size_t>(
      std::count_if(live.begin(), live.end(), [](const Slice& s) { return s.links > 0; }));
  reply_head(ctx, "ok", 0, {}, most_links(live), current, now, existing);
  for (std::size_t s = 0; s < live.size(); ++s) {
    const Slice& slice = live[s];
    if (slice.links == 0) continue;
    RedisModule_ReplyWithArray(ctx, 4);
    RedisModule_ReplyWithLongLong(ctx, current - r.older + static_cast<std::int64_t>(s));
    RedisModule_ReplyWithStringBuffer(ctx, reinterpret_cast<const char*>(slice.bytes), r.header);
    RedisModule_ReplyWithLongLong(ctx, static_cast<long long>(slice.length));
    RedisModule_ReplyWithLongLong(
        ctx, static_cast<long long>(set_bits(slice.bytes + r.header, slice.length - r.header)));
  }
  return module_api::kOk;
}

int reply_lookup(RedisModuleCtx* ctx, const StreamRequest& r, const std::vector<Slice>& live,
                 const std::vector<ItemHash>& hashes, std::int64_t current, std::int64_t now) {
  std::size_t n = hashes.size();
  const std::int64_t most = most_links(live);
  std::string flags(n, '0');
  if (most == 0) n = 0;
  kernels::parts::ahead_pipeline<kAhead>(
      n,
      [&](std::size_t i) {
        request_lines<kernels::parts::Op::test>(r, live, hashes[i],
                                                static_cast<std::uint32_t>(most));
        return i;
      },
      [&](std::size_t i, std::size_t) {
        bool found = false;
        for (std::uint32_t l = 0; l < static_cast<std::uint32_t>(most) && !found; ++l) {
          const Place place(hashes[i], r.links[l].params);
          // Newest first: most items asked about were added lately.
          for (std::size_t s = live.size(); s-- > 0 && !found;) {
            found = live[s].links > l && place.in(live[s].bytes + r.start[l]);
          }
        }
        flags[i] = found ? '1' : '0';
      });
  reply_head(ctx, "ok", hashes.size(), flags, most, current, now);
  return module_api::kOk;
}

// Adds the items to the current slice (the last of `live`), making it and its links as needed:
// what the items are in (look_up), then each item's test-and-set (add_one), a link made when
// the newest is full (make_link, with the slice's expiry and roster entry for its first), and the
// reply with its notifications and replication (finish).
class AddItems {
 public:
  AddItems(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, const StreamRequest& r,
           const Declared& d, Roster& roster, std::vector<Slice>& live,
           const std::vector<ItemHash>& hashes, std::int64_t current, std::int64_t now)
      : ctx_(ctx),
        argv_(argv),
        argc_(argc),
        r_(r),
        d_(d),
        roster_(roster),
        live_(live),
        cur_(live.back()),
        hashes_(hashes),
        current_(current),
        now_(now),
        most_(most_links(live)),
        links_(cur_.links) {
    for (const Slice& slice : live) used_ += r.start[slice.links] - r.header;
    for (std::size_t s = 0; s + 1 < live.size(); ++s) {
      older_links_ = std::max(older_links_, live[s].links);
    }
    if (links_ > 0) {
      reopen_current();
      count_ = field(cur_.bytes, 2 * std::uint64_t{links_} - 1);
    }
    counted_ = count_;
  }

  int run() {
    const std::size_t n = hashes_.size();
    flags_.reserve(n);
    std::optional<std::size_t> stopped;  // the first item that found no room
    // Each item's lines in every live slice are requested kAhead items before its turn.
    kernels::parts::ahead_pipeline<kAhead>(
        n,
        [&](std::size_t i) {
          request_lines<kernels::parts::Op::test_and_set>(r_, live_, hashes_[i],
                                                          std::max(links_, older_links_));
          return i;
        },
        [&](std::size_t i, std::size_t) {
          if (!stopped && !add(i)) stopped = i;
        });
    if (stopped) return finish("full", *stopped, links_);
    return finish("ok", n, std::max<std::int64_t>(most_, links_));
  }

 private:
  // Item i, item by item (an earlier item's add is seen by a later one):
  // in_current: in a link of the current slice that takes no more writes, the older ones and a
  // full newest one (about to be frozen: what this unit wrote into it counts). A newest link
  // with room is not probed: its test-and-set answers the same (all bits set: not new, nothing
  // counted), as the script does.
  // found: in the current slice or an older one. An item only in an older slice is not new, but
  // the add still sets it in the current one, restarting its window.
  // The item's place in the last link probed is kept for its add when that is the same link.
  void look_up(std::size_t i) {
    in_current_ = false;
    found_ = false;
    place_.reset();
    // The current slice's links before the newest, and the newest when it is full.
    std::uint32_t closed = links_ > 0 ? links_ - 1 : 0;
    if (links_ > 0 && full_at(links_ - 1)) closed = links_;
    const std::uint32_t most = std::max(closed, older_links_);
    for (std::uint32_t l = 0; l < most; ++l) {
      place_.emplace(hashes_[i], r_.links[l].params);
      place_link_ = l;
      if (l < closed && place_->in(link_bytes(l))) {
        in_current_ = true;
        found_ = true;
        return;
      }
      // Newest first: an item seen lately is found in fewer probes.
      for (std::size_t s = live_.size() - 1; s-- > 0 && !found_;) {
        found_ = live_[s].links > l && place_->in(live_[s].bytes + r_.start[l]);
      }
    }
  }

  // Item i's add; false when it needs a link that cannot be made (the slice is full).
  bool add(std::size_t i) {
    look_up(i);
    if (in_current_) {
      flags_.push_back('0');
      return true;
    }
    if ((links_ == 0 || full_at(links_ - 1)) && !make_link()) return false;
    add_one(i);
    return true;
  }

  // Test-and-set in the newest link: its old bits tell whether an earlier item of this unit
  // already set them all (then nothing changed and the item is not new).
  void add_one(std::size_t i) {
    const std::uint32_t newest = links_ - 1;
    if (!place_ || place_link_ != newest) place_.emplace(hashes_[i], r_.links[newest].params);
    if (place_->set_in(link_bytes(newest))) {
      ++count_;
      wrote_ = true;
      flags_.push_back(found_ ? '0' : '1');
    } else {
      flags_.push_back('0');
    }
  }

  // Makes the next link of the current slice (the slice itself with its first); false when
  // there is no next link or it would pass the budget.
  bool make_link() {
    const std::uint32_t make = links_;
    if (make >= r_.links.size() || (r_.budget > 0 && used_ + r_.links[make].bytes > r_.budget)) {
      return false;
    }
    save_count();
    RedisModule_StringTruncate(cur_.key->get(), r_.start[make + 1]);
    reopen_current();
    set_field(cur_.bytes, 0, make + 1);
    set_field(cur_.bytes, 2 + 2 * std::uint64_t{make}, now_);
    if (make == 0) enter_slice();
    links_ = make + 1;
    used_ += r_.links[make].bytes;
    count_ = 0;
    counted_ = 0;
    wrote_ = true;
    return true;
  }

  // A new current slice: its expiry, and its entry in the roster (made if missing).
  void enter_slice() {
    if (r_.slice_ms > 0) {
      // parse() checked that the last declared slice's retirement fits an i64.
      RedisModule_SetAbsExpire(cur_.key->get(), (current_ + 1 + r_.older) * r_.slice_ms);
    }
    if (roster_.ring == nullptr) {
      RedisModule_StringTruncate(roster_.key->get(), 8 * static_cast<std::size_t>(roster_.slots));
    }
    std::size_t ignored = 0;
    roster_.ring = reinterpret_cast<std::uint8_t*>(RedisModule_StringDMA(
        roster_.key->get(), &ignored, module_api::kRead | module_api::kWrite));
    set_field(roster_.ring, static_cast<std::uint64_t>(floor_mod(current_, roster_.slots)),
              current_ + 1);
    roster_written_ = true;
  }

  void reopen_current() {
    std::size_t ignored = 0;
    cur_.bytes = reinterpret_cast<std::uint8_t*>(
        RedisModule_StringDMA(cur_.key->get(), &ignored, module_api::kRead | module_api::kWrite));
  }

  [[nodiscard]] std::uint8_t* link_bytes(std::uint32_t l) const { return cur_.bytes + r_.start[l]; }

  [[nodiscard]] bool full_at(std::uint32_t link) const {
    return static_cast<std::uint64_t>(count_) >= r_.links[link].capacity;
  }

  void save_count() {
    if (links_ > 0 && count_ != counted_) {
      set_field(cur_.bytes, 2 * std::uint64_t{links_} - 1, count_);
      counted_ = count_;
      wrote_ = true;
    }
  }

  int finish(const char* status, std::size_t done, std::int64_t answer_links) {
    save_count();
    reply_head(ctx_, status, done, flags_, answer_links, current_, now_);
    if (wrote_) {
      RedisModule_NotifyKeyspaceEvent(ctx_, module_api::kNotifyGeneric, "rb.stream",
                                      d_.key_of(current_));
      if (roster_written_) {
        RedisModule_NotifyKeyspaceEvent(ctx_, module_api::kNotifyGeneric, "rb.stream", argv_[2]);
      }
      replicate(ctx_, argv_, argc_, r_, now_);
    }
    return module_api::kOk;
  }

  RedisModuleCtx* ctx_;
  RedisModuleString** argv_;
  int argc_;
  const StreamRequest& r_;
  const Declared& d_;
  Roster& roster_;
  const std::vector<Slice>& live_;
  Slice& cur_;
  const std::vector<ItemHash>& hashes_;
  const std::int64_t current_;
  const std::int64_t now_;
  const std::int64_t most_;
  std::uint32_t links_;
  std::uint64_t used_ = 0;
  std::int64_t count_ = 0;
  std::int64_t counted_ = 0;
  bool wrote_ = false;
  bool roster_written_ = false;
  std::uint32_t older_links_ = 0;  // the most links of a slice before the current one
  bool in_current_ = false;
  bool found_ = false;
  std::optional<Place> place_;
  std::uint32_t place_link_ = 0;
  std::string flags_;
};

// The items' hashes: read from the hashed form, or hashed here from the packed one.
std::vector<ItemHash> hashes_of(const StreamRequest& r) {
  std::vector<ItemHash> hashes;
  if (!r.items.empty()) {
    hashes.resize(r.items.size());
    for (std::size_t i = 0; i < r.items.size(); ++i) hashes[i] = detail::hash_inline(r.items[i]);
  } else {
    hashes.resize(r.hashed.size() / packed::kHashedItemBytes);
    packed::read_hashes(r.hashed.data(), hashes);
  }
  return hashes;
}

int run_stream(RedisModuleCtx* ctx, RedisModuleString** argv, int argc, bool read_only,
               Items form) {
  if (RedisModule_IsKeysPositionRequest(ctx)) {
    const auto numkeys = argc >= 2 ? integer(argv[1]) : std::nullopt;
    if (numkeys && *numkeys >= 1 && *numkeys <= argc - 2) {
      name_keys(ctx, 2, static_cast<int>(*numkeys), read_only);  // lookups read only
    }
    return module_api::kOk;
  }
  if (argc < 2 + kFixedArgs + kLinkArgs + 1) return RedisModule_WrongArity(ctx);
  StreamRequest r;
  if (!parse(ctx, argv, argc, read_only, form, r)) return module_api::kOk;
  // Every item is checked first: an item routed to the wrong partition would set bits that no
  // lookup of it reads.
  const std::vector<ItemHash> hashes = hashes_of(r);
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (layout::partition_of(hashes[i], r.partitions) != r.index) {
      return reply_error(
          ctx, ("ERR item " + std::to_string(i) + " belongs to another partition").c_str());
    }
  }
  const std::int64_t now = r.now_ms >= 0 ? r.now_ms : RedisModule_Milliseconds();
  const Declared d{argv, r.first, r.last};
  const auto current = current_slice(ctx, r, d, now);
  if (!current) return module_api::kOk;
  Roster roster;
  if (!open_roster(ctx, argv[2], r, roster)) return module_api::kOk;
  std::vector<Slice> live;
  if (!open_live(ctx, r, d, roster, *current, live)) return module_api::kOk;
  if (r.mode == 'i') return reply_info(ctx, r, live, *current, now);
  if (r.mode == 'l') return reply_lookup(ctx, r, live, hashes, *current, now);
  return AddItems(ctx, argv, argc, r, d, roster, live, hashes, *current, now).run();
}

template <Items form>
int stream(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return run_stream(ctx, argv, argc, false, form);
}

// Lookups and info only, flagged read-only: a read-only replica serves them.
template <Items form>
int stream_ro(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return run_stream(ctx, argv, argc, true, form);
}

}  // namespace

bool register_stream_commands(RedisModuleCtx* ctx) noexcept {
  // The keys follow numkeys as EVAL's do: getkeys-api names them, for cluster routing and
  // ASK/TRYAGAIN during a migration, as no first/last/step could.
  static const Command commands[] = {
      counted<stream<Items::packed>>("rb.stream", "write deny-oom getkeys-api", 0, 0, 0),
      counted<stream_ro<Items::packed>>("rb.stream_ro", "readonly getkeys-api", 0, 0, 0),
      counted<stream<Items::hashed>>("rb.streamh", "write deny-oom getkeys-api", 0, 0, 0),
      counted<stream_ro<Items::hashed>>("rb.streamh_ro", "readonly getkeys-api", 0, 0, 0),
  };
  return register_commands(ctx, commands);
}

}  // namespace redbloom::module
