#include "partition_commands.hpp"

#include <string>
#include <vector>

#include "command_support.hpp"
#include "command_table.hpp"
#include "core/item_hash_inline.hpp"
#include "core/layout.hpp"
#include "core/packed_items.hpp"
#include "core/partition_view.hpp"

namespace redbloom::module {

namespace {

// Items are routed by (32 hash bits x partitions) >> 32 (layout::partition_of): past 2^32
// partitions that product wraps and routes items where no client looks for them.
constexpr long long kMaxRoutedPartitions = 1LL << 32;

// The arguments after the key:
//   sealed-length layout hashes partition-bits partitions index packed-items
// sealed-length is the string's length the caller expects (the bits and the seal): a
// partition that vanished or was recreated shorter is an error, never an answer.
struct PartitionRequest {
  std::uint64_t sealed_length = 0;
  FilterParams params;
  std::uint64_t index = 0;
  std::string_view packed;  // the items (packed) or their hashes (16 bytes each)
};

// How a command's last argument gives the items.
enum class Items { packed, hashed };

// Parses and checks the request; on a bad one replies with the error and returns false.
bool parse(RedisModuleCtx* ctx, RedisModuleString** argv, PartitionRequest& request) {
  const auto sealed = integer(argv[2]);
  const auto layout = parse_layout(text(argv[3]));
  const auto hashes = integer(argv[4]);
  const auto bits = integer(argv[5]);
  const auto partitions = integer(argv[6]);
  const auto index = integer(argv[7]);
  if (!sealed || !layout || !hashes || !bits || !partitions || !index || *sealed < 0 ||
      *hashes < 1 || *hashes > kMaxHashes || *bits < 0 || *partitions < 1 ||
      *partitions > kMaxRoutedPartitions || *index < 0 || *index >= *partitions) {
    reply_error(ctx,
                "ERR bad partition arguments: expected sealed-length layout hashes (1 to 64) "
                "partition-bits partitions (1 to 2^32) index packed-items");
    return false;
  }
  request.params.layout = *layout;
  request.params.hashes = static_cast<std::uint32_t>(*hashes);
  request.params.partition_bits = static_cast<std::uint64_t>(*bits);
  request.params.partitions = static_cast<std::uint64_t>(*partitions);
  request.params.hash_scheme = kCurrentHashScheme;
  request.sealed_length = static_cast<std::uint64_t>(*sealed);
  request.index = static_cast<std::uint64_t>(*index);
  const std::uint64_t bytes = request.params.partition_bytes();
  if (*bits % kBlockBits != 0 || *bits == 0 ||
      static_cast<std::uint64_t>(*bits) > kRedisMaxStringBits || request.sealed_length < bytes ||
      request.sealed_length > bytes + 1) {
    reply_error(ctx,
                "ERR bad partition size: partition-bits must be a multiple of 512 up to "
                "2^32 and sealed-length its bytes, with or without the seal byte");
    return false;
  }
  request.packed = text(argv[8]);
  return true;
}

// The partition's bytes in place, or nullptr after an error reply.
std::uint8_t* partition_bytes(RedisModuleCtx* ctx, const OpenKey& key,
                              const PartitionRequest& request, int mode) {
  if (key.empty()) {
    reply_error(ctx, "REDBLOOMLOST partition key is missing");
    return nullptr;
  }
  if (RedisModule_KeyType(key.get()) != module_api::kKeyTypeString) {
    reply_error(ctx, module_api::kWrongTypeError);
    return nullptr;
  }
  if (RedisModule_ValueLength(key.get()) != request.sealed_length) {
    reply_error(ctx, "REDBLOOMLOST partition key has changed length");
    return nullptr;
  }
  std::size_t length = 0;
  return reinterpret_cast<std::uint8_t*>(RedisModule_StringDMA(key.get(), &length, mode));
}

// The items' hashes, each checked to belong to the partition (a client that routes an item
// elsewhere would read or set bits no lookup of that item ever checks). Hashed items arrive as
// 16 bytes each, XXH3-128's low then high half, little-endian: the bits the client's own hash
// of the item gives, so RB.PARTADDH sets exactly what RB.PARTADD of the item would.
bool hashes_for_partition(RedisModuleCtx* ctx, const PartitionRequest& request, Items form,
                          std::vector<ItemHash>& hashes) {
  if (form == Items::hashed) {
    if (request.packed.size() % packed::kHashedItemBytes != 0) {
      reply_error(ctx, "ERR hashed items are 16 bytes each");
      return false;
    }
    hashes.resize(request.packed.size() / packed::kHashedItemBytes);
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      hashes[i] = packed::read_hash(request.packed.data() + i * packed::kHashedItemBytes);
    }
  } else {
    auto items = packed::split(request.packed);
    if (!items) {
      reply_error(ctx, "ERR packed items end inside an item");
      return false;
    }
    hashes.resize(items->size());
    for (std::size_t i = 0; i < hashes.size(); ++i) hashes[i] = detail::hash_inline((*items)[i]);
  }
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (layout::partition_of(hashes[i], request.params.partitions) != request.index) {
      reply_error(ctx, ("ERR item " + std::to_string(i) + " belongs to another partition").c_str());
      return false;
    }
  }
  return true;
}

// RB.PARTADD key sealed-length layout hashes partition-bits partitions index packed-items
// RB.PARTADDH key ... index hashed-items
// Test-and-set; the reply is one string, a byte per item, 1 when the item was new.
template <Items form>
int partition_add(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 9) return RedisModule_WrongArity(ctx);
  PartitionRequest request;
  if (!parse(ctx, argv, request)) return module_api::kOk;
  std::vector<ItemHash> hashes;
  if (!hashes_for_partition(ctx, request, form, hashes)) return module_api::kOk;
  OpenKey key(ctx, argv[1], module_api::kRead | module_api::kWrite);
  std::uint8_t* bytes = partition_bytes(ctx, key, request, module_api::kWrite);
  if (bytes == nullptr) return module_api::kOk;
  std::string newly(hashes.size(), '\0');
  PartitionView view(bytes, request.params);
  const std::size_t fresh = view.add(hashes, reinterpret_cast<std::uint8_t*>(newly.data()));
  RedisModule_ReplyWithStringBuffer(ctx, newly.data(), newly.size());
  if (fresh != 0) {
    RedisModule_NotifyKeyspaceEvent(ctx, module_api::kNotifyGeneric, "rb.partadd", argv[1]);
    RedisModule_ReplicateVerbatim(ctx);
  }
  return module_api::kOk;
}

// RB.PARTEXISTS key sealed-length layout hashes partition-bits partitions index packed-items
// RB.PARTEXISTSH key ... index hashed-items
// The reply is one string, a byte per item, 1 when every bit of the item is set.
template <Items form>
int partition_exists(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 9) return RedisModule_WrongArity(ctx);
  PartitionRequest request;
  if (!parse(ctx, argv, request)) return module_api::kOk;
  std::vector<ItemHash> hashes;
  if (!hashes_for_partition(ctx, request, form, hashes)) return module_api::kOk;
  OpenKey key(ctx, argv[1], module_api::kRead);
  std::uint8_t* bytes = partition_bytes(ctx, key, request, module_api::kRead);
  if (bytes == nullptr) return module_api::kOk;
  std::string present(hashes.size(), '\0');
  const PartitionView view(bytes, request.params);
  view.contains(hashes, reinterpret_cast<std::uint8_t*>(present.data()));
  return RedisModule_ReplyWithStringBuffer(ctx, present.data(), present.size());
}

// RB.VERSION
int version(RedisModuleCtx* ctx, RedisModuleString**, int argc) {
  if (argc != 1) return RedisModule_WrongArity(ctx);
  return RedisModule_ReplyWithLongLong(ctx, kPartitionProtocolVersion);
}

}  // namespace

bool register_partition_commands(RedisModuleCtx* ctx) noexcept {
  static const Command commands[] = {
      counted<partition_add<Items::packed>>("rb.partadd", "write deny-oom"),
      counted<partition_exists<Items::packed>>("rb.partexists", "readonly fast"),
      counted<partition_add<Items::hashed>>("rb.partaddh", "write deny-oom"),
      counted<partition_exists<Items::hashed>>("rb.partexistsh", "readonly fast"),
      counted<version>("rb.version", "readonly fast", 0, 0, 0),
  };
  return register_commands(ctx, commands);
}

}  // namespace redbloom::module
