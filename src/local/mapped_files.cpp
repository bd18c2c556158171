#include "local/mapped_files.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "redbloom/file_faults.hpp"

namespace redbloom {
namespace {

constexpr int kSlots = 256;
constexpr std::size_t kPathBytes = 512;

// A slot is taken by its owner (taken: 0 -> 1), filled, then published by storing `begin`;
// a reader trusts a slot whose `begin` is set. forget() clears `begin` before freeing it.
struct Slot {
  std::atomic<int> taken{0};
  std::atomic<const char*> begin{nullptr};
  std::size_t length = 0;
  char path[kPathBytes] = {};
};

Slot g_slots[kSlots];
int g_exit_status = 3;

void say(const char* text) {
  const std::size_t n = std::strlen(text);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t wrote = ::write(2, text + done, n - done);
    if (wrote <= 0) return;
    done += static_cast<std::size_t>(wrote);
  }
}

void on_sigbus(int signal, siginfo_t* info, void*) {
  const char* path = mapped_filter_file_at(info != nullptr ? info->si_addr : nullptr);
  if (path == nullptr) {
    // Not a filter file's: the default action, as if this handler did not exist.
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    return;
  }
  say("redbloom: the filter file ");
  say(path);
  say(" changed size while in use (truncated, or replaced by a shorter file?): the command "
      "stopped; what it had committed before is in the file as it was, what it was doing is "
      "not; check the file (redbloom info) before using it again\n");
  ::_exit(g_exit_status);
}

}  // namespace

namespace mapped_files {

int remember(const void* begin, std::size_t length, const std::string& path) noexcept {
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].taken.compare_exchange_strong(expected, 1)) continue;
    Slot& slot = g_slots[i];
    slot.length = length;
    const std::size_t n = std::min(path.size(), kPathBytes - 1);
    std::memcpy(slot.path, path.data(), n);
    slot.path[n] = '\0';
    slot.begin.store(static_cast<const char*>(begin), std::memory_order_release);
    return i;
  }
  return -1;
}

void forget(int slot) noexcept {
  if (slot < 0) return;
  g_slots[slot].begin.store(nullptr, std::memory_order_release);
  g_slots[slot].taken.store(0, std::memory_order_release);
}

}  // namespace mapped_files

const char* mapped_filter_file_at(const void* address) noexcept {
  const char* at = static_cast<const char*>(address);
  for (const Slot& slot : g_slots) {
    const char* begin = slot.begin.load(std::memory_order_acquire);
    if (begin != nullptr && at >= begin && at < begin + slot.length) return slot.path;
  }
  return nullptr;
}

void report_shrinking_filter_files(int exit_status) {
  g_exit_status = exit_status;
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

}  // namespace redbloom
