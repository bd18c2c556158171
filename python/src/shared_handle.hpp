// A C++ object that Python threads share and that survives fork() (Celery's prefork workers).
//
// Threads: one lock per object, waited for only with the GIL released (a thread holding the
// GIL never blocks on it, so the two locks cannot deadlock). Fork: in the child, the lock may
// be held by a thread that does not exist there, and the object's Redis connections and file
// locks are the parent's (a shared writers' lock would let parent and child both see an item
// as new), so the child gets a new lock and reopens the object on first use. The parent's
// object is left to the parent: closing its descriptors from the child could release the
// parent's open-file-description locks.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "redbloom/error.hpp"

namespace redbloom::python {

// Registered while alive; after_fork_in_child() runs in the child of every fork().
class ForkAware {
 public:
  ForkAware();
  ForkAware(const ForkAware&) = delete;
  ForkAware& operator=(const ForkAware&) = delete;
  virtual ~ForkAware();
  // Runs single-threaded in the child, before fork() returns there.
  virtual void after_fork_in_child() noexcept = 0;
};

template <class T>
class SharedHandle final : public ForkAware {
 public:
  // `reopen` opens the same object again (null for one that exists only in this process's
  // memory: the child keeps its copy).
  SharedHandle(T value, std::function<T()> reopen)
      : mutex_(std::make_unique<std::mutex>()),
        value_(std::make_unique<T>(std::move(value))),
        reopen_(std::move(reopen)) {}

  // Runs f(T&) holding the object's lock, with the GIL released when `release_gil` (network
  // work and batches; a one-item local call costs less than releasing it). `f` must not touch
  // Python objects when the GIL is released.
  template <class F>
  decltype(auto) run(bool release_gil, F&& f) {
    if (release_gil) {
      pybind11::gil_scoped_release no_gil;
      std::lock_guard lock(*mutex_);
      return f(ready());
    }
    std::unique_lock lock(*mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
      pybind11::gil_scoped_release no_gil;
      lock.lock();
    }
    return f(ready());
  }

  // Destroys the object (flushing it); later calls raise InvalidArgument.
  void close() {
    pybind11::gil_scoped_release no_gil;
    std::lock_guard lock(*mutex_);
    value_.reset();
    stale_ = false;
  }
  [[nodiscard]] bool closed() const { return !value_ && !stale_; }

  void after_fork_in_child() noexcept override {
    (void)mutex_.release();
    mutex_ = std::make_unique<std::mutex>();
    if (reopen_ && value_) {
      (void)value_.release();
      stale_ = true;
    }
  }

 private:
  std::unique_ptr<std::mutex> mutex_;
  std::unique_ptr<T> value_;
  std::function<T()> reopen_;
  bool stale_ = false;  // a child's copy of the parent's object, to be reopened

  T& ready() {
    if (stale_) {
      value_ = std::make_unique<T>(reopen_());
      stale_ = false;
    }
    if (!value_) throw InvalidArgument("the filter is closed");
    return *value_;
  }
};

}  // namespace redbloom::python
