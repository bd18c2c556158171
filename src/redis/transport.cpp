#include "transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

namespace redbloom::redis {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = TransportError::Kind;

// Seconds between keepalive probes, as hiredis set them: a peer that vanished without a FIN
// (a pulled cable, a failed-over address) is noticed in about a minute rather than hours.
constexpr int kKeepAliveSeconds = 15;

std::string seconds_text(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms.count()) / 1000);
  return buf;
}

void set_timeouts(int fd, std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    throw TransportError(Kind::failed,
                         std::string("cannot set the socket timeout: ") + std::strerror(errno));
  }
}

// OpenSSL writes with write(2), which raises SIGPIPE when the server has gone; its default
// action kills the whole process. A library must not change the process's signal
// dispositions, so, as libpq does, the signal is blocked in this thread around the writes, and
// a SIGPIPE they raised is consumed before it is unblocked. Plain sockets use MSG_NOSIGNAL.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    // One that was already pending is someone else's, and stays.
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &previous_) == 0;
  }
  ~SigpipeBlock() {
    if (!blocked_) return;
    const int saved_errno = errno;
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec no_wait{};
        while (sigtimedwait(&pipe_, nullptr, &no_wait) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    errno = saved_errno;
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t previous_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

// The reasons OpenSSL queued for the last failure, "; "-separated, and the queue emptied.
std::string openssl_reasons() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    std::string one = reason != nullptr ? reason : "error " + std::to_string(code);
    if (text.find(one) != std::string::npos) continue;
    if (!text.empty()) text += "; ";
    text += one;
  }
  return text;
}

bool has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// What the user can do about a TLS failure OpenSSL describes as `reasons`.
std::string tls_hint(std::string_view reasons) {
  if (has(reasons, "wrong version number") || has(reasons, "packet length too long") ||
      has(reasons, "unknown protocol") || has(reasons, "record layer failure")) {
    return " (the server does not speak TLS on this port: a plain Redis port takes redis://)";
  }
  if (has(reasons, "certificate required") || has(reasons, "handshake failure")) {
    return " (the server wants a client certificate: give tls_cert= and tls_key=)";
  }
  if (has(reasons, "unknown ca") || has(reasons, "bad certificate") ||
      has(reasons, "certificate expired") || has(reasons, "certificate revoked") ||
      has(reasons, "certificate unknown") || has(reasons, "unsupported certificate")) {
    return " (the server refused the client certificate given by tls_cert=: it must be valid "
           "and signed by a CA the server trusts)";
  }
  return "";
}

// When a connect attempt gives up, and what it then says.
struct Deadline {
  Clock::time_point at;
  std::string timed_out;
};

// Connects the non-blocking `fd` to `address` without waiting past the deadline; "" or why not.
std::string connect_before(int fd, const sockaddr* address, socklen_t length,
                           const Deadline& deadline) {
  if (::connect(fd, address, length) == 0) return "";
  if (errno != EINPROGRESS && errno != EINTR) return std::strerror(errno);
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline.at - Clock::now());
    if (left.count() <= 0) return deadline.timed_out;
    pollfd waiting{fd, POLLOUT, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return std::strerror(errno);
    if (ready == 0) return deadline.timed_out;
    int error = 0;
    socklen_t size = sizeof error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return std::strerror(errno);
    return error == 0 ? "" : std::strerror(error);
  }
}

void make_blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

// A blocking socket connected to the unix socket at `path`.
int connect_unix(const std::string& path, const Deadline& deadline) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    throw TransportError(Kind::failed, "the socket path is too long");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw TransportError(Kind::failed, std::strerror(errno));
  const std::string why =
      connect_before(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address, deadline);
  if (!why.empty()) {
    ::close(fd);
    throw TransportError(Kind::failed, why);
  }
  make_blocking(fd);
  return fd;
}

// A blocking socket connected to the first of the host's addresses that answers in time.
int connect_tcp(const RedisEndpoint& endpoint, const Deadline& deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(endpoint.port);
  if (const int rc = ::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw TransportError(Kind::failed,
                         std::string("cannot resolve the host: ") +
                             (rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  std::string why = "no address";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    why = connect_before(fd, a->ai_addr, a->ai_addrlen, deadline);
    if (why.empty()) {
      make_blocking(fd);
      return fd;
    }
    ::close(fd);
    if (Clock::now() >= deadline.at) break;
  }
  throw TransportError(why == deadline.timed_out ? Kind::timeout : Kind::failed, why);
}

void enable_keepalive(int fd) {
  const int on = 1;
  const int idle = kKeepAliveSeconds;
  const int interval = kKeepAliveSeconds / 3;
  const int count = 3;
  if (::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count) != 0) {
    throw TransportError(Kind::failed,
                         std::string("cannot enable TCP keepalive: ") + std::strerror(errno));
  }
}

}  // namespace

// One SSL_CTX per set of TLS options, shared by the connections that use them: loading the
// system's trusted CAs takes a while, and a cluster opens one connection per node.
class TlsContext {
 public:
  explicit TlsContext(const RedisEndpoint& endpoint) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) fail("cannot set up TLS: " + openssl_reasons());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    if (!endpoint.tls_ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(ctx_, endpoint.tls_ca_file.c_str(), nullptr) != 1) {
        fail("cannot read the CA certificates in tls_ca=" + endpoint.tls_ca_file + ": " +
             openssl_reasons());
      }
    } else if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
      fail("cannot load the system's trusted CA certificates: " + openssl_reasons());
    }
    if (!endpoint.tls_cert_file.empty()) {
      if (SSL_CTX_use_certificate_chain_file(ctx_, endpoint.tls_cert_file.c_str()) != 1) {
        fail("cannot read the client certificate in tls_cert=" + endpoint.tls_cert_file + ": " +
             openssl_reasons());
      }
      if (SSL_CTX_use_PrivateKey_file(ctx_, endpoint.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        const std::string reasons = openssl_reasons();
        if (has(reasons, "key values mismatch")) {
          fail("the key in tls_key=" + endpoint.tls_key_file +
               " does not belong to the certificate in tls_cert=" + endpoint.tls_cert_file);
        }
        fail("cannot read the private key in tls_key=" + endpoint.tls_key_file + ": " + reasons);
      }
      if (SSL_CTX_check_private_key(ctx_) != 1) {
        fail("the key in tls_key=" + endpoint.tls_key_file +
             " does not belong to the certificate in tls_cert=" + endpoint.tls_cert_file);
      }
    }
    SSL_CTX_set_verify(ctx_, endpoint.tls_insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       nullptr);
  }
  ~TlsContext() { SSL_CTX_free(ctx_); }
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  [[nodiscard]] SSL_CTX* get() const noexcept { return ctx_; }

  // The context for `endpoint`'s options, made once while any connection uses it (so that
  // certificates renewed on disk are read again by the next process or the next idle start).
  static std::shared_ptr<TlsContext> of(const RedisEndpoint& endpoint) {
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<TlsContext>> contexts;
    std::string id = endpoint.tls_ca_file;
    for (const std::string* part : {&endpoint.tls_cert_file, &endpoint.tls_key_file}) {
      id += '\0';
      id += *part;
    }
    id += '\0';
    id += endpoint.tls_insecure_skip_verify ? "insecure" : "verify";
    const std::lock_guard lock(mutex);
    std::weak_ptr<TlsContext>& slot = contexts[id];
    std::shared_ptr<TlsContext> context = slot.lock();
    if (!context) {
      context = std::make_shared<TlsContext>(endpoint);
      slot = context;
    }
    return context;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    SSL_CTX_free(ctx_);
    ctx_ = nullptr;
    throw TransportError(Kind::failed, why);
  }
  SSL_CTX* ctx_ = nullptr;
};

Transport::Transport(const RedisEndpoint& endpoint)
    : seconds_(seconds_text(endpoint.command_timeout)) {
  try {
    open_socket(endpoint);
    if (endpoint.tls) {
      set_timeouts(fd_, endpoint.connect_timeout);
      handshake(endpoint);
    }
    set_timeouts(fd_, endpoint.command_timeout);
  } catch (...) {
    close();
    throw;
  }
}

Transport::~Transport() {
  close();
}

void Transport::close() noexcept {
  if (ssl_ != nullptr) {
    // No close_notify: the socket may be broken, and a server does not need it.
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Transport::open_socket(const RedisEndpoint& endpoint) {
  const Deadline deadline{Clock::now() + endpoint.connect_timeout,
                          "timed out after " + seconds_text(endpoint.connect_timeout)};
  if (!endpoint.unix_path.empty()) {
    fd_ = connect_unix(endpoint.unix_path, deadline);
    return;
  }
  fd_ = connect_tcp(endpoint, deadline);
  // Pipelined commands are written whole; Nagle would only hold the last segment back.
  const int on = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  enable_keepalive(fd_);
}

void Transport::handshake(const RedisEndpoint& endpoint) {
  if (!endpoint.unix_path.empty()) {
    throw TransportError(Kind::failed, "TLS over a unix socket is not supported");
  }
  tls_ = TlsContext::of(endpoint);
  ERR_clear_error();
  ssl_ = SSL_new(tls_->get());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    throw TransportError(Kind::failed, "cannot set up TLS: " + openssl_reasons());
  }
  const std::string& name =
      endpoint.tls_server_name.empty() ? endpoint.host : endpoint.tls_server_name;
  in6_addr probe{};
  const bool is_address = ::inet_pton(AF_INET, name.c_str(), &probe) == 1 ||
                          ::inet_pton(AF_INET6, name.c_str(), &probe) == 1;
  // SNI carries host names only (RFC 6066); an address is checked against the certificate's
  // IP entries instead of its DNS names.
  if (!is_address) SSL_set_tlsext_host_name(ssl_, name.c_str());
  if (!endpoint.tls_insecure_skip_verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    const int set = is_address ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                               : X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    if (set != 1) throw TransportError(Kind::failed, "cannot check the server name " + name);
  }
  errno = 0;
  const int rc = SSL_connect(ssl_);
  if (rc == 1) return;
  const int error = SSL_get_error(ssl_, rc);
  const int saved_errno = errno;
  const long verified = SSL_get_verify_result(ssl_);
  std::string reasons = openssl_reasons();
  if (verified != X509_V_OK) {
    std::string why = "the server's certificate did not verify: ";
    why += X509_verify_cert_error_string(verified);
    switch (verified) {
      case X509_V_ERR_HOSTNAME_MISMATCH:
      case X509_V_ERR_IP_ADDRESS_MISMATCH:
        why += " (it is not issued for " + name +
               "; if the server is known by another name, give it as tls_server_name=)";
        break;
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
      case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
      case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
      case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        why += endpoint.tls_ca_file.empty()
                   ? " (its CA is not among the system's trusted ones: give the CA's "
                     "certificate as tls_ca=PATH, or set SSL_CERT_FILE)"
                   : " (its CA is not the one in tls_ca=" + endpoint.tls_ca_file + ")";
        break;
      default:
        break;
    }
    throw TransportError(Kind::failed, why);
  }
  if ((error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) ||
      (error == SSL_ERROR_SYSCALL && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))) {
    throw TransportError(Kind::timeout,
                         "the TLS handshake timed out after " +
                             seconds_text(endpoint.connect_timeout) +
                             " (does this port speak TLS? a plain Redis port takes redis://)");
  }
  if (reasons.empty()) {
    reasons = saved_errno != 0 ? std::strerror(saved_errno)
                               : "the server closed the connection during the handshake";
  }
  throw TransportError(Kind::failed, "TLS handshake failed: " + reasons + tls_hint(reasons));
}

void Transport::write_all(std::string_view data) {
  if (ssl_ == nullptr) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n >= 0) {
        data.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        throw TransportError(Kind::timeout, "timed out after " + seconds_);
      }
      if (errno == EPIPE || errno == ECONNRESET) {
        throw TransportError(Kind::closed, std::strerror(errno));
      }
      throw TransportError(Kind::failed, std::strerror(errno));
    }
    return;
  }
  const SigpipeBlock guard;
  while (!data.empty()) {
    ERR_clear_error();
    errno = 0;
    std::size_t written = 0;
    const int rc = SSL_write_ex(ssl_, data.data(), data.size(), &written);
    if (rc == 1) {
      data.remove_prefix(written);
      continue;
    }
    const int error = SSL_get_error(ssl_, rc);
    const int saved_errno = errno;
    if (error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ ||
        (error == SSL_ERROR_SYSCALL && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))) {
      throw TransportError(Kind::timeout, "timed out after " + seconds_);
    }
    if (error == SSL_ERROR_SYSCALL && saved_errno == EINTR) continue;
    const std::string reasons = openssl_reasons();
    if (error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN) {
      // A server that refuses the client's certificate (checked after the handshake in TLS
      // 1.3) sends an alert and closes; the alert, still unread, says why the write failed.
      if (std::string alert = pending_alert(); !alert.empty()) {
        throw TransportError(Kind::failed, "TLS error: " + alert + tls_hint(alert));
      }
      throw TransportError(Kind::closed,
                           saved_errno != 0 ? std::strerror(saved_errno) : "TLS connection closed");
    }
    throw TransportError(Kind::failed, "TLS error: " + reasons + tls_hint(reasons));
  }
}

std::string Transport::pending_alert() noexcept {
  ERR_clear_error();
  char byte[256];
  std::size_t got = 0;
  if (SSL_read_ex(ssl_, byte, sizeof byte, &got) == 1) return "";
  const std::string reasons = openssl_reasons();
  return has(reasons, "alert") ? reasons : "";
}

std::size_t Transport::read_some(char* buffer, std::size_t size) {
  if (ssl_ == nullptr) {
    while (true) {
      const ssize_t n = ::recv(fd_, buffer, size, 0);
      if (n > 0) return static_cast<std::size_t>(n);
      if (n == 0) throw TransportError(Kind::closed, "");
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        throw TransportError(Kind::timeout, "timed out after " + seconds_);
      }
      throw TransportError(Kind::failed, std::strerror(errno));
    }
  }
  while (true) {
    ERR_clear_error();
    errno = 0;
    std::size_t got = 0;
    const int rc = SSL_read_ex(ssl_, buffer, size, &got);
    if (rc == 1) return got;
    const int error = SSL_get_error(ssl_, rc);
    const int saved_errno = errno;
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE ||
        (error == SSL_ERROR_SYSCALL && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))) {
      throw TransportError(Kind::timeout, "timed out after " + seconds_);
    }
    if (error == SSL_ERROR_SYSCALL && saved_errno == EINTR) continue;
    if (error == SSL_ERROR_ZERO_RETURN) throw TransportError(Kind::closed, "");
    const std::string reasons = openssl_reasons();
    if (error == SSL_ERROR_SYSCALL) {
      throw TransportError(Kind::closed, saved_errno != 0 ? std::strerror(saved_errno) : "");
    }
    // OpenSSL 3 reports a peer that closed without close_notify as an SSL error.
    if (has(reasons, "unexpected eof")) throw TransportError(Kind::closed, "");
    throw TransportError(Kind::failed, "TLS error: " + reasons + tls_hint(reasons));
  }
}

}  // namespace redbloom::redis
