"""Our protocol codecs against a real broker (Tansu), over a raw socket.

Requests go out as the network layer sends them (one ``sendmsg`` of the parts); record batches
are built by kafka-python's DefaultRecordBatchBuilder and read back by librdkafka, so both ends
of the bytes are checked by peers, not by our own code.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from cproducer.errors import CorruptResponseError
from cproducer.localbroker import LocalBroker
from cproducer.protocol import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    ErrorCode,
    InitProducerIdRequest,
    MetadataRequest,
    NewTopic,
    ProduceRequest,
    choose_version,
    decode_response,
    decode_response_header,
    encode_request,
    is_flexible,
)
from cproducer.protocol.api_versions import _decode as decode_api_versions
from tests.integration.readback import by_partition, read_back

TANSU_NODE_ID = 111  # a Tansu process reports itself as node 111, leader of every partition


class Connection:
    """One broker connection speaking our codecs, with correlation ids checked."""

    def __init__(self, broker: LocalBroker) -> None:
        self.sock = socket.create_connection((broker.host, broker.port), timeout=10)
        self.next_id = 1000

    def send(self, req: Any, version: int) -> int:
        cid, self.next_id = self.next_id, self.next_id + 1
        parts = encode_request(req, version, cid, "protocol-test")
        total = sum(memoryview(p).nbytes for p in parts)
        sent = self.sock.sendmsg(parts)
        if sent < total:  # a short gather write: send the rest plainly
            self.sock.sendall(b"".join(bytes(p) for p in parts)[sent:])
        return cid

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._exact(4))[0]
        return self._exact(size)

    def recv(self, req: Any, version: int, cid: int) -> Any:
        frame = memoryview(self.recv_frame())
        got, body = decode_response_header(req.API_KEY, is_flexible(type(req), version), frame)
        assert got == cid
        return decode_response(req, version, body)

    def call(self, req: Any, version: int) -> Any:
        return self.recv(req, version, self.send(req, version))

    def raw_call(self, req: Any, version: int) -> bytes:
        """The response frame as the broker sent it (size prefix removed)."""
        self.send(req, version)
        return self.recv_frame()

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def conn(broker: LocalBroker) -> Iterator[Connection]:
    c = Connection(broker)
    yield c
    c.close()


def unique(stem: str) -> str:
    return f"{stem}-{time.monotonic_ns()}-{random.randrange(1 << 30)}"


def batch(
    values: List[bytes], producer_id: int = -1, epoch: int = -1, base_sequence: int = -1
) -> bytearray:
    builder = DefaultRecordBatchBuilder(2, 0, False, producer_id, epoch, base_sequence, 1 << 20)
    now = int(time.time() * 1000)
    for i, value in enumerate(values):
        builder.append(i, now, b"key-%d" % i, value, [])
    return builder.build()


# --- ApiVersions ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(ApiVersionsRequest.MIN_VERSION, 4))
def test_api_versions_every_version(conn: Connection, version: int) -> None:
    resp = conn.call(ApiVersionsRequest(), version)
    assert resp.error_code == 0 and resp.throttle_time_ms == 0
    # the broker speaks (at least) the whole range we speak of every API a producer uses
    for cls in (ApiVersionsRequest, MetadataRequest, ProduceRequest, InitProducerIdRequest):
        lo, hi = resp.api_versions[cls.API_KEY]
        assert lo <= cls.MIN_VERSION and hi >= cls.MAX_VERSION
        assert choose_version(cls, resp.api_versions[cls.API_KEY]) == cls.MAX_VERSION
    assert resp.api_versions[CreateTopicsRequest.API_KEY][1] >= 7


def test_api_versions_v3_response_header_has_no_tagged_fields(conn: Connection) -> None:
    frame = memoryview(conn.raw_call(ApiVersionsRequest(), 3))
    # header v0: the correlation id, then the v3 body, which it fills exactly
    resp, left_over = decode_api_versions(3, frame[4:])
    assert resp.error_code == 0 and left_over == 0
    assert resp.api_versions[ApiVersionsRequest.API_KEY][1] >= 3


# --- Metadata ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 4, 5, 7, 8, 9, 10, 11, 12])
def test_metadata_auto_creates_four_partitions(
    conn: Connection, broker: LocalBroker, version: int
) -> None:
    topic = unique(f"auto-v{version}")
    resp = conn.call(MetadataRequest([topic], allow_auto_topic_creation=True), version)
    assert [(b.id, b.host, b.port) for b in resp.brokers] == [
        (TANSU_NODE_ID, broker.host, broker.port)
    ]
    assert resp.controller_id == (TANSU_NODE_ID if version >= 1 else -1)
    assert (resp.cluster_id is not None) == (version >= 2)
    [t] = resp.topics
    assert (t.error_code, t.name, t.is_internal) == (0, topic, False)
    assert sorted(p.partition for p in t.partitions) == [0, 1, 2, 3]
    for p in t.partitions:
        assert p.error_code == 0 and p.leader_id == TANSU_NODE_ID
        assert p.replica_ids == [TANSU_NODE_ID] and p.isr_ids == [TANSU_NODE_ID]
        assert p.offline_replica_ids == []
    assert (t.topic_id != bytes(16)) == (version >= 10)


@pytest.mark.parametrize("version", [1, 4, 7, 9, 12])
@pytest.mark.parametrize("partitions", [1, 3, 16])
def test_metadata_of_created_topic(
    conn: Connection, new_topic: Callable[..., str], version: int, partitions: int
) -> None:
    topic = new_topic(partitions=partitions)
    resp = conn.call(MetadataRequest([topic], allow_auto_topic_creation=False), version)
    [t] = resp.topics
    assert t.error_code == 0 and t.name == topic
    assert sorted(p.partition for p in t.partitions) == list(range(partitions))
    assert {p.leader_id for p in t.partitions} == {TANSU_NODE_ID}
    if version >= 7:
        assert all(p.leader_epoch >= 0 for p in t.partitions)


@pytest.mark.parametrize("version", [4, 9, 12])
def test_metadata_unknown_topic_without_auto_creation(conn: Connection, version: int) -> None:
    topic = unique("absent")
    [t] = conn.call(MetadataRequest([topic], allow_auto_topic_creation=False), version).topics
    assert (t.error_code, t.name, t.partitions) == (3, topic, [])  # UNKNOWN_TOPIC_OR_PARTITION
    again = conn.call(MetadataRequest([topic], allow_auto_topic_creation=False), version)
    assert again.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # not created


@pytest.mark.parametrize("version", [1, 9, 12])
def test_metadata_all_topics(conn: Connection, new_topic: Callable[..., str], version: int) -> None:
    names = {new_topic(partitions=2), new_topic(partitions=1)}
    resp = conn.call(MetadataRequest(None), version)
    assert names <= {t.name for t in resp.topics}


# --- CreateTopics -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(CreateTopicsRequest.MIN_VERSION, 8))
def test_create_topics_every_version(conn: Connection, version: int) -> None:
    names = [unique(f"ct-v{version}-a"), unique(f"ct-v{version}-b")]
    req = CreateTopicsRequest(
        [NewTopic(names[0], 3), NewTopic(names[1], 5, 1, {"retention.ms": "3600000"})]
    )
    resp = conn.call(req, version)
    assert [(t.name, t.error_code) for t in resp.topics] == [(names[0], 0), (names[1], 0)]
    assert [t.num_partitions for t in resp.topics] == ([3, 5] if version >= 5 else [-1, -1])
    md = conn.call(MetadataRequest(names, allow_auto_topic_creation=False), 12)
    assert {t.name: len(t.partitions) for t in md.topics} == {names[0]: 3, names[1]: 5}
    # again: TOPIC_ALREADY_EXISTS, with a message from v1 on
    [dup] = conn.call(CreateTopicsRequest([NewTopic(names[0], 3)]), version).topics
    assert dup.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert (dup.error_message is not None) == (version >= 1)


# --- InitProducerId ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 4])
def test_init_producer_id_gives_fresh_ids(conn: Connection, version: int) -> None:
    first = conn.call(InitProducerIdRequest(), version)
    second = conn.call(InitProducerIdRequest(), version)
    for resp in (first, second):
        assert resp.error_code == 0 and resp.throttle_time_ms == 0
        assert resp.producer_id >= 0 and resp.producer_epoch == 0
    assert first.producer_id != second.producer_id


# --- Produce ----------------------------------------------------------------------------------


def test_produce_every_version_read_back_by_librdkafka(
    conn: Connection, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2)
    sent: Dict[int, List[bytes]] = {0: [], 1: []}
    versions = range(ProduceRequest.MIN_VERSION, ProduceRequest.MAX_VERSION + 1)
    for version in versions:
        # two partitions, one batch each (different sizes): several gather-write parts
        values = {p: [b"v%d-p%d-%d" % (version, p, i) for i in range(3 + 2 * p)] for p in (0, 1)}
        batches = {p: memoryview(batch(vals)) for p, vals in values.items()}
        req = ProduceRequest(-1, 10000, {topic: [(0, batches[0]), (1, batches[1])]})
        resp = conn.call(req, version)
        assert set(resp.responses) == {(topic, 0), (topic, 1)}
        for p in (0, 1):
            r = resp.responses[(topic, p)]
            assert r.error_code == 0, (version, p, r)
            assert r.base_offset == len(sent[p]), (
                version,
                p,
                r,
            )  # offsets continue across versions
            assert r.log_append_time_ms == -1  # CreateTime topics
            assert r.log_start_offset == (0 if version >= 5 else -1)
            assert r.record_errors == [] and r.error_message is None
            sent[p] += values[p]
        assert resp.throttle_time_ms == 0
    expected = len(sent[0]) + len(sent[1])
    got = by_partition(read_back(broker.bootstrap_servers, topic, 2, expected))
    for p in (0, 1):
        assert [(r.offset, r.value) for r in got[p]] == list(enumerate(sent[p]))
        assert [r.key for r in got[p]][:3] == [b"key-0", b"key-1", b"key-2"]


def test_produce_several_topics_in_one_request(
    conn: Connection, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    a, b = new_topic(partitions=1), new_topic(partitions=3)
    req = ProduceRequest(
        1, 10000, {a: [(0, batch([b"a0", b"a1"]))], b: [(2, batch([b"b0"])), (0, batch([b"c"]))]}
    )
    resp = conn.call(req, 9)
    assert {k: (v.error_code, v.base_offset) for k, v in resp.responses.items()} == {
        (a, 0): (0, 0),
        (b, 2): (0, 0),
        (b, 0): (0, 0),
    }
    got_b = by_partition(read_back(broker.bootstrap_servers, b, 3, 2))
    assert {p: [r.value for r in rs] for p, rs in got_b.items()} == {0: [b"c"], 2: [b"b0"]}


@pytest.mark.parametrize("version", [3, 9])
def test_acks_zero_produce(
    conn: Connection, broker: LocalBroker, new_topic: Callable[..., str], version: int
) -> None:
    topic = new_topic(partitions=1)
    req = ProduceRequest(0, 10000, {topic: [(0, batch([b"fire", b"and", b"forget"]))]})
    assert not req.expect_response()
    produce_cid = conn.send(req, version)
    md = MetadataRequest([topic], allow_auto_topic_creation=False)
    md_cid = conn.send(md, 12)
    # A Kafka broker sends nothing for acks=0; Tansu 0.6 answers anyway (a normal Produce
    # response), so the first frame may be that answer: then it is in order and decodes.
    frame = memoryview(conn.recv_frame())
    cid, body = decode_response_header(ProduceRequest.API_KEY, version >= 9, frame)
    if cid == produce_cid:
        answer = decode_response(req, version, body).responses[(topic, 0)]
        assert (answer.error_code, answer.base_offset) == (0, 0)
        frame = memoryview(conn.recv_frame())
        cid, body = decode_response_header(md.API_KEY, True, frame)
    assert cid == md_cid
    assert decode_response(md, 12, body).topics[0].name == topic
    got = read_back(broker.bootstrap_servers, topic, 1, 3)
    assert [r.value for r in got] == [b"fire", b"and", b"forget"]


def test_idempotent_produce_sequence_errors(
    conn: Connection, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=1)
    pid = conn.call(InitProducerIdRequest(), 4)
    assert pid.error_code == 0

    def produce(seq: int, n: int) -> Tuple[int, int]:
        b = batch([b"x"] * n, pid.producer_id, pid.producer_epoch, seq)
        r = conn.call(ProduceRequest(-1, 10000, {topic: [(0, b)]}), 9).responses[(topic, 0)]
        return r.error_code, r.base_offset

    assert produce(0, 3) == (0, 0)
    assert produce(0, 3)[0] == 46  # DUPLICATE_SEQUENCE_NUMBER
    assert produce(7, 1)[0] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(3, 2) == (0, 3)


# --- Garbage: real responses, truncated and corrupted -----------------------------------------


def _real_responses(conn: Connection, topic: str) -> List[Tuple[Any, int, bytes]]:
    """(request, version, response frame) for a spread of APIs and versions."""
    calls: List[Tuple[Any, int]] = [(ApiVersionsRequest(), v) for v in range(4)]
    calls += [(MetadataRequest([topic], False), v) for v in (0, 1, 5, 8, 9, 10, 12)]
    calls += [(InitProducerIdRequest(), v) for v in (3, 4)]
    calls += [(CreateTopicsRequest([NewTopic(topic, 2)]), v) for v in (0, 4, 5, 7)]
    calls += [(ProduceRequest(-1, 10000, {topic: [(1, batch([b"g"]))]}), v) for v in (3, 5, 8, 9)]
    return [(req, v, conn.raw_call(req, v)) for req, v in calls]


def _decode_frame(req: Any, version: int, frame: bytes) -> Any:
    flexible = is_flexible(type(req), version)
    _cid, body = decode_response_header(req.API_KEY, flexible, memoryview(frame))
    return decode_response(req, version, body)


def test_truncated_real_responses_raise_corrupt_response(
    conn: Connection, new_topic: Callable[..., str]
) -> None:
    responses = _real_responses(conn, new_topic(partitions=2))
    for req, version, frame in responses:
        _decode_frame(req, version, frame)  # whole: fine
        for cut in range(len(frame)):
            with pytest.raises(CorruptResponseError):
                _decode_frame(req, version, frame[:cut])
                pytest.fail(f"{type(req).__name__} v{version} cut at {cut} decoded")


def test_corrupted_real_responses_decode_or_raise_corrupt_response(
    conn: Connection, new_topic: Callable[..., str]
) -> None:
    rng = random.Random(20261122)
    responses = _real_responses(conn, new_topic(partitions=2))
    failures = 0
    for req, version, frame in responses:
        for _ in range(300):
            bad = bytearray(frame)
            for _ in range(rng.randint(1, 4)):
                bad[rng.randrange(len(bad))] = rng.choice(
                    (0x00, 0x7F, 0x80, 0xFF, rng.randrange(256))
                )
            try:
                _decode_frame(req, version, bytes(bad))
            except CorruptResponseError:
                failures += 1
    assert failures > 0  # the flips did hit length fields; nothing else than CorruptResponseError


@pytest.mark.parametrize(
    "api_version, idempotence", [((0, 11, 0), False), ((2, 5, 0), True), ((2, 8, 0), True)]
)
def test_a_producer_capped_to_an_older_produce_version_keeps_sending(
    broker: LocalBroker,
    new_topic: Callable[..., str],
    api_version: Tuple[int, int, int],
    idempotence: bool,
) -> None:
    """Produce v3 (0.11), v8 (2.5) and v9 (2.8, the first flexible one): many requests in a
    row all go out and are acknowledged; librdkafka reads every record back. (A non-flexible
    frame used to end with an empty part, which kept the first request at the head of the
    send queue: nothing after it was written.)"""
    from cproducer import KafkaProducer

    topic = new_topic(3)
    p = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        api_version=api_version,
        enable_idempotence=idempotence,
        linger_ms=1,
    )
    try:
        futures = [p.send(topic, b"v%d" % i, key=b"%d" % i) for i in range(3000)]
        p.flush(30)
        offsets = [f.get(0).offset for f in futures]
    finally:
        p.close(5)
    assert len(offsets) == 3000
    got = read_back(broker.bootstrap_servers, topic, 3, 3000)
    assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(3000))
