"""metrics() against a real broker (Tansu), and against kafka-python 3.0's metrics() for the same
work: the groups and names kafka-python returns are all there, with Java's meanings.

Rates are checked against what Java's Rate must give for the totals: with ``samples`` windows of
``window`` ms and everything recorded within the last ``T`` s (< one window), a rate is the total
over between ``(samples - 1) x window`` and ``T + (samples - 1) x window``. Nothing here waits
for time to pass except for an outcome (a buffer coming back, a batch completing)."""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Dict, List, Optional

from cproducer import KafkaProducer
from cproducer.localbroker import LocalBroker
from cproducer.protocol import ErrorCode
from tests.tools.virtual_cluster import VirtualCluster

WINDOW_MS = 600_000  # one window outlasts any test: no sample expires while we look


def _between(rate: float, total: float, elapsed_s: float, samples: int = 2) -> bool:
    least = (samples - 1) * WINDOW_MS / 1000
    return total / (elapsed_s + least) <= rate <= total / least


def _wait_for(predicate: Any, what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def test_totals_rates_sizes_and_the_buffer_after_sending(
    broker: LocalBroker, new_topic: Any
) -> None:
    small, large = new_topic(2), new_topic(1)
    started = time.monotonic()
    p = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=5,
        compression_type="lz4",
        metrics_sample_window_ms=WINDOW_MS,
    )
    try:
        for i in range(1200):
            p.send(small, b"a" * 100)
            if i < 800:
                p.send(large, b"%06d" % i + b"b" * 294)
        p.flush(30)
        groups = p.metrics()
        elapsed = time.monotonic() - started
        pm = groups["producer-metrics"]
        ts, tl = (
            groups[f"producer-topic-metrics.{small}"],
            groups[f"producer-topic-metrics.{large}"],
        )

        # totals: per producer and split by topic
        assert pm["record-send-total"] == 2000.0
        assert ts["record-send-total"] == 1200.0 and tl["record-send-total"] == 800.0
        assert pm["record-error-total"] == 0.0 and pm["record-retry-total"] == 0.0
        assert ts["record-error-total"] == tl["record-retry-total"] == 0.0
        # rates: Java's windowed rate of those totals
        assert _between(pm["record-send-rate"], 2000, elapsed)
        assert _between(ts["record-send-rate"], 1200, elapsed)
        assert _between(tl["record-send-rate"], 800, elapsed)
        assert _between(tl["byte-rate"], tl["byte-total"], elapsed)
        assert _between(pm["request-rate"], pm["request-total"], elapsed)
        assert _between(pm["outgoing-byte-rate"], pm["outgoing-byte-total"], elapsed)
        assert _between(pm["response-rate"], pm["response-total"], elapsed)
        assert pm["record-send-rate"] > 0 and pm["byte-rate"] > 0

        # batch sizes: what the topics' batches add up to, each compressed (lz4, repetitive
        # values), no larger than batch.size
        batch_bytes = ts["byte-total"] + tl["byte-total"]
        batches = batch_bytes / pm["batch-size-avg"]
        assert abs(batches - round(batches)) < 1e-6 and 3 <= round(batches) <= 2000
        assert pm["batch-size-avg"] <= pm["batch-size-max"] <= 16384
        assert 0 < pm["compression-rate-avg"] < 0.5 and 0 < ts["compression-rate"] < 0.5
        # records: the largest is a 300-byte value with its framing; the average is of each
        # batch's largest (Java's record-size-avg)
        assert 300 < pm["record-size-max"] < 320
        assert 100 < pm["record-size-avg"] <= pm["record-size-max"]
        assert 0 <= pm["record-queue-time-avg"] <= pm["record-queue-time-max"] <= elapsed * 1000
        assert pm["records-per-request-avg"] >= 1
        assert pm["request-latency-avg"] >= 0 and not math.isnan(pm["request-latency-max"])
        assert pm["requests-in-flight"] == 0.0 and pm["connection-count"] >= 1
        assert 0 <= pm["metadata-age"] <= elapsed
        assert pm["produce-throttle-time-max"] == 0.0
        assert "io-ratio" not in pm  # recorded from DEBUG on

        # the broker's node: its requests carried every batch
        node_id = p._metadata.fetch().nodes[0].id
        node = groups[f"producer-node-metrics.node-{node_id}"]
        assert node["outgoing-byte-total"] > batch_bytes and node["request-total"] >= 1
        assert node["request-latency-avg"] == pm["request-latency-avg"]
        assert groups["kafka-metrics-count"]["count"] == sum(len(g) for g in groups.values())

        # memory: every batch's buffer comes back to the pool once its answer is handled
        assert pm["buffer-total-bytes"] == 32 * 1024 * 1024
        _wait_for(
            lambda: (
                p.metrics()["producer-metrics"]["buffer-available-bytes"]
                == pm["buffer-total-bytes"]
            ),
            "buffer-available-bytes back to buffer-total-bytes",
        )
        assert p.metrics()["producer-metrics"]["bufferpool-wait-ratio"] == 0.0
    finally:
        p.close()
    after = p.metrics()
    assert after["producer-metrics"]["record-send-total"] == 2000.0
    assert after["producer-metrics"]["connection-count"] == 0.0


def test_one_group_per_broker_node_and_they_add_up(broker: LocalBroker) -> None:
    topic = f"metrics-nodes-{time.time_ns()}"
    broker.create_topic(topic, 6)
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        with KafkaProducer(bootstrap_servers=vc.bootstrap_servers, linger_ms=1) as p:
            for i in range(600):
                p.send(topic, b"v%d" % i, partition=i % 6)
            p.flush(30)
            groups = p.metrics()
        produce_requests = dict(vc.produce_requests)
    nodes = {g: m for g, m in groups.items() if g.startswith("producer-node-metrics.")}
    for node in range(3):
        group = nodes[f"producer-node-metrics.node-{node}"]
        assert produce_requests[node] > 0
        # its Produce requests, plus the Metadata and ApiVersions ones it may have had
        assert group["request-total"] >= produce_requests[node]
        assert group["response-total"] <= group["request-total"]
        assert not math.isnan(group["request-latency-avg"])  # its Produce answers
    # the others are bootstrap connections (ids -1, -2, -3, as Java's)
    assert {g.rsplit(".", 1)[1] for g in nodes} - {"node-0", "node-1", "node-2"} <= {
        "node--1",
        "node--2",
        "node--3",
    }
    pm = groups["producer-metrics"]
    for name in ("request-total", "response-total", "outgoing-byte-total", "incoming-byte-total"):
        assert pm[name] == sum(g[name] for g in nodes.values()), name
    assert pm["connection-creation-total"] >= 3


def test_errors_and_retries_count_per_topic(broker: LocalBroker) -> None:
    """Node 0 answers one request TOPIC_AUTHORIZATION_FAILED (its records fail), another one
    NOT_ENOUGH_REPLICAS (its records are sent again)."""
    topic = f"metrics-errors-{time.time_ns()}"
    broker.create_topic(topic, 1)
    failed: List[BaseException] = []
    lock = threading.Lock()

    def on_done(md: Any, exc: Optional[BaseException]) -> None:
        if exc is not None:
            with lock:
                failed.append(exc)

    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        with KafkaProducer(
            bootstrap_servers=vc.bootstrap_servers, linger_ms=60_000, retry_backoff_ms=10
        ) as p:
            first = p.send(topic, b"first")
            p.flush(30)  # the topic's metrics exist from its first request on
            assert first.get(0).offset == 0
            vc.inject_produce_errors(0, ErrorCode.TOPIC_AUTHORIZATION_FAILED, 1)
            for i in range(30):
                p.send(topic, b"fails %d" % i, callback=on_done)
            p.flush(30)  # one batch, one request: linger.ms holds them until the flush
            vc.inject_produce_errors(0, ErrorCode.NOT_ENOUGH_REPLICAS, 1)
            retried = [p.send(topic, b"retried %d" % i) for i in range(20)]
            p.flush(30)
            assert all(f.get(30).offset >= 0 for f in retried)
            groups = p.metrics()
    assert len(failed) == 30
    pm, tm = groups["producer-metrics"], groups[f"producer-topic-metrics.{topic}"]
    assert pm["record-error-total"] == tm["record-error-total"] == 30.0
    assert pm["record-retry-total"] == tm["record-retry-total"] == 20.0
    assert tm["record-error-rate"] > 0 and tm["record-retry-rate"] > 0
    # sent: the first, the 30 that failed, the 20 twice
    assert pm["record-send-total"] == tm["record-send-total"] == 1 + 30 + 2 * 20


def test_the_groups_and_names_include_kafka_pythons(broker: LocalBroker, new_topic: Any) -> None:
    """The same work through kafka-python 3.0 and cproducer: every group and every name in
    kafka-python's answer is in ours (kafka-python calls its bootstrap connections
    node-bootstrap-N; Java and cproducer give them ids -1, -2, ...)."""
    from kafka import KafkaProducer as PeerProducer

    def work(producer: Any, topics: List[str]) -> Dict[str, Dict[str, float]]:
        for i in range(300):
            producer.send(topics[i % 2], b"x" * 50)
        producer.flush()
        return producer.metrics()

    peer = PeerProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
    try:
        theirs = work(peer, [new_topic(2), new_topic(1)])
    finally:
        peer.close()
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5) as p:
        topics = [new_topic(2), new_topic(1)]
        ours = work(p, topics)

    def shape(groups: Dict[str, Dict[str, float]], topics: List[str]) -> Dict[str, set]:
        out = {}
        for group, metrics in groups.items():
            for i, topic in enumerate(topics):  # each side's own topic names
                group = group.replace(f"producer-topic-metrics.{topic}", f"topic-{i}")
            if group.startswith("producer-node-metrics.node-bootstrap-"):
                n = int(group.rsplit("-", 1)[1])
                group = f"producer-node-metrics.node--{n + 1}"
            out[group] = set(metrics)
        return out

    peer_topics = [g.split(".", 1)[1] for g in theirs if g.startswith("producer-topic-metrics.")]
    assert len(peer_topics) == 2
    expected = shape(theirs, sorted(peer_topics))
    got = shape(ours, sorted(topics))
    assert {"producer-metrics", "kafka-metrics-count", "topic-0", "topic-1"} <= set(expected)
    assert any(g.startswith("producer-node-metrics.node-") for g in expected)
    assert set(expected) <= set(got), set(expected) - set(got)
    for group, names in expected.items():
        assert names <= got[group], (group, names - got[group])
    for group, metrics in ours.items():
        assert all(isinstance(v, float) for v in metrics.values()), group


def test_debug_level_and_one_long_window_in_a_real_producer(
    broker: LocalBroker, new_topic: Any
) -> None:
    """metrics.recording.level=DEBUG adds the I/O thread's time; one sample with no minimum
    span: the rate is the total over the time since the first record (at least total / T; the
    default two 30 s windows would give at most total / 30 s)."""
    topic = new_topic(1)
    started = time.monotonic()
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        metrics_recording_level="DEBUG",
        metrics_num_samples=1,
        metrics_sample_window_ms=WINDOW_MS,
    ) as p:
        for _ in range(500):
            p.send(topic, b"y" * 20)
        p.flush(30)
        pm = p.metrics()["producer-metrics"]
        elapsed = time.monotonic() - started
    assert pm["record-send-rate"] >= 500 / elapsed
    assert pm["select-total"] >= 1 and pm["io-wait-time-ns-total"] > 0
    assert pm["io-wait-ratio"] > 0 and pm["io-ratio"] > 0
    assert pm["io-time-ns-avg"] > 0


def test_time_in_blocking_calls(broker: LocalBroker, new_topic: Any) -> None:
    """Java's KafkaProducerMetrics: ``flush-time-ns-total``, ``txn-*-time-ns-total`` and
    ``metadata-wait-time-ns-total`` grow by at least the time each call blocked the caller (read
    around the call), and only the call's own total grows."""
    source = new_topic(1)
    names = [
        "flush",
        "txn-init",
        "txn-begin",
        "txn-send-offsets",
        "txn-commit",
        "txn-abort",
        "metadata-wait",
    ]

    p = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, transactional_id=f"calls-{source}"
    )

    def totals() -> Dict[str, float]:
        pm = p.metrics()["producer-metrics"]
        return {name: pm[f"{name}-time-ns-total"] for name in names}

    def timed(call: Any, *args: Any, **kwargs: Any) -> Dict[str, float]:
        """What the call added to each total, and check it covers the call's own time."""
        before = totals()
        started = time.monotonic_ns()
        call(*args, **kwargs)
        took = time.monotonic_ns() - started
        grown = {name: value - before[name] for name, value in totals().items()}
        assert all(value >= 0 for value in grown.values()), grown
        assert max(grown.values()) <= took, (grown, took)
        return {name: value for name, value in grown.items() if value > 0}

    try:
        assert set(totals().values()) == {0.0}
        assert set(timed(p.init_transactions, 30)) == {"txn-init"}
        assert set(timed(p.begin_transaction)) == {"txn-begin"}
        topic = new_topic(1)  # made after the producer's first metadata: send waits for it
        assert set(timed(p.send, topic, b"a")) == {"metadata-wait"}
        assert set(timed(p.send, topic, b"b")) == set()  # known now: no wait
        assert set(timed(p.flush, 30)) == {"flush"}
        grown = timed(p.send_offsets_to_transaction, {(source, 0): 5}, f"g-{source}", 30)
        assert set(grown) == {"txn-send-offsets"}
        p.send(topic, b"c")
        assert set(timed(p.commit_transaction, 30)) == {"txn-commit"}  # its flush is its own
        p.begin_transaction()
        p.send(topic, b"d")
        assert set(timed(p.abort_transaction, 30)) == {"txn-abort"}
        assert all(value > 0 for value in totals().values())
    finally:
        p.close()
