// Where a Redis server is and how to talk to it, parsed from a URI:
//
//   redis://[[user]:password@]host[:port][/db][?timeout=S&connect_timeout=S]
//   unix:///path/to/redis.sock[?db=N&timeout=S&connect_timeout=S]
//   redis+cluster://[[user]:password@]host:port[,host:port...][?timeout=S&connect_timeout=S]
//   rediss://... and rediss+cluster://...: the same over TLS, with these parameters too:
//     tls_ca=PATH             trust only the CA certificates in this PEM file (default: the
//                             system's trusted CAs, through OpenSSL's default paths, so
//                             SSL_CERT_FILE and SSL_CERT_DIR apply)
//     tls_cert=PATH&tls_key=PATH  a client certificate and its key (mutual TLS)
//     tls_server_name=NAME    the name the server's certificate must carry, also sent as SNI
//                             (default: the host)
//     tls_insecure_skip_verify=yes  accept any certificate (a warning is printed)
//
// A redis+cluster URI names a Redis Cluster by one or more of its nodes (seeds): the slot map
// is discovered from them (and MOVED/ASK followed). Credentials, timeouts and TLS settings apply
// to every node.
//
// Host may be a bracketed IPv6 address. The user name and password are percent-decoded, so a
// password holding '@' or ':' is written %40 / %3A. Timeouts are in seconds (fractions
// allowed). With no URI, REDIS_URL is used, else redis://127.0.0.1:6379.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redbloom {

struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path;  // when set, host and port are unused
  std::string user;       // empty: AUTH with the password alone (the "default" user)
  std::string password;   // empty: no AUTH
  int db = 0;
  std::chrono::milliseconds connect_timeout{5000};
  // Applies to each read and write on the socket. Generous by default: one BITOP OR over a
  // 512 MiB partition takes the server a fraction of a second, a large upload longer.
  std::chrono::milliseconds command_timeout{60000};
  // Seed nodes of a Redis Cluster (redis+cluster://); empty for one server. host and port are
  // the first seed's.
  std::vector<std::pair<std::string, int>> cluster_seeds;
  // TLS (rediss://). The server's certificate is verified, and its name checked, unless
  // tls_insecure_skip_verify is set.
  bool tls = false;
  std::string tls_ca_file;    // empty: the system's trusted CAs
  std::string tls_cert_file;  // client certificate (mutual TLS), with tls_key_file
  std::string tls_key_file;
  std::string tls_server_name;  // empty: host
  bool tls_insecure_skip_verify = false;

  [[nodiscard]] bool is_cluster() const noexcept { return !cluster_seeds.empty(); }

  // For messages (never shows the password): "127.0.0.1:6379", "unix:/run/redis.sock", with
  // "/db" appended when db != 0; "cluster 127.0.0.1:7000,127.0.0.1:7001" for a cluster.
  [[nodiscard]] std::string describe() const;
  // The same server (host/port or socket path, and db), whatever the credentials.
  [[nodiscard]] bool same_server(const RedisEndpoint& other) const;
};

// Throws InvalidArgument naming what is wrong with the URI.
[[nodiscard]] RedisEndpoint parse_redis_uri(std::string_view uri);

// parse_redis_uri(uri), or of $REDIS_URL when uri is empty, or the local default.
[[nodiscard]] RedisEndpoint redis_endpoint_or_default(std::string_view uri);

// The warning said once per process when a connection skips certificate verification
// (tls_insecure_skip_verify): by default "redbloom: WARNING: ..." on stderr. A program that
// formats its own stderr (the command line's --json) passes a function that writes `message`
// its way; it is called once, and must not drop it. Set it before the first connection.
using InsecureTlsWarning = void (*)(std::string_view message);
void set_insecure_tls_warning(InsecureTlsWarning write);

}  // namespace redbloom
