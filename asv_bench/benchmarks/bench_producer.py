"""asv: send and send_many end to end against an embedded LocalBroker (throughput tracks), and
their ratios to confluent-kafka (librdkafka) measured in the same run."""

import statistics
import time

import pyarrow as pa

from cproducer import KafkaProducer
from cproducer.localbroker import LocalBroker


class EndToEnd:
    timeout = 300
    number = 1
    repeat = 3

    def setup(self):
        self.broker = LocalBroker().start()
        self.broker.create_topic("bench", 6)
        self.keys = [b"key-%06d" % i for i in range(1000)]
        self.value = b"v" * 100
        self.column = pa.array([self.value] * 10_000)

    def teardown(self):
        self.broker.stop()

    def _send(self, n):
        with KafkaProducer(
            bootstrap_servers=self.broker.bootstrap_servers, compression_type="lz4"
        ) as p:
            p.send("bench", self.value).get(10)
            t0 = time.perf_counter()
            send, keys, value = p.send, self.keys, self.value
            for i in range(n):
                send("bench", value, keys[i % 1000])
            p.flush()
            return n / (time.perf_counter() - t0)

    def _send_many(self, n):
        with KafkaProducer(
            bootstrap_servers=self.broker.bootstrap_servers, compression_type="lz4"
        ) as p:
            p.send("bench", self.value).get(10)
            t0 = time.perf_counter()
            for _ in range(n // 10_000):
                p.send_many("bench", self.column)
            p.flush()
            return n / (time.perf_counter() - t0)

    def _confluent(self, n):
        from confluent_kafka import Producer

        p = Producer(
            {
                "bootstrap.servers": self.broker.bootstrap_servers,
                "compression.type": "lz4",
                "linger.ms": 5,
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        p.produce("bench", self.value)
        p.flush(10)
        t0 = time.perf_counter()
        produce, poll, keys, value = p.produce, p.poll, self.keys, self.value
        for i in range(n):
            while True:
                try:
                    produce("bench", value, keys[i % 1000])
                    break
                except BufferError:
                    poll(0.01)
            if i % 1000 == 0:
                poll(0)
        p.flush(60)
        return n / (time.perf_counter() - t0)

    def _ratio(self, ours, n):
        """Median of ours over the median of librdkafka's, the clients alternating (the machine
        is shared: a ratio from one run is steadier than either figure)."""
        mine, theirs = [], []
        for _ in range(3):
            mine.append(ours(n))
            theirs.append(self._confluent(200_000))
        return statistics.median(mine) / statistics.median(theirs)

    def track_send_vs_confluent(self):
        return self._ratio(self._send, 200_000)

    track_send_vs_confluent.unit = "x confluent msg/s"

    def track_send_many_vs_confluent(self):
        return self._ratio(self._send_many, 1_000_000)

    track_send_many_vs_confluent.unit = "x confluent msg/s"

    def time_send_200k(self):
        self._send(200_000)

    def time_send_many_1m(self):
        self._send_many(1_000_000)

    def track_send_msgs_per_s(self):
        return self._send(200_000)

    track_send_msgs_per_s.unit = "msg/s"

    def track_send_many_msgs_per_s(self):
        return self._send_many(1_000_000)

    track_send_many_msgs_per_s.unit = "msg/s"
