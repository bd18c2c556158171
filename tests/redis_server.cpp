#include "redis_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <thread>

namespace redbloom::test {
namespace {

constexpr std::chrono::seconds kStartTimeout{10};
constexpr std::chrono::seconds kStopTimeout{10};
constexpr std::chrono::seconds kCommandTimeout{10};
// Between readiness probes: short, since a server usually answers within a few milliseconds.
constexpr std::chrono::milliseconds kPollInterval{5};
// A freshly probed free port can be taken by someone else before redis binds it.
constexpr int kPortAttempts = 5;

std::string find_redis_server() {
  if (const char* env = std::getenv("REDBLOOM_REDIS_SERVER"); env != nullptr && *env != '\0') {
    if (::access(env, X_OK) != 0) {
      throw std::runtime_error(std::string("REDBLOOM_REDIS_SERVER=") + env +
                               " is not an executable");
    }
    return env;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  dirs += ":/usr/sbin:/usr/bin";  // Debian's package puts it in /usr/bin
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/redis-server";
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw std::runtime_error(
      "redis-server not found on PATH: the Redis tests need a real server (install the "
      "redis-server package, or set REDBLOOM_REDIS_SERVER to its path)");
}

// The last `bytes` of a file from offset `from` on (so a restart's messages are not mixed up
// with those of the run before).
std::string tail_of(const std::string& path, std::uintmax_t from = 0, std::size_t bytes = 2000) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(from));
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.size() > bytes) text.erase(0, text.size() - bytes);
  return text;
}

std::uintmax_t size_of(const std::string& path) {
  std::error_code missing;
  const std::uintmax_t size = std::filesystem::file_size(path, missing);
  return missing ? 0 : size;
}

struct ContextDeleter {
  void operator()(redisContext* context) const noexcept { redisFree(context); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;
struct ReplyDeleter {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// A connection to the loopback port, or to the unix socket when `socket_path` is set (a TLS
// server's), authenticated if `password` is set; nullptr (and `why`) on failure.
Context connect(int port, const std::string& socket_path, const std::string& password,
                std::chrono::milliseconds timeout, std::string& why) {
  Context context(socket_path.empty()
                      ? redisConnectWithTimeout("127.0.0.1", port, to_timeval(timeout))
                      : redisConnectUnixWithTimeout(socket_path.c_str(), to_timeval(timeout)));
  if (context == nullptr || context->err != 0) {
    why = context == nullptr ? "out of memory" : context->errstr;
    return nullptr;
  }
  redisSetTimeout(context.get(), to_timeval(timeout));
  if (!password.empty()) {
    const char* argv[] = {"AUTH", password.c_str()};
    const std::size_t lengths[] = {4, password.size()};
    Reply reply(static_cast<redisReply*>(redisCommandArgv(context.get(), 2, argv, lengths)));
    if (reply == nullptr || reply->type == REDIS_REPLY_ERROR) {
      why = reply == nullptr ? context->errstr : std::string(reply->str, reply->len);
      return nullptr;
    }
  }
  return context;
}

RedisReply convert(const redisReply& reply) {
  RedisReply out;
  switch (reply.type) {
    case REDIS_REPLY_STRING:
      out.kind = RedisReply::Kind::string;
      break;
    case REDIS_REPLY_STATUS:
      out.kind = RedisReply::Kind::status;
      break;
    case REDIS_REPLY_ERROR:
      out.kind = RedisReply::Kind::error;
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = RedisReply::Kind::integer;
      out.integer = reply.integer;
      return out;
    case REDIS_REPLY_ARRAY:
      out.kind = RedisReply::Kind::array;
      for (std::size_t i = 0; i < reply.elements; ++i) {
        out.elements.push_back(convert(*reply.element[i]));
      }
      return out;
    default:
      out.kind = RedisReply::Kind::nil;
      return out;
  }
  if (reply.str != nullptr) out.text.assign(reply.str, reply.len);
  return out;
}

}  // namespace

TestCertificates::TestCertificates() {
  std::string pattern = (std::filesystem::temp_directory_path() / "redbloom-tls-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  }
  dir_ = pattern;
  const std::filesystem::path script =
      std::filesystem::path(REDBLOOM_TESTS_DIR) / "support" / "make-tls-certs.sh";
  const std::string command = "bash '" + script.string() + "' '" + dir_ + "' 2>&1";
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  int status = -1;
  if (pipe != nullptr) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    status = ::pclose(pipe);
  }
  if (status != 0) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw std::runtime_error("cannot make the test certificates with " + script.string() + ": " +
                             output);
  }
}

TestCertificates::~TestCertificates() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot find a free loopback port: " + why);
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

RedisServer::RedisServer(std::vector<std::string> extra_args)
    : RedisServer(std::move(extra_args), TlsMode{}) {}

RedisServer::RedisServer(std::vector<std::string> extra_args, const TlsMode& tls)
    : extra_args_(std::move(extra_args)), tls_(tls) {
  for (std::size_t i = 0; i + 1 < extra_args_.size(); ++i) {
    if (extra_args_[i] == "--requirepass") password_ = extra_args_[i + 1];
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "redbloom-redis-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  }
  dir_ = pattern;
  try {
    for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
      port_ = free_loopback_port();
      if (start_on_port()) return;
    }
    throw std::runtime_error("redis-server could not bind a free loopback port in " +
                             std::to_string(kPortAttempts) + " attempts; its log:\n" +
                             tail_of(log_path()) + tail_of(dir_ + "/stdout.log"));
  } catch (...) {
    // The destructor does not run for a throwing constructor.
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

RedisServer::~RedisServer() {
  // SIGKILL works on a SIGSTOPped server too, and no test needs a graceful exit here.
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

RedisEndpoint RedisServer::endpoint() const {
  RedisEndpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = port_;
  endpoint.password = password_;
  if (is_tls()) {
    endpoint.tls = true;
    endpoint.tls_ca_file = tls_.certificates->path("ca.crt");
    if (tls_.auth_clients) {
      endpoint.tls_cert_file = tls_.certificates->path("client.crt");
      endpoint.tls_key_file = tls_.certificates->path("client.key");
    }
  }
  return endpoint;
}

bool RedisServer::start_on_port() {
  const std::string binary = find_redis_server();
  std::vector<std::string> args = {binary,
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--daemonize",
                                   "no",
                                   "--logfile",
                                   log_path(),
                                   "--unixsocket",
                                   unix_socket_path(),
                                   "--unixsocketperm",
                                   "700"};
  if (is_tls()) {
    const TestCertificates& certs = *tls_.certificates;
    args[2] = "0";  // no plain port
    for (const std::string& arg :
         {std::string("--tls-port"), std::to_string(port_), std::string("--tls-cert-file"),
          certs.path("server.crt"), std::string("--tls-key-file"), certs.path("server.key"),
          std::string("--tls-ca-cert-file"), certs.path("ca.crt"),
          std::string("--tls-auth-clients"), std::string(tls_.auth_clients ? "yes" : "no")}) {
      args.push_back(arg);
    }
  }
  // Later options win in Redis, so the extras override the defaults above.
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // Early failures (a bad option) go to stderr, not to the log file.
  const std::string output = dir_ + "/stdout.log";
  const std::uintmax_t log_from = size_of(log_path());
  const std::uintmax_t output_from = size_of(output);
  const int out_fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out_fd < 0) throw std::runtime_error("cannot open " + output + ": " + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(out_fd);
    ::close(null_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    // Only async-signal-safe calls until exec: the parent may have other threads.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    // The parent's sockets (client connections to other servers) must not outlive it here.
    ::close_range(3, ~0U, 0);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_fd);
  if (null_fd >= 0) ::close(null_fd);
  pid_ = child;
  int status = 0;
  if (wait_until_ready_or_exit(std::chrono::steady_clock::now() + kStartTimeout, status)) {
    return true;
  }
  // Only a port taken in the meantime is worth another attempt; anything else (a bad option,
  // a binary that is not redis-server) would fail the same way again.
  const std::string said = tail_of(log_path(), log_from) + tail_of(output, output_from);
  if (said.find("Address already in use") != std::string::npos) return false;
  throw std::runtime_error(binary + " exited (" +
                           (WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                              : "signal " + std::to_string(WTERMSIG(status))) +
                           ") before answering PING on port " + std::to_string(port_) +
                           "; its output:\n" + said);
}

bool RedisServer::wait_until_ready_or_exit(std::chrono::steady_clock::time_point deadline,
                                           int& status) {
  std::string why = "no attempt";
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    if (Context context = connect(port_, is_tls() ? unix_socket_path() : "", password_,
                                  std::chrono::milliseconds(500), why)) {
      Reply reply(static_cast<redisReply*>(redisCommand(context.get(), "PING")));
      // A server still loading its AOF answers -LOADING: not ready yet.
      if (reply != nullptr && reply->type == REDIS_REPLY_STATUS &&
          std::string(reply->str, reply->len) == "PONG") {
        // Another process's server may have won the port before ours tried it (ctest -j): only
        // our own pid will do. Ours then fails to bind and exits, and the caller retries.
        Reply info(static_cast<redisReply*>(redisCommand(context.get(), "INFO server")));
        const std::string ours = "process_id:" + std::to_string(pid_) + "\r\n";
        if (info != nullptr && info->type == REDIS_REPLY_STRING &&
            std::string(info->str, info->len).find(ours) != std::string::npos) {
          return true;
        }
        why = "port " + std::to_string(port_) + " answered by another server";
      } else {
        why = reply == nullptr ? context->errstr : std::string(reply->str, reply->len);
      }
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  const pid_t stuck = pid_;
  kill(SIGKILL);
  throw std::runtime_error("redis-server (pid " + std::to_string(stuck) + ", port " +
                           std::to_string(port_) + ") did not answer PING within " +
                           std::to_string(kStartTimeout.count()) + " s (last: " + why +
                           "); its log:\n" + tail_of(log_path()));
}

bool RedisServer::reap(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const pid_t done = ::waitpid(pid_, nullptr, WNOHANG);
    if (done == pid_ || (done < 0 && errno == ECHILD)) {
      pid_ = -1;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void RedisServer::kill(int sig) {
  if (pid_ <= 0) throw std::runtime_error("RedisServer::kill: the server is not running");
  if (::kill(pid_, sig) != 0) {
    throw std::runtime_error(std::string("kill: ") + std::strerror(errno));
  }
  if (sig == SIGKILL) {
    // SIGKILL cannot be caught or blocked: the exit is only a scheduling delay away.
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  // A SIGSTOPped server would keep SIGTERM pending forever.
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  if (!reap(kStopTimeout)) kill(SIGKILL);
}

void RedisServer::restart() {
  stop();
  if (!start_on_port()) {
    throw std::runtime_error("redis-server could not be restarted: port " + std::to_string(port_) +
                             " is taken; its log:\n" + tail_of(log_path()));
  }
}

RedisReply RedisServer::command(const std::vector<std::string>& args) const {
  return commands({args}).front();
}

std::vector<RedisReply> RedisServer::commands(
    const std::vector<std::vector<std::string>>& batch) const {
  std::string why;
  Context context =
      connect(port_, is_tls() ? unix_socket_path() : "", password_, kCommandTimeout, why);
  if (context == nullptr) {
    throw std::runtime_error("cannot connect to the test redis on port " + std::to_string(port_) +
                             ": " + why);
  }
  for (const std::vector<std::string>& args : batch) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context.get(), static_cast<int>(args.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      throw std::runtime_error("test redis: cannot queue a command: out of memory");
    }
  }
  std::vector<RedisReply> replies;
  for (const std::vector<std::string>& args : batch) {
    void* raw = nullptr;
    if (redisGetReply(context.get(), &raw) != REDIS_OK || raw == nullptr) {
      throw std::runtime_error("test redis on port " + std::to_string(port_) + ": " +
                               (args.empty() ? "" : args[0]) + ": " + context->errstr);
    }
    Reply reply(static_cast<redisReply*>(raw));
    replies.push_back(convert(*reply));
  }
  return replies;
}

long long RedisServer::calls(const std::string& command) const {
  const std::string text = this->command({"INFO", "commandstats"}).text;
  const std::string field = "cmdstat_" + command + ":calls=";
  const std::size_t at = text.find(field);
  return at == std::string::npos ? 0 : std::stoll(text.substr(at + field.size()));
}

long long RedisServer::integer(const std::vector<std::string>& args) const {
  const RedisReply reply = command(args);
  if (reply.kind != RedisReply::Kind::integer) {
    throw std::runtime_error("test redis: " + (args.empty() ? std::string() : args[0]) +
                             " did not answer an integer (" + reply.text + ")");
  }
  return reply.integer;
}

void add_lookup_users(RedisServer& server) {
  for (const std::vector<std::string>& user :
       {std::vector<std::string>{"ACL", "SETUSER", "reader", "on", ">pw", "%R~*", "+@all"},
        std::vector<std::string>{"ACL", "SETUSER", "older", "on", ">pw", "~*", "+@all",
                                 "-evalsha_ro", "-eval_ro"}}) {
    const RedisReply reply = server.command(user);
    if (reply.text != "OK") throw std::runtime_error("ACL SETUSER: " + reply.text);
  }
}

}  // namespace redbloom::test
