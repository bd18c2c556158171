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

#include "core/sharding.hpp"
#include "redbloom/error.hpp"
#include "run_each.hpp"

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
                const OnUnit& on_unit, OnLostNode lost) override;
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

  // One round of a pipeline: its units by the node they go to, the groups each node is sent
  // with ASKING, and the groups no node serves now.
  struct Round {
    std::map<std::uint32_t, std::vector<std::size_t>> by_node;
    std::map<std::uint32_t, std::set<std::size_t>> asking;
    std::map<std::size_t, Redirect> unserved;
  };
  Round plan_round(const std::vector<std::size_t>& todo, const std::vector<UnitRoute>& routes,
                   const std::map<std::size_t, std::uint32_t>& ask_node);
  // Runs the round's passes, one thread per node; the groups to run again, and why.
  std::map<std::size_t, Redirect> run_round(Round& round, const std::vector<UnitRoute>& routes,
                                            std::string_view operation, const Make& make,
                                            const OnUnit& on_unit, OnLostNode lost);
  // Learns from the redirects (ASK targets into ask_node, MOVED into the slot map); true if
  // the cluster is busy and the next round should wait. `why` is the last reply, for messages.
  bool follow(const std::map<std::size_t, Redirect>& redo,
              std::map<std::size_t, std::uint32_t>& ask_node, std::string& why);
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
  class NodePass;
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

// One node's share of a pipeline: its units sent in a window and their replies read in order;
// redirections, and work in flight on a lost node, become groups to run again; writes on a
// master with replicas are held back until a WAIT after them succeeds, so that the caller sees
// only writes a replica has too (one WAIT covers several units).
class ClusterRouter::NodePass {
 public:
  NodePass(ClusterRouter& router, Node& node, const std::vector<std::size_t>& units,
           const std::vector<UnitRoute>& routes, const std::set<std::size_t>& asking,
           std::string_view operation, const Make& make, const OnUnit& on_unit, OnLostNode lost)
      : router_(router),
        node_(node),
        units_(units),
        routes_(routes),
        asking_(asking),
        operation_(operation),
        make_(make),
        on_unit_(on_unit),
        lost_(lost),
        replicated_(node.replicas > 0),
        wait_ms_(std::to_string(std::min(kMaxReplicaWait, node.endpoint.command_timeout).count())),
        sent_(units.size()) {}

  PassResult run() {
    try {
      Connection& connection = node_.connect();
      for (; done_ < units_.size(); ++done_) {
        fill_window(connection);
        read_unit(connection);
        bytes_in_flight_ -= sent_[done_].bytes;
      }
    } catch (const StorageError& e) {
      node_.connection.reset();
      if (caller_threw_ || lost_ == OnLostNode::fail) {
        result_.error = std::current_exception();
        return std::move(result_);
      }
      // Lost the node (killed, failing over): its unfinished groups run again once the map
      // says who serves their slots.
      for (const Held& h : held_) redo(h.unit, Redirect{Redirect::busy, {}, e.what()});
      for (std::size_t i = done_; i < units_.size(); ++i) {
        redo(units_[i], Redirect{Redirect::busy, {}, e.what()});
      }
    } catch (...) {
      node_.connection.reset();
      result_.error = std::current_exception();
    }
    return std::move(result_);
  }

 private:
  // What each reply of a unit on the wire is: the caller's, or ours.
  enum Role : std::uint8_t { asking_ok, caller, wait, anchor };
  struct Sent {
    std::vector<Role> roles;
    std::size_t bytes = 0;
  };
  struct Held {
    std::size_t unit;
    std::vector<Reply> replies;
    std::vector<Role> roles;
  };

  // Small units are refilled once half the bytes in flight came back, in one write: one system
  // call per unit was most of the client's time.
  [[nodiscard]] bool room(std::size_t bytes) const {
    const std::size_t in_flight = next_ - done_;
    return in_flight < kPipelineWindow ||
           (in_flight < kMaxUnitsInFlight && bytes_in_flight_ < bytes);
  }

  void fill_window(Connection& connection) {
    if (!room(kSmallUnitsBytes / 2)) return;
    bool appended = false;
    while (next_ < units_.size() && room(kSmallUnitsBytes)) {
      encode(next_);
      if (!buffer_.empty()) {
        connection.append(buffer_);
        appended = true;
      }
      ++next_;
    }
    if (appended) connection.send(operation_);
  }

  // Writes the i-th unit of this pass, with ASKING before each command of a group sent here by
  // an ASK, and a WAIT after a window's worth of writes on a replicated master.
  void encode(std::size_t i) {
    const std::size_t u = units_[i];
    scratch_.clear();
    buffer_.clear();
    std::size_t commands = 0;
    try {
      commands = make_(u, scratch_);
    } catch (...) {
      caller_threw_ = true;
      throw;
    }
    std::vector<Role>& roles = sent_[i].roles;
    if (asking_.contains(routes_[u].group)) {
      if (!routes_[u].anchor.empty()) {
        buffer_.command({"ASKING"});
        buffer_.command({"EXISTS", routes_[u].anchor});
        roles.push_back(asking_ok);
        roles.push_back(anchor);
      }
      for (std::string_view command : split_commands(scratch_.text())) {
        buffer_.command({"ASKING"});
        buffer_.append_raw(command, 1);
        roles.push_back(asking_ok);
        roles.push_back(caller);
      }
    } else {
      buffer_.append_raw(scratch_.text(), scratch_.commands());
      roles.assign(commands, caller);
    }
    if (routes_[u].writes && replicated_) {
      ++writes_since_wait_;
      bytes_since_wait_ += buffer_.text().size();
      if ((writes_since_wait_ >= kPipelineWindow && bytes_since_wait_ >= kSmallUnitsBytes) ||
          writes_since_wait_ == kMaxUnitsInFlight || i + 1 == units_.size()) {
        buffer_.command({"WAIT", "1", wait_ms_});
        roles.push_back(wait);
        writes_since_wait_ = 0;
        bytes_since_wait_ = 0;
      }
    }
    sent_[i].bytes = buffer_.text().size();
    bytes_in_flight_ += sent_[i].bytes;
  }

  // Reads the replies of the oldest unit in flight and settles it: run again elsewhere,
  // held for a WAIT, or handed to the caller.
  void read_unit(Connection& connection) {
    const std::size_t u = units_[done_];
    std::vector<Role> roles = std::move(sent_[done_].roles);
    std::vector<Reply> replies;
    for (std::size_t r = 0; r < roles.size(); ++r) replies.push_back(connection.read(operation_));
    bool waited = false;
    Redirect redirect = classify(u, replies, roles, waited);
    if (result_.redo.contains(routes_[u].group)) {
      // An earlier unit of its group moved: the group runs again anyway.
    } else if (redirect.kind != Redirect::none) {
      redo(u, std::move(redirect));
    } else if (routes_[u].writes && replicated_) {
      held_.push_back({u, std::move(replies), std::move(roles)});
    } else {
      deliver(u, replies, roles);
    }
    if (waited) {
      for (const Held& h : held_) deliver(h.unit, h.replies, h.roles);
      held_.clear();
    }
  }

  // The first redirection among a unit's replies (or none); a failed WAIT or ASKING throws.
  Redirect classify(std::size_t u, const std::vector<Reply>& replies,
                    const std::vector<Role>& roles, bool& waited) const {
    Redirect redirect;
    for (std::size_t i = 0; i < replies.size(); ++i) {
      const redisReply& reply = *replies[i];
      if (roles[i] == wait) {
        if (reply.type != REDIS_REPLY_INTEGER || reply.integer < 1) {
          router_.fail("WAIT", is_error(reply)
                                   ? text_of(reply)
                                   : "no replica acknowledged the writes within " + wait_ms_ +
                                         " ms: they are on the master only, and a failover now "
                                         "would lose them");
        }
        waited = true;
        continue;
      }
      if (redirect.kind != Redirect::none) continue;
      redirect = redirect_of(reply);
      if (redirect.kind != Redirect::none) continue;
      if (roles[i] == anchor && reply.type == REDIS_REPLY_INTEGER && reply.integer == 0) {
        redirect = {Redirect::busy,
                    {},
                    "key '" + std::string(routes_[u].anchor) + "' has not moved to " +
                        node_.endpoint.describe() + " yet"};
      } else if (roles[i] != caller && is_error(reply)) {
        router_.fail("ASKING", text_of(reply));
      }
    }
    return redirect;
  }

  void deliver(std::size_t u, const std::vector<Reply>& replies, const std::vector<Role>& roles) {
    std::vector<const redisReply*> mine;
    for (std::size_t i = 0; i < replies.size(); ++i) {
      if (roles[i] == caller) mine.push_back(replies[i].get());
    }
    std::lock_guard lock(router_.reply_mutex_);
    router_.replying_ = &node_;
    try {
      on_unit_(u, Replies(mine));
    } catch (...) {
      router_.replying_ = nullptr;
      caller_threw_ = true;
      throw;
    }
    router_.replying_ = nullptr;
  }

  void redo(std::size_t u, Redirect why) { result_.redo.emplace(routes_[u].group, std::move(why)); }

  ClusterRouter& router_;
  Node& node_;
  const std::vector<std::size_t>& units_;
  const std::vector<UnitRoute>& routes_;
  const std::set<std::size_t>& asking_;
  std::string_view operation_;
  const Make& make_;
  const OnUnit& on_unit_;
  OnLostNode lost_;
  bool replicated_;
  std::string wait_ms_;
  std::vector<Sent> sent_;  // per unit of the pass
  std::vector<Held> held_;
  CommandBuffer scratch_;
  CommandBuffer buffer_;
  std::size_t next_ = 0;  // units encoded and sent
  std::size_t done_ = 0;  // units whose replies were read
  std::size_t bytes_in_flight_ = 0;
  std::size_t writes_since_wait_ = 0;
  std::size_t bytes_since_wait_ = 0;
  bool caller_threw_ = false;
  PassResult result_;
};

void ClusterRouter::pipeline(std::size_t units, std::string_view operation, const Route& route,
                             const Make& make, const OnUnit& on_unit, OnLostNode lost) {
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
    Round round = plan_round(todo, routes, ask_node);
    std::map<std::size_t, Redirect> redo = run_round(round, routes, operation, make, on_unit, lost);
    if (redo.empty()) return;
    std::string why;
    const bool wait = follow(redo, ask_node, why);
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

ClusterRouter::Round ClusterRouter::plan_round(
    const std::vector<std::size_t>& todo, const std::vector<UnitRoute>& routes,
    const std::map<std::size_t, std::uint32_t>& ask_node) {
  Round round;
  for (std::size_t u : todo) {
    const std::size_t group = routes[u].group;
    const auto asked = ask_node.find(group);
    const std::uint32_t node = asked != ask_node.end() ? asked->second : owner_[routes[u].slot];
    if (node == kNoNode) {
      round.unserved.emplace(
          group, Redirect{Redirect::busy,
                          {},
                          "slot " + std::to_string(routes[u].slot) + " is not served by any node"});
      continue;
    }
    round.by_node[node].push_back(u);
    if (asked != ask_node.end()) round.asking[node].insert(group);
  }
  return round;
}

std::map<std::size_t, Redirect> ClusterRouter::run_round(Round& round,
                                                         const std::vector<UnitRoute>& routes,
                                                         std::string_view operation,
                                                         const Make& make, const OnUnit& on_unit,
                                                         OnLostNode lost) {
  // Every pass's inputs are settled here, before any thread starts: the passes only read them.
  struct Pass {
    Node* node;
    const std::vector<std::size_t>* units;
    std::set<std::size_t> asking;
  };
  std::vector<Pass> passes;
  for (auto& [node, units] : round.by_node) {
    const auto asked = round.asking.find(node);
    passes.push_back(
        {nodes_[node].get(), &units,
         asked != round.asking.end() ? std::move(asked->second) : std::set<std::size_t>{}});
  }
  std::vector<PassResult> results(passes.size());
  run_each(passes.size(), [&](std::size_t i) {
    results[i] = NodePass(*this, *passes[i].node, *passes[i].units, routes, passes[i].asking,
                          operation, make, on_unit, lost)
                     .run();
  });
  std::map<std::size_t, Redirect> redo = std::move(round.unserved);
  for (PassResult& result : results) {
    if (result.error) std::rethrow_exception(result.error);
    redo.merge(result.redo);
  }
  return redo;
}

bool ClusterRouter::follow(const std::map<std::size_t, Redirect>& redo,
                           std::map<std::size_t, std::uint32_t>& ask_node, std::string& why) {
  ask_node.clear();
  bool wait = false;
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
  return wait;
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
