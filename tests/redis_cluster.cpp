#include "redis_cluster.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace redbloom::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSetupTimeout = std::chrono::seconds(30);
constexpr auto kPollInterval = std::chrono::milliseconds(50);

// Polls `ready` every kPollInterval until it holds; throws naming `what` after kSetupTimeout.
template <class Ready>
void wait_for(const std::string& what, Ready&& ready) {
  const auto deadline = Clock::now() + kSetupTimeout;
  while (!ready()) {
    if (Clock::now() > deadline) throw std::runtime_error("cluster: timed out waiting for " + what);
    std::this_thread::sleep_for(kPollInterval);
  }
}

RedisReply checked(const RedisServer& node, const std::vector<std::string>& args) {
  RedisReply reply = node.command(args);
  if (reply.kind == RedisReply::Kind::error) {
    throw std::runtime_error("cluster setup: " + args[0] + " " + (args.size() > 1 ? args[1] : "") +
                             " on port " + std::to_string(node.port()) + ": " + reply.text);
  }
  return reply;
}

// slot range → master port, from CLUSTER SLOTS.
std::vector<std::pair<unsigned, int>> slot_starts(const RedisServer& node) {
  std::vector<std::pair<unsigned, int>> out;
  for (const RedisReply& range : checked(node, {"CLUSTER", "SLOTS"}).elements) {
    out.emplace_back(static_cast<unsigned>(range.elements[0].integer),
                     static_cast<int>(range.elements[2].elements[1].integer));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

RedisCluster::RedisCluster(int masters, int replicas_per_master,
                           std::vector<std::string> extra_args)
    : RedisCluster(masters, replicas_per_master, std::move(extra_args), TlsMode{}) {}

RedisCluster::RedisCluster(int masters, int replicas_per_master,
                           std::vector<std::string> extra_args, const TlsMode& tls) {
  if (tls.certificates != nullptr) {
    for (const char* arg : {"--tls-cluster", "yes", "--tls-replication", "yes"}) {
      extra_args.emplace_back(arg);
    }
  }
  const int total = masters * (1 + replicas_per_master);
  std::vector<int> bus_ports;
  for (int i = 0; i < total; ++i) {
    bus_ports.push_back(free_loopback_port());
    std::vector<std::string> args{"--cluster-enabled",      "yes",
                                  "--cluster-config-file",  "nodes.conf",
                                  "--cluster-node-timeout", "1000",
                                  "--cluster-port",         std::to_string(bus_ports.back())};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    nodes_.push_back(std::make_unique<RedisServer>(std::move(args), tls));
    ids_.push_back(checked(*nodes_.back(), {"CLUSTER", "MYID"}).text);
    checked(*nodes_.back(), {"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)});
  }
  for (int m = 0; m < masters; ++m) {
    const long first = 16384L * m / masters;
    const long last = 16384L * (m + 1) / masters - 1;
    checked(*nodes_[m], {"CLUSTER", "ADDSLOTSRANGE", std::to_string(first), std::to_string(last)});
  }
  for (int i = 1; i < total; ++i) {
    checked(*nodes_[0], {"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[i]->port()),
                         std::to_string(bus_ports[i])});
  }
  wait_for("every node to know every other", [&] {
    for (const auto& node : nodes_) {
      const std::string text = checked(*node, {"CLUSTER", "NODES"}).text;
      if (std::count(text.begin(), text.end(), '\n') < total) return false;
      if (text.find("handshake") != std::string::npos) return false;
    }
    return true;
  });
  for (int m = 0; m < masters; ++m) {
    for (int r = 0; r < replicas_per_master; ++r) {
      checked(*nodes_[masters + m * replicas_per_master + r], {"CLUSTER", "REPLICATE", ids_[m]});
    }
  }
  wait_for("replicas to be in sync", [&] {
    for (int i = masters; i < total; ++i) {
      const std::string text = checked(*nodes_[i], {"INFO", "replication"}).text;
      if (text.find("master_link_status:up") == std::string::npos) return false;
    }
    for (const RedisReply& range : checked(*nodes_[0], {"CLUSTER", "SLOTS"}).elements) {
      if (range.elements.size() != 3u + static_cast<unsigned>(replicas_per_master)) return false;
    }
    return true;
  });
  wait_until_stable();
}

RedisEndpoint RedisCluster::endpoint() const {
  // The TLS settings (and the password) of one node are every node's.
  RedisEndpoint endpoint = nodes_[0]->endpoint();
  for (const auto& node : nodes_) endpoint.cluster_seeds.emplace_back("127.0.0.1", node->port());
  endpoint.host = "127.0.0.1";
  endpoint.port = nodes_[0]->port();
  return endpoint;
}

std::size_t RedisCluster::index_of_port(int port) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->port() == port) return i;
  }
  throw std::runtime_error("cluster: no node on port " + std::to_string(port));
}

std::size_t RedisCluster::owner_of(unsigned slot) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!alive(i)) continue;
    int port = -1;
    for (const auto& [start, master_port] : slot_starts(*nodes_[i])) {
      if (start <= slot) port = master_port;
    }
    return index_of_port(port);
  }
  throw std::runtime_error("cluster: no live node");
}

void RedisCluster::migrate_slot(unsigned slot, std::size_t to) {
  const std::size_t from = owner_of(slot);
  if (from == to) return;
  const std::string s = std::to_string(slot);
  checked(*nodes_[to], {"CLUSTER", "SETSLOT", s, "IMPORTING", ids_[from]});
  checked(*nodes_[from], {"CLUSTER", "SETSLOT", s, "MIGRATING", ids_[to]});
  // A key at a time, with a pause between: clients in the middle of a pipeline meet the slot
  // half moved (ASK for moved keys, TRYAGAIN for commands over keys on both sides).
  for (int round = 0; round < 100000; ++round) {
    const RedisReply keys = checked(*nodes_[from], {"CLUSTER", "GETKEYSINSLOT", s, "1"});
    if (keys.elements.empty()) break;
    checked(*nodes_[from], {"MIGRATE", "127.0.0.1", std::to_string(nodes_[to]->port()), "", "0",
                            "60000", "KEYS", keys.elements[0].text});
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The new owner first, as redis-cli does, so the slot is never without one.
  checked(*nodes_[to], {"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
  checked(*nodes_[from], {"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (i != to && i != from && alive(i))
      (void)nodes_[i]->command({"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
  }
}

void RedisCluster::wait_until_stable() const {
  wait_for("cluster_state:ok on every node, agreeing on the slot map", [&] {
    std::vector<std::pair<unsigned, int>> first;
    bool have_first = false;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!alive(i)) continue;
      if (checked(*nodes_[i], {"CLUSTER", "INFO"}).text.find("cluster_state:ok") ==
          std::string::npos) {
        return false;
      }
      const auto starts = slot_starts(*nodes_[i]);
      if (have_first && starts != first) return false;
      first = starts;
      have_first = true;
    }
    return true;
  });
}

}  // namespace redbloom::test
