// The part of the Redis module API this module uses, declared from the documented API
// (https://redis.io/docs/reference/modules/modules-api-ref/). Redis hands a module its
// functions by name through RedisModule_GetApi, whose address is the first word of the
// context passed to RedisModule_OnLoad; load_module_api() looks each one up.
// No Debian package ships redismodule.h, so these declarations are the project's own.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

struct RedisModuleCtx;
struct RedisModuleKey;
struct RedisModuleString;
struct RedisModuleIO;
struct RedisModuleType;
struct RedisModuleDigest;
struct RedisModuleDefragCtx;
struct RedisModuleServerInfoData;
struct RedisModuleInfoCtx;
struct RedisModuleCallReply;
struct RedisModuleCommand;

using RedisModuleCmdFunc = int (*)(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);
using RedisModuleTypeLoadFunc = void* (*)(RedisModuleIO* rdb, int encver);
using RedisModuleTypeSaveFunc = void (*)(RedisModuleIO* rdb, void* value);
using RedisModuleTypeAuxLoadFunc = int (*)(RedisModuleIO* rdb, int encver, int when);
using RedisModuleTypeAuxSaveFunc = void (*)(RedisModuleIO* rdb, int when);
using RedisModuleTypeRewriteFunc = void (*)(RedisModuleIO* aof, RedisModuleString* key,
                                            void* value);
using RedisModuleTypeMemUsageFunc = std::size_t (*)(const void* value);
using RedisModuleTypeDigestFunc = void (*)(RedisModuleDigest* digest, void* value);
using RedisModuleTypeFreeFunc = void (*)(void* value);
using RedisModuleTypeFreeEffortFunc = std::size_t (*)(RedisModuleString* key, const void* value);
using RedisModuleTypeUnlinkFunc = void (*)(RedisModuleString* key, const void* value);
using RedisModuleTypeCopyFunc = void* (*)(RedisModuleString* fromkey, RedisModuleString* tokey,
                                          const void* value);
using RedisModuleInfoFunc = void (*)(RedisModuleInfoCtx* ctx, int for_crash_report);
using RedisModuleTypeDefragFunc = int (*)(RedisModuleDefragCtx* ctx, RedisModuleString* key,
                                          void** value);

// Method table version 3 (Redis >= 6.2): the fields up to `defrag`. Redis reads only the
// fields the declared version has.
struct RedisModuleTypeMethods {
  std::uint64_t version;
  RedisModuleTypeLoadFunc rdb_load;
  RedisModuleTypeSaveFunc rdb_save;
  RedisModuleTypeRewriteFunc aof_rewrite;
  RedisModuleTypeMemUsageFunc mem_usage;
  RedisModuleTypeDigestFunc digest;
  RedisModuleTypeFreeFunc free;
  RedisModuleTypeAuxLoadFunc aux_load;
  RedisModuleTypeAuxSaveFunc aux_save;
  int aux_save_triggers;
  RedisModuleTypeFreeEffortFunc free_effort;
  RedisModuleTypeUnlinkFunc unlink;
  RedisModuleTypeCopyFunc copy;
  RedisModuleTypeDefragFunc defrag;
};

// Command information (Redis >= 7.0, RedisModule_SetCommandInfo): only the key specs are set
// here, so history and args stay untyped. Redis steps through the arrays by the sizes that
// `version` gives.
struct RedisModuleCommandInfoVersion {
  int version;
  std::size_t sizeof_historyentry;
  std::size_t sizeof_keyspec;
  std::size_t sizeof_arg;
};

struct RedisModuleCommandKeySpec {
  const char* notes;
  std::uint64_t flags;
  int begin_search_type;
  union {
    struct {
      int pos;
    } index;
    struct {
      const char* keyword;
      int startfrom;
    } keyword;
  } bs;
  int find_keys_type;
  union {
    struct {
      int lastkey;
      int keystep;
      int limit;
    } range;
    struct {
      int keynumidx;
      int firstkey;
      int keystep;
    } keynum;
  } fk;
};

struct RedisModuleCommandInfo {
  const RedisModuleCommandInfoVersion* version;
  const char* summary;
  const char* complexity;
  const char* since;
  void* history;
  const char* tips;
  int arity;
  RedisModuleCommandKeySpec* key_specs;
  void* args;
};

}  // extern "C"

namespace redbloom::module_api {

inline constexpr int kOk = 0;
inline constexpr int kErr = 1;
inline constexpr int kApiVersion1 = 1;
inline constexpr std::uint64_t kTypeMethodVersion = 3;

// Key open modes.
inline constexpr int kRead = 1 << 0;
inline constexpr int kWrite = 1 << 1;
// RedisModule_KeyType answers.
inline constexpr int kKeyTypeEmpty = 0;
inline constexpr int kKeyTypeString = 1;
inline constexpr int kKeyTypeList = 2;
inline constexpr int kKeyTypeHash = 3;
inline constexpr int kKeyTypeSet = 4;
inline constexpr int kKeyTypeZset = 5;
inline constexpr int kKeyTypeModule = 6;
inline constexpr int kKeyTypeStream = 7;
// Keyspace notification class of module commands' events.
inline constexpr int kNotifyGeneric = 1 << 2;
// RedisModule_SetModuleOptions: loading functions report errors instead of exiting.
inline constexpr int kOptionHandleIoErrors = 1 << 0;
// Redis >= 7.0: the module's values may load in the background while the old dataset still
// serves commands (a replica's repl-diskless-load swapdb); older servers ignore it.
inline constexpr int kOptionHandleReplAsyncLoad = 1 << 2;
// RedisModule_ReplyWithArray: the length is set later with RedisModule_ReplySetArrayLength.
inline constexpr long kPostponedLength = -1;
// RedisModule_GetContextFlags: a maxmemory limit is set, with a policy that evicts keys.
inline constexpr int kContextFlagEvict = 1 << 9;
// ... a maxmemory limit is set; the command came from the master; the server is loading (AOF).
inline constexpr int kContextFlagMaxmemory = 1 << 8;
inline constexpr int kContextFlagReplicated = 1 << 12;
inline constexpr int kContextFlagLoading = 1 << 13;
// RedisModule_CallReplyType: a bulk string.
inline constexpr int kCallReplyString = 0;
// Key-spec flags and search types (Redis >= 7.0): a key the command only reads.
inline constexpr std::uint64_t kKeyReadOnly = 1 << 0;
inline constexpr std::uint64_t kKeyAccess = 1 << 4;
inline constexpr int kKeySearchIndex = 2;
inline constexpr int kKeysRange = 2;
inline constexpr int kCommandInfoVersion = 1;
// Log levels.
inline constexpr const char* kLogWarning = "warning";
inline constexpr const char* kLogNotice = "notice";

inline constexpr const char* kWrongTypeError =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

}  // namespace redbloom::module_api

// The functions, as pointers filled in by load_module_api().
#define REDBLOOM_MODULE_FUNCTIONS(X)                                                           \
  X(void*, Alloc, (std::size_t bytes))                                                         \
  X(void, Free, (void* ptr))                                                                   \
  X(void, SetModuleAttribs, (RedisModuleCtx * ctx, const char* name, int ver, int apiver))     \
  X(int, IsModuleNameBusy, (const char* name))                                                 \
  X(int, CreateCommand,                                                                        \
    (RedisModuleCtx * ctx, const char* name, RedisModuleCmdFunc cmdfunc, const char* strflags, \
     int firstkey, int lastkey, int keystep))                                                  \
  X(RedisModuleType*, CreateDataType,                                                          \
    (RedisModuleCtx * ctx, const char* name, int encver, RedisModuleTypeMethods* typemethods)) \
  X(void, SetModuleOptions, (RedisModuleCtx * ctx, int options))                               \
  X(RedisModuleKey*, OpenKey, (RedisModuleCtx * ctx, RedisModuleString * keyname, int mode))   \
  X(void, CloseKey, (RedisModuleKey * kp))                                                     \
  X(int, KeyType, (RedisModuleKey * kp))                                                       \
  X(std::size_t, ValueLength, (RedisModuleKey * kp))                                           \
  X(char*, StringDMA, (RedisModuleKey * key, std::size_t * len, int mode))                     \
  X(RedisModuleType*, ModuleTypeGetType, (RedisModuleKey * key))                               \
  X(void*, ModuleTypeGetValue, (RedisModuleKey * key))                                         \
  X(int, ModuleTypeSetValue, (RedisModuleKey * key, RedisModuleType * mt, void* value))        \
  X(const char*, StringPtrLen, (const RedisModuleString* str, std::size_t* len))               \
  X(int, StringToLongLong, (const RedisModuleString* str, long long* ll))                      \
  X(int, StringToDouble, (const RedisModuleString* str, double* d))                            \
  X(int, WrongArity, (RedisModuleCtx * ctx))                                                   \
  X(int, ReplyWithError, (RedisModuleCtx * ctx, const char* err))                              \
  X(int, ReplyWithLongLong, (RedisModuleCtx * ctx, long long ll))                              \
  X(int, ReplyWithSimpleString, (RedisModuleCtx * ctx, const char* msg))                       \
  X(int, ReplyWithStringBuffer, (RedisModuleCtx * ctx, const char* buf, std::size_t len))      \
  X(int, ReplyWithArray, (RedisModuleCtx * ctx, long len))                                     \
  X(void, ReplySetArrayLength, (RedisModuleCtx * ctx, long len))                               \
  X(int, ReplyWithNull, (RedisModuleCtx * ctx))                                                \
  X(int, ReplyWithDouble, (RedisModuleCtx * ctx, double d))                                    \
  X(int, ReplicateVerbatim, (RedisModuleCtx * ctx))                                            \
  X(int, Replicate, (RedisModuleCtx * ctx, const char* cmdname, const char* fmt, ...))         \
  X(RedisModuleString*, CreateStringFromLongLong, (RedisModuleCtx * ctx, long long ll))        \
  X(void, FreeString, (RedisModuleCtx * ctx, RedisModuleString * str))                         \
  X(int, StringTruncate, (RedisModuleKey * key, std::size_t newlen))                           \
  X(int, SetAbsExpire, (RedisModuleKey * key, long long expire))                               \
  X(long long, Milliseconds, ())                                                               \
  X(float, GetUsedMemoryRatio, ())                                                             \
  X(int, GetContextFlags, (RedisModuleCtx * ctx))                                              \
  X(RedisModuleServerInfoData*, GetServerInfo, (RedisModuleCtx * ctx, const char* section))    \
  X(const char*, ServerInfoGetFieldC, (RedisModuleServerInfoData * data, const char* field))   \
  X(void, FreeServerInfo, (RedisModuleCtx * ctx, RedisModuleServerInfoData * data))            \
  X(int, IsKeysPositionRequest, (RedisModuleCtx * ctx))                                        \
  X(void, KeyAtPos, (RedisModuleCtx * ctx, int pos))                                           \
  X(int, NotifyKeyspaceEvent,                                                                  \
    (RedisModuleCtx * ctx, int type, const char* event, RedisModuleString* key))               \
  X(void, SaveUnsigned, (RedisModuleIO * io, std::uint64_t value))                             \
  X(std::uint64_t, LoadUnsigned, (RedisModuleIO * io))                                         \
  X(void, SaveDouble, (RedisModuleIO * io, double value))                                      \
  X(void, SaveSigned, (RedisModuleIO * io, std::int64_t value))                                \
  X(std::int64_t, LoadSigned, (RedisModuleIO * io))                                            \
  X(RedisModuleCtx*, GetThreadSafeContext, (void* blocked_client))                             \
  X(void, FreeThreadSafeContext, (RedisModuleCtx * ctx))                                       \
  X(RedisModuleCallReply*, Call,                                                               \
    (RedisModuleCtx * ctx, const char* cmdname, const char* fmt, ...))                         \
  X(int, CallReplyType, (RedisModuleCallReply * reply))                                        \
  X(const char*, CallReplyStringPtr, (RedisModuleCallReply * reply, std::size_t * len))        \
  X(void, FreeCallReply, (RedisModuleCallReply * reply))                                       \
  X(double, LoadDouble, (RedisModuleIO * io))                                                  \
  X(void, SaveStringBuffer, (RedisModuleIO * io, const char* str, std::size_t len))            \
  X(char*, LoadStringBuffer, (RedisModuleIO * io, std::size_t * lenptr))                       \
  X(int, IsIOError, (RedisModuleIO * io))                                                      \
  X(void, EmitAOF, (RedisModuleIO * io, const char* cmdname, const char* fmt, ...))            \
  X(void, DigestAddStringBuffer, (RedisModuleDigest * md, const char* ele, std::size_t len))   \
  X(void, DigestEndSequence, (RedisModuleDigest * md))                                         \
  X(void, Log, (RedisModuleCtx * ctx, const char* level, const char* fmt, ...))                \
  X(void, LogIOError, (RedisModuleIO * io, const char* levelstr, const char* fmt, ...))        \
  X(int, HashGet, (RedisModuleKey * key, int flags, ...))                                      \
  X(RedisModuleString*, CreateString, (RedisModuleCtx * ctx, const char* ptr, std::size_t n))  \
  X(std::size_t, MallocSize, (void* ptr))                                                      \
  X(int, RegisterInfoFunc, (RedisModuleCtx * ctx, RedisModuleInfoFunc cb))                     \
  X(int, InfoAddSection, (RedisModuleInfoCtx * ctx, const char* name))                         \
  X(int, InfoAddFieldULongLong,                                                                \
    (RedisModuleInfoCtx * ctx, const char* field, unsigned long long value))                   \
  X(void*, DefragAlloc, (RedisModuleDefragCtx * ctx, void* ptr))                               \
  X(int, DefragShouldStop, (RedisModuleDefragCtx * ctx))                                       \
  X(int, DefragCursorSet, (RedisModuleDefragCtx * ctx, unsigned long cursor))                  \
  X(int, DefragCursorGet, (RedisModuleDefragCtx * ctx, unsigned long* cursor))

// Functions of Redis >= 7.0, null on an older server (which has no read-only key permissions
// in its ACLs either).
#define REDBLOOM_OPTIONAL_MODULE_FUNCTIONS(X)                                  \
  X(void, KeyAtPosWithFlags, (RedisModuleCtx * ctx, int pos, int flags))       \
  X(RedisModuleCommand*, GetCommand, (RedisModuleCtx * ctx, const char* name)) \
  X(int, SetCommandInfo, (RedisModuleCommand * command, const RedisModuleCommandInfo* info))

#define REDBLOOM_DECLARE_MODULE_FUNCTION(ret, name, args) extern ret(*RedisModule_##name) args;
extern "C" {
REDBLOOM_MODULE_FUNCTIONS(REDBLOOM_DECLARE_MODULE_FUNCTION)
REDBLOOM_OPTIONAL_MODULE_FUNCTIONS(REDBLOOM_DECLARE_MODULE_FUNCTION)
}
#undef REDBLOOM_DECLARE_MODULE_FUNCTION

namespace redbloom::module_api {
// Fills every pointer above; false (and the name of the first missing one) when the server
// lacks one, as a server older than the API this module needs would. The optional ones stay
// null where the server lacks them.
bool load(RedisModuleCtx* ctx, const char** missing) noexcept;
}  // namespace redbloom::module_api
