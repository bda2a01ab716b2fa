"""kafka-python programs on cproducer, where the test cannot run on kafka-python itself too.

Each test here checks a kafka-python option or object as kafka-python documents it, against the
real broker (Tansu), read back by librdkafka where records are written. They are not run on
kafka-python 3.0.12 because it does not do what its documentation says, or because the test
looks at the producer's own sockets:

- ``allow_auto_create_topics=False``: kafka-python 3.0.12 accepts it but its connection manager
  never hands it to the metadata requests, so the broker creates the topic anyway;
- ``bootstrap_connected()``: documented as "True if the bootstrap is connected"; kafka-python
  3.0.12 answers True only while its bootstrap is in progress (it closes that connection after);
- a user partitioner: kafka-python 3.0.12 calls it twice for the first unkeyed record of each new
  batch (its abort-for-new-batch rerun), cproducer once, unless it implements ``on_new_batch``;
- ``ssl_crlfile``: kafka-python 3.0.12 passes it to ``load_verify_locations`` under a keyword
  that function does not have, so every connection fails;
- kafka-python's own objects (``kafka.JsonSerializer``, ``kafka.structs``) handed to cproducer.
"""

from __future__ import annotations

import datetime
import selectors
import socket
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CKTopicPartition
from kafka import DefaultSerializer as KafkaPythonDefaultSerializer
from kafka import JsonSerializer as KafkaPythonJsonSerializer
from kafka.partitioner import StickyPartitioner as KafkaPythonStickyPartitioner
from kafka.structs import ConsumerGroupMetadata as KafkaPythonGroupMetadata
from kafka.structs import OffsetAndMetadata as KafkaPythonOffsetAndMetadata
from kafka.structs import TopicPartition as KafkaPythonTopicPartition

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker, free_port
from cproducer.producer.partitioners import Partitioner
from tests.integration.readback import assert_delivered, by_partition, read_back
from tests.integration.test_tls import _read_back_tls, tls_broker  # noqa: F401 (a fixture)


def _committed(broker: LocalBroker, group: str, topic: str, partition: int) -> Optional[int]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        (tp,) = consumer.committed([CKTopicPartition(topic, partition)], timeout=10)
        return None if tp.offset < 0 else int(tp.offset)
    finally:
        consumer.close()


def _sockets(producer: KafkaProducer) -> List[socket.socket]:
    return [conn.sock for conn in list(producer._client._conns.values())]


# ------------------------------------------------------------------ partitioners


class _CountingPartitioner:
    """kafka-python's partitioner protocol, without ``on_new_batch``: a partition per record
    from a counter (the kind of partitioner a second call would skew)."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def partition(self, topic, key, serialized_key, value, serialized_value, cluster):  # type: ignore[no-untyped-def]
        with self.lock:
            self.calls += 1
            ids = sorted(cluster.partitions_for_topic(topic))
            return ids[(self.calls - 1) // 10 % len(ids)]


class _JavaStylePartitioner(Partitioner):
    """cproducer's (Java's) protocol through ``partitioner_class``: the Cluster's PartitionInfos;
    the base class's no-op ``on_new_batch`` is no sticky protocol."""

    def __init__(self) -> None:
        self.calls = 0

    def partition(self, topic, key, key_bytes, value, value_bytes, cluster):  # type: ignore[no-untyped-def]
        self.calls += 1
        infos = cluster.partitions_for_topic(topic)
        return infos[-1].partition


class _CountingSticky(KafkaPythonStickyPartitioner):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.new_batches = 0

    def partition(self, *args: Any) -> int:
        self.calls += 1
        return super().partition(*args)  # type: ignore[no-any-return]

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        self.new_batches += 1
        super().on_new_batch(topic, cluster, prev_partition)


def _sized(tag: bytes, i: int) -> bytes:
    """Record ``i``'s value, 40 bytes whatever ``i``: as many to a batch as ``tag * 40``."""
    return (tag + b"%d-" % i).ljust(40, tag)


def test_a_partitioner_is_called_once_per_record(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """Unkeyed records that start a new batch every few records: a partitioner without
    ``on_new_batch`` (kafka-python's protocol or Java's) runs exactly once per record, so a
    counting partitioner puts runs of 10 on each partition in turn."""
    topic = new_topic(3)
    n = 300
    counting = _CountingPartitioner()
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, partitioner=counting, batch_size=200
    ) as producer:
        metas = [producer.send(topic, _sized(b"x", i)) for i in range(n)]
        parts = [f.get(timeout=30).partition for f in metas]
    assert counting.calls == n
    assert parts == [i // 10 % 3 for i in range(n)]
    java_style = _JavaStylePartitioner()
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, partitioner_class=java_style, batch_size=200
    ) as producer:
        metas = [producer.send(topic, _sized(b"y", i)) for i in range(n)]
        assert {f.get(timeout=30).partition for f in metas} == {2}
    assert java_style.calls == n
    records = read_back(broker.bootstrap_servers, topic, 3, 2 * n)
    assert {p: len(rs) for p, rs in by_partition(records).items()} == {0: 100, 1: 100, 2: 400}
    # the second producer started after the first closed: its records come after
    sent = [_sized(b"x", i) for i in range(n)] + [_sized(b"y", i) for i in range(n)]
    assert_delivered(records, sent, partitions=parts + [2] * n)


def test_a_sticky_partitioner_gets_on_new_batch_and_a_second_call(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """kafka-python's ``StickyPartitioner`` implements ``on_new_batch``: the record that would
    start a new batch is partitioned again after it, as kafka-python and Java 3 do, so every
    batch moves the sticky partition. A keyed record is partitioned once."""
    topic = new_topic(3)
    n = 300
    sticky = _CountingSticky()
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        partitioner=sticky,
        batch_size=400,
        linger_ms=100,
    ) as producer:
        metas = [producer.send(topic, _sized(b"z", i)) for i in range(n)]
        parts = [f.get(timeout=30).partition for f in metas]
        assert sticky.new_batches >= 10
        assert sticky.calls == n + sticky.new_batches
        # keyed records are hashed: no new-batch rerun for them (kafka-python reruns only for
        # records without a key)
        calls, new_batches = sticky.calls, sticky.new_batches
        keyed = [producer.send(topic, _sized(b"k", i), key=b"key-%d" % i) for i in range(n)]
        producer.flush()
        assert all(f.get(timeout=30).offset >= 0 for f in keyed)
        assert (sticky.calls - calls, sticky.new_batches) == (n, new_batches)
    switches = sum(1 for a, b in zip(parts, parts[1:]) if a != b)
    assert 10 <= switches <= new_batches
    records = read_back(broker.bootstrap_servers, topic, 3, 2 * n)
    sent = [_sized(b"z", i) for i in range(n)] + [_sized(b"k", i) for i in range(n)]
    assert_delivered(records, sent, partitions=parts + [f.get(0).partition for f in keyed])


# ------------------------------------------------------------------ kafka-python's own objects


def test_kafka_pythons_serializer_objects(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``kafka.JsonSerializer()`` and ``kafka.DefaultSerializer()`` themselves (a program that
    switched only the KafkaProducer import)."""
    topic = new_topic(1)
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        value_serializer=KafkaPythonJsonSerializer(),
        key_serializer=KafkaPythonDefaultSerializer(),
    ) as producer:
        producer.send(topic, {"foo": "bar"}, key="ping")
        producer.send(topic, None, key="gone")
        producer.flush()
    records = read_back(broker.bootstrap_servers, topic, 1, 2)
    assert [(r.key, r.value) for r in records] == [(b"ping", b'{"foo": "bar"}'), (b"gone", None)]


def test_send_offsets_with_kafka_python_structs_and_plain_ints(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``send_offsets_to_transaction`` takes kafka-python's ``TopicPartition`` and
    ``OffsetAndMetadata`` (kafka.structs) and its ``ConsumerGroupMetadata``, and plain int
    offsets keyed by ``(topic, partition)``."""
    source = new_topic(2)
    group_a, group_b = f"ga-{uuid.uuid4().hex[:8]}", f"gb-{uuid.uuid4().hex[:8]}"
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, transactional_id=f"kp-{uuid.uuid4()}"
    ) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            {
                KafkaPythonTopicPartition(source, 0): KafkaPythonOffsetAndMetadata(5, "", -1),
                KafkaPythonTopicPartition(source, 1): KafkaPythonOffsetAndMetadata(6, "meta", -1),
            },
            KafkaPythonGroupMetadata(group_id=group_a),
        )
        producer.send_offsets_to_transaction({(source, 0): 11, (source, 1): 12}, group_b)
        producer.commit_transaction()
    assert [_committed(broker, group_a, source, p) for p in (0, 1)] == [5, 6]
    assert [_committed(broker, group_b, source, p) for p in (0, 1)] == [11, 12]


# ------------------------------------------------------------------ bootstrap_connected


def test_bootstrap_connected_once_the_cluster_answered(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """True once the producer has the cluster's metadata over a ready connection (at once after
    a constructor that waited, with ``bootstrap_timeout_ms``); False without a reachable broker
    and after close."""
    dead = KafkaProducer(bootstrap_servers=f"127.0.0.1:{free_port()}")
    try:
        assert dead.bootstrap_connected() is False
    finally:
        dead.close(0)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, bootstrap_timeout_ms=10000)
    try:
        assert producer.bootstrap_connected() is True
        topic = new_topic(1)
        producer.send(topic, b"x").get(timeout=30)
        assert producer.bootstrap_connected() is True
    finally:
        producer.close()
    assert producer.bootstrap_connected() is False


# ------------------------------------------------------------------ settings


def test_allow_auto_create_topics_false_leaves_a_missing_topic_missing(
    broker: LocalBroker,
) -> None:
    """``allow_auto_create_topics=False``: the metadata requests say so, a send to a missing
    topic waits for its metadata and fails with KafkaTimeoutError, and the broker does not
    create it. With the default (True), Tansu creates a topic asked for."""
    missing, created = f"missing-{uuid.uuid4().hex[:8]}", f"auto-{uuid.uuid4().hex[:8]}"
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        allow_auto_create_topics=False,
        max_block_ms=1500,
    ) as producer:
        with pytest.raises(errors.KafkaTimeoutError, match=missing):
            producer.send(missing, b"x")
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        assert producer.send(created, b"x").get(timeout=30).offset == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "md"})
    try:
        topics = consumer.list_topics(timeout=10).topics
    finally:
        consumer.close()
    assert created in topics
    assert missing not in topics or topics[missing].error is not None


def test_socket_buffers_none_leave_the_os_default_and_records_are_acknowledged(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """kafka-python's default ``send_buffer_bytes=None`` / ``receive_buffer_bytes=None``: the
    sockets' buffers are left to the OS (which sizes them as the connection goes), and every
    record is acknowledged. Java's defaults (131072 / 32768), set explicitly, fix the sizes."""
    topic = new_topic(2)
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 131072)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
    java_sizes = (
        probe.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
        probe.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
    )
    probe.close()

    def sizes(producer: KafkaProducer) -> set:
        return {
            (
                s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
            )
            for s in _sockets(producer)
        }

    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        send_buffer_bytes=None,
        receive_buffer_bytes=None,
    ) as producer:
        futures = [producer.send(topic, b"v%d" % i, key=b"%d" % i) for i in range(200)]
        metas = [f.get(timeout=30) for f in futures]
        os_sized = sizes(producer)
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send(topic, b"java sizes").get(timeout=30)
        java_sized = sizes(producer)
    assert all(m.offset >= 0 for m in metas)
    assert java_sized == {java_sizes}
    assert os_sized and java_sizes not in os_sized
    records = read_back(broker.bootstrap_servers, topic, 2, 201)
    # the second producer started after the first closed: its record comes after
    assert_delivered(records, [b"v%d" % i for i in range(200)] + [b"java sizes"])


def test_socket_options_replace_the_default_ones(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``socket_options``: exactly these setsockopt triples on every broker socket (the default
    is kafka-python's TCP_NODELAY alone)."""
    topic = new_topic(1)

    def flags(producer: KafkaProducer) -> set:
        producer.send(topic, b"x").get(timeout=30)
        return {
            (
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0,
                s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) != 0,
            )
            for s in _sockets(producer)
        }

    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        assert flags(producer) == {(True, False)}
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        socket_options=[(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)],
    ) as producer:
        assert flags(producer) == {(False, True)}
    assert len(read_back(broker.bootstrap_servers, topic, 1, 2)) == 2


def test_receive_message_max_bytes_refuses_longer_answers(
    broker: LocalBroker, new_topic: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    """``receive_message_max_bytes``: an answer longer than this closes the connection (taken
    for a corrupt stream): with 64 bytes not even ApiVersions gets through."""
    topic = new_topic(1)
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        receive_message_max_bytes=64,
        max_block_ms=1500,
    ) as producer:
        with pytest.raises(errors.KafkaTimeoutError):
            producer.partitions_for(topic)
    assert any("bad response length" in r.getMessage() for r in caplog.records)
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, receive_message_max_bytes=1_000_000
    ) as producer:
        assert producer.partitions_for(topic) == {0}


def test_selector_class_is_the_one_polled(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``selector=selectors.PollSelector``: the I/O thread polls with it."""
    topic = new_topic(1)
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, selector=selectors.PollSelector
    ) as producer:
        assert type(producer._client._selector) is selectors.PollSelector
        assert producer.send(topic, b"polled").get(timeout=30).offset == 0
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, 1, 1)] == [b"polled"]


# ------------------------------------------------------------------ TLS


def _crl(certs: Dict[str, str], path: Path, revoke_broker: bool) -> str:
    """A CRL signed by the test CA, revoking the broker's certificate or nothing."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    ca_key = serialization.load_pem_private_key(Path(certs["ca.key"]).read_bytes(), None)
    ca = x509.load_pem_x509_certificate(Path(certs["ca"]).read_bytes())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca.subject)
        .last_update(now - datetime.timedelta(minutes=5))
        .next_update(now + datetime.timedelta(days=1))
    )
    if revoke_broker:
        serial = x509.load_pem_x509_certificate(Path(certs["broker"]).read_bytes()).serial_number
        builder = builder.add_revoked_certificate(
            x509.RevokedCertificateBuilder()
            .serial_number(serial)
            .revocation_date(now - datetime.timedelta(minutes=5))
            .build()
        )
    crl = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    path.write_bytes(crl.public_bytes(serialization.Encoding.PEM))
    return str(path)


def test_ssl_crlfile_refuses_a_revoked_broker_certificate(
    tls_broker: Any,  # noqa: F811 (the fixture imported above)
    certs: Dict[str, str],
    tmp_path: Path,
) -> None:
    """``ssl_crlfile``: with a CRL of the CA that revokes the broker's certificate, the TLS
    handshake fails (the constructor with ``bootstrap_timeout_ms`` raises KafkaTimeoutError);
    with one that revokes nothing, records go through."""
    broker, term, _mutual, _wrong = tls_broker
    topic = f"tls-crl-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    tls = {
        "bootstrap_servers": f"127.0.0.1:{term.port}",
        "security_protocol": "SSL",
        "ssl_cafile": certs["ca"],
        "bootstrap_timeout_ms": 3000,
    }
    with pytest.raises(errors.KafkaTimeoutError):
        KafkaProducer(ssl_crlfile=_crl(certs, tmp_path / "revoking.pem", True), **tls)
    with KafkaProducer(ssl_crlfile=_crl(certs, tmp_path / "empty.pem", False), **tls) as producer:
        producer.send(topic, b"not revoked").get(timeout=30)
    (record,) = _read_back_tls(term.port, certs["ca"], topic, 1, 1)
    assert record.value() == b"not revoked"
