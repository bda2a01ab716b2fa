"""Protocol primitives and codecs without a broker: round trips, truncation, garbage."""

from __future__ import annotations

import random
import uuid
from typing import Any, Iterator, List, Optional, Tuple

import kafka.protocol.admin as k_admin
import kafka.protocol.metadata as k_metadata
import kafka.protocol.producer as k_producer
import pytest

from cproducer import __version__
from cproducer.cluster import Node
from cproducer.errors import CorruptResponseError, UnsupportedVersionError
from cproducer.protocol import (
    KEY_TYPE_TRANSACTION,
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    ApiVersionsRequest,
    CreateTopicsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    MetadataRequest,
    NewTopic,
    ProduceRequest,
    Reader,
    TxnOffsetCommitRequest,
    Writer,
    choose_version,
    decode_response,
    decode_response_header,
    encode_request,
    is_flexible,
)


class K:
    """kafka-python's message classes (a peer implementation of the same schemas)."""

    ApiVersionsRequest: Any = k_metadata.ApiVersionsRequest
    ApiVersionsResponse: Any = k_metadata.ApiVersionsResponse
    MetadataRequest: Any = k_metadata.MetadataRequest
    MetadataResponse: Any = k_metadata.MetadataResponse
    ProduceRequest: Any = k_producer.ProduceRequest
    ProduceResponse: Any = k_producer.ProduceResponse
    InitProducerIdRequest: Any = k_producer.InitProducerIdRequest
    InitProducerIdResponse: Any = k_producer.InitProducerIdResponse
    CreateTopicsRequest: Any = k_admin.CreateTopicsRequest
    CreateTopicsResponse: Any = k_admin.CreateTopicsResponse


def test_round_trip_of_every_type() -> None:
    w = Writer()
    w.int8(-5).boolean(True).int16(-300).int32(-70000).uint32(2**32 - 1).int64(-(2**40))
    for v in (0, 1, 127, 128, 16383, 16384, 2**31, 2**63 - 1):
        w.uvarint(v)
    for v in (0, -1, 1, -64, 63, -(2**31), 2**31 - 1):
        w.varint(v)
    w.string("héllo").string(None, nullable=True).string("c", compact=True)
    w.string(None, compact=True, nullable=True).bytes_(b"xyz").bytes_(None).bytes_(
        b"", compact=True
    )
    w.array([1, 2, 3], lambda w, x: w.int32(x)).array(None, lambda w, x: None, compact=True)
    w.tagged_fields().uuid(b"u" * 16)
    r = Reader(w.getvalue())
    assert (r.int8(), r.boolean(), r.int16(), r.int32(), r.uint32(), r.int64()) == (
        -5,
        True,
        -300,
        -70000,
        2**32 - 1,
        -(2**40),
    )
    assert [r.uvarint() for _ in range(8)] == [0, 1, 127, 128, 16383, 16384, 2**31, 2**63 - 1]
    assert [r.varint() for _ in range(7)] == [0, -1, 1, -64, 63, -(2**31), 2**31 - 1]
    assert (r.string(), r.string(), r.string(True), r.string(True)) == ("héllo", None, "c", None)
    assert (r.bytes_(), r.bytes_(), r.bytes_(True)) == (b"xyz", None, b"")
    assert r.array(lambda r: r.int32()) == [1, 2, 3]
    assert r.array(lambda r: r.int32(), compact=True) is None
    r.tagged_fields()
    assert r.uuid() == b"u" * 16 and r.remaining() == 0


def test_truncation_raises_corrupt_response() -> None:
    data = Writer().int32(7).string("abcdef").getvalue()
    for cut in range(len(data)):
        r = Reader(data[:cut])
        with pytest.raises(CorruptResponseError):
            r.int32()
            r.string()
    with pytest.raises(CorruptResponseError, match="cannot fit"):
        Reader(Writer().int32(1_000_000).getvalue()).array_length()


def test_a_field_cut_short_or_not_utf8_leaves_pos_at_its_start() -> None:
    # a string, a compact string and bytes, each cut one byte short, after a 2-byte prefix
    for data, read in (
        (Writer().int16(9).string("abcdef").getvalue()[:-1], lambda r: r.string()),
        (
            Writer().int16(9).string("abcdef", compact=True).getvalue()[:-1],
            lambda r: r.string(compact=True),
        ),
        (Writer().int16(9).bytes_(b"abcdef").getvalue()[:-1], lambda r: r.bytes_()),
        (Writer().int16(9).getvalue() + b"\x00\x02\xff\xfe", lambda r: r.string()),
    ):
        r = Reader(data)
        assert r.int16() == 9
        with pytest.raises(CorruptResponseError):
            read(r)
        assert r.pos == 2


def test_produce_request_passes_batches_through_uncopied() -> None:
    batch = memoryview(bytearray(b"B" * 1000))
    req = ProduceRequest(-1, 30000, {"t": [(0, batch), (1, batch)]})
    for version in (3, 8, 9):
        parts = encode_request(req, version, 42, "cid")
        assert sum(p is batch for p in parts) == 2  # the batch itself, twice, not a copy
        frame = b"".join(bytes(p) for p in parts)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4


def test_garbage_response_bodies_raise_corrupt_response() -> None:
    for version in (1, 7, 9, 12):
        with pytest.raises(CorruptResponseError):
            decode_response(MetadataRequest(["t"]), version, memoryview(b"\x00\x01\x02"))
    with pytest.raises(CorruptResponseError):
        decode_response_header(3, True, memoryview(b"\x00\x00"))
    # a flexible header with a tagged field that claims more bytes than there are
    with pytest.raises(CorruptResponseError):
        decode_response_header(3, True, memoryview(b"\x00\x00\x00\x01\x01\x00\x7f"))


def test_varint_edge_values() -> None:
    cases = {
        0: b"\x00",
        -1: b"\x01",
        1: b"\x02",
        -64: b"\x7f",
        64: b"\x80\x01",
        2**31 - 1: b"\xfe\xff\xff\xff\x0f",
        -(2**31): b"\xff\xff\xff\xff\x0f",
        2**63 - 1: b"\xfe" + b"\xff" * 8 + b"\x01",
        -(2**63): b"\xff" * 9 + b"\x01",
    }
    for value, wire in cases.items():
        assert Writer().varint(value).getvalue() == wire, value
        r = Reader(wire)
        assert (r.varint(), r.remaining()) == (value, 0)
    assert Writer().uvarint(2**64 - 1).getvalue() == b"\xff" * 9 + b"\x01"
    with pytest.raises(ValueError, match="unsigned varint"):
        Writer().uvarint(-1)
    with pytest.raises(CorruptResponseError, match="too long"):
        Reader(b"\xff" * 11).uvarint()
    with pytest.raises(CorruptResponseError, match="truncated"):
        Reader(b"\x80\x80").uvarint()


def test_non_nullable_string_refuses_none_and_bad_utf8_is_corrupt() -> None:
    with pytest.raises(ValueError, match="non-nullable"):
        Writer().string(None)
    with pytest.raises(CorruptResponseError, match="UTF-8"):
        Reader(b"\x00\x02\xff\xfe").string()


def test_choose_version() -> None:
    assert choose_version(ProduceRequest, (0, 13)) == 12
    assert choose_version(ProduceRequest, (0, 9)) == 9
    assert choose_version(ProduceRequest, (0, 5)) == 5
    assert choose_version(MetadataRequest, (0, 0)) == 0
    with pytest.raises(
        UnsupportedVersionError, match=r"ProduceRequest: we speak v3-12, the broker v0-2"
    ):
        choose_version(ProduceRequest, (0, 2))
    with pytest.raises(UnsupportedVersionError, match="does not support InitProducerIdRequest"):
        choose_version(InitProducerIdRequest, None)


def test_request_header_layout() -> None:
    # size, api key 3, version 9 (flexible: header v2), correlation id, client id (int16 length,
    # never compact), empty tagged fields; then the body
    frame = _ours(MetadataRequest(None), 9)
    assert frame[:4] == (len(frame) - 4).to_bytes(4, "big")
    assert frame[4:20] == b"\x00\x03\x00\x09\x00\x00\x00\x4d\x00\x08client-x\x00"[:16]
    assert frame[4:23] == b"\x00\x03\x00\x09\x00\x00\x00\x4d\x00\x08client-x\x00"
    # null client id
    parts = encode_request(MetadataRequest(None), 1, 5, None)
    assert bytes(parts[0])[4:14] == b"\x00\x03\x00\x01\x00\x00\x00\x05\xff\xff"


# --- Peer check: kafka-python 3's codecs, generated from the same Kafka JSON schemas -----------


def _ours(req: Any, version: int) -> bytes:
    return b"".join(bytes(p) for p in encode_request(req, version, 77, "client-x"))


def _theirs(msg: Any, version: int) -> bytes:
    msg.with_header(77, "client-x")
    return bytes(msg.encode(version, header=True, framed=True))


def _their_response(msg: Any, version: int) -> memoryview:
    """A response as a broker sends it, size prefix removed (header v0/v1 as the peer chooses)."""
    msg.API_VERSION = version  # before the header: the peer cannot re-version a response header
    msg.with_header(correlation_id=4242)
    return memoryview(bytes(msg.encode(header=True)))


def _decode_ours(req: Any, version: int, frame: memoryview) -> Any:
    cid, body = decode_response_header(req.API_KEY, is_flexible(type(req), version), frame)
    assert cid == 4242
    return decode_response(req, version, body)


@pytest.mark.parametrize("version", range(0, 13))
@pytest.mark.parametrize("topics", [["a", "topic-bb"], None, []])
def test_metadata_request_bytes_match_peer(version: int, topics: Optional[List[str]]) -> None:
    ours = MetadataRequest(topics, allow_auto_topic_creation=version % 2 == 0)
    if version == 0 and topics == []:
        with pytest.raises(UnsupportedVersionError):
            _ours(ours, version)
        return
    peer_topics = (
        None if topics is None else [K.MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
    )
    if version == 0 and topics is None:
        peer_topics = []  # v0: empty = all topics
    peer = K.MetadataRequest(
        topics=peer_topics,
        allow_auto_topic_creation=version % 2 == 0,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    assert _ours(ours, version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 4))
def test_api_versions_request_bytes_match_peer(version: int) -> None:
    peer = K.ApiVersionsRequest(
        client_software_name="cproducer", client_software_version=__version__
    )
    assert _ours(ApiVersionsRequest(), version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(3, 12))
@pytest.mark.parametrize("transactional_id", [None, "tx-1"])
def test_produce_request_bytes_match_peer(version: int, transactional_id: Optional[str]) -> None:
    b1, b2, b3 = b"\x01" * 70, memoryview(bytearray(b"\x02" * 5)), b"\x03" * 300
    ours = ProduceRequest(1, 1500, {"t1": [(0, b1), (3, b2)], "t2": [(7, b3)]}, transactional_id)
    tpd = K.ProduceRequest.TopicProduceData
    ppd = tpd.PartitionProduceData
    peer = K.ProduceRequest(
        transactional_id=transactional_id,
        acks=1,
        timeout_ms=1500,
        topic_data=[
            tpd(
                name="t1",
                partition_data=[ppd(index=0, records=b1), ppd(index=3, records=bytes(b2))],
            ),
            tpd(name="t2", partition_data=[ppd(index=7, records=b3)]),
        ],
    )
    assert _ours(ours, version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 6))
@pytest.mark.parametrize("transactional_id", [None, "tx-1"])
def test_init_producer_id_request_bytes_match_peer(
    version: int, transactional_id: Optional[str]
) -> None:
    ours = InitProducerIdRequest(transactional_id, 45000, 12345678901, 7)
    peer = K.InitProducerIdRequest(
        transactional_id=transactional_id,
        transaction_timeout_ms=45000,
        producer_id=12345678901,
        producer_epoch=7,
    )
    assert _ours(ours, version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(2, 8))  # the peer speaks 2-7 (Kafka 4 dropped 0-1)
def test_create_topics_request_bytes_match_peer(version: int) -> None:
    ours = CreateTopicsRequest(
        [
            NewTopic("x", 3),
            NewTopic("y", 1, 2, {"retention.ms": "1000", "cleanup.policy": "compact"}),
        ],
        timeout_ms=2500,
        validate_only=True,
    )
    ct = K.CreateTopicsRequest.CreatableTopic
    cfg = ct.CreatableTopicConfig
    peer = K.CreateTopicsRequest(
        topics=[
            ct(name="x", num_partitions=3, replication_factor=1, assignments=[], configs=[]),
            ct(
                name="y",
                num_partitions=1,
                replication_factor=2,
                assignments=[],
                configs=[
                    cfg(name="retention.ms", value="1000"),
                    cfg(name="cleanup.policy", value="compact"),
                ],
            ),
        ],
        timeout_ms=2500,
        validate_only=True,
    )
    assert _ours(ours, version) == _theirs(peer, version)


def _peer_api_versions() -> Any:
    av = K.ApiVersionsResponse.ApiVersion
    return K.ApiVersionsResponse(
        error_code=0,
        api_keys=[
            av(api_key=0, min_version=3, max_version=11),
            av(api_key=18, min_version=0, max_version=4),
        ],
        throttle_time_ms=17,
        # tagged fields in v3 that we do not read: skipped
        supported_features=[
            K.ApiVersionsResponse.SupportedFeatureKey(
                name="metadata.version", min_version=1, max_version=20
            )
        ],
        finalized_features_epoch=5,
        zk_migration_ready=True,
    )


@pytest.mark.parametrize("version", range(0, 4))
def test_api_versions_response_from_peer(version: int) -> None:
    resp = _decode_ours(
        ApiVersionsRequest(), version, _their_response(_peer_api_versions(), version)
    )
    assert resp.error_code == 0
    assert resp.api_versions == {0: (3, 11), 18: (0, 4)}
    assert resp.throttle_time_ms == (17 if version >= 1 else 0)


@pytest.mark.parametrize("version", range(1, 4))
def test_api_versions_unsupported_version_answer_in_v0_layout(version: int) -> None:
    """A Kafka broker answers an ApiVersions version it does not know with error 35 in the v0
    layout (and header v0); we read its ranges so the client can retry with its highest."""
    av = K.ApiVersionsResponse.ApiVersion
    peer = K.ApiVersionsResponse(
        error_code=35, api_keys=[av(api_key=18, min_version=0, max_version=2)]
    )
    resp = _decode_ours(ApiVersionsRequest(), version, _their_response(peer, 0))
    assert (resp.error_code, resp.api_versions) == (35, {18: (0, 2)})
    # our own layout with error 35 is read as well
    peer = K.ApiVersionsResponse(
        error_code=35, api_keys=[av(api_key=18, min_version=0, max_version=2)], throttle_time_ms=3
    )
    resp = _decode_ours(ApiVersionsRequest(), version, _their_response(peer, version))
    assert (resp.error_code, resp.api_versions, resp.throttle_time_ms) == (35, {18: (0, 2)}, 3)


def _peer_metadata(version: int) -> Any:
    r = K.MetadataResponse
    part = r.MetadataResponseTopic.MetadataResponsePartition
    return r(
        throttle_time_ms=9,
        brokers=[
            r.MetadataResponseBroker(node_id=1, host="h1", port=9092, rack="r1"),
            r.MetadataResponseBroker(node_id=2, host="h2", port=9093, rack=None),
        ],
        cluster_id="cl",
        controller_id=2,
        topics=[
            r.MetadataResponseTopic(
                error_code=0,
                name="t",
                topic_id=uuid.UUID(bytes=b"I" * 16),
                is_internal=True,
                partitions=[
                    part(
                        error_code=0,
                        partition_index=0,
                        leader_id=1,
                        leader_epoch=4,
                        replica_nodes=[1, 2],
                        isr_nodes=[1],
                        offline_replicas=[2],
                    ),
                    part(
                        error_code=9,
                        partition_index=1,
                        leader_id=-1,
                        leader_epoch=5,
                        replica_nodes=[2],
                        isr_nodes=[],
                        offline_replicas=[],
                    ),
                ],
                authorized_operations={3, 4},
            ),
            r.MetadataResponseTopic(error_code=3, name="gone", partitions=[]),
        ],
        authorized_operations={7},
    )


@pytest.mark.parametrize("version", range(0, 13))
def test_metadata_response_from_peer(version: int) -> None:
    resp = _decode_ours(
        MetadataRequest(["t"]), version, _their_response(_peer_metadata(version), version)
    )
    assert resp.throttle_time_ms == (9 if version >= 3 else 0)
    assert resp.brokers == [
        Node(1, "h1", 9092, "r1" if version >= 1 else None),
        Node(2, "h2", 9093, None),
    ]
    assert resp.cluster_id == ("cl" if version >= 2 else None)
    assert resp.controller_id == (2 if version >= 1 else -1)
    t, gone = resp.topics
    assert (gone.error_code, gone.name, gone.partitions) == (3, "gone", [])
    assert (t.error_code, t.name, t.is_internal) == (0, "t", version >= 1)
    assert t.topic_id == (b"I" * 16 if version >= 10 else bytes(16))
    p0, p1 = t.partitions
    assert (p0.partition, p0.leader_id, p0.replica_ids, p0.isr_ids) == (0, 1, [1, 2], [1])
    assert p0.leader_epoch == (4 if version >= 7 else -1)
    assert p0.offline_replica_ids == ([2] if version >= 5 else [])
    assert (p1.error_code, p1.partition, p1.leader_id, p1.isr_ids) == (9, 1, -1, [])


def _peer_produce() -> Any:
    r = K.ProduceResponse
    ppr = r.TopicProduceResponse.PartitionProduceResponse
    return r(
        responses=[
            r.TopicProduceResponse(
                name="t1",
                partition_responses=[
                    ppr(
                        index=0,
                        error_code=0,
                        base_offset=10**12,
                        log_append_time_ms=-1,
                        log_start_offset=5,
                    ),
                    ppr(
                        index=3,
                        error_code=87,
                        base_offset=-1,
                        log_append_time_ms=1700000000000,
                        log_start_offset=-1,
                        record_errors=[
                            ppr.BatchIndexAndErrorMessage(
                                batch_index=2, batch_index_error_message="bad"
                            ),
                            ppr.BatchIndexAndErrorMessage(
                                batch_index=4, batch_index_error_message=None
                            ),
                        ],
                        error_message="invalid record",
                    ),
                ],
            ),
            r.TopicProduceResponse(
                name="t2", partition_responses=[ppr(index=1, error_code=0, base_offset=0)]
            ),
        ],
        throttle_time_ms=250,
    )


@pytest.mark.parametrize("version", range(3, 12))
def test_produce_response_from_peer(version: int) -> None:
    peer = _peer_produce()
    resp = _decode_ours(ProduceRequest(1, 1000, {}), version, _their_response(peer, version))
    assert set(resp.responses) == {("t1", 0), ("t1", 3), ("t2", 1)}
    ok, bad = resp.responses[("t1", 0)], resp.responses[("t1", 3)]
    assert (ok.error_code, ok.base_offset, ok.log_append_time_ms) == (0, 10**12, -1)
    assert ok.log_start_offset == (5 if version >= 5 else -1)
    assert (bad.error_code, bad.base_offset, bad.log_append_time_ms) == (87, -1, 1700000000000)
    if version >= 8:
        assert bad.record_errors == [(2, "bad"), (4, None)]
        assert bad.error_message == "invalid record"
    else:
        assert (bad.record_errors, bad.error_message) == ([], None)
    assert resp.throttle_time_ms == 250
    assert ok.current_leader is None and bad.current_leader is None and resp.node_endpoints == []


def _peer_produce_with_leader_hints() -> Any:
    """A v10+ answer as a broker gives it after a leader move (KIP-951): NOT_LEADER_OR_FOLLOWER
    with the new leader in the partition's CurrentLeader, its endpoint in NodeEndpoints."""
    r = K.ProduceResponse
    ppr = r.TopicProduceResponse.PartitionProduceResponse
    return r(
        responses=[
            r.TopicProduceResponse(
                name="t1",
                partition_responses=[
                    ppr(
                        index=2,
                        error_code=6,
                        base_offset=-1,
                        error_message="not the leader",
                        current_leader=ppr.LeaderIdAndEpoch(leader_id=7, leader_epoch=12),
                    ),
                    ppr(index=5, error_code=0, base_offset=99),
                ],
            )
        ],
        throttle_time_ms=0,
        node_endpoints=[
            r.NodeEndpoint(node_id=7, host="broker-7.example", port=9093, rack="rack-b"),
            r.NodeEndpoint(node_id=8, host="::1", port=19092, rack=None),
        ],
    )


@pytest.mark.parametrize("version", range(3, 12))
def test_produce_response_leader_hints_from_peer(version: int) -> None:
    peer = _peer_produce_with_leader_hints()
    resp = _decode_ours(ProduceRequest(1, 1000, {}), version, _their_response(peer, version))
    moved, ok = resp.responses[("t1", 2)], resp.responses[("t1", 5)]
    assert (moved.error_code, ok.error_code, ok.base_offset) == (6, 0, 99)
    if version >= 10:
        assert moved.current_leader == (7, 12)
        assert ok.current_leader in (None, (-1, -1))  # the peer may write the default
        assert resp.node_endpoints == [
            Node(7, "broker-7.example", 9093, "rack-b"),
            Node(8, "::1", 19092, None),
        ]
    else:  # no such fields before v10: the peer leaves them out
        assert moved.current_leader is None and resp.node_endpoints == []


def test_produce_response_tagged_fields_are_checked() -> None:
    """Unknown tags are skipped; a known tag whose declared size disagrees with its content is a
    CorruptResponseError (too long, too short)."""

    def answer(top_tags: bytes) -> memoryview:
        w = Writer()
        w.array_length(1, True).string("t", compact=True).array_length(1, True)
        w.int32(0).int16(6).int64(-1).int64(-1).int64(-1)
        w.array_length(0, True).string(None, compact=True, nullable=True)
        w.uvarint(2)  # two tagged fields: an unknown one (tag 5), then CurrentLeader (tag 0)
        w.uvarint(5).uvarint(3).raw(b"xyz")
        w.uvarint(0).uvarint(9).int32(3).int32(4).tagged_fields()
        w.tagged_fields()  # end of the topic
        w.int32(0)
        w.raw(top_tags)
        return memoryview(bytes(w.buf))

    endpoint = Writer().array_length(1, True).int32(3).string("h", compact=True).int32(1)
    endpoint.string(None, compact=True, nullable=True).tagged_fields()
    good = Writer().uvarint(1).uvarint(0).uvarint(len(endpoint.buf)).raw(endpoint.buf).buf
    resp = ProduceRequest.decode_response(10, answer(bytes(good)))
    assert resp.responses[("t", 0)].current_leader == (3, 4)
    assert resp.node_endpoints == [Node(3, "h", 1, None)]
    padded = Writer().uvarint(1).uvarint(0).uvarint(len(endpoint.buf) + 1)
    padded.raw(endpoint.buf).raw(b"\x00")
    with pytest.raises(CorruptResponseError, match="tagged field 0 is .* 1 unread"):
        ProduceRequest.decode_response(10, answer(bytes(padded.buf)))
    short = Writer().uvarint(1).uvarint(0).uvarint(len(endpoint.buf) - 1)
    short.raw(endpoint.buf[:-1])
    with pytest.raises(CorruptResponseError):
        ProduceRequest.decode_response(10, answer(bytes(short.buf)))


@pytest.mark.parametrize("version", range(0, 6))
def test_init_producer_id_response_from_peer(version: int) -> None:
    peer = K.InitProducerIdResponse(
        throttle_time_ms=1, error_code=0, producer_id=2**40 + 3, producer_epoch=32000
    )
    resp = _decode_ours(InitProducerIdRequest(), version, _their_response(peer, version))
    assert resp == InitProducerIdResponse(1, 0, 2**40 + 3, 32000)


def _peer_create_topics() -> Any:
    r = K.CreateTopicsResponse.CreatableTopicResult
    return K.CreateTopicsResponse(
        throttle_time_ms=4,
        topics=[
            r(
                name="x",
                topic_id=uuid.UUID(bytes=b"T" * 16),
                error_code=0,
                error_message=None,
                topic_config_error_code=29,  # a tagged field (v5+): skipped
                num_partitions=6,
                replication_factor=1,
                configs=[
                    r.CreatableTopicConfigs(
                        name="retention.ms",
                        value="1",
                        read_only=False,
                        config_source=5,
                        is_sensitive=False,
                    ),
                    r.CreatableTopicConfigs(
                        name="secret",
                        value=None,
                        read_only=True,
                        config_source=1,
                        is_sensitive=True,
                    ),
                ],
            ),
            r(name="y", error_code=36, error_message="exists", configs=None),
        ],
    )


@pytest.mark.parametrize("version", range(2, 8))
def test_create_topics_response_from_peer(version: int) -> None:
    peer = _peer_create_topics()
    resp = _decode_ours(CreateTopicsRequest([]), version, _their_response(peer, version))
    assert resp.throttle_time_ms == 4
    x, y = resp.topics
    assert (x.name, x.error_code, x.error_message) == ("x", 0, None)
    assert x.num_partitions == (6 if version >= 5 else -1)
    assert (y.name, y.error_code, y.error_message) == ("y", 36, "exists")


def _peer_frames() -> Iterator[Tuple[Any, int, memoryview]]:
    for v in range(0, 4):
        yield ApiVersionsRequest(), v, _their_response(_peer_api_versions(), v)
    for v in range(0, 13):
        yield MetadataRequest(["t"]), v, _their_response(_peer_metadata(v), v)
    for v in range(3, 12):
        yield ProduceRequest(1, 1000, {}), v, _their_response(_peer_produce(), v)
    for v in range(10, 12):
        peer = _peer_produce_with_leader_hints()
        yield ProduceRequest(1, 1000, {}), v, _their_response(peer, v)
    for v in range(0, 6):
        peer = K.InitProducerIdResponse(throttle_time_ms=1, producer_id=5, producer_epoch=1)
        yield InitProducerIdRequest(), v, _their_response(peer, v)
    for v in range(2, 8):
        yield CreateTopicsRequest([]), v, _their_response(_peer_create_topics(), v)
    yield from _peer_txn_frames()


def test_every_truncation_of_peer_responses_raises_corrupt_response() -> None:
    for req, version, frame in _peer_frames():
        _decode_ours(req, version, frame)
        for cut in range(len(frame)):
            with pytest.raises(CorruptResponseError):
                _decode_ours(req, version, frame[:cut])
                pytest.fail(f"{type(req).__name__} v{version} cut at {cut} of {len(frame)} decoded")


def test_corrupted_peer_responses_raise_only_corrupt_response() -> None:
    rng = random.Random(7)
    for req, version, frame in _peer_frames():
        for _ in range(300):
            bad = bytearray(frame)
            for _ in range(rng.randint(1, 3)):
                bad[rng.randrange(4, len(bad))] = rng.randrange(256)  # keep the correlation id
            try:  # the request's own decoder, not only the wrapper that converts stray errors
                flexible = is_flexible(type(req), version)
                _cid, body = decode_response_header(req.API_KEY, flexible, memoryview(bytes(bad)))
                req.decode_response(version, body)
            except CorruptResponseError as exc:
                assert str(exc)  # a message, not a bare exception


# --- the transactional APIs ---------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 6))
def test_find_coordinator_request_bytes_match_peer(version: int) -> None:
    ours = FindCoordinatorRequest("tx-é", KEY_TYPE_TRANSACTION)
    if version >= 4:
        peer = k_metadata.FindCoordinatorRequest(key_type=1, coordinator_keys=["tx-é"])
    else:
        peer = k_metadata.FindCoordinatorRequest(key="tx-é", key_type=1)
    assert _ours(ours, version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 6))
def test_find_coordinator_response_from_peer(version: int) -> None:
    cls: Any = k_metadata.FindCoordinatorResponse
    if version >= 4:
        peer = cls(
            throttle_time_ms=3,
            coordinators=[
                cls.Coordinator(
                    key="tx",
                    node_id=9,
                    host="h.example",
                    port=9093,
                    error_code=0,
                    error_message=None,
                )
            ],
        )
    else:
        peer = cls(
            throttle_time_ms=3,
            error_code=15,
            error_message="m",
            node_id=9,
            host="h.example",
            port=9093,
        )
    resp = _decode_ours(FindCoordinatorRequest("tx"), version, _their_response(peer, version))
    assert (resp.node_id, resp.host, resp.port) == (9, "h.example", 9093)
    assert resp.throttle_time_ms == (3 if version >= 1 else 0)
    assert resp.error_code == (0 if version >= 4 else 15)
    assert resp.error_message == ("m" if 1 <= version <= 3 else None)


@pytest.mark.parametrize("version", range(0, 4))
def test_add_partitions_to_txn_request_bytes_match_peer(version: int) -> None:
    ours = AddPartitionsToTxnRequest("tx-1", 2**33 + 5, 7, {"a": [0, 3], "bb": [2]})
    topic: Any = k_producer.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    peer = k_producer.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx-1",
        v3_and_below_producer_id=2**33 + 5,
        v3_and_below_producer_epoch=7,
        v3_and_below_topics=[topic(name="a", partitions=[0, 3]), topic(name="bb", partitions=[2])],
    )
    assert _ours(ours, version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 4))
def test_add_partitions_to_txn_response_from_peer(version: int) -> None:
    cls: Any = k_producer.AddPartitionsToTxnResponse
    tr = cls.AddPartitionsToTxnTopicResult
    pr = tr.AddPartitionsToTxnPartitionResult
    peer = cls(
        throttle_time_ms=11,
        results_by_topic_v3_and_below=[
            tr(
                name="a",
                results_by_partition=[
                    pr(partition_index=0, partition_error_code=0),
                    pr(partition_index=3, partition_error_code=51),
                ],
            ),
            tr(name="bb", results_by_partition=[pr(partition_index=2, partition_error_code=0)]),
        ],
    )
    resp = _decode_ours(AddPartitionsToTxnRequest(), version, _their_response(peer, version))
    assert resp.throttle_time_ms == 11
    assert resp.errors == {("a", 0): 0, ("a", 3): 51, ("bb", 2): 0}


@pytest.mark.parametrize("version", range(0, 5))
@pytest.mark.parametrize("committed", [True, False])
def test_end_txn_request_bytes_match_peer(version: int, committed: bool) -> None:
    ours = EndTxnRequest("tx-1", 2**40, 3, committed)
    peer = k_producer.EndTxnRequest(
        transactional_id="tx-1", producer_id=2**40, producer_epoch=3, committed=committed
    )
    assert _ours(ours, version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 5))
def test_end_txn_response_from_peer(version: int) -> None:
    peer = k_producer.EndTxnResponse(throttle_time_ms=8, error_code=48)
    resp = _decode_ours(EndTxnRequest(), version, _their_response(peer, version))
    assert (resp.throttle_time_ms, resp.error_code) == (8, 48)


@pytest.mark.parametrize("version", range(0, 5))
def test_add_offsets_to_txn_request_bytes_match_peer(version: int) -> None:
    ours = AddOffsetsToTxnRequest("tx-1", 2**35, 2, "group-ü")
    peer = k_producer.AddOffsetsToTxnRequest(
        transactional_id="tx-1", producer_id=2**35, producer_epoch=2, group_id="group-ü"
    )
    assert _ours(ours, version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 5))
def test_add_offsets_to_txn_response_from_peer(version: int) -> None:
    peer = k_producer.AddOffsetsToTxnResponse(throttle_time_ms=5, error_code=30)
    resp = _decode_ours(AddOffsetsToTxnRequest(), version, _their_response(peer, version))
    assert (resp.throttle_time_ms, resp.error_code) == (5, 30)


@pytest.mark.parametrize("version", range(0, 5))
def test_txn_offset_commit_request_bytes_match_peer(version: int) -> None:
    ours = TxnOffsetCommitRequest(
        "tx-1",
        "g",
        2**35,
        2,
        generation_id=12,
        member_id="m-1",
        group_instance_id=None,
        topics={"a": [(0, 100, 4, None), (2, 7, -1, "meta")], "b": [(1, 2**40, 9, "")]},
    )
    topic: Any = k_producer.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    part = topic.TxnOffsetCommitRequestPartition
    peer = k_producer.TxnOffsetCommitRequest(
        transactional_id="tx-1",
        group_id="g",
        producer_id=2**35,
        producer_epoch=2,
        generation_id=12,
        member_id="m-1",
        group_instance_id=None,
        topics=[
            topic(
                name="a",
                partitions=[
                    part(
                        partition_index=0,
                        committed_offset=100,
                        committed_leader_epoch=4,
                        committed_metadata=None,
                    ),
                    part(
                        partition_index=2,
                        committed_offset=7,
                        committed_leader_epoch=-1,
                        committed_metadata="meta",
                    ),
                ],
            ),
            topic(
                name="b",
                partitions=[
                    part(
                        partition_index=1,
                        committed_offset=2**40,
                        committed_leader_epoch=9,
                        committed_metadata="",
                    )
                ],
            ),
        ],
    )
    assert _ours(ours, version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 5))
def test_txn_offset_commit_response_from_peer(version: int) -> None:
    cls: Any = k_producer.TxnOffsetCommitResponse
    t = cls.TxnOffsetCommitResponseTopic
    pp = t.TxnOffsetCommitResponsePartition
    peer = cls(
        throttle_time_ms=2,
        topics=[
            t(
                name="a",
                partitions=[
                    pp(partition_index=0, error_code=0),
                    pp(partition_index=2, error_code=22),
                ],
            ),
        ],
    )
    resp = _decode_ours(TxnOffsetCommitRequest(), version, _their_response(peer, version))
    assert resp.throttle_time_ms == 2 and resp.errors == {("a", 0): 0, ("a", 2): 22}


def _peer_txn_frames() -> Iterator[Tuple[Any, int, memoryview]]:
    """The transactional APIs' answers, for the truncation and corruption checks above."""
    fc: Any = k_metadata.FindCoordinatorResponse
    ap: Any = k_producer.AddPartitionsToTxnResponse
    apt = ap.AddPartitionsToTxnTopicResult
    tc: Any = k_producer.TxnOffsetCommitResponse
    tct = tc.TxnOffsetCommitResponseTopic
    for v in range(0, 6):
        if v >= 4:
            coordinator = fc.Coordinator(
                key="k", node_id=1, host="h", port=1, error_code=0, error_message=None
            )
            peer = fc(throttle_time_ms=1, coordinators=[coordinator])
        else:
            peer = fc(
                throttle_time_ms=1, error_code=0, error_message=None, node_id=1, host="h", port=1
            )
        yield FindCoordinatorRequest("k"), v, _their_response(peer, v)
    for v in range(0, 5):
        peer = k_producer.EndTxnResponse(throttle_time_ms=1, error_code=0)
        yield EndTxnRequest(), v, _their_response(peer, v)
        peer = k_producer.AddOffsetsToTxnResponse(throttle_time_ms=1, error_code=0)
        yield AddOffsetsToTxnRequest(), v, _their_response(peer, v)
        part = tct.TxnOffsetCommitResponsePartition(partition_index=1, error_code=0)
        peer = tc(throttle_time_ms=1, topics=[tct(name="t", partitions=[part])])
        yield TxnOffsetCommitRequest(), v, _their_response(peer, v)
    for v in range(0, 4):
        part = apt.AddPartitionsToTxnPartitionResult(partition_index=1, partition_error_code=0)
        peer = ap(
            throttle_time_ms=1,
            results_by_topic_v3_and_below=[apt(name="t", results_by_partition=[part])],
        )
        yield AddPartitionsToTxnRequest(), v, _their_response(peer, v)
