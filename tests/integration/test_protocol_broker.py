"""Our protocol codecs against real brokers (Tansu and Apache Kafka), over a raw socket.

Requests go out as the network layer sends them (one ``sendmsg`` of the parts); record batches
are built by kafka-python's DefaultRecordBatchBuilder and read back by librdkafka, so both ends
of the bytes are checked by peers, not by our own code.

Where the two brokers answer differently, Apache Kafka's answer is the protocol's and Tansu's
is asserted as a Tansu fact (``is_tansu``): its node id 111; the 4 partitions it auto-creates at
once (Kafka answers UNKNOWN_TOPIC_OR_PARTITION and creates ``num.partitions`` a moment later);
CreateTopics v0-1 (Kafka 4 speaks v2 on, KIP-896); its answer to acks=0 Produce; its
DUPLICATE_SEQUENCE_NUMBER for a batch written before (Kafka acknowledges the duplicate with the
first write's offset); Produce to a partition or topic that does not exist, which it takes.
Kafka's own timing shows in the helpers: a new topic is in its Metadata a moment after it was
created, its partitions take writes a moment after Metadata shows their leader, and a fresh
broker answers InitProducerId COORDINATOR_LOAD_IN_PROGRESS until it has its producer ids.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from cproducer.errors import CorruptResponseError
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
from cproducer.protocol.produce import (
    LAST_VERSION_BEFORE_TRANSACTION_V2 as PRODUCE_LAST_VERSION_BEFORE_TRANSACTION_V2,
)
from tests.integration.conftest import Broker, is_tansu
from tests.integration.readback import assert_delivered, by_partition, read_back
from tests.tools.apache_kafka import ApacheKafka

TANSU_NODE_ID = 111  # a Tansu process reports itself as node 111, leader of every partition
TANSU_AUTO_CREATED_PARTITIONS = 4  # Tansu's auto-created topics have 4 partitions, at once
KAFKA_DEFAULT_NUM_PARTITIONS = "1"  # Kafka's num.partitions when the broker does not set it


def node_id(broker: Broker) -> int:
    """The broker's node id: Tansu's fixed one, or the Apache Kafka node's own."""
    if is_tansu(broker):
        return TANSU_NODE_ID
    assert isinstance(broker, ApacheKafka)
    return broker.node.node_id


def auto_created_partitions(broker: Broker) -> int:
    """How many partitions the broker gives a topic it auto-creates."""
    if is_tansu(broker):
        return TANSU_AUTO_CREATED_PARTITIONS
    assert isinstance(broker, ApacheKafka)
    return int(broker.node.properties.get("num.partitions", KAFKA_DEFAULT_NUM_PARTITIONS))


class Connection:
    """One broker connection speaking our codecs, with correlation ids checked."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
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

    def api_range(self, request_cls: Any) -> Tuple[int, int]:
        """The versions of ``request_cls``'s API the broker speaks (ApiVersions)."""
        resp = self.call(ApiVersionsRequest(), 3)
        return resp.api_versions[request_cls.API_KEY]  # type: ignore[no-any-return]

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

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@pytest.fixture
def conn(broker: Broker) -> Iterator[Connection]:
    with Connection(broker) as c:
        yield c


def listed_metadata(conn: Connection, topics: List[str], version: int) -> Any:
    """Metadata (no auto-creation asked) of ``topics`` once the broker lists them all, or its
    last answer after 10 s. Apache Kafka's Metadata learns of a new topic from the controller a
    moment after CreateTopics (or an auto-creation) was answered; Tansu's at once."""
    deadline = time.monotonic() + 10
    while True:
        md = conn.call(MetadataRequest(topics, allow_auto_topic_creation=False), version)
        unknown = [t for t in md.topics if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        if not unknown or time.monotonic() > deadline:
            return md
        time.sleep(0.02)


def init_producer_id(conn: Connection, version: int) -> Any:
    """InitProducerId, asked again while Apache Kafka answers COORDINATOR_LOAD_IN_PROGRESS: a
    fresh Kafka broker has no block of producer ids until the controller grants it one
    (AllocateProducerIds), and says so meanwhile. Tansu has its ids at once."""
    deadline = time.monotonic() + 10
    while True:
        resp = conn.call(InitProducerIdRequest(), version)
        loading = resp.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if not loading or is_tansu(conn.broker) or time.monotonic() > deadline:
            return resp
        time.sleep(0.02)


def unique(stem: str) -> str:
    return f"{stem}-{time.monotonic_ns()}-{random.randrange(1 << 30)}"


def batch(
    values: List[bytes],
    producer_id: int = -1,
    epoch: int = -1,
    base_sequence: int = -1,
    timestamp: Optional[int] = None,
) -> bytearray:
    """A v2 record batch of ``values`` (keys ``key-<i>``), every record stamped ``timestamp``
    (CreateTime, now by default)."""
    builder = DefaultRecordBatchBuilder(2, 0, False, producer_id, epoch, base_sequence, 1 << 20)
    now = int(time.time() * 1000) if timestamp is None else timestamp
    for i, value in enumerate(values):
        builder.append(i, now, b"key-%d" % i, value, [])
    return builder.build()


# --- ApiVersions ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(ApiVersionsRequest.MIN_VERSION, 4))
def test_api_versions_every_version(conn: Connection, broker: Broker, version: int) -> None:
    resp = conn.call(ApiVersionsRequest(), version)
    assert resp.error_code == 0 and resp.throttle_time_ms == 0
    # the broker speaks (at least) the whole range we speak of every API a producer uses; Tansu
    # has no transactions version 2, so its Produce stops at v11, the last version before it
    for cls in (ApiVersionsRequest, MetadataRequest, ProduceRequest, InitProducerIdRequest):
        top = cls.MAX_VERSION
        if cls is ProduceRequest and is_tansu(broker):
            top = PRODUCE_LAST_VERSION_BEFORE_TRANSACTION_V2
        lo, hi = resp.api_versions[cls.API_KEY]
        assert lo <= cls.MIN_VERSION and hi >= top
        assert choose_version(cls, resp.api_versions[cls.API_KEY]) == top
    assert resp.api_versions[CreateTopicsRequest.API_KEY][1] >= 7


def test_api_versions_v3_response_header_has_no_tagged_fields(conn: Connection) -> None:
    frame = memoryview(conn.raw_call(ApiVersionsRequest(), 3))
    # header v0: the correlation id, then the v3 body, which it fills exactly
    resp, left_over = decode_api_versions(3, frame[4:])
    assert resp.error_code == 0 and left_over == 0
    assert resp.api_versions[ApiVersionsRequest.API_KEY][1] >= 3


# --- Metadata ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 4, 5, 7, 8, 9, 10, 11, 12])
def test_metadata_auto_creates_the_topic(conn: Connection, broker: Broker, version: int) -> None:
    topic = unique(f"auto-v{version}")
    resp = conn.call(MetadataRequest([topic], allow_auto_topic_creation=True), version)
    me = node_id(broker)
    assert [(b.id, b.host, b.port) for b in resp.brokers] == [(me, broker.host, broker.port)]
    assert resp.controller_id == (me if version >= 1 else -1)
    assert (resp.cluster_id is not None) == (version >= 2)
    [t] = resp.topics
    if not is_tansu(broker):
        # Kafka has the controller create it and answers before it exists; the next answers
        # show it with num.partitions partitions
        assert (t.error_code, t.name, t.is_internal, t.partitions) == (3, topic, False, [])
        assert t.topic_id == bytes(16)
        [t] = listed_metadata(conn, [topic], version).topics
    # Tansu creates it before answering the first time, with 4 partitions
    assert (t.error_code, t.name, t.is_internal) == (0, topic, False)
    assert sorted(p.partition for p in t.partitions) == list(range(auto_created_partitions(broker)))
    for p in t.partitions:
        assert p.error_code == 0 and p.leader_id == me
        assert p.replica_ids == [me] and p.isr_ids == [me]
        assert p.offline_replica_ids == []
        assert (p.leader_epoch >= 0) == (version >= 7)  # -1: not in the version
    assert (t.topic_id != bytes(16)) == (version >= 10)


@pytest.mark.parametrize("version", [1, 4, 7, 9, 12])
@pytest.mark.parametrize("partitions", [1, 3, 16])
def test_metadata_of_created_topic(
    conn: Connection,
    broker: Broker,
    new_topic: Callable[..., str],
    version: int,
    partitions: int,
) -> None:
    topic = new_topic(partitions=partitions)
    resp = conn.call(MetadataRequest([topic], allow_auto_topic_creation=False), version)
    [t] = resp.topics
    assert t.error_code == 0 and t.name == topic
    assert sorted(p.partition for p in t.partitions) == list(range(partitions))
    assert {p.leader_id for p in t.partitions} == {node_id(broker)}
    assert all((p.leader_epoch >= 0) == (version >= 7) for p in t.partitions)


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
def test_create_topics_every_version(conn: Connection, broker: Broker, version: int) -> None:
    names = [unique(f"ct-v{version}-a"), unique(f"ct-v{version}-b")]
    req = CreateTopicsRequest(
        [NewTopic(names[0], 3), NewTopic(names[1], 5, 1, {"retention.ms": "3600000"})]
    )
    lo, hi = conn.api_range(CreateTopicsRequest)
    assert (lo, hi) == ((0, 7) if is_tansu(broker) else (2, 7))
    if version < lo:
        # Kafka 4 dropped CreateTopics v0-1 (KIP-896): a request in a version the broker does
        # not speak gets no answer, the connection is closed, nothing is created
        conn.send(req, version)
        with pytest.raises(ConnectionError):
            conn.recv_frame()
        with Connection(broker) as again:
            md = again.call(MetadataRequest(names, allow_auto_topic_creation=False), 12)
        assert sorted((t.name, t.error_code) for t in md.topics) == sorted(
            (n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for n in names
        )
        return
    resp = conn.call(req, version)
    assert [(t.name, t.error_code) for t in resp.topics] == [(names[0], 0), (names[1], 0)]
    assert [t.num_partitions for t in resp.topics] == ([3, 5] if version >= 5 else [-1, -1])
    md = listed_metadata(conn, names, 12)
    assert {t.name: len(t.partitions) for t in md.topics} == {names[0]: 3, names[1]: 5}
    # again: TOPIC_ALREADY_EXISTS, with a message from v1 on
    [dup] = conn.call(CreateTopicsRequest([NewTopic(names[0], 3)]), version).topics
    assert dup.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert (dup.error_message is not None) == (version >= 1)


# --- InitProducerId ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 4])
def test_init_producer_id_gives_fresh_ids(conn: Connection, version: int) -> None:
    first = init_producer_id(conn, version)
    second = init_producer_id(conn, version)
    for resp in (first, second):
        assert resp.error_code == 0 and resp.throttle_time_ms == 0
        assert resp.producer_id >= 0 and resp.producer_epoch == 0
    assert first.producer_id != second.producer_id


# --- Produce ----------------------------------------------------------------------------------


def test_produce_every_version_read_back_by_librdkafka(
    conn: Connection, broker: Broker, new_topic: Callable[..., str]
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
            assert r.base_offset == len(sent[p]), (version, p, r)  # on across versions
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
    conn: Connection, broker: Broker, new_topic: Callable[..., str]
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


@pytest.mark.parametrize("version", [3, 9, 11])
def test_produce_to_a_partition_that_does_not_exist(
    conn: Connection, broker: Broker, new_topic: Callable[..., str], version: int
) -> None:
    topic, absent = new_topic(partitions=1), unique("absent")
    req = ProduceRequest(1, 10000, {topic: [(1, batch([b"p1"]))], absent: [(0, batch([b"t"]))]})
    resp = conn.call(req, version)
    answers = {k: (v.error_code, v.base_offset) for k, v in resp.responses.items()}
    md = conn.call(MetadataRequest([topic, absent], allow_auto_topic_creation=False), 12)
    listed = {t.name: (t.error_code, len(t.partitions)) for t in md.topics}
    if is_tansu(broker):
        # Tansu checks neither: it appends to partition 1 of a 1-partition topic and to a
        # topic nobody created, and lists neither afterwards
        assert answers == {(topic, 1): (0, 0), (absent, 0): (0, 0)}
    else:
        # Kafka: UNKNOWN_TOPIC_OR_PARTITION for both, nothing created (Produce never creates)
        assert answers == {(topic, 1): (3, -1), (absent, 0): (3, -1)}
        assert [r.log_start_offset for r in resp.responses.values()] == [-1, -1]
    assert listed == {topic: (0, 1), absent: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)}


@pytest.mark.parametrize("version", [3, 9])
def test_acks_zero_produce(
    conn: Connection, broker: Broker, new_topic: Callable[..., str], version: int
) -> None:
    topic = new_topic(partitions=1)
    req = ProduceRequest(0, 10000, {topic: [(0, batch([b"fire", b"and", b"forget"]))]})
    assert not req.expect_response()
    produce_cid = conn.send(req, version)
    md = MetadataRequest([topic], allow_auto_topic_creation=False)
    md_cid = conn.send(md, 12)
    frame = memoryview(conn.recv_frame())
    if is_tansu(broker):
        # Tansu answers acks=0 anyway: a normal Produce answer, in order, before Metadata's
        flexible = is_flexible(ProduceRequest, version)
        cid, body = decode_response_header(ProduceRequest.API_KEY, flexible, frame)
        assert cid == produce_cid
        answer = decode_response(req, version, body).responses[(topic, 0)]
        assert (answer.error_code, answer.base_offset) == (0, 0)
        frame = memoryview(conn.recv_frame())
    # Kafka sends nothing for acks=0: the next frame on the connection is Metadata's answer
    cid, body = decode_response_header(md.API_KEY, True, frame)
    assert cid == md_cid
    assert decode_response(md, 12, body).topics[0].name == topic
    got = read_back(broker.bootstrap_servers, topic, 1, 3)
    assert [r.value for r in got] == [b"fire", b"and", b"forget"]


def test_idempotent_produce_sequence_errors(
    conn: Connection, broker: Broker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=1)
    pid = init_producer_id(conn, 4)
    assert pid.error_code == 0
    a_minute_ago = int(time.time() * 1000) - 60_000  # the first write's stamp, not a resend's

    def produce(seq: int, n: int, timestamp: Optional[int] = None) -> Any:
        b = batch([b"x%d" % i for i in range(n)], pid.producer_id, pid.producer_epoch, seq,
                  timestamp)  # fmt: skip
        resp = conn.call(ProduceRequest(-1, 10000, {topic: [(0, b)]}), 9)
        return resp.responses[(topic, 0)]

    first = produce(0, 3, a_minute_ago)
    assert (first.error_code, first.base_offset, first.log_append_time_ms) == (0, 0, -1)
    dup = produce(0, 3)  # the same sequence numbers again, stamped now
    if is_tansu(broker):
        assert dup.error_code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER
    else:
        # Kafka acknowledges a resent batch as the first write was: its base offset, and that
        # write's (max) timestamp in log_append_time_ms; it appends nothing
        assert (dup.error_code, dup.base_offset, dup.log_append_time_ms) == (0, 0, a_minute_ago)
    assert produce(7, 1).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # a gap
    nxt = produce(3, 2)
    assert (nxt.error_code, nxt.base_offset) == (0, 3)
    # an old sequence number that starts none of the written batches
    older = produce(1, 1).error_code
    if is_tansu(broker):
        assert older == ErrorCode.DUPLICATE_SEQUENCE_NUMBER
    else:
        assert older == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    got = read_back(broker.bootstrap_servers, topic, 1, 5)
    assert [(r.offset, r.value) for r in got] == list(
        enumerate([b"x0", b"x1", b"x2", b"x0", b"x1"])
    )


# --- Garbage: real responses, truncated and corrupted -----------------------------------------


def _real_responses(conn: Connection, topic: str) -> List[Tuple[Any, int, bytes]]:
    """(request, version, response frame) for a spread of APIs and versions."""
    calls: List[Tuple[Any, int]] = [(ApiVersionsRequest(), v) for v in range(4)]
    calls += [(MetadataRequest([topic], False), v) for v in (0, 1, 5, 8, 9, 10, 12)]
    calls += [(InitProducerIdRequest(), v) for v in (3, 4)]
    lo = conn.api_range(CreateTopicsRequest)[0]  # Kafka 4: v2 on
    calls += [(CreateTopicsRequest([NewTopic(topic, 2)]), v) for v in (0, 2, 4, 5, 7) if v >= lo]
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
    broker: Broker,
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
        partitions = [f.get(0).partition for f in futures]
    finally:
        p.close(5)
    assert len(offsets) == 3000
    got = read_back(broker.bootstrap_servers, topic, 3, 3000)
    assert_delivered(got, [b"v%d" % i for i in range(3000)], partitions=partitions)
