// A private Redis Cluster for one test: `masters` RedisServer nodes with --cluster-enabled,
// each with `replicas_per_master` replicas, the 16384 slots split evenly over the masters,
// built with CLUSTER commands (ADDSLOTSRANGE, MEET, REPLICATE), as `redis-cli --cluster
// create` does. Every node is a RedisServer: killed by pid when the object goes away.
//
//   redbloom::test::RedisCluster cluster(3, 1);
//   auto filter = redbloom::Filter::create_redis(cluster.endpoint(), "f", params);
//
// The node timeout is short (1 s) so that a killed master's replica takes over within a few
// seconds. Throws std::runtime_error if the cluster is not up within 30 s.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "redis_server.hpp"

namespace redbloom::test {

class RedisCluster {
 public:
  // `extra_args` go to every node's command line (e.g. {"--loadmodule", path}).
  RedisCluster(int masters, int replicas_per_master, std::vector<std::string> extra_args = {});
  // Every node takes TLS only (RedisServer's TlsMode), and the nodes talk to each other over
  // TLS too (--tls-cluster yes, --tls-replication yes), as a managed TLS cluster does.
  RedisCluster(int masters, int replicas_per_master, std::vector<std::string> extra_args,
               const TlsMode& tls);

  // redis+cluster:// (rediss+cluster:// in TLS mode) with every node as a seed.
  [[nodiscard]] RedisEndpoint endpoint() const;
  // Nodes: the masters first (in slot order), then the replicas (replica r of master m at
  // masters + m * replicas_per_master + r).
  [[nodiscard]] RedisServer& node(std::size_t i) { return *nodes_[i]; }
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] const std::string& id(std::size_t i) const { return ids_[i]; }
  // The node index that serves `slot` now, as node 0's view (or any live node's) says.
  [[nodiscard]] std::size_t owner_of(unsigned slot) const;
  // The index of the node with this port.
  [[nodiscard]] std::size_t index_of_port(int port) const;

  // Moves `slot` from its owner to node `to` the way redis-cli --cluster reshard does:
  // IMPORTING / MIGRATING, MIGRATE of its keys in batches, then SETSLOT NODE on every live node.
  void migrate_slot(unsigned slot, std::size_t to);
  // Waits (up to 30 s) until every live node reports cluster_state:ok and agrees on the owner
  // of every slot.
  void wait_until_stable() const;

 private:
  [[nodiscard]] bool alive(std::size_t i) const { return nodes_[i]->pid() > 0; }
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::string> ids_;
};

}  // namespace redbloom::test
