#include "redbloom/decision_log.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "local/posix_file.hpp"
#include "redbloom/error.hpp"
#include "redis/key_scan.hpp"
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

using Clock = std::chrono::steady_clock;

// Tries `take` until it succeeds or `wait` has passed (then StorageError naming `where`),
// sleeping between tries, each pause twice the last up to a cap: a round holds it briefly.
void take_within(std::chrono::milliseconds wait, const std::string& where,
                 const std::function<bool()>& take) {
  const Clock::time_point deadline = Clock::now() + wait;
  std::chrono::milliseconds pause{1};
  while (!take()) {
    if (Clock::now() >= deadline) {
      throw StorageError("the round lock " + where + " was held by another stage for " +
                         std::to_string(wait.count() / 1000) +
                         " s: is a stage on this filter stuck? (a killed one's lock ends by "
                         "itself)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

// The descriptor holds the flock; closing it (or the holder's death) releases it.
class FileRoundLock final : public DecisionLog::RoundLock {
 public:
  explicit FileRoundLock(posix::Fd fd) : fd_(std::move(fd)) {}
  bool keep() override { return true; }

 private:
  posix::Fd fd_;
};

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

  // Under the round lock, which a file holder never loses, so reading and removing are one.
  void erase(const std::string& key, std::string_view only_if) override {
    if (get(key) != only_if) return;
    const std::string path = dir_ + "/" + file_name_of(key);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail_errno("cannot remove", path);
    fsync_path(dir_, O_RDONLY | O_DIRECTORY);
  }

  std::unique_ptr<RoundLock> lock_round(std::chrono::milliseconds wait,
                                        std::chrono::milliseconds) override {
    make_dir();
    // A record's file name never starts with '.' (file_name_of), so this is no record's.
    const std::string path = dir_ + "/.lock";
    posix::Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (fd.get() < 0) fail_errno("cannot open the round lock", path);
    take_within(wait, path, [&] {
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return true;
      if (errno != EWOULDBLOCK && errno != EINTR) fail_errno("cannot lock", path);
      return false;
    });
    return std::make_unique<FileRoundLock>(std::move(fd));
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
      if (name.find(".tmp") == std::string_view::npos && name.front() != '.') ++removed;
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

// This machine as a lock holder sees it: the host and the pid namespace, within which a pid
// names one process, so a holder here can tell whether another holder here is still alive.
std::string this_machine() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  char ns[64] = {};
  const ssize_t size = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  return std::string(host) + "/" +
         (size > 0 ? std::string(ns, static_cast<std::size_t>(size)) : "");
}

// "MACHINE PID RANDOM": never another holder's (128 random bits), and says who holds it.
std::string lock_token() {
  std::random_device random;
  std::string token = this_machine() + " " + std::to_string(::getpid()) + " ";
  for (int i = 0; i < 4; ++i) {
    char word[9];
    std::snprintf(word, sizeof word, "%08x", static_cast<unsigned>(random()));
    token += word;
  }
  return token;
}

// A holder on this machine that has died (a killed stage restarting finds its own old lock).
bool holder_is_gone(std::string_view token) {
  const std::size_t random_at = token.rfind(' ');
  if (random_at == std::string_view::npos || random_at == 0) return false;
  const std::size_t pid_at = token.rfind(' ', random_at - 1);
  if (pid_at == std::string_view::npos || token.substr(0, pid_at) != this_machine()) return false;
  const std::string pid(token.substr(pid_at + 1, random_at - pid_at - 1));
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return false;
  return ::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH;
}

// Only the holder's token extends or deletes the lock (one whose lifetime ended may be
// another's); a record is erased only if it still holds what its writer put there.
constexpr std::string_view kKeepLock =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
constexpr std::string_view kTakeOverLock =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end return false";
constexpr std::string_view kDeleteIfHolds =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
    "return 0";

class RedisRoundLock final : public DecisionLog::RoundLock {
 public:
  // Shares the router: the lock may outlive the DecisionLog that took it.
  RedisRoundLock(std::shared_ptr<redis::Router> router, std::string key, std::string token,
                 std::chrono::milliseconds life)
      : router_(std::move(router)),
        key_(std::move(key)),
        token_(std::move(token)),
        life_(life),
        renewed_(Clock::now()) {}
  RedisRoundLock(const RedisRoundLock&) = delete;
  RedisRoundLock& operator=(const RedisRoundLock&) = delete;

  ~RedisRoundLock() override {
    try {
      (void)router_->call(redis::slot_of(key_), {"EVAL", kDeleteIfHolds, "1", key_, token_},
                          redis::OnLostNode::fail);
    } catch (...) {  // NOLINT: a destructor cannot report; the key's lifetime ends it anyway
    }
  }

  bool keep() override {
    // A third of its life gone at most: it cannot have expired, no round trip needed.
    if (Clock::now() - renewed_ < life_ / 3) return true;
    const std::string px = std::to_string(life_.count());
    const redis::Reply reply = router_->run(
        redis::slot_of(key_), {"EVAL", kKeepLock, "1", key_, token_, px}, redis::OnLostNode::retry);
    router_->expect(*reply, REDIS_REPLY_INTEGER, "keep the round lock");
    renewed_ = Clock::now();
    return reply->integer == 1;
  }

 private:
  std::shared_ptr<redis::Router> router_;
  std::string key_;
  std::string token_;
  std::chrono::milliseconds life_;
  Clock::time_point renewed_;
};

// Over a router, so that one server and a Redis Cluster (each key on its slot's node) are alike.
class RedisDecisionLog final : public DecisionLog {
 public:
  RedisDecisionLog(const RedisEndpoint& server, const std::string& name)
      : router_(redis::make_router(server)),
        prefix_(name + ":decisions:"),
        lock_key_(name + ":decisions-lock") {}

  void erase(const std::string& key, std::string_view only_if) override {
    const std::string full = prefix_ + key;
    redis::for_each_part(
        *router_, 1, [&](std::uint64_t) { return full; }, "erase decision record",
        redis::Work::idempotent_write,
        [&](std::uint64_t, const std::string& k, redis::CommandBuffer& buffer) {
          buffer.command({"EVAL", kDeleteIfHolds, "1", k, only_if});
        },
        [&](std::uint64_t, const redisReply& reply) {
          router_->expect(reply, REDIS_REPLY_INTEGER, "erase decision record");
        });
  }

  std::unique_ptr<RoundLock> lock_round(std::chrono::milliseconds wait,
                                        std::chrono::milliseconds life) override {
    const std::string token = lock_token();
    const std::string px = std::to_string(life.count());
    take_within(wait, lock_key_ + " on redis " + router_->endpoint().describe(), [&] {
      const redis::Reply reply =
          router_->run(redis::slot_of(lock_key_), {"SET", lock_key_, token, "NX", "PX", px},
                       redis::OnLostNode::retry);
      if (reply->type != REDIS_REPLY_NIL) {
        router_->expect(*reply, REDIS_REPLY_STATUS, "take the round lock");
        return true;
      }
      // Taken: perhaps by this very SET before a lost connection made the router retry it, or
      // by a stage here that was killed, whose lock need not be waited out.
      const redis::Reply holder =
          router_->run(redis::slot_of(lock_key_), {"GET", lock_key_}, redis::OnLostNode::retry);
      if (holder->type != REDIS_REPLY_STRING) return false;
      const std::string_view held = redis::text_of(*holder);
      if (held == token) return true;
      if (!holder_is_gone(held)) return false;
      const redis::Reply taken = router_->run(
          redis::slot_of(lock_key_), {"EVAL", kTakeOverLock, "1", lock_key_, held, token, px},
          redis::OnLostNode::retry);
      return taken->type == REDIS_REPLY_STATUS;
    });
    return std::make_unique<RedisRoundLock>(router_, lock_key_, token, life);
  }

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
    std::vector<std::string> found;
    redis::scan_keys(*router_, redis::glob_escape(prefix_) + "*",
                     [&](std::string_view key) { found.emplace_back(key); });
    redis::unlink_keys(*router_, found);
    return found.size();
  }

  std::string describe() const override {
    return prefix_ + "* on redis " + router_->endpoint().describe();
  }

 private:
  std::shared_ptr<redis::Router> router_;
  std::string prefix_;
  std::string lock_key_;
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
