"""cproducer-perf-test's send loop: one shared callback, latency from the record timestamp,
failures counted and reported (no broker: a stand-in producer completes records at once)."""

from __future__ import annotations

import argparse
import time
from typing import Any, List

from cproducer import errors, perf
from cproducer.cluster import TopicPartition
from cproducer.producer.internals.produce_request_result import RecordMetadata


class InstantProducer:
    """Completes every third record with an error, the others 40 ms after their timestamp."""

    def __init__(self) -> None:
        self.callbacks: List[Any] = []

    def send(self, topic: str, value: bytes, callback: Any) -> None:
        self.callbacks.append(callback)
        n = len(self.callbacks)
        if n % 3 == 0:
            callback(None, errors.RecordTooLargeError(f"record {n} refused"))
        else:
            ts = int(time.time() * 1000) - 40
            tp = TopicPartition(topic, 0)
            callback(RecordMetadata(topic, 0, tp, n, ts, None, -1, len(value), -1), None)


def test_shared_callback_latency_from_timestamp_and_failures_reported(capsys: Any) -> None:
    stats = perf.Stats(100, reporting_interval_ms=60_000)
    args = argparse.Namespace(topic="t", num_records=30, throughput=-1)
    producer = InstantProducer()
    perf._run_send(producer, args, [b"x" * 100], stats)
    assert len(set(map(id, producer.callbacks))) == 1  # one callback object for every record
    assert len(stats.latencies) == 20 and all(40 <= lat <= 60 for lat in stats.latencies)
    summary = stats.print_total()
    assert summary["errors"] == 10
    out = capsys.readouterr().out
    first = "[Error 10] MessageSizeTooLargeError: record 3 refused"
    assert f"10 records failed; the first: {first}" in out
