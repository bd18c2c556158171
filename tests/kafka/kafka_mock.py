"""A Kafka cluster for tests: librdkafka's mock cluster in the kafka_mock_cluster helper
(REDBLOOM_KAFKA_MOCK, set by ctest), on loopback, stopped by its pid; kcat as the producer and
the consumer, as a user would run them. Every wait is bounded."""

import os
import shutil
import subprocess

import pytest


def mock_program():
    path = os.environ.get("REDBLOOM_KAFKA_MOCK")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("REDBLOOM_KAFKA_MOCK must name the built kafka_mock_cluster (ctest sets it)")
    return path


def kcat_program():
    path = shutil.which("kcat")
    if path is None:
        pytest.fail("kcat not found (scripts/install-deps.sh --test installs it)")
    return path


class MockCluster:
    def __init__(self, brokers=1, topics=()):
        """topics: ("name:partitions", ...)."""
        self.process = subprocess.Popen([mock_program(), str(brokers), *topics],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.bootstrap = self.process.stdout.readline().strip()
        if not self.bootstrap:
            self.stop()
            pytest.fail("the mock cluster did not start: %s" % self.process.stderr.read())

    def command(self, line):
        """A command of the helper (leader TOPIC PARTITION BROKER, down B, up B, fail APIKEY
        ERROR): its answer."""
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def uri(self, topic):
        return "kafka://%s/%s" % (self.bootstrap, topic)

    def produce(self, topic, records, headers=(), partition=None):
        """records: [(key, value)] as text, keyed (kcat's default partitioner hashes the key,
        unless `partition` names one)."""
        made = self.start_producing(topic, records, headers, partition)
        assert made.wait(timeout=300) == 0, made.stderr.read()
        made.stderr.close()

    def start_producing(self, topic, records, headers=(), partition=None):
        """As produce, in the background: the kcat process, its input written and closed."""
        data = "".join("%s\t%s\n" % kv for kv in records)
        args = [kcat_program(), "-P", "-b", self.bootstrap, "-t", topic, "-K", "\t", "-z", "none"]
        if partition is not None:
            args += ["-p", str(partition)]
        for h in headers:
            args += ["-H", h]
        made = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        made.stdin.write(data)
        made.stdin.close()
        return made

    def consume(self, topic, timeout=120):
        """Every record of the topic, [(key, value, partition, headers)], read to its end."""
        fmt = "%k\t%p\t%h\t%s\n"  # the value last: it may hold tabs
        made = subprocess.run([kcat_program(), "-C", "-b", self.bootstrap, "-t", topic, "-e",
                               "-q", "-f", fmt], capture_output=True, text=True,
                              timeout=timeout)
        assert made.returncode == 0, made.stderr
        out = []
        for line in made.stdout.splitlines():
            key, partition, headers, value = line.split("\t", 3)
            out.append((key, value, int(partition), headers))
        return out

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
