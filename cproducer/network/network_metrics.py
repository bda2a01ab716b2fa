"""NetworkMetrics: what the connections measure (Java's ``Selector.SelectorMetrics``).

Recorded by ``NetworkClient`` on the I/O thread, per request and per response (never per record):
a request fully written counts its bytes, a response read counts its bytes and its
``throttle_time_ms``; connections count as they are made and closed. Each node gets its own stats
from its first connection attempt on (Java registers a node's sensors when it connects), kept for
the producer's life. ``metrics()`` reads them from another thread, under the same lock.

At ``metrics.recording.level`` DEBUG or TRACE the poll loop's time is measured too (two clock
reads per poll): Java's ``select-*``, ``io-wait-*`` and ``io-*`` metrics. Java records those at
INFO; here they cost the I/O thread, which is Python, so they wait for the level that asks for
more (the one setting that makes ``metrics.recording.level`` matter for a producer).
"""

from __future__ import annotations

import threading
from typing import Dict

from cproducer.utils.sampled_stat import DEBUG, MetricConfig, SampledStat

_NOT_RECORDED = SampledStat(MetricConfig())  # (stands for stats off at this recording level)


class _NodeStats:
    __slots__ = ("sent", "received", "throttle")

    def __init__(self, config: MetricConfig) -> None:
        self.sent = SampledStat(config)  # per request: its bytes
        self.received = SampledStat(config)  # per response: its bytes
        self.throttle = SampledStat(config)  # per response: throttle_time_ms


class NetworkMetrics:
    def __init__(self, config: MetricConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._created = SampledStat(config)
        self._closed = SampledStat(config)
        self._io = SampledStat(config)  # network operations: requests written + responses read
        self._all = _NodeStats(config)
        # the producer-wide stats the per-request calls record into, one attribute away
        self._sent = self._all.sent
        self._received = self._all.received
        self._throttle = self._all.throttle
        self._nodes: Dict[int, _NodeStats] = {}
        #: the poll loop's time is measured (metrics.recording.level DEBUG or TRACE)
        self.record_io_time = config.should_record(DEBUG)
        # per poll: ns waiting in select, ns handling what select returned (made when recorded)
        self._select = SampledStat(config) if self.record_io_time else _NOT_RECORDED
        self._io_time = SampledStat(config) if self.record_io_time else _NOT_RECORDED

    # ------------------------------------------------------------------ recording (I/O thread)
    def register_node(self, node_id: int) -> None:
        if node_id not in self._nodes:
            with self._lock:
                self._nodes.setdefault(node_id, _NodeStats(self.config))

    def connection_created(self, now_ms: int) -> None:
        with self._lock:
            self._created.record(1.0, now_ms)

    def connection_closed(self, now_ms: int) -> None:
        with self._lock:
            self._closed.record(1.0, now_ms)

    def request_sent(self, node_id: int, nbytes: int, now_ms: int) -> None:
        with self._lock:
            self._sent.record(nbytes, now_ms)
            node = self._nodes.get(node_id)
            if node is not None:
                node.sent.record(nbytes, now_ms)
            self._io.record(1.0, now_ms)

    def response_received(self, node_id: int, nbytes: int, now_ms: int) -> None:
        with self._lock:
            self._received.record(nbytes, now_ms)
            node = self._nodes.get(node_id)
            if node is not None:
                node.received.record(nbytes, now_ms)
            self._io.record(1.0, now_ms)

    def throttle_time(self, node_id: int, throttle_ms: int, now_ms: int) -> None:
        """A decoded response's ``throttle_time_ms``."""
        with self._lock:
            self._throttle.record(throttle_ms, now_ms)
            node = self._nodes.get(node_id)
            if node is not None:
                node.throttle.record(throttle_ms, now_ms)

    def poll_time(self, select_ns: int, io_ns: int, now_ms: int) -> None:
        """One poll: ``select_ns`` waiting for the sockets, ``io_ns`` handling them (DEBUG)."""
        with self._lock:
            self._select.record(select_ns, now_ms)
            self._io_time.record(io_ns, now_ms)

    # ------------------------------------------------------------------ reading (any thread)
    def read(self, now_ms: int, out: Dict[str, float]) -> Dict[int, Dict[str, float]]:
        """Add the producer-wide connection metrics to ``out`` (the producer-metrics group) and
        return each node's: one reading, so the nodes' totals add up to the producer's."""
        with self._lock:
            self._producer_metrics(now_ms, out)
            return self._node_metrics(now_ms)

    def _producer_metrics(self, now_ms: int, out: Dict[str, float]) -> None:
        a = self._all
        _meter(out, "connection-close", self._closed, now_ms, count=True)
        _meter(out, "connection-creation", self._created, now_ms, count=True)
        _meter(out, "network-io", self._io, now_ms, count=True)
        _traffic(out, a, now_ms)
        # kafka-python's names (its connections' throttle times; Java has none producer-wide
        # besides produce-throttle-time)
        out["throttle-time-avg"] = a.throttle.avg(now_ms)
        out["throttle-time-max"] = a.throttle.max(now_ms)
        if self.record_io_time:
            _meter(out, "select", self._select, now_ms, count=True)
            out["io-wait-time-ns-avg"] = self._select.avg(now_ms)
            out["io-wait-ratio"] = self._select.rate(now_ms, 1e-6)
            out["io-wait-time-ns-total"] = self._select.total
            out["io-time-ns-avg"] = self._io_time.avg(now_ms)
            out["io-ratio"] = self._io_time.rate(now_ms, 1e-6)
            out["io-time-ns-total"] = self._io_time.total

    def _node_metrics(self, now_ms: int) -> Dict[int, Dict[str, float]]:
        """Per node that a connection was attempted to: its traffic and throttle times."""
        out: Dict[int, Dict[str, float]] = {}
        for node_id, node in self._nodes.items():
            group: Dict[str, float] = {}
            _traffic(group, node, now_ms)
            group["throttle-time-avg"] = node.throttle.avg(now_ms)
            group["throttle-time-max"] = node.throttle.max(now_ms)
            out[node_id] = group
        return out


def _meter(out: Dict[str, float], name: str, stat: SampledStat, now_ms: int, count: bool) -> None:
    """Java's ``Meter``: ``<name>-rate`` (per second) and ``<name>-total``; of the events
    (``count``, Java's ``WindowedCount``) or of the values."""
    if count:
        out[f"{name}-rate"] = stat.count_rate(now_ms)
        out[f"{name}-total"] = float(stat.count)
    else:
        out[f"{name}-rate"] = stat.rate(now_ms)
        out[f"{name}-total"] = stat.total


def _traffic(out: Dict[str, float], node: _NodeStats, now_ms: int) -> None:
    _meter(out, "outgoing-byte", node.sent, now_ms, count=False)
    _meter(out, "request", node.sent, now_ms, count=True)
    out["request-size-avg"] = node.sent.avg(now_ms)
    out["request-size-max"] = node.sent.max(now_ms)
    _meter(out, "incoming-byte", node.received, now_ms, count=False)
    _meter(out, "response", node.received, now_ms, count=True)
