// The version of redbloom's module commands, answered by RB.VERSION: the module and the library
// share it, so a client uses only the commands every server it talks to has.
#pragma once

namespace redbloom::module_protocol {

// The version this build's module answers.
inline constexpr long long kVersion = 6;
// The first version with RB.PARTADD / RB.PARTEXISTS, and with RB.STREAM.
inline constexpr long long kPartitionCommands = 1;
inline constexpr long long kStreamCommand = 2;
// The first version with RB.STREAM's guarded modes (a missing roster is an error) and the
// read-only RB.STREAM_RO, which a replica serves; a client of filters with guarded rosters
// uses the module only from this version on.
inline constexpr long long kGuardedStream = 3;
// The first version with RB.CUCKOO, a cuckoo filter's unit of items (the cuckoo script's work).
inline constexpr long long kCuckooCommand = 4;
// The first version with RB.PARTADDH / RB.PARTEXISTSH: a unit's items sent as the 16-byte
// hashes the client computed anyway to route them, instead of their bytes.
inline constexpr long long kHashedItems = 5;
// The first version with RB.STREAMH / RB.STREAMH_RO: a windowed or growing filter's unit as the
// items' 16-byte hashes, as kHashedItems did for plain filters.
inline constexpr long long kHashedStream = 6;

}  // namespace redbloom::module_protocol
