#include "shared_handle.hpp"

#include <pthread.h>

#include <unordered_set>

namespace redbloom::python {

namespace {

// Objects are registered and unregistered with the GIL held, and Python forks holding it; the
// lock also covers a fork() from a thread of C code.
std::mutex registry_mutex;
std::unordered_set<ForkAware*>& registry() {
  static auto* objects = new std::unordered_set<ForkAware*>();  // outlives every object
  return *objects;
}

void before_fork() {
  registry_mutex.lock();
}
void in_parent() {
  registry_mutex.unlock();
}
void in_child() {
  for (ForkAware* object : registry()) object->after_fork_in_child();
  registry_mutex.unlock();
}

}  // namespace

ForkAware::ForkAware() {
  static const bool installed = pthread_atfork(before_fork, in_parent, in_child) == 0;
  if (!installed) throw StorageError("pthread_atfork failed: filters could not follow fork()");
  std::lock_guard lock(registry_mutex);
  registry().insert(this);
}

ForkAware::~ForkAware() {
  std::lock_guard lock(registry_mutex);
  registry().erase(this);
}

}  // namespace redbloom::python
