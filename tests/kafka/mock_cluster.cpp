// A Kafka cluster for the tests: librdkafka's mock cluster (rdkafka_mock.h) in this process,
// on loopback. Prints its bootstrap servers on one line, then reads commands on stdin until
// end of input or SIGTERM:
//   leader TOPIC PARTITION BROKER   make BROKER (an id from 1; -1: none) the partition's leader
//   down BROKER / up BROKER         take a broker off the network, or put it back
//   fail APIKEY ERROR               the next request of that API key (e.g. 28, TxnOffsetCommit)
//                                   is answered with that error code (e.g. 30)
// Usage: kafka_mock_cluster BROKERS [TOPIC:PARTITIONS ...]
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: kafka_mock_cluster BROKERS [TOPIC:PARTITIONS ...]\n";
    return 2;
  }
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The mock's handle only hosts the cluster; it sends nothing itself.
  if (rd_kafka_conf_set(conf, "log_level", "3", error, sizeof error) != RD_KAFKA_CONF_OK) {
    std::cerr << error << "\n";
    return 2;
  }
  rd_kafka_t* handle = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (handle == nullptr) {
    std::cerr << "rd_kafka_new: " << error << "\n";
    return 1;
  }
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(handle, std::atoi(argv[1]));
  if (cluster == nullptr) {
    std::cerr << "rd_kafka_mock_cluster_new failed\n";
    return 1;
  }
  for (int i = 2; i < argc; ++i) {
    const std::string spec = argv[i];
    const std::size_t colon = spec.rfind(':');
    if (colon == std::string::npos) {
      std::cerr << "a topic is TOPIC:PARTITIONS, not " << spec << "\n";
      return 2;
    }
    const rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(
        cluster, spec.substr(0, colon).c_str(), std::atoi(spec.c_str() + colon + 1), 1);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::cerr << "topic " << spec << ": " << rd_kafka_err2str(err) << "\n";
      return 1;
    }
  }
  std::cout << rd_kafka_mock_cluster_bootstraps(cluster) << std::endl;

  std::signal(SIGTERM, [](int) { std::_Exit(0); });
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (command == "leader") {
      std::string topic;
      int partition = 0;
      int broker = 0;
      words >> topic >> partition >> broker;
      err = rd_kafka_mock_partition_set_leader(cluster, topic.c_str(), partition, broker);
    } else if (command == "down" || command == "up") {
      int broker = 0;
      words >> broker;
      err = command == "down" ? rd_kafka_mock_broker_set_down(cluster, broker)
                              : rd_kafka_mock_broker_set_up(cluster, broker);
    } else if (command == "fail") {
      int api = 0;
      int code = 0;
      words >> api >> code;
      rd_kafka_mock_push_request_errors(cluster, static_cast<std::int16_t>(api), 1,
                                        static_cast<rd_kafka_resp_err_t>(code));
    } else if (command.empty()) {
      continue;
    } else {
      std::cout << "unknown command " << command << std::endl;
      continue;
    }
    std::cout << (err == RD_KAFKA_RESP_ERR_NO_ERROR ? "ok" : rd_kafka_err2str(err)) << std::endl;
  }
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(handle);
  return 0;
}
