"""asv: send and send_many end to end against an embedded LocalBroker (throughput tracks)."""

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
