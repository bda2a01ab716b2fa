"""kafka-python programs that switch their import to ``cproducer``: what a partitioner reads of
the cluster, and the documented methods of ``KafkaProducer`` and its futures.

Each test runs on ``cproducer`` and on kafka-python 3.0.12 itself, against the real broker, so
the behaviour asserted is kafka-python's.
"""

from __future__ import annotations

import importlib
import threading
import types
from typing import Any, Callable, Dict, List

import pytest
from kafka.partitioner import Partitioner as KafkaPythonPartitionerBase

from cproducer.localbroker import LocalBroker
from tests.integration.readback import read_back

PEERS = ["cproducer", "kafka"]
NO_SUCH_NODE = 987654


def _peer(name: str) -> types.SimpleNamespace:
    module = importlib.import_module(name)
    return types.SimpleNamespace(
        name=name,
        KafkaProducer=module.KafkaProducer,
        errors=importlib.import_module(f"{name}.errors"),
        TopicPartition=module.TopicPartition,
    )


@pytest.fixture(params=PEERS)
def peer(request: pytest.FixtureRequest) -> types.SimpleNamespace:
    return _peer(request.param)


class _Probe(KafkaPythonPartitionerBase):
    """Reads every read-only method and attribute of kafka-python's ``ClusterMetadata`` once,
    on the first record; the record goes to the last partition id."""

    def __init__(self, tp_type: Any) -> None:
        self.tp_type = tp_type
        self.seen: Dict[str, Any] = {}
        self.lock = threading.Lock()

    def partition(self, topic, key, serialized_key, value, serialized_value, cluster):  # type: ignore[no-untyped-def]
        with self.lock:
            if not self.seen:
                self.seen = self._read(topic, cluster)
        return max(cluster.partitions_for_topic(topic))

    def _read(self, topic: str, cluster: Any) -> Dict[str, Any]:
        tp = self.tp_type(topic, 0)
        leader = cluster.leader_for_partition(tp)
        return {
            "partitions": cluster.partitions_for_topic(topic),
            "available": cluster.available_partitions_for_topic(topic),
            "unknown partitions": cluster.partitions_for_topic("no-such-topic-x"),
            "unknown available": cluster.available_partitions_for_topic("no-such-topic-x"),
            "topics": cluster.topics(),
            "all topics": cluster.topics(exclude_internal_topics=False),
            "leader": leader,
            "unknown leader": cluster.leader_for_partition(self.tp_type(topic, 99)),
            "epoch": cluster.leader_epoch_for_partition(tp),
            "unknown epoch": cluster.leader_epoch_for_partition(self.tp_type(topic, 99)),
            "brokers": cluster.brokers(),
            "broker": cluster.broker_metadata(leader),
            "no broker": cluster.broker_metadata(NO_SUCH_NODE),
            "replica": cluster.is_replica_node(tp, leader),
            "no replica": cluster.is_replica_node(tp, NO_SUCH_NODE),
            "led": cluster.partitions_for_broker(leader),
            "led by none": cluster.partitions_for_broker(NO_SUCH_NODE),
            "bootstrap": cluster.bootstrap_brokers(),
            "is bootstrap": cluster.is_bootstrap("bootstrap-0"),
            "leader is bootstrap": cluster.is_bootstrap(leader),
            "coordinator": cluster.get_coordinator("no-such-group"),
            "controller": cluster.controller,
            "cluster id": cluster.cluster_id,
            "internal": cluster.internal_topics,
            "unauthorized": cluster.unauthorized_topics,
            "ttl": cluster.ttl(),
            "backoff": cluster.refresh_backoff(),
            "need update": cluster.need_update,
            "refreshing": cluster.metadata_refresh_in_progress,
            "config": dict(cluster.config),
            "str": str(cluster),
        }


def test_a_partitioner_reads_kafka_pythons_cluster_metadata(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """Every read-only call of ``ClusterMetadata`` answers with kafka-python's types: partition
    ids in sets, None for what the metadata does not know, brokers with ``node_id``, ``host``,
    ``port``, ``rack``, the bootstrap addresses as ``'bootstrap-N'``."""
    topic = new_topic(3)
    probe = _Probe(peer.TopicPartition)
    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        partitioner=probe,
        retry_backoff_ms=150,
        metadata_max_age_ms=200_000,
    ) as producer:
        md = producer.send(topic, b"v").get(timeout=30)
    assert md.partition == 2
    seen = probe.seen
    assert seen["partitions"] == seen["available"] == {0, 1, 2}
    assert type(seen["partitions"]) is set and type(seen["available"]) is set
    assert all(type(p) is int for p in seen["partitions"])
    assert seen["unknown partitions"] is None and seen["unknown available"] is None
    assert type(seen["topics"]) is set and topic in seen["topics"]
    assert seen["topics"] <= seen["all topics"]
    assert type(seen["leader"]) is int and seen["leader"] >= 0
    assert seen["unknown leader"] is None
    assert type(seen["epoch"]) is int and seen["unknown epoch"] is None

    assert isinstance(seen["brokers"], list) and seen["brokers"]
    ids = set()
    for b in seen["brokers"]:
        assert (type(b.node_id), type(b.host), type(b.port)) == (int, str, int)
        assert b.rack is None or isinstance(b.rack, str)
        ids.add(b.node_id)
    assert seen["leader"] in ids
    assert seen["broker"].node_id == seen["leader"] and seen["no broker"] is None
    assert seen["replica"].node_id == seen["leader"] and seen["no replica"] is None
    assert type(seen["led"]) is set and (topic, 0) in seen["led"]
    assert all(p.topic == p[0] for p in seen["led"])
    assert seen["led by none"] is None

    (boot,) = seen["bootstrap"]
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    assert (boot.node_id, boot.host, boot.port, boot.rack) == ("bootstrap-0", host, int(port), None)
    assert seen["is bootstrap"] is True and seen["leader is bootstrap"] is False
    assert seen["coordinator"] is None
    assert seen["controller"] is None or seen["controller"].node_id in ids
    assert seen["cluster id"] is None or isinstance(seen["cluster id"], str)
    assert type(seen["internal"]) is set and type(seen["unauthorized"]) is set
    assert topic not in seen["unauthorized"]
    # kafka-python's metadata keeps its default retry_backoff_ms (100), whatever the producer's
    assert 0 <= seen["ttl"] <= 200_000 and type(seen["backoff"]) is int
    assert seen["need update"] in (True, False) and seen["refreshing"] in (True, False)
    assert set(seen["config"]) == {
        "retry_backoff_ms",
        "metadata_max_age_ms",
        "bootstrap_servers",
        "allow_auto_create_topics",
        "client_dns_lookup",
    }
    assert seen["config"]["metadata_max_age_ms"] == 200_000
    assert seen["str"].startswith(f"ClusterMetadata(brokers: {len(ids)}, topics: ")
    assert [r.partition for r in read_back(broker.bootstrap_servers, topic, 3, 1)] == [2]


def test_a_partitioner_returning_none_fails_the_send(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``partition()`` answering None: ``send`` raises ValueError naming the topic, nothing is
    written, and the producer goes on."""
    topic = new_topic(2)

    class Undecided(KafkaPythonPartitionerBase):
        def partition(self, topic, key, serialized_key, value, serialized_value, cluster):  # type: ignore[no-untyped-def]
            return None if serialized_key == b"none" else 1

    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, partitioner=Undecided()
    ) as producer:
        with pytest.raises(ValueError, match=f"did not assign a partition for topic {topic}"):
            producer.send(topic, b"v", key=b"none")
        assert producer.send(topic, b"v", key=b"k").get(timeout=30).partition == 1
    assert len(read_back(broker.bootstrap_servers, topic, 2, 1)) == 1


# ------------------------------------------------------------------ futures and metadata


def test_futures_and_record_metadata(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``FutureRecordMetadata``: ``is_done``, ``succeeded()``, ``failed()``, ``retriable()``,
    ``value``, ``exception``, ``get()``, callbacks added before and after completion (extra args
    first); ``RecordMetadata``'s fields as kafka-python fills them."""
    topic = new_topic(2)
    calls: List[Any] = []
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=50) as producer:
        future = producer.send(
            topic, b"value", key=b"key", headers=[("h", b"hv")], partition=1, timestamp_ms=1234
        )
        assert future.add_callback(lambda tag, md: calls.append(("cb", tag, md.offset)), "a") is (
            future
        )
        future.add_errback(lambda exc: calls.append(("eb", exc)))
        md = future.get(timeout=30)
        assert future.is_done and future.succeeded() and not future.failed()
        assert future.value == md and future.exception is None
        assert future.retriable() is False
        future.add_both(lambda md: calls.append(("both", md.partition)))
        assert calls == [("cb", "a", 0), ("both", 1)]
        assert (md.topic, md.partition, md.offset, md.timestamp) == (topic, 1, 0, 1234)
        assert md.topic_partition == peer.TopicPartition(topic, 1)
        assert (md.serialized_key_size, md.serialized_value_size) == (3, 5)
        assert md.serialized_header_size == len("h") + len(b"hv")
        assert md.checksum is None
        assert md._fields == (
            "topic",
            "partition",
            "topic_partition",
            "offset",
            "timestamp",
            "checksum",
            "serialized_key_size",
            "serialized_value_size",
            "serialized_header_size",
        )
        assert (
            producer.send(topic, key=b"k2", partition=0).get(timeout=30).serialized_value_size == -1
        )


def test_an_unknown_partition_is_refused_at_send(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """An explicit partition the topic does not have: ``send`` raises (kafka-python: a
    ValueError naming it), a negative one too; the producer goes on."""
    topic = new_topic(1)
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        with pytest.raises(ValueError, match="5"):
            producer.send(topic, b"v", partition=5)
        with pytest.raises(ValueError):
            producer.send(topic, b"v", partition=-1)
        assert producer.send(topic, b"v", partition=0).get(timeout=30).offset == 0


def test_a_topic_or_timestamp_of_the_wrong_type_raises_type_error_at_send(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """A topic that is not a str and a ``timestamp_ms`` that is not an integer (a float would
    lose its fraction, a bool is no time) raise ``TypeError`` from ``send``, before any record
    is queued. The producer goes on."""
    topic = new_topic(1)
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send(topic, b"warm").get(timeout=30)
        with pytest.raises(TypeError):
            producer.send(7, b"v")
        for stamp in (1.5e12, True, "1700000000000"):
            with pytest.raises(TypeError):
                producer.send(topic, b"v", timestamp_ms=stamp)
        meta = producer.send(topic, b"v", timestamp_ms=1_700_000_000_000).get(30)
        assert meta.timestamp == 1_700_000_000_000
    records = read_back(broker.bootstrap_servers, topic, 1, 2)
    assert [r.value for r in records] == [b"warm", b"v"]
    assert records[1].timestamp == 1_700_000_000_000


# ------------------------------------------------------------------ the producer's methods


def test_the_documented_methods_without_transactions(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """Without ``transactional_id`` every transactional method raises IllegalStateError (by
    keyword too); ``partitions_for`` gives a set of ints, ``bootstrap_connected`` a bool,
    ``metrics()`` a dict of dicts; ``flush`` and ``close`` return None, ``close`` again does
    nothing, and a negative close timeout is refused."""
    topic = new_topic(2)
    producer = peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        for call in (
            producer.init_transactions,
            producer.begin_transaction,
            producer.commit_transaction,
            producer.abort_transaction,
            lambda: producer.send_offsets_to_transaction(
                offsets={peer.TopicPartition(topic, 0): 1}, group_metadata="g"
            ),
        ):
            with pytest.raises(peer.errors.IllegalStateError):
                call()
        parts = producer.partitions_for(topic)
        assert type(parts) is set and parts == {0, 1}
        assert producer.bootstrap_connected() in (True, False)
        metrics = producer.metrics()
        assert isinstance(metrics, dict) and all(isinstance(v, dict) for v in metrics.values())
        future = producer.send(topic, value=b"v", key=b"k", partition=1)
        assert producer.flush(timeout=30) is None and future.is_done
        with pytest.raises(ValueError):
            producer.close(timeout=-1)
    finally:
        assert producer.close(timeout=30) is None
    assert producer.close() is None
    assert len(read_back(broker.bootstrap_servers, topic, 2, 1)) == 1


def test_a_raising_callback_does_not_stop_the_others(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """kafka-python logs an exception from a callback and runs the next ones (its futures'
    ``error_on_callbacks`` is False), before and after completion; ``get`` still answers."""
    topic = new_topic(1)
    calls: List[str] = []

    def boom(md: Any) -> None:
        calls.append("boom")
        raise RuntimeError("a callback's bug")

    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=20) as producer:
        future = producer.send(topic, b"v")
        future.add_callback(boom).add_callback(lambda md: calls.append("next"))
        assert future.get(timeout=30).offset == 0
        future.add_callback(boom)
        future.add_callback(lambda md: calls.append("late"))
        producer.flush()
    assert calls == ["boom", "next", "boom", "late"]


def test_get_with_a_timeout_on_a_pending_future(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``get(timeout)`` on a record still lingering raises KafkaTimeoutError and leaves the
    future pending; the record is delivered all the same."""
    topic = new_topic(1)
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=3000) as producer:
        future = producer.send(topic, b"v")
        with pytest.raises(peer.errors.KafkaTimeoutError):
            future.get(timeout=0.05)
        assert not future.is_done and not future.succeeded() and not future.failed()
        assert future.value is None and future.exception is None
        producer.flush()
        assert future.get(timeout=0).offset == 0
    assert len(read_back(broker.bootstrap_servers, topic, 1, 1)) == 1
