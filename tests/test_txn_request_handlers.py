"""The transactional request handlers, given answers as the broker would send them: what each
answer does to the TransactionManager (retry time, coordinator, partitions, state)."""

from __future__ import annotations

from typing import Any

import pytest

from cproducer import errors
from cproducer.cluster import Node
from cproducer.network.network_client import ClientRequest, ClientResponse
from cproducer.producer.internals.transaction_manager import (
    ABORTABLE_ERROR,
    FATAL_ERROR,
    IN_TRANSACTION,
    ConsumerGroupMetadata,
    TransactionManager,
)
from cproducer.producer.internals.txn_request_handlers import (
    ADD_PARTITIONS_RETRY_BACKOFF_MS,
    AddPartitionsToTxnHandler,
    EndTxnHandler,
    FindCoordinatorHandler,
    InitProducerIdHandler,
    TxnOffsetCommitHandler,
)
from cproducer.protocol import (
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    ErrorCode,
    FindCoordinatorResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)
from tests.test_transaction_manager_txn import TP0, TP1, initialized

NOW = 5_000


def in_transaction() -> TransactionManager:
    tm = initialized()
    tm.retry_backoff_ms = 300
    tm.begin_transaction()
    return tm


def lost(handler: Any) -> ClientResponse:
    request = ClientRequest(1, handler.build_request(3))
    return ClientResponse(request, 1, NOW, None, disconnected=True)


def answered(body: Any) -> ClientResponse:
    return ClientResponse(ClientRequest(1, None), 1, NOW, body)


def test_end_txn_retries_a_busy_coordinator_and_looks_up_a_moved_one() -> None:
    tm = in_transaction()
    handler = EndTxnHandler(tm, committed=True)
    handler.on_complete(answered(EndTxnResponse(0, ErrorCode.CONCURRENT_TRANSACTIONS)), NOW)
    assert tm.retry_after_ms == NOW + 300 and tm.coordinator is not None
    handler.on_complete(answered(EndTxnResponse(0, ErrorCode.NOT_COORDINATOR)), NOW + 1)
    assert tm.retry_after_ms == NOW + 301 and tm.coordinator is None
    assert tm.state is IN_TRANSACTION
    handler.on_complete(answered(EndTxnResponse(0, ErrorCode.PRODUCER_FENCED)), NOW + 2)
    assert tm.state is FATAL_ERROR and isinstance(tm.fatal_error, errors.ProducerFencedError)


def test_add_partitions_keeps_what_joined_and_asks_again_for_the_rest_soon() -> None:
    tm = in_transaction()
    tm.is_send_to_partition_allowed(TP0)
    tm.is_send_to_partition_allowed(TP1)
    handler = tm.next_transactional_request(True)
    assert isinstance(handler, AddPartitionsToTxnHandler)
    # TP1 left out of the answer: not attempted
    body = AddPartitionsToTxnResponse(0, {("t", 0): ErrorCode.NONE})
    handler.on_complete(answered(body), NOW)
    assert tm.partitions_in_transaction == {TP0} and tm.pending_partitions == {TP1}
    assert tm.retry_after_ms == NOW + ADD_PARTITIONS_RETRY_BACKOFF_MS
    handler = tm.next_transactional_request(True)
    assert isinstance(handler, AddPartitionsToTxnHandler) and handler.partitions == [TP1]
    body = AddPartitionsToTxnResponse(0, {("t", 1): ErrorCode.TOPIC_AUTHORIZATION_FAILED})
    handler.on_complete(answered(body), NOW)
    assert tm.state is ABORTABLE_ERROR
    assert isinstance(tm.last_error, errors.TopicAuthorizationFailedError)
    assert not tm.pending_partitions and not tm.partitions_being_added


def test_a_lost_answer_forgets_the_coordinator_and_wants_the_partitions_again() -> None:
    tm = in_transaction()
    tm.is_send_to_partition_allowed(TP0)
    handler = tm.next_transactional_request(True)
    assert isinstance(handler, AddPartitionsToTxnHandler)
    handler.on_complete(lost(handler), NOW)
    assert tm.coordinator is None and tm.pending_partitions == {TP0}
    assert tm.retry_after_ms == NOW + 300
    lookup = tm.next_transactional_request(True)
    assert isinstance(lookup, FindCoordinatorHandler) and lookup.destination() is None
    lookup.on_complete(answered(FindCoordinatorResponse(0, 0, None, 4, "h4", 9092)), NOW)
    assert tm.coordinator == Node(4, "h4", 9092)


def test_init_producer_id_bumps_an_epoch_only_from_v3() -> None:
    tm = initialized()
    handler = InitProducerIdHandler(tm)
    assert handler.build_request(3).producer_id == 7  # has an id: v3+ bumps its epoch
    with pytest.raises(errors.IncompatibleBrokerVersion, match="InitProducerId v3"):
        handler.build_request(2)
    assert issubclass(errors.IncompatibleBrokerVersion, errors.UnsupportedVersionError)


def test_an_idempotent_init_producer_id_retries_an_unknown_server_error() -> None:
    tm = TransactionManager(None, retry_backoff_ms=250)
    handler = tm.idempotent_init_producer_id()
    assert handler.destination() is None  # any broker
    assert handler.build_request(0).transactional_id is None
    handler.on_complete(
        answered(InitProducerIdResponse(0, ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1)), NOW
    )
    assert tm.retry_after_ms == NOW + 250 and tm.fatal_error is None
    handler.on_complete(answered(InitProducerIdResponse(0, ErrorCode.NONE, 12, 0)), NOW)
    assert tm.producer_id_and_epoch == (12, 0) and not tm.needs_producer_id()
    tm.request_producer_id_reset("test")
    handler.on_complete(
        answered(InitProducerIdResponse(0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1, -1)), NOW
    )
    assert isinstance(tm.fatal_error, errors.ClusterAuthorizationFailedError)


def test_offsets_of_a_fenced_consumer_fail_and_make_the_transaction_abortable() -> None:
    tm = in_transaction()
    result = tm.send_offsets_to_transaction({TP0: (5, -1, None)}, ConsumerGroupMetadata("g"))
    tm.offsets_stage_done(None)  # AddOffsetsToTxn done
    assert tm.pending_offsets is not None
    tm.pending_offsets.group_coordinator = Node(3, "g", 9092)
    handler = tm.next_transactional_request(False)
    assert isinstance(handler, TxnOffsetCommitHandler) and handler.destination() == Node(
        3, "g", 9092
    )
    body = TxnOffsetCommitResponse(0, {("t", 0): ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
    handler.on_complete(answered(body), NOW)
    assert tm.retry_after_ms == NOW + 300 and not result.is_completed
    body = TxnOffsetCommitResponse(0, {("t", 0): ErrorCode.NOT_COORDINATOR})
    handler.on_complete(answered(body), NOW)
    assert tm.pending_offsets is not None and tm.pending_offsets.group_coordinator is None
    body = TxnOffsetCommitResponse(0, {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID})
    handler.on_complete(answered(body), NOW)
    assert isinstance(result.error, errors.CommitFailedError)  # as Java's and kafka-python's
    assert isinstance(result.error.__cause__, errors.UnknownMemberIdError)
    assert tm.state is ABORTABLE_ERROR


def test_end_txn_answered_transaction_abortable_makes_the_transaction_abortable() -> None:
    """KIP-890: TRANSACTION_ABORTABLE is neither retried nor fatal (Java: abortableError); the
    commit fails with it."""
    tm = in_transaction()
    commit = tm.begin_commit()
    handler = EndTxnHandler(tm, committed=True)
    handler.on_complete(answered(EndTxnResponse(0, ErrorCode.TRANSACTION_ABORTABLE)), NOW)
    assert tm.state == ABORTABLE_ERROR and tm.fatal_error is None
    assert isinstance(tm.last_error, errors.TransactionAbortableError)
    assert isinstance(commit.error, errors.TransactionAbortableError)
    assert tm.retry_after_ms < NOW  # nothing to retry


def test_find_coordinator_answered_transaction_abortable_makes_the_transaction_abortable() -> None:
    tm = in_transaction()
    handler = FindCoordinatorHandler(tm, 1, "tx-1")
    body = FindCoordinatorResponse(0, ErrorCode.TRANSACTION_ABORTABLE, None, -1, "", -1)
    handler.on_complete(answered(body), NOW)
    assert tm.state == ABORTABLE_ERROR and tm.fatal_error is None


@pytest.mark.parametrize("kind", ["init", "add_partitions", "end_txn", "offsets"])
def test_a_coordinators_invalid_producer_epoch_is_producer_fenced(kind: str) -> None:
    """Before KIP-588's versions (EndTxn v2, AddPartitionsToTxn v2, ...) a coordinator answers a
    fenced producer INVALID_PRODUCER_EPOCH; Java's handlers end the producer with
    ProducerFencedException all the same."""
    tm = in_transaction()
    code = ErrorCode.INVALID_PRODUCER_EPOCH
    if kind == "init":
        answer = answered(InitProducerIdResponse(0, code, -1, -1))
        InitProducerIdHandler(tm).on_complete(answer, NOW)
    elif kind == "add_partitions":
        handler = AddPartitionsToTxnHandler(tm, [TP0])
        handler.on_complete(answered(AddPartitionsToTxnResponse(0, {("t", 0): code})), NOW)
    elif kind == "end_txn":
        EndTxnHandler(tm, committed=False).on_complete(answered(EndTxnResponse(0, code)), NOW)
    else:
        po = tm.send_offsets_to_transaction({TP1: (5, -1, None)}, ConsumerGroupMetadata("g"))
        handler = TxnOffsetCommitHandler(tm, tm.pending_offsets)  # type: ignore[arg-type]
        handler.on_complete(answered(TxnOffsetCommitResponse(0, {("t", 1): code})), NOW)
        assert isinstance(po.error, errors.ProducerFencedError)
    assert tm.state == FATAL_ERROR
    assert isinstance(tm.fatal_error, errors.ProducerFencedError)
    assert isinstance(tm.fatal_error.__cause__, errors.InvalidProducerEpochError)
    with pytest.raises(errors.ProducerFencedError):
        tm.fail_if_not_ready_for_send()
