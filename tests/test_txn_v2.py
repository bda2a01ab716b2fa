"""Transactions version 2 (KIP-890 part 2) without a broker: the byte layouts of what it reads
and sends (ApiVersions v3's finalized features, EndTxn v5, Produce v12, TxnOffsetCommit v5),
checked against the schemas of Kafka 4.4's ``clients/src/main/resources/common/message``; and the
TransactionManager's choices under either version, driven as the Sender drives it."""

from __future__ import annotations

import struct
from typing import Any, Dict, Optional

import pytest

from cproducer import errors
from cproducer.cluster import Node
from cproducer.network.network_client import ClientRequest, ClientResponse
from cproducer.producer.internals.transaction_manager import (
    ABORTABLE_ERROR,
    FATAL_ERROR,
    READY,
    ConsumerGroupMetadata,
    TransactionManager,
)
from cproducer.producer.internals.txn_request_handlers import (
    AddOffsetsToTxnHandler,
    AddPartitionsToTxnHandler,
    EndTxnHandler,
    FindCoordinatorHandler,
    InitProducerIdHandler,
    TxnOffsetCommitHandler,
)
from cproducer.protocol import (
    KEY_TYPE_GROUP,
    ApiVersionsRequest,
    EndTxnRequest,
    EndTxnResponse,
    ErrorCode,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from cproducer.protocol.api_versions import FinalizedFeatures
from cproducer.protocol.broker_versions import caps_for
from tests.test_transaction_manager import FakeBatch, drain
from tests.test_transaction_manager_txn import TP0, TP1

NOW = 5_000


# ------------------------------------------------------------------ byte builders (the schemas)
def uvarint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def cstr(s: str) -> bytes:
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def tagged(fields: Dict[int, bytes]) -> bytes:
    out = uvarint(len(fields))
    for tag, data in sorted(fields.items()):
        out += uvarint(tag) + uvarint(len(data)) + data
    return out


def api_versions_v3(tags: Dict[int, bytes]) -> bytes:
    """ApiVersionsResponse v3: ErrorCode int16, ApiKeys [ApiKey, MinVersion, MaxVersion
    int16 + tags], ThrottleTimeMs int32, then the body's tagged fields."""
    keys = [(0, 3, 13), (26, 0, 5)]
    body = struct.pack(">h", 0) + uvarint(len(keys) + 1)
    for key, lo, hi in keys:
        body += struct.pack(">hhh", key, lo, hi) + tagged({})
    return body + struct.pack(">i", 0) + tagged(tags)


def features_array(items: Dict[str, tuple]) -> bytes:
    """[Name compact string, int16, int16 + tags]: FinalizedFeatureKey's MaxVersionLevel then
    MinVersionLevel; SupportedFeatureKey's MinVersion then MaxVersion."""
    out = uvarint(len(items) + 1)
    for name, (a, b) in items.items():
        out += cstr(name) + struct.pack(">hh", a, b) + tagged({})
    return out


def body_bytes(request: Any, version: int) -> bytes:
    return b"".join(bytes(p) for p in request.encode_body(version))


# ------------------------------------------------------------------ ApiVersions v3
def test_api_versions_v3_reads_the_finalized_features_and_their_epoch() -> None:
    data = api_versions_v3(
        {
            # SupportedFeatures: what this broker could do (skipped)
            0: features_array({"transaction.version": (0, 2), "kraft.version": (0, 1)}),
            1: struct.pack(">q", 42),  # FinalizedFeaturesEpoch
            # FinalizedFeatures: (MaxVersionLevel, MinVersionLevel)
            2: features_array({"transaction.version": (2, 2), "group.version": (1, 1)}),
            3: b"\x00",  # ZkMigrationReady
        }
    )
    resp = ApiVersionsRequest.decode_response(3, memoryview(data))
    assert resp.error_code == 0 and resp.api_versions == {0: (3, 13), 26: (0, 5)}
    assert resp.finalized_features_epoch == 42
    # the max level is the one in force (a min level of 1 must not be taken for it)
    assert resp.finalized_features == {"transaction.version": 2, "group.version": 1}


def test_api_versions_v3_without_feature_tags_names_no_features() -> None:
    resp = ApiVersionsRequest.decode_response(3, memoryview(api_versions_v3({})))
    assert resp.finalized_features_epoch == -1 and resp.finalized_features == {}


def test_a_tagged_feature_field_that_does_not_fill_its_size_is_corrupt() -> None:
    data = api_versions_v3({1: struct.pack(">q", 42) + b"\x00"})
    with pytest.raises(errors.CorruptResponseError, match="1 unread"):
        ApiVersionsRequest.decode_response(3, memoryview(data))


def response_with(epoch: int, level: Optional[int]) -> Any:
    features = {} if level is None else {"transaction.version": (level, 0)}
    data = api_versions_v3({1: struct.pack(">q", epoch), 2: features_array(features)})
    return ApiVersionsRequest.decode_response(3, memoryview(data))


def test_the_finalized_features_with_the_highest_epoch_win_whichever_broker_answers() -> None:
    features = FinalizedFeatures()
    features.update(response_with(5, 2))
    features.update(response_with(4, 1))  # a broker that has not learnt of the upgrade yet
    assert features.snapshot() == (5, {"transaction.version": 2})
    features.update(response_with(6, 1))  # a downgrade
    assert features.snapshot() == (6, {"transaction.version": 1})


def test_an_answer_that_cannot_carry_version_2_names_no_features() -> None:
    """A proxy that narrows Produce to v11 but passes the features on: version 1."""
    features = FinalizedFeatures()
    narrowed = response_with(5, 2)
    narrowed.api_versions[0] = (3, 11)
    features.update(narrowed)
    assert features.snapshot() == (-1, {})
    features.update(response_with(5, 2))
    assert features.snapshot() == (5, {"transaction.version": 2})


@pytest.mark.parametrize("release, read", [((3, 9), False), ((4, 0), True), (None, True)])
def test_a_client_of_a_release_before_4_0_does_not_read_the_features(
    release: Any, read: bool
) -> None:
    features = FinalizedFeatures(None if release is None else caps_for(release)[1])
    features.update(response_with(5, 2))
    assert features.snapshot()[0] == (5 if read else -1)


# ------------------------------------------------------------------ EndTxn v5, Produce v12, ...
def test_end_txn_v5_request_is_v4s_layout() -> None:
    req = EndTxnRequest("tx", 7, 3, True)
    # TransactionalId compact string, ProducerId int64, ProducerEpoch int16, Committed bool,
    # tagged fields
    expected = cstr("tx") + struct.pack(">qh?", 7, 3, True) + tagged({})
    assert body_bytes(req, 5) == expected == body_bytes(req, 4)
    assert EndTxnRequest.MAX_VERSION == 5


def test_end_txn_v5_response_carries_the_bumped_producer_id_and_epoch() -> None:
    # ThrottleTimeMs int32, ErrorCode int16, ProducerId int64, ProducerEpoch int16 (v5+), tags
    v5 = struct.pack(">ihqh", 10, 0, 7, 4) + tagged({})
    assert EndTxnRequest.decode_response(5, memoryview(v5)) == EndTxnResponse(10, 0, 7, 4)
    v4 = struct.pack(">ih", 10, 0) + tagged({})
    assert EndTxnRequest.decode_response(4, memoryview(v4)) == EndTxnResponse(10, 0, -1, -1)
    v2 = struct.pack(">ih", 0, ErrorCode.PRODUCER_FENCED)
    assert EndTxnRequest.decode_response(2, memoryview(v2)).error_code == ErrorCode.PRODUCER_FENCED


def test_produce_v12_and_txn_offset_commit_v5_are_their_predecessors_layouts() -> None:
    produce = ProduceRequest(-1, 30000, {"t": [(0, memoryview(b"batch"))]}, "tx")
    assert ProduceRequest.MAX_VERSION == 12
    assert body_bytes(produce, 12) == body_bytes(produce, 11)
    commit = TxnOffsetCommitRequest("tx", "g", 7, 3, 5, "m", None, {"t": [(0, 99, 2, "md")]})
    assert TxnOffsetCommitRequest.MAX_VERSION == 5
    assert body_bytes(commit, 5) == body_bytes(commit, 4)


# ------------------------------------------------------------------ the transaction manager
def manager(level: Optional[int], epoch: int = 1) -> TransactionManager:
    """Initialized (producer id 7, epoch 0), the cluster's transaction.version ``level``
    (None: no features named)."""
    tm = TransactionManager("tx-1", 30000)
    tm.finalized_features = FinalizedFeatures()
    if level is not None:
        tm.finalized_features.update(response_with(epoch, level))
    tm.initialize_transactions()
    assert isinstance(tm.next_transactional_request(False), FindCoordinatorHandler)
    tm.coordinator = Node(1, "h", 9092)
    assert isinstance(tm.next_transactional_request(False), InitProducerIdHandler)
    tm.producer_id_initialized(7, 0)
    return tm


def answered(body: Any) -> ClientResponse:
    return ClientResponse(ClientRequest(1, None), 1, NOW, body)


def commit_with_end_txn(tm: TransactionManager, pid: int, epoch: int) -> Any:
    result = tm.begin_commit()
    handler = tm.next_transactional_request(False)
    assert isinstance(handler, EndTxnHandler)
    handler.on_complete(answered(EndTxnResponse(0, 0, pid, epoch)), NOW)
    return result


def test_v2_sends_a_new_partition_at_once_and_takes_the_epoch_end_txn_answers() -> None:
    tm = manager(2)
    tm.begin_transaction()
    assert tm.is_transaction_v2_enabled()
    # no AddPartitionsToTxn: the partition's batch is drained at once, and is in the transaction
    batch = drain(tm, FakeBatch(TP0, 3))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 0, 0)
    assert tm.partitions_in_transaction == {TP0}
    assert tm.next_transactional_request(True) is None
    tm.handle_completed_batch(batch, base_offset=0)
    result = tm.begin_commit()
    handler = tm.next_transactional_request(False)
    assert isinstance(handler, EndTxnHandler) and handler.pick_version(5) == 5
    handler.on_complete(answered(EndTxnResponse(0, 0, 7, 1)), NOW)
    assert result.is_completed and result.error is None and tm.state == READY
    # the next transaction writes under the coordinator's new epoch, from sequence 0
    assert tm.producer_id_and_epoch == (7, 1) and tm.sequence_number(TP0) == 0
    tm.begin_transaction()
    batch = drain(tm, FakeBatch(TP0, 1))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 1, 0)
    assert tm.resets == 0  # every transaction's bump is not a lost producer state


def test_an_overflowing_epoch_comes_back_as_a_new_producer_id() -> None:
    tm = manager(2)
    tm.begin_transaction()
    tm.handle_completed_batch(drain(tm, FakeBatch(TP0, 1)), base_offset=0)
    commit_with_end_txn(tm, 8, 0)
    assert tm.producer_id_and_epoch == (8, 0)


@pytest.mark.parametrize("level", [None, 1])
def test_v1_adds_partitions_first_and_caps_end_txn_at_v4(level: Optional[int]) -> None:
    tm = manager(level)
    tm.begin_transaction()
    assert not tm.is_transaction_v2_enabled()
    assert tm.should_stop_drain(TP0, -1)  # waits for AddPartitionsToTxn
    handler = tm.next_transactional_request(True)
    assert isinstance(handler, AddPartitionsToTxnHandler) and handler.partitions == [TP0]
    tm.partitions_added([TP0])
    tm.handle_completed_batch(drain(tm, FakeBatch(TP0, 2)), base_offset=0)
    result = tm.begin_commit()
    end = tm.next_transactional_request(False)
    assert isinstance(end, EndTxnHandler) and end.pick_version(5) == 4
    end.on_complete(answered(EndTxnResponse(0, 0)), NOW)  # v4: no id, no epoch
    assert result.is_completed and tm.producer_id_and_epoch == (7, 0)
    assert tm.sequence_number(TP0) == 2  # version 1: the sequences go on across transactions


def test_the_version_is_read_at_begin_transaction_and_kept_for_the_transaction() -> None:
    tm = manager(1)
    tm.begin_transaction()
    assert not tm.is_transaction_v2_enabled()
    assert tm.finalized_features is not None
    tm.finalized_features.update(response_with(2, 2))  # upgraded while the transaction runs
    assert not tm.is_transaction_v2_enabled()
    assert tm.should_stop_drain(TP1, -1)  # still version 1: AddPartitionsToTxn first
    tm.begin_abort()
    tm.end_txn_succeeded()
    tm.begin_transaction()
    assert tm.is_transaction_v2_enabled()
    tm.finalized_features.update(response_with(3, 1))  # and downgraded
    assert tm.is_transaction_v2_enabled()
    tm.begin_abort()
    tm.end_txn_succeeded()
    tm.begin_transaction()
    assert not tm.is_transaction_v2_enabled()


def test_v2_leaves_the_epoch_bump_after_an_abortable_error_to_the_abort() -> None:
    """Version 1 bumps the epoch itself (KIP-360's InitProducerId) after the abort of a
    transaction whose record failed; version 2's abort (EndTxn v5) bumps it."""
    tm = manager(2)
    tm.begin_transaction()
    batch = drain(tm, FakeBatch(TP0, 4))
    tm.handle_failed_batch(batch, errors.OutOfOrderSequenceNumberError("gap"), True)
    assert tm.state == ABORTABLE_ERROR
    abort = tm.begin_abort()
    handler = tm.next_transactional_request(False)
    assert isinstance(handler, EndTxnHandler) and not handler.committed
    handler.on_complete(answered(EndTxnResponse(0, 0, 7, 1)), NOW)
    assert abort.is_completed and abort.error is None and tm.state == READY
    assert tm.next_transactional_request(False) is None  # no InitProducerId
    assert tm.producer_id_and_epoch == (7, 1) and tm.sequence_number(TP0) == 0


def test_v1_still_bumps_the_epoch_itself_after_an_abortable_error() -> None:
    tm = manager(1)
    tm.begin_transaction()
    tm.is_send_to_partition_allowed(TP0)
    req = tm.next_transactional_request(True)
    assert isinstance(req, AddPartitionsToTxnHandler)
    tm.partitions_added(req.partitions)
    batch = drain(tm, FakeBatch(TP0, 4))
    tm.handle_failed_batch(batch, errors.OutOfOrderSequenceNumberError("gap"), True)
    abort = tm.begin_abort()
    handler = tm.next_transactional_request(False)
    assert isinstance(handler, EndTxnHandler)
    handler.on_complete(answered(EndTxnResponse(0, 0)), NOW)
    assert not abort.is_completed
    assert isinstance(tm.next_transactional_request(False), InitProducerIdHandler)


@pytest.mark.parametrize("level, version", [(2, 5), (1, 4)])
def test_offsets_under_v2_skip_add_offsets_to_txn(level: int, version: int) -> None:
    tm = manager(level)
    tm.begin_transaction()
    result = tm.send_offsets_to_transaction({TP0: (10, -1, None)}, ConsumerGroupMetadata("g"))
    handler = tm.next_transactional_request(False)
    if level == 1:
        assert isinstance(handler, AddOffsetsToTxnHandler)
        tm.offsets_stage_done(None)
        handler = tm.next_transactional_request(False)
    assert isinstance(handler, FindCoordinatorHandler) and handler.key_type == KEY_TYPE_GROUP
    assert tm.pending_offsets is not None
    tm.pending_offsets.group_coordinator = Node(2, "h", 9093)
    commit = tm.next_transactional_request(False)
    assert isinstance(commit, TxnOffsetCommitHandler) and commit.pick_version(5) == version
    tm.offsets_stage_done(None)
    assert result.is_completed and result.error is None
    # nothing was produced, but the offsets are in the transaction: EndTxn is sent
    tm.begin_commit()
    assert isinstance(tm.next_transactional_request(False), EndTxnHandler)


@pytest.mark.parametrize(
    "code, fatal",
    [
        (ErrorCode.INVALID_TXN_STATE, errors.InvalidTxnStateError),
        (ErrorCode.PRODUCER_FENCED, errors.ProducerFencedError),
        (ErrorCode.INVALID_PRODUCER_EPOCH, errors.ProducerFencedError),
    ],
)
def test_end_txn_errors_after_a_bump_are_fatal(code: int, fatal: type) -> None:
    tm = manager(2)
    tm.begin_transaction()
    tm.handle_completed_batch(drain(tm, FakeBatch(TP0, 1)), base_offset=0)
    result = commit_with_end_txn(tm, 7, 1)
    tm.begin_transaction()
    tm.handle_completed_batch(drain(tm, FakeBatch(TP0, 1)), base_offset=0)
    result = tm.begin_commit()
    handler = tm.next_transactional_request(False)
    assert isinstance(handler, EndTxnHandler)
    assert handler.build_request(5).producer_epoch == 1  # the bumped epoch
    handler.on_complete(answered(EndTxnResponse(0, code)), NOW)
    assert tm.state == FATAL_ERROR and isinstance(result.error, fatal)


def test_an_abort_answered_transaction_abortable_is_fatal_not_sent_again() -> None:
    tm = manager(2)
    tm.begin_transaction()
    tm.handle_completed_batch(drain(tm, FakeBatch(TP0, 1)), base_offset=0)
    abort = tm.begin_abort()
    handler = tm.next_transactional_request(False)
    assert isinstance(handler, EndTxnHandler)
    handler.on_complete(answered(EndTxnResponse(0, ErrorCode.TRANSACTION_ABORTABLE)), NOW)
    assert tm.state == FATAL_ERROR
    assert isinstance(abort.error, errors.TransactionAbortableError)
    assert tm.next_transactional_request(False) is None


@pytest.mark.parametrize("fenced", [False, True])
def test_a_produce_answered_invalid_epoch_is_abortable_or_fenced_by_the_peers_rule(
    fenced: bool,
) -> None:
    """Under version 2 a fenced producer learns it from its Produce (no AddPartitionsToTxn goes
    first): Java's makes the transaction abortable, librdkafka's rule (the confluent facade's)
    makes the producer fail at once."""
    tm = manager(2)
    tm.invalid_epoch_is_fenced = fenced
    tm.begin_transaction()
    batch = drain(tm, FakeBatch(TP0, 2))
    tm.handle_failed_batch(batch, errors.InvalidProducerEpochError("stale epoch"), True)
    assert tm.state == (FATAL_ERROR if fenced else ABORTABLE_ERROR)
    error = tm.fatal_error if fenced else tm.last_error
    assert isinstance(error, errors.InvalidProducerEpochError)
