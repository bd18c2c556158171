#include "redbloom/redis_endpoint.hpp"

#include <cmath>
#include <cstdlib>

#include "redbloom/error.hpp"

namespace redbloom {
namespace {

// The URI may hold a password, so messages name the problem, never the whole text.
[[noreturn]] void bad_uri(std::string_view /*uri*/, const std::string& why) {
  throw InvalidArgument("bad Redis URI: " + why +
                        " (expected redis://[user:password@]host[:port][/db], "
                        "rediss://... for TLS, unix:///path.sock or "
                        "redis+cluster://host:port[,host:port...])");
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view uri, std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) bad_uri(uri, "bad percent escape");
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) bad_uri(uri, "bad percent escape");
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

long parse_integer(std::string_view uri, std::string_view text, long low, long high,
                   const char* what) {
  if (text.empty() || text.size() > 10) bad_uri(uri, std::string("bad ") + what);
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') bad_uri(uri, std::string("bad ") + what);
    value = value * 10 + (c - '0');
  }
  if (value < low || value > high) bad_uri(uri, std::string(what) + " out of range");
  return value;
}

std::chrono::milliseconds parse_seconds(std::string_view uri, std::string_view text,
                                        const char* what) {
  const std::string copy(text);
  char* end = nullptr;
  const double seconds = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || !(seconds > 0) || seconds > 86400) {
    bad_uri(uri, std::string("bad ") + what + " (seconds, > 0)");
  }
  return std::chrono::milliseconds(static_cast<long>(std::ceil(seconds * 1000)));
}

std::string non_empty(std::string_view uri, std::string_view key, std::string value) {
  if (value.empty()) bad_uri(uri, "empty " + std::string(key));
  return value;
}

// Applies "a=1&b=2".
void apply_query(std::string_view uri, std::string_view query, RedisEndpoint& endpoint) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) bad_uri(uri, "query parameter without '='");
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value = pair.substr(eq + 1);
    if (key == "timeout") {
      endpoint.command_timeout = parse_seconds(uri, value, "timeout");
    } else if (key == "connect_timeout") {
      endpoint.connect_timeout = parse_seconds(uri, value, "connect_timeout");
    } else if (key == "db") {
      endpoint.db = static_cast<int>(parse_integer(uri, value, 0, 1 << 20, "db"));
    } else if (key.starts_with("tls_") && !endpoint.tls) {
      bad_uri(uri, "'" + std::string(key) + "' is a TLS setting: it needs rediss://");
    } else if (key == "tls_ca") {
      endpoint.tls_ca_file = non_empty(uri, key, percent_decode(uri, value));
    } else if (key == "tls_cert") {
      endpoint.tls_cert_file = non_empty(uri, key, percent_decode(uri, value));
    } else if (key == "tls_key") {
      endpoint.tls_key_file = non_empty(uri, key, percent_decode(uri, value));
    } else if (key == "tls_server_name") {
      endpoint.tls_server_name = non_empty(uri, key, percent_decode(uri, value));
    } else if (key == "tls_insecure_skip_verify") {
      if (value == "yes" || value == "true" || value == "1") {
        endpoint.tls_insecure_skip_verify = true;
      } else if (value == "no" || value == "false" || value == "0") {
        endpoint.tls_insecure_skip_verify = false;
      } else {
        bad_uri(uri, "tls_insecure_skip_verify takes yes or no");
      }
    } else {
      bad_uri(uri, "unknown parameter '" + std::string(key) +
                       "' (known: timeout, connect_timeout, db, and with rediss:// tls_ca, "
                       "tls_cert, tls_key, tls_server_name, tls_insecure_skip_verify)");
    }
  }
}

// "user:password", ":password" (default user) or "password" alone.
void apply_userinfo(std::string_view uri, std::string_view userinfo, RedisEndpoint& endpoint) {
  const std::size_t colon = userinfo.find(':');
  if (colon == std::string_view::npos) {
    // redis://secret@host is common (the password alone); treat it as such.
    endpoint.password = percent_decode(uri, userinfo);
    return;
  }
  endpoint.user = percent_decode(uri, userinfo.substr(0, colon));
  endpoint.password = percent_decode(uri, userinfo.substr(colon + 1));
}

// "host", "host:port" or "[v6]:port".
void apply_host_port(std::string_view uri, std::string_view authority, RedisEndpoint& endpoint) {
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) bad_uri(uri, "unclosed '[' in host");
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') bad_uri(uri, "junk after ']'");
      port = after.substr(1);
    }
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) bad_uri(uri, "no host");
  endpoint.host = std::string(host);
  if (!port.empty() || authority.ends_with(':')) {
    endpoint.port = static_cast<int>(parse_integer(uri, port, 1, 65535, "port"));
  }
}

}  // namespace

std::string RedisEndpoint::describe() const {
  if (is_cluster()) {
    std::string text = "cluster ";
    for (std::size_t i = 0; i < cluster_seeds.size(); ++i) {
      RedisEndpoint seed;
      seed.host = cluster_seeds[i].first;
      seed.port = cluster_seeds[i].second;
      if (i > 0) text += ',';
      text += seed.describe();
    }
    return text;
  }
  std::string text;
  if (!unix_path.empty()) {
    text = "unix:" + unix_path;
  } else if (host.find(':') != std::string::npos) {
    text = "[" + host + "]:" + std::to_string(port);
  } else {
    text = host + ":" + std::to_string(port);
  }
  if (db != 0) {
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "/" + to_string().
    text += '/';
    text += std::to_string(db);
  }
  return text;
}

bool RedisEndpoint::same_server(const RedisEndpoint& other) const {
  if (is_cluster() || other.is_cluster()) return cluster_seeds == other.cluster_seeds;
  if (!unix_path.empty() || !other.unix_path.empty()) {
    return unix_path == other.unix_path && db == other.db;
  }
  return host == other.host && port == other.port && db == other.db;
}

RedisEndpoint parse_redis_uri(std::string_view uri) {
  RedisEndpoint endpoint;
  std::string_view rest;
  const bool is_unix = uri.starts_with("unix://");
  const bool is_cluster =
      uri.starts_with("redis+cluster://") || uri.starts_with("rediss+cluster://");
  endpoint.tls = uri.starts_with("rediss://") || uri.starts_with("rediss+cluster://");
  if (uri.starts_with("redis://")) {
    rest = uri.substr(8);
  } else if (uri.starts_with("rediss://")) {
    rest = uri.substr(9);
  } else if (is_cluster) {
    rest = uri.substr(endpoint.tls ? 17 : 16);
  } else if (is_unix) {
    rest = uri.substr(7);
  } else {
    bad_uri(uri, "unknown scheme");
  }
  const std::size_t question = rest.find('?');
  if (question != std::string_view::npos) {
    apply_query(uri, rest.substr(question + 1), endpoint);
    rest = rest.substr(0, question);
  }
  if (endpoint.tls_cert_file.empty() != endpoint.tls_key_file.empty()) {
    bad_uri(uri, "tls_cert and tls_key go together (a client certificate and its key)");
  }
  if (is_unix) {
    // unix://[user:password@]/path: the path starts at the first '/'.
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash + 1 >= rest.size()) {
      bad_uri(uri, "unix:// needs an absolute socket path");
    }
    if (slash > 0) {
      std::string_view userinfo = rest.substr(0, slash);
      if (!userinfo.ends_with('@')) bad_uri(uri, "unix:// needs an absolute socket path");
      userinfo.remove_suffix(1);
      apply_userinfo(uri, userinfo, endpoint);
    }
    endpoint.unix_path = std::string(rest.substr(slash));
    return endpoint;
  }
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos && slash + 1 < rest.size()) {
    endpoint.db = static_cast<int>(parse_integer(uri, rest.substr(slash + 1), 0, 1 << 20, "db"));
  }
  const std::size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    apply_userinfo(uri, authority.substr(0, at), endpoint);
    authority = authority.substr(at + 1);
  }
  if (is_cluster) {
    if (endpoint.db != 0 || (slash != std::string_view::npos && rest.substr(slash) != "/" &&
                             rest.substr(slash) != "/0")) {
      bad_uri(uri, "a Redis Cluster has only database 0");
    }
    while (true) {
      const std::size_t comma = authority.find(',');
      RedisEndpoint seed;
      apply_host_port(uri, authority.substr(0, comma), seed);
      endpoint.cluster_seeds.emplace_back(seed.host, seed.port);
      if (comma == std::string_view::npos) break;
      authority = authority.substr(comma + 1);
    }
    endpoint.host = endpoint.cluster_seeds[0].first;
    endpoint.port = endpoint.cluster_seeds[0].second;
    return endpoint;
  }
  apply_host_port(uri, authority, endpoint);
  return endpoint;
}

RedisEndpoint redis_endpoint_or_default(std::string_view uri) {
  if (!uri.empty()) return parse_redis_uri(uri);
  if (const char* env = std::getenv("REDIS_URL"); env != nullptr && *env != '\0') {
    return parse_redis_uri(env);
  }
  return RedisEndpoint{};
}

}  // namespace redbloom
