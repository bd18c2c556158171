// SIGINT, SIGTERM and SIGHUP as requests to stop a streaming command between batches.
//
// While a StopSignals object lives, the three signals are blocked and arrive on a signalfd, so
// they never interrupt a batch half-way (a commit, a Redis call, a write of output). The input
// reader waits for its next bytes with wait_readable(), which also watches the signalfd: a stop
// requested while the command waits for input is seen at once, one requested while it works
// is seen before the next batch. SIGPIPE is ignored, so a closed output is a write error
// (EPIPE) the command can account for, not a silent death.
#pragma once

namespace redbloom::cli {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

enum class WaitResult { readable, timed_out, stop_requested };

// Waits until `fd` has input (or end of input), `timeout_ms` passes (-1: no limit), or a stop
// signal arrives. Without a live StopSignals it only waits for the input.
[[nodiscard]] WaitResult wait_readable(int fd, int timeout_ms);

// The stop signal received so far (SIGINT, SIGTERM or SIGHUP), else 0. Checks for one that is
// pending without waiting.
[[nodiscard]] int stop_signal();

// "SIGTERM".
[[nodiscard]] const char* signal_name(int signal);

}  // namespace redbloom::cli
