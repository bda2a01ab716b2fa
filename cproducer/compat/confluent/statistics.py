"""``stats_cb``: librdkafka's statistics JSON (STATISTICS.md), with the fields cproducer has.

Every ``statistics.interval.ms`` a poll() hands ``stats_cb`` one JSON document. Top level: the
client's ``name``, ``client_id``, ``type``, ``ts`` (monotonic µs), ``time`` (s since the epoch),
``age`` (µs since the producer started), ``replyq`` (events waiting for poll), ``msg_cnt`` /
``msg_size`` (messages and value bytes waiting for their delivery report) with their limits
``msg_max`` / ``msg_size_max``, ``metadata_cache_cnt``, ``tx`` / ``tx_bytes`` (requests and bytes
sent), ``rx`` / ``rx_bytes`` (responses and their bytes), ``txmsgs`` (messages sent). ``brokers``
(per broker: ``name``, ``nodeid``, ``nodename``, ``source``, ``state``, ``tx``, ``txbytes``,
``rx``, ``rxbytes``, ``toppars``), ``topics``
(per topic: ``topic``, ``metadata_age``, ``partitions`` with ``partition``, ``broker``,
``leader``) and, with idempotence, ``eos`` (``producer_id``, ``producer_epoch``). Fields
librdkafka has and cproducer does not measure are left out rather than reported as zero.

The counts come from the producer's ``metrics()`` (its ``-total`` metrics, producer-wide and per
node), so both views always agree.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Dict

from cproducer.producer.internals.sender_metrics import NODE_GROUP, PRODUCER_GROUP

if TYPE_CHECKING:
    from cproducer.compat.confluent.config import FacadeConfig
    from cproducer.compat.confluent.producer import Producer


class Statistics:
    def __init__(self, producer: Producer, cfg: FacadeConfig) -> None:
        self._producer = producer
        self._cfg = cfg
        self._interval_s = cfg.stats_interval_ms / 1000.0
        self._started = time.monotonic()
        self._next = self._started + self._interval_s

    def seconds_to_next(self) -> float:
        return self._next - time.monotonic()

    def maybe_emit(self) -> int:
        """Emit if the interval passed (called from poll()); 1 when emitted, else 0."""
        now = time.monotonic()
        if now < self._next or self._cfg.stats_cb is None or self._interval_s <= 0:
            return 0
        self._next = max(self._next + self._interval_s, now)
        self._cfg.stats_cb(json.dumps(self.snapshot()))
        return 1

    def snapshot(self) -> Dict[str, Any]:
        p = self._producer
        kp = p._kp
        reports = p._reports
        metrics = kp.metrics()
        totals = metrics[PRODUCER_GROUP]
        engine = kp.engine
        cluster = engine.metadata.fetch()
        now = time.monotonic()
        connected = engine.connected_node_ids()
        bootstrap = {(host, port) for host, port in kp.config["bootstrap.servers"]}
        brokers: Dict[str, Any] = {}
        for node in cluster.nodes:
            name = f"{node.host}:{node.port}/{node.id}"
            toppars = {
                f"{info.topic}-{info.partition}": {
                    "topic": info.topic,
                    "partition": info.partition,
                }
                for info in cluster.partitions_for_node(node.id)
            }
            brokers[name] = {
                "name": name,
                "nodeid": node.id,
                "nodename": f"{node.host}:{node.port}",
                "source": "configured" if (node.host, node.port) in bootstrap else "learned",
                "state": "UP" if node.id in connected else "DOWN",
                **_traffic(metrics.get(f"{NODE_GROUP}.node-{node.id}", {}), "txbytes", "rxbytes"),
                "toppars": toppars,
            }
        metadata_age_ms = engine.metadata_age_ms()
        topics: Dict[str, Any] = {}
        for topic in sorted(cluster.topics):
            partitions: Dict[str, Any] = {}
            for info in cluster.partitions_for_topic(topic):
                leader = -1 if info.leader is None else info.leader.id
                partitions[str(info.partition)] = {
                    "partition": info.partition,
                    "broker": leader,
                    "leader": leader,
                }
            topics[topic] = {
                "topic": topic,
                "metadata_age": metadata_age_ms,
                "partitions": partitions,
            }
        out: Dict[str, Any] = {
            "name": p._name,
            "client_id": self._cfg.producer["client.id"],
            "type": "producer",
            "ts": int(now * 1_000_000),
            "time": int(time.time()),
            "age": int((now - self._started) * 1_000_000),
            "replyq": 1 if reports.pending() else 0,
            "msg_cnt": int(reports.count),
            "msg_size": int(reports.size),
            "msg_max": self._cfg.max_messages,
            "msg_size_max": self._cfg.max_bytes,
            "metadata_cache_cnt": len(cluster.topics),
            "brokers": brokers,
            "topics": topics,
            **_traffic(totals, "tx_bytes", "rx_bytes"),
            "txmsgs": int(totals["record-send-total"]),
        }
        tm = engine.transaction_manager
        if tm is not None and tm.has_producer_id():
            producer_id, epoch = tm.producer_id_and_epoch
            out["eos"] = {"producer_id": producer_id, "producer_epoch": epoch}
        return out


def _traffic(group: Dict[str, float], tx_bytes: str, rx_bytes: str) -> Dict[str, int]:
    """librdkafka's request and byte counts from a metrics group (0: no traffic yet)."""
    return {
        "tx": int(group.get("request-total", 0)),
        tx_bytes: int(group.get("outgoing-byte-total", 0)),
        "rx": int(group.get("response-total", 0)),
        rx_bytes: int(group.get("incoming-byte-total", 0)),
    }
