#include "redbloom/location.hpp"

#include <cstdlib>

#include "redbloom/error.hpp"

namespace redbloom {
namespace {

// Anything with a scheme is taken for a URI (an unknown scheme is then an error that lists
// the known ones), so "http://..." is never mistaken for a file name. A file whose name holds
// "://" can be given as file:NAME or ./NAME.
bool is_redis_uri(std::string_view text) {
  return !text.starts_with("file:") && text.find("://") != std::string_view::npos;
}

// "the URI" / "--redis redis://h:1#a".
std::string said(const LocationWords& words, std::string_view text) {
  return words.text_option.empty() ? "the URI" : words.text_option + " " + std::string(text);
}

constexpr std::string_view kStageForms =
    "a stream is named redis-stream://HOST[:PORT][/DB]#STREAM, or "
    "redis-stream+cluster://HOST:PORT[,HOST:PORT...]#STREAM on a Cluster (rediss-stream:// and "
    "rediss-stream+cluster:// over TLS); a Kafka topic is kafka://HOST:PORT/TOPIC (several "
    "brokers: kafka://HOST:PORT,HOST:PORT/TOPIC)";

// The filter URI a stream URI stands for: "-stream" taken out of its scheme.
std::optional<std::string> stream_as_filter_uri(std::string_view text) {
  for (const std::string_view scheme : {"redis", "rediss"}) {
    for (const std::string_view rest : {"://", "+cluster://"}) {
      const std::string prefix = std::string(scheme) + "-stream" + std::string(rest);
      if (text.starts_with(prefix)) {
        return std::string(scheme) + std::string(rest) + std::string(text.substr(prefix.size()));
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<StagePlace::Kind> StagePlace::kind_of(std::string_view text) noexcept {
  if (text.starts_with("kafka://")) return Kind::kafka_topic;
  if (stream_as_filter_uri(text)) return Kind::redis_stream;
  return std::nullopt;
}

StagePlace StagePlace::parse(std::string_view text, std::string_view option) {
  const std::string shown = std::string(option) + " '" + std::string(text) + "'";
  StagePlace place;
  if (text.starts_with("kafka://")) {
    constexpr std::size_t kScheme = 8;
    const std::size_t slash = text.find('/', kScheme);
    if (slash == std::string_view::npos || slash == kScheme || slash + 1 == text.size() ||
        text.find('/', slash + 1) != std::string_view::npos) {
      throw InvalidArgument(shown +
                            ": a Kafka topic is named kafka://HOST:PORT[,HOST:PORT...]/TOPIC");
    }
    place.kind = Kind::kafka_topic;
    place.brokers = std::string(text.substr(kScheme, slash - kScheme));
    place.topic = std::string(text.substr(slash + 1));
    return place;
  }
  const auto uri = stream_as_filter_uri(text);
  if (!uri) throw InvalidArgument(shown + ": " + std::string(kStageForms));
  const std::string named_stream = "one server or one Cluster, and the stream's name after '#'";
  if (Location::name_in(*uri).empty()) throw InvalidArgument(shown + ": " + named_stream);
  const Location where = Location::parse(*uri);
  if (where.servers.size() != 1) {
    throw InvalidArgument(shown + ": " + named_stream);
  }
  place.kind = Kind::redis_stream;
  place.server = where.servers.front();
  place.stream = where.name;
  return place;
}

std::vector<RedisEndpoint> parse_redis_servers(std::string_view list) {
  if (list.starts_with("redis+cluster://") || list.starts_with("rediss+cluster://")) {
    return {parse_redis_uri(list)};
  }
  std::vector<RedisEndpoint> servers;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    const std::string_view uri = list.substr(start, comma - start);
    if (uri.empty()) throw InvalidArgument("empty URI in the list of Redis servers");
    servers.push_back(parse_redis_uri(uri));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return servers;
}

std::string Location::name_in(std::string_view text) {
  if (!is_redis_uri(text)) return {};
  const std::size_t hash = text.rfind('#');
  return hash == std::string_view::npos ? std::string() : std::string(text.substr(hash + 1));
}

Location Location::parse(std::string_view text, std::string_view name) {
  return parse(text, name, LocationWords{});
}

Location Location::parse(std::string_view text, std::string_view name, const LocationWords& words) {
  const bool options = !words.text_option.empty();
  if (text == "memory:") {
    if (!name.empty()) throw InvalidArgument("a memory filter has no name");
    return memory();
  }
  if (text.empty() && name.empty()) {
    throw InvalidArgument("no filter location given: a file path, or a Redis filter name");
  }
  if (!text.empty() && !is_redis_uri(text)) {
    if (!name.empty() && options) {
      throw InvalidArgument(
          said(words, text) + " is a file, and a file has no name: " + words.name_option +
          " is for a filter in Redis (" + words.text_option + " redis://HOST:PORT#NAME, or " +
          words.name_option + " NAME with " + words.redis_option + " URI)");
    }
    if (!name.empty()) {
      throw InvalidArgument("a filter file has no name ('" + std::string(name) +
                            "'): for a Redis filter give a redis:// URI");
    }
    if (text.starts_with("file:")) text.remove_prefix(5);
    if (text.empty()) throw InvalidArgument("empty file path");
    return file(std::string(text));
  }
  std::string_view servers = text;
  std::string_view named = name;
  if (const std::size_t hash = text.rfind('#'); hash != std::string_view::npos) {
    servers = text.substr(0, hash);
    const std::string_view fragment = text.substr(hash + 1);
    if (!named.empty() && named != fragment) {
      throw InvalidArgument("two names for one filter: '" + std::string(fragment) + "' in " +
                            said(words, text) + " and '" + std::string(named) + "' " +
                            (options ? "in " + words.name_option : std::string("apart")));
    }
    named = fragment;
  }
  if (named.empty() && options) {
    throw InvalidArgument(said(words, text) + " names no filter: write its name after '#' (" +
                          std::string(text) + "#NAME) or give " + words.name_option + " NAME");
  }
  if (named.empty()) {
    throw InvalidArgument("no filter name: write it after '#' (" + std::string(text) +
                          "#NAME), or give the name on its own (--name NAME on the command "
                          "line, name=\"NAME\" in Python)");
  }
  if (!servers.empty()) return redis(parse_redis_servers(servers), std::string(named));
  const char* env = std::getenv("REDIS_URL");
  if (env == nullptr || *env == '\0') {
    return redis({redis_endpoint_or_default("")}, std::string(named));
  }
  try {
    return redis(parse_redis_servers(env), std::string(named));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("$REDIS_URL (used because no Redis URI was given): ") +
                          e.what() + "; fix or unset REDIS_URL, or give the URI");
  }
}

Location Location::file(std::string path) {
  Location location;
  location.kind = Kind::file;
  location.path = std::move(path);
  return location;
}

Location Location::redis(std::vector<RedisEndpoint> servers, std::string name) {
  if (servers.empty()) throw InvalidArgument("a Redis filter needs at least one server");
  if (name.empty()) throw InvalidArgument("a Redis filter needs a name");
  Location location;
  location.kind = Kind::redis;
  location.servers = std::move(servers);
  location.name = std::move(name);
  return location;
}

Location Location::memory() {
  Location location;
  location.kind = Kind::memory;
  return location;
}

std::string Location::describe() const {
  switch (kind) {
    case Kind::file:
      return path;
    case Kind::memory:
      return "memory";
    case Kind::redis:
      break;
  }
  std::string where;
  for (const RedisEndpoint& server : servers) {
    where += (where.empty() ? "" : ", ") + server.describe();
  }
  return name + " on redis " + where;
}

}  // namespace redbloom
