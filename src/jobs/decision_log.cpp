#include "redbloom/decision_log.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "local/posix_file.hpp"
#include "redbloom/error.hpp"
#include "redis/object.hpp"
#include "redis/router.hpp"

namespace redbloom {
namespace {

// A key as a file name: letters, digits, '-', '_' and '.' stay, every other byte is %XX, so
// distinct keys are distinct names and none is "..".
std::string file_name_of(const std::string& key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string name;
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0 || c == '-' || c == '_' || (c == '.' && !name.empty())) {
      name += c;
    } else {
      name += '%';
      name += kHex[byte >> 4];
      name += kHex[byte & 15];
    }
  }
  return name;
}

[[noreturn]] void fail_errno(const std::string& what, const std::string& path) {
  throw StorageError(what + " " + path + ": " + std::strerror(errno));
}

void fsync_path(const std::string& path, int flags) {
  const posix::Fd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (fd.get() < 0) fail_errno("cannot open", path);
  if (::fsync(fd.get()) != 0) fail_errno("cannot sync", path);
}

class FileDecisionLog final : public DecisionLog {
 public:
  explicit FileDecisionLog(std::string filter_path) : dir_(std::move(filter_path) + ".decisions") {}

  void put(const std::string& key, std::string_view record, std::chrono::milliseconds) override {
    make_dir();
    const std::string path = dir_ + "/" + file_name_of(key);
    const std::string temp = path + ".tmp" + std::to_string(::getpid());
    {
      const posix::Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      if (fd.get() < 0) fail_errno("cannot create decision record", temp);
      posix::write_at(fd.get(), record.data(), record.size(), 0, temp);
      if (::fsync(fd.get()) != 0) fail_errno("cannot sync decision record", temp);
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) fail_errno("cannot rename to", path);
    fsync_path(dir_, O_RDONLY | O_DIRECTORY);
  }

  std::optional<std::string> get(const std::string& key) override {
    const std::string path = dir_ + "/" + file_name_of(key);
    const posix::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
      fail_errno("cannot open decision record", path);
    }
    std::string record(posix::file_size(fd.get(), path), '\0');
    record.resize(posix::read_at(fd.get(), record.data(), record.size(), 0, path));
    return record;
  }

  std::size_t remove_all() override {
    DIR* dir = ::opendir(dir_.c_str());
    if (dir == nullptr) {
      if (errno == ENOENT || errno == ENOTDIR) return 0;
      fail_errno("cannot open directory", dir_);
    }
    std::size_t removed = 0;
    while (const dirent* entry = ::readdir(dir)) {
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = dir_ + "/" + std::string(name);
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        const int saved = errno;
        ::closedir(dir);
        errno = saved;
        fail_errno("cannot remove", path);
      }
      if (name.find(".tmp") == std::string_view::npos) ++removed;
    }
    ::closedir(dir);
    if (::rmdir(dir_.c_str()) != 0 && errno != ENOENT) fail_errno("cannot remove", dir_);
    made_ = false;
    return removed;
  }

  std::string describe() const override { return dir_ + "/"; }

 private:
  void make_dir() {
    if (made_) return;
    if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
      fail_errno("cannot create directory", dir_);
    }
    // The directory's own entry must survive a crash too.
    const std::size_t slash = dir_.rfind('/');
    fsync_path(slash == std::string::npos ? "." : dir_.substr(0, slash + 1),
               O_RDONLY | O_DIRECTORY);
    remove_orphan_temps();
    made_ = true;
  }

  // A process killed while writing a record leaves its temporary file (NAME.tmpPID): removed
  // once that process is gone, so a crash costs no lasting space.
  void remove_orphan_temps() const {
    DIR* dir = ::opendir(dir_.c_str());
    if (dir == nullptr) return;
    while (const dirent* entry = ::readdir(dir)) {
      const std::string_view name = entry->d_name;
      const std::size_t tmp = name.rfind(".tmp");
      if (tmp == std::string_view::npos) continue;
      const std::string pid(name.substr(tmp + 4));
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) {
        ::unlink((dir_ + "/" + std::string(name)).c_str());
      }
    }
    ::closedir(dir);
  }

  std::string dir_;
  bool made_ = false;
};

// `text` with the glob characters of SCAN MATCH escaped.
std::string glob_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Over a router, so that one server and a Redis Cluster (each key on its slot's node) are alike.
class RedisDecisionLog final : public DecisionLog {
 public:
  RedisDecisionLog(const RedisEndpoint& server, std::string name)
      : router_(redis::make_router(server)), prefix_(std::move(name) + ":decisions:") {}

  void put(const std::string& key, std::string_view record,
           std::chrono::milliseconds ttl) override {
    const std::string full = prefix_ + key;
    const std::string px = std::to_string(ttl.count());
    // A write unit: on a Cluster master with replicas it is followed by WAIT, so the record
    // survives a failover as the filter's bits do.
    redis::for_each_part(
        *router_, 1, [&](std::uint64_t) { return full; }, "SET decision record",
        redis::Work::idempotent_write,
        [&](std::uint64_t, const std::string& k, redis::CommandBuffer& buffer) {
          if (ttl.count() > 0) {
            buffer.command({"SET", k, record, "PX", px});
          } else {
            buffer.command({"SET", k, record});
          }
        },
        [&](std::uint64_t, const redisReply& reply) {
          router_->expect(reply, REDIS_REPLY_STATUS, "SET decision record");
        });
  }

  std::optional<std::string> get(const std::string& key) override {
    const std::string full = prefix_ + key;
    const redis::Reply reply =
        router_->run(redis::slot_of(full), {"GET", full}, redis::OnLostNode::retry);
    if (reply->type == REDIS_REPLY_NIL) return std::nullopt;
    router_->expect(*reply, REDIS_REPLY_STRING, "GET decision record");
    return std::string(redis::text_of(*reply));
  }

  std::size_t remove_all() override {
    const std::string pattern = glob_escape(prefix_) + "*";
    std::vector<std::string> found;
    redis::for_each_master(*router_, [&](std::uint16_t slot) {
      std::string cursor = "0";
      do {
        const redis::Reply reply = router_->run(
            slot, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, redis::OnLostNode::retry);
        router_->expect(*reply, REDIS_REPLY_ARRAY, "SCAN");
        if (reply->elements != 2 || reply->element[1]->type != REDIS_REPLY_ARRAY) {
          router_->fail("SCAN", "not a SCAN reply");
        }
        cursor = redis::text_of(*reply->element[0]);
        const redisReply& keys = *reply->element[1];
        for (std::size_t i = 0; i < keys.elements; ++i) {
          found.emplace_back(redis::text_of(*keys.element[i]));
        }
      } while (cursor != "0");
    });
    redis::for_each_part(
        *router_, found.size(), [&](std::uint64_t i) { return found[i]; }, "UNLINK",
        redis::Work::idempotent_write,
        [](std::uint64_t, const std::string& k, redis::CommandBuffer& buffer) {
          buffer.command({"UNLINK", k});
        },
        [&](std::uint64_t, const redisReply& reply) {
          router_->expect(reply, REDIS_REPLY_INTEGER, "UNLINK");
        });
    return found.size();
  }

  std::string describe() const override {
    return prefix_ + "* on redis " + router_->endpoint().describe();
  }

 private:
  std::unique_ptr<redis::Router> router_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<DecisionLog> DecisionLog::beside(const Location& filter) {
  switch (filter.kind) {
    case Location::Kind::file:
      return std::make_unique<FileDecisionLog>(filter.path);
    case Location::Kind::redis:
      if (filter.servers.empty()) break;
      return std::make_unique<RedisDecisionLog>(filter.servers.front(), filter.name);
    case Location::Kind::memory:
      break;
  }
  throw InvalidArgument("decision records need the filter in a file or in Redis, not in memory");
}

}  // namespace redbloom
