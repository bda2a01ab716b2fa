"""TransactionManager's transactional state machine, driven as the producer and the Sender do,
without a broker: which transitions are allowed, what each state lets the Sender send next, and
what a failed record does to the transaction."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cproducer import errors
from cproducer.cluster import Node, TopicPartition
from cproducer.producer.internals.transaction_manager import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
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
from cproducer.protocol import KEY_TYPE_GROUP
from tests.test_transaction_manager import FakeBatch, drain

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def is_group_lookup(handler: object) -> bool:
    return isinstance(handler, FindCoordinatorHandler) and handler.key_type == KEY_TYPE_GROUP


def initialized() -> TransactionManager:
    tm = TransactionManager("tx-1", 30000)
    result = tm.initialize_transactions()
    assert isinstance(tm.next_transactional_request(False), FindCoordinatorHandler)
    tm.coordinator = Node(1, "h", 9092)
    assert isinstance(tm.next_transactional_request(False), InitProducerIdHandler)
    tm.producer_id_initialized(7, 0)
    assert result.is_completed and result.error is None
    assert tm.state == READY
    return tm


def in_transaction_with_tp0() -> TransactionManager:
    """Initialized, a transaction open, TP0 joined it (as the Sender would have it join)."""
    tm = initialized()
    tm.begin_transaction()
    tm.is_send_to_partition_allowed(TP0)
    req = tm.next_transactional_request(True)
    assert isinstance(req, AddPartitionsToTxnHandler) and req.partitions == [TP0]
    tm.partitions_added(req.partitions)
    return tm


def test_send_is_refused_outside_a_transaction() -> None:
    tm = TransactionManager("tx-1")
    with pytest.raises(errors.IllegalStateError, match="init_transactions"):
        tm.fail_if_not_ready_for_send()
    tm = initialized()
    with pytest.raises(errors.IllegalStateError, match="begin_transaction"):
        tm.fail_if_not_ready_for_send()
    tm.begin_transaction()
    tm.fail_if_not_ready_for_send()  # allowed now
    tm.begin_commit()
    with pytest.raises(errors.IllegalStateError, match="COMMITTING_TRANSACTION"):
        tm.fail_if_not_ready_for_send()


def test_invalid_transitions_raise() -> None:
    tm = TransactionManager("tx-1")
    with pytest.raises(errors.IllegalStateError, match="init_transactions"):
        tm.begin_transaction()
    tm = initialized()
    with pytest.raises(errors.IllegalStateError, match="READY to COMMITTING"):
        tm.begin_commit()
    with pytest.raises(errors.IllegalStateError, match="READY to ABORTING"):
        tm.begin_abort()
    tm.begin_transaction()
    with pytest.raises(errors.IllegalStateError, match="IN_TRANSACTION to IN_TRANSACTION"):
        tm.begin_transaction()
    with pytest.raises(errors.IllegalStateError, match="INITIALIZING"):
        tm.initialize_transactions()
    with pytest.raises(errors.IllegalStateError, match="transactional.id"):
        TransactionManager(None).begin_transaction()


def test_partitions_join_the_transaction_before_their_batches_drain() -> None:
    tm = initialized()
    tm.begin_transaction()
    assert not tm.is_send_to_partition_allowed(TP0)
    assert not tm.is_send_to_partition_allowed(TP1)
    req = tm.next_transactional_request(True)
    assert isinstance(req, AddPartitionsToTxnHandler) and req.partitions == [TP0, TP1]
    # one AddPartitionsToTxn at a time; the partitions in flight are not asked for again
    assert not tm.is_send_to_partition_allowed(TP0)
    assert tm.next_transactional_request(True) is None
    tm.partitions_added([TP0])
    tm.add_partitions_failed(retry=True)  # TP1 failed (e.g. CONCURRENT_TRANSACTIONS)
    assert tm.is_send_to_partition_allowed(TP0)
    req = tm.next_transactional_request(True)
    assert isinstance(req, AddPartitionsToTxnHandler) and req.partitions == [TP1]
    tm.partitions_added([TP1])
    assert tm.is_send_to_partition_allowed(TP1)
    assert not tm.awaiting_partitions()


def test_commit_waits_for_incomplete_batches_then_sends_end_txn() -> None:
    tm = in_transaction_with_tp0()
    result = tm.begin_commit()
    assert tm.begin_commit() is result  # a second call after a timeout waits for the same
    assert tm.next_transactional_request(accumulator_has_incomplete=True) is None
    req = tm.next_transactional_request(accumulator_has_incomplete=False)
    assert isinstance(req, EndTxnHandler) and req.committed
    assert not result.is_completed
    tm.end_txn_succeeded()
    assert result.is_completed and result.error is None
    assert tm.state == READY and not tm.partitions_in_transaction
    tm.begin_transaction()  # the next transaction starts from nothing
    assert not tm.is_send_to_partition_allowed(TP0)


def test_an_empty_transaction_completes_without_end_txn() -> None:
    tm = initialized()
    tm.begin_transaction()
    result = tm.begin_commit()
    assert tm.next_transactional_request(False) is None
    assert result.is_completed and tm.state == READY


def test_a_failed_record_makes_the_transaction_abortable() -> None:
    """A record failing in an open transaction (not while it commits or aborts): abortable, and
    the abort bumps the epoch (Java 4.x's maybeTransitionToErrorState): the abort completes
    after EndTxn and InitProducerId, and the partitions' sequences restart."""
    tm = in_transaction_with_tp0()
    batch = drain(tm, FakeBatch(TP0, 3))
    tm.handle_failed_batch(batch, errors.KafkaTimeoutError("expired"), adjust_sequences=False)
    assert tm.state == ABORTABLE_ERROR
    with pytest.raises(errors.TransactionAbortableError, match="expired"):
        tm.fail_if_not_ready_for_send()
    with pytest.raises(errors.TransactionAbortableError, match="abort_transaction"):
        tm.begin_commit()
    result = tm.begin_abort()
    assert tm.state == ABORTING_TRANSACTION
    req = tm.next_transactional_request(False)
    assert isinstance(req, EndTxnHandler) and not req.committed
    tm.end_txn_succeeded()
    assert not result.is_completed
    assert isinstance(tm.next_transactional_request(False), InitProducerIdHandler)
    tm.producer_id_initialized(7, 1)
    assert result.is_completed and result.error is None and tm.state == READY
    assert tm.producer_id_and_epoch == (7, 1) and tm.sequence_number(TP0) == 0


def test_a_batch_the_broker_refused_during_commit_gives_its_sequences_back() -> None:
    """TRANSACTION_ABORTABLE for a batch sent by the commit: no epoch bump (Java bumps only
    outside commit and abort), the failed batch's sequence numbers are taken back, so the next
    transaction's first batch follows the last one the broker has."""
    tm = in_transaction_with_tp0()
    written = drain(tm, FakeBatch(TP0, 5))
    tm.handle_completed_batch(written, 0)
    refused = drain(tm, FakeBatch(TP0, 4))
    assert tm.sequence_number(TP0) == 9
    result = tm.begin_commit()
    err = errors.TransactionAbortableError("the broker will not commit it")
    tm.handle_failed_batch(refused, err, adjust_sequences=True)
    assert isinstance(result.error, errors.TransactionAbortableError)
    abort = tm.begin_abort()
    tm.end_txn_succeeded()
    assert abort.is_completed and tm.state == READY  # no InitProducerId in between
    assert tm.producer_id_and_epoch == (7, 0) and tm.sequence_number(TP0) == 5


def test_a_record_failing_during_commit_fails_the_commit() -> None:
    tm = in_transaction_with_tp0()
    batch = drain(tm, FakeBatch(TP0, 2))
    result = tm.begin_commit()
    tm.handle_failed_batch(batch, errors.NetworkError("gone"), adjust_sequences=False)
    assert result.is_completed and isinstance(result.error, errors.TransactionAbortableError)
    assert tm.next_transactional_request(False) is None  # no EndTxn(commit)
    with pytest.raises(errors.TransactionAbortableError):
        result.await_result(0)
    tm.begin_abort()
    assert tm.next_transactional_request(False).committed is False


def test_fencing_is_fatal_and_rethrown() -> None:
    tm = in_transaction_with_tp0()
    commit = tm.begin_commit()
    fenced = errors.ProducerFencedError("another producer has the id")
    tm.handle_failed_batch(drain(tm, FakeBatch(TP0, 1)), fenced, adjust_sequences=False)
    assert tm.state == FATAL_ERROR
    assert commit.error is fenced
    with pytest.raises(errors.ProducerFencedError):
        tm.fail_if_not_ready_for_send()
    with pytest.raises(errors.ProducerFencedError):
        tm.begin_abort()
    assert tm.next_transactional_request(False) is None
    assert not tm.is_send_to_partition_allowed(TP0)


def test_a_produce_answered_invalid_producer_epoch_makes_the_transaction_abortable() -> None:
    """KIP-588 (Java's maybeTransitionToErrorState): INVALID_PRODUCER_EPOCH from a partition
    leader is abortable, not fatal; the abort's EndTxn learns from the coordinator whether the
    producer was fenced, and PRODUCER_FENCED there is fatal."""
    tm = in_transaction_with_tp0()
    batch = drain(tm, FakeBatch(TP0, 1))
    stale = errors.InvalidProducerEpochError("old epoch")
    tm.handle_failed_batch(batch, stale, adjust_sequences=True)
    assert tm.state == ABORTABLE_ERROR and tm.fatal_error is None
    with pytest.raises(errors.TransactionAbortableError) as raised:
        tm.begin_commit()
    assert raised.value.__cause__ is stale
    abort = tm.begin_abort()
    end_txn = tm.next_transactional_request(False)
    assert isinstance(end_txn, EndTxnHandler) and not end_txn.committed
    end_txn.handle_response(SimpleNamespace(error_code=errors.ProducerFencedError.errno), 0)
    assert tm.state == FATAL_ERROR
    assert isinstance(abort.error, errors.ProducerFencedError)
    with pytest.raises(errors.ProducerFencedError):
        tm.fail_if_not_ready_for_send()


def test_an_idempotent_producer_keeps_invalid_producer_epoch_fatal() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(3, 0)
    batch = drain(tm, FakeBatch(TP0, 1))
    tm.handle_failed_batch(batch, errors.InvalidProducerEpochError(), adjust_sequences=True)
    assert isinstance(tm.fatal_error, errors.InvalidProducerEpochError)


def test_out_of_order_sequence_bumps_the_epoch_after_the_abort() -> None:
    tm = in_transaction_with_tp0()
    batch = drain(tm, FakeBatch(TP0, 4))
    tm.handle_failed_batch(
        batch, errors.OutOfOrderSequenceNumberError("gap"), adjust_sequences=False
    )
    assert tm.state == ABORTABLE_ERROR
    abort = tm.begin_abort()
    tm.end_txn_succeeded()
    assert not abort.is_completed  # the epoch is bumped first
    req = tm.next_transactional_request(False)
    assert isinstance(req, InitProducerIdHandler)
    tm.producer_id_initialized(7, 1)
    assert abort.is_completed and tm.state == READY
    assert tm.producer_id_and_epoch == (7, 1)
    assert tm.sequence_number(TP0) == 0


def test_a_lost_coordinator_is_looked_up_again() -> None:
    tm = initialized()
    tm.begin_transaction()
    tm.is_send_to_partition_allowed(TP0)
    tm.coordinator_unknown()
    assert isinstance(tm.next_transactional_request(True), FindCoordinatorHandler)
    assert tm.pending_partitions == {TP0}  # still wanted
    tm.coordinator = Node(2, "h2", 9092)
    assert isinstance(tm.next_transactional_request(True), AddPartitionsToTxnHandler)


def test_idempotent_only_manager_is_unchanged() -> None:
    tm = TransactionManager()
    assert tm.needs_producer_id()
    tm.set_producer_id_and_epoch(3, 0)
    assert tm.is_send_to_partition_allowed(TP0)  # no transaction to join
    assert tm.next_transactional_request(False) is None
    assert not TransactionManager("tx").needs_producer_id()  # its id comes via the coordinator


def test_send_offsets_walks_add_offsets_then_the_group_coordinator() -> None:
    tm = initialized()
    with pytest.raises(errors.IllegalStateError, match="needs an open transaction"):
        tm.send_offsets_to_transaction({TP0: (5, -1, None)}, ConsumerGroupMetadata("g"))
    tm.begin_transaction()
    result = tm.send_offsets_to_transaction({TP0: (5, -1, None)}, ConsumerGroupMetadata("g"))
    with pytest.raises(errors.IllegalStateError, match="earlier call"):
        tm.send_offsets_to_transaction({TP0: (6, -1, None)}, ConsumerGroupMetadata("g"))
    assert isinstance(tm.next_transactional_request(False), AddOffsetsToTxnHandler)
    tm.offsets_stage_done(None)
    assert is_group_lookup(tm.next_transactional_request(False))
    tm.pending_offsets.group_coordinator = Node(3, "g", 9092)
    assert isinstance(tm.next_transactional_request(False), TxnOffsetCommitHandler)
    assert not result.is_completed
    tm.offsets_stage_done(None)
    assert result.is_completed and result.error is None and tm.pending_offsets is None
    # offsets alone make the transaction worth an EndTxn
    tm.begin_commit()
    req = tm.next_transactional_request(False)
    assert isinstance(req, EndTxnHandler) and req.committed


def test_offsets_refused_by_the_group_make_the_transaction_abortable() -> None:
    tm = initialized()
    tm.begin_transaction()
    result = tm.send_offsets_to_transaction({TP0: (5, -1, None)}, ConsumerGroupMetadata("g"))
    tm.offsets_stage_done(None)
    fenced_member = errors.UnknownMemberIdError("the group has a newer generation")
    tm.offsets_stage_done(fenced_member)
    assert result.error is fenced_member and tm.state == ABORTABLE_ERROR


def test_abort_fails_offsets_still_on_their_way() -> None:
    tm = initialized()
    tm.begin_transaction()
    result = tm.send_offsets_to_transaction({TP0: (5, -1, None)}, ConsumerGroupMetadata("g"))
    tm.begin_abort()
    assert isinstance(result.error, errors.TransactionAbortedError)
    assert tm.next_transactional_request(False) is None  # nothing written: no EndTxn


def test_the_accumulator_drains_a_partition_only_once_it_joined_and_marks_batches() -> None:
    """The real RecordAccumulator with the real TransactionManager: nothing of a partition is
    drained before AddPartitionsToTxn succeeded, and what is drained then is a transactional
    batch under the producer's id (decoded by kafka-python)."""
    from kafka.record.default_records import DefaultRecordBatch

    from tests.test_accumulator import acc, append, cluster

    tm = initialized()
    tm.begin_transaction()
    a, c = acc(linger=0, transaction_manager=tm), cluster(2)
    append(a, c, 0)
    assert a.drain(c, {1}, 1 << 20, 0).get(1, []) == []
    req = tm.next_transactional_request(True)
    assert isinstance(req, AddPartitionsToTxnHandler) and req.partitions == [TopicPartition("t", 0)]
    assert a.drain(c, {1}, 1 << 20, 0).get(1, []) == []  # the answer has not come yet
    tm.partitions_added(req.partitions)
    (batch,) = a.drain(c, {1}, 1 << 20, 0)[1]
    parsed = DefaultRecordBatch(bytes(batch.buffer()))
    assert parsed.is_transactional
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (7, 0, 0)
