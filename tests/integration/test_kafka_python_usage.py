"""kafka-python's documented producer usage, run with the import switched to ``cproducer``.

Every scenario is kafka-python's own: its README (fire-and-forget, ``future.get``, ``flush``,
keyed sends, ``JsonSerializer`` / ``DefaultSerializer``, compression, transactions, headers,
``metrics()``), its usage guide (callbacks and errbacks, ``except KafkaError`` around
``future.get``, callable serializers, ``retries``) and the ``KafkaProducer`` / ``send``
docstrings (what ``send`` raises, ``partitions_for``, ``send_offsets_to_transaction`` with
``TopicPartition`` / ``OffsetAndMetadata``, custom ``Partitioner`` and ``Serializer`` objects,
``api_version``, ``batch_size=0``, ``bootstrap_timeout_ms``).
They run against the real broker (Tansu), and librdkafka (``Consumer.assign``) reads back what
was written. Each test runs twice: on ``cproducer`` and on kafka-python itself, so the behaviour
asserted is kafka-python's, not ours.
"""

from __future__ import annotations

import importlib
import json
import struct
import time
import types
import uuid
from typing import Any, Callable, Dict, List

import pytest
from kafka.partitioner import DefaultPartitioner as KafkaPythonDefaultPartitioner
from kafka.partitioner import Partitioner as KafkaPythonPartitionerBase
from kafka.partitioner import StickyPartitioner as KafkaPythonStickyPartitioner

from cproducer.localbroker import LocalBroker, free_port
from cproducer.utils.murmur2 import partition_for_key
from tests.integration.conftest import is_tansu
from tests.integration.readback import assert_delivered, by_partition, committed, read_back
from tests.integration.test_tls import _read_back_tls, tls_broker  # noqa: F401 (a fixture)
from tests.tools.virtual_cluster import VirtualCluster

PEERS = ["cproducer", "kafka"]
READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}
PRODUCE, API_VERSIONS, METADATA = 0, 18, 3


def _peer(name: str) -> types.SimpleNamespace:
    module = importlib.import_module(name)
    return types.SimpleNamespace(
        name=name,
        KafkaProducer=module.KafkaProducer,
        errors=importlib.import_module(f"{name}.errors"),
        JsonSerializer=module.JsonSerializer,
        DefaultSerializer=module.DefaultSerializer,
        Serializer=module.Serializer,
        TopicPartition=module.TopicPartition,
        OffsetAndMetadata=module.OffsetAndMetadata,
    )


@pytest.fixture(params=PEERS)
def peer(request: pytest.FixtureRequest) -> types.SimpleNamespace:
    return _peer(request.param)


# ------------------------------------------------------------------ README


def test_readme_fire_and_forget_then_get_and_flush(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """README: 100 fire-and-forget sends, one ``future.get(timeout=60)``, ``flush()``; the
    RecordMetadata says where the record landed."""
    topic = new_topic(1)
    producer = peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        for _ in range(100):
            producer.send(topic, b"some_message_bytes")
        future = producer.send(topic, b"another_message")
        result = future.get(timeout=60)
        producer.flush()
    finally:
        producer.close()
    assert (result.topic, result.partition, result.offset) == (topic, 0, 100)
    assert tuple(result.topic_partition) == (topic, 0)
    assert (result.serialized_key_size, result.serialized_value_size) == (-1, 15)
    assert future.succeeded() and future.is_done and not future.failed()
    records = read_back(broker.bootstrap_servers, topic, 1, 101)
    assert [r.value for r in records] == [b"some_message_bytes"] * 100 + [b"another_message"]
    assert records[-1].timestamp == result.timestamp


def test_readme_keyed_sends_hash_with_murmur2(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """README: ``send('foobar', key=b'foo', value=b'bar')``: a key always goes to its murmur2
    partition, as the Java client puts it."""
    topic = new_topic(3)
    keys = [b"foo"] + [b"user-%d" % i for i in range(200)]
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        futures = [producer.send(topic, key=k, value=b"bar") for k in keys]
        metas = [f.get(timeout=30) for f in futures]
    assert [m.partition for m in metas] == [partition_for_key(k, 3) for k in keys]
    records = read_back(broker.bootstrap_servers, topic, 3, len(keys))
    assert {(r.partition, r.key) for r in records} == {(partition_for_key(k, 3), k) for k in keys}


def test_readme_json_and_string_serializers(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """README: ``value_serializer=JsonSerializer()`` and ``key_serializer=DefaultSerializer()``
    (kafka-python 3's Serializer objects), byte for byte what kafka-python writes."""
    topic = new_topic(1)
    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        value_serializer=peer.JsonSerializer(),
        key_serializer=peer.DefaultSerializer(),
    ) as producer:
        producer.send(topic, {"foo": "bar"})
        producer.send(topic, key="ping", value={"n": [1, 2.5, None]})
        producer.send(topic, key="tombstone", value=None)
        producer.send(topic, key=b"raw", value="a str")
        producer.flush()
    records = read_back(broker.bootstrap_servers, topic, 1, 4)
    assert [(r.key, r.value) for r in records] == [
        (None, b'{"foo": "bar"}'),
        (b"ping", b'{"n": [1, 2.5, null]}'),
        (b"tombstone", None),
        (b"raw", b'"a str"'),
    ]


def test_usage_callable_serializers(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """Usage guide: ``value_serializer=lambda m: json.dumps(m).encode('ascii')`` and a
    msgpack-style ``dumps`` callable (kafka-python wraps plain callables, called with the value
    alone)."""
    topic = new_topic(1)

    def pack(obj: Dict[str, int]) -> bytes:  # a msgpack.dumps stand-in: fixmap of str -> int
        out = bytes([0x80 | len(obj)])
        for k, v in obj.items():
            out += bytes([0xA0 | len(k)]) + k.encode() + struct.pack(">B", 0xCC) + bytes([v])
        return out

    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        value_serializer=lambda m: json.dumps(m).encode("ascii"),
    ) as producer:
        producer.send(topic, {"key": "value"}).get(timeout=30)
    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        value_serializer=pack,
        key_serializer=str.encode,
        retries=5,
    ) as producer:
        producer.send(topic, {"a": 1, "b": 200}, key="k").get(timeout=30)
    records = read_back(broker.bootstrap_servers, topic, 1, 2)
    assert [(r.key, r.value) for r in records] == [
        (None, b'{"key": "value"}'),
        (b"k", b"\x82\xa1a\xcc\x01\xa1b\xcc\xc8"),
    ]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_readme_compression(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str], codec: str
) -> None:
    """README: ``compression_type='gzip'`` (and the other codecs), 1000 records; librdkafka
    decompresses them all."""
    topic = new_topic(1)
    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, compression_type=codec
    ) as producer:
        for i in range(1000):
            producer.send(topic, b"msg %d" % i)
        producer.flush()
    records = read_back(broker.bootstrap_servers, topic, 1, 1000)
    assert [r.value for r in records] == [b"msg %d" % i for i in range(1000)]


def test_readme_headers(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        md = producer.send(
            topic, value=b"c29tZSB2YWx1ZQ==", headers=[("content-encoding", b"base64")]
        ).get(timeout=30)
    (record,) = read_back(broker.bootstrap_servers, topic, 1, 1)
    assert record.headers == [("content-encoding", b"base64")]
    assert md.serialized_header_size == len("content-encoding") + len(b"base64")


def test_readme_transactions(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """README: one transaction committed, the next aborted, then another committed. Each end
    writes its marker (an offset of its own: 1 and 3). A read_uncommitted reader sees every
    record, a read_committed one the committed records only (Tansu does not hide aborted
    records from read_committed readers: there the abort is seen by its marker's offset)."""
    topic = new_topic(1)
    producer = peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, transactional_id=f"fizzbuzz-{uuid.uuid4()}"
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        future = producer.send(topic, value=b"yes")
        future.get(timeout=30)
        producer.commit_transaction()
        producer.begin_transaction()
        future = producer.send(topic, value=b"no")
        future.get(timeout=30)
        producer.abort_transaction()
        producer.begin_transaction()
        last = producer.send(topic, value=b"after")
        producer.commit_transaction()
        with pytest.raises(peer.errors.KafkaError):
            producer.send(topic, value=b"outside a transaction")
    finally:
        producer.close()
    assert last.get(timeout=0).offset == 4  # 0 yes, 1 commit, 2 no, 3 abort, 4 after
    written = [(0, b"yes"), (2, b"no"), (4, b"after")]
    uncommitted = read_back(broker.bootstrap_servers, topic, 1, 3, config=READ_UNCOMMITTED)
    assert [(r.offset, r.value) for r in uncommitted] == written
    # read_committed (librdkafka's default): the aborted record is hidden (Tansu-only: shown)
    visible = written if is_tansu(broker) else [(0, b"yes"), (4, b"after")]
    records = read_back(broker.bootstrap_servers, topic, 1, len(visible))
    assert [(r.offset, r.value) for r in records] == visible


def test_readme_metrics(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """README: ``metrics = producer.metrics()``: a dict once records were sent; with
    ``metrics_enabled=False`` there is nothing to report."""
    topic = new_topic(1)
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send(topic, b"x").get(timeout=30)
        metrics = producer.metrics()
    assert isinstance(metrics, dict) and metrics
    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, metrics_enabled=False
    ) as producer:
        producer.send(topic, b"y").get(timeout=30)
        assert producer.metrics() is None
        assert producer.metrics(raw=True) is None
    # the second producer started after the first closed: its record comes after
    assert_delivered(read_back(broker.bootstrap_servers, topic, 1, 2), [b"x", b"y"])


def test_raw_metrics(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``metrics(raw=True)``: ``{MetricName: KafkaMetric}``, a name per metric of the grouped
    dict (name, group, hashable), each metric's ``value()`` read when called."""
    topic = new_topic(1)
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send(topic, b"x").get(timeout=30)
        grouped = producer.metrics()
        raw = producer.metrics(raw=True)
        assert {(k.group, k.name) for k in raw} == {
            (group, name) for group, names in grouped.items() for name in names
        }
        by_name = {(k.group, k.name): metric for k, metric in raw.items()}
        sent = by_name[("producer-metrics", "record-send-rate")]
        assert sent.metric_name.name == "record-send-rate" and sent in raw.values()
        assert sent.value() > 0
        topic_rate = by_name[(f"producer-topic-metrics.{topic}", "record-send-rate")]
        before = topic_rate.value()
        producer.send(topic, b"y").get(timeout=30)
        assert topic_rate.value() > before  # read again, not the value the dict was made with
    assert_delivered(read_back(broker.bootstrap_servers, topic, 1, 2), [b"x", b"y"])


# ------------------------------------------------------------------ usage guide: futures


def test_usage_callbacks_and_errbacks(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """Usage guide: ``send(...).add_callback(on_send_success).add_errback(on_send_error)``, and
    ``future.get(timeout=10)`` inside ``except KafkaError``. The failure is real: the broker
    front answers a Produce request with TOPIC_AUTHORIZATION_FAILED (the last send: kafka-python
    takes that error as fatal for an idempotent producer)."""
    topic = new_topic(1)
    successes: List[Any] = []
    failures: List[BaseException] = []

    def on_send_success(record_metadata: Any) -> None:
        successes.append((record_metadata.topic, record_metadata.partition, record_metadata.offset))

    def on_send_error(excp: BaseException) -> None:
        failures.append(excp)

    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        with peer.KafkaProducer(bootstrap_servers=vc.bootstrap_servers) as producer:
            producer.send(topic, b"raw_bytes").add_callback(on_send_success).add_errback(
                on_send_error
            )
            producer.flush()
            future = producer.send(topic, b"sync")
            try:
                record_metadata = future.get(timeout=10)
            except peer.errors.KafkaError:
                pytest.fail("a plain send failed")
            vc.inject_produce_errors(0, 29, count=1)
            doomed = producer.send(topic, b"refused")
            doomed.add_callback(on_send_success).add_errback(on_send_error)
            with pytest.raises(peer.errors.KafkaError) as raised:
                doomed.get(timeout=10)
    assert isinstance(raised.value, peer.errors.TopicAuthorizationFailedError)
    assert doomed.failed() and not doomed.succeeded() and not doomed.retriable()
    assert len(failures) == 1 and isinstance(failures[0], peer.errors.TopicAuthorizationFailedError)
    assert successes == [(topic, 0, 0)]
    assert (record_metadata.partition, record_metadata.offset) == (0, 1)
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, 1, 2)] == [
        b"raw_bytes",
        b"sync",
    ]


def test_callback_extra_args_come_first(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``add_callback(fn, *args)``: ``fn(*args, value)``; a callback added after completion runs
    at once."""
    topic = new_topic(1)
    calls: List[Any] = []
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        future = producer.send(topic, b"v")
        future.add_callback(lambda tag, n, md: calls.append((tag, n, md.offset)), "tag", 7)
        future.get(timeout=30)
        future.add_both(lambda tag, md: calls.append((tag, md.offset)), "late")
    assert calls == [("tag", 7, 0), ("late", 0)]


# ------------------------------------------------------------------ send's documented errors


def test_send_refuses_what_the_docstring_says(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``send`` raises ValueError without key and value, MessageSizeTooLargeError above
    ``max_request_size``, TypeError for headers that are not (str, bytes) pairs or a value that
    is not bytes without a serializer, IllegalStateError once closed; nothing of those is
    written."""
    topic = new_topic(1)
    producer = peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, max_request_size=2000)
    try:
        with pytest.raises(ValueError, match="Need at least one: key or value"):
            producer.send(topic, None, None)
        with pytest.raises(ValueError):
            producer.send(topic)
        with pytest.raises(peer.errors.MessageSizeTooLargeError):
            producer.send(topic, b"x" * 3000)
        with pytest.raises(TypeError):
            producer.send(topic, b"v", headers=[(b"not-a-str", b"v")])
        with pytest.raises(TypeError):
            producer.send(topic, "a str without a serializer")
        assert producer.send(topic, b"fits").get(timeout=30).offset == 0
        assert producer.send(topic, key=b"k").get(timeout=30).offset == 1  # a tombstone
    finally:
        producer.close()
    producer.close()  # twice: nothing happens
    with pytest.raises(peer.errors.IllegalStateError):
        producer.send(topic, b"late")
    records = read_back(broker.bootstrap_servers, topic, 1, 2)
    assert [(r.key, r.value) for r in records] == [(None, b"fits"), (b"k", None)]


def test_partitions_for_gives_the_partition_ids(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(4)
    with peer.KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        assert producer.partitions_for(topic) == {0, 1, 2, 3}
        md = producer.send(topic, b"v", partition=3).get(timeout=30)
    assert (md.partition, md.offset) == (3, 0)
    assert list(by_partition(read_back(broker.bootstrap_servers, topic, 4, 1))) == [3]


# ------------------------------------------------------------------ Serializer, Partitioner objects


def test_a_serializer_object_sees_the_headers_and_may_add_one(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """kafka-python 3's ``Serializer.serialize(topic, headers, data)``: the record's header list
    (a new one when the record has none), where a header added is sent; ``close()`` runs when
    the producer closes."""
    topic = new_topic(1)

    class TaggingSerializer(peer.Serializer):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            self.seen: List[Any] = []
            self.closed = 0

        def serialize(self, topic: str, headers: Any, data: Any) -> Any:
            self.seen.append((topic, list(headers)))
            headers.append(("content-type", b"text/plain"))
            return data.encode()

        def close(self) -> None:
            self.closed += 1

    serializer = TaggingSerializer()
    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, value_serializer=serializer
    ) as producer:
        producer.send(topic, "one")
        producer.send(topic, "two", headers=[("trace", b"t-1")])
        producer.flush()
    assert serializer.seen == [(topic, []), (topic, [("trace", b"t-1")])]
    assert serializer.closed == 1
    records = read_back(broker.bootstrap_servers, topic, 1, 2)
    assert [(r.value, r.headers) for r in records] == [
        (b"one", [("content-type", b"text/plain")]),
        (b"two", [("trace", b"t-1"), ("content-type", b"text/plain")]),
    ]


def test_a_partitioner_object_gets_kafka_pythons_cluster_view(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """A ``kafka.partitioner.Partitioner`` subclass: ``partition(topic, key, serialized_key,
    value, serialized_value, cluster)``, with ``cluster.partitions_for_topic`` and
    ``available_partitions_for_topic`` giving partition ids; called once per keyed record."""
    topic = new_topic(4)

    class LastPartitionForBigValues(KafkaPythonPartitionerBase):
        def __init__(self) -> None:
            self.calls: List[Any] = []

        def partition(self, topic, key, serialized_key, value, serialized_value, cluster):  # type: ignore[no-untyped-def]
            all_partitions = sorted(cluster.partitions_for_topic(topic))
            available = sorted(cluster.available_partitions_for_topic(topic))
            self.calls.append((topic, key, serialized_key, value, serialized_value))
            assert topic in cluster.topics() and available == all_partitions
            return all_partitions[-1] if len(serialized_value) > 3 else all_partitions[0]

    partitioner = LastPartitionForBigValues()
    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        partitioner=partitioner,
        key_serializer=str.encode,
    ) as producer:
        metas = [
            producer.send(topic, b"v" * (i % 6), key=f"k{i}").get(timeout=30) for i in range(30)
        ]
    assert [m.partition for m in metas] == [3 if i % 6 > 3 else 0 for i in range(30)]
    assert partitioner.calls == [
        (topic, f"k{i}", f"k{i}".encode(), b"v" * (i % 6), b"v" * (i % 6)) for i in range(30)
    ]
    records = read_back(broker.bootstrap_servers, topic, 4, 30)
    assert sorted(by_partition(records)) == [0, 3]
    assert_delivered(
        records,
        [b"k%d" % i for i in range(30)],
        identity=lambda r: r.key,
        partitions=[m.partition for m in metas],
    )


@pytest.mark.parametrize("which", ["default", "sticky"])
def test_kafka_pythons_own_partitioners(
    peer: types.SimpleNamespace,
    broker: LocalBroker,
    new_topic: Callable[..., str],
    which: str,
) -> None:
    """``partitioner=DefaultPartitioner()`` / ``StickyPartitioner()`` from kafka.partitioner:
    keys by murmur2; unkeyed records at random (default) or in sticky runs that move on at a new
    batch (sticky)."""
    topic = new_topic(3)
    partitioner = (
        KafkaPythonDefaultPartitioner() if which == "default" else KafkaPythonStickyPartitioner()
    )
    keys = [b"key-%d" % i for i in range(60)]

    def unkeyed_value(i: int) -> bytes:  # 50 bytes each: 8 to a batch of 600
        return (b"u%d-" % i).ljust(50, b"u")

    with peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        partitioner=partitioner,
        batch_size=600,
        linger_ms=50,
    ) as producer:
        keyed = [producer.send(topic, b"k%d" % i, key=k) for i, k in enumerate(keys)]
        unkeyed = [producer.send(topic, unkeyed_value(i)) for i in range(300)]
        producer.flush()
        keyed_parts = [f.get(timeout=30).partition for f in keyed]
        unkeyed_parts = [f.get(timeout=30).partition for f in unkeyed]
    assert keyed_parts == [partition_for_key(k, 3) for k in keys]
    switches = sum(1 for a, b in zip(unkeyed_parts, unkeyed_parts[1:]) if a != b)
    assert set(unkeyed_parts) == {0, 1, 2}
    if which == "default":
        assert switches > 120  # a random choice per record: about 200 of 299
    else:
        assert switches < 80  # one per batch of about 8 records
    records = read_back(broker.bootstrap_servers, topic, 3, 360)
    sent = [b"k%d" % i for i in range(60)] + [unkeyed_value(i) for i in range(300)]
    assert_delivered(records, sent, partitions=keyed_parts + unkeyed_parts)


# ------------------------------------------------------------------ transactions with offsets


def test_send_offsets_to_transaction_with_topic_partition_and_offset_and_metadata(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``send_offsets_to_transaction({TopicPartition: OffsetAndMetadata}, group_id)``: the
    offsets count once the transaction commits, and never when it aborts."""
    source, sink = new_topic(2), new_topic(1)
    group, aborted_group = f"g-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    bs = broker.bootstrap_servers
    tp0, tp1 = peer.TopicPartition(source, 0), peer.TopicPartition(source, 1)
    producer = peer.KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, transactional_id=f"ctp-{uuid.uuid4()}"
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(sink, b"transformed")
        producer.send_offsets_to_transaction(
            {tp0: peer.OffsetAndMetadata(10, "", -1), tp1: peer.OffsetAndMetadata(7, "m", -1)},
            group,
        )
        # not before the commit (asked as a read_uncommitted consumer asks: Apache Kafka holds a
        # read_committed consumer's question until the transaction ends)
        assert committed(bs, group, source, 0, stable=False) is None
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            {tp0: peer.OffsetAndMetadata(99, "", -1)}, aborted_group
        )
        producer.abort_transaction()
    finally:
        producer.close()
    assert committed(bs, group, source, 0) == 10
    assert committed(bs, group, source, 1) == 7
    assert committed(bs, aborted_group, source, 0) is None
    assert [r.value for r in read_back(broker.bootstrap_servers, sink, 1, 1)] == [b"transformed"]


# ------------------------------------------------------------------ kafka-python's settings


def test_api_version_caps_the_protocol_versions(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``api_version=(2, 0, 0)``: the client speaks as Kafka 2.0 does (Produce v6 at most,
    Metadata v6, ApiVersions v2); without it, the versions the broker offers."""
    topic = new_topic(1)
    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        vc.raise_init_producer_id_version(3)  # Tansu answers InitProducerId v3 and later only
        with peer.KafkaProducer(
            bootstrap_servers=vc.bootstrap_servers, api_version=(2, 0, 0)
        ) as producer:
            producer.send(topic, b"as 2.0").get(timeout=30)
        capped = {k: max(v) for k, v in vc.request_versions.items()}
    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        with peer.KafkaProducer(bootstrap_servers=vc.bootstrap_servers) as producer:
            producer.send(topic, b"negotiated").get(timeout=30)
        negotiated = {k: max(v) for k, v in vc.request_versions.items()}
    assert capped[PRODUCE] <= 6 < negotiated[PRODUCE]
    assert capped[METADATA] <= 6 < negotiated[METADATA]
    assert capped[API_VERSIONS] <= 2 < negotiated[API_VERSIONS]
    values = [r.value for r in read_back(broker.bootstrap_servers, topic, 1, 2)]
    assert values == [b"as 2.0", b"negotiated"]


def test_batch_size_zero_sends_every_record_in_a_batch_of_its_own(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``batch_size=0`` ("a batch size of zero will disable batching entirely"): one Produce
    request per record of a partition, however long the linger."""
    topic = new_topic(1)
    n = 12
    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        with peer.KafkaProducer(
            bootstrap_servers=vc.bootstrap_servers, batch_size=0, linger_ms=2000
        ) as producer:
            started = time.monotonic()
            futures = [producer.send(topic, b"r%d" % i) for i in range(n)]
            offsets = [f.get(timeout=30).offset for f in futures]
            waited = time.monotonic() - started
        requests = vc.produce_requests[0]
    assert offsets == list(range(n))
    assert requests == n
    assert waited < 2.0  # a batch of one record is full: it does not linger
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, 1, n)] == [
        b"r%d" % i for i in range(n)
    ]


def test_bootstrap_timeout_ms_bounds_the_constructor(peer: types.SimpleNamespace) -> None:
    """``bootstrap_timeout_ms``: without a reachable broker the constructor raises
    KafkaTimeoutError once it has passed."""
    started = time.monotonic()
    with pytest.raises(peer.errors.KafkaTimeoutError):
        peer.KafkaProducer(bootstrap_servers=f"127.0.0.1:{free_port()}", bootstrap_timeout_ms=1000)
    assert 0.9 <= time.monotonic() - started < 20


def test_kafka_python_settings_together(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """A producer spelled with kafka-python's own settings and values (``retries=float('inf')``,
    ``acks='all'``, ``send_buffer_bytes=None``, ``api_version='auto'``...) works."""
    topic = new_topic(2)
    settings: Dict[str, Any] = dict(
        bootstrap_servers=[broker.bootstrap_servers],
        client_id="kafka-python-style",
        acks="all",
        retries=float("inf"),
        send_buffer_bytes=None,
        receive_buffer_bytes=None,
        retry_backoff_ms=50,
        reconnect_backoff_max_ms=30000,
        max_in_flight_requests_per_connection=5,
        connections_max_idle_ms=9 * 60 * 1000,
        metadata_max_age_ms=300000,
        request_timeout_ms=30000,
        delivery_timeout_ms=120000,
        api_version="auto",
        bootstrap_timeout_ms=30000,
        ssl_check_hostname=True,
        client_dns_lookup="use_all_dns_ips",
        socket_options=[(6, 1, 1)],  # IPPROTO_TCP, TCP_NODELAY, on
        receive_message_max_bytes=100_000_000,
        metric_reporters=[],
        metrics_enabled=True,
    )
    with peer.KafkaProducer(**settings) as producer:
        futures = [producer.send(topic, b"%d" % i, key=b"%d" % i) for i in range(50)]
        metas = [f.get(timeout=30) for f in futures]
    assert [m.partition for m in metas] == [partition_for_key(b"%d" % i, 2) for i in range(50)]
    records = read_back(broker.bootstrap_servers, topic, 2, 50)
    assert_delivered(
        records, [b"%d" % i for i in range(50)], partitions=[m.partition for m in metas]
    )


# ------------------------------------------------------------------ TLS settings


def test_tls_settings(peer: types.SimpleNamespace, tls_broker: Any, certs: Dict[str, str]) -> None:  # noqa: F811
    """kafka-python's TLS settings: ``ssl_cafile``; a client certificate in ``ssl_certfile``
    with its key in ``ssl_keyfile``; ``ssl_check_hostname``; ``ssl_ciphers``. A refused
    connection makes a constructor with ``bootstrap_timeout_ms`` raise KafkaTimeoutError.
    (``ssl_crlfile``: test_kafka_python_compat.py, kafka-python 3.0.12 fails on it.)"""
    broker, term, mutual, wrong_host = tls_broker
    topic = f"tls-kp-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    tls = {"security_protocol": "SSL", "ssl_cafile": certs["ca"], "bootstrap_timeout_ms": 3000}

    def refused(port: int, **settings: Any) -> None:
        with pytest.raises(peer.errors.KafkaTimeoutError):
            peer.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", **{**tls, **settings})

    def works(port: int, **settings: Any) -> None:
        producer = peer.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", **{**tls, **settings})
        try:
            assert producer.partitions_for(topic) == {0}
        finally:
            producer.close()

    refused(mutual.port)  # no client certificate
    works(mutual.port, ssl_certfile=certs["client"], ssl_keyfile=certs["client.key"])
    refused(wrong_host.port)  # its certificate names another host
    works(wrong_host.port, ssl_check_hostname=False)
    with peer.KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{term.port}", ssl_ciphers="ECDHE+AESGCM", **tls
    ) as producer:
        producer.send(topic, b"over tls").get(timeout=30)
    (record,) = _read_back_tls(term.port, certs["ca"], topic, 1, 1)
    assert record.value() == b"over tls"
