#pragma once

namespace redbloom::cli {

// Documented in the README; scripts rely on them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitNoMatch = 1;  // exists: no line selected (as grep)
inline constexpr int kExitUsage = 2;    // bad options, bad input, filter missing or mismatched
inline constexpr int kExitStorage =
    3;  // the filter's storage failed or is corrupt; --on-full error
inline constexpr int kExitOutputFailed = 4;  // output not written (ENOSPC, EIO): lines saved
inline constexpr int kExitOutputClosed =
    141;  // output closed (as a SIGPIPE death shows in a shell)
// A stop by SIGINT, SIGTERM or SIGHUP after finishing the batch in hand: 128 + the signal
// number (130, 143, 129), as the shell shows a death by that signal.

}  // namespace redbloom::cli
