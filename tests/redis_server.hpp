// A private redis-server for one test: started (fork + exec) on a free loopback port in its own
// scratch directory, stopped by pid when the object goes away. Tests get a real server without
// depending on one being installed as a service, and can kill, stop or restart it at will.
//
//   redbloom::test::RedisServer server({"--appendonly", "yes"});
//   auto filter = redbloom::Filter::create_redis(server.endpoint(), "f", params);
//   EXPECT_EQ(server.command({"TYPE", "f"}).text, "hash");
//
// A missing redis-server binary throws (so the test fails, never skips). The binary is
// $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH.
//
// The child is killed if the thread that started it exits (PR_SET_PDEATHSIG), so a crashed or
// timed-out test leaves no server behind: start servers from the test's own thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "redbloom/redis_endpoint.hpp"

namespace redbloom::test {

// A reply of command(), flattened to what checks need.
struct RedisReply {
  enum class Kind { string, status, integer, nil, array, error };
  Kind kind = Kind::nil;
  std::string text;                  // string, status and error replies
  long long integer = 0;             // integer replies
  std::vector<RedisReply> elements;  // array replies
};

// The certificates of TLS tests (tests/support/make-tls-certs.sh, run with openssl), in a
// scratch directory removed with the object: ca.crt, server.crt/.key (for 127.0.0.1, ::1 and
// localhost), client.crt/.key, expired-client.crt/.key (signed by the CA, expired),
// other-ca.crt and other-client.crt/.key (an unrelated CA and a client it signed).
class TestCertificates {
 public:
  TestCertificates();
  ~TestCertificates();
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }
  // dir()/file, e.g. path("ca.crt").
  [[nodiscard]] std::string path(const std::string& file) const { return dir_ + "/" + file; }

 private:
  std::string dir_;
};

// How a RedisServer takes TLS: on its port only (--port 0 --tls-port), with the server
// certificate of `certificates`; clients must show a certificate of the test CA when
// auth_clients is set. The helper's own commands (command(), readiness) use the unix socket.
struct TlsMode {
  const TestCertificates* certificates = nullptr;
  bool auth_clients = false;
};

// A loopback port nobody listens on right now (bind to port 0, read back what the kernel chose).
[[nodiscard]] int free_loopback_port();

class RedisServer;
// Two ACL users of password "pw" for lookups' tests: "reader", who may only read keys (%R~*),
// and "older", who may use any key but not run EVAL_RO or EVALSHA_RO (as before Redis 7).
void add_lookup_users(RedisServer& server);

class RedisServer {
 public:
  // `extra_args` are appended to the command line (e.g. {"--appendonly", "yes"}); a
  // "--requirepass P" among them is remembered, and endpoint() and command() authenticate with
  // it. Throws std::runtime_error if the server cannot be started and answer PING within 10 s.
  explicit RedisServer(std::vector<std::string> extra_args = {});
  // A server that takes TLS connections only (see TlsMode).
  RedisServer(std::vector<std::string> extra_args, const TlsMode& tls);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // 127.0.0.1:port, with the --requirepass password if one was given. In TLS mode, a rediss
  // endpoint that trusts the test CA and, with auth_clients, shows the client certificate.
  [[nodiscard]] RedisEndpoint endpoint() const;
  [[nodiscard]] bool is_tls() const noexcept { return tls_.certificates != nullptr; }
  [[nodiscard]] int port() const noexcept { return port_; }
  // The server's pid, or -1 when it is not running.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  // The scratch directory: --dir (RDB/AOF files), redis.log, and the unix socket.
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }
  [[nodiscard]] std::string log_path() const { return dir_ + "/redis.log"; }
  [[nodiscard]] std::string unix_socket_path() const { return dir_ + "/redis.sock"; }
  [[nodiscard]] const std::string& password() const noexcept { return password_; }

  // Sends `sig` to the server. For SIGKILL, also reaps it (the server is then not running);
  // any other signal is only delivered (SIGSTOP / SIGCONT to simulate a stall, SIGTERM
  // followed by stop() for a graceful exit).
  void kill(int sig);
  // Stops the server: SIGTERM (with AOF on, it flushes), SIGKILL after 10 s. No-op if stopped.
  void stop();
  // stop(), then starts it again with the same directory, port and arguments, and waits for
  // PING: the data survives if the configuration persists it.
  void restart();

  // Runs one command on a fresh connection (so it works across kills and restarts) and returns
  // the reply. Throws std::runtime_error on a connection failure, not on an error reply.
  [[nodiscard]] RedisReply command(const std::vector<std::string>& args) const;
  // Several commands pipelined on one connection (for many GETBITs), replies in order.
  [[nodiscard]] std::vector<RedisReply> commands(
      const std::vector<std::vector<std::string>>& batch) const;
  // command() for an integer reply (throws std::runtime_error for any other kind).
  [[nodiscard]] long long integer(const std::vector<std::string>& args) const;
  // How many times `command` (lower case, as "bitfield") ran here since the start or the last
  // CONFIG RESETSTAT (INFO commandstats): which path a store took shows in what the server ran.
  [[nodiscard]] long long calls(const std::string& command) const;

 private:
  // Starts the server on port_ and waits for it to answer; false if the port was taken. Throws
  // std::runtime_error, with the server's output, for any other failure.
  bool start_on_port();
  // True once the server answers PING; false (and its wait status) if it exited first.
  bool wait_until_ready_or_exit(std::chrono::steady_clock::time_point deadline, int& status);
  // Waits up to `timeout` for the child to exit; true if it did (and was reaped).
  bool reap(std::chrono::milliseconds timeout);

  std::vector<std::string> extra_args_;
  TlsMode tls_;
  std::string password_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace redbloom::test
