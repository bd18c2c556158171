#include "stop_signals.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "redbloom/error.hpp"

namespace redbloom::cli {
namespace {

int g_signal_fd = -1;
int g_received = 0;
sigset_t g_previous_mask;

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// Reads one queued signal from the signalfd, if any (the fd is non-blocking).
void take_queued_signal() {
  if (g_signal_fd < 0 || g_received != 0) return;
  signalfd_siginfo info{};
  const ssize_t n = ::read(g_signal_fd, &info, sizeof info);
  if (n == static_cast<ssize_t>(sizeof info)) g_received = static_cast<int>(info.ssi_signo);
}

}  // namespace

StopSignals::StopSignals() {
  const sigset_t set = stop_set();
  if (::sigprocmask(SIG_BLOCK, &set, &g_previous_mask) != 0) {
    throw StorageError(errno_message("cannot block the stop signals"));
  }
  g_signal_fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (g_signal_fd < 0) {
    const std::string message = errno_message("cannot watch the stop signals (signalfd)");
    ::sigprocmask(SIG_SETMASK, &g_previous_mask, nullptr);
    throw StorageError(message);
  }
  g_received = 0;
  std::signal(SIGPIPE, SIG_IGN);
}

StopSignals::~StopSignals() {
  // The first stop signal is the command's to report (its summary and exit status); any
  // still queued would otherwise kill the process as they unblock.
  take_queued_signal();
  signalfd_siginfo info{};
  while (::read(g_signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
  }
  ::close(g_signal_fd);
  g_signal_fd = -1;
  ::sigprocmask(SIG_SETMASK, &g_previous_mask, nullptr);
}

WaitResult wait_readable(int fd, int timeout_ms) {
  take_queued_signal();
  if (g_received != 0) return WaitResult::stop_requested;
  pollfd fds[2] = {{fd, POLLIN, 0}, {g_signal_fd, POLLIN, 0}};
  const nfds_t count = g_signal_fd >= 0 ? 2 : 1;
  for (;;) {
    const int ready = ::poll(fds, count, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    // A descriptor poll cannot watch (or a poll failure) is left to read(), which blocks or
    // reports the error itself.
    if (ready < 0) return WaitResult::readable;
    if (ready == 0) return WaitResult::timed_out;
    if (count == 2 && (fds[1].revents & POLLIN) != 0) {
      take_queued_signal();
      if (g_received != 0) return WaitResult::stop_requested;
    }
    if (fds[0].revents != 0) return WaitResult::readable;
  }
}

int stop_signal() {
  take_queued_signal();
  return g_received;
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

}  // namespace redbloom::cli
