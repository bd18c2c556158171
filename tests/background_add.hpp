// Runs Filter::add_many on a thread of its own, so that a test can kill a server in the middle
// of it, and records how it ended: the committed prefix of an IncompleteWrite, or the message of
// any other redbloom error.
#pragma once

#include <atomic>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"

namespace redbloom::testing {

class BackgroundAdd {
 public:
  BackgroundAdd(Filter& filter, std::span<const std::string_view> items)
      : thread_([this, &filter, items] {
          try {
            filter.add_many(items);
          } catch (const IncompleteWrite& e) {
            committed_ = e.committed();
            message_ = e.what();
          } catch (const Error& e) {
            message_ = e.what();
          }
          finished_ = true;
        }) {}
  // Joins: a joinable thread's destructor would abort the test binary.
  ~BackgroundAdd() { join(); }
  BackgroundAdd(const BackgroundAdd&) = delete;
  BackgroundAdd& operator=(const BackgroundAdd&) = delete;

  void join() {
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] bool finished() const { return finished_; }
  // Read after join().
  [[nodiscard]] const std::optional<std::size_t>& committed() const { return committed_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  std::atomic<bool> finished_{false};
  std::optional<std::size_t> committed_;
  std::string message_;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace redbloom::testing
