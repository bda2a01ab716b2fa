"""SenderMetrics: what the Sender measures (Java's ``Sender.SenderMetrics`` with the names of its
``SenderMetricsRegistry``), and ``collect_metrics``, the groups ``KafkaProducer.metrics()`` returns.

Recorded on the I/O thread per Produce request and per batch outcome, never per record: the
figures per record come from what each batch already counts (its records, its bytes, its largest
record, its compression ratio, its time in the queue). A request's batches are summed first and
recorded as one value standing for that many events (what Java records batch by batch at the same
instant, with the same readings).

The groups and their keys are kafka-python 3.0's (its ``metrics()``: ``{group: {name: value}}``;
a group per node and per topic, the node or topic after a dot), the names and meanings Java's:

* ``producer-metrics``: the Sender's (``batch-size-*``, ``compression-rate-avg``,
  ``record-queue-time-*``, ``request-latency-*``, ``produce-throttle-time-*``, ``record-send-*``,
  ``records-per-request-avg``, ``record-retry-*``, ``record-error-*``, ``record-size-*``,
  ``batch-split-*``, ``requests-in-flight``, ``metadata-age``), the blocking calls' times
  (``flush-time-ns-total``, ``txn-*-time-ns-total``, ``metadata-wait-time-ns-total``:
  ``KafkaProducerMetrics``), the buffer pool's
  (``buffer-total-bytes``, ``buffer-available-bytes``, ``waiting-threads``,
  ``bufferpool-wait-ratio``, ``bufferpool-wait-time-ns-total``, ``buffer-exhausted-*``), the
  connections' (``NetworkMetrics``), and kafka-python's ``byte-rate`` (batch bytes sent per
  second).
* ``producer-node-metrics.node-<id>`` (bootstrap connections: ids -1, -2, ... as Java's):
  traffic, ``request-latency-*`` of its Produce requests, throttle times.
* ``producer-topic-metrics.<topic>``: ``record-send-*``, ``byte-*``, ``compression-rate``,
  ``record-retry-*``, ``record-error-*``, from the topic's first Produce request on (Java's: a
  retry or an error before it counts only producer-wide).
* ``kafka-metrics-count``: ``count``, the number of metrics.

Every value is a float, as Java's ``metricValue()``; an average or maximum with nothing recorded in
its window is NaN (Java's), the ``-total`` counts are cumulative.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional

from cproducer.network.network_metrics import NetworkMetrics
from cproducer.producer.internals.kafka_producer_metrics import KafkaProducerMetrics
from cproducer.producer.internals.producer_batch import produce_request_stats
from cproducer.utils.sampled_stat import NAN, MetricConfig, SampledStat

PRODUCER_GROUP = "producer-metrics"
NODE_GROUP = "producer-node-metrics"
TOPIC_GROUP = "producer-topic-metrics"
COUNT_GROUP = "kafka-metrics-count"


class _TopicStats:
    __slots__ = ("records", "bytes", "compression", "retries", "errors")

    def __init__(self, config: MetricConfig) -> None:
        self.records = SampledStat(config)
        self.bytes = SampledStat(config)
        self.compression = SampledStat(config)
        self.retries = SampledStat(config)
        self.errors = SampledStat(config)


class SenderMetrics:
    """``pool``: the BufferPool whose wait counters ``sample_pool`` turns into metrics."""

    def __init__(self, config: Optional[MetricConfig] = None, pool: Any = None) -> None:
        config = config if config is not None else MetricConfig()
        self.config = config
        self.pool = pool
        self._lock = threading.Lock()
        self._batch_size = SampledStat(config)  # per batch: its bytes
        self._compression = SampledStat(config)  # per batch: compressed / uncompressed
        self._queue_time = SampledStat(config)  # per batch: ms from creation to drain
        self._record_size = SampledStat(config)  # per batch: its largest record's bytes
        self._records = SampledStat(config)  # per request: its records
        self._bytes = SampledStat(config)  # per request: its batches' bytes
        self._latency = SampledStat(config)  # per Produce answer: ms since the request
        self._produce_throttle = SampledStat(config)  # per Produce answer: throttle_time_ms
        self._retries = SampledStat(config)  # per retried batch: its records
        self._errors = SampledStat(config)  # per failed batch: its records
        self._splits = SampledStat(config)  # per split batch
        self._pool_wait = SampledStat(config)  # ns the allocations waited for memory
        self._pool_exhausted = SampledStat(config)  # allocations that gave up
        self._pool_seen = (0, 0)  # the pool's counters when last sampled
        self._node_latency: Dict[int, SampledStat] = {}
        self._topics: Dict[str, _TopicStats] = {}
        #: Produce requests sent and the batches in them (plain counts, for tests and facades)
        self.requests_sent = 0
        self.batches_sent = 0

    @property
    def records_sent(self) -> int:
        return int(self._records.total)

    # ------------------------------------------------------------------ recording (I/O thread)
    def update_produce_request_metrics(self, batches: List[Any], now_ms: int) -> None:
        """One Produce request's batches (Java's updateProduceRequestMetrics, per node)."""
        count = len(batches)
        if not count:
            return
        # the per-batch sums and maxima in C (one call, not seven property reads per batch)
        (
            records,
            size_sum,
            size_max,
            queue_sum,
            queue_max,
            biggest_sum,
            biggest_max,
            ratio_sum,
            per_topic,
        ) = produce_request_stats(batches)
        with self._lock:
            self.requests_sent += 1
            self.batches_sent += count
            self._batch_size.record(size_sum, now_ms, count, size_max)
            self._compression.record(ratio_sum, now_ms, count)
            self._queue_time.record(queue_sum, now_ms, count, queue_max)
            self._record_size.record(biggest_sum, now_ms, count, biggest_max)
            self._records.record(records, now_ms)
            self._bytes.record(size_sum, now_ms)
            topics = self._topics
            for topic, (n, size, ratio, batches_of_topic) in per_topic.items():
                ts = topics.get(topic)
                if ts is None:
                    ts = topics[topic] = _TopicStats(self.config)
                ts.records.record(n, now_ms, batches_of_topic)
                ts.bytes.record(size, now_ms, batches_of_topic)
                ts.compression.record(ratio, now_ms, batches_of_topic)

    def record_produce_response(
        self, node_id: int, latency_ms: int, throttle_ms: int, now_ms: int
    ) -> None:
        """An answered Produce request: its latency (producer-wide and per node) and the
        throttle time the broker asked for, in one lock section."""
        with self._lock:
            self._latency.record(latency_ms, now_ms)
            node = self._node_latency.get(node_id)
            if node is None:
                node = self._node_latency[node_id] = SampledStat(self.config)
            node.record(latency_ms, now_ms)
            self._produce_throttle.record(throttle_ms, now_ms)

    def record_retries(self, topic: str, count: int, now_ms: int) -> None:
        with self._lock:
            self._retries.record(count, now_ms)
            ts = self._topics.get(topic)
            if ts is not None:
                ts.retries.record(count, now_ms)

    def record_errors(self, topic: str, count: int, now_ms: int) -> None:
        with self._lock:
            self._errors.record(count, now_ms)
            ts = self._topics.get(topic)
            if ts is not None:
                ts.errors.record(count, now_ms)

    def record_batch_split(self, now_ms: int) -> None:
        with self._lock:
            self._splits.record(1.0, now_ms)

    def sample_pool(self, now_ms: int) -> None:
        """Record what the pool's wait counters gained since the last call (the pool counts in
        C on the appending threads; the I/O thread calls this once per loop, so the time waited
        lands in the window it was waited in, to within a loop)."""
        pool = self.pool
        if pool is None:
            return
        seen = (pool.wait_time_ns_total, pool.exhausted_total)
        if seen == self._pool_seen:
            return
        with self._lock:
            waited, exhausted = self._pool_seen
            if seen[0] > waited:
                self._pool_wait.record(seen[0] - waited, now_ms)
            if seen[1] > exhausted:
                self._pool_exhausted.record(seen[1] - exhausted, now_ms, seen[1] - exhausted)
            self._pool_seen = seen

    # ------------------------------------------------------------------ reading (any thread)
    def producer_metrics(self, now_ms: int, out: Dict[str, float]) -> None:
        with self._lock:
            out["batch-size-avg"] = self._batch_size.avg(now_ms)
            out["batch-size-max"] = self._batch_size.max(now_ms)
            out["compression-rate-avg"] = self._compression.avg(now_ms)
            out["record-queue-time-avg"] = self._queue_time.avg(now_ms)
            out["record-queue-time-max"] = self._queue_time.max(now_ms)
            out["request-latency-avg"] = self._latency.avg(now_ms)
            out["request-latency-max"] = self._latency.max(now_ms)
            out["produce-throttle-time-avg"] = self._produce_throttle.avg(now_ms)
            out["produce-throttle-time-max"] = self._produce_throttle.max(now_ms)
            _meter(out, "record-send", self._records, now_ms)
            out["records-per-request-avg"] = self._records.avg(now_ms)
            out["byte-rate"] = self._bytes.rate(now_ms)
            _meter(out, "record-retry", self._retries, now_ms)
            _meter(out, "record-error", self._errors, now_ms)
            out["record-size-max"] = self._record_size.max(now_ms)
            out["record-size-avg"] = self._record_size.avg(now_ms)
            _meter(out, "batch-split", self._splits, now_ms)
            out["bufferpool-wait-ratio"] = self._pool_wait.rate(now_ms, 1e-6)
            out["bufferpool-wait-time-ns-total"] = self._pool_wait.total
            _meter(out, "buffer-exhausted", self._pool_exhausted, now_ms)

    def node_latencies(self, now_ms: int) -> Dict[int, Dict[str, float]]:
        with self._lock:
            return {
                node_id: {
                    "request-latency-avg": stat.avg(now_ms),
                    "request-latency-max": stat.max(now_ms),
                }
                for node_id, stat in self._node_latency.items()
            }

    def topic_metrics(self, now_ms: int) -> Dict[str, Dict[str, float]]:
        out: Dict[str, Dict[str, float]] = {}
        with self._lock:
            for topic, ts in self._topics.items():
                group: Dict[str, float] = {}
                _meter(group, "record-send", ts.records, now_ms)
                _meter(group, "byte", ts.bytes, now_ms)
                group["compression-rate"] = ts.compression.avg(now_ms)
                _meter(group, "record-retry", ts.retries, now_ms)
                _meter(group, "record-error", ts.errors, now_ms)
                out[topic] = group
        return out


def _meter(out: Dict[str, float], name: str, stat: SampledStat, now_ms: int) -> None:
    """Java's ``Meter``: ``<name>-rate``, the values' sum per second, and ``<name>-total``."""
    out[f"{name}-rate"] = stat.rate(now_ms)
    out[f"{name}-total"] = stat.total


def collect_metrics(
    sender: SenderMetrics,
    network: NetworkMetrics,
    *,
    client: Any,
    metadata: Any,
    now_ms: int,
    calls: Optional[KafkaProducerMetrics] = None,
) -> Dict[str, Dict[str, float]]:
    """``{group: {name: value}}`` of one producer (see the module's docstring); ``calls``: the
    time spent in its blocking calls (``*-time-ns-total``)."""
    sender.sample_pool(now_ms)
    producer: Dict[str, float] = {}
    sender.producer_metrics(now_ms, producer)
    if calls is not None:
        calls.read(producer)
    nodes = network.read(now_ms, producer)
    producer["requests-in-flight"] = float(client.in_flight_request_count())
    last_update = metadata.last_successful_update_ms
    producer["metadata-age"] = (now_ms - last_update) / 1000.0 if last_update else NAN
    producer["connection-count"] = float(client.connection_count)
    pool = sender.pool
    if pool is not None:
        producer["buffer-total-bytes"] = float(pool.total_memory)
        producer["buffer-available-bytes"] = float(pool.available_memory)
        producer["waiting-threads"] = float(pool.queued)
    groups: Dict[str, Dict[str, float]] = {PRODUCER_GROUP: producer}
    latencies = sender.node_latencies(now_ms)
    no_latency = {"request-latency-avg": NAN, "request-latency-max": NAN}
    for node_id, group in sorted(nodes.items()):
        group.update(latencies.get(node_id, no_latency))
        groups[f"{NODE_GROUP}.node-{node_id}"] = group
    for topic, group in sorted(sender.topic_metrics(now_ms).items()):
        groups[f"{TOPIC_GROUP}.{topic}"] = group
    count = sum(len(group) for group in groups.values()) + 1  # and the count itself
    groups[COUNT_GROUP] = {"count": float(count)}
    return groups
