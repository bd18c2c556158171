#include "cluster_router.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/sharding.hpp"

namespace redbloom::redis {
namespace {

using Clock = std::chrono::steady_clock;

// How long a pipeline keeps re-running redirected or failed-over work before it gives up.
// A failover takes the cluster's node timeout plus an election (seconds); a slot migration
// of one 512 MiB partition key blocks both nodes for a few seconds.
constexpr std::chrono::seconds kRetryBudget{30};
constexpr std::chrono::milliseconds kFirstBackoff{10};
constexpr std::chrono::milliseconds kMaxBackoff{500};
// WAIT's own timeout: a replica that does not acknowledge within this is reported.
constexpr std::chrono::milliseconds kMaxReplicaWait{10000};
constexpr std::uint32_t kNoNode = UINT32_MAX;
// Units in flight on one node: kPipelineWindow, and more while the ones in flight hold fewer
// than this many bytes of commands. Units of one small command each (an exact-set bucket's GET)
// would otherwise cost a round trip per 8 commands and leave the node idle most of the time.
constexpr std::size_t kSmallUnitsBytes = std::size_t{32} << 10;
constexpr std::size_t kMaxUnitsInFlight = 1024;

// What a redirection or a busy reply asks for.
struct Redirect {
  enum Kind { none, moved, ask, busy } kind = none;
  std::string address;  // "host:port" for moved / ask
  std::string text;     // the reply, for messages
};

Redirect redirect_of(const redisReply& reply) {
  if (!is_error(reply)) return {};
  const std::string_view text = text_of(reply);
  const auto address = [&] {
    const std::size_t space = text.rfind(' ');
    return std::string(text.substr(space + 1));
  };
  if (text.starts_with("MOVED ")) return {Redirect::moved, address(), std::string(text)};
  if (text.starts_with("ASK ")) return {Redirect::ask, address(), std::string(text)};
  // READONLY: a write reached a replica, i.e. the map is stale after a failover.
  if (text.starts_with("TRYAGAIN") || text.starts_with("CLUSTERDOWN") ||
      text.starts_with("LOADING") || text.starts_with("READONLY")) {
    return {Redirect::busy, {}, std::string(text)};
  }
  return {};
}

// Splits a buffer of whole RESP commands (arrays of bulk strings, as CommandBuffer writes
// them) into the commands' byte ranges.
std::vector<std::string_view> split_commands(std::string_view text) {
  std::vector<std::string_view> commands;
  std::size_t at = 0;
  const auto number = [&](std::size_t& pos) {
    std::size_t value = 0;
    while (text[pos] != '\r') value = value * 10 + static_cast<std::size_t>(text[pos++] - '0');
    pos += 2;
    return value;
  };
  while (at < text.size()) {
    std::size_t pos = at + 1;  // past '*'
    const std::size_t args = number(pos);
    for (std::size_t a = 0; a < args; ++a) {
      ++pos;  // past '$'
      pos += number(pos) + 2;
    }
    commands.push_back(text.substr(at, pos - at));
    at = pos;
  }
  return commands;
}

class ClusterRouter final : public Router {
 public:
  explicit ClusterRouter(const RedisEndpoint& endpoint) : endpoint_(endpoint) {
    owner_.fill(kNoNode);
    refresh();
  }

  void pipeline(std::size_t units, std::string_view operation, const Route& route, const Make& make,
                const OnReply& on_reply, OnLostNode lost) override;
  using Router::call;
  Reply call(std::uint16_t slot, std::span<const std::string_view> args, OnLostNode lost) override;

  [[nodiscard]] std::size_t masters() const override { return masters_.size(); }
  [[nodiscard]] std::size_t master_of(std::uint16_t slot) const override {
    const std::uint32_t node = owner_[slot];
    if (node == kNoNode) return 0;
    return static_cast<std::size_t>(std::find(masters_.begin(), masters_.end(), node) -
                                    masters_.begin());
  }
  [[nodiscard]] std::string keyspace_id() override {
    // The id of the node serving slot 0: the same for any seed list into one cluster.
    return "cluster/" + std::string(text_of(*run(0, {"CLUSTER", "MYID"}, OnLostNode::retry)));
  }
  [[nodiscard]] bool is_cluster() const noexcept override { return true; }
  [[nodiscard]] RedirectCounts redirections() const noexcept override { return counts_; }
  [[nodiscard]] const RedisEndpoint& endpoint() const noexcept override { return endpoint_; }
  [[nodiscard]] std::string message(std::string_view operation,
                                    std::string_view what) const override {
    const std::string where = replying_ != nullptr ? replying_->endpoint.describe() + " of " : "";
    return "redis " + where + endpoint_.describe() + ": " + std::string(operation) + ": " +
           std::string(what);
  }

 private:
  struct Node {
    RedisEndpoint endpoint;
    std::unique_ptr<Connection> connection;
    std::size_t replicas = 0;
    Connection& connect() {
      if (!connection) connection = std::make_unique<Connection>(endpoint);
      return *connection;
    }
  };

  // What one node's pass reports back.
  struct PassResult {
    std::map<std::size_t, Redirect> redo;  // group → why it must run again
    std::exception_ptr error;
  };

  std::uint32_t node_at(const std::string& address);
  // "MOVED <slot> <host:port>": the node that answered knows better than any slot map we
  // could fetch now (other nodes may not have heard of the move yet), so it is believed as is.
  void learn_moved(const Redirect& moved) {
    const std::size_t space = moved.text.find(' ');
    const unsigned long slot = std::strtoul(moved.text.c_str() + space + 1, nullptr, 10);
    if (slot < sharding::kClusterSlots) owner_[slot] = node_at(moved.address);
  }
  void refresh();
  void load_slots(const redisReply& reply, const std::string& asked_host);
  void run_pass(Node& node, const std::vector<std::size_t>& list,
                const std::vector<UnitRoute>& routes, const std::set<std::size_t>& asking,
                std::string_view operation, const Make& make, const OnReply& on_reply,
                OnLostNode lost, PassResult& result);
  [[noreturn]] void give_up(std::string_view operation, const std::string& why) const {
    throw StorageError("redis " + endpoint_.describe() + ": " + std::string(operation) +
                       ": gave up after " + std::to_string(kRetryBudget.count()) +
                       " s without progress: " + why);
  }
  static void backoff(int attempt) {
    const auto wait = std::min<std::chrono::milliseconds>(
        kMaxBackoff, kFirstBackoff * (1 << std::min(attempt, 6)));
    std::this_thread::sleep_for(wait);
  }

  RedisEndpoint endpoint_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, std::uint32_t> node_index_;  // "host:port" → nodes_ index
  std::array<std::uint32_t, sharding::kClusterSlots> owner_{};
  std::vector<std::uint32_t> masters_;  // nodes serving slots, by their lowest slot
  bool stale_ = false;
  RedirectCounts counts_;
  std::mutex reply_mutex_;
  const Node* replying_ = nullptr;  // set while on_reply runs, for messages
};

std::uint32_t ClusterRouter::node_at(const std::string& address) {
  const auto found = node_index_.find(address);
  if (found != node_index_.end()) return found->second;
  const std::size_t colon = address.rfind(':');
  auto node = std::make_unique<Node>();
  node->endpoint = endpoint_;
  node->endpoint.cluster_seeds.clear();
  node->endpoint.host = address.substr(0, colon);
  if (node->endpoint.host.starts_with('[')) {
    node->endpoint.host = node->endpoint.host.substr(1, node->endpoint.host.size() - 2);
  }
  node->endpoint.port = std::stoi(address.substr(colon + 1));
  nodes_.push_back(std::move(node));
  const auto index = static_cast<std::uint32_t>(nodes_.size() - 1);
  node_index_.emplace(address, index);
  return index;
}

// CLUSTER SLOTS: [[start, end, [ip, port, id, ...], [replica ip, port, id, ...]...], ...].
void ClusterRouter::load_slots(const redisReply& reply, const std::string& asked_host) {
  owner_.fill(kNoNode);
  masters_.clear();
  std::map<std::uint32_t, std::uint32_t> lowest_slot;  // master → its lowest slot
  for (std::size_t i = 0; i < reply.elements; ++i) {
    const redisReply& range = *reply.element[i];
    if (range.type != REDIS_REPLY_ARRAY || range.elements < 3) {
      fail("CLUSTER SLOTS", "unexpected reply shape");
    }
    const auto first = static_cast<std::uint32_t>(range.element[0]->integer);
    const auto last = static_cast<std::uint32_t>(range.element[1]->integer);
    const redisReply& master = *range.element[2];
    if (master.type != REDIS_REPLY_ARRAY || master.elements < 2 ||
        last >= sharding::kClusterSlots || first > last) {
      fail("CLUSTER SLOTS", "unexpected reply shape");
    }
    std::string host(text_of(*master.element[0]));
    // An empty or "?" address means "the one you reached me at".
    if (host.empty() || host == "?") host = asked_host;
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    const std::uint32_t node = node_at(host + ":" + std::to_string(master.element[1]->integer));
    nodes_[node]->replicas = range.elements - 3;
    for (std::uint32_t s = first; s <= last; ++s) owner_[s] = node;
    const auto [it, fresh] = lowest_slot.emplace(node, first);
    if (!fresh) it->second = std::min(it->second, first);
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> by_slot;
  for (const auto& [node, slot] : lowest_slot) by_slot.emplace_back(slot, node);
  std::sort(by_slot.begin(), by_slot.end());
  for (const auto& entry : by_slot) masters_.push_back(entry.second);
}

void ClusterRouter::refresh() {
  // Known masters first (they are the likeliest to be up), then the seeds.
  std::vector<std::string> candidates;
  for (std::uint32_t m : masters_) candidates.push_back(nodes_[m]->endpoint.describe());
  for (const auto& [host, port] : endpoint_.cluster_seeds) {
    RedisEndpoint seed;
    seed.host = host;
    seed.port = port;
    candidates.push_back(seed.describe());
  }
  std::string why = "no seed";
  for (const std::string& address : candidates) {
    Node& node = *nodes_[node_at(address)];
    try {
      Connection& connection = node.connect();
      connection.append({"CLUSTER", "SLOTS"});
      Reply reply = connection.read("CLUSTER SLOTS");
      if (is_error(*reply)) {
        why = node.endpoint.describe() + ": " + std::string(text_of(*reply));
        continue;
      }
      connection.expect(*reply, REDIS_REPLY_ARRAY, "CLUSTER SLOTS");
      load_slots(*reply, node.endpoint.host);
      stale_ = false;
      return;
    } catch (const StorageError& e) {
      node.connection.reset();
      why = e.what();
    }
  }
  throw StorageError("redis " + endpoint_.describe() +
                     ": no node answered CLUSTER SLOTS (is it a Redis Cluster?): " + why);
}

void ClusterRouter::run_pass(Node& node, const std::vector<std::size_t>& list,
                             const std::vector<UnitRoute>& routes,
                             const std::set<std::size_t>& asking, std::string_view operation,
                             const Make& make, const OnReply& on_reply, OnLostNode lost,
                             PassResult& result) {
  enum Role : std::uint8_t { asking_ok, caller, wait, anchor };
  // Per unit in flight: the role of each of its replies.
  std::vector<std::vector<Role>> roles(list.size());
  // Writes on a master with replicas are held back until a WAIT after them succeeds, so that
  // the caller sees only writes a replica has too. One WAIT covers several units.
  struct Held {
    std::size_t unit;
    std::vector<Reply> replies;
    std::vector<Role> roles;
  };
  std::vector<Held> held;
  const bool replicated = node.replicas > 0;
  const std::string wait_ms =
      std::to_string(std::min(kMaxReplicaWait, node.endpoint.command_timeout).count());
  std::size_t done = 0;
  bool caller_threw = false;
  auto deliver = [&](std::size_t u, const std::vector<Reply>& replies,
                     const std::vector<Role>& role) {
    std::lock_guard lock(reply_mutex_);
    replying_ = &node;
    try {
      std::size_t r = 0;
      for (std::size_t i = 0; i < replies.size(); ++i) {
        if (role[i] == caller) on_reply(u, r++, *replies[i]);
      }
    } catch (...) {
      replying_ = nullptr;
      caller_threw = true;
      throw;
    }
    replying_ = nullptr;
  };
  try {
    Connection& connection = node.connect();
    CommandBuffer scratch;
    CommandBuffer buffer;
    std::size_t sent = 0;
    std::size_t writes_since_wait = 0;
    std::size_t bytes_since_wait = 0;
    std::vector<std::size_t> unit_bytes(list.size());
    std::size_t bytes_in_flight = 0;
    // Small units are refilled once half the bytes in flight came back, in one write: one
    // system call per unit was most of the client's time.
    const auto room = [&](std::size_t bytes) {
      const std::size_t units = sent - done;
      return units < kPipelineWindow || (units < kMaxUnitsInFlight && bytes_in_flight < bytes);
    };
    for (; done < list.size(); bytes_in_flight -= unit_bytes[done], ++done) {
      const bool refill = room(kSmallUnitsBytes / 2);
      bool appended = false;
      while (refill && sent < list.size() && room(kSmallUnitsBytes)) {
        const std::size_t u = list[sent];
        scratch.clear();
        buffer.clear();
        std::size_t commands = 0;
        try {
          commands = make(u, scratch);
        } catch (...) {
          caller_threw = true;
          throw;
        }
        auto& role = roles[sent];
        if (asking.contains(routes[u].group)) {
          if (!routes[u].anchor.empty()) {
            buffer.command({"ASKING"});
            buffer.command({"EXISTS", routes[u].anchor});
            role.push_back(asking_ok);
            role.push_back(anchor);
          }
          for (std::string_view command : split_commands(scratch.text())) {
            buffer.command({"ASKING"});
            buffer.append_raw(command);
            role.push_back(asking_ok);
            role.push_back(caller);
          }
        } else {
          buffer.append_raw(scratch.text());
          role.assign(commands, caller);
        }
        // One WAIT per window's worth of writes, as counted above.
        if (routes[u].writes && replicated) {
          ++writes_since_wait;
          bytes_since_wait += buffer.text().size();
          if ((writes_since_wait >= kPipelineWindow && bytes_since_wait >= kSmallUnitsBytes) ||
              writes_since_wait == kMaxUnitsInFlight || sent + 1 == list.size()) {
            buffer.command({"WAIT", "1", wait_ms});
            role.push_back(wait);
            writes_since_wait = 0;
            bytes_since_wait = 0;
          }
        }
        unit_bytes[sent] = buffer.text().size();
        bytes_in_flight += unit_bytes[sent];
        if (!buffer.empty()) {
          connection.append(buffer);
          appended = true;
        }
        ++sent;
      }
      if (appended) connection.send(operation);
      const std::size_t u = list[done];
      std::vector<Reply> replies;
      for (std::size_t r = 0; r < roles[done].size(); ++r) {
        replies.push_back(connection.read(operation));
      }
      const std::vector<Role>& role = roles[done];
      const std::size_t group = routes[u].group;
      Redirect redirect;
      bool waited = false;
      for (std::size_t i = 0; i < replies.size(); ++i) {
        const redisReply& reply = *replies[i];
        if (role[i] == wait) {
          if (reply.type != REDIS_REPLY_INTEGER || reply.integer < 1) {
            fail("WAIT", is_error(reply)
                             ? text_of(reply)
                             : "no replica acknowledged the writes within " + wait_ms +
                                   " ms: they are on the master only, and a failover now "
                                   "would lose them");
          }
          waited = true;
          continue;
        }
        if (redirect.kind != Redirect::none) continue;
        redirect = redirect_of(reply);
        if (redirect.kind != Redirect::none) continue;
        if (role[i] == anchor && reply.type == REDIS_REPLY_INTEGER && reply.integer == 0) {
          redirect = {Redirect::busy,
                      {},
                      "key '" + std::string(routes[u].anchor) + "' has not moved to " +
                          node.endpoint.describe() + " yet"};
        } else if (role[i] != caller && is_error(reply)) {
          fail("ASKING", text_of(reply));
        }
      }
      if (result.redo.contains(group)) {
        // An earlier unit of its group moved: the group runs again anyway.
      } else if (redirect.kind != Redirect::none) {
        result.redo.emplace(group, std::move(redirect));
      } else if (routes[u].writes && replicated) {
        held.push_back({u, std::move(replies), role});
      } else {
        deliver(u, replies, role);
      }
      if (waited) {
        for (const Held& h : held) deliver(h.unit, h.replies, h.roles);
        held.clear();
      }
    }
  } catch (const StorageError& e) {
    node.connection.reset();
    if (caller_threw || lost == OnLostNode::fail) {
      result.error = std::current_exception();
      return;
    }
    // Lost the node (killed, failing over): run its unfinished groups again once the map
    // says who serves their slots.
    for (const Held& h : held) {
      result.redo.emplace(routes[h.unit].group, Redirect{Redirect::busy, {}, e.what()});
    }
    for (std::size_t i = done; i < list.size(); ++i) {
      result.redo.emplace(routes[list[i]].group, Redirect{Redirect::busy, {}, e.what()});
    }
  } catch (...) {
    node.connection.reset();
    result.error = std::current_exception();
  }
}

void ClusterRouter::pipeline(std::size_t units, std::string_view operation, const Route& route,
                             const Make& make, const OnReply& on_reply, OnLostNode lost) {
  std::vector<UnitRoute> routes(units);
  for (std::size_t u = 0; u < units; ++u) routes[u] = route(u);
  std::vector<std::size_t> todo(units);
  for (std::size_t u = 0; u < units; ++u) todo[u] = u;
  std::map<std::size_t, std::uint32_t> ask_node;  // group → the node an ASK sent it to
  // The budget is for time without progress: a long pipeline through a cluster that keeps
  // moving slots goes on as long as each round completes some of its units.
  auto deadline = Clock::now() + kRetryBudget;
  for (int attempt = 0; !todo.empty(); ++attempt) {
    if (stale_) refresh();
    // Each unit to its node; groups whose slot no node serves wait for the cluster.
    std::map<std::uint32_t, std::vector<std::size_t>> by_node;
    std::map<std::uint32_t, std::set<std::size_t>> asking;
    std::map<std::size_t, Redirect> unserved;
    for (std::size_t u : todo) {
      const std::size_t group = routes[u].group;
      const auto asked = ask_node.find(group);
      const std::uint32_t node = asked != ask_node.end() ? asked->second : owner_[routes[u].slot];
      if (node == kNoNode) {
        unserved.emplace(group, Redirect{Redirect::busy,
                                         {},
                                         "slot " + std::to_string(routes[u].slot) +
                                             " is not served by any node"});
        continue;
      }
      by_node[node].push_back(u);
      if (asked != ask_node.end()) asking[node].insert(group);
    }
    // Every pass's inputs are settled here, before any thread starts: the passes only read
    // them. (Looking them up from the threads with map::operator[] inserted into `asking`
    // concurrently, which corrupted the map: an intermittent crash.)
    struct Pass {
      Node* node;
      const std::vector<std::size_t>* units;
      std::set<std::size_t> asking;
    };
    std::vector<Pass> passes;
    for (auto& [node, units] : by_node) {
      const auto asked = asking.find(node);
      passes.push_back(
          {nodes_[node].get(), &units,
           asked != asking.end() ? std::move(asked->second) : std::set<std::size_t>{}});
    }
    std::vector<PassResult> results(passes.size());
    auto run = [&](std::size_t i) {
      run_pass(*passes[i].node, *passes[i].units, routes, passes[i].asking, operation, make,
               on_reply, lost, results[i]);
    };
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < passes.size(); ++i) threads.emplace_back(run, i);
    if (!passes.empty()) run(0);
    for (std::thread& t : threads) t.join();

    std::map<std::size_t, Redirect> redo = std::move(unserved);
    for (PassResult& result : results) {
      if (result.error) std::rethrow_exception(result.error);
      redo.merge(result.redo);
    }
    if (redo.empty()) return;
    ask_node.clear();
    bool wait = false;
    std::string why;
    for (const auto& [group, redirect] : redo) {
      why = redirect.text;
      if (redirect.kind == Redirect::ask) {
        ask_node[group] = node_at(redirect.address);
        ++counts_.ask;
      } else if (redirect.kind == Redirect::moved) {
        learn_moved(redirect);
        ++counts_.moved;
      } else {
        stale_ = true;
        wait = true;
        ++counts_.waits;
      }
    }
    const std::size_t before = todo.size();
    todo.clear();
    for (const auto& entry : redo) {
      for (std::size_t u = entry.first; u < units && routes[u].group == entry.first; ++u) {
        todo.push_back(u);
      }
    }
    if (todo.size() < before) deadline = Clock::now() + kRetryBudget;
    if (Clock::now() > deadline) give_up(operation, why);
    if (wait) backoff(attempt);
  }
}

Reply ClusterRouter::call(std::uint16_t slot, std::span<const std::string_view> args,
                          OnLostNode lost) {
  const std::string_view operation = args.empty() ? std::string_view{"?"} : args.front();
  const auto deadline = Clock::now() + kRetryBudget;
  std::uint32_t ask = kNoNode;
  for (int attempt = 0;; ++attempt) {
    if (stale_) refresh();
    const std::uint32_t target = ask != kNoNode ? ask : owner_[slot];
    std::string why;
    if (target == kNoNode) {
      why = "slot " + std::to_string(slot) + " is not served by any node";
    } else {
      Node& node = *nodes_[target];
      try {
        Connection& connection = node.connect();
        if (ask != kNoNode) connection.append({"ASKING"});
        connection.append(args);
        if (ask != kNoNode)
          connection.expect(*connection.read("ASKING"), REDIS_REPLY_STATUS, "ASKING");
        Reply reply = connection.read(operation);
        const Redirect redirect = redirect_of(*reply);
        ask = kNoNode;
        if (redirect.kind == Redirect::none) return reply;
        why = redirect.text;
        if (redirect.kind == Redirect::ask) {
          ask = node_at(redirect.address);
          ++counts_.ask;
          continue;
        }
        if (redirect.kind == Redirect::moved) {
          learn_moved(redirect);
          ++counts_.moved;
          if (Clock::now() > deadline) give_up(operation, why);
          continue;
        }
      } catch (const StorageError& e) {
        node.connection.reset();
        stale_ = true;
        if (lost == OnLostNode::fail) throw;
        why = e.what();
      }
    }
    stale_ = true;
    ++counts_.waits;
    if (Clock::now() > deadline) give_up(operation, why);
    backoff(attempt);
  }
}

}  // namespace

std::unique_ptr<Router> make_cluster_router(const RedisEndpoint& endpoint) {
  return std::make_unique<ClusterRouter>(endpoint);
}

}  // namespace redbloom::redis
