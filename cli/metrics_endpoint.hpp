// A Prometheus text endpoint for a long-running stage (--metrics HOST:PORT): a thread that
// answers every HTTP request on the address with the latest page the stage published.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace redbloom::cli {

class MetricsEndpoint {
 public:
  // Listens on HOST:PORT (PORT 0: any free one, see port()). Throws InvalidArgument for an
  // address that is not HOST:PORT, StorageError when it cannot listen there.
  explicit MetricsEndpoint(const std::string& address);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // The page the next scrape gets (Prometheus text format 0.0.4).
  void publish(std::string page);
  [[nodiscard]] int port() const noexcept { return port_; }

 private:
  void serve();

  int listener_ = -1;
  int wake_[2] = {-1, -1};  // a pipe that ends serve()
  int port_ = 0;
  std::mutex mutex_;
  std::string page_;
  std::thread thread_;
};

}  // namespace redbloom::cli
