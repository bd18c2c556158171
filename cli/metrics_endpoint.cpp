#include "metrics_endpoint.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "redbloom/error.hpp"

namespace redbloom::cli {
namespace {

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the scraper went away: its problem, not the stage's
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

MetricsEndpoint::MetricsEndpoint(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    throw InvalidArgument("--metrics '" + address + "': an address is HOST:PORT");
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int err = ::getaddrinfo(host.c_str(), address.c_str() + colon + 1, &hints, &found);
      err != 0) {
    throw InvalidArgument("--metrics '" + address + "': " + ::gai_strerror(err));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  listener_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  if (listener_ < 0 || ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      ::bind(listener_, found->ai_addr, found->ai_addrlen) != 0 || ::listen(listener_, 16) != 0 ||
      ::pipe2(wake_, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    if (listener_ >= 0) ::close(listener_);
    throw StorageError("--metrics: cannot listen on " + address + ": " + why);
  }
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &size);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                            : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  thread_ = std::thread([this] { serve(); });
}

MetricsEndpoint::~MetricsEndpoint() {
  const char byte = 0;
  if (::write(wake_[1], &byte, 1) == 1 && thread_.joinable()) thread_.join();
  if (thread_.joinable()) thread_.detach();
  ::close(listener_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void MetricsEndpoint::publish(std::string page) {
  const std::lock_guard lock(mutex_);
  page_ = std::move(page);
}

void MetricsEndpoint::serve() {
  for (;;) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    // The request itself does not matter: every path gets the page. Read what came, briefly.
    pollfd in{client, POLLIN, 0};
    char request[4096];
    if (::poll(&in, 1, 1000) > 0) (void)::recv(client, request, sizeof request, 0);
    std::string page;
    {
      const std::lock_guard lock(mutex_);
      page = page_;
    }
    write_all(client,
              "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
              "Content-Length: " +
                  std::to_string(page.size()) + "\r\nConnection: close\r\n\r\n" + page);
    ::close(client);
  }
}

}  // namespace redbloom::cli
